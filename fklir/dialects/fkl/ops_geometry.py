"""fkl.read, fkl.yield and the geometry ops, which must follow the read directly (or each other) and
fold into its `sample` region. The read lives here because fkl.read_set must follow a read; its
verifier admits in that region only ops with the Geometry trait."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, Float64Type, IntegerType, StringAttr, UnitAttr, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    lazy_traits_def,
    operand_def,
    opt_prop_def,
    opt_region_def,
    prop_def,
    result_def,
    traits_def,
)
from xdsl.irdl.declarative_assembly_format import ParsingState
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, IsTerminator, Pure
from xdsl.utils.exceptions import VerifyException

from fklir import dtypes
from fklir.dialects import value_rules
from fklir.dialects.constants import (
    BORDER_MODES,
    WARP_KINDS,
    invert_warp_matrix,
)
from fklir.dialects.fkl.abstract_ops import TypeRuleOp, fkl_op
from fklir.dialects.fkl.checks import check_not_bool, check_one_of, check_same_type, check_values_fit_chain, int32
from fklir.dialects.fkl.fields import (
    check_field,
    check_size_field,
    check_value_or_slot,
    field_properties,
    field_values,
    float_array,
    int_array,
)
from fklir.dialects.fkl.syntax import (
    TYPES,
    InputType,
    IntListOrSlot,
    TypeSuffix,
    ValuesOrSlot,
    format_int_list,
    format_matrix,
    int_values,
    parse_int_list,
    parse_number_list,
    parse_slot,
    parse_types,
    print_number_list,
    print_slot,
    print_types,
)
from fklir.dialects.fkl.traits import Geometry, Memory
from fklir.dialects.fkl.types import DYNAMIC, ImageType, known, reshaped

# ---------------------------------------------------------------------------------------------
# The read, and the terminator of its sample region
# ---------------------------------------------------------------------------------------------


@fkl_op
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
    traits = traits_def(Memory())
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

    # Hand-written: `: T -> T2` types the sample region's argument, not an operand, which a format cannot set.
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
        source_type, result_type = parse_types(parser)
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
        print_types(printer, self.source_type, self.result.type)
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
            if not op.has_trait(Geometry):
                raise VerifyException(f"'fkl.read' sample region holds only geometry ops, not '{op.name}'")


@fkl_op
class YieldOp(IRDLOperation):
    """Ends a read's sample region: `fkl.yield %v : T` (the sampled pixel)."""

    name = "fkl.yield"
    input = operand_def(ImageType)
    custom_directives = (InputType,)
    assembly_format = "$input custom<InputType>(type($input)) attr-dict"
    traits = lazy_traits_def(lambda: (IsTerminator(), HasParent(ReadOp)))

    def __init__(self, input: SSAValue):
        super().__init__(operands=[input])


# ---------------------------------------------------------------------------------------------
# Geometry (must follow the read directly, or each other)
# ---------------------------------------------------------------------------------------------


class RectsOrSlot(ValuesOrSlot):
    """`rects [[x, y, w, h], ...]`, held flat."""

    def parse_values(self, parser: Parser, state: ParsingState) -> DenseArrayBase:
        parser.parse_keyword("rects")
        name = state.op_type.name
        rects = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_int_list(parser, name))
        return int_array([v for rect in rects for v in rect])

    def print_values(self, printer: Printer, values: Attribute | None) -> None:
        flat = int_values(values)
        rects = (format_int_list(flat[i : i + 4]) for i in range(0, len(flat), 4))
        printer.print_string("rects [" + ", ".join(rects) + "]")


@fkl_op
class CropOp(TypeRuleOp):
    """Crop: one rect (every plane) or a list of rects (one output plane per rect).

    `fkl.crop %x, rects [[x, y, w, h], ...] : T -> T2`; after hoisting `fkl.crop %x, param "crop1" : T -> T2`.
    """

    name = "fkl.crop"
    traits = traits_def(Geometry(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[IntegerType])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (RectsOrSlot, TypeSuffix)
    assembly_format = f"$input `,` custom<RectsOrSlot>($value, $slot) {TYPES}"

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

    def result_for(self, in_type: ImageType) -> ImageType:
        """One rect keeps the plane count; several make one plane per rect, of a one-plane input or
        one rect per plane."""
        planes = in_type.planes.data
        if self.value is None:  # hoisted: the plane count was inferred before
            out_type = known(self.result.type)
            return in_type if out_type is None else in_type.with_planes(out_type.planes.data)
        n = len(self.rects)
        if n == 1:
            return in_type
        if planes in (1, n):
            return in_type.with_planes(n)
        raise VerifyException(f"'fkl.crop' has {n} rects for an input of {planes} planes (give 1, or one per plane)")

    def verify_(self) -> None:
        check_value_or_slot(self, self.value, self.slot)
        if self.value is None:
            return
        flat = list(self.value.get_values())
        if not flat or len(flat) % 4:
            raise VerifyException(f"'fkl.crop' rects must be groups of [x, y, w, h], got {len(flat)} numbers")
        bordered = _follows_border(self)
        for x, y, w, h in self.rects:
            int32(value_rules.rect_extent, "'fkl.crop'", x, y, w, h)
            if (x < 0 or y < 0) and not bordered:
                raise VerifyException(
                    f"'fkl.crop' rect [{x}, {y}, {w}, {h}] starts outside the image; "
                    "only a crop right after fkl.border may leave it"
                )
        # the plane rule is left to fkl-infer-types, which names both the written and the inferred type

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        """One rect per output plane (the verifier also admits one rect that every plane shares)."""
        return None if out_type is None else ("rect", out_type.planes.data)

    def slot_values(self, field: str, count: int) -> list[float] | list[int]:
        """The rects as given, four int32 each: one per plane or a single shared one."""
        return [int(v) for rect in self.rects for v in rect]


def _follows_border(op: IRDLOperation) -> bool:
    """Whether `op`'s input comes straight from an fkl.border (which defines every coordinate)."""
    return isinstance(op.operands[0].owner, BorderOp)


@fkl_op
class ResizeOp(TypeRuleOp):
    """Resize to (w, h): linear (OpenCV INTER_LINEAR, output f32) or nearest (keeps the type).

    `fkl.resize %x, size [224, 224], linear : T -> T2`. With an aspect-ratio mode other than
    `ignore` the source keeps its proportions inside the output and the rest is `background`
    (in the result's element type, one value or one per channel):
    `fkl.resize %x, size [224, 224], linear, preserve, background [0.0, 0.0, 0.0] : T -> T2`.
    `background per_plane [...]`: one background per plane (fkl.per_image), plane z's row z.
    """

    name = "fkl.resize"
    traits = traits_def(Geometry(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value", "background")
    PER_PLANE_FIELD: ClassVar[str] = "background"
    input = operand_def(ImageType)
    per_plane = opt_prop_def(UnitAttr)
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
        per_plane: bool = False,
    ):
        """`background`: one value or one per channel; with `per_plane`, one row per plane."""
        properties: dict[str, Attribute] = {"interp": StringAttr(interp)}
        if per_plane:
            properties["per_plane"] = UnitAttr()
        properties |= field_properties("value", None if size is None else int_array(size), slot)
        if aspect_ratio != "ignore":
            properties["aspect_ratio"] = StringAttr(aspect_ratio)
        bg = None if background is None else float_array(background)
        properties |= field_properties("background", bg, background_slot)
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

    # Hand-written: a format would parse the size before `interp` and so store the properties in another
    # order than the constructor, which the generic form prints.
    @classmethod
    def parse(cls, parser: Parser) -> ResizeOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        slot = parse_slot(parser)
        size = None
        if slot is None:
            parser.parse_keyword("size")
            size = parse_int_list(parser, cls.name)
        parser.parse_punctuation(",")
        interp = parser.parse_identifier()
        aspect_ratio, background, background_slot, per_plane = "ignore", None, None, False
        if parser.parse_optional_punctuation(","):
            aspect_ratio = parser.parse_identifier()
            parser.parse_punctuation(",")
            parser.parse_keyword("background")
            per_plane = parser.parse_optional_keyword("per_plane") is not None
            if (bg_slot := parse_slot(parser)) is not None:
                background_slot = bg_slot.data
            else:
                background = parse_number_list(parser)
        in_type, out_type = parse_types(parser)
        return ResizeOp(
            parser.resolve_operand(operand, in_type),
            size,
            interp,
            out_type,
            slot.data if slot else None,
            aspect_ratio,
            background,
            background_slot,
            per_plane,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(", ")
        if self.slot is not None:
            print_slot(printer, self.slot)
        else:
            w, h = self.size
            printer.print_string(f"size [{w}, {h}]")
        printer.print_string(f", {self.interp.data}")
        if self.aspect_ratio is not None:
            printer.print_string(f", {self.aspect_ratio.data}, background ")
            if self.per_plane is not None:
                printer.print_string("per_plane ")
            if self.background_slot is not None:
                print_slot(printer, self.background_slot)
            else:
                print_number_list(printer, field_values(self, "background") or ())
        print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        check_field(self, "value")
        has_background = self.background is not None or self.background_slot is not None
        int32(value_rules.resize_options, "'fkl.resize'", self.interp.data, self.mode, has_background)
        check_size_field(self, "value")
        if self.mode != "ignore":
            check_field(self, "background")
        in_type = self.known_input()
        if in_type is None:
            return
        expected = self.result_for(in_type)
        out_type = known(self.result.type)
        if out_type is not None and out_type.dtype != expected.dtype:
            raise VerifyException(
                f"'fkl.resize' {self.interp.data} must produce {expected.dtype}, got {out_type.dtype}"
            )

    def result_for(self, in_type: ImageType) -> ImageType:
        """Linear interpolates to float32 (not on bool); nearest keeps the type; a background is in
        the result's element type."""
        out = in_type
        if self.interp.data == "linear":
            check_not_bool(self, in_type, "interpolates linearly")
            out = reshaped(in_type, element="float32")
        for background in self.value_rows(in_type):
            check_values_fit_chain(self.name, background, out.channels.data, out.dtype)
        return out

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        """The size (`value`) as `i32 x 2`; the background, one per channel in the result's type."""
        if field == "value":
            return "i32", 2
        return None if out_type is None else (dtypes.BY_NAME[out_type.dtype].slot_kind, in_type.channels.data)


@fkl_op
class BorderOp(TypeRuleOp):
    """BorderReader(mode, value): defines the image at EVERY coordinate, however far outside.

    constant (the value, one or one per channel, in the chain type), replicate "aaa|abc|ccc",
    reflect "cba|abc|cba", reflect101 "cb|abc|ba", wrap "abc|abc|abc" — numpy.pad's constant, edge,
    symmetric, reflect and wrap, and cv2.copyMakeBorder. It folds into the read; a following crop
    or warp may then sample outside the image.

    `fkl.border %x, reflect101 : T`, `fkl.border %x, constant [0.0, 0.0, 255.0] : T`; one value per plane
    (fkl.per_image): `fkl.border %x, constant per_plane [0.0, 255.0] : !fkl.image<?x?x1xf32, planes 2>`
    """

    name = "fkl.border"
    traits = traits_def(Geometry(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)
    input = operand_def(ImageType)
    mode = prop_def(StringAttr)
    per_plane = opt_prop_def(UnitAttr)
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
        per_plane: bool = False,
    ):
        """`value` (constant mode): one value or one per channel; with `per_plane`, one row per plane."""
        properties = field_properties("value", None if value is None else float_array(value), slot)
        properties["mode"] = StringAttr(mode)
        if per_plane:
            properties["per_plane"] = UnitAttr()
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    # Hand-written: values follow the mode only when it is `constant`, which a format cannot condition on.
    @classmethod
    def parse(cls, parser: Parser) -> BorderOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        mode = parser.parse_identifier()
        slot, value, per_plane = None, None, False
        if mode == "constant":
            per_plane = parser.parse_optional_keyword("per_plane") is not None
            slot = parse_slot(parser)
            value = None if slot else parse_number_list(parser)
        in_type, out_type = parse_types(parser)
        operand_value = parser.resolve_operand(operand, in_type)
        return BorderOp(operand_value, mode, value, out_type, slot.data if slot else None, per_plane)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f", {self.mode.data}")
        if self.per_plane is not None:
            printer.print_string(" per_plane")
        if self.slot is not None:
            printer.print_string(" ")
            print_slot(printer, self.slot)
        elif (values := field_values(self)) is not None:
            printer.print_string(" ")
            print_number_list(printer, values)
        print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        check_one_of(self, "mode", self.mode.data, BORDER_MODES)
        if self.mode.data == "constant":
            check_field(self, "value")
        elif self.value is not None or self.slot is not None:
            raise VerifyException(f"'{self.name}' takes a value only in constant mode, not {self.mode.data}")
        check_same_type(self, self.input.type, self.result.type)
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def result_for(self, in_type: ImageType) -> ImageType:
        for values in self.value_rows(in_type):
            check_values_fit_chain(self.name, values, in_type.channels.data, in_type.dtype)
        return in_type


@fkl_op
class WarpOp(TypeRuleOp):
    """Warping(M, w, h): bilinear cv2.warpAffine (M 2x3) / cv2.warpPerspective (M 3x3), output f32.

    M maps SOURCE to DESTINATION as in OpenCV; with `inverse` it is the destination -> source map
    (hoisting always stores that one, inverted in double). A tap outside the source reads the
    border (a directly preceding fkl.border, else constant 0).

    `fkl.warp %x, affine [[1.0, 0.0, 2.5], [0.0, 1.0, -1.0]], size [64, 48] : T -> T2`
    `fkl.warp %x, perspective param "warp1", inverse, size param "warp1_size" : T -> T2`

    `per_plane` (per-image matrices): one matrix per plane, plane z warped by matrix z, their rows one after
    the other: `fkl.warp %x, affine per_plane [[1, 0, 0], [0, 1, 0], [2, 0, 0], [0, 2, 0]], size ...`.
    """

    name = "fkl.warp"
    traits = traits_def(Geometry(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value", "size")
    input = operand_def(ImageType)
    kind = prop_def(StringAttr)
    inverse = opt_prop_def(UnitAttr)
    per_plane = opt_prop_def(UnitAttr)
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
        per_plane: bool = False,
    ):
        """`matrix`: its numbers row by row; with `per_plane`, one matrix per plane one after the other."""
        properties = field_properties("value", None if matrix is None else float_array(matrix), slot)
        properties |= field_properties("size", None if size is None else int_array(size), size_slot)
        properties["kind"] = StringAttr(kind)
        if inverse:
            properties["inverse"] = UnitAttr()
        if per_plane:
            properties["per_plane"] = UnitAttr()
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    # Hand-written: a format would parse `kind` before the matrix and so store the properties in another
    # order than the constructor, which the generic form prints.
    @classmethod
    def parse(cls, parser: Parser) -> WarpOp:
        operand = parser.parse_unresolved_operand()
        parser.parse_punctuation(",")
        kind = parser.parse_identifier()
        per_plane = parser.parse_optional_keyword("per_plane") is not None
        slot = parse_slot(parser)
        matrix = None
        if slot is None:
            rows = parser.parse_comma_separated_list(parser.Delimiter.SQUARE, lambda: parse_number_list(parser))
            matrix = [v for row in rows for v in row]
        parser.parse_punctuation(",")
        inverse = parser.parse_optional_keyword("inverse") is not None
        if inverse:
            parser.parse_punctuation(",")
        parser.parse_keyword("size")
        size_slot = parse_slot(parser)
        size = None if size_slot else parse_int_list(parser, cls.name)
        in_type, out_type = parse_types(parser)
        return WarpOp(
            parser.resolve_operand(operand, in_type),
            kind,
            matrix,
            size,
            inverse,
            out_type,
            slot.data if slot else None,
            size_slot.data if size_slot else None,
            per_plane,
        )

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_operand(self.input)
        printer.print_string(f", {self.kind.data} ")
        if self.per_plane is not None:
            printer.print_string("per_plane ")
        if self.slot is not None:
            print_slot(printer, self.slot)
        else:
            printer.print_string(format_matrix(field_values(self) or (), 3))
        if self.inverse is not None:
            printer.print_string(", inverse")
        printer.print_string(", size ")
        if self.size_slot is not None:
            print_slot(printer, self.size_slot)
        else:
            printer.print_string("[" + ", ".join(str(int(v)) for v in field_values(self, "size") or ()) + "]")
        print_types(printer, self.input.type, self.result.type)

    def verify_(self) -> None:
        check_field(self, "value")
        check_field(self, "size")
        check_one_of(self, "kind", self.kind.data, tuple(WARP_KINDS))
        matrix = field_values(self)
        expected = WARP_KINDS[self.kind.data]
        if matrix is not None and self.per_plane is not None:
            expected *= max(1, len(matrix) // expected)  # one per plane: their count is the type rule's
        if matrix is not None:
            int32(value_rules.matrix_numbers, f"'{self.name}' {self.kind.data}", matrix, (expected,))
        check_size_field(self, "size")
        self.check_result_rule()

    def result_for(self, in_type: ImageType) -> ImageType:
        check_not_bool(self, in_type, "interpolates linearly")
        expected = WARP_KINDS.get(self.kind.data)
        for matrix in self.value_rows(in_type):  # one matrix per plane
            if len(matrix) != expected:
                shape = "2x3" if self.kind.data == "affine" else "3x3"
                raise VerifyException(
                    f"'{self.name}' {self.kind.data} needs a {shape} matrix per plane, got {len(matrix)} numbers each"
                )
        return reshaped(in_type, element="float32")

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        """The matrix (`value`) in double, 6 or 9 of them (the exact blend samples at f64 coordinates); the
        size as `i32 x 2`."""
        if field != "value":
            return super().slot_for(field, in_type, out_type)
        matrix = WARP_KINDS.get(self.kind.data)
        return None if matrix is None else ("f64", matrix)

    def slot_values(self, field: str, count: int) -> list[float] | list[int]:
        """The matrix always as the destination -> source map the kernel samples with (inverted here, in
        double, when the op gives source -> destination); see `hoisted`."""
        if field != "value":
            return super().slot_values(field, count)
        values = field_values(self) or ()
        in_type = self.known_input()
        matrices = self.value_rows(in_type) if in_type is not None else [values]
        return [v for m in matrices for v in (m if self.inverse is not None else invert_warp_matrix(m))]

    def hoisted(self, field: str) -> None:
        if field == "value":
            self.properties["inverse"] = UnitAttr()


@fkl_op
class ReadSetOp(TypeRuleOp):
    """ReadSet(value, w, h): replaces the read by a w x h image of one constant pixel; the source
    memory is never touched. It directly follows the read, whose type gives element type and channels.

    `fkl.read_set %r, [1.0, 2.0, 3.0], size [64, 48] : !fkl.image<?x?x3xf32>`
    """

    name = "fkl.read_set"
    traits = traits_def(Geometry(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value", "size")
    input = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    size = opt_prop_def(DenseArrayBase[IntegerType])
    size_slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (ValuesOrSlot, IntListOrSlot, TypeSuffix)
    assembly_format = (
        f"$input `,` custom<ValuesOrSlot>($value, $slot) `,` `size` custom<IntListOrSlot>($size, $size_slot) {TYPES}"
    )

    def __init__(
        self,
        input: SSAValue,
        value: Sequence[float] | None,
        size: Sequence[int] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
        size_slot: str | None = None,
    ):
        properties = field_properties("value", None if value is None else float_array(value), slot)
        properties |= field_properties("size", None if size is None else int_array(size), size_slot)
        super().__init__(operands=[input], properties=properties, result_types=[result_type or ImageType.unknown()])

    def verify_(self) -> None:
        check_field(self, "value")
        check_field(self, "size")
        check_size_field(self, "size")
        check_same_type(self, self.input.type, self.result.type)
        producer = self.input.owner
        if not isinstance(producer, ReadOp | Block):
            raise VerifyException(f"'{self.name}' must directly follow fkl.read (it replaces what is read)")
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)

    def result_for(self, in_type: ImageType) -> ImageType:
        if (values := field_values(self)) is not None:
            check_values_fit_chain(self.name, values, in_type.channels.data, in_type.dtype)
        return in_type
