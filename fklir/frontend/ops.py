"""The op descriptors users compose: `TensorRead()`, `Crop(...)`, `Resize(...)`, `Mul(...)`, ...

A descriptor holds the op's values and knows two things: how to lower itself to one `fkl` op
(`lower`, cold path only), and, for geometry, how large its output is for a given input
(`out_sizes`, which the warm call path uses, with no IR involved). Constructor arguments are
checked at once; errors name the op and the value.
"""

from __future__ import annotations

import inspect
import itertools
import operator
import os
import struct
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast, overload

from fklir.dialects import value_rules
from fklir.dialects.binary_declarations import BINARY_DECLARATIONS
from fklir.dialects.constants import JOIN_KINDS, WARP_KINDS, invert_warp_matrix
from fklir.dialects.math_declarations import MATH_DECLARATIONS
from fklir.dialects.value_rules import RecipeStep
from fklir.dialects.word_declarations import WORD_DECLARATIONS, WordDeclaration
from fklir.frontend import values as spellings
from fklir.frontend.values import (
    PerImage,
    border_mode,
    channel_count,
    dtype_name,
    flag,
    integer,
    integers,
    interpolation,
    number,
    numbers,
    rect_ints,
    rect_list,
    unpacked,
)
from fklir.limits import I32_MAX

if TYPE_CHECKING:  # the IR is lower()'s only: composing a chain whose plan is known imports no xDSL
    from xdsl.builder import Builder
    from xdsl.dialects.builtin import FileLineColLoc
    from xdsl.ir import Operation, SSAValue

    from fklir.dialects import fkl

    WriteIrOp = fkl.WriteOp | fkl.SplitOp | fkl.TSplitOp | fkl.SplitWriteOp

Rect = tuple[int, int, int, int]
Size = tuple[int, int]  # (w, h)
_PACK_RECT = struct.Struct("4i").pack  # one rect as fkl::Rect's int32 x, y, w, h


UserLocation = tuple[str, int]  # (file, line)


def _user_location() -> UserLocation:
    """The user's call site (the first frame outside fklir), so IR errors point at their code. Plain
    values: the IR location is made only when the descriptor is lowered, which a known chain never is."""
    frame = sys._getframe(2)  # pyright: ignore[reportPrivateUsage]
    code = frame.f_code
    if _INTERNAL.get(code.co_filename) is False:  # the common case: a descriptor made in the user's code
        return code.co_filename, frame.f_lineno
    while frame.f_back is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
    return frame.f_code.co_filename, frame.f_lineno


# The installed package's own folder, as imported and resolved: a user's script in any folder named
# "fklir" (a git clone's default name) is not library code.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE_DIRS = tuple({os.path.join(d, "") for d in (_PACKAGE, os.path.realpath(_PACKAGE))})
_INTERNAL: dict[str, bool] = {}


def _is_internal(filename: str) -> bool:
    """Frames to skip: fklir's own files and generated code ("<string>")."""
    known = _INTERNAL.get(filename)
    if known is None:
        paths = (os.path.abspath(filename), os.path.realpath(filename))
        known = filename.startswith("<") or any(p.startswith(_PACKAGE_DIRS) for p in paths)
        _INTERNAL[filename] = known
    return known


class Op:
    """Base of every descriptor. Its fields are its classes' annotated attributes (ClassVar aside), base
    classes first: set once by __init__, shown by repr, and what the plan cache describes
    (Op.description); a descriptor is frozen and equal only to itself. Not a dataclass:
    @dataclass builds every class's methods from source text, which weighs on a fresh process's import."""

    FIELDS: ClassVar[tuple[str, ...]] = ()
    DESCRIBED: ClassVar[tuple[str, ...]] = ()  # FIELDS but a binding (a call default, not what compiles)
    _described_values: ClassVar[Callable[[object], tuple[object, ...]] | None] = None  # of two or more DESCRIBED
    # Its values fill parameter slots straight from the descriptor (runtime_slot): a plan is not keyed by them
    RUNTIME_VALUES: ClassVar[bool] = False
    location: UserLocation  # the user's call site, not a field

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        annotations: dict[str, str] = vars(cls).get("__annotations__", {})
        own = [name for name, kind in annotations.items() if not str(kind).startswith("ClassVar")]
        cls._set_fields((*cls.FIELDS, *(name for name in own if name not in cls.FIELDS)))

    @classmethod
    def _set_fields(cls, fields: tuple[str, ...]) -> None:
        cls.FIELDS = fields
        cls.DESCRIBED = tuple(name for name in fields if name != "binding")
        # the fields' values in one call (a new pipeline's structure reads every descriptor's)
        cls._described_values = operator.attrgetter(*cls.DESCRIBED) if len(cls.DESCRIBED) > 1 else None

    def __init__(self) -> None:
        object.__setattr__(self, "location", _user_location())

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is frozen: cannot delete field {name!r}")

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in type(self).FIELDS)
        return f"{type(self).__qualname__}({shown})"

    @property
    def op_name(self) -> str:
        return type(self).__name__

    def description(self) -> tuple[object, ...]:
        """The class and field values: the descriptor's part of a plan's description (a binding is a call
        default, not part of what compiles)."""
        cls = type(self)
        names = cls.DESCRIBED
        if len(names) == 1:
            return (cls.__qualname__, ((names[0], getattr(self, names[0])),))
        if not names:
            return (cls.__qualname__, ())
        values = cls._described_values
        assert values is not None
        return (cls.__qualname__, tuple(zip(names, values(self))))

    def structure(self) -> tuple[object, ...]:
        """description() less the values a plan takes at run time (a runtime-value descriptor leaves them
        out and fills its slots with `runtime_slot`)."""
        return self.description()

    def value_key(self) -> object:
        """Its runtime values as a hashable key that equal only for values that fill equal slots (a pipeline of
        the same values reuses another's packed block), or None: none that cheap."""
        return None

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """A RUNTIME_VALUES descriptor's values for the slot of the op it lowered to (`op_name`; `rule`: which
        of its slots, lowering.runtime_values' word) on a chain of `channels` x `dtype`, `count` of them,
        checked as the IR checks them (ValueError in the IR's words)."""
        raise NotImplementedError(f"{type(self).__name__} has no runtime values")

    def ir_location(self) -> FileLineColLoc:
        from xdsl.dialects.builtin import FileLineColLoc, IntAttr, StringAttr

        filename, line = self.location
        return FileLineColLoc(StringAttr(filename), IntAttr(line), IntAttr(1))

    def _place(self, b: Builder, op: Operation) -> SSAValue:
        op.location = self.ir_location()
        b.insert(op)
        return op.results[0]

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        raise NotImplementedError

    def lower_plane(self, b: Builder, x: SSAValue, planes: Sequence[int]) -> SSAValue:
        """lower() in a chain that makes output planes `planes`: all of them, or one (a list's image, a Crop's
        rect: a batch lowered one chain per plane, which fkl-batch-horizontal merges). A descriptor with
        per-image values lowers the rows of those planes."""
        return self.lower(b, x)

    def per_image(self) -> PerImage | None:
        """The descriptor's per-image values (fkl.per_image), whose rows a call's batch must match."""
        return None


IrOpT = TypeVar("IrOpT")


class IrClass(Generic[IrOpT]):
    """A descriptor's IR op class, the dialect's class named `class_name`, looked up on first use (then
    cached on the descriptor class): only lowering needs it, and a chain whose plan is known never
    lowers, so composing it imports no xDSL."""

    def __init__(self, class_name: str):
        self.class_name = class_name
        self.attribute = "IR_OP"

    def __set_name__(self, owner: type, attribute: str) -> None:
        self.attribute = attribute

    def __get__(self, instance: object, owner: type) -> type[IrOpT]:
        from fklir.dialects import fkl

        ir_op = cast(type[IrOpT], getattr(fkl, self.class_name))
        setattr(owner, self.attribute, ir_op)
        return ir_op


class _IrDoc:
    """A derived descriptor's docstring: its IR op class's, read on first use (see IrClass)."""

    def __get__(self, instance: object, owner: type) -> str | None:
        return cast(type, getattr(owner, "IR_OP")).__doc__


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------


class Read(Op):
    """Base of the ops that start a chain (they lower to the read)."""

    def lower_read(self, b: Builder, source_type: fkl.ImageType, source: str | list[str]) -> SSAValue:
        """The chain's first value: a read of `source` typed `source_type` (what the input is)."""
        from fklir.dialects import fkl

        return self._place(b, fkl.ReadOp(source, source_type))

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        raise ValueError(f"{self.op_name} may only start a chain")


class Write(Op):
    """Base of the ops that end a chain."""

    # Subclasses assign theirs unannotated: an annotated class attribute is a field (see Op).
    IR_OP: ClassVar[IrClass[WriteIrOp]] = IrClass("WriteOp")

    def lower_write(self, b: Builder, x: SSAValue, planes: list[int] | None, dest: str = "dst") -> None:
        op = type(self).IR_OP(x, dest, planes)
        op.location = self.ir_location()
        b.insert(op)

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        raise ValueError(f"{self.op_name} may only end a chain")


class TensorRead(Read):
    """Reads the input: packed (H, W[, C]) or (B, H, W[, C]).

    `TensorRead(x)` binds `x` (bound compose, GPU target): the pipeline compiles at compose() and
    `pipe()` reads `x` with no argument. The binding is a call default, never part of the cache key.
    """

    binding: object

    def __init__(self, binding: object = None):
        object.__setattr__(self, "binding", binding)
        object.__setattr__(self, "location", _user_location())


class TensorPack(Read):
    """Reads a planar input, (C, H, W) or (B, C, H, W), as packed pixels of `channels` channels
    (the inverse of TensorSplit). The IR reads a `planar` image type.
    """

    channels: int

    def __init__(self, channels: int):
        object.__setattr__(self, "channels", channel_count(type(self).__name__, channels))
        object.__setattr__(self, "location", _user_location())

    def lower_read(self, b: Builder, source_type: fkl.ImageType, source: str | list[str]) -> SSAValue:
        from fklir.dialects import fkl

        if source_type.channels.data != self.channels:
            raise ValueError(
                f"TensorPack({self.channels}): the input has {source_type.channels.data} channels per pixel"
            )
        planar = fkl.ImageType(source_type.element_type, self.channels, source_type.planes.data, layout="planar")
        return self._place(b, fkl.ReadOp(source, planar))


class ReadSet(Read):
    """A w x h image whose every pixel is `value` (one number per channel, or one number for
    `channels` channels, default 1), of `dtype`: a generator that reads no memory. Its output
    size is (w, h) whatever the input.
    """

    values: tuple[float, ...]
    size: Size
    dtype: str

    def __init__(
        self,
        value: object,
        w: int,
        h: int,
        dtype: object = "float32",
        channels: int | None = None,
    ):
        name = type(self).__name__
        values = numbers(name, value)
        if channels is not None:
            n = channel_count(name, channels)
            if len(values) not in (1, n):
                raise ValueError(f"{name}: {len(values)} values for {n} channels (give 1, or one per channel)")
            values = values * n if len(values) == 1 else values
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "size", _output_size(name, w, h))
        object.__setattr__(self, "dtype", dtype_name(name, dtype))
        object.__setattr__(self, "location", _user_location())

    @property
    def channels(self) -> int:
        return len(self.values)

    RUNTIME_VALUES: ClassVar[bool] = True

    def structure(self) -> tuple[object, ...]:
        return (type(self).__qualname__, self.channels, self.dtype)  # the pixel's values and the size are values

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """`rule` "size": (w, h), checked at __init__; "values": the pixel, fitting the read's type."""
        if rule == "size":
            return (float(self.size[0]), float(self.size[1]))
        value_rules.values_fit_chain(op_name, self.values, channels, dtype)
        return tuple(value_rules.per_element(self.values, count))

    def lower_read(self, b: Builder, source_type: fkl.ImageType, source: str | list[str]) -> SSAValue:
        from fklir.dialects import fkl

        own_type = fkl.ImageType(self.dtype, self.channels)
        read = self._place(b, fkl.ReadOp(source if isinstance(source, str) else source[0], own_type))
        return self._place(b, fkl.ReadSetOp(read, self.values, self.size))

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        return [self.size]


class TensorWrite(Write):
    """Writes packed output: (H, W[, C]) or (B, H, W[, C]). `TensorWrite(out)` binds the output."""

    binding: object

    def __init__(self, binding: object = None):
        object.__setattr__(self, "binding", binding)
        object.__setattr__(self, "location", _user_location())

    IR_OP = IrClass("WriteOp")


class TensorSplit(TensorWrite):
    """Writes planar output: (C, H, W) or (B, C, H, W)."""

    IR_OP = IrClass("SplitOp")


class TensorTSplit(Write):
    """Writes channel-major output: (C, B, H, W) (for one plane the same bytes as TensorSplit)."""

    IR_OP = IrClass("TSplitOp")


class SplitWrite(Write):
    """Writes each channel to its own (B, H, W) buffer (C outputs)."""

    IR_OP = IrClass("SplitWriteOp")


WRITE_DESCRIPTORS = (TensorWrite, TensorSplit, TensorTSplit, SplitWrite)
READ_DESCRIPTORS = (TensorRead, TensorPack, ReadSet)

# --------------------------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------------------------


Values = tuple[float, ...] | PerImage  # one value or one per channel, or fkl.per_image rows of them


def _values(op: str, value: object) -> Values:
    """A value as a descriptor holds it: its numbers, or `fkl.per_image` rows (each checked by the IR's rule)."""
    return value if isinstance(value, PerImage) else numbers(op, value)


def _planes_values(values: Values, planes: Sequence[int]) -> tuple[list[float], bool]:
    """(numbers, per_plane) of the IR op for a chain making output `planes`: per-image rows those planes'."""
    if not isinstance(values, PerImage):
        return list(values), False
    return [v for z in planes for v in values.row(z)], True


def _values_slot(
    values: Values, count: int, channels: int, check: Callable[[Sequence[float]], None]
) -> tuple[float, ...]:
    """A runtime value's slot of `count`, one per channel (a plane's row each for per-image rows), each row
    `check`ed as the IR checks it."""
    for row in values.rows if isinstance(values, PerImage) else (values,):
        check(row)
    if isinstance(values, PerImage):
        return tuple(values.slot(count, channels))
    return tuple(value_rules.per_element(values, count))


def _fits(op_name: str, channels: int, dtype: str) -> Callable[[Sequence[float]], None]:
    """The check of a row of values on a chain of `channels` x `dtype` (value_rules.values_fit_chain)."""
    return lambda row: value_rules.values_fit_chain(op_name, row, channels, dtype)


def exact_key(values: tuple[float, ...]) -> object:
    """A tuple of numbers as a key that tells -0.0 from 0.0 (equal, and hashed alike, as tuple items): its text
    when it holds a zero. NaN never equals itself, so values with one never match (packed anew, never wrong)."""
    return repr(values) if 0.0 in values else values


def _per_image_mark(value: object) -> tuple[str, ...]:
    """A structure's mark of per-image values: their rows are values, that there are rows is structure."""
    return ("per_image",) if isinstance(value, PerImage) else ()


class _BinaryValue(Op):
    values: Values

    IR_OP: ClassVar[IrClass[fkl.BinaryValueOp]]

    def __new__(cls, value: object = None) -> Any:
        """`Add(fkl.Input(1, ...))`: the op of the chain's value and a branch's (SPEC §8), a _Join."""
        if isinstance(value, Input):
            return _Join(cls.__name__, value)
        return super().__new__(cls)

    def __init__(self, value: object):
        """`value`: one number or one per channel (a sequence, 1-D array or tensor), or `fkl.per_image(rows)`."""
        object.__setattr__(self, "values", _values(type(self).__name__, value))
        object.__setattr__(self, "location", _user_location())

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self.lower_plane(b, x, range(1))

    def lower_plane(self, b: Builder, x: SSAValue, planes: Sequence[int]) -> SSAValue:
        values, per_plane = _planes_values(self.values, planes)
        return self._place(b, type(self).IR_OP(x, values, per_plane=per_plane))

    def per_image(self) -> PerImage | None:
        return self.values if isinstance(self.values, PerImage) else None

    RUNTIME_VALUES: ClassVar[bool] = True

    def structure(self) -> tuple[object, ...]:
        return (type(self).__qualname__, *_per_image_mark(self.values))

    def value_key(self) -> object:
        return exact_key(self.values) if type(self.values) is tuple else None

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """The slot of the op this lowers to (`rule`: its word, add ... min), its values checked as the IR
        checks them (dialects/value_rules.py, ValueError); per-image values one row per plane."""
        values = self.values
        if type(values) is tuple:  # one value or one per channel: no row to lay out
            value_rules.arithmetic_values(op_name, rule, values, channels, dtype)
            return tuple(value_rules.per_element(values, count))

        def check(row: Sequence[float]) -> None:
            value_rules.arithmetic_values(op_name, rule, row, channels, dtype)

        return _values_slot(values, count, channels, check)


# --------------------------------------------------------------------------------------------
# Casts
# --------------------------------------------------------------------------------------------


class _CastTo(Op):
    """A conversion to `dtype`: lowers to `IR_OP(x, dtype)`."""

    IR_OP: ClassVar[IrClass[fkl.CastLikeOp]]
    dtype: str

    def __init__(self, dtype: object):
        """`dtype`: a name ("float32"), a numpy dtype or type (np.float32) or a torch dtype."""
        object.__setattr__(self, "dtype", dtype_name(type(self).__name__, dtype))
        object.__setattr__(self, "location", _user_location())

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self._place(b, type(self).IR_OP(x, self.dtype))


class _NoValue(Op):
    """A compute op without values: lowers to `IR_OP(x)`."""

    IR_OP: ClassVar[IrClass[fkl.UnaryOp]]

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self._place(b, type(self).IR_OP(x))


# --------------------------------------------------------------------------------------------
# Descriptors derived from their dialect declarations (values or none: nothing to write twice)
# --------------------------------------------------------------------------------------------

DescriptorT = TypeVar("DescriptorT", bound=Op)


def _derived(base: type[DescriptorT], ir_class: str, **namespace: object) -> type[DescriptorT]:
    """`base` lowering to the dialect's class `ir_class`, named as it without "Op" and documented by its
    docstring, so that the declaration in the dialect is the only one. Both are read on first use. `namespace`:
    the class's own attributes (a one-argument op's field, kind and signature)."""
    name = ir_class.removesuffix("Op")
    namespace |= {"IR_OP": IrClass(ir_class), "__doc__": _IrDoc(), "__module__": __name__, "__qualname__": name}
    return cast(type[DescriptorT], type(name, (base,), namespace))


def cast_to(ir_class: str) -> type[_CastTo]:
    """The descriptor of a conversion: `Cast = cast_to("CastOp")`, used as `Cast("float32")`."""
    return _derived(_CastTo, ir_class)


def unary(ir_class: str) -> type[_NoValue]:
    """The descriptor of an op without values: `IsEven = unary("IsEvenOp")`, used as `IsEven()`."""
    return _derived(_NoValue, ir_class)


def binary_value(ir_class: str) -> type[_BinaryValue]:
    """The descriptor of an element-wise op with one value per channel: `Add = binary_value("AddOp")`,
    used as `Add(v)`."""
    return _derived(_BinaryValue, ir_class)


# one per record of dialects/binary_declarations.py, in its order
Add, Sub, Mul, Div, Max, Min = (binary_value(f"{declared.name}Op") for declared in BINARY_DECLARATIONS)
Cast = cast_to("CastOp")
SaturateCast = cast_to("SaturateCastOp")
SaturateFloat = unary("SaturateFloatOp")
IsEven = unary("IsEvenOp")
Equal = binary_value("EqualOp")
VectorAnd = unary("VectorAndOp")

# Every math op's descriptor by name (Abs), from its declaration (dialects/math_declarations.py), so that a new
# math op is its declaration alone. fklir's lazy __getattr__ exports them; unlike the core ops above,
# static checkers do not see them.
MATH_DESCRIPTORS: dict[str, type[Op]] = {
    declared.name: (binary_value if declared.takes_value else unary)(f"{declared.name}Op")
    for declared in MATH_DECLARATIONS
}
globals().update(MATH_DESCRIPTORS)


# --------------------------------------------------------------------------------------------
# Declared descriptors: an op's fields, each read by the kind of its argument (a channel count, channel values,
# an output size, a matrix, a word of a list, ...), from which its signature, __init__, lowering, structure and
# slots come (Declared); an op of one argument is its IRDL class and one line (one_argument)
# --------------------------------------------------------------------------------------------


def _matrix(op: str, m: object, counts: tuple[int, ...]) -> tuple[float, ...]:
    """The row-major numbers of a matrix given as nested rows, a 2-D array or flat numbers, as many as one of its
    shapes holds (`counts`: 6 for 2x3, 9 for 3x3; value_rules.matrix_numbers, the verifier's words)."""
    import numpy as np

    try:
        array = np.asarray(m, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{op}: the matrix must hold numbers, got {m!r}") from None
    if array.ndim > 2 or (array.ndim == 2 and (array.shape[1] != 3 or array.size not in counts)):
        raise ValueError(f"{op}: needs a {value_rules.matrix_shapes(counts)} matrix, got shape {array.shape}")
    numbers = tuple(float(v) for v in array.reshape(-1))
    value_rules.matrix_numbers(f"{op}:", numbers, counts)
    return numbers


class _Argument:
    """The kind of a one-argument descriptor's argument: how it is read (its spellings, then the rule it shares
    with the verifier, dialects/value_rules.py), whether it is a runtime value (it fills a parameter slot, so it
    is not the plan's structure) and how it fills its slot."""

    RUNTIME: ClassVar[bool] = False
    VARIADIC: ClassVar[bool] = False  # `VectorReorder(2, 1, 0)`: the positional arguments are the value

    # read(op, *arguments): the field's value from its parameters' arguments (one each, but Resize's size's
    # w and h), checked; each kind declares its own parameters
    read: Callable[..., Any]

    def structure(self, value: Any) -> tuple[object, ...]:
        """What of a runtime value the plan is keyed by (a compile-time value is all structure)."""
        return ()

    def value_key(self, value: Any) -> object:
        """Op.value_key of a runtime value."""
        return None

    def slot(self, op_name: str, value: Any, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """Op.runtime_slot of a runtime value."""
        raise NotImplementedError

    def per_image(self, value: Any) -> PerImage | None:
        return None

    def lowered(self, value: Any, planes: Sequence[int]) -> tuple[object, bool]:
        """(the IR op's argument, per_plane) in a chain that makes output `planes`."""
        return value, False


class _ChannelCount(_Argument):
    """Discard's: how many channels a pixel keeps."""

    def read(self, op: str, given: object) -> int:
        return channel_count(op, given)


class _AppendedNumber(_Argument):
    """AddLast's: one number, representable in the chain's type."""

    RUNTIME = True

    def read(self, op: str, given: object) -> float:
        if isinstance(given, Sequence):  # AddLast([1.0]) is a channel list, which AddLast does not take
            raise TypeError(f"{op}: the appended value is one number, got {given!r}")
        return number(op, given, "the appended value")

    def value_key(self, value: float) -> object:
        return exact_key((value,))

    def slot(self, op_name: str, value: float, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        value_rules.values_representable(op_name, (value,), dtype)
        return (value,)


class _ChannelIndices(_Argument):
    """VectorReorder's: 1 to 4 source channels, `VectorReorder(2, 1, 0)` or one sequence, array or tensor."""

    VARIADIC = True

    def read(self, op: str, given: tuple[object, ...]) -> tuple[int, ...]:
        indices = integers(op, unpacked(given), "channel indices")
        value_rules.reorder_indices(f"{op}:", indices, None)
        return indices


class _RuntimeChannelIndices(_ChannelIndices):
    """VectorReorderRT's: the count is structure, the indices a slot (each one of the chain's channels)."""

    RUNTIME = True

    def structure(self, value: tuple[int, ...]) -> tuple[object, ...]:
        return (len(value),)

    def value_key(self, value: tuple[int, ...]) -> object:
        return value

    def slot(self, op_name: str, value: tuple[int, ...], dtype: str, channels: int, count: int) -> tuple[float, ...]:
        value_rules.reorder_indices(f"'{op_name}'", value, channels)
        return tuple(float(i) for i in value)


class _Matrix3x3(_Argument):
    """MxVFloat3's: a 3x3 matrix, or `fkl.per_image(matrices)`, one per image ((B, 3, 3): a colour twist per
    sample); row-major, finite."""

    RUNTIME = True

    def read(self, op: str, given: object) -> tuple[float, ...] | PerImage:
        if not isinstance(given, PerImage):
            return _matrix(op, given, (9,))
        given.check(op, (9,), "a 3x3 matrix")
        for row in given.rows:
            value_rules.matrix_numbers(f"{op}:", row, (9,))  # finite
        return given

    def structure(self, value: tuple[float, ...] | PerImage) -> tuple[object, ...]:
        return _per_image_mark(value)

    def slot(
        self, op_name: str, value: tuple[float, ...] | PerImage, dtype: str, channels: int, count: int
    ) -> tuple[float, ...]:
        return tuple(value.slot(count, 9)) if isinstance(value, PerImage) else value

    def per_image(self, value: tuple[float, ...] | PerImage) -> PerImage | None:
        return value if isinstance(value, PerImage) else None

    def lowered(self, value: tuple[float, ...] | PerImage, planes: Sequence[int]) -> tuple[object, bool]:
        return _planes_values(value, planes)


class _Choice(_Argument):
    """A word of a list, read by `spelling` (cv2's constants too), else taken as given for the op's `check`: a
    compile-time value."""

    def __init__(self, spelling: Callable[[str, object], str] | None = None):
        self.spelling = spelling

    def read(self, op: str, given: object) -> object:
        return given if self.spelling is None else self.spelling(op, given)


class _OutputSize(_Argument):
    """The (w, h) an op makes, read from two arguments (value_rules.output_size): a runtime value, slot (w, h)."""

    RUNTIME = True

    def read(self, op: str, w: object, h: object) -> Size:
        return _output_size(op, w, h)

    def value_key(self, value: Size) -> object:
        return value

    def slot(self, op_name: str, value: Size, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        return (float(value[0]), float(value[1]))


class _Flag(_Argument):
    """A yes/no runtime value named `what` in errors (Warping's inverse: which matrix fills the slot)."""

    RUNTIME = True

    def __init__(self, what: str):
        self.what = what

    def read(self, op: str, given: object) -> bool:
        return flag(op, given, self.what)

    def value_key(self, value: bool) -> object:
        return value


class _ChannelValues(_Argument):
    """One value or one per channel, or `fkl.per_image` rows; None where the op takes none and the field is
    `optional` (Resize without a background): a runtime value, its slot fitting the chain's type."""

    RUNTIME = True

    def __init__(self, optional: bool = False):
        self.optional = optional

    def read(self, op: str, given: object) -> Values | None:
        return None if given is None and self.optional else _values(op, given)

    def structure(self, value: Values | None) -> tuple[object, ...]:
        return _per_image_mark(value)

    def value_key(self, value: Values | None) -> object:
        if value is None:
            return ()
        return exact_key(value) if type(value) is tuple else None

    def slot(self, op_name: str, value: Values | None, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        return _values_slot(value or (), count, channels, _fits(op_name, channels, dtype))

    def per_image(self, value: Values | None) -> PerImage | None:
        return value if isinstance(value, PerImage) else None

    def lowered(self, value: Values | None, planes: Sequence[int]) -> tuple[object, bool]:
        return (None, False) if value is None else _planes_values(value, planes)


class _WarpMatrix(_Argument):
    """A 2x3 (affine) or 3x3 (perspective) matrix, or `fkl.per_image(matrices)`, one per image; finite. Whether
    it is affine or perspective is structure, its numbers are values."""

    RUNTIME = True

    def read(self, op: str, given: object) -> tuple[float, ...] | PerImage:
        if not isinstance(given, PerImage):
            return _matrix(op, given, (6, 9))
        count = given.check(op, (6, 9), "a 2x3 or 3x3 matrix")
        for row in given.rows:
            value_rules.matrix_numbers(f"{op}:", row, (count,))  # finite
        return given

    def structure(self, value: tuple[float, ...] | PerImage) -> tuple[object, ...]:
        return (_warp_kind(value), *_per_image_mark(value))

    def value_key(self, value: tuple[float, ...] | PerImage) -> object:
        return exact_key(value) if type(value) is tuple else None

    def per_image(self, value: tuple[float, ...] | PerImage) -> PerImage | None:
        return value if isinstance(value, PerImage) else None


def _warp_kind(matrix: tuple[float, ...] | PerImage) -> str:
    """ "affine" (2x3) or "perspective" (3x3), as WarpOp's kind says it."""
    count = len(matrix.rows[0]) if isinstance(matrix, PerImage) else len(matrix)
    return "affine" if count == 6 else "perspective"


def _only_argument(
    op: str, parameter: str, given: tuple[object, ...], named: dict[str, object], default: object
) -> object:
    """The one argument of a descriptor, given by position or by name, else `default` (inspect's empty: none)."""
    if len(given) + len(named) > 1 or (named and parameter not in named):
        shown = ", ".join([*map(repr, given), *(f"{k}={v!r}" for k, v in named.items())])
        raise TypeError(f"{op}() takes one argument, {parameter}; got {shown}")
    if given:
        return given[0]
    if named:
        return named[parameter]
    if default is inspect.Parameter.empty:
        raise TypeError(f"{op}() missing its argument {parameter!r}")
    return default


FieldT = TypeVar("FieldT")


class Field(Generic[FieldT]):
    """A field of a declared descriptor (Declared), as IRDL's prop_def is an op's: the kind of argument that
    reads it, the parameters it is read from (its own name; Resize's size reads `w` and `h`), its default, and
    how it reaches the IR op's constructor (by position, or as keyword `ir`). The value lives in the
    instance's dict (the field is a non-data descriptor, so reading it costs a plain attribute's lookup)."""

    def __init__(
        self, kind: _Argument, *parameters: str, default: object = inspect.Parameter.empty, ir: str | None = None
    ):
        self.kind, self.parameters, self.default, self.ir = kind, parameters, default, ir
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.parameters = self.parameters or (name,)

    @overload
    def __get__(self, instance: None, owner: type) -> Field[FieldT]: ...
    @overload
    def __get__(self, instance: object, owner: type) -> FieldT: ...
    def __get__(self, instance: object, owner: type) -> Field[FieldT] | FieldT:
        if instance is None:
            return self
        raise AttributeError(f"{owner.__name__}.{self.name} is not set")  # __init__ sets every field


class Declared(Op):
    """A descriptor declared by its fields, like an ODS op by its arguments: `size = Field(_OutputSize(), "w",
    "h")`. From them come its signature, its __init__ (each field read by its kind, then `check` for a rule
    between fields), its lowering (`IR_OP(x, *fields)`, per_plane when a field holds per-image rows), its
    structure (the fields that compile: a runtime value adds only what its kind says is structure), its value
    key and runtime slots (slot rule -> field: SLOTS, else the one runtime field) and its per-image rows. An op
    adds what only it knows (a geometry op's out_sizes) as methods."""

    DECLARED: ClassVar[tuple[Field[Any], ...]] = ()
    SLOTS: ClassVar[dict[str, str]] = {}
    IR_OP: ClassVar[Any]
    _VARIADIC: ClassVar[bool] = False
    # (field name, kind) of a slot rule; not Field objects, which an instance's lookup would take for its fields
    _SLOT_FIELDS: ClassVar[dict[str, tuple[str, _Argument]]] = {}
    _SLOT_FIELD: ClassVar[tuple[str, _Argument] | None] = None  # the slot of any rule not in SLOTS

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        own = [value for value in vars(cls).values() if isinstance(value, Field)]
        if not own:
            return
        fields: tuple[Field[Any], ...] = (*cls.DECLARED, *own)
        cls.DECLARED = fields
        cls._set_fields(tuple(field.name for field in fields))
        cls.RUNTIME_VALUES = any(field.kind.RUNTIME for field in fields)
        cls._VARIADIC = fields[0].kind.VARIADIC
        cls.__init__ = Declared.__init__  # the first instance makes this class's methods (not its base's)
        by_name = {field.name: (field.name, field.kind) for field in fields}
        runtime = [by_name[field.name] for field in fields if field.kind.RUNTIME]
        cls._SLOT_FIELDS = {rule: by_name[name] for rule, name in cls.SLOTS.items()}
        cls._SLOT_FIELD = runtime[0] if len(runtime) == 1 else None
        how = inspect.Parameter.VAR_POSITIONAL if cls._VARIADIC else inspect.Parameter.POSITIONAL_OR_KEYWORD
        empty = inspect.Parameter.empty
        cls.__signature__ = inspect.Signature(  # help() shows Resize(w, h, interp='linear', ...)
            [
                inspect.Parameter(name, how, default=field.default if name == field.parameters[-1] else empty)
                for field in fields
                for name in field.parameters
            ]
        )

    def __init__(self, *given: object, **named: object) -> None:
        # The first instance makes its class's own __init__, structure and value_key from the fields, as
        # @dataclass makes its methods but on first use (a process compiles only the descriptors it makes):
        # Python binds the arguments, and a new pipeline reads each field in one call, with no loop over them.
        cls = type(self)
        for name, method in cls._made_methods().items():
            current = getattr(cls, name)
            if current is getattr(Declared, name) or getattr(current, "_made", False):  # an op's own method stays
                setattr(cls, name, method)
        cls.__init__(self, *given, **named)

    @classmethod
    def _made_methods(cls) -> dict[str, Callable[..., Any]]:
        namespace: dict[str, Any] = {"_set": object.__setattr__, "_located": _user_location, "_op": cls.__name__}
        parameters: list[str] = []
        init: list[str] = []
        shown: list[str] = [repr(cls.__qualname__)]  # the structure: compile-time fields whole, runtime ones' parts
        keys: list[str] = []  # the value key: the runtime fields'
        for i, field in enumerate(cls.DECLARED):
            kind, value = field.kind, f"d[{field.name!r}]"
            namespace |= {f"_read{i}": kind.read, f"_default{i}": field.default}
            namespace |= {f"_structure{i}": kind.structure, f"_key{i}": kind.value_key}
            if cls._VARIADIC:
                parameters.append(f"*{field.parameters[0]}")
            else:
                last = field.parameters[-1]
                missing = field.default is inspect.Parameter.empty
                parameters += [p if missing or p != last else f"{p}=_default{i}" for p in field.parameters]
            init.append(f"    _set(self, {field.name!r}, _read{i}(_op, {', '.join(field.parameters)}))")
            if not kind.RUNTIME:
                shown.append(value)
            elif type(kind).structure is not _Argument.structure:
                shown.append(f"*_structure{i}({value})")
            if kind.RUNTIME:
                keys.append(f"_key{i}({value})")
        if cls.check is not Declared.check:
            init.append("    self.check()")
        init.append("    _set(self, 'location', _located())")
        source = [
            f"def __init__(self, {', '.join(parameters)}):",
            *init,
            "def structure(self):",
            "    d = self.__dict__",
            f"    return ({', '.join(shown)},)" if cls.RUNTIME_VALUES else "    return self.description()",
            "def value_key(self):",
            "    d = self.__dict__",
            *(
                [f"    keys = ({', '.join(keys)},)", "    return None if None in keys else keys"]
                if keys
                else ["    return None"]
            ),
        ]
        exec("\n".join(source), namespace)
        methods = {name: namespace[name] for name in ("__init__", "structure", "value_key")}
        for name, method in methods.items():
            method.__qualname__ = f"{cls.__qualname__}.{name}"
            method._made = True  # a subclass with fields of its own makes its own
        return methods

    def check(self) -> None:
        """A rule between fields (each field's own was checked as it was read)."""

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self.lower_plane(b, x, range(1))

    def lower_plane(self, b: Builder, x: SSAValue, planes: Sequence[int]) -> SSAValue:
        positional: list[object] = []
        keywords: dict[str, object] = {}
        for field in self.DECLARED:
            argument, per_plane = field.kind.lowered(self.__dict__[field.name], planes)
            if per_plane:
                keywords["per_plane"] = True
            if field.ir is None:
                positional.append(argument)
            else:
                keywords[field.ir] = argument
        return self._place(b, self.IR_OP(x, *positional, **keywords))

    def per_image(self) -> PerImage | None:
        values = self.__dict__
        return next((rows for f in self.DECLARED if (rows := f.kind.per_image(values[f.name])) is not None), None)

    # structure() and value_key() are made with __init__ (Declared._made_methods)

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        found = self._SLOT_FIELDS.get(rule) or self._SLOT_FIELD
        assert found is not None, f"{type(self).__name__} has no slot {rule!r}"
        name, kind = found
        return kind.slot(op_name, self.__dict__[name], dtype, channels, count)


def one_argument(ir_class: str, field: str, kind: _Argument) -> type[Declared]:
    """The descriptor of an op of one argument of `kind`, held in `field`: `Discard = one_argument("DiscardOp",
    "keep_n", _ChannelCount())`, used as `Discard(2)`; help() shows `Discard(keep_n)`."""
    return _derived(Declared, ir_class, **{field: Field(kind)})


Discard = one_argument("DiscardOp", "keep_n", _ChannelCount())
AddLast = one_argument("AddLastOp", "value", _AppendedNumber())
VectorReorder = one_argument("VectorReorderOp", "indices", _ChannelIndices())
VectorReorderRT = one_argument("VectorReorderRTOp", "indices", _RuntimeChannelIndices())
MxVFloat3 = one_argument("MxVFloat3Op", "matrix", _Matrix3x3())


class Saturate(Declared):
    """Clamp each channel to [lo, hi] in the chain type (NaN passes through); lo and hi are one
    value or one per channel, or `fkl.per_image(rows)` (one pair per image)."""

    IR_OP = IrClass("SaturateOp")
    lo = Field(_ChannelValues())
    hi = Field(_ChannelValues())

    def check(self) -> None:
        low, high = self.lo, self.hi
        if isinstance(low, PerImage) and isinstance(high, PerImage) and len(low) != len(high):
            raise ValueError(f"{type(self).__name__}: per_image gives {len(low)} rows of lo and {len(high)} of hi")
        for z in range(len(self._rows())):
            self._bounds(z)

    def _rows(self) -> PerImage | tuple[None]:
        per_image = self.per_image()
        return (None,) if per_image is None else per_image

    def _bounds(self, plane: int | None) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(lo, hi) of `plane` (None: the bounds every plane shares), of one length, lo <= hi."""
        name = type(self).__name__
        low = self.lo.row(plane or 0) if isinstance(self.lo, PerImage) else self.lo
        high = self.hi.row(plane or 0) if isinstance(self.hi, PerImage) else self.hi
        if len(low) != len(high):
            value_rules.bounds_lengths(f"{name}:", low, high)
            n = max(len(low), len(high))
            low, high = (low * n if len(low) == 1 else low), (high * n if len(high) == 1 else high)
        value_rules.bounds_ordered(f"{name}:", low, high)
        return low, high

    def lower_plane(self, b: Builder, x: SSAValue, planes: Sequence[int]) -> SSAValue:
        # one IR property of (lo, hi) pairs
        if self.per_image() is None:
            return self._place(b, self.IR_OP(x, self._bounds(None)))
        return self._place(b, self.IR_OP(x, [self._bounds(z) for z in planes], per_plane=True))

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """The C lower bounds, then the C upper ones, each fitting the chain (lo <= hi: checked at __init__);
        per-image bounds so for each plane."""
        rows = self._rows()
        planes = count // (2 * channels) if self.per_image() is not None else 1
        slot: list[float] = []
        for z in range(planes):
            lo, hi = self._bounds(z if z < len(rows) else 0)
            value_rules.values_fit_chain(op_name, lo, channels, dtype)
            value_rules.values_fit_chain(op_name, hi, channels, dtype)
            slot += [*value_rules.per_element(lo, channels), *value_rules.per_element(hi, channels)]
        return tuple(slot)


# --------------------------------------------------------------------------------------------
# Control
# --------------------------------------------------------------------------------------------


class _LoopBody(_Argument):
    """StaticLoop's op: Add ... Min with one value for every image; its value is a runtime value (the loop's
    slot), its class structure."""

    RUNTIME = True

    def read(self, op: str, given: object) -> _BinaryValue:
        if not isinstance(given, _BinaryValue):
            raise TypeError(f"{op}: the op must be Add, Sub, Mul, Div, Max or Min, got {given!r}")
        if given.per_image() is not None:
            raise ValueError(f"{op}: a loop body takes one value for every image, not per_image values")
        return given

    def structure(self, value: _BinaryValue) -> tuple[object, ...]:
        return (value.structure(),)

    def value_key(self, value: _BinaryValue) -> object:
        return value.value_key()


class _LoopCount(_Argument):
    """How many times StaticLoop applies its op (value_rules.loop_count): compile-time, the kernel unrolls it."""

    def read(self, op: str, given: object) -> int:
        count = integer(op, given, "n")
        value_rules.loop_count(f"{op}:", count)
        return count


class StaticLoop(Declared):
    """Apply the binary op (Add, Sub, Mul, Div, Max or Min with its value) `n` times; `n` is
    compile-time and the value is one parameter slot. `StaticLoop(Mul(2.0), 3)` is x * 8."""

    IR_OP = IrClass("StaticLoopOp")
    body = Field(_LoopBody(), "op")
    count = Field(_LoopCount(), "n")

    def lower_plane(self, b: Builder, x: SSAValue, planes: Sequence[int]) -> SSAValue:
        # StaticLoopOp takes the body's word and values (one for every plane)
        body = type(self.body).IR_OP.name.removeprefix("fkl.")
        assert not isinstance(self.body.values, PerImage)  # refused at __init__
        return self._place(b, self.IR_OP(x, body, self.body.values, self.count))

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """The body's slot (`rule`: its word, add ... min)."""
        return self.body.runtime_slot(op_name, rule, dtype, channels, count)


# --------------------------------------------------------------------------------------------
# Geometry
# --------------------------------------------------------------------------------------------


def _output_size(op: str, w: object, h: object) -> Size:
    """The (w, h) an op makes (value_rules.output_size: positive, int32), each an integer as values.integer
    reads one."""
    if type(w) is int and type(h) is int and 0 < w <= I32_MAX and 0 < h <= I32_MAX:
        return w, h  # the common case in one test: a Resize is made every frame
    size = (integer(op, w, "width"), integer(op, h, "height"))
    value_rules.output_size(f"{op}:", *size)
    return size


def _rect(op: str, given: object) -> Rect:
    r = rect_ints(op, given)
    x, y, w, h = r
    if 0 <= x and 0 <= y and 0 < w and 0 < h and x + w <= I32_MAX and y + h <= I32_MAX:
        return r  # what check_span admits, in one test: a detector's boxes arrive every frame
    value_rules.rect_extent(f"{op}:", x, y, w, h)
    return (x, y, w, h)


def _rect_table(op: str, listed: Sequence[object]) -> tuple[tuple[Rect, ...], tuple[int, int, int, int] | None]:
    """A list of rects, each checked as _rect checks it, and their bounding box (left, top, right, bottom) when it
    comes for free: a detector's per-frame (x, y, w, h) tuples (or the rows of an (N, 4) integer array) of ints in
    one loop without a call per rect (a list of 64 arrives every frame); anything else rect by rect."""
    left = top = I32_MAX
    right = bottom = 0
    rows = False  # lists among them (an array's rows): kept as tuples
    for r in listed:
        if type(r) is not tuple:
            if type(r) is not list:
                break
            rows = True
        if len(r) != 4:  # pyright: ignore[reportUnknownArgumentType]
            break
        x, y, w, h = r  # pyright: ignore[reportUnknownVariableType]
        if not (type(x) is int and type(y) is int and type(w) is int and type(h) is int and 0 < w and 0 < h):
            break
        x2, y2 = x + w, y + h
        if x < 0 or y < 0 or x2 > I32_MAX or y2 > I32_MAX:
            break
        if x < left:
            left = x
        if y < top:
            top = y
        if x2 > right:
            right = x2
        if y2 > bottom:
            bottom = y2
    else:
        rects = tuple(map(tuple, cast(list[list[int]], listed))) if rows else tuple(listed)
        return rects, (left, top, right, bottom)  # pyright: ignore[reportReturnType]
    return tuple([_rect(op, r) for r in listed]), None


class Geometry(Op):
    """Geometry ops fold into the read; they decide the output size."""

    # Its output planes have one size whatever the input's (Resize, Warping): a Crop list before it makes
    # planes of one size from rects of any sizes
    FIXED_SIZE: ClassVar[bool] = False

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        """Per output plane (w, h), given per input plane (w, h); ValueError when out of bounds."""
        raise NotImplementedError


def recipe_values(recipe: Sequence[RecipeStep], descriptors: Sequence[Op]) -> dict[str, tuple[float, ...]]:
    """Each slot of a plan's recipe (lowering.runtime_values) filled by its descriptor (the step's index in
    `descriptors`), checked as the IR checks it: a ValueError at the descriptor's line, in the IR's words."""
    values: dict[str, tuple[float, ...]] = {}
    for slot, index, op_name, rule, dtype, channels, count in recipe:
        op = descriptors[index]
        try:
            values[slot] = op.runtime_slot(op_name, rule, dtype, channels, count)
        except ValueError as e:
            filename, line = op.location
            raise ValueError(f"{filename}:{line}:1: error: {e}") from None
    return values


def check_geometry_first(ops: Sequence[object], where: str, after: str, caller: str = "compose") -> None:
    """TypeError (from `caller`) unless each of `ops` (the ops after a read) is a descriptor; ValueError naming
    the op (`where` with {op}) when a geometry op follows an element op: geometry folds into the read (`after`
    names it, "TensorRead")."""
    after_read = True
    for op in ops:
        if not isinstance(op, Op):
            raise TypeError(f"{caller}: {op!r} is not an fklir op")
        if isinstance(op, Geometry) and not after_read:
            raise ValueError(
                f"{where.format(op=op.op_name)} must come right after {after} or another geometry op "
                "(geometry folds into the read)"
            )
        after_read = after_read and isinstance(op, Geometry)


def geometry_of(ops: Sequence[Op]) -> list[Geometry]:
    """The geometry ops of a run of ops (a chain's, a branch's)."""
    return [op for op in ops if isinstance(op, Geometry)]


def out_sizes(geometry: Sequence[Geometry], sizes: list[Size]) -> list[Size]:
    """Per output plane (w, h) of a run of geometry on input planes of `sizes` (its ops' checks on the way)."""
    for op in geometry:
        sizes = op.out_sizes(sizes)
    return sizes


def check_one_size(sizes: list[Size]) -> list[Size]:
    """`sizes`, unless a Crop list's rects gave its planes different sizes (one output holds one size)."""
    if sizes and sizes.count(sizes[0]) != len(sizes):
        raise ValueError(
            f"Crop: the rects give planes of different sizes {sorted(set(sizes))}; put a Resize after the Crop"
        )
    return sizes


class BorderedSizes(list[Size]):
    """Plane sizes of an image seen through a BorderReader: the next op may sample outside them."""


def check_empty_source(geometry: Sequence[Geometry], size: Size) -> None:
    """ValueError when the geometry makes pixels out of an empty (w, h) image: only a constant border
    can (every pixel is its value, and nothing is read); Resize, Warping and Crop have no pixel to
    sample (cv2.resize refuses too) and the other borders none to repeat (numpy.pad refuses too)."""
    if size[0] and size[1]:
        return
    sizes: list[Size] = [size]
    border: BorderReader | None = None
    for op in geometry:
        made = op.out_sizes(sizes)
        if isinstance(op, BorderReader):
            border = op
        elif not all(w and h for w, h in sizes) and any(w and h for w, h in made):
            (sw, sh), (dw, dh) = sizes[0], made[0]
            if border is None or isinstance(op, Resize):
                raise ValueError(f"{op.op_name}: cannot make a {dw}x{dh} image from the empty {sw}x{sh} image")
            if border.mode != "constant":
                raise ValueError(
                    f"BorderReader({border.mode!r}): cannot extend the empty {sw}x{sh} image to {dw}x{dh} "
                    "(there is no pixel to repeat); only a constant border can"
                )
        sizes = made


class BorderReader(Declared, Geometry):
    """Defines the image at every coordinate, however far outside: "constant" (`value`, one or one
    per channel, or `fkl.per_image(rows)`), "replicate", "reflect", "reflect101" or "wrap" (numpy.pad's
    constant, edge, symmetric, reflect, wrap; OpenCV's constants too: cv2.BORDER_REFLECT_101, ...). A Crop
    after it may leave the image; a Warping after it reads it."""

    IR_OP = IrClass("BorderOp")
    mode = Field(_Choice(border_mode))
    values = Field(_ChannelValues(), "value", default=0.0)

    def check(self) -> None:
        if self.mode != "constant":  # only a constant border has a value
            object.__setattr__(self, "values", None)

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        return BorderedSizes(sizes)


class Crop(Geometry):
    """`Crop(x, y, w, h)` (every plane) or `Crop([rects])` (one output plane per rect). Right after a
    BorderReader a rect may leave the image (negative x, y included); otherwise it must fit."""

    rects: tuple[Rect, ...]
    batched: bool

    def __init__(self, x: object, y: object = None, w: object = None, h: object = None):
        """`Crop(x, y, w, h)`, `Crop((x, y, w, h))` (cv2.boundingRect's tuple), `Crop([rects])` or an
        (N, 4) integer array of rects."""
        name = type(self).__name__
        if any(v is not None for v in (y, w, h)):
            if any(v is None for v in (y, w, h)):
                raise TypeError(f"{name}: give x, y, w and h, or one (x, y, w, h); got {(x, y, w, h)!r}")
            listed = None
            given: object = (x, y, w, h)
        else:
            listed = rect_list(name, x)
            given = x
        batched = listed is not None
        rects, bounds = _rect_table(name, listed) if listed is not None else ((_rect(name, given),), None)
        object.__setattr__(self, "rects", rects)
        if bounds is not None:
            object.__setattr__(self, "_bounds", bounds)
        object.__setattr__(self, "batched", batched)
        object.__setattr__(self, "location", _user_location())

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        from fklir.dialects import fkl

        return self._place(b, fkl.CropOp(x, self.rects))

    def structure(self) -> tuple[object, ...]:
        return (type(self).__qualname__, self.batched)  # the rects and their count are values

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """A graph's crop (rule "rects"): its rect, on every plane (a chain's rects are packed by Pipeline._values)."""
        return tuple(float(v) for v in self.flat_rects(count))

    def lower_capacity(self, b: Builder, x: SSAValue, capacity: int) -> SSAValue:
        """A list of rects crops `capacity` planes (a graph's kernel serves every count up to it): the planes past
        the list repeat its first rect; a call launches only its own."""
        from fklir.dialects import fkl

        rects = [*self.rects, *[self.rects[0]] * (capacity - len(self.rects))]
        return self._place(b, fkl.CropOp(x, rects))

    def lower_rect(self, b: Builder, x: SSAValue, index: int) -> SSAValue:
        """Only rect `index`: the per-rect chain that horizontal batching merges back (a one-rect crop
        in a chain with a list of rects crops every plane alike)."""
        from fklir.dialects import fkl

        return self._place(b, fkl.CropOp(x, [self.rects[index if len(self.rects) > 1 else 0]]))

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        n = len(self.rects)
        if n > 1 and len(sizes) not in (1, n):
            raise ValueError(f"Crop: {n} rects for {len(sizes)} input planes (give 1, or one per plane)")
        if not sizes:  # a batch of no images: no planes to crop
            return []
        bordered = isinstance(sizes, BorderedSizes)
        if len(sizes) == 1 and (bordered or self.inside(*sizes[0])):  # every rect of one image at once
            return [(rw, rh) for _, _, rw, rh in self.rects]
        planes = max(n, len(sizes))
        out: list[Size] = []
        for z in range(planes):
            rx, ry, rw, rh = self.rects[z if n > 1 else 0]
            sw, sh = sizes[z if len(sizes) > 1 else 0]
            if not bordered and (rx < 0 or ry < 0 or rx + rw > sw or ry + rh > sh):
                raise ValueError(
                    f"Crop: rect [{rx}, {ry}, {rw}, {rh}] leaves the {sw}x{sh} image "
                    f"(0 <= x, 0 <= y, x + w <= {sw}, "
                    f"y + h <= {sh}); put a BorderReader before the Crop to read outside"
                )
            out.append((rw, rh))
        return out

    def inside(self, width: int, height: int) -> bool:
        """Whether every rect lies inside a width x height image (the rects' bounding box, found once)."""
        bounds = self.__dict__.get("_bounds")
        if bounds is None:
            rects = self.rects
            bounds = (
                min([r[0] for r in rects]),
                min([r[1] for r in rects]),
                max([r[0] + r[2] for r in rects]),
                max([r[1] + r[3] for r in rects]),
            )
            object.__setattr__(self, "_bounds", bounds)
        left, top, right, bottom = bounds
        return left >= 0 and top >= 0 and right <= width and bottom <= height

    def flat_rects(self, count: int) -> tuple[int, ...]:
        """x, y, w, h of `count` planes' rects in a row (a rect slot's values; one rect repeats on every plane)."""
        flat = tuple(itertools.chain.from_iterable(self.rects))
        return flat * count if len(self.rects) == 1 else flat

    def rect_bytes(self, count: int) -> bytes:
        """flat_rects as the int32s of a rect slot (fkl::Rect's x, y, w, h), packed in one step: a frame's new
        rect list is copied into its pipeline's values block as it is."""
        packed = b"".join(itertools.starmap(_PACK_RECT, self.rects))
        return packed * count if len(self.rects) == 1 else packed


class Resize(Declared, Geometry):
    """Resize to (w, h); linear (OpenCV INTER_LINEAR, float32 out) or nearest (keeps the type).

    aspect_ratio "preserve" (centred), "preserve_left" (at x = 0) or "preserve_even" (content sizes
    rounded down to even) keeps the source's proportions and fills the rest with `background`
    (required; one value or one per channel, in the output type); "ignore" stretches.
    """

    IR_OP = IrClass("ResizeOp")
    size = Field(_OutputSize(), "w", "h")
    interp = Field(_Choice(interpolation), default="linear")
    aspect_ratio = Field(_Choice(), default="ignore", ir="aspect_ratio")
    background = Field(_ChannelValues(optional=True), default=None, ir="background")
    SLOTS: ClassVar[dict[str, str]] = {"size": "size", "background": "background"}

    def check(self) -> None:
        value_rules.resize_options(
            f"{type(self).__name__}:", self.interp, self.aspect_ratio, self.background is not None
        )

    FIXED_SIZE = True

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        return [self.size] * len(sizes)


class Warping(Declared, Geometry):
    """Bilinear warp to (w, h) by `M`, 2x3 (cv2.warpAffine) or 3x3 (cv2.warpPerspective), which maps
    source to destination as in OpenCV; inverse=True gives the destination → source map directly.
    `M` may be `fkl.per_image(matrices)`, one per image ((B, 2, 3) or (B, 3, 3)). Taps outside the source
    read the preceding BorderReader, else constant 0. Output float32."""

    IR_OP = IrClass("WarpOp")
    matrix = Field(_WarpMatrix(), "M")
    size = Field(_OutputSize(), "w", "h")
    inverse = Field(_Flag("inverse"), default=False)
    SLOTS: ClassVar[dict[str, str]] = {"size": "size", "warp_matrix": "matrix"}

    def check(self) -> None:
        if self.inverse:
            return
        for matrix in self.matrix.rows if isinstance(self.matrix, PerImage) else (self.matrix,):
            try:
                invert_warp_matrix(matrix)
            except ValueError as e:  # in the words of hoisting's inversion (the IR's error)
                raise ValueError(f"{type(self).__name__}: {e}") from None

    @property
    def kind(self) -> str:
        return _warp_kind(self.matrix)

    def lower_plane(self, b: Builder, x: SSAValue, planes: Sequence[int]) -> SSAValue:
        # WarpOp takes the kind before the matrix
        if not isinstance(self.matrix, PerImage):
            return self._place(b, self.IR_OP(x, self.kind, self.matrix, self.size, self.inverse))
        matrices = [v for z in planes for v in self.matrix.row(z)]
        return self._place(b, self.IR_OP(x, self.kind, matrices, self.size, self.inverse, per_plane=True))

    FIXED_SIZE = True

    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        return [self.size] * len(sizes)

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """`rule` "size": (w, h); "warp_matrix": the destination -> source map, inverted in double as hoisting
        does (per image: one per plane). Both were checked at __init__."""
        if rule != "warp_matrix":
            return super().runtime_slot(op_name, rule, dtype, channels, count)
        per_matrix = WARP_KINDS[self.kind]
        matrices = self.matrix.slot(count, per_matrix) if isinstance(self.matrix, PerImage) else self.matrix
        slot: list[float] = []
        for at in range(0, len(matrices), per_matrix):
            matrix = tuple(matrices[at : at + per_matrix])
            slot += matrix if self.inverse else invert_warp_matrix(matrix)
        return tuple(slot)


# --------------------------------------------------------------------------------------------
# The ops that take one word, each one record (dialects/word_declarations.py)
# --------------------------------------------------------------------------------------------


def _word_argument(op: str, declared: WordDeclaration, given: tuple[object, ...], named: dict[str, object]) -> object:
    """The one argument of a word op's descriptor, given by position or by its name, else the record's default."""
    default = inspect.Parameter.empty if declared.default is None else declared.default
    return _only_argument(op, declared.parameter or declared.word, given, named, default)


class _Word(Op):
    """A word op's descriptor: its one field, the word its record names, read by the record's spelling (cv2's
    constants too); it lowers to the record's IR class."""

    DECLARATION: ClassVar[WordDeclaration]
    IR_OP: ClassVar[Any]

    def __init__(self, *given: object, **named: object) -> None:
        declared, name = self.DECLARATION, type(self).__name__
        word = _word_argument(name, declared, given, named)
        if declared.spelling:
            word = getattr(spellings, declared.spelling)(name, word)
        else:
            value_rules.one_of(f"{name}:", declared.word, word, declared.choices)
        object.__setattr__(self, declared.word, word)
        object.__setattr__(self, "location", _user_location())

    @property
    def word(self) -> str:
        return getattr(self, self.DECLARATION.word)

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        return self._place(b, self.IR_OP(x, self.word))


class _GeometryWord(_Word, Geometry):
    def out_sizes(self, sizes: list[Size]) -> list[Size]:
        if self.word in self.DECLARATION.transposing:
            return [(h, w) for w, h in sizes]
        return list(sizes)


def _word_descriptor(declared: WordDeclaration) -> type[_Word]:
    parameter = declared.parameter or declared.word
    default = inspect.Parameter.empty if declared.default is None else declared.default
    argument = inspect.Parameter(parameter, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default)
    namespace = {
        "__module__": __name__,
        "__qualname__": declared.name,
        "__doc__": declared.doc,
        "__annotations__": {declared.word: "str"},
        "__signature__": inspect.Signature([argument]),  # help() shows Flip(mode='horizontal')
        "DECLARATION": declared,
        "IR_OP": IrClass(f"{declared.name}Op"),
    }
    base: type[_Word] = _GeometryWord if declared.geometry else _Word
    return cast(type[_Word], type(declared.name, (base,), namespace))


# one per record of dialects/word_declarations.py, in its order
Flip, Rotate, Deinterlace, VectorReduce, ColorConversion = (_word_descriptor(d) for d in WORD_DECLARATIONS)


# --------------------------------------------------------------------------------------------
# DAG pipelines (SPEC §8): branches, the ops that join them, writes along the way
# --------------------------------------------------------------------------------------------


class Input(Op):
    """`Input(i, *ops)`: a branch that reads call argument i (0: the main chain's input, read again) through
    its own read-side geometry (BorderReader, Crop, Resize, Warping, ...: they fold into its read) and element
    ops. It is the operand of Add ... Min, AbsDiff, Equal (`Sub(Input(1))`), Blend and Composite.

    `Input(i, *ops, source=x)` binds `x` to argument i (bound compose, GPU target), as `TensorRead(x)` binds
    argument 0: a call default, never part of the cache key."""

    index: int
    ops: tuple[Op, ...]
    binding: object

    def __init__(self, index: object, *ops: Op, source: object = None):
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise ValueError(f"Input: the call argument index must be an int >= 0, got {index!r}")
        for op in ops:
            if not isinstance(op, Op) or isinstance(op, Read | Write | Input | MidWrite):
                raise TypeError(
                    f"Input: a branch holds geometry and element ops (its read is the call argument), not {op!r}"
                )
        object.__setattr__(self, "index", index)
        object.__setattr__(self, "ops", tuple(ops))
        object.__setattr__(self, "binding", source)
        object.__setattr__(self, "location", _user_location())

    def __repr__(self) -> str:
        return f"Input({', '.join(repr(v) for v in (self.index, *self.ops))})"

    def structure(self) -> tuple[object, ...]:
        return ("Input", self.index, tuple(op.structure() for op in self.ops))

    def description(self) -> tuple[object, ...]:
        return ("Input", self.index, tuple(op.description() for op in self.ops))


class Joining(Op):
    """Base of the ops that take branches (fkl.Input) as operands: each lowers with its branches' values."""

    def branches(self) -> tuple[Input, ...]:
        raise NotImplementedError

    def lower_join(self, b: Builder, x: SSAValue, operands: Sequence[SSAValue]) -> SSAValue:
        """The op of the chain's value `x` and its branches' values `operands` (in branches() order)."""
        raise NotImplementedError

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        raise ValueError(f"{self.op_name} joins a branch: compose builds a graph for it")

    def structure(self) -> tuple[object, ...]:
        return (type(self).__qualname__, tuple(branch.structure() for branch in self.branches()))


class _Join(Joining):
    """`Add(Input(...))` ... `Min`, `AbsDiff`, `Equal` of a branch: the chain's value `op` the branch's, per
    element (fkl.join); both have one element type, channel count and size."""

    kind: str
    branch: Input

    def __init__(self, op_name: str, branch: Input):
        kind = op_name.lower()
        if kind not in JOIN_KINDS:
            names = ", ".join(JOIN_KINDS.values())
            raise TypeError(f"{op_name}: takes a value, not a branch (fkl.Input); the ops that join one are {names}")
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "branch", branch)
        object.__setattr__(self, "location", _user_location())

    @property
    def op_name(self) -> str:
        return JOIN_KINDS[self.kind]

    def __repr__(self) -> str:
        return f"{self.op_name}({self.branch!r})"

    def branches(self) -> tuple[Input, ...]:
        return (self.branch,)

    def structure(self) -> tuple[object, ...]:
        return (self.op_name, self.branch.structure())

    def lower_join(self, b: Builder, x: SSAValue, operands: Sequence[SSAValue]) -> SSAValue:
        from fklir.dialects import fkl

        return self._place(b, fkl.JoinOp(self.kind, x, operands[0]))


def _branch(op: str, what: str, value: object) -> Input:
    if not isinstance(value, Input):
        raise TypeError(f"{op}: {what} is a branch, fkl.Input(i, *ops), got {value!r}")
    return value


class Blend(Joining):
    """`Blend(branch, alpha)`: a * alpha + b * (1 - alpha) of the chain's value a and the branch's b, in
    float64, rounded once to the chain type (integers: to nearest, ties to even, saturated)."""

    branch: Input
    alpha: float

    def __init__(self, branch: object, alpha: object):
        object.__setattr__(self, "branch", _branch("Blend", "the first argument", branch))
        values = numbers("Blend", alpha, "alpha")
        value_rules.blend_alpha("Blend:", values)
        object.__setattr__(self, "alpha", values[0])
        object.__setattr__(self, "location", _user_location())

    def branches(self) -> tuple[Input, ...]:
        return (self.branch,)

    def lower_join(self, b: Builder, x: SSAValue, operands: Sequence[SSAValue]) -> SSAValue:
        from fklir.dialects import fkl

        return self._place(b, fkl.BlendOp(x, operands[0], self.alpha))

    RUNTIME_VALUES: ClassVar[bool] = True

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        return (self.alpha,)


class Composite(Joining):
    """`Composite(background, mask)`: a * m + b * (1 - m) of the chain's value a (the foreground), the
    background branch's b and the mask branch's m (cvcuda.composite's meaning: a uint8 mask is m = mask / 255;
    one channel weighs every channel), in float64, rounded once to the chain type."""

    background: Input
    mask: Input

    def __init__(self, background: object, mask: object):
        object.__setattr__(self, "background", _branch("Composite", "background", background))
        object.__setattr__(self, "mask", _branch("Composite", "mask", mask))
        object.__setattr__(self, "location", _user_location())

    def branches(self) -> tuple[Input, ...]:
        return (self.background, self.mask)

    def lower_join(self, b: Builder, x: SSAValue, operands: Sequence[SSAValue]) -> SSAValue:
        from fklir.dialects import fkl

        return self._place(b, fkl.CompositeOp(x, operands[0], operands[1]))


class MidWrite(Op):
    """`MidWrite()`: writes the chain's current value (packed, as TensorWrite) as an extra output and goes on;
    a call returns its outputs in chain order. `MidWrite(out)` binds that output (bound compose, GPU target)."""

    WRITE: ClassVar[type[Write]] = TensorWrite
    binding: object

    def __init__(self, binding: object = None) -> None:
        object.__setattr__(self, "binding", binding)
        object.__setattr__(self, "location", _user_location())

    def lower_mid(self, b: Builder, x: SSAValue, dest: str) -> SSAValue:
        op = type(self).WRITE.IR_OP(x, dest, None)
        op.location = self.ir_location()
        b.insert(op)
        return x

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        raise ValueError(f"{self.op_name} writes an extra output: compose builds a graph for it")


class MidSplit(MidWrite):
    """`MidSplit()`: MidWrite's planar form (as TensorSplit: (C, H, W) or (B, C, H, W))."""

    WRITE = TensorSplit


def graph_descriptors(ops: Sequence[Op]) -> list[Op]:
    """A graph's descriptors in the order lower_graph lowers them (each branch's ops right before the op that
    joins it): the index of a descriptor here is its `fkl.origin` mark (frontend.lowering), which the recipe
    of runtime_values names."""
    flat: list[Op] = []
    for op in ops:
        if isinstance(op, Joining):
            for branch in op.branches():
                flat += graph_descriptors(branch.ops)
        flat.append(op)
    return flat


# The descriptors that make a composed chain a graph (SPEC §8).
GRAPH_DESCRIPTORS = (Joining, MidWrite)


# Every public descriptor by name: what `fklir` exports (fklir.__all__ and its lazy names). A new op's descriptor
# is public by being defined in this module under a name without a leading underscore.
_FAMILIES = (Op, Declared, Read, Write, Geometry, Joining)  # bases that ops derive from, not ops
PUBLIC_DESCRIPTORS: dict[str, type[Op]] = {
    name: value
    for name, value in globals().items()
    if isinstance(value, type) and issubclass(value, Op) and value not in _FAMILIES and not name.startswith("_")
}
