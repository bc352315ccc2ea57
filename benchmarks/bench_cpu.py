"""The CPU target against numpy's unfused chain on the same machine (SPEC §5: fused ≥ 3x numpy).

    python benchmarks/bench_cpu.py [--out PATH] [--size WxH]

The 6-op float32 chain of bench_chain.py (Mul, Add per channel, Sub, Div, Max, Min) on a WxHx3
image: fklir target="cpu" (one fused OpenMP loop, output preallocated) vs numpy (six whole-image
passes, in place where numpy allows). Median of repetitions after a warm-up; results checked equal.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import fklir as fkl

MUL, ADD, SUB, DIV, LO, HI = 1.5, (0.1, 0.2, 0.3), 0.25, 1.7, -0.5, 0.8


def numpy_chain(x: np.ndarray, out: np.ndarray) -> np.ndarray:
    np.multiply(x, np.float32(MUL), out=out)
    out += np.array(ADD, np.float32)
    out -= np.float32(SUB)
    out /= np.float32(DIV)
    np.maximum(out, np.float32(LO), out=out)
    np.minimum(out, np.float32(HI), out=out)
    return out


def median_ms(call: object, reps: int) -> float:
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        call()  # type: ignore[operator]
        samples.append((time.perf_counter() - start) * 1e3)
    return statistics.median(samples)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out")
    parser.add_argument("--size", default="3840x2160")
    parser.add_argument("--reps", type=int, default=15)
    args = parser.parse_args(argv)
    w, h = (int(v) for v in args.size.split("x"))
    x = (np.random.default_rng(0).random((h, w, 3), dtype=np.float32) * 2 - 0.5).astype(np.float32)
    ops = [fkl.Mul(MUL), fkl.Add(ADD), fkl.Sub(SUB), fkl.Div(DIV), fkl.Max(LO), fkl.Min(HI)]
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")
    y_fkl, y_np = np.empty_like(x), np.empty_like(x)
    pipe(x, out=y_fkl)
    numpy_chain(x, y_np)
    np.testing.assert_allclose(y_fkl, y_np, rtol=1e-6, atol=1e-6)
    fklir_ms = median_ms(lambda: pipe(x, out=y_fkl), args.reps)
    numpy_ms = median_ms(lambda: numpy_chain(x, y_np), args.reps)
    now = datetime.datetime.now(datetime.UTC)
    lines = [
        f"### {now:%Y-%m-%d %H:%M} UTC - CPU target - {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores",
        "",
        f"- command: `python3 benchmarks/bench_cpu.py {' '.join(argv)}`".rstrip(),
        f"- numpy {np.__version__}, median of {args.reps} after a warm-up, results equal within 1e-6",
        "",
        "| workload | numpy unfused ms | fklir cpu ms | speed-up | SPEC target |",
        "|---|---|---|---|---|",
        f"| 6-op float32 chain, {w}x{h}x3 | {numpy_ms:.1f} | {fklir_ms:.1f} | {numpy_ms / fklir_ms:.1f}x | ≥ 3x |",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "a") as f:
            f.write(report + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
