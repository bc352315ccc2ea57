"""The op families the concrete ops derive from: the type rule, value ops, casts, the unary and word
shapes, and the element-wise math ops with `@math_op` and MATH_OPS."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, TypeVar

from xdsl.dialects.builtin import DenseArrayBase, Float64Type, IntegerType, StringAttr, UnitAttr, f64
from xdsl.ir import Attribute, SSAValue, TypeAttribute
from xdsl.irdl import IRDLOperation, irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from fklir import dtypes
from fklir.dialects import value_rules
from fklir.dialects.fkl.checks import (
    check_not_bool,
    check_one_of,
    check_result,
    check_same_type,
    int32,
)
from fklir.dialects.fkl.fields import check_value_or_slot, field_values, is_per_plane
from fklir.dialects.fkl.syntax import TYPES, ElementType, TypeSuffix, ValuesOrSlot, Word
from fklir.dialects.fkl.traits import ChannelWise
from fklir.dialects.fkl.types import NAME_OF_TYPE, ImageType, element_type, is_float_name, known
from fklir.dialects.value_rules import per_element, per_plane_elements

# Every op class of the dialect, in definition order: the dialect registers these (fkl/__init__.py), so that a
# new op is its class (or its record) and no list to keep in step.
FKL_OPS: list[type[IRDLOperation]] = []

OpT = TypeVar("OpT", bound=IRDLOperation)


def fkl_op(cls: type[OpT]) -> type[OpT]:
    """Define an op of the fkl dialect (irdl_op_definition) and list it in FKL_OPS."""
    op = irdl_op_definition(cls)
    FKL_OPS.append(op)
    return op


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

    # the value field that holds one row per plane when the op is `per_plane` (fkl.per_image)
    PER_PLANE_FIELD: ClassVar[str] = "value"

    def result_for(self, in_type: ImageType) -> ImageType:
        """The result type for a known input type; raises VerifyException naming the op and rule."""
        raise NotImplementedError

    def known_input(self) -> ImageType | None:
        return known(self.operands[0].type)

    def check_result_rule(self) -> None:
        """With a known input, a known result type must be what `result_for` gives."""
        if (in_type := self.known_input()) is not None:
            check_result(self, self.result_for(in_type), self.results[0].type)

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        """(kind, count) of the parameter slot that holds value field `field`, as the kernel reads it;
        None while a type it depends on is not inferred. fkl-hoist-params makes slots by this rule and
        fkl.kernel's verifier checks them against it. Unless an op says otherwise: a size is `i32 x 2`,
        any other value one per channel in the chain's element type."""
        if field == "size":
            return "i32", 2
        return dtypes.BY_NAME[in_type.dtype].slot_kind, in_type.channels.data

    def slot_values(self, field: str, count: int) -> list[float] | list[int]:
        """The inline values of `field` laid out as its slot of `count` elements holds them: integer
        fields (sizes, permutations) as they are, a broadcast number repeated once per element."""
        attr = self.properties[field]
        assert isinstance(attr, DenseArrayBase)
        if isinstance(attr.elt_type, IntegerType):
            return [int(v) for v in attr.get_values()]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        values = field_values(self, field) or ()
        if field == self.PER_PLANE_FIELD and is_per_plane(self) and (in_type := self.known_input()) is not None:
            return per_plane_elements(value_rules.plane_rows(self.name, values, in_type.planes.data), count)
        return per_element(values, count)

    def value_rows(self, in_type: ImageType) -> list[tuple[float, ...]]:
        """The inline values of its PER_PLANE_FIELD as the planes of `in_type` take them: one row per plane of
        a per-plane op (VerifyException unless they split so), else one row that every plane shares; none
        once hoisted."""
        values = field_values(self, self.PER_PLANE_FIELD)
        if values is None:
            return []
        if not is_per_plane(self):
            return [values]
        return int32(value_rules.plane_rows, self.name, values, in_type.planes.data)

    def hoisted(self, field: str) -> None:
        """Called once `field` has moved into its slot, for an op whose slot holds its values in another
        form than the inline ones (fkl.warp's inverted matrix)."""


# ---------------------------------------------------------------------------------------------
# Arithmetic: one value per channel (or one broadcast value) in the chain's element type
# ---------------------------------------------------------------------------------------------


def arithmetic_result(op: IRDLOperation, body: str, in_type: ImageType) -> ImageType:
    """The rule of fkl.add ... fkl.min and of fkl.static_loop's `body`: the type is kept; values
    one per channel (or one), representable in the element type; no integer division by zero."""
    if body not in ("max", "min"):  # max/min of bools are or/and; the rest is arithmetic
        check_not_bool(op, in_type, "computes arithmetic")
    rows = op.value_rows(in_type) if isinstance(op, TypeRuleOp) else [v for v in [field_values(op)] if v is not None]
    for values in rows:
        int32(value_rules.arithmetic_values, op.name, body, values, in_type.channels.data, in_type.dtype)
    return in_type


class BinaryValueOp(TypeRuleOp):
    """`fkl.<op> %x, 2.0 : T` or `fkl.<op> %x, [1.0, 2.0, 3.0] : T`; hoisted `fkl.<op> %x, param "s" : T`.

    `per_plane`: one row of values per plane, plane z taking row z (`fkl.per_image`):
    `fkl.mul %x, per_plane [1.0, 2.0] : !fkl.image<?x?x1xf32, planes 2>`; its slot holds planes x channels.
    """

    traits = traits_def(ChannelWise(), Pure())

    FORMULA: ClassVar[str]
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)

    input = operand_def(ImageType)
    per_plane = opt_prop_def(UnitAttr)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (ValuesOrSlot, TypeSuffix)
    assembly_format = f"$input `,` (`per_plane` $per_plane^)? custom<ValuesOrSlot>($value, $slot) {TYPES}"

    def __init__(
        self,
        input: SSAValue,
        value: Sequence[float] | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
        per_plane: bool = False,
    ):
        properties: dict[str, Attribute] = {}
        if per_plane:
            properties["per_plane"] = UnitAttr()
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

    def result_for(self, in_type: ImageType) -> ImageType:
        return arithmetic_result(self, self.name.removeprefix("fkl."), in_type)

    def verify_(self) -> None:
        check_value_or_slot(self, self.value, self.slot)
        check_same_type(self, self.input.type, self.result.type)
        if self.value is not None and not self.values:
            raise VerifyException(f"'{self.name}' needs at least one value")
        if (in_type := self.known_input()) is not None:
            self.result_for(in_type)


# ---------------------------------------------------------------------------------------------
# Casts
# ---------------------------------------------------------------------------------------------


class CastLikeOp(TypeRuleOp):
    """`fkl.<op> %x to f32 : T -> T2`."""

    traits = traits_def(ChannelWise(), Pure())

    input = operand_def(ImageType)
    to = prop_def(TypeAttribute)
    result = result_def(ImageType)

    custom_directives = (ElementType, TypeSuffix)
    assembly_format = f"$input `to` custom<ElementType>($to) {TYPES}"

    def __init__(self, input: SSAValue, to: Attribute | str, result_type: Attribute | None = None):
        to_type = element_type(to) if isinstance(to, str) else to
        super().__init__(
            operands=[input], properties={"to": to_type}, result_types=[result_type or ImageType.unknown()]
        )

    def result_for(self, in_type: ImageType) -> ImageType:
        return in_type.with_element(self.to)

    def verify_(self) -> None:
        if self.to not in NAME_OF_TYPE:
            raise VerifyException(f"'{self.name}' cannot cast to {self.to}: not an fkl element type")
        out_type = known(self.result.type)
        if out_type is None:
            return
        if out_type.element_type != self.to:
            raise VerifyException(f"'{self.name}' result element type must be {self.to}, got {out_type}")
        in_type = known(self.input.type)
        if in_type and in_type.channels != out_type.channels:
            raise VerifyException(f"'{self.name}' must keep the channel count ({in_type} -> {out_type})")


# ---------------------------------------------------------------------------------------------
# Shapes of the compute ops without values: `fkl.<op> %x : T -> T2`, `fkl.<op> %x, WORD : T -> T2`
# ---------------------------------------------------------------------------------------------


class UnaryOp(TypeRuleOp):
    """`fkl.<op> %x : T -> T2`: the op's rule gives the result type from the input type."""

    input = operand_def(ImageType)
    result = result_def(ImageType)

    custom_directives = (TypeSuffix,)
    assembly_format = f"$input {TYPES}"

    def __init__(self, input: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[input], result_types=[result_type or ImageType.unknown()])

    def verify_(self) -> None:
        self.check_result_rule()


class WordOp(TypeRuleOp):
    """`fkl.<op> %x, WORD : T -> T2`: WORD (one of CHOICES) is structural, part of the cache key."""

    CHOICES: ClassVar[tuple[str, ...]]
    WHAT: ClassVar[str]
    BOOL_VERB: ClassVar[str] = ""  # what the op does that a bool chain cannot take, where it refuses one

    input = operand_def(ImageType)
    word = prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (Word, TypeSuffix)
    assembly_format = f"$input `,` custom<Word>($word) {TYPES}"

    def __init__(self, input: SSAValue, word: str, result_type: Attribute | None = None):
        super().__init__(
            operands=[input],
            properties={"word": StringAttr(word)},
            result_types=[result_type or ImageType.unknown()],
        )

    def verify_(self) -> None:
        check_one_of(self, self.WHAT, self.word.data, self.CHOICES)
        self.check_result_rule()


# ---------------------------------------------------------------------------------------------
# Element-wise math (SPEC §3): each op is one `@math_op` class, its whole declaration
# ---------------------------------------------------------------------------------------------


def _check_math_chain(op: MathUnaryOp | MathValueOp, in_type: ImageType) -> None:
    check_not_bool(op, in_type, "computes arithmetic")
    if not op.KEEPS_INTEGERS and not is_float_name(in_type.dtype):
        raise VerifyException(f"'{op.name}' needs a float chain, got {in_type.dtype}; Cast to float first")


class MathUnaryOp(UnaryOp):
    """`fkl.<op> %x : T`: a function of each element that keeps the chain's type.

    FORMULA is the C comment of its emitted statement; NUMPY names the numpy ufunc that is its
    semantics (applied in float64, then rounded to the chain type; on integers in int64, then
    wrapped), which the reference interpreter applies and the C++ struct `fkl::<Name>` must agree with.
    """

    traits = traits_def(ChannelWise(), Pure())

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


# Every @math_op class, in declaration order: the reference interpreter and the emitter's family rules take them
# from here, so a new op is its record and its C++ struct.
MATH_OPS: list[type[MathUnaryOp] | type[MathValueOp]] = []

MathT = TypeVar("MathT", bound=MathUnaryOp | MathValueOp)


def math_op(cls: type[MathT]) -> type[MathT]:
    """Define an element-wise math op (fkl_op) and list it in MATH_OPS."""
    op = fkl_op(cls)
    MATH_OPS.append(op)
    return op
