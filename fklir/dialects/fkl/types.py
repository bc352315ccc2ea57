"""Element types and the dialect's two types: `!fkl.image` and `!fkl.params`, with their constants."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IntAttr,
    IntegerType,
    NoneType,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from fklir import dtypes
from fklir.dialects.constants import PLANE_MAP_SLOT as PLANE_MAP_SLOT
from fklir.limits import I32_MAX

DYNAMIC = -1


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
NAME_OF_TYPE: dict[Attribute, str] = {t: n for n, t in ELEMENT_TYPES.items()}


def element_type(name: str) -> Attribute:
    """The IR element type for a dtype name; ValueError names unknown dtypes."""
    if name not in ELEMENT_TYPES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(ELEMENT_TYPES)}")
    return ELEMENT_TYPES[name]


def dtype_name(elt: Attribute) -> str:
    """The dtype name of an IR element type ('float32', 'uint8', ...)."""
    return NAME_OF_TYPE[elt]


def is_float_name(name: str) -> bool:
    record = dtypes.BY_NAME.get(name)
    return record is not None and record.is_float


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
        if not isinstance(self.element_type, NoneType) and self.element_type not in NAME_OF_TYPE:
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


def known(t: Attribute) -> ImageType | None:
    return t if isinstance(t, ImageType) and t.is_known else None


def reshaped(t: ImageType, channels: int | None = None, element: Attribute | str | None = None) -> ImageType:
    """`t` with another channel count and/or element type (planes and layout kept)."""
    elt = t.element_type if element is None else (element_type(element) if isinstance(element, str) else element)
    return ImageType(elt, t.channels.data if channels is None else channels, t.planes.data, layout=t.layout.data)
