"""The custom syntax the ops share: `: T -> T2`, numbers and number lists, int64 literals, `param "slot"`,
and the custom directives that put these pieces in the ops' assembly formats."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, StringAttr, f64, i64
from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    OperandVariable,
    ParsingState,
    PrintingState,
    TypeDirective,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer

from fklir.limits import I64_MAX


def parse_types(parser: Parser) -> tuple[Attribute, Attribute]:
    """`: T` (result has the same type) or `: T -> T2`."""
    parser.parse_punctuation(":")
    in_type = parser.parse_type()
    out_type = parser.parse_type() if parser.parse_optional_punctuation("->") else in_type
    return in_type, out_type


def print_types(printer: Printer, in_type: Attribute, out_type: Attribute) -> None:
    printer.print_string(" : ")
    printer.print_attribute(in_type)
    if out_type != in_type:
        printer.print_string(" -> ")
        printer.print_attribute(out_type)


def format_number(v: float) -> str:
    """A float literal the MLIR lexer reads back exactly (`nan`, `inf`, `ninf` for the special values)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "ninf"
    text = repr(float(v))
    mantissa, _, exponent = text.partition("e")
    if "." not in mantissa:
        mantissa += ".0"
    return f"{mantissa}e{exponent}" if exponent else mantissa


SPECIAL_NUMBERS = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf}


def parse_one_number(parser: Parser) -> float:
    if (word := parser.parse_optional_keyword_in(tuple(SPECIAL_NUMBERS))) is not None:
        return SPECIAL_NUMBERS[word]
    return _as_float(parser, parser.pos, parser.parse_number())


def _as_float(parser: Parser, pos: int, number: int | float) -> float:
    """`number` as an f64; an integer literal beyond f64's range is a parse error at `pos` (float()
    would raise OverflowError)."""
    if isinstance(number, float) or abs(number) <= sys.float_info.max:
        return float(number)
    parser.raise_error(f"integer literal beyond the f64 range (+-{sys.float_info.max:.6g})", pos, parser.pos)


def parse_number_list(parser: Parser) -> list[float]:
    """`2.0` or `[1.0, 2.0, 3.0]` (integers allowed)."""
    if parser.parse_optional_punctuation("["):
        values = [parse_one_number(parser)]
        while parser.parse_optional_punctuation(","):
            values.append(parse_one_number(parser))
        parser.parse_punctuation("]")
        return values
    return [parse_one_number(parser)]


def parse_int64(parser: Parser, op_name: str) -> int:
    """An integer literal that the op's i64 attributes hold as written. xDSL 0.74 stores a literal
    in [2^63, 2^64) in a signless i64 as the negative number of the same bits (2^63 becomes -2^63),
    which a verifier could then take for a small or valid value, so it is refused here, where the
    written number is still known."""
    pos = parser.pos
    return fit_int64(parser, op_name, pos, parser.parse_integer())


def fit_int64(parser: Parser, op_name: str, pos: int, value: int) -> int:
    if -I64_MAX - 1 <= value <= I64_MAX:
        return value
    broken = f"exceeds the limit {I64_MAX}" if value > 0 else f"is below the limit {-I64_MAX - 1}"
    parser.raise_error(f"'{op_name}' integer {value} {broken} (int64)", pos, parser.pos)


def parse_int_list(parser: Parser, op_name: str) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_int64(parser, op_name))


def parse_slot(parser: Parser) -> StringAttr | None:
    if parser.parse_optional_keyword("param") is None:
        return None
    return StringAttr(parser.parse_str_literal())


def print_number_list(printer: Printer, values: Sequence[float]) -> None:
    """`2.0` for one value, `[1.0, 2.0]` for several (the form `parse_number_list` reads)."""
    if len(values) == 1:
        printer.print_string(format_number(values[0]))
        return
    printer.print_string("[" + ", ".join(format_number(v) for v in values) + "]")


def print_slot(printer: Printer, slot: StringAttr) -> None:
    printer.print_string("param ")
    printer.print_string_literal(slot.data)


def format_matrix(values: Sequence[float], columns: int) -> str:
    rows = [values[i : i + columns] for i in range(0, len(values), columns)]
    return "[" + ", ".join("[" + ", ".join(format_number(v) for v in row) + "]" for row in rows) + "]"


def format_int_list(values: Sequence[int]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


# ---------------------------------------------------------------------------------------------
# Custom directives: the pieces above as `custom<Name>(...)` in an op's assembly_format
# ---------------------------------------------------------------------------------------------


def _printed(state: PrintingState) -> None:
    """What the format's own directives record after printing a piece, so the next one spaces itself."""
    state.should_emit_space = True
    state.last_was_punctuation = False


def int_values(attr: Attribute | None) -> list[int]:
    """The values of a dense array property (none when it is unset)."""
    return [int(v) for v in attr.get_values()] if isinstance(attr, DenseArrayBase) else []


def float_values(attr: Attribute | None) -> list[float]:
    return [float(v) for v in attr.get_values()] if isinstance(attr, DenseArrayBase) else []


TYPES = "custom<TypeSuffix>(type($input), type($result)) attr-dict"
"""The end of the assembly format of an op from `$input` to `$result` (`: T` or `: T -> T2`)."""


def set_input_type(parser: Parser, state: ParsingState, input: TypeDirective, in_type: Attribute) -> None:
    """Set the type of the (already parsed) input and resolve it now, as the format would only after
    checking that the type is an image type: a type that contradicts the value's is then reported
    as that, at the operand."""
    input.set(state, (in_type,))
    operand = input.inner
    if isinstance(operand, OperandVariable) and (unresolved := state.operands[operand.index]):
        parser.resolve_operand(unresolved[0], in_type)


@irdl_custom_directive
class InputType(CustomDirective):
    """`: T` of an op without results (the write ops, fkl.yield)."""

    input: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        parser.parse_punctuation(":")
        set_input_type(parser, state, self.input, parser.parse_type())

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        printer.print_string(" : ")
        printer.print_attribute(self.input.get(op)[0])
        _printed(state)


@irdl_custom_directive
class StringLiteral(CustomDirective):
    """A string literal held as a StringAttr (`"dst"`); a string, not any attribute, as the parser reads it."""

    string: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.string.set(state, StringAttr(parser.parse_str_literal()))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        string = self.string.get(op)
        assert isinstance(string, StringAttr)
        printer.print_string_literal(string.data)


@irdl_custom_directive
class TypeSuffix(CustomDirective):
    """`: T` (the result has the input's type) or `: T -> T2`, by parse_types/print_types."""

    input: TypeDirective
    result: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        _parse_suffix(parser, state, (self.input,), self.result)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        _print_suffix(printer, state, op, self.input, self.result)


def _parse_suffix(parser: Parser, state: ParsingState, inputs: Sequence[TypeDirective], result: TypeDirective) -> None:
    """`: T` or `: T -> T2`: each of `inputs` takes T, the result T2."""
    in_type, out_type = parse_types(parser)
    for input in inputs:
        set_input_type(parser, state, input, in_type)
    result.set(state, (out_type,))


def _print_suffix(
    printer: Printer, state: PrintingState, op: IRDLOperation, input: TypeDirective, result: TypeDirective
) -> None:
    (in_type,) = input.get(op)
    (out_type,) = result.get(op)
    print_types(printer, in_type, out_type)
    _printed(state)


@irdl_custom_directive
class JoinTypes(CustomDirective):
    """`: T` or `: T -> T2` of an op that joins two values of one type T (fkl.join, fkl.blend): both
    operands take T; a join of values of other types prints the first's (its verifier reports it)."""

    input: TypeDirective
    other: TypeDirective
    result: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        _parse_suffix(parser, state, (self.input, self.other), self.result)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        _print_suffix(printer, state, op, self.input, self.result)


@irdl_custom_directive
class MaskTypes(CustomDirective):
    """`: T, M` of fkl.composite: its two images and the result take T, its mask M."""

    input: TypeDirective
    other: TypeDirective
    mask: TypeDirective
    result: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        parser.parse_punctuation(":")
        in_type = parser.parse_type()
        parser.parse_punctuation(",")
        mask_type = parser.parse_type()
        set_input_type(parser, state, self.input, in_type)
        set_input_type(parser, state, self.other, in_type)
        set_input_type(parser, state, self.mask, mask_type)
        self.result.set(state, (in_type,))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        (in_type,) = self.input.get(op)
        (mask_type,) = self.mask.get(op)
        printer.print_string(" : ")
        printer.print_attribute(in_type)
        printer.print_string(", ")
        printer.print_attribute(mask_type)
        _printed(state)


@irdl_custom_directive
class Word(CustomDirective):
    """A bare identifier held as a StringAttr (`linear`, `mean`, ...)."""

    word: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.word.set(state, StringAttr(parser.parse_identifier()))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        word = self.word.get(op)
        assert isinstance(word, StringAttr)
        printer.print_string(word.data)


@irdl_custom_directive
class ElementType(CustomDirective):
    """A type held as a property (`to f32`); a type, not any attribute, as the parser reads it."""

    element: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.element.set(state, parser.parse_type())

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        element = self.element.get(op)
        assert element is not None
        printer.print_attribute(element)


@irdl_custom_directive
class Int64(CustomDirective):
    """An integer literal held as an i64 IntegerAttr, refused beyond int64 (parse_int64)."""

    value: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.value.set(state, IntegerAttr(parse_int64(parser, state.op_type.name), 64))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        value = self.value.get(op)
        assert isinstance(value, IntegerAttr)
        printer.print_string(str(value.value.data))


@irdl_custom_directive
class IntList(CustomDirective):
    """`[0, 2, 1]`: int64 literals held as an i64 dense array."""

    values: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.values.set(state, DenseArrayBase.from_list(i64, parse_int_list(parser, state.op_type.name)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_string(format_int_list(int_values(self.values.get(op))))

    def is_present(self, op: IRDLOperation) -> bool:
        return self.values.get(op) is not None

    def is_anchorable(self) -> bool:
        return True


@irdl_custom_directive
class ValuesOrSlot(CustomDirective):
    """An op's inline values, or `param "slot"` once hoisted: the values' shape is the subclass's.

    Subclasses only override parse_values/print_values; they take the parameters declared here
    (irdl_custom_directive reads a class's own annotations, so they are not decorated again).
    """

    values: AttributeVariable
    slot: AttributeVariable

    def parse_values(self, parser: Parser, state: ParsingState) -> DenseArrayBase:
        """`2.0` or `[1.0, 2.0, 3.0]`."""
        return DenseArrayBase.from_list(f64, parse_number_list(parser))

    def print_values(self, printer: Printer, values: Attribute | None) -> None:
        print_number_list(printer, float_values(values))

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if (slot := parse_slot(parser)) is not None:
            self.slot.set(state, slot)
            return
        self.values.set(state, self.parse_values(parser, state))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        if isinstance(slot := self.slot.get(op), StringAttr):
            print_slot(printer, slot)
            return
        self.print_values(printer, self.values.get(op))


class NumberOrSlot(ValuesOrSlot):
    """One number: `1.0`."""

    def parse_values(self, parser: Parser, state: ParsingState) -> DenseArrayBase:
        return DenseArrayBase.from_list(f64, [parse_one_number(parser)])


class IntListOrSlot(ValuesOrSlot):
    """`[2, 1, 0]` (int64 literals)."""

    def parse_values(self, parser: Parser, state: ParsingState) -> DenseArrayBase:
        return DenseArrayBase.from_list(i64, parse_int_list(parser, state.op_type.name))

    def print_values(self, printer: Printer, values: Attribute | None) -> None:
        printer.print_string(format_int_list(int_values(values)))
