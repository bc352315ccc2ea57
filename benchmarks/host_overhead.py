"""fklir's own Python work per GPU call, measured WITHOUT a GPU: the CUDA driver and torch are stubbed.

    python3 benchmarks/host_overhead.py [--calls N] [--fresh-only] [--profile]

Every driver entry point (cuLaunchKernel, cuCtxGetCurrent, ...) is a Python function that returns
CUDA_SUCCESS at once, and torch tensors and streams are Python objects with the accessors fklir reads
(tests/runtime/fake_driver.py). What remains is the Python that fklir runs around the launch, so this
measures what a change to fklir's host path saves. The stub device has compute capability 9.0, so
launches go through the stubbed cuLaunchKernelEx (programmatic dependent launch), which is one Python call
more than the stub floor (FKLIR_PDL=0: the plain stub). It cannot measure the driver's own cost: the bare
cuLaunchKernel of cuda.bindings is ~4.3 µs on the H200 against ~0.2 µs for the stub, and any other real
driver call a path makes (cuCtxGetCurrent, ...) likewise costs more than its stub. bench_launch.py
measures the real thing on the device.

Rows (µs per call, median of repetitions of N back-to-back calls):
- stub floor: the stubbed cuLaunchKernel called with pre-packed arguments (what "bare" costs here);
- bound `k(stream=s)`; unbound `pipe(x, out=y, stream=s)`; unbound `pipe(x, stream=s)` (allocates
  the output); unbound `pipe(x)` (the producer's stream, synchronised);
- the shipped kernels' repeated calls on a caller's stream, with out= and allocating (histogram of a 1080p
  grey image, nv12_to_rgb of a 4K frame; their jit instances 'loaded' from a stand-in cubin);
- issue 28's rows: a new pipeline object's compose and first call, the per-frame ROI loop, a DAG's;
- fresh process: ms from compose() returning to the first call returning, in a new interpreter whose
  disk cache already holds the kernel (like bench_launch's FRESH_PROCESS; here the cubin is a stand-in,
  the driver's cuModuleLoadData (0.1-0.6 ms on the H200) is not in it). --profile prints the first
  call's cProfile (cumulative) and the modules it imported.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_launch import frame_rects, median_us, new_graph_objects  # noqa: E402  (bench_launch imports torch only in main)

FAKE_CUBIN = b"\x7fELF" + bytes(16 * 1024)  # about the size of a small fused kernel's cubin


_STUBS: list[tuple[Any, Any]] = []


def install_stubs(fake_compile: bool = True, pay_real_import: bool = False) -> tuple[Any, Any]:
    """Fake torch and driver in place before fklir is imported; kernels 'compile' to a stand-in cubin.

    fake_compile=False leaves fklir.backend.build unimported (a fresh process must import it itself).
    pay_real_import: fklir's first use of the driver imports the real cuda.bindings.driver (its cost is
    part of a fresh process's first call, or of compose, depending on where fklir makes it).
    """
    from tests.runtime.fake_driver import FakeDriver, install, make_fake_torch

    if _STUBS:  # this process has them: the rows share one fake torch and driver
        return _STUBS[0]
    if "torch" in sys.modules:
        raise SystemExit("host_overhead: run it in its own interpreter (a real torch is already imported)")
    torch = make_fake_torch()
    sys.modules["torch"] = torch
    driver = FakeDriver(strict=False, record=False)
    install(driver, pay_real_import)  # for the life of this process
    _STUBS.append((torch, driver))
    if not fake_compile:
        return torch, driver
    from fklir.backend import build

    build._compile_gpu = lambda emitted, key, arch: FAKE_CUBIN  # pyright: ignore[reportAttributeAccessIssue]
    return torch, driver


def per_call_us(call: Callable[[], object], n: int, reps: int) -> float:
    """Median over `reps` of the mean µs per call of `n` back-to-back calls, after a warm-up."""
    for _ in range(200):
        call()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            call()
        samples.append((time.perf_counter() - start) / n * 1e6)
    return statistics.median(samples)


def chain(fkl: Any, read: Any, write: Any) -> Any:
    """bench_launch's chain."""
    return fkl.compose(read, fkl.Cast("float32"), fkl.Mul(0.5), fkl.Sub(3.0), fkl.SaturateCast("uint8"), write)


def warm_rows(n: int, reps: int) -> dict[str, float]:
    torch, driver = install_stubs()
    import fklir as fkl

    x = torch.empty((64, 48, 3), dtype=torch.uint8)
    y = torch.empty((64, 48, 3), dtype=torch.uint8)
    stream = torch.cuda.Stream()
    bound = chain(fkl, fkl.TensorRead(x), fkl.TensorWrite(y))
    unbound = chain(fkl, fkl.TensorRead(), fkl.TensorWrite())
    bound()  # the first bound call fills the block with the bindings
    unbound(x, out=y, stream=stream)
    function, address = object(), 0x1234
    launch = driver.cuLaunchKernel
    return {
        "stub floor: cuLaunchKernel(pre-packed)": per_call_us(
            lambda: launch(function, 1, 1, 1, 256, 1, 1, 0, 7, address, 0), n, reps
        ),
        "bound k(stream=s)": per_call_us(lambda: bound(stream=stream), n, reps),
        "unbound pipe(x, out=y, stream=s)": per_call_us(lambda: unbound(x, out=y, stream=stream), n, reps),
        "unbound pipe(x, stream=s) (allocates)": per_call_us(lambda: unbound(x, stream=stream), n, reps),
        "unbound pipe(x) (own stream, synchronised)": per_call_us(lambda: unbound(x), n, reps),
    }


def new_object_rows(count: int) -> dict[str, float]:
    """bench_launch's issue-28 rows over the stubs: a new pipeline object's first call, the per-frame ROI loop
    (compose with 1..64 new rects + call on a caller's stream), and a DAG's warm call, compose and first call."""
    torch, _driver = install_stubs()
    import fklir as fkl

    x = torch.empty((48, 64, 3), dtype=torch.uint8)
    y = torch.empty((48, 64, 3), dtype=torch.uint8)
    stream = torch.cuda.Stream()

    def scaled(mul: float) -> Any:
        ops = (fkl.Cast("float32"), fkl.Mul(mul), fkl.Sub(3.0), fkl.SaturateCast("uint8"))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")

    warm = scaled(0.5)
    warm(x, out=y, stream=stream)
    made = [scaled(1.0 + i * 1e-3) for i in range(count)]
    w, h, side = 1920, 1080, 224
    image = torch.empty((h, w, 3), dtype=torch.uint8)
    draw = random.Random(11)
    frames = [frame_rects(draw, draw.randint(1, 64), w, h) for _ in range(count)]

    def roi(rects: list[tuple[int, int, int, int]]) -> Any:
        ops = (fkl.Crop(rects), fkl.Resize(side, side), fkl.Mul(1 / 255), fkl.Sub(0.5), fkl.Div(0.25))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorSplit(), target="gpu")

    roi(frames[0])(image, stream=stream)
    full = [frame_rects(draw, 64, w, h) for _ in range(count)]
    made_rois = [roi(rects) for rects in frames]  # each frame's pipeline, composed before its first call
    background = torch.empty((48, 64, 3), dtype=torch.uint8)
    return {
        "warm pipe(x, out=y, stream=s)": median_us(lambda _i: warm(x, out=y, stream=stream), count),
        "compose(), known structure, new values": median_us(lambda i: scaled(2.0 + i * 1e-3), count),
        "first call of a new pipeline object (compose excluded)": median_us(
            lambda i: made[i](x, out=y, stream=stream), count
        ),
        "per-frame ROI loop: compose(1..64 new rects)": median_us(lambda i: roi(frames[i]), count),
        "per-frame ROI loop: compose(1..64 new rects) + call": median_us(
            lambda i: roi(frames[i])(image, stream=stream), count
        ),
        "per-frame ROI loop: a frame's first call (compose excluded)": median_us(
            lambda i: made_rois[i](image, stream=stream), count
        ),
        "per-frame ROI loop: the warm call of one frame's pipeline": median_us(
            lambda _i: made_rois[0](image, stream=stream), count
        ),
        "per-frame ROI loop: compose(64 new rects)": median_us(lambda i: roi(full[i]), count),
        **{name: float(us) for name, us in new_graph_objects(fkl, x, background, stream, count).items()},
    }


def shipped_kernel_rows(n: int, reps: int) -> dict[str, float]:
    """Issue 29's rows over the stubs: the shipped kernels' repeated calls on a caller's stream, with out= and
    allocating (bench_launch's sizes: a 1080p grey histogram, a 4K NV12 frame)."""
    torch, driver = install_stubs()
    from tests.runtime.fake_driver import load_stand_in

    driver.cuCtxSynchronize = lambda: (0,)  # a stream's histogram scratch is made once, from the host
    driver.cuMemcpyHtoD = lambda destination, source, nbytes: (0,)
    from fklir.jit import user_kernel

    user_kernel.instances.load = load_stand_in  # pyright: ignore[reportAttributeAccessIssue]
    from fklir.kernels.histogram import histogram
    from fklir.kernels.nv12_to_rgb import nv12_to_rgb

    grey, counts = torch.empty((1080, 1920), dtype=torch.uint8), torch.empty((1, 256), dtype=torch.int32)
    frame, rgb = torch.empty((3240, 3840), dtype=torch.uint8), torch.empty((2160, 3840, 3), dtype=torch.uint8)
    stream = torch.cuda.Stream()
    return {
        "histogram(grey, out=counts, stream=s)": per_call_us(
            lambda: histogram(grey, out=counts, stream=stream), n, reps
        ),
        "histogram(grey, stream=s) (allocates)": per_call_us(lambda: histogram(grey, stream=stream), n, reps),
        "nv12_to_rgb(frame, out=rgb, stream=s)": per_call_us(
            lambda: nv12_to_rgb(frame, out=rgb, stream=stream), n, reps
        ),
        "nv12_to_rgb(frame, stream=s) (allocates)": per_call_us(lambda: nv12_to_rgb(frame, stream=stream), n, reps),
    }


FRESH = r"""
import sys, time
sys.path.insert(0, {here!r})  # (site-packages may hold another package named `benchmarks`)
import host_overhead
from host_overhead import chain, install_stubs
torch, driver = install_stubs(fake_compile={fill}, pay_real_import=True)
import fklir as fkl
from fklir.backend.build import STATS
x = torch.empty((1080, 1920, 3), dtype=torch.uint8)
pipe = chain(fkl, fkl.TensorRead(), fkl.TensorWrite())
before = set(sys.modules)
profile = {profile}
if profile:
    import cProfile, pstats
    profiler = cProfile.Profile()
    profiler.enable()
start = time.perf_counter()
pipe(x)
elapsed = (time.perf_counter() - start) * 1e3
if profile:
    profiler.disable()
    pstats.Stats(profiler, stream=sys.stderr).sort_stats("cumulative").print_stats(40)
    print("imported by the first call:", sorted(set(sys.modules) - before), file=sys.stderr)
print(f"{{elapsed:.2f}} {{STATS.compiles}} {{STATS.disk_hits}}")
"""


def fresh_process_ms(profile: bool, runs: int = 5) -> tuple[float, str]:
    """Median ms of the first call in `runs` fresh interpreters sharing one filled disk cache."""
    env = {**os.environ, "FKLIR_CACHE_DIR": tempfile.mkdtemp(prefix="fklir-host-overhead-")}
    fill = FRESH.format(here=str(Path(__file__).resolve().parent), profile=False, fill=True)
    subprocess.run([sys.executable, "-c", fill], env=env, check=True, capture_output=True)  # fills the cache
    script = FRESH.format(here=str(Path(__file__).resolve().parent), profile=False, fill=False)
    samples, counters = [], ""
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True)
        ms, compiles, hits = out.stdout.split()
        samples.append(float(ms))
        counters = f"compiles={compiles}, disk hits={hits}"
    if profile:
        script = FRESH.format(here=str(Path(__file__).resolve().parent), profile=True, fill=False)
        out = subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True)
        print(out.stderr)
    return statistics.median(samples), counters


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=20000, help="calls per repetition")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--objects", type=int, default=500, help="new pipeline objects per issue-28 row")
    parser.add_argument("--fresh-only", action="store_true", help="only the fresh-process row")
    parser.add_argument("--profile", action="store_true", help="print the fresh process's first-call profile")
    args = parser.parse_args(argv)
    rows: dict[str, str] = {}
    if not args.fresh_only:
        for name, us in warm_rows(args.calls, args.reps).items():
            rows[name] = f"{us:.2f} µs"
        for name, us in shipped_kernel_rows(args.calls, args.reps).items():
            rows[name] = f"{us:.2f} µs"
        for name, us in new_object_rows(args.objects).items():
            rows[f"{name} (median of {args.objects})"] = f"{us:.2f} µs"
    ms, counters = fresh_process_ms(args.profile)
    rows[f"fresh process: first call after compose ({counters})"] = f"{ms:.2f} ms"
    print(f"Python {sys.version.split()[0]}, stubbed driver and torch, median of {args.reps} x {args.calls} calls")
    print("| path | Python-side cost |")
    print("|---|---|")
    for name, value in rows.items():
        print(f"| {name} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
