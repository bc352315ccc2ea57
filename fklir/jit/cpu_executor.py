"""The CPU target's calls of a pipeline: numpy arrays in, fkl_run (OpenMP) on them, numpy arrays out.

A call on a C-contiguous array of a dtype and shape this pipeline has run on is one dict hit (the warm
path: only `out` is looked at); a new pipeline's first call on a kind of array the process has seen
describes nothing either (_HOST_INPUTS). Anything else is described and checked in full.
"""

import weakref
from typing import Any, NamedTuple, TypeGuard

import numpy as np

from fklir.jit.signature import ChainCalls, Signature, inputs_of
from fklir.runtime.interop import describe_host_array, require_writable
from fklir.runtime.launch import CpuLaunch, Extent


class _CpuWarm(NamedTuple):
    """How a CPU call runs on C-contiguous numpy arrays of one dtype and shape."""

    plan: CpuLaunch
    values: Any  # the pipeline's values block for the plan (LaunchPlan.pack_values)
    extent: Extent
    out_shape: tuple[int, ...]
    out_dtype: np.dtype[Any]
    launches: bool  # False: the output is empty


# What a CPU call learnt from a C-contiguous numpy input, by (dtype, shape, planar read): its signature and
# size, which hold for every such array (a new pipeline's first call then describes nothing).
_HOST_INPUTS: dict[tuple[np.dtype[Any], tuple[int, ...], bool], tuple[Signature, int, int]] = {}
_HOST_INPUTS_MAX = 4096


class CpuExecutor:
    """Runs one pipeline's calls on the CPU target."""

    __slots__ = ("_pipe", "_warm")

    def __init__(self, pipe: ChainCalls) -> None:
        # a proxy: the pipeline owns its executor, and a cycle between the two would keep every per-frame
        # pipeline (its descriptors, values blocks and warm entries) alive until the garbage collector ran
        self._pipe = weakref.proxy(pipe)
        # calls on a C-contiguous numpy array of an element type and shape seen before: one dict hit
        self._warm: dict[tuple[np.dtype[Any], tuple[int, ...]], _CpuWarm] = {}

    def __call__(self, x: object, out: object, stream: object) -> Any:
        if type(x) is np.ndarray and stream is None and x.flags.c_contiguous:
            entry = self._warm.get((x.dtype, x.shape))
            if entry is not None:
                return self._call_warm(entry, x, out)
        if stream is not None:
            raise ValueError("the CPU target has no streams: call without stream=")
        pipe = self._pipe
        if x is None and pipe.generator is None:
            raise TypeError("pipe() needs an input: call pipe(x)")
        if x is not None and pipe.generator is not None:
            raise TypeError("a ReadSet pipeline reads no input: call pipe() (or pipe(out=y))")
        return self._call(x, out)

    def _call(self, x: object, out: object) -> Any:
        """A call that describes and checks its arrays (the first per kind of input, lists, SplitWrite)."""
        pipe = self._pipe
        array = x if type(x) is np.ndarray and x.flags.c_contiguous else None
        input_key = None if array is None else (array.dtype, array.shape, pipe.read_planar)
        known = None if input_key is None else _HOST_INPUTS.get(input_key)
        if pipe.generator is not None:
            pointers: list[int] = []
            sig, width, height = pipe._generator_input()
        elif array is not None and known is not None:
            pointers = [array.ctypes.data]
            sig, width, height = known
            pipe._last_signature = sig
        else:
            sources = [describe_host_array(a, f"TensorRead input {i}") for i, a in enumerate(inputs_of(x))]
            pointers = [s.ptr for s in sources]
            sig, width, height = pipe._input(x, [(s.shape, s.dtype_name) for s in sources])
            if input_key is not None:
                _remember_host_input(input_key, (sig, width, height))
        sizes = pipe._sizes(sig, width, height)
        plan, values = pipe._plan(sig, 0)
        e = pipe._checked_extent(sig, width, height, sizes, plan)
        shape = pipe._out_shape(sig, e)
        dtype = plan.layout.out_dtype
        count = e.channels_out if pipe.write_kind == "split_write" else 1
        results = self._outputs(out, shape, dtype, count)
        assert isinstance(plan, CpuLaunch)
        if results[0].size:
            outputs = [r.ctypes.data for r in results]
            plan.run(pointers[0] if pointers else 0, outputs[0], e, pointers, outputs, values)
        if type(x) is np.ndarray and count == 1:  # every check above holds for arrays of this dtype and shape
            self._warm[(x.dtype, x.shape)] = _CpuWarm(plan, values, e, shape, results[0].dtype, results[0].size > 0)
        return tuple(results) if pipe.write_kind == "split_write" else results[0]

    @staticmethod
    def _outputs(out: object, shape: tuple[int, ...], dtype: str, count: int) -> list[np.ndarray[Any, Any]]:
        """The call's outputs: new arrays, or the given ones checked (SplitWrite: one per channel)."""
        if out is None:
            return [np.empty(shape, dtype=np.dtype(dtype)) for _ in range(count)]
        if count == 1 and fits(out, shape, np.dtype(dtype)):
            return [out]
        given = list(out) if count > 1 and isinstance(out, list | tuple) else [out]
        if len(given) != count:
            raise ValueError(f"out: SplitWrite writes {count} outputs, one per channel; got {len(given)}")
        for i, o in enumerate(given):
            dst = describe_host_array(o, "out")
            require_writable(dst, "out" + (f" (output {i})" if count > 1 else ""))
            if dst.shape != shape or dst.dtype_name != dtype:
                raise ValueError(
                    f"out: expected a {dtype} array of shape {shape}, got {dst.dtype_name} {dst.shape}"
                    + (f" (output {i})" if count > 1 else "")
                )
        return given  # pyright: ignore[reportReturnType]

    def _call_warm(self, entry: _CpuWarm, x: np.ndarray[Any, Any], out: object) -> Any:
        """A call on an array whose dtype and shape a full call checked: only `out` is looked at, and an
        `out` unlike the one expected goes through the full call and its errors."""
        if out is None:
            result = np.empty(entry.out_shape, entry.out_dtype)
        elif fits(out, entry.out_shape, entry.out_dtype):
            result = out
        else:
            return self._call(x, out)
        if entry.launches:
            src, dst = x.ctypes.data, result.ctypes.data
            entry.plan.run(src, dst, entry.extent, (src,), (dst,), entry.values)
        return result


def _remember_host_input(key: tuple[np.dtype[Any], tuple[int, ...], bool], known: tuple[Signature, int, int]) -> None:
    if len(_HOST_INPUTS) >= _HOST_INPUTS_MAX:
        _HOST_INPUTS.clear()
    _HOST_INPUTS[key] = known


def fits(out: object, shape: tuple[int, ...], dtype: np.dtype[Any]) -> TypeGuard[np.ndarray[Any, Any]]:
    """Whether `out` is a numpy array that a call writes as it is (else it is described and checked)."""
    return (
        type(out) is np.ndarray
        and out.dtype == dtype
        and out.shape == shape
        and out.flags.c_contiguous
        and out.flags.writeable
    )
