"""Chains and references shared by the CPU and GPU runtime tests (plain numpy formulas from SPEC)."""

from __future__ import annotations

from typing import Any

import numpy as np

import fklir as fkl


def on_target(target: str, x: np.ndarray) -> Any:
    """`x` where a pipeline of `target` reads it: the numpy array itself, or a CUDA torch tensor."""
    if target == "cpu":
        return x
    import torch

    return torch.from_numpy(x).cuda()


def from_target(target: str, y: Any) -> np.ndarray:
    """A pipeline's result on the host."""
    return y if target == "cpu" else y.cpu().numpy()


ROI_RECTS = [(30, 12, 60, 40), (40, 12, 60, 40), (53, 27, 60, 40)]
FLOAT_MUL, FLOAT_ADD, FLOAT_SUB, FLOAT_DIV, FLOAT_MAX, FLOAT_MIN = (
    1.5,
    (0.25, -1.0, 2.0),
    3.0,
    0.75,
    -10.0,
    40.0,
)


def roi_chain(target: str) -> fkl.Pipeline:
    return fkl.compose(
        fkl.TensorRead(),
        fkl.Crop(ROI_RECTS),
        fkl.Resize(16, 16),
        fkl.Mul(2.0),
        fkl.Sub(128.0),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),
        target=target,
    )


def float_chain(target: str) -> fkl.Pipeline:
    """The 6-op float32 chain of SPEC §5."""
    return fkl.compose(
        fkl.TensorRead(),
        fkl.Mul(FLOAT_MUL),
        fkl.Add(FLOAT_ADD),
        fkl.Sub(FLOAT_SUB),
        fkl.Div(FLOAT_DIV),
        fkl.Max(FLOAT_MAX),
        fkl.Min(FLOAT_MIN),
        fkl.TensorWrite(),
        target=target,
    )


def float_chain_reference(x: np.ndarray) -> np.ndarray:
    v = x.astype(np.float64) * FLOAT_MUL + np.array(FLOAT_ADD)
    v = (v - FLOAT_SUB) / FLOAT_DIV
    return np.minimum(np.maximum(v, FLOAT_MAX), FLOAT_MIN)


def normalise_chain(target: str, mul: float = 0.5, sub: float = 3.0) -> fkl.Pipeline:
    """uint8 → float32 → Mul → Sub → SaturateCast uint8 (SPEC §5)."""
    return fkl.compose(
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.Mul(mul),
        fkl.Sub(sub),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),
        target=target,
    )


def normalise_reference(x: np.ndarray, mul: float = 0.5, sub: float = 3.0) -> np.ndarray:
    """Round half to even after clamping, as SPEC's SaturateCast says (np.rint is half-even)."""
    v = x.astype(np.float64) * mul - sub
    return np.rint(np.clip(v, 0, 255)).astype(np.uint8)


def roi_reference(img: np.ndarray, rects: list[tuple[int, int, int, int]], size: int = 16) -> np.ndarray:
    """Per-ROI OpenCV resize (INTER_LINEAR on float32), then ×2 −128 and saturate to uint8."""
    import cv2

    planes = []
    for x, y, w, h in rects:
        r = cv2.resize(img[y : y + h, x : x + w].astype(np.float32), (size, size), interpolation=cv2.INTER_LINEAR)
        planes.append(np.rint(np.clip(r.astype(np.float64) * 2 - 128, 0, 255)).astype(np.uint8))
    return np.stack(planes)
