"""`fkl.compose(*ops, target=...)` and `fkl.compose_divergent(plane_map, *chains)`: lazy pipelines,
compiled per input signature on first use.

A Pipeline holds its chain(s) and values and finds its plans; the target's executor (cpu_executor.py,
gpu_executor.py) owns the call paths and their warm state.

Cold path (once per structure, element type / channels / planes / list or rect capacity / device):
descriptors → fkl IR → default passes → C++ → compiled kernel (memory or disk cache) → launch plan, shared
by every pipeline of the structure (_SHARED_PLANS). A structure compiled before skips the IR: its plan is
found by a description of the ops without their runtime values, which each pipeline packs into a values
block of its own (the recipe's checks on the way). Warm path: check the input, compute the output size from
the descriptors, allocate the output, fill the parameter header, launch. It touches no xDSL object.
"""

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

from fklir.dialects.value_rules import RecipeStep
from fklir.frontend import ops as fops
from fklir.frontend.values import dtype_name, integers
from fklir.jit.binding import Binding, unpicklable
from fklir.jit.cpu_executor import CpuExecutor
from fklir.jit.gpu_executor import GpuExecutor
from fklir.jit.signature import Signature, batch_capacity, input_signature, output_shape
from fklir.limits import check_index
from fklir.runtime import cuda_driver
from fklir.runtime.launch import CpuLaunch, Extent, GpuLaunch, LaunchPlan, check_param_block

if TYPE_CHECKING:  # xDSL is imported by the cold path only: a chain known to this process never builds IR
    from xdsl.dialects.builtin import ModuleOp

    from fklir.dialects.fkl import KernelOp
    from fklir.jit.graph import GraphPipeline

TARGETS = ("gpu", "cpu")


_ENDS = (*fops.READ_DESCRIPTORS, *fops.WRITE_DESCRIPTORS)


class _ChainShape(NamedTuple):
    """What a chain's op classes alone tell, found once per sequence of classes (_chain_shape)."""

    geometry: tuple[int, ...]  # positions of the geometry ops
    crops: tuple[int, ...]  # positions of the Crops
    per_image: tuple[int, ...]  # positions of the ops whose class can hold per-image values
    write_kind: str


_SHAPES: dict[tuple[type, ...], _ChainShape] = {}
_SHAPES_MAX = 1024


def _chain_shape(ops: Sequence[fops.Op], where: str = "compose") -> _ChainShape:
    """The chain's shape, with _check_structure's checks: those of its op classes once per sequence of classes
    (a loop composing one chain per frame meets them once), its Crop lists' on every chain."""
    types = tuple(map(type, ops))
    shape = _SHAPES.get(types)
    if shape is None:
        _check_structure(ops, where)
        shape = _ChainShape(
            tuple([i for i, op in enumerate(ops) if isinstance(op, fops.Geometry)]),
            tuple([i for i, op in enumerate(ops) if isinstance(op, fops.Crop)]),
            tuple([i for i, kind in enumerate(types) if kind.per_image is not fops.Op.per_image]),
            _WRITE_KIND[types[-1]],
        )
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[types] = shape
    elif len(shape.crops) > 1 and sum(1 for i in shape.crops if ops[i].batched) > 1:  # pyright: ignore[reportAttributeAccessIssue]
        _check_structure(ops, where)
    return shape


def _check_structure(ops: Sequence[fops.Op], where: str = "compose") -> None:
    if not ops or not isinstance(ops[0], fops.READ_DESCRIPTORS):
        raise ValueError(f"{where}: a chain starts with TensorRead(), TensorPack(ch) or ReadSet(...)")
    if not isinstance(ops[-1], fops.WRITE_DESCRIPTORS):
        raise ValueError(f"{where}: a chain ends with TensorWrite(), TensorSplit(), TensorTSplit() or SplitWrite()")
    for op in ops[1:-1]:
        if isinstance(op, _ENDS):
            raise ValueError(f"{where}: {op.op_name} may only start or end the chain")
        if isinstance(op, fops.GRAPH_DESCRIPTORS):  # compose() makes a graph of these; other callers cannot
            raise ValueError(f"{where}: {op.op_name} makes a graph (SPEC §8), which {where}'s chains cannot be")
    fops.check_geometry_first(ops[1:-1], f"{where}: {{op}}", "TensorRead", where)
    if sum(1 for op in ops if isinstance(op, fops.Crop) and op.batched) > 1:
        raise ValueError(f"{where}: only one Crop([rects]) per chain")


class _SharedPlan(NamedTuple):
    """A plan that every pipeline of one structure launches, with what makes a pipeline's values for it."""

    plan: LaunchPlan
    recipe: tuple[RecipeStep, ...]  # the runtime values' slots (lowering.runtime_values)
    values: dict[str, tuple[float, ...]]  # the values of the IR the kernel was built from
    # values blocks packed for it by Pipeline.value_key: a new pipeline with the values of one before (a chain
    # re-composed every frame, only its rects new) copies that block instead of checking and packing its values
    blocks: dict[object, Any]


# Plans by structure (target, plane map and the chains' descriptions less their runtime values), then by
# compiled signature and device: a new pipeline of a known structure launches the plan its twins built.
# Bounded as build's plan records are (a divergent pipeline's description keeps its values).
class _StructurePlans(dict[tuple[Signature, int], _SharedPlan]):
    """The plans of one structure by compiled signature and device, and the key of the plan its pipelines called
    last (`recent`: compose() packs a new pipeline's values block for it). Hashed and equal by identity, so that
    the calls prepared on these plans can be keyed by them (Pipeline.call_key) and keep them."""

    __slots__ = ("recent",)
    __hash__ = object.__hash__  # pyright: ignore[reportAssignmentType]

    def __init__(self) -> None:
        super().__init__()
        self.recent: tuple[Signature, int] | None = None

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other


_SHARED_PLANS: dict[object, _StructurePlans] = {}
_SHARED_PLANS_MAX = 1024
_BLOCKS_MAX = 256  # values blocks kept per shared plan (_SharedPlan.blocks)


def _shared_plans(structure: object) -> _StructurePlans:
    """The plans of one structure (a table that its pipelines keep and fill)."""
    plans = _SHARED_PLANS.get(structure)
    if plans is None:
        if len(_SHARED_PLANS) >= _SHARED_PLANS_MAX:
            del _SHARED_PLANS[next(iter(_SHARED_PLANS))]  # the oldest: insertion order
        plans = _SHARED_PLANS[structure] = _StructurePlans()
    return plans


_WRITE_KIND: dict[type, str] = {
    fops.TensorWrite: "packed",
    fops.TensorSplit: "planar",
    fops.TensorTSplit: "tsplit",
    fops.SplitWrite: "split_write",
}


class Pipeline:
    """A composed chain. Call it on an image (or a list of same-size images); `ir()` and
    `source_for()` show what it compiles to."""

    def __init__(self, ops: Sequence[fops.Op], target: str = "gpu"):
        if target not in TARGETS:
            raise ValueError(f"compose: target must be 'gpu' or 'cpu', got {target!r}")
        shape = _chain_shape(ops)
        self.chains: tuple[tuple[fops.Op, ...], ...] = (tuple(ops),)
        self.plane_map: tuple[int, ...] | None = None
        self.target = target
        self.write_kind = shape.write_kind
        self.planar = self.write_kind == "planar"
        self.read_planar = isinstance(ops[0], fops.TensorPack)
        self.generator = ops[0] if isinstance(ops[0], fops.ReadSet) else None
        geometry: list[fops.Geometry] = [ops[i] for i in shape.geometry]  # pyright: ignore[reportAssignmentType]
        self._geometry_ops = geometry
        self._crops = cast(list[fops.Crop], [ops[i] for i in shape.crops])
        # the Crop list, and whether a BorderReader precedes it (its rects may then leave the input)
        self._crop_list: fops.Crop | None = None
        self._crop_bordered = False
        if self._crops:
            self._crop_list = next((crop for crop in self._crops if crop.batched), None)
            self._crop_bordered = self._crop_list is not None and any(
                isinstance(g, fops.BorderReader) for g in geometry[: geometry.index(self._crop_list)]
            )
        self.crop_batched = self._crop_list is not None
        # the ops with per-image values and their row counts (which a call's batch must match)
        self.per_image: tuple[tuple[str, int], ...] = ()
        if shape.per_image:
            rows = [(ops[i].op_name, ops[i].per_image()) for i in shape.per_image]
            self.per_image = tuple([(name, len(r)) for name, r in rows if r is not None])
        # this pipeline's plans and its values block for each (the plan is shared: _SHARED_PLANS)
        self._plans: dict[tuple[Signature, int], tuple[LaunchPlan, Any]] = {}
        self._shared: _StructurePlans | None = None
        self._last_signature: Signature | None = None
        self._structure: object = None  # _structure_key(), made once
        self._call_key: tuple[object, ...] | None = None  # call_key(), made once
        _preload(target)
        # the call paths: the executor of the target owns them and its warm state
        self._executor: CpuExecutor | GpuExecutor
        if target == "cpu":
            _refuse_bindings(ops[0], ops[-1])
            self._executor = CpuExecutor(self)
        else:
            self._executor = GpuExecutor(self, ops[0], ops[-1])

    @property
    def _bound(self) -> Binding | None:
        """A bound pipeline's buffers and prepared call (GPU bound compose), else None."""
        return self._executor.bound if isinstance(self._executor, GpuExecutor) else None

    @property
    def ops(self) -> tuple[fops.Op, ...]:
        return self.chains[0]

    # ---- pickling: the chain travels, compiled state is rebuilt (from the disk cache) -------------

    def __getstate__(self) -> dict[str, Any]:
        if self._bound is not None:
            raise unpicklable("TensorRead() / TensorWrite()")
        return {"chains": self.chains, "plane_map": self.plane_map, "target": self.target}

    def __setstate__(self, state: dict[str, Any]) -> None:
        chains, plane_map, target = state["chains"], state["plane_map"], state["target"]
        if plane_map is None:
            Pipeline.__init__(self, chains[0], target)
        else:
            DivergentPipeline.__init__(self, [k + 1 for k in plane_map], chains, target)  # pyright: ignore[reportArgumentType]

    # ---- cold path ------------------------------------------------------------------------------

    def _module(self, sig: Signature) -> "ModuleOp":
        return self._lowered(sig)[0]

    def _lowered(self, sig: Signature) -> tuple["ModuleOp", tuple[RecipeStep, ...]]:
        """The module after the passes, and the recipe of its runtime values (lowering.runtime_values;
        none for a divergent pipeline, whose description keeps its values)."""
        from fklir.frontend.lowering import lower_pipeline, run_passes_located, runtime_values

        sig = self._compiled(sig)
        module = lower_pipeline(self.chains, sig.dtype, sig.channels, sig.planes, sig.images, self.plane_map, sig.rects)
        module = run_passes_located(module)
        recipe = runtime_values(module)
        return module, recipe if self.plane_map is None else ()

    def _compiled(self, sig: Signature) -> Signature:
        """The signature the kernel for a call of `sig` is compiled for: list and rect counts rounded up to
        their capacity (jit.signature.batch_capacity), so that one kernel serves every count."""
        if sig.planes == 0:  # a batch of no images never launches; it needs the output type and channels only
            return sig._replace(planes=1)
        if self.plane_map is not None:  # the plane map fixes a divergent kernel's planes
            return sig
        if sig.images:
            return sig._replace(images=batch_capacity(sig.images))
        crop_list = self._crop_list
        if crop_list is None:
            # per-image values: a batch's kernel of a capacity serves every batch size up to it, as a list's
            if self.per_image and sig.batched:
                return sig._replace(planes=batch_capacity(sig.planes))
            return sig
        # n rects of an n-plane input crop one plane each: the input's planes already fix the count
        count = len(crop_list.rects)
        rects = batch_capacity(count) if sig.planes == 1 else count
        # made field by field: a frame's new rect list meets this on every call, and _replace costs more
        return Signature(sig.dtype, sig.channels, sig.planes, sig.batched, sig.images, rects, sig.row)

    def plan_key(self, sig: Signature, device: int) -> tuple[Signature, int]:
        """The key of the plan for a call of `sig` on `device` among this pipeline's plans and its structure's."""
        return self._compiled(sig), device

    def planned(self, key: tuple[Signature, int]) -> tuple[LaunchPlan, Any] | None:
        """The plan of `key` (plan_key) and this pipeline's values block for it, where this pipeline has them
        already (compose() packs the block for the plan its structure called last), else None."""
        mine = self._plans.get(key)
        if mine is not None and self._shared is not None:
            self._shared.recent = key
        return mine

    def _plan(self, sig: Signature, device: int) -> tuple[LaunchPlan, Any]:
        """The plan for a call of `sig` on `device` and this pipeline's values block for it."""
        key = self.plan_key(sig, device)
        compiled = key[0]
        if (mine := self.planned(key)) is not None:
            return mine
        if self._shared is None:
            self._shared = _shared_plans(self._structure_key())
        shared = self._shared.get(key)
        if shared is None:
            if self.target == "gpu":
                with cuda_driver.using_device(device):  # the kernel loads into the device's context
                    shared = self._shared_plan(sig, compiled, device)
            else:
                shared = self._shared_plan(sig, compiled, device)
            self._shared[key] = shared
        mine = self._plans[key] = (shared.plan, self._values_block(shared))
        self._shared.recent = key
        return mine

    def _find_known_plans(self) -> None:
        """At compose() of a structure this process has planned: its plans, and this pipeline's values block for
        the signature its pipelines called last, so that a first call on that kind of input launches as a warm
        one."""
        shared = _SHARED_PLANS.get(self._structure_key())
        if shared is None:
            return
        self._shared = shared
        if self._crop_list is not None:  # a rect table is packed by the call (compose <= 50 µs)
            return
        key = shared.recent
        entry = None if key is None else shared.get(key)
        if key is None or entry is None or key in self._plans:  # (a bound pipeline planned its binding's call)
            return
        try:
            self._plans[key] = (entry.plan, self._values_block(entry))
        except ValueError:
            return  # a value the plan cannot take: the call says so, at its location

    def _shared_plan(self, sig: Signature, compiled: Signature, device: int) -> _SharedPlan:
        """The plan of a structure new to this process: from the plan records on disk, else built from IR."""
        from fklir.backend import build

        def lower() -> tuple["KernelOp", tuple[RecipeStep, ...]]:
            from fklir.frontend.lowering import kernels_of

            module, recipe = self._lowered(compiled)
            (kernel,) = kernels_of(module)
            if self.target == "gpu":
                from fklir.backend.kernel_plan import layout_of

                check_param_block(layout_of(kernel), *self._parameter_owner(sig))
            return kernel, recipe

        described = build.description_key(self._description(compiled), self.target, device)
        built = build.plan_or_build(described, self.target, device, lower)
        launch_type = CpuLaunch if self.target == "cpu" else GpuLaunch
        plan = launch_type(built.entry, built.layout, built.values)
        plan.op_names = (self.ops[0].op_name, self.ops[-1].op_name)
        return _SharedPlan(plan, built.recipe, built.values, {})

    def _values_block(self, shared: _SharedPlan) -> Any:
        """This pipeline's values block for a shared plan: a copy of the block of a pipeline with equal values
        (value_key) with this one's rects, else its values checked and packed (and kept for the next)."""
        key = self._value_key(shared.recipe)
        if key is not None and (known := shared.blocks.get(key)) is not None:
            rects = self._rect_values(shared.plan.rect_slots)
            return known if not rects else shared.plan.values_with_rects(known, rects)
        values = self._runtime_values(shared.recipe, self._values(shared.plan.rect_slots, shared.values))
        block = shared.plan.pack_values(values)
        if key is not None:
            if len(shared.blocks) >= _BLOCKS_MAX:
                shared.blocks.clear()
            shared.blocks[key] = block
        return block

    def _value_key(self, recipe: Sequence[RecipeStep]) -> tuple[object, ...] | None:
        """The runtime values of the recipe's descriptors as an exact key (Op.value_key; their rects aside), or None
        when one has no such key (per-image rows) or the pipeline is divergent (its description holds its values)."""
        if self.plane_map is not None:
            return None
        ops = self.ops
        key = tuple([ops[step[1]].value_key() for step in recipe])
        return None if None in key else key

    def _values(
        self, rect_slots: Sequence[tuple[str, int]], values: dict[str, tuple[float, ...]]
    ) -> Mapping[str, Sequence[float]]:
        """The plan's values with this pipeline's rects (in `rect_slots`, LaunchPlan.rect_slots): the plan may be
        another pipeline's of the same structure (the description leaves rects out)."""
        if self.plane_map is not None:  # a divergent kernel's rects are part of its description
            return values
        rects = self._rect_values(rect_slots)
        return {**values, **rects} if rects else values

    def _rect_values(self, rect_slots: Sequence[tuple[str, int]]) -> dict[str, Sequence[float]]:
        """This pipeline's rects by slot name ((name, rect count) of each rect slot), packed (Crop.rect_bytes):
        crops hoist into the only rect slots, in chain order; a rect that every plane shares fills its slot, a
        rect list the planes it names."""
        crops = self._crops
        if not crops:
            return {}
        return {name: crop.rect_bytes(count) for (name, count), crop in zip(rect_slots, crops, strict=True)}

    def _runtime_values(
        self, recipe: Sequence[RecipeStep], values: Mapping[str, Sequence[float]]
    ) -> Mapping[str, Sequence[float]]:
        """`values` with the slots of the recipe filled from this pipeline's own descriptors: the plan may
        be another pipeline's of the same structure (the description leaves their values out). Their values
        are checked against the chain as the IR's type rules check them, with the same words."""
        if not recipe:
            return values
        return {**values, **fops.recipe_values(recipe, self.ops)}

    def _parameter_owner(self, sig: Signature) -> tuple[str, str]:
        """(op, what) that a parameter block too large for a GPU kernel is blamed on: the many images,
        rects or chains that make it large."""
        if self.per_image:  # a row per plane of the capacity compiled for
            op_name, rows = self.per_image[0]
            return op_name, f"per_image values of {rows} images"
        if sig.images:
            return self.ops[0].op_name, f"{sig.images} images"
        if len(self.chains) > 1:
            return "compose_divergent", f"{len(self.plane_map or ())} planes of {len(self.chains)} chains"
        rects = max((len(op.rects) for op in self.ops if isinstance(op, fops.Crop)), default=0)
        return ("Crop", f"{rects} rects") if rects > 1 else (self.ops[-1].op_name, "the chain")

    def _description(self, sig: Signature) -> str:
        """Everything the compiled kernel and its values depend on, as text (no buffers, no locations), but
        the runtime values of a single chain: `_values` and `_runtime_values` pack them, so new values find
        the plan of the old."""
        return repr((sig, self.plane_map, self._described_chains()))

    def _structure_key(self) -> object:
        """The key of this pipeline's structure among the shared plans: its chain's structures as they are (a
        tuple hashes faster than its text; no structural field is a float, whose -0.0 and NaN would compare
        other than their text), a divergent pipeline's descriptions, values and all, as text."""
        key = self._structure
        if key is not None:
            return key
        if self.plane_map is None:
            key = (self.target, tuple([op.structure() for op in self.chains[0]]))
        else:
            key = repr((self.target, self.plane_map, self._described_chains()))
        self._structure = key
        return key

    def call_key(self) -> tuple[object, ...] | None:
        """What a call on one kind of input depends on besides the input: the structure (its shared plans, by
        identity), the geometry's values (they set the output size) and the per-image row counts. Pipelines with
        equal keys prepare such a call alike (GpuExecutor shares it). A rect list counts by its length where a
        later op (Resize, Warping) gives every plane one size: the per-frame ROI loop's new rects then meet a
        known call, whose one check left for them is known_rects_fit. None for other rect lists."""
        key = self._call_key
        if key is not None:
            return key
        crop = self._crop_list
        count = 0
        if crop is not None:
            after = self._geometry_ops[self._geometry_ops.index(crop) + 1 :]
            if not any(op.FIXED_SIZE for op in after):
                return None
            count = len(crop.rects)
        if self._shared is None:
            self._shared = _shared_plans(self._structure_key())
        geometry = tuple([(op.structure(), count) if op is crop else op.description() for op in self._geometry_ops])
        key = self._call_key = (self._shared, geometry, self.per_image)
        return key

    def known_rects_fit(self, e: Extent) -> bool:
        """Whether this pipeline's rect list (if any) fits a call of extent `e` that a pipeline with its call key
        checked: its rects inside the input (anywhere after a BorderReader)."""
        crop = self._crop_list
        return crop is None or self._crop_bordered or crop.inside(e.src_w, e.src_h)

    def _described_chains(self) -> list[list[tuple[object, ...]]]:
        if self.plane_map is None:
            return [[op.structure() for op in chain] for chain in self.chains]
        return [[op.description() for op in chain] for chain in self.chains]

    def _signature_for(self, dtype: object, shape: Sequence[int] | None) -> Signature:
        if dtype is None and shape is None:
            if self._last_signature is None:
                raise ValueError("call the pipeline once, or pass dtype and shape, e.g. ir('uint8', (1080, 1920, 3))")
            return self._last_signature
        if dtype is None or shape is None:
            raise ValueError("give both dtype and shape")
        return input_signature(tuple(shape), dtype_name("ir", dtype))[0]

    def ir(self, dtype: object = None, shape: Sequence[int] | None = None) -> str:
        """The fkl IR after the default passes, as text (for the last call's input, or the given one)."""
        from fklir.frontend.lowering import print_module

        return print_module(self._module(self._signature_for(dtype, shape)))

    def source_for(self, dtype: object, shape: Sequence[int]) -> str:
        """The C++ that this pipeline compiles for an input of `dtype` and `shape`."""
        from fklir.backend.kernel_plan import emit_kernel
        from fklir.frontend.lowering import kernels_of

        (kernel,) = kernels_of(self._module(self._signature_for(dtype, shape)))
        return emit_kernel(kernel).source

    # ---- warm path ------------------------------------------------------------------------------

    def _sizes(self, sig: Signature, width: int, height: int) -> tuple[int, int, int]:
        """(width, height, planes) of the output, with the descriptors' checks of rects and sizes. A call makes
        them before it looks up its plan, so that a bad rect is the same error whether or not the structure is
        known (a plan built from IR would meet the dialect's verifier first)."""
        geometry = self._geometry_ops
        sizes = fops.out_sizes(geometry, [(width, height)] * (sig.images or sig.planes))
        fops.check_one_size(sizes)
        # a batch of no images still has the plane size the chain implies: (0, H, W, C)
        (dst_w, dst_h) = sizes[0] if sizes else fops.out_sizes(geometry, [(width, height)])[0]
        if self.per_image and self.crop_batched and sig.planes == 1 and not sig.images:
            _refuse_per_image_before_crop(self.ops)
        for op_name, rows in self.per_image:
            if rows != len(sizes):
                raise ValueError(
                    f"{op_name}: per_image gives {rows} rows for a batch of {len(sizes)} "
                    f"{'rects' if self.crop_batched else 'images'}; give one row per image"
                )
        return dst_w, dst_h, len(sizes)

    def _checked_extent(
        self, sig: Signature, width: int, height: int, sizes: tuple[int, int, int], plan: LaunchPlan
    ) -> Extent:
        """The call's extent, refused (before any output is allocated) where the kernel could not run it:
        pixels made out of an empty image, or sizes beyond the kernel's index types."""
        dst_w, dst_h, planes = sizes
        in_planes = sig.images or sig.planes
        e = Extent(width, height, in_planes, sig.channels, dst_w, dst_h, planes, plan.layout.out_channels)
        if e.dst_planes and e.dst_w and e.dst_h and not (width and height):  # pixels made out of nothing
            for chain in self.chains:
                fops.check_empty_source(fops.geometry_of(chain), (width, height))
        plan.admit(e)
        return e

    def _out_shape(self, sig: Signature, e: Extent) -> tuple[int, ...]:
        """The output's shape; for SplitWrite the shape of each of its per-channel outputs."""
        batched = sig.batched or self.crop_batched or sig.images > 0 or self.plane_map is not None
        if self.write_kind == "packed" and sig.row and not batched and e.dst_h == 1:
            # a 1-D input keeps its rank while the output is one row
            return (e.dst_w, *((e.channels_out,) if e.channels_out > 1 else ()))
        return output_shape(self.write_kind, batched, e.dst_planes, e.channels_out, e.dst_h, e.dst_w)

    def _generator_input(self) -> tuple[Signature, int, int]:
        """ReadSet reads nothing: its dtype, channels and size make the signature."""
        gen = self.generator
        assert gen is not None
        sig = Signature(gen.dtype, gen.channels, 1, False)
        self._last_signature = sig
        return sig, gen.size[0], gen.size[1]

    def __call__(self, x: object = None, out: object = None, stream: object = None) -> Any:
        """Run the chain on `x` (an image, a batch or a list of same-size images; nothing for ReadSet or a bound
        input), into `out` when given, on `stream` when given (GPU)."""
        return self._executor(x, out, stream)

    def _input(self, x: object, described: list[tuple[tuple[int, ...], str]]) -> tuple[Signature, int, int]:
        """Signature and size of the input (one array, or a list of same-size images)."""
        shape, dtype = described[0]
        for i, (other_shape, other_dtype) in enumerate(described[1:], start=1):
            if (other_shape, other_dtype) != (shape, dtype):
                raise ValueError(
                    f"TensorRead: list input {i} is {other_dtype} {other_shape}, input 0 is {dtype} {shape}; "
                    "a batch of images must share one shape and dtype"
                )
        sig, width, height = input_signature(shape, dtype, self.read_planar)
        if isinstance(x, list | tuple):
            if sig.batched:
                raise ValueError("TensorRead: a list input holds single images (H, W[, C]), not batches")
            if self.crop_batched:
                raise ValueError("TensorRead: a list of images cannot be combined with Crop([rects])")
            sig = Signature(sig.dtype, sig.channels, 1, False, len(described))
        # before anything is compiled for it: the signature holds the plane count
        read = self.ops[0].op_name
        check_index(read, "input width", width)
        check_index(read, "input height", height)
        check_index(read, "list length" if sig.images else "input planes", sig.images or sig.planes)
        self._last_signature = sig
        return sig, width, height


class DivergentPipeline(Pipeline):
    """Several chains in one kernel: output plane z is produced by chain plane_map[z]."""

    def __init__(self, plane_map: object, chains: Sequence[Sequence[fops.Op] | Pipeline], target: str | None):
        target = _divergent_target(chains, target)
        op_chains = [tuple(c.ops) if isinstance(c, Pipeline) else tuple(c) for c in chains]
        if not op_chains:
            raise ValueError("compose_divergent: give at least one chain")
        for chain in op_chains:
            _check_structure(chain, "compose_divergent")
            if getattr(chain[0], "binding", None) is not None or getattr(chain[-1], "binding", None) is not None:
                raise ValueError(
                    "compose_divergent: chains cannot bind buffers; call the pipeline with the input: pipe(x, out=y)"
                )
            if any(isinstance(op, fops.Crop) and op.batched for op in chain):
                raise ValueError("compose_divergent: a chain takes one rect per Crop, not a list")
            if (per_image := next((op for op in chain if op.per_image() is not None), None)) is not None:
                raise ValueError(
                    f"compose_divergent: {per_image.op_name} has per_image values; a divergent chain takes one "
                    "value for all its planes (compose() takes per-image values)"
                )
        owners = _plane_map(plane_map, len(op_chains))
        if len({type(c[-1]) for c in op_chains}) > 1:
            raise ValueError("compose_divergent: all chains must end with the same write (TensorWrite or TensorSplit)")
        super().__init__(op_chains[0], target)
        self.chains = tuple(op_chains)
        self.plane_map = owners

    def _sizes(self, sig: Signature, width: int, height: int) -> tuple[int, int, int]:
        planes = len(self.plane_map or ())
        given = sig.images or sig.planes
        if given not in (0, 1, planes):
            raise ValueError(
                f"compose_divergent: the input has {f'{given} images' if sig.images else f'{given} planes'}; "
                f"give one image or one per output plane ({planes})"
            )
        sizes = {tuple(fops.out_sizes(fops.geometry_of(chain), [(width, height)])[0]) for chain in self.chains}
        if len(sizes) > 1:
            raise ValueError(f"compose_divergent: the chains produce different sizes {sorted(sizes)}; all must match")
        ((dst_w, dst_h),) = sizes
        # a batch of no images makes no plane, as in compose(): (0, H, W, C) of the size the chains imply
        return dst_w, dst_h, planes if given else 0


def _refuse_per_image_before_crop(ops: Sequence[fops.Op]) -> None:
    """Crop([rects]) of one image: what comes before the Crop reads that one image, so it has one value."""
    for op in ops:
        if isinstance(op, fops.Crop) and op.batched:
            return
        if op.per_image() is not None:
            raise ValueError(
                f"{op.op_name}: per_image values before Crop([rects]) of one image (every rect reads that image); "
                "give it one value, or put the per-image op after the Crop"
            )


def _plane_map(plane_map: object, chains: int) -> tuple[int, ...]:
    """The 0-based chain of each plane, from the 1-based numbers given (a sequence, array or tensor)."""
    numbers = integers("compose_divergent", plane_map, "plane_map")
    if not numbers:
        raise ValueError("compose_divergent: plane_map is empty")
    for z, k in enumerate(numbers):
        if not 1 <= k <= chains:
            raise ValueError(f"compose_divergent: plane_map[{z}] = {k!r}; chains are numbered 1..{chains}")
    unused = sorted(set(range(1, chains + 1)) - set(numbers))
    if unused:
        raise ValueError(f"compose_divergent: chain(s) {unused} are not used by plane_map")
    return tuple(k - 1 for k in numbers)


def _divergent_target(chains: Sequence[Sequence[fops.Op] | Pipeline], target: str | None) -> str:
    """The target given, else that of the chains given as pipelines (compose(..., target=)), else "gpu"."""
    if target is None:
        targets = {c.target for c in chains if isinstance(c, Pipeline)}
        if len(targets) > 1:
            raise ValueError(f"compose_divergent: the chains were composed for targets {sorted(targets)}; give target=")
        target = targets.pop() if targets else "gpu"
    if target not in TARGETS:
        raise ValueError(f"compose_divergent: target must be 'gpu' or 'cpu', got {target!r}")
    return target


_PRELOADED: set[str] = set()


def _refuse_bindings(read: fops.Op, write: fops.Op) -> None:
    if getattr(read, "binding", None) is not None or getattr(write, "binding", None) is not None:
        raise ValueError(
            "compose: bound buffers (TensorRead(x), TensorWrite(out)) need target='gpu'; "
            "on the CPU target pass arrays per call: pipe(x, out=y)"
        )


def _preload(target: str) -> None:
    """Import now what the first call needs, so that a fresh process's first call does only its own
    work: the build module (disk-cache lookup) and, for the GPU, cuda.bindings.driver (a slow import)."""
    if target in _PRELOADED:
        return
    importlib.import_module("fklir.backend.build")
    if target == "gpu":
        cuda_driver.preload()
    _PRELOADED.add(target)


def compose(*ops: fops.Op, target: str = "gpu") -> "Pipeline | GraphPipeline":
    """One fused kernel for the chain `ops` (TensorRead() ... TensorWrite()): a Pipeline, or a GraphPipeline
    when the chain joins branches (fkl.Input) or writes along the way (MidWrite), SPEC §8 (imported then only:
    a chain's fresh process does not pay for it)."""
    # (a chain composed before is no graph: its shape is known by its classes)
    if tuple(map(type, ops)) not in _SHAPES and any(isinstance(op, fops.GRAPH_DESCRIPTORS) for op in ops):
        from fklir.jit.graph import GraphPipeline

        return GraphPipeline(ops, target)
    pipe = Pipeline(ops, target)
    pipe._find_known_plans()
    return pipe


def compose_divergent(
    plane_map: object, *chains: Sequence[fops.Op] | Pipeline, target: str | None = None
) -> DivergentPipeline:
    """One kernel whose output plane z runs chain plane_map[z] (1-based); all chains write one tensor.

    The input is one image (every plane reads it), a batch (B, H, W[, C]) or a list of B same-size
    images, one per output plane. target: "gpu" or "cpu"; by default that of the chains given as
    composed pipelines, else "gpu".
    """
    return DivergentPipeline(plane_map, chains, target)
