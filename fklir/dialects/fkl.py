"""The `fkl` dialect: chains of image operations that fuse into one kernel.

A chain as the frontend emits it (result types start unknown; `fkl-infer-types` fills them in):

```mlir
%img = fkl.read "src" : !fkl.image<?x?x3xui8>
%roi = fkl.crop %img, rects [[30, 12, 60, 40], [40, 12, 60, 40]]
    : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
%rs  = fkl.resize %roi, size [16, 16], linear
    : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x3xf32, planes 2>
%m   = fkl.mul %rs, 2.0 : !fkl.image<?x?x3xf32, planes 2>
%u8  = fkl.saturate_cast %m to ui8 : !fkl.image<?x?x3xf32, planes 2> -> !fkl.image<?x?x3xui8, planes 2>
fkl.write %u8, "dst" : !fkl.image<?x?x3xui8, planes 2>
```

After the default pipeline the chain sits in one `fkl.kernel` per launch, and every value has moved
into the kernel's parameter block (the IR without `values` is the structural cache key):

```mlir
fkl.kernel @k0 params !fkl.params<crop1: rect x 2, resize2: i32 x 2, mul3: f32 x 3>
    values {crop1 = array<i64: ...>, resize2 = array<i64: 16, 16>, mul3 = array<f64: 2.0, 2.0, 2.0>} {
  %img = fkl.read "src" : !fkl.image<?x?x3xui8>
  %roi = fkl.crop %img, param "crop1" : ...
  ...
}
```

Element types: ui8, i8 (signed), ui16, i16, i32, ui32, f16, bf16, f32, f64 and i1 (bool).
`none` as element type and `?` as channel count mean "not inferred yet".
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import ClassVar, TypeVar

from xdsl.dialects.builtin import (
    I64,
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerAttr,
    IntegerType,
    NoneType,
    Signedness,
    StringAttr,
    SymbolNameConstraint,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    opt_region_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from fklir import dtypes
from fklir.diagnostics import OpError
from fklir.dialects.color_codes import COLOR_CODES, ColorCode
from fklir.dialects.dominance import SSADominance
from fklir.limits import I32_MAX, I64_MAX, check_index, check_span

DYNAMIC = -1

# The slot of a divergent kernel's parameter block that maps each output plane to its chain.
PLANE_MAP_SLOT = "planemap"

# Two float types have 16 bits: the slot kind tells them apart.
_FLOAT_TYPES: dict[str, type[Attribute]] = {
    "f16": Float16Type,
    "bf16": BFloat16Type,
    "f32": Float32Type,
    "f64": Float64Type,
}


def _ir_type(record: dtypes.DType) -> Attribute:
    """The builtin type of an element type: MLIR's spelling, signless for signed integers and bool."""
    if record.is_float:
        return _FLOAT_TYPES[record.slot_kind]()
    return IntegerType(record.bits, Signedness.UNSIGNED if record.kind == "uint" else Signedness.SIGNLESS)


# Element type name (as users and numpy spell it) -> IR type.
ELEMENT_TYPES: dict[str, Attribute] = {record.name: _ir_type(record) for record in dtypes.DTYPES}
_NAME_OF_TYPE: dict[Attribute, str] = {t: n for n, t in ELEMENT_TYPES.items()}


def element_type(name: str) -> Attribute:
    """The IR element type for a dtype name; ValueError names unknown dtypes."""
    if name not in ELEMENT_TYPES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(ELEMENT_TYPES)}")
    return ELEMENT_TYPES[name]


def dtype_name(elt: Attribute) -> str:
    """The dtype name of an IR element type ('float32', 'uint8', ...)."""
    return _NAME_OF_TYPE[elt]


def is_float_name(name: str) -> bool:
    record = dtypes.BY_NAME.get(name)
    return record is not None and record.is_float


# ---------------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------------


@irdl_attr_definition
class ImageType(ParametrizedAttribute, TypeAttribute):
    """An image (or B planes of images): `!fkl.image<HxWxCxELT[, planes B][, planar]>`.

    H, W, C and B may be `?` (dynamic or not inferred yet); ELT may be `none` (not inferred).
    """

    name = "fkl.image"

    height: IntAttr
    width: IntAttr
    channels: IntAttr
    element_type: Attribute
    planes: IntAttr
    layout: StringAttr

    def __init__(
        self,
        element: Attribute | str,
        channels: int,
        planes: int = 1,
        height: int = DYNAMIC,
        width: int = DYNAMIC,
        layout: str = "packed",
    ):
        elt = element_type(element) if isinstance(element, str) else element
        super().__init__(IntAttr(height), IntAttr(width), IntAttr(channels), elt, IntAttr(planes), StringAttr(layout))

    @staticmethod
    def unknown() -> ImageType:
        """The placeholder result type the frontend emits before type inference."""
        return ImageType(NoneType(), DYNAMIC)

    @property
    def is_known(self) -> bool:
        return self.channels.data != DYNAMIC and not isinstance(self.element_type, NoneType)

    @property
    def dtype(self) -> str:
        return dtype_name(self.element_type)

    def with_element(self, element: Attribute) -> ImageType:
        return ImageType(element, self.channels.data, self.planes.data, layout=self.layout.data)

    def with_planes(self, planes: int) -> ImageType:
        return ImageType(self.element_type, self.channels.data, planes, layout=self.layout.data)

    def verify(self) -> None:
        c = self.channels.data
        if c != DYNAMIC and not 1 <= c <= 4:
            raise VerifyException(f"!fkl.image: expected 1 to 4 channels, got {c}")
        if not isinstance(self.element_type, NoneType) and self.element_type not in _NAME_OF_TYPE:
            raise VerifyException(
                f"!fkl.image: unsupported element type {self.element_type}; expected one of "
                "ui8, i8, ui16, i16, i32, ui32, f16, bf16, f32, f64, i1"
            )
        if self.planes.data != DYNAMIC and self.planes.data < 1:
            raise VerifyException(f"!fkl.image: planes must be >= 1, got {self.planes.data}")
        if self.layout.data not in ("packed", "planar"):
            raise VerifyException(f"!fkl.image: layout must be packed or planar, got {self.layout.data}")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            pos = parser.pos
            dims, elt = parser.parse_ranked_shape()
            if len(dims) != 3:
                parser.raise_error("expected HxWxC before the element type, e.g. ?x?x3xui8", pos, parser.pos)
            planes, layout = 1, "packed"
            while parser.parse_optional_punctuation(","):
                if parser.parse_optional_keyword("planes"):
                    planes = DYNAMIC if parser.parse_optional_punctuation("?") else parser.parse_integer()
                else:
                    parser.parse_keyword("planar")
                    layout = "planar"
        h, w, c = (DYNAMIC if d < 0 else d for d in dims)
        return (IntAttr(h), IntAttr(w), IntAttr(c), elt, IntAttr(planes), StringAttr(layout))

    def print_parameters(self, printer: Printer) -> None:
        def dim(v: int) -> str:
            return "?" if v == DYNAMIC else str(v)

        with printer.in_angle_brackets():
            printer.print_string(f"{dim(self.height.data)}x{dim(self.width.data)}x{dim(self.channels.data)}x")
            printer.print_attribute(self.element_type)
            if self.planes.data != 1:
                printer.print_string(f", planes {dim(self.planes.data)}")
            if self.layout.data == "planar":
                printer.print_string(", planar")


PARAM_KINDS = (*(record.slot_kind for record in dtypes.DTYPES), "rect")

# The most elements one slot may hold. A kernel indexes a slot with an int32 (a plane z, a channel),
# so no op reads further, and a larger count is an array g++ or nvcc may refuse. The tighter limit
# of CUDA on a whole parameter block (32764 bytes) belongs to the GPU target: a GPU build checks it
# (fklir/runtime/launch.py check_param_block), while the CPU entry takes its block by pointer.
MAX_SLOT_COUNT = I32_MAX


@irdl_attr_definition
class ParamsType(ParametrizedAttribute, TypeAttribute):
    """A kernel's parameter block: `!fkl.params<mul3: f32 x 3, crop1: rect x 2>`.

    Each slot has a name, a kind (an element type, `rect` = 4 x i32) and a count. Buffers and
    image sizes are not slots: every kernel receives them in a fixed header.
    """

    name = "fkl.params"

    names: ArrayAttr[StringAttr]
    kinds: ArrayAttr[StringAttr]
    counts: ArrayAttr[IntAttr]

    def __init__(self, slots: Sequence[tuple[str, str, int]] = ()):
        super().__init__(
            ArrayAttr([StringAttr(n) for n, _, _ in slots]),
            ArrayAttr([StringAttr(k) for _, k, _ in slots]),
            ArrayAttr([IntAttr(c) for _, _, c in slots]),
        )

    @property
    def slots(self) -> list[tuple[str, str, int]]:
        return [
            (n.data, k.data, c.data) for n, k, c in zip(self.names.data, self.kinds.data, self.counts.data, strict=True)
        ]

    def verify(self) -> None:
        if not len(self.names.data) == len(self.kinds.data) == len(self.counts.data):
            raise VerifyException("!fkl.params: names, kinds and counts differ in length")
        seen: set[str] = set()
        for name, kind, count in self.slots:
            if kind not in PARAM_KINDS:
                raise VerifyException(f"!fkl.params: slot {name} has unknown kind {kind}")
            if count < 1:
                raise VerifyException(f"!fkl.params: slot {name} must have a count >= 1, got {count}")
            if count > MAX_SLOT_COUNT:
                limit = f"the limit {MAX_SLOT_COUNT} (the kernel's int32 index)"
                raise VerifyException(f"!fkl.params: slot {name} count {count} exceeds {limit}")
            if name in seen:
                raise VerifyException(f"!fkl.params: slot {name} appears twice")
            seen.add(name)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def parse_slot() -> tuple[str, str, int]:
            name = parser.parse_identifier()
            parser.parse_punctuation(":")
            kind = parser.parse_identifier()
            parser.parse_keyword("x")
            return name, kind, parser.parse_integer(allow_negative=False)

        slots = parser.parse_comma_separated_list(parser.Delimiter.ANGLE, parse_slot)
        return ParamsType(slots).parameters

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(", ".join(f"{n}: {k} x {c}" for n, k, c in self.slots))


# ---------------------------------------------------------------------------------------------
# Shared parsing and printing helpers
# ---------------------------------------------------------------------------------------------


def _parse_types(parser: Parser) -> tuple[Attribute, Attribute]:
    """`: T` (result has the same type) or `: T -> T2`."""
    parser.parse_punctuation(":")
    in_type = parser.parse_type()
    out_type = parser.parse_type() if parser.parse_optional_punctuation("->") else in_type
    return in_type, out_type


def _print_types(printer: Printer, in_type: Attribute, out_type: Attribute) -> None:
    printer.print_string(" : ")
    printer.print_attribute(in_type)
    if out_type != in_type:
        printer.print_string(" -> ")
        printer.print_attribute(out_type)


def _format_number(v: float) -> str:
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


_SPECIAL_NUMBERS = {"nan": math.nan, "inf": math.inf, "ninf": -math.inf}


def _parse_one_number(parser: Parser) -> float:
    if (word := parser.parse_optional_keyword_in(tuple(_SPECIAL_NUMBERS))) is not None:
        return _SPECIAL_NUMBERS[word]
    return _as_float(parser, parser.pos, parser.parse_number())


def _as_float(parser: Parser, pos: int, number: int | float) -> float:
    """`number` as an f64; an integer literal beyond f64's range is a parse error at `pos` (float()
    would raise OverflowError)."""
    if isinstance(number, float) or abs(number) <= sys.float_info.max:
        return float(number)
    parser.raise_error(f"integer literal beyond the f64 range (+-{sys.float_info.max:.6g})", pos, parser.pos)


def _parse_number_list(parser: Parser) -> list[float]:
    """`2.0` or `[1.0, 2.0, 3.0]` (integers allowed)."""
    if parser.parse_optional_punctuation("["):
        values = [_parse_one_number(parser)]
        while parser.parse_optional_punctuation(","):
            values.append(_parse_one_number(parser))
        parser.parse_punctuation("]")
        return values
    return [_parse_one_number(parser)]


def _parse_int64(parser: Parser, op_name: str) -> int:
    """An integer literal that the op's i64 attributes hold as written. xDSL 0.74 stores a literal
    in [2^63, 2^64) in a signless i64 as the negative number of the same bits (2^63 becomes -2^63),
    which a verifier could then take for a small or valid value, so it is refused here, where the
    written number is still known."""
    pos = parser.pos
    return _fit_int64(parser, op_name, pos, parser.parse_integer())


def _fit_int64(parser: Parser, op_name: str, pos: int, value: int) -> int:
    if -I64_MAX - 1 <= value <= I64_MAX:
        return value
    broken = f"exceeds the limit {I64_MAX}" if value > 0 else f"is below the limit {-I64_MAX - 1}"
    parser.raise_error(f"'{op_name}' integer {value} {broken} (int64)", pos, parser.pos)


def _parse_int_list(parser: Parser, op_name: str) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_int64(parser, op_name))


def _parse_slot(parser: Parser) -> StringAttr | None:
    if parser.parse_optional_keyword("param") is None:
        return None
    return StringAttr(parser.parse_str_literal())


def _check_value_or_slot(op: IRDLOperation, value: Attribute | None, slot: StringAttr | None) -> None:
    if (value is None) == (slot is None):
        raise VerifyException(f"'{op.name}' needs exactly one of an inline value or a parameter slot")


def _known(t: Attribute) -> ImageType | None:
    return t if isinstance(t, ImageType) and t.is_known else None


def _check_same_type(op: IRDLOperation, in_type: Attribute, out_type: Attribute) -> None:
    if _known(in_type) and _known(out_type) and in_type != out_type:
        raise VerifyException(f"'{op.name}' result type {out_type} must equal its input type {in_type}")


def _print_number_list(printer: Printer, values: Sequence[float]) -> None:
    """`2.0` for one value, `[1.0, 2.0]` for several (the form `_parse_number_list` reads)."""
    if len(values) == 1:
        printer.print_string(_format_number(values[0]))
        return
    printer.print_string("[" + ", ".join(_format_number(v) for v in values) + "]")


def _print_slot(printer: Printer, slot: StringAttr) -> None:
    printer.print_string("param ")
    printer.print_string_literal(slot.data)


def _check_not_bool(op: IRDLOperation, in_type: ImageType | None, why: str) -> None:
    if in_type is not None and in_type.dtype == "bool":
        raise VerifyException(f"'{op.name}' {why} on a bool chain; Cast to an integer or float type first")


def _check_float(op: IRDLOperation, in_type: ImageType | None) -> None:
    if in_type is not None and not is_float_name(in_type.dtype):
        raise VerifyException(f"'{op.name}' needs a float chain, got {in_type.dtype}")


def _check_integer(op: IRDLOperation, in_type: ImageType | None) -> None:
    if in_type is not None and (is_float_name(in_type.dtype) or in_type.dtype == "bool"):
        raise VerifyException(f"'{op.name}' needs an integer chain, got {in_type.dtype}")


def _check_result(op: IRDLOperation, expected: ImageType | None, out_type: Attribute) -> None:
    """A known result type must equal what the op's rule gives for its known input."""
    known = _known(out_type)
    if expected is not None and known is not None and known != expected:
        raise VerifyException(f"'{op.name}' result type must be {expected}, got {known}")


def reshaped(t: ImageType, channels: int | None = None, element: Attribute | str | None = None) -> ImageType:
    """`t` with another channel count and/or element type (planes and layout kept)."""
    elt = t.element_type if element is None else (element_type(element) if isinstance(element, str) else element)
    return ImageType(elt, t.channels.data if channels is None else channels, t.planes.data, layout=t.layout.data)


# ---------------------------------------------------------------------------------------------
# Values that hoisting moves into the parameter block
# ---------------------------------------------------------------------------------------------
# An op with values lists them in VALUE_FIELDS. Field "value" lives in the properties `value`
# (inline numbers) and `slot` (the parameter slot after hoisting); any other field F lives in
# `F` and `F_slot`. Exactly one of the two is set, except for optional fields, where neither is.


def slot_property(field: str) -> str:
    """The property that names the parameter slot of value field `field`."""
    return "slot" if field == "value" else f"{field}_slot"


def value_fields(op: Operation) -> tuple[str, ...]:
    """The value fields of `op` (empty for ops without values)."""
    return getattr(type(op), "VALUE_FIELDS", ())


def field_values(op: Operation, field: str = "value") -> tuple[float, ...] | None:
    """The inline numbers of one value field, or None when hoisted or absent."""
    attr = op.properties.get(field)
    if not isinstance(attr, DenseArrayBase):
        return None
    return tuple(float(v) for v in attr.get_values())  # pyright: ignore[reportUnknownArgumentType]


def field_slot(op: Operation, field: str = "value") -> str | None:
    """The parameter slot of one value field, or None when inline or absent."""
    attr = op.properties.get(slot_property(field))
    return attr.data if isinstance(attr, StringAttr) else None


def _check_field(op: IRDLOperation, field: str, required: bool = True) -> None:
    has_value = op.properties.get(field) is not None
    has_slot = op.properties.get(slot_property(field)) is not None
    what = "an inline value" if field == "value" else f"an inline {field}"
    if has_value and has_slot:
        raise VerifyException(f"'{op.name}' needs exactly one of {what} or a parameter slot")
    if required and not (has_value or has_slot):
        raise VerifyException(f"'{op.name}' needs exactly one of {what} or a parameter slot")


def _float_array(values: Sequence[float]) -> DenseArrayBase:
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def _int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def _field_properties(field: str, values: DenseArrayBase | None, slot: str | None) -> dict[str, Attribute]:
    properties: dict[str, Attribute] = {}
    if values is not None:
        properties[field] = values
    if slot is not None:
        properties[slot_property(field)] = StringAttr(slot)
    return properties


def _int32(check: Callable[..., object], *args: object) -> None:
    """`check(*args)`, a fklir.limits check; its ValueError (naming the op, the value and the limit)
    becomes a verifier error."""
    try:
        check(*args)
    except ValueError as e:
        raise VerifyException(str(e)) from None


def _int_values(op: Operation, field: str) -> list[int] | None:
    """The inline integers of one value field, exactly (field_values' floats round above 2^53)."""
    attr = op.properties.get(field)
    if not isinstance(attr, DenseArrayBase):
        return None
    return [int(v) for v in attr.get_values()]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]


def _check_size_field(op: IRDLOperation, field: str) -> None:
    """An output size [w, h]: positive, and int32 as the kernels hold it."""
    sizes = _int_values(op, field)
    if sizes is None:
        return
    if len(sizes) != 2 or min(sizes) <= 0:
        raise VerifyException(f"'{op.name}' size must be [w, h] with positive values, got {sizes}")
    for what, value in zip("wh", sizes, strict=True):
        _int32(check_index, f"'{op.name}' size {sizes}", what, value, I32_MAX, 1)


# ---------------------------------------------------------------------------------------------
# Memory ops
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class ReadOp(IRDLOperation):
    """TensorRead: reads packed (H, W[, C]) pixels, or B planes of them, from the buffer `source`.

    `fkl.read "src" : !fkl.image<?x?x3xui8>`

    A list of sources is a pointer table, one image per plane (horizontal batching of images):
    `fkl.read ["src0", "src1"] : !fkl.image<?x?x3xf32, planes 2>`

    After backwards vertical fusion the read carries the geometry it samples through, so each
    thread loads exactly the source pixels it needs; the block argument is the source image:

    ```mlir
    %px = fkl.read "src" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32, planes 3> sample {
    ^bb0(%s : !fkl.image<?x?x3xui8>):
      %c = fkl.crop %s, param "crop1" : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 3>
      %r = fkl.resize %c, param "resize2", linear
          : !fkl.image<?x?x3xui8, planes 3> -> !fkl.image<?x?x3xf32, planes 3>
      fkl.yield %r : !fkl.image<?x?x3xf32, planes 3>
    }
    ```
    """

    name = "fkl.read"
    source = prop_def(StringAttr | ArrayAttr[StringAttr])
    result = result_def(ImageType)
    sample = opt_region_def("single_block")

    def __init__(self, source: str | Sequence[str], result_type: Attribute, sample: Region | None = None):
        source_attr: StringAttr | ArrayAttr[StringAttr] = (
            StringAttr(source) if isinstance(source, str) else ArrayAttr([StringAttr(n) for n in source])
        )
        super().__init__(
            properties={"source": source_attr},
            result_types=[result_type],
            regions=[sample if sample is not None else []],
        )

    @property
    def sources(self) -> list[str]:
        """The buffer names: one, or one per plane for a pointer table."""
        if isinstance(self.source, StringAttr):
            return [self.source.data]
        return [n.data for n in self.source.data]

    @property
    def source_type(self) -> Attribute:
        """The type of the image in memory (before the sampled geometry, if any)."""
        if self.sample is not None and self.sample.blocks and self.sample.block.args:
            return self.sample.block.args[0].type
        return self.result.type

    @property
    def geometry(self) -> list[Operation]:
        """The geometry ops folded into this read, in order (empty when none)."""
        if self.sample is None or not self.sample.blocks:
            return []
        return [op for op in self.sample.block.ops if not isinstance(op, YieldOp)]

    @classmethod
    def parse(cls, parser: Parser) -> ReadOp:
        if parser.parse_optional_punctuation("["):
            names = [parser.parse_str_literal()]
            while parser.parse_optional_punctuation(","):
                names.append(parser.parse_str_literal())
            parser.parse_punctuation("]")
            source: str | list[str] = names
        else:
            source = parser.parse_str_literal()
        source_type, result_type = _parse_types(parser)
        sample = parser.parse_region() if parser.parse_optional_keyword("sample") else None
        if sample is None and source_type != result_type:
            parser.raise_error("'fkl.read' without a sample region reads its result type: write `: T` only")
        return ReadOp(source, result_type, sample)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        if isinstance(self.source, StringAttr):
            printer.print_string_literal(self.source.data)
        else:
            printer.print_string("[")
            printer.print_list(self.sources, printer.print_string_literal)
            printer.print_string("]")
        _print_types(printer, self.source_type, self.result.type)
        if self.sample is not None and self.sample.blocks:
            printer.print_string(" sample ")
            printer.print_region(self.sample, print_entry_block_args=True)

    def verify_(self) -> None:
        if not all(self.sources):
            raise VerifyException("'fkl.read' needs non-empty source names")
        if not isinstance(self.result.type, ImageType) or not self.result.type.is_known:
            raise VerifyException("'fkl.read' result type must give the element type and channel count")
        if isinstance(self.source, ArrayAttr) and self.result.type.planes.data not in (
            DYNAMIC,
            len(self.sources),
        ):
            raise VerifyException(
                f"'fkl.read' reads {len(self.sources)} sources into {self.result.type.planes.data} planes"
            )
        if self.sample is None or not self.sample.blocks:
            return
        block = self.sample.block
        if len(block.args) != 1 or not isinstance(block.args[0].type, ImageType):
            raise VerifyException("'fkl.read' sample region takes one !fkl.image argument (the source)")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise VerifyException("'fkl.read' sample region must end with fkl.yield")
        if last.input.type != self.result.type:
            raise VerifyException(f"'fkl.read' yields {last.input.type} but its result type is {self.result.type}")
        for op in self.geometry:
            if not isinstance(op, GEOMETRY_OPS):
                raise VerifyException(f"'fkl.read' sample region holds only geometry ops, not '{op.name}'")


@irdl_op_definition
class YieldOp(IRDLOperation):
    """Ends a read's sample region: `fkl.yield %v : T` (the sampled pixel)."""

    name = "fkl.yield"
    input = operand_def(ImageType)
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ReadOp)))

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input])

    @classmethod
    def parse(cls, parser: Parser) -> YieldOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(":")
        return YieldOp(parser.resolve_operand(operand, parser.parse_type()))

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)


class _WriteLikeOp(IRDLOperation):
    """Shared shape of the write ops: `fkl.<op> %v, "dst" : T`.

    `planes [i, j]` writes the value's planes to planes i, j of `dest` (several chains sharing
    one output: the frontend's per-ROI and per-image chains, and divergent batches).
    """

    input = operand_def(ImageType)
    dest = prop_def(StringAttr)
    planes = opt_prop_def(DenseArrayBase[IntegerType])

    def __init__(self, input: SSAValue, dest: str, planes: Sequence[int] | None = None):
        properties: dict[str, Attribute] = {"dest": StringAttr(dest)}
        if planes is not None:
            properties["planes"] = DenseArrayBase.from_list(i64, list(planes))
        super().__init__(operands=[input], properties=properties)

    @property
    def plane_list(self) -> list[int] | None:
        return None if self.planes is None else [int(v) for v in self.planes.get_values()]

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        dest = parser.parse_str_literal()
        planes = _parse_int_list(parser, cls.name) if parser.parse_optional_keyword("planes") else None
        parser.parse_punctuation(":")
        t = parser.parse_type()
        return cls(parser.resolve_operand(operand, t), dest, planes)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        printer.print_string_literal(self.dest.data)
        if (planes := self.plane_list) is not None:
            printer.print_string(" planes [" + ", ".join(map(str, planes)) + "]")
        printer.print_string(" : ")
        printer.print_attribute(self.input.type)

    def verify_(self) -> None:
        if not self.dest.data:
            raise VerifyException(f"'{self.name}' needs a non-empty destination name")
        planes = self.plane_list
        if planes is not None and (not planes or min(planes) < 0 or len(set(planes)) != len(planes)):
            raise VerifyException(f"'{self.name}' planes must be distinct indices >= 0, got {planes}")
        for plane in planes or ():
            _int32(check_index, f"'{self.name}' planes", "plane", plane)


@irdl_op_definition
class WriteOp(_WriteLikeOp):
    """TensorWrite: writes packed pixels to the buffer `dest` ((H, W[, C]) or (B, H, W[, C])).

    `fkl.write %v, "dst" : !fkl.image<?x?x3xui8>`
    """

    name = "fkl.write"


@irdl_op_definition
class SplitOp(_WriteLikeOp):
    """TensorSplit: writes packed pixels as planar [B][C][H][W] to the buffer `dest`.

    `fkl.split %v, "dst" : !fkl.image<?x?x3xf32, planes 64>`
    """

    name = "fkl.split"


@irdl_op_definition
class TSplitOp(_WriteLikeOp):
    """TensorTSplit: writes packed pixels as [C][B][H][W] to the buffer `dest` (channel-major).

    `fkl.tsplit %v, "dst" : !fkl.image<?x?x3xf32, planes 8>`
    """

    name = "fkl.tsplit"


@irdl_op_definition
class SplitWriteOp(_WriteLikeOp):
    """SplitWrite: channel c goes to its own buffer, the c-th of the table `dest` ((B, H, W) each).

    `fkl.split_write %v, "dst" : !fkl.image<?x?x3xui8>`
    """

    name = "fkl.split_write"


# ---------------------------------------------------------------------------------------------
# The type rule of an op between the read and the write
# ---------------------------------------------------------------------------------------------


class TypeRuleOp(IRDLOperation):
    """An op whose result type follows from its input type by `result_for`.

    `result_for` is the op's one type rule: the verifier applies it once the input type is known,
    and fkl-infer-types takes the result type from it, so a rule that depends on the element type,
    channels or planes (bool chains, values that must fit the chain, a plane per rect) is written
    only there.
    """

    def result_for(self, in_type: ImageType) -> ImageType:
        """The result type for a known input type; raises VerifyException naming the op and rule."""
        raise NotImplementedError

    def known_input(self) -> ImageType | None:
        return _known(self.operands[0].type)

    def check_result_rule(self) -> None:
        """With a known input, a known result type must be what `result_for` gives."""
        if (in_type := self.known_input()) is not None:
            _check_result(self, self.result_for(in_type), self.results[0].type)


# ---------------------------------------------------------------------------------------------
# Arithmetic: one value per channel (or one broadcast value) in the chain's element type
# ---------------------------------------------------------------------------------------------


def _arithmetic_result(op: IRDLOperation, body: str, in_type: ImageType) -> ImageType:
    """The rule of fkl.add ... fkl.min and of fkl.static_loop's `body`: the type is kept; values
    one per channel (or one), representable in the element type; no integer division by zero."""
    if body not in ("max", "min"):  # max/min of bools are or/and; the rest is arithmetic
        _check_not_bool(op, in_type, "computes arithmetic")
    if (values := field_values(op)) is not None:
        check_values_fit_chain(op.name, values, in_type.channels.data, in_type.dtype)
        if body == "div":
            check_no_integer_division_by_zero(op.name, values, in_type.dtype)
    return in_type


class BinaryValueOp(TypeRuleOp):
    """`fkl.<op> %x, 2.0 : T` or `fkl.<op> %x, [1.0, 2.0, 3.0] : T`; hoisted `fkl.<op> %x, param "s" : T`."""

    FORMULA: ClassVar[str]
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)

    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        value: Sequence[float] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        properties: dict[str, Attribute] = {}
        if value is not None:
            properties["value"] = DenseArrayBase.from_list(f64, [float(v) for v in value])
        if slot is not None:
            properties["slot"] = StringAttr(slot)
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @property
    def values(self) -> tuple[float, ...]:
        """The inline values (empty after hoisting)."""
        if self.value is None:
            return ()
        return tuple(float(v) for v in self.value.get_values())

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        values = None if slot else _parse_number_list(parser)
        in_type, out_type = _parse_types(parser)
        return cls(parser.resolve_operand(operand, in_type), values, out_type, slot.data if slot else None)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            printer.print_string("param ")
            printer.print_string_literal(self.slot.data)
        elif len(self.values) == 1:
            printer.print_string(_format_number(self.values[0]))
        else:
            printer.print_string("[" + ", ".join(_format_number(v) for v in self.values) + "]")
        _print_types(printer, self.input.type, self.result.type)

    def result_for(self, in_type: ImageType) -> ImageType:
        return _arithmetic_result(self, self.name.removeprefix("fkl."), in_type)

    def verify_(self) -> None:
        _check_value_or_slot(self, self.value, self.slot)
        _check_same_type(self, self.input.type, self.result.type)
        if self.value is not None and not self.values:
            raise VerifyException(f"'{self.name}' needs at least one value")
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)


def check_no_integer_division_by_zero(op_name: str, values: Sequence[float], dtype: str) -> None:
    if not is_float_name(dtype) and 0.0 in values:
        raise VerifyException(f"'{op_name}' divides an integer chain ({dtype}) by zero")


def check_values_fit_chain(op_name: str, values: Sequence[float], channels: int, dtype: str) -> None:
    """The per-channel arity and integer-representability rules of SPEC §3 (raises VerifyException)."""
    if len(values) not in (1, channels):
        raise VerifyException(
            f"'{op_name}' has {len(values)} values but the chain has {channels} channels "
            "(give one value or one per channel)"
        )
    check_values_representable(op_name, values, dtype)


def check_values_representable(op_name: str, values: Sequence[float], dtype: str) -> None:
    """Integer (and bool) chains take only integral values inside their range (SPEC §3)."""
    record = dtypes.BY_NAME.get(dtype)
    if record is None or (limits := record.integer_range) is None:
        return
    lo, hi = limits
    for v in values:
        if not (math.isfinite(v) and v == int(v) and lo <= v <= hi):
            raise VerifyException(
                f"'{op_name}' value {v} is not representable in the chain's element type {dtype}; Cast to float first"
            )


@irdl_op_definition
class AddOp(BinaryValueOp):
    """Add: out = x + v (integers wrap modulo 2^bits)."""

    name = "fkl.add"
    FORMULA: ClassVar[str] = "x + v"


@irdl_op_definition
class SubOp(BinaryValueOp):
    """Sub: out = x - v (integers wrap modulo 2^bits)."""

    name = "fkl.sub"
    FORMULA: ClassVar[str] = "x - v"


@irdl_op_definition
class MulOp(BinaryValueOp):
    """Mul: out = x * v (integers wrap modulo 2^bits)."""

    name = "fkl.mul"
    FORMULA: ClassVar[str] = "x * v"


@irdl_op_definition
class DivOp(BinaryValueOp):
    """Div: out = x / v (integers truncate toward zero; v = 0 on integers is rejected)."""

    name = "fkl.div"
    FORMULA: ClassVar[str] = "x / v"


@irdl_op_definition
class MaxOp(BinaryValueOp):
    """Max: out = x >= v ? x : v."""

    name = "fkl.max"
    FORMULA: ClassVar[str] = "x >= v ? x : v"


@irdl_op_definition
class MinOp(BinaryValueOp):
    """Min: out = x <= v ? x : v."""

    name = "fkl.min"
    FORMULA: ClassVar[str] = "x <= v ? x : v"


# ---------------------------------------------------------------------------------------------
# Casts
# ---------------------------------------------------------------------------------------------


class CastLikeOp(TypeRuleOp):
    """`fkl.<op> %x to f32 : T -> T2`."""

    input = operand_def(ImageType)
    to = prop_def(TypeAttribute)
    result = result_def(ImageType)

    def __init__(self, input: SSAValue, to: Attribute | str, result_type: Attribute | None = None):
        to_type = element_type(to) if isinstance(to, str) else to
        super().__init__(
            operands=[input], properties={"to": to_type}, result_types=[result_type or ImageType.unknown()]
        )

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        parser.parse_keyword("to")
        to = parser.parse_type()
        in_type, out_type = _parse_types(parser)
        return cls(parser.resolve_operand(operand, in_type), to, out_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(" to ")
        printer.print_attribute(self.to)
        _print_types(printer, self.input.type, self.result.type)

    def result_for(self, in_type: ImageType) -> ImageType:
        return in_type.with_element(self.to)

    def verify_(self) -> None:
        if self.to not in _NAME_OF_TYPE:
            raise VerifyException(f"'{self.name}' cannot cast to {self.to}: not an fkl element type")
        out_type = _known(self.result.type)
        if out_type is None:
            return
        if out_type.element_type != self.to:
            raise VerifyException(f"'{self.name}' result element type must be {self.to}, got {out_type}")
        in_type = _known(self.input.type)
        if in_type and in_type.channels != out_type.channels:
            raise VerifyException(f"'{self.name}' must keep the channel count ({in_type} -> {out_type})")


@irdl_op_definition
class CastOp(CastLikeOp):
    """Cast: C conversion (float -> int truncates toward zero)."""

    name = "fkl.cast"


@irdl_op_definition
class SaturateCastOp(CastLikeOp):
    """SaturateCast: clamp to the target range, round half to even, NaN -> 0."""

    name = "fkl.saturate_cast"


# ---------------------------------------------------------------------------------------------
# Shapes of the compute ops without values: `fkl.<op> %x : T -> T2`, `fkl.<op> %x, WORD : T -> T2`
# ---------------------------------------------------------------------------------------------


class _UnaryOp(TypeRuleOp):
    """`fkl.<op> %x : T -> T2`: the op's rule gives the result type from the input type."""

    input = operand_def(ImageType)
    result = result_def(ImageType)

    def __init__(self, input: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[input], result_types=[result_type or ImageType.unknown()])

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        in_type, out_type = _parse_types(parser)
        return cls(parser.resolve_operand(operand, in_type), out_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        self.check_result_rule()


class _WordOp(TypeRuleOp):
    """`fkl.<op> %x, WORD : T -> T2`: WORD (one of CHOICES) is structural, part of the cache key."""

    CHOICES: ClassVar[tuple[str, ...]]
    WHAT: ClassVar[str]

    input = operand_def(ImageType)
    word = prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(self, input: SSAValue, word: str, result_type: Attribute | None = None):
        super().__init__(
            operands=[input],
            properties={"word": StringAttr(word)},
            result_types=[result_type or ImageType.unknown()],
        )

    @classmethod
    def parse(cls, parser: Parser):
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        word = parser.parse_identifier()
        in_type, out_type = _parse_types(parser)
        return cls(parser.resolve_operand(operand, in_type), word, out_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f", {self.word.data}")
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        if self.word.data not in self.CHOICES:
            raise VerifyException(
                f"'{self.name}' {self.WHAT} must be one of {', '.join(self.CHOICES)}, got {self.word.data}"
            )
        self.check_result_rule()


# ---------------------------------------------------------------------------------------------
# Clamps that keep the type
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class SaturateOp(TypeRuleOp):
    """Saturate(lo, hi): clamp each channel to [lo, hi] in the chain type (NaN passes through).

    `fkl.saturate %x, 0.0, 1.0 : T`, `fkl.saturate %x, [0, 0, 0], [9, 99, 255] : T`; hoisted:
    `fkl.saturate %x, param "saturate1" : T` (the slot holds the C lower bounds, then the C upper ones).
    The inline `value` holds lo then hi, both with one value or one per channel.
    """

    name = "fkl.saturate"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        bounds: tuple[Sequence[float], Sequence[float]] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        values = None
        if bounds is not None:
            lo, hi = list(bounds[0]), list(bounds[1])
            if len(lo) != len(hi) and 1 in (len(lo), len(hi)):  # one side broadcasts to the other
                n = max(len(lo), len(hi))
                lo, hi = (lo * n if len(lo) == 1 else lo), (hi * n if len(hi) == 1 else hi)
            if len(lo) != len(hi):
                raise VerifyException(f"'fkl.saturate' needs lower and upper bounds of one length, got {lo} and {hi}")
            values = _float_array([*lo, *hi])
        super().__init__(
            operands=[input],
            properties=_field_properties("value", values, slot),
            result_types=[result_type or ImageType.unknown()],
        )

    @property
    def bounds(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """(lo, hi) as written inline (empty after hoisting)."""
        values = field_values(self) or ()
        half = len(values) // 2
        return tuple(values[:half]), tuple(values[half:])

    @classmethod
    def parse(cls, parser: Parser) -> SaturateOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        bounds = None
        if slot is None:
            pos = parser.pos
            lo = _parse_number_list(parser)
            parser.parse_punctuation(",")
            hi = _parse_number_list(parser)
            if len(lo) != len(hi) and 1 not in (len(lo), len(hi)):
                parser.raise_error(
                    f"'fkl.saturate' needs lower and upper bounds of one length (or one value), got {lo} and {hi}",
                    pos,
                    parser.pos,
                )
            bounds = (lo, hi)
        in_type, out_type = _parse_types(parser)
        return SaturateOp(parser.resolve_operand(operand, in_type), bounds, out_type, slot.data if slot else None)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            _print_slot(printer, self.slot)
        else:
            lo, hi = self.bounds
            _print_number_list(printer, lo)
            printer.print_string(", ")
            _print_number_list(printer, hi)
        _print_types(printer, self.input.type, self.result.type)

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_not_bool(self, in_type, "clamps")
        lo, hi = self.bounds
        if lo:  # hoisted bounds were checked before hoisting
            check_values_fit_chain(self.name, lo, in_type.channels.data, in_type.dtype)
            check_values_fit_chain(self.name, hi, in_type.channels.data, in_type.dtype)
        return in_type

    def verify_(self) -> None:
        _check_field(self, "value")
        _check_same_type(self, self.input.type, self.result.type)
        if self.value is not None:
            lo, hi = self.bounds
            if not lo or len(self.value.get_values()) % 2:
                raise VerifyException(
                    f"'{self.name}' needs lower and upper bounds of one length, got {list(lo)} and {list(hi)}"
                )
            if any(a > b for a, b in zip(lo, hi, strict=True)):
                raise VerifyException(f"'{self.name}' lower bound {list(lo)} is above the upper bound {list(hi)}")
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)


@irdl_op_definition
class SaturateFloatOp(_UnaryOp):
    """SaturateFloat: clamp a float chain to [0, 1] (NaN passes through). `fkl.saturate_float %x : T`"""

    name = "fkl.saturate_float"

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_float(self, in_type)
        return in_type


# ---------------------------------------------------------------------------------------------
# Logic
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class IsEvenOp(_UnaryOp):
    """IsEven: integer -> bool per channel, x mod 2 == 0. `fkl.is_even %x : T -> T2`"""

    name = "fkl.is_even"

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_integer(self, in_type)
        return reshaped(in_type, element="bool")


@irdl_op_definition
class VectorAndOp(_UnaryOp):
    """VectorAnd: boolN -> bool, the AND of all channels. `fkl.vector_and %x : T -> T2`"""

    name = "fkl.vector_and"

    def result_for(self, in_type: ImageType) -> ImageType:
        if in_type.dtype != "bool":
            raise VerifyException(f"'{self.name}' needs a bool chain, got {in_type.dtype}")
        return reshaped(in_type, channels=1)


# ---------------------------------------------------------------------------------------------
# Vector ops
# ---------------------------------------------------------------------------------------------

REDUCTIONS = ("add", "mul", "max", "min")


@irdl_op_definition
class VectorReduceOp(_WordOp):
    """VectorReduce: left fold over the channels, each step in the chain type -> 1 channel.

    `fkl.vector_reduce %x, add : T -> T2` (add, mul, max, min; max/min as fkl.max/fkl.min)
    """

    name = "fkl.vector_reduce"
    CHOICES: ClassVar[tuple[str, ...]] = REDUCTIONS
    WHAT: ClassVar[str] = "reduction"

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_not_bool(self, in_type, "reduces")
        return reshaped(in_type, channels=1)


@irdl_op_definition
class DiscardOp(TypeRuleOp):
    """Discard(keep_n): keep the first keep_n channels. `fkl.discard %x, 2 : T -> T2`"""

    name = "fkl.discard"
    input = operand_def(ImageType)
    keep_attr = prop_def(IntegerAttr[I64], prop_name="keep")
    result = result_def(ImageType)

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

    @classmethod
    def parse(cls, parser: Parser) -> DiscardOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        keep = _parse_int64(parser, cls.name)
        in_type, out_type = _parse_types(parser)
        return DiscardOp(parser.resolve_operand(operand, in_type), keep, out_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f", {self.keep.data}")
        _print_types(printer, self.input.type, self.result.type)

    def result_for(self, in_type: ImageType) -> ImageType:
        keep, channels = self.keep.data, in_type.channels.data
        if not 1 <= keep <= channels:
            raise VerifyException(f"'{self.name}' keeps {keep} channels of a chain of {channels} (1 to {channels})")
        return reshaped(in_type, channels=keep)

    def verify_(self) -> None:
        if not 1 <= self.keep.data <= 4:
            raise VerifyException(f"'{self.name}' keeps 1 to 4 channels, got {self.keep.data}")
        self.check_result_rule()


@irdl_op_definition
class AddLastOp(TypeRuleOp):
    """AddLast(v): append one channel holding v (in the chain type). `fkl.add_last %x, 1.0 : T -> T2`"""

    name = "fkl.add_last"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        value: float | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        values = None if value is None else _float_array([value])
        super().__init__(
            operands=[input],
            properties=_field_properties("value", values, slot),
            result_types=[result_type or ImageType.unknown()],
        )

    @classmethod
    def parse(cls, parser: Parser) -> AddLastOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        value = None if slot else _parse_one_number(parser)
        in_type, out_type = _parse_types(parser)
        return AddLastOp(parser.resolve_operand(operand, in_type), value, out_type, slot.data if slot else None)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            _print_slot(printer, self.slot)
        else:
            _print_number_list(printer, field_values(self) or ())
        _print_types(printer, self.input.type, self.result.type)

    def result_for(self, in_type: ImageType) -> ImageType:
        channels = in_type.channels.data
        if channels >= 4:
            raise VerifyException(f"'{self.name}' cannot append a channel to a chain of {channels} (at most 4)")
        if (values := field_values(self)) is not None:
            check_values_representable(self.name, values, in_type.dtype)
        return reshaped(in_type, channels=channels + 1)

    def verify_(self) -> None:
        _check_field(self, "value")
        values = field_values(self)
        if values is not None and len(values) != 1:
            raise VerifyException(f"'{self.name}' appends one value, got {len(values)}")
        self.check_result_rule()


def _check_order(op: IRDLOperation, order: Sequence[float], channels: int | None) -> None:
    if not 1 <= len(order) <= 4:
        raise VerifyException(f"'{op.name}' gives {len(order)} indices; a pixel has 1 to 4 channels")
    if channels is None:
        return
    bad = [int(i) for i in order if not (i == int(i) and 0 <= i < channels)]
    if bad:
        raise VerifyException(f"'{op.name}' indices {bad} are out of range for a chain of {channels} channels")


@irdl_op_definition
class VectorReorderOp(TypeRuleOp):
    """VectorReorder(i0, i1, ...): output channel k is input channel i_k (compile-time; repeats allowed).

    `fkl.vector_reorder %x, [2, 1, 0] : T -> T2`
    """

    name = "fkl.vector_reorder"
    input = operand_def(ImageType)
    order = prop_def(DenseArrayBase[IntegerType])
    result = result_def(ImageType)

    def __init__(self, input: SSAValue, order: Sequence[int], result_type: Attribute | None = None):
        super().__init__(
            operands=[input],
            properties={"order": _int_array(order)},
            result_types=[result_type or ImageType.unknown()],
        )

    @property
    def indices(self) -> list[int]:
        return [int(v) for v in self.order.get_values()]

    @classmethod
    def parse(cls, parser: Parser) -> VectorReorderOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        order = _parse_int_list(parser, cls.name)
        in_type, out_type = _parse_types(parser)
        return VectorReorderOp(parser.resolve_operand(operand, in_type), order, out_type)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", [" + ", ".join(map(str, self.indices)) + "]")
        _print_types(printer, self.input.type, self.result.type)

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_order(self, self.indices, in_type.channels.data)
        return reshaped(in_type, channels=len(self.indices))

    def verify_(self) -> None:
        _check_order(self, self.indices, None)
        self.check_result_rule()


@irdl_op_definition
class VectorReorderRTOp(TypeRuleOp):
    """VectorReorderRT(i0, i1, ...): like fkl.vector_reorder, but the indices are a runtime value
    (a parameter slot after hoisting): changing them reuses the binary. The count is structural.

    `fkl.vector_reorder_rt %x, [2, 1, 0] : T -> T2`; hoisted `fkl.vector_reorder_rt %x, param "r1" : T -> T2`
    """

    name = "fkl.vector_reorder_rt"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[IntegerType])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        order: Sequence[int] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        values = None if order is None else _int_array(order)
        super().__init__(
            operands=[input],
            properties=_field_properties("value", values, slot),
            result_types=[result_type or ImageType.unknown()],
        )

    @classmethod
    def parse(cls, parser: Parser) -> VectorReorderRTOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        order = None if slot else _parse_int_list(parser, cls.name)
        in_type, out_type = _parse_types(parser)
        return VectorReorderRTOp(parser.resolve_operand(operand, in_type), order, out_type, slot.data if slot else None)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            _print_slot(printer, self.slot)
        else:
            printer.print_string("[" + ", ".join(str(int(v)) for v in field_values(self) or ()) + "]")
        _print_types(printer, self.input.type, self.result.type)

    def result_for(self, in_type: ImageType) -> ImageType:
        order = field_values(self)
        if order is None:  # hoisted: the count is the result's, inferred before hoisting
            out_type = _known(self.result.type)
            if out_type is None:
                raise VerifyException(f"'{self.name}' with a parameter slot needs a known result type")
            return reshaped(in_type, channels=out_type.channels.data)
        _check_order(self, order, in_type.channels.data)
        return reshaped(in_type, channels=len(order))

    def verify_(self) -> None:
        _check_field(self, "value")
        if (order := field_values(self)) is not None:
            _check_order(self, order, None)
        if order is not None or _known(self.result.type) is not None:  # a hoisted order's count is the result's
            self.check_result_rule()


# ---------------------------------------------------------------------------------------------
# Algebraic
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class MxVFloat3Op(TypeRuleOp):
    """MxVFloat3(M): the row-major 3x3 matrix M times the float3 pixel as a column.

    `fkl.mxv_float3 %x, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]] : !fkl.image<?x?x3xf32>`
    """

    name = "fkl.mxv_float3"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        matrix: Sequence[float] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        values = None if matrix is None else _float_array(matrix)
        super().__init__(
            operands=[input],
            properties=_field_properties("value", values, slot),
            result_types=[result_type or ImageType.unknown()],
        )

    @classmethod
    def parse(cls, parser: Parser) -> MxVFloat3Op:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        matrix = None
        if slot is None:
            rows = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_number_list(parser))
            matrix = [v for row in rows for v in row]
        in_type, out_type = _parse_types(parser)
        return MxVFloat3Op(parser.resolve_operand(operand, in_type), matrix, out_type, slot.data if slot else None)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            _print_slot(printer, self.slot)
        else:
            printer.print_string(_format_matrix(field_values(self) or (), 3))
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        _check_field(self, "value")
        _check_same_type(self, self.input.type, self.result.type)
        values = field_values(self)
        if values is not None and len(values) != 9:
            raise VerifyException(f"'{self.name}' needs a 3x3 matrix (9 numbers), got {len(values)}")
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def result_for(self, in_type: ImageType) -> ImageType:
        if in_type.dtype != "float32" or in_type.channels.data != 3:
            raise VerifyException(
                f"'{self.name}' needs a chain of exactly float32 x 3, got {in_type.dtype} x {in_type.channels.data}"
            )
        return in_type


def _format_matrix(values: Sequence[float], columns: int) -> str:
    rows = [values[i : i + columns] for i in range(0, len(values), columns)]
    return "[" + ", ".join("[" + ", ".join(_format_number(v) for v in row) + "]" for row in rows) + "]"


# ---------------------------------------------------------------------------------------------
# Control
# ---------------------------------------------------------------------------------------------

LOOP_BODIES = ("add", "sub", "mul", "div", "max", "min")


@irdl_op_definition
class StaticLoopOp(TypeRuleOp):
    """StaticLoop(op, n): the binary op applied n times (n compile-time), its value in one slot.

    `fkl.static_loop %x, mul 2.0, 3 : T` (x * 2 * 2 * 2, each step in the chain type);
    hoisted `fkl.static_loop %x, mul param "static_loop1", 3 : T`.
    """

    name = "fkl.static_loop"
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
        properties = _field_properties("value", None if values is None else _float_array(values), slot)
        properties |= {"body": StringAttr(body), "count": IntegerAttr(count, 64)}
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @property
    def count(self) -> IntAttr:
        """How many times the body op is applied (as `.data`)."""
        return self.count_attr.value

    @classmethod
    def parse(cls, parser: Parser) -> StaticLoopOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        body = parser.parse_identifier()
        slot = _parse_slot(parser)
        values = None if slot else _parse_number_list(parser)
        parser.parse_punctuation(",")
        count = _parse_int64(parser, cls.name)
        in_type, out_type = _parse_types(parser)
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
            _print_slot(printer, self.slot)
        else:
            _print_number_list(printer, field_values(self) or ())
        printer.print_string(f", {self.count.data}")
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        _check_field(self, "value")
        _check_same_type(self, self.input.type, self.result.type)
        if self.body.data not in LOOP_BODIES:
            raise VerifyException(
                f"'{self.name}' body must be one of {', '.join(LOOP_BODIES)} (a binary op), got {self.body.data}"
            )
        if self.count.data < 1:
            raise VerifyException(f"'{self.name}' applies its op n >= 1 times, got {self.count.data}")
        # the kernel unrolls the loop over an int template parameter
        _int32(check_index, f"'{self.name}'", "n", self.count.data)
        values = field_values(self)
        if values is not None and not values:
            raise VerifyException(f"'{self.name}' needs at least one value")
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def result_for(self, in_type: ImageType) -> ImageType:
        return _arithmetic_result(self, self.body.data, in_type)


# ---------------------------------------------------------------------------------------------
# Colour
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class ColorConversionOp(_WordOp):
    """ColorConversion(code): cv2.cvtColor's meaning; the element type is kept.

    `fkl.color_conversion %x, RGB2GRAY : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x1xui8>`
    Gray: (9798 R + 19235 G + 3735 B + 16384) >> 15 on integers, 0.299 R + 0.587 G + 0.114 B on
    floats. Added alpha: 255 (ui8), 65535 (ui16), 1.0 (floats), the largest value (other integers).
    """

    name = "fkl.color_conversion"
    CHOICES: ClassVar[tuple[str, ...]] = tuple(COLOR_CODES)
    WHAT: ClassVar[str] = "code"

    @property
    def code(self) -> ColorCode:
        return COLOR_CODES[self.word.data]

    def result_for(self, in_type: ImageType) -> ImageType:
        code, channels = self.code, in_type.channels.data
        if channels != code.in_channels:
            raise VerifyException(
                f"'{self.name}' {self.word.data} needs {code.in_channels} channels, the chain has {channels}"
            )
        if code.red_index is not None:
            _check_not_bool(self, in_type, "computes gray")
        return reshaped(in_type, channels=code.out_channels)


# ---------------------------------------------------------------------------------------------
# Geometry (must follow the read directly, or each other)
# ---------------------------------------------------------------------------------------------


@irdl_op_definition
class CropOp(TypeRuleOp):
    """Crop: one rect (every plane) or a list of rects (one output plane per rect).

    `fkl.crop %x, rects [[x, y, w, h], ...] : T -> T2`; after hoisting `fkl.crop %x, param "crop1" : T -> T2`.
    """

    name = "fkl.crop"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[IntegerType])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        rects: Sequence[Sequence[int]] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        properties: dict[str, Attribute] = {}
        if rects is not None:
            flat = [int(v) for r in rects for v in r]
            properties["value"] = DenseArrayBase.from_list(i64, flat)
        if slot is not None:
            properties["slot"] = StringAttr(slot)
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @property
    def rects(self) -> list[tuple[int, int, int, int]]:
        if self.value is None:
            return []
        flat = [int(v) for v in self.value.get_values()]
        return [(flat[i], flat[i + 1], flat[i + 2], flat[i + 3]) for i in range(0, len(flat), 4)]

    @classmethod
    def parse(cls, parser: Parser) -> CropOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        rects = None
        if slot is None:
            parser.parse_keyword("rects")
            rects = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, lambda: _parse_int_list(parser, cls.name)
            )
        in_type, out_type = _parse_types(parser)
        return CropOp(parser.resolve_operand(operand, in_type), rects, out_type, slot.data if slot else None)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            printer.print_string("param ")
            printer.print_string_literal(self.slot.data)
        else:
            printer.print_string("rects [" + ", ".join(f"[{x}, {y}, {w}, {h}]" for x, y, w, h in self.rects) + "]")
        _print_types(printer, self.input.type, self.result.type)

    def result_for(self, in_type: ImageType) -> ImageType:
        """One rect keeps the plane count; several make one plane per rect, of a one-plane input or
        one rect per plane."""
        planes = in_type.planes.data
        if self.value is None:  # hoisted: the plane count was inferred before
            out_type = _known(self.result.type)
            return in_type if out_type is None else in_type.with_planes(out_type.planes.data)
        n = len(self.rects)
        if n == 1:
            return in_type
        if planes in (1, n):
            return in_type.with_planes(n)
        raise VerifyException(f"'fkl.crop' has {n} rects for an input of {planes} planes (give 1, or one per plane)")

    def verify_(self) -> None:
        _check_value_or_slot(self, self.value, self.slot)
        if self.value is None:
            return
        flat = list(self.value.get_values())
        if not flat or len(flat) % 4:
            raise VerifyException(f"'fkl.crop' rects must be groups of [x, y, w, h], got {len(flat)} numbers")
        bordered = _follows_border(self)
        for x, y, w, h in self.rects:
            if w <= 0 or h <= 0:
                raise VerifyException(f"'fkl.crop' rect [{x}, {y}, {w}, {h}] must have a positive width and height")
            rect = f"'fkl.crop' rect [{x}, {y}, {w}, {h}]"
            _int32(check_span, rect, "", ("x", x), ("w", w))
            _int32(check_span, rect, "", ("y", y), ("h", h))
            if (x < 0 or y < 0) and not bordered:
                raise VerifyException(
                    f"'fkl.crop' rect [{x}, {y}, {w}, {h}] starts outside the image; "
                    "only a crop right after fkl.border may leave it"
                )
        # the plane rule is left to fkl-infer-types, which names both the written and the inferred type


def _follows_border(op: IRDLOperation) -> bool:
    """Whether `op`'s input comes straight from an fkl.border (which defines every coordinate)."""
    return isinstance(op.operands[0].owner, BorderOp)


INTERPOLATIONS = ("linear", "nearest")
ASPECT_RATIOS = ("ignore", "preserve", "preserve_left", "preserve_even")


@irdl_op_definition
class ResizeOp(TypeRuleOp):
    """Resize to (w, h): linear (OpenCV INTER_LINEAR, output f32) or nearest (keeps the type).

    `fkl.resize %x, size [224, 224], linear : T -> T2`. With an aspect-ratio mode other than
    `ignore` the source keeps its proportions inside the output and the rest is `background`
    (in the result's element type, one value or one per channel):
    `fkl.resize %x, size [224, 224], linear, preserve, background [0.0, 0.0, 0.0] : T -> T2`.
    """

    name = "fkl.resize"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value", "background")
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[IntegerType])
    slot = opt_prop_def(StringAttr)
    interp = prop_def(StringAttr)
    aspect_ratio = opt_prop_def(StringAttr)
    background = opt_prop_def(DenseArrayBase[Float64Type])
    background_slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        size: Sequence[int] | None,
        interp: str = "linear",
        result_type: Attribute | None = None,
        slot: str | None = None,
        aspect_ratio: str = "ignore",
        background: Sequence[float] | None = None,
        background_slot: str | None = None,
    ):
        properties: dict[str, Attribute] = {"interp": StringAttr(interp)}
        properties |= _field_properties("value", None if size is None else _int_array(size), slot)
        if aspect_ratio != "ignore":
            properties["aspect_ratio"] = StringAttr(aspect_ratio)
        bg = None if background is None else _float_array(background)
        properties |= _field_properties("background", bg, background_slot)
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @property
    def size(self) -> tuple[int, int]:
        if self.value is None:
            return (0, 0)
        w, h = (int(v) for v in self.value.get_values())
        return w, h

    @property
    def mode(self) -> str:
        """The aspect-ratio mode ("ignore" when not written)."""
        return "ignore" if self.aspect_ratio is None else self.aspect_ratio.data

    @classmethod
    def parse(cls, parser: Parser) -> ResizeOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        size = None
        if slot is None:
            parser.parse_keyword("size")
            size = _parse_int_list(parser, cls.name)
        parser.parse_punctuation(",")
        interp = parser.parse_identifier()
        aspect_ratio, background, background_slot = "ignore", None, None
        if parser.parse_optional_punctuation(","):
            aspect_ratio = parser.parse_identifier()
            parser.parse_punctuation(",")
            parser.parse_keyword("background")
            if (bg_slot := _parse_slot(parser)) is not None:
                background_slot = bg_slot.data
            else:
                background = _parse_number_list(parser)
        in_type, out_type = _parse_types(parser)
        return ResizeOp(
            parser.resolve_operand(operand, in_type),
            size,
            interp,
            out_type,
            slot.data if slot else None,
            aspect_ratio,
            background,
            background_slot,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            _print_slot(printer, self.slot)
        else:
            w, h = self.size
            printer.print_string(f"size [{w}, {h}]")
        printer.print_string(f", {self.interp.data}")
        if self.aspect_ratio is not None:
            printer.print_string(f", {self.aspect_ratio.data}, background ")
            if self.background_slot is not None:
                _print_slot(printer, self.background_slot)
            else:
                _print_number_list(printer, field_values(self, "background") or ())
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        _check_field(self, "value")
        if self.interp.data not in INTERPOLATIONS:
            raise VerifyException(f"'fkl.resize' interpolation must be linear or nearest, got {self.interp.data}")
        if self.mode not in ASPECT_RATIOS:
            raise VerifyException(
                f"'fkl.resize' aspect ratio must be one of {', '.join(ASPECT_RATIOS)}, got {self.mode}"
            )
        _check_size_field(self, "value")
        if self.mode == "ignore":
            if self.background is not None or self.background_slot is not None:
                raise VerifyException("'fkl.resize' takes a background only with a preserve aspect-ratio mode")
        else:
            _check_field(self, "background")
        in_type = self.known_input()
        if in_type is None:
            return
        expected = self.result_for(in_type)
        out_type = _known(self.result.type)
        if out_type is not None and out_type.dtype != expected.dtype:
            raise VerifyException(
                f"'fkl.resize' {self.interp.data} must produce {expected.dtype}, got {out_type.dtype}"
            )

    def result_for(self, in_type: ImageType) -> ImageType:
        """Linear interpolates to float32 (not on bool); nearest keeps the type; a background is in
        the result's element type."""
        out = in_type
        if self.interp.data == "linear":
            _check_not_bool(self, in_type, "interpolates linearly")
            out = reshaped(in_type, element="float32")
        if (background := field_values(self, "background")) is not None:
            check_values_fit_chain(self.name, background, out.channels.data, out.dtype)
        return out


BORDER_MODES = ("constant", "replicate", "reflect", "reflect101", "wrap")


@irdl_op_definition
class BorderOp(TypeRuleOp):
    """BorderReader(mode, value): defines the image at EVERY coordinate, however far outside.

    constant (the value, one or one per channel, in the chain type), replicate "aaa|abc|ccc",
    reflect "cba|abc|cba", reflect101 "cb|abc|ba", wrap "abc|abc|abc" — numpy.pad's constant, edge,
    symmetric, reflect and wrap, and cv2.copyMakeBorder. It folds into the read; a following crop
    or warp may then sample outside the image.

    `fkl.border %x, reflect101 : T`, `fkl.border %x, constant [0.0, 0.0, 255.0] : T`
    """

    name = "fkl.border"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    mode = prop_def(StringAttr)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        mode: str,
        value: Sequence[float] | None = None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        properties = _field_properties("value", None if value is None else _float_array(value), slot)
        properties["mode"] = StringAttr(mode)
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @classmethod
    def parse(cls, parser: Parser) -> BorderOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        mode = parser.parse_identifier()
        slot, value = None, None
        if mode == "constant":
            slot = _parse_slot(parser)
            value = None if slot else _parse_number_list(parser)
        in_type, out_type = _parse_types(parser)
        return BorderOp(parser.resolve_operand(operand, in_type), mode, value, out_type, slot.data if slot else None)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f", {self.mode.data}")
        if self.slot is not None:
            printer.print_string(" ")
            _print_slot(printer, self.slot)
        elif (values := field_values(self)) is not None:
            printer.print_string(" ")
            _print_number_list(printer, values)
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        if self.mode.data not in BORDER_MODES:
            raise VerifyException(f"'{self.name}' mode must be one of {', '.join(BORDER_MODES)}, got {self.mode.data}")
        if self.mode.data == "constant":
            _check_field(self, "value")
        elif self.value is not None or self.slot is not None:
            raise VerifyException(f"'{self.name}' takes a value only in constant mode, not {self.mode.data}")
        _check_same_type(self, self.input.type, self.result.type)
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def result_for(self, in_type: ImageType) -> ImageType:
        if (values := field_values(self)) is not None:
            check_values_fit_chain(self.name, values, in_type.channels.data, in_type.dtype)
        return in_type


WARP_KINDS = {"affine": 6, "perspective": 9}


@irdl_op_definition
class WarpOp(TypeRuleOp):
    """Warping(M, w, h): bilinear cv2.warpAffine (M 2x3) / cv2.warpPerspective (M 3x3), output f32.

    M maps SOURCE to DESTINATION as in OpenCV; with `inverse` it is the destination -> source map
    (hoisting always stores that one, inverted in double). A tap outside the source reads the
    border (a directly preceding fkl.border, else constant 0).

    `fkl.warp %x, affine [[1.0, 0.0, 2.5], [0.0, 1.0, -1.0]], size [64, 48] : T -> T2`
    `fkl.warp %x, perspective param "warp1", inverse, size param "warp1_size" : T -> T2`
    """

    name = "fkl.warp"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value", "size")
    input = operand_def(ImageType)
    kind = prop_def(StringAttr)
    inverse = opt_prop_def(UnitAttr)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    size = opt_prop_def(DenseArrayBase[IntegerType])
    size_slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        kind: str,
        matrix: Sequence[float] | None,
        size: Sequence[int] | None,
        inverse: bool = False,
        result_type: Attribute | None = None,
        slot: str | None = None,
        size_slot: str | None = None,
    ):
        properties = _field_properties("value", None if matrix is None else _float_array(matrix), slot)
        properties |= _field_properties("size", None if size is None else _int_array(size), size_slot)
        properties["kind"] = StringAttr(kind)
        if inverse:
            properties["inverse"] = UnitAttr()
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @classmethod
    def parse(cls, parser: Parser) -> WarpOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        kind = parser.parse_identifier()
        slot = _parse_slot(parser)
        matrix = None
        if slot is None:
            rows = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_number_list(parser))
            matrix = [v for row in rows for v in row]
        parser.parse_punctuation(",")
        inverse = parser.parse_optional_keyword("inverse") is not None
        if inverse:
            parser.parse_punctuation(",")
        parser.parse_keyword("size")
        size_slot = _parse_slot(parser)
        size = None if size_slot else _parse_int_list(parser, cls.name)
        in_type, out_type = _parse_types(parser)
        return WarpOp(
            parser.resolve_operand(operand, in_type),
            kind,
            matrix,
            size,
            inverse,
            out_type,
            slot.data if slot else None,
            size_slot.data if size_slot else None,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f", {self.kind.data} ")
        if self.slot is not None:
            _print_slot(printer, self.slot)
        else:
            printer.print_string(_format_matrix(field_values(self) or (), 3))
        if self.inverse is not None:
            printer.print_string(", inverse")
        printer.print_string(", size ")
        if self.size_slot is not None:
            _print_slot(printer, self.size_slot)
        else:
            printer.print_string("[" + ", ".join(str(int(v)) for v in field_values(self, "size") or ()) + "]")
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        _check_field(self, "value")
        _check_field(self, "size")
        if self.kind.data not in WARP_KINDS:
            raise VerifyException(f"'{self.name}' kind must be affine or perspective, got {self.kind.data}")
        matrix = field_values(self)
        expected = WARP_KINDS[self.kind.data]
        if matrix is not None and len(matrix) != expected:
            shape = "2x3" if self.kind.data == "affine" else "3x3"
            raise VerifyException(f"'{self.name}' {self.kind.data} needs a {shape} matrix, got {len(matrix)} numbers")
        if matrix is not None and not all(math.isfinite(v) for v in matrix):
            raise VerifyException(f"'{self.name}' matrix must be finite, got {list(matrix)}")
        _check_size_field(self, "size")
        self.check_result_rule()

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_not_bool(self, in_type, "interpolates linearly")
        return reshaped(in_type, element="float32")


def invert_warp_matrix(values: tuple[float, ...]) -> list[float]:
    """The destination -> source map of a source -> destination 2x3 / 3x3 matrix, in double
    (cv2's convention: the adjugate over the determinant). ValueError when it is singular."""
    if len(values) == 6:
        m00, m01, m02, m10, m11, m12 = values
        det = m00 * m11 - m01 * m10
        if det == 0.0 or not math.isfinite(det):
            raise ValueError(f"matrix {list(values)} is singular")
        d = 1.0 / det
        a00, a01, a10, a11 = m11 * d, -m01 * d, -m10 * d, m00 * d
        return [a00, a01, -a00 * m02 - a01 * m12, a10, a11, -a10 * m02 - a11 * m12]
    m = [values[0:3], values[3:6], values[6:9]]
    cof = [
        m[1][1] * m[2][2] - m[1][2] * m[2][1],
        m[0][2] * m[2][1] - m[0][1] * m[2][2],
        m[0][1] * m[1][2] - m[0][2] * m[1][1],
        m[1][2] * m[2][0] - m[1][0] * m[2][2],
        m[0][0] * m[2][2] - m[0][2] * m[2][0],
        m[0][2] * m[1][0] - m[0][0] * m[1][2],
        m[1][0] * m[2][1] - m[1][1] * m[2][0],
        m[0][1] * m[2][0] - m[0][0] * m[2][1],
        m[0][0] * m[1][1] - m[0][1] * m[1][0],
    ]
    det = m[0][0] * cof[0] + m[0][1] * cof[3] + m[0][2] * cof[6]
    if det == 0.0 or not math.isfinite(det):
        raise ValueError(f"matrix {list(values)} is singular")
    d = 1.0 / det
    return [c * d for c in cof]


DEINTERLACE_MODES = ("blend", "linear")


@irdl_op_definition
class DeinterlaceOp(_WordOp):
    """Deinterlace: blend (row y > 0 -> mean of rows y and y-1) or linear (odd rows -> mean of the
    rows above and below; the last odd row copies the row above); output f32.

    `fkl.deinterlace %x, blend : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>`
    """

    name = "fkl.deinterlace"
    CHOICES: ClassVar[tuple[str, ...]] = DEINTERLACE_MODES
    WHAT: ClassVar[str] = "mode"

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_not_bool(self, in_type, "averages rows")
        return reshaped(in_type, element="float32")


@irdl_op_definition
class ReadSetOp(TypeRuleOp):
    """ReadSet(value, w, h): replaces the read by a w x h image of one constant pixel; the source
    memory is never touched. It directly follows the read, whose type gives element type and channels.

    `fkl.read_set %r, [1.0, 2.0, 3.0], size [64, 48] : !fkl.image<?x?x3xf32>`
    """

    name = "fkl.read_set"
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value", "size")
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    size = opt_prop_def(DenseArrayBase[IntegerType])
    size_slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        value: Sequence[float] | None,
        size: Sequence[int] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
        size_slot: str | None = None,
    ):
        properties = _field_properties("value", None if value is None else _float_array(value), slot)
        properties |= _field_properties("size", None if size is None else _int_array(size), size_slot)
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @classmethod
    def parse(cls, parser: Parser) -> ReadSetOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        value = None if slot else _parse_number_list(parser)
        parser.parse_punctuation(",")
        parser.parse_keyword("size")
        size_slot = _parse_slot(parser)
        size = None if size_slot else _parse_int_list(parser, cls.name)
        in_type, out_type = _parse_types(parser)
        return ReadSetOp(
            parser.resolve_operand(operand, in_type),
            value,
            size,
            out_type,
            slot.data if slot else None,
            size_slot.data if size_slot else None,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            _print_slot(printer, self.slot)
        else:
            _print_number_list(printer, field_values(self) or ())
        printer.print_string(", size ")
        if self.size_slot is not None:
            _print_slot(printer, self.size_slot)
        else:
            printer.print_string("[" + ", ".join(str(int(v)) for v in field_values(self, "size") or ()) + "]")
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        _check_field(self, "value")
        _check_field(self, "size")
        _check_size_field(self, "size")
        _check_same_type(self, self.input.type, self.result.type)
        producer = self.input.owner
        if not isinstance(producer, ReadOp | Block):
            raise VerifyException(f"'{self.name}' must directly follow fkl.read (it replaces what is read)")
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def result_for(self, in_type: ImageType) -> ImageType:
        if (values := field_values(self)) is not None:
            check_values_fit_chain(self.name, values, in_type.channels.data, in_type.dtype)
        return in_type


# ---------------------------------------------------------------------------------------------
# Element-wise math (SPEC §3): each op is one `@math_op` class, its whole declaration
# ---------------------------------------------------------------------------------------------


def _check_math_chain(op: MathUnaryOp | MathValueOp, in_type: ImageType) -> None:
    _check_not_bool(op, in_type, "computes arithmetic")
    if not op.KEEPS_INTEGERS and not is_float_name(in_type.dtype):
        raise VerifyException(f"'{op.name}' needs a float chain, got {in_type.dtype}; Cast to float first")


class MathUnaryOp(_UnaryOp):
    """`fkl.<op> %x : T`: a function of each element that keeps the chain's type.

    FORMULA is the C comment of its emitted statement; NUMPY names the numpy ufunc that is its
    semantics (applied in float64, then rounded to the chain type; on integers in int64, then
    wrapped), which the reference interpreter applies and the C++ struct `fkl::<Name>` must agree with.
    """

    FORMULA: ClassVar[str]
    NUMPY: ClassVar[str]
    KEEPS_INTEGERS: ClassVar[bool] = False

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_math_chain(self, in_type)
        return in_type


class MathValueOp(BinaryValueOp):
    """`fkl.<op> %x, v : T`: a function of each element and the channel's value, as MathUnaryOp."""

    NUMPY: ClassVar[str]
    KEEPS_INTEGERS: ClassVar[bool] = False

    def result_for(self, in_type: ImageType) -> ImageType:
        _check_math_chain(self, in_type)
        return super().result_for(in_type)


# Every @math_op class, in declaration order: the dialect, the reference interpreter and the
# emitter's family rules take them from here, so a new op is its class and its C++ struct.
MATH_OPS: list[type[MathUnaryOp] | type[MathValueOp]] = []

MathT = TypeVar("MathT", bound=MathUnaryOp | MathValueOp)


def math_op(cls: type[MathT]) -> type[MathT]:
    """Define an element-wise math op (irdl_op_definition) and list it in MATH_OPS."""
    op = irdl_op_definition(cls)
    MATH_OPS.append(op)
    return op


@math_op
class AbsOp(MathUnaryOp):
    """Abs: |x|; integers keep their type and wrap like C (abs(INT_MIN) == INT_MIN). `fkl.abs %x : T`"""

    name = "fkl.abs"
    FORMULA: ClassVar[str] = "|x|"
    NUMPY: ClassVar[str] = "abs"
    KEEPS_INTEGERS: ClassVar[bool] = True


@math_op
class SqrtOp(MathUnaryOp):
    """Sqrt: the square root (x < 0 -> NaN). `fkl.sqrt %x : T`"""

    name = "fkl.sqrt"
    FORMULA: ClassVar[str] = "sqrt(x)"
    NUMPY: ClassVar[str] = "sqrt"


@math_op
class ExpOp(MathUnaryOp):
    """Exp: e^x (overflow -> inf). `fkl.exp %x : T`"""

    name = "fkl.exp"
    FORMULA: ClassVar[str] = "exp(x)"
    NUMPY: ClassVar[str] = "exp"


@math_op
class LogOp(MathUnaryOp):
    """Log: the natural logarithm (log(0) = -inf, x < 0 -> NaN). `fkl.log %x : T`"""

    name = "fkl.log"
    FORMULA: ClassVar[str] = "log(x)"
    NUMPY: ClassVar[str] = "log"


@math_op
class PowOp(MathValueOp):
    """Pow: x^v (a negative x with a non-integer v -> NaN). `fkl.pow %x, v : T`"""

    name = "fkl.pow"
    FORMULA: ClassVar[str] = "pow(x, v)"
    NUMPY: ClassVar[str] = "power"


# Ops that change which source pixels an output pixel depends on: they fold into the read.
GEOMETRY_OPS: tuple[type[IRDLOperation], ...] = (ReadSetOp, BorderOp, CropOp, ResizeOp, WarpOp, DeinterlaceOp)
WRITE_OPS: tuple[type[_WriteLikeOp], ...] = (WriteOp, SplitOp, TSplitOp, SplitWriteOp)
# Compute ops that work on each channel alone (channel c of the output depends on channel c of the
# input only): a chain of these runs on flat element runs.
CHANNELWISE_OPS: tuple[type[IRDLOperation], ...] = (
    BinaryValueOp,
    CastLikeOp,
    SaturateOp,
    SaturateFloatOp,
    IsEvenOp,
    StaticLoopOp,
    MathUnaryOp,
)
# Compute ops that mix or change channels: a chain with one of these computes per pixel.
PIXEL_OPS: tuple[type[IRDLOperation], ...] = (
    VectorAndOp,
    VectorReduceOp,
    DiscardOp,
    AddLastOp,
    VectorReorderOp,
    VectorReorderRTOp,
    MxVFloat3Op,
    ColorConversionOp,
)
COMPUTE_OPS: tuple[type[IRDLOperation], ...] = CHANNELWISE_OPS + PIXEL_OPS
# Every op that can sit in a read ... write chain.
CHAIN_OPS: tuple[type[IRDLOperation], ...] = (ReadOp, *GEOMETRY_OPS, *COMPUTE_OPS, *WRITE_OPS)


# ---------------------------------------------------------------------------------------------
# Parameter slots: which slot each value field needs
# ---------------------------------------------------------------------------------------------

# slot kind -> the element type whose range its values must lie in (a rect holds int32 x, y, w, h).
_KIND_DTYPE: dict[str, dtypes.DType] = {**dtypes.BY_SLOT_KIND, "rect": dtypes.BY_NAME["int32"]}


def param_slot(op: Operation, field: str) -> tuple[str, int] | None:
    """(kind, count) of the parameter slot that holds value field `field` of `op`: the rule by which
    fkl-hoist-params makes slots and fkl.kernel's verifier checks them. None while the types it
    reads are not inferred.

    Kinds: the chain's element type for per-channel values (arithmetic, StaticLoop, Saturate, AddLast,
    the border's and ReadSet's value), the result's for a resize background, `rect` for crop rects,
    `i32` for sizes and runtime permutations, `f32` for matrices. The count is what the op reads: one
    value per channel (Saturate: the C lower bounds, then the C upper ones), 2 for a size, 6 or 9 for
    a warp matrix, 9 for MxVFloat3, 1 for AddLast. A crop reads one rect per output plane (DYNAMIC
    when the plane count is not known), or a single rect that every plane shares.
    """
    in_type = _known(op.operands[0].type) if op.operands else None
    out_type = _known(op.results[0].type) if op.results else None
    if in_type is None:
        return None
    channels, chain_kind = in_type.channels.data, dtypes.BY_NAME[in_type.dtype].slot_kind
    if isinstance(op, CropOp):
        return None if out_type is None else ("rect", out_type.planes.data)
    if field == "size" or (isinstance(op, ResizeOp) and field == "value"):
        return "i32", 2
    if isinstance(op, ResizeOp):  # the background, in the result's element type
        return None if out_type is None else (dtypes.BY_NAME[out_type.dtype].slot_kind, channels)
    if isinstance(op, SaturateOp):
        return chain_kind, 2 * channels
    if isinstance(op, VectorReorderRTOp):
        return None if out_type is None else ("i32", out_type.channels.data)
    if isinstance(op, MxVFloat3Op):
        return "f32", 9
    if isinstance(op, WarpOp):
        matrix = WARP_KINDS.get(op.kind.data)
        return None if matrix is None else ("f32", matrix)
    if isinstance(op, AddLastOp):
        return chain_kind, 1
    # one value per channel in the chain type: arithmetic, StaticLoop, BorderReader, ReadSet
    return chain_kind, channels


def _check_slot_use(kernel: KernelOp, op: Operation, field: str, slot: tuple[str, str, int]) -> None:
    """`op` reads `field` from `slot`: the slot must have the kind the op computes in and at least the
    elements it reads (a wrong kind is C++ that does not compile, a short slot a read past its end)."""
    needed = param_slot(op, field)
    if needed is None:
        return
    (name, kind, count), (want_kind, want_count) = slot, needed
    reads = f"{want_kind} x {'planes' if want_count == DYNAMIC else want_count}"
    if isinstance(op, CropOp):
        fits = count == 1 or (want_count != DYNAMIC and count >= want_count)
        reads = f"{reads} (or rect x 1, shared by every plane)"
    else:
        fits = count >= want_count
    if kind != want_kind or not fits:
        raise OpError(
            op,
            f"'{op.name}' reads param \"{name}\" as {reads}, but slot {name} of @{kernel.sym_name.data} is "
            f"{kind} x {count}",
        )


def _check_slot_values(kernel: KernelOp, slots: dict[str, tuple[str, str, int]]) -> None:
    """The values the host packs: one number per element (4 per rect), in the kind's range (ctypes
    would wrap an out-of-range integer silently)."""
    if kernel.values is None:
        return
    for name, attr in kernel.values.data.items():
        if name not in slots:
            raise VerifyException(f"'fkl.kernel' @{kernel.sym_name.data}: value for unknown slot {name}")
        _, kind, count = slots[name]
        numbers = attr.get_values() if isinstance(attr, DenseArrayBase) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        what = f"'fkl.kernel' @{kernel.sym_name.data}: slot {name} ({kind} x {count})"
        expected = 4 * count if kind == "rect" else count
        if numbers is None or len(numbers) != expected:  # pyright: ignore[reportUnknownArgumentType]
            got = "no number list" if numbers is None else f"{len(numbers)} numbers"  # pyright: ignore[reportUnknownArgumentType]
            raise VerifyException(f"{what} needs {expected} numbers, got {got}")
        if (limits := _KIND_DTYPE[kind].integer_range) is None:
            continue
        lo, hi = limits
        bad = [v for v in numbers if not (lo <= v <= hi and float(v).is_integer())]  # pyright: ignore[reportUnknownVariableType]
        if bad:
            raise VerifyException(f"{what} holds {bad}, not integers in [{lo}, {hi}]")


def _check_plane_map(kernel: KernelOp, slots: dict[str, tuple[str, str, int]]) -> None:
    """A kernel of several chains (a divergent batch) runs chain planemap[z] on plane z: it needs the
    slot, of i32, and values that name its chains."""
    chains = sum(isinstance(op, WRITE_OPS) for op in kernel.body.block.ops)
    slot = slots.get(PLANE_MAP_SLOT)
    where = f"'fkl.kernel' @{kernel.sym_name.data}"
    if slot is None:
        if chains > 1:
            raise VerifyException(f"{where} has {chains} chains but no slot {PLANE_MAP_SLOT} (i32 x planes)")
        return
    if slot[1] != "i32":
        raise VerifyException(f"{where}: slot {PLANE_MAP_SLOT} must be i32 (a chain index per plane), got {slot[1]}")
    values = kernel.values.data.get(PLANE_MAP_SLOT) if kernel.values is not None else None
    if not isinstance(values, DenseArrayBase):
        return
    bad = [v for v in values.get_values() if not 0 <= v < max(chains, 1)]  # pyright: ignore[reportUnknownVariableType]
    if bad:
        raise VerifyException(f"{where}: {PLANE_MAP_SLOT} values {bad} name no chain (it has {chains})")


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------


def _print_kernel_values(printer: Printer, values: DictionaryAttr) -> None:
    """`{mul1 = [2.0, 2.0, 2.0], crop2 = [30, 12, 60, 40]}`: floats always with a point (or nan, inf,
    ninf), integers without, so the text reads back to the same f64 / i64 arrays (xDSL's own
    dictionary printing writes NaN and large values in hex, which its parser rejects)."""
    entries = []
    for name, attr in values.data.items():
        numbers = attr.get_values() if isinstance(attr, DenseArrayBase) else ()  # pyright: ignore[reportUnknownMemberType]
        is_float = isinstance(attr, DenseArrayBase) and not isinstance(attr.elt_type, IntegerType)
        text = ", ".join(_format_number(float(v)) if is_float else str(int(v)) for v in numbers)  # pyright: ignore[reportUnknownArgumentType]
        entries.append(f"{name} = [{text}]")
    printer.print_string("{" + ", ".join(entries) + "}")


def _parse_kernel_values(parser: Parser) -> DictionaryAttr:
    def parse_entry() -> tuple[str, Attribute]:
        name = parser.parse_identifier()
        parser.parse_punctuation("=")
        numbers: list[int | float] = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: _parse_int_or_float(parser)
        )
        if all(isinstance(v, int) for v in numbers):
            return name, DenseArrayBase.from_list(i64, [int(v) for v in numbers])
        return name, DenseArrayBase.from_list(f64, [float(v) for v in numbers])

    entries = parser.parse_comma_separated_list(parser.Delimiter.BRACES, parse_entry)
    return DictionaryAttr(dict(entries))


def _parse_int_or_float(parser: Parser) -> int | float:
    if (word := parser.parse_optional_keyword_in(tuple(_SPECIAL_NUMBERS))) is not None:
        return _SPECIAL_NUMBERS[word]
    pos = parser.pos
    number = parser.parse_number()
    return number if isinstance(number, float) else _fit_int64(parser, KernelOp.name, pos, number)


@irdl_op_definition
class KernelOp(IRDLOperation):
    """One launch: a read ... write chain and its parameter block.

    `fkl.kernel @k0 params !fkl.params<mul1: f32 x 3> values {mul1 = array<f64: 1.0, 2.0, 3.0>} { ... }`

    `values` holds the slot values; stripping it leaves the structural IR that the cache key hashes.
    """

    name = "fkl.kernel"
    sym_name = prop_def(SymbolNameConstraint())
    params = prop_def(ParamsType)
    values = opt_prop_def(DictionaryAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), IsolatedFromAbove(), SymbolOpInterface(), SSADominance())

    def __init__(
        self,
        sym_name: str,
        body: Region,
        params: ParamsType | None = None,
        values: DictionaryAttr | None = None,
    ):
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(sym_name),
            "params": params or ParamsType(),
        }
        if values is not None:
            properties["values"] = values
        super().__init__(properties=properties, regions=[body])

    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        sym_name = parser.parse_symbol_name()
        parser.parse_keyword("params")
        params = parser.parse_type()
        if not isinstance(params, ParamsType):
            parser.raise_error(f"'fkl.kernel' expects an !fkl.params type, got {params}")
        values = _parse_kernel_values(parser) if parser.parse_optional_keyword("values") else None
        body = parser.parse_region()
        return KernelOp(sym_name.data, body, params, values)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" params ")
        printer.print_attribute(self.params)
        if self.values is not None:
            printer.print_string(" values ")
            _print_kernel_values(printer, self.values)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_(self) -> None:
        if self.body.block.args:
            raise VerifyException("'fkl.kernel' body takes no block arguments")
        slots = {slot[0]: slot for slot in self.params.slots}
        for op in self.body.walk():
            for field in value_fields(op):
                name = field_slot(op, field)
                if name is None:
                    continue
                if name not in slots:
                    raise VerifyException(f"'fkl.kernel' @{self.sym_name.data}: '{op.name}' uses unknown slot {name}")
                _check_slot_use(self, op, field, slots[name])
        _check_slot_values(self, slots)
        _check_plane_map(self, slots)


FKL = Dialect(
    "fkl",
    [
        ReadOp,
        YieldOp,
        WriteOp,
        SplitOp,
        TSplitOp,
        SplitWriteOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaxOp,
        MinOp,
        CastOp,
        SaturateCastOp,
        SaturateOp,
        SaturateFloatOp,
        IsEvenOp,
        VectorAndOp,
        VectorReduceOp,
        DiscardOp,
        AddLastOp,
        VectorReorderOp,
        VectorReorderRTOp,
        MxVFloat3Op,
        StaticLoopOp,
        ColorConversionOp,
        ReadSetOp,
        BorderOp,
        CropOp,
        ResizeOp,
        WarpOp,
        DeinterlaceOp,
        KernelOp,
        *MATH_OPS,
    ],
    [ImageType, ParamsType],
)
