"""Reference semantics (non-geometry ops) against hand-computed values, numpy and OpenCV."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fklir.dialects.color_codes import COLOR_CODES
from fklir.interpreters import semantics as S
from fklir.interpreters.semantics import Image
from fklir.interpreters.semantics_color import color_conversion

cv2 = pytest.importorskip("cv2")

RNG_SEED = 20240611


def img_of(values: list[float] | list[int] | np.ndarray, dtype: str) -> Image:
    """A 1x1xN single-channel image holding ``values`` along the width."""
    storage = S.DTYPES[dtype].storage
    arr = np.asarray(values).astype(storage).reshape(1, 1, -1, 1)
    return Image(arr, dtype)


def flat(img: Image) -> list[float]:
    return [float(v) for v in img.data.reshape(-1)]


# ----------------------------------------------------------------------------------------------
# Rounding to element types
# ----------------------------------------------------------------------------------------------


def test_bfloat16_ties_round_to_even() -> None:
    # 1 + 2**-8 lies halfway between 1 and 1 + 2**-7: the even one is 1.
    # 1 + 3 * 2**-8 lies halfway between 1 + 2**-7 (odd) and 1 + 2**-6 (even).
    values = np.array([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8), 1 + 2**-8 + 2**-20], dtype=np.float32)
    out = S.round_to_bfloat16(values)
    assert out.dtype == np.float32
    assert out.tolist() == [1.0, 1 + 2**-6, -1.0, 1 + 2**-7]


def test_bfloat16_overflow_nan_and_subnormals() -> None:
    nan_low_payload = np.array([0x7F800001], dtype=np.uint32).view(np.float32)
    values = np.concatenate(
        [
            np.array([np.finfo(np.float32).max, -np.inf, 2.0**-133, 2.0**-134 * 1.5], np.float32),
            nan_low_payload,
        ]
    )
    out = S.round_to_bfloat16(values)
    assert out[0] == np.inf  # float32 max is above the largest bfloat16 + half an ulp
    assert out[1] == -np.inf
    assert out[2] == 2.0**-133  # smallest bfloat16 subnormal is kept
    assert out[3] == 2.0**-133  # 1.5 quanta... of 2**-134: 0.75 of a quantum rounds up
    assert np.isnan(out[4])  # a NaN whose payload is in the dropped bits must not become inf


def test_bfloat16_bit_rounding_equals_direct_float64_rounding() -> None:
    rng = np.random.default_rng(RNG_SEED)
    bits = rng.integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    by_bits = S.round_to_bfloat16(values)
    with np.errstate(invalid="ignore"):  # signalling NaN patterns warn when widened
        by_float64 = S.round_to_bfloat16(values.astype(np.float64))
    same = (by_bits == by_float64) | (np.isnan(by_bits) & np.isnan(by_float64))
    assert bool(same.all())


def test_float64_to_float16_rounds_once() -> None:
    # Through float32 this would round twice: to 1 + 2**-11 (a tie), then to 1.0.
    value = np.array([1 + 2**-11 + 2**-40])
    assert float(S.round_to_dtype(value, "float16")[0]) == 1 + 2**-10
    assert float(S.round_to_dtype(value, "bfloat16")[0]) == 1.0


# ----------------------------------------------------------------------------------------------
# Arithmetic
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "op", "pixels", "value", "expected"),
    [
        ("uint8", "add", [250, 5], 10, [4, 15]),
        ("int32", "add", [2**31 - 1], 1, [-(2**31)]),
        ("int8", "sub", [-128, 0], 1, [127, -1]),
        ("uint32", "sub", [0], 1, [2**32 - 1]),
        ("uint8", "mul", [16, 3], 16, [0, 48]),
        ("uint32", "mul", [65536, 65537], 65537, [65536, 131073]),
        ("int16", "mul", [300], 300, [(90000 + 2**15) % 2**16 - 2**15]),
        ("int32", "div", [-7, 7, -8, 1], 2, [-3, 3, -4, 0]),
        ("int32", "div", [-7, 7, -8], -2, [3, -3, 4]),
        ("int32", "div", [-(2**31)], -1, [-(2**31)]),
        ("uint8", "max", [3, 200], 100, [100, 200]),
        ("int16", "min", [-3, 200], 100, [-3, 100]),
    ],
)
def test_integer_arith_wraps_and_truncates(
    dtype: str, op: str, pixels: list[int], value: int, expected: list[int]
) -> None:
    out = S.arith(op, img_of(pixels, dtype), value)
    assert out.dtype == dtype
    assert out.data.dtype == S.DTYPES[dtype].storage
    assert [int(v) for v in out.data.reshape(-1)] == expected


def test_integer_division_by_zero_is_an_error_naming_the_op() -> None:
    with pytest.raises(ValueError, match="Div"):
        S.arith("div", img_of([1, 2], "int32"), 0)
    with pytest.raises(ValueError, match="Div"):
        S.arith("div", Image(np.ones((1, 2, 2, 3), np.uint8), "uint8"), (1, 0, 1))


def test_non_representable_value_on_integer_chain_says_cast_first() -> None:
    with pytest.raises(ValueError, match="Cast to float first"):
        S.arith("mul", img_of([1], "uint8"), 0.5)
    with pytest.raises(ValueError, match="Add"):
        S.arith("add", img_of([1], "uint8"), 256)
    with pytest.raises(ValueError, match="3 values"):
        S.arith("add", Image(np.ones((1, 1, 1, 2), np.float32), "float32"), (1.0, 2.0, 3.0))


def test_float_division_follows_ieee() -> None:
    out = S.arith("div", img_of([1.0, -1.0, 0.0], "float32"), 0.0)
    assert out.data.reshape(-1)[0] == np.inf
    assert out.data.reshape(-1)[1] == -np.inf
    assert math.isnan(out.data.reshape(-1)[2])


def test_max_min_select_semantics_with_nan() -> None:
    pixels = img_of([np.nan, 2.0, -0.0], "float32")
    # max(a, b) = a >= b ? a : b, with a the pixel and b the value.
    assert flat(S.arith("max", pixels, 1.0))[:2] == [1.0, 2.0]
    assert flat(S.arith("min", pixels, 1.0))[:2] == [1.0, 1.0]
    nan_value = S.arith("max", pixels, float("nan"))
    assert all(math.isnan(v) for v in flat(nan_value))
    nan_value = S.arith("min", pixels, float("nan"))
    assert all(math.isnan(v) for v in flat(nan_value))
    # -0.0 >= 0.0 holds, so max keeps the pixel's -0.0; 0.0 <= -0.0 holds too for min.
    assert math.copysign(1.0, float(S.arith("max", pixels, 0.0).data.reshape(-1)[2])) == -1.0


def test_float32_chain_equals_native_float32_arithmetic() -> None:
    rng = np.random.default_rng(RNG_SEED)
    data = (rng.standard_normal((2, 17, 33, 3)) * 100).astype(np.float32)
    img = Image(data, "float32")
    values = (0.1, -3.7, 1e-3)
    v32 = np.array(values, dtype=np.float32)
    assert np.array_equal(S.arith("mul", img, values).data, data * v32)
    assert np.array_equal(S.arith("add", img, values).data, data + v32)
    assert np.array_equal(S.arith("sub", img, values).data, data - v32)
    assert np.array_equal(S.arith("div", img, values).data, data / v32)


def test_float16_chain_equals_native_float16_arithmetic() -> None:
    rng = np.random.default_rng(RNG_SEED + 1)
    data = (rng.standard_normal((1, 9, 13, 2)) * 10).astype(np.float16)
    img = Image(data, "float16")
    v16 = np.array((0.1, 3.3), dtype=np.float16)
    assert np.array_equal(S.arith("mul", img, (0.1, 3.3)).data, data * v16)
    assert np.array_equal(S.arith("add", img, (0.1, 3.3)).data, data + v16)


def test_bfloat16_chain_rounds_after_each_op() -> None:
    img = img_of([1.0, 1 + 2**-7], "bfloat16")
    # 1 + 2**-8 and 1 + 3 * 2**-8 are both ties: to even.
    assert flat(S.arith("add", img, 2**-8)) == [1.0, 1 + 2**-6]
    # The value itself travels as bfloat16: 0.1 -> 0.10009765625.
    assert flat(S.arith("mul", img_of([1.0], "bfloat16"), 0.1)) == [0.10009765625]


# ----------------------------------------------------------------------------------------------
# Casts
# ----------------------------------------------------------------------------------------------

TIES = [0.5, 1.5, 2.5, -2.5, 254.5, 255.5, -0.5, 3.5]


@pytest.mark.parametrize(
    ("dtype", "expected"),
    [
        ("uint8", [0, 2, 2, 0, 254, 255, 0, 4]),
        ("int8", [0, 2, 2, -2, 127, 127, 0, 4]),
        ("uint16", [0, 2, 2, 0, 254, 256, 0, 4]),
        ("int32", [0, 2, 2, -2, 254, 256, 0, 4]),
    ],
)
def test_saturate_cast_rounds_ties_to_even(dtype: str, expected: list[int]) -> None:
    out = S.saturate_cast(img_of(TIES, "float32"), dtype)
    assert out.dtype == dtype
    assert [int(v) for v in out.data.reshape(-1)] == expected


def test_saturate_cast_clamps_and_maps_nan_to_zero() -> None:
    values = img_of([np.nan, np.inf, -np.inf, 300.7, -5.0, 65535.5, 3e9, -3e9], "float64")
    assert [int(v) for v in S.saturate_cast(values, "uint8").data.reshape(-1)] == [
        0,
        255,
        0,
        255,
        0,
        255,
        255,
        0,
    ]
    assert [int(v) for v in S.saturate_cast(values, "uint16").data.reshape(-1)][5] == 65535
    int32_out = [int(v) for v in S.saturate_cast(values, "int32").data.reshape(-1)]
    assert int32_out == [0, 2**31 - 1, -(2**31), 301, -5, 65536, 2**31 - 1, -(2**31)]
    assert [int(v) for v in S.saturate_cast(values, "uint32").data.reshape(-1)][6] == 3_000_000_000


def test_saturate_cast_between_integers_and_to_floats() -> None:
    assert [int(v) for v in S.saturate_cast(img_of([-5, 70000, 42], "int32"), "uint16").data.reshape(-1)] == [
        0,
        65535,
        42,
    ]
    half = S.saturate_cast(img_of([1e6, -np.inf, np.nan, 1.0], "float32"), "float16")
    out = flat(half)
    assert out[:2] == [65504.0, -65504.0]
    assert math.isnan(out[2])
    assert out[3] == 1.0


def test_cast_is_c_conversion() -> None:
    truncated = S.cast(img_of([-2.7, 2.7, -0.5, 0.5, 255.9], "float32"), "int32")
    assert [int(v) for v in truncated.data.reshape(-1)] == [-2, 2, 0, 0, 255]
    # int -> float16 rounds to nearest even: 2049 and 2051 are ties at spacing 2.
    assert flat(S.cast(img_of([2049, 2051, 2053], "int32"), "float16")) == [2048.0, 2052.0, 2052.0]
    # int -> int wraps.
    assert [int(v) for v in S.cast(img_of([300, -1], "int32"), "uint8").data.reshape(-1)] == [44, 255]
    # -> bool is "!= 0" (NaN is true in C).
    assert S.cast(img_of([0.0, -0.0, 0.3, np.nan], "float32"), "bool").data.reshape(-1).tolist() == [
        False,
        False,
        True,
        True,
    ]
    assert [int(v) for v in S.cast(img_of([True, False], "bool"), "uint8").data.reshape(-1)] == [1, 0]


def test_cast_float32_to_bfloat16_is_round_to_nearest_even() -> None:
    rng = np.random.default_rng(RNG_SEED)
    data = rng.standard_normal((1, 5, 7, 2)).astype(np.float32)
    out = S.cast(Image(data, "float32"), "bfloat16")
    assert out.dtype == "bfloat16"
    assert np.array_equal(out.data, S.round_to_bfloat16(data))
    # Every bfloat16 value is a float32 whose low 16 bits are zero.
    assert not bool((out.data.view(np.uint32) & 0xFFFF).any())


def test_saturate_and_saturate_float() -> None:
    img = img_of([-1.0, 0.25, 2.0, np.nan], "float32")
    out = flat(S.saturate_float(img))
    assert out[:3] == [0.0, 0.25, 1.0]
    assert math.isnan(out[3])
    assert [int(v) for v in S.saturate(img_of([-5, 5, 500], "int16"), 0, 255).data.reshape(-1)] == [0, 5, 255]
    with pytest.raises(ValueError, match="SaturateFloat"):
        S.saturate_float(img_of([1], "uint8"))
    with pytest.raises(ValueError, match="Saturate"):
        S.saturate(img, 1.0, 0.0)


# ----------------------------------------------------------------------------------------------
# Logic and vector ops
# ----------------------------------------------------------------------------------------------


def test_is_even_and_vector_and() -> None:
    out = S.is_even(img_of([-3, -2, 0, 1, 2, 127], "int8"))
    assert out.dtype == "bool"
    assert out.data.reshape(-1).tolist() == [False, True, True, False, True, False]
    with pytest.raises(ValueError, match="IsEven"):
        S.is_even(img_of([1.0], "float32"))
    flags = Image(np.array([[[[True, True, True], [True, False, True]]]]), "bool")
    both = S.vector_and(flags)
    assert both.channels == 1
    assert both.data.reshape(-1).tolist() == [True, False]


def pixel(values: list[float] | list[int], dtype: str) -> Image:
    storage = S.DTYPES[dtype].storage
    return Image(np.asarray(values).astype(storage).reshape(1, 1, 1, -1), dtype)


def test_vector_reduce_is_a_left_fold_in_the_chain_type() -> None:
    assert int(S.vector_reduce(pixel([200, 100, 1], "uint8"), "Add").data.reshape(-1)[0]) == 45
    assert int(S.vector_reduce(pixel([300, 300, 2], "int16"), "Mul").data.reshape(-1)[0]) == (
        (90000 * 2 + 2**15) % 2**16 - 2**15
    )
    # ((1 + 2**-24) + 2**-24) rounds to 1 at each step; a right fold would give 1 + 2**-23.
    assert flat(S.vector_reduce(pixel([1.0, 2**-24, 2**-24], "float32"), "Add")) == [1.0]
    # max(max(NaN, 1), 2) = max(1, 2) = 2; max(max(1, NaN), 0) = max(NaN, 0) = 0.
    assert flat(S.vector_reduce(pixel([np.nan, 1.0, 2.0], "float32"), "Max")) == [2.0]
    assert flat(S.vector_reduce(pixel([1.0, np.nan, 0.0], "float32"), "Max")) == [0.0]
    assert flat(S.vector_reduce(pixel([5, -7, 3, 9], "int32"), "Min")) == [-7.0]
    with pytest.raises(ValueError, match="VectorReduce"):
        S.vector_reduce(pixel([1, 2], "int32"), "Sum")


def test_discard_add_last_reorder() -> None:
    px = pixel([10, 20, 30], "uint8")
    assert S.discard(px, 2).data.reshape(-1).tolist() == [10, 20]
    assert S.add_last(px, 255).data.reshape(-1).tolist() == [10, 20, 30, 255]
    assert S.vector_reorder(px, [2, 2, 0, 1]).data.reshape(-1).tolist() == [30, 30, 10, 20]
    with pytest.raises(ValueError, match="AddLast"):
        S.add_last(pixel([1, 2, 3, 4], "uint8"), 0)
    with pytest.raises(ValueError, match="VectorReorder"):
        S.vector_reorder(px, [0, 3])
    with pytest.raises(ValueError, match="Discard"):
        S.discard(px, 4)


def test_mxv_float3_is_row_major_matrix_times_column() -> None:
    rng = np.random.default_rng(RNG_SEED)
    data = rng.standard_normal((2, 5, 7, 3)).astype(np.float32)
    matrix = [[1.0, 2.0, 3.0], [0.5, -1.0, 0.0], [0.299, 0.587, 0.114]]
    out = S.mxv_float3(Image(data, "float32"), matrix)
    m32 = np.array(matrix, dtype=np.float32).astype(np.float64)
    expected = np.einsum("ij,bhwj->bhwi", m32, data.astype(np.float64)).astype(np.float32)
    assert np.array_equal(out.data, expected)
    # Row 0 of the pixel (1, 0, 0) is column 0 of the matrix.
    unit = S.mxv_float3(pixel([1.0, 0.0, 0.0], "float32"), matrix)
    assert np.allclose(unit.data.reshape(-1), [1.0, 0.5, 0.299])
    with pytest.raises(ValueError, match="MxVFloat3"):
        S.mxv_float3(pixel([1.0, 2.0], "float32"), matrix)


# ----------------------------------------------------------------------------------------------
# Memory layouts
# ----------------------------------------------------------------------------------------------


def test_read_write_shapes() -> None:
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4)
    img = S.read(gray, "uint8")
    assert img.data.shape == (1, 3, 4, 1)
    assert np.array_equal(S.write(img), gray)
    rgb = np.arange(36, dtype=np.float32).reshape(3, 4, 3)
    assert np.array_equal(S.write(S.read(rgb, "float32")), rgb)
    batch = np.arange(24, dtype=np.int16).reshape(2, 3, 4, 1)
    assert S.write(S.read(batch, "int16")).shape == (2, 3, 4)
    with pytest.raises(ValueError, match="read"):
        S.read(gray, "float32")
    with pytest.raises(ValueError, match="bfloat16"):
        S.read(np.full((2, 2), 0.1, np.float32), "bfloat16")


def test_read_rejects_ambiguous_3d_shapes() -> None:
    with pytest.raises(ValueError, match=r"read: a 3-D input"):
        S.read(np.zeros((2, 3, 5), np.uint8), "uint8")


def test_planar_layouts_round_trip() -> None:
    data = np.arange(2 * 3 * 5 * 4, dtype=np.uint16).reshape(2, 3, 5, 4)
    img = Image(data, "uint16")
    planar = S.to_planar(img)
    assert planar.shape == (2, 4, 3, 5)
    assert planar[1, 2, 0, 3] == data[1, 0, 3, 2]
    assert np.array_equal(S.from_planar(planar, "uint16").data, data)
    tsplit = S.to_tsplit(img)
    assert tsplit.shape == (4, 2, 3, 5)
    assert tsplit[3, 1, 2, 4] == data[1, 2, 4, 3]
    assert S.from_planar(planar).dtype == "uint16"
    one_plane = S.from_planar(planar[0], "uint16")
    assert np.array_equal(one_plane.data[0], data[0])


def test_read_set_is_a_constant_plane() -> None:
    out = S.read_set((1, 2, 3), 5, 4, "uint8", 3)
    assert out.data.shape == (1, 4, 5, 3)
    assert bool((out.data == np.array([1, 2, 3], np.uint8)).all())
    f16 = S.read_set(0.1, 2, 2, "float16", 1)
    assert f16.data.dtype == np.float16
    assert f16.data[0, 0, 0, 0] == np.float16(0.1)
    with pytest.raises(ValueError, match="read_set"):
        S.read_set(-1, 2, 2, "uint8", 1)


# ----------------------------------------------------------------------------------------------
# Colour conversion against cv2.cvtColor
# ----------------------------------------------------------------------------------------------


def corner_colors(channels: int, top: float) -> np.ndarray:
    """Every combination of 0 and ``top`` (and a mid value) over ``channels`` channels."""
    levels = [0.0, top / 2, top]
    grid = np.stack(np.meshgrid(*([levels] * channels), indexing="ij"), axis=-1).reshape(-1, channels)
    return grid


def random_and_corner_image(channels: int, dtype: str, rng: np.random.Generator) -> np.ndarray:
    storage = S.DTYPES[dtype].storage
    if dtype == "float32":
        top = 1.0
        noise = rng.random((33 * 17, channels))
    else:
        top = float(np.iinfo(storage).max)
        noise = rng.integers(0, int(top) + 1, (33 * 17, channels)).astype(np.float64)
    corners = corner_colors(channels, top)
    pixels = np.concatenate([corners, noise])[: 33 * 17]
    return pixels.reshape(17, 33, channels).astype(storage)


@pytest.mark.parametrize("dtype", ["uint8", "uint16", "float32"])
@pytest.mark.parametrize("code", sorted(COLOR_CODES))
def test_color_conversion_matches_cvtcolor(code: str, dtype: str) -> None:
    rng = np.random.default_rng(RNG_SEED)
    spec = COLOR_CODES[code]
    src = random_and_corner_image(spec.in_channels, dtype, rng)
    src_cv = src[..., 0] if spec.in_channels == 1 else src
    expected = cv2.cvtColor(src_cv, getattr(cv2, f"COLOR_{code}"))
    expected = expected.reshape(17, 33, spec.out_channels)
    out = color_conversion(S.read(src, dtype), code)
    assert out.dtype == dtype
    got = out.data[0]
    if dtype == "float32":
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    else:
        assert np.array_equal(got, expected)


def test_fixed_point_gray_equals_cv2_on_every_uint8_color() -> None:
    every = np.arange(2**24, dtype=np.uint32)
    rgb = np.stack([(every >> 16) & 255, (every >> 8) & 255, every & 255], axis=-1).astype(np.uint8)
    rgb = rgb.reshape(4096, 4096, 3)
    expected = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    got = color_conversion(S.read(rgb, "uint8"), "RGB2GRAY").data[0, :, :, 0]
    assert np.array_equal(got, expected)
    # Rounding the float formula would not be exact: the fixed point is really needed.
    float_rounded = np.rint(rgb.astype(np.float64) @ np.array([0.299, 0.587, 0.114]))
    assert not np.array_equal(float_rounded.astype(np.uint8), expected)


def test_color_alpha_and_channel_errors() -> None:
    assert S.write(color_conversion(pixel([1, 2, 3], "uint8"), "RGB2BGRA")).reshape(-1).tolist() == [
        3,
        2,
        1,
        255,
    ]
    assert S.write(color_conversion(pixel([1, 2, 3], "uint16"), "RGB2RGBA")).reshape(-1).tolist()[3] == 65535
    assert flat(color_conversion(pixel([0.1, 0.2, 0.3], "float16"), "BGR2BGRA"))[3] == 1.0
    assert flat(color_conversion(pixel([0.1, 0.2, 0.3], "bfloat16"), "BGR2BGRA"))[3] == 1.0
    with pytest.raises(ValueError, match="ColorConversion"):
        color_conversion(pixel([1, 2], "uint8"), "RGB2GRAY")
    with pytest.raises(ValueError, match="ColorConversion"):
        color_conversion(pixel([1, 2, 3], "uint8"), "RGB2HSV")


# ----------------------------------------------------------------------------------------------
# Edge inputs (SPEC §3): an image with a zero dimension is valid and keeps the shape each op implies
# ----------------------------------------------------------------------------------------------

EMPTY_SLICES = [(0, 5, 7), (2, 0, 7), (2, 5, 0), (0, 0, 0)]  # (B, H, W) kept of a (2, 5, 7) image
ELEMENTWISE = {
    "add_u8": ("uint8", 3, lambda img: S.arith("add", img, (1, 2, 3))),
    "div_i16": ("int16", 1, lambda img: S.arith("div", img, (-3,))),
    "div_f32": ("float32", 4, lambda img: S.arith("div", img, (0.0,))),
    "max_bool": ("bool", 2, lambda img: S.arith("max", img, (1,))),
    "cast": ("float32", 3, lambda img: S.cast(img, "int8")),
    "saturate_cast": ("float16", 2, lambda img: S.saturate_cast(img, "uint8")),
    "saturate": ("int32", 2, lambda img: S.saturate(img, (0, -5), (9, 5))),
    "saturate_float": ("bfloat16", 1, S.saturate_float),
    "is_even": ("uint16", 3, S.is_even),
    "vector_and": ("bool", 4, S.vector_and),
    "vector_reduce": ("float32", 3, lambda img: S.vector_reduce(img, "Mul")),
    "discard": ("uint8", 4, lambda img: S.discard(img, 2)),
    "add_last": ("int8", 2, lambda img: S.add_last(img, -7)),
    "vector_reorder": ("uint32", 3, lambda img: S.vector_reorder(img, [2, 2, 0, 1])),
    "mxv_float3": ("float32", 3, lambda img: S.mxv_float3(img, np.eye(3))),
    "color_conversion": ("uint8", 3, lambda img: color_conversion(img, "RGB2GRAY")),
}


@pytest.mark.parametrize(("b", "h", "w"), EMPTY_SLICES)
@pytest.mark.parametrize("name", sorted(ELEMENTWISE))
def test_pixel_ops_on_empty_images_give_the_empty_slice_of_the_full_result(name: str, b: int, h: int, w: int) -> None:
    """A pixel op commutes with slicing, so the op on an empty slice of an image is that slice of the
    op on the whole image: same element type and channels, the other sizes kept."""
    dtype, channels, op = ELEMENTWISE[name]
    rng = np.random.default_rng(RNG_SEED)
    storage = S.DTYPES[dtype].storage
    values = rng.integers(0, 100, (2, 5, 7, channels))
    full = Image((values % 2 == 1) if dtype == "bool" else values.astype(storage), dtype)
    expected = op(full)
    out = op(Image(np.ascontiguousarray(full.data[:b, :h, :w]), dtype))
    assert out.dtype == expected.dtype and out.data.dtype == expected.data.dtype
    assert out.data.shape == expected.data[:b, :h, :w].shape == (b, h, w, expected.channels)


def test_empty_images_read_and_write_with_the_shape_given() -> None:
    for shape, planes in [((0, 4), (1, 0, 4, 1)), ((3, 0, 2), (1, 3, 0, 2)), ((0, 2, 3, 4), (0, 2, 3, 4))]:
        img = S.read(np.zeros(shape, np.uint8), "uint8")
        assert img.data.shape == planes and S.write(img).shape == shape
    assert S.from_planar(np.zeros((0, 3, 2, 5), np.float32)).data.shape == (0, 2, 5, 3)
    assert S.to_tsplit(S.read(np.zeros((2, 0, 3, 4), np.int16), "int16")).shape == (4, 2, 0, 3)
    with pytest.raises(ValueError, match=r"^Image: 0 channels; fkl pixels have 1 to 4 channels$"):
        Image(np.zeros((1, 2, 2, 0), np.uint8), "uint8")
