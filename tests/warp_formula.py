"""The exact bilinear warp of SPEC §3 (turn 3), written from the SPEC alone, as the tests' reference:
float64 source coordinates from the inverted matrix, weights (1 - fx)(1 - fy), fx (1 - fy), (1 - fx) fy,
fx fy without quantisation, each tap outside the source read through numpy.pad's border modes.

It shares no code with fklir (its own inversion, numpy.pad for the borders) so that a wrong step in the
interpreter or a kernel cannot hide in the reference too."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from tests.borders import NUMPY_PAD

# How far cv2 5.1 (the second reference) may be from an exact float32 warp of 0..255 data, per border mode:
# it blends exactly with constant and replicate borders (within 3e-5), but with reflect, reflect101 and
# wrap it still rounds its source coordinates to float32, which moves pixels whose taps lie far outside
# by up to ~3e-2. Its 2-channel warps zero the pixels whose taps are partly outside: not compared.
CV2_BOUND = {"constant": 1e-4, "replicate": 1e-4, "reflect": 5e-2, "reflect101": 5e-2, "wrap": 5e-2}


def source_coords(matrix: np.ndarray, w: int, h: int, inverse: bool) -> tuple[NDArray[np.float64], ...]:
    """(sx, sy) of every destination pixel, (h, w) each, in float64."""
    m = np.asarray(matrix, np.float64)
    full = np.vstack([m, [0.0, 0.0, 1.0]]) if m.shape == (2, 3) else m
    dst_to_src = full if inverse else np.linalg.inv(full)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    homogeneous = [dst_to_src[r, 0] * xs + dst_to_src[r, 1] * ys + dst_to_src[r, 2] for r in range(3)]
    return homogeneous[0] / homogeneous[2], homogeneous[1] / homogeneous[2]


def warp_formula(
    src: np.ndarray,
    matrix: np.ndarray,
    w: int,
    h: int,
    inverse: bool = False,
    mode: str = "constant",
    value: float = 0.0,
) -> NDArray[np.float64]:
    """The warp of an (H, W) or (H, W, C) image to (h, w[, C]) in float64; the source is padded (numpy.pad)
    as far as the farthest tap reaches."""
    img = src.reshape(src.shape[0], src.shape[1], -1).astype(np.float64)
    sx, sy = source_coords(matrix, w, h, inverse)
    reach_of = np.concatenate([np.abs(sx).ravel(), np.abs(sy).ravel(), [0.0]])
    pad = int(min(reach_of.max(), 4096.0)) + 2
    widths = ((pad, pad), (pad, pad), (0, 0))
    if mode == "constant":
        padded = np.pad(img, widths, mode="constant", constant_values=value)
    else:
        padded = np.pad(img, widths, mode=NUMPY_PAD[mode])
    ix, iy = np.floor(sx), np.floor(sy)
    fx, fy = (sx - ix)[..., None], (sy - iy)[..., None]
    col, row = ix.astype(np.int64) + pad, iy.astype(np.int64) + pad
    reach = (col >= 0) & (row >= 0) & (col + 1 < padded.shape[1]) & (row + 1 < padded.shape[0])
    if mode != "constant":
        assert bool(reach.all()), "a tap lies more than 4096 pixels outside: choose a matrix that stays nearer"
    col, row = np.clip(col, 0, padded.shape[1] - 2), np.clip(row, 0, padded.shape[0] - 2)
    out = (
        padded[row, col] * (1 - fx) * (1 - fy)
        + padded[row, col + 1] * fx * (1 - fy)
        + padded[row + 1, col] * (1 - fx) * fy
        + padded[row + 1, col + 1] * fx * fy
    )
    out = np.where(reach[..., None], out, value)
    return out.reshape((h, w, *src.shape[2:]))


def assert_float_warp_exact(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """SPEC's bound for a float32 warp: within 1e-4 * max(1, |v|) of the float64 formula on every pixel."""
    got = np.asarray(got, np.float64)
    assert got.shape == expected.shape, (what, got.shape, expected.shape)
    excess = np.abs(got - expected) / np.maximum(1.0, np.abs(expected))
    worst = int(np.argmax(excess))
    where = np.unravel_index(worst, excess.shape)
    assert float(excess.flat[worst]) <= 1e-4, (what, where, got.flat[worst], expected.flat[worst])
