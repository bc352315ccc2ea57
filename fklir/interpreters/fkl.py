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

Each op class has one registered implementation, in xDSL's `@impl(arith.ConstantOp)` shape:
`@impl_compute(fkl.MulOp)` for a compute op (the whole image in, an image out), `@impl_per_plane` for
a geometry op (one image, or each plane of a `Ragged` state), `@impl_state` for one that needs the
whole state (Crop), and `@impl` for the memory and structure ops that drive the run itself. `run_op`
looks the op's class up in `IMPLS`; a new op without an entry there fails loudly.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, TypeVar, cast

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from fklir import dtypes
from fklir.dialects import fkl, value_rules
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


PlaneState = sem.Image | Bordered


class Ragged(list[PlaneState]):
    """Planes of different sizes (a Crop of differently sized rects): geometry runs per plane until
    the sizes agree again (a Resize or Warping); a compute op or a write on them is an error."""


State = sem.Image | Bordered | Ragged


def _plain(state: PlaneState) -> sem.Image:
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


FieldValues = dict[str, Values | None]
OpT = TypeVar("OpT", bound=Operation)


def _field_values(op: Operation, kernel_values: KernelValues) -> FieldValues:
    """Every value field of `op`, inline or read from the kernel's hoisted parameter slot."""
    values: FieldValues = {}
    for field in fkl.value_fields(op):
        slot = fkl.field_slot(op, field)
        values[field] = kernel_values[slot] if slot is not None else fkl.field_values(op, field)
    return values


def _whole(state: State, op: Operation) -> sem.Image:
    """The state as one image, for ops that need all planes at once."""
    if isinstance(state, Ragged):
        raise ValueError(f"'{op.name}': the crop rects differ in size; put a Resize after the Crop")
    return _plain(state)


# --------------------------------------------------------------------------------------------
# The registry: one implementation per op class
# --------------------------------------------------------------------------------------------

Impl: TypeAlias = Callable[["_Run", OpT, KernelValues], None]
StateImpl: TypeAlias = Callable[[State, OpT, FieldValues], State]
ComputeImpl: TypeAlias = Callable[[sem.Image, OpT, FieldValues], sem.Image]
PlaneImpl: TypeAlias = Callable[[PlaneState, OpT, FieldValues], PlaneState]

IMPLS: dict[type[Operation], Impl[Any]] = {}


def impl(*op_types: type[OpT]) -> Callable[[Impl[OpT]], Impl[OpT]]:
    """Register how the reference runs each of `op_types`: the function gets the run, the op and
    the enclosing kernel's hoisted values. One implementation per class, so none is shadowed."""

    def register(func: Impl[OpT]) -> Impl[OpT]:
        for op_type in op_types:
            if op_type in IMPLS:
                raise ValueError(f"reference interpreter: '{op_type.name}' already has an implementation")
            IMPLS[op_type] = func
        return func

    return register


def impl_state(*op_types: type[OpT]) -> Callable[[StateImpl[OpT]], StateImpl[OpT]]:
    """Register a one-operand, one-result op that maps the input state (whatever its planes) and its
    value fields to the result state."""

    def register(func: StateImpl[OpT]) -> StateImpl[OpT]:
        def run(run: _Run, op: OpT, kernel_values: KernelValues) -> None:
            run.env[op.results[0]] = func(run.env[op.operands[0]], op, _field_values(op, kernel_values))

        impl(*op_types)(run)
        return func

    return register


def impl_compute(*op_types: type[OpT]) -> Callable[[ComputeImpl[OpT]], ComputeImpl[OpT]]:
    """Register a compute op: it sees every plane at once, so a `Ragged` input is an error."""

    def register(func: ComputeImpl[OpT]) -> ComputeImpl[OpT]:
        impl_state(*op_types)(lambda state, op, values: func(_whole(state, op), op, values))
        return func

    return register


def impl_per_plane(*op_types: type[OpT]) -> Callable[[PlaneImpl[OpT]], PlaneImpl[OpT]]:
    """Register a geometry op on one image: planes of different sizes run it one by one and stack
    again once their sizes agree."""

    def register(func: PlaneImpl[OpT]) -> PlaneImpl[OpT]:
        def on_state(state: State, op: OpT, values: FieldValues) -> State:
            if fkl.is_per_plane(op) and (planes := _planes_of(state)):  # plane z with its row z
                field = cast(fkl.TypeRuleOp, op).PER_PLANE_FIELD
                rows = _plane_rows(op, values[field] or ())
                return _restack(Ragged(func(p, op, values | {field: r}) for p, r in zip(planes, rows, strict=False)))
            if isinstance(state, Ragged):
                return _restack(Ragged(func(plane, op, values) for plane in state))
            return func(state, op, values)

        impl_state(*op_types)(on_state)
        return func

    return register


# --------------------------------------------------------------------------------------------
# Memory and structure: reads, writes, kernels
# --------------------------------------------------------------------------------------------

# How each write op lays out the (B, H, W, C) result.
_WRITE_LAYOUTS: dict[type[Operation], Callable[[sem.Image], Any]] = {
    fkl.WriteOp: lambda img: img.data,
    fkl.SplitOp: sem.to_planar,
    fkl.TSplitOp: sem.to_tsplit,
    # one (B, H, W) buffer per channel
    fkl.SplitWriteOp: lambda img: tuple(np.ascontiguousarray(plane) for plane in sem.to_tsplit(img)),
}

WriteLikeOp: TypeAlias = fkl.WriteOp | fkl.SplitOp | fkl.TSplitOp | fkl.SplitWriteOp


class _Run:
    def __init__(self, inputs: Mapping[str, np.ndarray]):
        self.inputs = inputs
        self.outputs: dict[str, Any] = {}
        self.plane_parts: dict[str, tuple[type[Operation], dict[int, np.ndarray]]] = {}
        self.env: dict[SSAValue, State] = {}
        self.chain_planes: list[list[int]] | None = None  # divergent kernel: planes of each chain
        self.chain_index = -1

    def run_block(self, ops: list[Operation], kernel_values: KernelValues) -> None:
        for op in ops:
            self.run_op(op, kernel_values)

    def run_op(self, op: Operation, kernel_values: KernelValues) -> None:
        run = IMPLS.get(type(op))
        if run is None:
            raise NotImplementedError(f"reference interpreter: no semantics for '{op.name}'")
        run(self, op, kernel_values)

    def finish(self) -> dict[str, Any]:
        for dest, (kind, parts) in self.plane_parts.items():
            stacked = sem.Image(np.stack([parts[z] for z in range(len(parts))]), sem.dtype_name_of(parts[0]))
            self.outputs[dest] = _WRITE_LAYOUTS[kind](stacked)
        return self.outputs

    @impl(fkl.KernelOp)
    def run_kernel(self, kernel: fkl.KernelOp, _kernel_values: KernelValues) -> None:
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

    @impl(fkl.ReadOp)
    def run_read(self, op: fkl.ReadOp, kernel_values: KernelValues) -> None:
        self.chain_index += 1
        source_type = op.source_type
        assert isinstance(source_type, fkl.ImageType)
        image: State = self._source(op, source_type)
        if op.sample is not None and op.sample.blocks:
            block = op.sample.block
            self.env[block.args[0]] = image
            self.run_block(op.geometry, kernel_values)
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

    @impl(fkl.WriteOp, fkl.SplitOp, fkl.TSplitOp, fkl.SplitWriteOp)
    def run_write(self, op: WriteLikeOp, _kernel_values: KernelValues) -> None:
        """Whole output, or the listed planes (value plane z, or its only plane, goes to plane z)."""
        img = _whole(self.env[op.operands[0]], op)
        planes = op.plane_list
        if planes is None and self.chain_planes is not None:
            planes = self.chain_planes[self.chain_index]
        dest = op.dest.data
        if planes is None or img.batch == 0:  # an input of no planes makes none, whatever the plane map
            self.outputs[dest] = _WRITE_LAYOUTS[type(op)](img)
            return
        _, parts = self.plane_parts.setdefault(dest, (type(op), {}))
        for z in planes:
            parts[z] = img.data[min(z, img.batch - 1)]


def _generates(read: fkl.ReadOp) -> bool:
    geometry = read.geometry
    if geometry:
        return isinstance(geometry[0], fkl.ReadSetOp)
    users = [use.operation for use in read.result.uses]
    return len(users) == 1 and isinstance(users[0], fkl.ReadSetOp)


# --------------------------------------------------------------------------------------------
# Geometry: per plane on ragged states, restacked when the plane sizes agree
# --------------------------------------------------------------------------------------------


def _restack(planes: Ragged) -> State:
    if any(isinstance(p, Bordered) for p in planes):
        return planes
    shapes = {p.data.shape[1:] for p in planes if isinstance(p, sem.Image)}
    if len(shapes) != 1:
        return planes
    images = [_plain(p) for p in planes]
    return sem.Image(np.concatenate([p.data for p in images]), images[0].dtype)


@impl_per_plane(fkl.BorderOp)
def _border(state: PlaneState, op: fkl.BorderOp, values: FieldValues) -> PlaneState:
    return Bordered(_plain(state), op.mode.data, values["value"])


@impl_per_plane(fkl.ReadSetOp)
def _read_set(state: PlaneState, op: fkl.ReadSetOp, values: FieldValues) -> PlaneState:
    img = _plain(state)
    w, h = (int(v) for v in values["size"] or ())
    out = sem.read_set(values["value"] or (), w, h, img.dtype, img.channels)
    return sem.Image(np.repeat(out.data, img.batch, axis=0), out.dtype)


@impl_per_plane(fkl.ResizeOp)
def _resize(state: PlaneState, op: fkl.ResizeOp, values: FieldValues) -> PlaneState:
    w, h = (int(v) for v in values["value"] or ())
    return geo.resize(_plain(state), w, h, op.interp.data, op.mode, values.get("background"))


@impl_per_plane(fkl.WarpOp)
def _warp(state: PlaneState, op: fkl.WarpOp, values: FieldValues) -> PlaneState:
    matrix = np.array(values["value"] or ()).reshape(-1, 3)
    w, h = (int(v) for v in values["size"] or ())
    border = state.border if isinstance(state, Bordered) else None
    return geo.warp(_plain(state), matrix, w, h, inverse=op.inverse is not None, border=border)


@impl_per_plane(fkl.DeinterlaceOp)
def _deinterlace(state: PlaneState, op: fkl.WordOp, values: FieldValues) -> PlaneState:
    return geo.deinterlace(_plain(state), op.word.data)


@impl_per_plane(fkl.FlipOp)
def _flip(state: PlaneState, op: fkl.WordOp, values: FieldValues) -> PlaneState:
    return geo.flip(_plain(state), op.word.data)


@impl_per_plane(fkl.RotateOp)
def _rotate(state: PlaneState, op: fkl.WordOp, values: FieldValues) -> PlaneState:
    return geo.rotate(_plain(state), op.word.data)


@impl_state(fkl.CropOp)
def _crop(state: State, op: fkl.CropOp, values: FieldValues) -> State:
    """Crop planes: one rect for every plane, n rects from one plane, or rect i from plane i.
    Rects of different sizes give a `Ragged` state."""
    flat = [int(v) for v in values["value"] or ()]
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


def _planes_of(state: State) -> list[PlaneState]:
    if isinstance(state, Ragged):
        return list(state)
    if isinstance(state, Bordered):
        return [Bordered(_split_plane(state.image, z), state.mode, state.value) for z in range(state.image.batch)]
    return [_split_plane(state, z) for z in range(state.batch)]


def _split_plane(img: sem.Image, z: int) -> sem.Image:
    return sem.Image(img.data[z : z + 1], img.dtype)


def _crop_one(plane: PlaneState, rect: list[int]) -> sem.Image:
    if isinstance(plane, Bordered):
        return geo.crop_with_border(plane.image, [rect], plane.mode, plane.value)
    return geo.crop(plane, [rect])


# --------------------------------------------------------------------------------------------
# Compute ops
# --------------------------------------------------------------------------------------------

# The semantics' name of each binary operator (sem.ARITH_OPS, the words of StaticLoop's body).
_ARITH_NAMES: dict[type[Operation], str] = {
    fkl.AddOp: "add",
    fkl.SubOp: "sub",
    fkl.MulOp: "mul",
    fkl.DivOp: "div",
    fkl.MaxOp: "max",
    fkl.MinOp: "min",
}


def _by_plane(
    img: sem.Image, op: Operation, values: Values, run: Callable[[sem.Image, Values], sem.Image]
) -> sem.Image:
    """`run` on the image with the op's values; a per-plane op's plane z with its row z (SPEC §2, per-image
    values: the rows are as many as the op's type has planes, of which the image may fill fewer)."""
    if not fkl.is_per_plane(op) or img.batch == 0:
        return run(img, values)
    rows = _plane_rows(op, values)
    planes = [run(sem.Image(img.data[z : z + 1], img.dtype), rows[z]) for z in range(img.batch)]
    return sem.Image(np.concatenate([plane.data for plane in planes]), planes[0].dtype)


def _plane_rows(op: Operation, values: Values) -> list[Values]:
    """A per-plane op's values, one row per plane of its type (of which a run may fill fewer)."""
    in_type = op.operands[0].type
    assert isinstance(in_type, fkl.ImageType)
    return list(value_rules.plane_rows(op.name, values, in_type.planes.data))


@impl_compute(fkl.AddOp, fkl.SubOp, fkl.MulOp, fkl.DivOp, fkl.MaxOp, fkl.MinOp)
def _arith(img: sem.Image, op: fkl.BinaryValueOp, values: FieldValues) -> sem.Image:
    name = _ARITH_NAMES[type(op)]
    return _by_plane(img, op, values["value"] or (), lambda plane, row: sem.arith(name, plane, row))


@impl_compute(fkl.CastOp)
def _cast(img: sem.Image, op: fkl.CastOp, values: FieldValues) -> sem.Image:
    return sem.cast(img, fkl.dtype_name(op.to))


@impl_compute(fkl.SaturateCastOp)
def _saturate_cast(img: sem.Image, op: fkl.SaturateCastOp, values: FieldValues) -> sem.Image:
    return sem.saturate_cast(img, fkl.dtype_name(op.to))


@impl_compute(fkl.SaturateOp)
def _saturate(img: sem.Image, op: fkl.SaturateOp, values: FieldValues) -> sem.Image:
    # lo then hi, a per-plane op's each row so
    return _by_plane(img, op, values["value"] or (), lambda plane, row: sem.saturate(plane, *_halves(row)))


def _halves(row: Values) -> tuple[Values, Values]:
    return row[: len(row) // 2], row[len(row) // 2 :]


@impl_compute(fkl.SaturateFloatOp)
def _saturate_float(img: sem.Image, op: fkl.SaturateFloatOp, values: FieldValues) -> sem.Image:
    return sem.saturate_float(img)


@impl_compute(fkl.IsEvenOp)
def _is_even(img: sem.Image, op: fkl.IsEvenOp, values: FieldValues) -> sem.Image:
    return sem.is_even(img)


@impl_compute(fkl.EqualOp)
def _equal(img: sem.Image, op: fkl.EqualOp, values: FieldValues) -> sem.Image:
    return _by_plane(img, op, values["value"] or (), lambda plane, row: sem.equal(plane, row))


@impl_compute(*fkl.MATH_OPS)
def _math(img: sem.Image, op: fkl.MathUnaryOp | fkl.MathValueOp, values: FieldValues) -> sem.Image:
    return sem.elementwise(op.NUMPY, img, values.get("value"), op.KEEPS_INTEGERS, op.name)


@impl(fkl.JoinOp)
def _join(run: _Run, op: fkl.JoinOp, kernel_values: KernelValues) -> None:
    a, b = (_whole(run.env[v], op) for v in (op.input, op.other))
    run.env[op.result] = sem.join(op.kind.data, a, b)


@impl(fkl.BlendOp)
def _blend(run: _Run, op: fkl.BlendOp, kernel_values: KernelValues) -> None:
    a, b = (_whole(run.env[v], op) for v in (op.input, op.other))
    (alpha,) = _field_values(op, kernel_values)["value"] or (0.0,)
    run.env[op.result] = sem.blend(a, b, alpha)


@impl(fkl.CompositeOp)
def _composite(run: _Run, op: fkl.CompositeOp, kernel_values: KernelValues) -> None:
    a, b, mask = (_whole(run.env[v], op) for v in (op.input, op.other, op.mask))
    run.env[op.result] = sem.composite(a, b, mask)


@impl_compute(fkl.VectorAndOp)
def _vector_and(img: sem.Image, op: fkl.VectorAndOp, values: FieldValues) -> sem.Image:
    return sem.vector_and(img)


@impl_compute(fkl.VectorReduceOp)
def _vector_reduce(img: sem.Image, op: fkl.WordOp, values: FieldValues) -> sem.Image:
    return sem.vector_reduce(img, op.word.data)


@impl_compute(fkl.DiscardOp)
def _discard(img: sem.Image, op: fkl.DiscardOp, values: FieldValues) -> sem.Image:
    return sem.discard(img, op.keep.data)


@impl_compute(fkl.AddLastOp)
def _add_last(img: sem.Image, op: fkl.AddLastOp, values: FieldValues) -> sem.Image:
    (value,) = values["value"] or (0.0,)
    return sem.add_last(img, value)


@impl_compute(fkl.VectorReorderOp)
def _vector_reorder(img: sem.Image, op: fkl.VectorReorderOp, values: FieldValues) -> sem.Image:
    return sem.vector_reorder(img, op.indices)


@impl_compute(fkl.VectorReorderRTOp)
def _vector_reorder_rt(img: sem.Image, op: fkl.VectorReorderRTOp, values: FieldValues) -> sem.Image:
    return sem.vector_reorder(img, [int(i) for i in values["value"] or ()])


@impl_compute(fkl.MxVFloat3Op)
def _mxv_float3(img: sem.Image, op: fkl.MxVFloat3Op, values: FieldValues) -> sem.Image:
    return _by_plane(img, op, values["value"] or (), sem.mxv_float3)


@impl_compute(fkl.StaticLoopOp)
def _static_loop(img: sem.Image, op: fkl.StaticLoopOp, values: FieldValues) -> sem.Image:
    for _ in range(op.count.data):
        img = sem.arith(op.body.data, img, values["value"] or ())
    return img


@impl_compute(fkl.ColorConversionOp)
def _color_conversion(img: sem.Image, op: fkl.WordOp, values: FieldValues) -> sem.Image:
    return color.color_conversion(img, op.word.data)


@impl_compute(*fkl.USER_OPS)
def _user(img: sem.Image, op: fkl.UserOpBase, values: FieldValues) -> sem.Image:
    """The op's numpy reference (fkl.op(reference=...)): of the elements, or of (..., C) pixels in the
    pixel form, with the params as keywords of their declared types."""
    reference = fkl.user_declaration(op).reference
    if reference is None:
        raise ValueError(
            f"'{op.name}' {op.struct.data} has no reference: give fkl.op(..., reference=...) to run it in the "
            "reference interpreter"
        )
    given = values["value"] or ()
    params = {name: dtypes.BY_NAME[dtype].carrier.type(v) for (name, dtype), v in zip(op.params, given, strict=True)}
    result = op.result_for(fkl.ImageType(img.dtype, img.channels))
    out = np.asarray(reference(img.data, **params))
    if out.shape != (*img.data.shape[:3], result.channels.data):
        shape = img.data.shape
        raise ValueError(f"'{op.name}' {op.struct.data}: its reference returned shape {out.shape} for {shape}")
    info = sem.dtype_info(result.dtype)
    if info.is_float:
        return sem.Image(sem.round_to_dtype(out.astype(np.float64), result.dtype), result.dtype)
    return sem.Image(out.astype(info.storage), result.dtype)


def run_module(module: ModuleOp, inputs: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Interpret every chain of `module` (top level or in kernels); returns the written buffers.

    Packed writes come back as (B, H, W, C) arrays, planar ones as (B, C, H, W), tsplit ones as
    (C, B, H, W) and split_write ones as a tuple of C (B, H, W) arrays.
    """
    run = _Run(inputs)
    run.run_block(list(module.body.block.ops), {})
    return run.finish()
