"""Random valid chains for the property tests (CPU vs reference here, GPU vs CPU on the device).

A chain is split into its STRUCTURE (a `Template`: read kind, element type, channels, geometry and
compute op kinds, write kind: what the cache key hashes) and its VALUES (factors, rects, sizes,
matrices, permutations, images: what hypothesis draws freely). The templates come from a seeded
walk over the type rules, so one test run compiles a bounded set of kernels and reuses each for
many value draws; `TEMPLATES` is the same list in every run.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import fklir as fkl
from fklir.dialects.fkl import COLOR_CODES
from fklir.frontend.ops import Op

INPUT_DTYPES = (
    "uint8",
    "int8",
    "uint16",
    "int16",
    "int32",
    "uint32",
    "float16",
    "float32",
    "float64",
    "bool",
)
INTS = ("uint8", "int8", "uint16", "int16", "int32", "uint32")
FLOATS = ("float16", "bfloat16", "float32", "float64")
INT_RANGE = {name: (int(np.iinfo(name).min), int(np.iinfo(name).max)) for name in INTS}

Token = tuple[Any, ...]

# Geometry right after the read: (tokens, needs a non-bool chain).
GEOMETRY_MENU: tuple[tuple[tuple[Token, ...], bool], ...] = (
    ((), False),
    ((("crop",),), False),
    ((("border", "reflect101"), ("crop",)), False),
    ((("border", "constant"), ("crop",)), False),
    ((("border", "wrap"), ("crop",), ("resize", "nearest", "ignore")), False),
    ((("resize", "nearest", "ignore"),), False),
    ((("resize", "nearest", "preserve_even"),), False),
    ((("resize", "linear", "ignore"),), True),
    ((("resize", "linear", "preserve"),), True),
    ((("crop",), ("resize", "linear", "preserve_left")), True),
    ((("border", "replicate"), ("warp", "affine")), True),
    ((("warp", "perspective"),), True),
    ((("warp", "affine"),), True),
    ((("deinterlace", "blend"),), True),
    ((("border", "reflect"), ("crop",), ("deinterlace", "linear")), True),
)


@dataclass(frozen=True)
class Template:
    """The structure of one chain."""

    read: str  # "read" | "pack" | "set"
    dtype: str
    channels: int
    planes: int
    geometry: tuple[Token, ...]
    compute: tuple[Token, ...]
    write: str  # "write" | "split" | "tsplit" | "split_write"
    per_image: bool = False  # the value ops take fkl.per_image rows, one per plane (a batch of planes > 1)

    @property
    def composable(self) -> bool:
        """Whether compose() runs it today (else the direct launch of catalogue_support)."""
        return self.read == "read" and self.write in ("write", "split")


def _geometry_type(tokens: tuple[Token, ...], dtype: str) -> str:
    for token in tokens:
        if token[0] == "warp" or token[0] == "deinterlace" or token[:2] == ("resize", "linear"):
            dtype = "float32"
    return dtype


def _compute_choices(dtype: str, channels: int) -> list[Token]:
    """Every compute op kind valid on a (dtype, channels) chain."""
    is_bool, is_float, is_int = dtype == "bool", dtype in FLOATS, dtype in INTS
    choices: list[Token] = []
    if not is_bool:
        choices += [("arith", op) for op in ("add", "sub", "mul", "div", "max", "min")]
        choices += [("saturate",), ("reduce", "add"), ("reduce", "max"), ("reduce", "mul"), ("reduce", "min")]
        choices += [("loop", "mul", 2), ("loop", "add", 3), ("loop", "max", 1)]
    if is_float:
        choices.append(("satfloat",))
        choices += [
            ("cast", "float32"),
            ("cast", "float16"),
            ("cast", "bfloat16"),
            ("cast", "float64"),
            ("cast", "bool"),
        ]
        choices += [("satcast", "uint8"), ("satcast", "int16"), ("satcast", "int32"), ("satcast", "float16")]
    else:
        choices += [("cast", to) for to in ("float32", "float16", "int32", "uint8", "int8", "bfloat16")]
        choices += [("satcast", "uint8"), ("satcast", "int16"), ("satcast", "bool")]
    if is_int:
        choices.append(("is_even",))
    if is_bool and channels > 1:
        choices.append(("vector_and",))
    if channels < 4:
        choices.append(("add_last",))
    if channels > 1:
        choices.append(("discard", channels - 1))
    choices += [("reorder", (channels - 1, 0)), ("reorder_rt", min(channels + 1, 4)), ("reorder_rt", 1)]
    if dtype == "float32" and channels == 3:
        choices.append(("mxv",))
    for code, spec in COLOR_CODES.items():
        if spec.in_channels == channels and not (is_bool and spec.red_index is not None):
            choices.append(("color", code))
    return choices


def _after(token: Token, dtype: str, channels: int) -> tuple[str, int]:
    kind = token[0]
    if kind in ("cast", "satcast"):
        return token[1], channels
    if kind == "is_even":
        return "bool", channels
    if kind in ("vector_and", "reduce"):
        return dtype, 1
    if kind == "discard":
        return dtype, token[1]
    if kind == "add_last":
        return dtype, channels + 1
    if kind == "reorder":
        return dtype, len(token[1])
    if kind == "reorder_rt":
        return dtype, token[1]
    if kind == "color":
        return dtype, COLOR_CODES[token[1]].out_channels
    return dtype, channels


def random_template(rng: random.Random) -> Template:
    read = rng.choice(["read"] * 6 + ["pack", "set"])
    dtype = rng.choice(INPUT_DTYPES + (("bfloat16",) if read == "set" else ()))
    channels = rng.choice([1, 2, 3, 3, 4])
    planes = 1 if read == "set" else rng.choice([1, 1, 2])
    geometry, needs_values = rng.choice(GEOMETRY_MENU)
    if needs_values and dtype == "bool":
        geometry = ()
    dtype_now = _geometry_type(geometry, dtype)
    channels_now = channels
    compute: list[Token] = []
    for _ in range(rng.choice([0, 1, 2, 2, 3, 4])):
        token = rng.choice(_compute_choices(dtype_now, channels_now))
        compute.append(token)
        dtype_now, channels_now = _after(token, dtype_now, channels_now)
    if dtype_now == "bfloat16":  # numpy cannot hold bfloat16 outputs
        compute.append(("cast", "float32"))
    write = rng.choice(["write"] * 4 + ["split", "split", "tsplit", "split_write"])
    return Template(read, dtype, channels, planes, geometry, tuple(compute), write)


def make_templates(count: int, seed: int = 2024) -> list[Template]:
    rng = random.Random(seed)
    return [random_template(rng) for _ in range(count)]


def per_image_templates(templates: list[Template]) -> list[Template]:
    """The composable batches of `templates` again, their values per image: the same seeded pool stays as it
    was and these are added to it."""
    return [replace(t, per_image=True) for t in templates if t.composable and t.planes > 1]


def pool(seed: int) -> list[Template]:
    """A seeded pool: 80 structures and their composable batches again with per-image values."""
    templates = make_templates(80, seed)
    return templates + per_image_templates(templates)


TEMPLATES = pool(2024)


# The targets a property test runs on: the GPU where there is one (the device's suite, `-m gpu`).
TARGETS = [
    "cpu",
    pytest.param(
        "gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")]
    ),
]


def longer_run() -> tuple[list[int], int]:
    """(seeds, draws per pool) of a run longer than CI's: FKLIR_PROPERTY_SEEDS, comma-separated seeds of more
    pools (none by default), and FKLIR_PROPERTY_EXAMPLES draws from each (default 100)."""
    seeds = [int(s) for s in os.environ.get("FKLIR_PROPERTY_SEEDS", "").split(",") if s.strip()]
    return seeds, int(os.environ.get("FKLIR_PROPERTY_EXAMPLES", "100"))


# =============================================================================================
# Values
# =============================================================================================


def _value(draw: Any, dtype: str, *, nonzero: bool = False, small: bool = False) -> float:
    """One value representable in the chain type (floats: in a range that keeps f16 finite)."""
    if dtype == "bool":
        return float(draw(st.integers(0, 1)))
    if dtype in INTS:
        lo, hi = INT_RANGE[dtype]
        if small:
            lo, hi = max(lo, -9), min(hi, 9)
        v = draw(st.integers(lo, hi))
        if nonzero and v == 0:
            v = 1
        return float(v)
    special = draw(st.sampled_from([None, None, None, 0.5, -2.5, 1.5, 0.0]))
    v = special if special is not None else draw(st.floats(-300.0, 300.0, allow_nan=False, width=32))
    if nonzero and v == 0:
        v = 0.75
    return float(v)


def _values(draw: Any, dtype: str, channels: int, **kw: Any) -> tuple[float, ...] | float:
    if draw(st.booleans()):
        return _value(draw, dtype, **kw)
    return tuple(_value(draw, dtype, **kw) for _ in range(channels))


def _rows(draw: Any, planes: int, dtype: str, channels: int, **kw: Any) -> fkl.PerImage:
    """Per-image values: one row per plane, all rows one value or all one per channel."""
    width = channels if draw(st.booleans()) else 1
    return fkl.per_image([[_value(draw, dtype, **kw) for _ in range(width)] for _ in range(planes)])


def _values_for(draw: Any, t: Template, dtype: str, channels: int, **kw: Any) -> Any:
    """A value op's values: per image when the template says so."""
    if t.per_image:
        return _rows(draw, t.planes, dtype, channels, **kw)
    return _values(draw, dtype, channels, **kw)


def _rect(draw: Any, w: int, h: int, bordered: bool, size: tuple[int, int] | None) -> tuple[int, int, int, int]:
    if bordered:
        rw = size[0] if size else draw(st.integers(1, 3 * w + 2))
        rh = size[1] if size else draw(st.integers(1, 3 * h + 2))
        return draw(st.integers(-3 * w, 3 * w)), draw(st.integers(-3 * h, 3 * h)), rw, rh
    rw = draw(st.integers(1, w))
    rh = draw(st.integers(1, h))
    return draw(st.integers(0, w - rw)), draw(st.integers(0, h - rh)), rw, rh


def _matrix(draw: Any, kind: str) -> np.ndarray:
    angle = draw(st.floats(-0.7, 0.7))
    scale_x, scale_y = draw(st.floats(0.5, 1.8)), draw(st.floats(0.5, 1.8))
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    linear = rotation @ np.array([[scale_x, draw(st.floats(-0.3, 0.3))], [0.0, scale_y]])
    m = np.hstack([linear, [[draw(st.floats(-6, 6))], [draw(st.floats(-6, 6))]]])
    if kind == "affine":
        return m
    m = np.vstack([m, [0.0, 0.0, 1.0]])
    m[2, :2] = draw(st.floats(-0.01, 0.01)), draw(st.floats(-0.01, 0.01))
    return m


@dataclass
class Drawn:
    """One example: the chain's descriptors and its input."""

    ops: list[Op]
    x: np.ndarray | None
    template: Template


def _image(draw: Any, t: Template, w: int, h: int) -> np.ndarray:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    shape = (t.planes, h, w, t.channels)
    if t.dtype == "bool":
        data = rng.integers(0, 2, shape).astype(np.bool_)
    elif t.dtype in INTS:
        lo, hi = INT_RANGE[t.dtype]
        narrow = draw(st.booleans())  # small values hit equalities, even numbers, exact results
        data = rng.integers(
            max(lo, -20) if narrow else lo, (min(hi, 20) if narrow else hi), shape, endpoint=True
        ).astype(t.dtype)
    else:
        data = (rng.standard_normal(shape) * rng.choice([1.0, 50.0, 300.0])).astype(t.dtype)
        if draw(st.booleans()):
            flat = data.reshape(-1)
            for v in (np.nan, 0.5, 1.5, -2.5, 2.5):
                flat[rng.integers(0, flat.size)] = v
    if t.read == "pack":
        return np.ascontiguousarray(data.transpose(0, 3, 1, 2)[0] if t.planes == 1 else data.transpose(0, 3, 1, 2))
    if t.planes == 1:
        data = data[0]
        return data[..., 0] if t.channels == 1 else data
    return data


@st.composite
def chains(draw: Any, templates: list[Template] = TEMPLATES) -> Drawn:
    """A random valid chain: a template from the pool, and values drawn for it."""
    t: Template = draw(st.sampled_from(templates))
    ops: list[Op] = []
    if t.read == "set":
        w, h = draw(st.integers(1, 23)), draw(st.integers(1, 19))
        ops.append(fkl.ReadSet(_values(draw, t.dtype, t.channels), w, h, t.dtype, channels=t.channels))
        x = None
    else:
        w, h = draw(st.integers(1, 37)), draw(st.integers(1, 29))
        ops.append(fkl.TensorPack(t.channels) if t.read == "pack" else fkl.TensorRead())
        x = _image(draw, t, w, h)
    dtype, channels = t.dtype, t.channels
    bordered = False
    for token in t.geometry:
        kind = token[0]
        if kind == "border":
            ops.append(fkl.BorderReader(token[1], _values_for(draw, t, dtype, channels)))
            bordered = True
            continue
        if kind == "crop":
            rect = _rect(draw, w, h, bordered, None)
            ops.append(fkl.Crop(*rect))
            w, h = rect[2], rect[3]
        elif kind == "resize":
            _, interp, mode = token
            w, h = draw(st.integers(1, 31)), draw(st.integers(1, 31))
            out_dtype = "float32" if interp == "linear" else dtype
            background = None if mode == "ignore" else _values_for(draw, t, out_dtype, channels)
            ops.append(fkl.Resize(w, h, interp, mode, background))
            dtype = out_dtype
        elif kind == "warp":
            w, h = draw(st.integers(1, 31)), draw(st.integers(1, 31))
            matrix: Any = _matrix(draw, token[1])
            if t.per_image:
                matrix = fkl.per_image(np.stack([matrix, *(_matrix(draw, token[1]) for _ in range(t.planes - 1))]))
            ops.append(fkl.Warping(matrix, w, h, inverse=draw(st.booleans())))
            dtype = "float32"
        elif kind == "deinterlace":
            ops.append(fkl.Deinterlace(token[1]))
            dtype = "float32"
        bordered = False
    for token in t.compute:
        ops.append(_compute_op(draw, token, dtype, channels, t))
        dtype, channels = _after(token, dtype, channels)
    ops.append(
        {
            "write": fkl.TensorWrite,
            "split": fkl.TensorSplit,
            "tsplit": fkl.TensorTSplit,
            "split_write": fkl.SplitWrite,
        }[t.write]()
    )
    return Drawn(ops, x, t)


def _compute_op(draw: Any, token: Token, dtype: str, channels: int, t: Template) -> Op:
    kind = token[0]
    binary = {"add": fkl.Add, "sub": fkl.Sub, "mul": fkl.Mul, "div": fkl.Div, "max": fkl.Max, "min": fkl.Min}
    if kind == "arith":
        small = token[1] in ("mul", "div")
        return binary[token[1]](_values_for(draw, t, dtype, channels, nonzero=token[1] == "div", small=small))
    if kind == "loop":
        return fkl.StaticLoop(binary[token[1]](_values(draw, dtype, channels, small=True)), token[2])
    if kind == "saturate":
        bounds = [_bounds(draw, dtype, channels) for _ in range(t.planes if t.per_image else 1)]
        if not t.per_image:
            return fkl.Saturate(*bounds[0])
        return fkl.Saturate(fkl.per_image([lo for lo, _ in bounds]), fkl.per_image([hi for _, hi in bounds]))
    if kind == "satfloat":
        return fkl.SaturateFloat()
    if kind == "cast":
        return fkl.Cast(token[1])
    if kind == "satcast":
        return fkl.SaturateCast(token[1])
    if kind == "is_even":
        return fkl.IsEven()
    if kind == "vector_and":
        return fkl.VectorAnd()
    if kind == "reduce":
        return fkl.VectorReduce(token[1].capitalize())
    if kind == "discard":
        return fkl.Discard(token[1])
    if kind == "add_last":
        return fkl.AddLast(_value(draw, dtype))
    if kind == "reorder":
        return fkl.VectorReorder(*token[1])
    if kind == "reorder_rt":
        return fkl.VectorReorderRT(*(draw(st.integers(0, channels - 1)) for _ in range(token[1])))
    if kind == "mxv":
        matrices = [
            [[draw(st.floats(-2, 2, width=32)) for _ in range(3)] for _ in range(3)]
            for _ in range(t.planes if t.per_image else 1)
        ]
        return fkl.MxVFloat3(fkl.per_image(matrices) if t.per_image else matrices[0])
    if kind == "color":
        return fkl.ColorConversion(token[1])
    raise AssertionError(f"unknown token {token}")


def _bounds(draw: Any, dtype: str, channels: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    a = [_value(draw, dtype) for _ in range(channels)]
    b = [_value(draw, dtype) for _ in range(channels)]
    return tuple(min(p, q) for p, q in zip(a, b, strict=True)), tuple(max(p, q) for p, q in zip(a, b, strict=True))


def property_settings(examples: int) -> settings:
    """The property tests' settings: `examples` draws, derandomized (CI stays stable), no deadline, no database."""
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# =============================================================================================
# Running and comparing
# =============================================================================================


def run_target(drawn: Drawn, target: str) -> tuple[Any, Any]:
    """(output in the reference's layout, reference output) on one target."""
    from tests.runtime.catalogue_support import (
        no_source,
        packed_source,
        planar_source,
        reference,
        run_cpu,
        run_gpu,
    )

    t = drawn.template
    if drawn.x is None:
        src = no_source(t.dtype, t.channels)
    elif t.read == "pack":
        src = planar_source(drawn.x)
    else:
        src = packed_source(drawn.x)
    if t.composable:
        expected = reference(drawn.ops, src)
        device_input: Any = drawn.x
        if target == "gpu":
            from fklir.runtime.device_buffer import DeviceBuffer

            device_input = DeviceBuffer.from_host(drawn.x)  # pyright: ignore[reportArgumentType]
        out = fkl.compose(*drawn.ops, target=target)(device_input)
        host = out if isinstance(out, np.ndarray) else out.copy_to_host()
        return host.reshape(expected.shape), expected
    if target == "cpu":
        return run_cpu(drawn.ops, src)
    return run_gpu(drawn.ops, src), reference(drawn.ops, src)


def assert_same(out: Any, expected: Any, what: str) -> None:
    """Exact for integer and bool outputs; for floats equal up to a few ulps (NaN where NaN)."""
    if isinstance(expected, tuple):
        assert isinstance(out, tuple) and len(out) == len(expected), what
        for a, b in zip(out, expected, strict=True):
            assert_same(a, b, what)
        return
    assert out.shape == expected.shape and out.dtype == expected.dtype, (
        what,
        out.shape,
        expected.shape,
        out.dtype,
        expected.dtype,
    )
    if out.dtype.kind in "biu":
        np.testing.assert_array_equal(out, expected, err_msg=what)
        return
    a, b = out.astype(np.float64), expected.astype(np.float64)
    same_nan = np.isnan(a) == np.isnan(b)
    assert bool(same_nan.all()), f"{what}: NaN positions differ"
    finite = ~np.isnan(a)
    np.testing.assert_allclose(a[finite], b[finite], rtol=4 * float(np.finfo(out.dtype).eps), atol=1e-30, err_msg=what)
