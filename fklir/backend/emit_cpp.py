"""C++ emission: one `fkl.kernel` → one small, readable translation unit over the op headers.

The same text compiles with nvcc (entry `fkl_kernel`, a `__global__` taking the parameter block by
value) and with g++ (entry `fkl_run`, an OpenMP loop taking a pointer to it). Two shapes:

- flat: no geometry, a packed write and channel-wise ops only. The image is a flat run of
  elements; each thread loads 16 bytes at a time, applies the chain per element, stores 16 bytes.
- pixel: one thread per output pixel. The read and the geometry after it become one function per
  stage (`stage0` reads the source, `stage1` crops it, `stage2` resizes the crop, ...), so each
  thread loads exactly the source pixels it needs; then the compute chain, then the write.

The parameter block is `fkl::KernelHeader` followed by one array per slot of the kernel's
`!fkl.params`; `KernelLayout` describes it for the host side (fklir.runtime.params).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.ir import Operation

from fklir.dialects import fkl

CODEGEN_VERSION = "1"

CPP_TYPE = {
    "uint8": "fkl::u8",
    "int8": "fkl::i8",
    "uint16": "fkl::u16",
    "int16": "fkl::i16",
    "int32": "fkl::i32",
    "uint32": "fkl::u32",
    "float16": "fkl::f16",
    "bfloat16": "fkl::bf16",
    "float32": "fkl::f32",
    "float64": "fkl::f64",
    "bool": "bool",
}
ELEMENT_SIZE = {
    "uint8": 1,
    "int8": 1,
    "uint16": 2,
    "int16": 2,
    "int32": 4,
    "uint32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "bool": 1,
}
SLOT_CPP_TYPE = {
    "ui8": "fkl::u8",
    "i8": "fkl::i8",
    "ui16": "fkl::u16",
    "i16": "fkl::i16",
    "i32": "fkl::i32",
    "ui32": "fkl::u32",
    "f16": "fkl::f16",
    "bf16": "fkl::bf16",
    "f32": "fkl::f32",
    "f64": "fkl::f64",
    "i1": "bool",
    "rect": "fkl::Rect",
}
BINARY_STRUCT = {
    fkl.AddOp: "Add",
    fkl.SubOp: "Sub",
    fkl.MulOp: "Mul",
    fkl.DivOp: "Div",
    fkl.MaxOp: "Max",
    fkl.MinOp: "Min",
}

GPU_ENTRY = "fkl_kernel"
CPU_ENTRY = "fkl_run"


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
    write: str  # "packed" | "planar"
    src_table: int = 0  # > 0: the read takes one pointer per plane from Params::src_table


@dataclass(frozen=True)
class EmittedKernel:
    source: str
    layout: KernelLayout


def _image(t: object) -> fkl.ImageType:
    assert isinstance(t, fkl.ImageType) and t.is_known, f"un-inferred type {t}: run fkl-infer-types first"
    return t


def _slot(op: Operation) -> str:
    slot = getattr(op, "slot", None)
    if slot is None:
        raise ValueError(f"'{op.name}' still has an inline value: run fkl-hoist-params before emission")
    return slot.data


@dataclass(frozen=True)
class Chain:
    """One read ... write chain of a kernel, with the geometry its read samples through."""

    read: fkl.ReadOp
    geometry: list[Operation]
    compute: list[Operation]
    write: Operation


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


def _compute_line(op: Operation, src: str, dst: str) -> str:
    """One statement of the compute chain on one element `src` of channel `c`."""
    out_t = CPP_TYPE[_image(op.results[0].type).dtype]
    if isinstance(op, fkl.BinaryValueOp):
        struct = BINARY_STRUCT[type(op)]
        return f"const {out_t} {dst} = fkl::{struct}::exec({src}, p.{_slot(op)}[c]);  // {op.name}: {op.FORMULA}"
    if isinstance(op, fkl.SaturateCastOp):
        return f"const {out_t} {dst} = fkl::SaturateCast<{out_t}>::exec({src});  // {op.name}"
    if isinstance(op, fkl.CastOp):
        return f"const {out_t} {dst} = fkl::Cast<{out_t}>::exec({src});  // {op.name}"
    raise ValueError(f"no C++ emission for '{op.name}'")


def _emit_compute(compute: list[Operation], in_dtype: str, out_dtype: str) -> list[str]:
    lines = [
        "// The compute chain on one element v0 of channel c.",
        f"FKL_HD {CPP_TYPE[out_dtype]} compute(const Params& p, {CPP_TYPE[in_dtype]} v0, int c) {{",
        "    (void)p;",
        "    (void)c;",
    ]
    for i, op in enumerate(compute):
        lines.append("    " + _compute_line(op, f"v{i}", f"v{i + 1}"))
    lines += [f"    return v{len(compute)};", "}"]
    return lines


def _emit_params(slots: list[tuple[str, str, int]], src_table: int) -> list[str]:
    lines = [
        "// The parameter block: the fixed head, then one array per slot of !fkl.params.",
        "struct Params {",
    ]
    lines.append("    fkl::KernelHeader h;")
    if src_table:
        lines.append(f"    const void* src_table[{src_table}];  // one source image per plane")
    for name, kind, count in slots:
        lines.append(f"    {SLOT_CPP_TYPE[kind]} {name}[{count}];")
    lines.append("};")
    return lines


def _emit_stages(read: fkl.ReadOp, geometry: list[Operation], counts: dict[str, int]) -> list[str]:
    """One function per stage: stage0 reads the source, stage k applies geometry op k to stage k-1."""
    rtype = _image(read.source_type)
    t, channels = CPP_TYPE[rtype.dtype], rtype.channels.data
    if len(read.sources) > 1:
        plane = f"(const {t}*)p.src_table[z]"
        comment = "// stage0: fkl.read — pixel (x, y) of image z of the pointer table."
    else:
        plane = f"(const {t}*)p.h.src + {_plane_expr(rtype)} * p.h.src_plane_stride"
        comment = "// stage0: fkl.read — pixel (x, y) of source plane z."
    lines = [
        comment,
        f"FKL_HD void stage0(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z, {t} out[{channels}]) {{",
        f"    const {t}* px = {plane} + y * p.h.src_pitch + (fkl::i64)x * {channels};",
        f"    for (int c = 0; c < {channels}; ++c) out[c] = px[c];",
        "}",
        "FKL_HD fkl::Size size0(const Params& p, fkl::i32 z) {",
        "    (void)z;",
        "    return {p.h.src_w, p.h.src_h};",
        "}",
    ]
    for k, op in enumerate(geometry, start=1):
        in_type, out_type = _image(op.operands[0].type), _image(op.results[0].type)
        lines += _emit_stage(k, op, in_type, out_type, counts)
    return lines


def _plane_expr(in_type: fkl.ImageType) -> str:
    return "0" if in_type.planes.data == 1 else "z"


def _emit_stage(
    k: int, op: Operation, in_type: fkl.ImageType, out_type: fkl.ImageType, counts: dict[str, int]
) -> list[str]:
    prev, channels = k - 1, out_type.channels.data
    t_in, t_out = CPP_TYPE[in_type.dtype], CPP_TYPE[out_type.dtype]
    zin = _plane_expr(in_type)
    if isinstance(op, fkl.CropOp):
        slot = _slot(op)
        rect = f"p.{slot}[{'z' if counts[slot] > 1 else '0'}]"
        return [
            f"// stage{k}: fkl.crop — the rect's pixel (x, y) is source pixel (x + r.x, y + r.y).",
            f"FKL_HD void stage{k}(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z, {t_out} out[{channels}]) {{",
            f"    const fkl::Rect r = {rect};",
            f"    stage{prev}(p, x + r.x, y + r.y, {zin}, out);",
            "}",
            f"FKL_HD fkl::Size size{k}(const Params& p, fkl::i32 z) {{",
            "    (void)z;",
            f"    const fkl::Rect r = {rect};",
            "    return {r.w, r.h};",
            "}",
        ]
    assert isinstance(op, fkl.ResizeOp)
    slot = _slot(op)
    size_fn = [
        f"FKL_HD fkl::Size size{k}(const Params& p, fkl::i32 z) {{",
        "    (void)z;",
        f"    return {{p.{slot}[0], p.{slot}[1]}};",
        "}",
    ]
    if op.interp.data == "nearest":
        return [
            f"// stage{k}: fkl.resize nearest — OpenCV INTER_NEAREST source index per axis.",
            f"FKL_HD void stage{k}(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z, {t_out} out[{channels}]) {{",
            f"    const fkl::Size src = size{prev}(p, {zin});",
            f"    const fkl::i32 sx = fkl::nearest_index(x, src.w, p.{slot}[0]);",
            f"    const fkl::i32 sy = fkl::nearest_index(y, src.h, p.{slot}[1]);",
            f"    stage{prev}(p, sx, sy, {zin}, out);",
            "}",
            *size_fn,
        ]
    return [
        f"// stage{k}: fkl.resize linear — OpenCV INTER_LINEAR: half-pixel centres, taps clamped.",
        f"FKL_HD void stage{k}(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z, {t_out} out[{channels}]) {{",
        f"    const fkl::Size src = size{prev}(p, {zin});",
        f"    const fkl::LinearTap tx = fkl::linear_tap(x, src.w, p.{slot}[0]);",
        f"    const fkl::LinearTap ty = fkl::linear_tap(y, src.h, p.{slot}[1]);",
        f"    {t_in} a[{channels}], b[{channels}], c[{channels}], d[{channels}];",
        f"    stage{prev}(p, tx.i0, ty.i0, {zin}, a);",
        f"    stage{prev}(p, tx.i1, ty.i0, {zin}, b);",
        f"    stage{prev}(p, tx.i0, ty.i1, {zin}, c);",
        f"    stage{prev}(p, tx.i1, ty.i1, {zin}, d);",
        f"    for (int k = 0; k < {channels}; ++k) {{",
        "        const fkl::f32 fa = fkl::Cast<fkl::f32>::exec(a[k]), fb = fkl::Cast<fkl::f32>::exec(b[k]);",
        "        const fkl::f32 fc = fkl::Cast<fkl::f32>::exec(c[k]), fd = fkl::Cast<fkl::f32>::exec(d[k]);",
        "        out[k] = fkl::bilinear(fa, fb, fc, fd, tx.w1, ty.w1);",
        "    }",
        "}",
        *size_fn,
    ]


def _emit_pixel(
    last_stage: int, in_dtype: str, in_channels: int, out_dtype: str, out_channels: int, write: str
) -> list[str]:
    t_in, t_out = CPP_TYPE[in_dtype], CPP_TYPE[out_dtype]
    lines = [
        "// One output pixel: sample through the geometry stages, compute, write.",
        "FKL_HD void pixel(const Params& p, fkl::i32 x, fkl::i32 y, fkl::i32 z) {",
        f"    {t_in} in[{in_channels}];",
        f"    stage{last_stage}(p, x, y, z, in);",
        f"    {t_out}* out = ({t_out}*)p.h.dst + z * p.h.dst_plane_stride;",
    ]
    if write == "packed":
        lines.append(f"    {t_out}* px = out + y * p.h.dst_pitch + (fkl::i64)x * {out_channels};")
        lines.append(f"    for (int c = 0; c < {out_channels}; ++c) px[c] = compute(p, in[c], c);")
    else:
        lines.append("    const fkl::i64 plane = (fkl::i64)p.h.dst_h * p.h.dst_w;")
        lines.append("    const fkl::i64 at = (fkl::i64)y * p.h.dst_w + x;")
        lines.append(f"    for (int c = 0; c < {out_channels}; ++c) out[c * plane + at] = compute(p, in[c], c);")
    lines.append("}")
    return lines


def _flat_width(in_dtype: str, out_dtype: str, channels: int) -> int:
    """Elements per thread: whole 16-byte vectors on both sides, and a multiple of the channel
    count so that every element's channel is a compile-time constant (a per-thread channel
    would make the warp read the parameter block at divergent addresses)."""
    return math.lcm(16 // min(ELEMENT_SIZE[in_dtype], ELEMENT_SIZE[out_dtype]), channels)


def _emit_flat(in_dtype: str, out_dtype: str, channels: int) -> list[str]:
    t_in, t_out = CPP_TYPE[in_dtype], CPP_TYPE[out_dtype]
    n = _flat_width(in_dtype, out_dtype, channels)
    per_load, per_store = 16 // ELEMENT_SIZE[in_dtype], 16 // ELEMENT_SIZE[out_dtype]
    return [
        f"// Elements [i*{n}, i*{n}+{n}) of the packed image, {n} a multiple of the {channels} channels:",
        "// 16-byte loads and stores when aligned, element j has channel j % C.",
        "FKL_HD void flat(const Params& p, fkl::i64 i) {",
        f"    const {t_in}* src = (const {t_in}*)p.h.src + i * {n};",
        f"    {t_out}* dst = ({t_out}*)p.h.dst + i * {n};",
        f"    const fkl::i64 left = p.h.n - i * {n};",
        f"    if (p.h.aligned && left >= {n}) {{",
        f"        {t_in} in[{n}];",
        "#pragma unroll",
        f"        for (int k = 0; k < {n // per_load}; ++k) {{",
        f"            const fkl::Vec16<{t_in}> v = fkl::load16(src + k * {per_load});",
        "#pragma unroll",
        f"            for (int j = 0; j < {per_load}; ++j) in[k * {per_load} + j] = v.v[j];",
        "        }",
        "#pragma unroll",
        f"        for (int k = 0; k < {n // per_store}; ++k) {{",
        f"            fkl::Vec16<{t_out}> v;",
        "#pragma unroll",
        f"            for (int j = 0; j < {per_store}; ++j) {{",
        f"                const int e = k * {per_store} + j;",
        f"                v.v[j] = compute(p, in[e], e % {channels});",
        "            }",
        f"            fkl::store16(dst + k * {per_store}, v);",
        "        }",
        "        return;",
        "    }",
        f"    for (int e = 0; e < {n} && e < left; ++e) dst[e] = compute(p, src[e], e % {channels});",
        "}",
    ]


def _emit_entries(mode: str, n: int, chains: int) -> list[str]:
    entry_fn = "dispatch" if chains > 1 else "pixel"
    pixel_call = f"{entry_fn}(p, x, y, blockIdx.z)"
    if mode == "flat":
        gpu_body = [
            "    const fkl::i64 i = (fkl::i64)blockIdx.x * blockDim.x + threadIdx.x;",
            f"    if (i * {n} < p.h.n) flat(p, i);",
        ]
        cpu_body = [
            f"    const fkl::i64 count = (p->h.n + {n - 1}) / {n};",
            "#pragma omp parallel for schedule(static)",
            "    for (fkl::i64 i = 0; i < count; ++i) flat(*p, i);",
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
        f'extern "C" void {CPU_ENTRY}(const Params* p) {{',
        *cpu_body,
        "}",
        "#endif",
    ]


def _emit_chain_pixel(chain: Chain, counts: dict[str, int]) -> list[str]:
    stage_type = _image(chain.geometry[-1].results[0].type) if chain.geometry else _image(chain.read.source_type)
    out_type = _image(chain.write.operands[0].type)
    write_kind = "planar" if isinstance(chain.write, fkl.SplitOp) else "packed"
    return [
        *_emit_compute(chain.compute, stage_type.dtype, out_type.dtype),
        "",
        *_emit_stages(chain.read, chain.geometry, counts),
        "",
        *_emit_pixel(
            len(chain.geometry),
            stage_type.dtype,
            stage_type.channels.data,
            out_type.dtype,
            out_type.channels.data,
            write_kind,
        ),
    ]


def _check_divergent(chains: list[Chain]) -> None:
    out_types = {
        (_image(c.write.operands[0].type).dtype, _image(c.write.operands[0].type).channels.data) for c in chains
    }
    if len(out_types) > 1:
        raise ValueError(f"divergent chains must all produce one output type, got {sorted(out_types)}")
    if len({type(c.write) for c in chains}) > 1 or any(len(c.read.sources) > 1 for c in chains):
        raise ValueError("divergent chains must share one write layout and read single images")


def emit_kernel(kernel: fkl.KernelOp) -> EmittedKernel:
    """The C++ translation unit and host layout of one hoisted, typed `fkl.kernel`."""
    chains = kernel_chains(kernel)
    first = chains[0]
    in_type = _image(first.read.source_type)
    out_type = _image(first.write.operands[0].type)
    write_kind = "planar" if isinstance(first.write, fkl.SplitOp) else "packed"
    slots = kernel.params.slots
    counts = {name: count for name, _, count in slots}
    src_table = len(first.read.sources) if len(first.read.sources) > 1 else 0
    divergent = len(chains) > 1
    flat = not divergent and not first.geometry and write_kind == "packed" and not src_table
    mode = "flat" if flat else "pixel"

    lines = [
        f"// Generated by fklir (codegen v{CODEGEN_VERSION}) from fkl.kernel @{kernel.sym_name.data}.",
        '#include "fkl/kernel.h"',
        "",
        *_emit_params(slots, src_table),
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
        lines += _emit_compute(first.compute, in_type.dtype, out_type.dtype)
        lines.append("")
        lines += _emit_flat(in_type.dtype, out_type.dtype, in_type.channels.data)
    else:
        lines += _emit_chain_pixel(first, counts)
    lines.append("")
    lines += _emit_entries(mode, n, len(chains))
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
        write=write_kind,
        src_table=src_table,
    )
    return EmittedKernel("\n".join(lines) + "\n", layout)
