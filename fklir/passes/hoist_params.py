"""`fkl-hoist-params`: move every op value into its kernel's typed parameter block.

`fkl.mul %x, [1.0, 2.0, 3.0]` becomes `fkl.mul %x, param "mul2"`, the kernel's `params` type gains
the slot `mul2: f32 x 3` and its `values` dictionary the numbers. A broadcast value is expanded
to one per channel, so a scalar and a tuple share the same structure. An op with several values
(see `VALUE_FIELDS`) gets one slot per value: `resize2` and `resize2_background`. Each slot has the
kind and count that `fkl.param_slot` gives (the rule fkl.kernel's verifier checks slots against);
a crop's slot holds its rects, one per plane or one shared. A warp's slot always holds the
destination -> source map (inverted here in double when the op gives source -> destination,
which is then marked `inverse`).

What remains without `values` is the structure only: the IR the cache key hashes, so changing a
value never recompiles. Run after `fkl-infer-types` and `fkl-outline-kernels`. No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    UnitAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass

from fklir.diagnostics import OpError
from fklir.dialects import fkl


def _per_channel(values: tuple[float, ...], channels: int) -> list[float]:
    """A broadcast value expanded to one per channel, so a scalar and a tuple share one structure."""
    return list(values * channels if len(values) == 1 else values)


def _float_slot(kind: str, values: list[float]) -> tuple[str, int, Attribute]:
    return kind, len(values), DenseArrayBase.from_list(f64, values)


def _int_slot(kind: str, values: list[int]) -> tuple[str, int, Attribute]:
    return kind, len(values), DenseArrayBase.from_list(i64, values)


def _slot_for(op: Operation, field: str, values: tuple[float, ...]) -> tuple[str, int, Attribute]:
    """(kind, count, values attribute) of the slot that replaces one inline value field of `op`:
    the kind and count `fkl.param_slot` gives, and the values laid out as the kernel reads them."""
    needed = fkl.param_slot(op, field)
    if needed is None:
        raise OpError(op, f"'{op.name}' must have inferred types before hoisting (run fkl-infer-types)")
    kind, count = needed
    if isinstance(op, fkl.CropOp):  # one rect per plane, or one that every plane shares
        flat = [int(v) for r in op.rects for v in r]
        return kind, len(op.rects), DenseArrayBase.from_list(i64, flat)
    attr = op.properties[field]
    if isinstance(attr, DenseArrayBase) and isinstance(attr.elt_type, IntegerType):  # sizes, permutations
        return _int_slot(kind, [int(v) for v in attr.get_values()])  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    if isinstance(op, fkl.SaturateOp):
        lo, hi = op.bounds
        return _float_slot(kind, _per_channel(lo, count // 2) + _per_channel(hi, count // 2))
    if isinstance(op, fkl.WarpOp):  # always the destination -> source map, as the kernel samples
        inverse = values if op.inverse is not None else fkl.invert_warp_matrix(values)
        return _float_slot(kind, list(inverse))
    # one value per element (a broadcast value repeated): arithmetic, StaticLoop, AddLast, MxVFloat3,
    # the border's, ReadSet's and the resize background's values
    return _float_slot(kind, _per_channel(values, count))


def _short_name(op: Operation) -> str:
    return op.name.removeprefix("fkl.")


def _hoist_field(op: Operation, field: str, name: str) -> tuple[str, int, Attribute] | None:
    values = fkl.field_values(op, field)
    if values is None:
        return None
    try:
        kind, count, attr = _slot_for(op, field, values)
    except ValueError as e:
        raise OpError(op, f"'{op.name}' {e}") from None
    del op.properties[field]
    op.properties[fkl.slot_property(field)] = StringAttr(name)
    if isinstance(op, fkl.WarpOp) and field == "value":
        op.properties["inverse"] = UnitAttr()
    return kind, count, attr


def _free_name(name: str, taken: set[str]) -> str:
    """`name`, or `name_1`, `name_2`, ... when a slot of the kernel already has it."""
    candidate, suffix = name, 0
    while candidate in taken:
        suffix += 1
        candidate = f"{name}_{suffix}"
    return candidate


def hoist_kernel(kernel: fkl.KernelOp) -> None:
    slots = list(kernel.params.slots)
    values = dict(kernel.values.data) if kernel.values is not None else {}
    taken = {name for name, _, _ in slots}
    for index, op in enumerate(kernel.body.walk()):
        for field in fkl.value_fields(op):
            name = _free_name(f"{_short_name(op)}{index}" + ("" if field == "value" else f"_{field}"), taken)
            slot = _hoist_field(op, field, name)
            if slot is None:
                continue
            kind, count, value = slot
            taken.add(name)
            slots.append((name, kind, count))
            values[name] = value
    kernel.properties["params"] = fkl.ParamsType(slots)
    kernel.properties["values"] = DictionaryAttr(values)


@dataclass(frozen=True)
class HoistParamsPass(ModulePass):
    name = "fkl-hoist-params"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if isinstance(kernel, fkl.KernelOp):
                hoist_kernel(kernel)
