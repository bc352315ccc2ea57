"""The reference interpreter of the fkl dialect: runs a module on numpy arrays, op by op.

It is the oracle of the numeric and differential tests, so it shares nothing with the backend it
checks: each op dispatches to `fklir.interpreters.semantics*` (numpy, float64 inside, SPEC
rounding). It runs IR before or after any pass: inline values and hoisted parameter slots (read
from the enclosing kernel's `values`) are both understood.

    outputs = run_module(module, {"src": image})   # {"dst": array}

Inputs are packed (H, W[, C]) or (B, H, W[, C]) arrays; a read of a `planar` type (TensorPack)
takes (C, H, W) or (B, C, H, W). Outputs: packed writes come back as (B, H, W, C), `fkl.split` as
(B, C, H, W), `fkl.tsplit` as (C, B, H, W) and `fkl.split_write` as a tuple of C (B, H, W) arrays.
A chain that starts with `fkl.read_set` needs no input.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from fklir.dialects import fkl
from fklir.interpreters import semantics as sem
from fklir.interpreters import semantics_color as color
from fklir.interpreters import semantics_geometry as geo

Values = tuple[float, ...]
KernelValues = Mapping[str, Values]


@dataclass(frozen=True)
class Bordered:
    """An image seen through a BorderReader: defined at every coordinate. Only the geometry op
    right after it samples outside; everything else sees the image itself."""

    image: sem.Image
    mode: str
    value: Values | None

    @property
    def border(self) -> geo.Border:
        return (self.mode, self.value if self.value is not None else 0.0)


class Ragged(list[sem.Image | Bordered]):
    """Planes of different sizes (a Crop of differently sized rects): geometry runs per plane until
    the sizes agree again (a Resize or Warping); a compute op or a write on them is an error."""


State = sem.Image | Bordered | Ragged


def _plain(state: sem.Image | Bordered) -> sem.Image:
    return state.image if isinstance(state, Bordered) else state


def as_planes(array: np.ndarray, image_type: fkl.ImageType) -> np.ndarray:
    """View an input array as (B, H, W, C) following the read's type."""
    channels, planes = image_type.channels.data, image_type.planes.data
    if planes == 1 and array.ndim in (2, 3) and (array.ndim == 2 or array.shape[-1] == channels):
        return array.reshape(1, array.shape[0], array.shape[1], channels)
    return array.reshape(array.shape[0], array.shape[1], array.shape[2], channels)


def _read_array(array: np.ndarray, image_type: fkl.ImageType) -> sem.Image:
    if image_type.layout.data == "planar":  # TensorPack: (C, H, W) or (B, C, H, W)
        return sem.from_planar(array, image_type.dtype)
    return sem.read(as_planes(array, image_type), image_type.dtype)


# How each write op lays out the (B, H, W, C) result, and along which axis planes stack.
_WRITE_LAYOUTS: dict[type[Operation], tuple[Callable[[sem.Image], Any], int]] = {
    fkl.WriteOp: (lambda img: img.data, 0),
    fkl.SplitOp: (sem.to_planar, 0),
    fkl.TSplitOp: (sem.to_tsplit, 1),
    fkl.SplitWriteOp: (sem.to_tsplit, 1),
}


class _Run:
    def __init__(self, inputs: Mapping[str, np.ndarray]):
        self.inputs = inputs
        self.outputs: dict[str, Any] = {}
        self.plane_parts: dict[str, tuple[type[Operation], dict[int, np.ndarray]]] = {}
        self.env: dict[SSAValue, State] = {}
        self.chain_planes: list[list[int]] | None = None  # divergent kernel: planes of each chain
        self.chain_index = -1

    def write(self, op: Operation, img: sem.Image, planes: list[int] | None) -> None:
        """Whole output, or the listed planes (value plane z, or its only plane, goes to plane z)."""
        assert isinstance(op, fkl.WRITE_OPS)
        dest = op.dest.data
        if planes is None or img.batch == 0:  # an input of no planes makes none, whatever the plane map
            layout, _ = _WRITE_LAYOUTS[type(op)]
            self.outputs[dest] = _finish_layout(type(op), layout(img))
            return
        _, parts = self.plane_parts.setdefault(dest, (type(op), {}))
        for z in planes:
            parts[z] = img.data[min(z, img.batch - 1)]

    def finish(self) -> dict[str, Any]:
        for dest, (kind, parts) in self.plane_parts.items():
            stacked = sem.Image(np.stack([parts[z] for z in range(len(parts))]), _dtype_of(parts[0]))
            layout, _ = _WRITE_LAYOUTS[kind]
            self.outputs[dest] = _finish_layout(kind, layout(stacked))
        return self.outputs

    def run_block(self, ops: list[Operation], kernel_values: KernelValues) -> None:
        for op in ops:
            if isinstance(op, fkl.KernelOp):
                self.run_kernel(op)
                continue
            self.run_op(op, kernel_values)

    def run_kernel(self, kernel: fkl.KernelOp) -> None:
        values: dict[str, Values] = {}
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

    def run_read(self, op: fkl.ReadOp, kernel_values: KernelValues) -> None:
        self.chain_index += 1
        source_type = op.source_type
        assert isinstance(source_type, fkl.ImageType)
        image: State = self._source(op, source_type)
        if op.sample is not None and op.sample.blocks:
            block = op.sample.block
            self.env[block.args[0]] = image
            for inner in op.geometry:
                self.run_op(inner, kernel_values)
            last = block.last_op
            assert isinstance(last, fkl.YieldOp)
            image = self.env[last.input]
        self.env[op.result] = image

    def _source(self, op: fkl.ReadOp, source_type: fkl.ImageType) -> sem.Image:
        if _generates(op):  # fkl.read_set replaces the read: no input needed
            shape = (max(source_type.planes.data, 1), 1, 1, source_type.channels.data)
            return sem.Image(np.zeros(shape, sem.dtype_info(source_type.dtype).storage), source_type.dtype)
        arrays = [self.inputs[name] for name in op.sources]
        if len(arrays) > 1:
            return sem.Image(
                np.concatenate([_read_array(a, source_type.with_planes(1)).data for a in arrays]),
                source_type.dtype,
            )
        return _read_array(arrays[0], source_type)

    def run_op(self, op: Operation, kernel_values: KernelValues) -> None:
        if isinstance(op, fkl.ReadOp):
            self.run_read(op, kernel_values)
            return
        state = self.env[op.operands[0]]
        if isinstance(op, fkl.WRITE_OPS):
            planes = op.plane_list
            if planes is None and self.chain_planes is not None:
                planes = self.chain_planes[self.chain_index]
            self.write(op, _whole(state, op), planes)
            return
        values = {field: _values_of(op, field, kernel_values) for field in fkl.value_fields(op)}
        if isinstance(op, fkl.GEOMETRY_OPS):
            self.env[op.results[0]] = _geometry(op, state, values)
            return
        handler = _COMPUTE.get(type(op))
        if handler is None:
            raise NotImplementedError(f"reference interpreter: no semantics for '{op.name}'")
        self.env[op.results[0]] = handler(_whole(state, op), op, values)


def _dtype_of(data: np.ndarray) -> str:
    return sem.dtype_name_of(data)


def _finish_layout(kind: type[Operation], data: np.ndarray) -> Any:
    if kind is fkl.SplitWriteOp:  # one (B, H, W) buffer per channel
        return tuple(np.ascontiguousarray(plane) for plane in data)
    return data


def _generates(read: fkl.ReadOp) -> bool:
    geometry = read.geometry
    if geometry:
        return isinstance(geometry[0], fkl.ReadSetOp)
    users = [use.operation for use in read.result.uses]
    return len(users) == 1 and isinstance(users[0], fkl.ReadSetOp)


def _values_of(op: Operation, field: str, kernel_values: KernelValues) -> Values | None:
    slot = fkl.field_slot(op, field)
    if slot is not None:
        return kernel_values[slot]
    return fkl.field_values(op, field)


def _whole(state: State, op: Operation) -> sem.Image:
    """The state as one image, for ops that need all planes at once."""
    if isinstance(state, Ragged):
        raise ValueError(f"'{op.name}': the crop rects differ in size; put a Resize after the Crop")
    return _plain(state)


# --------------------------------------------------------------------------------------------
# Geometry: per plane on ragged states, restacked when the plane sizes agree
# --------------------------------------------------------------------------------------------

FieldValues = dict[str, Values | None]


def _geometry(op: Operation, state: State, values: FieldValues) -> State:
    if isinstance(op, fkl.CropOp):
        return _crop(state, values["value"] or ())
    if isinstance(state, Ragged):
        return _restack(Ragged(_geometry_one(op, plane, values) for plane in state))
    return _geometry_one(op, state, values)


def _restack(planes: Ragged) -> State:
    if any(isinstance(p, Bordered) for p in planes):
        return planes
    shapes = {p.data.shape[1:] for p in planes if isinstance(p, sem.Image)}
    if len(shapes) != 1:
        return planes
    images = [_plain(p) for p in planes]
    return sem.Image(np.concatenate([p.data for p in images]), images[0].dtype)


def _geometry_one(op: Operation, state: sem.Image | Bordered, values: FieldValues) -> sem.Image | Bordered:
    """A geometry op other than Crop on one image (or one ragged plane)."""
    if isinstance(op, fkl.BorderOp):
        return Bordered(_plain(state), op.mode.data, values["value"])
    img = _plain(state)
    if isinstance(op, fkl.ReadSetOp):
        w, h = (int(v) for v in values["size"] or ())
        out = sem.read_set(values["value"] or (), w, h, img.dtype, img.channels)
        return sem.Image(np.repeat(out.data, img.batch, axis=0), out.dtype)
    if isinstance(op, fkl.ResizeOp):
        w, h = (int(v) for v in values["value"] or ())
        return geo.resize(img, w, h, op.interp.data, op.mode, values.get("background"))
    if isinstance(op, fkl.WarpOp):
        matrix = np.array(values["value"] or ()).reshape(-1, 3)
        w, h = (int(v) for v in values["size"] or ())
        border = state.border if isinstance(state, Bordered) else None
        return geo.warp(img, matrix, w, h, inverse=op.inverse is not None, border=border)
    if isinstance(op, fkl.DeinterlaceOp):
        return geo.deinterlace(img, op.word.data)
    raise NotImplementedError(f"reference interpreter: no semantics for '{op.name}'")


def _crop(state: State, flat_values: Values) -> State:
    """Crop planes: one rect for every plane, n rects from one plane, or rect i from plane i.
    Rects of different sizes give a `Ragged` state."""
    flat = [int(v) for v in flat_values]
    rects = [flat[i : i + 4] for i in range(0, len(flat), 4)]
    if not isinstance(state, Ragged) and _plain(state).batch == 0:  # no plane to cut: no plane out
        if len(rects) > 1:
            raise ValueError(f"'fkl.crop': {len(rects)} rects for 0 planes (give 1, or one per plane)")
        return _crop_one(state, rects[0])
    planes = _planes_of(state)
    if len(rects) == 1:
        rects = rects * len(planes)
    elif len(planes) == 1:
        planes = planes * len(rects)
    elif len(planes) != len(rects):
        raise ValueError(f"'fkl.crop': {len(rects)} rects for {len(planes)} planes (give 1, or one per plane)")
    return _restack(Ragged(_crop_one(plane, rect) for plane, rect in zip(planes, rects, strict=True)))


def _planes_of(state: State) -> list[sem.Image | Bordered]:
    if isinstance(state, Ragged):
        return list(state)
    if isinstance(state, Bordered):
        return [Bordered(_split_plane(state.image, z), state.mode, state.value) for z in range(state.image.batch)]
    return [_split_plane(state, z) for z in range(state.batch)]


def _split_plane(img: sem.Image, z: int) -> sem.Image:
    return sem.Image(img.data[z : z + 1], img.dtype)


def _crop_one(plane: sem.Image | Bordered, rect: list[int]) -> sem.Image:
    if isinstance(plane, Bordered):
        return geo.crop_with_border(plane.image, [rect], plane.mode, plane.value)
    return geo.crop(plane, [rect])


# --------------------------------------------------------------------------------------------
# Compute ops
# --------------------------------------------------------------------------------------------

ARITH_NAMES = {
    fkl.AddOp: "add",
    fkl.SubOp: "sub",
    fkl.MulOp: "mul",
    fkl.DivOp: "div",
    fkl.MaxOp: "max",
    fkl.MinOp: "min",
}


def _arith(img: sem.Image, op: Operation, values: FieldValues) -> sem.Image:
    return sem.arith(ARITH_NAMES[type(op)], img, values["value"] or ())


def _cast(img: sem.Image, op: Operation, values: FieldValues) -> sem.Image:
    assert isinstance(op, fkl.CastLikeOp)
    to = fkl.dtype_name(op.to)
    return sem.saturate_cast(img, to) if isinstance(op, fkl.SaturateCastOp) else sem.cast(img, to)


def _saturate(img: sem.Image, op: Operation, values: FieldValues) -> sem.Image:
    flat = values["value"] or ()
    half = len(flat) // 2
    return sem.saturate(img, flat[:half], flat[half:])


def _static_loop(img: sem.Image, op: Operation, values: FieldValues) -> sem.Image:
    assert isinstance(op, fkl.StaticLoopOp)
    for _ in range(op.count.data):
        img = sem.arith(op.body.data, img, values["value"] or ())
    return img


def _vector_reorder(img: sem.Image, op: Operation, values: FieldValues) -> sem.Image:
    assert isinstance(op, fkl.VectorReorderOp)
    return sem.vector_reorder(img, op.indices)


def _add_last(img: sem.Image, op: Operation, values: FieldValues) -> sem.Image:
    (value,) = values["value"] or (0.0,)
    return sem.add_last(img, value)


_COMPUTE: dict[type[Operation], Callable[[sem.Image, Operation, FieldValues], sem.Image]] = {
    **{cls: _arith for cls in ARITH_NAMES},
    fkl.CastOp: _cast,
    fkl.SaturateCastOp: _cast,
    fkl.SaturateOp: _saturate,
    fkl.SaturateFloatOp: lambda img, op, v: sem.saturate_float(img),
    fkl.IsEvenOp: lambda img, op, v: sem.is_even(img),
    fkl.VectorAndOp: lambda img, op, v: sem.vector_and(img),
    fkl.VectorReduceOp: lambda img, op, v: sem.vector_reduce(img, op.word.data),  # pyright: ignore[reportAttributeAccessIssue]
    fkl.DiscardOp: lambda img, op, v: sem.discard(img, op.keep.data),  # pyright: ignore[reportAttributeAccessIssue]
    fkl.AddLastOp: _add_last,
    fkl.VectorReorderOp: _vector_reorder,
    fkl.VectorReorderRTOp: lambda img, op, v: sem.vector_reorder(img, [int(i) for i in v["value"] or ()]),
    fkl.MxVFloat3Op: lambda img, op, v: sem.mxv_float3(img, v["value"] or ()),
    fkl.StaticLoopOp: _static_loop,
    fkl.ColorConversionOp: lambda img, op, v: color.color_conversion(img, op.word.data),  # pyright: ignore[reportAttributeAccessIssue]
}


def run_module(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Interpret every chain of `module` (top level or in kernels); returns the written buffers.

    Packed writes come back as (B, H, W, C) arrays, planar ones as (B, C, H, W), tsplit ones as
    (C, B, H, W) and split_write ones as a tuple of C (B, H, W) arrays.
    """
    run = _Run(inputs)
    run.run_block(list(module.body.block.ops), {})
    return run.finish()
