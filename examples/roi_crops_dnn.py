"""ROI crops for a DNN, the canonical fklir use: one kernel cuts every detection box out of a frame,
resizes it to the network's input size, normalises it like torchvision (x/255 - mean) / std and
writes it planar (N, 3, H, W) float32, ready to be a batch.

The boxes are values, not structure: a new frame with a different number of boxes reuses the same
compiled kernel. The result is checked against cv2.resize and numpy.
"""

from __future__ import annotations

import numpy as np
from common import opencv, target, to_host, to_target

import fklir as fkl

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
NET_W, NET_H = 64, 48


def reference(frame: np.ndarray, rects: list[tuple[int, int, int, int]]) -> np.ndarray:
    """cv2.resize (INTER_LINEAR on float32, as fklir's linear resize) of each box, normalised, planar."""
    cv2 = opencv()
    planes = []
    for x, y, w, h in rects:
        box = frame[y : y + h, x : x + w].astype(np.float32)
        resized = cv2.resize(box, (NET_W, NET_H), interpolation=cv2.INTER_LINEAR)
        planes.append(((resized / 255 - MEAN) / STD).transpose(2, 0, 1))
    return np.stack(planes)


def random_boxes(rng: np.random.Generator, n: int, frame_w: int, frame_h: int) -> list[tuple[int, int, int, int]]:
    """What a detector would give: boxes of any size, anywhere inside the frame."""
    boxes = []
    for _ in range(n):
        w, h = int(rng.integers(8, frame_w // 2)), int(rng.integers(8, frame_h // 2))
        boxes.append((int(rng.integers(0, frame_w - w)), int(rng.integers(0, frame_h - h)), w, h))
    return boxes


def main() -> None:
    where = target(__doc__)
    rng = np.random.default_rng(7)
    frame_h, frame_w = 241, 419
    for n_boxes in (3, 5):  # the second frame reuses the kernel compiled for the first
        frame = rng.integers(0, 256, (frame_h, frame_w, 3), dtype=np.uint8)
        boxes = random_boxes(rng, n_boxes, frame_w, frame_h)
        pipe = fkl.compose(
            fkl.TensorRead(),
            fkl.Crop(boxes),
            fkl.Resize(NET_W, NET_H),  # linear: float32 out
            fkl.Mul(1 / 255),
            fkl.Sub(MEAN),
            fkl.Div(STD),
            fkl.TensorSplit(),  # planar: (N, 3, H, W)
            target=where,
        )
        batch = to_host(pipe(to_target(frame, where)))
        assert batch.shape == (n_boxes, 3, NET_H, NET_W) and batch.dtype == np.float32, (batch.shape, batch.dtype)
        error = float(np.abs(batch - reference(frame, boxes)).max())
        assert error < 1e-3, f"max |fklir - cv2| = {error}"
        print(f"{where}: {n_boxes} boxes -> {batch.shape} {batch.dtype}, max |fklir - cv2| = {error:.2e}")


if __name__ == "__main__":
    main()
