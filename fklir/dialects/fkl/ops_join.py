"""The ops that join branches of a DAG (SPEC §8): each output pixel a function of the pixels at the same
place of two images of one shape (and of a mask for fkl.composite).

```mlir
%d = fkl.join absdiff %frame, %background : !fkl.image<?x?x3xf32>
%e = fkl.join equal %a, %b : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xi1>
%m = fkl.blend %a, %b, 0.25 : !fkl.image<?x?x3xui8>            // a * alpha + b * (1 - alpha)
%c = fkl.composite %fg, %bg, %mask : !fkl.image<?x?x3xui8>, !fkl.image<?x?x1xui8>   // fg m + bg (1 - m)
```

The joined images must have one element type, channel count and plane count: a mismatch is an error
that names the ops that made both. Blend and Composite compute in float64 and round once to the
chain type (integers: to nearest, ties to even, saturated).
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.dialects.builtin import DenseArrayBase, Float64Type, StringAttr, f64
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.irdl import operand_def, opt_prop_def, prop_def, result_def, traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from fklir.dialects import value_rules
from fklir.dialects.constants import JOIN_KINDS
from fklir.dialects.fkl.abstract_ops import TypeRuleOp, fkl_op
from fklir.dialects.fkl.checks import check_not_bool, check_one_of, int32
from fklir.dialects.fkl.fields import check_value_or_slot, field_values
from fklir.dialects.fkl.syntax import JoinTypes, MaskTypes, NumberOrSlot, Word
from fklir.dialects.fkl.traits import Join
from fklir.dialects.fkl.types import ImageType, is_float_name, known, reshaped

_BOOL_KINDS = ("max", "min", "equal")  # or, and, equality of bools; the rest is arithmetic


def _producer(value: SSAValue) -> str:
    owner = value.owner
    return f"the result of '{owner.name}'" if isinstance(owner, Operation) else "a block argument"


def check_joined(op: TypeRuleOp, in_type: ImageType, other: SSAValue, what: str = "image") -> None:
    """The other operand, once typed, has `in_type`'s element type, channels and planes."""
    other_type = known(other.type)
    if other_type is None:
        return
    if (other_type.element_type, other_type.channels, other_type.planes) == (
        in_type.element_type,
        in_type.channels,
        in_type.planes,
    ):
        return
    raise VerifyException(
        f"'{op.name}' joins {in_type} ({_producer(op.operands[0])}) and {other_type} ({_producer(other)}): "
        f"the {what}s must have one element type, channel count and plane count"
    )


@fkl_op
class JoinOp(TypeRuleOp):
    """Add ... Min, AbsDiff and Equal of two branches: `fkl.join <kind> %a, %b : T` (Equal: `-> T2`, bool).

    Integers wrap like the value ops (AbsDiff: |a - b| in the chain type, wrapped like C); Div needs a
    float chain (an integer divisor of 0 has no quotient).
    """

    name = "fkl.join"
    traits = traits_def(Join(), Pure())

    kind = prop_def(StringAttr)
    input = operand_def(ImageType)
    other = operand_def(ImageType)
    result = result_def(ImageType)

    custom_directives = (Word, JoinTypes)
    assembly_format = (
        "custom<Word>($kind) $input `,` $other custom<JoinTypes>(type($input), type($other), type($result)) attr-dict"
    )

    def __init__(self, kind: str, input: SSAValue, other: SSAValue, result_type: Attribute | None = None):
        super().__init__(
            operands=[input, other],
            properties={"kind": StringAttr(kind)},
            result_types=[result_type or ImageType.unknown()],
        )

    @property
    def struct(self) -> str:
        """The op headers' struct that computes this kind (`fkl::AbsDiff`)."""
        return JOIN_KINDS[self.kind.data]

    def result_for(self, in_type: ImageType) -> ImageType:
        kind = self.kind.data
        if kind not in _BOOL_KINDS:
            check_not_bool(self, in_type, f"computes {kind}")
        if kind == "div" and not is_float_name(in_type.dtype):
            raise VerifyException(
                f"'{self.name}' div of two {in_type.dtype} images: an integer divisor may be 0; Cast to float first"
            )
        check_joined(self, in_type, self.other)
        return reshaped(in_type, element="bool") if kind == "equal" else in_type

    def verify_(self) -> None:
        check_one_of(self, "kind", self.kind.data, tuple(JOIN_KINDS))
        self.check_result_rule()


@fkl_op
class BlendOp(TypeRuleOp):
    """Blend: a * alpha + b * (1 - alpha) of two branches, alpha a runtime value.

    `fkl.blend %a, %b, 0.25 : T`; hoisted `fkl.blend %a, %b, param "blend3" : T` (f64 x 1).
    """

    name = "fkl.blend"
    traits = traits_def(Join(), Pure())
    VALUE_FIELDS: ClassVar[tuple[str, ...]] = ("value",)

    input = operand_def(ImageType)
    other = operand_def(ImageType)
    value = opt_prop_def(DenseArrayBase[Float64Type])
    slot = opt_prop_def(StringAttr)
    result = result_def(ImageType)

    custom_directives = (NumberOrSlot, JoinTypes)
    assembly_format = (
        "$input `,` $other `,` custom<NumberOrSlot>($value, $slot) "
        "custom<JoinTypes>(type($input), type($other), type($result)) attr-dict"
    )

    def __init__(
        self,
        input: SSAValue,
        other: SSAValue,
        alpha: float | None,
        result_type: Attribute | None = None,
        slot: str | None = None,
    ):
        properties: dict[str, Attribute] = {}
        if alpha is not None:
            properties["value"] = DenseArrayBase.from_list(f64, [float(alpha)])
        if slot is not None:
            properties["slot"] = StringAttr(slot)
        super().__init__(
            operands=[input, other], properties=properties, result_types=[result_type or ImageType.unknown()]
        )

    def result_for(self, in_type: ImageType) -> ImageType:
        check_not_bool(self, in_type, "blends")
        check_joined(self, in_type, self.other)
        return in_type

    def slot_for(self, field: str, in_type: ImageType, out_type: ImageType | None) -> tuple[str, int] | None:
        return "f64", 1

    def verify_(self) -> None:
        check_value_or_slot(self, self.value, self.slot)
        if (values := field_values(self)) is not None:
            int32(value_rules.blend_alpha, f"'{self.name}'", values)
        self.check_result_rule()


# Composite's masks: m = mask / 255 for uint8, the mask as it is for bool (0 or 1) and float types.
MASK_DTYPES = ("uint8", "bool", "float16", "bfloat16", "float32", "float64")


@fkl_op
class CompositeOp(TypeRuleOp):
    """Composite: a * m + b * (1 - m) (cvcuda.composite's meaning), m the mask: one channel for every
    channel, or one per channel; a uint8 mask is m = mask / 255.

    `fkl.composite %fg, %bg, %mask : !fkl.image<?x?x3xui8>, !fkl.image<?x?x1xui8>`
    """

    name = "fkl.composite"
    traits = traits_def(Join(), Pure())

    input = operand_def(ImageType)
    other = operand_def(ImageType)
    mask = operand_def(ImageType)
    result = result_def(ImageType)

    custom_directives = (MaskTypes,)
    assembly_format = (
        "$input `,` $other `,` $mask custom<MaskTypes>(type($input), type($other), type($mask), type($result)) "
        "attr-dict"
    )

    def __init__(self, input: SSAValue, other: SSAValue, mask: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[input, other, mask], result_types=[result_type or ImageType.unknown()])

    def result_for(self, in_type: ImageType) -> ImageType:
        check_not_bool(self, in_type, "composites")
        check_joined(self, in_type, self.other)
        mask_type = known(self.mask.type)
        if mask_type is None:
            return in_type
        where = f"'{self.name}' mask {mask_type} ({_producer(self.mask)})"
        if mask_type.dtype not in MASK_DTYPES:
            raise VerifyException(f"{where}: a mask is uint8 (m = mask / 255), bool or float, not {mask_type.dtype}")
        if mask_type.channels.data not in (1, in_type.channels.data):
            raise VerifyException(
                f"{where}: a mask has 1 channel or one per channel of the image ({in_type.channels.data})"
            )
        if mask_type.planes != in_type.planes:
            raise VerifyException(f"{where}: the mask must have the image's {in_type.planes.data} plane(s)")
        return in_type

    def verify_(self) -> None:
        self.check_result_rule()
