"""Values that hoisting moves into the parameter block: value fields, their slot properties and checks.

An op with values lists them in VALUE_FIELDS. Field "value" lives in the properties `value`
(inline numbers) and `slot` (the parameter slot after hoisting); any other field F lives in
`F` and `F_slot`. Exactly one of the two is set, except for optional fields, where neither is.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import DenseArrayBase, StringAttr, f64, i64
from xdsl.ir import Attribute, Operation
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

from fklir.dialects import value_rules
from fklir.dialects.fkl.checks import int32


def slot_property(field: str) -> str:
    """The property that names the parameter slot of value field `field`."""
    return "slot" if field == "value" else f"{field}_slot"


def value_fields(op: Operation) -> tuple[str, ...]:
    """The value fields of `op` (empty for ops without values)."""
    return getattr(type(op), "VALUE_FIELDS", ())


def is_per_plane(op: Operation) -> bool:
    """Whether `op`'s values hold one row per plane (`per_plane`): plane z of the chain takes row z."""
    return op.properties.get("per_plane") is not None


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


def check_field(op: IRDLOperation, field: str, required: bool = True) -> None:
    has_value = op.properties.get(field) is not None
    has_slot = op.properties.get(slot_property(field)) is not None
    what = "an inline value" if field == "value" else f"an inline {field}"
    if has_value and has_slot:
        raise VerifyException(f"'{op.name}' needs exactly one of {what} or a parameter slot")
    if required and not (has_value or has_slot):
        raise VerifyException(f"'{op.name}' needs exactly one of {what} or a parameter slot")


def check_value_or_slot(op: IRDLOperation, value: Attribute | None, slot: StringAttr | None) -> None:
    if (value is None) == (slot is None):
        raise VerifyException(f"'{op.name}' needs exactly one of an inline value or a parameter slot")


def float_array(values: Sequence[float]) -> DenseArrayBase:
    return DenseArrayBase.from_list(f64, [float(v) for v in values])


def int_array(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, [int(v) for v in values])


def field_properties(field: str, values: DenseArrayBase | None, slot: str | None) -> dict[str, Attribute]:
    properties: dict[str, Attribute] = {}
    if values is not None:
        properties[field] = values
    if slot is not None:
        properties[slot_property(field)] = StringAttr(slot)
    return properties


def _int_values(op: Operation, field: str) -> list[int] | None:
    """The inline integers of one value field, exactly (field_values' floats round above 2^53)."""
    attr = op.properties.get(field)
    if not isinstance(attr, DenseArrayBase):
        return None
    return [int(v) for v in attr.get_values()]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]


def check_size_field(op: IRDLOperation, field: str) -> None:
    """An output size [w, h] (value_rules.output_size)."""
    sizes = _int_values(op, field)
    if sizes is None:
        return
    if len(sizes) != 2:
        raise VerifyException(f"'{op.name}' size must be [w, h] with positive values, got {sizes}")
    int32(value_rules.output_size, f"'{op.name}'", *sizes)
