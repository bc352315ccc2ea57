"""`fkl-hoist-params`: move every op value into its kernel's typed parameter block.

`fkl.mul %x, [1.0, 2.0, 3.0]` becomes `fkl.mul %x, param "mul2"`, the kernel's `params` type gains
the slot `mul2: f32 x 3` and its `values` dictionary the numbers. A broadcast value is expanded
to one per channel, so a scalar and a tuple share the same structure. An op with several values
(see `VALUE_FIELDS`) gets one slot per value: `resize2` and `resize2_background`. Slot kinds: the
chain's element type for per-channel values (arithmetic, StaticLoop, Saturate, AddLast, the
border's and ReadSet's value; the result type for a resize background), `rect` for crop rects,
`i32` for sizes and runtime permutations, `f32` for matrices. A warp's slot always holds the
destination -> source map (inverted here in double when the op gives source -> destination,
which is then marked `inverse`).

What remains without `values` is the structure only: the IR the cache key hashes, so changing a
value never recompiles. Run after `fkl-infer-types` and `fkl-outline-kernels`. No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, ModuleOp, StringAttr, UnitAttr, f64, i64
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass

from fklir.diagnostics import OpError
from fklir.dialects import fkl

# dtype name -> slot kind (the IR's spelling of the element type).
SLOT_KIND = {
    "uint8": "ui8",
    "int8": "i8",
    "uint16": "ui16",
    "int16": "i16",
    "int32": "i32",
    "uint32": "ui32",
    "float16": "f16",
    "bfloat16": "bf16",
    "float32": "f32",
    "float64": "f64",
    "bool": "i1",
}


def _known_type(op: Operation, t: object) -> fkl.ImageType:
    if not isinstance(t, fkl.ImageType) or not t.is_known:
        raise OpError(op, f"'{op.name}' must have inferred types before hoisting (run fkl-infer-types)")
    return t


def _per_channel(values: tuple[float, ...], channels: int) -> list[float]:
    """A broadcast value expanded to one per channel, so a scalar and a tuple share one structure."""
    return list(values * channels if len(values) == 1 else values)


def _float_slot(kind: str, values: list[float]) -> tuple[str, int, Attribute]:
    return kind, len(values), DenseArrayBase.from_list(f64, values)


def _int_slot(kind: str, values: list[int]) -> tuple[str, int, Attribute]:
    return kind, len(values), DenseArrayBase.from_list(i64, values)


def _slot_for(op: Operation, field: str, values: tuple[float, ...]) -> tuple[str, int, Attribute]:
    """(kind, count, values attribute) of the slot that replaces one inline value field of `op`."""
    in_type = _known_type(op, op.operands[0].type)
    channels, chain_kind = in_type.channels.data, SLOT_KIND[in_type.dtype]
    if isinstance(op, fkl.CropOp):
        flat = [int(v) for r in op.rects for v in r]
        return "rect", len(op.rects), DenseArrayBase.from_list(i64, flat)
    if field == "size" or (isinstance(op, fkl.ResizeOp) and field == "value"):
        return _int_slot("i32", [int(v) for v in values])
    if isinstance(op, fkl.ResizeOp):  # the background, in the result's element type
        out_type = _known_type(op, op.results[0].type)
        return _float_slot(SLOT_KIND[out_type.dtype], _per_channel(values, channels))
    if isinstance(op, fkl.SaturateOp):
        lo, hi = op.bounds
        return _float_slot(chain_kind, _per_channel(lo, channels) + _per_channel(hi, channels))
    if isinstance(op, fkl.VectorReorderRTOp):
        return _int_slot("i32", [int(v) for v in values])
    if isinstance(op, fkl.MxVFloat3Op):
        return _float_slot("f32", list(values))
    if isinstance(op, fkl.WarpOp):  # always the destination -> source map, as the kernel samples
        inverse = values if op.inverse is not None else fkl.invert_warp_matrix(values)
        return _float_slot("f32", list(inverse))
    if isinstance(op, fkl.AddLastOp):
        return _float_slot(chain_kind, list(values))
    # one value per channel in the chain type: arithmetic, StaticLoop, BorderReader, ReadSet
    return _float_slot(chain_kind, _per_channel(values, channels))


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
