"""The GPU target's calls of a pipeline: arrays of any CUDA library in, one launch, an output in the input's
library (or `out=`).

Bound compose (TensorRead(x), TensorWrite(out)) prepares its call at compose; a warm `k(stream=s)` is one
launch of the bindings' own parameter block. An unbound call on an input whose warm key (interop.warm_key)
was seen is one dict hit; a new pipeline's first call on a kind of input the process has seen describes
nothing (_GPU_INPUTS). ReadSet and SplitWrite take the plain path (_call_general).
"""

import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from fklir.jit.binding import (
    Binding,
    Prepared,
    WarmEntry,
    check_like_binding,
    check_new_out,
    check_out,
    launch_nothing,
    launch_prepared,
    prepare,
)
from fklir.jit.default_stream import launch_stream, producer_launch_stream
from fklir.jit.signature import ChainCalls, inputs_of
from fklir.runtime import cuda_driver
from fklir.runtime.interop import (
    GpuArray,
    WarmKey,
    describe_gpu_array,
    empty_like_framework,
    output_maker,
    warm_key,
    warm_list_key,
)
from fklir.runtime.launch import GpuLaunch
from fklir.runtime.streams import stream_handle

if TYPE_CHECKING:
    from fklir.frontend import ops as fops

_LISTS = (list, tuple)  # for the call paths' isinstance: `list | tuple` would build a union object every call

# GPU inputs described before, by warm key (arrays with equal keys describe alike), so that a new pipeline's
# first call on an input like one seen describes nothing.
_GPU_INPUTS: dict[WarmKey, GpuArray] = {}
_GPU_INPUTS_MAX = 4096

# Calls prepared on one input, by (the pipeline's call key, the input's warm key): a new pipeline with an equal
# call key (Pipeline.call_key) on an input like it takes that call's extent and output with its own values, so
# its first call is a warm one.
_KNOWN_CALLS: dict[tuple[object, WarmKey], WarmEntry] = {}
_KNOWN_CALLS_MAX = 4096


class GpuExecutor:
    """Runs one pipeline's calls on the GPU target."""

    __slots__ = ("_bound", "_bound_launch", "_bound_result", "_pipe", "_prepared", "_warm")

    def __init__(self, pipe: ChainCalls, read: "fops.Op", write: "fops.Op") -> None:
        # a proxy: the pipeline owns its executor, and a cycle between the two would keep every per-frame
        # pipeline (its descriptors, values blocks and warm entries) alive until the garbage collector ran
        self._pipe = weakref.proxy(pipe)
        self._prepared: dict[tuple[object, ...], Prepared] = {}
        # unbound calls on inputs seen before, by interop.warm_key: the warm path is one dict hit
        self._warm: dict[WarmKey, WarmEntry] = {}
        self._bound: Binding | None = None
        # set while the parameter block holds exactly the bound buffers: k(stream=s) is then this call
        self._bound_launch: Callable[[int], None] | None = None
        self._bound_result: object = None
        self._bind(read, write)

    def _bind(self, read: "fops.Op", write: "fops.Op") -> None:
        """Bound compose: TensorRead(x) compiles now and makes x the call default; TensorWrite(out) likewise."""
        read_binding = getattr(read, "binding", None)
        write_binding = getattr(write, "binding", None)
        if read_binding is None and write_binding is None:
            return
        if isinstance(read_binding, list | tuple) or isinstance(write_binding, list | tuple):
            raise TypeError("compose: bind one array, not a list; pass a list of images per call: pipe([x0, x1, ...])")
        binding = Binding()
        if read_binding is not None:
            binding.src = describe_gpu_array(read_binding, "TensorRead binding")
            prepared = self._prepare(read_binding, [binding.src])
            # the bindings get a parameter block of their own: overrides and unbound calls fill the shared
            # plan's, so an argless call (no lock, any thread) always launches the bindings
            binding.prepared = prepared.with_plan(prepared.plan.twin(prepared.values))
        if write_binding is not None:
            binding.dst = describe_gpu_array(write_binding, "TensorWrite binding")
            if binding.prepared is not None:
                try:
                    check_out(binding.dst, binding.prepared)
                except ValueError as e:
                    raise ValueError(f"compose: the bound output does not fit the chain: {e}") from None
        self._bound = binding

    @property
    def bound(self) -> Binding | None:
        return self._bound

    def __call__(self, x: object, out: object, stream: object) -> Any:
        launch = self._bound_launch
        if launch is not None and stream is not None and x is None and out is None:
            # the warm bound call on a caller's stream: the block already holds the bound buffers
            launch(stream_handle(stream))
            return self._bound_result
        if self._warm:  # an unbound pipeline that has run: an input seen before is one dict hit
            if isinstance(x, _LISTS):
                listed = warm_list_key(x)
                if listed is not None and (entry := self._warm.get(listed[0])) is not None:
                    return self._call_warm(entry, x[0], listed[1][0], out, stream, listed[1])
            elif (seen := warm_key(x)) is not None and (entry := self._warm.get(seen[0])) is not None:
                return self._call_warm(entry, x, seen[1], out, stream)
        if self._bound is not None:
            return self._call_bound(x, out, stream)
        generator = self._pipe.generator
        if x is None and generator is None:
            raise TypeError("pipe() needs an input: call pipe(x), or bind one at compose time with TensorRead(x)")
        if x is not None and generator is not None:
            raise TypeError("a ReadSet pipeline reads no input: call pipe() (or pipe(out=y))")
        return self._call(x, out, stream)

    def _call_bound(self, x: object, out: object, stream: object) -> Any:
        """A bound pipeline: bindings are call defaults; overrides must match them."""
        b = self._bound
        assert b is not None
        if x is None and out is None and b.src is not None and b.dst is not None and b.prepared is not None:
            plan = b.prepared.plan
            handle, owned = (stream_handle(stream), False) if stream is not None else launch_stream(b.src, None)
            if b.prepared.launches:
                plan.run(b.src.ptr, b.dst.ptr, b.prepared.extent, handle, values=b.prepared.values)
            self._bound_launch = plan.launch if b.prepared.launches else launch_nothing
            self._bound_result = b.dst.obj
            if owned:
                plan.synchronize(handle)
            return b.dst.obj
        if isinstance(x, list | tuple):
            raise ValueError("a bound pipeline takes one input; compose an unbound pipeline for lists of images")
        if x is None:
            if b.src is None:
                raise TypeError("pipe() needs an input: only the output is bound; call pipe(x)")
            x = b.src.obj
        elif b.src is not None:
            check_like_binding("input", describe_gpu_array(x, "TensorRead input"), b.src)
        if out is None and b.dst is not None:
            out = b.dst.obj
        return self._call(x, out, stream)

    def _prepare(self, x: object, sources: list[Any]) -> Prepared:
        """Cold part of a call for one input signature and size: plan, extent, output shape."""
        pipe = self._pipe
        src = sources[0]
        if any(s.device != src.device for s in sources):
            raise ValueError(f"TensorRead: list inputs are on devices {[s.device for s in sources]}; use one device")
        sig, width, height = pipe._input(x, [(s.shape, s.dtype_name) for s in sources])
        sizes = pipe._sizes(sig, width, height)
        plan, values = pipe._plan(sig, src.device)
        e = pipe._checked_extent(sig, width, height, sizes, plan)
        out_dtype = plan.layout.out_dtype
        plan_key = pipe.plan_key(sig, src.device)
        prepared = prepare(plan, values, e, pipe._out_shape(sig, e), out_dtype, src.device, sig, plan_key)
        if not isinstance(x, list | tuple):
            self._prepared[(src.shape, src.dtype_name, src.device)] = prepared
        return prepared

    def _call(self, x: object, out: object, stream: object) -> Any:
        """A call that describes its arrays in full (first call per input kind, overrides, lists)."""
        if self._pipe.generator is not None or self._pipe.write_kind == "split_write":
            return self._call_general(x, out, stream)
        if isinstance(x, _LISTS):
            sources = [describe_gpu_array(a, f"TensorRead input {i}") for i, a in enumerate(inputs_of(x))]
            src = sources[0]
            prep = self._prepare(x, sources)
            table = [s.ptr for s in sources]
            seen = warm_list_key(x)
        else:
            table = ()
            seen = warm_key(x)
            if seen is not None and self._bound is None and (entry := self._known_call(seen[0])) is not None:
                return self._call_warm(entry, x, seen[1], out, stream)
            src = _described_input(x, seen)
            prep = self._prepared.get((src.shape, src.dtype_name, src.device)) or self._prepare(x, [src])
        make_output = output_maker(src.framework, src.obj, prep.out_shape, prep.out_dtype, src.device)
        if out is None:
            result, dst_ptr = make_output(src.obj)
        else:
            result, dst_ptr = out, check_new_out(out, prep)
        if self._bound is None and seen is not None:
            entry = self._warm[seen[0]] = WarmEntry(prep, src.framework, make_output, prep.values)
            if not table and (call_key := self._pipe.call_key()) is not None:
                if len(_KNOWN_CALLS) >= _KNOWN_CALLS_MAX:
                    _KNOWN_CALLS.clear()
                _KNOWN_CALLS[(call_key, seen[0])] = entry
        handle, owned = launch_stream(src, stream)
        return launch_prepared(prep, prep.values, src.ptr, dst_ptr, handle, owned, result, table)

    def _known_call(self, input_key: WarmKey) -> WarmEntry | None:
        """This pipeline's warm entry for inputs of `input_key` from a call that a pipeline with the same call key
        prepared on them (that call as it is, with this pipeline's values block), or None."""
        call_key = self._pipe.call_key()
        if call_key is None:
            return None
        known = _KNOWN_CALLS.get((call_key, input_key))
        if known is None:
            return None
        prep = known.prep
        pipe = self._pipe
        # the values block that compose() packed for the plan called last, else the plan found and packed now
        mine = pipe.planned(prep.plan_key)
        plan, values = mine if mine is not None else pipe._plan(prep.signature, prep.device)
        if plan is not prep.plan:  # the structure's plans were rebuilt since (a bounded table let them go)
            return None
        if not pipe.known_rects_fit(prep.extent):
            return None  # the full call says which rect leaves the image
        pipe._last_signature = prep.signature
        entry = self._warm[input_key] = WarmEntry(prep, known.framework, known.make_output, values)
        return entry

    def _call_warm(
        self, entry: WarmEntry, x: object, src_ptr: int, out: object, stream: object, sources: Sequence[int] = ()
    ) -> Any:
        """An unbound call on an input whose warm key was seen: the key stands for the checks made then. A list
        input comes as its first array `x` and the pointers of all (`sources`)."""
        prep = entry.prep
        if out is None:
            result, dst_ptr = entry.make_output(x)
        else:
            seen = warm_key(out)
            dst_ptr = seen[1] if seen is not None and seen[0] in prep.out_keys else check_new_out(out, prep)
            result = out
        if stream is not None:
            return launch_prepared(prep, entry.values, src_ptr, dst_ptr, stream_handle(stream), False, result, sources)
        advertised = x.stream if entry.framework == "fklir" else None  # pyright: ignore[reportAttributeAccessIssue]
        handle, owned = producer_launch_stream(entry.framework, prep.device, advertised)
        return launch_prepared(prep, entry.values, src_ptr, dst_ptr, handle, owned, result, sources)

    def _call_general(self, x: object, out: object, stream: object) -> Any:
        """Calls of ReadSet (no input) and SplitWrite (one output per channel): the plain path."""
        pipe = self._pipe
        if pipe.generator is not None:
            device = 0 if out is None else describe_gpu_array(inputs_of(out)[0], "out").device
            sig, width, height = pipe._generator_input()
            framework, like, src_ptr, src = "fklir", None, 0, None
        else:
            src = describe_gpu_array(x, "TensorRead input")
            sig, width, height = pipe._input(x, [(src.shape, src.dtype_name)])
            device, framework, like, src_ptr = src.device, src.framework, src.obj, src.ptr
        sizes = pipe._sizes(sig, width, height)
        plan, values = pipe._plan(sig, device)
        e = pipe._checked_extent(sig, width, height, sizes, plan)
        prep = prepare(plan, values, e, pipe._out_shape(sig, e), plan.layout.out_dtype, device)
        count = e.channels_out if pipe.write_kind == "split_write" else 1
        if out is None:
            made = [empty_like_framework(framework, prep.out_shape, prep.out_dtype, device, like) for _ in range(count)]
            results, pointers = [m[0] for m in made], [m[1] for m in made]
        else:
            results = list(out) if count > 1 and isinstance(out, list | tuple) else [out]
            if len(results) != count:
                raise ValueError(f"out: SplitWrite writes {count} outputs, one per channel; got {len(results)}")
            pointers = [check_out(describe_gpu_array(r, "out"), prep) for r in results]
        if src is not None:
            handle, owned = launch_stream(src, stream)
        else:
            handle, owned = (
                (stream_handle(stream), False) if stream is not None else (cuda_driver.internal_stream(device), True)
            )
        assert isinstance(plan, GpuLaunch)
        if prep.launches:
            plan.run(src_ptr, pointers[0], e, handle, outputs=pointers, values=values)
        if owned:
            plan.synchronize(handle)
        return tuple(results) if count > 1 else results[0]


def _described_input(x: object, seen: tuple[WarmKey, int] | None) -> GpuArray:
    """describe_gpu_array(x) of a pipeline's input (`seen`: its warm_key), from an array with the same warm key
    where one was seen."""
    if seen is None:
        return describe_gpu_array(x, "TensorRead input")
    known = _GPU_INPUTS.get(seen[0])
    if known is None:
        described = describe_gpu_array(x, "TensorRead input")
        if len(_GPU_INPUTS) >= _GPU_INPUTS_MAX:
            _GPU_INPUTS.clear()
        # the description only: holding the array would keep its memory alive for the life of the process
        _GPU_INPUTS[seen[0]] = described._replace(ptr=0, obj=None, stream=None)
        return described
    advertised = x.stream if known.framework == "fklir" else None  # pyright: ignore[reportAttributeAccessIssue]
    # (a GpuArray made field by field: a named tuple's _replace costs a few µs on a first call)
    return GpuArray(
        seen[1], known.shape, known.dtype_name, known.device, advertised, known.framework, x, known.readonly
    )
