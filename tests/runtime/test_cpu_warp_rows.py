"""The CPU target's warp rows (fkl::WarpRows in emit_cpp's run_rows): a final warp of one packed image
sampled a row at a time, its pixels whose taps lie inside the source blended in runs, the others
(outside, a border's, a non-finite perspective) through the per-pixel stage. Bit for bit against the
reference interpreter (the per-pixel blend's bits, which the GPU also gives) and within the catalogue's
tolerance of cv2.warpAffine / warpPerspective, on odd sizes, matrices that put part of the output
outside the source, every border mode, integer and float sources of 1 to 4 channels, above and below
the size where the rows are shared among threads.
"""

from __future__ import annotations

import ctypes
import mmap
import zlib
from collections.abc import Sequence

import numpy as np
import pytest

import fklir as fkl
from fklir.frontend import ops as fops
from tests.borders import cv2_borders
from tests.runtime.catalogue_support import packed_source, reference

cv2 = pytest.importorskip("cv2")

RNG = np.random.default_rng(21)
MODES = ("constant", "replicate", "reflect", "reflect101", "wrap")
CV2_BORDER = cv2_borders(cv2)


@pytest.fixture(autouse=True)
def _draws_of_its_own(request: pytest.FixtureRequest) -> None:
    """Each test draws from a generator seeded by its name: the same data and matrices whichever worker
    runs it and in whatever order."""
    seed = zlib.crc32(request.node.nodeid.encode())
    RNG.bit_generator.state = np.random.default_rng(seed).bit_generator.state


def _image(dtype: str, h: int, w: int, channels: int) -> np.ndarray:
    """Random (h, w, channels) values over the type's range (0..255 for floats); (h, w) for one channel."""
    if np.dtype(dtype).kind == "f":
        x = (RNG.random((h, w, channels)) * 255).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = RNG.integers(info.min, int(info.max) + 1, (h, w, channels), dtype=dtype)
    return x[:, :, 0] if channels == 1 else x


def _affine(w: int, h: int) -> np.ndarray:
    """A source -> destination rotation and scale about the centre, moved so that a corner of the output
    maps outside the source."""
    m = cv2.getRotationMatrix2D((w / 2, h / 2), float(RNG.uniform(-40, 40)), float(RNG.uniform(0.7, 1.4)))
    m[:, 2] += RNG.uniform(-0.2, 0.2, 2) * (w, h)
    return m


def _perspective(w: int, h: int) -> np.ndarray:
    m = np.vstack([_affine(w, h), [0.0, 0.0, 1.0]])
    m[2, :2] = RNG.uniform(-0.6, 0.6, 2) / max(w, h)
    return m


def _matrix(kind: str, w: int, h: int) -> np.ndarray:
    return _affine(w, h) if kind == "affine" else _perspective(w, h)


def _cpu(ops: Sequence[fops.Op], x: np.ndarray) -> np.ndarray:
    return np.asarray(fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x))


def _interpreted(ops: Sequence[fops.Op], x: np.ndarray, out_shape: tuple[int, ...]) -> np.ndarray:
    chain = [fkl.TensorRead(), *ops, fkl.TensorWrite()]
    return np.asarray(reference(chain, packed_source(x))).reshape(out_shape)


def _cv_warp(
    x: np.ndarray, m: np.ndarray, size: tuple[int, int], mode: str = "constant", value: float = 0
) -> np.ndarray:
    fn = cv2.warpAffine if m.shape == (2, 3) else cv2.warpPerspective
    return fn(x, m, size, flags=cv2.INTER_LINEAR, borderMode=CV2_BORDER[mode], borderValue=(value,) * 4)


def _bits_equal(got: np.ndarray, want: np.ndarray) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize("kind", ["affine", "perspective"])
@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "int32", "float32", "float64"])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize(("size", "out"), [((33, 17), (41, 23)), ((301, 173), (263, 197)), ((7, 5), (9, 6))])
def test_rows_give_the_per_pixel_bits(
    kind: str, dtype: str, channels: int, size: tuple[int, int], out: tuple[int, int]
) -> None:
    x = _image(dtype, size[1], size[0], channels)
    ops = [fkl.Warping(_matrix(kind, *size), *out)]
    got = _cpu(ops, x)
    _bits_equal(got, _interpreted(ops, x, got.shape))


@pytest.mark.parametrize("kind", ["affine", "perspective"])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_uint8_saturated_rows_match_cv2_within_one(kind: str, channels: int) -> None:
    x = _image("uint8", 181, 299, channels)
    m = _matrix(kind, 299, 181)
    ops = [fkl.Warping(m, 287, 191), fkl.SaturateCast("uint8")]
    got = _cpu(ops, x)
    _bits_equal(got, _interpreted(ops, x, got.shape))
    expected = _cv_warp(x, m, (287, 191))
    assert int(np.abs(got.astype(int) - expected.astype(int)).max()) <= 1
    assert (expected == 0).any()  # part of the output maps outside the source


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["affine", "perspective"])
def test_float_rows_after_a_border_match_cv2(mode: str, kind: str) -> None:
    # Unit-range data, as the catalogue's odd sizes: cv2 rounds some pixels of a row in another order.
    x = _image("float32", 97, 131, 3) / 255
    m = _matrix(kind, 131, 97)
    ops = [fkl.BorderReader(mode, 0.25), fkl.Warping(m, 151, 89)]
    got = _cpu(ops, x)
    _bits_equal(got, _interpreted(ops, x, got.shape))
    expected = _cv_warp(x, m, (151, 89), mode, 0.25)
    assert float(np.abs(got - expected).max()) <= 1e-3


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("kind", ["affine", "perspective"])
def test_uint8_rows_after_a_border_match_cv2_within_one(mode: str, kind: str) -> None:
    x = _image("uint8", 97, 131, 4)
    m = _matrix(kind, 131, 97)
    ops = [fkl.BorderReader(mode, 37), fkl.Warping(m, 151, 89), fkl.SaturateCast("uint8")]
    got = _cpu(ops, x)
    _bits_equal(got, _interpreted(ops, x, got.shape))
    expected = _cv_warp(x, m, (151, 89), mode, 37)
    assert int(np.abs(got.astype(int) - expected.astype(int)).max()) <= 1


def test_rows_of_float_taps_keep_the_zero_weight_rule() -> None:
    # inf and NaN taps: a tap of weight 0 contributes nothing (an integer shift puts many weights at 0).
    # Where two NaNs meet, which one's sign the sum keeps depends on the order of the vector's operands
    # (SPEC fixes no NaN's bits): NaN where the reference has NaN, the same bits elsewhere.
    x = _image("float32", 40, 50, 3)
    x[::3, ::2] = np.inf
    x[1::4, 1::3] = -np.inf
    x[2::5, ::4] = np.nan
    shifts = (np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 3.0]]), np.array([[1.0, 0.0, 2.5], [0.0, 1.0, -1.0]]))
    for m in (*shifts, _affine(50, 40)):
        ops = [fkl.Warping(m, 53, 41)]
        got = _cpu(ops, x)
        want = _interpreted(ops, x, got.shape)
        nan = np.isnan(want)
        assert (np.isnan(got) == nan).all()
        _bits_equal(np.where(nan, 0, got), np.where(nan, 0, want))


def test_perspective_rows_through_the_horizon() -> None:
    # w crosses 0 inside the output: non-finite and far-away coordinates take the per-pixel stage.
    x = _image("uint8", 60, 80, 3)
    m = np.array([[1.0, 0.2, 0.0], [0.1, 1.0, 0.0], [0.02, 0.01, 1.0]])
    ops = [fkl.Warping(m, 97, 71, inverse=True), fkl.SaturateCast("uint8")]
    got = _cpu(ops, x)
    _bits_equal(got, _interpreted(ops, x, got.shape))


# Matrices whose coordinates fall exactly on the bounds of a row's runs (0, the last column and row, -1,
# the width and height), run backwards along x (negative steps), stay constant along x, or narrow a run
# to a pixel: the rows estimate each run's ends from the map and test every pixel they put in a run.
EXACT_BOUND_MAPS = {
    "identity": [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
    "integer-shift": [[1.0, 0.0, -3.0], [0.0, 1.0, 2.0]],
    "flip-x": [[-1.0, 0.0, 48.0], [0.0, 1.0, 0.0]],
    "flip-both": [[-1.0, 0.0, 49.0], [0.0, -1.0, 39.0]],
    "rotate-90": [[0.0, 1.0, 0.0], [-1.0, 0.0, 49.0]],
    "scale-2": [[2.0, 0.0, -1.0], [0.0, 0.5, -1.0]],
    "steep": [[37.0, 0.0, -1.0], [0.0, 1.0, 0.0]],
    "projective-mirror": [[-1.0, 0.1, 50.0], [0.05, 1.0, 0.0], [-0.004, 0.002, 1.0]],
}


@pytest.mark.parametrize("border", [None, "replicate"])
@pytest.mark.parametrize("name", sorted(EXACT_BOUND_MAPS))
def test_rows_on_the_bounds_of_their_runs(name: str, border: str | None) -> None:
    x = _image("uint8", 40, 50, 3)
    head = [fkl.BorderReader(border)] if border else []
    ops = [*head, fkl.Warping(np.array(EXACT_BOUND_MAPS[name]), 61, 43), fkl.SaturateCast("uint8")]
    got = _cpu(ops, x)
    _bits_equal(got, _interpreted(ops, x, got.shape))
    assert len(np.unique(got)) > 100  # the warp reads the image, not only its outside


@pytest.mark.parametrize(("h", "w"), [(1, 1), (1, 9), (7, 1), (2, 2)])
def test_tiny_sources(h: int, w: int) -> None:
    # A source 1 pixel wide or high has no pixel whose four taps lie inside it.
    x = _image("uint8", h, w, 3)
    ops = [fkl.Warping(np.array([[1.0, 0.1, -0.5], [0.05, 1.0, -0.25]]), 5, 4)]
    got = _cpu(ops, x)
    _bits_equal(got, _interpreted(ops, x, got.shape))


def _before_a_guard_page(x: np.ndarray) -> tuple[np.ndarray, mmap.mmap]:
    """A copy of x whose last byte is the last one before a page that may not be read (and the mapping
    that holds it): a read past the image's end faults."""
    page = mmap.PAGESIZE
    size = -(-x.nbytes // page) * page + page
    region = mmap.mmap(-1, size)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    start = ctypes.addressof(ctypes.c_char.from_buffer(region))
    assert libc.mprotect(start + size - page, page, 0) == 0  # PROT_NONE
    guarded = np.frombuffer(region, x.dtype, x.size, size - page - x.nbytes).reshape(x.shape)
    guarded[...] = x
    return guarded, region


@pytest.mark.parametrize(("dtype", "channels"), [("uint8", 1), ("uint8", 3), ("uint8", 4), ("uint16", 2), ("int8", 3)])
def test_wide_reads_stop_at_the_end_of_the_image(dtype: str, channels: int) -> None:
    # A row's two taps of 1- and 2-byte elements are read as one 8-byte word; on the last source row the
    # word of the rightmost pixels would pass the image's end, so those pixels take the per-pixel path.
    x, region = _before_a_guard_page(_image(dtype, 9, 13, channels))
    for m in (np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]]), np.array([[1.0, 0.0, 0.25], [0.0, 1.0, 0.75]])):
        ops = [fkl.Warping(m, 13, 9, inverse=True)]
        got = _cpu(ops, x)
        _bits_equal(got, _interpreted(ops, x, got.shape))
    assert not region.closed  # the mapping outlives the calls (it is unmapped with the last array on it)
