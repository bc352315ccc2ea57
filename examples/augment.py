"""Random augmentation of a training batch in one kernel: every sample of a (B, H, W, 3) uint8 batch (what
a DataLoader's default collate gives) gets its own random crop, brightness and contrast, then a resize
to the model's size and a planar float tensor in [0, 1]. The per-sample numbers are `fkl.per_image`
values (row b for sample b) and the crops one rect per sample, so one pipeline structure serves every
batch: new random values each step are parameter data, never a compile.

    out_b = clip(contrast_b * (brightness_b * resize(crop_b(x_b)) - 128) + 128, 0, 255) / 255

Checked against numpy on OpenCV's resize of each crop.
"""

from __future__ import annotations

import numpy as np
from common import opencv, target, to_host, to_target

import fklir as fkl

BATCH, H, W = 6, 97, 131
OUT = 64  # the model's input size
PIVOT = 128.0  # contrast scales around mid-grey


def augment(rects: list[tuple[int, int, int, int]], brightness: np.ndarray, contrast: np.ndarray, where: str):
    """One kernel: sample b's crop, resize, brightness, contrast, clamp, [0, 1], planar (B, 3, OUT, OUT)."""
    return fkl.compose(
        fkl.TensorRead(),
        fkl.Crop(rects),  # one rect per sample of the batch
        fkl.Resize(OUT, OUT),
        fkl.Mul(fkl.per_image(brightness)),
        fkl.Sub(PIVOT),
        fkl.Mul(fkl.per_image(contrast)),
        fkl.Add(PIVOT),
        fkl.Saturate(0.0, 255.0),
        fkl.Mul(1 / 255),
        fkl.TensorSplit(),
        target=where,
    )


def random_step(rng: np.random.Generator) -> tuple[list[tuple[int, int, int, int]], np.ndarray, np.ndarray]:
    """A batch's random crops (at least half of each side), brightness factors and per-channel contrasts."""
    rects = []
    for _ in range(BATCH):
        w, h = int(rng.integers(W // 2, W + 1)), int(rng.integers(H // 2, H + 1))
        rects.append((int(rng.integers(0, W - w + 1)), int(rng.integers(0, H - h + 1)), w, h))
    return rects, rng.uniform(0.6, 1.4, BATCH), rng.uniform(0.7, 1.3, (BATCH, 3))


def reference(batch: np.ndarray, rects, brightness: np.ndarray, contrast: np.ndarray) -> np.ndarray:
    cv2 = opencv()
    out = np.empty((BATCH, 3, OUT, OUT))
    for b, (x, y, w, h) in enumerate(rects):
        resized = cv2.resize(batch[b, y : y + h, x : x + w].astype(np.float32), (OUT, OUT)).astype(np.float64)
        value = contrast[b] * (brightness[b] * resized - PIVOT) + PIVOT
        out[b] = (np.clip(value, 0, 255) / 255).transpose(2, 0, 1)
    return out


def main() -> None:
    where = target(__doc__)
    rng = np.random.default_rng(2026)
    for step in range(3):  # three training steps: new images and new random values each
        batch = rng.integers(0, 256, (BATCH, H, W, 3), dtype=np.uint8)
        rects, brightness, contrast = random_step(rng)
        pipe = augment(rects, brightness, contrast, where)
        got = to_host(pipe(to_target(batch, where)))
        assert got.shape == (BATCH, 3, OUT, OUT) and got.dtype == np.float32, (got.shape, got.dtype)
        error = float(np.abs(got - reference(batch, rects, brightness, contrast)).max())
        assert error < 2e-5, f"step {step}: max |fklir - numpy| = {error}"
    assert pipe.ir().count("fkl.kernel @") == 1, pipe.ir()
    print(
        f"{where}: 3 steps of {BATCH} samples, each its own crop, brightness and contrast in one kernel; "
        f"equal to numpy on cv2.resize within 2e-5"
    )


if __name__ == "__main__":
    main()
