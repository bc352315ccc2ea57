"""Background subtraction as one DAG kernel (SPEC §8): two inputs (a frame and the background), two outputs
(|frame - background| as float32, and a uint8 mask where any channel differs by more than a threshold),
every pixel of both inputs read once per output pixel. Then an alpha composite of the frame over a new
backdrop through that mask, a second graph of three inputs.

    diff = |frame - background|,  mask = max_c(diff) > t,  out = frame * m + backdrop * (1 - m), m = mask / 255

Checked against numpy on random frames of an odd size, with pixels exactly at the threshold.
"""

from __future__ import annotations

import numpy as np
from common import target, to_host, to_target

import fklir as fkl

H, W = 121, 203  # odd sizes
THRESHOLD = 25.0


def subtraction(where: str):
    """|frame - background| (float32) and its thresholded channel maximum (uint8 0 / 255): one kernel."""
    return fkl.compose(
        fkl.TensorRead(),  # input 0: the frame
        fkl.Cast("float32"),
        fkl.AbsDiff(fkl.Input(1, fkl.Cast("float32"))),  # input 1: the background, its own branch
        fkl.MidWrite(),  # output 0: the difference
        fkl.VectorReduce("Max"),
        fkl.Threshold(THRESHOLD),  # 1.0 above the threshold, else 0.0
        fkl.Mul(255.0),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),  # output 1: the mask
        target=where,
    )


def composite(where: str):
    """The frame over a new backdrop through a uint8 mask (m = mask / 255): one kernel of three inputs."""
    return fkl.compose(fkl.TensorRead(), fkl.Composite(fkl.Input(1), fkl.Input(2)), fkl.TensorWrite(), target=where)


def main() -> None:
    where = target(__doc__)
    rng = np.random.default_rng(8)
    background = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    frame = background.copy()
    frame[30:90, 50:160] = rng.integers(0, 256, (60, 110, 3), dtype=np.uint8)  # something moved in
    frame[0, :40, 1] = (background[0, :40, 1].astype(np.int64) + 25).clip(0, 255)  # |d| = 25: not above
    backdrop = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)

    diff, mask = (to_host(a) for a in subtraction(where)(to_target(frame, where), to_target(background, where)))
    expected_diff = np.abs(frame.astype(np.float64) - background)
    expected_mask = np.where(expected_diff.max(axis=-1) > THRESHOLD, 255, 0).astype(np.uint8)
    assert diff.dtype == np.float32 and diff.shape == (H, W, 3), (diff.dtype, diff.shape)
    assert np.array_equal(diff, expected_diff.astype(np.float32)), "the difference differs from numpy"
    assert np.array_equal(mask, expected_mask), "the mask differs from numpy"

    moved = to_host(composite(where)(*(to_target(a, where) for a in (frame, backdrop, mask))))
    m = mask.astype(np.float64)[..., None] / 255.0
    expected = np.rint(frame * m + backdrop * (1.0 - m)).astype(np.uint8)
    assert np.array_equal(moved, expected), "the composite differs from numpy"
    print(
        f"{where}: |frame - background| and its mask ({int((mask > 0).sum())} pixels moved) in one kernel, "
        "the frame composited over a new backdrop through it in another; equal to numpy"
    )


if __name__ == "__main__":
    main()
