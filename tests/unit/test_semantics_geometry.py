"""Reference geometry (BorderReader, Crop, Resize, Warping, Deinterlace) against numpy.pad,
OpenCV and hand-computed values."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from fklir.interpreters import semantics as S
from fklir.interpreters import semantics_geometry as G
from fklir.interpreters.semantics import Image
from tests.borders import NUMPY_PAD, cv2_borders
from tests.warp_formula import CV2_BOUND, assert_float_warp_exact, warp_formula

cv2 = pytest.importorskip("cv2")


@pytest.fixture(autouse=True)
def opencv_with_ipp() -> Iterator[None]:
    """The reference keeps resize coordinates exact, as cv2's IPP path does (OpenCV's own C++ path
    rounds them to float32)."""
    previous = bool(cv2.ipp.useIPP())
    cv2.ipp.setUseIPP(True)
    yield
    cv2.ipp.setUseIPP(previous)


RNG_SEED = 7_654_321


CV2_BORDER = cv2_borders(cv2)


def numpy_pad(array: np.ndarray, widths: Any, mode: str, constant: float) -> np.ndarray:
    """numpy.pad with the numpy name of a BorderReader mode."""
    if mode == "constant":
        return np.pad(array, widths, mode="constant", constant_values=constant)
    numpy_mode: Any = NUMPY_PAD[mode]
    return np.pad(array, widths, mode=numpy_mode)


def random_image(h: int, w: int, c: int, dtype: str, rng: np.random.Generator, top: float = 255.0) -> Image:
    if dtype == "float32":
        data = (rng.random((1, h, w, c)) * top).astype(np.float32)
    else:
        data = rng.integers(0, int(top) + 1, (1, h, w, c)).astype(S.DTYPES[dtype].storage)
    return Image(data, dtype)


def as_cv(img: Image) -> np.ndarray:
    """Plane 0 in cv2's layout (2-D for one channel)."""
    plane = img.data[0]
    return plane[..., 0] if img.channels == 1 else plane


def cv_result(arr: np.ndarray, channels: int) -> np.ndarray:
    return arr.reshape(arr.shape[0], arr.shape[1], channels)


# ----------------------------------------------------------------------------------------------
# BorderReader
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", G.BORDER_MODES)
@pytest.mark.parametrize("n", [1, 2, 3, 5, 6])
def test_border_index_equals_numpy_pad_far_outside(mode: str, n: int) -> None:
    pad = 5 * n + 3
    expected = numpy_pad(np.arange(n), pad, mode, constant=-1)
    got = G.border_pad_indices(np.arange(-pad, n + pad), n, mode)
    assert got.tolist() == expected.tolist()
    assert G.border_pad_index(-pad, n, mode) == int(expected[0])
    assert G.border_pad_index(n + pad - 1, n, mode) == int(expected[-1])


@pytest.mark.parametrize("mode", G.BORDER_MODES)
def test_border_read_equals_copy_make_border(mode: str) -> None:
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(5, 7, 3, "uint8", rng)
    top, bottom, left, right = 17, 16, 22, 23  # several times the image size
    expected = cv2.copyMakeBorder(as_cv(img), top, bottom, left, right, CV2_BORDER[mode], value=(7, 8, 9))
    ys = np.arange(-top, 5 + bottom)[:, None]
    xs = np.arange(-left, 7 + right)[None, :]
    got = G.border_read(img, mode, (7, 8, 9), ys, xs)
    assert got.dtype == np.uint8
    assert np.array_equal(got[0], expected)


def test_border_constant_value_must_fit_the_type() -> None:
    img = Image(np.zeros((1, 2, 2, 1), np.uint8), "uint8")
    with pytest.raises(ValueError, match="BorderReader"):
        G.border_read(img, "constant", 300, np.array([-1]), np.array([0]))
    with pytest.raises(ValueError, match="BorderReader"):
        G.border_read(img, "mirror", 0, np.array([-1]), np.array([0]))


# ----------------------------------------------------------------------------------------------
# Crop
# ----------------------------------------------------------------------------------------------


def test_crop_one_plane_per_rect() -> None:
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(17, 33, 3, "uint8", rng)
    rects = [(0, 0, 10, 6), (23, 11, 10, 6), (5, 3, 10, 6)]
    out = G.crop(img, rects)
    assert out.data.shape == (3, 6, 10, 3)
    for plane, (x, y, w, h) in enumerate(rects):
        assert np.array_equal(out.data[plane], img.data[0, y : y + h, x : x + w])


def test_crop_per_plane_rects_and_one_rect_for_all_planes() -> None:
    data = np.arange(2 * 6 * 8, dtype=np.int16).reshape(2, 6, 8, 1)
    img = Image(data, "int16")
    per_plane = G.crop(img, [(1, 1, 3, 2), (4, 3, 3, 2)])
    assert np.array_equal(per_plane.data[0], data[0, 1:3, 1:4])
    assert np.array_equal(per_plane.data[1], data[1, 3:5, 4:7])
    shared = G.crop(img, [(2, 0, 2, 2)])
    assert np.array_equal(shared.data, data[:, 0:2, 2:4])
    with pytest.raises(ValueError, match="3 rects"):
        G.crop(img, [(0, 0, 1, 1)] * 3)


@pytest.mark.parametrize("rect", [(-1, 0, 4, 4), (0, -1, 4, 4), (30, 0, 4, 4), (0, 14, 4, 4), (0, 0, 0, 4)])
def test_crop_outside_without_border_is_an_error(rect: tuple[int, int, int, int]) -> None:
    img = Image(np.zeros((1, 17, 33, 1), np.uint8), "uint8")
    with pytest.raises(ValueError, match="Crop"):
        G.crop(img, [rect])


def test_crop_of_different_sizes_needs_a_resize() -> None:
    img = Image(np.zeros((1, 17, 33, 1), np.uint8), "uint8")
    with pytest.raises(ValueError, match="different sizes"):
        G.crop(img, [(0, 0, 4, 4), (0, 0, 5, 4)])


@pytest.mark.parametrize("mode", G.BORDER_MODES)
def test_crop_with_border_equals_numpy_pad(mode: str) -> None:
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(5, 7, 2, "float32", rng)
    pad = 60  # every rect below fits inside the padded array
    padded = numpy_pad(img.data[0], ((pad, pad), (pad, pad), (0, 0)), mode, constant=2.5)
    rects = [(-30, -20, 50, 45), (3, 2, 50, 45), (-39, 6, 50, 45)]
    out = G.crop_with_border(img, rects, mode, 2.5)
    for plane, (x, y, w, h) in enumerate(rects):
        assert np.array_equal(out.data[plane], padded[y + pad : y + pad + h, x + pad : x + pad + w])


# ----------------------------------------------------------------------------------------------
# Resize
# ----------------------------------------------------------------------------------------------

RESIZE_CASES = [
    (300, 300, 224, 224),
    (416, 416, 640, 640),
    (33, 17, 64, 40),
    (33, 17, 16, 9),
    (640, 480, 33, 17),
    (17, 33, 300, 301),
    (200, 150, 224, 224),
    (66, 34, 33, 17),  # exact 2x down: cv2 switches to INTER_AREA, which must agree
]


@pytest.mark.parametrize(("src_w", "src_h", "dst_w", "dst_h"), RESIZE_CASES)
def test_resize_linear_float32_matches_cv2(src_w: int, src_h: int, dst_w: int, dst_h: int) -> None:
    rng = np.random.default_rng(RNG_SEED)
    for channels in (1, 3, 4):
        img = random_image(src_h, src_w, channels, "float32", rng)
        expected = cv_result(cv2.resize(as_cv(img), (dst_w, dst_h), interpolation=cv2.INTER_LINEAR), channels)
        out = G.resize(img, dst_w, dst_h, "linear")
        assert out.dtype == "float32"
        assert out.data.shape == (1, dst_h, dst_w, channels)
        err = np.abs(out.data[0].astype(np.float64) - expected)
        assert bool((err <= 1e-3 + 1e-4 * np.abs(expected)).all()), float(err.max())


@pytest.mark.parametrize(("src_w", "src_h", "dst_w", "dst_h"), RESIZE_CASES[:4])
def test_resize_linear_uint8_after_saturate_cast_within_one(src_w: int, src_h: int, dst_w: int, dst_h: int) -> None:
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(src_h, src_w, 3, "uint8", rng)
    expected = cv2.resize(as_cv(img), (dst_w, dst_h), interpolation=cv2.INTER_LINEAR)
    out = S.saturate_cast(G.resize(img, dst_w, dst_h, "linear"), "uint8")
    assert int(np.abs(out.data[0].astype(np.int64) - expected).max()) <= 1


@pytest.mark.parametrize(("src_w", "src_h", "dst_w", "dst_h"), RESIZE_CASES)
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_resize_nearest_matches_cv2_exactly(src_w: int, src_h: int, dst_w: int, dst_h: int, dtype: str) -> None:
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(src_h, src_w, 3, dtype, rng)
    expected = cv2.resize(as_cv(img), (dst_w, dst_h), interpolation=cv2.INTER_NEAREST)
    out = G.resize(img, dst_w, dst_h, "nearest")
    assert out.dtype == dtype
    assert np.array_equal(out.data[0], expected)


def test_nearest_300_to_224_needs_the_reciprocal_formula() -> None:
    # Sanity check that the test above can tell formulas apart: plain floor(d * 300 / 224)
    # picks a different source column somewhere, cv2's floor(d * (1 / (224 / 300))) does not.
    d = np.arange(224, dtype=np.float64)
    plain = np.floor(d * 300 / 224)
    cv_like = np.floor(d * (1.0 / (224 / 300)))
    assert not np.array_equal(plain, cv_like)


def test_resize_planes_independently() -> None:
    rng = np.random.default_rng(RNG_SEED)
    data = (rng.random((3, 17, 33, 2)) * 255).astype(np.float32)
    out = G.resize(Image(data, "float32"), 20, 11)
    for plane in range(3):
        single = G.resize(Image(data[plane : plane + 1], "float32"), 20, 11)
        assert np.array_equal(out.data[plane], single.data[0])


# Preserve modes: expected boxes written from the SPEC text (content = source scaled by
# min(dst_w/src_w, dst_h/src_h), sizes rounded half away from zero, centred with integer
# division and the odd leftover right/bottom; x = 0 for preserve_left; even sizes for
# preserve_even), as (x0, y0, content_w, content_h).
PRESERVE_CASES = [
    # 100x50 -> 64x63: scale 0.64 -> 64x32; 31 spare rows: 15 above, 16 below.
    ((100, 50), (64, 63), "preserve", (0, 15, 64, 32)),
    # 50x100 -> 63x64: scale 0.64 -> 32x64; 31 spare columns: 15 left, 16 right.
    ((50, 100), (63, 64), "preserve", (15, 0, 32, 64)),
    ((50, 100), (63, 64), "preserve_left", (0, 0, 32, 64)),
    # 30x20 -> 45x45: scale 1.5 -> 45x30; 15 spare rows: 7 above, 8 below.
    ((30, 20), (45, 45), "preserve", (0, 7, 45, 30)),
    # preserve_even: 45 -> 44 wide, 30 stays; 1 spare column goes right (x0 = 0).
    ((30, 20), (45, 45), "preserve_even", (0, 7, 44, 30)),
    # 4x5 -> 2x4: scale 0.5 -> height 2.5 rounds half AWAY to 3 (not to even 2); 1 spare row below.
    ((4, 5), (2, 4), "preserve", (0, 0, 2, 3)),
    # 200x150 -> 224x224: scale 1.12 -> 224x168; 56 spare rows: 28 above, 28 below.
    ((200, 150), (224, 224), "preserve", (0, 28, 224, 168)),
]


@pytest.mark.parametrize(("src", "dst", "aspect", "box"), PRESERVE_CASES)
@pytest.mark.parametrize("interp", ["linear", "nearest"])
def test_resize_preserve_aspect_ratio_placement(
    src: tuple[int, int], dst: tuple[int, int], aspect: str, box: tuple[int, int, int, int], interp: str
) -> None:
    rng = np.random.default_rng(RNG_SEED)
    (src_w, src_h), (dst_w, dst_h) = src, dst
    data = rng.integers(100, 201, (1, src_h, src_w, 3)).astype(np.uint8)
    background = (7, 8, 9)
    out = G.resize(Image(data, "uint8"), dst_w, dst_h, interp, aspect, background)
    assert G.resize_content_box(src_w, src_h, dst_w, dst_h, aspect) == box
    x0, y0, cw, ch = box
    content = np.zeros((dst_h, dst_w), dtype=bool)
    content[y0 : y0 + ch, x0 : x0 + cw] = True
    plane = out.data[0].astype(np.float64)
    is_background = (plane == np.array(background)).all(axis=-1)
    assert np.array_equal(is_background, ~content)
    flag = cv2.INTER_LINEAR if interp == "linear" else cv2.INTER_NEAREST
    source = data[0].astype(np.float32) if interp == "linear" else data[0]
    expected = cv2.resize(source, (cw, ch), interpolation=flag)
    region = out.data[0, y0 : y0 + ch, x0 : x0 + cw]
    if interp == "linear":
        np.testing.assert_allclose(region, expected, atol=1e-3, rtol=1e-4)
    else:
        assert np.array_equal(region, expected)


def test_resize_preserve_needs_background() -> None:
    img = Image(np.zeros((1, 4, 4, 1), np.uint8), "uint8")
    with pytest.raises(ValueError, match="background"):
        G.resize(img, 8, 2, "linear", "preserve")
    with pytest.raises(ValueError, match="Resize"):
        G.resize(img, 8, 2, "nearest", "preserve", 256)  # not representable in uint8


def test_crop_resize_handles_rects_of_different_sizes() -> None:
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(40, 60, 3, "uint8", rng)
    rects = [(0, 0, 20, 10), (10, 5, 33, 17), (30, 20, 30, 20)]
    out = G.crop_resize(img, rects, 16, 16)
    assert out.data.shape == (3, 16, 16, 3)
    for plane, (x, y, w, h) in enumerate(rects):
        piece = img.data[0, y : y + h, x : x + w].astype(np.float32)
        expected = cv2.resize(piece, (16, 16), interpolation=cv2.INTER_LINEAR)
        np.testing.assert_allclose(out.data[plane], expected, atol=1e-3, rtol=1e-4)


# ----------------------------------------------------------------------------------------------
# Warping
# ----------------------------------------------------------------------------------------------


def random_affine(rng: np.random.Generator) -> np.ndarray:
    angle = rng.uniform(-0.6, 0.6)
    sx, sy = rng.uniform(0.6, 1.6, 2)
    shear = rng.uniform(-0.2, 0.2)
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    linear = rot @ np.array([[sx, shear], [0.0, sy]])
    return np.hstack([linear, rng.uniform(-8, 8, (2, 1))])


def random_perspective(rng: np.random.Generator) -> np.ndarray:
    matrix = np.vstack([random_affine(rng), [0.0, 0.0, 1.0]])
    matrix[2, :2] = rng.uniform(-0.004, 0.004, 2)
    return matrix


def cv_warp(img: Image, matrix: np.ndarray, w: int, h: int, flags: int, border: int, value: float) -> np.ndarray:
    fn = cv2.warpAffine if matrix.shape == (2, 3) else cv2.warpPerspective
    out = fn(as_cv(img), matrix, (w, h), flags=flags, borderMode=border, borderValue=(value,) * 4)
    return cv_result(out, img.channels)


def assert_warp_matches(
    img: Image,
    matrix: np.ndarray,
    w: int,
    h: int,
    inverse: bool = False,
    mode: str = "constant",
    value: float = 0.0,
) -> np.ndarray:
    """The interpreter's warp against SPEC's float64 formula (its bound) and cv2 5.1 (a second reference)."""
    flags = cv2.INTER_LINEAR | (cv2.WARP_INVERSE_MAP if inverse else 0)
    expected = cv_warp(img, matrix, w, h, flags, CV2_BORDER[mode], value)
    border = None if (mode, value) == ("constant", 0.0) else (mode, value)
    out = G.warp(img, matrix, w, h, inverse=inverse, border=border)
    assert out.dtype == "float32"
    formula = warp_formula(img.data[0], matrix, w, h, inverse, mode, value)
    assert_float_warp_exact(out.data[0], formula, f"interpreter {mode}")
    err = np.abs(out.data[0].astype(np.float64) - expected)
    assert float(err.max()) <= CV2_BOUND[mode], (float(err.max()), np.unravel_index(int(err.argmax()), err.shape))
    return expected


# Widths that are multiples of 64 keep every pixel in cv2's SIMD body (8, 16 or 32 lanes).
@pytest.mark.parametrize("kind", ["affine", "perspective"])
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("inverse", [False, True])
def test_warp_float32_matches_cv2_on_0_255_images(kind: str, channels: int, inverse: bool) -> None:
    rng = np.random.default_rng(RNG_SEED + channels)
    for _ in range(3):
        img = random_image(17, 33, channels, "float32", rng)
        matrix = random_affine(rng) if kind == "affine" else random_perspective(rng)
        expected = assert_warp_matches(img, matrix, 64, 23, inverse=inverse)
        # The map must really leave the source somewhere so that border taps are exercised.
        assert bool((expected == 0).any())


@pytest.mark.parametrize("mode", G.BORDER_MODES)
@pytest.mark.parametrize("kind", ["affine", "perspective"])
def test_warp_border_modes_match_cv2(mode: str, kind: str) -> None:
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(17, 33, 3, "float32", rng)
    matrix = random_affine(rng) if kind == "affine" else random_perspective(rng)
    matrix[:2, 2] += 12.0  # push part of the output well outside the source
    assert_warp_matches(img, matrix, 128, 40, mode=mode, value=37.5)


@pytest.mark.parametrize(("dst_w", "dst_h"), [(33, 17), (41, 23), (7, 5)])
@pytest.mark.parametrize("kind", ["affine", "perspective"])
def test_warp_odd_sizes_match_cv2(dst_w: int, dst_h: int, kind: str) -> None:
    rng = np.random.default_rng(RNG_SEED + dst_w)
    img = random_image(17, 33, 3, "float32", rng)
    matrix = random_affine(rng) if kind == "affine" else random_perspective(rng)
    assert_warp_matches(img, matrix, dst_w, dst_h)
    assert_warp_matches(img, matrix, dst_w, dst_h, inverse=True)


def test_warp_odd_sizes_on_0_255_data_with_exact_coordinates() -> None:
    # Dyadic matrices make every float32 coordinate exact, whatever the evaluation order.
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(17, 33, 4, "float32", rng)
    matrix = np.array([[0.75, 0.125, -3.5], [-0.25, 1.25, 2.25]])
    assert_warp_matches(img, matrix, 41, 23, inverse=True)
    assert_warp_matches(img, np.array([[2.0, 0.0, 5.0], [0.0, 0.5, -1.0]]), 33, 17)


def test_warp_uint8_source_rounds_like_cv2() -> None:
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(17, 33, 3, "uint8", rng)
    matrix = random_affine(rng)
    expected = cv2.warpAffine(as_cv(img), matrix, (64, 23), flags=cv2.INTER_LINEAR)
    out = S.saturate_cast(G.warp(img, matrix, 64, 23), "uint8")
    assert int(np.abs(out.data[0].astype(np.int64) - expected).max()) <= 1


def test_warp_identity_and_half_pixel_shift_by_hand() -> None:
    data = np.array([[0.0, 10.0, 20.0], [30.0, 40.0, 50.0]], dtype=np.float32).reshape(1, 2, 3, 1)
    img = Image(data, "float32")
    identity = G.warp(img, np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), 3, 2)
    assert np.array_equal(identity.data, data)
    # Destination x reads source x + 0.5 (inverse map): halfway between neighbours; the last
    # column blends with the constant-0 border.
    shifted = G.warp(img, np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.0]]), 3, 2, inverse=True)
    assert shifted.data[0, :, :, 0].tolist() == [[5.0, 15.0, 10.0], [35.0, 45.0, 25.0]]


def test_warp_rejects_bad_matrices() -> None:
    img = Image(np.zeros((1, 4, 4, 1), np.float32), "float32")
    with pytest.raises(ValueError, match="singular"):
        G.warp(img, np.array([[1.0, 2.0, 0.0], [2.0, 4.0, 0.0]]), 4, 4)
    with pytest.raises(ValueError, match="Warping"):
        G.warp(img, np.eye(4), 4, 4)


# ----------------------------------------------------------------------------------------------
# Deinterlace
# ----------------------------------------------------------------------------------------------


def rows_image(values: list[float]) -> Image:
    """A 2-wide image whose row y holds values[y] in both columns."""
    data = np.repeat(np.array(values, dtype=np.uint8)[:, None], 2, axis=1).reshape(1, len(values), 2, 1)
    return Image(data, "uint8")


def test_deinterlace_blend() -> None:
    out = G.deinterlace(rows_image([0, 1, 4, 9, 16]), "blend")
    assert out.dtype == "float32"
    assert out.data[0, :, 0, 0].tolist() == [0.0, 0.5, 2.5, 6.5, 12.5]


def test_deinterlace_linear() -> None:
    odd_height = G.deinterlace(rows_image([0, 1, 4, 9, 16]), "linear")
    assert odd_height.data[0, :, 1, 0].tolist() == [0.0, 2.0, 4.0, 10.0, 16.0]
    # With an even height the last row is odd and has no row below: it copies the row above.
    even_height = G.deinterlace(rows_image([0, 1, 4, 9]), "linear")
    assert even_height.data[0, :, 0, 0].tolist() == [0.0, 2.0, 4.0, 4.0]
    with pytest.raises(ValueError, match="Deinterlace"):
        G.deinterlace(rows_image([0, 1]), "bob")


# ----------------------------------------------------------------------------------------------
# Edge inputs (SPEC §3): a 1 x 100000 source, images with a zero dimension, batches of no images
# ----------------------------------------------------------------------------------------------

REPEATING_BORDERS = [m for m in G.BORDER_MODES if m != "constant"]


@pytest.mark.parametrize("interp", ["linear", "nearest"])
@pytest.mark.parametrize(("dst_w", "dst_h"), [(100_000, 1), (1, 100_000)])
def test_resize_of_a_wide_row_holds_memory_in_proportion_to_the_output(interp: str, dst_w: int, dst_h: int) -> None:
    """Gathering the tap rows first, then the columns, held a (B, dst_h, src_w, C) intermediate:
    100000 x 100000 pixels here. One gather holds (B, dst_h, dst_w, C)."""
    rng = np.random.default_rng(RNG_SEED)
    img = random_image(1, 100_000, 3, "float32", rng)
    tracemalloc.start()  # numpy reports its buffers to tracemalloc
    try:
        out = G.resize(img, dst_w, dst_h, interp)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert out.data.shape == (1, dst_h, dst_w, 3)
    assert peak < 48 * dst_w * dst_h * 3 * 8, f"peak {peak} bytes for {dst_w * dst_h * 3} output values"
    flag = cv2.INTER_LINEAR if interp == "linear" else cv2.INTER_NEAREST
    expected = cv2.resize(as_cv(img), (dst_w, dst_h), interpolation=flag)
    err = np.abs(out.data[0].astype(np.float64) - expected)
    assert bool((err <= 1e-3 + 1e-4 * np.abs(expected)).all()), float(err.max())


@pytest.mark.parametrize("mode", G.BORDER_MODES)
def test_border_indices_of_an_empty_axis_are_all_outside(mode: str) -> None:
    coords = np.arange(-4, 5)
    if mode == "constant":
        assert G.border_pad_indices(coords, 0, mode).tolist() == [-1] * 9
        assert numpy_pad(np.arange(0), 4, mode, constant=-1).tolist() == [-1] * 8
        return
    with pytest.raises(ValueError, match=rf"^BorderReader\('{mode}'\): an empty axis has no pixel to repeat"):
        G.border_pad_indices(coords, 0, mode)
    with pytest.raises(ValueError, match="empty"):  # numpy.pad refuses too
        numpy_pad(np.arange(0), 4, mode, constant=0)
    assert G.border_pad_indices(np.arange(0), 0, mode).size == 0  # no coordinate asked: nothing to repeat


EMPTY_PLANES = [(1, 0, 0), (1, 0, 5), (1, 5, 0), (2, 0, 7), (3, 4, 0)]  # (B, H, W)


@pytest.mark.parametrize(("b", "h", "w"), EMPTY_PLANES)
def test_a_constant_border_of_an_empty_image_is_all_its_value_like_numpy_pad(b: int, h: int, w: int) -> None:
    img = Image(np.zeros((b, h, w, 3), np.int16), "int16")
    value = (7.0, -300.0, 31.0)
    pad = 20
    padded = np.pad(img.data, ((0, 0), (pad, pad), (pad, pad), (0, 0)), mode="constant")
    padded[...] = np.array(value, np.int16)  # numpy.pad takes one constant per axis, not per channel
    assert np.array_equal(np.pad(img.data[..., 0], ((0, 0), (pad, pad), (pad, pad)), constant_values=7), padded[..., 0])
    for x, y, rw, rh in [(-3, -2, 5, 4), (0, 0, 1, 1), (6, 9, 11, 3)]:
        out = G.crop_with_border(img, [(x, y, rw, rh)], "constant", value)
        assert np.array_equal(out.data, padded[:, y + pad : y + pad + rh, x + pad : x + pad + rw])
    warped = G.warp(img, np.array([[1.5, 0.2, -3.0], [0.0, 1.0, 2.0]]), 9, 4, border=("constant", value))
    assert warped.dtype == "float32"
    assert np.array_equal(warped.data, np.broadcast_to(np.array(value, np.float32), (b, 4, 9, 3)))


@pytest.mark.parametrize("mode", REPEATING_BORDERS)
@pytest.mark.parametrize(("b", "h", "w"), EMPTY_PLANES)
def test_borders_that_repeat_refuse_an_empty_image_unless_no_plane_is_made(mode: str, b: int, h: int, w: int) -> None:
    img = Image(np.zeros((b, h, w, 2), np.float32), "float32")
    message = rf"^BorderReader\('{mode}'\): cannot extend the empty {w}x{h} image to 4x3 \(there is no pixel"
    with pytest.raises(ValueError, match=message):
        G.crop_with_border(img, [(-1, -1, 4, 3)], mode)
    with pytest.raises(ValueError, match=message):
        G.warp(img, np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5]]), 4, 3, border=(mode, 0.0))
    no_planes = Image(img.data[:0], "float32")
    assert G.crop_with_border(no_planes, [(-1, -1, 4, 3)], mode).data.shape == (0, 3, 4, 2)
    assert G.warp(no_planes, np.eye(3), 4, 3, border=(mode, 0.0)).data.shape == (0, 3, 4, 2)


@pytest.mark.parametrize("interp", ["linear", "nearest"])
@pytest.mark.parametrize(("b", "h", "w"), EMPTY_PLANES)
def test_resize_and_warp_without_border_refuse_an_empty_image_like_cv2(interp: str, b: int, h: int, w: int) -> None:
    img = Image(np.zeros((b, h, w, 1), np.uint8), "uint8")
    with pytest.raises(ValueError, match=rf"^Resize: cannot make a 4x3 image from the empty {w}x{h} image$"):
        G.resize(img, 4, 3, interp)
    with pytest.raises(ValueError, match=rf"^Resize: cannot make a 4x3 image from the empty {w}x{h} image$"):
        G.resize(img, 4, 3, interp, "preserve", background=9)
    with pytest.raises(ValueError, match=rf"^Warping: cannot make a 5x2 image from the empty {w}x{h} image$"):
        G.warp(img, np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 2.0]]), 5, 2)
    with pytest.raises(cv2.error):
        cv2.resize(img.data[0, :, :, 0], (4, 3), interpolation=cv2.INTER_LINEAR)


@pytest.mark.parametrize("interp", ["linear", "nearest"])
@pytest.mark.parametrize(("h", "w"), [(0, 0), (0, 9), (6, 0), (6, 9)])
def test_geometry_of_a_batch_of_no_images_keeps_the_plane_size(interp: str, h: int, w: int) -> None:
    """No plane to make, so nothing is sampled: the output has the size the op implies."""
    none = Image(np.zeros((0, h, w, 3), np.uint16), "uint16")
    out_dtype = "float32" if interp == "linear" else "uint16"
    for resized in (G.resize(none, 4, 5, interp), G.resize(none, 4, 5, interp, "preserve_left", background=1)):
        assert resized.data.shape == (0, 5, 4, 3) and resized.dtype == out_dtype
        assert resized.data.dtype == S.DTYPES[out_dtype].storage
    warped = G.warp(none, np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]]), 7, 3)
    assert warped.data.shape == (0, 3, 7, 3) and warped.dtype == "float32"
    assert G.deinterlace(none, "linear").data.shape == (0, h, w, 3)
    assert G.crop_with_border(none, [(-2, -2, 3, 2)], "constant", 4).data.shape == (0, 2, 3, 3)


def test_crop_of_a_batch_of_no_images() -> None:
    none = Image(np.zeros((0, 6, 9, 2), np.int8), "int8")
    assert G.crop(none, [(1, 2, 3, 4)]).data.shape == (0, 4, 3, 2)
    with pytest.raises(ValueError, match=r"^Crop: 2 rects for a source of 0 planes \(need 1\)$"):
        G.crop(none, [(0, 0, 2, 2), (1, 1, 2, 2)])
    with pytest.raises(ValueError, match=r"^Crop: rect \(7, 0, 3, 1\) leaves the 9x6 image"):
        G.crop(none, [(7, 0, 3, 1)])
    with pytest.raises(ValueError, match=r"^Crop: rect \(0, 0, 1, 1\) leaves the 0x6 image"):
        G.crop(Image(np.zeros((1, 6, 0, 2), np.int8), "int8"), [(0, 0, 1, 1)])


@pytest.mark.parametrize("mode", ["blend", "linear"])
@pytest.mark.parametrize(("b", "h", "w"), [*EMPTY_PLANES, (0, 5, 4)])
def test_deinterlace_of_an_empty_image_is_the_empty_slice_of_a_full_one(mode: str, b: int, h: int, w: int) -> None:
    rng = np.random.default_rng(RNG_SEED)
    full = Image(rng.integers(0, 256, (max(b, 1), max(h, 1), max(w, 1), 3)).astype(np.uint8), "uint8")
    expected = G.deinterlace(full, mode).data[:b, :h, :w]
    out = G.deinterlace(Image(np.ascontiguousarray(full.data[:b, :h, :w]), "uint8"), mode)
    assert out.dtype == "float32" and out.data.shape == expected.shape == (b, h, w, 3)


def _run_chain(ops: list[Any], x: np.ndarray) -> np.ndarray:
    """The reference interpreter on the frontend's IR of TensorRead, ops, TensorWrite; a batch of no
    images is typed as one plane, as compose() compiles it."""
    import fklir as fkl
    from fklir.frontend.lowering import lower_chain, run_passes
    from fklir.interpreters.fkl import run_module
    from fklir.passes.infer_types import InferTypesPass

    module = lower_chain([fkl.TensorRead(), *ops, fkl.TensorWrite()], str(x.dtype), x.shape[3], 1)
    return run_module(run_passes(module, (InferTypesPass(),)), {"src": x})["dst"]


def test_the_interpreter_runs_chains_on_empty_images() -> None:
    import fklir as fkl

    border = fkl.BorderReader("constant", (5, 6, 7))
    out = _run_chain([border, fkl.Crop(-2, -1, 4, 3), fkl.Add(1)], np.zeros((1, 0, 4, 3), np.uint8))
    assert np.array_equal(out, np.broadcast_to(np.array([6, 7, 8], np.uint8), (1, 3, 4, 3)))
    none = np.zeros((0, 6, 9, 3), np.uint8)
    assert _run_chain([border, fkl.Crop(-2, -1, 4, 3), fkl.Add(1)], none).shape == (0, 3, 4, 3)
    assert _run_chain([fkl.Crop(1, 2, 3, 4), fkl.Resize(5, 7), fkl.Mul(2.0)], none).shape == (0, 7, 5, 3)
    assert _run_chain([fkl.Cast("float32"), fkl.VectorReduce("Add")], none[:, :0]).shape == (0, 0, 9, 1)
    with pytest.raises(ValueError, match=r"^BorderReader\('wrap'\): cannot extend the empty 4x0 image to 4x3"):
        _run_chain([fkl.BorderReader("wrap"), fkl.Crop(-2, -1, 4, 3)], np.zeros((1, 0, 4, 3), np.uint8))
