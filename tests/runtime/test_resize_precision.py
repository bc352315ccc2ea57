"""Linear resize precision and zero-weight taps (SPEC §3 Resize, Warping and "Edge inputs").

Every size pair up to 8192: linear resize keeps the source coordinate exact enough that float32
results stay within SPEC's 1e-3 + 1e-4·|v| of cv2.resize (its default Intel IPP path, which keeps
the coordinate exact too) and of a float64 formula written from SPEC. Zero-weight taps: a tap of
weight exactly 0 takes no part, so inf and NaN reach only the pixels they weigh on, in linear
resize and in both warps. Each check runs on the reference interpreter, the CPU target and the
GPU target (gpu marker, skipped without a device).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import compilers
from fklir.backend.build import INCLUDE_DIR
from fklir.interpreters import semantics_geometry as G
from fklir.interpreters.semantics import Image

cv2 = pytest.importorskip("cv2")

RNG_SEED = 8_192_001
MAX_SIZE = 8192

TARGETS = [
    "reference",
    "cpu",
    pytest.param(
        "gpu",
        marks=[pytest.mark.gpu, pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")],
    ),
]


@pytest.fixture
def opencv_ipp(request: pytest.FixtureRequest) -> Iterator[None]:
    """cv2 with IPP on (`request.param` True) or off, restored afterwards."""
    previous = bool(cv2.ipp.useIPP())
    cv2.ipp.setUseIPP(request.param)
    yield
    cv2.ipp.setUseIPP(previous)


def run(target: str, x: np.ndarray, op: Any) -> np.ndarray:
    """One geometry op on a (H, W) or (H, W, C) float32 image: the reference interpreter's
    semantics function, or a compose() on the CPU or GPU target."""
    if target == "reference":
        img = Image(x.reshape(1, x.shape[0], x.shape[1], -1), "float32")
        if isinstance(op, fkl.Resize):
            out = G.resize(img, op.size[0], op.size[1], "linear")
        else:
            out = G.warp(img, np.array(op.matrix).reshape(-1, 3), op.size[0], op.size[1], op.inverse)
        return out.data[0].reshape((op.size[1], op.size[0], *x.shape[2:])).astype(np.float32)
    pipe = fkl.compose(fkl.TensorRead(), op, fkl.TensorWrite(), target=target)
    if target == "cpu":
        return pipe(x)
    from fklir.runtime.device_buffer import DeviceBuffer

    return pipe(DeviceBuffer.from_host(x)).copy_to_host()


# --------------------------------------------------------------------------------------------
# Precision: every size pair up to 8192
# --------------------------------------------------------------------------------------------


def exact_taps(src: int, dst: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SPEC's INTER_LINEAR along one axis in float64: sx = (dx + 0.5)·src/dst − 0.5, taps clamped;
    the weight of the second tap."""
    sx = (np.arange(dst, dtype=np.float64) + 0.5) * src / dst - 0.5
    first = np.floor(sx).astype(np.int64)
    weight = sx - first
    clamped = (first < 0) | (first >= src - 1)
    return np.clip(first, 0, src - 1), np.clip(first + 1, 0, src - 1), np.where(clamped, 0.0, weight)


def exact_resize(x: np.ndarray, w: int, h: int) -> np.ndarray:
    """The float64 bilinear resize of an (H, W, C) image that SPEC's formula defines."""
    x0, x1, wx = exact_taps(x.shape[1], w)
    y0, y1, wy = exact_taps(x.shape[0], h)
    v = x.astype(np.float64)
    rows = v[:, x0] * (1 - wx)[None, :, None] + v[:, x1] * wx[None, :, None]
    return rows[y0] * (1 - wy)[:, None, None] + rows[y1] * wy[:, None, None]


def size_pairs() -> list[tuple[int, int]]:
    """100 random (src, dst) pairs up to 8192, with the extremes among them."""
    rng = np.random.default_rng(RNG_SEED)
    fixed = [(MAX_SIZE, MAX_SIZE - 1), (MAX_SIZE - 1, MAX_SIZE), (MAX_SIZE, 1), (1, MAX_SIZE), (MAX_SIZE, 3)]
    drawn = [(int(s), int(d)) for s, d in rng.integers(1, MAX_SIZE + 1, (100 - len(fixed), 2))]
    return fixed + drawn


def within_spec(got: np.ndarray, expected: np.ndarray) -> tuple[bool, float]:
    err = np.abs(got.astype(np.float64) - expected)
    return bool((err <= 1e-3 + 1e-4 * np.abs(expected)).all()), float(err.max())


@pytest.mark.parametrize("opencv_ipp", [True], indirect=True)
@pytest.mark.usefixtures("opencv_ipp")
@pytest.mark.parametrize("target", TARGETS)
def test_linear_resize_within_spec_for_size_pairs_up_to_8192(target: str) -> None:
    """Each size pair runs along one axis of a thin image (2 or 3 pixels across, resized to 1 to 5),
    alternately along x and y: the error of a resize axis depends on its own sizes alone, and thin
    images keep 100 pairs up to 8192 fast. The thin side has at least 2 pixels because cv2 answers a
    one-row or one-column source with its float32-coordinate C++ path instead of IPP."""
    rng = np.random.default_rng(RNG_SEED + 1)
    compare_cv2 = bool(cv2.ipp.useIPP())  # a cv2 built without IPP is compared to the formula only
    failures = []
    for i, (src, dst) in enumerate(size_pairs()):
        across, across_dst = int(rng.integers(2, 4)), int(rng.integers(1, 6))
        channels = 1 if i % 2 else 3
        shape, size = ((across, src), (dst, across_dst)) if i % 4 < 2 else ((src, across), (across_dst, dst))
        x = (rng.random((*shape, channels)) * 255).astype(np.float32)
        x = x[..., 0] if channels == 1 else x  # an (H, W, 1) array reads as a batch of (W, 1) images
        got = run(target, x, fkl.Resize(*size)).reshape(size[1], size[0], channels)
        ok, err = within_spec(got, exact_resize(x.reshape(*shape, channels), *size))
        if not ok:
            failures.append(f"{shape} -> {size}: {err:.3g} from the float64 formula")
        if compare_cv2:
            expected = cv2.resize(x, size, interpolation=cv2.INTER_LINEAR).reshape(got.shape)
            ok, err = within_spec(got, expected)
            if not ok:
                failures.append(f"{shape} -> {size}: {err:.3g} from cv2.resize")
    assert not failures, failures


@pytest.mark.parametrize("target", ["cpu", TARGETS[2]])
def test_linear_resize_equals_the_reference_interpreter(target: str) -> None:
    """The kernels and the interpreter compute the same taps and the same float32 blend."""
    rng = np.random.default_rng(RNG_SEED + 2)
    for src, dst in size_pairs()[:12]:
        x = (rng.random((3, src, 3)) * 255).astype(np.float32)
        op = fkl.Resize(dst, 4)
        np.testing.assert_array_max_ulp(run(target, x, op), run("reference", x, op), maxulp=2)


def test_float32_coordinates_would_fail_the_pairs() -> None:
    """The precision test can tell: with the source coordinate rounded to float32 (OpenCV's own C++
    path, cv2 with IPP off) some of the 100 pairs leave SPEC's tolerance on 0..255 data."""
    rng = np.random.default_rng(RNG_SEED + 3)
    failing = 0
    for src, dst in size_pairs():
        x = rng.random(src) * 255
        sx = (np.arange(dst) + 0.5) * (1.0 / (dst / src)) - 0.5
        exact = np.interp(np.clip(sx, 0, src - 1), np.arange(src), x)
        rounded = np.interp(np.clip(sx.astype(np.float32), 0, src - 1), np.arange(src), x)
        failing += not within_spec(rounded, exact)[0]
    assert failing > 0


# --------------------------------------------------------------------------------------------
# Zero-weight taps: linear resize
# --------------------------------------------------------------------------------------------


def rule_resize(x: np.ndarray, w: int, h: int) -> np.ndarray:
    """SPEC's resize of a (H, W) image where a tap of weight exactly 0 takes no part (float64)."""

    def blend(u: np.ndarray, v: np.ndarray, weight: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            mixed = u * (1 - weight) + v * weight
        return np.where(weight == 0, u, mixed)

    x0, x1, wx = exact_taps(x.shape[1], w)
    y0, y1, wy = exact_taps(x.shape[0], h)
    v = x.astype(np.float64)
    rows = blend(v[:, x0], v[:, x1], wx[None, :])
    return blend(rows[y0], rows[y1], wy[:, None])


def assert_same_specials(got: np.ndarray, expected: np.ndarray) -> None:
    """NaN where expected is NaN, the same infinities, finite values within SPEC's tolerance."""
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    np.testing.assert_array_equal(got[np.isinf(got)], expected[np.isinf(expected)])
    finite = np.isfinite(expected)
    assert within_spec(got[finite], expected[finite].astype(np.float64))[0]


@pytest.mark.parametrize("target", TARGETS)
def test_issue_example_inf_rows_stay_inf(target: str) -> None:
    """[[1, 2], [inf, inf]] to 2x4: row 0 is the first source row alone, the rest only reach inf.
    (cv2 5.0's own path gives NaN in column 0 there: at the integer source coordinate of an
    unchanged width it still multiplies the second tap, inf, by 0.)"""
    x = np.array([[1, 2], [np.inf, np.inf]], dtype=np.float32)
    expected = np.array([[1, 2], [np.inf, np.inf], [np.inf, np.inf], [np.inf, np.inf]], dtype=np.float32)
    np.testing.assert_array_equal(run(target, x, fkl.Resize(2, 4)), expected)
    np.testing.assert_array_equal(rule_resize(x, 2, 4), expected)


def special_image(h: int, w: int) -> np.ndarray:
    """Random 0..255 values with inf in a corner and on an edge, -inf inside, NaN inside."""
    x = (np.random.default_rng(RNG_SEED + 4).random((h, w)) * 255).astype(np.float32)
    x[0, 0] = np.inf
    x[h - 1, 2] = np.inf
    x[2, w - 1] = -np.inf
    x[h // 2, w // 2] = np.nan
    return x


# Source and output sizes whose interior source coordinates are never integers: cv2's own path
# then weighs 0 only at clamped taps, which it skips, so it follows the rule too.
SPECIAL_RESIZES = [((7, 5), (14, 10)), ((7, 7), (4, 4)), ((11, 6), (32, 3))]


@pytest.mark.parametrize("opencv_ipp", [False], indirect=True)
@pytest.mark.usefixtures("opencv_ipp")
@pytest.mark.parametrize(("src", "dst"), SPECIAL_RESIZES)
@pytest.mark.parametrize("target", TARGETS)
def test_inf_and_nan_through_linear_resize_match_cv2(target: str, src: tuple[int, int], dst: tuple[int, int]) -> None:
    x = special_image(src[1], src[0])
    got = run(target, x, fkl.Resize(*dst))
    for s, d in zip(src, dst, strict=True):  # the sizes meet the comment above SPECIAL_RESIZES
        sx = (np.arange(d) + 0.5) * s / d - 0.5
        interior = (sx > 0) & (sx < s - 1)
        assert (sx[interior] != np.floor(sx[interior])).all()
    assert_same_specials(got, cv2.resize(x, dst, interpolation=cv2.INTER_LINEAR))
    assert_same_specials(got, rule_resize(x, *dst))
    assert np.isinf(got).any() and np.isnan(got).any() and np.isfinite(got).any()


@pytest.mark.parametrize("target", TARGETS)
def test_zero_weight_taps_at_integer_coordinates_take_no_part(target: str) -> None:
    """An unchanged width (every x coordinate an integer) and a 3x upscale in y (coordinates on
    thirds, and integers at 1 of 3 rows): inf and NaN stay in their columns and, at an integer row,
    in their rows; cv2 5.0's own path spreads NaN to the column left of them here."""
    x = special_image(6, 9)
    got = run(target, x, fkl.Resize(9, 18))
    expected = rule_resize(x, 9, 18)
    assert_same_specials(got, expected)
    assert np.isnan(got[:, x.shape[1] // 2]).any() and not np.isnan(got[:, x.shape[1] // 2 - 1]).any()


# --------------------------------------------------------------------------------------------
# Zero-weight taps: warps
# --------------------------------------------------------------------------------------------


def as_perspective(m: np.ndarray) -> np.ndarray:
    return np.vstack([m, [0.0, 0.0, 1.0]])


def warp_op(kind: str, m: np.ndarray, w: int, h: int) -> Any:
    return fkl.Warping(m if kind == "affine" else as_perspective(m), w, h)


@pytest.mark.parametrize("kind", ["affine", "perspective"])
@pytest.mark.parametrize("target", TARGETS)
def test_integer_shift_warp_copies_inf_and_nan(target: str, kind: str) -> None:
    """An integer shift puts every destination pixel on one source pixel, its three other taps of
    weight 0: the output is the shifted source, inf, -inf and NaN included, 0 where it left the
    source. (cv2 5.0 blends as p00 + fx·(p01 − p00), which makes NaN around every inf or NaN.)"""
    x = special_image(9, 13)
    m = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]])  # destination (x + 2, y - 1) from source (x, y)
    expected = np.zeros((9, 13), np.float32)
    expected[:8, 2:] = x[1:, :11]
    got = run(target, x, warp_op(kind, m, 13, 9))
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("kind", ["affine", "perspective"])
@pytest.mark.parametrize("target", TARGETS)
def test_half_pixel_warp_keeps_inf_where_only_it_is_infinite(target: str, kind: str) -> None:
    """A half-pixel shift along x: each pixel is the mean of two horizontal neighbours, the row below
    at weight 0; inf next to a finite pixel stays inf (weighted sum), inf next to -inf is NaN."""
    x = special_image(9, 13)
    x[6, 7:9] = [np.inf, -np.inf]
    m = np.array([[1.0, 0.0, -0.5], [0.0, 1.0, 0.0]])  # source x = destination x + 0.5
    right = np.concatenate([x[:, 1:], np.zeros((9, 1), np.float32)], axis=1).astype(np.float64)
    with np.errstate(invalid="ignore"):
        expected = 0.5 * x.astype(np.float64) + 0.5 * right
    got = run(target, x, warp_op(kind, m, 13, 9))
    assert_same_specials(got, expected)
    assert np.isposinf(got[0, 0]) and np.isneginf(got[2, 11]) and np.isnan(got[6, 7]) and np.isposinf(got[6, 6])


@pytest.mark.parametrize("kind", ["affine", "perspective"])
@pytest.mark.parametrize("target", TARGETS)
def test_nan_through_a_rotation_matches_cv2(target: str, kind: str) -> None:
    """A generic warp (fractional coordinates, so no tap weighs 0) of an image with NaN: NaN exactly
    where cv2 puts it, the other pixels within SPEC's 1e-3."""
    x = (np.random.default_rng(RNG_SEED + 5).random((23, 31)) * 255).astype(np.float32)
    x[[3, 11, 20], [5, 17, 29]] = np.nan
    m = np.array([[0.93, -0.21, 3.3], [0.24, 1.07, -2.6]])
    if kind == "perspective":
        m = np.array([[0.93, -0.21, 3.3], [0.24, 1.07, -2.6], [0.0011, -0.0007, 1.0]])
    op = fkl.Warping(m, 29, 25)
    warp = cv2.warpAffine if kind == "affine" else cv2.warpPerspective
    expected = warp(x, m, (29, 25), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    got = run(target, x, op)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    finite = ~np.isnan(expected)
    assert np.abs(got[finite].astype(np.float64) - expected[finite]).max() <= 1e-3
    assert np.isnan(got).sum() >= 6


# --------------------------------------------------------------------------------------------
# The CUDA source of the zero-weight blends compiles (no GPU needed)
# --------------------------------------------------------------------------------------------

SHEAR = np.array([[0.93, -0.21, 3.3], [0.24, 1.07, -2.6], [0.0011, -0.0007, 1.0]])
CUDA_CHAINS = {
    "f32_resize_block_taps": ((fkl.Resize(17, 9),), "float32", (5, 7, 3)),
    "f16_letterbox_pixel_taps": ((fkl.Resize(12, 8, aspect_ratio="preserve", background=0.0),), "float16", (9, 13)),
    "f32_affine": ((fkl.Warping(SHEAR[:2], 11, 7),), "float32", (9, 13, 4)),
    "f64_perspective": ((fkl.Warping(SHEAR, 11, 7),), "float64", (9, 13)),
}


@pytest.mark.skipif(not compilers.nvcc_available(), reason="nvcc not on PATH")
@pytest.mark.parametrize("name", sorted(CUDA_CHAINS))
def test_zero_weight_blends_compile_for_sm90(name: str, tmp_path: Path) -> None:
    ops, dtype, shape = CUDA_CHAINS[name]
    source = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu").source_for(dtype, shape)
    blend = "fkl::linear_blend<true>(" if "resize" in name or "letterbox" in name else "fkl::Warping::blend("
    assert blend in source
    cubin = compilers.compile_cubin(source, INCLUDE_DIR, "sm_90", tmp_path)
    assert cubin[:4] == b"\x7fELF"
