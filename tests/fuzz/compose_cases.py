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
from fklir.frontend.ops import Op, Rect
from tests.unit.property_chains import TEMPLATES, Drawn, Template, chains

COMPOSABLE = [t for t in TEMPLATES if t.composable]
HUGE = (2**31 - 1, 2**31, 2**32, 2**32 + 3, -(2**31) - 1)
# (w, h): ordinary edges, one side past int32, and sides that fit while their product does not
RESIZE_SIZES = ((1, 1), (1, 100_000), (100_000, 1), (0, 3), (2**31, 1), (2**32 + 3, 1), (1, 2**32), (65536, 32768))
# Output elements a fuzz child does not allocate: legal (element counts and offsets are int64, only
# each side is int32), but GiBs per case; such cases are drawn and then not run.
TOO_LARGE_TO_RUN = 2**28
LAYOUTS = ("contiguous",) * 8 + ("strided", "reversed", "fortran", "readonly")
# element types no kernel takes; a byte-swapped one is taken only if it is read right
ODD_DTYPES = ("int64", "complex64", "object", "swapped")


@dataclass
class Case:
    ops: list[Op]
    x: np.ndarray  # C-contiguous; `layout` says what the child makes of it
    template: Template
    twists: tuple[str, ...] = ()
    layout: str = "contiguous"  # see LAYOUTS
    out_guard: bool = False
    name: str = field(default="")

    def input(self) -> np.ndarray | list[np.ndarray]:
        """What the pipeline is called with: the array, a view or copy of it in another layout, or
        (layout "list") its planes as a list of images."""
        x = self.x
        if self.layout == "strided":
            return np.repeat(x, 2, axis=1)[:, ::2] if x.ndim >= 2 else np.repeat(x, 2)[::2]
        if self.layout == "reversed":
            return np.ascontiguousarray(x[::-1])[::-1]
        if self.layout == "fortran":
            return np.asfortranarray(x)
        if self.layout == "readonly":
            x = x.copy()
            x.setflags(write=False)
            return x
        if self.layout == "list":  # an (H, W, 1) image would read as a batch of (W, 1) rows: drop the axis
            return [image[..., 0] if image.ndim == 3 and image.shape[-1] == 1 else image for image in x]
        return x

    @property
    def native(self) -> np.ndarray:
        """The input as the reference takes it: in native byte order."""
        return self.x.astype(self.x.dtype.newbyteorder("="))

    def describe(self) -> str:
        ops = ", ".join(_op_text(op) for op in self.ops)
        return (
            f"{self.name}: compose({ops}, target='cpu')(x{', out=<guarded view>' if self.out_guard else ''}) with x "
            f"{self.x.dtype}{list(self.x.shape)} {self.layout}; twists {list(self.twists) or 'none'}"
        )


def _op_text(op: Op) -> str:
    text = repr(op)
    return text if len(text) < 160 else text[:157] + "..."


def _with_crop(ops: list[Op], rects: list[Rect]) -> list[Op]:
    crop = fkl.Crop(*rects[0]) if len(rects) == 1 else fkl.Crop(rects)
    return [crop if isinstance(op, fkl.Crop) else op for op in ops]


def _edge_rect(draw: Any, w: int, h: int) -> tuple[str, Rect]:
    """A rect inside a w x h image, outside it, at an offset past int32, at a negative one, or empty."""
    kind = draw(st.sampled_from(["inside", "outside", "huge", "negative", "zero"]))
    if kind == "inside":
        return kind, (0, 0, max(w, 1), max(h, 1))
    if kind == "outside":
        return kind, (w + draw(st.integers(0, 5)), draw(st.integers(0, 3)), 2, 2)
    if kind == "huge":
        far = draw(st.sampled_from(HUGE))
        return kind, ((far, 0, 2, 3) if draw(st.booleans()) else (0, far, 3, 2))
    if kind == "negative":
        return kind, (-draw(st.integers(1, 9)), -draw(st.integers(0, 9)), 3, 2)
    return kind, ((0, 0, 0, 2) if draw(st.booleans()) else (1, 1, 2, 0))


@st.composite
def cases(draw: Any) -> Case:
    drawn: Drawn = draw(chains(COMPOSABLE))
    assert drawn.x is not None
    x, ops = drawn.x, list(drawn.ops)
    twists: list[str] = []
    # hypothesis leans to a menu's first entries: the plain case leads, specials come early
    kind = draw(st.sampled_from(["none", "specials", "none", "empty", "none", "one", "specials", "wide"]))
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
        rect_kind, rect = _edge_rect(draw, w, h)
        rects = [rect]
        if draw(st.booleans()):  # a list: one plane per rect, the twisted one among ordinary ones
            ordinary: list[Rect] = [(0, 0, 1, 1), (max(w - 2, 0), max(h - 1, 0), 2, 1)]
            rects = draw(st.permutations([rect, *ordinary]))[: draw(st.integers(1, 3))]
        try:
            ops = _with_crop(ops, rects)
            twists.append(f"rect {rect_kind} {rects if len(rects) > 1 else rect}")
        except (ValueError, TypeError) as e:
            twists.append(f"rect {rect_kind} {rects} refused by Crop(): {e}")
    resize = next((op for op in ops if isinstance(op, fkl.Resize)), None)
    if resize is not None and draw(st.sampled_from([False, False, False, True])):
        w, h = size = draw(st.sampled_from(RESIZE_SIZES))
        try:
            twisted = fkl.Resize(w, h, resize.interp, resize.aspect_ratio, resize.background)
            ops = [twisted if op is resize else op for op in ops]
            twists.append(f"resize to {size}")
        except (ValueError, TypeError) as e:
            twists.append(f"resize to {size} refused by Resize(): {e}")
    if x.dtype != np.bool_ and draw(st.sampled_from([False] * 11 + [True])):
        odd = draw(st.sampled_from(ODD_DTYPES))
        swapped = x.dtype.newbyteorder(">" if x.dtype.byteorder in "=<" else "<")
        with np.errstate(invalid="ignore"):  # NaN data cast to int64: any value will do, it must be refused
            x = x.astype(swapped if odd == "swapped" else odd)
        twists.append(f"dtype {x.dtype.str}")
    layout = draw(st.sampled_from(LAYOUTS + (("list",) * 2 if drawn.template.planes > 1 else ())))
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
