"""The custom syntax the ops share: `: T -> T2`, numbers and number lists, int64 literals, `param "slot"`."""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Attribute
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
