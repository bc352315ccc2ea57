"""Soak: many warm calls of a bound pipeline and of an unbound list call, with host RSS and device memory.

    python benchmarks/soak.py [--calls N] [--out PATH]

A leak of a few bytes per call (a ctypes object kept per launch, a cached output per call, a stream or
event never released) is invisible in a test of ten calls and fatal to a video service. This runs N
warm calls of each kind after a warm-up, samples the process's resident set (/proc/self/statm) and the
device's used memory (cuMemGetInfo) every N/10 calls, and fails (exit 1) when either grows by more than
a small allowance between the first sample after warm-up and the last, or when an output is wrong.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Python's allocator and the CUDA driver grow in pages and pools: a flat process still moves by a few MiB.
HOST_ALLOWANCE = 8 << 20
DEVICE_ALLOWANCE = 4 << 20


def rss_bytes() -> int:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE")


def device_used() -> int:
    from cuda.bindings import driver

    err, free, total = driver.cuMemGetInfo()
    assert err == driver.CUresult.CUDA_SUCCESS, err
    return int(total) - int(free)


def soak(name: str, call, sync, calls: int, lines: list[str]) -> bool:  # type: ignore[no-untyped-def]
    for _ in range(1000):
        call()
    sync()
    samples: list[tuple[int, int, int]] = []
    step = max(calls // 10, 1)
    start = time.perf_counter()
    for i in range(calls):
        call()
        if (i + 1) % step == 0:
            sync()
            samples.append((i + 1, rss_bytes(), device_used()))
    sync()
    seconds = time.perf_counter() - start
    host_growth = samples[-1][1] - samples[0][1]
    device_growth = samples[-1][2] - samples[0][2]
    ok = host_growth <= HOST_ALLOWANCE and device_growth <= DEVICE_ALLOWANCE
    lines.append(
        f"| {name} | {calls} | {seconds:.1f} s ({seconds / calls * 1e6:.2f} µs/call) | "
        f"{samples[0][1] / 2**20:.1f} → {samples[-1][1] / 2**20:.1f} MiB ({host_growth / 2**20:+.2f}) | "
        f"{samples[0][2] / 2**20:.1f} → {samples[-1][2] / 2**20:.1f} MiB ({device_growth / 2**20:+.2f}) | "
        f"{'flat' if ok else 'GROWS'} |"
    )
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()

    import torch

    import fklir as fkl

    rng = np.random.default_rng(0)
    stream = torch.cuda.Stream()
    x = torch.from_numpy(rng.integers(0, 256, (67, 45, 3), dtype=np.uint8)).cuda()
    y = torch.empty((67, 45, 3), dtype=torch.float32, device="cuda")
    bound = fkl.compose(
        fkl.TensorRead(x), fkl.Cast("float32"), fkl.Mul(0.5), fkl.Sub((1.0, 2.0, 3.0)), fkl.TensorWrite(y)
    )
    images = [torch.from_numpy(rng.random((33, 17, 3), dtype=np.float32)).cuda() for _ in range(4)]
    listed = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite())
    out = torch.empty((4, 33, 17, 3), dtype=torch.float32, device="cuda")

    def bound_call() -> object:
        return bound(stream=stream)

    def list_call() -> object:
        return listed(images, out=out, stream=stream)

    lines = [
        f"soak {datetime.datetime.now():%Y-%m-%d %H:%M}, {torch.cuda.get_device_name()}, "
        f"`python benchmarks/soak.py --calls {args.calls}`",
        "",
        "| call | calls | time | host RSS (after warm-up → end) | device used | verdict |",
        "|---|---|---|---|---|---|",
    ]
    ok = soak("bound k(stream=s), 67x45x3 u8 → f32", bound_call, stream.synchronize, args.calls, lines)
    ok &= soak("unbound list of 4 x 33x17x3 f32, out=, stream=", list_call, stream.synchronize, args.calls, lines)

    expected = x.cpu().numpy().astype(np.float32) * 0.5 - np.array([1.0, 2.0, 3.0], np.float32)
    values_ok = np.array_equal(y.cpu().numpy(), expected)
    stacked = np.stack([im.cpu().numpy() for im in images])
    values_ok &= np.allclose(out.cpu().numpy(), stacked * 2.0 + 1.0, rtol=1e-6)
    lines.append("")
    lines.append(f"outputs after the soak equal numpy: {values_ok}")
    text = "\n".join(lines)
    print(text)
    if args.out is not None:
        args.out.write_text(text + "\n")
    return 0 if ok and values_ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
