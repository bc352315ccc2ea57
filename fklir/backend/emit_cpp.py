"""C++ emission: one `fkl.kernel` → one small, readable translation unit over the op headers.

The same text compiles with nvcc (entry `fkl_kernel`, a `__global__` taking the parameter block by
value) and with g++ (entry `fkl_run`, an OpenMP loop taking a pointer to it). Two shapes:

- flat: a packed read, no geometry and a packed write. The image is a flat run of elements, cut
  into groups of whole pixels and whole 16-byte vectors; a channel-wise chain runs per element
  (`compute(p, v, c)` with a compile-time channel c), any other per pixel (`compute_pixel`). See emit_flat.
- pixel: one thread per output pixel. The read and the geometry after it become one function per
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

from xdsl.ir import Operation

from fklir.backend.cpp_types import CPP_TYPE, LET_NEXT_START, SLOT_CPP_TYPE, WAIT_FOR_PREVIOUS, image_of, slot_of
from fklir.backend.emit_compute import (
    divisors_checked,
    emit_compute_element,
    emit_compute_fast,
    emit_compute_pixel,
    is_channelwise,
)
from fklir.backend.emit_flat import (
    CPU_PARALLEL_MIN_ELEMENTS,
    FlatShape,
    PixelFlatShape,
    emit_flat_cpu,
    emit_flat_gpu,
    emit_pixel_flat_cpu,
    emit_pixel_flat_gpu,
    flat_shape,
    pixel_flat_shape,
)
from fklir.backend.emit_geometry import (
    emit_nearest_columns,
    emit_pair_rows,
    emit_row_span,
    emit_stages,
    emit_warp_rows,
    has_block_taps,
    has_nearest_columns,
    has_pair_taps,
    has_row_spans,
    has_warp_rows,
    shares_plane,
)
from fklir.backend.emit_rules import is_float_division
from fklir.backend.emit_user import emit_user_bodies, user_declarations, user_include_dirs
from fklir.backend.kernel_layout import CODEGEN_VERSION, CPU_ENTRY, GPU_ENTRY, GPU_NARROW_ENTRY, KernelLayout
from fklir.dialects import fkl

PIXEL_BLOCK_X = 32  # pixel kernels: threads along x per block (fklir.runtime.launch.PIXEL_BLOCK)
PIXEL_BLOCK_Y = 8  # and along y
PIXELS_PER_THREAD = 4  # pixel kernels (GPU): pixels per thread along x, PIXEL_BLOCK_X apart (RESULTS.md)
CPU_ROWS_PER_CHUNK = 16  # pixel kernels (CPU): rows a thread takes at a time


@dataclass(frozen=True)
class EmittedKernel:
    source: str
    layout: KernelLayout
    include_dirs: tuple[Path, ...] = ()  # the user ops' folders, searched after fklir's headers


@dataclass(frozen=True)
class Chain:
    """One read ... write chain of a kernel, with the geometry its read samples through."""

    read: fkl.ReadOp
    geometry: list[Operation]
    compute: list[Operation]
    write: Operation

    @property
    def stage_type(self) -> fkl.ImageType:
        """The pixel the geometry stages produce (what the compute chain starts from)."""
        return image_of(self.geometry[-1].results[0].type if self.geometry else self.read.source_type)

    @property
    def out_type(self) -> fkl.ImageType:
        return image_of(self.write.operands[0].type)

    @property
    def write_kind(self) -> str:
        return WRITE_KIND[type(self.write)]

    @property
    def read_kind(self) -> str:
        if self.geometry and isinstance(self.geometry[0], fkl.ReadSetOp):
            return "none"
        return image_of(self.read.source_type).layout.data


WRITE_KIND: dict[type[Operation], str] = {
    fkl.WriteOp: "packed",
    fkl.SplitOp: "planar",
    fkl.TSplitOp: "tsplit",
    fkl.SplitWriteOp: "split_write",
}


def kernel_chains(kernel: fkl.KernelOp) -> list[Chain]:
    """The kernel's chains in order (several in a divergent kernel)."""
    chains: list[Chain] = []
    ops = list(kernel.body.block.ops)
    while ops:
        read = ops.pop(0)
        if not isinstance(read, fkl.ReadOp):
            raise ValueError(f"kernel @{kernel.sym_name.data}: a chain must start with fkl.read, not '{read.name}'")
        middle: list[Operation] = []
        while ops and not isinstance(ops[0], fkl.WRITE_OPS):
            middle.append(ops.pop(0))
        if not ops:
            raise ValueError(f"kernel @{kernel.sym_name.data}: the chain of '{read.name}' has no write")
        leading = 0
        while leading < len(middle) and isinstance(middle[leading], fkl.GEOMETRY_OPS):
            leading += 1
        if any(isinstance(op, fkl.GEOMETRY_OPS) for op in middle[leading:]):
            raise ValueError("geometry ops must come right after the read (run fkl-validate-chain)")
        chains.append(Chain(read, read.geometry + middle[:leading], middle[leading:], ops.pop(0)))
    return chains


def float_divisor_slots(chains: list[Chain]) -> tuple[str, ...]:
    """Slots that divide a float32 chain: the host also packs their reciprocals (`<slot>_rcp`), so
    a GPU division is a product and one FMA correction (fkl::Div), never a per-element reciprocal."""
    return tuple(slot_of(op) for chain in chains for op in chain.compute if is_float_division(op))


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


def _emit_write(write_kind: str, t_out: str, channels: int) -> list[str]:
    """Statements that store the pixel `out` at (x, y) of plane z."""
    if write_kind == "packed":
        return [
            f"    {t_out}* px = ({t_out}*)p.h.dst + z * p.h.dst_plane_stride + y * p.h.dst_pitch"
            f" + (fkl::i64)x * {channels};",
            f"    for (int c = 0; c < {channels}; ++c) px[c] = out[c];",
        ]
    lines = [
        "    const fkl::i64 plane = (fkl::i64)p.h.dst_h * p.h.dst_w;",
        "    const fkl::i64 at = (fkl::i64)y * p.h.dst_w + x;",
    ]
    if write_kind == "planar":  # [B][C][H][W]
        lines += [
            f"    {t_out}* base = ({t_out}*)p.h.dst + z * p.h.dst_plane_stride;",
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


def _emit_pixel(chain: Chain, last_stage: int) -> list[str]:
    stage, out = chain.stage_type, chain.out_type
    t_in, t_out = CPP_TYPE[stage.dtype], CPP_TYPE[out.dtype]
    channels = out.channels.data
    return [
        "// One output pixel: sample through the geometry stages and compute (`sample`), then write",
        f"// {_WRITE_COMMENT[chain.write_kind]} (`store`).",
        "FKL_HD void sample(const Params& p, const Plane& q, fkl::i32 x, fkl::i32 y, fkl::i32 z,"
        f" {t_out} out[{channels}]) {{",
        f"    {t_in} in[{stage.channels.data}];",
        f"    stage{last_stage}(p, q, x, y, z, in);",
        "    compute_pixel(p, in, out);",
        "}",
        f"FKL_HD void store(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z, const {t_out} out[{channels}]) {{",
        *_emit_write(chain.write_kind, t_out, channels),
        "}",
        "FKL_HD void pixel(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z) {",
        f"    {t_out} out[{channels}];",
        "    sample(p, plane_of(p, z), x, y, z, out);",
        "    store(p, x, y, z, out);",
        "}",
        *(_sample_taps(chain, last_stage) if has_block_taps(chain.geometry) else []),
        *(_sample_pair(chain) if has_pair_taps(chain.read, chain.geometry) else []),
    ]


def _sample_taps(chain: Chain, last_stage: int) -> list[str]:
    """`sample` for a kernel whose block computed the final resize's taps (see has_block_taps)."""
    stage, out = chain.stage_type, chain.out_type
    return [
        "FKL_HD void sample_taps(const Params& p, const Plane& q, const fkl::LinearTap& tx, const fkl::LinearTap& ty,",
        f"                        fkl::i32 z, {CPP_TYPE[out.dtype]} out[{out.channels.data}]) {{",
        f"    {CPP_TYPE[stage.dtype]} in[{stage.channels.data}];",
        f"    stage{last_stage}_taps(p, q, tx, ty, z, in);",
        "    compute_pixel(p, in, out);",
        "}",
    ]


def _sample_pair(chain: Chain) -> list[str]:
    """`sample` given the rows of the taps and a column pair (see has_pair_taps)."""
    stage, out = chain.stage_type, chain.out_type
    t_src = CPP_TYPE[image_of(chain.read.source_type).dtype]
    channels = stage.channels.data
    return [
        f"FKL_HD void sample_pair(const Params& p, const {t_src}* row0, const {t_src}* row1, const fkl::PairTap& tx,",
        f"                        fkl::f32 wy, {CPP_TYPE[out.dtype]} out[{out.channels.data}]) {{",
        f"    const {t_src}* a = row0 + tx.offset;",
        f"    const {t_src}* c = row1 + tx.offset;",
        f"    {CPP_TYPE[stage.dtype]} in[{channels}];",
        f"    for (int k = 0; k < {channels}; ++k) {{",
        f"        const fkl::f32 fa = fkl::tap_f32(a[k]), fb = fkl::tap_f32(a[k + {channels}]);",
        f"        const fkl::f32 fc = fkl::tap_f32(c[k]), fd = fkl::tap_f32(c[k + {channels}]);",
        "        in[k] = fkl::linear_blend(fa, fb, fc, fd, tx.w1, wy);",
        "    }",
        "    compute_pixel(p, in, out);",
        "}",
    ]


def _block_prologue(chain: Chain, pixels: int, taps: str) -> list[str]:
    """What a GPU block shares, computed by a few of its threads before any thread returns: the
    Plane (a resize's scales cost f64 divisions; the block's threads share blockIdx.z), and with
    block or pair `taps` the final resize's taps of the block's columns and rows (see has_block_taps
    and has_pair_taps). Then `q`."""
    if not shares_plane(chain.geometry):
        return ["    if (y >= p.h.dst_h) return;", "    const Plane q = plane_of(p, blockIdx.z);"]
    lines = [
        "    __shared__ Plane block_plane;",
        "    if (threadIdx.x == 0 && threadIdx.y == 0) block_plane = plane_of(p, blockIdx.z);",
        "    __syncthreads();",
        "    const Plane q = block_plane;",
    ]
    if taps != "pixel":
        k = len(chain.geometry)
        tap_x = f"stage{k}_tap_x(p, q, x < p.h.dst_w ? x : p.h.dst_w - 1, blockIdx.z)"
        if taps == "pair":
            channels = image_of(chain.read.source_type).channels.data
            tap_x = f"fkl::pair_tap({tap_x}, origin.x, p.h.src_w, {channels})"
        tx_type = "fkl::PairTap" if taps == "pair" else "fkl::LinearTap"
        lines += [
            f"    __shared__ {tx_type} block_tx[{PIXEL_BLOCK_X * pixels}];",
            f"    __shared__ fkl::LinearTap block_ty[{PIXEL_BLOCK_Y}];",
            "    if (threadIdx.y == 0) {",
            *(["        const fkl::Rect origin = pair_origin(p, blockIdx.z);"] if taps == "pair" else []),
            "#pragma unroll",
            f"        for (int k = 0; k < {pixels}; ++k) {{",
            f"            const fkl::i32 x = x0 + k * {PIXEL_BLOCK_X};",
            f"            block_tx[threadIdx.x + k * {PIXEL_BLOCK_X}] = {tap_x};",
            "        }",
            "    }",
            "    if (threadIdx.x == 0)",
            f"        block_ty[threadIdx.y] = stage{k}_tap_y(p, q, y < p.h.dst_h ? y : p.h.dst_h - 1, blockIdx.z);",
            "    __syncthreads();",
        ]
    return [*lines, "    if (y >= p.h.dst_h) return;"]


def _gpu_entry_head(name: str, pixels: int) -> list[str]:
    return [
        f'extern "C" __global__ void {name}(const Params p) {{',
        LET_NEXT_START,
        f"    const fkl::i32 x0 = blockIdx.x * {PIXEL_BLOCK_X * pixels} + threadIdx.x;",
        "    const fkl::i32 y = blockIdx.y * blockDim.y + threadIdx.y;",
    ]


def _gpu_entry(name: str, chain: Chain, pixels: int, taps: str) -> list[str]:
    """A GPU entry of a one-chain pixel kernel that makes `pixels` pixels per thread; `taps`: "pixel"
    (each pixel computes its own), "block" (has_block_taps) or "pair" (has_pair_taps)."""
    out = chain.out_type
    if taps == "pair":
        t_src = CPP_TYPE[image_of(chain.read.source_type).dtype]
        sample = [
            "    const fkl::LinearTap ty = block_ty[threadIdx.y];",
            "    const fkl::Rect origin = pair_origin(p, blockIdx.z);",
            f"    const {t_src}* row0 = pair_row(p, ty.i0 + origin.y, blockIdx.z);",
            f"    const {t_src}* row1 = pair_row(p, ty.i1 + origin.y, blockIdx.z);",
            "#pragma unroll",
            f"    for (int k = 0; k < {pixels}; ++k)",
            f"        if (x0 + k * {PIXEL_BLOCK_X} < p.h.dst_w)",
            f"            sample_pair(p, row0, row1, block_tx[threadIdx.x + k * {PIXEL_BLOCK_X}], ty.w1, out[k]);",
        ]
    elif taps == "block":
        sample = [
            "    const fkl::LinearTap ty = block_ty[threadIdx.y];",
            "#pragma unroll",
            f"    for (int k = 0; k < {pixels}; ++k)",
            f"        if (x0 + k * {PIXEL_BLOCK_X} < p.h.dst_w)",
            f"            sample_taps(p, q, block_tx[threadIdx.x + k * {PIXEL_BLOCK_X}], ty, blockIdx.z, out[k]);",
        ]
    else:
        sample = [
            "#pragma unroll",
            f"    for (int k = 0; k < {pixels}; ++k) {{",
            f"        const fkl::i32 x = x0 + k * {PIXEL_BLOCK_X};",
            "        if (x < p.h.dst_w) sample(p, q, x, y, blockIdx.z, out[k]);",
            "    }",
        ]
    # All samples before any store, so that the compiler computes what they share once. A pixel right
    # of the output is skipped, by a whole warp where the width is a multiple of 32: at 224 wide, the
    # fourth pixel of every thread of the second block column, whose warps then do no work at all.
    return [
        *_gpu_entry_head(name, pixels),
        *_block_prologue(chain, pixels, taps),
        WAIT_FOR_PREVIOUS,
        f"    {CPP_TYPE[out.dtype]} out[{pixels}][{out.channels.data}];",
        *sample,
        "#pragma unroll",
        f"    for (int k = 0; k < {pixels}; ++k) {{",
        f"        const fkl::i32 x = x0 + k * {PIXEL_BLOCK_X};",
        "        if (x < p.h.dst_w) store(p, x, y, blockIdx.z, out[k]);",
        "    }",
        "}",
    ]


def _wide_taps(chain: Chain) -> str:
    """How the wide GPU entry of a one-chain pixel kernel takes the final resize's taps."""
    if has_pair_taps(chain.read, chain.geometry):
        return "pair"
    return "block" if has_block_taps(chain.geometry) else "pixel"


def _emit_pixel_entries(chains: list[Chain], counts: dict[str, int]) -> list[str]:
    """The entry points of a pixel kernel: on the GPU, PIXELS_PER_THREAD pixels per thread (the
    launcher's choice for large outputs) and, for one chain, one pixel per thread (GPU_NARROW_ENTRY,
    its choice when the whole output fits the device's resident threads: then latency, not
    instruction count, sets the time); on the CPU, loops over rows (_cpu_entry)."""
    divergent = len(chains) > 1
    channels = chains[0].out_type.channels.data  # divergent chains share one output type
    if divergent:
        dispatch = [
            "// Divergent batch: plane z runs chain planemap[z].",
            "FKL_HD void dispatch(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z) {",
            f"    switch (p.{fkl.PLANE_MAP_SLOT}[z]) {{",
            *(f"        case {k}: c{k}::pixel(p, x, y, z); break;" for k in range(len(chains))),
            "    }",
            "}",
            "",
        ]
        entries = [
            *_gpu_entry_head(GPU_ENTRY, PIXELS_PER_THREAD),
            "    if (y >= p.h.dst_h) return;",
            WAIT_FOR_PREVIOUS,
            "#pragma unroll",
            f"    for (int k = 0; k < {PIXELS_PER_THREAD}; ++k) {{",
            f"        const fkl::i32 x = x0 + k * {PIXEL_BLOCK_X};",
            "        if (x < p.h.dst_w) dispatch(p, x, y, blockIdx.z);",
            "    }",
            "}",
        ]
    else:
        dispatch = []
        entries = [
            *_gpu_entry(GPU_ENTRY, chains[0], PIXELS_PER_THREAD, _wide_taps(chains[0])),
            *_gpu_entry(GPU_NARROW_ENTRY, chains[0], 1, "pixel"),
        ]
    return [
        *dispatch,
        "#if defined(__CUDACC__)",
        f"// Thread (tx, ty) of block (bx, by, z) makes pixels x = bx * {PIXEL_BLOCK_X} * N + tx + k * {PIXEL_BLOCK_X},"
        " k < N,",
        "// of row y = by * blockDim.y + ty in plane z: a warp still writes consecutive pixels, and what",
        "// depends only on the row and the plane (rects, scales, the row's taps) is computed once.",
        *entries,
        "#else",
        *_cpu_entry(chains[0] if not divergent else None, channels, counts),
        "#endif",
    ]


def _cpu_taps(chain: Chain) -> str:
    """How the CPU loop of a one-chain pixel kernel samples: "span" (has_row_spans), "nearest"
    (has_nearest_columns), "warp" (has_warp_rows), or as the wide GPU entry does (_wide_taps: "pair",
    "block", "pixel")."""
    if has_row_spans(chain.read, chain.geometry):
        return "span"
    if has_warp_rows(chain.read, chain.geometry):
        return "warp"
    if has_nearest_columns(chain.read, chain.geometry):
        return "nearest"
    return _wide_taps(chain)


def _cpu_helpers(chain: Chain, taps: str, counts: dict[str, int]) -> list[str]:
    """Functions that only the CPU loop calls (so the GPU's source stays as it is)."""
    if taps == "span":
        return emit_row_span(chain.read, chain.geometry, counts)
    if taps == "nearest":
        return emit_nearest_columns(chain.read, chain.geometry, counts)
    if taps == "warp":
        return [*emit_warp_rows(chain.read, chain.geometry), *_cpu_compute_run(chain)]
    return []


def _cpu_state(chain: Chain, taps: str) -> list[str]:
    """A CPU thread's per-plane state: the Plane and what its rows share along x: a final linear
    resize's taps of every column ("block"), fkl::ResizeRows and one row of its blends ("pair": crops
    of a packed integer image), a final nearest resize's source columns ("nearest"), a warp's row arrays
    ("warp")."""
    lines = ["    Plane q;"]
    if taps == "block":
        lines.append("    std::vector<fkl::LinearTap> tx((size_t)p.h.dst_w);")
    elif taps == "warp":
        lines.append("    WarpRows rows(p.h.dst_w);")
    elif taps == "nearest":
        lines.append("    std::vector<fkl::u32> columns((size_t)p.h.dst_w);")
    elif taps == "pair":
        src = image_of(chain.read.source_type)
        t_src, channels = CPP_TYPE[src.dtype], src.channels.data
        lines += [
            f"    fkl::ResizeRows<{t_src}, {channels}> resize(p.h.dst_w);",
            f"    std::vector<fkl::f32> line((size_t)p.h.dst_w * {channels});",
            "    fkl::Rect origin = {0, 0, 0, 0};",
        ]
    return lines


def _cpu_plane(chain: Chain, taps: str) -> list[str]:
    """What a CPU thread computes when its rows reach a new plane z (see _cpu_state)."""
    k = len(chain.geometry)
    lines = ["                q = plane_of(p, z);"]
    if taps == "block":
        lines.append(f"                for (fkl::i32 x = 0; x < p.h.dst_w; ++x) tx[x] = stage{k}_tap_x(p, q, x, z);")
    elif taps == "nearest":
        lines += [
            "                for (fkl::i32 x = 0; x < p.h.dst_w; ++x)",
            "                    columns[x] = nearest_column(p, q, x, z);",
        ]
    elif taps == "pair":
        lines += [
            "                origin = pair_origin(p, z);",
            "                for (fkl::i32 x = 0; x < p.h.dst_w; ++x)",
            f"                    resize.set_column(x, stage{k}_tap_x(p, q, x, z), origin.x);",
        ]
    return lines


def _cpu_row(chain: Chain, taps: str) -> list[str]:
    """The CPU's loop over the pixels of row y of plane z, given the plane's state (_cpu_plane)."""
    if taps == "span":
        return _cpu_span_row(chain)
    if taps == "warp":
        return _cpu_warp_row(chain)
    t_out, channels = CPP_TYPE[chain.out_type.dtype], chain.out_type.channels.data
    in_channels = chain.stage_type.channels.data
    k = len(chain.geometry)
    head: list[str] = []
    if taps == "pair":
        head = [
            f"            const fkl::LinearTap ty = stage{k}_tap_y(p, q, y, z);",
            "            resize.blend(pair_row(p, ty.i0 + origin.y, z), pair_row(p, ty.i1 + origin.y, z), ty.w1,",
            "                         line.data());",
        ]
        sample = f"compute_pixel(p, &line[(size_t)x * {in_channels}], out);"
    elif taps == "nearest":
        t_src = CPP_TYPE[image_of(chain.read.source_type).dtype]
        head = [f"            const {t_src}* src = nearest_row(p, q, y, z);"]
        sample = "compute_pixel(p, src + columns[x], out);"
    elif taps == "block":
        head = [f"            const fkl::LinearTap ty = stage{k}_tap_y(p, q, y, z);"]
        sample = "sample_taps(p, q, tx[x], ty, z, out);"
    else:
        sample = "sample(p, q, x, y, z, out);"
    return [
        *head,
        "            for (fkl::i32 x = 0; x < p.h.dst_w; ++x) {",
        f"                {t_out} out[{channels}];",
        f"                {sample}",
        "                store(p, x, y, z, out);",
        "            }",
    ]


def _cpu_span_row(chain: Chain) -> list[str]:
    """Row y of plane z through its row span (has_row_spans): the run straight from the source row,
    the pixels either side of it (a border's) through `sample`."""
    t_out, channels = CPP_TYPE[chain.out_type.dtype], chain.out_type.channels.data
    t_src = CPP_TYPE[image_of(chain.read.source_type).dtype]
    in_channels = chain.stage_type.channels.data
    return [
        "            const fkl::Span s = row_span(p, y, z);",
        "            const auto edge = [&](fkl::i32 x) {",
        f"                {t_out} out[{channels}];",
        "                sample(p, q, x, y, z, out);",
        "                store(p, x, y, z, out);",
        "            };",
        "            for (fkl::i32 x = 0; x < s.lo; ++x) edge(x);",
        "            if (s.lo < s.hi) {",
        f"                const {t_src}* src = span_row(p, s, z);",
        "                for (fkl::i32 x = s.lo; x < s.hi; ++x) {",
        f"                    {t_out} out[{channels}];",
        f"                    compute_pixel(p, src + (fkl::i64)(x + s.dx) * {in_channels}, out);",
        "                    store(p, x, y, z, out);",
        "                }",
        "            }",
        "            for (fkl::i32 x = s.hi; x < p.h.dst_w; ++x) edge(x);",
    ]


def _cpu_warp_row(chain: Chain) -> list[str]:
    """Row y of plane z through fkl::WarpRows (has_warp_rows): runs of pixels whose taps lie inside the
    source blended together, runs of pixels whose taps all read the constant 0 outside it as zeros, the
    others through `sample`; a run of a packed write through compute_run (_cpu_compute_run)."""
    t_out, channels = CPP_TYPE[chain.out_type.dtype], chain.out_type.channels.data
    in_channels = chain.stage_type.channels.data
    if chain.write_kind == "packed":
        row = f"({t_out}*)p.h.dst + z * p.h.dst_plane_stride + y * p.h.dst_pitch + (fkl::i64)x * {channels}"
        write_run = [
            f"                compute_run(p, &rows.line[(size_t)x * {in_channels}], {row}, end - x);",
            "                x = end;",
        ]
    else:
        write_run = [
            "                for (; x < end; ++x) {",
            f"                    {t_out} out[{channels}];",
            f"                    compute_pixel(p, &rows.line[(size_t)x * {in_channels}], out);",
            "                    store(p, x, y, z, out);",
            "                }",
        ]
    return [
        "            warp_row(p, rows, y, z);",
        "            for (fkl::i32 x = 0; x < p.h.dst_w;) {",
        "                const fkl::i32 end = rows.run_end(x, p.h.dst_w);",
        "                const fkl::u8 kind = rows.kind[(size_t)x];",
        "                if (kind == fkl::WarpEdge) {",
        "                    for (; x < end; ++x) {",
        f"                        {t_out} out[{channels}];",
        "                        sample(p, q, x, y, z, out);",
        "                        store(p, x, y, z, out);",
        "                    }",
        "                    continue;",
        "                }",
        "                if (kind == fkl::WarpInside) {",
        "                    warp_blend(p, rows, x, end, z);",
        "                } else {",
        "                    rows.zero(x, end);",
        "                }",
        *write_run,
        "            }",
    ]


def _cpu_compute_run(chain: Chain) -> list[str]:
    """`compute_run`: the compute chain of n pixels, their stage values in `in`, written to `out`, a run
    of a packed output row; the pointers are __restrict, so that the compiler vectorises the loop (an
    output byte could otherwise alias the values and the parameters)."""
    if chain.write_kind != "packed":
        return []
    t_in, t_out = CPP_TYPE[chain.stage_type.dtype], CPP_TYPE[chain.out_type.dtype]
    in_channels, channels = chain.stage_type.channels.data, chain.out_type.channels.data
    return [
        f"static void compute_run(const Params& p, const {t_in}* __restrict in, {t_out}* __restrict out,",
        "                        fkl::i32 n) {",
        "    for (fkl::i32 j = 0; j < n; ++j)",
        f"        compute_pixel(p, in + (size_t)j * {in_channels}, out + (size_t)j * {channels});",
        "}",
    ]


def _cpu_entry(chain: Chain | None, channels: int, counts: dict[str, int]) -> list[str]:
    """The CPU entry of a pixel kernel (one `chain`, or None for a divergent one): a team of threads
    shares out the rows of all planes (run_rows), in chunks taken as threads come free, so that a thread
    the system runs late (2 cores shared with other work) does not hold up the call with half of it.
    Each thread works on its own copy of the parameter block: an output store through a byte pointer
    may alias anything, so through `*params` the compiler would reload every field and redo the plane's
    f64 divisions per pixel. A thread computes what a plane shares (plane_of, and what its rows share
    along x, as OpenCV does once per call) when its rows reach a new plane, which is rare: its chunks
    follow one another."""
    helpers: list[str] = []
    if chain is None:
        state: list[str] = []
        per_row = ["            for (fkl::i32 x = 0; x < p.h.dst_w; ++x) dispatch(p, x, y, z);"]
    else:
        taps = _cpu_taps(chain)
        helpers = _cpu_helpers(chain, taps, counts)
        state = [*_cpu_state(chain, taps), "    fkl::i32 plane_z = -1;"]
        per_row = [
            "            if (z != plane_z) {",
            "                plane_z = z;",
            *_cpu_plane(chain, taps),
            "            }",
            *_cpu_row(chain, taps),
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
        f'extern "C" void {CPU_ENTRY}(const Params* params) {{',
        "    const fkl::KernelHeader& h = params->h;",
        f"    const fkl::i64 elements = (fkl::i64)h.dst_planes * h.dst_h * h.dst_w * {channels};",
        f"#pragma omp parallel if(elements >= {CPU_PARALLEL_MIN_ELEMENTS})",
        "    run_rows(params);",
        "}",
    ]


def _emit_chain_pixel(chain: Chain, counts: dict[str, int]) -> list[str]:
    stage, out = chain.stage_type, chain.out_type
    return [
        *emit_compute_pixel(chain.compute, stage.dtype, stage.channels.data, out.dtype, out.channels.data),
        "",
        *emit_stages(chain.read, chain.geometry, counts),
        *(emit_pair_rows(chain.read, chain.geometry, counts) if has_pair_taps(chain.read, chain.geometry) else []),
        "",
        *_emit_pixel(chain, len(chain.geometry)),
    ]


def _check_divergent(chains: list[Chain]) -> None:
    out_types = {(c.out_type.dtype, c.out_type.channels.data) for c in chains}
    if len(out_types) > 1:
        raise ValueError(f"divergent chains must all produce one output type, got {sorted(out_types)}")
    if len({c.write_kind for c in chains}) > 1 or len({tuple(c.read.sources) for c in chains}) > 1:
        raise ValueError("divergent chains must share one write layout and one source (an image or a pointer table)")


def _is_flat(chains: list[Chain]) -> bool:
    """A single chain of a packed read (one image or a list), no geometry and a packed write: its ops
    then see each pixel on its own, so the image is one run of pixels (emit_flat)."""
    if len(chains) > 1:
        return False
    (chain,) = chains
    return not chain.geometry and chain.read_kind == "packed" and chain.write_kind == "packed"


def _flat_shape(chain: Chain, table: bool) -> FlatShape | PixelFlatShape:
    """Channel-wise ops run per element (FlatShape); ops that mix or change channels per pixel."""
    in_type, out_type = image_of(chain.read.source_type), chain.out_type
    if is_channelwise(chain.compute):
        return flat_shape(in_type.dtype, out_type.dtype, in_type.channels.data, table=table)
    return pixel_flat_shape(in_type.dtype, in_type.channels.data, out_type.dtype, out_type.channels.data, table)


def _emit_flat_compute(chain: Chain, shape: FlatShape | PixelFlatShape) -> list[str]:
    """The compute chain of a flat kernel: per element, or per pixel (PixelFlatShape)."""
    in_type, out_type = image_of(chain.read.source_type), chain.out_type
    if isinstance(shape, PixelFlatShape):
        return emit_compute_pixel(
            chain.compute, in_type.dtype, in_type.channels.data, out_type.dtype, out_type.channels.data
        )
    return emit_compute_element(chain.compute, in_type.dtype, out_type.dtype)


def _emit_flat_entries(chain: Chain, shape: FlatShape | PixelFlatShape) -> list[str]:
    """The GPU and CPU entries of a flat kernel."""
    if isinstance(shape, PixelFlatShape):
        return ["#if defined(__CUDACC__)", *emit_pixel_flat_gpu(shape), "#else", *emit_pixel_flat_cpu(shape), "#endif"]
    in_type, out_type = image_of(chain.read.source_type), chain.out_type
    fast = emit_compute_fast(chain.compute, in_type.dtype, out_type.dtype)
    return [
        "#if defined(__CUDACC__)",
        *fast,
        *([""] if fast else []),
        *emit_flat_gpu(shape, divisors_checked(chain.compute)),
        "#else",
        *emit_flat_cpu(shape),
        "#endif",
    ]


def layout_of(kernel: fkl.KernelOp) -> KernelLayout:
    """The binary interface of one hoisted, typed `fkl.kernel`: its parameter block's fields (the C++
    `Params` that emit_kernel prints and the ctypes struct of runtime/params.py are both made from it), its
    mode and what sets its launch geometry. Pure: no C++ is emitted to learn it."""
    chains = kernel_chains(kernel)
    first = chains[0]
    in_type = image_of(first.read.source_type)
    out_type = first.out_type
    slots = kernel.params.slots
    counts = {name: count for name, _, count in slots}
    divergent = len(chains) > 1
    if divergent:
        _check_divergent(chains)
    shape = _flat_shape(first, len(first.read.sources) > 1) if _is_flat(chains) else None
    return KernelLayout(
        mode="pixel" if shape is None else "flat",
        elements_per_thread=1 if shape is None else shape.per_thread,
        slots=tuple(slots),
        in_dtype=in_type.dtype,
        in_channels=in_type.channels.data,
        in_planes=in_type.planes.data,
        out_dtype=out_type.dtype,
        out_channels=out_type.channels.data,
        out_planes=counts[fkl.PLANE_MAP_SLOT] if divergent else out_type.planes.data,
        write=first.write_kind,
        src_table=len(first.read.sources) if len(first.read.sources) > 1 else 0,
        read=first.read_kind,
        dst_table=out_type.channels.data if first.write_kind == "split_write" else 0,
        reciprocals=float_divisor_slots(chains),
        flat_block=0 if shape is None else shape.threads,
        pixels_per_thread=PIXELS_PER_THREAD if shape is None else 1,
        wide_min_src_w=2 if not divergent and has_pair_taps(first.read, first.geometry) else 1,
    )


def emit_kernel(kernel: fkl.KernelOp) -> EmittedKernel:
    """The C++ translation unit and host layout of one hoisted, typed `fkl.kernel`."""
    layout = layout_of(kernel)
    chains = kernel_chains(kernel)
    first = chains[0]
    counts = {name: count for name, _, count in layout.slots}
    shape = _flat_shape(first, layout.src_table > 0) if layout.mode == "flat" else None

    lines = [
        f"// Generated by fklir (codegen v{CODEGEN_VERSION}) from fkl.kernel @{kernel.sym_name.data}.",
        '#include "fkl/kernel.h"',
        "",
    ]
    lines += emit_user_bodies(user_declarations(kernel), len(lines) + 1)
    lines += [*_emit_params(layout), ""]
    if len(chains) > 1:
        for k, chain in enumerate(chains):
            lines += [
                f"namespace c{k} {{  // chain {k}",
                "",
                *_emit_chain_pixel(chain, counts),
                "",
                f"}}  // namespace c{k}",
                "",
            ]
    elif shape is not None:
        lines += _emit_flat_compute(first, shape)
    else:
        lines += _emit_chain_pixel(first, counts)
    lines.append("")
    if shape is not None:
        lines += _emit_flat_entries(first, shape)
    else:
        lines += _emit_pixel_entries(chains, counts)
    return EmittedKernel("\n".join(lines) + "\n", layout, user_include_dirs(user_declarations(kernel)))
