"""The CPU target's row loops for geometry (emit_cpp's run_rows): a final linear resize of crops of a
packed integer image in two passes (fkl::ResizeRows), a final nearest resize from a column table, crops
and borders through row spans, and the per-pixel paths beside them. Each against OpenCV or a numpy
float64 reference, and bit for bit against the reference interpreter (the per-pixel blend's bits), on
odd sizes with random data, above and below the size where the rows are shared among threads.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

import fklir as fkl
from fklir.frontend import ops as fops
from tests.runtime.catalogue_support import packed_source, reference

cv2 = pytest.importorskip("cv2")

RNG = np.random.default_rng(20)
INTEGERS = ("uint8", "uint16", "int16")


def _image(dtype: str, h: int, w: int, channels: int) -> np.ndarray:
    """Random (h, w, channels) values; (h, w) for one channel, as a grey image is given."""
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, int(info.max) + 1, (h, w, channels), dtype=dtype)
    return x[:, :, 0] if channels == 1 else x


def _cpu(*ops: fops.Op) -> fkl.Pipeline:
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")


def _interpreted(ops: Sequence[fops.Op], x: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
    """The reference interpreter's output, in the pipeline's `out_shape`."""
    chain = [fkl.TensorRead(), *ops, fkl.TensorWrite()]
    return np.asarray(reference(chain, packed_source(x))).reshape(out_shape)


def _linear_f64(x: np.ndarray, w: int, h: int) -> np.ndarray:
    """cv2's INTER_LINEAR (half-pixel centres, taps clamped to the image) in float64."""

    def taps(dst: int, src: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = (np.arange(dst) + 0.5) * (1.0 / (dst / src)) - 0.5
        i0 = np.floor(s)
        w1 = s - i0
        w1[i0 < 0] = 0.0
        i0 = np.clip(i0, 0, src - 1).astype(int)
        w1[i0 >= src - 1] = 0.0
        return i0, np.minimum(i0 + 1, src - 1), w1

    x0, x1, wx = taps(w, x.shape[1])
    y0, y1, wy = taps(h, x.shape[0])
    f = x.astype(np.float64).reshape(*x.shape[:2], -1)
    rows = f[:, x0] * (1 - wx)[None, :, None] + f[:, x1] * wx[None, :, None]
    return (rows[y0] * (1 - wy)[:, None, None] + rows[y1] * wy[:, None, None]).reshape(h, w, *x.shape[2:])


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize(("size", "out"), [((13, 9), (21, 5)), ((201, 151), (227, 223)), ((299, 181), (97, 61))])
def test_crops_resized_in_two_passes(dtype: str, channels: int, size: tuple[int, int], out: tuple[int, int]) -> None:
    """Rects of different sizes and places, the image's edges included: each plane sets its own columns."""
    x = _image(dtype, 2 * size[1] + 3, 2 * size[0] + 5, channels)
    ih, iw = x.shape[:2]
    w, h = size
    rects = [(0, 0, w, h), (iw - w, ih - h, w, h), (3, 1, w - 2, h + 1), (iw - 1, 7, 1, h), (5, ih - 1, w, 1)]
    ops = [fkl.Crop(rects), fkl.Resize(*out)]
    got = _cpu(*ops)(x)
    np.testing.assert_array_equal(got, _interpreted(ops, x, got.shape))
    for plane, (rx, ry, rw, rh) in zip(got, rects, strict=True):
        expected = _linear_f64(x[ry : ry + rh, rx : rx + rw], *out)
        np.testing.assert_allclose(plane, expected, rtol=2e-6, atol=2e-6 * float(np.abs(expected).max() + 1))


@pytest.mark.parametrize(("h", "w"), [(1, 1), (7, 1), (1, 9), (2, 2)])
def test_tiny_images_resized(h: int, w: int) -> None:
    """An image 1 pixel wide or high: both taps of a column are its one pixel."""
    x = _image("uint8", h, w, 3)
    ops = [fkl.Resize(5, 9), fkl.SaturateCast("uint8")]
    got = _cpu(*ops)(x)
    np.testing.assert_array_equal(got, _interpreted(ops, x, got.shape))
    assert np.abs(got.astype(int) - cv2.resize(x, (5, 9), interpolation=cv2.INTER_LINEAR)).max() <= 1


def test_roi_batch_matches_opencv() -> None:
    """The ROI row of bench_cpu on an odd image: within OpenCV's fixed-point rounding."""
    x = _image("uint8", 311, 517, 3)
    rects = [(int(RNG.integers(0, 517 - 83)), int(RNG.integers(0, 311 - 61)), 83, 61) for _ in range(11)]
    got = _cpu(fkl.Crop(rects), fkl.Resize(97, 113), fkl.SaturateCast("uint8"))(x)
    for plane, (rx, ry, rw, rh) in zip(got, rects, strict=True):
        expected = cv2.resize(x[ry : ry + rh, rx : rx + rw], (97, 113), interpolation=cv2.INTER_LINEAR)
        assert np.abs(plane.astype(int) - expected).max() <= 1


@pytest.mark.parametrize("dtype", ["uint8", "int16", "float32"])
@pytest.mark.parametrize(("size", "out"), [((301, 173), (97, 211)), ((640, 359), (331, 200)), ((5, 3), (9, 2))])
def test_nearest_from_column_table(dtype: str, size: tuple[int, int], out: tuple[int, int]) -> None:
    x = _image(dtype, size[1], size[0], 3) if dtype != "float32" else RNG.random((size[1], size[0], 3), np.float32)
    np.testing.assert_array_equal(
        _cpu(fkl.Resize(*out, "nearest"))(x), cv2.resize(x, out, interpolation=cv2.INTER_NEAREST)
    )
    rects = [(1, 0, size[0] - 1, size[1]), (0, 1, size[0] // 2 + 1, size[1] - 1)]
    got = _cpu(fkl.Crop(rects), fkl.Resize(*out, "nearest"))(x)
    for plane, (rx, ry, rw, rh) in zip(got, rects, strict=True):
        crop = np.ascontiguousarray(x[ry : ry + rh, rx : rx + rw])
        np.testing.assert_array_equal(plane, cv2.resize(crop, out, interpolation=cv2.INTER_NEAREST))


_NUMPY_PAD = {"replicate": "edge", "reflect": "symmetric", "reflect101": "reflect", "wrap": "wrap"}


def _padded(x: np.ndarray, mode: str, value: float, margin: int) -> np.ndarray:
    """x with `margin` pixels of border on every side (numpy.pad), the reference for a crop of it."""
    pad = ((margin, margin), (margin, margin), (0, 0))
    if mode == "constant":
        return np.pad(x, pad, mode="constant", constant_values=value)
    return np.pad(x, pad, mode=_NUMPY_PAD[mode])  # type: ignore[call-overload]


@pytest.mark.parametrize("mode", ["constant", "replicate", "reflect", "reflect101", "wrap"])
@pytest.mark.parametrize("rect", [(-9, -4, 217, 97), (-40, 3, 20, 50), (150, -30, 70, 140), (3, 5, 101, 77)])
def test_border_rows_through_spans(mode: str, rect: tuple[int, int, int, int]) -> None:
    """Crops that leave the image on either side, or lie wholly outside it, or inside: the run inside the
    image is read from its row, the rest through the border's indices."""
    x = _image("uint8", 89, 187, 3)
    margin = 60
    big = _padded(x, mode, 7, margin)
    rx, ry, rw, rh = rect
    ops = [fkl.BorderReader(mode, 7), fkl.Crop(*rect)]
    expected = big[ry + margin : ry + margin + rh, rx + margin : rx + margin + rw]
    np.testing.assert_array_equal(_cpu(*ops)(x), expected)
    with_compute = [*ops, fkl.Cast("float32"), fkl.Mul(0.5)]
    np.testing.assert_array_equal(_cpu(*with_compute)(x), expected.astype(np.float32) * np.float32(0.5))


def test_border_of_a_large_image_matches_opencv() -> None:
    """bench_cpu's border row on an odd size, above the threads' threshold."""
    x = _image("uint8", 271, 483, 3)
    b = 32
    got = _cpu(fkl.BorderReader("reflect101"), fkl.Crop(-b, -b, 483 + 2 * b, 271 + 2 * b))(x)
    np.testing.assert_array_equal(got, cv2.copyMakeBorder(x, b, b, b, b, cv2.BORDER_REFLECT_101))


def test_crop_chain_reads_spans_of_list_images() -> None:
    """A crop of each image of a list (a pointer table) and a compute op, against numpy."""
    images = [_image("uint8", 57, 91, 3) for _ in range(3)]
    got = _cpu(fkl.Crop(4, 3, 61, 41), fkl.Cast("float32"), fkl.Sub(3.0))(images)
    for plane, x in zip(got, images, strict=True):
        np.testing.assert_array_equal(plane, x[3:44, 4:65].astype(np.float32) - np.float32(3.0))


@pytest.mark.parametrize("border", [None, "reflect"])
def test_rect_per_plane_spans(border: str | None) -> None:
    """Crop([rects]) of one image: each plane's span starts at its own rect (and with a border, may
    leave the image)."""
    x = _image("uint8", 61, 97, 3)
    rects = [(0, 0, 33, 21), (64, 40, 33, 21), (17, 9, 33, 21)]
    if border is not None:
        rects.append((-20, 50, 33, 21))
    ops = [*([fkl.BorderReader(border)] if border else []), fkl.Crop(rects), fkl.Cast("float32"), fkl.Mul(0.25)]
    got = _cpu(*ops)(x)
    np.testing.assert_array_equal(got, _interpreted(ops, x, got.shape))
    big = _padded(x, border or "reflect", 0, 30)
    for plane, (rx, ry, rw, rh) in zip(got, rects, strict=True):
        expected = big[ry + 30 : ry + 30 + rh, rx + 30 : rx + 30 + rw].astype(np.float32) * np.float32(0.25)
        np.testing.assert_array_equal(plane, expected)
