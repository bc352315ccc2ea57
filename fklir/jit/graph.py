"""DAG pipelines (SPEC §8): a composed chain whose ops join branches (`fkl.Input(i, *ops)` as the operand of
Add ... Min, AbsDiff, Equal, Blend, Composite) and write along the way (MidWrite, MidSplit), compiled into one
kernel that reads each input pixel it needs once per output pixel.

    diff, mask = fkl.compose(TensorRead(), Cast("float32"), AbsDiff(Input(1, Cast("float32"))), MidWrite(),
                             VectorReduce("Max"), Threshold(25.0), SaturateCast("uint8"), TensorWrite())(a, b)

A call takes one array per input (argument i is what `Input(i)` reads; 0 the chain's own read), all of one
batch size, or every input as a list of one length (a pointer table each), and returns the outputs in chain
order (`out=` a tuple of them); Crop lists crop their own branch's input, as many rects in each, one output
plane per rect; per-image values (fkl.per_image) give image b of the batch row b, wherever the op is.
Bound compose (GPU target): `TensorRead(x)`, `Input(i, ..., source=x)`, `MidWrite(out)` and `TensorWrite(out)`
bind arrays as call defaults (`pipe()`, `pipe(stream=s)`; positional arguments and `out=` override them, None
keeps one); with every input bound the graph compiles at compose, and with every output bound too
`pipe(stream=s)` is one launch of a parameter block of its own. Every branch must reach the size of the chain's
output (its geometry resizes or crops it there): a mismatch is a ValueError naming the
op that joins it. Values are runtime values, as in a chain: the plan is keyed by the graph's structure
(its descriptors' structures and which of them are one object) and the inputs' element types, channels and
planes, shared by every graph of that structure in the process (_SHARED_GRAPH_PLANS); each pipeline packs its
own values block for it (the recipe of lowering.runtime_values, checked as the IR checks them), so a new value
set builds no IR.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from fklir.dialects.constants import PLANE_MAP_SLOT
from fklir.dialects.value_rules import RecipeStep
from fklir.frontend import ops as fops
from fklir.jit.binding import check_like_binding, unpicklable
from fklir.jit.cpu_executor import fits
from fklir.jit.default_stream import launch_stream, producer_launch_stream
from fklir.jit.signature import Signature, batch_capacity, input_signature, output_shape
from fklir.limits import U32_MAX, check_index, check_product
from fklir.runtime.interop import (
    describe_gpu_array,
    describe_host_array,
    output_maker,
    require_writable,
    warm_key,
)
from fklir.runtime.launch import CpuLaunch, Extent, GpuLaunch, LaunchPlan, Surfaces
from fklir.runtime.streams import stream_handle

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp

    from fklir.dialects import fkl

_READS = (fops.TensorRead, fops.TensorPack)
_WRITES = (fops.TensorWrite, fops.TensorSplit)
_ENDS = (fops.Read, fops.Write)


class _Warm(NamedTuple):
    """A call on arrays like ones a full call checked (by dtype and shape on the CPU, by warm key on the GPU):
    what it needs to launch again with the new arrays' pointers."""

    plan: LaunchPlan
    values: Any  # this pipeline's values block for the plan
    extent: Extent
    sizes: tuple[tuple[int, int], ...]  # arguments 1..'s (width, height): LaunchPlan.set_surfaces' sizes
    shapes: tuple[tuple[tuple[int, ...], Any], ...]  # each output's shape and dtype (numpy's, or its name)
    makers: tuple[Any, ...]  # GPU: each output's maker (interop.output_maker)
    framework: str  # GPU: the inputs' framework, which says where a call without stream= runs
    device: int
    out_keys: tuple[set[Any], ...] = ()  # GPU: each output's warm keys that passed its check (out=)
    sigs: tuple[Signature, ...] = ()  # the arguments' signatures (another pipeline's plan for them: _known_call)


class _Bound:
    """A bound graph's arrays (described at compose) by argument and output index, and, with every one bound,
    the argless call: its results and the plan twin whose block holds the bindings (None: nothing to launch)."""

    __slots__ = ("inputs", "launch", "like", "outputs", "results")

    def __init__(self, inputs: dict[int, Any], outputs: dict[int, Any]) -> None:
        self.inputs = inputs  # GpuArray by call argument
        self.outputs = outputs  # GpuArray by output
        self.launch: GpuLaunch | None = None
        self.results: Any = None
        self.like: dict[int, set[Any]] = {i: set() for i in inputs}  # warm keys of overrides found like a binding


class _GraphPlan(NamedTuple):
    """A structure's plan for one signature and device, and how a pipeline fills its values."""

    plan: LaunchPlan
    recipe: tuple[RecipeStep, ...]
    values: dict[str, tuple[float, ...]]  # the values the plan was built with (slots no recipe step fills)


# (structure, argument signatures, device) -> its plan: the graphs of one structure share it.
_SHARED_GRAPH_PLANS: dict[tuple[object, ...], _GraphPlan] = {}

# Calls prepared on arrays of one kind, by (GraphPipeline.call_key, the arrays' keys): a new graph with an equal
# call key takes the call with its own values block, so its first call on such arrays is a warm one.
_KNOWN_GRAPH_CALLS: dict[tuple[object, ...], _Warm] = {}
_KNOWN_GRAPH_CALLS_MAX = 4096


class _Walk:
    """One walk over a graph's ops, branches first (lowering order): the checks and what compose keeps."""

    def __init__(self) -> None:
        self.branches: list[tuple[fops.Joining, fops.Input]] = []  # (joining op, branch), branches' own included
        self.crops: list[fops.Crop] = []  # every Crop([rects])
        self.per_image: list[tuple[str, int]] = []  # (op name, row count) of each op with fkl.per_image values
        self.descriptors: list[fops.Op] = []  # the lowering order (frontend.ops.graph_descriptors)
        self.mids: list[fops.MidWrite] = []  # the chain's own writes along the way

    def run(self, ops: Sequence[fops.Op], where: str) -> None:
        """A run of ops after a read (the chain's, or a branch's): geometry first (it folds into the read)."""
        fops.check_geometry_first(ops, f"compose: {{op}} in {where}", "its read")
        for op in ops:
            if isinstance(op, _ENDS):
                raise ValueError(f"compose: {op.op_name} may only start or end the chain")
            if isinstance(op, fops.Joining):
                for branch in op.branches():
                    self.run(branch.ops, f"the branch fkl.Input({branch.index}, ...)")
                    self.branches.append((op, branch))
            elif isinstance(op, fops.MidWrite):
                self.mids.append(op)
            elif isinstance(op, fops.Crop) and op.batched:
                self.crops.append(op)
            if (rows := op.per_image()) is not None:
                self.per_image.append((op.op_name, len(rows)))
            self.descriptors.append(op)


class GraphPipeline:
    """A composed DAG. Call it on one array per input; it returns its outputs in chain order."""

    def __init__(self, ops: Sequence[fops.Op], target: str):
        if target not in ("gpu", "cpu"):
            raise ValueError(f"compose: target must be 'gpu' or 'cpu', got {target!r}")
        if not ops or not isinstance(ops[0], _READS):
            raise ValueError("compose: a graph starts with TensorRead() or TensorPack(ch)")
        if not isinstance(ops[-1], _WRITES):
            raise ValueError("compose: a graph ends with TensorWrite() or TensorSplit()")
        walk = _Walk()
        walk.run(ops[1:-1], "the chain")
        # Crop([rects]) lists: one output plane per rect, each branch cropping its own input with as many rects
        counts = {len(c.rects) for c in walk.crops}
        if len(counts) > 1:
            raise ValueError(
                f"compose: the graph's Crop lists give {sorted(counts)} rects: one output plane per rect, so every "
                "Crop([rects]) of a graph takes as many"
            )
        self.rects = counts.pop() if counts else 0
        # per-image values: row z for the batch's image z, wherever the op is
        self.per_image = walk.per_image
        if self.per_image and self.rects:
            raise ValueError(f"compose: {self.per_image[0][0]}: per_image values with Crop lists in a graph")
        self.ops = tuple(ops)
        self.target = target
        self.read_planar = isinstance(ops[0], fops.TensorPack)
        self._branches = walk.branches
        read = {0} | {branch.index for _, branch in self._branches}
        self.inputs = max(read) + 1
        if missing := sorted(set(range(self.inputs)) - read):
            raise ValueError(
                f"compose: the graph reads call argument {self.inputs - 1} but no branch reads argument(s) {missing}; "
                "number the inputs 0, 1, 2, ... (fkl.Input(i))"
            )
        self._write_ops: tuple[fops.Op, ...] = (*walk.mids, ops[-1])  # the outputs' writes, in output order
        self.write_kinds = tuple(
            "planar" if isinstance(op, fops.MidSplit | fops.TensorSplit) else "packed" for op in self._write_ops
        )
        self._plans: dict[tuple[object, ...], tuple[LaunchPlan, Any]] = {}  # (sigs, device) -> plan, values block
        self._warm: dict[tuple[object, ...], _Warm] = {}  # the arrays' keys -> a call that checked such arrays
        # the lowering order (frontend.ops.graph_descriptors) and which positions hold one descriptor object:
        # what fkl-cse may merge, and so part of the structure
        self._descriptors = [ops[0], *walk.descriptors, ops[-1]]
        first: dict[int, int] = {}
        sharing = tuple(first.setdefault(id(op), k) for k, op in enumerate(self._descriptors))
        self._structure = (target, tuple(op.structure() for op in self.ops), sharing, self.read_planar)
        self._call_key: tuple[object, ...] | None = None  # call_key(), made once
        self._bound: _Bound | None = None
        inputs, outputs = self._bindings()
        if inputs or outputs:
            self._bind(inputs, outputs)

    # ---- bound compose ------------------------------------------------------------------------------

    def _bindings(self) -> tuple[dict[int, object], dict[int, object]]:
        """The arrays bound to call arguments (TensorRead(x), Input(i, source=x)) and to outputs (MidWrite(out),
        TensorWrite(out)), by index."""
        inputs: dict[int, object] = {}
        if (x := getattr(self.ops[0], "binding", None)) is not None:
            inputs[0] = x
        for _, branch in self._branches:
            if branch.binding is None:
                continue
            if inputs.setdefault(branch.index, branch.binding) is not branch.binding:
                raise ValueError(
                    f"compose: {_what(branch.index)} is bound to two arrays ({branch!r}'s source= and another "
                    "binding of that argument); bind it once"
                )
        outputs = {k: x for k, op in enumerate(self._write_ops) if (x := getattr(op, "binding", None)) is not None}
        return inputs, outputs

    def _bind(self, inputs: dict[int, object], outputs: dict[int, object]) -> None:
        """Describe the bound arrays now; with every input bound, plan the call (compile) and check the bound
        outputs against it; with every output bound too, a parameter block that holds only the bindings."""
        if self.target != "gpu":
            raise ValueError(
                "compose: bound buffers (TensorRead(x), Input(i, source=x), MidWrite(out), TensorWrite(out)) need "
                "target='gpu'; on the CPU target pass arrays per call: pipe(a, b, out=(...))"
            )
        if any(isinstance(x, list | tuple) for x in (*inputs.values(), *outputs.values())):
            raise TypeError("compose: bind one array, not a list; pass lists of images per call: pipe([a0, ...], ...)")
        writes = self._write_ops
        bound = _Bound(
            {i: describe_gpu_array(x, f"{_what(i)} binding") for i, x in inputs.items()},
            {k: describe_gpu_array(x, f"{writes[k].op_name} binding") for k, x in outputs.items()},
        )
        devices = {a.device for a in (*bound.inputs.values(), *bound.outputs.values())}
        if len(devices) > 1:
            raise ValueError(f"compose: the graph's bound arrays are on devices {sorted(devices)}; use one device")
        self._bound = bound
        if len(bound.inputs) < self.inputs:
            return
        arguments = [[bound.inputs[i]] for i in range(self.inputs)]
        sigs, sizes = self._signatures(arguments)
        plan, values = self._plan(sigs, devices.pop())
        e = self._extent(sigs, sizes, plan)
        shapes = self._out_shapes(sigs, e, plan.layout)
        for k, dst in bound.outputs.items():
            try:
                _check_out(dst, k, *shapes[k])
            except ValueError as error:
                raise ValueError(f"compose: the bound output does not fit the graph: {error}") from None
        if len(bound.outputs) < self.outputs:
            return
        assert isinstance(plan, GpuLaunch)
        own = plan.twin(values)  # overrides and unbound calls fill the shared block; this one holds the bindings
        pointers = [bound.outputs[k].ptr for k in range(self.outputs)]
        if e.dst_w and e.dst_h and e.dst_planes:
            own.fill(arguments[0][0].ptr, pointers[0], e, (), (), None, _surfaces(arguments, sizes, pointers, ()))
            bound.launch = own
        results = [bound.outputs[k].obj for k in range(self.outputs)]
        bound.results = tuple(results) if len(results) > 1 else results[0]

    def _call_bound(self, inputs: Sequence[object], out: object, stream: object) -> list[Any]:
        """A bound graph's call: the bindings are the defaults of the arguments and outputs not given (None
        keeps one); an array given where one is bound must be like it."""
        bound = self._bound
        assert bound is not None
        if len(inputs) > self.inputs:
            self._arguments(inputs, describe_gpu_array)  # raises the count's error
        filled: list[object] = [*inputs, *[None] * (self.inputs - len(inputs))]
        for i, x in enumerate(filled):
            known = bound.inputs.get(i)
            if x is None:
                if known is None:
                    binding = "TensorRead(x)" if i == 0 else f"fkl.Input({i}, ..., source=x)"
                    raise TypeError(f"pipe() needs call argument {i} ({_what(i)}): pass it, or bind it ({binding})")
                filled[i] = known.obj
                continue
            if known is None:
                continue
            if isinstance(x, list | tuple):
                raise ValueError("a bound graph takes one array per input; compose an unbound graph for lists")
            seen = warm_key(x)
            if seen is not None and seen[0] in bound.like[i]:  # an array of this kind was found like the binding
                continue
            check_like_binding(_what(i), describe_gpu_array(x, _what(i)), known)
            if seen is not None:
                bound.like[i].add(seen[0])
        if out is None and bound.outputs:
            out = [known.obj if (known := bound.outputs.get(k)) is not None else None for k in range(self.outputs)]
        return self._call_gpu(filled, out, stream)

    def _launch_bound(self, bound: _Bound, stream: object) -> Any:
        """The argless call of a graph whose every input and output is bound: its own block, one launch."""
        own = bound.launch
        if stream is not None:
            if own is not None:
                own.launch(stream_handle(stream))
            return bound.results
        handle, owned = launch_stream(bound.inputs[0], None)
        if own is not None:
            own.launch(handle)
            if owned:
                own.synchronize(handle)
        return bound.results

    @property
    def outputs(self) -> int:
        return len(self.write_kinds)

    # ---- known calls: a new graph's first call on arrays like ones a graph of its structure checked ----------

    def call_key(self) -> tuple[object, ...] | None:
        """What a call on one kind of arrays depends on besides them: the structure, the geometry's values (they
        set every size) and the per-image row counts. None with Crop lists (a frame's new rects)."""
        if self.rects:
            return None
        if self._call_key is None:
            geometry = tuple([op.description() for op in self._descriptors if isinstance(op, fops.Geometry)])
            self._call_key = (self._structure, geometry, tuple(self.per_image))
        return self._call_key

    def _known_call(self, key: tuple[object, ...]) -> _Warm | None:
        """This graph's warm entry for arrays of `key` from a call that a graph with its call key made on such
        arrays (extent, sizes, outputs), with this graph's own values block (checked as any call's are)."""
        call_key = self.call_key()
        known = None if call_key is None else _KNOWN_GRAPH_CALLS.get((call_key, key))
        if known is None:
            return None
        plan, values = self._plan(known.sigs, known.device)
        if plan is not known.plan:  # the structure's plans were built again since
            return None
        warm = self._warm[key] = known._replace(values=values)
        return warm

    def _remember(self, key: tuple[object, ...], warm: _Warm) -> None:
        """The warm entry of a checked call, for this graph and for new graphs with its call key."""
        self._warm[key] = warm
        call_key = self.call_key()
        if call_key is None:
            return
        if len(_KNOWN_GRAPH_CALLS) >= _KNOWN_GRAPH_CALLS_MAX:
            _KNOWN_GRAPH_CALLS.clear()
        _KNOWN_GRAPH_CALLS[(call_key, key)] = warm

    # ---- pickling (DataLoader workers): the ops travel, plans are found again (memory or disk cache) ----------

    def __getstate__(self) -> dict[str, Any]:
        if self._bound is not None:
            raise unpicklable("TensorRead(), fkl.Input(i, ...), MidWrite(), TensorWrite()")
        return {"ops": self.ops, "target": self.target}

    def __setstate__(self, state: dict[str, Any]) -> None:
        GraphPipeline.__init__(self, state["ops"], state["target"])

    # ---- the cold path --------------------------------------------------------------------------

    def _module(self, sigs: Sequence[Signature]) -> ModuleOp:
        return self._lowered(sigs)[0]

    def _lowered(self, sigs: Sequence[Signature]) -> tuple[ModuleOp, tuple[RecipeStep, ...]]:
        """The module after the default passes, for call arguments of signatures `sigs`, and the recipe of its
        runtime values (lowering.runtime_values, which takes the descriptors' marks off)."""
        from fklir.dialects import fkl
        from fklir.frontend.lowering import lower_graph, run_passes_located, runtime_values

        layout = "planar" if self.read_planar else "packed"
        sources = [
            fkl.ImageType(s.dtype, s.channels, s.images or s.planes, layout=layout if i == 0 else "packed")
            for i, s in enumerate(sigs)
        ]
        module = run_passes_located(lower_graph(self.ops, sources, sigs[0].images, sigs[0].rects))
        return module, runtime_values(module)

    def _kernel(self, sigs: Sequence[Signature]) -> fkl.KernelOp:
        from fklir.frontend.lowering import kernels_of

        (kernel,) = kernels_of(self._module(sigs))
        return kernel

    def _plan(self, sigs: tuple[Signature, ...], device: int) -> tuple[LaunchPlan, Any]:
        """The plan for arguments of `sigs` on `device`, and this pipeline's values block for it. A list call's
        kernel is compiled for the lists' capacity (jit.signature.batch_capacity): every length up to it shares it."""
        if sigs[0].images:
            sigs = tuple(s._replace(images=batch_capacity(s.images)) for s in sigs)
        if self.per_image and sigs[0].batched:  # a batch's rows: compiled for its capacity, as a chain's
            sigs = tuple(s._replace(planes=batch_capacity(s.planes)) for s in sigs)
        # a Crop list of one image is compiled for its capacity, as a chain's: every count up to it shares the kernel
        rects = batch_capacity(self.rects) if self.rects and sigs[0].planes == 1 and not sigs[0].images else 0
        if sigs[0].rects != rects:
            sigs = (sigs[0]._replace(rects=rects), *sigs[1:])
        key = (sigs, device)
        if (mine := self._plans.get(key)) is not None:
            return mine
        shared_key = (self._structure, sigs, device)
        shared = _SHARED_GRAPH_PLANS.get(shared_key)
        if shared is None:
            shared = _SHARED_GRAPH_PLANS[shared_key] = self._build(sigs, device)
        values = shared.values | fops.recipe_values(shared.recipe, self._descriptors)
        mine = self._plans[key] = (shared.plan, shared.plan.pack_values(values))
        return mine

    def _build(self, sigs: tuple[Signature, ...], device: int) -> _GraphPlan:
        """The plan of a structure new to this process: from the plan records on disk (no IR: a fresh process
        imports no xDSL), else IR, passes, the recipe of its runtime values and a kernel (compiled, or from
        the caches), recorded for the next process."""
        if self.target == "gpu":
            from fklir.runtime import cuda_driver

            with cuda_driver.using_device(device):  # the kernel loads into the device's context
                built = self._built(sigs, device)
            plan: LaunchPlan = GpuLaunch(built.entry, built.layout, built.values)
        else:
            built = self._built(sigs, device)
            plan = CpuLaunch(built.entry, built.layout, built.values)
        assert PLANE_MAP_SLOT not in built.values
        plan.op_names = (self.ops[0].op_name, self.ops[-1].op_name)
        return _GraphPlan(plan, built.recipe, dict(built.values))

    def _built(self, sigs: tuple[Signature, ...], device: int) -> Any:
        from fklir.backend import build

        def lower() -> tuple[fkl.KernelOp, tuple[RecipeStep, ...]]:
            from fklir.frontend.lowering import kernels_of

            module, recipe = self._lowered(sigs)
            (kernel,) = kernels_of(module)
            if self.target == "gpu":
                from fklir.backend.kernel_plan import layout_of
                from fklir.runtime.launch import check_param_block

                check_param_block(layout_of(kernel), self.ops[-1].op_name, "the graph")
            return kernel, recipe

        described = build.description_key(repr(("graph", sigs, self._structure)), self.target, device)
        return build.plan_or_build(described, self.target, device, lower)

    def ir(self, *inputs: tuple[object, Sequence[int]]) -> str:
        """The fkl IR after the default passes, for inputs given as (dtype, shape) pairs, one per argument."""
        from fklir.frontend.lowering import print_module

        return print_module(self._module(self._signatures(_shapes(inputs))[0]))

    def source_for(self, *inputs: tuple[object, Sequence[int]]) -> str:
        """The C++ that this graph compiles for inputs given as (dtype, shape) pairs, one per argument."""
        from fklir.backend.kernel_plan import emit_kernel

        return emit_kernel(self._kernel(self._signatures(_shapes(inputs))[0])).source

    # ---- a call ---------------------------------------------------------------------------------

    def _arguments(self, inputs: Sequence[object], describe: Any) -> tuple[list[list[Any]], int]:
        """Each argument's arrays described (a list's images, else the one array), and the list length (0: no
        list): every argument a list of one length, or none."""
        if len(inputs) != self.inputs:
            raise ValueError(
                f"compose: the graph reads {self.inputs} input(s) (TensorRead and fkl.Input(1..{self.inputs - 1})); "
                f"the call gave {len(inputs)}"
            )
        listed = [isinstance(x, list | tuple) for x in inputs]
        if not any(listed):
            return [[describe(x, _what(i))] for i, x in enumerate(inputs)], 0
        lengths = [len(x) if isinstance(x, list | tuple) else None for x in inputs]
        if not all(listed) or len(set(lengths)) > 1:
            shown = ", ".join(
                f"argument {i}: {'an array' if n is None else f'a list of {n}'}" for i, n in enumerate(lengths)
            )
            raise ValueError(f"compose: a list call gives every input as a list of one length, got {shown}")
        count = lengths[0] or 0
        if not count:
            raise ValueError("TensorRead: the input lists are empty")
        described: list[list[Any]] = []
        for i, x in enumerate(inputs):
            assert isinstance(x, list | tuple)
            described.append([describe(a, f"{_what(i)} {b}") for b, a in enumerate(x)])  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        return described, count

    def _signatures(
        self, arrays: Sequence[Sequence[Any]], images: int = 0
    ) -> tuple[tuple[Signature, ...], list[tuple[int, int]]]:
        """Each argument's signature and size: every argument of one batch size (planes, or the list's length)."""
        sigs: list[Signature] = []
        sizes: list[tuple[int, int]] = []
        for i, described in enumerate(arrays):
            shape, dtype = described[0].shape, described[0].dtype_name
            for b, other in enumerate(described[1:], start=1):
                if (other.shape, other.dtype_name) != (shape, dtype):
                    raise ValueError(
                        f"{_what(i)}: list image {b} is {other.dtype_name} {other.shape}, image 0 is {dtype} {shape}; "
                        "a list's images must share one shape and dtype"
                    )
            sig, width, height = input_signature(shape, dtype, self.read_planar and i == 0)
            if images:
                if sig.batched:
                    raise ValueError(f"{_what(i)}: a list input holds single images (H, W[, C]), not batches")
                sig = Signature(sig.dtype, sig.channels, 1, False, images)
            what = _what(i)
            check_index(what, "input width", width)
            check_index(what, "input height", height)
            check_index(what, "list length" if images else "input planes", images or sig.planes)
            check_product(what, "elements of one input plane", (height, width, sig.channels), U32_MAX)
            sigs.append(sig)
            sizes.append((width, height))
        planes = {s.images or s.planes for s in sigs}
        if len(planes) > 1:
            shown = ", ".join(f"argument {i}: {s.images or s.planes}" for i, s in enumerate(sigs))
            raise ValueError(f"compose: the graph's inputs must have one batch size (planes), got {shown}")
        batch = planes.pop()
        for op_name, rows in self.per_image:
            if rows != batch:
                raise ValueError(
                    f"{op_name}: per_image gives {rows} rows for a batch of {batch} images; give one row per image"
                )
        return tuple(sigs), sizes

    def _extent(self, sigs: Sequence[Signature], sizes: Sequence[tuple[int, int]], plan: LaunchPlan) -> Extent:
        """The call's extent: the chain's output size, which every branch must reach (a Crop list: every rect's
        plane of one size)."""
        planes = sigs[0].images or sigs[0].planes
        made = fops.check_one_size(fops.out_sizes(fops.geometry_of(self.ops), [sizes[0]] * max(planes, 1)))
        out_w, out_h = made[0]
        for joining, branch in self._branches:
            got = fops.check_one_size(
                fops.out_sizes(fops.geometry_of(branch.ops), [sizes[branch.index]] * max(planes, 1))
            )[0]
            if got != (out_w, out_h):
                raise ValueError(
                    f"{joining.op_name}: the branch {branch!r} makes {got[0]}x{got[1]} pixels where the chain has "
                    f"{out_w}x{out_h}; joined images must have one size (resize or crop the branch to it)"
                )
        first = sigs[0]
        e = Extent(sizes[0][0], sizes[0][1], planes, first.channels, out_w, out_h, len(made), plan.layout.out_channels)
        plan.admit(e)
        return e

    def _out_shapes(self, sigs: Sequence[Signature], e: Extent, layout: Any) -> list[tuple[tuple[int, ...], str]]:
        batched = self.rects > 0 or any(s.batched or s.images for s in sigs)
        kinds = [(layout.out_dtype, layout.out_channels, layout.write), *layout.outputs]
        return [
            (output_shape(kind, batched, e.dst_planes, channels, e.dst_h, e.dst_w), dtype)
            for dtype, channels, kind in kinds
        ]

    def _given_outputs(self, out: object) -> list[object] | None:
        if out is None:
            return None
        given = list(out) if isinstance(out, list | tuple) else [out]
        if len(given) != self.outputs:
            raise ValueError(f"out: the graph writes {self.outputs} output(s), in chain order; got {len(given)}")
        return given

    def __call__(self, *inputs: object, out: object = None, stream: object = None) -> Any:
        """Run the graph on one array per input, into `out` (a tuple, one per output) when given, on `stream`
        when given (GPU). Returns the outputs in chain order (one output: the array itself)."""
        bound = self._bound
        if bound is not None and not inputs and out is None and bound.results is not None:
            return self._launch_bound(bound, stream)
        if bound is not None:
            results = self._call_bound(inputs, out, stream)
        elif self.target == "cpu":
            results = self._call_cpu(inputs, out, stream)
        else:
            results = self._call_gpu(inputs, out, stream)
        return tuple(results) if len(results) > 1 else results[0]

    def _call_cpu(self, inputs: Sequence[object], out: object, stream: object) -> list[Any]:
        if stream is not None:
            raise ValueError("the CPU target has no streams: call without stream=")
        key = _host_key(inputs)
        if key is not None and (warm := self._warm.get(key) or self._known_call(key)) is not None:
            given = self._given_outputs(out)
            if given is None or all(fits(g, *shape) for g, shape in zip(given, warm.shapes, strict=True)):
                return self._warm_cpu(warm, inputs, given)
        arguments, images = self._arguments(inputs, describe_host_array)
        sigs, sizes = self._signatures(arguments, images)
        plan, values = self._plan(sigs, 0)
        e = self._extent(sigs, sizes, plan)
        shapes = self._out_shapes(sigs, e, plan.layout)
        given = self._given_outputs(out)
        results: list[Any] = []
        for k, (shape, dtype) in enumerate(shapes):
            if given is None:
                results.append(np.empty(shape, np.dtype(dtype)))
                continue
            _check_out(describe_host_array(given[k], f"out[{k}]"), k, shape, dtype)
            results.append(given[k])
        assert isinstance(plan, CpuLaunch)
        if all(r.size for r in results):
            pointers = [int(r.ctypes.data) for r in results]
            tables = [[a.ptr for a in described] for described in arguments] if images else []
            surfaces = _surfaces(arguments, sizes, pointers, tables)
            first = arguments[0][0].ptr
            plan.run(first, pointers[0], e, tables[0] if tables else (), values=values, surfaces=surfaces)
        if key is not None and all(r.size for r in results):  # every check above holds for arrays like these
            host = tuple((s, np.dtype(d)) for s, d in shapes)
            self._remember(key, _Warm(plan, values, e, tuple(sizes[1:]), host, (), "numpy", 0, (), sigs))
        return results

    def _warm_cpu(self, warm: _Warm, inputs: Sequence[Any], given: list[Any] | None) -> list[Any]:
        results = given if given is not None else [np.empty(shape, dtype) for shape, dtype in warm.shapes]
        pointers = tuple([r.ctypes.data for r in results])
        others = tuple([x.ctypes.data for x in inputs[1:]])
        plan = warm.plan
        assert isinstance(plan, CpuLaunch)
        surfaces = (others, warm.sizes, pointers[1:], ())
        plan.run(inputs[0].ctypes.data, pointers[0], warm.extent, values=warm.values, surfaces=surfaces)
        return results

    def _call_gpu(self, inputs: Sequence[object], out: object, stream: object) -> list[Any]:
        key, pointers = _gpu_keys(inputs)
        warm = None if key is None else self._warm.get(key) or self._known_call(key)
        given = self._given_outputs(out)
        if warm is not None:
            outputs = _known_outputs(warm, given)
            if outputs is not None:
                return self._warm_gpu(warm, inputs, pointers, outputs, stream)
        arguments, images = self._arguments(inputs, describe_gpu_array)
        devices = {a.device for described in arguments for a in described}
        if len(devices) > 1:
            raise ValueError(f"compose: the graph's inputs are on devices {sorted(devices)}; use one device")
        src = arguments[0][0]
        sigs, sizes = self._signatures(arguments, images)
        plan, values = self._plan(sigs, src.device)
        e = self._extent(sigs, sizes, plan)
        shapes = self._out_shapes(sigs, e, plan.layout)
        # warm keys of outputs that pass their check, kept with the call's warm entry (a new one, or the one whose
        # outputs the call brought anew)
        out_keys = warm.out_keys if warm is not None else tuple(set() for _ in shapes)
        results: list[Any] = []
        made_pointers: list[int] = []
        makers = tuple(output_maker(src.framework, src.obj, shape, dtype, src.device) for shape, dtype in shapes)
        for k, (shape, dtype) in enumerate(shapes):
            if given is None or given[k] is None:  # (None: a bound graph's unbound output)
                made, ptr = makers[k](src.obj)
            else:
                dst = describe_gpu_array(given[k], f"out[{k}]")
                _check_out(dst, k, shape, dtype)
                if dst.device != src.device:
                    raise ValueError(f"out[{k}]: on device {dst.device}, the inputs on device {src.device}")
                made, ptr = given[k], dst.ptr
                if (seen := warm_key(given[k])) is not None:
                    out_keys[k].add(seen[0])
            results.append(made)
            made_pointers.append(ptr)
        handle, owned = launch_stream(src, stream)
        assert isinstance(plan, GpuLaunch)
        if e.dst_w and e.dst_h and e.dst_planes:
            tables = [[a.ptr for a in described] for described in arguments] if images else []
            surfaces = _surfaces(arguments, sizes, made_pointers, tables)
            first = tables[0] if tables else ()
            plan.run(src.ptr, made_pointers[0], e, handle, first, values=values, surfaces=surfaces)
        if owned:
            plan.synchronize(handle)
        if key is not None and warm is None and e.dst_w and e.dst_h and e.dst_planes:  # the checks hold for such keys
            others = tuple(sizes[1:])
            self._remember(
                key, _Warm(plan, values, e, others, tuple(shapes), makers, src.framework, src.device, out_keys, sigs)
            )
        return results

    def _warm_gpu(
        self, warm: _Warm, inputs: Sequence[Any], pointers: list[int], outputs: list[Any], stream: object
    ) -> list[Any]:
        """A call on arrays whose warm keys a full call saw: `outputs` (each (array, pointer); None: made as that
        call made it), one launch."""
        made = [warm.makers[k](inputs[0]) if o is None else o for k, o in enumerate(outputs)]
        if stream is not None:
            handle, owned = stream_handle(stream), False
        else:
            advertised = inputs[0].stream if warm.framework == "fklir" else None
            handle, owned = producer_launch_stream(warm.framework, warm.device, advertised)
        plan = warm.plan
        assert isinstance(plan, GpuLaunch)
        surfaces = (tuple(pointers[1:]), warm.sizes, tuple([ptr for _, ptr in made[1:]]), ())
        plan.run(pointers[0], made[0][1], warm.extent, handle, values=warm.values, surfaces=surfaces)
        if owned:
            plan.synchronize(handle)
        return [result for result, _ in made]


def _gpu_keys(inputs: Sequence[object]) -> tuple[tuple[object, ...] | None, list[int]]:
    """The arguments' warm keys (interop.warm_key) and pointers when every argument has one, else (None, [])."""
    keys: list[object] = []
    pointers: list[int] = []
    for x in inputs:
        seen = None if isinstance(x, list | tuple) else warm_key(x)
        if seen is None:
            return None, []
        keys.append(seen[0])
        pointers.append(seen[1])
    return tuple(keys), pointers


def _known_outputs(warm: _Warm, given: list[object] | None) -> list[Any] | None:
    """A warm call's outputs: None each to be made, or (array, pointer) of a given one whose warm key passed its
    check before; None when a given output is new (the full call checks it)."""
    if given is None:
        return [None] * len(warm.makers)
    outputs: list[Any] = []
    for k, o in enumerate(given):
        if o is None:
            outputs.append(None)
            continue
        seen = warm_key(o)
        if seen is None or seen[0] not in warm.out_keys[k]:
            return None
        outputs.append((o, seen[1]))
    return outputs


def _host_key(inputs: Sequence[object]) -> tuple[object, ...] | None:
    """(dtype, shape) of each argument when every one is a C-contiguous numpy array, else None."""
    key: list[object] = []
    for x in inputs:
        if type(x) is not np.ndarray or not x.flags.c_contiguous:
            return None
        key.append((x.dtype, x.shape))
    return tuple(key)


class _Shape(NamedTuple):
    """An argument known by its shape and element type only (ir(), source_for())."""

    shape: tuple[int, ...]
    dtype_name: str


def _shapes(inputs: Sequence[tuple[object, Sequence[int]]]) -> list[list[_Shape]]:
    return [[_Shape(tuple(shape), str(dtype))] for dtype, shape in inputs]


def _what(i: int) -> str:
    return "TensorRead input" if i == 0 else f"Input({i}) input"


def _surfaces(
    arguments: Sequence[Sequence[Any]],
    sizes: Sequence[tuple[int, int]],
    outputs: Sequence[int],
    tables: Sequence[Sequence[int]],
) -> Surfaces:
    """LaunchPlan.set_surfaces' arguments: arguments 1.. (their first array's pointer, their sizes), outputs 1..,
    tables 1.."""
    inputs = tuple([described[0].ptr for described in arguments[1:]])
    return inputs, tuple(sizes[1:]), tuple(outputs[1:]), tables[1:]


def _check_out(dst: Any, k: int, shape: tuple[int, ...], dtype: str) -> None:
    require_writable(dst, f"out[{k}]")
    if dst.shape != shape or dst.dtype_name != dtype:
        raise ValueError(f"out[{k}]: expected a {dtype} array of shape {shape}, got {dst.dtype_name} {dst.shape}")
