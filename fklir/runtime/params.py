"""The parameter block as a ctypes struct: the fixed `fkl::KernelHeader`, a DAG's further inputs and outputs,
then one array per slot.

Built once per launch plan; per call only the header's pointers and sizes change, in place.
The layout mirrors the emitted C++ `struct Params` (natural C alignment on both sides).
"""

from __future__ import annotations

import array
import ctypes
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from fklir import dtypes

# fkl::Div::in_range: divisors (and dividends) whose quotient the GPU computes as a product and one FMA
DIV_FAST_LOW, DIV_FAST_HIGH = 2.0**-60, 2.0**60


# The source's fields of fkl::KernelHeader, which fkl::InputSurface repeats (a DAG's further arguments), and the
# destination's that fkl::OutputSurface repeats.
_SOURCE_FIELDS: list[tuple[str, Any]] = [
    ("src", ctypes.c_void_p),
    ("src_plane_stride", ctypes.c_int64),
    ("src_pitch", ctypes.c_int64),
    ("src_w", ctypes.c_int32),
    ("src_h", ctypes.c_int32),
]
_DESTINATION_FIELDS: list[tuple[str, Any]] = [
    ("dst", ctypes.c_void_p),
    ("dst_plane_stride", ctypes.c_int64),
    ("dst_pitch", ctypes.c_int64),
]


class KernelHeader(ctypes.Structure):
    """Mirror of fkl::KernelHeader (fklir/backend/include/fkl/kernel.h)."""

    _fields_ = [
        *_SOURCE_FIELDS,
        *_DESTINATION_FIELDS,
        ("dst_w", ctypes.c_int32),
        ("dst_h", ctypes.c_int32),
        ("dst_planes", ctypes.c_int32),
        ("aligned", ctypes.c_int32),
        ("n", ctypes.c_int64),
    ]


class InputSurface(ctypes.Structure):
    """Mirror of fkl::InputSurface: a DAG kernel's call argument i >= 1 (Params::in<i>)."""

    _fields_ = _SOURCE_FIELDS


class OutputSurface(ctypes.Structure):
    """Mirror of fkl::OutputSurface: a DAG kernel's output k >= 1 (Params::out<k>)."""

    _fields_ = _DESTINATION_FIELDS


class RectStruct(ctypes.Structure):
    """Mirror of fkl::Rect."""

    _fields_ = [("x", ctypes.c_int32), ("y", ctypes.c_int32), ("w", ctypes.c_int32), ("h", ctypes.c_int32)]


SLOT_CTYPE: dict[str, Any] = {record.slot_kind: record.ctype for record in dtypes.DTYPES} | {"rect": RectStruct}


def params_struct_type(layout: Any) -> type[ctypes.Structure]:
    """Mirror of the emitted `struct Params` of a kernel layout (backend.kernel_plan.layout_of, whose fields the
    C++ struct is printed from too): header, pointer tables, slots, then float reciprocals."""
    return _params_struct_type(
        layout.slots, layout.src_table, layout.dst_table, layout.reciprocals, len(layout.inputs), len(layout.outputs)
    )


@functools.cache
def _params_struct_type(
    slots: tuple[tuple[str, str, int], ...],
    src_table: int,
    dst_table: int,
    reciprocals: tuple[str, ...],
    inputs: int = 0,
    outputs: int = 0,
) -> type[ctypes.Structure]:
    """One class per layout: a loop composing new values every frame makes a plan per frame, and a class is
    costly to make."""
    fields: list[tuple[str, Any]] = [("h", KernelHeader)]
    if src_table:
        fields.append(("src_table", ctypes.c_void_p * src_table))
    if dst_table:
        fields.append(("dst_table", ctypes.c_void_p * dst_table))
    for i in range(1, inputs + 1):
        fields.append((f"in{i}", InputSurface))
        if src_table:  # a DAG's list call: every argument a list, one table each
            fields.append((f"in{i}_table", ctypes.c_void_p * src_table))
    fields += [(f"out{k}", OutputSurface) for k in range(1, outputs + 1)]
    fields += [(name, SLOT_CTYPE[kind] * count) for name, kind, count in slots]
    counts = {name: count for name, _, count in slots}
    fields += [(f"{name}_rcp", ctypes.c_float * counts[name]) for name in reciprocals]
    fields += [(f"{name}_fast", ctypes.c_int32) for name in reciprocals]
    return type("Params", (ctypes.Structure,), {"_fields_": fields})


def pack_reciprocals(
    params: ctypes.Structure, reciprocals: Sequence[str], values: Mapping[str, Sequence[float]]
) -> None:
    """`<slot>_rcp[i]` = 1 / value, rounded once to float32 (what a GPU's rcp.rn gives), and
    `<slot>_fast` = 1 when every |value| lies in fkl::Div's fast range [2^-60, 2^60]."""
    for name in reciprocals:
        field = getattr(params, f"{name}_rcp")
        given = values[name][: len(field)]
        divisors = (ctypes.c_float * len(given))(*given)[:]  # the divisors as float32 holds them
        field[: len(divisors)] = [_reciprocal(v) for v in divisors]
        fast = all(DIV_FAST_LOW <= abs(v) <= DIV_FAST_HIGH for v in divisors)  # False for NaN
        setattr(params, f"{name}_fast", int(fast))


def _reciprocal(v: float) -> float:
    """1 / v in double, which the float32 field rounds once more: for a float32 v that is the correctly rounded
    float32 quotient (a double has at least 2 * 24 + 2 bits, so the second rounding is innocuous); 1/±0 is ±inf."""
    if v == 0.0:
        return math.copysign(math.inf, v)
    return 1.0 / v


def _f16_bits(v: float) -> int:
    return int(np.array([v], dtype=np.float16).view(np.uint16)[0])


def _bf16_bits(v: float) -> int:
    """Round-to-nearest-even of the float32 bits to their upper half (NaN stays NaN)."""
    bits = int(np.array([v], dtype=np.float32).view(np.uint32)[0])
    if (bits & 0x7F800000) == 0x7F800000 and bits & 0x007FFFFF:
        return (bits >> 16) | 0x0040
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def slot_value(kind: str, v: float) -> object:
    """`v` as a parameter slot of `kind` stores it: f16/bf16 as their bits, bool, int or float."""
    if kind == "f16":
        return _f16_bits(v)
    if kind == "bf16":
        return _bf16_bits(v)
    if kind in ("f32", "f64"):
        return float(v)
    if kind == "i1":
        return bool(v)
    return int(v)


def _int32s(flat: Sequence[float]) -> array.array[int]:
    """Rect coordinates as int32s: Python ints as they are, the floats of a plan's IR values truncated."""
    try:
        return array.array("i", cast(Sequence[int], flat))
    except TypeError:
        return array.array("i", [int(v) for v in flat])


def pack_rects(field: ctypes.Array[Any], count: int, flat: Sequence[float] | bytes) -> None:
    """A rect slot's table from flat x, y, w, h groups, or their int32s packed (a new pipeline's per-frame rects
    land here), in one copy; zeros past the rects given (a capacity's unused planes), whatever the block held."""
    address = ctypes.addressof(field)
    if isinstance(flat, bytes):
        size = min(len(flat), ctypes.sizeof(field))
        ctypes.memmove(address, flat, size)
    else:
        rects = _int32s(flat[: 4 * count])
        size = rects.itemsize * len(rects)
        ctypes.memmove(address, rects.buffer_info()[0], size)
    if size < ctypes.sizeof(field):
        ctypes.memset(address + size, 0, ctypes.sizeof(field) - size)


def pack_slots(
    params: ctypes.Structure, slots: Sequence[tuple[str, str, int]], values: Mapping[str, Sequence[float]]
) -> None:
    """Write every slot's values into `params` (rects come as flat x, y, w, h groups, pack_rects)."""
    for name, kind, count in slots:
        field = getattr(params, name)
        flat = values[name]
        if kind == "rect":
            pack_rects(field, count, flat)
            continue
        if kind in ("f32", "f64"):  # one slice assignment: a new pipeline's values block is packed at compose
            field[:count] = [float(v) for v in flat[:count]]
            continue
        for i in range(count):
            field[i] = slot_value(kind, flat[i])
