"""Host cost of one call, cold compile time and the first call of a fresh process (SPEC §5, issue 4).

    python benchmarks/bench_launch.py [--out PATH] [--quick]

Rows, all measured in this run on the same small input (64x48x3 uint8, so GPU time stays below host
time and the launch queue never fills): a bare pre-packed cuLaunchKernel through cuda.bindings (the
floor for any Python launcher), fklir bound `k(stream=s)`, fklir unbound `pipe(x, out=y, stream=s)`
with torch tensors, a tiny torch op, a CuPy RawKernel. Each is the median over repetitions of the
mean host µs per call over N back-to-back calls. Then: cold compile of a new chain with nvcc (and
NVRTC when fklir has it), the whole first call of `pipe(x)`, for two families of three new structures
each (uint8 Adds then a Mul; the uint8 -> float32 normalisation then 0-2 Max), and the first call in a
fresh process whose disk cache holds the kernel, timed from after `compose()` (imports excluded), as
SPEC §5 asks, and the whole of import fklir + compose + first call there on both targets (issue 18). Last,
per-frame ROIs new every frame (1..64 random boxes): compose + call per frame beside CV-CUDA's as_images
of the crops + resize_crop_convert_reformat, and how many compiles the loop caused.
"""

from __future__ import annotations

import argparse
import compileall
import ctypes
import datetime
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

TINY_KERNEL = r"""
struct P { unsigned char* data; int n; int add; };
extern "C" __global__ void tiny(const P p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.data[i] = (unsigned char)(p.data[i] + p.add);
}
"""


def host_us(call: Callable[[], object], sync: Callable[[], None], n: int, reps: int) -> float:
    """Median over `reps` of the mean host µs per call of `n` back-to-back calls."""
    for _ in range(50):
        call()
    sync()
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        for _ in range(n):
            call()
        samples.append((time.perf_counter() - start) / n * 1e6)
        sync()
    return statistics.median(samples)


def cvcuda_as_images(images: list[Any]) -> Callable[[], object] | None:
    """CV-CUDA's wrapping of a list of tensors (what its var-shape ops need per call), or None without it."""
    try:
        import cvcuda  # pyright: ignore[reportMissingImports]
    except ImportError:
        return None
    return lambda: cvcuda.as_images(images, cvcuda.Format.RGB8)


def bare_launch(torch: Any, x: Any, stream: Any) -> Callable[[], object]:
    from cuda.bindings import driver

    from fklir.backend import compilers
    from fklir.runtime import cuda_driver

    with tempfile.TemporaryDirectory() as tmp:
        cubin = compilers.compile_cubin(TINY_KERNEL, Path(tmp), cuda_driver.device_arch(0), Path(tmp))
    kernel = cuda_driver.load_kernel(cubin, "tiny", 0)

    class P(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("n", ctypes.c_int), ("add", ctypes.c_int)]

    params = P(x.data_ptr(), x.numel(), 0)
    args = (ctypes.c_void_p * 1)(ctypes.addressof(params))
    address, handle = ctypes.addressof(args), stream.cuda_stream
    blocks = (x.numel() + 255) // 256
    function = kernel.function

    def call(kept: tuple[object, ...] = (params, args)) -> object:
        # `kept`: the launch reads the block through `address`, so the block and its void*[] live as long as
        # the call does (freed, their memory is reused and the kernel writes through a stale pointer)
        return driver.cuLaunchKernel(function, blocks, 1, 1, 256, 1, 1, 0, handle, address, 0)

    return call


def cupy_launch(x_np: Any) -> Callable[[], object] | str:
    try:
        import cupy
    except ImportError:
        return "not installed"
    kernel = cupy.RawKernel(
        r'extern "C" __global__ void k(unsigned char* d, int n) {'
        r" int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) d[i] = d[i] + 1; }",
        "k",
    )
    x = cupy.asarray(x_np)
    n = x.size
    return lambda: kernel(((n + 255) // 256,), (256,), (x, cupy.int32(n)))


FRESH_PROCESS = r"""
import sys, time
sys.path.insert(0, {root!r})
import torch, fklir as fkl
from fklir.backend.build import STATS
x = torch.zeros((1080, 1920, 3), dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
pipe = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul({mul}), fkl.Sub(3.0), fkl.SaturateCast("uint8"),
                   fkl.TensorWrite(), target="gpu")
start = time.perf_counter()
out = pipe(x)
elapsed = (time.perf_counter() - start) * 1e3
print(f"{{elapsed:.2f}} {{STATS.compiles}} {{STATS.disk_hits}} {{int('xdsl' in sys.modules)}}")
"""


def fresh_process_ms(root: str, cache: str, new_values: bool = False) -> tuple[float, int, int, bool]:
    """The first call of a fresh process whose disk cache holds the structure (filled by another process),
    with the same values or, `new_values`, one the cache never saw: ms, compiles, disk hits, xDSL imported."""
    env = {**os.environ, "FKLIR_CACHE_DIR": cache}
    script = FRESH_PROCESS.format(root=root, mul=0.5)
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)  # fills the cache
    script = FRESH_PROCESS.format(root=root, mul=0.625 if new_values else 0.5)
    out = subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True)
    ms, compiles, hits, xdsl = out.stdout.split()
    return float(ms), int(compiles), int(hits), xdsl == "1"


# The whole first call of a fresh process with a warm disk cache, from before `import fklir` to the result
# (the framework import and the CUDA context excluded, as issue 18 counts it); GPU and CPU targets. Printed:
# whole ms, compiles, disk hits, xDSL imported (0/1), then the ms of import fklir, compose and the first call.
FRESH_WHOLE = r"""
import sys, time
sys.path.insert(0, {root!r})
{setup}
start = time.perf_counter()
import fklir as fkl
imported = time.perf_counter()
pipe = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul({mul}), fkl.Sub(3.0), fkl.SaturateCast("uint8"),
                   fkl.TensorWrite(), target={target!r})
composed = time.perf_counter()
out = pipe(x)
{sync}
end = time.perf_counter()
elapsed = (end - start) * 1e3
from fklir.backend.build import STATS
print(f"{{elapsed:.2f}} {{STATS.compiles}} {{STATS.disk_hits}} {{int('xdsl' in sys.modules)}} "
      f"{{(imported - start) * 1e3:.2f}} {{(composed - imported) * 1e3:.2f}} {{(end - composed) * 1e3:.2f}}")
"""
FRESH_SETUP = {
    "gpu": (
        "import torch\nx = torch.zeros((1080, 1920, 3), dtype=torch.uint8, device='cuda')\ntorch.cuda.synchronize()",
        "torch.cuda.synchronize()",
    ),
    "cpu": ("import numpy as np\nx = np.zeros((1080, 1920, 3), dtype=np.uint8)", ""),
}


def fresh_whole_ms(
    root: str, cache: str, target: str, runs: int = 5
) -> tuple[float, int, int, bool, tuple[float, float, float]]:
    """Median ms of `runs` fresh processes after one that fills the cache; their compiles, disk hits, xDSL, and
    the median ms of its parts (import fklir, compose, the first call), which say where a slow host's time went."""
    env = {**os.environ, "FKLIR_CACHE_DIR": cache}
    setup, sync = FRESH_SETUP[target]
    script = FRESH_WHOLE.format(root=root, mul=0.25, target=target, setup=setup, sync=sync)
    subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True)
    rows = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True)
        rows.append(out.stdout.split())
    ms = statistics.median(float(r[0]) for r in rows)
    imported, composed, called = (statistics.median(float(r[i]) for r in rows) for i in (4, 5, 6))
    compiles, hits, xdsl = max(int(r[1]) for r in rows), min(int(r[2]) for r in rows), any(r[3] == "1" for r in rows)
    return ms, compiles, hits, xdsl, (imported, composed, called)


MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def frame_rects(draw: random.Random, count: int, w: int, h: int) -> list[tuple[int, int, int, int]]:
    """`count` detector boxes of random sizes inside a w x h frame."""
    rects = []
    for _ in range(count):
        rw, rh = draw.randint(24, 480), draw.randint(24, 480)
        rects.append((draw.randrange(w - rw + 1), draw.randrange(h - rh + 1), rw, rh))
    return rects


def roi_frames(fkl: Any, torch: Any, frames: int) -> list[str]:
    """Per-frame ROIs, new every frame (1..64 of them): compose + call, and CV-CUDA's as_images of the crops +
    resize_crop_convert_reformat, each frame synchronised. Rows: median µs per frame and the loop's compiles."""
    from fklir.backend.build import STATS

    w, h, out = 1920, 1080, 224
    image = torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device="cuda")
    draw = random.Random(7)
    plan = [frame_rects(draw, draw.randint(1, 64), w, h) for _ in range(frames)]
    mean = torch.tensor(MEAN, device="cuda").view(3, 1, 1)
    std = torch.tensor(STD, device="cuda").view(3, 1, 1)

    def fklir_compose(rects: list[tuple[int, int, int, int]]) -> Any:
        return fkl.compose(
            fkl.TensorRead(),
            fkl.Crop(rects),
            fkl.Resize(out, out),
            fkl.Mul(1 / 255),
            fkl.Sub(MEAN),
            fkl.Div(STD),
            fkl.TensorSplit(),
            target="gpu",
        )

    def fklir_frame(rects: list[tuple[int, int, int, int]]) -> Any:
        return fklir_compose(rects)(image)

    def cvcuda_frame(cvcuda: Any, rects: list[tuple[int, int, int, int]]) -> Any:
        crops = [image[y : y + rh, x : x + rw] for x, y, rw, rh in rects]
        target = torch.empty((len(rects), 3, out, out), dtype=torch.float32, device="cuda")
        images = cvcuda.as_images(crops, cvcuda.Format.RGB8)
        cvcuda.resize_crop_convert_reformat_into(
            cvcuda.as_tensor(target, "NCHW"),
            images,
            (out, out),
            cvcuda.Interp.LINEAR,
            (0, 0),
            scale=1 / 255,
            srcCast=False,
        )
        return target

    def loop(frame: Callable[[list[tuple[int, int, int, int]]], Any]) -> float:
        samples = []
        for rects in plan:
            start = time.perf_counter()
            frame(rects)
            torch.cuda.synchronize()
            samples.append((time.perf_counter() - start) * 1e6)
        return statistics.median(samples)

    fklir_frame(plan[0])  # the structure's one compile, before the loop
    torch.cuda.synchronize()
    compiles = STATS.compiles
    fklir_us = loop(fklir_frame)
    loop_compiles = STATS.compiles - compiles
    composed = []
    for rects in plan:
        start = time.perf_counter()
        fklir_compose(rects)
        composed.append((time.perf_counter() - start) * 1e6)
    rows = [
        f"| fklir: compose(new rects) alone, a known structure, 1..64 ROIs (issue 18: ≤ 50 µs) "
        f"| {statistics.median(composed):.1f} |",
        f"| fklir: compose(new rects) + call, 1..64 ROIs per frame ({loop_compiles} compiles in the loop) "
        f"| {fklir_us:.1f} |",
    ]
    try:
        import cvcuda  # pyright: ignore[reportMissingImports]
    except ImportError:
        rows.append("| CV-CUDA as_images(crops) + resize_crop_convert_reformat | not installed |")
        return rows
    got = fklir_frame(plan[1])
    theirs = (cvcuda_frame(cvcuda, plan[1]) - mean) / std
    torch.cuda.synchronize()
    worst = float((got - theirs).abs().max())
    cv_us = loop(lambda rects: cvcuda_frame(cvcuda, rects))
    rows.append(
        f"| CV-CUDA {cvcuda.__version__} as_images(crops) + resize_crop_convert_reformat, no normalise "
        f"(max |fklir - CV-CUDA normalised| = {worst:.2g}) | {cv_us:.1f} |"
    )
    return rows


def shipped_kernels(torch: Any, stream: Any, n: int, reps: int) -> dict[str, float | str]:
    """Host µs per call of the shipped kernels on a caller's stream, into a given output and allocating one,
    beside CV-CUDA's calls of the same op where it is installed. Small inputs (64x48), so that the GPU keeps up
    and the host's cost is what is timed."""
    from fklir.kernels.histogram import histogram
    from fklir.kernels.nv12_to_rgb import nv12_to_rgb

    sync = stream.synchronize
    grey = torch.randint(0, 256, (48, 64), dtype=torch.uint8, device="cuda")
    counts = torch.empty((1, 256), dtype=torch.int32, device="cuda")
    frame = torch.randint(0, 256, (72, 64), dtype=torch.uint8, device="cuda")  # 48 rows of Y, 24 of UV
    rgb = torch.empty((48, 64, 3), dtype=torch.uint8, device="cuda")
    calls: dict[str, Callable[[], object]] = {
        "histogram(grey, out=counts, stream=s)": lambda: histogram(grey, out=counts, stream=stream),
        "histogram(grey, stream=s) (allocates)": lambda: histogram(grey, stream=stream),
        "nv12_to_rgb(frame, out=rgb, stream=s)": lambda: nv12_to_rgb(frame, out=rgb, stream=stream),
        "nv12_to_rgb(frame, stream=s) (allocates)": lambda: nv12_to_rgb(frame, stream=stream),
    }
    rows: dict[str, float | str] = {name: host_us(call, sync, n, reps) for name, call in calls.items()}
    try:
        import cvcuda  # pyright: ignore[reportMissingImports]
    except ImportError:
        rows["CV-CUDA histogram / cvtcolor NV12"] = "not installed"
        return rows
    handle = cvcuda.as_stream(stream)
    nhwc_grey = cvcuda.as_tensor(grey.view(1, 48, 64, 1), "NHWC")
    nhwc_frame = cvcuda.as_tensor(frame.view(1, 72, 64, 1), "NHWC")
    hist_out = cvcuda.as_tensor(torch.empty((1, 256, 1), dtype=torch.int32, device="cuda"), "HWC")
    rgb_out = cvcuda.as_tensor(rgb.view(1, 48, 64, 3), "NHWC")
    code = cvcuda.ColorConversion.YUV2RGB_NV12
    rows["CV-CUDA histogram_into(tensors wrapped once)"] = host_us(
        lambda: cvcuda.histogram_into(hist_out, nhwc_grey, stream=handle), sync, n, reps
    )
    rows["CV-CUDA cvtcolor_into NV12 → RGB (tensors wrapped once)"] = host_us(
        lambda: cvcuda.cvtcolor_into(rgb_out, nhwc_frame, code, stream=handle), sync, n, reps
    )
    return rows


def median_us(call: Callable[[int], object], count: int) -> float:
    """Median host µs of call(i) over i < count (each call its own new objects)."""
    samples = []
    for i in range(count):
        start = time.perf_counter()
        call(i)
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples)


def new_objects(fkl: Any, torch: Any, x: Any, y: Any, stream: Any, count: int) -> dict[str, float | str]:
    """Issue 28's rows: what a new pipeline object of a known structure costs on a caller's stream (host µs,
    median of `count`, the stream synchronised at the end only), and the per-frame ROI loop likewise."""
    from fklir.backend.build import STATS

    def chain(mul: float, sub: float = 3.0) -> Any:
        ops = (fkl.Cast("float32"), fkl.Mul(mul), fkl.Sub(sub), fkl.SaturateCast("uint8"))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")

    warm = chain(0.5)
    warm(x, out=y, stream=stream)
    made = [chain(1.0 + i * 1e-3) for i in range(count)]
    compiles = STATS.compiles
    rows: dict[str, float | str] = {
        "warm call pipe(x, out=y, stream=s)": median_us(lambda _i: warm(x, out=y, stream=stream), count),
        "compose() alone, known structure, new values": median_us(lambda i: chain(2.0 + i * 1e-3), count),
        "first call of a new pipeline object (compose excluded), new values": median_us(
            lambda i: made[i](x, out=y, stream=stream), count
        ),
        "compose + first call, new values each call": median_us(
            lambda i: chain(3.0 + i * 1e-3)(x, out=y, stream=stream), count
        ),
        "compose + first call, the same values re-composed": median_us(
            lambda _i: chain(0.5)(x, out=y, stream=stream), count
        ),
        "compose + first call without out= (allocates the output)": median_us(
            lambda i: chain(4.0 + i * 1e-3)(x, stream=stream), count
        ),
    }
    stream.synchronize()
    got, expected = chain(1.5, 2.0)(x, stream=stream), (x.float() * 1.5 - 2.0).round().clamp(0, 255).to(torch.uint8)
    stream.synchronize()
    rows["(new objects' outputs equal torch's, compiles in these rows)"] = (
        f"{bool(torch.equal(got, expected))}, {STATS.compiles - compiles}"
    )
    w, h, side = 1920, 1080, 224
    image = torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device="cuda")
    draw = random.Random(11)
    plan = [frame_rects(draw, draw.randint(1, 64), w, h) for _ in range(count)]

    def roi_chain(rects: list[tuple[int, int, int, int]]) -> Any:
        ops = (fkl.Crop(rects), fkl.Resize(side, side), fkl.Mul(1 / 255), fkl.Sub(MEAN), fkl.Div(STD))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorSplit(), target="gpu")

    roi_chain(plan[0])(image, stream=stream)
    stream.synchronize()
    rows["per-frame ROI loop: compose(1..64 new rects) alone"] = median_us(lambda i: roi_chain(plan[i]), count)
    rows["per-frame ROI loop: compose(1..64 new rects) + call on a caller's stream"] = median_us(
        lambda i: roi_chain(plan[i])(image, stream=stream), count
    )
    frame_pipes = [roi_chain(rects) for rects in plan]  # each frame's pipeline, composed before its first call
    rows["per-frame ROI loop: a frame's first call (compose excluded)"] = median_us(
        lambda i: frame_pipes[i](image, stream=stream), count
    )
    rows["per-frame ROI loop: the warm call of one frame's pipeline"] = median_us(
        lambda _i: frame_pipes[0](image, stream=stream), count
    )
    full = [frame_rects(draw, 64, w, h) for _ in range(count)]  # drawn before timing: drawing costs more
    rows["per-frame ROI loop: compose(64 new rects) alone"] = median_us(lambda i: roi_chain(full[i]), count)
    stream.synchronize()
    return rows


def new_graph_objects(
    fkl: Any, x: Any, background: Any, stream: Any, count: int, torch: Any = None
) -> dict[str, float | str]:
    """The same rows for a DAG (SPEC §8's background subtraction of x and background: two inputs, two outputs);
    with `torch`, a new object's output checked against torch's."""
    from fklir.backend.build import STATS

    def graph(gain: float) -> Any:
        branch = fkl.Input(1, fkl.Cast("float32"))
        ops = (fkl.Cast("float32"), fkl.Mul(gain), fkl.AbsDiff(branch), fkl.MidWrite(), fkl.VectorReduce("Max"))
        mask = (fkl.Threshold(25.0), fkl.SaturateCast("uint8"))
        return fkl.compose(fkl.TensorRead(), *ops, *mask, fkl.TensorWrite(), target="gpu")

    warm = graph(1.0)
    out = warm(x, background, stream=stream)
    made = [graph(1.0 + i * 1e-3) for i in range(count)]
    compiles = STATS.compiles
    rows: dict[str, float | str] = {
        "DAG warm call pipe(x, bg, out=(d, m), stream=s)": median_us(
            lambda _i: warm(x, background, out=out, stream=stream), count
        ),
        "DAG warm call pipe(x, bg, stream=s) (allocates both outputs)": median_us(
            lambda _i: warm(x, background, stream=stream), count
        ),
        "DAG compose() alone, known structure, new values": median_us(lambda i: graph(2.0 + i * 1e-3), count),
        "DAG first call of a new object (compose excluded), new values": median_us(
            lambda i: made[i](x, background, out=out, stream=stream), count
        ),
    }
    if torch is None:
        return rows
    diff, _mask = graph(1.5)(x, background, stream=stream)
    stream.synchronize()
    expected = (x.float() * 1.5 - background.float()).abs()
    rows["(new DAG objects' outputs equal torch's, compiles in these rows)"] = (
        f"{bool(torch.equal(diff, expected))}, {STATS.compiles - compiles}"
    )
    return rows


def import_driver_ms(runs: int = 5) -> float:
    """`import cuda.bindings.driver` in a fresh process (median ms): the floor of a fresh GPU process."""
    script = "import time; s = time.perf_counter(); import cuda.bindings.driver; print((time.perf_counter() - s) * 1e3)"
    times = [
        float(subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True).stdout)
        for _ in range(runs)
    ]
    return statistics.median(times)


def torch_accessor_us(images: list[Any], n: int, reps: int) -> float:
    """torch's own accessors for a list call (pointer, dtype, shape, device, contiguity of each tensor)."""

    def read() -> object:
        return [(t.data_ptr(), t.dtype, t.shape, t.get_device(), t.is_contiguous()) for t in images]

    return host_us(read, lambda: None, n, reps)


def adds_then_mul(fkl: Any, i: int) -> list[Any]:
    """Chain i of the first family: 3 + i Adds then a Mul, on uint8 (every i a new structure)."""
    return [fkl.Add(1)] * (3 + i) + [fkl.Mul(float(i + 2))]


def normalise_then_clamps(fkl: Any, i: int) -> list[Any]:
    """Chain i of the second family: uint8 -> float32 normalisation (ToTensor + Normalize) then i Max."""
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    return [fkl.Cast("float32"), fkl.Mul(1 / 255), fkl.Sub(mean), fkl.Div(std)] + [fkl.Max(-2.0)] * i


def cold_compile_ms(
    fkl: Any,
    torch: Any,
    x: Any,
    backend: str,
    count: int,
    chain: Callable[[Any, int], list[Any]] = adds_then_mul,
    first: int = 0,
) -> list[float]:
    """Compile `count` chains of new structures (`chain(fkl, i)`, i from `first`) with an empty disk cache. Each
    backend takes chains of its own: a structure that one compiled is a plan the other would only look up."""
    from fklir.backend import build

    times = []
    previous = fkl.get_backend()
    fkl.set_backend(backend)
    if backend == "nvrtc":  # SPEC times NVRTC "once the library is loaded": load it before the clock runs
        from fklir.backend import compilers

        compilers.nvrtc_version()
    try:
        for i in range(first, first + count):
            pipe = fkl.compose(fkl.TensorRead(), *chain(fkl, i), fkl.TensorWrite(), target="gpu")
            compiles = build.STATS.compiles
            start = time.perf_counter()
            pipe(x)
            times.append((time.perf_counter() - start) * 1e3)
            assert build.STATS.compiles == compiles + 1, "expected a real compile"
    finally:
        fkl.set_backend(previous)
    return times


FLOOR_SOURCE = '#include "fkl/kernel.h"\nextern "C" __global__ void k(unsigned char* d) { d[threadIdx.x] += 1; }\n'


def nvrtc_floor_ms(count: int = 5) -> float | str:
    """NVRTC's floor on this host, this run: the median compile of a kernel that includes our header and
    adds 1 to a byte (fklir's options, precompiled header warm). Host load moves every compile time; this
    row says how fast the host compiled while the chains above were measured."""
    try:
        from fklir.backend import compilers
        from fklir.backend.build import INCLUDE_DIR

        compilers.compile_cubin_nvrtc(FLOOR_SOURCE, INCLUDE_DIR, "sm_90")
        times = []
        for i in range(count):
            start = time.perf_counter()
            compilers.compile_cubin_nvrtc(FLOOR_SOURCE + f"// {time.time()} {i}\n", INCLUDE_DIR, "sm_90")
            times.append((time.perf_counter() - start) * 1e3)
    except Exception as e:  # libnvrtc may be missing
        return f"unavailable: {type(e).__name__}: {e}"[:120]
    return statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="append the markdown report to this file")
    parser.add_argument("--quick", action="store_true", help="fewer calls (smoke test)")
    args = parser.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("bench_launch: needs torch", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("bench_launch: needs a CUDA GPU", file=sys.stderr)
        return 2
    os.environ["FKLIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="fklir-bench-launch-")
    import numpy as np

    import fklir as fkl

    n, reps = (200, 5) if args.quick else (2000, 15)
    stream = torch.cuda.Stream()
    x_np = np.random.default_rng(0).integers(0, 256, (64, 48, 3), dtype=np.uint8)
    x = torch.from_numpy(x_np).cuda()
    y = torch.empty_like(x)
    torch.cuda.synchronize()

    def chain(read: Any, write: Any) -> Any:
        return fkl.compose(read, fkl.Cast("float32"), fkl.Mul(0.5), fkl.Sub(3.0), fkl.SaturateCast("uint8"), write)

    bound = chain(fkl.TensorRead(x), fkl.TensorWrite(y))
    unbound = chain(fkl.TensorRead(), fkl.TensorWrite())
    with torch.cuda.stream(stream):
        rows: dict[str, float | str] = {}
        sync = stream.synchronize
        bare = bare_launch(torch, x, stream)
        rows["bare cuLaunchKernel (cuda.bindings, pre-packed struct)"] = host_us(bare, sync, n, reps)
        rows["fklir bound k(stream=s)"] = host_us(lambda: bound(stream=stream), sync, n, reps)
        rows["fklir unbound pipe(x, out=y, stream=s), torch"] = host_us(
            lambda: unbound(x, out=y, stream=stream), sync, n, reps
        )
        for count in (16, 32):  # issue 18 item 4: a list call's host cost, and what each extra tensor adds
            images = [torch.randint(0, 256, (64, 48, 3), dtype=torch.uint8, device="cuda") for _ in range(count)]
            stacked = torch.empty((count, 64, 48, 3), dtype=torch.uint8, device="cuda")
            rows[f"fklir unbound list call pipe([{count} tensors], out=y, stream=s)"] = host_us(
                lambda images=images, stacked=stacked: unbound(images, out=stacked, stream=stream), sync, n, reps
            )
            rows[f"torch's accessors of {count} tensors (the floor of a list call)"] = torch_accessor_us(
                images, n, reps
            )
            as_images = cvcuda_as_images(images)
            if as_images is not None:
                rows[f"CV-CUDA as_images([{count} tensors]) alone"] = host_us(as_images, sync, n, reps)
        rows["torch tiny op (x.add_(1))"] = host_us(lambda: x.add_(1), sync, n, reps)
        cupy_call = cupy_launch(x_np)
        rows["CuPy RawKernel"] = (
            cupy_call if isinstance(cupy_call, str) else host_us(cupy_call, torch.cuda.synchronize, n, reps)
        )
        objects = new_objects(fkl, torch, x, y, stream, 200 if args.quick else 1000)
        background = torch.randint(0, 256, tuple(x.shape), dtype=torch.uint8, device="cuda")
        objects |= new_graph_objects(fkl, x, background, stream, 200 if args.quick else 1000, torch)
        shipped = shipped_kernels(torch, stream, n, reps)
    big = torch.zeros((1080, 1920, 3), dtype=torch.uint8, device="cuda")
    cold: dict[str, str] = {}
    for family, chain in (("uint8 Adds + Mul", adds_then_mul), ("uint8 → float32 normalise", normalise_then_clamps)):
        for backend in ("nvcc", "nvrtc"):
            name = f"{'nvcc' if backend == 'nvcc' else 'NVRTC'} → cubin, new chain: {family} (3 chains, each)"
            try:
                times = cold_compile_ms(fkl, torch, big, backend, 3, chain, first=0 if backend == "nvcc" else 3)
            except Exception as e:  # the NVRTC backend or libnvrtc may be missing
                cold[name] = f"unavailable: {type(e).__name__}: {e}"[:120]
                continue
            cold[name] = ", ".join(f"{t:.0f}" for t in times)
    floor = nvrtc_floor_ms()
    root = str(Path(__file__).resolve().parents[1])
    # An installed fklir starts from bytecode (pip compiles it at install); where nothing writes it (a
    # fresh checkout, PYTHONDONTWRITEBYTECODE) every fresh process would compile the sources instead.
    compileall.compile_dir(Path(root) / "fklir", quiet=1)
    fresh_ms, fresh_compiles, fresh_hits, _ = fresh_process_ms(root, tempfile.mkdtemp(prefix="fklir-fresh-"))
    new_values = fresh_process_ms(root, tempfile.mkdtemp(prefix="fklir-fresh-"), new_values=True)
    driver_ms = import_driver_ms()
    whole = {t: fresh_whole_ms(root, tempfile.mkdtemp(prefix="fklir-fresh-"), t) for t in ("gpu", "cpu")}
    frames = roi_frames(fkl, torch, 50 if args.quick else 200)

    now = datetime.datetime.now(datetime.UTC)
    lines = [
        f"### {now:%Y-%m-%d %H:%M} UTC - {torch.cuda.get_device_name(0)} - bench_launch",
        "",
        f"- command: `python3 benchmarks/{Path(__file__).name} {' '.join(argv)}`".rstrip() + "",
        f"- torch {torch.__version__}, {n} calls x {reps} repetitions per row, median of per-call means",
        "",
        "| call (64x48x3 uint8, caller's stream) | host µs per call |",
        "|---|---|",
        *(f"| {name} | {v if isinstance(v, str) else f'{v:.2f}'} |" for name, v in rows.items()),
        "",
        "| cold path | ms |",
        "|---|---|",
        *(f"| {name} | {text} |" for name, text in cold.items()),
        f"| NVRTC floor on this host: an empty kernel with fkl/kernel.h (median of 5) | "
        f"{floor if isinstance(floor, str) else f'{floor:.0f}'} |",
        f"| fresh process, warm disk cache: first call after compose "
        f"(compiles={fresh_compiles}, disk hits={fresh_hits}) | {fresh_ms:.2f} |",
        f"| fresh process, warm disk cache, a value it never saw: first call after compose (compiles={new_values[1]}, "
        f"disk hits={new_values[2]}, xDSL imported: {new_values[3]}) | {new_values[0]:.2f} |",
        f"| import cuda.bindings.driver in a fresh process (median of 5; issue 28: a fresh GPU process's whole "
        f"first call ≤ this + 12) | {driver_ms:.2f} |",
        *(
            f"| fresh process, warm disk cache, {t.upper()} target: import fklir + compose + first call "
            f"(compiles={c}, disk hits={d}, xDSL imported: {x}; median of 5; the parts' medians: import "
            f"{parts[0]:.2f}, compose {parts[1]:.2f}, first call {parts[2]:.2f}) | {ms:.2f} |"
            for t, (ms, c, d, x, parts) in whole.items()
        ),
        "| fkl-python's whole first call from a warm cache (quoted in issue 18, not measured here) | 6 |",
        "",
        "| shipped kernels on a caller's stream (issue 29: out= ≤ 10 µs, allocating ≤ 15 µs) | host µs per call |",
        "|---|---|",
        *(f"| {name} | {v if isinstance(v, str) else f'{v:.2f}'} |" for name, v in shipped.items()),
        "",
        "| new pipeline objects of a known structure (issue 28), 64x48x3 uint8 | host µs (median) |",
        "|---|---|",
        *(f"| {name} | {v if isinstance(v, str) else f'{v:.1f}'} |" for name, v in objects.items()),
        "",
        "| per-frame ROIs, 1080p uint8x3 → 224x224 → planar float32, synchronised each frame | µs per frame (median) |",
        "|---|---|",
        *frames,
        "",
    ]
    emit(lines, args.out)
    return 0


def emit(lines: list[str], out: str | Path | None) -> None:
    """Print a markdown report and append it to `out` when given (RESULTS.md takes it from there)."""
    report = "\n".join(lines)
    print(report)
    if out:
        with open(out, "a") as f:
            f.write(report + "\n")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
