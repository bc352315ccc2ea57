"""Flip (cv2.flip) and Rotate (cv2.rotate): read-side geometry that folds into the read, on the CPU target
(the GPU's are tests/runtime/test_catalogue_gpu.py's cases). Against OpenCV on every mode, element type and
channel count, odd sizes; after and before other geometry against the reference interpreter; batches, lists
and rect lists; the words and cv2's constants; bad arguments."""

from __future__ import annotations

import numpy as np
import pytest

import fklir as fkl
from fklir.frontend import ops as fops
from tests.runtime.catalogue_support import packed_source, reference

cv2 = pytest.importorskip("cv2")

RNG = np.random.default_rng(307)
FLIPS = {"vertical": 0, "horizontal": 1, "both": -1}
ROTATIONS = {
    "clockwise_90": cv2.ROTATE_90_CLOCKWISE,
    "turn_180": cv2.ROTATE_180,
    "counterclockwise_90": cv2.ROTATE_90_COUNTERCLOCKWISE,
}
DTYPES = ["uint8", "int8", "uint16", "int16", "int32", "float32", "float64"]  # what cv2.flip / rotate take


def _image(dtype: str, h: int, w: int, channels: int) -> np.ndarray:
    shape = (h, w, channels) if channels > 1 else (h, w)
    if np.dtype(dtype).kind == "f":
        return (RNG.standard_normal(shape) * 50).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def _run(x: object, *ops: fops.Op) -> np.ndarray:
    return np.asarray(fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x))


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", sorted(FLIPS))
def test_flip_is_cv2_flip(mode: str, dtype: str, channels: int) -> None:
    x = _image(dtype, 17, 33, channels)
    expected = cv2.flip(x, FLIPS[mode])
    np.testing.assert_array_equal(_run(x, fkl.Flip(mode)), expected)
    np.testing.assert_array_equal(_run(x, fkl.Flip(FLIPS[mode])), expected)  # cv2's flipCode


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("code", sorted(ROTATIONS))
def test_rotate_is_cv2_rotate(code: str, dtype: str, channels: int) -> None:
    x = _image(dtype, 17, 33, channels)
    expected = cv2.rotate(x, ROTATIONS[code])
    got = _run(x, fkl.Rotate(code))
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(_run(x, fkl.Rotate(ROTATIONS[code])), expected)  # cv2.ROTATE_*


def test_flip_codes_follow_cv2s_signs() -> None:
    x = _image("uint8", 5, 7, 3)
    for code in (2, 7, -3):
        np.testing.assert_array_equal(_run(x, fkl.Flip(code)), cv2.flip(x, code))


CHAINS = {
    "crop, rotate, resize": [fkl.Crop(3, 2, 25, 13), fkl.Rotate("clockwise_90"), fkl.Resize(11, 19)],
    "flip, crop": [fkl.Flip("both"), fkl.Crop(4, 1, 21, 9)],
    "rotate, rotate": [fkl.Rotate("counterclockwise_90"), fkl.Rotate("turn_180")],
    "border, crop outside, flip": [fkl.BorderReader("reflect101"), fkl.Crop(-4, -3, 40, 22), fkl.Flip("horizontal")],
    "border, flip, resize": [fkl.BorderReader("constant", 9), fkl.Flip("vertical"), fkl.Resize(41, 13)],
    "flip, warp": [fkl.Flip("horizontal"), fkl.Warping(np.array([[0.9, 0.2, 3.0], [-0.1, 1.1, -2.0]]), 29, 15)],
    "rotate, nearest resize, compute": [
        fkl.Rotate("turn_180"),
        fkl.Resize(23, 9, "nearest"),
        fkl.Cast("float32"),
        fkl.Mul(0.5),
        fkl.SaturateCast("uint8"),
    ],
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_flip_and_rotate_compose_with_other_geometry(name: str) -> None:
    """The same result as the reference interpreter (the CPU's sampling fast paths do not apply past a flip
    or a rotation: the pixel path samples through them)."""
    x = _image("uint8", 17, 33, 3)
    ops = CHAINS[name]
    got = _run(x, *ops)
    want = np.asarray(reference([fkl.TensorRead(), *ops, fkl.TensorWrite()], packed_source(x)))
    assert got.size == want.size
    np.testing.assert_array_equal(got, want.reshape(got.shape))


def test_cv2_references_of_a_chain() -> None:
    x = _image("uint8", 21, 30, 3)
    got = _run(x, fkl.Crop(2, 3, 25, 15), fkl.Rotate("clockwise_90"), fkl.Flip("vertical"))
    np.testing.assert_array_equal(got, cv2.flip(cv2.rotate(x[3:18, 2:27], cv2.ROTATE_90_CLOCKWISE), 0))


def test_batches_lists_and_rect_lists() -> None:
    batch = np.stack([_image("float32", 9, 14, 3) for _ in range(3)])
    got = _run(batch, fkl.Rotate("clockwise_90"))
    assert got.shape == (3, 14, 9, 3)
    for b in range(3):
        np.testing.assert_array_equal(got[b], cv2.rotate(batch[b], cv2.ROTATE_90_CLOCKWISE))
    images = [_image("uint16", 9, 14, 1) for _ in range(4)]
    listed = _run(images, fkl.Flip("both"))
    for b in range(4):
        np.testing.assert_array_equal(listed[b], cv2.flip(images[b], -1))
    x = _image("uint8", 20, 30, 3)
    rects = [(0, 0, 7, 5), (10, 4, 7, 5), (22, 14, 7, 5)]
    cropped = _run(x, fkl.Crop(rects), fkl.Rotate("counterclockwise_90"))
    for b, (rx, ry, rw, rh) in enumerate(rects):
        np.testing.assert_array_equal(
            cropped[b], cv2.rotate(x[ry : ry + rh, rx : rx + rw], cv2.ROTATE_90_COUNTERCLOCKWISE)
        )


def test_a_new_mode_is_a_new_structure_but_not_a_new_value() -> None:
    """The mode and the rotation are structure (each compiles its own kernel, once)."""
    a = fkl.compose(fkl.TensorRead(), fkl.Flip("vertical"), fkl.TensorWrite(), target="cpu")
    b = fkl.compose(fkl.TensorRead(), fkl.Flip(0), fkl.TensorWrite(), target="cpu")
    c = fkl.compose(fkl.TensorRead(), fkl.Flip("horizontal"), fkl.TensorWrite(), target="cpu")
    assert a._described_chains() == b._described_chains() != c._described_chains()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: fkl.Flip("sideways"), r"Flip: mode must be one of vertical, horizontal, both or a cv2.flip flipCode"),
        (lambda: fkl.Flip(True), r"Flip: mode must be one of"),
        (lambda: fkl.Rotate(3), r"Rotate: OpenCV rotation 3 is not one of cv2.ROTATE_90_CLOCKWISE \(0\)"),
        (lambda: fkl.Rotate("90"), r"Rotate: code must be one of clockwise_90, turn_180, counterclockwise_90"),
    ],
)
def test_bad_arguments_name_the_op_and_the_value(make: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()  # pyright: ignore[reportCallIssue]


def test_a_flip_after_compute_is_refused() -> None:
    with pytest.raises(ValueError, match="Flip must come right after TensorRead or another geometry op"):
        fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Flip(), fkl.TensorWrite(), target="cpu")
