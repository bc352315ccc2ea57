"""C++ for the compute part of a chain: one statement (flat) or one block (pixel) per op.

Two shapes, chosen by emit_cpp:
- `compute(p, v0, c)`: one element of channel c through channel-wise ops only (the flat path calls
  it with a compile-time channel, so the parameter block is read at warp-uniform addresses);
- `compute_pixel(p, v0, out)`: a whole pixel as small arrays, one block per op; needed as soon as
  an op mixes or changes channels (VectorReduce, ColorConversion, MxVFloat3, ...). Every loop runs
  over a compile-time channel count, so the arrays stay in registers.
"""

from __future__ import annotations

from xdsl.ir import Operation

from fklir.backend.cpp_types import CPP_TYPE, image_of, slot_of
from fklir.dialects import fkl

BINARY_STRUCT = {
    fkl.AddOp: "Add",
    fkl.SubOp: "Sub",
    fkl.MulOp: "Mul",
    fkl.DivOp: "Div",
    fkl.MaxOp: "Max",
    fkl.MinOp: "Min",
}
BODY_STRUCT = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min"}


def is_channelwise(compute: list[Operation]) -> bool:
    """Whether every op keeps channel c depending on channel c alone (the flat path's condition)."""
    return all(isinstance(op, fkl.CHANNELWISE_OPS) for op in compute)


def _channels(op: Operation, index: int = 0) -> int:
    return image_of(op.operands[index].type if index >= 0 else op.results[0].type).channels.data


def _element_expr(op: Operation, src: str, c: str) -> tuple[str, str]:
    """(expression, comment) of one channel-wise op on element `src` of channel `c`."""
    out_t = CPP_TYPE[image_of(op.results[0].type).dtype]
    if isinstance(op, fkl.BinaryValueOp):
        struct = BINARY_STRUCT[type(op)]
        slot = slot_of(op)
        if is_float_division(op):
            reciprocal = f"fkl::pick(p.{slot}_rcp, {c})"
            return f"fkl::Div::exec({src}, fkl::pick(p.{slot}, {c}), {reciprocal})", f"{op.name}: {op.FORMULA}"
        return f"fkl::{struct}::exec({src}, fkl::pick(p.{slot}, {c}))", f"{op.name}: {op.FORMULA}"
    if isinstance(op, fkl.SaturateCastOp):
        return f"fkl::SaturateCast<{out_t}>::exec({src})", op.name
    if isinstance(op, fkl.CastOp):
        return f"fkl::Cast<{out_t}>::exec({src})", op.name
    if isinstance(op, fkl.SaturateOp):
        slot, channels = slot_of(op), _channels(op)
        return (
            f"fkl::Saturate::exec({src}, fkl::pick(p.{slot}, {c}), fkl::pick(p.{slot}, {channels} + {c}))",
            f"{op.name}: clamp to [lo, hi]",
        )
    if isinstance(op, fkl.SaturateFloatOp):
        return f"fkl::SaturateFloat::exec({src})", f"{op.name}: clamp to [0, 1]"
    if isinstance(op, fkl.IsEvenOp):
        return f"fkl::IsEven::exec({src})", f"{op.name}: x mod 2 == 0"
    if isinstance(op, fkl.StaticLoopOp):
        struct = f"fkl::StaticLoop<fkl::{BODY_STRUCT[op.body.data]}, {op.count.data}>"
        return (
            f"{struct}::exec({src}, fkl::pick(p.{slot_of(op)}, {c}))",
            f"{op.name}: {op.body.data} applied {op.count.data} times",
        )
    raise ValueError(f"no element-wise C++ emission for '{op.name}'")


def emit_compute_element(compute: list[Operation], in_dtype: str, out_dtype: str) -> list[str]:
    """`compute(p, v0, c)`: the channel-wise chain on one element v0 of channel c."""
    lines = [
        "// The compute chain on one element v0 of channel c.",
        f"FKL_HD {CPP_TYPE[out_dtype]} compute(const Params& p, {CPP_TYPE[in_dtype]} v0, int c) {{",
        "    (void)p;",
        "    (void)c;",
    ]
    for i, op in enumerate(compute):
        out_t = CPP_TYPE[image_of(op.results[0].type).dtype]
        expr, comment = _element_expr(op, f"v{i}", "c")
        lines.append(f"    const {out_t} v{i + 1} = {expr};  // {comment}")
    lines += [f"    return v{len(compute)};", "}"]
    return lines


def is_float_division(op: Operation) -> bool:
    return isinstance(op, fkl.DivOp) and image_of(op.results[0].type).dtype == "float32"


def emit_compute_fast(compute: list[Operation], in_dtype: str, out_dtype: str) -> list[str]:
    """`compute_fast(p, v0, c, fast)`, GPU only: the chain with every float32 division on fkl::Div's fast
    path, clearing `fast` when a dividend lies outside its range; the caller then recomputes the group
    with compute(). Empty when the chain has no float32 division.

    One range check per group instead of a branch per element: with a branch around the exact division
    inlined at each of a group's elements, NVRTC took twice as long to compile the u8 -> float
    normalisation (Cast, Mul, Sub, Div)."""
    if not any(is_float_division(op) for op in compute):
        return []
    lines = [
        "// compute() with each float32 division on its fast path; `fast` ends false when a dividend lies",
        "// outside [2^-60, 2^60] (the host checked the divisors: <slot>_fast).",
        f"__device__ {CPP_TYPE[out_dtype]} compute_fast(const Params& p, {CPP_TYPE[in_dtype]} v0, int c,"
        " bool& fast) {",
        "    (void)p;",
        "    (void)c;",
    ]
    for i, op in enumerate(compute):
        out_t = CPP_TYPE[image_of(op.results[0].type).dtype]
        expr, comment = _element_expr(op, f"v{i}", "c")
        if is_float_division(op):
            slot = slot_of(op)
            lines.append(f"    fast = fast & fkl::Div::fast_dividend(v{i});")
            expr = f"fkl::Div::fast(v{i}, fkl::pick(p.{slot}, c), fkl::pick(p.{slot}_rcp, c))"
        lines.append(f"    const {out_t} v{i + 1} = {expr};  // {comment}")
    lines += [f"    return v{len(compute)};", "}"]
    return lines


def divisors_checked(compute: list[Operation]) -> str | None:
    """The start value of compute_fast's `fast` flag (every divisor in range), or None without a float32
    division."""
    slots = [slot_of(op) for op in compute if is_float_division(op)]
    return " && ".join(f"p.{slot}_fast != 0" for slot in slots) or None


def _pixel_block(op: Operation, src: str, dst: str) -> list[str]:
    """Statements that fill the array `dst` (already declared) from the array `src`."""
    c_in = _channels(op)
    if is_float_division(op):
        return _pixel_division(slot_of(op), c_in, src, dst)
    if isinstance(op, fkl.CHANNELWISE_OPS):
        expr, _ = _element_expr(op, f"{src}[c]", "c")
        return [f"for (int c = 0; c < {c_in}; ++c) {dst}[c] = {expr};"]
    if isinstance(op, fkl.VectorAndOp):
        return [f"{dst}[0] = fkl::VectorAnd::exec<{c_in}>({src});"]
    if isinstance(op, fkl.VectorReduceOp):
        struct = BODY_STRUCT[op.word.data]
        return [f"{dst}[0] = fkl::VectorReduce<fkl::{struct}>::exec<{c_in}>({src});"]
    if isinstance(op, fkl.DiscardOp):
        return [f"fkl::Discard::exec<{op.keep.data}>({src}, {dst});"]
    if isinstance(op, fkl.AddLastOp):
        return [f"fkl::AddLast::exec<{c_in}>({src}, p.{slot_of(op)}[0], {dst});"]
    if isinstance(op, fkl.VectorReorderOp):
        indices = ", ".join(map(str, op.indices))
        return [f"fkl::VectorReorder<{indices}>::exec({src}, {dst});"]
    if isinstance(op, fkl.VectorReorderRTOp):
        c_out = _channels(op, -1)
        return [f"fkl::VectorReorderRT::exec<{c_in}, {c_out}>({src}, p.{slot_of(op)}, {dst});"]
    if isinstance(op, fkl.MxVFloat3Op):
        return [f"fkl::MxVFloat3::exec(p.{slot_of(op)}, {src}, {dst});"]
    if isinstance(op, fkl.ColorConversionOp):
        code = op.code
        if code.red_index is not None:
            return [f"fkl::ColorConversion::gray<{code.red_index}>({src}, {dst});"]
        alpha = "true" if code.add_alpha else "false"
        order = ", ".join(map(str, code.order))
        return [f"fkl::ColorConversion::reorder<{alpha}, {order}>({src}, {dst});"]
    raise ValueError(f"no C++ emission for '{op.name}'")


def _pixel_division(slot: str, channels: int, src: str, dst: str) -> list[str]:
    """A float32 division of a whole pixel with one range check for all its channels: the fast path
    of fkl::Div costs three instructions, and a branch per channel cost more than that. The host
    checked the divisors' range once (`<slot>_fast`)."""
    divisor, reciprocal = f"fkl::pick(p.{slot}, c)", f"fkl::pick(p.{slot}_rcp, c)"
    return [
        "{",
        f"    bool fast = p.{slot}_fast != 0;",
        f"    for (int c = 0; c < {channels}; ++c) fast = fast & fkl::Div::fast_dividend({src}[c]);",
        "    if (fast) {",
        f"        for (int c = 0; c < {channels}; ++c) {dst}[c] = fkl::Div::fast({src}[c], {divisor}, {reciprocal});",
        "    } else {",
        f"        for (int c = 0; c < {channels}; ++c) {dst}[c] = fkl::Div::exec({src}[c], {divisor});",
        "    }",
        "}",
    ]


def _describe(op: Operation) -> str:
    if isinstance(op, fkl.BinaryValueOp):
        return f"{op.name}: {op.FORMULA}"
    words = {
        fkl.VectorReduceOp: lambda o: f" {o.word.data}",
        fkl.ColorConversionOp: lambda o: f" {o.word.data}",
        fkl.DiscardOp: lambda o: f" keep {o.keep.data}",
        fkl.StaticLoopOp: lambda o: f" {o.body.data} x {o.count.data}",
        fkl.CastLikeOp: lambda o: f" to {fkl.dtype_name(o.to)}",
    }
    for cls, word in words.items():
        if isinstance(op, cls):
            return op.name + word(op)  # pyright: ignore[reportArgumentType]
    return op.name


def emit_compute_pixel(
    compute: list[Operation], in_dtype: str, in_channels: int, out_dtype: str, out_channels: int
) -> list[str]:
    """`compute_pixel(p, v0, out)`: the chain on one whole pixel, one block per op."""
    lines = [
        "// The compute chain on one pixel v0 (one block per op; small arrays stay in registers).",
        f"FKL_HD void compute_pixel(const Params& p, const {CPP_TYPE[in_dtype]} v0[{in_channels}], "
        f"{CPP_TYPE[out_dtype]} out[{out_channels}]) {{",
        "    (void)p;",
    ]
    for i, op in enumerate(compute):
        result = image_of(op.results[0].type)
        lines.append(f"    // {_describe(op)}")
        lines.append(f"    {CPP_TYPE[result.dtype]} v{i + 1}[{result.channels.data}];")
        lines += [f"    {line}" for line in _pixel_block(op, f"v{i}", f"v{i + 1}")]
    lines += [f"    for (int c = 0; c < {out_channels}; ++c) out[c] = v{len(compute)}[c];", "}"]
    return lines
