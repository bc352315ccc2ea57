"""The reference interpreter of the fkl dialect: runs a module on numpy arrays, op by op.

It is the oracle of the numeric and differential tests, so it shares nothing with the backend it
checks: each op dispatches to `fklir.interpreters.semantics*` (numpy, float64 inside, SPEC
rounding). It runs IR before or after any pass: inline values and hoisted parameter slots (read
from the enclosing kernel's `values`) are both understood.

    outputs = run_module(module, {"src": image})   # {"dst": array}
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from fklir.dialects import fkl
from fklir.interpreters import semantics as sem
from fklir.interpreters import semantics_geometry as geo


class Ragged(list[sem.Image]):
    """Planes of different sizes (a Crop of differently sized rects); only a Resize may follow."""


ARITH_NAMES = {
    fkl.AddOp: "add",
    fkl.SubOp: "sub",
    fkl.MulOp: "mul",
    fkl.DivOp: "div",
    fkl.MaxOp: "max",
    fkl.MinOp: "min",
}


def as_planes(array: np.ndarray, image_type: fkl.ImageType) -> np.ndarray:
    """View an input array as (B, H, W, C) following the read's type."""
    channels, planes = image_type.channels.data, image_type.planes.data
    if planes == 1 and array.ndim in (2, 3) and (array.ndim == 2 or array.shape[-1] == channels):
        return array.reshape(1, array.shape[0], array.shape[1], channels)
    return array.reshape(array.shape[0], array.shape[1], array.shape[2], channels)


class _Run:
    def __init__(self, inputs: Mapping[str, np.ndarray]):
        self.inputs = inputs
        self.outputs: dict[str, np.ndarray] = {}
        self.env: dict[SSAValue, sem.Image | Ragged] = {}

    def values_of(self, op: Operation, kernel_values: Mapping[str, tuple[float, ...]]) -> tuple[float, ...]:
        slot = getattr(op, "slot", None)
        if slot is not None:
            return kernel_values[slot.data]
        value = op.properties["value"]
        return tuple(float(v) for v in value.get_values())  # pyright: ignore[reportAttributeAccessIssue]

    def run_block(self, ops: list[Operation], kernel_values: Mapping[str, tuple[float, ...]]) -> None:
        for op in ops:
            if isinstance(op, fkl.KernelOp):
                values = {}
                if op.values is not None:
                    values = {
                        k: tuple(float(v) for v in a.get_values())  # pyright: ignore[reportAttributeAccessIssue]
                        for k, a in op.values.data.items()
                    }
                self.run_block(list(op.body.block.ops), values)
                continue
            self.run_op(op, kernel_values)

    def run_op(self, op: Operation, kernel_values: Mapping[str, tuple[float, ...]]) -> None:
        if isinstance(op, fkl.ReadOp):
            t = op.result.type
            self.env[op.result] = sem.read(as_planes(self.inputs[op.source.data], t), t.dtype)
            return
        img = self.env[op.operands[0]]
        if isinstance(img, Ragged):
            if not isinstance(op, fkl.ResizeOp):
                raise ValueError(f"'{op.name}': the crop rects differ in size; put a Resize after the Crop")
            self.env[op.results[0]] = _resize(img, op, self.values_of(op, kernel_values))
            return
        if isinstance(op, fkl.WriteOp):
            self.outputs[op.dest.data] = img.data
            return
        if isinstance(op, fkl.SplitOp):
            self.outputs[op.dest.data] = sem.to_planar(img)
            return
        handler = _HANDLERS.get(type(op))
        if handler is None:
            raise NotImplementedError(f"reference interpreter: no semantics for '{op.name}'")
        self.env[op.results[0]] = handler(img, op, self.values_of(op, kernel_values) if _has_value(op) else ())


def _has_value(op: Operation) -> bool:
    return isinstance(op, fkl.VALUE_OPS)


def _arith(img: sem.Image, op: Operation, values: tuple[float, ...]) -> sem.Image:
    return sem.arith(ARITH_NAMES[type(op)], img, values)


def _cast(img: sem.Image, op: Operation, values: tuple[float, ...]) -> sem.Image:
    assert isinstance(op, fkl.CastLikeOp)
    to = fkl.dtype_name(op.to)
    return sem.saturate_cast(img, to) if isinstance(op, fkl.SaturateCastOp) else sem.cast(img, to)


def _crop(img: sem.Image, op: Operation, values: tuple[float, ...]) -> sem.Image | Ragged:
    """Crop planes; rects of different sizes give a `Ragged` list that only a Resize may take."""
    flat = [int(v) for v in values]
    rects = [flat[i : i + 4] for i in range(0, len(flat), 4)]
    if len(rects) == 1 and img.batch > 1:
        rects = rects * img.batch  # one rect applies to every plane
    if len({(r[2], r[3]) for r in rects}) == 1:
        return geo.crop(img, rects)
    planes = [img if img.batch == 1 else sem.Image(img.data[z : z + 1], img.dtype) for z in range(len(rects))]
    return Ragged([geo.crop(plane, [rect]) for plane, rect in zip(planes, rects, strict=True)])


def _resize(img: sem.Image | Ragged, op: Operation, values: tuple[float, ...]) -> sem.Image:
    assert isinstance(op, fkl.ResizeOp)
    w, h = (int(v) for v in values)
    if isinstance(img, Ragged):
        planes = [geo.resize(plane, w, h, op.interp.data) for plane in img]
        return sem.Image(np.concatenate([p.data for p in planes]), planes[0].dtype)
    return geo.resize(img, w, h, op.interp.data)


_HANDLERS: dict[type[Operation], Callable[[Any, Operation, tuple[float, ...]], Any]] = {
    **{cls: _arith for cls in ARITH_NAMES},
    fkl.CastOp: _cast,
    fkl.SaturateCastOp: _cast,
    fkl.CropOp: _crop,
    fkl.ResizeOp: _resize,
}


def run_module(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Interpret every chain of `module` (top level or in kernels); returns the written buffers.

    Packed writes come back as (B, H, W, C) arrays, planar ones as (B, C, H, W).
    """
    run = _Run(inputs)
    run.run_block(list(module.body.block.ops), {})
    return run.outputs
