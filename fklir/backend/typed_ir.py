"""What the emission rules read off a typed, hoisted kernel: an op's known image types and the C++ names of
its values' parameter slots. The analysis and the rules (kernel_plan, chains, emit_rules, emit_compute,
emit_geometry) use it; the templates see only the plan."""

from __future__ import annotations

from xdsl.ir import Operation

from fklir.backend.plan import PixelType
from fklir.dialects import fkl


def image_of(t: object) -> fkl.ImageType:
    """A known image type (the emitter runs after fkl-infer-types)."""
    if not (isinstance(t, fkl.ImageType) and t.is_known):
        raise ValueError(f"un-inferred type {t}: run fkl-infer-types first")
    return t


def pixel_of(t: fkl.ImageType) -> PixelType:
    """An image type's pixel as the plan's records hold it."""
    return PixelType(t.dtype, t.channels.data)


def values_of(op: Operation, slot_suffix: str = "", field: str = "value") -> str:
    """The array of the values of op's `field` that a pixel of plane `z` reads: its slot (`p.mul3`), or a
    per-plane op's row z of it (`fkl::row<3>(p.mul3, z)`); `slot_suffix` names a slot the host derives
    from it (`_rcp`)."""
    values = f"p.{slot_of(op, field)}{slot_suffix}"
    if not (isinstance(op, fkl.TypeRuleOp) and fkl.is_per_plane(op) and field == op.PER_PLANE_FIELD):
        return values
    row = op.slot_for(field, image_of(op.operands[0].type), image_of(op.results[0].type))
    assert row is not None
    return f"fkl::row<{row[1]}>({values}, z)"


def slot_of(op: Operation, field: str = "value") -> str:
    """The parameter slot that holds one value field of `op` (after fkl-hoist-params)."""
    slot = fkl.field_slot(op, field)
    if slot is None:
        raise ValueError(f"'{op.name}' still has an inline value: run fkl-hoist-params before emission")
    return slot
