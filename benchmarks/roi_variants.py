"""Experiment: GPU time of the ROI kernels for pixels-per-thread settings and rewrites of the emitted
source (device only).

Each (variant, setting) runs in its own process with its own disk cache (neither is part of the kernel
key): emit_cpp.PIXELS_PER_THREAD is set, and a variant replaces exact strings of the emitted CUDA source
before nvcc sees it (a variant whose string is missing fails loudly). fklir only, timed as bench_chain.py
times (calls queued behind a sleep kernel, so host cost does not leak into the GPU time), one image (L2
resident, unlike bench_roi.py, which rotates inputs; ROTATE=N rotates N
copies). The digest column is a hash of the B-plane output:
equal digests mean bit-equal results. Not a benchmark of record: it exists to choose how the pixel
kernels are emitted (see RESULTS.md), by trying a change on the device before building it.

Usage: python3 benchmarks/roi_variants.py [VARIANT ...]   (environment: PPTS=1,2,4  ROI_SIZE=224  BLOCK_Y=8
ROI_COUNTS=64,3  ROTATE=1)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_SETTING = """
import hashlib, json, statistics, sys
sys.path.insert(0, {root!r})
sys.path.insert(0, {root!r} + "/benchmarks")
import torch
import fklir as fkl
from fklir.backend import compilers, emit_cpp
from bench_chain import FULL, calibrate_sleep, measure
emit_cpp.PIXELS_PER_THREAD = {ppt}
from fklir.runtime import launch
launch.PIXEL_BLOCK = (32, {block_y}, 1)
REPLACEMENTS = json.loads({replacements!r})
compile_cubin = compilers.compile_cubin
def rewritten(source, *args, **kwargs):
    for old, new in REPLACEMENTS:
        assert old in source, f"variant {name!r}: not in the emitted source: {{old!r}}"
        source = source.replace(old, new)
    return compile_cubin(source, *args, **kwargs)
compilers.compile_cubin = rewritten
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
g = torch.Generator().manual_seed(0)
img = torch.randint(0, 256, (1080, 1920, 3), generator=g, dtype=torch.uint8).cuda()
images = [img] + [img.clone() for _ in range({rotate} - 1)]  # rotated: each call's taps come from DRAM
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    cycles_per_us = calibrate_sleep(torch, stream)
    for count in {counts}:
        rects = [(int(i * 23 % 1700), int(i * 37 % 900), 200 - i % 7, 150 + i % 5) for i in range(count)]
        pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(rects), fkl.Resize({size}, {size}), fkl.Mul(1 / 255),
                           fkl.Sub(MEAN), fkl.Div(STD), fkl.TensorSplit(), target="gpu")
        outs = [pipe(img) for _ in range(4)]
        torch.cuda.synchronize()
        digest = hashlib.sha1(outs[0].cpu().numpy().tobytes()).hexdigest()[:10]
        call = lambda i: pipe(images[i % len(images)], out=outs[i % 4], stream=stream)
        result = measure(torch, stream, call, FULL, cycles_per_us, True)
        print(f"| {name} | {ppt} | B={{count}} | {{statistics.median(result.gpu_us):.1f}} | {{digest}} |", flush=True)
"""

SAMPLE_CALL = "        sample_taps(p, q, block_tx[threadIdx.x + k * 32], ty, blockIdx.z, out[k]);"
FOUR_TAPS = (
    "    stage1(p, q, tx.i0, ty.i0, z, a);\n"
    "    stage1(p, q, tx.i1, ty.i0, z, b);\n"
    "    stage1(p, q, tx.i0, ty.i1, z, c);\n"
    "    stage1(p, q, tx.i1, ty.i1, z, d);\n"
)
ROW_TAPS = (
    "    const fkl::Rect r = p.crop1[z];\n"
    "    const fkl::u8* row0 = (const fkl::u8*)p.h.src + (fkl::u32)(ty.i0 + r.y) * (fkl::u32)p.h.src_pitch;\n"
    "    const fkl::u8* row1 = (const fkl::u8*)p.h.src + (fkl::u32)(ty.i1 + r.y) * (fkl::u32)p.h.src_pitch;\n"
    "    const fkl::u32 c0 = (fkl::u32)(tx.i0 + r.x) * 3u, c1 = (fkl::u32)(tx.i1 + r.x) * 3u;\n"
    "    const fkl::u8 *pa = row0 + c0, *pb = row0 + c1, *pc = row1 + c0, *pd = row1 + c1;\n"
    "    for (int k = 0; k < 3; ++k) {\n"
    "        a[k] = pa[k];\n"
    "        b[k] = pb[k];\n"
    "        c[k] = pc[k];\n"
    "        d[k] = pd[k];\n"
    "    }\n"
)

# The wide entry as 04fe7db emits it for the ROI chain, and the same with its taps as byte offsets.
# Their common head: the plane, shared through shared memory.
WIDE_HEAD_PLANE = """\
extern "C" __global__ void fkl_kernel(const Params p) {
    const fkl::i32 x0 = blockIdx.x * 128 + threadIdx.x;
    const fkl::i32 y = blockIdx.y * blockDim.y + threadIdx.y;
    __shared__ Plane block_plane;
    if (threadIdx.x == 0 && threadIdx.y == 0) block_plane = plane_of(p, blockIdx.z);
    __syncthreads();
    const Plane q = block_plane;
"""
WIDE_EMITTED = (
    WIDE_HEAD_PLANE
    + """\
    __shared__ fkl::LinearTap block_tx[128], block_ty[8];
    if (threadIdx.y == 0) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const fkl::i32 x = x0 + k * 32;
            block_tx[threadIdx.x + k * 32] = stage2_tap_x(p, q, x < p.h.dst_w ? x : p.h.dst_w - 1, blockIdx.z);
        }
    }
    if (threadIdx.x == 0)
        block_ty[threadIdx.y] = stage2_tap_y(p, q, y < p.h.dst_h ? y : p.h.dst_h - 1, blockIdx.z);
    __syncthreads();
    if (y >= p.h.dst_h) return;
    fkl::f32 out[4][3];
    const fkl::LinearTap ty = block_ty[threadIdx.y];
#pragma unroll
    for (int k = 0; k < 4; ++k)
        if (x0 + k * 32 < p.h.dst_w)
            sample_taps(p, q, block_tx[threadIdx.x + k * 32], ty, blockIdx.z, out[k]);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const fkl::i32 x = x0 + k * 32;
        if (x < p.h.dst_w) store(p, x, y, blockIdx.z, out[k]);
    }
}
"""
)
WIDE_OFFSETS = (
    WIDE_HEAD_PLANE
    + """\
    __shared__ int4 block_tx[128], block_ty[8];
    const fkl::Rect r = p.crop1[blockIdx.z];
    if (threadIdx.y == 0) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            const fkl::i32 x = x0 + k * 32;
            const fkl::LinearTap t = stage2_tap_x(p, q, x < p.h.dst_w ? x : p.h.dst_w - 1, blockIdx.z);
            block_tx[threadIdx.x + k * 32] = make_int4((t.i0 + r.x) * 3, (t.i1 + r.x) * 3, __float_as_int(t.w1), 0);
        }
    }
    if (threadIdx.x == 0) {
        const fkl::LinearTap t = stage2_tap_y(p, q, y < p.h.dst_h ? y : p.h.dst_h - 1, blockIdx.z);
        const fkl::i32 pitch = p.h.src_pitch;
        block_ty[threadIdx.y] = make_int4((t.i0 + r.y) * pitch, (t.i1 + r.y) * pitch, __float_as_int(t.w1), 0);
    }
    __syncthreads();
    if (y >= p.h.dst_h) return;
    fkl::f32 out[4][3];
    const int4 ty = block_ty[threadIdx.y];
    const fkl::u8* row0 = (const fkl::u8*)p.h.src + (fkl::u32)ty.x;
    const fkl::u8* row1 = (const fkl::u8*)p.h.src + (fkl::u32)ty.y;
    const fkl::f32 wy = __int_as_float(ty.z);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        if (x0 + k * 32 >= p.h.dst_w) continue;
        const int4 tx = block_tx[threadIdx.x + k * 32];
        const fkl::u8 *pa = row0 + (fkl::u32)tx.x, *pb = row0 + (fkl::u32)tx.y;
        const fkl::u8 *pc = row1 + (fkl::u32)tx.x, *pd = row1 + (fkl::u32)tx.y;
        fkl::f32 in[3];
        for (int c = 0; c < 3; ++c)
            in[c] = fkl::linear_blend(fkl::tap_f32(pa[c]), fkl::tap_f32(pb[c]), fkl::tap_f32(pc[c]),
                                      fkl::tap_f32(pd[c]), __int_as_float(tx.z), wy);
        compute_pixel(p, in, out[k]);
    }
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const fkl::i32 x = x0 + k * 32;
        if (x < p.h.dst_w) store(p, x, y, blockIdx.z, out[k]);
    }
}
"""
)
# The taps as column pairs: a tap's right neighbour is always the next source pixel (+3 bytes), which
# holds for integer sources of width >= 2 (a clamped tap i0 == i1 reads its neighbour with weight 0,
# or its left neighbour with weight 1: fmaf(a, 1, b * 0) == fmaf(l, 0, a * 1) == a for finite taps).
_PAIR_EDITS = [
    ("__shared__ int4 block_tx[128], block_ty[8];", "__shared__ int2 block_tx[128];\n    __shared__ int4 block_ty[8];"),
    (
        "            block_tx[threadIdx.x + k * 32] ="
        " make_int4((t.i0 + r.x) * 3, (t.i1 + r.x) * 3, __float_as_int(t.w1), 0);\n",
        "            fkl::i32 j = t.i0 + r.x;\n"
        "            fkl::f32 w = t.w1;\n"
        "            if (t.i1 == t.i0 && j + 1 >= p.h.src_w) {\n"
        "                j -= 1;\n"
        "                w = 1.0f;\n"
        "            }\n"
        "            block_tx[threadIdx.x + k * 32] = make_int2(j * 3, __float_as_int(w));\n",
    ),
    ("const int4 tx = block_tx[threadIdx.x + k * 32];", "const int2 tx = block_tx[threadIdx.x + k * 32];"),
    ("*pb = row0 + (fkl::u32)tx.y;", "*pb = pa + 3;"),
    ("*pd = row1 + (fkl::u32)tx.y;", "*pd = pc + 3;"),
    ("__int_as_float(tx.z), wy);", "__int_as_float(tx.y), wy);"),
]
WIDE_PAIRS = WIDE_OFFSETS
for _old, _new in _PAIR_EDITS:
    assert _old in WIDE_PAIRS, _old
    WIDE_PAIRS = WIDE_PAIRS.replace(_old, _new)
# the same, each pixel stored as soon as it is computed (fewer live results)
WIDE_PAIRS_EAGER = WIDE_PAIRS.replace(
    "        compute_pixel(p, in, out[k]);\n    }\n#pragma unroll\n    for (int k = 0; k < 4; ++k) {\n"
    "        const fkl::i32 x = x0 + k * 32;\n        if (x < p.h.dst_w) store(p, x, y, blockIdx.z, out[k]);\n    }\n",
    "        compute_pixel(p, in, out[k]);\n        store(p, x0 + k * 32, y, blockIdx.z, out[k]);\n    }\n",
)
# the narrow entry with its taps as a column pair (as WIDE_PAIRS), computed by each thread
NARROW_PAIRS = (
    "        if (x < p.h.dst_w) sample(p, q, x, y, blockIdx.z, out[k]);\n",
    "        if (x < p.h.dst_w) {\n"
    "            const fkl::Rect r = p.crop1[blockIdx.z];\n"
    "            const fkl::LinearTap tx = stage2_tap_x(p, q, x, blockIdx.z), ty = stage2_tap_y(p, q, y, blockIdx.z);\n"
    "            fkl::i32 j = tx.i0 + r.x;\n"
    "            fkl::f32 w = tx.w1;\n"
    "            if (tx.i1 == tx.i0 && j + 1 >= p.h.src_w) {\n"
    "                j -= 1;\n"
    "                w = 1.0f;\n"
    "            }\n"
    "            const fkl::u32 pitch = (fkl::u32)p.h.src_pitch;\n"
    "            const fkl::u8* pa = (const fkl::u8*)p.h.src + ((fkl::u32)(ty.i0 + r.y) * pitch + (fkl::u32)j * 3u);\n"
    "            const fkl::u8* pc = (const fkl::u8*)p.h.src + ((fkl::u32)(ty.i1 + r.y) * pitch + (fkl::u32)j * 3u);\n"
    "            fkl::f32 in[3];\n"
    "            for (int c = 0; c < 3; ++c)\n"
    "                in[c] = fkl::linear_blend(fkl::tap_f32(pa[c]), fkl::tap_f32(pa[c + 3]), fkl::tap_f32(pc[c]),\n"
    "                                          fkl::tap_f32(pc[c + 3]), w, ty.w1);\n"
    "            compute_pixel(p, in, out[k]);\n"
    "        }\n",
)
ONE_BARRIER = [
    (
        "    if (threadIdx.x == 0 && threadIdx.y == 0) block_plane = plane_of(p, blockIdx.z);\n"
        "    __syncthreads();\n"
        "    const Plane q = block_plane;\n"
        "    __shared__ fkl::LinearTap block_tx[128], block_ty[8];\n",
        "    __shared__ fkl::LinearTap block_tx[128], block_ty[8];\n"
        "    if (threadIdx.x == 0 || threadIdx.y == 0) {\n"
        "    const Plane q = plane_of(p, blockIdx.z);\n"
        "    if (threadIdx.x == 0 && threadIdx.y == 0) block_plane = q;\n",
    ),
    (
        "    __syncthreads();\n    if (y >= p.h.dst_h) return;\n    fkl::f32 out[4][3];\n",
        "    }\n    __syncthreads();\n    const Plane q = block_plane;\n    if (y >= p.h.dst_h) return;\n"
        "    fkl::f32 out[4][3];\n",
    ),
]

PREFETCH = (
    "        const fkl::Rect r = p.crop1[blockIdx.z];\n"
    "        const fkl::i32 sy = r.y + (fkl::i32)(((float)y + 0.5f) * (float)r.h / (float)p.h.dst_h);\n"
    "        const char* rows[2] = {{(const char*)p.h.src + (size_t)min(sy, p.h.src_h - 1) * p.h.src_pitch,\n"
    "                               (const char*)p.h.src + (size_t)min(sy + 1, p.h.src_h - 1) * p.h.src_pitch}};\n"
    "        for (int k = 0; k < {n}; k += {step}) {{\n"
    "            const fkl::i32 x = x0 + k * 32 < p.h.dst_w ? x0 + k * 32 : p.h.dst_w - 1;\n"
    "            const fkl::i32 sx = r.x + (fkl::i32)(((float)x + 0.5f) * (float)r.w / (float)p.h.dst_w);\n"
    '            for (int j = 0; j < 2; ++j) asm volatile("prefetch.global.L2 [%0];" :: "l"(rows[j] + sx * 3));\n'
    "        }}\n"
)
ROW_OF_THREAD = "    const fkl::i32 y = blockIdx.y * blockDim.y + threadIdx.y;\n"
NARROW_HEAD = "    const fkl::i32 x0 = blockIdx.x * 32 + threadIdx.x;\n" + ROW_OF_THREAD
WIDE_HEAD = "    const fkl::i32 x0 = blockIdx.x * 128 + threadIdx.x;\n" + ROW_OF_THREAD
PREFETCH_NARROW = (NARROW_HEAD, NARROW_HEAD + "    if (y < p.h.dst_h) {\n" + PREFETCH.format(n=1, step=1) + "    }\n")
PREFETCH_WIDE = (WIDE_HEAD, WIDE_HEAD + "    if (y < p.h.dst_h) {\n" + PREFETCH.format(n=4, step=2) + "    }\n")

# Rewrites tried on the device; each entry: (exact text of the emitted source, its replacement).
# Written against d867302's source (before 9566b96 made "skip" the emitted form), "offsets" and "pairs*" against
# 04fe7db's (codegen v13). Codegen v14 (361e4a7) emits the column pairs and PDL lines: these rewrites no longer
# find their text there (each fails loudly), run them on a checkout of 0d44305.
VARIANTS: dict[str, list[tuple[str, str]]] = {
    "emitted": [],
    # the taps through the read-only data cache (no gain measured: see RESULTS.md)
    "ldg": [("for (int c = 0; c < 3; ++c) out[c] = px[c];", "for (int c = 0; c < 3; ++c) out[c] = __ldg(px + c);")],
    # the narrow entry without the barrier of its shared plane: every thread computes plane_of (no gain)
    "narrow-no-barrier": [
        (
            "    __shared__ Plane block_plane;\n"
            "    if (threadIdx.x == 0 && threadIdx.y == 0) block_plane = plane_of(p, blockIdx.z);\n"
            "    __syncthreads();\n"
            "    const Plane q = block_plane;\n"
            "    if (y >= p.h.dst_h) return;\n"
            "    fkl::f32 out[1][3];",
            "    if (y >= p.h.dst_h) return;\n    const Plane q = plane_of(p, blockIdx.z);\n    fkl::f32 out[1][3];",
        )
    ],
    # the wide entry skips a pixel column outside the output (224 = 128 + 96: its last column of pixels)
    "skip": [(SAMPLE_CALL, "if (x0 + k * 32 < p.h.dst_w) " + SAMPLE_CALL.lstrip())],
    # a row's address once per tap row, a tap's column offset once per tap column
    "rows": [(FOUR_TAPS, ROW_TAPS)],
    "rows+skip": [(FOUR_TAPS, ROW_TAPS), (SAMPLE_CALL, "if (x0 + k * 32 < p.h.dst_w) " + SAMPLE_CALL.lstrip())],
    # one barrier: the threads that compute taps compute the plane themselves
    "one-barrier": ONE_BARRIER,
    "one-barrier+skip": [*ONE_BARRIER, (SAMPLE_CALL, "if (x0 + k * 32 < p.h.dst_w) " + SAMPLE_CALL.lstrip())],
    # 16 rows of threads per block (run with BLOCK_Y=16)
    # the block's taps as byte offsets into the source (crop folded in), a row's pointer once per thread
    "offsets": [(WIDE_EMITTED, WIDE_OFFSETS)],
    # the same, held to 32 registers (full occupancy at 256 threads): "offsets" alone takes 38
    "offsets-lb": [
        (WIDE_EMITTED, WIDE_OFFSETS.replace("void fkl_kernel(", "void __launch_bounds__(256, 8) fkl_kernel(", 1))
    ],
    # the taps as column pairs (+3 bytes) and row pointers once per thread
    "pairs": [(WIDE_EMITTED, WIDE_PAIRS)],
    "pairs-eager": [(WIDE_EMITTED, WIDE_PAIRS_EAGER)],
    "narrow-pairs": [NARROW_PAIRS],
    "pairs+narrow-pairs": [(WIDE_EMITTED, WIDE_PAIRS), NARROW_PAIRS],
    "pairs-lb": [
        (WIDE_EMITTED, WIDE_PAIRS.replace("void fkl_kernel(", "void __launch_bounds__(256, 8) fkl_kernel(", 1))
    ],
    "pairs-eager-lb": [
        (WIDE_EMITTED, WIDE_PAIRS_EAGER.replace("void fkl_kernel(", "void __launch_bounds__(256, 8) fkl_kernel(", 1))
    ],
    # each thread warms L2 with the two source rows of its pixel (approximate, f32) before the plane is known
    "prefetch-narrow": [PREFETCH_NARROW],
    "prefetch-wide": [PREFETCH_WIDE],
    "prefetch-both": [PREFETCH_NARROW, PREFETCH_WIDE],
    "tall": [("block_ty[8]", "block_ty[16]")],
    "tall+one-barrier+skip": [
        *ONE_BARRIER,
        ("block_ty[8]", "block_ty[16]"),
        (SAMPLE_CALL, "if (x0 + k * 32 < p.h.dst_w) " + SAMPLE_CALL.lstrip()),
    ],
}


def main(names: list[str]) -> None:
    settings = [int(v) for v in os.environ.get("PPTS", "1,2,4").split(",")]
    size = int(os.environ.get("ROI_SIZE", "224"))
    counts = tuple(int(v) for v in os.environ.get("ROI_COUNTS", "64,3").split(","))  # ROIs per call
    rotate = int(os.environ.get("ROTATE", "1"))  # source images rotated through (bench_roi: 304 at B=3)
    block_y = int(os.environ.get("BLOCK_Y", "8"))  # threads along y; at most emit_cpp.PIXEL_BLOCK_Y
    print("| variant | pixels per thread | workload | fklir GPU µs | output digest |\n|---|---|---|---|---|")
    for name in names or list(VARIANTS):
        for ppt in settings:
            env = {**os.environ, "FKLIR_CACHE_DIR": tempfile.mkdtemp(prefix=f"fklir-roi-{name}-{ppt}-")}
            replacements = json.dumps(VARIANTS[name])
            script = ONE_SETTING.format(
                root=str(ROOT),
                ppt=ppt,
                counts=counts,
                rotate=rotate,
                block_y=block_y,
                size=size,
                name=name,
                replacements=replacements,
            )
            done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
            print(done.stdout.strip() or f"| {name} | {ppt} | failed | {done.stderr.strip()[-300:]} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
