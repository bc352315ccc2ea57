"""C++ for the compute part of a chain: one statement (flat) or one block (pixel) per op.

Two shapes, chosen by emit_cpp:
- `compute(p, v0, c)`: one element of channel c through channel-wise ops only (the flat path calls
  it with a compile-time channel, so the parameter block is read at warp-uniform addresses);
- `compute_pixel(p, v0, out)`: a whole pixel as small arrays, one block per op; needed as soon as
  an op mixes or changes channels (VectorReduce, ColorConversion, MxVFloat3, ...). Every loop runs
  over a compile-time channel count, so the arrays stay in registers.
What each op becomes is its rule in emit_rules; this module strings the rules into functions.
"""

from __future__ import annotations

from xdsl.ir import Operation

from fklir.backend.cpp_types import CPP_TYPE
from fklir.backend.emit_rules import ELEMENT, F16_FAST, PIXEL, fast_division, is_float_division, title
from fklir.backend.typed_ir import image_of, slot_of
from fklir.dialects import fkl


def is_channelwise(compute: list[Operation]) -> bool:
    """Whether every op has an element rule, i.e. keeps channel c depending on channel c alone (the flat
    path's condition)."""
    return all(ELEMENT.find(type(op)) is not None for op in compute)


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
        expr, comment = ELEMENT.emit(op, f"v{i}", "c")
        lines.append(f"    const {out_t} v{i + 1} = {expr};  // {comment}")
    lines += [f"    return v{len(compute)};", "}"]
    return lines


def emit_compute_fast(compute: list[Operation], in_dtype: str, out_dtype: str) -> list[str]:
    """`compute_fast(p, v0, c, fast)`, GPU only: the chain on a fast path that clears `fast` when an element
    needs the exact one; the caller then recomputes the group with compute(). Either every float32 division on
    fkl::Div's fast path, or a float16 chain on cvt alone (_emit_f16_fast). Empty when neither applies.

    One range check per group instead of a branch per element: a branch around the exact division inlined
    at each of a group's elements would make NVRTC compile the long division once per element."""
    if is_f16_fast(compute):
        return _emit_f16_fast(compute)
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
        expr, comment = ELEMENT.emit(op, f"v{i}", "c")
        if is_float_division(op):
            lines.append(f"    fast = fast & fkl::Div::fast_dividend(v{i});")
            expr = fast_division(op, f"v{i}", "c")
        lines.append(f"    const {out_t} v{i + 1} = {expr};  // {comment}")
    lines += [f"    return v{len(compute)};", "}"]
    return lines


def is_f16_fast(compute: list[Operation]) -> bool:
    """Whether the chain runs on the GPU's fast float16 conversions (_emit_f16_fast): ops with an F16_FAST
    rule only, on float16 (they keep the chain's type)."""
    return bool(compute) and all(
        F16_FAST.find(type(op)) is not None and image_of(op.results[0].type).dtype == "float16" for op in compute
    )


def _emit_f16_fast(compute: list[Operation]) -> list[str]:
    """compute() with each value in f32 between ops, rounded to float16 after each (fkl::round_f16_fast) and
    converted by cvt alone. The exact conversions differ from cvt on NaNs only (their payloads are the CPU's
    bit path's), so a group that met no NaN has compute()'s bits; one that met one clears `fast`. A select of
    the NaN bits at each conversion costs several instructions an element, the flag one."""
    lines = [
        "// compute() on the float16 conversions' fast path: values in f32 between ops, rounded to float16",
        "// after each; `fast` ends false when a conversion met a NaN (the exact conversions' case).",
        "__device__ fkl::f16 compute_fast(const Params& p, fkl::f16 v0, int c, bool& fast) {",
        "    (void)p;",
        "    (void)c;",
        "    const fkl::f32 w0 = fkl::f32_of_f16_fast(v0, fast);",
    ]
    for i, op in enumerate(compute):
        expr, comment = F16_FAST.emit(op, f"w{i}", "c")
        rounded = "fkl::f16_of_f32_fast" if i == len(compute) - 1 else "fkl::round_f16_fast"
        out_t = "fkl::f16" if i == len(compute) - 1 else "fkl::f32"
        lines.append(f"    const {out_t} w{i + 1} = {rounded}({expr}, fast);  // {comment}")
    lines += [f"    return w{len(compute)};", "}"]
    return lines


def divisors_checked(compute: list[Operation]) -> str | None:
    """The start value of compute_fast's `fast` flag (every divisor in range; true for a float16 chain on its
    fast conversions), or None without compute_fast."""
    if is_f16_fast(compute):
        return "true"
    slots = [slot_of(op) for op in compute if is_float_division(op)]
    return " && ".join(f"p.{slot}_fast != 0" for slot in slots) or None


def emit_compute_pixel(
    compute: list[Operation], in_dtype: str, in_channels: int, out_dtype: str, out_channels: int
) -> list[str]:
    """`compute_pixel(p, v0, out)`: the chain on one whole pixel, one block per op; `compute_pixel(p, z, v0,
    out)` when an op takes a row of values per plane (its row z)."""
    plane = "fkl::i32 z, " if any(fkl.is_per_plane(op) for op in compute) else ""  # ChainPlan.plane_param
    lines = [
        "// The compute chain on one pixel v0 (one block per op; small arrays stay in registers).",
        f"FKL_HD void compute_pixel(const Params& p, {plane}const {CPP_TYPE[in_dtype]} v0[{in_channels}], "
        f"{CPP_TYPE[out_dtype]} out[{out_channels}]) {{",
        "    (void)p;",
    ]
    for i, op in enumerate(compute):
        result = image_of(op.results[0].type)
        lines.append(f"    // {title(op)}")
        lines.append(f"    {CPP_TYPE[result.dtype]} v{i + 1}[{result.channels.data}];")
        lines += [f"    {line}" for line in PIXEL.emit(op, f"v{i}", f"v{i + 1}")]
    lines += [f"    for (int c = 0; c < {out_channels}; ++c) out[c] = v{len(compute)}[c];", "}"]
    return lines
