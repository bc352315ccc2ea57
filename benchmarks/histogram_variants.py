"""Experiment: time layouts of the GPU histogram kernel against the shipped one (device only).

    PYTHONPATH=. python3 benchmarks/histogram_variants.py

The shipped kernel (fklir/kernels/histogram/histogram.cuh: one launch, the blocks' counts summed in the
stream's scratch and moved to out by each image's last block) through histogram() itself; the same kernel
with other Layouts (threads per block, 16-byte words per thread and round, a copy of the bins per lane or one
per block, runs of equal bytes merged or only uniform words, blocks per image of a batch from the device's
resident blocks or from the bytes alone); and the two launches of f8434d7 (clear out, then add every block's
counts to it with global atomics). Each is built with nvcc first, which runs without a GPU (ptxas's register
counts are printed); on a GPU each is checked equal to numpy's bincount, then timed with bench_chain's method
on issue 16's three workloads and a constant image. Not a benchmark of record: it exists to choose the shipped
layout, histogram's layout_for (see RESULTS.md).
"""

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Method
from bench_histogram import ASKED, GPU_BIG, MORE, Workload, make_images, reference
from ptxas_usage import kernel_usage

import fklir as fkl
from fklir import jit
from fklir.backend import compilers
from fklir.kernels import histogram as shipped
from fklir.kernels.histogram import GREY_LAYOUT, Layout

SHIPPED_CUH = Path(shipped.__file__).resolve().parent / "histogram.cuh"
INCLUDE = Path(fkl.__file__).resolve().parent / "backend" / "include"
ARCH = "sm_90"
WORKLOADS = (*ASKED, MORE[0])  # issue 16's three and a constant image (one bin takes every count)
METHOD = Method(calls=20, reps=11, warmup=5)
# 3c83fe0's layout: 256 threads of 4 words, one copy of the bins, runs merged, blocks from the bytes alone.
BEFORE = Layout(threads=256, words=4, striped=False, runs=True, batch_waves=0)

# f8434d7's two kernels on the shipped counting (one copy of the bins, runs merged).
TWO_KERNELS_CUH = f"""#include "{SHIPPED_CUH}"

// f8434d7: out[i] = 0, one thread per count ...
__global__ void histogram_clear(fkl::TensorView out) {{
    const i64 count = out.shape[0] * out.shape[1] * out.shape[2];
    const i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) out.ptr<i32>()[i] = 0;
}}

// ... then every block adds its non-zero bins to out with global atomics.
template <int C>
__global__ void histogram_add(fkl::TensorView images, fkl::TensorView out) {{
    __shared__ u32 bins[C * 256];
    const i64 bytes = images.shape[1] * images.shape[2] * C;
    for (i64 image = blockIdx.y; image < images.shape[0]; image += gridDim.y) {{
        count_share<C, {BEFORE.threads}, {BEFORE.words}, 1, true>(bins, images.ptr<u8>() + image * bytes, bytes);
        __syncthreads();
        i32* counts = out.ptr<i32>() + image * C * 256;
        for (int i = threadIdx.x; i < C * 256; i += blockDim.x) {{
            if (bins[i] != 0) atomicAdd(counts + i, i32(bins[i]));
        }}
        __syncthreads();
    }}
}}
"""


@dataclass(frozen=True)
class Variant:
    label: str
    layout: Layout | None  # None: f8434d7's clear, then add (on BEFORE's layout)
    product: bool = False  # histogram() itself


def other(label: str, **changes: Any) -> Variant:
    return Variant(label, dataclasses.replace(GREY_LAYOUT, **changes))


VARIANTS = [
    Variant("shipped: grey 1024 x 1, colour 256 x 4, one copy, runs", GREY_LAYOUT, product=True),
    Variant("3c83fe0's layout: 256 x 4, one copy, runs", BEFORE),
    other("1024 x 1, striped, no runs", striped=True, runs=False),
    other("1024 x 1, one copy, grid from the bytes alone", batch_waves=0),
    other("1024 x 1, one copy, 2 blocks per SM (32 registers)", min_blocks=2),
    other("512 x 2, one copy", threads=512, words=2),
    Variant("f8434d7: clear + add (two launches)", None),
]

B, H, W, C = shipped.B, shipped.H, shipped.W, shipped.C
D = jit.SymbolicDevice()
IMAGES = jit.TensorMatcher((B, H, W, C)).with_dtype("uint8").with_device(D)
COUNTS = jit.TensorMatcher((B, C, 256)).with_dtype("int32").with_device(D)
SCRATCH = jit.TensorMatcher((-1,)).with_dtype("uint32").with_device(D)


def kernel_calls(variant: Variant) -> Callable[[Any, Any, Any, Any], None]:
    """call(images (B, H, W, C), out (B, C, 256), scratch, stream) of the variant."""
    if variant.product:
        return lambda images, out, _scratch, stream: shipped.histogram(images, out=out, stream=stream)
    if variant.layout is None:
        clear = jit.kernel(
            "histogram_clear",
            cuda=TWO_KERNELS_CUH,
            args=[("out", COUNTS)],
            grid=lambda B, C: ((B * C, 1, 1), (256, 1, 1)),
        )
        add = jit.kernel(
            "histogram_add",
            cuda=TWO_KERNELS_CUH,
            args=[("images", IMAGES), ("out", COUNTS)],
            template=lambda C: (C,),
            grid=BEFORE.grid,
        )

        def two(images: Any, out: Any, _scratch: Any, stream: Any) -> None:
            clear(out, stream=stream)
            add(images, out, stream=stream)

        return two
    one = jit.kernel(
        "histogram",
        cuda=SHIPPED_CUH,
        args=[("images", IMAGES), ("out", COUNTS), ("scratch", SCRATCH)],
        template=variant.layout.template,
        grid=variant.layout.grid,
    )
    return lambda images, out, scratch, stream: one(images, out, scratch, stream=stream)


def mangled(layout: Layout, c: int) -> str:
    """histogram<C, Threads, Words, Striped, Runs, MinBlocks>'s template arguments as Itanium mangling spells
    them."""
    _c, threads, words, striped, runs, min_blocks = layout.template(c)
    return f"9histogramILi{c}ELi{threads}ELi{words}ELb{int(striped)}ELb{int(runs)}ELi{min_blocks}E"


def registers() -> dict[tuple[str, int], str]:
    """ptxas's 'N regs (S B spilled), M B smem' per (variant label, channels), from one nvcc build of every
    instance (none without nvcc)."""
    if compilers.find_nvcc() is None:  # the GPU run still builds each variant, with NVRTC
        return {}
    view = "fkl::TensorView"
    lines = [TWO_KERNELS_CUH]
    for c in (1, 3):
        lines.append(f"template __global__ void histogram_add<{c}>({view}, {view});")
        for template in sorted({v.layout.template(c) for v in VARIANTS if v.layout is not None}):
            arguments = ", ".join(str(a).lower() for a in template)  # a template once: layouts may differ in grid only
            lines.append(f"template __global__ void histogram<{arguments}>({view}, {view}, {view});")
    usage = kernel_usage("\n".join(lines) + "\n", ["-std=c++20", f"-arch={ARCH}", "-I", str(INCLUDE)]) or {}
    notes: dict[tuple[str, int], str] = {}
    for v in VARIANTS:
        for c in (1, 3):
            wanted = ["histogram_clear", f"histogram_addILi{c}E"] if v.layout is None else [mangled(v.layout, c)]
            notes[v.label, c] = " + ".join(
                next(note for name, note in usage.items() if part in name) for part in wanted
            )
    return notes


def run_workload(torch: Any, stream: Any, wl: Workload, calls: list[Any], l2: int, cycles: float) -> list[str]:
    b, _h, _w, c = wl.shape
    big = wl.nbytes > l2  # as bench_histogram: two inputs rotate past L2, and fewer calls
    sets = 2 if big else min(bc.MAX_BUFFER_SETS, max(2, math.ceil(bc.ROTATE_L2_MULTIPLE * l2 / wl.nbytes)))
    host = make_images(wl, np.random.default_rng(16))
    expected = torch.from_numpy(reference(host).astype(np.int32)).cuda()
    inputs = [torch.from_numpy(host).cuda() for _ in range(sets)]
    outs = [torch.empty((b, c, 256), dtype=torch.int32, device="cuda") for _ in range(sets)]
    scratch = torch.zeros(b * (c * 256 + 1), dtype=torch.int32, device="cuda").view(torch.uint32)
    method = GPU_BIG if big else METHOD
    cells = []
    for run in calls:

        def call(i: int, run: Any = run) -> None:
            run(inputs[i % sets], outs[i % sets], scratch, stream)

        for _ in range(2):  # the second call finds the scratch as the first left it
            outs[0].fill_(-1)
            call(0)
        if not torch.equal(outs[0], expected):
            cells.append("WRONG")
            continue
        result = bc.measure(torch, stream, call, method, cycles, True)
        cells.append(f"{sorted(result.gpu_us)[len(result.gpu_us) // 2]:.1f}")
    return cells


def main() -> int:
    notes = registers()
    print(f"| variant | ptxas {ARCH} C=1 | C=3 | " + " | ".join(f"{wl.label} µs" for wl in WORKLOADS) + " |")
    print("|---|---|---|" + "---|" * len(WORKLOADS))
    timed = [["-"] * len(WORKLOADS) for _ in VARIANTS]
    if fkl.gpu_available():
        import torch  # pyright: ignore[reportMissingImports]

        if compilers.nvrtc_available():  # a dozen instances: NVRTC builds them fastest
            fkl.set_backend("nvrtc")
        stream = torch.cuda.Stream()
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or bc.L2_FALLBACK_BYTES
        calls = [kernel_calls(variant) for variant in VARIANTS]
        with torch.cuda.stream(stream), torch.no_grad():
            cycles = bc.calibrate_sleep(torch, stream)
            for column, wl in enumerate(WORKLOADS):
                for row, cell in enumerate(run_workload(torch, stream, wl, calls, l2, cycles)):
                    timed[row][column] = cell
                torch.cuda.empty_cache()
    for variant, cells in zip(VARIANTS, timed, strict=True):
        built = " | ".join(notes.get((variant.label, c), "?") for c in (1, 3))
        print(f"| {variant.label} | {built} | " + " | ".join(cells) + " |")
    if not fkl.gpu_available():
        print("\nNo GPU: built only.")
    return 1 if any("WRONG" in cells for cells in timed) else 0


if __name__ == "__main__":
    sys.exit(main())
