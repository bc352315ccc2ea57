"""Where OpenMP pays on the CPU target: per-call time by image size, one thread vs the default team, with
the cores idle and with one core held by another process.

    python benchmarks/bench_cpu_threads.py [--out PATH] [--reps N]

Two chains on uint8 HxWx3 images, output W x H (the table's size):
  flat:   TensorRead, Cast(float32), Mul(1/255), Sub((0.485, 0.456, 0.406)), TensorWrite (one flat loop)
  resize: TensorRead, Crop(1, 1, 2W, 2H), Resize(W, H), Mul(1/255), TensorWrite (the per-pixel loop)

Each configuration runs in its own process, because OpenMP reads OMP_NUM_THREADS once, at start-up:
"1 thread" is OMP_NUM_THREADS=1, "default" leaves it unset (one thread per core). "busy" starts a process
that spins on one core for the whole measurement, as a concurrent test or data-loader worker would.
Each cell is "min / median / mean" of per-call wall times in ms (output preallocated, after a warm-up call):
the min is the cost without interference from other processes, the median the usual cost, the mean
includes the calls that waited for a descheduled OpenMP thread.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIZES = [
    (4, 4),
    (16, 16),
    (32, 32),
    (48, 48),
    (64, 64),
    (96, 96),
    (128, 128),
    (160, 160),
    (192, 192),
    (256, 256),
    (512, 512),
    (1024, 1024),
    (1920, 1080),
]
CHAINS = ("flat", "resize")


def _pipeline(chain: str, w: int, h: int) -> object:
    import fklir as fkl

    if chain == "flat":
        ops = [fkl.Cast("float32"), fkl.Mul(1 / 255), fkl.Sub((0.485, 0.456, 0.406))]
    else:
        ops = [fkl.Crop(1, 1, 2 * w, 2 * h), fkl.Resize(w, h), fkl.Mul(1 / 255)]
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")


def _input_shape(chain: str, w: int, h: int) -> tuple[int, int, int]:
    return (h, w, 3) if chain == "flat" else (2 * h + 2, 2 * w + 2, 3)


def child(reps: int) -> dict[str, tuple[float, float, float]]:
    """(min, median, mean) ms per call of every (chain, size), in this process's OpenMP configuration."""
    import numpy as np

    rng = np.random.default_rng(0)
    times: dict[str, tuple[float, float, float]] = {}
    for chain in CHAINS:
        for w, h in SIZES:
            pipe = _pipeline(chain, w, h)
            x = rng.integers(0, 256, _input_shape(chain, w, h), dtype=np.uint8)
            out = pipe(x)  # type: ignore[operator]
            count = max(5, min(reps, int(4e7 / (w * h * 3))))
            samples = []
            for _ in range(count):
                start = time.perf_counter()
                pipe(x, out=out)  # type: ignore[operator]
                samples.append((time.perf_counter() - start) * 1e3)
            times[f"{chain} {w}x{h}"] = (min(samples), statistics.median(samples), statistics.fmean(samples))
    return times


def _run_child(threads: int | None, busy: bool, reps: int) -> dict[str, list[float]]:
    env = dict(os.environ)
    env.pop("OMP_NUM_THREADS", None)
    if threads is not None:
        env["OMP_NUM_THREADS"] = str(threads)
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    try:
        result = subprocess.run(
            [sys.executable, __file__, "--child", "--reps", str(reps)],
            env=env,
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
    finally:
        if spinner is not None:
            spinner.kill()
            spinner.wait()
    if result.returncode != 0:
        raise RuntimeError(f"the measuring process failed:\n{result.stderr}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        sys.path.insert(0, str(ROOT))
        print(json.dumps(child(args.reps)))
        return 0
    columns = [(1, False), (None, False), (1, True), (None, True)]
    results = [_run_child(threads, busy, args.reps) for threads, busy in columns]
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    head = [
        f"### {stamp} - {platform.node()} ({os.cpu_count()} CPUs, {platform.processor() or platform.machine()})"
        " - bench_cpu_threads",
        "",
        f"`python benchmarks/bench_cpu_threads.py --reps {args.reps}`; ms per call, min / median / mean; "
        "default = OMP_NUM_THREADS unset; busy = another process spins on one core meanwhile.",
        "",
        "| chain, output | 1 thread | default | 1 thread, busy | default, busy |",
        "|---|---:|---:|---:|---:|",
    ]
    cells = {key: " | ".join(" / ".join(f"{v:.3f}" for v in r[key]) for r in results) for key in results[0]}
    rows = [f"| {key} | {row} |" for key, row in cells.items()]
    text = "\n".join(head + rows) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
