"""The parameter block as a ctypes struct: the fixed `fkl::KernelHeader`, then one array per slot.

Built once per launch plan; per call only the header's pointers and sizes change, in place.
The layout mirrors the emitted C++ `struct Params` (natural C alignment on both sides).
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from fklir import dtypes

# fkl::Div::in_range: divisors (and dividends) whose quotient the GPU computes as a product and one FMA
DIV_FAST_LOW, DIV_FAST_HIGH = 2.0**-60, 2.0**60


class KernelHeader(ctypes.Structure):
    """Mirror of fkl::KernelHeader (fklir/backend/include/fkl/kernel.h)."""

    _fields_ = [
        ("src", ctypes.c_void_p),
        ("src_plane_stride", ctypes.c_int64),
        ("src_pitch", ctypes.c_int64),
        ("src_w", ctypes.c_int32),
        ("src_h", ctypes.c_int32),
        ("dst", ctypes.c_void_p),
        ("dst_plane_stride", ctypes.c_int64),
        ("dst_pitch", ctypes.c_int64),
        ("dst_w", ctypes.c_int32),
        ("dst_h", ctypes.c_int32),
        ("dst_planes", ctypes.c_int32),
        ("aligned", ctypes.c_int32),
        ("n", ctypes.c_int64),
    ]


class RectStruct(ctypes.Structure):
    """Mirror of fkl::Rect."""

    _fields_ = [("x", ctypes.c_int32), ("y", ctypes.c_int32), ("w", ctypes.c_int32), ("h", ctypes.c_int32)]


SLOT_CTYPE: dict[str, Any] = {record.slot_kind: record.ctype for record in dtypes.DTYPES} | {"rect": RectStruct}


def params_struct_type(layout: Any) -> type[ctypes.Structure]:
    """Mirror of the emitted `struct Params` of a kernel layout (backend.kernel_plan.layout_of, whose fields the
    C++ struct is printed from too): header, pointer tables, slots, then float reciprocals."""
    return _params_struct_type(layout.slots, layout.src_table, layout.dst_table, layout.reciprocals)


@functools.cache
def _params_struct_type(
    slots: tuple[tuple[str, str, int], ...], src_table: int, dst_table: int, reciprocals: tuple[str, ...]
) -> type[ctypes.Structure]:
    """One class per layout: a loop composing new values every frame makes a plan per frame, and a class is
    costly to make."""
    fields: list[tuple[str, Any]] = [("h", KernelHeader)]
    if src_table:
        fields.append(("src_table", ctypes.c_void_p * src_table))
    if dst_table:
        fields.append(("dst_table", ctypes.c_void_p * dst_table))
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
        array = getattr(params, f"{name}_rcp")
        divisors = np.asarray(values[name], dtype=np.float32)
        for i, v in enumerate(divisors):
            with np.errstate(divide="ignore", invalid="ignore"):
                array[i] = float(np.float32(1.0) / v)
        magnitude = np.abs(divisors)
        in_range = bool(np.all((magnitude >= DIV_FAST_LOW) & (magnitude <= DIV_FAST_HIGH)))
        setattr(params, f"{name}_fast", int(in_range))


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


def pack_slots(
    params: ctypes.Structure, slots: Sequence[tuple[str, str, int]], values: Mapping[str, Sequence[float]]
) -> None:
    """Write every slot's values into `params` (rects come as flat x, y, w, h groups; a rect table past the
    rects given, a capacity's unused planes, keeps the zeros of a new block)."""
    for name, kind, count in slots:
        array = getattr(params, name)
        flat = values[name]
        if kind == "rect":
            rects = np.asarray(flat[: 4 * count], dtype=np.int32)  # one copy for a table of rects
            ctypes.memmove(ctypes.addressof(array), rects.ctypes.data, rects.nbytes)
            continue
        if kind in ("f32", "f64"):  # one slice assignment: a new pipeline's values block is packed at compose
            array[:count] = [float(v) for v in flat[:count]]
            continue
        for i in range(count):
            array[i] = slot_value(kind, flat[i])
