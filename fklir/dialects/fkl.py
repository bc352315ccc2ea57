"""The `fkl` dialect: chains of image operations that fuse into one kernel.

A chain as the frontend emits it (result types start unknown; `fkl-infer-types` fills them in):

```mlir
%img = fkl.read "src" : !fkl.image<?x?x3xui8>
%roi = fkl.crop %img, rects [[30, 12, 60, 40], [40, 12, 60, 40]]
    : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xui8, planes 2>
%rs  = fkl.resize %roi, size [16, 16], linear : !fkl.image<?x?x3xui8, planes 2> -> !fkl.image<?x?x3xf32, planes 2>
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
from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DenseArrayBase,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerType,
    NoneType,
    Signedness,
    StringAttr,
    SymbolNameConstraint,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, Operation, ParametrizedAttribute, Region, SSAValue, TypeAttribute
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

DYNAMIC = -1

# The slot of a divergent kernel's parameter block that maps each output plane to its chain.
PLANE_MAP_SLOT = "planemap"

# Element type name (as users and numpy spell it) -> IR type.
ELEMENT_TYPES: dict[str, Attribute] = {
    "uint8": IntegerType(8, Signedness.UNSIGNED),
    "int8": IntegerType(8),
    "uint16": IntegerType(16, Signedness.UNSIGNED),
    "int16": IntegerType(16),
    "int32": IntegerType(32),
    "uint32": IntegerType(32, Signedness.UNSIGNED),
    "float16": Float16Type(),
    "bfloat16": BFloat16Type(),
    "float32": Float32Type(),
    "float64": Float64Type(),
    "bool": IntegerType(1),
}
_NAME_OF_TYPE: dict[Attribute, str] = {t: n for n, t in ELEMENT_TYPES.items()}

# Integer ranges, for the "value representable in the chain type" rule.
INTEGER_RANGES: dict[str, tuple[int, int]] = {
    "uint8": (0, 255),
    "int8": (-128, 127),
    "uint16": (0, 65535),
    "int16": (-32768, 32767),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "bool": (0, 1),
}


def element_type(name: str) -> Attribute:
    """The IR element type for a dtype name; ValueError names unknown dtypes."""
    if name not in ELEMENT_TYPES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(ELEMENT_TYPES)}")
    return ELEMENT_TYPES[name]


def dtype_name(elt: Attribute) -> str:
    """The dtype name of an IR element type ('float32', 'uint8', ...)."""
    return _NAME_OF_TYPE[elt]


def is_float_name(name: str) -> bool:
    return name in ("float16", "bfloat16", "float32", "float64")


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


PARAM_KINDS = ("ui8", "i8", "ui16", "i16", "i32", "ui32", "f16", "bf16", "f32", "f64", "i1", "rect", "ptr")


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
    return float(parser.parse_number())


def _parse_number_list(parser: Parser) -> list[float]:
    """`2.0` or `[1.0, 2.0, 3.0]` (integers allowed)."""
    if parser.parse_optional_punctuation("["):
        values = [_parse_one_number(parser)]
        while parser.parse_optional_punctuation(","):
            values.append(_parse_one_number(parser))
        parser.parse_punctuation("]")
        return values
    return [_parse_one_number(parser)]


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
      %r = fkl.resize %c, param "resize2", linear : !fkl.image<?x?x3xui8, planes 3> -> !fkl.image<?x?x3xf32, planes 3>
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
        if isinstance(self.source, ArrayAttr) and self.result.type.planes.data not in (DYNAMIC, len(self.sources)):
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
        planes = _parse_int_list(parser) if parser.parse_optional_keyword("planes") else None
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


# ---------------------------------------------------------------------------------------------
# Arithmetic: one value per channel (or one broadcast value) in the chain's element type
# ---------------------------------------------------------------------------------------------


class BinaryValueOp(IRDLOperation):
    """`fkl.<op> %x, 2.0 : T`, `fkl.<op> %x, [1.0, 2.0, 3.0] : T` or, after hoisting, `fkl.<op> %x, param "s" : T`."""

    FORMULA: ClassVar[str]

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

    def verify_(self) -> None:
        _check_value_or_slot(self, self.value, self.slot)
        _check_same_type(self, self.input.type, self.result.type)
        if self.value is None:
            return
        if not self.values:
            raise VerifyException(f"'{self.name}' needs at least one value")
        in_type = _known(self.input.type)
        if in_type is None:
            return
        check_values_fit_chain(self.name, self.values, in_type.channels.data, in_type.dtype)
        if isinstance(self, DivOp) and not is_float_name(in_type.dtype) and 0.0 in self.values:
            raise VerifyException(f"'{self.name}' divides an integer chain ({in_type.dtype}) by zero")


def check_values_fit_chain(op_name: str, values: Sequence[float], channels: int, dtype: str) -> None:
    """The per-channel arity and integer-representability rules of SPEC §3 (raises VerifyException)."""
    if len(values) not in (1, channels):
        raise VerifyException(
            f"'{op_name}' has {len(values)} values but the chain has {channels} channels "
            "(give one value or one per channel)"
        )
    if dtype not in INTEGER_RANGES or dtype == "bool":
        return
    lo, hi = INTEGER_RANGES[dtype]
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


class CastLikeOp(IRDLOperation):
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
# Geometry (must follow the read directly, or each other)
# ---------------------------------------------------------------------------------------------


def _parse_int_list(parser: Parser) -> list[int]:
    return parser.parse_comma_separated_list(parser.Delimiter.SQUARE, parser.parse_integer)


@irdl_op_definition
class CropOp(IRDLOperation):
    """Crop: one rect (every plane) or a list of rects (one output plane per rect).

    `fkl.crop %x, rects [[x, y, w, h], ...] : T -> T2`; after hoisting `fkl.crop %x, param "crop1" : T -> T2`.
    """

    name = "fkl.crop"
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
            rects = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: _parse_int_list(parser))
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

    def verify_(self) -> None:
        _check_value_or_slot(self, self.value, self.slot)
        if self.value is None:
            return
        flat = list(self.value.get_values())
        if not flat or len(flat) % 4:
            raise VerifyException(f"'fkl.crop' rects must be groups of [x, y, w, h], got {len(flat)} numbers")
        for x, y, w, h in self.rects:
            if w <= 0 or h <= 0:
                raise VerifyException(f"'fkl.crop' rect [{x}, {y}, {w}, {h}] must have a positive width and height")
            if x < 0 or y < 0:
                raise VerifyException(f"'fkl.crop' rect [{x}, {y}, {w}, {h}] starts outside the image")


INTERPOLATIONS = ("linear", "nearest")


@irdl_op_definition
class ResizeOp(IRDLOperation):
    """Resize to (w, h): linear (OpenCV INTER_LINEAR, output f32) or nearest (keeps the type).

    `fkl.resize %x, size [224, 224], linear : T -> T2`
    """

    name = "fkl.resize"
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[IntegerType])
    slot = opt_prop_def(StringAttr)
    interp = prop_def(StringAttr)
    result = result_def(ImageType)

    def __init__(
        self,
        input: SSAValue,
        size: Sequence[int] | None,
        interp: str = "linear",
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        properties: dict[str, Attribute] = {"interp": StringAttr(interp)}
        if size is not None:
            properties["value"] = DenseArrayBase.from_list(i64, [int(v) for v in size])
        if slot is not None:
            properties["slot"] = StringAttr(slot)
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    @property
    def size(self) -> tuple[int, int]:
        if self.value is None:
            return (0, 0)
        w, h = (int(v) for v in self.value.get_values())
        return w, h

    @classmethod
    def parse(cls, parser: Parser) -> ResizeOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = _parse_slot(parser)
        size = None
        if slot is None:
            parser.parse_keyword("size")
            size = _parse_int_list(parser)
        parser.parse_punctuation(",")
        interp = parser.parse_identifier()
        in_type, out_type = _parse_types(parser)
        return ResizeOp(parser.resolve_operand(operand, in_type), size, interp, out_type, slot.data if slot else None)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            printer.print_string("param ")
            printer.print_string_literal(self.slot.data)
        else:
            w, h = self.size
            printer.print_string(f"size [{w}, {h}]")
        printer.print_string(f", {self.interp.data}")
        _print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        _check_value_or_slot(self, self.value, self.slot)
        if self.interp.data not in INTERPOLATIONS:
            raise VerifyException(f"'fkl.resize' interpolation must be linear or nearest, got {self.interp.data}")
        if self.value is not None:
            sizes = list(self.value.get_values())
            if len(sizes) != 2 or min(sizes) <= 0:
                raise VerifyException(f"'fkl.resize' size must be [w, h] with positive values, got {sizes}")
        out_type = _known(self.result.type)
        in_type = _known(self.input.type)
        if out_type is None or in_type is None:
            return
        expected = "float32" if self.interp.data == "linear" else in_type.dtype
        if out_type.dtype != expected:
            raise VerifyException(f"'fkl.resize' {self.interp.data} must produce {expected}, got {out_type.dtype}")


GEOMETRY_OPS: tuple[type[IRDLOperation], ...] = (CropOp, ResizeOp)
WRITE_OPS: tuple[type[IRDLOperation], ...] = (WriteOp, SplitOp)
VALUE_OPS: tuple[type[IRDLOperation], ...] = (BinaryValueOp, CropOp, ResizeOp)


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------


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

    traits = traits_def(NoTerminator(), IsolatedFromAbove(), SymbolOpInterface())

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
        values = None
        if parser.parse_optional_keyword("values"):
            values = DictionaryAttr(parser.parse_optional_attr_dict())
        body = parser.parse_region()
        return KernelOp(sym_name.data, body, params, values)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" params ")
        printer.print_attribute(self.params)
        if self.values is not None:
            printer.print_string(" values")
            printer.print_op_attributes(self.values.data)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def verify_(self) -> None:
        if self.body.block.args:
            raise VerifyException("'fkl.kernel' body takes no block arguments")
        slot_names = {n for n, _, _ in self.params.slots}
        for op in self.body.walk():
            slot = getattr(op, "slot", None)
            if isinstance(slot, StringAttr) and slot.data not in slot_names:
                raise VerifyException(f"'fkl.kernel' @{self.sym_name.data}: '{op.name}' uses unknown slot {slot.data}")
        if self.values is None:
            return
        for name in self.values.data:
            if name not in slot_names:
                raise VerifyException(f"'fkl.kernel' @{self.sym_name.data}: value for unknown slot {name}")


FKL = Dialect(
    "fkl",
    [
        ReadOp,
        YieldOp,
        WriteOp,
        SplitOp,
        AddOp,
        SubOp,
        MulOp,
        DivOp,
        MaxOp,
        MinOp,
        CastOp,
        SaturateCastOp,
        CropOp,
        ResizeOp,
        KernelOp,
    ],
    [ImageType, ParamsType],
)
