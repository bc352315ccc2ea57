"""Experiment: time variants of the GPU histogram kernel against the shipped one (device only).

    PYTHONPATH=. python3 benchmarks/histogram_variants.py

The shipped kernel (fklir/kernels/histogram/histogram.cuh: one launch, the blocks' counts summed in the
stream's scratch and moved to out by each image's last block) through histogram() itself; the same kernel
with other template arguments (Words: 16-byte words per thread and round; Copies: sub-histograms per block,
one per warp) or with its grid's rows bounded by the blocks the device holds at once; and the two launches of
f8434d7 (clear out, then add every block's counts to it with global atomics). Each is built with nvcc first,
which runs without a GPU (ptxas's register counts are printed); on a GPU each is checked equal to numpy's
bincount, then timed with bench_chain's method on issue 16's three workloads and a constant image. Not a
benchmark of record: it exists to choose the shipped kernel (see RESULTS.md).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Method
from bench_histogram import ASKED, GPU_BIG, MORE, Workload, make_images, reference

import fklir as fkl
from fklir import jit
from fklir.backend import compilers
from fklir.kernels import histogram as shipped
from fklir.runtime import cuda_driver

SHIPPED_CUH = Path(shipped.__file__).resolve().parent / "histogram.cuh"
INCLUDE = Path(fkl.__file__).resolve().parent / "backend" / "include"
ARCH = "sm_90"
WORKLOADS = (*ASKED, MORE[0])  # issue 16's three and a constant image (one bin takes every count)
METHOD = Method(calls=20, reps=11, warmup=5)

# The shipped count_images with other template arguments, and f8434d7's two kernels on the shipped counting.
VARIANTS_CUH = f"""#include "{SHIPPED_CUH}"

template <int C, int Words, int Copies>
__global__ void histogram_variant(fkl::TensorView images, fkl::TensorView out, fkl::TensorView scratch) {{
    count_images<C, Words, Copies>(images, out, scratch);
}}

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
        for (int i = threadIdx.x; i < C * 256; i += blockDim.x) bins[i] = 0;
        __syncthreads();
        count_share<C, kWords>(bins, images.ptr<u8>() + image * bytes, bytes);
        __syncthreads();
        i32* counts = out.ptr<i32>() + image * C * 256;
        for (int i = threadIdx.x; i < C * 256; i += blockDim.x) {{
            if (bins[i] != 0) atomicAdd(counts + i, i32(bins[i]));
        }}
        __syncthreads();
    }}
}}
"""

Grid = tuple[tuple[int, int, int], tuple[int, int, int]]


@dataclass(frozen=True)
class Variant:
    label: str
    words: int = 4  # 16-byte words per thread and round
    copies: int = 1  # sub-histograms per block
    bounded_rows: bool = False  # grid rows bounded by the blocks the device holds at once
    two_kernels: bool = False  # f8434d7's clear, then add
    product: bool = False  # histogram() itself

    def entries(self) -> list[str]:
        """The kernels' names as nvcc's ptxas reports them (mangled names contain them)."""
        return ["histogram_clear", "histogram_add"] if self.two_kernels else ["histogram_variant"]

    def grid(self, B: int, H: int, W: int, C: int, device: int) -> Grid:
        per_block = shipped.THREADS * self.words * 16
        x = max(1, min(math.ceil(H * W * C / per_block), shipped.MAX_BLOCKS_PER_IMAGE))
        rows = min(B, shipped.MAX_GRID_Y)
        if self.bounded_rows:
            rows = min(rows, max(1, cuda_driver.resident_threads(device) // shipped.THREADS // x))
        return (x, rows, 1), (shipped.THREADS, 1, 1)


VARIANTS = [
    Variant("shipped: one launch, 4 words, 1 copy", product=True),
    Variant("one launch, 2 words", words=2),
    Variant("one launch, 8 words", words=8),
    Variant("one launch, per-warp copies (8)", copies=8),
    Variant("one launch, rows bounded by resident blocks", bounded_rows=True),
    Variant("f8434d7: clear + add (two launches)", two_kernels=True),
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
    if variant.two_kernels:
        clear = jit.kernel(
            "histogram_clear",
            cuda=VARIANTS_CUH,
            args=[("out", COUNTS)],
            grid=lambda B, C: ((B * C, 1, 1), (256, 1, 1)),
        )
        add = jit.kernel(
            "histogram_add",
            cuda=VARIANTS_CUH,
            args=[("images", IMAGES), ("out", COUNTS)],
            template=lambda C: (C,),
            grid=variant.grid,
        )

        def two(images: Any, out: Any, _scratch: Any, stream: Any) -> None:
            clear(out, stream=stream)
            add(images, out, stream=stream)

        return two
    one = jit.kernel(
        "histogram_variant",
        cuda=VARIANTS_CUH,
        args=[("images", IMAGES), ("out", COUNTS), ("scratch", SCRATCH)],
        template=lambda C: (C, variant.words, variant.copies),
        grid=variant.grid,
    )
    return lambda images, out, scratch, stream: one(images, out, scratch, stream=stream)


def registers() -> dict[tuple[str, int], str]:
    """ptxas's 'N regs, M B smem' per (variant label, channels), from one nvcc build of every instance (none
    without nvcc)."""
    nvcc = compilers.find_nvcc()
    if nvcc is None:  # the GPU run still builds each variant, with NVRTC
        return {}
    view = "fkl::TensorView"
    lines = [VARIANTS_CUH]
    for c in (1, 3):
        lines.append(f"template __global__ void histogram<{c}>({view}, {view}, {view});")
        lines.append(f"template __global__ void histogram_add<{c}>({view}, {view});")
        for v in VARIANTS:
            if not (v.product or v.two_kernels):
                lines.append(
                    f"template __global__ void histogram_variant<{c}, {v.words}, {v.copies}>({view}, {view}, {view});"
                )
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "variants.cu"
        source.write_text("\n".join(lines) + "\n")
        command = [nvcc, "-std=c++20", f"-arch={ARCH}", "-cubin", "-Xptxas", "-v", "-I", str(INCLUDE)]
        done = subprocess.run(
            [*command, "-o", str(source.with_suffix(".cubin")), str(source)], capture_output=True, text=True
        )
    if done.returncode:
        raise RuntimeError(f"histogram_variants: nvcc failed:\n{done.stderr}")
    found = re.findall(
        r"Compiling entry function '(\w+)'.*?Used (\d+) registers.*?(?:(\d+) bytes smem)?\n", done.stderr, re.S
    )
    usage = {mangled: f"{regs} regs, {smem or 0} B smem" for mangled, regs, smem in found}
    notes: dict[tuple[str, int], str] = {}
    for v in VARIANTS:
        for c in (1, 3):
            # Itanium mangling: histogram_variant<C, Words, Copies> has ILi{C}ELi{Words}ELi{Copies}E
            wanted = (
                ["histogram_clear", f"histogram_addILi{c}E"]
                if v.two_kernels
                else [f"9histogramILi{c}E"]
                if v.product
                else [f"histogram_variantILi{c}ELi{v.words}ELi{v.copies}E"]
            )
            notes[v.label, c] = " + ".join(
                next(note for mangled, note in usage.items() if part in mangled) for part in wanted
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
