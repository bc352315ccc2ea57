"""A pipeline inside Ray Data: `map_batches` with a callable class runs on a pool of actors, and each
actor composes its pipeline once, in its constructor, then calls it for every batch it is given
(compose once, call many). A batch of same-size images is one (B, H, W, 3) array, which fklir takes as
B planes: one kernel per batch.

Runs on a local Ray cluster of 2 CPUs (on a real cluster, `ray.init()` joins it instead; on GPU
nodes, ask for `num_gpus=1` per actor: docs/scaling.md). Every output row is checked against
cv2.resize, and each actor is checked to have composed exactly once.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import numpy as np
from common import opencv, skip, target, to_host, to_target

import fklir as fkl

try:
    import ray
    import ray.data
except ImportError:
    skip("ray is not installed (pip install -e '.[ray]')")

OUT_W, OUT_H = 40, 30
ITEMS, BATCH = 16, 4
MEAN, STD = 127.5, 64.0


class Preprocess:
    """One per actor: composes in __init__, called with every batch the actor gets."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.pipe = fkl.compose(
            fkl.TensorRead(),
            fkl.Resize(OUT_W, OUT_H),
            fkl.Sub(MEAN),
            fkl.Div(STD),
            fkl.TensorSplit(),
            target=where,
        )
        self.calls = 0

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, Any]:
        self.calls += 1
        images = np.ascontiguousarray(batch["image"])  # (B, H, W, 3): B planes, one kernel
        planar = to_host(self.pipe(to_target(images, self.where)))
        n = len(images)
        return {
            "index": batch["index"],
            "tensor": planar,
            "actor": np.full(n, f"{os.getpid()}:{id(self)}"),
            "pipe": np.full(n, id(self.pipe)),
            "calls": np.full(n, self.calls),
        }


def images(rng: np.random.Generator) -> np.ndarray:
    return rng.integers(0, 256, (ITEMS, 97, 131, 3), dtype=np.uint8)


def reference(image: np.ndarray) -> np.ndarray:
    cv2 = opencv()
    resized = cv2.resize(image.astype(np.float32), (OUT_W, OUT_H), interpolation=cv2.INTER_LINEAR)
    return ((resized - MEAN) / STD).transpose(2, 0, 1)


def main() -> None:
    where = target(__doc__)
    source = images(np.random.default_rng(5))
    ray.init(
        num_cpus=2,
        num_gpus=1 if where == "gpu" else 0,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.WARNING,
    )
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        rows = [{"index": i, "image": image} for i, image in enumerate(source)]
        out = (
            ray.data.from_items(rows)
            .map_batches(
                Preprocess,
                fn_constructor_kwargs={"where": where},
                batch_size=BATCH,
                batch_format="numpy",
                compute=ray.data.ActorPoolStrategy(size=2),  # two actors, each with its own pipeline
                num_cpus=1,
                num_gpus=0.5 if where == "gpu" else 0,
            )
            .take_all()
        )
    finally:
        ray.shutdown()
    assert sorted(int(row["index"]) for row in out) == list(range(ITEMS))
    for row in out:
        error = float(np.abs(row["tensor"] - reference(source[int(row["index"])])).max())
        assert error < 1e-4, f"image {row['index']}: max |fklir - cv2| = {error}"
    pipes_per_actor: dict[str, set[int]] = {}
    for row in out:
        pipes_per_actor.setdefault(str(row["actor"]), set()).add(int(row["pipe"]))
    assert all(len(pipes) == 1 for pipes in pipes_per_actor.values()), pipes_per_actor
    assert max(int(row["calls"]) for row in out) > 1, "no actor was called twice: nothing shows compose-once"
    print(
        f"{where}: {ITEMS} images through {len(pipes_per_actor)} Ray actor(s), one pipeline each, "
        "all equal to cv2 within 1e-4"
    )


if __name__ == "__main__":
    main()
