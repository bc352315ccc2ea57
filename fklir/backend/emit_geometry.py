"""C++ for the read and the geometry folded into it: one `stageK` function per op.

`stage0` reads source pixel (x, y) of plane z; `stageK(p, q, x, y, z, out)` produces pixel (x, y)
of plane z of geometry op K's result by calling `stage{K-1}` at the coordinates it needs, and
`sizeK(p, z)` says how large that result is. So a thread loads exactly the source pixels its
output pixel depends on and no intermediate image exists. `q` (a `Plane`, from `plane_of(p, z)`)
holds what every pixel of a plane shares and costs divisions to compute: each resize's scales and
content box, so a thread making several pixels computes them once.

A geometry op's stage is its rule in STAGE, and what it shares per plane its rule in SHARED, both
looked up by op class (emit_rules.OpRules), so adding a geometry op adds rules here, not branches.

`stage0` addresses a pixel inside its plane with 32-bit offsets (one integer multiply-add per tap
instead of 64-bit pointer arithmetic); the launcher refuses a source image of 2^32 elements or more.

Coordinates reaching a stage are inside its `size`, except right after an fkl.border, which
defines every coordinate; that is why only a crop or warp directly after a border may reach
outside (a warp without one reads constant 0 there, as cv2's BORDER_CONSTANT does).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from fklir import dtypes
from fklir.backend.cpp_types import CPP_TYPE
from fklir.backend.emit_rules import OpRules, enumerator
from fklir.backend.typed_ir import image_of, slot_of, values_of
from fklir.dialects import fkl

# A geometry op's stage k: (op, k, the op before it, its input type, its result type, the slot counts).
STAGE = OpRules[[int, Operation, fkl.ImageType, fkl.ImageType, dict[str, int]], list[str]]("C++ stage for geometry op")

STAGE_ARGS = "const Params& p, const Plane& q, fkl::i32 x, fkl::i32 y, fkl::i32 z"


def _taps_as(cpp_type: str, convert: str) -> tuple[str, str]:
    """Channel k of the four taps a b c d as `fa fb fc fd` of `cpp_type` (inside a `for k` loop)."""
    return (
        f"        const fkl::{cpp_type} fa = {convert}(a[k]), fb = {convert}(b[k]);",
        f"        const fkl::{cpp_type} fc = {convert}(c[k]), fd = {convert}(d[k]);",
    )


# A resize blends in f32, as OpenCV's float path does; Warping and Deinterlace in f64.
_TAPS_TO_F32 = _taps_as("f32", "fkl::tap_f32")
_TAPS_TO_F64 = _taps_as("f64", "fkl::Cast<fkl::f64>::exec")
_FINITE_TAP_TYPES = frozenset({"uint8", "int8", "uint16", "int16", "int32", "uint32", "bool"})
_NARROW_TAP_TYPES = frozenset({"uint8", "uint16"})  # a warp blends them in f32 (fkl::Warping::blend_narrow)
# A warp's four taps: the variable and its offset from (ix, iy).
_CORNERS = (("a", "", ""), ("b", " + 1", ""), ("c", "", " + 1"), ("d", " + 1", " + 1"))


def _plane_expr(t: fkl.ImageType) -> str:
    """The plane index a stage passes on: its own z, or 0 into a one-plane input."""
    return "0" if t.planes.data == 1 else "z"


def _signature(k: int, dtype: str, channels: int) -> str:
    return f"FKL_HD void stage{k}({STAGE_ARGS}, {CPP_TYPE[dtype]} out[{channels}]) {{"


def _size_fn(k: int, body: list[str]) -> list[str]:
    return [
        f"FKL_HD fkl::Size size{k}(const Params& p, fkl::i32 z) {{",
        "    (void)p;",
        "    (void)z;",
        *body,
        "}",
    ]


def emit_stages(read: fkl.ReadOp, geometry: list[Operation], counts: dict[str, int], surface: str = "p.h") -> list[str]:
    """The `Plane` struct, stage0 (the read of `surface`: the header's source, or a DAG's further input
    `p.in<i>`), one stage per geometry op, then `plane_of`."""
    shares = _plane_shares(geometry)
    lines = [*_plane_struct(shares), "", *_emit_read(read, surface)]
    for k, op in enumerate(geometry, start=1):
        previous = geometry[k - 2] if k >= 2 else read
        lines += STAGE.emit(op, k, previous, image_of(op.operands[0].type), image_of(op.results[0].type), counts)
    return [*lines, *_plane_of(shares)]


def _stage_planes(geometry: list[Operation]) -> list[str]:
    """The z that stage k sees when the last stage is called with the thread's z: `z`, or `0` below a
    one-plane input (what `_plane_expr` passes down)."""
    planes = ["z"] * (len(geometry) + 1)
    for k in range(len(geometry), 0, -1):
        planes[k - 1] = planes[k] if image_of(geometry[k - 1].operands[0].type).planes.data > 1 else "0"
    return planes


@dataclass(frozen=True)
class PlaneShare:
    """What a geometry op's stage shares among a plane's pixels because it costs divisions: its fields
    of `Plane` and the statements of plane_of that fill them."""

    fields: list[str]
    values: list[str]


# A geometry op's shared values: (op, k, the z its input stage sees); ops without a rule share none.
SHARED = OpRules[[int, str], PlaneShare]("per-plane values")


@SHARED.register(fkl.ResizeOp)
def _resize_shared(op: fkl.ResizeOp, k: int, z_in: str) -> PlaneShare:
    """Each resize: its scales, and with an aspect ratio to keep, its content box."""
    fields = [f"    fkl::f64 scale{k}_x, scale{k}_y;  // stage{k}'s source step per output pixel"]
    slot = slot_of(op)
    dst_w, dst_h = f"p.{slot}[0]", f"p.{slot}[1]"
    values = [f"    const fkl::Size src{k} = size{k - 1}(p, {z_in});"]
    if op.mode != "ignore":
        fields.insert(0, f"    fkl::Rect box{k};  // stage{k}'s content box")
        values.append(
            f"    q.box{k} = fkl::resize_content_box(src{k}.w, src{k}.h, {dst_w}, {dst_h}, "
            f"{enumerator('AspectRatio', op.mode)});"
        )
        dst_w, dst_h = f"q.box{k}.w", f"q.box{k}.h"
    values += [
        f"    q.scale{k}_x = fkl::resize_scale(src{k}.w, {dst_w});",
        f"    q.scale{k}_y = fkl::resize_scale(src{k}.h, {dst_h});",
    ]
    return PlaneShare(fields, values)


def shares_plane(geometry: list[Operation]) -> bool:
    """Whether a stage shares values among a plane's pixels (then a GPU block computes its Plane once)."""
    return any(SHARED.find(type(op)) is not None for op in geometry)


def _plane_shares(geometry: list[Operation]) -> list[PlaneShare]:
    planes = _stage_planes(geometry)
    return [
        SHARED.emit(op, k, planes[k - 1]) for k, op in enumerate(geometry, start=1) if SHARED.find(type(op)) is not None
    ]


def _plane_struct(shares: list[PlaneShare]) -> list[str]:
    return [
        "// What every pixel of a plane shares (see plane_of).",
        "struct Plane {",
        *(field for share in shares for field in share.fields),
        "};",
    ]


def _plane_of(shares: list[PlaneShare]) -> list[str]:
    return [
        "// The shared values of plane z (each resize: its content box and its scales).",
        "FKL_HD Plane plane_of(const Params& p, fkl::i32 z) {",
        "    (void)p;",
        "    (void)z;",
        "    Plane q;",
        *(value for share in shares for value in share.values),
        "    return q;",
        "}",
    ]


def _emit_read(read: fkl.ReadOp, surface: str) -> list[str]:
    rtype = image_of(read.source_type)
    t, channels = CPP_TYPE[rtype.dtype], rtype.channels.data
    planar = rtype.layout.data == "planar"
    if len(read.sources) > 1:
        table = "p.src_table" if surface == "p.h" else f"{surface}_table"  # a DAG's argument i: Params::in<i>_table
        base = f"(const {t}*){table}[z]"
        where = "image z of the pointer table"
    else:
        base = f"(const {t}*){surface}.src + {_plane_expr(rtype)} * {surface}.src_plane_stride"
        where = "source plane z"
    if planar:
        body = [
            f"    const {t}* plane = {base};",
            f"    const fkl::u32 channel_stride = (fkl::u32){surface}.src_h * (fkl::u32){surface}.src_w;",
            f"    const fkl::u32 at = (fkl::u32)y * (fkl::u32){surface}.src_w + (fkl::u32)x;",
            f"    for (int c = 0; c < {channels}; ++c) out[c] = plane[c * channel_stride + at];",
        ]
        comment = f"// stage0: fkl.read (planar, TensorPack) — pixel (x, y) of {where}, channel c from plane c."
    else:
        body = [
            f"    const {t}* px = {base} + ((fkl::u32)y * (fkl::u32){surface}.src_pitch + (fkl::u32)x * {channels}u);",
            f"    for (int c = 0; c < {channels}; ++c) out[c] = px[c];",
        ]
        comment = f"// stage0: fkl.read — pixel (x, y) of {where}."
    return [
        comment,
        _signature(0, rtype.dtype, channels),
        *body,
        "}",
        *_size_fn(0, [f"    return {{{surface}.src_w, {surface}.src_h}};"]),
    ]


@STAGE.register(fkl.ReadSetOp)
def _read_set(
    op: fkl.ReadSetOp,
    k: int,
    previous: Operation,
    in_type: fkl.ImageType,
    out_type: fkl.ImageType,
    counts: dict[str, int],
) -> list[str]:
    channels = out_type.channels.data
    size = slot_of(op, "size")
    return [
        f"// stage{k}: fkl.read_set — every pixel is the constant; the source is never read.",
        _signature(k, out_type.dtype, channels),
        "    (void)x;",
        "    (void)y;",
        "    (void)z;",
        f"    fkl::ReadSet::exec<{channels}>(p.{slot_of(op)}, out);",
        "}",
        *_size_fn(k, [f"    return {{p.{size}[0], p.{size}[1]}};"]),
    ]


@STAGE.register(fkl.BorderOp)
def _border(
    op: fkl.BorderOp,
    k: int,
    previous: Operation,
    in_type: fkl.ImageType,
    out_type: fkl.ImageType,
    counts: dict[str, int],
) -> list[str]:
    prev, zin, channels = k - 1, _plane_expr(in_type), out_type.channels.data
    reader = f"fkl::BorderReader<{enumerator('BorderMode', op.mode.data)}>"
    body = [
        f"    const fkl::Size s = size{prev}(p, {zin});",
        f"    const fkl::i32 sx = {reader}::index(x, s.w);",
        f"    const fkl::i32 sy = {reader}::index(y, s.h);",
    ]
    if op.mode.data == "constant":
        body += [
            "    if (sx < 0 || sy < 0) {",
            f"        for (int c = 0; c < {channels}; ++c) out[c] = {values_of(op)}[c];",
            "        return;",
            "    }",
        ]
    body.append(f"    stage{prev}(p, q, sx, sy, {zin}, out);")
    return [
        f"// stage{k}: fkl.border {op.mode.data} — any (x, y), however far outside, maps into the image.",
        _signature(k, out_type.dtype, channels),
        *body,
        "}",
        *_size_fn(k, [f"    return size{prev}(p, {zin});"]),
    ]


@STAGE.register(fkl.CropOp)
def _crop(
    op: fkl.CropOp,
    k: int,
    previous: Operation,
    in_type: fkl.ImageType,
    out_type: fkl.ImageType,
    counts: dict[str, int],
) -> list[str]:
    slot, prev, zin = slot_of(op), k - 1, _plane_expr(in_type)
    rect = f"p.{slot}[{'z' if counts[slot] > 1 else '0'}]"
    return [
        f"// stage{k}: fkl.crop — the rect's pixel (x, y) is source pixel (x + r.x, y + r.y).",
        _signature(k, out_type.dtype, out_type.channels.data),
        f"    const fkl::Rect r = {rect};",
        f"    stage{prev}(p, q, x + r.x, y + r.y, {zin}, out);",
        "}",
        *_size_fn(k, [f"    const fkl::Rect r = {rect};", "    return {r.w, r.h};"]),
    ]


@STAGE.register(fkl.ResizeOp)
def _resize(
    op: fkl.ResizeOp,
    k: int,
    previous: Operation,
    in_type: fkl.ImageType,
    out_type: fkl.ImageType,
    counts: dict[str, int],
) -> list[str]:
    slot, prev, zin, channels = slot_of(op), k - 1, _plane_expr(in_type), out_type.channels.data
    t_in = CPP_TYPE[in_type.dtype]
    head = [f"    const fkl::Size src = size{prev}(p, {zin});"]
    if op.mode != "ignore":
        head += [
            f"    const fkl::Rect box = q.box{k};",
            "    if (!fkl::box_contains(box, x, y)) {",
            f"        for (int c = 0; c < {channels}; ++c) out[c] = {values_of(op, field='background')}[c];",
            "        return;",
            "    }",
            "    x -= box.x;",
            "    y -= box.y;",
        ]
    if op.interp.data == "nearest":
        comment = f"// stage{k}: fkl.resize nearest — OpenCV INTER_NEAREST source index per axis."
        body = [
            f"    const fkl::i32 sx = fkl::nearest_index(x, q.scale{k}_x, src.w);",
            f"    const fkl::i32 sy = fkl::nearest_index(y, q.scale{k}_y, src.h);",
            f"    stage{prev}(p, q, sx, sy, {zin}, out);",
        ]
    elif op.mode == "ignore":
        return _linear_resize(k, slot, zin, in_type, out_type)
    else:
        comment = f"// stage{k}: fkl.resize linear — OpenCV INTER_LINEAR: half-pixel centres, taps clamped, f32 blend."
        body = [
            f"    const fkl::LinearTap tx = fkl::linear_tap(x, q.scale{k}_x, src.w);",
            f"    const fkl::LinearTap ty = fkl::linear_tap(y, q.scale{k}_y, src.h);",
            f"    {t_in} a[{channels}], b[{channels}], c[{channels}], d[{channels}];",
            *_four_taps(k, zin, in_type, channels),
        ]
    if op.mode != "ignore":
        comment += f" Aspect ratio {op.mode}: the content box, background around it."
    return [
        comment,
        _signature(k, out_type.dtype, channels),
        *head,
        *body,
        "}",
        *_size_fn(k, [f"    return {{p.{slot}[0], p.{slot}[1]}};"]),
    ]


def _linear_blend_call(dtype: str) -> str:
    """fkl::linear_blend for taps of `dtype`: float taps may be inf or NaN, so their zero-weight taps
    are skipped; integer taps need no such test on the per-pixel path."""
    return "fkl::linear_blend" if dtypes.BY_NAME[dtype].is_integer else "fkl::linear_blend<true>"


def _four_taps(k: int, zin: str, in_type: fkl.ImageType, channels: int) -> list[str]:
    """The blend of the four source pixels that the taps tx and ty select (`a b c d` declared)."""
    prev = k - 1
    return [
        f"    stage{prev}(p, q, tx.i0, ty.i0, {zin}, a);",
        f"    stage{prev}(p, q, tx.i1, ty.i0, {zin}, b);",
        f"    stage{prev}(p, q, tx.i0, ty.i1, {zin}, c);",
        f"    stage{prev}(p, q, tx.i1, ty.i1, {zin}, d);",
        f"    for (int k = 0; k < {channels}; ++k) {{",
        *_TAPS_TO_F32,
        f"        out[k] = {_linear_blend_call(in_type.dtype)}(fa, fb, fc, fd, tx.w1, ty.w1);",
        "    }",
    ]


def has_block_taps(geometry: list[Operation]) -> bool:
    """Whether the last geometry op is a linear resize of the whole output (aspect ratio "ignore"):
    its taps depend on the output column or row alone, so a GPU block computes them once for its
    columns and rows (`stage{K}_tap_x`, `stage{K}_tap_y`) and samples through `stage{K}_taps`."""
    if not geometry:
        return False
    last = geometry[-1]
    return isinstance(last, fkl.ResizeOp) and last.interp.data == "linear" and last.mode == "ignore"


def has_pair_taps(read: fkl.ReadOp, geometry: list[Operation]) -> bool:
    """Whether the block's x taps can be column pairs (fkl::PairTap): a final linear resize with block
    taps, of crops of one packed image of integers. A tap's right pixel is then always the next one of
    its row, and a thread reads its taps through two row pointers and one offset per pixel, not an offset
    per tap (RESULTS.md). The wide entry then needs an image at least 2 pixels wide."""
    rtype = image_of(read.source_type)
    return (
        has_block_taps(geometry)
        and all(isinstance(op, fkl.CropOp) for op in geometry[:-1])
        and len(read.sources) == 1
        and rtype.layout.data != "planar"
        and dtypes.BY_NAME[rtype.dtype].is_integer
    )


def emit_pair_rows(read: fkl.ReadOp, geometry: list[Operation], counts: dict[str, int]) -> list[str]:
    """`pair_origin` (where the final resize's source starts in the image: the crops' offsets) and
    `pair_row` (a row of the image) for column-pair sampling (has_pair_taps)."""
    rtype = image_of(read.source_type)
    planes = _stage_planes(geometry)
    offsets: list[str] = []
    for k, op in enumerate(geometry[:-1], start=1):
        slot = slot_of(op)
        rect = f"p.{slot}[{planes[k] if counts[slot] > 1 else '0'}]"
        offsets += [f"    o.x += {rect}.x;", f"    o.y += {rect}.y;"]
    t = CPP_TYPE[rtype.dtype]
    return [
        "// Column-pair sampling (fkl::PairTap): where the resized image starts in the source image, and a",
        "// source row.",
        "FKL_HD fkl::Rect pair_origin(const Params& p, fkl::i32 z) {",
        "    (void)p;",
        "    (void)z;",
        "    fkl::Rect o = {0, 0, p.h.src_w, p.h.src_h};",
        *offsets,
        "    return o;",
        "}",
        f"FKL_HD const {t}* pair_row(const Params& p, fkl::i32 y, fkl::i32 z) {{",
        "    (void)z;",
        f"    return (const {t}*)p.h.src + {planes[0]} * p.h.src_plane_stride + (fkl::u32)y * (fkl::u32)p.h.src_pitch;",
        "}",
    ]


def _linear_resize(k: int, slot: str, zin: str, in_type: fkl.ImageType, out_type: fkl.ImageType) -> list[str]:
    """A linear resize with aspect ratio "ignore": its taps along x and y, the blend given the taps,
    and stage{k} (both in turn)."""
    prev, channels = k - 1, out_type.channels.data
    t_in, t_out = CPP_TYPE[in_type.dtype], CPP_TYPE[out_type.dtype]
    return [
        f"// stage{k}: fkl.resize linear — OpenCV INTER_LINEAR: half-pixel centres, taps clamped, f32 blend.",
        f"FKL_HD fkl::LinearTap stage{k}_tap_x(const Params& p, const Plane& q, fkl::i32 x, fkl::i32 z) {{",
        "    (void)z;",
        f"    return fkl::linear_tap(x, q.scale{k}_x, size{prev}(p, {zin}).w);",
        "}",
        f"FKL_HD fkl::LinearTap stage{k}_tap_y(const Params& p, const Plane& q, fkl::i32 y, fkl::i32 z) {{",
        "    (void)z;",
        f"    return fkl::linear_tap(y, q.scale{k}_y, size{prev}(p, {zin}).h);",
        "}",
        f"FKL_HD void stage{k}_taps(const Params& p, const Plane& q, const fkl::LinearTap& tx,",
        f"                         const fkl::LinearTap& ty, fkl::i32 z, {t_out} out[{channels}]) {{",
        "    (void)z;",
        f"    {t_in} a[{channels}], b[{channels}], c[{channels}], d[{channels}];",
        *_four_taps(k, zin, in_type, channels),
        "}",
        _signature(k, out_type.dtype, channels),
        f"    stage{k}_taps(p, q, stage{k}_tap_x(p, q, x, z), stage{k}_tap_y(p, q, y, z), z, out);",
        "}",
        *_size_fn(k, [f"    return {{p.{slot}[0], p.{slot}[1]}};"]),
    ]


@STAGE.register(fkl.WarpOp)
def _warp(
    op: fkl.WarpOp,
    k: int,
    previous: Operation,
    in_type: fkl.ImageType,
    out_type: fkl.ImageType,
    counts: dict[str, int],
) -> list[str]:
    prev, zin, channels = k - 1, _plane_expr(in_type), out_type.channels.data
    t_in = CPP_TYPE[in_type.dtype]
    size = slot_of(op, "size")
    bordered = isinstance(previous, fkl.BorderOp)
    if bordered and previous.mode.data == "constant":
        fill = f"fkl::Cast<fkl::f32>::exec({values_of(previous)}[c])"
    else:
        fill = "0.0f"
    if bordered:
        tap = [f"    stage{prev}(p, q, x, y, z, out);"]
        tap_comment = "the preceding fkl.border defines every coordinate"
    else:
        tap = [
            f"    const fkl::Size src = size{prev}(p, z);",
            "    if (!fkl::is_inside(x, src.w) || !fkl::is_inside(y, src.h)) {",
            f"        for (int c = 0; c < {channels}; ++c) out[c] = {t_in}{{}};",
            "        return;",
            "    }",
            f"    stage{prev}(p, q, x, y, z, out);",
        ]
        tap_comment = "outside the source it is constant 0 (cv2's BORDER_CONSTANT)"
    kind = op.kind.data  # fkl::Warping's function and cv2's warp function are named after it
    taps = [f"    {t_in} a[{channels}], b[{channels}], c[{channels}], d[{channels}];"]
    outside = [f"tap{k}(p, q, s.ix{dx}, s.iy{dy}, {zin}, {v});" for v, dx, dy in _CORNERS]
    if bordered:
        taps += [f"    {line}" for line in outside]
    else:  # a sample whose four taps lie inside reads them without tap's bounds checks
        taps += [
            f"    const fkl::Size src = size{prev}(p, {zin});",
            "    if (s.ix >= 0 && s.iy >= 0 && s.ix < src.w - 1 && s.iy < src.h - 1) {",
            *(f"        stage{prev}(p, q, s.ix{dx}, s.iy{dy}, {zin}, {v});" for v, dx, dy in _CORNERS),
            "    } else {",
            *(f"        {line}" for line in outside),
            "    }",
        ]
    # unsigned 8- and 16-bit taps blend in f32 (fkl::Warping::blend_narrow); other integer sources have
    # finite taps only: the f64 blend without step's inf/NaN branches, the same bits
    if in_type.dtype in _NARROW_TAP_TYPES:
        blend, taps_as, weights = "blend_narrow", _TAPS_TO_F32, "(fkl::f32)s.fx, (fkl::f32)s.fy"
    else:
        blend = "blend_finite" if in_type.dtype in _FINITE_TAP_TYPES else "blend"
        taps_as, weights = _TAPS_TO_F64, "s.fx, s.fy"
    return [
        f"// A source tap of stage{k}: {tap_comment}.",
        f"FKL_HD void tap{k}({STAGE_ARGS}, {t_in} out[{channels}]) {{",
        *tap,
        "}",
        f"// stage{k}: fkl.warp {kind} — cv2.warp{kind.capitalize()} "
        "bilinear, the slot holds the destination -> source map.",
        _signature(k, out_type.dtype, channels),
        f"    const fkl::WarpSample s = fkl::Warping::{kind}({values_of(op)}, x, y);",
        "    if (!s.finite) {",
        f"        for (int c = 0; c < {channels}; ++c) out[c] = {fill};",
        "        return;",
        "    }",
        *taps,
        f"    for (int k = 0; k < {channels}; ++k) {{",
        *taps_as,
        f"        out[k] = fkl::Warping::{blend}(fa, fb, fc, fd, {weights});",
        "    }",
        "}",
        *_size_fn(k, [f"    return {{p.{size}[0], p.{size}[1]}};"]),
    ]


@STAGE.register(fkl.DeinterlaceOp)
def _deinterlace(
    op: fkl.WordOp,
    k: int,
    previous: Operation,
    in_type: fkl.ImageType,
    out_type: fkl.ImageType,
    counts: dict[str, int],
) -> list[str]:
    prev, zin, channels = k - 1, _plane_expr(in_type), out_type.channels.data
    t_in = CPP_TYPE[in_type.dtype]
    mode = enumerator("DeinterlaceMode", op.word.data)
    return [
        f"// stage{k}: fkl.deinterlace {op.word.data} — the mean of two source rows (or one row copied).",
        _signature(k, out_type.dtype, channels),
        f"    const fkl::Size src = size{prev}(p, {zin});",
        "    fkl::i32 first, second;",
        f"    fkl::Deinterlace::rows({mode}, y, src.h, first, second);",
        f"    {t_in} a[{channels}], b[{channels}];",
        f"    stage{prev}(p, q, x, first, {zin}, a);",
        f"    stage{prev}(p, q, x, second, {zin}, b);",
        f"    for (int c = 0; c < {channels}; ++c) {{",
        "        const fkl::f64 upper = fkl::Cast<fkl::f64>::exec(a[c]);",
        "        const fkl::f64 lower = fkl::Cast<fkl::f64>::exec(b[c]);",
        "        out[c] = fkl::Deinterlace::mean(upper, lower);",
        "    }",
        "}",
        *_size_fn(k, [f"    return size{prev}(p, {zin});"]),
    ]


@STAGE.register(fkl.FlipOp)
def _flip(
    op: fkl.WordOp,
    k: int,
    previous: Operation,
    in_type: fkl.ImageType,
    out_type: fkl.ImageType,
    counts: dict[str, int],
) -> list[str]:
    mode = enumerator("FlipMode", op.word.data)
    source = (f"fkl::Flip::source_x({mode}, x, src.w)", f"fkl::Flip::source_y({mode}, y, src.h)")
    return _remap_stage(k, in_type, out_type, f"fkl.flip {op.word.data} — cv2.flip", source, "src")


@STAGE.register(fkl.RotateOp)
def _rotate(
    op: fkl.WordOp,
    k: int,
    previous: Operation,
    in_type: fkl.ImageType,
    out_type: fkl.ImageType,
    counts: dict[str, int],
) -> list[str]:
    r = enumerator("Rotation", op.word.data)
    source = (f"fkl::Rotate::source_x({r}, x, y, src.w)", f"fkl::Rotate::source_y({r}, x, y, src.h)")
    size = f"{{fkl::Rotate::width({r}, src.w, src.h), fkl::Rotate::height({r}, src.w, src.h)}}"
    return _remap_stage(k, in_type, out_type, f"fkl.rotate {op.word.data} — cv2.rotate", source, size)


def _remap_stage(
    k: int, in_type: fkl.ImageType, out_type: fkl.ImageType, title: str, source: tuple[str, str], size: str
) -> list[str]:
    """A stage whose pixel (x, y) is one pixel of its input stage, `source` (expressions of x, y and the input's
    size `src`), and whose size is `size` (an expression of src)."""
    prev, zin = k - 1, _plane_expr(in_type)
    src = f"    const fkl::Size src = size{prev}(p, {zin});"
    return [
        f"// stage{k}: {title}: each pixel one pixel of stage{prev}.",
        _signature(k, out_type.dtype, out_type.channels.data),
        src,
        f"    const fkl::i32 sx = {source[0]};",
        f"    const fkl::i32 sy = {source[1]};",
        f"    stage{prev}(p, q, sx, sy, {zin}, out);",
        "}",
        *_size_fn(k, [src, f"    return {size};"]),
    ]


# The CPU's row spans: a geometry op that maps a run of its output row to a run of consecutive pixels of
# one row of its input, as (op, k, the z its stage sees, the z its input stage sees, the slot counts) ->
# the statements that update the span `s` (fkl::Span) from the op's output to its input; ops without a
# rule have no spans.
SPAN = OpRules[[int, str, str, dict[str, int]], list[str]]("CPU row span")


@SPAN.register(fkl.CropOp)
def _crop_span(op: fkl.CropOp, k: int, z: str, z_in: str, counts: dict[str, int]) -> list[str]:
    slot = slot_of(op)
    rect = f"p.{slot}[{z if counts[slot] > 1 else '0'}]"
    return [
        f"    // stage{k}: fkl.crop — the whole row, moved by the rect's corner.",
        f"    s.dx += {rect}.x;",
        f"    s.sy += {rect}.y;",
    ]


@SPAN.register(fkl.BorderOp)
def _border_span(op: fkl.BorderOp, k: int, z: str, z_in: str, counts: dict[str, int]) -> list[str]:
    reader = f"fkl::BorderReader<{enumerator('BorderMode', op.mode.data)}>"
    prev = k - 1
    return [
        f"    // stage{k}: fkl.border {op.mode.data} — the pixels inside its input, which it reads as they are.",
        f"    const fkl::Size n{k} = size{prev}(p, {z_in});",
        f"    s.sy = {reader}::index(s.sy, n{k}.h);",
        f"    s = fkl::inside_span(s, n{k}.w);",
    ]


def has_row_spans(read: fkl.ReadOp, geometry: list[Operation]) -> bool:
    """Whether the CPU can read runs of a row straight from a source row (`row_span`): geometry of
    crops and borders only, over a packed read."""
    return (
        bool(geometry)
        and all(SPAN.find(type(op)) is not None for op in geometry)
        and image_of(read.source_type).layout.data != "planar"
    )


def emit_row_span(read: fkl.ReadOp, geometry: list[Operation], counts: dict[str, int]) -> list[str]:
    """`row_span(p, y, z)`: which pixels of output row y of plane z are consecutive pixels of one source
    row (see has_row_spans), and `span_row`, that source row."""
    t = CPP_TYPE[image_of(read.source_type).dtype]
    planes = _stage_planes(geometry)
    body: list[str] = []
    for k in range(len(geometry), 0, -1):
        body += SPAN.emit(geometry[k - 1], k, planes[k], planes[k - 1], counts)
    if len(read.sources) > 1:
        base = f"(const {t}*)p.src_table[{planes[0]}]"
    else:
        base = f"(const {t}*)p.h.src + {planes[0]} * p.h.src_plane_stride"
    return [
        "// The CPU's row spans: output pixels x in [s.lo, s.hi) of row y of plane z are pixels x + s.dx of",
        "// source row s.sy (span_row), each op from the last to the read moving the run or narrowing it.",
        "FKL_HD fkl::Span row_span(const Params& p, fkl::i32 y, fkl::i32 z) {",
        "    (void)z;",
        "    fkl::Span s = {0, p.h.dst_w, 0, y};",
        *body,
        "    return s;",
        "}",
        f"FKL_HD const {t}* span_row(const Params& p, const fkl::Span& s, fkl::i32 z) {{",
        "    (void)z;",
        f"    return {base} + (fkl::u32)s.sy * (fkl::u32)p.h.src_pitch;",
        "}",
    ]


def has_nearest_columns(read: fkl.ReadOp, geometry: list[Operation]) -> bool:
    """Whether the CPU can take a final nearest resize's source columns from a table of its plane
    (`nearest_column`) and its rows as row pointers (`nearest_row`): a nearest resize of the whole
    output, of crops of one packed image."""
    if not geometry or len(read.sources) != 1 or image_of(read.source_type).layout.data == "planar":
        return False
    last = geometry[-1]
    return (
        isinstance(last, fkl.ResizeOp)
        and last.interp.data == "nearest"
        and last.mode == "ignore"
        and all(isinstance(op, fkl.CropOp) for op in geometry[:-1])
    )


def emit_nearest_columns(read: fkl.ReadOp, geometry: list[Operation], counts: dict[str, int]) -> list[str]:
    """`nearest_column` and `nearest_row` (see has_nearest_columns), over emit_pair_rows' functions."""
    rtype = image_of(read.source_type)
    t, channels = CPP_TYPE[rtype.dtype], rtype.channels.data
    k, z_in = len(geometry), _stage_planes(geometry)[len(geometry) - 1]
    return [
        *emit_pair_rows(read, geometry, counts),
        "// The CPU's final nearest resize: the offset in a source row of output column x's pixel, and the",
        "// source row of output row y.",
        "FKL_HD fkl::u32 nearest_column(const Params& p, const Plane& q, fkl::i32 x, fkl::i32 z) {",
        f"    const fkl::i32 sx = fkl::nearest_index(x, q.scale{k}_x, size{k - 1}(p, {z_in}).w);",
        f"    return (fkl::u32)(pair_origin(p, z).x + sx) * {channels}u;",
        "}",
        f"FKL_HD const {t}* nearest_row(const Params& p, const Plane& q, fkl::i32 y, fkl::i32 z) {{",
        f"    const fkl::i32 sy = fkl::nearest_index(y, q.scale{k}_y, size{k - 1}(p, {z_in}).h);",
        "    return pair_row(p, pair_origin(p, z).y + sy, z);",
        "}",
    ]


# Source types whose taps fkl::WarpRows gathers and converts to f64 with a plain conversion.
_WARP_ROW_TYPES = frozenset({"uint8", "int8", "uint16", "int16", "int32", "uint32", "float32", "float64"})


def has_warp_rows(read: fkl.ReadOp, geometry: list[Operation]) -> bool:
    """Whether the CPU samples a final warp a row at a time (fkl::WarpRows): a warp of one packed source
    image, straight or through one border (whose pixels outside the image take the per-pixel stage)."""
    if not geometry or len(read.sources) != 1:
        return False
    source = image_of(read.source_type)
    *before, last = geometry
    return (
        isinstance(last, fkl.WarpOp)
        and len(before) <= 1
        and all(isinstance(op, fkl.BorderOp) for op in before)
        and source.layout.data != "planar"
        and source.dtype in _WARP_ROW_TYPES
        and image_of(last.operands[0].type).dtype == source.dtype
    )


def emit_warp_rows(read: fkl.ReadOp, geometry: list[Operation]) -> list[str]:
    """`WarpRows` (the kernel's fkl::WarpRows), `warp_row` (row y's coordinates, its pixels' kinds and
    the taps of those inside the source) and `warp_blend` (a run of those blended), see has_warp_rows."""
    source = image_of(read.source_type)
    t, channels = CPP_TYPE[source.dtype], source.channels.data
    finite = "true" if source.dtype in _FINITE_TAP_TYPES else "false"
    warp = geometry[-1]
    assert isinstance(warp, fkl.WarpOp)
    z_src = _stage_planes(geometry)[0]
    zero_outside = "false" if len(geometry) > 1 else "true"  # a border defines the taps outside
    return [
        "// The CPU's warp rows (fkl::WarpRows): row y's source coordinates and its pixels' kinds, and a",
        "// run of Inside pixels blended.",
        f"using WarpRows = fkl::WarpRows<{t}, {channels}, {finite}>;",
        "static void warp_row(const Params& p, WarpRows& rows, fkl::i32 y, fkl::i32 z) {",
        "    (void)z;",
        f"    rows.{warp.kind.data}({values_of(warp)}, y, 0, p.h.dst_w);",
        f"    const fkl::Size src = size0(p, {z_src});",
        f"    rows.locate(0, p.h.dst_w, src.w, src.h, (fkl::u32)p.h.src_pitch, {zero_outside});",
        "}",
        "static void warp_blend(const Params& p, WarpRows& rows, fkl::i32 lo, fkl::i32 hi, fkl::i32 z, fkl::f32* to) {",
        "    (void)z;",
        f"    rows.blend((const {t}*)p.h.src + {z_src} * p.h.src_plane_stride, (fkl::u32)p.h.src_pitch, lo, hi, to);",
        "}",
    ]
