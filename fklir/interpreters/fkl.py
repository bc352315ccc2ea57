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
        self.plane_parts: dict[str, dict[int, np.ndarray]] = {}
        self.env: dict[SSAValue, sem.Image | Ragged] = {}
        self.chain_planes: list[list[int]] | None = None  # divergent kernel: planes of each chain
        self.chain_index = -1

    def write(self, dest: str, data: np.ndarray, planes: list[int] | None) -> None:
        """Whole output, or the listed planes (value plane z, or its only plane, goes to plane z)."""
        if planes is None:
            self.outputs[dest] = data
            return
        parts = self.plane_parts.setdefault(dest, {})
        for z in planes:
            parts[z] = data[min(z, data.shape[0] - 1)]

    def finish(self) -> dict[str, np.ndarray]:
        for dest, parts in self.plane_parts.items():
            self.outputs[dest] = np.stack([parts[z] for z in range(len(parts))])
        return self.outputs

    def values_of(self, op: Operation, kernel_values: Mapping[str, tuple[float, ...]]) -> tuple[float, ...]:
        slot = getattr(op, "slot", None)
        if slot is not None:
            return kernel_values[slot.data]
        value = op.properties["value"]
        return tuple(float(v) for v in value.get_values())  # pyright: ignore[reportAttributeAccessIssue]

    def run_block(self, ops: list[Operation], kernel_values: Mapping[str, tuple[float, ...]]) -> None:
        for op in ops:
            if isinstance(op, fkl.KernelOp):
                self.run_kernel(op)
                continue
            self.run_op(op, kernel_values)

    def run_kernel(self, kernel: fkl.KernelOp) -> None:
        values: dict[str, tuple[float, ...]] = {}
        if kernel.values is not None:
            values = {
                k: tuple(float(v) for v in a.get_values())  # pyright: ignore[reportAttributeAccessIssue]
                for k, a in kernel.values.data.items()
            }
        self.chain_planes, self.chain_index = None, -1
        if (plane_map := values.get(fkl.PLANE_MAP_SLOT)) is not None:
            chains = max(int(c) for c in plane_map) + 1
            self.chain_planes = [[z for z, c in enumerate(plane_map) if int(c) == k] for k in range(chains)]
        self.run_block(list(kernel.body.block.ops), values)
        self.chain_planes = None

    def run_read(self, op: fkl.ReadOp, kernel_values: Mapping[str, tuple[float, ...]]) -> None:
        self.chain_index += 1
        source_type = op.source_type
        assert isinstance(source_type, fkl.ImageType)
        arrays = [self.inputs[name] for name in op.sources]
        if len(arrays) > 1:
            data = np.stack([as_planes(a, source_type.with_planes(1))[0] for a in arrays])
        else:
            data = as_planes(arrays[0], source_type)
        image: sem.Image | Ragged = sem.read(data, source_type.dtype)
        if op.sample is not None and op.sample.blocks:
            block = op.sample.block
            self.env[block.args[0]] = image
            for inner in op.geometry:
                self.run_op(inner, kernel_values)
            last = block.last_op
            assert isinstance(last, fkl.YieldOp)
            image = self.env[last.input]
        self.env[op.result] = image

    def run_op(self, op: Operation, kernel_values: Mapping[str, tuple[float, ...]]) -> None:
        if isinstance(op, fkl.ReadOp):
            self.run_read(op, kernel_values)
            return
        img = self.env[op.operands[0]]
        if isinstance(img, Ragged):
            if not isinstance(op, fkl.ResizeOp):
                raise ValueError(f"'{op.name}': the crop rects differ in size; put a Resize after the Crop")
            self.env[op.results[0]] = _resize(img, op, self.values_of(op, kernel_values))
            return
        if isinstance(op, fkl.WRITE_OPS):
            planes = op.plane_list
            if planes is None and self.chain_planes is not None:
                planes = self.chain_planes[self.chain_index]
            data = sem.to_planar(img) if isinstance(op, fkl.SplitOp) else img.data
            self.write(op.dest.data, data, planes)
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
    return run.finish()
