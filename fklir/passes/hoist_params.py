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
    ModuleOp,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass

from fklir.diagnostics import OpError
from fklir.dialects import fkl


def _slot_for(op: fkl.TypeRuleOp, field: str) -> tuple[str, int, Attribute]:
    """(kind, count, values attribute) of the slot that replaces one inline value field of `op`: the
    kind the op's `slot_for` gives, its values as the op lays them out (`slot_values`), as many as it
    gives (a crop's rects: one per plane, or one that every plane shares)."""
    needed = fkl.param_slot(op, field)
    if needed is None:
        raise OpError(op, f"'{op.name}' must have inferred types before hoisting (run fkl-infer-types)")
    kind, count = needed
    values = op.slot_values(field, count)
    if kind == "rect":
        return kind, len(values) // 4, DenseArrayBase.from_list(i64, [int(v) for v in values])
    if values and isinstance(values[0], int):  # sizes, permutations: integer fields stay integers
        return kind, len(values), DenseArrayBase.from_list(i64, [int(v) for v in values])
    return kind, len(values), DenseArrayBase.from_list(f64, [float(v) for v in values])


def _short_name(op: Operation) -> str:
    return op.name.removeprefix("fkl.")


def _hoist_field(op: fkl.TypeRuleOp, field: str, name: str) -> tuple[str, int, Attribute] | None:
    if fkl.field_values(op, field) is None:
        return None
    try:
        kind, count, attr = _slot_for(op, field)
    except ValueError as e:
        raise OpError(op, f"'{op.name}' {e}") from None
    del op.properties[field]
    op.properties[fkl.slot_property(field)] = StringAttr(name)
    op.hoisted(field)
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
        if not isinstance(op, fkl.TypeRuleOp):  # only those have value fields
            continue
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
