"""YOLO-style letterbox pre-processing in one kernel: a BGR uint8 frame is scaled to fit 320x320
keeping its aspect ratio, centred on grey (114) padding, turned to RGB, scaled to [0, 1] and written
planar (3, 320, 320) float32, the input a YOLO detector expects.

Checked against the letterbox written by hand with cv2.resize and numpy.
"""

from __future__ import annotations

import numpy as np
from common import opencv, target, to_host, to_target

import fklir as fkl

SIZE = 320
PAD = 114


def reference(frame: np.ndarray) -> np.ndarray:
    """Scale by min(320/w, 320/h), content size rounded half away from zero, centred (odd leftover to
    the right/bottom), the rest PAD; then BGR -> RGB, / 255, planar."""
    cv2 = opencv()
    h, w = frame.shape[:2]
    scale = min(SIZE / w, SIZE / h)
    cw, ch = int(np.floor(w * scale + 0.5)), int(np.floor(h * scale + 0.5))
    x0, y0 = (SIZE - cw) // 2, (SIZE - ch) // 2
    canvas = np.full((SIZE, SIZE, 3), PAD, np.float32)
    canvas[y0 : y0 + ch, x0 : x0 + cw] = cv2.resize(frame.astype(np.float32), (cw, ch), interpolation=cv2.INTER_LINEAR)
    return (canvas[:, :, ::-1] / 255).transpose(2, 0, 1)


def main() -> None:
    where = target(__doc__)
    frame = np.random.default_rng(3).integers(0, 256, (427, 641, 3), dtype=np.uint8)
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Resize(SIZE, SIZE, aspect_ratio="preserve", background=PAD),
        fkl.ColorConversion("BGR2RGB"),
        fkl.Mul(1 / 255),
        fkl.TensorSplit(),
        target=where,
    )
    blob = to_host(pipe(to_target(frame, where)))
    assert blob.shape == (3, SIZE, SIZE) and blob.dtype == np.float32, (blob.shape, blob.dtype)
    error = float(np.abs(blob - reference(frame)).max())
    assert error < 1e-4, f"max |fklir - reference| = {error}"
    print(f"{where}: letterbox {frame.shape} -> {blob.shape} {blob.dtype}, max |fklir - reference| = {error:.2e}")


if __name__ == "__main__":
    main()
