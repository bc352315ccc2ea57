"""The compute ops between the read's geometry and the write (the element-wise math ops are in
ops_math.py); each declares its category, ChannelWise or PixelWise, in its traits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    I64,
    DenseArrayBase,
    Float64Type,
    IntAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import IRDLOperation, operand_def, opt_prop_def, prop_def, result_def, traits_def
from xdsl.irdl.declarative_assembly_format import ParsingState, PrintingState
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from fklir import dtypes
from fklir.dialects import value_rules
from fklir.dialects.binary_declarations import BINARY_DECLARATIONS, BinaryDeclaration
from fklir.dialects.fkl.abstract_ops import (
    BinaryValueOp,
    CastLikeOp,
    TypeRuleOp,
    UnaryOp,
    arithmetic_result,
    fkl_op,
    per_element,
)
from fklir.dialects.fkl.checks import (
    check_float,
    check_integer,
    check_not_bool,
    check_one_of,
    check_same_type,
    check_values_fit_chain,
    check_values_representable,
    int32,
)
from fklir.dialects.fkl.fields import (
    check_field,
    check_value_or_slot,
    field_properties,
    field_values,
    float_array,
    int_array,
    is_per_plane,
)
from fklir.dialects.fkl.syntax import (
    TYPES,
    Int64,
    IntList,
    IntListOrSlot,
    NumberOrSlot,
    TypeSuffix,
    ValuesOrSlot,
    float_values,
    format_matrix,
    parse_int64,
    parse_number_list,
    parse_slot,
    parse_types,
    print_number_list,
    print_slot,
    print_types,
)
from fklir.dialects.fkl.traits import ChannelWise, PixelWise
from fklir.dialects.fkl.types import ImageType, known, reshaped

# ---------------------------------------------------------------------------------------------
# Arithmetic
# ---------------------------------------------------------------------------------------------


def _binary_class(declared: BinaryDeclaration) -> type[BinaryValueOp]:
    """The IRDL class of one record of dialects/binary_declarations.py."""
    namespace = {
        "__module__": __name__,
        "__qualname__": f"{declared.name}Op",
        "__doc__": declared.doc,
        "__annotations__": {"FORMULA": ClassVar[str]},  # IRDL takes unannotated attributes for op fields
        "name": declared.ir_name,
        "FORMULA": declared.formula,
    }
    return fkl_op(type(f"{declared.name}Op", (BinaryValueOp,), namespace))


AddOp, SubOp, MulOp, DivOp, MaxOp, MinOp = (_binary_class(declared) for declared in BINARY_DECLARATIONS)


# ---------------------------------------------------------------------------------------------
# Casts
# ---------------------------------------------------------------------------------------------


@fkl_op
class CastOp(CastLikeOp):
    """Cast: C conversion (float -> int truncates toward zero)."""

    name = "fkl.cast"


@fkl_op
class SaturateCastOp(CastLikeOp):
    """SaturateCast: clamp to the target range, round half to even, NaN -> 0."""

    name = "fkl.saturate_cast"


# ---------------------------------------------------------------------------------------------
# Clamps that keep the type
# ---------------------------------------------------------------------------------------------


def _bounds_array(lo: Sequence[float], hi: Sequence[float]) -> DenseArrayBase:
    """fkl.saturate's `value`: lo then hi, one side of one value broadcast to the other's length."""
    int32(value_rules.bounds_lengths, "'fkl.saturate'", lo, hi)
    lo, hi = list(lo), list(hi)
    if len(lo) != len(hi):
        n = max(len(lo), len(hi))
        lo, hi = (lo * n if len(lo) == 1 else lo), (hi * n if len(hi) == 1 else hi)
    return float_array([*lo, *hi])


class BoundsOrSlot(ValuesOrSlot):
    """`lo, hi` (each a number or a number list), held as lo then hi; after `per_plane`, one list of rows
    `lo, hi` each (the per-plane layout of fkl.saturate)."""

    def parse_values(self, parser: Parser, state: ParsingState) -> DenseArrayBase:
        if "per_plane" in state.properties:
            return super().parse_values(parser, state)
        pos = parser.pos
        lo = parse_number_list(parser)
        parser.parse_punctuation(",")
        hi = parse_number_list(parser)
        try:
            value_rules.bounds_lengths("'fkl.saturate'", lo, hi)
        except ValueError as e:
            parser.raise_error(str(e), pos, parser.pos)
        return _bounds_array(lo, hi)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        if is_per_plane(op) and not isinstance(self.slot.get(op), StringAttr):
            state.print_whitespace(printer)
            super().print_values(printer, self.values.get(op))
            return
        super().print(printer, state, op)

    def print_values(self, printer: Printer, values: Attribute | None) -> None:
        bounds = float_values(values)
        half = len(bounds) // 2
        print_number_list(printer, bounds[:half])
        printer.print_string(", ")
        print_number_list(printer, bounds[half:])


@fkl_op
class SaturateOp(TypeRuleOp):
    """Saturate(lo, hi): clamp each channel to [lo, hi] in the chain type (NaN passes through).

    `fkl.saturate %x, 0.0, 1.0 : T`, `fkl.saturate %x, [0, 0, 0], [9, 99, 255] : T`; hoisted:
    `fkl.saturate %x, param "saturate1" : T` (the slot holds the C lower bounds, then the C upper ones).
    The inline `value` holds lo then hi, both with one value or one per channel. `per_plane` (per-image
    bounds): one row per plane, each its lo then its hi, `fkl.saturate %x, per_plane [0.0, 9.0, 1.0, 8.0]`
    for planes [0, 9] and [1, 8]; its slot holds each plane's C lower then C upper bounds.
    """

    name = "fkl.saturate"
    traits = traits_def(ChannelWise(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    per_plane = opt_prop_def(UnitAttr)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (BoundsOrSlot, TypeSuffix)
    assembly_format = f"$input `,` (`per_plane` $per_plane^)? custom<BoundsOrSlot>($value, $slot) {TYPES}"

    def __init__(
        self,
        input: SSAValue,
        bounds: tuple[Sequence[float], Sequence[float]] | Sequence[tuple[Sequence[float], Sequence[float]]] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
        per_plane: bool = False,
    ):
        """`bounds`: (lo, hi); with `per_plane`, one (lo, hi) per plane."""
        if bounds is None:
            values = None
        elif per_plane:
            rows = [float_values(_bounds_array(lo, hi)) for lo, hi in bounds]  # pyright: ignore[reportArgumentType]
            values = float_array([v for row in rows for v in row])
        else:
            values = _bounds_array(*bounds)  # pyright: ignore[reportArgumentType]
        properties = field_properties("value", values, slot)
        if per_plane:
            properties["per_plane"] = UnitAttr()
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @property
    def bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(lo, hi) as written inline (empty after hoisting)."""
        values = field_values(self) or ()
        half = len(values) // 2
        return tuple(values[:half]), tuple(values[half:])

    def result_for(self, in_type: ImageType) -> ImageType:
        check_not_bool(self, in_type, "clamps")
        for row in self.value_rows(in_type):  # none once hoisted: hoisted bounds were checked before
            lo, hi = row[: len(row) // 2], row[len(row) // 2 :]
            check_values_fit_chain(self.name, lo, in_type.channels.data, in_type.dtype)
            check_values_fit_chain(self.name, hi, in_type.channels.data, in_type.dtype)
            if is_per_plane(self) and (len(row) % 2 or any(a > b for a, b in zip(lo, hi, strict=True))):
                raise VerifyException(f"'{self.name}' needs per-plane rows of lo then hi, lo <= hi; got {list(row)}")
        return in_type

    def verify_(self) -> None:
        check_field(self, "value")
        check_same_type(self, self.input.type, self.result.type)
        if self.value is not None and not is_per_plane(self):
            lo, hi = self.bounds
            if not lo or len(self.value.get_values()) % 2:
                raise VerifyException(
                    f"'{self.name}' needs lower and upper bounds of one length, got {list(lo)} and {list(hi)}"
                )
            int32(value_rules.bounds_ordered, f"'{self.name}'", lo, hi)
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        """The C lower bounds, then the C upper ones, in the chain's type."""
        return dtypes.BY_NAME[in_type.dtype].slot_kind, 2 * in_type.channels.data

    def slot_values(self, field: str, count: int) -> list[float] | list[int]:
        if is_per_plane(self) and (in_type := self.known_input()) is not None:
            rows = self.value_rows(in_type)
            half = count // len(rows) // 2
            return [v for row in rows for side in _halves(row) for v in per_element(side, half)]
        lo, hi = self.bounds
        return per_element(lo, count // 2) + per_element(hi, count // 2)


def _halves(row: Sequence[float]) -> tuple[Sequence[float], Sequence[float]]:
    return row[: len(row) // 2], row[len(row) // 2 :]


@fkl_op
class SaturateFloatOp(UnaryOp):
    """SaturateFloat: clamp a float chain to [0, 1] (NaN passes through). `fkl.saturate_float %x : T`"""

    name = "fkl.saturate_float"
    traits = traits_def(ChannelWise(), Pure())

    def result_for(self, in_type: ImageType) -> ImageType:
        check_float(self, in_type)
        return in_type


# ---------------------------------------------------------------------------------------------
# Logic
# ---------------------------------------------------------------------------------------------


@fkl_op
class IsEvenOp(UnaryOp):
    """IsEven: integer -> bool per channel, x mod 2 == 0. `fkl.is_even %x : T -> T2`"""

    name = "fkl.is_even"
    traits = traits_def(ChannelWise(), Pure())

    def result_for(self, in_type: ImageType) -> ImageType:
        check_integer(self, in_type)
        return reshaped(in_type, element="bool")


@fkl_op
class EqualOp(BinaryValueOp):
    """Equal: bool per channel, x == v (fk::Equal with a value; NaN equals nothing). `fkl.equal %x, v : T -> T2`"""

    name = "fkl.equal"
    FORMULA: ClassVar[str] = "x == v"

    def result_for(self, in_type: ImageType) -> ImageType:
        arithmetic_result(self, "equal", in_type)  # values as the arithmetic ops take them, no bool chain
        return reshaped(in_type, element="bool")

    def verify_(self) -> None:
        check_value_or_slot(self, self.value, self.slot)
        self.check_result_rule()


@fkl_op
class VectorAndOp(UnaryOp):
    """VectorAnd: boolN -> bool, the AND of all channels. `fkl.vector_and %x : T -> T2`"""

    name = "fkl.vector_and"
    traits = traits_def(PixelWise(), Pure())

    def result_for(self, in_type: ImageType) -> ImageType:
        if in_type.dtype != "bool":
            raise VerifyException(f"'{self.name}' needs a bool chain, got {in_type.dtype}")
        return reshaped(in_type, channels=1)


# ---------------------------------------------------------------------------------------------
# Vector ops
# ---------------------------------------------------------------------------------------------


@fkl_op
class DiscardOp(TypeRuleOp):
    """Discard(keep_n): keep the first keep_n channels. `fkl.discard %x, 2 : T -> T2`"""

    name = "fkl.discard"
    traits = traits_def(PixelWise(), Pure())
    input = operand_def(ImageType)
    keep_attr = prop_def(IntegerAttr[I64], prop_name="keep")
    result = result_def(ImageType)

    custom_directives = (Int64, TypeSuffix)
    assembly_format = f"$input `,` custom<Int64>($keep) {TYPES}"

    def __init__(self, input: SSAValue, keep: int, result_type: Attribute | None = None):
        super().__init__(
            operands=[input],
            properties={"keep": IntegerAttr(keep, 64)},
            result_types=[result_type or ImageType.unknown()],
        )

    @property
    def keep(self) -> IntAttr:
        """The number of channels kept (as `.data`)."""
        return self.keep_attr.value

    def result_for(self, in_type: ImageType) -> ImageType:
        keep, channels = self.keep.data, in_type.channels.data
        if not 1 <= keep <= channels:
            raise VerifyException(f"'{self.name}' keeps {keep} channels of a chain of {channels} (1 to {channels})")
        return reshaped(in_type, channels=keep)

    def verify_(self) -> None:
        int32(value_rules.channel_count, f"'{self.name}'", self.keep.data)
        self.check_result_rule()


@fkl_op
class AddLastOp(TypeRuleOp):
    """AddLast(v): append one channel holding v (in the chain type). `fkl.add_last %x, 1.0 : T -> T2`"""

    name = "fkl.add_last"
    traits = traits_def(PixelWise(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (NumberOrSlot, TypeSuffix)
    assembly_format = f"$input `,` custom<NumberOrSlot>($value, $slot) {TYPES}"

    def __init__(
        self,
        input: SSAValue,
        value: float | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        values = None if value is None else float_array([value])
        super().__init__(
            operands=[input],
            properties=field_properties("value", values, slot),
            result_types=[result_type or ImageType.unknown()],
        )

    def result_for(self, in_type: ImageType) -> ImageType:
        channels = in_type.channels.data
        if channels >= 4:
            raise VerifyException(f"'{self.name}' cannot append a channel to a chain of {channels} (at most 4)")
        if (values := field_values(self)) is not None:
            check_values_representable(self.name, values, in_type.dtype)
        return reshaped(in_type, channels=channels + 1)

    def verify_(self) -> None:
        check_field(self, "value")
        values = field_values(self)
        if values is not None and len(values) != 1:
            raise VerifyException(f"'{self.name}' appends one value, got {len(values)}")
        self.check_result_rule()

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        """The one added channel's value, in the chain's type."""
        return dtypes.BY_NAME[in_type.dtype].slot_kind, 1


def _check_order(op: IRDLOperation, order: Sequence[float], channels: int | None) -> None:
    int32(value_rules.reorder_indices, f"'{op.name}'", order, channels)


def _known_channels(op: TypeRuleOp) -> int | None:
    """The input's channel count where its type is known (an index is checked against it, else against 4)."""
    in_type = op.known_input()
    return None if in_type is None else in_type.channels.data


@fkl_op
class VectorReorderOp(TypeRuleOp):
    """VectorReorder(i0, i1, ...): output channel k is input channel i_k (compile-time; repeats allowed).

    `fkl.vector_reorder %x, [2, 1, 0] : T -> T2`
    """

    name = "fkl.vector_reorder"
    traits = traits_def(PixelWise(), Pure())
    input = operand_def(ImageType)
    order = prop_def(DenseArrayBase[IntegerType])
    result = result_def(ImageType)

    custom_directives = (IntList, TypeSuffix)
    assembly_format = f"$input `,` custom<IntList>($order) {TYPES}"

    def __init__(self, input: SSAValue, order: Sequence[int], result_type: Attribute | None = None):
        super().__init__(
            operands=[input],
            properties={"order": int_array(order)},
            result_types=[result_type or ImageType.unknown()],
        )

    @property
    def indices(self) -> list[int]:
        return [int(v) for v in self.order.get_values()]

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_order(self, self.indices, in_type.channels.data)
        return reshaped(in_type, channels=len(self.indices))

    def verify_(self) -> None:
        _check_order(self, self.indices, _known_channels(self))
        self.check_result_rule()


@fkl_op
class VectorReorderRTOp(TypeRuleOp):
    """VectorReorderRT(i0, i1, ...): like fkl.vector_reorder, but the indices are a runtime value
    (a parameter slot after hoisting): changing them reuses the binary. The count is structural.

    `fkl.vector_reorder_rt %x, [2, 1, 0] : T -> T2`; hoisted `fkl.vector_reorder_rt %x, param "r1" : T -> T2`
    """

    name = "fkl.vector_reorder_rt"
    traits = traits_def(PixelWise(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[IntegerType])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (IntListOrSlot, TypeSuffix)
    assembly_format = f"$input `,` custom<IntListOrSlot>($value, $slot) {TYPES}"

    def __init__(
        self,
        input: SSAValue,
        order: Sequence[int] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        values = None if order is None else int_array(order)
        super().__init__(
            operands=[input],
            properties=field_properties("value", values, slot),
            result_types=[result_type or ImageType.unknown()],
        )

    def result_for(self, in_type: ImageType) -> ImageType:
        order = field_values(self)
        if order is None:  # hoisted: the count is the result's, inferred before hoisting
            out_type = known(self.result.type)
            if out_type is None:
                raise VerifyException(f"'{self.name}' with a parameter slot needs a known result type")
            return reshaped(in_type, channels=out_type.channels.data)
        _check_order(self, order, in_type.channels.data)
        return reshaped(in_type, channels=len(order))

    def verify_(self) -> None:
        check_field(self, "value")
        if (order := field_values(self)) is not None:
            _check_order(self, order, _known_channels(self))
        if order is not None or known(self.result.type) is not None:  # a hoisted order's count is the result's
            self.check_result_rule()

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        """One source index per output channel."""
        return None if out_type is None else ("i32", out_type.channels.data)


# ---------------------------------------------------------------------------------------------
# Algebraic
# ---------------------------------------------------------------------------------------------


class MatrixOrSlot(ValuesOrSlot):
    """A 3x3 matrix as rows, `[[1.0, 0.0, 0.0], ...]`, held row-major."""

    def parse_values(self, parser: Parser, state: ParsingState) -> DenseArrayBase:
        rows = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_number_list(parser))
        return float_array([v for row in rows for v in row])

    def print_values(self, printer: Printer, values: Attribute | None) -> None:
        printer.print_string(format_matrix(float_values(values), 3))


@fkl_op
class MxVFloat3Op(TypeRuleOp):
    """MxVFloat3(M): the row-major 3x3 matrix M times the float3 pixel as a column.

    `fkl.mxv_float3 %x, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] : !fkl.image<?x?x3xf32>`;
    `per_plane` (fkl.per_image): one matrix per plane, their rows one after the other.
    """

    name = "fkl.mxv_float3"
    traits = traits_def(PixelWise(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    per_plane = opt_prop_def(UnitAttr)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (MatrixOrSlot, TypeSuffix)
    assembly_format = f"$input `,` (`per_plane` $per_plane^)? custom<MatrixOrSlot>($value, $slot) {TYPES}"

    def __init__(
        self,
        input: SSAValue,
        matrix: Sequence[float] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
        per_plane: bool = False,
    ):
        """`matrix`: 9 numbers row-major; with `per_plane`, 9 per plane one after the other."""
        values = None if matrix is None else float_array(matrix)
        properties = field_properties("value", values, slot)
        if per_plane:
            properties["per_plane"] = UnitAttr()
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    def verify_(self) -> None:
        check_field(self, "value")
        check_same_type(self, self.input.type, self.result.type)
        values = field_values(self)
        if values is not None and is_per_plane(self) and len(values) % 9:
            raise VerifyException(f"'{self.name}' needs a 3x3 matrix (9 numbers) per plane, got {len(values)}")
        if values is not None and not is_per_plane(self):
            int32(value_rules.matrix_numbers, f"'{self.name}'", values, (9,))
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def result_for(self, in_type: ImageType) -> ImageType:
        if in_type.dtype != "float32" or in_type.channels.data != 3:
            raise VerifyException(
                f"'{self.name}' needs a chain of exactly float32 x 3, got {in_type.dtype} x {in_type.channels.data}"
            )
        for matrix in self.value_rows(in_type):
            if len(matrix) != 9:
                raise VerifyException(f"'{self.name}' needs a 3x3 matrix per plane, got {len(matrix)} numbers each")
        return in_type

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        """The 3x3 matrix, row-major, in float."""
        return "f32", 9


# ---------------------------------------------------------------------------------------------
# Control
# ---------------------------------------------------------------------------------------------

LOOP_BODIES = ("add", "sub", "mul", "div", "max", "min")


@fkl_op
class StaticLoopOp(TypeRuleOp):
    """StaticLoop(op, n): the binary op applied n times (n compile-time), its value in one slot.

    `fkl.static_loop %x, mul 2.0, 3 : T` (x * 2 * 2 * 2, each step in the chain type);
    hoisted `fkl.static_loop %x, mul param "static_loop1", 3 : T`.
    """

    name = "fkl.static_loop"
    traits = traits_def(ChannelWise(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    body = prop_def(StringAttr)
    count_attr = prop_def(IntegerAttr[I64], prop_name="count")
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        body: str,
        values: Sequence[float] | None,
        count: int,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        properties = field_properties("value", None if values is None else float_array(values), slot)
        properties |= {"body": StringAttr(body), "count": IntegerAttr(count, 64)}
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @property
    def count(self) -> IntAttr:
        """How many times the body op is applied (as `.data`)."""
        return self.count_attr.value

    # Hand-written: a format would parse `body` before the values and so store the properties in
    # another order than the constructor, which the generic form prints.
    @classmethod
    def parse(cls, parser: Parser) -> StaticLoopOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        body = parser.parse_identifier()
        slot = parse_slot(parser)
        values = None if slot else parse_number_list(parser)
        parser.parse_punctuation(",")
        count = parse_int64(parser, cls.name)
        in_type, out_type = parse_types(parser)
        return StaticLoopOp(
            parser.resolve_operand(operand, in_type),
            body,
            values,
            count,
            out_type,
            slot.data if slot else None,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f", {self.body.data} ")
        if self.slot is not None:
            print_slot(printer, self.slot)
        else:
            print_number_list(printer, field_values(self) or ())
        printer.print_string(f", {self.count.data}")
        print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        check_field(self, "value")
        check_same_type(self, self.input.type, self.result.type)
        check_one_of(self, "body", self.body.data, LOOP_BODIES, " (a binary op)")
        int32(value_rules.loop_count, f"'{self.name}'", self.count.data)
        values = field_values(self)
        if values is not None and not values:
            raise VerifyException(f"'{self.name}' needs at least one value")
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def result_for(self, in_type: ImageType) -> ImageType:
        return arithmetic_result(self, self.body.data, in_type)
