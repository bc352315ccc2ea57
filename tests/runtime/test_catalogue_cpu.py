"""The op catalogue of SPEC §3 on the CPU target, against independent oracles: numpy formulas
written from SPEC (float64 inside, explicit rounding to the chain type) and OpenCV where it has the
op (cv2.resize, cv2.cvtColor, cv2.copyMakeBorder, cv2.warpAffine / warpPerspective; IPP is on, see
tests/conftest.py). Odd sizes, random data, rounding ties and NaN throughout.

Chains that compose() accepts run through it; TensorPack, ReadSet, TensorTSplit and SplitWrite (not
yet accepted by compose()) run through the same kernel build with a direct launch
(tests/runtime/catalogue_support.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.build import STATS, structural_ir
from fklir.frontend.lowering import kernels_of, lower_chain, run_passes
from fklir.jit.signature import input_signature
from tests.borders import NUMPY_PAD, cv2_borders
from tests.runtime.catalogue_support import no_source, packed_source, planar_source, run_cpu
from tests.warp_formula import CV2_BOUND, assert_float_warp_exact, warp_formula

cv2 = pytest.importorskip("cv2")

RNG = np.random.default_rng(20251130)
INT_TYPES = ["uint8", "int8", "uint16", "int16", "int32", "uint32"]
FLOAT_TYPES = ["float16", "float32", "float64"]


def run(x: np.ndarray, *ops: fkl.frontend.ops.Op, write: fkl.frontend.ops.Op | None = None) -> np.ndarray:  # pyright: ignore[reportAttributeAccessIssue]
    """The chain TensorRead, ops..., TensorWrite on the CPU target."""
    return fkl.compose(fkl.TensorRead(), *ops, write or fkl.TensorWrite(), target="cpu")(x)


def random_ints(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def random_floats(dtype: str, shape: tuple[int, ...], scale: float = 40.0) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(dtype)


def wrap(values: np.ndarray, dtype: str) -> np.ndarray:
    """int64 results modulo 2^bits, as the chain type (two's complement)."""
    return values.astype(np.int64).astype(dtype)


def bf16(values: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (nearest, ties to even), kept as float32."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32)


def structure(x: np.ndarray, *ops: Any) -> str:
    """The structural IR of the chain's kernel: what the cache key hashes (values stripped)."""
    sig = input_signature(x.shape, str(x.dtype))[0]
    chain = [fkl.TensorRead(), *ops, fkl.TensorWrite()]
    (kernel,) = kernels_of(run_passes(lower_chain(chain, sig.dtype, sig.channels, sig.planes)))
    return structural_ir(kernel)


def select_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a >= b, a, b)


def select_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a <= b, a, b)


def c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C integer division: truncation toward zero."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


# =============================================================================================
# Clamps: Saturate, SaturateFloat; SaturateCast ties and NaN
# =============================================================================================


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_saturate_integers_per_channel(dtype: str) -> None:
    x = random_ints(dtype, (17, 33, 3))
    info = np.iinfo(dtype)
    lo = (int(info.min), int(info.min) // 2, 0)
    hi = (int(info.max), int(info.max) // 3, 7)
    out = run(x, fkl.Saturate(lo, hi))
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, np.clip(x, np.array(lo, dtype), np.array(hi, dtype)))
    assert (out[..., 2] == 7).any() and (out[..., 1] == info.max // 3).any()


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_saturate_floats_keeps_nan(dtype: str) -> None:
    x = random_floats(dtype, (9, 13, 2))
    x[0, :4, 0] = [np.nan, np.inf, -np.inf, 1.0]
    out = run(x, fkl.Saturate(-3.5, (2.0, 10.25)))
    expected = np.clip(x, np.array([-3.5, -3.5], dtype), np.array([2.0, 10.25], dtype))
    np.testing.assert_array_equal(out, expected)  # NaN compares equal here: assert_array_equal treats NaNs alike
    assert np.isnan(out[0, 0, 0]) and out[0, 1, 0] == 2.0 and out[0, 2, 0] == -3.5


@pytest.mark.parametrize("dtype", FLOAT_TYPES)
def test_saturate_float_clamps_to_unit_range(dtype: str) -> None:
    x = random_floats(dtype, (7, 11, 3), scale=1.0)
    x[0, 0] = [np.nan, -0.0, 1.0000001]
    out = run(x, fkl.SaturateFloat())
    np.testing.assert_array_equal(out, np.clip(x, 0, 1).astype(dtype))
    assert np.isnan(out[0, 0, 0])


def test_saturate_float_on_bfloat16_through_casts() -> None:
    x = (RNG.standard_normal((7, 11)) * 2).astype(np.float32)
    out = run(x, fkl.Cast("bfloat16"), fkl.Mul(0.75), fkl.SaturateFloat(), fkl.Cast("float32"))
    expected = np.clip(bf16(bf16(x).astype(np.float64) * 0.75), 0, 1)
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("source", ["float16", "float32", "float64"])
@pytest.mark.parametrize("target", ["uint8", "int8", "int16", "uint16", "int32", "uint32"])
def test_saturate_cast_ties_nan_and_range(source: str, target: str) -> None:
    ties = [0.5, 1.5, 2.5, -2.5, -0.5, 3.5, 126.5, 127.5, np.nan, np.inf, -np.inf, 1e5, -1e5, 254.5, 255.5]
    with np.errstate(over="ignore"):  # 1e5 is inf in float16: the clamp must still hold
        x = np.array([ties], dtype=source)
    out = run(x, fkl.SaturateCast(target))
    info = np.iinfo(target)
    v = np.where(np.isnan(x.astype(np.float64)), 0.0, x.astype(np.float64))
    expected = np.rint(np.clip(v, info.min, info.max)).astype(target)  # np.rint: half to even
    np.testing.assert_array_equal(out, expected)
    assert out[0, 8] == 0  # NaN -> 0
    assert list(out[0, :3]) == [0, 2, 2]


# =============================================================================================
# Logic: IsEven, VectorAnd
# =============================================================================================


@pytest.mark.parametrize("dtype", INT_TYPES)
def test_is_even_every_integer_type(dtype: str) -> None:
    x = random_ints(dtype, (17, 33, 2))
    info = np.iinfo(dtype)
    x[0, :2] = [[info.min, info.max], [-1 if info.min < 0 else 1, 0]]
    out = run(x, fkl.IsEven())
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out, x.astype(np.int64) % 2 == 0)


@pytest.mark.parametrize("channels", [2, 3, 4])
def test_vector_and_of_is_even(channels: int) -> None:
    x = RNG.integers(0, 4, (19, 23, channels), dtype=np.int16)  # small values: all-even pixels occur
    out = run(x, fkl.IsEven(), fkl.VectorAnd())
    expected = np.all(x % 2 == 0, axis=-1)
    assert out.shape == (19, 23) and out.dtype == np.bool_
    np.testing.assert_array_equal(out, expected)
    assert expected.any() and not expected.all()


# =============================================================================================
# Vector ops
# =============================================================================================

FOLDS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "Add": np.add,
    "Mul": np.multiply,
    "Max": select_max,
    "Min": select_min,
}


@pytest.mark.parametrize("op", sorted(FOLDS))
@pytest.mark.parametrize("dtype", ["uint8", "int16", "int32", "uint32", "float16", "float32", "float64"])
def test_vector_reduce_left_fold_in_the_chain_type(op: str, dtype: str) -> None:
    shape = (13, 17, 4)
    x = random_ints(dtype, shape) if dtype in INT_TYPES else random_floats(dtype, shape)
    if dtype.startswith("float"):
        x[0, 0] = [np.nan, 1.0, 2.0, 3.0]
        x[0, 1] = [1.0, np.nan, 2.0, 3.0]
    out = run(x, fkl.VectorReduce(op))
    if dtype in INT_TYPES:
        acc = x[..., 0].astype(np.int64)
        for c in range(1, 4):
            acc = wrap(FOLDS[op](acc, x[..., c].astype(np.int64)), dtype).astype(np.int64)
        expected = acc.astype(dtype)
    else:
        acc = x[..., 0]
        with np.errstate(all="ignore"):
            for c in range(1, 4):
                acc = FOLDS[op](acc, x[..., c]).astype(dtype)  # numpy computes in the chain type
        expected = acc
    assert out.shape == (13, 17) and out.dtype == x.dtype
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype", ["bool", "int8", "float16", "float64"])
def test_discard_add_last_and_reorders(dtype: str) -> None:
    x = (
        RNG.integers(0, 2, (11, 7, 3)).astype(dtype)
        if dtype == "bool"
        else random_ints("int8", (11, 7, 3)).astype(dtype)
    )
    kept = run(x, fkl.Discard(2))
    np.testing.assert_array_equal(kept, x[..., :2])
    appended = run(x, fkl.AddLast(1))
    np.testing.assert_array_equal(appended, np.concatenate([x, np.ones((11, 7, 1), dtype)], axis=-1))
    reordered = run(x, fkl.VectorReorder(2, 2, 0, 1))
    np.testing.assert_array_equal(reordered, x[..., [2, 2, 0, 1]])
    runtime = run(x, fkl.VectorReorderRT(1, 0))
    np.testing.assert_array_equal(runtime, x[..., [1, 0]])
    one = run(x, fkl.Discard(1))
    assert one.shape == (11, 7)


def test_vector_reorder_rt_permutation_is_a_value() -> None:
    x = RNG.integers(0, 256, (9, 10, 4), dtype=np.uint8)
    run(x, fkl.VectorReorderRT(0, 1, 2, 3))
    before = STATS.compiles
    for perm in [(3, 2, 1, 0), (1, 1, 1, 1), (2, 0, 3, 1)]:
        np.testing.assert_array_equal(run(x, fkl.VectorReorderRT(*perm)), x[..., list(perm)])
    assert STATS.compiles == before  # the permutation travels in the parameter block
    assert structure(x, fkl.VectorReorderRT(3, 2, 1, 0)) == structure(x, fkl.VectorReorderRT(1, 1, 1, 1))
    # the compile-time reorder is structure
    assert structure(x, fkl.VectorReorder(3, 2, 1, 0)) != structure(x, fkl.VectorReorder(1, 1, 1, 1))


# =============================================================================================
# MxVFloat3 and StaticLoop
# =============================================================================================


def test_mxv_float3_is_the_row_major_matrix_times_the_pixel() -> None:
    x = random_floats("float32", (17, 33, 3))
    m = np.array([[0.299, 0.587, 0.114], [-0.169, -0.331, 0.5], [0.5, -0.419, -0.081]])
    out = run(x, fkl.MxVFloat3(m))
    m32 = m.astype(np.float32).astype(np.float64)  # the matrix travels as float32
    v = x.astype(np.float64)
    expected = np.stack([(m32[r, 0] * v[..., 0] + m32[r, 1] * v[..., 1]) + m32[r, 2] * v[..., 2] for r in range(3)], -1)
    np.testing.assert_array_equal(out, expected.astype(np.float32))
    np.testing.assert_allclose(out, np.einsum("rc,hwc->hwr", m, v), rtol=1e-5, atol=1e-4)
    flat = run(x, fkl.MxVFloat3(list(m.reshape(-1))))
    np.testing.assert_array_equal(flat, out)


@pytest.mark.parametrize(
    ("dtype", "op", "n"),
    [
        ("float32", fkl.Mul(1.5), 4),
        ("float16", fkl.Add(0.1), 5),
        ("uint8", fkl.Mul(3), 3),
        ("int16", fkl.Div(-3), 2),
        ("int32", fkl.Sub(1_000_000_000), 3),
        ("float64", fkl.Max(0.25), 1),
    ],
)
def test_static_loop_applies_the_op_n_times(dtype: str, op: Any, n: int) -> None:
    x = random_ints(dtype, (9, 13, 2)) if dtype in INT_TYPES else random_floats(dtype, (9, 13, 2), scale=3.0)
    out = run(x, fkl.StaticLoop(op, n))
    step: dict[type, Callable[[np.ndarray, Any], np.ndarray]] = {
        fkl.Mul: lambda a, v: a * v,
        fkl.Add: lambda a, v: a + v,
        fkl.Sub: lambda a, v: a - v,
        fkl.Div: lambda a, v: c_div(a, v),
        fkl.Max: select_max,
    }
    (v,) = op.values
    expected = x
    for _ in range(n):  # each step in the chain type, with the value as the chain type carries it
        if dtype in INT_TYPES:
            expected = wrap(step[type(op)](expected.astype(np.int64), int(v)), dtype)
        else:
            expected = step[type(op)](expected.astype(np.float64), np.float64(np.array(v, dtype))).astype(dtype)
    np.testing.assert_array_equal(out, expected)


def test_static_loop_value_is_one_slot_and_n_is_structure() -> None:
    x = random_floats("float32", (5, 6, 3))
    run(x, fkl.StaticLoop(fkl.Mul(2.0), 3))
    before = STATS.compiles
    np.testing.assert_array_equal(run(x, fkl.StaticLoop(fkl.Mul(0.5), 3)), x * np.float32(0.125))
    assert STATS.compiles == before
    np.testing.assert_array_equal(run(x, fkl.StaticLoop(fkl.Mul(0.5), 2)), x * np.float32(0.25))
    loop = structure(x, fkl.StaticLoop(fkl.Mul(2.0), 3))
    assert loop == structure(x, fkl.StaticLoop(fkl.Mul((1.0, 2.0, 3.0)), 3))
    assert loop != structure(x, fkl.StaticLoop(fkl.Mul(2.0), 2))


# =============================================================================================
# ColorConversion
# =============================================================================================

ALL_CODES = list(fkl.dialects.fkl.COLOR_CODES)  # pyright: ignore[reportAttributeAccessIssue]
IN_CHANNELS = {code: spec.in_channels for code, spec in fkl.dialects.fkl.COLOR_CODES.items()}  # pyright: ignore[reportAttributeAccessIssue]


def color_input(dtype: str, channels: int, shape: tuple[int, int] = (17, 33)) -> np.ndarray:
    full = (*shape, channels) if channels > 1 else shape
    if dtype in INT_TYPES:
        return random_ints(dtype, full)
    return (RNG.random(full) * 255).astype(dtype)


@pytest.mark.parametrize("code", ALL_CODES)
@pytest.mark.parametrize("dtype", ["uint8", "uint16"])
def test_color_conversion_equals_cv2_exactly(code: str, dtype: str) -> None:
    x = color_input(dtype, IN_CHANNELS[code])
    out = run(x, fkl.ColorConversion(code))
    expected = cv2.cvtColor(x, getattr(cv2, f"COLOR_{code}"))
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, expected)


def test_gray_fixed_point_equals_cv2_on_every_uint8_colour() -> None:
    levels = np.arange(256, dtype=np.uint8)
    r, g, b = np.meshgrid(levels, levels, levels, indexing="ij")
    cube = np.stack([r, g, b], -1).reshape(4096, 4096, 3)  # all 2^24 colours
    out = run(cube, fkl.ColorConversion("RGB2GRAY"))
    np.testing.assert_array_equal(out, cv2.cvtColor(cube, cv2.COLOR_RGB2GRAY))
    rounded_float = np.rint(0.299 * r + 0.587 * g + 0.114 * b).reshape(4096, 4096)
    assert (rounded_float != out).any()  # SPEC: rounding the float formula does not match cv2


@pytest.mark.parametrize("code", ["RGB2GRAY", "BGRA2GRAY", "RGB2BGRA", "GRAY2BGR", "RGBA2BGR"])
def test_color_conversion_float32_matches_cv2(code: str) -> None:
    x = color_input("float32", IN_CHANNELS[code])
    out = run(x, fkl.ColorConversion(code))
    expected = cv2.cvtColor(x, getattr(cv2, f"COLOR_{code}"))
    np.testing.assert_allclose(out, expected, rtol=2e-7, atol=2e-5)  # cv2 sums in float32


@pytest.mark.parametrize("dtype", ["int8", "int16", "int32", "uint32", "float16", "float64", "bool"])
def test_color_conversion_other_types_by_formula(dtype: str) -> None:
    x = color_input("uint8", 4).astype(dtype) if dtype == "bool" else color_input(dtype, 4)
    alpha = {"float16": 1.0, "float64": 1.0, "bool": True}.get(dtype) or np.iinfo(dtype).max
    swapped = run(x[..., :3].copy(), fkl.ColorConversion("BGR2RGBA"))
    np.testing.assert_array_equal(swapped[..., :3], x[..., 2::-1])
    assert (swapped[..., 3] == np.array(alpha, dtype)).all()
    if dtype == "bool":
        return
    gray = run(x, fkl.ColorConversion("BGRA2GRAY"))
    red, green, blue = (x[..., i] for i in (2, 1, 0))
    if dtype.startswith("float"):
        expected = 0.299 * red.astype(np.float64) + 0.587 * green.astype(np.float64) + 0.114 * blue.astype(np.float64)
        np.testing.assert_array_equal(gray, expected.astype(dtype))
    else:
        acc = 9798 * red.astype(np.int64) + 19235 * green.astype(np.int64) + 3735 * blue.astype(np.int64) + 16384
        np.testing.assert_array_equal(gray, wrap(acc >> 15, dtype))


def test_color_conversion_alpha_for_bfloat16_is_one() -> None:
    x = (RNG.random((5, 6, 3)) * 4).astype(np.float32)
    out = run(x, fkl.Cast("bfloat16"), fkl.ColorConversion("RGB2RGBA"), fkl.Cast("float32"))
    np.testing.assert_array_equal(out[..., :3], bf16(x))
    assert (out[..., 3] == 1.0).all()


# =============================================================================================
# BorderReader and Crop
# =============================================================================================

CV2_BORDER = cv2_borders(cv2)


@pytest.mark.parametrize("mode", sorted(NUMPY_PAD))
def test_border_crop_equals_numpy_pad_and_copy_make_border_far_outside(mode: str) -> None:
    x = RNG.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    top, left, bottom, right = 17, 23, 16, 29  # more than three times the image size on every side
    rect = (-left, -top, 7 + left + right, 5 + top + bottom)
    value = (11, 22, 33)
    out = run(x, fkl.BorderReader(mode, value), fkl.Crop(*rect))
    pad = ((top, bottom), (left, right), (0, 0))
    if mode == "constant":
        expected = np.stack([np.pad(x[..., c], pad[:2], constant_values=value[c]) for c in range(3)], -1)
    else:
        expected = np.pad(x, pad, mode=NUMPY_PAD[mode])  # pyright: ignore[reportArgumentType]
    np.testing.assert_array_equal(out, expected)
    cv = cv2.copyMakeBorder(x, top, bottom, left, right, CV2_BORDER[mode], value=value)
    np.testing.assert_array_equal(out, cv)


@pytest.mark.parametrize("mode", sorted(NUMPY_PAD))
def test_border_crop_rects_in_every_direction_and_thin_images(mode: str) -> None:
    x = random_floats("float32", (1, 6, 2))  # a one-row image: reflect101 of one pixel is that pixel
    rects = [(-40, -9, 5, 4), (3, -2, 5, 4), (50, 30, 5, 4)]
    out = run(x, fkl.BorderReader(mode, -1.5), fkl.Crop(rects))
    assert out.shape == (3, 4, 5, 2)
    big = 60
    padded = (
        np.pad(x, ((big, big), (big, big), (0, 0)), constant_values=-1.5)
        if mode == "constant"
        else np.pad(x, ((big, big), (big, big), (0, 0)), mode=NUMPY_PAD[mode])  # pyright: ignore[reportArgumentType]
    )
    for plane, (rx, ry, rw, rh) in zip(out, rects, strict=True):
        np.testing.assert_array_equal(plane, padded[ry + big : ry + big + rh, rx + big : rx + big + rw])


def test_crop_leaving_the_image_without_border_is_a_call_error() -> None:
    x = np.zeros((10, 12, 3), np.uint8)
    for _ in range(2):  # the same error before and after the structure is known (a good call in between)
        with pytest.raises(ValueError, match=r"Crop: rect \[-1, 0, 4, 4\] leaves the 12x10 image.*BorderReader"):
            run(x, fkl.Crop(-1, 0, 4, 4))
        run(x, fkl.Crop(1, 0, 4, 4))
    with pytest.raises(ValueError, match=r"Crop: rect \[10, 0, 4, 4\] leaves the 12x10 image"):
        run(x, fkl.Crop(10, 0, 4, 4))


def test_border_value_is_not_structure() -> None:
    x = RNG.integers(0, 100, (9, 8), dtype=np.int16)
    run(x, fkl.BorderReader("constant", 1), fkl.Crop(-2, -2, 12, 13))
    before = STATS.compiles
    out = run(x, fkl.BorderReader("constant", -7), fkl.Crop(-2, -2, 12, 13))
    np.testing.assert_array_equal(out, np.pad(x, ((2, 2), (2, 2)), constant_values=-7))
    assert STATS.compiles == before
    crop = fkl.Crop(-2, -2, 12, 13)
    assert structure(x, fkl.BorderReader("constant", 1), crop) == structure(x, fkl.BorderReader("constant", 5), crop)
    assert structure(x, fkl.BorderReader("wrap"), crop) != structure(x, fkl.BorderReader("reflect"), crop)


# =============================================================================================
# Resize against cv2.resize
# =============================================================================================

RESIZE_SIZES = [
    ((300, 300), (224, 224)),
    ((416, 416), (640, 640)),
    ((33, 17), (20, 31)),
    ((17, 33), (64, 9)),
    ((640, 480), (300, 300)),
    ((7, 5), (7, 5)),
]


@pytest.mark.parametrize(("src", "dst"), RESIZE_SIZES)
def test_resize_linear_float32_matches_cv2(src: tuple[int, int], dst: tuple[int, int]) -> None:
    x = (RNG.random((src[1], src[0], 3)) * 255).astype(np.float32)
    out = run(x, fkl.Resize(*dst))
    expected = cv2.resize(x, dst, interpolation=cv2.INTER_LINEAR)
    assert out.shape == expected.shape
    err = np.abs(out.astype(np.float64) - expected)
    assert float((err - (1e-3 + 1e-4 * np.abs(expected))).max()) <= 0, float(err.max())


@pytest.mark.parametrize(("src", "dst"), RESIZE_SIZES)
def test_resize_linear_uint8_after_saturate_cast_within_one(src: tuple[int, int], dst: tuple[int, int]) -> None:
    x = RNG.integers(0, 256, (src[1], src[0], 3), dtype=np.uint8)
    out = run(x, fkl.Resize(*dst), fkl.SaturateCast("uint8"))
    expected = cv2.resize(x, dst, interpolation=cv2.INTER_LINEAR)
    assert int(np.abs(out.astype(int) - expected).max()) <= 1


@pytest.mark.parametrize(("src", "dst"), RESIZE_SIZES)
@pytest.mark.parametrize("dtype", ["uint8", "float32", "int16"])
def test_resize_nearest_matches_cv2_exactly(src: tuple[int, int], dst: tuple[int, int], dtype: str) -> None:
    shape = (src[1], src[0], 3)
    x = random_floats(dtype, shape) if dtype == "float32" else random_ints(dtype, shape)
    out = run(x, fkl.Resize(*dst, interp="nearest"))
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, cv2.resize(x, dst, interpolation=cv2.INTER_NEAREST))


def content_box(src_w: int, src_h: int, dst_w: int, dst_h: int, mode: str) -> tuple[int, int, int, int]:
    """SPEC §3: scale min(dst/src), sizes rounded half away from zero, centred (odd leftover right/
    bottom), at x = 0 for preserve_left, sizes rounded down to even for preserve_even."""
    scale = min(dst_w / src_w, dst_h / src_h)
    cw, ch = (min(int(np.floor(v * scale + 0.5)), d) for v, d in ((src_w, dst_w), (src_h, dst_h)))
    if mode == "preserve_even":
        cw, ch = cw - cw % 2, ch - ch % 2
    x0 = 0 if mode == "preserve_left" else (dst_w - cw) // 2
    return x0, (dst_h - ch) // 2, cw, ch


@pytest.mark.parametrize("mode", ["preserve", "preserve_left", "preserve_even"])
@pytest.mark.parametrize(("src", "dst"), [((100, 50), (64, 63)), ((50, 101), (63, 64)), ((33, 17), (41, 41))])
@pytest.mark.parametrize("interp", ["linear", "nearest"])
def test_resize_preserving_aspect_ratio(mode: str, src: tuple[int, int], dst: tuple[int, int], interp: str) -> None:
    x = RNG.integers(0, 256, (src[1], src[0], 3), dtype=np.uint8)
    background = (114, 0, 255)
    out = run(x, fkl.Resize(*dst, interp=interp, aspect_ratio=mode, background=background))
    x0, y0, cw, ch = content_box(*src, *dst, mode)
    flag = cv2.INTER_LINEAR if interp == "linear" else cv2.INTER_NEAREST
    source = x.astype(np.float32) if interp == "linear" else x
    expected = np.empty_like(out)
    expected[...] = np.array(background, out.dtype)
    expected[y0 : y0 + ch, x0 : x0 + cw] = cv2.resize(source, (cw, ch), interpolation=flag)
    tolerance = 1e-3 + 1e-4 * 255 if interp == "linear" else 0
    assert float(np.abs(out.astype(np.float64) - expected).max()) <= tolerance
    assert out.dtype == (np.float32 if interp == "linear" else np.uint8)
    if mode == "preserve_left":
        assert x0 == 0


def test_resize_background_is_a_value() -> None:
    x = RNG.integers(0, 256, (10, 20, 3), dtype=np.uint8)
    run(x, fkl.Resize(16, 16, "nearest", "preserve", 1))
    before = STATS.compiles
    out = run(x, fkl.Resize(16, 16, "nearest", "preserve", (7, 8, 9)))
    np.testing.assert_array_equal(out[0, 0], [7, 8, 9])
    assert STATS.compiles == before
    assert structure(x, fkl.Resize(16, 16, "nearest", "preserve", 1)) == structure(
        x, fkl.Resize(30, 9, "nearest", "preserve", (7, 8, 9))
    )
    assert structure(x, fkl.Resize(16, 16, "nearest", "preserve", 1)) != structure(
        x, fkl.Resize(16, 16, "nearest", "preserve_left", 1)
    )


# =============================================================================================
# Warping against cv2.warpAffine / cv2.warpPerspective
# =============================================================================================


def random_affine() -> np.ndarray:
    angle = RNG.uniform(-0.6, 0.6)
    sx, sy = RNG.uniform(0.6, 1.6, 2)
    rotation = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    linear = rotation @ np.array([[sx, RNG.uniform(-0.2, 0.2)], [0.0, sy]])
    return np.hstack([linear, RNG.uniform(-8, 8, (2, 1))])


def random_perspective() -> np.ndarray:
    m = np.vstack([random_affine(), [0.0, 0.0, 1.0]])
    m[2, :2] = RNG.uniform(-0.004, 0.004, 2)
    return m


def cv_warp(
    x: np.ndarray,
    m: np.ndarray,
    size: tuple[int, int],
    inverse: bool,
    mode: str = "constant",
    value: float = 0.0,
) -> np.ndarray:
    fn = cv2.warpAffine if m.shape == (2, 3) else cv2.warpPerspective
    flags = cv2.INTER_LINEAR | (cv2.WARP_INVERSE_MAP if inverse else 0)
    return fn(x, m, size, flags=flags, borderMode=CV2_BORDER[mode], borderValue=(value,) * 4)


def assert_warp_exact(
    out: np.ndarray,
    x: np.ndarray,
    m: np.ndarray,
    size: tuple[int, int],
    inverse: bool,
    mode: str = "constant",
    value: float = 0.0,
) -> np.ndarray:
    """out against SPEC's float64 warp (its bound) and, but for 2 channels, cv2 5.1; returns cv2's."""
    assert out.dtype == np.float32
    assert_float_warp_exact(out, warp_formula(x, m, *size, inverse, mode, value), f"cpu warp {mode}")
    expected = cv_warp(x, m, size, inverse, mode, value)
    if x.ndim == 2 or x.shape[2] != 2:
        assert float(np.abs(out - expected).max()) <= CV2_BOUND[mode]
    return expected


@pytest.mark.parametrize("kind", ["affine", "perspective"])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("inverse", [False, True])
def test_warp_is_the_exact_blend_on_every_pixel(kind: str, channels: int, inverse: bool) -> None:
    shape = (17, 33, channels) if channels > 1 else (17, 33)
    for _ in range(2):
        x = (RNG.random(shape) * 255).astype(np.float32)
        m = random_affine() if kind == "affine" else random_perspective()
        out = run(x, fkl.Warping(m, 64, 23, inverse=inverse))
        expected = assert_warp_exact(out, x, m, (64, 23), inverse)
        assert (expected == 0).any()  # part of the output maps outside the source: border taps are tested


@pytest.mark.parametrize("mode", sorted(NUMPY_PAD))
@pytest.mark.parametrize("kind", ["affine", "perspective"])
def test_warp_after_a_border_reader_is_the_exact_blend(mode: str, kind: str) -> None:
    x = (RNG.random((17, 33, 3)) * 255).astype(np.float32)
    m = random_affine() if kind == "affine" else random_perspective()
    m[:2, 2] += 12.0  # far outside on one side
    out = run(x, fkl.BorderReader(mode, 37.5), fkl.Warping(m, 128, 40))
    assert_warp_exact(out, x, m, (128, 40), False, mode, 37.5)


@pytest.mark.parametrize(("w", "h"), [(33, 17), (41, 23), (7, 5)])
@pytest.mark.parametrize("kind", ["affine", "perspective"])
def test_warp_odd_sizes_are_the_exact_blend(w: int, h: int, kind: str) -> None:
    x = (RNG.random((17, 33, 3)) * 255).astype(np.float32)
    m = random_affine() if kind == "affine" else random_perspective()
    for inverse in (False, True):
        assert_warp_exact(run(x, fkl.Warping(m, w, h, inverse=inverse)), x, m, (w, h), inverse)


def test_warp_odd_sizes_with_dyadic_matrices() -> None:
    x = (RNG.random((17, 33, 4)) * 255).astype(np.float32)
    for m, inverse in [
        (np.array([[0.75, 0.125, -3.5], [-0.25, 1.25, 2.25]]), True),
        (np.array([[2.0, 0, 5], [0, 0.5, -1]]), False),
    ]:
        assert_warp_exact(run(x, fkl.Warping(m, 41, 23, inverse=inverse)), x, m, (41, 23), inverse)


def test_warp_uint8_source_then_saturate_cast_within_one_of_cv2() -> None:
    x = RNG.integers(0, 256, (17, 33, 3), dtype=np.uint8)
    m = random_affine()
    out = run(x, fkl.Warping(m, 64, 23), fkl.SaturateCast("uint8"))
    assert int(np.abs(out.astype(int) - cv_warp(x, m, (64, 23), False)).max()) <= 1


def test_warp_matrix_is_a_value_and_inverse_is_not_structure() -> None:
    x = (RNG.random((12, 16)) * 255).astype(np.float32)
    run(x, fkl.Warping(random_affine(), 20, 10))
    before = STATS.compiles
    for _ in range(2):
        m = random_affine()
        for inverse in (False, True):
            assert_warp_exact(run(x, fkl.Warping(m, 20, 10, inverse=inverse)), x, m, (20, 10), inverse)
    assert STATS.compiles == before
    m = random_affine()
    assert structure(x, fkl.Warping(m, 20, 10)) == structure(x, fkl.Warping(random_affine(), 7, 9, inverse=True))
    assert structure(x, fkl.Warping(m, 20, 10)) != structure(x, fkl.Warping(np.vstack([m, [0, 0, 1]]), 20, 10))


# =============================================================================================
# Deinterlace
# =============================================================================================


@pytest.mark.parametrize("height", [1, 2, 7, 8])
@pytest.mark.parametrize("dtype", ["uint8", "int32", "float16", "float64"])
def test_deinterlace_blend_and_linear(height: int, dtype: str) -> None:
    x = random_ints(dtype, (height, 9, 2)) if dtype in INT_TYPES else random_floats(dtype, (height, 9, 2))
    v = x.astype(np.float64)
    blend = v.copy()
    blend[1:] = (v[1:] + v[:-1]) / 2
    linear = v.copy()
    for y in range(1, height, 2):
        linear[y] = (v[y - 1] + v[y + 1]) / 2 if y + 1 < height else v[y - 1]
    np.testing.assert_array_equal(run(x, fkl.Deinterlace("blend")), blend.astype(np.float32))
    np.testing.assert_array_equal(run(x, fkl.Deinterlace("linear")), linear.astype(np.float32))


# =============================================================================================
# bfloat16 and every element type through a chain
# =============================================================================================


def test_bfloat16_chain_through_casts() -> None:
    x = (RNG.standard_normal((17, 33, 3)) * 100).astype(np.float32)
    x[0, 0] = [np.nan, 1.00390625, 1.01171875]  # exact bf16 ties between two neighbours
    out = run(x, fkl.Cast("bfloat16"), fkl.Add((0.5, -1.0, 2.0)), fkl.Mul(3.0), fkl.Cast("float32"))
    a = bf16(x)
    expected = bf16(
        (bf16((a.astype(np.float64) + np.array([0.5, -1.0, 2.0])).astype(np.float32)) * 3.0).astype(np.float32)
    )
    np.testing.assert_array_equal(out, expected)
    assert np.isnan(out[0, 0, 0])


# =============================================================================================
# Memory: TensorPack, TensorTSplit, SplitWrite, ReadSet (direct launch)
# =============================================================================================


@pytest.mark.parametrize("dtype", ["uint8", "float32", "int16"])
@pytest.mark.parametrize("planes", [1, 3])
def test_tensor_pack_reads_planar_input(dtype: str, planes: int) -> None:
    x = random_ints("int16", (planes, 3, 17, 33)).astype(dtype)
    out, ref = run_cpu([fkl.TensorPack(3), fkl.Max(0), fkl.TensorWrite()], planar_source(x))
    expected = np.maximum(x.transpose(0, 2, 3, 1), np.array(0, dtype))
    np.testing.assert_array_equal(out, expected)
    np.testing.assert_array_equal(ref, expected)


def test_tensor_pack_inverts_tensor_split() -> None:
    x = RNG.integers(0, 256, (2, 4, 11, 13), dtype=np.uint8)
    out, _ = run_cpu([fkl.TensorPack(4), fkl.TensorSplit()], planar_source(x))
    np.testing.assert_array_equal(out, x)


@pytest.mark.parametrize("planes", [1, 4])
def test_tensor_tsplit_is_channel_major(planes: int) -> None:
    x = RNG.integers(0, 256, (planes, 9, 13, 3), dtype=np.uint8)
    out, _ = run_cpu([fkl.TensorRead(), fkl.Cast("float32"), fkl.Div(255.0), fkl.TensorTSplit()], packed_source(x))
    assert out.shape == (3, planes, 9, 13) and out.dtype == np.float32
    np.testing.assert_array_equal(out, (x.astype(np.float32) / np.float32(255)).transpose(3, 0, 1, 2))


def test_split_write_gives_one_buffer_per_channel() -> None:
    x = RNG.integers(0, 256, (2, 9, 13, 4), dtype=np.uint8)
    out, _ = run_cpu([fkl.TensorRead(), fkl.Resize(5, 7, "nearest"), fkl.SplitWrite()], packed_source(x))
    assert len(out) == 4
    resized = np.stack([cv2.resize(plane, (5, 7), interpolation=cv2.INTER_NEAREST) for plane in x])
    for c in range(4):
        np.testing.assert_array_equal(out[c], resized[..., c])


@pytest.mark.parametrize("dtype", ["uint8", "int32", "float16", "float64", "bool"])
def test_read_set_generates_a_constant_image(dtype: str) -> None:
    value = (1, 0, 1) if dtype == "bool" else (3, 250, 7)
    out, _ = run_cpu([fkl.ReadSet(value, 13, 5, dtype), fkl.TensorWrite()], no_source(dtype, 3))
    assert out.shape == (1, 5, 13, 3)
    np.testing.assert_array_equal(out[0], np.broadcast_to(np.array(value, dtype), (5, 13, 3)))


def test_read_set_then_geometry_and_compute() -> None:
    out, _ = run_cpu(
        [
            fkl.ReadSet(2.0, 8, 6),
            fkl.BorderReader("constant", -1.0),
            fkl.Crop(-2, -1, 12, 8),
            fkl.Mul(3.0),
            fkl.TensorSplit(),
        ],
        no_source("float32", 1),
    )
    expected = np.pad(np.full((6, 8), 6.0, np.float32), ((1, 1), (2, 2)), constant_values=-3.0)
    np.testing.assert_array_equal(out[0, 0], expected)


# =============================================================================================
# Every invalid combination: a compose-time (or first-call) error that names the op
# =============================================================================================

U8 = np.zeros((6, 7, 3), np.uint8)
F32 = np.zeros((6, 7, 3), np.float32)
BOOL = np.zeros((6, 7, 3), np.bool_)


@pytest.mark.parametrize(
    ("ops", "x", "message"),
    [
        ([fkl.MxVFloat3(np.eye(3))], U8, r"fkl.mxv_float3.*exactly float32 x 3, got uint8 x 3"),
        ([fkl.Cast("float64"), fkl.MxVFloat3(np.eye(3))], U8, r"fkl.mxv_float3.*got float64 x 3"),
        ([fkl.AddLast(0.0), fkl.MxVFloat3(np.eye(3))], F32, r"fkl.mxv_float3.*got float32 x 4"),
        ([fkl.Mul((1.0, 2.0))], F32, r"'fkl.mul' has 2 values but the chain has 3 channels"),
        ([fkl.Saturate((0, 0), (1, 1))], U8, r"'fkl.saturate' has 2 values but the chain has 3 channels"),
        ([fkl.BorderReader("constant", (1, 2)), fkl.Crop(0, 0, 2, 2)], U8, r"'fkl.border' has 2 values"),
        ([fkl.Resize(4, 4, aspect_ratio="preserve", background=(0, 0))], U8, r"'fkl.resize' has 2 values"),
        (
            [fkl.Mul(0.5)],
            U8,
            r"'fkl.mul' value 0.5 is not representable in the chain's element type uint8; "
            r"Cast to float first",
        ),
        (
            [fkl.AddLast(0.5)],
            U8,
            r"'fkl.add_last' value 0.5 is not representable .* uint8; Cast to float first",
        ),
        ([fkl.Saturate(-1, 10)], U8, r"'fkl.saturate' value -1.0 is not representable .* uint8"),
        ([fkl.StaticLoop(fkl.Add(0.25), 2)], U8, r"'fkl.static_loop' value 0.25 is not representable"),
        ([fkl.Resize(4, 4, "nearest", "preserve", 0.5)], U8, r"'fkl.resize' value 0.5 is not representable"),
        ([fkl.Div(0)], U8, r"'fkl.div' divides an integer chain \(uint8\) by zero"),
        ([fkl.Div((1, 0, 1))], U8, r"'fkl.div' divides an integer chain"),
        (
            [fkl.StaticLoop(fkl.Div(0), 3)],
            U8,
            r"'fkl.static_loop' divides an integer chain \(uint8\) by zero",
        ),
        ([fkl.Discard(4)], U8, r"'fkl.discard' keeps 4 channels of a chain of 3"),
        (
            [fkl.ColorConversion("RGBA2GRAY")],
            U8,
            r"'fkl.color_conversion' RGBA2GRAY needs 4 channels, the chain has 3",
        ),
        ([fkl.ColorConversion("GRAY2RGB")], U8, r"'fkl.color_conversion' GRAY2RGB needs 1 channels"),
        ([fkl.IsEven()], F32, r"'fkl.is_even' needs an integer chain, got float32"),
        ([fkl.VectorAnd()], U8, r"'fkl.vector_and' needs a bool chain, got uint8"),
        ([fkl.SaturateFloat()], U8, r"'fkl.saturate_float' needs a float chain, got uint8"),
        (
            [fkl.VectorReorder(0, 3)],
            U8,
            r"'fkl.vector_reorder' channel indices \[3\] are out of range for a chain of 3",
        ),
        ([fkl.VectorReorderRT(3)], U8, r"'fkl.vector_reorder_rt' channel indices \[3\] are out of range"),
        ([fkl.AddLast(1), fkl.AddLast(1)], U8, r"'fkl.add_last' cannot append a channel to a chain of 4"),
        ([fkl.IsEven(), fkl.Add(1)], U8, r"'fkl.add' computes arithmetic on a bool chain"),
        ([fkl.IsEven(), fkl.VectorReduce("Add")], U8, r"'fkl.vector_reduce' reduces on a bool chain"),
        ([fkl.Resize(3, 3)], BOOL, r"'fkl.resize' interpolates linearly on a bool chain"),
        ([fkl.Warping(np.eye(3)[:2], 3, 3)], BOOL, r"'fkl.warp' interpolates linearly on a bool chain"),
        ([fkl.Deinterlace()], BOOL, r"'fkl.deinterlace' averages rows on a bool chain"),
        (
            [fkl.Cast("bool"), fkl.ColorConversion("RGB2GRAY")],
            U8,
            r"'fkl.color_conversion' computes gray on a bool chain",
        ),
    ],
)
def test_invalid_combination_is_an_error_naming_the_op(ops: list[Any], x: np.ndarray, message: str) -> None:
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=message) as info:
        pipe(x)
    assert "test_catalogue_cpu.py" in str(info.value)  # located at the user's line


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (
            lambda: fkl.Resize(8, 8, aspect_ratio="preserve"),
            ValueError,
            r"Resize: aspect ratio 'preserve' needs a background value",
        ),
        (
            lambda: fkl.Resize(8, 8, aspect_ratio="preserve_even"),
            ValueError,
            r"Resize: aspect ratio .preserve_even. needs a background value",
        ),
        (
            lambda: fkl.Resize(8, 8, background=0),
            ValueError,
            r"Resize: background is used only with a preserve aspect-ratio mode, not 'ignore'",
        ),
        (
            lambda: fkl.Resize(8, 8, aspect_ratio="fit", background=0),
            ValueError,
            r"Resize: aspect ratio must be one of ignore, preserve, preserve_left, preserve_even, got .fit.",
        ),
        (lambda: fkl.Cast("float128"), ValueError, r"Cast: unknown dtype 'float128'"),
        (lambda: fkl.SaturateCast("uint64"), ValueError, r"SaturateCast: unknown dtype 'uint64'"),
        (lambda: fkl.ReadSet(1.0, 4, 4, "half"), ValueError, r"ReadSet: unknown dtype 'half'"),
        (lambda: fkl.ColorConversion("RGB2HSV"), ValueError, r"ColorConversion: code must be one of .* got 'RGB2HSV'"),
        (lambda: fkl.BorderReader("mirror"), ValueError, r"BorderReader: mode must be one of"),
        (
            lambda: fkl.VectorReduce("Sum"),
            ValueError,
            r"VectorReduce: reduction must be one of add, mul, max, min \(in any case: 'Max' is max\), got 'Sum'",
        ),
        (lambda: fkl.Discard(0), ValueError, r"Discard: channel count must be from 1 to 4, got 0"),
        (lambda: fkl.VectorReorder(0, 1, 2, 3, 0), ValueError, r"VectorReorder: takes 1 to 4 channel indices, got 5"),
        (
            lambda: fkl.VectorReorderRT(-1),
            ValueError,
            r"VectorReorderRT: channel indices \[-1\] are out of range for a pixel \(at most 4 channels\)",
        ),
        (lambda: fkl.MxVFloat3([[1, 0], [0, 1]]), ValueError, r"MxVFloat3: needs a 3x3 matrix, got shape \(2, 2\)"),
        (lambda: fkl.MxVFloat3(np.full((3, 3), np.nan)), ValueError, r"MxVFloat3: matrix must be finite, got \[nan, "),
        (
            lambda: fkl.StaticLoop(fkl.Cast("uint8"), 2),
            TypeError,
            r"StaticLoop: the op must be Add, Sub, Mul, Div, Max or Min",
        ),
        (lambda: fkl.StaticLoop(fkl.Mul(2.0), 0), ValueError, r"StaticLoop: applies its op n >= 1 times, got 0"),
        (lambda: fkl.Warping(np.zeros((2, 3)), 4, 4), ValueError, r"Warping: matrix .* is singular"),
        (lambda: fkl.Warping(np.eye(4), 4, 4), ValueError, r"Warping: needs a 2x3 or 3x3 matrix, got shape \(4, 4\)"),
        (lambda: fkl.Warping(np.eye(3), 0, 4), ValueError, r"Warping: size must be \[w, h\] with positive values"),
        (lambda: fkl.Deinterlace("bob"), ValueError, r"Deinterlace: mode must be one of blend, linear, got 'bob'"),
        (lambda: fkl.Saturate(2, 1), ValueError, r"Saturate: lower bound \[2.0\] is above the upper bound \[1.0\]"),
        (lambda: fkl.Saturate((0, 0), (1, 1, 1)), ValueError, r"Saturate: needs lower and upper bounds of one length"),
        (lambda: fkl.AddLast((1, 2)), TypeError, r"AddLast: the appended value is one number"),
        (lambda: fkl.TensorPack(5), ValueError, r"TensorPack: channel count must be from 1 to 4, got 5"),
        (lambda: fkl.ReadSet((1, 2), 0, 4), ValueError, r"ReadSet: size must be \[w, h\] with positive"),
    ],
)
def test_invalid_descriptor_is_an_error_at_construction(
    make: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        make()


@pytest.mark.parametrize(
    "geometry",
    [
        fkl.Crop(0, 0, 2, 2),
        fkl.Resize(4, 4),
        fkl.BorderReader("wrap"),
        fkl.Warping(np.eye(3), 4, 4),
        fkl.Deinterlace(),
    ],
)
def test_geometry_that_does_not_follow_the_read_is_a_compose_error(geometry: Any) -> None:
    with pytest.raises(ValueError, match=f"{type(geometry).__name__} must come right after TensorRead"):
        fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), geometry, fkl.TensorWrite(), target="cpu")


def test_only_geometry_that_defines_outside_lets_a_crop_leave() -> None:
    x = RNG.integers(0, 256, (6, 7), dtype=np.uint8)
    with pytest.raises(ValueError, match=r"Crop: rect \[-1, -1, 3, 3\] leaves the 7x6 image.*BorderReader"):
        run(x, fkl.Resize(7, 6, "nearest"), fkl.Crop(-1, -1, 3, 3))
    with pytest.raises(ValueError, match=r"Crop: rect \[5, 0, 3, 3\] leaves the 7x6 image.*BorderReader"):
        run(x, fkl.Resize(7, 6, "nearest"), fkl.Crop(5, 0, 3, 3))
    out = run(x, fkl.BorderReader("replicate"), fkl.Resize(7, 6, "nearest"), fkl.Crop(0, 0, 3, 3))
    np.testing.assert_array_equal(out, x[:3, :3])
