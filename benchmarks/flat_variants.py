"""Experiment: time alternative thread layouts for flat kernels against the emitted one (device only).

Each variant keeps the emitted `Params` and `compute()` and replaces only the thread -> element mapping,
so the values must equal the pipeline's own output bit for bit. Not a benchmark of record: it exists to
choose the emitter's flat layout (see RESULTS.md). Usage: python3 benchmarks/flat_variants.py [--sass DIR]
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

try:
    import torch
except ImportError:  # the variants compile without it (checked on the build machine)
    torch = None  # type: ignore[assignment]

import fklir as fkl
from fklir.backend import compilers
from fklir.runtime import cuda_driver

INCLUDE = Path(fkl.__file__).resolve().parent / "backend" / "include"
SIZES = {"u8": 1, "i8": 1, "u16": 2, "i16": 2, "f16": 2, "bf16": 2, "f32": 4, "i32": 4, "u32": 4, "f64": 8}


def split_source(source: str) -> tuple[str, str, str]:
    """(prefix with Params and compute, input C++ element type, output C++ element type)."""
    cut = source.index("#if defined(__CUDACC__)")
    m = re.search(r"FKL_HD fkl::(\w+) compute\(const Params& p, fkl::(\w+) v0, int c\)", source)
    assert m is not None
    return source[:cut] + "\n", m.group(2), m.group(1)


def group_size(cin: str, cout: str, channels: int) -> int:
    return math.lcm(16 // SIZES[cin], 16 // SIZES[cout], channels)


def pixel_groups(prefix: str, cin: str, cout: str, channels: int, groups: int, copy: bool) -> tuple[str, int]:
    """Each thread: `groups` runs of G elements (whole pixels, whole vectors), runs blockDim apart."""
    g = group_size(cin, cout, channels)
    vin, vout = g * SIZES[cin] // 16, g * SIZES[cout] // 16
    lin, lout = 16 // SIZES[cin], 16 // SIZES[cout]
    value = (
        f"(fkl::{cout})in[r][e / {lin}].v[e % {lin}]"
        if copy
        else f"compute(p, in[r][e / {lin}].v[e % {lin}], e % {channels})"
    )
    body = f"""
extern "C" __global__ void fkl_kernel(const Params p) {{
    const fkl::{cin}* src = (const fkl::{cin}*)p.h.src;
    fkl::{cout}* dst = (fkl::{cout}*)p.h.dst;
    const fkl::i64 base = (fkl::i64)blockIdx.x * blockDim.x * {groups} + threadIdx.x;
    fkl::Vec16<fkl::{cin}> in[{groups}][{vin}];
#pragma unroll
    for (int r = 0; r < {groups}; ++r) {{
        const fkl::i64 first = (base + (fkl::i64)r * blockDim.x) * {g};
        if (first + {g} <= p.h.n) {{
#pragma unroll
            for (int k = 0; k < {vin}; ++k) in[r][k] = fkl::load16(src + first + k * {lin});
        }}
    }}
#pragma unroll
    for (int r = 0; r < {groups}; ++r) {{
        const fkl::i64 first = (base + (fkl::i64)r * blockDim.x) * {g};
        if (first >= p.h.n) return;
        if (first + {g} <= p.h.n) {{
            fkl::{cout} out[{g}];
#pragma unroll
            for (int e = 0; e < {g}; ++e) out[e] = {value};
#pragma unroll
            for (int s = 0; s < {vout}; ++s) {{
                fkl::Vec16<fkl::{cout}> v;
#pragma unroll
                for (int j = 0; j < {lout}; ++j) v.v[j] = out[s * {lout} + j];
                fkl::store16(dst + first + s * {lout}, v);
            }}
            continue;
        }}
        for (int e = 0; first + e < p.h.n; ++e) dst[first + e] = compute(p, src[first + e], e % {channels});
    }}
}}
"""
    return prefix + body, g * groups


def shared_tile(prefix: str, cin: str, cout: str, channels: int, copy: bool, tiles: int = 1) -> tuple[str, int]:
    """Coalesced 16-byte loads into shared memory, whole-pixel compute from it, coalesced stores."""
    g = group_size(cin, cout, channels)
    vin, vout = g * SIZES[cin] // 16, g * SIZES[cout] // 16
    lin, lout = 16 // SIZES[cin], 16 // SIZES[cout]
    value = f"(fkl::{cout})x.v[e % {lin}]" if copy else f"compute(p, x.v[e % {lin}], e % {channels})"
    body = f"""
extern "C" __global__ void __launch_bounds__(256) fkl_kernel(const Params p) {{
    __shared__ uint4 tile_in[{tiles} * 256 * {vin}];
    __shared__ uint4 tile_out[{tiles} * 256 * {vout}];
    const uint4* src = (const uint4*)p.h.src;
    uint4* dst = (uint4*)p.h.dst;
    const fkl::i64 tile_first = (fkl::i64)blockIdx.x * {tiles} * 256 * {g};
    const int t = threadIdx.x;
    if (tile_first + {tiles} * 256 * {g} > p.h.n) {{
        const fkl::{cin}* s = (const fkl::{cin}*)p.h.src;
        fkl::{cout}* d = (fkl::{cout}*)p.h.dst;
        for (fkl::i64 e = tile_first + t; e < p.h.n; e += 256) d[e] = compute(p, s[e], (int)(e % {channels}));
        return;
    }}
    const fkl::i64 in_vec0 = tile_first / {lin};
#pragma unroll
    for (int k = 0; k < {tiles * vin}; ++k) tile_in[t + k * 256] = src[in_vec0 + t + k * 256];
    __syncthreads();
#pragma unroll
    for (int r = 0; r < {tiles}; ++r) {{
        const int q = r * 256 + t;
#pragma unroll
        for (int k = 0; k < {vout}; ++k) {{
            fkl::Vec16<fkl::{cout}> o;
#pragma unroll
            for (int j = 0; j < {lout}; ++j) {{
                const int e = k * {lout} + j;
                fkl::Vec16<fkl::{cin}> x;
                *(uint4*)&x = tile_in[q * {vin} + e / {lin}];
                o.v[j] = {value};
            }}
            tile_out[q * {vout} + k] = *(const uint4*)&o;
        }}
    }}
    __syncthreads();
    const fkl::i64 out_vec0 = tile_first / {lout};
#pragma unroll
    for (int k = 0; k < {tiles * vout}; ++k) dst[out_vec0 + t + k * 256] = tile_out[t + k * 256];
}}
"""
    return prefix + body, g * tiles


def persistent_pixels(prefix: str, cin: str, cout: str, channels: int) -> str:
    """Grid-stride over groups of G elements; the next group's loads are issued before this one computes."""
    g = group_size(cin, cout, channels)
    vin, vout = g * SIZES[cin] // 16, g * SIZES[cout] // 16
    lin, lout = 16 // SIZES[cin], 16 // SIZES[cout]
    return (
        prefix
        + f"""
extern "C" __global__ void fkl_kernel(const Params p) {{
    const fkl::{cin}* src = (const fkl::{cin}*)p.h.src;
    fkl::{cout}* dst = (fkl::{cout}*)p.h.dst;
    const fkl::i64 total = p.h.n / {g};
    const fkl::i64 stride = (fkl::i64)gridDim.x * blockDim.x;
    fkl::i64 grp = (fkl::i64)blockIdx.x * blockDim.x + threadIdx.x;
    fkl::Vec16<fkl::{cin}> next[{vin}];
    if (grp < total) {{
#pragma unroll
        for (int k = 0; k < {vin}; ++k) next[k] = fkl::load16(src + grp * {g} + k * {lin});
    }}
    for (; grp < total; grp += stride) {{
        fkl::Vec16<fkl::{cin}> in[{vin}];
#pragma unroll
        for (int k = 0; k < {vin}; ++k) in[k] = next[k];
        if (grp + stride < total) {{
#pragma unroll
            for (int k = 0; k < {vin}; ++k) next[k] = fkl::load16(src + (grp + stride) * {g} + k * {lin});
        }}
#pragma unroll
        for (int s = 0; s < {vout}; ++s) {{
            fkl::Vec16<fkl::{cout}> v;
#pragma unroll
            for (int j = 0; j < {lout}; ++j) {{
                const int e = s * {lout} + j;
                v.v[j] = compute(p, in[e / {lin}].v[e % {lin}], e % {channels});
            }}
            fkl::store16(dst + grp * {g} + s * {lout}, v);
        }}
    }}
    for (fkl::i64 e = total * {g} + (fkl::i64)blockIdx.x * blockDim.x + threadIdx.x; e < p.h.n; e += stride)
        dst[e] = compute(p, src[e], (int)(e % {channels}));
}}
"""
    )


def persistent_tile(prefix: str, cin: str, cout: str, channels: int) -> str:
    """Grid-stride over shared-memory tiles; the next tile's loads wait in registers while this one computes."""
    g = group_size(cin, cout, channels)
    vin, vout = g * SIZES[cin] // 16, g * SIZES[cout] // 16
    lin, lout = 16 // SIZES[cin], 16 // SIZES[cout]
    return (
        prefix
        + f"""
extern "C" __global__ void __launch_bounds__(256) fkl_kernel(const Params p) {{
    __shared__ uint4 tile_in[256 * {vin}];
    __shared__ uint4 tile_out[256 * {vout}];
    const uint4* src = (const uint4*)p.h.src;
    uint4* dst = (uint4*)p.h.dst;
    const int t = threadIdx.x;
    const fkl::i64 total = p.h.n / (256 * {g});
    fkl::i64 tile = blockIdx.x;
    uint4 next[{vin}];
    if (tile < total) {{
#pragma unroll
        for (int k = 0; k < {vin}; ++k) next[k] = src[tile * {256 * vin} + t + k * 256];
    }}
    for (; tile < total; tile += gridDim.x) {{
        __syncthreads();
#pragma unroll
        for (int k = 0; k < {vin}; ++k) tile_in[t + k * 256] = next[k];
        __syncthreads();
        if (tile + gridDim.x < total) {{
#pragma unroll
            for (int k = 0; k < {vin}; ++k) next[k] = src[(tile + gridDim.x) * {256 * vin} + t + k * 256];
        }}
#pragma unroll
        for (int k = 0; k < {vout}; ++k) {{
            fkl::Vec16<fkl::{cout}> o;
#pragma unroll
            for (int j = 0; j < {lout}; ++j) {{
                const int e = k * {lout} + j;
                fkl::Vec16<fkl::{cin}> x;
                *(uint4*)&x = tile_in[t * {vin} + e / {lin}];
                o.v[j] = compute(p, x.v[e % {lin}], e % {channels});
            }}
            tile_out[t * {vout} + k] = *(const uint4*)&o;
        }}
        __syncthreads();
#pragma unroll
        for (int k = 0; k < {vout}; ++k) dst[tile * {256 * vout} + t + k * 256] = tile_out[t + k * 256];
    }}
    const fkl::{cin}* s = (const fkl::{cin}*)p.h.src;
    fkl::{cout}* d = (fkl::{cout}*)p.h.dst;
    for (fkl::i64 e = total * {256 * g} + (fkl::i64)blockIdx.x * 256 + t; e < p.h.n; e += (fkl::i64)gridDim.x * 256)
        d[e] = compute(p, s[e], (int)(e % {channels}));
}}
"""
    )


def time_kernel(launch, reps: int = 15, calls: int = 40) -> float:
    for _ in range(5):
        launch(0)
    torch.cuda.synchronize()
    samples = []
    for r in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for c in range(calls):
            launch(r * calls + c)
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000 / calls)
    return statistics.median(samples)


def run_workload(name: str, ops: list[object], x_host: torch.Tensor, sass_dir: Path | None, quick: bool) -> list[str]:
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")
    h, w, c = x_host.shape
    sets = max(2, math.ceil(10 * 60e6 / (2 * x_host.numel() * max(x_host.element_size(), 1))))
    xs = [x_host.cuda().roll(i, 0).contiguous() for i in range(sets)]
    ref = pipe(xs[0])
    outs = [torch.empty_like(ref) for _ in range(sets)]
    plan = next(iter(pipe._plans.values()))  # pyright: ignore[reportAttributeAccessIssue]
    source = pipe.source_for(str(x_host.dtype).removeprefix("torch."), tuple(x_host.shape))
    prefix, cin, cout = split_source(source)
    n = x_host.numel()
    variants: dict[str, tuple[str, int, int]] = {
        "emitted": (source, plan.layout.elements_per_thread, plan.layout.flat_block)
    }
    for groups in (1,) if quick else (1, 2, 4):
        variants[f"pixels x{groups}"] = (*pixel_groups(prefix, cin, cout, c, groups, False), 256)
    variants["pixels x1 copy"] = (*pixel_groups(prefix, cin, cout, c, 1, True), 256)
    variants["pixels x2 copy"] = (*pixel_groups(prefix, cin, cout, c, 2, True), 256)
    variants["smem"] = (*shared_tile(prefix, cin, cout, c, False), 256)
    variants["smem x2"] = (*shared_tile(prefix, cin, cout, c, False, 2), 256)
    variants["smem copy"] = (*shared_tile(prefix, cin, cout, c, True), 256)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for per_sm in (4, 8):
        # a fixed grid: per_thread is chosen so that the launcher's grid comes out as sms * per_sm blocks
        fixed = -(-n // (sms * per_sm * 256))
        variants[f"persistent pixels {per_sm}/SM"] = (persistent_pixels(prefix, cin, cout, c), fixed, 256)
        variants[f"persistent smem {per_sm}/SM"] = (persistent_tile(prefix, cin, cout, c), fixed, 256)
    stream = torch.cuda.current_stream().cuda_stream
    copy_src = [x.view(torch.uint8).flatten() for x in xs]
    copy_dst = [torch.empty(ref.numel() * ref.element_size(), dtype=torch.uint8, device="cuda") for _ in range(sets)]
    copy_n = min(copy_src[0].numel(), copy_dst[0].numel())

    def copy_launch(i: int) -> None:
        copy_dst[i % sets][:copy_n].copy_(copy_src[i % sets][:copy_n])

    rows = [f"## {name}: {w}x{h}x{c}, {sets} rotated sets", "", "| variant | µs | /copy | equal |", "|---|---|---|---|"]
    copy_us = time_kernel(copy_launch)
    # the floor moves read + write bytes; a same-size copy reads as much as the kernel reads
    rows.append(f"| device copy (in bytes) | {copy_us:.1f} | 1.00 | - |")
    for label, (text, per_thread, block) in variants.items():
        try:
            cubin = compilers.compile_cubin(
                text, INCLUDE, "sm_90", Path("/tmp/flatvar") / re.sub(r"\W", "_", name + label)
            )
        except compilers.CompileError as err:
            rows.append(f"| {label} | compile error | | {str(err)[:200]} |")
            continue
        if sass_dir is not None:
            stem = re.sub(r"\W", "_", name + "_" + label)
            (sass_dir / f"{stem}.cubin").write_bytes(cubin)
        kernel = cuda_driver.load_kernel(cubin, "fkl_kernel", 0)
        grid = (-(-n // per_thread) + block - 1) // block

        def launch(i: int, kernel=kernel, grid=grid, block=block) -> None:
            plan.set_pointers(xs[i % sets].data_ptr(), outs[i % sets].data_ptr())
            cuda_driver.launch(kernel, (grid, 1, 1), (block, 1, 1), plan.arg_address, stream)

        for o in outs:
            o.zero_()
        us = time_kernel(launch)
        launch(0)
        torch.cuda.synchronize()
        same = bool(torch.equal(outs[0], ref))
        if "copy" in label:
            same = bool(torch.equal(outs[0], xs[0].to(ref.dtype)))
        rows.append(f"| {label} | {us:.1f} | {us / copy_us:.2f} | {same} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sass", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="one group per thread only")
    args = parser.parse_args()
    if args.sass is not None:
        args.sass.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    f32 = torch.rand((2160, 3840, 3), generator=g) * 2 - 0.5
    float6 = [fkl.Mul(1.5), fkl.Add((0.1, 0.2, 0.3)), fkl.Sub(0.25), fkl.Div(1.7), fkl.Max(-0.5), fkl.Min(0.8)]
    u8 = torch.randint(0, 256, (2160, 3840, 3), generator=g, dtype=torch.uint8)
    u8norm = [fkl.Cast("float32"), fkl.Mul((1.2, 0.9, 1.1)), fkl.Sub((10, -5, 20)), fkl.SaturateCast("uint8")]
    lines = [
        *run_workload("float6", float6, f32, args.sass, args.quick),
        "",
        *run_workload("u8norm", u8norm, u8, args.sass, args.quick),
    ]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
