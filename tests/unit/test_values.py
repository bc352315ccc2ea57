"""Values as users write them (SPEC §2): numpy and torch scalars and arrays, rect tuples and arrays,
numpy/torch dtypes, OpenCV constants — run on the CPU target against numpy and OpenCV; and every
refusal names the op and the value."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import cv2
import numpy as np
import pytest

import fklir as fkl
from fklir.dialects import fkl as fkl_dialect
from fklir.frontend import values

RNG = np.random.default_rng(4321)


def _run(x: np.ndarray[Any, Any], *ops: Any) -> np.ndarray[Any, Any]:
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x)


def _torch() -> Any:
    return pytest.importorskip("torch")


# ---- numbers ------------------------------------------------------------------------------------

SCALARS: list[tuple[str, Callable[[], object]]] = [
    ("int", lambda: 3),
    ("float", lambda: 2.5),
    ("bool", lambda: True),
    ("np.int64", lambda: np.int64(3)),
    ("np.uint8", lambda: np.uint8(200)),
    ("np.float32", lambda: np.float32(0.1)),
    ("np.float64", lambda: np.float64(-1.75)),
    ("np.bool_", lambda: np.bool_(True)),
    ("0-d array", lambda: np.array(0.3, np.float32)),
    ("torch 0-d", lambda: _torch().tensor(1.25)),
    ("torch bfloat16 0-d", lambda: _torch().tensor(0.5, dtype=_torch().bfloat16)),
]


@pytest.mark.parametrize(("name", "make"), SCALARS, ids=[n for n, _ in SCALARS])
def test_a_scalar_value_is_the_number_it_holds(name: str, make: Callable[[], object]) -> None:
    value = make()
    expected = float(np.asarray(value).astype(np.float64)) if "torch" not in name else float(value.item())  # type: ignore[attr-defined]
    assert fkl.Mul(value).values == (expected,)
    x = RNG.standard_normal((7, 11, 3)).astype(np.float32)
    np.testing.assert_array_equal(_run(x, fkl.Mul(value)), x * np.float32(expected))


PER_CHANNEL: list[tuple[str, Callable[[], object]]] = [
    ("tuple", lambda: (0.485, 0.456, 0.406)),
    ("list", lambda: [0.485, 0.456, 0.406]),
    ("list of numpy scalars", lambda: [np.float32(0.485), np.float64(0.456), np.float16(0.406)]),
    ("float64 array", lambda: np.array([0.485, 0.456, 0.406])),
    ("float32 array", lambda: np.array([0.485, 0.456, 0.406], np.float32)),
    ("int array", lambda: np.array([1, 2, 3], np.int16)),
    ("torch tensor", lambda: _torch().tensor([0.485, 0.456, 0.406])),
    ("torch float64 tensor", lambda: _torch().tensor([0.485, 0.456, 0.406], dtype=_torch().float64)),
]


@pytest.mark.parametrize(("name", "make"), PER_CHANNEL, ids=[n for n, _ in PER_CHANNEL])
def test_per_channel_values_from_any_sequence_or_1d_array(name: str, make: Callable[[], object]) -> None:
    mean = make()
    expected = tuple(float(v) for v in np.asarray(mean, dtype=np.float64).reshape(-1))
    assert fkl.Sub(mean).values == expected
    x = (RNG.random((9, 13, 3)) * 255).astype(np.float32)
    out = _run(x, fkl.Sub(mean), fkl.Mul(np.float32(1 / 255)))
    reference = (x - np.array(expected, np.float32)) * np.float32(1 / 255)
    np.testing.assert_allclose(out, reference, rtol=1e-6, atol=0)


def test_saturate_background_border_and_readset_take_arrays() -> None:
    x = (RNG.standard_normal((6, 9, 3)) * 3).astype(np.float32)
    lo, hi = np.array([-1.0, -0.5, 0.0], np.float32), np.float64(1.5)
    np.testing.assert_array_equal(_run(x, fkl.Saturate(lo, hi)), np.clip(x, lo, np.float32(1.5)))
    resize = fkl.Resize(np.int64(12), np.int32(12), aspect_ratio="preserve", background=np.array([7, 8, 9]))
    assert resize.background == (7.0, 8.0, 9.0) and resize.size == (12, 12)
    border = fkl.BorderReader("constant", np.uint8(5))
    assert border.values == (5.0,)
    generated = fkl.compose(
        fkl.ReadSet(np.array([1, 2]), np.int16(5), np.float64(3.0), np.uint16), fkl.TensorWrite(), target="cpu"
    )()
    np.testing.assert_array_equal(generated, np.broadcast_to(np.array([1, 2], np.uint16), (3, 5, 2)))
    assert fkl.AddLast(np.float32(0.5)).value == 0.5
    assert fkl.StaticLoop(fkl.Mul(np.float32(2.0)), np.int64(3)).count == 3


def test_integers_take_numpy_integers_and_integral_floats() -> None:
    assert fkl.Discard(np.uint8(2)).keep_n == 2
    assert fkl.TensorPack(np.int64(3)).channels == 3
    assert fkl.VectorReorder(np.array([2, 1, 0])).indices == (2, 1, 0)
    assert fkl.VectorReorder([np.int32(2), 1.0, 0]).indices == (2, 1, 0)
    assert fkl.VectorReorderRT(np.int8(1), np.int8(0)).indices == (1, 0)
    assert fkl.ReadSet(1.0, 4.0, np.float32(2.0), channels=np.int64(2)).size == (4, 2)
    assert fkl.Warping(np.eye(3), np.int32(4), 5, inverse=np.bool_(True)).inverse is True
    x = RNG.integers(0, 256, (5, 6, 3), dtype=np.uint8)
    np.testing.assert_array_equal(_run(x, fkl.VectorReorder(np.array([2, 1, 0]))), x[..., ::-1])


def test_torch_values_and_indices() -> None:
    torch = _torch()
    assert fkl.Add(torch.tensor([1, 2, 3], dtype=torch.int32)).values == (1.0, 2.0, 3.0)
    assert fkl.VectorReorder(torch.tensor([1, 0])).indices == (1, 0)
    assert fkl.Crop(torch.tensor([[1, 2, 3, 4], [0, 0, 2, 2]])).rects == ((1, 2, 3, 4), (0, 0, 2, 2))
    assert fkl.Cast(torch.float16).dtype == "float16"
    assert fkl.SaturateCast(torch.bfloat16).dtype == "bfloat16"
    assert fkl.ReadSet(1, 2, 2, torch.bool).dtype == "bool"


# ---- rects --------------------------------------------------------------------------------------


def test_crop_takes_four_numbers_one_tuple_a_list_or_an_array() -> None:
    img = RNG.integers(0, 256, (37, 53, 3), dtype=np.uint8)
    points = RNG.integers(5, 30, (12, 2)).astype(np.int32)
    bounding = cv2.boundingRect(points)  # what a user gets from OpenCV: a tuple of 4 ints
    x, y, w, h = bounding
    expected = img[y : y + h, x : x + w]
    for crop in (
        fkl.Crop(bounding),
        fkl.Crop(*bounding),
        fkl.Crop(np.int64(x), np.int32(y), np.uint16(w), float(h)),
        fkl.Crop(list(bounding)),
        fkl.Crop(np.array(bounding)),
    ):
        assert crop.rects == (bounding,) and not crop.batched
        out = _run(img, crop)
        assert out.shape == expected.shape, crop
        np.testing.assert_array_equal(out, expected)


def test_crop_lists_and_n_by_4_arrays_crop_one_plane_per_rect() -> None:
    img = RNG.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    rects = np.array([[0, 0, 8, 6], [41, 33, 8, 6], [13, 7, 8, 6]], np.int32)
    for given in (rects, rects.astype(np.int64), rects.astype(np.float64), rects.tolist(), [tuple(r) for r in rects]):
        crop = fkl.Crop(given)
        assert crop.batched and crop.rects == tuple(tuple(int(v) for v in r) for r in rects)
        out = _run(img, crop)
        assert out.shape == (3, 6, 8, 3)
        for plane, (rx, ry, rw, rh) in zip(out, rects.tolist(), strict=True):
            np.testing.assert_array_equal(plane, img[ry : ry + rh, rx : rx + rw])
    assert fkl.Crop([(1, 2, 3, 4)]).batched, "a list of one rect is a list"


# ---- dtypes, interpolations, colour codes --------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        (np.float32, "float32"),
        (np.dtype("uint8"), "uint8"),
        (np.int16, "int16"),
        (np.dtype(np.float16), "float16"),
        (bool, "bool"),
        (np.bool_, "bool"),
        (float, "float64"),
        ("uint32", "uint32"),
    ],
)
def test_cast_takes_numpy_dtypes_and_types(dtype: object, name: str) -> None:
    assert fkl.Cast(dtype).dtype == name
    x = (RNG.random((5, 7, 2)) * 100).astype(np.float32)  # in every type's range: Cast is C's conversion
    x[0, 0] = 0.0
    expected = x.astype(np.float64).astype(name) if name != "bool" else x != 0
    np.testing.assert_array_equal(_run(x, fkl.Cast(dtype)), expected)


def test_resize_takes_opencv_interpolation_constants() -> None:
    img = RNG.integers(0, 256, (31, 45, 3), dtype=np.uint8)
    nearest = _run(img, fkl.Resize(np.int64(20), 17, cv2.INTER_NEAREST))
    np.testing.assert_array_equal(nearest, cv2.resize(img, (20, 17), interpolation=cv2.INTER_NEAREST))
    source = img.astype(np.float32)
    linear = _run(source, fkl.Resize(20, 17, cv2.INTER_LINEAR))
    expected = cv2.resize(source, (20, 17), interpolation=cv2.INTER_LINEAR)
    np.testing.assert_allclose(linear, expected, rtol=1e-4, atol=1e-3)
    assert fkl.Resize(4, 4, np.int32(cv2.INTER_NEAREST)).interp == "nearest"


def _cv2_codes() -> list[tuple[str, int]]:
    """OpenCV's colour constants whose names fklir implements, with their values from cv2 itself."""
    return [(name, getattr(cv2, f"COLOR_{name}")) for name in fkl_dialect.COLOR_CODES]


@pytest.mark.parametrize(("name", "constant"), _cv2_codes(), ids=[n for n, _ in _cv2_codes()])
def test_every_opencv_colour_constant_of_a_supported_code_means_that_code(name: str, constant: int) -> None:
    """cv2's constants alias (COLOR_BGR2RGB == COLOR_RGB2BGR): the code chosen must do the same thing."""
    assert fkl_dialect.COLOR_CODES[fkl.ColorConversion(constant).code] == fkl_dialect.COLOR_CODES[name]
    assert fkl.ColorConversion(f"COLOR_{name}").code == name


@pytest.mark.parametrize("constant", ["COLOR_BGR2RGB", "COLOR_BGR2GRAY", "COLOR_RGBA2BGR", "COLOR_GRAY2BGR"])
def test_colour_conversion_by_opencv_constant_matches_cvtcolor(constant: str) -> None:
    code = getattr(cv2, constant)
    channels = fkl_dialect.COLOR_CODES[fkl.ColorConversion(code).code].in_channels
    shape = (23, 29, channels) if channels > 1 else (23, 29)
    img = RNG.integers(0, 256, shape, dtype=np.uint8)
    np.testing.assert_array_equal(_run(img, fkl.ColorConversion(code)), cv2.cvtColor(img, code))


@pytest.mark.parametrize(
    "constant", ["BORDER_CONSTANT", "BORDER_REPLICATE", "BORDER_REFLECT", "BORDER_WRAP", "BORDER_REFLECT_101"]
)
def test_border_reader_by_opencv_constant_matches_copymakeborder(constant: str) -> None:
    border = getattr(cv2, constant)
    img = RNG.integers(0, 256, (11, 14, 3), dtype=np.uint8)
    out = _run(img, fkl.BorderReader(border, value=9), fkl.Crop(-5, -3, 14 + 9, 11 + 7))
    expected = cv2.copyMakeBorder(img, 3, 4, 5, 4, border, value=(9, 9, 9))
    np.testing.assert_array_equal(out, expected)


def test_pipeline_ir_takes_a_numpy_dtype() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite(), target="cpu")
    assert pipe.ir(np.float32, (4, 5, 3)) == pipe.ir("float32", (4, 5, 3))


# ---- refusals -------------------------------------------------------------------------------------

REFUSED: list[tuple[Callable[[], object], type[Exception], str]] = [
    (lambda: fkl.Crop(1.5, 0, 2, 2), ValueError, r"Crop: a rect is \(x, y, w, h\) of integers, got \(1\.5, 0, 2, 2\)"),
    (lambda: fkl.Crop(0, 0, True, 2), ValueError, r"Crop: a rect is .* got \(0, 0, True, 2\)"),
    (lambda: fkl.Crop(0, 0, float("nan"), 2), ValueError, r"Crop: a rect is .* got \(0, 0, nan, 2\)"),
    (lambda: fkl.Crop(1, 2), TypeError, r"Crop: give x, y, w and h, or one \(x, y, w, h\); got \(1, 2, None, None\)"),
    (lambda: fkl.Crop((1, 2, 3)), ValueError, r"Crop: a rect is \(x, y, w, h\) of integers, got \(1, 2, 3\)"),
    (lambda: fkl.Crop([(1, 2, 3, 4), (1, 2)]), ValueError, r"Crop: a rect is .* got \(1, 2\)"),
    (lambda: fkl.Crop(np.zeros((0, 4), int)), ValueError, r"Crop: the rect list is empty"),
    (lambda: fkl.Crop([]), ValueError, r"Crop: the rect list is empty"),
    (lambda: fkl.Crop(np.zeros((2, 3), int)), ValueError, r"Crop: give \(x, y, w, h\), .* got shape \(2, 3\)"),
    (lambda: fkl.Crop(np.array([[0.5, 0, 2, 2]])), ValueError, r"Crop: a rect is .* got \[0\.5, 0\.0, 2\.0, 2\.0\]"),
    (lambda: fkl.Crop("0, 0, 2, 2"), TypeError, r"Crop: a rect must be numbers, got '0, 0, 2, 2'"),
    (lambda: fkl.Resize(float("nan"), 3), ValueError, r"Resize: width must be an integer, got nan"),
    (lambda: fkl.Resize(8.5, 3), ValueError, r"Resize: width must be an integer, got 8\.5"),
    (lambda: fkl.Resize(True, 3), TypeError, r"Resize: width must be an integer, got True"),
    (lambda: fkl.Resize(3, "4"), TypeError, r"Resize: height must be numbers, got '4'"),
    (lambda: fkl.Resize(3, 3, cv2.INTER_CUBIC), ValueError, r"Resize: OpenCV interpolation 2 is not supported"),
    (lambda: fkl.Resize(3, 3, cv2.INTER_NEAREST_EXACT), ValueError, r"Resize: OpenCV interpolation 6 is not"),
    (lambda: fkl.Resize(3, 3, True), ValueError, r"Resize: interpolation must be one of linear, nearest .*got True"),
    (lambda: fkl.Resize(3, 3, "cubic"), ValueError, r"Resize: interpolation must be one of .* got 'cubic'"),
    (lambda: fkl.ColorConversion(cv2.COLOR_BGR2HSV), ValueError, r"ColorConversion: OpenCV colour code 40 is not"),
    (lambda: fkl.ColorConversion(cv2.COLOR_GRAY2BGRA), ValueError, r"ColorConversion: OpenCV colour code 9 is not"),
    (lambda: fkl.ColorConversion(True), ValueError, r"ColorConversion: code must be one of .* got True"),
    (lambda: fkl.BorderReader(cv2.BORDER_TRANSPARENT), ValueError, r"BorderReader: OpenCV border 5 is not supported"),
    (lambda: fkl.BorderReader("mirror"), ValueError, r"BorderReader: mode must be one of .* got 'mirror'"),
    (lambda: fkl.Cast(np.int64), ValueError, r"Cast: unknown dtype <class 'numpy\.int64'>"),
    (lambda: fkl.Cast(None), ValueError, r"Cast: unknown dtype None"),
    (lambda: fkl.Cast(np.dtype(">f4")), ValueError, r"Cast: unknown dtype dtype\('>f4'\)"),
    (lambda: fkl.Cast("half"), ValueError, r"Cast: unknown dtype 'half'"),
    (lambda: fkl.Mul("2"), TypeError, r"Mul: values must be numbers, got '2'"),
    (lambda: fkl.Mul(None), TypeError, r"Mul: values must be numbers, got None"),
    (lambda: fkl.Mul(1 + 2j), TypeError, r"Mul: values must be numbers, got \(1\+2j\)"),
    (lambda: fkl.Mul([1, "a"]), TypeError, r"Mul: values must be numbers, got \[1, 'a'\]"),
    (lambda: fkl.Mul(np.zeros((2, 2))), ValueError, r"Mul: values are one number or one per channel, got shape"),
    (lambda: fkl.Mul([1, 2, 3, 4, 5]), ValueError, r"Mul: give one value or one per channel \(1 to 4\), got 5"),
    (lambda: fkl.Add([]), ValueError, r"Add: give one value or one per channel \(1 to 4\), got 0"),
    (lambda: fkl.AddLast([1.0]), TypeError, r"AddLast: the appended value is one number, got \[1\.0\]"),
    (lambda: fkl.Discard(2.5), ValueError, r"Discard: the channel count must be an integer, got 2\.5"),
    (lambda: fkl.Discard(np.True_), TypeError, r"Discard: the channel count must be an integer, got "),
    (lambda: fkl.VectorReorder(np.array([0, 1.5])), ValueError, r"VectorReorder: channel indices must be an integer"),
    (lambda: fkl.VectorReorder(0, True), TypeError, r"VectorReorder: channel indices must be an integer, got True"),
    (lambda: fkl.VectorReorder(np.int8(4)), ValueError, r"VectorReorder: channel indices \[4\] are out of range"),
    (lambda: fkl.StaticLoop(fkl.Mul(2), np.float64(2.5)), ValueError, r"StaticLoop: n must be an integer, got np"),
    (lambda: fkl.Warping(np.eye(3), 4, 4, inverse="yes"), TypeError, r"Warping: inverse must be True or False"),
    (
        lambda: fkl.compose_divergent([1, True], (fkl.TensorRead(), fkl.TensorWrite()), target="cpu"),
        TypeError,
        r"compose_divergent: plane_map must be an integer, got True",
    ),
]


@pytest.mark.parametrize(("make", "error", "message"), REFUSED)
def test_a_refused_value_names_the_op_and_the_value(
    make: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        make()


def test_a_tensor_numpy_cannot_read_is_refused_naming_the_op() -> None:
    torch = _torch()
    meta = torch.ones(3, device="meta")  # like a CUDA tensor: numpy cannot read it without a copy
    with pytest.raises(TypeError, match=r"Sub: values must be numbers, got tensor\(.*meta"):
        fkl.Sub(meta)


def test_the_conversions_are_one_module() -> None:
    """numbers() keeps Python's exact value: a float32 value is the float32 number, not its decimal."""
    assert values.numbers("Op", np.float32(0.1)) == (float(np.float32(0.1)),)
    assert values.integer("Op", np.float64(7.0), "n") == 7 and type(values.integer("Op", np.uint64(7), "n")) is int
    assert values.rect_list("Op", (1, 2, 3, 4)) is None
    assert values.dtype_name("Op", np.dtype("float64")) == "float64"
