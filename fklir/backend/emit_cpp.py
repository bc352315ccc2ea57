"""C++ emission: one kernel's plan (kernel_plan.plan_kernel) → one small, readable translation unit over the
op headers. This module is a template: it arranges the code the plan holds and never sees the IR.

The same text compiles with nvcc (entry `fkl_kernel`, a `__global__` taking the parameter block by
value) and with g++ (entry `fkl_run`, an OpenMP loop taking a pointer to it). Two shapes:

- flat: a packed read, no geometry and a packed write. The image is a flat run of elements, cut
  into groups of whole pixels and whole 16-byte vectors; a channel-wise chain runs per element
  (`compute(p, v, c)` with a compile-time channel c), any other per pixel (`compute_pixel`). See emit_flat.
- sampled: one thread per output pixel. The read and the geometry after it become one function per
  stage (`stage0` reads the source, `stage1` crops it, `stage2` resizes the crop, ...; see
  emit_geometry), so each thread loads exactly the source pixels it needs; then the compute
  chain on the whole pixel (`compute_pixel`, see emit_compute), then the write (packed, planar
  [B][C][H][W], [C][B][H][W], or one buffer per channel).

The parameter block is `fkl::KernelHeader`, then the source pointer table (list inputs), then the
destination pointer table (SplitWrite: one buffer per channel), then one array per slot of the
kernel's `!fkl.params`; `KernelLayout` describes it for the host side (fklir.runtime.params).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fklir.backend.cpp_types import CPP_TYPE, LET_NEXT_START, SLOT_CPP_TYPE, WAIT_FOR_PREVIOUS
from fklir.backend.emit_flat import (
    CPU_PARALLEL_MIN_ELEMENTS,
    FlatShape,
    GraphFlatShape,
    PixelFlatShape,
    emit_flat_cpu,
    emit_flat_gpu,
    emit_graph_at,
    emit_graph_flat_cpu,
    emit_graph_flat_gpu,
    emit_pixel_flat_cpu,
    emit_pixel_flat_gpu,
)
from fklir.backend.kernel_layout import (
    CODEGEN_VERSION,
    CPU_ENTRY,
    GPU_ENTRY,
    GPU_NARROW_ENTRY,
    PIXELS_PER_THREAD,
    PLANE_MAP_SLOT,
    KernelLayout,
)
from fklir.backend.plan import ChainPlan, ChainSampling, GraphPlan, KernelPlan, Sampler
from fklir.backend.sampling import PIXEL_BLOCK_X, PixelTaps

CPU_ROWS_PER_CHUNK = 16  # sampled kernels (CPU): rows a thread takes at a time
USER_BODIES_LINE = 4  # the line the user ops' bodies start on: right after render's three-line head


@dataclass(frozen=True)
class EmittedKernel:
    source: str
    layout: KernelLayout
    include_dirs: tuple[Path, ...] = ()  # the user ops' folders, searched after fklir's headers


def _emit_params(layout: KernelLayout) -> list[str]:
    """The C++ mirror of the layout's parameter block (runtime/params.py makes the ctypes one)."""
    lines = [
        "// The parameter block: the fixed head, then one array per slot of !fkl.params.",
        "struct Params {",
    ]
    lines.append("    fkl::KernelHeader h;")
    if layout.src_table:
        lines.append(f"    const void* src_table[{layout.src_table}];  // one source image per plane")
    if layout.dst_table:
        lines.append(f"    void* dst_table[{layout.dst_table}];  // one output buffer per channel")
    for i, (dtype, channels, kind) in enumerate(layout.inputs, start=1):
        lines.append(f"    fkl::InputSurface in{i};  // call argument {i}: {dtype} x {channels}, {kind}")
        if layout.src_table:
            lines.append(f"    const void* in{i}_table[{layout.src_table}];  // one image of argument {i} per plane")
    for k, (dtype, channels, kind) in enumerate(layout.outputs, start=1):
        lines.append(f"    fkl::OutputSurface out{k};  // output {k}: {dtype} x {channels}, {_WRITE_COMMENT[kind]}")
    for name, kind, count in layout.slots:
        lines.append(f"    {SLOT_CPP_TYPE[kind]} {name}[{count}];")
    counts = {name: count for name, _, count in layout.slots}
    reciprocals = layout.reciprocals
    for name in reciprocals:
        lines.append(f"    fkl::f32 {name}_rcp[{counts[name]}];  // 1 / {name}, packed by the host")
    for name in reciprocals:
        lines.append(f"    fkl::i32 {name}_fast;  // 1 when every |{name}| lies in [2^-60, 2^60] (fkl::Div::fast)")
    lines.append("};")
    return lines


def _emit_write(write_kind: str, t_out: str, channels: int, surface: str = "p.h") -> list[str]:
    """Statements that store the pixel `out` at (x, y) of plane z (of the header's output, or of a DAG's
    output `surface`, p.out<k>: every output has the header's size)."""
    if write_kind == "packed":
        return [
            f"    {t_out}* px = ({t_out}*){surface}.dst + z * {surface}.dst_plane_stride + y * {surface}.dst_pitch"
            f" + (fkl::i64)x * {channels};",
            f"    for (int c = 0; c < {channels}; ++c) px[c] = out[c];",
        ]
    lines = [
        "    const fkl::i64 plane = (fkl::i64)p.h.dst_h * p.h.dst_w;",
        "    const fkl::i64 at = (fkl::i64)y * p.h.dst_w + x;",
    ]
    if write_kind == "planar":  # [B][C][H][W]
        lines += [
            f"    {t_out}* base = ({t_out}*){surface}.dst + z * {surface}.dst_plane_stride;",
            f"    for (int c = 0; c < {channels}; ++c) base[c * plane + at] = out[c];",
        ]
    elif write_kind == "tsplit":  # [C][B][H][W]
        lines += [
            f"    {t_out}* base = ({t_out}*)p.h.dst;",
            f"    for (int c = 0; c < {channels}; ++c) base[((fkl::i64)c * p.h.dst_planes + z) * plane + at] = out[c];",
        ]
    else:  # split_write: channel c to buffer c, each [B][H][W]
        lines.append(f"    for (int c = 0; c < {channels}; ++c) (({t_out}*)p.dst_table[c])[z * plane + at] = out[c];")
    return lines


_WRITE_COMMENT = {
    "packed": "packed [B][H][W][C]",
    "planar": "planar [B][C][H][W]",
    "tsplit": "[C][B][H][W]",
    "split_write": "one [B][H][W] buffer per channel",
}


def _emit_pixel(chain: ChainPlan, sampling: ChainSampling) -> list[str]:
    stage, out, last_stage = chain.stage, chain.out, chain.last_stage
    t_in, t_out = CPP_TYPE[stage.dtype], CPP_TYPE[out.dtype]
    channels = out.channels
    return [
        "// One output pixel: sample through the geometry stages and compute (`sample`), then write",
        f"// {_WRITE_COMMENT[chain.write_kind]} (`store`).",
        "FKL_HD void sample(const Params& p, const Plane& q, fkl::i32 x, fkl::i32 y, fkl::i32 z,"
        f" {t_out} out[{channels}]) {{",
        f"    {t_in} in[{stage.channels}];",
        f"    stage{last_stage}(p, q, x, y, z, in);",
        f"    compute_pixel(p, {chain.plane_arg}in, out);",
        "}",
        f"FKL_HD void store(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z, const {t_out} out[{channels}]) {{",
        *_emit_write(chain.write_kind, t_out, channels),
        "}",
        "FKL_HD void pixel(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z) {",
        f"    {t_out} out[{channels}];",
        "    sample(p, plane_of(p, z), x, y, z, out);",
        "    store(p, x, y, z, out);",
        "}",
        *(_sample_taps(chain) if sampling.block_taps else []),
        *(_sample_pair(chain) if sampling.pair_taps else []),
    ]


def _sample_taps(chain: ChainPlan) -> list[str]:
    """`sample` for a kernel whose block computed the final resize's taps (see has_block_taps)."""
    stage, out = chain.stage, chain.out
    return [
        "FKL_HD void sample_taps(const Params& p, const Plane& q, const fkl::LinearTap& tx, const fkl::LinearTap& ty,",
        f"                        fkl::i32 z, {CPP_TYPE[out.dtype]} out[{out.channels}]) {{",
        f"    {CPP_TYPE[stage.dtype]} in[{stage.channels}];",
        f"    stage{chain.last_stage}_taps(p, q, tx, ty, z, in);",
        f"    compute_pixel(p, {chain.plane_arg}in, out);",
        "}",
    ]


def _sample_pair(chain: ChainPlan) -> list[str]:
    """`sample` given the rows of the taps and a column pair (see has_pair_taps)."""
    stage, out = chain.stage, chain.out
    t_src = CPP_TYPE[chain.source.dtype]
    channels = stage.channels
    return [
        f"FKL_HD void sample_pair(const Params& p, {chain.plane_param}const {t_src}* row0, const {t_src}* row1,"
        " const fkl::PairTap& tx,",
        f"                        fkl::f32 wy, {CPP_TYPE[out.dtype]} out[{out.channels}]) {{",
        f"    const {t_src}* a = row0 + tx.offset;",
        f"    const {t_src}* c = row1 + tx.offset;",
        f"    {CPP_TYPE[stage.dtype]} in[{channels}];",
        f"    for (int k = 0; k < {channels}; ++k) {{",
        f"        const fkl::f32 fa = fkl::tap_f32(a[k]), fb = fkl::tap_f32(a[k + {channels}]);",
        f"        const fkl::f32 fc = fkl::tap_f32(c[k]), fd = fkl::tap_f32(c[k + {channels}]);",
        "        in[k] = fkl::linear_blend(fa, fb, fc, fd, tx.w1, wy);",
        "    }",
        f"    compute_pixel(p, {chain.plane_arg}in, out);",
        "}",
    ]


def _block_prologue(chain: ChainPlan, pixels: int, sampling: Sampler) -> list[str]:
    """What a GPU block shares, computed by a few of its threads before any thread returns: the
    Plane (a resize's scales cost f64 divisions; the block's threads share blockIdx.z), and what the
    sampling strategy shares (its taps of the block's columns and rows). Then `q`."""
    if not chain.shares_plane:
        return ["    if (y >= p.h.dst_h) return;", "    const Plane q = plane_of(p, blockIdx.z);"]
    return [
        "    __shared__ Plane block_plane;",
        "    if (threadIdx.x == 0 && threadIdx.y == 0) block_plane = plane_of(p, blockIdx.z);",
        "    __syncthreads();",
        "    const Plane q = block_plane;",
        *sampling.gpu_shared_taps(chain, pixels),
        "    if (y >= p.h.dst_h) return;",
    ]


def _sampled_gpu_entry_head(name: str, pixels: int) -> list[str]:
    return [
        f'extern "C" __global__ void {name}(const Params p) {{',
        LET_NEXT_START,
        f"    const fkl::i32 x0 = blockIdx.x * {PIXEL_BLOCK_X * pixels} + threadIdx.x;",
        "    const fkl::i32 y = blockIdx.y * blockDim.y + threadIdx.y;",
    ]


def _sampled_gpu_entry(name: str, chain: ChainPlan, pixels: int, sampling: Sampler) -> list[str]:
    """A GPU entry of a one-chain sampled kernel that makes `pixels` pixels per thread the way `sampling`
    samples."""
    out = chain.out
    # All samples before any store, so that the compiler computes what they share once. A pixel right
    # of the output is skipped, by a whole warp where the width is a multiple of 32: at 224 wide, the
    # fourth pixel of every thread of the second block column, whose warps then do no work at all.
    return [
        *_sampled_gpu_entry_head(name, pixels),
        *_block_prologue(chain, pixels, sampling),
        WAIT_FOR_PREVIOUS,
        f"    {CPP_TYPE[out.dtype]} out[{pixels}][{out.channels}];",
        *sampling.gpu_sample(chain, pixels),
        "#pragma unroll",
        f"    for (int k = 0; k < {pixels}; ++k) {{",
        f"        const fkl::i32 x = x0 + k * {PIXEL_BLOCK_X};",
        "        if (x < p.h.dst_w) store(p, x, y, blockIdx.z, out[k]);",
        "    }",
        "}",
    ]


def _emit_sampled_entries(plan: KernelPlan) -> list[str]:
    """The entry points of a sampled kernel: on the GPU, PIXELS_PER_THREAD pixels per thread (the
    launcher's choice for large outputs) and, for one chain, one pixel per thread (GPU_NARROW_ENTRY,
    its choice when the whole output fits the device's resident threads: then latency, not
    instruction count, sets the time); on the CPU, loops over rows (_sampled_cpu_entry)."""
    chains, first = plan.chains, plan.chains[0]
    divergent = len(chains) > 1
    channels = first.out.channels  # divergent chains share one output type
    if divergent:
        dispatch = [
            "// Divergent batch: plane z runs chain planemap[z].",
            "FKL_HD void dispatch(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z) {",
            f"    switch (p.{PLANE_MAP_SLOT}[z]) {{",
            *(f"        case {k}: c{k}::pixel(p, x, y, z); break;" for k in range(len(chains))),
            "    }",
            "}",
            "",
        ]
        return [*dispatch, *_per_pixel_entries("dispatch", channels)]
    entries = [
        *_sampled_gpu_entry(GPU_ENTRY, first, PIXELS_PER_THREAD, plan.samplings[0].gpu),
        *_sampled_gpu_entry(GPU_NARROW_ENTRY, first, 1, PixelTaps()),
    ]
    return _sampled_entries(entries, _sampled_cpu_entry((first, plan.samplings[0].cpu), channels))


def _sampled_entries(gpu: list[str], cpu: list[str]) -> list[str]:
    return [
        "#if defined(__CUDACC__)",
        f"// Thread (tx, ty) of block (bx, by, z) makes pixels x = bx * {PIXEL_BLOCK_X} * N + tx + k * {PIXEL_BLOCK_X},"
        " k < N,",
        "// of row y = by * blockDim.y + ty in plane z: a warp still writes consecutive pixels, and what",
        "// depends only on the row and the plane (rects, scales, the row's taps) is computed once.",
        *gpu,
        "#else",
        *cpu,
        "#endif",
    ]


def _per_pixel_entries(call: str, channels: int) -> list[str]:
    """The entries of a kernel whose every output pixel is `call(p, x, y, z)` (a divergent batch's dispatch)."""
    return _sampled_entries(_per_pixel_gpu_entry(call, "", []), _sampled_cpu_entry(None, channels, call))


def _per_pixel_gpu_entry(call: str, arguments: str, prologue: list[str]) -> list[str]:
    """The GPU entry that calls `call(p, <arguments>x, y, z)` on each of a thread's pixels, after `prologue`
    (which defines what `arguments` name)."""
    return [
        *_sampled_gpu_entry_head(GPU_ENTRY, PIXELS_PER_THREAD),
        *prologue,
        "    if (y >= p.h.dst_h) return;",
        WAIT_FOR_PREVIOUS,
        "#pragma unroll",
        f"    for (int k = 0; k < {PIXELS_PER_THREAD}; ++k) {{",
        f"        const fkl::i32 x = x0 + k * {PIXEL_BLOCK_X};",
        f"        if (x < p.h.dst_w) {call}(p, {arguments}x, y, blockIdx.z);",
        "    }",
        "}",
    ]


def _sampled_cpu_entry(sampled: tuple[ChainPlan, Sampler] | None, channels: int, call: str = "dispatch") -> list[str]:
    """The CPU entry of a sampled kernel (one chain and its CPU sampling, or None for one whose pixels are each
    `call(p, x, y, z)`: a divergent batch, a DAG): a team of
    threads shares out the rows of all planes (run_rows), in chunks taken as threads come free, so that a thread
    the system runs late (2 cores shared with other work) does not hold up the call with half of it.
    Each thread works on its own copy of the parameter block: an output store through a byte pointer
    may alias anything, so through `*params` the compiler would reload every field and redo the plane's
    f64 divisions per pixel. A thread computes what a plane shares (plane_of, and what its rows share
    along x, as OpenCV does once per call) when its rows reach a new plane, which is rare: its chunks
    follow one another."""
    helpers: list[str] = []
    if sampled is None:
        state: list[str] = []
        per_row = [f"            for (fkl::i32 x = 0; x < p.h.dst_w; ++x) {call}(p, x, y, z);"]
    else:
        chain, sampling = sampled
        helpers = [*chain.cpu_helpers, *sampling.cpu_functions(chain)]
        state = [*sampling.cpu_state(chain), "    fkl::i32 plane_z = -1;"]
        per_row = [
            "            if (z != plane_z) {",
            "                plane_z = z;",
            *sampling.cpu_plane(chain),
            "            }",
            *sampling.cpu_row(chain),
        ]
    return [
        *helpers,
        "static void run_rows(const Params* params) {",
        "    const Params p = *params;",
        *state,
        f"#pragma omp for collapse(2) schedule(dynamic, {CPU_ROWS_PER_CHUNK})",
        "    for (fkl::i32 z = 0; z < p.h.dst_planes; ++z)",
        "        for (fkl::i32 y = 0; y < p.h.dst_h; ++y) {",
        *per_row,
        "        }",
        "}",
        *_cpu_entry_of_rows(channels),
    ]


def _cpu_entry_of_rows(channels: int) -> list[str]:
    """`fkl_run`: a team of threads that share out run_rows' rows (from enough output elements)."""
    return [
        f'extern "C" void {CPU_ENTRY}(const Params* params) {{',
        "    const fkl::KernelHeader& h = params->h;",
        f"    const fkl::i64 elements = (fkl::i64)h.dst_planes * h.dst_h * h.dst_w * {channels};",
        f"#pragma omp parallel if(elements >= {CPU_PARALLEL_MIN_ELEMENTS})",
        "    run_rows(params);",
        "}",
    ]


def _emit_sampled_chain(chain: ChainPlan, sampling: ChainSampling) -> list[str]:
    return [
        *chain.compute_pixel,
        "",
        *chain.stages,
        *chain.pair_rows,
        "",
        *_emit_pixel(chain, sampling),
    ]


def _emit_flat_compute(chain: ChainPlan, shape: FlatShape | PixelFlatShape) -> list[str]:
    """The compute chain of a flat kernel: per element, or per pixel (PixelFlatShape)."""
    return list(chain.compute_pixel if isinstance(shape, PixelFlatShape) else chain.compute_element)


def _emit_flat_entries(chain: ChainPlan, shape: FlatShape | PixelFlatShape) -> list[str]:
    """The GPU and CPU entries of a flat kernel."""
    if isinstance(shape, PixelFlatShape):
        return ["#if defined(__CUDACC__)", *emit_pixel_flat_gpu(shape), "#else", *emit_pixel_flat_cpu(shape), "#endif"]
    fast = chain.compute_fast
    return [
        "#if defined(__CUDACC__)",
        *fast,
        *([""] if fast else []),
        *emit_flat_gpu(shape, chain.divisors),
        "#else",
        *emit_flat_cpu(shape),
        "#endif",
    ]


def render(plan: KernelPlan) -> EmittedKernel:
    """The C++ translation unit and host layout of one kernel, printed from its plan."""
    layout, chains, flat, first = plan.layout, plan.chains, plan.flat, plan.chains[0]
    lines = [
        f"// Generated by fklir (codegen v{CODEGEN_VERSION}) from fkl.kernel @{plan.name}.",
        '#include "fkl/kernel.h"',
        "",
    ]
    lines += plan.user_bodies
    lines += [*_emit_params(layout), ""]
    if len(chains) > 1:
        for k, (chain, sampling) in enumerate(zip(chains, plan.samplings, strict=True)):
            lines += [
                f"namespace c{k} {{  // chain {k}",
                "",
                *_emit_sampled_chain(chain, sampling),
                "",
                f"}}  // namespace c{k}",
                "",
            ]
    elif flat is not None:
        lines += _emit_flat_compute(first, flat)
    else:
        lines += _emit_sampled_chain(first, plan.samplings[0])
    lines.append("")
    if flat is not None:
        lines += _emit_flat_entries(first, flat)
    else:
        lines += _emit_sampled_entries(plan)
    return EmittedKernel("\n".join(lines) + "\n", layout, plan.include_dirs)


def render_graph(plan: GraphPlan) -> EmittedKernel:
    """The C++ translation unit and host layout of a DAG kernel (SPEC §8), printed from its plan: each branch's
    stages in its namespace b<k>, a store per output, and `graph_pixel`, the whole graph on one output pixel;
    a flat graph's `graph_values` and its flat entries instead (emit_flat)."""
    lines = [
        f"// Generated by fklir (codegen v{CODEGEN_VERSION}) from fkl.kernel @{plan.name} (a DAG).",
        '#include "fkl/kernel.h"',
        "",
        *plan.user_bodies,
        *_emit_params(plan.layout),
        "",
    ]
    if plan.flat is not None:
        lines += _graph_flat(plan, plan.flat)
        return EmittedKernel("\n".join(lines) + "\n", plan.layout, plan.include_dirs)
    for k, branch in enumerate(plan.branches):
        lines += [f"namespace b{k} {{  // branch {k}", "", *branch.stages, "", f"}}  // namespace b{k}", ""]
    for k, output in enumerate(plan.outputs):
        t_out, channels = CPP_TYPE[output.out.dtype], output.out.channels
        lines += [
            f"// output {k}: {_WRITE_COMMENT[output.write_kind]}",
            f"FKL_HD void store{k}(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z, "
            f"const {t_out} out[{channels}]) {{",
            *_emit_write(output.write_kind, t_out, channels, output.surface),
            "}",
        ]
    planes = "".join(f"const b{k}::Plane& q{k}, " for k in range(len(plan.branches)))
    lines += [
        "",
        "// The graph on output pixel (x, y) of plane z: each branch sampled (q<k>: what its pixels of plane z",
        "// share), each op, each output stored.",
        f"FKL_HD void graph_pixel(const Params& p, {planes}fkl::i32 x, fkl::i32 y, fkl::i32 z) {{",
        *(f"    {line}" for line in plan.body),
        "}",
        "",
        *_graph_sampled_entries(plan),
    ]
    return EmittedKernel("\n".join(lines) + "\n", plan.layout, plan.include_dirs)


def _graph_sampled_entries(plan: GraphPlan) -> list[str]:
    """The entries of a sampled DAG kernel: each branch's Plane computed once per GPU block (by one thread, where
    it holds values: a resize's f64 scales) or once per plane a CPU thread's rows reach, then graph_pixel."""
    branches = range(len(plan.branches))
    planes = "".join(f"q{k}, " for k in branches)
    sharing = [k for k in branches if plan.branches[k].shares_plane]
    shared: list[str] = []
    if sharing:
        shared = [
            *(f"    __shared__ b{k}::Plane plane{k};" for k in sharing),
            "    if (threadIdx.x == 0 && threadIdx.y == 0) {",
            *(f"        plane{k} = b{k}::plane_of(p, blockIdx.z);" for k in sharing),
            "    }",
            "    __syncthreads();",
        ]
    own = [
        f"    const b{k}::Plane q{k} = {f'plane{k}' if k in sharing else f'b{k}::plane_of(p, blockIdx.z)'};"
        for k in branches
    ]
    gpu = _per_pixel_gpu_entry("graph_pixel", planes, [*shared, *own])
    cpu = [
        "static void run_rows(const Params* params) {",
        "    const Params p = *params;",
        *(f"    b{k}::Plane q{k};" for k in branches),
        "    fkl::i32 plane_z = -1;",
        f"#pragma omp for collapse(2) schedule(dynamic, {CPU_ROWS_PER_CHUNK})",
        "    for (fkl::i32 z = 0; z < p.h.dst_planes; ++z)",
        "        for (fkl::i32 y = 0; y < p.h.dst_h; ++y) {",
        "            if (z != plane_z) {",
        "                plane_z = z;",
        *(f"                q{k} = b{k}::plane_of(p, z);" for k in branches),
        "            }",
        f"            for (fkl::i32 x = 0; x < p.h.dst_w; ++x) graph_pixel(p, {planes}x, y, z);",
        "        }",
        "}",
        *_cpu_entry_of_rows(plan.layout.out_channels),
    ]
    return _sampled_entries(gpu, cpu)


def _graph_flat(plan: GraphPlan, s: GraphFlatShape) -> list[str]:
    """`graph_values`, the graph on one pixel of each input into one pixel of each output, and the entries of a
    flat DAG kernel."""
    parameters = [f"const {CPP_TYPE[dtype]}* a{i}" for i, (dtype, _) in enumerate(s.inputs)]
    parameters += [f"{CPP_TYPE[dtype]}* r{k}" for k, (dtype, _) in enumerate(s.outputs)]
    return [
        "// The graph on one pixel: a<i> is call argument i's, r<k> output k's.",
        f"FKL_HD void graph_values(const Params& p, {', '.join(parameters)}) {{",
        *(f"    {line}" for line in plan.body),
        "}",
        *emit_graph_at(s),
        "",
        "#if defined(__CUDACC__)",
        *emit_graph_flat_gpu(s),
        "#else",
        *emit_graph_flat_cpu(s),
        "#endif",
    ]
