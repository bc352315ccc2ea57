"""torch DataLoader workers, each running its own fklir pipeline: the Dataset composes the pipeline
lazily, on its first item in each worker, so a worker composes once and calls it for every item
after (compose once, call many). Workers start with the "spawn" method, the one that is safe with
CUDA (a forked child cannot use a CUDA context its parent created); the pipeline itself is never
pickled, only the Dataset's plain settings.

Every item is a frame resized to 64x48, scaled to [0, 1] and written planar (3, 48, 64); the batches
are checked against cv2.resize, and each worker is checked to have composed exactly once.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from common import opencv, skip, target, to_host, to_target

import fklir as fkl

try:
    import torch
    from torch.utils.data import DataLoader, Dataset
except ImportError:
    skip("torch is not installed (pip install -e '.[torch]')")

OUT_W, OUT_H = 64, 48
ITEMS = 12


def frame(index: int) -> np.ndarray:
    """The item's source image, made from its index so that the parent can recompute it."""
    return np.random.default_rng(index).integers(0, 256, (121, 163, 3), dtype=np.uint8)


class Frames(Dataset):
    def __init__(self, where: str) -> None:
        self.where = where
        self.pipe: Any = None
        self.composed = 0

    def __len__(self) -> int:
        return ITEMS

    def __getstate__(self) -> dict[str, Any]:
        # A worker gets the settings, never a pipeline: it composes its own on its first item.
        return {**self.__dict__, "pipe": None, "composed": 0}

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int, int, int]:
        if self.pipe is None:
            self.pipe = fkl.compose(
                fkl.TensorRead(), fkl.Resize(OUT_W, OUT_H), fkl.Mul(1 / 255), fkl.TensorSplit(), target=self.where
            )
            self.composed += 1
        planar = to_host(self.pipe(to_target(frame(index), self.where)))
        return torch.from_numpy(planar), index, os.getpid(), self.composed


def reference(index: int) -> np.ndarray:
    cv2 = opencv()
    resized = cv2.resize(frame(index).astype(np.float32), (OUT_W, OUT_H), interpolation=cv2.INTER_LINEAR)
    return (resized / 255).transpose(2, 0, 1)


def main() -> None:
    where = target(__doc__)
    loader = DataLoader(Frames(where), batch_size=3, num_workers=2, multiprocessing_context="spawn")
    composes: dict[int, int] = {}
    seen = []
    for batch, indices, pids, composed in loader:
        assert batch.shape == (len(indices), 3, OUT_H, OUT_W) and batch.dtype == torch.float32, batch.shape
        for planar, index, pid, count in zip(batch.numpy(), indices.tolist(), pids.tolist(), composed.tolist()):
            error = float(np.abs(planar - reference(index)).max())
            assert error < 1e-4, f"item {index}: max |fklir - cv2| = {error}"
            composes[pid] = max(composes.get(pid, 0), count)
            seen.append(index)
    assert sorted(seen) == list(range(ITEMS)), seen
    assert len(composes) == 2 and set(composes.values()) == {1}, f"composes per worker: {composes}"
    print(f"{where}: {ITEMS} items from 2 spawned workers, each composed once, all equal to cv2 within 1e-4")


if __name__ == "__main__":
    main()
