"""Reference semantics of the geometry ops (SPEC §3): BorderReader, Crop, Resize, Warping,
Deinterlace.  They work on the whole (B, H, W, C) source, the way they fold into the read.

Resize (linear) follows OpenCV INTER_LINEAR: half-pixel centres, sx = (dx + 0.5) * src/dst - 0.5
(src/dst taken as 1 / (dst/src) in double, and sx kept in double), taps clamped to the image, the
weights rounded to float32, the taps converted to float32 and blended in float32 in OpenCV's order
(along x, then along y; each u (1 - w) + v w as fmaf(u, 1 - w, fl32(v w))).  A tap of weight
exactly 0 contributes nothing, so inf and NaN reach only the pixels they weigh on (SPEC's edge
inputs).  cv2.resize with Intel IPP (the default of pip builds) keeps sx exact as well and agrees
to a few float32 ulps; OpenCV's own C++ path (IPP off, and IPP's fallback for a one-row or
one-column source) rounds sx to float32 first, which moves results past SPEC's tolerance at sizes
in the thousands; that rounding is cv2's imprecision, not part of the semantics.

Warping is the exact bilinear blend of SPEC §3 (turn 3), which cv2.warpAffine / cv2.warpPerspective
compute since OpenCV 5.1 (its 1-, 3- and 4-channel float warps are within a few 1e-6 of it; OpenCV <= 5.0
quantised the fractional coordinate to 1/32 or rounded the coordinates to float32). The destination ->
source map is inverted in double (unless inverse=True) and every source coordinate is computed in
float64, each operation rounded on its own, as the kernels do (they are compiled without FMA
contraction):

    row_x = y * M1 + M2                    (once per destination row)
    sx    = M0 * x + row_x                 (per pixel; the same for sy, and for the perspective w)
    sx    = sx * (1 / w)                   (perspective only: one division for both coordinates)

then ix = floor(sx), fx = sx - ix (no quantisation), and the bilinear blend of the four taps with the
weights (1 - fx)(1 - fy), fx (1 - fy), (1 - fx) fy, fx fy, taken as weighted sums u (1 - w) + v w in
float64 along x then along y, each tap outside the source reading the border (constant 0 by default)
and a tap of weight exactly 0 taking no part (cv2's u + w (v - u) makes NaN of every inf tap); unsigned
8- and 16-bit sources blend the same weights in float32 instead (finite, non-negative taps: within a few
float32 ulps of the float64 sum). cv2 5.1's 2-channel warps still zero the pixels whose taps are partly
outside the source: a cv2 artefact, not the semantics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, TypeAlias

import numpy as np
from numpy.typing import NDArray

from fklir.interpreters.semantics import (
    Image,
    Values,
    dtype_info,
    per_channel_values,
    round_to_dtype,
    value_in_dtype,
)

__all__ = [
    "ASPECT_RATIOS",
    "BORDER_MODES",
    "DEINTERLACE_MODES",
    "INTERPOLATIONS",
    "Border",
    "Rect",
    "border_pad_index",
    "border_pad_indices",
    "border_read",
    "crop",
    "crop_resize",
    "crop_with_border",
    "deinterlace",
    "flip",
    "invert_warp_matrix",
    "resize",
    "resize_content_box",
    "rotate",
    "warp",
    "warp_source_coords",
]

Rect: TypeAlias = tuple[int, int, int, int]  # x, y, w, h
Border: TypeAlias = tuple[str, Values]  # (mode, value); value only matters for "constant"

BORDER_MODES: Final = ("constant", "replicate", "reflect", "reflect101", "wrap")
INTERPOLATIONS: Final = ("linear", "nearest")
ASPECT_RATIOS: Final = ("ignore", "preserve", "preserve_left", "preserve_even")
DEINTERLACE_MODES: Final = ("blend", "linear")

# Coordinates beyond this are far outside any image; clamping keeps floor() inside int64.
_COORD_LIMIT: Final = float(2**30)


# --------------------------------------------------------------------------------------------
# BorderReader
# --------------------------------------------------------------------------------------------


def border_pad_indices(i: np.ndarray, n: int, mode: str) -> NDArray[np.int64]:
    """Source index for each (any) integer coordinate ``i`` along an axis of length ``n``.

    constant: -1 outside (the caller substitutes the value); replicate: clamp;
    reflect ("fedcba|abcdef"): period 2n; reflect101 ("fedcb|abcdef"): period 2n - 2;
    wrap: modulo n.  These equal numpy.pad 'constant'/'edge'/'symmetric'/'reflect'/'wrap' and
    cv2.copyMakeBorder for any overshoot; a 1-wide axis reads its only pixel in every mode but
    constant.  An empty axis (n = 0) is all outside: only constant defines it there (numpy.pad
    refuses the other modes too).
    """
    if mode not in BORDER_MODES:
        raise ValueError(f"BorderReader: unknown mode {mode!r}; expected one of {BORDER_MODES}")
    if n < 0:
        raise ValueError(f"BorderReader: axis length {n} is negative")
    idx = np.asarray(i, dtype=np.int64)
    if mode == "constant":
        return np.where((idx >= 0) & (idx < n), idx, -1)
    if n == 0:
        if idx.size:
            raise ValueError(f"BorderReader({mode!r}): an empty axis has no pixel to repeat; only constant can")
        return idx
    if mode == "replicate":
        return np.clip(idx, 0, n - 1)
    if mode == "wrap":
        return np.mod(idx, n)
    if mode == "reflect":
        folded = np.mod(idx, 2 * n)
        return np.where(folded >= n, 2 * n - 1 - folded, folded)
    # reflect101
    if n == 1:
        return np.zeros_like(idx)
    period = 2 * n - 2
    folded = np.mod(idx, period)
    return np.where(folded >= n, period - folded, folded)


def border_pad_index(i: int, n: int, mode: str) -> int:
    """Scalar :func:`border_pad_indices`: the source index of coordinate ``i`` (-1 = constant)."""
    return int(border_pad_indices(np.array(i), n, mode))


def _fill_pixel(img: Image, value: Values | None, op: str) -> np.ndarray:
    """The constant border value as one pixel in the image's storage type."""
    per_channel = per_channel_values(0.0 if value is None else value, img.channels, op)
    if img.dtype == "bool":
        return np.array([bool(v) for v in per_channel], dtype=np.bool_)
    converted = [value_in_dtype(v, img.dtype, op) for v in per_channel]
    return np.array(converted, dtype=img.data.dtype)


def border_read(img: Image, mode: str, value: Values | None, ys: np.ndarray, xs: np.ndarray) -> np.ndarray:
    """Pixels at ANY integer coordinates: shape (B, *broadcast(ys, xs).shape, C), image type."""
    ys_b, xs_b = np.broadcast_arrays(np.asarray(ys, dtype=np.int64), np.asarray(xs, dtype=np.int64))
    if img.height == 0 or img.width == 0:
        return _border_of_nothing(img, mode, value, ys_b.shape)
    rows = border_pad_indices(ys_b, img.height, mode)
    cols = border_pad_indices(xs_b, img.width, mode)
    gathered = img.data[:, np.maximum(rows, 0), np.maximum(cols, 0)]
    if mode != "constant":
        return gathered
    inside = (rows >= 0) & (cols >= 0)
    fill = _fill_pixel(img, value, "BorderReader")
    return np.where(inside[None, ..., None], gathered, fill)


def _border_of_nothing(img: Image, mode: str, value: Values | None, shape: tuple[int, ...]) -> np.ndarray:
    """border_read of an image without pixels: all the constant, without reading the image; the
    other modes have no pixel to repeat (numpy.pad refuses too) unless no pixel is asked for."""
    out_shape = (img.batch, *shape, img.channels)
    if mode != "constant" and 0 not in out_shape:
        size = "x".join(str(n) for n in reversed(shape))
        raise ValueError(
            f"BorderReader({mode!r}): cannot extend the empty {img.width}x{img.height} image to {size} "
            "(there is no pixel to repeat); only a constant border can"
        )
    fill = _fill_pixel(img, value if mode == "constant" else None, "BorderReader")
    return np.broadcast_to(fill, out_shape).copy()


def _check_source_has_pixels(img: Image, op: str, w: int, h: int) -> None:
    """Resize, and Warping without a BorderReader, sample the source: an empty one has nothing to
    sample (cv2.resize refuses too), unless the output has no plane to make."""
    if img.batch and (img.height == 0 or img.width == 0):
        raise ValueError(f"{op}: cannot make a {w}x{h} image from the empty {img.width}x{img.height} image")


# --------------------------------------------------------------------------------------------
# Crop
# --------------------------------------------------------------------------------------------


def _checked_rect(rect: Sequence[int], op: str) -> Rect:
    if len(rect) != 4:
        raise ValueError(f"{op}: a rect is (x, y, w, h), got {tuple(rect)}")
    x, y, w, h = (int(v) for v in rect)
    if (x, y, w, h) != tuple(rect):
        raise ValueError(f"{op}: rect {tuple(rect)} must hold integers")
    if w < 1 or h < 1:
        raise ValueError(f"{op}: rect {(x, y, w, h)} has an empty size")
    return (x, y, w, h)


def _planes_of_rect(img: Image, rects: Sequence[Sequence[int]], op: str) -> list[tuple[slice, Rect]]:
    """Pair each rect with the planes it cuts: one rect cuts every plane (none of a batch of no
    images), the rects of a single-plane source all cut plane 0, and rect i cuts plane i."""
    checked = [_checked_rect(r, op) for r in rects]
    if not checked:
        raise ValueError(f"{op}: no rects")
    if len(checked) == 1:
        return [(slice(0, img.batch), checked[0])]
    if img.batch == 1:
        return [(slice(0, 1), r) for r in checked]
    if len(checked) != img.batch:
        need = f"1 or {img.batch}" if img.batch else "1"
        raise ValueError(f"{op}: {len(checked)} rects for a source of {img.batch} planes (need {need})")
    return [(slice(z, z + 1), r) for z, r in enumerate(checked)]


def _stack_planes(pieces: Sequence[np.ndarray], dtype: str, op: str) -> Image:
    shapes = {p.shape[1:] for p in pieces}
    if len(shapes) != 1:
        sizes = sorted({(s[1], s[0]) for s in shapes})
        raise ValueError(f"{op}: planes of different sizes (w, h) {sizes}; follow with Resize (crop_resize)")
    return Image(np.ascontiguousarray(np.concatenate(pieces)), dtype)


def _cut(img: Image, planes: slice, rect: Rect, border: Border | None, op: str) -> np.ndarray:
    """One rect of the given planes as (b, h, w, C); outside pixels need a border."""
    x, y, w, h = rect
    if border is None:
        if x < 0 or y < 0 or x + w > img.width or y + h > img.height:
            raise ValueError(f"{op}: rect {rect} leaves the {img.width}x{img.height} image; add a BorderReader")
        return img.data[planes, y : y + h, x : x + w]
    mode, value = border
    ys = np.arange(y, y + h)[:, None]
    xs = np.arange(x, x + w)[None, :]
    return border_read(Image(img.data[planes], img.dtype), mode, value, ys, xs)


def crop(img: Image, rects: Sequence[Sequence[int]]) -> Image:
    """Crop([rects]): one output plane per rect (all rects of one size); rects must fit."""
    pieces = [_cut(img, planes, rect, None, "Crop") for planes, rect in _planes_of_rect(img, rects, "Crop")]
    return _stack_planes(pieces, img.dtype, "Crop")


def crop_with_border(img: Image, rects: Sequence[Sequence[int]], mode: str, value: Values | None = None) -> Image:
    """BorderReader(mode, value) + Crop([rects]): rects may leave the image."""
    pairs = _planes_of_rect(img, rects, "Crop")
    pieces = [_cut(img, planes, rect, (mode, value if value is not None else 0.0), "Crop") for planes, rect in pairs]
    return _stack_planes(pieces, img.dtype, "Crop")


# --------------------------------------------------------------------------------------------
# Resize
# --------------------------------------------------------------------------------------------


def _round_half_away(v: float) -> int:
    return int(np.floor(abs(v) + 0.5)) * (1 if v >= 0 else -1)


def resize_content_box(src_w: int, src_h: int, dst_w: int, dst_h: int, aspect_ratio: str) -> Rect:
    """Where the scaled source lands in a preserve-mode output: (x0, y0, content_w, content_h).

    content = source scaled by min(dst_w/src_w, dst_h/src_h), sizes rounded half away from zero
    (then down to even for preserve_even); centred with integer division (odd leftover to the
    right/bottom), or at x = 0 for preserve_left.  "ignore" fills the whole output.
    """
    if aspect_ratio not in ASPECT_RATIOS:
        raise ValueError(f"Resize: unknown aspect_ratio {aspect_ratio!r}; expected one of {ASPECT_RATIOS}")
    if aspect_ratio == "ignore":
        return (0, 0, dst_w, dst_h)
    scale = min(dst_w / src_w, dst_h / src_h)
    content_w = min(_round_half_away(src_w * scale), dst_w)
    content_h = min(_round_half_away(src_h * scale), dst_h)
    if aspect_ratio == "preserve_even":
        content_w -= content_w % 2
        content_h -= content_h % 2
    x0 = 0 if aspect_ratio == "preserve_left" else (dst_w - content_w) // 2
    y0 = (dst_h - content_h) // 2
    return (x0, y0, content_w, content_h)


def _linear_taps(src_n: int, dst_n: int) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """INTER_LINEAR along one axis: the two clamped tap indices and the float32 weight of the second,
    in [0, 1) (a weight that rounds to 1 moves the taps on), as fkl::linear_tap."""
    scale = 1.0 / (dst_n / src_n)
    centres = (np.arange(dst_n, dtype=np.float64) + 0.5) * scale - 0.5
    first = np.floor(centres)
    frac = _to_float32(centres - first)
    first_i = first.astype(np.int64) + (frac == 1.0)
    frac = np.where(frac == 1.0, 0.0, frac)
    clamped = (first_i < 0) | (first_i >= src_n - 1)
    frac = np.where(clamped, 0.0, frac)
    return np.clip(first_i, 0, src_n - 1), np.clip(first_i + 1, 0, src_n - 1), frac


def _nearest_taps(src_n: int, dst_n: int) -> NDArray[np.int64]:
    # cv2 INTER_NEAREST: floor(d * (1 / (dst/src))) in double; plain d*src/dst differs (300->224).
    inverse_scale = 1.0 / (dst_n / src_n)
    taps = np.floor(np.arange(dst_n, dtype=np.float64) * inverse_scale).astype(np.int64)
    return np.minimum(taps, src_n - 1)


def _resize_data(data: np.ndarray, w: int, h: int, interp: str) -> np.ndarray:
    """Resize (B, H, W, C) data to (B, h, w, C): float32 values in a float64 array for linear, the
    source type for nearest."""
    src_h, src_w = data.shape[1], data.shape[2]
    if interp == "nearest":
        return _gather(data, _nearest_taps(src_h, h), _nearest_taps(src_w, w))
    # As fkl::linear_step: u (1 - w) + v w = fmaf(u, 1 - w, fl32(v w)), one rounding of the exact
    # float64 product of two float32 values plus a float32 (_sum_to_float32); a weight of 0 gives u.
    y0, y1, fy = _linear_taps(src_h, h)
    x0, x1, fx = _linear_taps(src_w, w)
    wx = fx[None, None, :, None]
    wy = fy[None, :, None, None]

    def step(u: NDArray[np.float64], v: NDArray[np.float64], weight: NDArray[np.float64]) -> NDArray[np.float64]:
        with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 at weight 0 is not taken; inf stays inf
            blended = _sum_to_float32(u * _to_float32(1.0 - weight), _to_float32(v * weight))
        return np.where(weight == 0.0, u, blended)

    def tap(rows: NDArray[np.int64], cols: NDArray[np.int64]) -> NDArray[np.float64]:
        return _gather(data, rows, cols).astype(np.float32).astype(np.float64)

    upper = step(tap(y0, x0), tap(y0, x1), wx)
    lower = step(tap(y1, x0), tap(y1, x1), wx)
    return step(upper, lower, wy)


def _gather(data: np.ndarray, rows: NDArray[np.int64], cols: NDArray[np.int64]) -> np.ndarray:
    """data[:, rows[i], cols[j]] as (B, len(rows), len(cols), C) in one gather: rows first, then
    columns, would hold a (B, len(rows), W, C) intermediate (GiBs for a 1 x 100000 source)."""
    return data[:, rows[:, None], cols[None, :]]


def resize(
    img: Image,
    w: int,
    h: int,
    interp: str = "linear",
    aspect_ratio: str = "ignore",
    background: Values | None = None,
) -> Image:
    """Resize(w, h, interp, aspect_ratio, background).  Linear -> float32; nearest keeps the type."""
    if w < 1 or h < 1:
        raise ValueError(f"Resize: output size {w}x{h} must be at least 1x1")
    if interp not in INTERPOLATIONS:
        raise ValueError(f"Resize: unknown interp {interp!r}; expected one of {INTERPOLATIONS}")
    if interp == "linear" and img.dtype == "bool":
        raise ValueError("Resize: linear interpolation of a bool chain")
    out_dtype = "float32" if interp == "linear" else img.dtype
    _check_source_has_pixels(img, "Resize", w, h)
    if img.height == 0 or img.width == 0:  # and no plane: nothing to sample, nothing to make
        return Image(np.empty((0, h, w, img.channels), dtype_info(out_dtype, "Resize").storage), out_dtype)
    x0, y0, content_w, content_h = resize_content_box(img.width, img.height, w, h, aspect_ratio)
    if aspect_ratio == "ignore":
        resized = _resize_data(img.data, w, h, interp)
        return Image(round_to_dtype(resized, "float32") if interp == "linear" else resized, out_dtype)
    if background is None:
        raise ValueError(f"Resize: aspect_ratio={aspect_ratio!r} needs a background value")
    fill_template = Image(np.zeros((1, 1, 1, img.channels), dtype=dtype_info(out_dtype, "Resize").storage), out_dtype)
    fill = _fill_pixel(fill_template, background, "Resize")
    canvas = np.empty((img.batch, h, w, img.channels), dtype=fill.dtype)
    canvas[...] = fill
    if content_w > 0 and content_h > 0:
        content = _resize_data(img.data, content_w, content_h, interp)
        if interp == "linear":
            content = round_to_dtype(content, "float32")
        canvas[:, y0 : y0 + content_h, x0 : x0 + content_w] = content
    return Image(canvas, out_dtype)


def crop_resize(
    img: Image,
    rects: Sequence[Sequence[int]],
    w: int,
    h: int,
    interp: str = "linear",
    aspect_ratio: str = "ignore",
    background: Values | None = None,
    border: Border | None = None,
) -> Image:
    """Crop([rects]) (optionally through a BorderReader) then Resize: rects may differ in size."""
    pieces = []
    for planes, rect in _planes_of_rect(img, rects, "Crop"):
        piece = _cut(img, planes, rect, border, "Crop")
        pieces.append(resize(Image(piece, img.dtype), w, h, interp, aspect_ratio, background).data)
    out_dtype = "float32" if interp == "linear" else img.dtype
    return _stack_planes(pieces, out_dtype, "Resize")


# --------------------------------------------------------------------------------------------
# Warping
# --------------------------------------------------------------------------------------------


def invert_warp_matrix(matrix: np.ndarray) -> NDArray[np.float64]:
    """Destination -> source map of a source -> destination 2x3 or 3x3 matrix, in double."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape == (2, 3):
        det = m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0]
        if det == 0 or not np.isfinite(det):
            raise ValueError(f"Warping: affine matrix {m.tolist()} is singular")
        inv_det = 1.0 / det
        a11, a12 = m[1, 1] * inv_det, -m[0, 1] * inv_det
        a21, a22 = -m[1, 0] * inv_det, m[0, 0] * inv_det
        b1 = -a11 * m[0, 2] - a12 * m[1, 2]
        b2 = -a21 * m[0, 2] - a22 * m[1, 2]
        return np.array([[a11, a12, b1], [a21, a22, b2]])
    if m.shape == (3, 3):
        # Adjugate over determinant (what cv::invert does for a 3x3 in double).
        cof = np.array(
            [
                [
                    m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1],
                    m[0, 2] * m[2, 1] - m[0, 1] * m[2, 2],
                    m[0, 1] * m[1, 2] - m[0, 2] * m[1, 1],
                ],
                [
                    m[1, 2] * m[2, 0] - m[1, 0] * m[2, 2],
                    m[0, 0] * m[2, 2] - m[0, 2] * m[2, 0],
                    m[0, 2] * m[1, 0] - m[0, 0] * m[1, 2],
                ],
                [
                    m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0],
                    m[0, 1] * m[2, 0] - m[0, 0] * m[2, 1],
                    m[0, 0] * m[1, 1] - m[0, 1] * m[1, 0],
                ],
            ]
        )
        det = m[0, 0] * cof[0, 0] + m[0, 1] * cof[1, 0] + m[0, 2] * cof[2, 0]
        if det == 0 or not np.isfinite(det):
            raise ValueError(f"Warping: perspective matrix {m.tolist()} is singular")
        return cof * (1.0 / det)
    raise ValueError(f"Warping: matrix must be 2x3 (affine) or 3x3 (perspective), got shape {m.shape}")


def _sum_to_float32(a: NDArray[np.float64], b: NDArray[np.float64]) -> NDArray[np.float64]:
    """fl32(a + b) for exact float64 operands, with a single rounding.

    The float64 sum is made round-to-odd (TwoSum gives its exact error; an inexact even result
    moves one ulp toward the true value), and round-to-odd with >= 2 extra bits followed by
    round-to-nearest equals one round-to-nearest.  So this is also an exact fmaf(m, x, c) when
    a = m * x is an exact product.
    """
    total = a + b
    b_virtual = total - a
    error = (a - (total - b_virtual)) + (b - b_virtual)
    even = (total.view(np.int64) & 1) == 0
    toward = np.where(error > 0, np.inf, -np.inf)
    odd = np.where((error != 0) & even, np.nextafter(total, toward), total)
    return _to_float32(odd)


def _to_float32(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """Round to float32, kept in a float64 array."""
    return a.astype(np.float32).astype(np.float64)


def warp_source_coords(
    matrix: np.ndarray, dst_w: int, dst_h: int, inverse: bool = False
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Source coordinates (sx, sy) of every destination pixel, (dst_h, dst_w) float64 values, with the
    kernels' order of float64 operations (see the module docstring)."""
    m = np.asarray(matrix, dtype=np.float64)
    dst_to_src = m if inverse else invert_warp_matrix(m)
    if dst_to_src.shape not in ((2, 3), (3, 3)):
        raise ValueError(f"Warping: matrix must be 2x3 or 3x3, got shape {dst_to_src.shape}")
    ys = np.arange(dst_h, dtype=np.float64)[:, None]
    xs = np.arange(dst_w, dtype=np.float64)[None, :]

    def along_row(r: int) -> NDArray[np.float64]:
        row_term = ys * dst_to_src[r, 1] + dst_to_src[r, 2]
        return xs * dst_to_src[r, 0] + row_term

    sx, sy = along_row(0), along_row(1)
    if dst_to_src.shape == (2, 3):
        return sx, sy
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_w = 1.0 / along_row(2)
        return sx * inv_w, sy * inv_w


def _warp_step(u: NDArray[np.float64], v: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    """fkl::Warping::step: u (1 - w) + v w in float64, a tap of weight exactly 0 taking no part (w is
    1 where a tiny negative coordinate lost its fraction in float64)."""
    with np.errstate(invalid="ignore"):  # inf * 0 at a weight of 0 or 1: that NaN is not taken
        blended = u * (1.0 - w) + v * w
    return np.where(w == 0.0, u, np.where(w == 1.0, v, blended))


# Unsigned 8- and 16-bit sources blend in float32 (fkl::Warping::blend_narrow): non-negative taps and
# weights, so the float32 sum stays within a few ulps of the float64 formula.
NARROW_WARP_TYPES: Final = ("uint8", "uint16")


def _warp_narrow(
    p00: NDArray[np.float64],
    p01: NDArray[np.float64],
    p10: NDArray[np.float64],
    p11: NDArray[np.float64],
    fx: NDArray[np.float64],
    fy: NDArray[np.float64],
) -> NDArray[np.float64]:
    """fkl::Warping::blend_narrow: SPEC's weights as float32 products of the float32-rounded fx, fy, the
    weighted sum in float32, left to right (numpy rounds each float32 operation, as the kernels do)."""
    ax, ay = fx.astype(np.float32), fy.astype(np.float32)
    bx, by = np.float32(1) - ax, np.float32(1) - ay
    a, b, c, d = (p.astype(np.float32) for p in (p00, p01, p10, p11))
    return (((a * (bx * by) + b * (ax * by)) + c * (bx * ay)) + d * (ax * ay)).astype(np.float64)


def warp(
    img: Image,
    matrix: np.ndarray,
    dst_w: int,
    dst_h: int,
    inverse: bool = False,
    border: Border | None = None,
) -> Image:
    """Warping(M, dst_w, dst_h): bilinear cv2.warpAffine/warpPerspective; output float32.

    Each of the four taps that falls outside the source reads the border (the BorderReader's
    mode and value, else constant 0).  A non-finite source coordinate (perspective w = 0) gives
    the constant border value in the chain type (0 for other modes).
    """
    if dst_w < 1 or dst_h < 1:
        raise ValueError(f"Warping: output size {dst_w}x{dst_h} must be at least 1x1")
    if img.dtype == "bool":
        raise ValueError("Warping: bilinear interpolation of a bool chain")
    if border is None:
        _check_source_has_pixels(img, "Warping", dst_w, dst_h)
    mode, value = border if border is not None else ("constant", 0.0)
    sx, sy = warp_source_coords(matrix, dst_w, dst_h, inverse)
    finite = np.isfinite(sx) & np.isfinite(sy)
    sx = np.clip(np.where(finite, sx, 0.0), -_COORD_LIMIT, _COORD_LIMIT)
    sy = np.clip(np.where(finite, sy, 0.0), -_COORD_LIMIT, _COORD_LIMIT)
    ix, iy = np.floor(sx), np.floor(sy)
    fx = (sx - ix)[None, ..., None]
    fy = (sy - iy)[None, ..., None]
    ix_i, iy_i = ix.astype(np.int64), iy.astype(np.int64)

    def tap(dy: int, dx: int) -> NDArray[np.float64]:
        return border_read(img, mode, value, iy_i + dy, ix_i + dx).astype(np.float64)

    p00, p01, p10, p11 = tap(0, 0), tap(0, 1), tap(1, 0), tap(1, 1)
    if img.dtype in NARROW_WARP_TYPES:
        blended = _warp_narrow(p00, p01, p10, p11, fx, fy)
    else:
        blended = _warp_step(_warp_step(p00, p01, fx), _warp_step(p10, p11, fx), fy)
    if not bool(finite.all()):
        # the constant as it travels in the parameter block: in the chain type
        fill_value = value if mode == "constant" else 0.0
        fill = _fill_pixel(img, fill_value, "Warping").astype(np.float64)
        blended = np.where(finite[None, ..., None], blended, fill)
    return Image(round_to_dtype(blended, "float32"), "float32")


# --------------------------------------------------------------------------------------------
# Deinterlace
# --------------------------------------------------------------------------------------------


def deinterlace(img: Image, mode: str) -> Image:
    """Deinterlace("blend" | "linear"), output float32.

    blend: row y > 0 -> (row y + row y-1) / 2, row 0 copied.
    linear: odd rows -> (row above + row below) / 2 (the last odd row, with no row below, copies
    the row above); even rows copied.
    """
    if mode not in DEINTERLACE_MODES:
        raise ValueError(f"Deinterlace: unknown mode {mode!r}; expected one of {DEINTERLACE_MODES}")
    if img.dtype == "bool":
        raise ValueError("Deinterlace: averaging rows of a bool chain")
    rows = img.data.astype(np.float64)
    out = rows.copy()
    if mode == "blend":
        out[:, 1:] = (rows[:, 1:] + rows[:, :-1]) / 2.0
    else:
        height = img.height
        for y in range(1, height, 2):
            out[:, y] = (rows[:, y - 1] + rows[:, y + 1]) / 2.0 if y + 1 < height else rows[:, y - 1]
    return Image(round_to_dtype(out, "float32"), "float32")


# --------------------------------------------------------------------------------------------
# Flip and Rotate
# --------------------------------------------------------------------------------------------

FLIP_AXES: Final = {"vertical": (1,), "horizontal": (2,), "both": (1, 2)}  # the (B, H, W, C) axes reversed
ROTATION_TURNS: Final = {"clockwise_90": -1, "turn_180": 2, "counterclockwise_90": 1}  # numpy.rot90's k


def flip(img: Image, mode: str) -> Image:
    """cv2.flip: "vertical" reverses the rows (flipCode 0), "horizontal" the columns (1), "both" both (-1)."""
    if mode not in FLIP_AXES:
        raise ValueError(f"Flip: unknown mode {mode!r}; expected one of {tuple(FLIP_AXES)}")
    return Image(np.ascontiguousarray(np.flip(img.data, axis=FLIP_AXES[mode])), img.dtype)


def rotate(img: Image, rotation: str) -> Image:
    """cv2.rotate: a quarter turn clockwise (cv2.ROTATE_90_CLOCKWISE) or counterclockwise, or a half turn."""
    if rotation not in ROTATION_TURNS:
        raise ValueError(f"Rotate: unknown rotation {rotation!r}; expected one of {tuple(ROTATION_TURNS)}")
    return Image(np.ascontiguousarray(np.rot90(img.data, k=ROTATION_TURNS[rotation], axes=(1, 2))), img.dtype)
