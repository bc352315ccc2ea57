"""`fkl-hoist-params`: move every op value into its kernel's typed parameter block.

`fkl.mul %x, [1.0, 2.0, 3.0]` becomes `fkl.mul %x, param "mul2"`, the kernel's `params` type gains
the slot `mul2: f32 x 3` and its `values` dictionary the numbers. A broadcast value is expanded
to one per channel, so a scalar and a tuple share the same structure. Slot kinds: the chain's
element type for arithmetic, `rect` for crop rects, `i32` for resize sizes.

What remains without `values` is the structure only: the IR the cache key hashes, so changing a
value never recompiles. Run after `fkl-infer-types` and `fkl-outline-kernels`. No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, ModuleOp, StringAttr, f64, i64
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


def _slot_for(op: Operation) -> tuple[str, int, Attribute]:
    """(kind, count, values attribute) of the slot that replaces `op`'s inline value."""
    if isinstance(op, fkl.BinaryValueOp):
        in_type = op.input.type
        assert isinstance(in_type, fkl.ImageType)
        if not in_type.is_known:
            raise OpError(op, f"'{op.name}' must have inferred types before hoisting (run fkl-infer-types)")
        channels = in_type.channels.data
        values = op.values * channels if len(op.values) == 1 else op.values
        return SLOT_KIND[in_type.dtype], channels, DenseArrayBase.from_list(f64, list(values))
    if isinstance(op, fkl.CropOp):
        flat = [v for r in op.rects for v in r]
        return "rect", len(op.rects), DenseArrayBase.from_list(i64, flat)
    assert isinstance(op, fkl.ResizeOp)
    return "i32", 2, DenseArrayBase.from_list(i64, list(op.size))


def _short_name(op: Operation) -> str:
    return op.name.removeprefix("fkl.")


def hoist_kernel(kernel: fkl.KernelOp) -> None:
    slots = list(kernel.params.slots)
    values = dict(kernel.values.data) if kernel.values is not None else {}
    for index, op in enumerate(kernel.body.walk()):
        if not isinstance(op, fkl.VALUE_OPS) or op.properties.get("value") is None:
            continue
        kind, count, value = _slot_for(op)
        name = f"{_short_name(op)}{index}"
        slots.append((name, kind, count))
        values[name] = value
        del op.properties["value"]
        op.properties["slot"] = StringAttr(name)
    kernel.properties["params"] = fkl.ParamsType(slots)
    kernel.properties["values"] = DictionaryAttr(values)


@dataclass(frozen=True)
class HoistParamsPass(ModulePass):
    name = "fkl-hoist-params"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for kernel in op.walk():
            if isinstance(kernel, fkl.KernelOp):
                hoist_kernel(kernel)
