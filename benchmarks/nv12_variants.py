"""Experiment: time layouts of the packed nv12_to_rgb kernel against the shipped one (device only).

    PYTHONPATH=. python3 benchmarks/nv12_variants.py

Variants of fklir/kernels/nv12_to_rgb/nv12_to_rgb.cuh's packed_run (runs of 4 or 8 chroma samples per
thread, stores staged by the warp or each thread's own, 8-byte vectors or only 16, the byte path staged or
not, warps per block), the shipped kernel, and the kernel as it was at f8434d7 (one thread per chroma
sample and a block-wide shared tile, embedded below). Each is built first, which needs no GPU (nvcc for
ptxas's register counts, NVRTC where no GPU builds it on first call); on a GPU each is checked equal to
cv2.cvtColor, then timed with bench_chain's method on issue 16's two packed workloads and on a width that
takes the byte path (854 = 6 mod 16), beside bench_nv12_to_rgb's copy floor and CV-CUDA (when installed).
Not a benchmark of record: it exists to choose the shipped layout.
"""

from __future__ import annotations

import functools
import math
import statistics
import sys
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Method
from bench_nv12_to_rgb import Workload, compare, cv2_reference, gpu_peers
from ptxas_usage import kernel_usage

import fklir as fkl
from fklir import jit
from fklir.backend import compilers
from fklir.kernels import nv12_to_rgb as nv12

KERNELS = Path(nv12.__file__).resolve().parent
INCLUDE = Path(fkl.__file__).resolve().parent / "backend" / "include"
ARCH = "sm_90"
METHOD = Method(calls=20, reps=11, warmup=5)
WORKLOADS = [
    Workload("3840x2160 NV12 → RGB uint8", 1, 3840, 2160, False),
    Workload("8 × 1920x1080 NV12 → RGB uint8", 8, 1920, 1080, False),
    Workload("8 × 854x480 NV12 → RGB uint8 (the byte path)", 8, 854, 480, False),
]

# The packed kernel at f8434d7 (git show f8434d7:fklir/kernels/nv12_to_rgb/nv12_to_rgb.cuh), packed part only
F8434D7 = r"""
#include "fkl/tensor_view.h"
#include "nv12_color.h"

using fkl::i64;
using fkl::u8;
using nv12::row_start;

struct Sample {
    i64 cx, cr, b;
};

__device__ inline Sample this_sample() {
    return {i64(blockIdx.x) * blockDim.x + threadIdx.x, i64(blockIdx.y) * blockDim.y + threadIdx.y, i64(blockIdx.z)};
}

constexpr int kTileSamples = 64;
constexpr int kTileSampleRows = 2;
constexpr int kTileRowBytes = 2 * kTileSamples * 3;

template <class Word>
__device__ void copy_out(const u8 (*tile)[kTileRowBytes], u8* out, i64 pitch, int rows, int bytes) {
    const int words = bytes / int(sizeof(Word));
    const int thread = threadIdx.y * blockDim.x + threadIdx.x, threads = blockDim.x * blockDim.y;
    for (int i = thread; i < rows * words; i += threads) {
        const int row = i / words, word = i % words;
        reinterpret_cast<Word*>(out + row * pitch)[word] = reinterpret_cast<const Word*>(tile[row])[word];
    }
}

__global__ void nv12_to_rgb_packed(fkl::TensorView out, fkl::TensorView y, fkl::TensorView uv, int uv_row,
                                   bool bgr, int y_offset, int cy, int cvr, int cvg, int cug, int cub) {
    __shared__ __align__(16) u8 tile[2 * kTileSampleRows][kTileRowBytes];
    const i64 height = out.shape[1], width = out.shape[2];
    const Sample s = this_sample();
    if (2 * s.cx < width && 2 * s.cr < height) {
        const nv12::Coefficients k{y_offset, cy, cvr, cvg, cug, cub};
        const u8* pair = row_start(uv, s.b, uv_row + s.cr) + 2 * s.cx;
        const nv12::Chroma c = nv12::chroma_terms(k, pair[0], pair[1]);
        for (int dr = 0; dr < 2; ++dr) {
            const u8* luma = row_start(y, s.b, 2 * s.cr + dr) + 2 * s.cx;
            u8* pixel = tile[2 * threadIdx.y + dr] + 6 * threadIdx.x;
            nv12::store_packed(pixel, nv12::pixel_rgb(k, luma[0], c), bgr);
            nv12::store_packed(pixel + 3, nv12::pixel_rgb(k, luma[1], c), bgr);
        }
    }
    __syncthreads();
    const i64 x0 = 2 * i64(blockIdx.x) * kTileSamples, r0 = 2 * i64(blockIdx.y) * kTileSampleRows;
    const int columns = width - x0 < 2 * kTileSamples ? int(width - x0) : 2 * kTileSamples;
    const int rows = height - r0 < 2 * kTileSampleRows ? int(height - r0) : 2 * kTileSampleRows;
    u8* first = out.ptr<u8>() + ((s.b * height + r0) * width + x0) * 3;
    if (width % 4 == 0 && reinterpret_cast<unsigned long long>(out.data) % 4 == 0)
        copy_out<fkl::u32>(tile, first, 3 * width, rows, 3 * columns);
    else
        copy_out<u8>(tile, first, 3 * width, rows, 3 * columns);
}
"""

# The alternatives, appended to the shipped source: its packed_vectors and packed_run with switches for
# what the shipped kernel does one way (kStaged: the warp stages its stores, else each thread stores its
# own vectors; kNarrow: 8-byte vectors where 16 do not fit, else the byte path; kStagedBytes: the byte
# path's stores staged too, as the shipped packed_bytes_staged does), as a kernel of kWarps warps per block
ALTERNATIVES = r"""
// This thread's run in Words when `whole` (its run lies inside the row); the warp's lanes all call it,
// the whole ones being a prefix of the warp. kStaged: each output row goes through the warp's `stage`
// (32 runs of output bytes); otherwise every thread stores its own Words.
template <int kSamples, bool kStaged, class Word>
__device__ void variant_vectors(u8* const (&rows)[2], const u8* const (&luma)[2], const u8* pairs, bool whole,
                               bool bgr, const nv12::Coefficients& k, Word* stage) {
    constexpr int kBytes = 2 * kSamples;             // a run's luma bytes per row, and its UV bytes
    constexpr int kIn = kBytes / int(sizeof(Word));  // Words per run of luma or UV
    constexpr int kOut = 3 * kIn;                    // Words per output row of a run
    const int lane = threadIdx.x;
    const int words = kStaged ? kOut * __popc(__ballot_sync(~0u, whole)) : 0;  // the warp's Words per row
    Bytes<Word, kIn> in[3];  // the UV pairs, then the two luma rows
    nv12::Chroma c[kSamples];
    if (whole) {
        const u8* const from[3] = {pairs, luma[0], luma[1]};
#pragma unroll
        for (int i = 0; i < 3; ++i) {
#pragma unroll
            for (int w = 0; w < kIn; ++w) in[i].word[w] = __ldg(reinterpret_cast<const Word*>(from[i]) + w);
        }
#pragma unroll
        for (int s = 0; s < kSamples; ++s) {
            const nv12::Chroma t = nv12::chroma_terms(k, in[0].byte[2 * s], in[0].byte[2 * s + 1]);
            c[s] = bgr ? nv12::Chroma{t.b, t.g, t.r} : t;  // so that the pixels store R, G, B in place
        }
    }
#pragma unroll
    for (int dr = 0; dr < 2; ++dr) {
        Bytes<Word, kOut> pixels;
        if (whole) {
#pragma unroll
            for (int x = 0; x < kBytes; ++x)
                nv12::store_packed(pixels.byte + 3 * x, nv12::pixel_rgb(k, in[1 + dr].byte[x], c[x / 2]), false);
        }
        if (!kStaged) {
            if (whole) {
#pragma unroll
                for (int w = 0; w < kOut; ++w) reinterpret_cast<Word*>(rows[dr])[w] = pixels.word[w];
            }
            continue;
        }
        if (whole) {
#pragma unroll
            for (int w = 0; w < kOut; ++w) stage[kOut * lane + w] = pixels.word[w];
        }
        __syncwarp();
        Word* const first = reinterpret_cast<Word*>(rows[dr] - 3 * kBytes * lane);  // lane 0's
#pragma unroll
        for (int w = 0; w < kOut; ++w)
            if (lane + 32 * w < words) first[lane + 32 * w] = stage[lane + 32 * w];
        __syncwarp();  // the stage is read before the next row overwrites it
    }
}

// The packed conversion of this thread's run (see above), in blocks of 32 x kPackedWarps threads;
// `stage` holds 32 runs of output rows (32 x 6 kSamples bytes, 16-byte aligned). kNarrow: rows aligned
// to 8 bytes but not 16 take 8-byte vectors rather than the byte path. kStagedBytes: the byte path of a
// warp without vectors stages its stores too (it raises the kernel's registers, the vector path's too).
template <int kSamples, bool kStaged, bool kNarrow, bool kStagedBytes>
__device__ void variant_run(const fkl::TensorView& out, const fkl::TensorView& y, const fkl::TensorView& uv, int uv_row,
                           bool bgr, const nv12::Coefficients& k, uint4* stage) {
    constexpr int kBytes = 2 * kSamples;
    const i64 height = out.shape[1], width = out.shape[2], b = blockIdx.z;
    const int cr = blockIdx.y * blockDim.y + threadIdx.y;
    if (2 * cr >= height) return;  // the whole warp: its lanes share the chroma row
    const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * kBytes;  // this run's first pixel
    const u8* const pairs = row_start(uv, b, uv_row + cr) + x0;
    const u8* const luma[2] = {row_start(y, b, 2 * cr) + x0, row_start(y, b, 2 * cr + 1) + x0};
    u8* const top = out.ptr<u8>() + ((b * height + 2 * cr) * width + x0) * 3;
    u8* const rows[2] = {top, top + 3 * width};
    // a lane's addresses are lane 0's plus multiples of a run's bytes, which no vector exceeds, so every
    // lane of the warp takes the same branch
    const auto bits = [](const void* p) { return reinterpret_cast<unsigned long long>(p); };
    const unsigned long long any = bits(pairs) | bits(luma[0]) | bits(luma[1]) | bits(rows[0]) | bits(rows[1]);
    const bool whole = x0 + kBytes <= width;  // the whole runs are a prefix of the warp
    const int vector = kBytes % 16 == 0 && any % 16 == 0 ? 16 : kNarrow && any % 8 == 0 ? 8 : 0;  // bytes
    if constexpr (kBytes % 16 == 0) {
        if (vector == 16) variant_vectors<kSamples, kStaged>(rows, luma, pairs, whole, bgr, k, stage);
    }
    if (vector == 8)
        variant_vectors<kSamples, kStaged>(rows, luma, pairs, whole, bgr, k, reinterpret_cast<uint2*>(stage));
    if (kStagedBytes && !vector) return packed_bytes_staged<kSamples>(rows, luma, pairs, x0, width, bgr, k,
                                                                   reinterpret_cast<u8*>(stage));
    if ((whole && vector) || x0 >= width) return;
    const int samples = int(width - x0 < kBytes ? width - x0 : kBytes) / 2;
    for (int dr = 0; dr < 2; ++dr) packed_bytes(rows[dr], luma[dr], pairs, samples, k, bgr);
}

template <int kSamples, bool kStaged, bool kNarrow, bool kStagedBytes, int kWarps>
__global__ void __launch_bounds__(32 * kWarps)
    packed_variant(fkl::TensorView out, fkl::TensorView y, fkl::TensorView uv, int uv_row, bool bgr,
                   int y_offset, int cy, int cvr, int cvg, int cug, int cub) {
    __shared__ uint4 stage[kWarps][32 * 6 * kSamples / 16];
    variant_run<kSamples, kStaged, kNarrow, kStagedBytes>(out, y, uv, uv_row, bgr,
                                                          {y_offset, cy, cvr, cvg, cug, cub}, stage[threadIdx.y]);
}
"""


@dataclass(frozen=True)
class Variant:
    label: str
    source: str  # CUDA source text
    name: str  # the __global__ function
    template: str  # its template arguments ("" for none)
    run: int  # pixels per thread and row (the grid's x step is 32 of them), 0: f8434d7's grid
    warps: int = nv12.WARPS  # per block

    def expression(self) -> str:
        return f"{self.name}<{self.template}>" if self.template else self.name

    def kernel(self) -> jit.Kernel:
        template = (lambda: self.template) if self.template else None
        args = nv12._arguments(jit.TensorMatcher((nv12.B, nv12.H, nv12.W, 3)).with_dtype("uint8"))  # pyright: ignore[reportPrivateUsage]
        return jit.kernel(self.name, cuda=self.source, args=args, template=template, grid=self.grid)

    def grid(self, B: int, H: int, W: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        if not self.run:
            return ((-(-(W // 2) // 64), -(-(H // 2) // 2), B), (64, 2, 1))
        return ((-(-W // (32 * self.run)), -(-(H // 2) // self.warps), B), (32, self.warps, 1))


def with_color_header(source: str) -> str:
    """`source` with nv12_color.h included by its absolute path (a text source's includes resolve here)."""
    return source.replace('#include "nv12_color.h"', f'#include "{KERNELS / "nv12_color.h"}"')


def variants() -> list[Variant]:
    shipped = with_color_header((KERNELS / "nv12_to_rgb.cuh").read_text())
    found = [
        Variant(
            f"shipped (8 samples, staged, {nv12.WARPS} warps, 8-byte vectors too, byte path staged)",
            shipped,
            "nv12_to_rgb_packed",
            "",
            nv12.RUN,
        )
    ]
    # (samples per run, staged stores, 8-byte vectors, staged byte path, warps per block)
    layouts = (
        (8, True, False, False, 4),
        (8, True, True, False, 4),
        (8, True, True, False, 2),
        (8, True, True, False, 8),
        (8, False, True, False, 4),
        (4, True, True, False, 4),
    )
    for samples, staged, narrow, staged_bytes, warps in layouts:
        label = f"{samples} samples, {'staged' if staged else 'own stores'}, {warps} warps"
        label += ", 8-byte vectors too" if narrow else ", 16-byte vectors only"
        label += ", byte path staged" if staged_bytes else ""
        flags = ", ".join(str(flag).lower() for flag in (staged, narrow, staged_bytes))
        found.append(
            Variant(label, shipped + ALTERNATIVES, "packed_variant", f"{samples}, {flags}, {warps}", 2 * samples, warps)
        )
    found.append(Variant("f8434d7 (1 sample, block tile)", with_color_header(F8434D7), "nv12_to_rgb_packed", "", 0))
    return found


def registers(variant: Variant) -> str:
    """ptxas's registers and shared memory of the variant's kernel, or '?' without nvcc."""
    instantiate = f"\ntemplate __global__ void {variant.expression()}" if variant.template else ""
    signature = "(fkl::TensorView, fkl::TensorView, fkl::TensorView, int, bool, int, int, int, int, int, int);"
    source = variant.source + (instantiate + signature if instantiate else "")
    try:
        usage = kernel_usage(source, ["-std=c++20", f"-arch={ARCH}", "-I", str(INCLUDE)])
    except RuntimeError as error:
        raise RuntimeError(f"{variant.label}: {error}") from None
    # the one kernel this variant times: the mangled names contain the plain ones
    return ", ".join(note for name, note in (usage or {}).items() if variant.name in name) or "?"


def build_check(all_variants: list[Variant]) -> list[str]:
    """Each variant compiled by nvcc (its registers) and, without a GPU to build it on first call, by NVRTC:
    the table's ptxas column."""
    if not (compilers.nvrtc_available() or compilers.find_nvcc()):
        raise RuntimeError("neither NVRTC nor nvcc is installed: nothing can build the variants")
    notes = []
    for variant in all_variants:
        if compilers.nvrtc_available() and not fkl.gpu_available():
            compilers.compile_cubin_nvrtc_named(variant.source, INCLUDE, ARCH, [variant.expression()])
        notes.append(registers(variant))
    return notes


PEERS = ("copy", "cvcuda")  # bench_nv12_to_rgb's: the bandwidth floor and CV-CUDA, beside the variants


def run_workload(
    torch: Any, cv2: Any, np: Any, stream: Any, wl: Workload, kernels: list[jit.Kernel], l2: int, cycles: float
) -> list[str]:
    """One cell per kernel, then per peer: GPU µs per call (median), WRONG, or why it was not timed."""
    frame_bytes = wl.in_bytes + wl.out_bytes
    sets = min(bc.MAX_BUFFER_SETS, max(2, math.ceil(bc.ROTATE_L2_MULTIPLE * l2 / frame_bytes)))
    shape = (wl.batch, wl.height * 3 // 2, wl.width)
    inputs = [torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda") for _ in range(sets)]
    outputs = [torch.empty((wl.batch, wl.height, wl.width, 3), dtype=torch.uint8, device="cuda") for _ in range(sets)]
    expected = torch.from_numpy(cv2_reference(cv2, np, inputs[0].cpu().numpy())).cuda()
    k = nv12.coefficients("bt601", full_range=False)

    def launcher(kernel: jit.Kernel) -> bc.Peer:
        def call(i: int) -> None:
            frames = inputs[i % sets]
            kernel(outputs[i % sets], frames, frames, wl.height, False, *astuple(k), stream=stream)

        return call, lambda: outputs[0]

    peers = gpu_peers(torch, fkl, stream, wl, inputs, outputs, [None] * sets)
    factories = [functools.partial(launcher, kernel) for kernel in kernels] + [peers[name] for name in PEERS]
    cells = []
    for index, factory in enumerate(factories):
        try:
            call, output = factory()
            outputs[0].fill_(0xA5)
            call(0)
            got = output()
            # the variants equal cv2 exactly; a peer within ±1, as bench_nv12_to_rgb checks it (copy: nothing)
            exact = index < len(kernels)
            if got is None:
                ok = True
            else:
                ok = torch.equal(got, expected) if exact else compare(torch, got, expected, False)[0]
            if not ok:
                cells.append("WRONG")
                continue
            result = bc.measure(torch, stream, call, METHOD, cycles, True)
            cells.append(f"{statistics.median(result.gpu_us):.1f}")
        except Exception as error:  # one variant failing must not lose the others' numbers
            print(f"nv12_variants: {wl.label}: {type(error).__name__}: {error}", file=sys.stderr)
            cells.append("failed")
    return cells


def main() -> int:
    all_variants = variants()
    built = build_check(all_variants)
    print("| variant | ptxas (sm_90) | " + " | ".join(f"{wl.label} µs" for wl in WORKLOADS) + " |")
    print("|---|---|" + "---|" * len(WORKLOADS))
    labels = [*(variant.label for variant in all_variants), "copy of the same bytes (floor)", "CV-CUDA"]
    notes = [*built, "", ""]
    timed: list[list[str]] = [["-"] * len(WORKLOADS) for _ in labels]
    if fkl.gpu_available():
        import cv2
        import numpy as np
        import torch  # pyright: ignore[reportMissingImports]

        stream = torch.cuda.Stream()
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or bc.L2_FALLBACK_BYTES
        kernels = [variant.kernel() for variant in all_variants]
        with torch.cuda.stream(stream), torch.no_grad():
            cycles = bc.calibrate_sleep(torch, stream)
            for column, wl in enumerate(WORKLOADS):
                for row, cell in enumerate(run_workload(torch, cv2, np, stream, wl, kernels, l2, cycles)):
                    timed[row][column] = cell
                torch.cuda.empty_cache()
    for label, note, cells in zip(labels, notes, timed, strict=True):
        print(f"| {label} | {note} | " + " | ".join(cells) + " |")
    if not fkl.gpu_available():
        print("\nNo GPU: built only.")
    return 1 if any("WRONG" in cells or "failed" in cells for cells in timed[: len(all_variants)]) else 0


if __name__ == "__main__":
    sys.exit(main())
