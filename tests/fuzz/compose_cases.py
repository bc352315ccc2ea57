"""Cases for the compose() fuzz harness: a random valid chain (tests/unit/property_chains.py), then
twists that users hit: odd input shapes and layouts, special float data, edge rects, and `out=`.

A case is drawn in the parent (hypothesis, seeded, generate phase only) and run in a child; the
layout twists (non-contiguous, read-only) are applied in the child, since pickling copies an array.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

import fklir as fkl
from fklir.frontend.ops import Op
from tests.unit.property_chains import TEMPLATES, Drawn, Template, chains

COMPOSABLE = [t for t in TEMPLATES if t.composable]
HUGE = (2**31 - 1, 2**31, 2**32, 2**32 + 3, -(2**31) - 1)
# (w, h): ordinary edges, one side past int32, and sides that fit while their product does not
RESIZE_SIZES = ((1, 1), (1, 100_000), (100_000, 1), (0, 3), (2**31, 1), (2**32 + 3, 1), (1, 2**32), (65536, 32768))
OVERSIZED = 2**31  # output elements past the kernel's int32 index


@dataclass
class Case:
    ops: list[Op]
    x: np.ndarray  # C-contiguous; `layout` says what the child makes of it
    template: Template
    twists: tuple[str, ...] = ()
    layout: str = "contiguous"  # "contiguous" | "strided" | "readonly"
    out_guard: bool = False
    name: str = field(default="")

    def input(self) -> np.ndarray:
        """The array the pipeline is called with (a strided view or a read-only array when asked)."""
        if self.layout == "strided":
            doubled = np.repeat(self.x, 2, axis=1) if self.x.ndim >= 2 else np.repeat(self.x, 2, axis=0)
            view = doubled[:, ::2] if self.x.ndim >= 2 else doubled[::2]
            assert np.array_equal(view, self.x, equal_nan=self.x.dtype.kind == "f")
            return view
        if self.layout == "readonly":
            x = self.x.copy()
            x.setflags(write=False)
            return x
        return self.x

    def describe(self) -> str:
        ops = ", ".join(_op_text(op) for op in self.ops)
        return (
            f"{self.name}: compose({ops}, target='cpu')(x{', out=<guarded view>' if self.out_guard else ''}) with x "
            f"{self.x.dtype}{list(self.x.shape)} {self.layout}; twists {list(self.twists) or 'none'}"
        )


def _op_text(op: Op) -> str:
    text = repr(op)
    return text if len(text) < 160 else text[:157] + "..."


def _with_crop(ops: list[Op], rect: tuple[int, int, int, int]) -> list[Op]:
    return [fkl.Crop(*rect) if isinstance(op, fkl.Crop) else op for op in ops]


@st.composite
def cases(draw: Any) -> Case:
    drawn: Drawn = draw(chains(COMPOSABLE))
    assert drawn.x is not None
    x, ops = drawn.x, list(drawn.ops)
    twists: list[str] = []
    kind = draw(st.sampled_from(["none"] * 4 + ["empty", "one", "wide", "specials"]))
    h_axis = 1 if drawn.template.planes > 1 else 0
    if kind == "empty":
        axis = draw(st.integers(0, h_axis + 1))
        shape = list(x.shape)
        shape[axis] = 0
        x = np.zeros(shape, x.dtype)
        twists.append(f"empty axis {axis}")
    elif kind in ("one", "wide"):
        shape = list(x.shape)
        shape[h_axis], shape[h_axis + 1] = 1, (1 if kind == "one" else 100_000)
        x = np.resize(x, shape).astype(x.dtype)
        twists.append(f"{kind} 1x{shape[h_axis + 1]}")
    elif kind == "specials" and x.dtype.kind == "f" and x.size:
        x = x.copy()
        flat = x.reshape(-1)
        for v in (np.nan, np.inf, -np.inf, -0.0):
            flat[draw(st.integers(0, flat.size - 1))] = v
        twists.append("nan/inf data")
    if any(isinstance(op, fkl.Crop) for op in ops) and draw(st.booleans()):
        h, w = x.shape[h_axis], x.shape[h_axis + 1]
        rect_kind = draw(st.sampled_from(["inside", "outside", "huge", "negative", "zero"]))
        if rect_kind == "inside":
            rect = (0, 0, max(w, 1), max(h, 1))
        elif rect_kind == "outside":
            rect = (w + draw(st.integers(0, 5)), draw(st.integers(0, 3)), 2, 2)
        elif rect_kind == "huge":
            rect = (
                (draw(st.sampled_from(HUGE)), 0, 2, 3)
                if draw(st.booleans())
                else (0, draw(st.sampled_from(HUGE)), 3, 2)
            )
        elif rect_kind == "negative":
            rect = (-draw(st.integers(1, 9)), -draw(st.integers(0, 9)), 3, 2)
        else:
            rect = (0, 0, 0, 2) if draw(st.booleans()) else (1, 1, 2, 0)
        try:
            ops = _with_crop(ops, rect)
            twists.append(f"rect {rect_kind} {rect}")
        except (ValueError, TypeError) as e:
            twists.append(f"rect {rect_kind} {rect} refused by Crop(): {e}")
    resize = next((op for op in ops if isinstance(op, fkl.Resize)), None)
    if resize is not None and draw(st.integers(0, 3)) == 0:
        w, h = size = draw(st.sampled_from(RESIZE_SIZES))
        try:
            twisted = fkl.Resize(w, h, resize.interp, resize.aspect_ratio, resize.background)
            ops = [twisted if op is resize else op for op in ops]
            twists.append(f"resize to {size}")
        except (ValueError, TypeError) as e:
            twists.append(f"resize to {size} refused by Resize(): {e}")
    layout = draw(st.sampled_from(["contiguous"] * 6 + ["strided", "readonly"]))
    return Case(ops, np.ascontiguousarray(x), drawn.template, tuple(twists), layout, draw(st.booleans()))


def draw_cases(fuzz_seed: int, chunk: int, count: int) -> list[Case]:
    """`count` cases of one chunk of a seed's sequence (the same in every run)."""
    found: list[Case] = []

    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @seed(fuzz_seed * 1_000_003 + chunk)
    @given(cases())
    def collect(case: Case) -> None:
        found.append(replace(case, name=f"seed {fuzz_seed} chunk {chunk} case {len(found)}"))

    collect()
    return found
