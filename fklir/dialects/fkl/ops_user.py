"""User ops (`fkl.op`, SPEC §6.1): C++ that a user declares and that fuses like a built-in op.

`fkl.user` calls a user struct once per channel value (ChannelWise, like fkl.pow), `fkl.user_pixel`
once per pixel (PixelWise, like fkl.mxv_float3):

```mlir
%g = fkl.user "Gamma" %x, 2.2 params(gamma: f32) inputs [f32] out same hash "9f2c..." : T
%l = fkl.user_pixel "Luma" %x params() inputs [ui8] out f32 channels 1 hash "41d0..." : T -> T2
```

The IR carries what the type rule and the emitted call need (the struct's name, its params' names and
element types, the accepted input types, the result type and channels) and the content hash of the
body and every file it includes, so that the structural IR, and with it the cache key, changes when
the C++ does. The param values form the op's one value field "value" (inline f64 numbers in
declaration order, or `param "slot"` once hoisted): a value never reaches the structure, so a new
value never recompiles.

The body text itself, its include folders and the numpy reference live in DECLARATIONS, keyed by the
hash: the frontend's fkl.op fills it, and the backend and the interpreter read it (fklir-opt --load
runs the Python file that declares them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, Float64Type, IntAttr, StringAttr
from xdsl.ir import Attribute, SSAValue, TypeAttribute
from xdsl.irdl import (
    operand_def,
    opt_prop_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from fklir.dialects import value_rules
from fklir.dialects.fkl.abstract_ops import TypeRuleOp, fkl_op
from fklir.dialects.fkl.checks import check_values_representable, int32
from fklir.dialects.fkl.fields import field_properties, field_values, float_array
from fklir.dialects.fkl.syntax import (
    parse_number_list,
    parse_slot,
    parse_types,
    print_number_list,
    print_slot,
    print_types,
)
from fklir.dialects.fkl.traits import ChannelWise, PixelWise
from fklir.dialects.fkl.types import NAME_OF_TYPE, ImageType, dtype_name, reshaped
from fklir.dialects.user_declarations import DECLARATIONS, IDENTIFIER, UserDeclaration
from fklir.dialects.user_declarations import declare_user_op as declare_user_op

_HASH = re.compile(r"[0-9a-f]{16,64}")


def user_declaration(op: UserOpBase) -> UserDeclaration:
    """The declaration of `op`'s hash; ValueError naming the op when this process has not declared it."""
    declaration = DECLARATIONS.get(op.digest.data)
    if declaration is None:
        raise ValueError(
            f"'{op.name}' {op.struct.data}: no fkl.op declares hash {op.digest.data[:16]}... in this process "
            "(run the Python file that declares it first; fklir-opt: --load FILE.py)"
        )
    return declaration


# ---------------------------------------------------------------------------------------------
# Syntax: `"Name" %x[, values | param "slot"] params(a: T, ...) inputs [T, ...] out T|same
#          [channels N] hash "..." : T -> T2`
# ---------------------------------------------------------------------------------------------


def _parse_params(parser: Parser) -> tuple[list[str], list[Attribute]]:
    parser.parse_keyword("params")

    def one() -> tuple[str, Attribute]:
        name = parser.parse_identifier()
        parser.parse_punctuation(":")
        return name, parser.parse_type()

    pairs = parser.parse_comma_separated_list(parser.Delimiter.PAREN, one)
    return [name for name, _ in pairs], [t for _, t in pairs]


def _print_params(printer: Printer, names: Sequence[str], types: Sequence[Attribute]) -> None:
    printer.print_string(" params(")
    for i, (name, t) in enumerate(zip(names, types, strict=True)):
        printer.print_string(f"{', ' if i else ''}{name}: ")
        printer.print_attribute(t)
    printer.print_string(")")


def _element_types(attr: ArrayAttr[Attribute]) -> list[Attribute]:
    return list(attr.data)


class UserOpBase(TypeRuleOp):
    """The shared declaration of fkl.user and fkl.user_pixel: properties, syntax, checks, type rule."""

    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    PIXEL: ClassVar[bool]

    input = operand_def(ImageType)
    struct = prop_def(StringAttr)
    digest = prop_def(StringAttr, prop_name="hash")
    param_names = prop_def(ArrayAttr[StringAttr])
    param_types = prop_def(ArrayAttr[Attribute])
    inputs = prop_def(ArrayAttr[Attribute])
    out = opt_prop_def(TypeAttribute)  # absent: the input's element type
    channels = opt_prop_def(IntAttr)  # fkl.user_pixel: absent keeps the input's channels
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        struct: str,
        digest: str,
        params: Sequence[tuple[str, Attribute]],
        inputs: Sequence[Attribute],
        out: Attribute | None = None,
        channels: int | None = None,
        values: Sequence[float] | None = None,
        slot: str | None = None,
        result_type: Attribute | None = None,
    ):
        properties: dict[str, Attribute] = {
            "struct": StringAttr(struct),
            "hash": StringAttr(digest),
            "param_names": ArrayAttr([StringAttr(name) for name, _ in params]),
            "param_types": ArrayAttr([t for _, t in params]),
            "inputs": ArrayAttr(list(inputs)),
            **field_properties("value", None if values is None else float_array(values), slot),
        }
        if out is not None:
            properties["out"] = out
        if channels is not None:
            properties["channels"] = IntAttr(channels)
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @property
    def params(self) -> list[tuple[str, str]]:
        """(name, dtype name) of each param, in declaration order."""
        return [(n.data, dtype_name(t)) for n, t in zip(self.param_names.data, self.param_types.data, strict=True)]

    # Hand-written: the optional values and the optional `channels` sit between keywords, and the params
    # are (name: type) pairs, which a format cannot spell.
    @classmethod
    def parse(cls, parser: Parser) -> UserOpBase:
        struct = parser.parse_str_literal()
        operand = parser.parse_unresolved_operand()
        values: list[float] | None = None
        slot = None
        if parser.parse_optional_punctuation(","):
            if (slot := parse_slot(parser)) is None:
                values = parse_number_list(parser)
        names, types = _parse_params(parser)
        parser.parse_keyword("inputs")
        inputs = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_type)
        parser.parse_keyword("out")
        out = None if parser.parse_optional_keyword("same") else parser.parse_type()
        channels = None
        if cls.PIXEL and parser.parse_optional_keyword("channels"):
            channels = parser.parse_integer(allow_boolean=False, allow_negative=False)
        parser.parse_keyword("hash")
        digest = parser.parse_str_literal()
        in_type, out_type = parse_types(parser)
        return cls(
            parser.resolve_operand(operand, in_type),
            struct,
            digest,
            list(zip(names, types, strict=True)),
            inputs,
            out,
            channels,
            values,
            slot.data if slot is not None else None,
            out_type,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_string_literal(self.struct.data)
        printer.print_string(" ")
        printer.print_operand(self.input)
        if self.slot is not None:
            printer.print_string(", ")
            print_slot(printer, self.slot)
        elif self.value is not None:
            printer.print_string(", ")
            print_number_list(printer, field_values(self) or ())
        _print_params(printer, [n.data for n in self.param_names.data], _element_types(self.param_types))
        printer.print_string(" inputs [")
        printer.print_list(_element_types(self.inputs), printer.print_attribute)
        printer.print_string("] out ")
        if self.out is None:
            printer.print_string("same")
        else:
            printer.print_attribute(self.out)
        if self.channels is not None:
            printer.print_string(f" channels {self.channels.data}")
        printer.print_string(" hash ")
        printer.print_string_literal(self.digest.data)
        print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        what = f"'{self.name}' {self.struct.data}"
        if not IDENTIFIER.fullmatch(self.struct.data):
            raise VerifyException(f"'{self.name}' needs a C++ identifier as its name, got {self.struct.data!r}")
        if not _HASH.fullmatch(self.digest.data):
            raise VerifyException(f"{what}: hash must be 16 to 64 lowercase hex digits, got {self.digest.data!r}")
        self._verify_params(what)
        if not self.inputs.data:
            raise VerifyException(f"{what} needs at least one accepted input element type")
        for t in (*self.inputs.data, *([self.out] if self.out is not None else [])):
            if t not in NAME_OF_TYPE:
                raise VerifyException(f"{what}: {t} is not an fkl element type")
        if self.channels is not None:
            if not self.PIXEL:
                raise VerifyException(f"{what}: channels is for fkl.user_pixel only")
            int32(value_rules.channel_count, f"{what}:", self.channels.data)
        self.check_result_rule()

    def _verify_params(self, what: str) -> None:
        names = [n.data for n in self.param_names.data]
        if len(names) != len(self.param_types.data):
            raise VerifyException(f"{what}: {len(names)} param names for {len(self.param_types.data)} types")
        if len(set(names)) != len(names) or not all(IDENTIFIER.fullmatch(n) for n in names):
            raise VerifyException(f"{what}: param names must be distinct C++ identifiers, got {names}")
        for t in self.param_types.data:
            if t not in NAME_OF_TYPE:
                raise VerifyException(f"{what}: param type {t} is not an fkl element type")
        has_values = self.value is not None or self.slot is not None
        if not names:
            if has_values:
                raise VerifyException(f"{what} has no params, so no values")
            return
        if (self.value is None) == (self.slot is None):
            raise VerifyException(f"'{self.name}' needs exactly one of an inline value or a parameter slot")
        values = field_values(self)
        if values is None:
            return
        if len(values) != len(names):
            raise VerifyException(f"{what} takes {len(names)} values ({', '.join(names)}), got {len(values)}")
        for (name, dtype), v in zip(self.params, values, strict=True):
            check_values_representable(f"{self.name}' {self.struct.data} param '{name}", [v], dtype)

    def result_for(self, in_type: ImageType) -> ImageType:
        accepted = [dtype_name(t) for t in self.inputs.data]
        if in_type.dtype not in accepted:
            raise VerifyException(
                f"'{self.name}' {self.struct.data} does not take {in_type.dtype} input; its inputs are "
                f"{', '.join(accepted)}"
            )
        channels = None if self.channels is None else self.channels.data
        return reshaped(in_type, channels, self.out)

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        # One f64 per param: every param type's values are exact in f64, and the call casts each to its type.
        return "f64", len(self.param_names.data)


@fkl_op
class UserOp(UserOpBase):
    """A user element op (fkl.op): `Name::exec(x, params...)` of each channel value."""

    name = "fkl.user"
    traits = traits_def(ChannelWise(), Pure())
    PIXEL: ClassVar[bool] = False


@fkl_op
class UserPixelOp(UserOpBase):
    """A user pixel op (fkl.op(pixel=True)): `Name::exec<C, M>(in, out, params...)` of each pixel."""

    name = "fkl.user_pixel"
    traits = traits_def(PixelWise(), Pure())
    PIXEL: ClassVar[bool] = True


USER_OPS: tuple[type[UserOpBase], ...] = (UserOp, UserPixelOp)
