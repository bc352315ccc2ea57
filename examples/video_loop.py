"""A video-style loop: interlaced frames arrive one after another, are deinterlaced ("blend": each
row averaged with the row above) and saturated back to uint8, frame after frame, with no allocation
per frame.

On the GPU the pipeline is *bound* (compiled at compose time to two device buffers) and the loop
ping-pongs between two input/output pairs: while frame n is processed in pair n % 2, the other pair
is free to be refilled. Bound compose is GPU-only, so on the CPU the same loop passes `out=` to an
unbound pipeline, alternating between two preallocated outputs.

Each frame is checked against the blend written in numpy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
from common import target

import fklir as fkl

H, W = 241, 321
FRAMES = 6


def camera(rng: np.random.Generator) -> Iterator[np.ndarray]:
    for _ in range(FRAMES):
        yield rng.integers(0, 256, (H, W, 3), dtype=np.uint8)


def reference(frame: np.ndarray) -> np.ndarray:
    """Row 0 copied, row y > 0 = (row y + row y-1) / 2, rounded half to even like SaturateCast."""
    rows = frame.astype(np.float32)
    rows[1:] = (rows[1:] + rows[:-1]) / 2
    return np.rint(rows).astype(np.uint8)


# Op descriptors hold only values: both loops compose the same chain from them.
CHAIN = (fkl.Deinterlace("blend"), fkl.SaturateCast("uint8"))


def cpu_loop(frames: Iterator[np.ndarray]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    pipe = fkl.compose(fkl.TensorRead(), *CHAIN, fkl.TensorWrite(), target="cpu")
    outs = [np.empty((H, W, 3), np.uint8) for _ in range(2)]
    for n, frame in enumerate(frames):
        out = outs[n % 2]
        pipe(frame, out=out)
        yield frame, out


def gpu_loop(frames: Iterator[np.ndarray]) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    pairs = [(fkl.DeviceBuffer((H, W, 3), "uint8"), fkl.DeviceBuffer((H, W, 3), "uint8")) for _ in range(2)]
    src0, dst0 = pairs[0]
    k = fkl.compose(fkl.TensorRead(src0), *CHAIN, fkl.TensorWrite(dst0))  # compiles now
    runs: list[Callable[[], object]] = [k, lambda: k(pairs[1][0], out=pairs[1][1])]
    for n, frame in enumerate(frames):
        src, dst = pairs[n % 2]
        src.copy_from_host(frame)
        runs[n % 2]()
        yield frame, dst.copy_to_host()


def main() -> None:
    where = target(__doc__)
    loop = cpu_loop if where == "cpu" else gpu_loop
    for n, (frame, out) in enumerate(loop(camera(np.random.default_rng(11)))):
        assert np.array_equal(out, reference(frame)), f"frame {n} differs from the numpy blend"
    print(f"{where}: {FRAMES} frames of {H}x{W} deinterlaced, each equal to the numpy blend")


if __name__ == "__main__":
    main()
