"""Warps are SPEC §3's exact bilinear blend (turn 3) on both targets: float64 source coordinates, weights
(1 - fx)(1 - fy), fx (1 - fy), (1 - fx) fy, fx fy without quantisation. Float results within
1e-4 * max(1, |v|) of tests/warp_formula.py's float64 formula on every pixel, edges included, for 1-4
channels, affine and perspective, every border mode; uint8 results the rounded formula and within one of
cv2.warpAffine / warpPerspective 5.1 on at most 0.1 % of a 1080p rotation's pixels."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fklir as fkl
from tests.borders import NUMPY_PAD
from tests.warp_formula import CV2_BOUND, assert_float_warp_exact, warp_formula

cv2 = pytest.importorskip("cv2")

TARGETS = [
    "cpu",
    pytest.param(
        "gpu",
        marks=[pytest.mark.gpu, pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")],
    ),
]
KINDS = ("affine", "perspective")


def run(target: str, x: np.ndarray, *ops: Any) -> np.ndarray:
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)
    if target == "cpu":
        return pipe(x)
    from fklir.runtime.device_buffer import DeviceBuffer

    return pipe(DeviceBuffer.from_host(x)).copy_to_host()


def matrix(kind: str, w: int, h: int, angle: float, rng: np.random.Generator) -> np.ndarray:
    """A rotation and scale about the centre, moved so that part of the output maps outside the source."""
    m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, float(rng.uniform(0.8, 1.25)))
    m[:, 2] += rng.uniform(-0.15, 0.15, 2) * (w, h)
    if kind == "affine":
        return m
    m = np.vstack([m, [0.0, 0.0, 1.0]])
    m[2, :2] = rng.uniform(-0.3, 0.3, 2) / max(w, h)
    return m


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", [None, *sorted(NUMPY_PAD)])
@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("kind", KINDS)
def test_float_warp_is_the_exact_blend(target: str, mode: str | None, channels: int, kind: str) -> None:
    rng = np.random.default_rng([channels, KINDS.index(kind), len(mode or "")])
    shape = (29, 47, channels) if channels > 1 else (29, 47)
    x = (rng.random(shape) * 255).astype(np.float32)
    m = matrix(kind, 47, 29, float(rng.uniform(-50, 50)), rng)
    border = () if mode is None else (fkl.BorderReader(mode, 37.5),)
    out = run(target, x, *border, fkl.Warping(m, 53, 31))
    value = 0.0 if mode is None else 37.5
    expected = warp_formula(x, m, 53, 31, mode=mode or "constant", value=value)
    assert_float_warp_exact(out, expected, f"{target} {kind} {mode} x{channels}")
    if channels != 2:  # cv2 5.1 zeroes a 2-channel warp's pixels whose taps are partly outside
        fn = cv2.warpAffine if kind == "affine" else cv2.warpPerspective
        code = {"constant": cv2.BORDER_CONSTANT, "replicate": cv2.BORDER_REPLICATE, "reflect": cv2.BORDER_REFLECT}
        code |= {"reflect101": cv2.BORDER_REFLECT_101, "wrap": cv2.BORDER_WRAP}
        cv = fn(x, m, (53, 31), flags=cv2.INTER_LINEAR, borderMode=code[mode or "constant"], borderValue=(value,) * 4)
        assert float(np.abs(out - cv).max()) <= CV2_BOUND[mode or "constant"]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["float64", "uint16", "int8"])
def test_other_source_types_blend_exactly(target: str, dtype: str) -> None:
    rng = np.random.default_rng(len(dtype))
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is None:
        x = rng.normal(0, 1000, (23, 37, 3)).astype(dtype)
    else:
        x = rng.integers(info.min, int(info.max) + 1, (23, 37, 3), dtype=dtype)
    m = matrix("perspective", 37, 23, 33.0, rng)
    out = run(target, x, fkl.Warping(m, 41, 27, inverse=True))
    inverse_formula = warp_formula(x, m, 41, 27, inverse=True)
    assert_float_warp_exact(out, inverse_formula, f"{target} {dtype}")


def image_1080p(rng: np.random.Generator) -> np.ndarray:
    """A smooth 1080p uint8x3 image (blurred noise): cv2's uint8 warp rounds near ties differently from the
    exact formula on ~0.01 % of such pixels (on white noise, whose blends sit near ties more often, 0.13 %)."""
    noise = (rng.random((1080, 1920, 3)) * 255).astype(np.float32)
    return cv2.GaussianBlur(noise, (0, 0), 1.5).round().astype(np.uint8)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", KINDS)
def test_uint8_warp_is_the_rounded_formula_and_within_one_of_cv2(target: str, kind: str) -> None:
    rng = np.random.default_rng(KINDS.index(kind) + 7)
    x = image_1080p(rng)
    m = matrix(kind, 1920, 1080, 17.0, rng)
    out = run(target, x, fkl.Warping(m, 1920, 1080), fkl.SaturateCast("uint8"))
    exact = warp_formula(x, m, 1920, 1080)
    # The formula rounded: within half a unit, and a hair more where the float32 between the warp and
    # SaturateCast moved a blend that lay within an f32 ulp of a tie.
    assert float(np.abs(out - exact).max()) <= 0.5 + 1e-4 * 255
    assert float(np.mean(out != np.rint(exact))) <= 1e-4
    fn = cv2.warpAffine if kind == "affine" else cv2.warpPerspective
    cv = fn(x, m, (1920, 1080), flags=cv2.INTER_LINEAR).astype(np.int64)
    assert int(np.abs(out - cv).max()) <= 1
    assert float(np.mean(out != cv)) <= 1e-3
