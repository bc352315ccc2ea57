"""The op descriptors users compose: `TensorRead()`, `Crop(...)`, `Resize(...)`, `Mul(...)`, ...

A descriptor holds the op's values and knows two things: how to lower itself to one `fkl` op
(`lower`, cold path only), and, for geometry, how large its output is for a given input
(`out_sizes`, which the warm call path uses, with no IR involved). Constructor arguments are
checked at once; errors name the op and the value.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.builder import Builder
from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr
from xdsl.ir import Operation, SSAValue

from fklir.dialects import fkl

Rect = tuple[int, int, int, int]
Size = tuple[int, int]  # (w, h)


def _user_location() -> FileLineColLoc:
    """The user's call site (the first frame outside fklir), so IR errors point at their code."""
    frame = sys._getframe(1)  # pyright: ignore[reportPrivateUsage]
    while frame.f_back is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return FileLineColLoc(StringAttr(frame.f_code.co_filename), IntAttr(frame.f_lineno), IntAttr(1))


def _is_internal(filename: str) -> bool:
    return filename.startswith("<") or "/fklir/" in filename.replace("\\", "/")


def _check_dtype(op: str, dtype: str) -> str:
    if dtype not in fkl.ELEMENT_TYPES:
        raise ValueError(f"{op}: unknown dtype {dtype!r}; expected one of {', '.join(fkl.ELEMENT_TYPES)}")
    return dtype


@dataclass(frozen=True, eq=False)
class Op:
    """Base of every descriptor."""

    location: FileLineColLoc = field(default_factory=_user_location, init=False, repr=False)

    @property
    def op_name(self) -> str:
        return type(self).__name__

    def _place(self, b: Builder, op: Operation) -> SSAValue:
        op.location = self.location
        b.insert(op)
        return op.results[0]

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        raise NotImplementedError


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class TensorRead(Op):
    """Reads the input: packed (H, W[, C]) or (B, H, W[, C]).

    `TensorRead(x)` binds `x` (bound compose, GPU target): the pipeline compiles at compose() and
    `pipe()` reads `x` with no argument. The binding is a call default, never part of the cache key.
    """

    binding: object = None


@dataclass(frozen=True, eq=False)
class TensorWrite(Op):
    """Writes packed output: (H, W[, C]) or (B, H, W[, C]). `TensorWrite(out)` binds the output."""

    binding: object = None

    IR_OP: ClassVar[type[fkl.WriteOp | fkl.SplitOp]] = fkl.WriteOp

    def lower_write(self, b: Builder, x: SSAValue, planes: list[int] | None) -> None:
        op = self.IR_OP(x, "dst", planes)
        op.location = self.location
        b.insert(op)


@dataclass(frozen=True, eq=False)
class TensorSplit(TensorWrite):
    """Writes planar output: (C, H, W) or (B, C, H, W)."""

    IR_OP: ClassVar[type[fkl.WriteOp | fkl.SplitOp]] = fkl.SplitOp


WRITE_DESCRIPTORS = (TensorWrite, TensorSplit)

# --------------------------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------------------------


def _values(op: str, value: float | Sequence[float]) -> tuple[float, ...]:
    values = tuple(value) if isinstance(value, Sequence) else (value,)
    if not 1 <= len(values) <= 4:
        raise ValueError(f"{op}: give one value or one per channel (1 to 4), got {len(values)}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise TypeError(f"{op}: values must be numbers, got {v!r}")
    return tuple(float(v) for v in values)


@dataclass(frozen=True, eq=False, init=False)
class _BinaryValue(Op):
    values: tuple[float, ...]

    IR_OP: type[fkl.BinaryValueOp] = fkl.AddOp

    def __init__(self, value: float | Sequence[float]):
        object.__setattr__(self, "values", _values(type(self).__name__, value))
        object.__setattr__(self, "location", _user_location())

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self._place(b, self.IR_OP(x, self.values))


class Add(_BinaryValue):
    """x + v."""

    IR_OP = fkl.AddOp


class Sub(_BinaryValue):
    """x - v."""

    IR_OP = fkl.SubOp


class Mul(_BinaryValue):
    """x * v."""

    IR_OP = fkl.MulOp


class Div(_BinaryValue):
    """x / v (integer chains: truncation toward zero; v = 0 is an error)."""

    IR_OP = fkl.DivOp


class Max(_BinaryValue):
    """x >= v ? x : v."""

    IR_OP = fkl.MaxOp


class Min(_BinaryValue):
    """x <= v ? x : v."""

    IR_OP = fkl.MinOp


# --------------------------------------------------------------------------------------------
# Casts
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False, init=False)
class Cast(Op):
    """C conversion to `dtype` (float → int truncates toward zero)."""

    dtype: str

    def __init__(self, dtype: str):
        object.__setattr__(self, "dtype", _check_dtype(type(self).__name__, dtype))
        object.__setattr__(self, "location", _user_location())

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self._place(b, fkl.CastOp(x, self.dtype))


class SaturateCast(Cast):
    """Clamp to `dtype`'s range, round half to even, NaN → 0."""

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self._place(b, fkl.SaturateCastOp(x, self.dtype))


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------


def _positive_int(op: str, what: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise ValueError(f"{op}: {what} must be a positive integer, got {v!r}")
    return v


def _rect(op: str, r: Sequence[int]) -> Rect:
    if len(r) != 4 or not all(isinstance(v, int) and not isinstance(v, bool) for v in r):
        raise ValueError(f"{op}: a rect is (x, y, w, h) of integers, got {tuple(r)!r}")
    x, y, w, h = r
    if w <= 0 or h <= 0:
        raise ValueError(f"{op}: rect {tuple(r)} must have a positive width and height")
    if x < 0 or y < 0:
        raise ValueError(f"{op}: rect {tuple(r)} starts outside the image")
    return (x, y, w, h)


class Geometry(Op):
    """Geometry ops fold into the read; they decide the output size."""

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        """Per output plane (w, h), given per input plane (w, h); ValueError when out of bounds."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False, init=False)
class Crop(Geometry):
    """`Crop(x, y, w, h)` (every plane) or `Crop([rects])` (one output plane per rect)."""

    rects: tuple[Rect, ...]
    batched: bool

    def __init__(self, x: int | Sequence[Sequence[int]], y: int = 0, w: int = 0, h: int = 0):
        name = type(self).__name__
        if isinstance(x, Sequence):
            rects = tuple(_rect(name, r) for r in x)
            if not rects:
                raise ValueError(f"{name}: the rect list is empty")
            batched = True
        else:
            rects = (_rect(name, (x, y, w, h)),)
            batched = False
        object.__setattr__(self, "rects", rects)
        object.__setattr__(self, "batched", batched)
        object.__setattr__(self, "location", _user_location())

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self._place(b, fkl.CropOp(x, self.rects))

    def lower_rect(self, b: Builder, x: SSAValue, index: int) -> SSAValue:
        """Only rect `index`: the per-rect chain that horizontal batching merges back."""
        return self._place(b, fkl.CropOp(x, [self.rects[index]]))

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        n = len(self.rects)
        if n > 1 and len(sizes) not in (1, n):
            raise ValueError(f"Crop: {n} rects for {len(sizes)} input planes (give 1, or one per plane)")
        planes = max(n, len(sizes))
        out: list[Size] = []
        for z in range(planes):
            rx, ry, rw, rh = self.rects[z if n > 1 else 0]
            sw, sh = sizes[z if len(sizes) > 1 else 0]
            if rx + rw > sw or ry + rh > sh:
                raise ValueError(
                    f"Crop: rect {(rx, ry, rw, rh)} leaves the {sw}x{sh} image (x + w <= {sw}, y + h <= {sh})"
                )
            out.append((rw, rh))
        return out


@dataclass(frozen=True, eq=False, init=False)
class Resize(Geometry):
    """Resize to (w, h); linear (OpenCV INTER_LINEAR, float32 out) or nearest (keeps the type)."""

    size: Size
    interp: str
    aspect_ratio: str

    def __init__(self, w: int, h: int, interp: str = "linear", aspect_ratio: str = "ignore"):
        name = type(self).__name__
        size = (_positive_int(name, "width", w), _positive_int(name, "height", h))
        if interp not in fkl.INTERPOLATIONS:
            raise ValueError(f"{name}: interp must be 'linear' or 'nearest', got {interp!r}")
        if aspect_ratio != "ignore":
            raise ValueError(f"{name}: aspect_ratio {aspect_ratio!r} is not supported yet (only 'ignore')")
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "interp", interp)
        object.__setattr__(self, "aspect_ratio", aspect_ratio)
        object.__setattr__(self, "location", _user_location())

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self._place(b, fkl.ResizeOp(x, self.size, self.interp))

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        return [self.size for _ in sizes]
