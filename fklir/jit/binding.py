"""The prepared state of a pipeline's GPU calls and the launch that runs it.

A call is prepared once per input signature and size (plan, extent, output shape); a bound pipeline keeps
its buffers' descriptions beside it, and an unbound one a warm entry per input key, so that a call on an
input seen before checks nothing that was checked then.
"""

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from fklir.runtime.interop import WarmKey, describe_gpu_array, require_writable, warm_key
from fklir.runtime.launch import Extent

# Plain classes and a named tuple, not dataclasses: @dataclass builds its methods from source text at
# import, which a fresh process's first call would pay for.


class Binding:
    """A bound pipeline's buffers (described once, at compose) and its prepared call."""

    __slots__ = ("dst", "prepared", "src")

    def __init__(self) -> None:
        self.src: Any = None  # GpuArray
        self.dst: Any = None  # GpuArray
        self.prepared: Prepared | None = None


class Prepared(NamedTuple):
    """Everything a warm GPU call on one input signature and size needs (made by `prepare`). Pipelines with one
    call key share it (WarmEntry holds each one's values block); `values` is the preparing pipeline's."""

    plan: Any  # GpuLaunch
    values: Any  # the pipeline's values block for the plan (LaunchPlan.pack_values)
    extent: Extent
    out_shape: tuple[int, ...]
    out_dtype: str
    device: int
    out_keys: set[WarmKey]  # warm keys of outputs that passed check_out for this call: equal keys pass it alike
    launches: bool  # False: the output is empty, nothing to launch
    signature: Any = None  # the input's (jit.signature.Signature), where a call of another pipeline may reuse this
    plan_key: Any = None  # the plan's key among a pipeline's plans (Pipeline.plan_key), with `signature`

    def with_plan(self, plan: Any) -> "Prepared":
        """This call on another plan (a bound pipeline's own parameter block); the output keys are shared."""
        return Prepared(plan, self.values, *self[2:8])


def prepare(
    plan: Any,
    values: Any,
    extent: Extent,
    out_shape: tuple[int, ...],
    out_dtype: str,
    device: int,
    signature: Any = None,
    plan_key: Any = None,
) -> Prepared:
    """A call prepared anew: no output checked yet; nothing to launch for an empty output."""
    launches = bool(out_shape) and min(out_shape) > 0
    return Prepared(plan, values, extent, out_shape, out_dtype, device, set(), launches, signature, plan_key)


class WarmEntry(NamedTuple):
    """How an unbound call runs on inputs of one warm key (type, element type, shape, device)."""

    prep: Prepared  # the call as prepared, by this pipeline or by one with its call key (Pipeline.call_key)
    framework: str  # the input's, as describe_gpu_array names it
    make_output: Callable[[Any], tuple[object, int]]  # a new output in the input's framework, and its pointer
    values: Any  # this pipeline's values block for prep.plan


def check_like_binding(what: str, given: Any, known: Any) -> None:
    """An array given where one is bound (an override, described as `given`) must have the bound array's shape,
    element type and device: the bindings' prepared call is only valid for those."""
    if (given.shape, given.dtype_name, given.device) != (known.shape, known.dtype_name, known.device):
        raise ValueError(
            f"{what} override: expected {known.dtype_name} {known.shape} on device {known.device} like the bound "
            f"input, got {given.dtype_name} {given.shape} on device {given.device}; "
            "compose a new pipeline for other shapes or dtypes"
        )


def unpicklable(unbound: str) -> TypeError:
    """The error of pickling a bound pipeline (`unbound`: how its unbound form is written)."""
    return TypeError(
        f"a bound pipeline holds device buffers and cannot be pickled; pickle an unbound one ({unbound}) and pass "
        "arrays per call"
    )


def check_out(dst: Any, prep: Prepared) -> int:
    require_writable(dst, "out")
    if dst.shape != prep.out_shape or dst.dtype_name != prep.out_dtype or dst.device != prep.device:
        raise ValueError(
            f"out: expected a {prep.out_dtype} array of shape {prep.out_shape} on device {prep.device}, "
            f"got {dst.dtype_name} {dst.shape} on device {dst.device}"
        )
    return int(dst.ptr)


def check_new_out(out: object, prep: Prepared) -> int:
    """check_out on the full description of `out`; its warm key is remembered so that the next output
    like it is accepted on its key alone."""
    ptr = check_out(describe_gpu_array(out, "out"), prep)
    if (seen := warm_key(out)) is not None:
        prep.out_keys.add(seen[0])
    return ptr


def launch_prepared(
    prep: Prepared,
    values: Any,
    src_ptr: int,
    dst_ptr: int,
    handle: int,
    owned: bool,
    result: Any,
    sources: Sequence[int] = (),
) -> Any:
    """Run the prepared kernel with a pipeline's values block on stream `handle` (nothing for an empty output),
    with a list input's `sources`; wait for the stream when it is not the caller's (`owned`). Returns `result`."""
    plan = prep.plan
    if prep.launches:
        plan.run(src_ptr, dst_ptr, prep.extent, handle, sources, values=values)
    if owned:
        plan.synchronize(handle)
    return result


def launch_nothing(stream: int) -> None:
    """The bound launch of an empty output."""
