"""C++ emission: one `fkl.kernel` → one small, readable translation unit over the op headers.

The same text compiles with nvcc (entry `fkl_kernel`, a `__global__` taking the parameter block by
value) and with g++ (entry `fkl_run`, an OpenMP loop taking a pointer to it). Two shapes:

- flat: a packed read, no geometry, a packed write and channel-wise ops only. The image is a
  flat run of elements; each thread loads 16 bytes at a time, applies the chain per element
  (`compute(p, v, c)` with a compile-time channel c), stores 16 bytes.
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

import math
from dataclasses import dataclass

from xdsl.ir import Operation

from fklir.backend.cpp_types import CPP_TYPE, ELEMENT_SIZE, SLOT_CPP_TYPE, image_of, slot_of
from fklir.backend.emit_compute import emit_compute_element, emit_compute_pixel, is_channelwise
from fklir.backend.emit_geometry import emit_stages
from fklir.dialects import fkl

CODEGEN_VERSION = "6"

GPU_ENTRY = "fkl_kernel"
CPU_ENTRY = "fkl_run"


FLAT_BLOCK = 256  # threads per block of a flat kernel; the layout tells the launcher (KernelLayout.flat_block)


@dataclass(frozen=True)
class KernelLayout:
    """What the host needs to launch the emitted kernel (no IR in it)."""

    mode: str  # "flat" | "pixel"
    elements_per_thread: int  # flat: elements per thread; pixel: 1
    slots: tuple[tuple[str, str, int], ...]
    in_dtype: str
    in_channels: int
    in_planes: int
    out_dtype: str
    out_channels: int
    out_planes: int
    write: str  # "packed" | "planar" ([B][C][H][W]) | "tsplit" ([C][B][H][W]) | "split_write"
    src_table: int = 0  # > 0: the read takes one pointer per plane from Params::src_table
    read: str = "packed"  # "packed" | "planar" (TensorPack: [B][C][H][W]) | "none" (ReadSet)
    dst_table: int = 0  # > 0 (split_write): one output buffer per channel in Params::dst_table
    reciprocals: tuple[str, ...] = ()  # slots whose float32 reciprocals follow the slots (`<slot>_rcp`)
    flat_block: int = FLAT_BLOCK  # flat kernels: threads per block, which the thread -> vector mapping assumes


@dataclass(frozen=True)
class EmittedKernel:
    source: str
    layout: KernelLayout


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
    return tuple(
        slot_of(op)
        for chain in chains
        for op in chain.compute
        if isinstance(op, fkl.DivOp) and image_of(op.results[0].type).dtype == "float32"
    )


def _emit_params(
    slots: list[tuple[str, str, int]], src_table: int, dst_table: int, reciprocals: tuple[str, ...] = ()
) -> list[str]:
    lines = [
        "// The parameter block: the fixed head, then one array per slot of !fkl.params.",
        "struct Params {",
    ]
    lines.append("    fkl::KernelHeader h;")
    if src_table:
        lines.append(f"    const void* src_table[{src_table}];  // one source image per plane")
    if dst_table:
        lines.append(f"    void* dst_table[{dst_table}];  // one output buffer per channel")
    for name, kind, count in slots:
        lines.append(f"    {SLOT_CPP_TYPE[kind]} {name}[{count}];")
    counts = {name: count for name, _, count in slots}
    for name in reciprocals:
        lines.append(f"    fkl::f32 {name}_rcp[{counts[name]}];  // 1 / {name}, packed by the host")
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
    return [
        f"// One output pixel: sample through the geometry stages, compute, write {_WRITE_COMMENT[chain.write_kind]}.",
        "FKL_HD void pixel(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z) {",
        f"    {t_in} in[{stage.channels.data}];",
        f"    stage{last_stage}(p, x, y, z, in);",
        f"    {t_out} out[{out.channels.data}];",
        "    compute_pixel(p, in, out);",
        *_emit_write(chain.write_kind, t_out, out.channels.data),
        "}",
    ]


FLAT_ELEMENTS = 32  # elements per thread: enough to amortise reading the per-channel parameters


def _flat_vectors(in_dtype: str) -> tuple[int, int]:
    """(elements per 16-byte vector, vectors per thread)."""
    per_vector = 16 // ELEMENT_SIZE[in_dtype]
    return per_vector, max(1, FLAT_ELEMENTS // per_vector)


def _flat_width(in_dtype: str, out_dtype: str, channels: int) -> int:
    """Elements per thread (the launch grid divides the element count by it)."""
    del out_dtype, channels
    per_vector, vectors = _flat_vectors(in_dtype)
    return per_vector * vectors


def _emit_flat(in_dtype: str, out_dtype: str, channels: int) -> list[str]:
    t_in, t_out = CPP_TYPE[in_dtype], CPP_TYPE[out_dtype]
    n, k_count = _flat_vectors(in_dtype)
    out_bytes = n * ELEMENT_SIZE[out_dtype]
    per_store = 16 // ELEMENT_SIZE[out_dtype]
    if out_bytes >= 16:
        store = [
            "#pragma unroll",
            f"            for (int s = 0; s < {out_bytes // 16}; ++s) {{",
            f"                fkl::Vec16<{t_out}> v;",
            "#pragma unroll",
            f"                for (int j = 0; j < {per_store}; ++j) v.v[j] = out[s * {per_store} + j];",
            f"                fkl::store16(dst + s * {per_store}, v);",
            "            }",
        ]
    else:  # a narrowing chain: the warp's stores are still one contiguous run
        store = ["#pragma unroll", f"            for (int j = 0; j < {n}; ++j) dst[j] = out[j];"]
    first = f"(first_vector + (fkl::i64)k * {FLAT_BLOCK}) * {n}"
    return [
        f"// Thread i (lane i % {FLAT_BLOCK} of block i / {FLAT_BLOCK}) takes {k_count} vectors of {n} elements,",
        f"// {FLAT_BLOCK} vectors apart: each warp load or store is one contiguous run, all {k_count} loads are in",
        "// flight before any compute, and the per-channel parameters are read once per thread. Element e has",
        "// channel e % C; its parameters are picked without divergent reads.",
        "FKL_HD void flat(const Params& p, fkl::i64 i) {",
        f"    const {t_in}* src = (const {t_in}*)p.h.src;",
        f"    {t_out}* dst_base = ({t_out}*)p.h.dst;",
        f"    const fkl::i64 first_vector = (i / {FLAT_BLOCK}) * {FLAT_BLOCK * k_count} + i % {FLAT_BLOCK};",
        f"    fkl::Vec16<{t_in}> in[{k_count}];",
        "#pragma unroll",
        f"    for (int k = 0; k < {k_count}; ++k) {{",
        f"        const fkl::i64 first = {first};",
        f"        if (p.h.aligned && first + {n} <= p.h.n) in[k] = fkl::load16(src + first);",
        "    }",
        "#pragma unroll",
        f"    for (int k = 0; k < {k_count}; ++k) {{",
        f"        const fkl::i64 first = {first};",
        "        if (first >= p.h.n) return;",
        f"        {t_out}* dst = dst_base + first;",
        f"        int c = (int)(first % {channels});",
        f"        if (p.h.aligned && first + {n} <= p.h.n) {{",
        f"            {t_out} out[{n}];",
        "#pragma unroll",
        f"            for (int j = 0; j < {n}; ++j) {{",
        "                out[j] = compute(p, in[k].v[j], c);",
        f"                c = (c + 1 == {channels}) ? 0 : c + 1;",
        "            }",
        *store,
        "            continue;",
        "        }",
        f"        for (int j = 0; j < {n} && first + j < p.h.n; ++j) {{",
        "            dst[j] = compute(p, src[first + j], c);",
        f"            c = (c + 1 == {channels}) ? 0 : c + 1;",
        "        }",
        "    }",
        "}",
    ]


def _emit_entries(mode: str, n: int, chains: int, flat_types: tuple[str, str, int] | None = None) -> list[str]:
    entry_fn = "dispatch" if chains > 1 else "pixel"
    pixel_call = f"{entry_fn}(p, x, y, blockIdx.z)"
    cpu_helper: list[str] = []
    if mode == "flat":
        assert flat_types is not None
        t_in, t_out, channels = CPP_TYPE[flat_types[0]], CPP_TYPE[flat_types[1]], flat_types[2]
        group = math.lcm(16 // min(ELEMENT_SIZE[flat_types[0]], ELEMENT_SIZE[flat_types[1]]), channels)
        gpu_body = [
            "    flat(p, (fkl::i64)blockIdx.x * blockDim.x + threadIdx.x);",
        ]
        cpu_helper = [
            f"// Groups [g0, g1) of {group} elements: whole pixels and whole 16-byte vectors, each element's channel",
            "// fixed at compile time. A plain loop over restrict pointers, which g++ vectorises (the GPU's flat()",
            "// computes the same values).",
            f"static void run_groups(const Params& q, const {t_in}* __restrict__ src, {t_out}* __restrict__ dst,",
            "                       fkl::i64 g0, fkl::i64 g1) {",
            "    for (fkl::i64 g = g0; g < g1; ++g) {",
            f"        const fkl::i64 at = g * {group};",
            *(f"        dst[at + {e}] = compute(q, src[at + {e}], {e % channels});" for e in range(group)),
            "    }",
            "}",
        ]
        cpu_body = [
            "    const Params q = *p;",
            f"    const {t_in}* src = (const {t_in}*)q.h.src;",
            f"    {t_out}* dst = ({t_out}*)q.h.dst;",
            f"    const fkl::i64 groups = q.h.n / {group};",
            "    const fkl::i64 chunk = 4096;",
            "#pragma omp parallel for schedule(static)",
            "    for (fkl::i64 g = 0; g < groups; g += chunk) {",
            "        run_groups(q, src, dst, g, g + chunk < groups ? g + chunk : groups);",
            "    }",
            f"    for (fkl::i64 e = groups * {group}; e < q.h.n; ++e)"
            f" dst[e] = compute(q, src[e], (int)(e % {channels}));",
        ]
    else:
        gpu_body = [
            "    const fkl::i32 x = blockIdx.x * blockDim.x + threadIdx.x;",
            "    const fkl::i32 y = blockIdx.y * blockDim.y + threadIdx.y;",
            f"    if (x < p.h.dst_w && y < p.h.dst_h) {pixel_call};",
        ]
        cpu_body = [
            "#pragma omp parallel for collapse(2) schedule(static)",
            "    for (fkl::i32 z = 0; z < p->h.dst_planes; ++z)",
            "        for (fkl::i32 y = 0; y < p->h.dst_h; ++y)",
            f"            for (fkl::i32 x = 0; x < p->h.dst_w; ++x) {entry_fn}(*p, x, y, z);",
        ]
    dispatch: list[str] = []
    if chains > 1:
        dispatch = [
            "// Divergent batch: plane z runs chain planemap[z].",
            "FKL_HD void dispatch(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z) {",
            f"    switch (p.{fkl.PLANE_MAP_SLOT}[z]) {{",
            *(f"        case {k}: c{k}::pixel(p, x, y, z); break;" for k in range(chains)),
            "    }",
            "}",
            "",
        ]
    return [
        *dispatch,
        "#if defined(__CUDACC__)",
        f'extern "C" __global__ void {GPU_ENTRY}(const Params p) {{',
        *gpu_body,
        "}",
        "#else",
        *cpu_helper,
        f'extern "C" void {CPU_ENTRY}(const Params* p) {{',
        *cpu_body,
        "}",
        "#endif",
    ]


def _emit_chain_pixel(chain: Chain, counts: dict[str, int]) -> list[str]:
    stage, out = chain.stage_type, chain.out_type
    return [
        *emit_compute_pixel(chain.compute, stage.dtype, stage.channels.data, out.dtype, out.channels.data),
        "",
        *emit_stages(chain.read, chain.geometry, counts),
        "",
        *_emit_pixel(chain, len(chain.geometry)),
    ]


def _check_divergent(chains: list[Chain]) -> None:
    out_types = {(c.out_type.dtype, c.out_type.channels.data) for c in chains}
    if len(out_types) > 1:
        raise ValueError(f"divergent chains must all produce one output type, got {sorted(out_types)}")
    if len({c.write_kind for c in chains}) > 1 or any(len(c.read.sources) > 1 for c in chains):
        raise ValueError("divergent chains must share one write layout and read single images")


def _is_flat(chains: list[Chain], src_table: int) -> bool:
    """A single chain of a packed read, no geometry, channel-wise ops and a packed write."""
    if len(chains) > 1 or src_table:
        return False
    (chain,) = chains
    return (
        not chain.geometry
        and chain.read_kind == "packed"
        and chain.write_kind == "packed"
        and is_channelwise(chain.compute)
    )


def emit_kernel(kernel: fkl.KernelOp) -> EmittedKernel:
    """The C++ translation unit and host layout of one hoisted, typed `fkl.kernel`."""
    chains = kernel_chains(kernel)
    first = chains[0]
    in_type = image_of(first.read.source_type)
    out_type = first.out_type
    slots = kernel.params.slots
    counts = {name: count for name, _, count in slots}
    src_table = len(first.read.sources) if len(first.read.sources) > 1 else 0
    dst_table = out_type.channels.data if first.write_kind == "split_write" else 0
    divergent = len(chains) > 1
    flat = _is_flat(chains, src_table)
    mode = "flat" if flat else "pixel"

    lines = [
        f"// Generated by fklir (codegen v{CODEGEN_VERSION}) from fkl.kernel @{kernel.sym_name.data}.",
        '#include "fkl/kernel.h"',
        "",
        *_emit_params(slots, src_table, dst_table, float_divisor_slots(chains)),
        "",
    ]
    n = 1
    out_planes = out_type.planes.data
    if divergent:
        _check_divergent(chains)
        out_planes = counts[fkl.PLANE_MAP_SLOT]
        for k, chain in enumerate(chains):
            lines += [
                f"namespace c{k} {{  // chain {k}",
                "",
                *_emit_chain_pixel(chain, counts),
                "",
                f"}}  // namespace c{k}",
                "",
            ]
    elif flat:
        n = _flat_width(in_type.dtype, out_type.dtype, in_type.channels.data)
        lines += emit_compute_element(first.compute, in_type.dtype, out_type.dtype)
        lines.append("")
        lines += _emit_flat(in_type.dtype, out_type.dtype, in_type.channels.data)
    else:
        lines += _emit_chain_pixel(first, counts)
    lines.append("")
    lines += _emit_entries(mode, n, len(chains), (in_type.dtype, out_type.dtype, in_type.channels.data))
    layout = KernelLayout(
        mode=mode,
        elements_per_thread=n,
        slots=tuple(slots),
        in_dtype=in_type.dtype,
        in_channels=in_type.channels.data,
        in_planes=in_type.planes.data,
        out_dtype=out_type.dtype,
        out_channels=out_type.channels.data,
        out_planes=out_planes,
        write=first.write_kind,
        src_table=src_table,
        read=first.read_kind,
        dst_table=dst_table,
        reciprocals=float_divisor_slots(chains),
    )
    return EmittedKernel("\n".join(lines) + "\n", layout)
