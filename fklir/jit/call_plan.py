"""A jit kernel's prepared call for one signature: its arguments laid out once, so that a repeated call only
writes each tensor's pointer and each scalar's value, then launches.

The matcher has checked the signature (every tensor's type, dtype, shape, strides and device) when the plan
is made; the plan keeps each tensor's fkl::TensorView with its shape and strides filled, one ctypes object per
scalar, and on the GPU the void*[] that cuLaunchKernel reads them through. A scalar is still checked on
every call (its value is the call's own): a plain Python number in range is written as it is, anything else
goes through the matcher's converter, which raises the same errors as a first call.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Sequence
from typing import Any, NamedTuple

from fklir import dtypes
from fklir.jit import tensors
from fklir.jit.matcher import Arguments, ScalarConverter
from fklir.jit.tensors import Tensor
from fklir.runtime.launch import LAST_DEFAULT_STREAM
from fklir.runtime.streams import stream_handle

Dims = tuple[int, int, int]


class _Scalar(NamedTuple):
    """One scalar parameter and the quick test of a value its slot stores as it is: an instance of `plain`
    within [lo, hi] (half floats, which travel as their bits, have none). Any other value goes through
    `convert`, which converts it or raises the matcher's error."""

    position: int  # among the kernel's arguments
    plain: type | None
    lo: float
    hi: float
    name: str
    convert: ScalarConverter


_PLAIN: dict[str, type] = {"bool": bool, "int": int, "uint": int, "float": float}


def _scalar(index: int, name: str, dtype: str, convert: ScalarConverter) -> _Scalar:
    record = dtypes.BY_NAME[dtype]
    plain = None if record.slot_kind in ("f16", "bf16") else _PLAIN[record.kind]
    return _Scalar(index, plain, record.lo, record.hi, name, convert)


class RememberedArguments(tuple[object, ...]):
    """A remembered call's arguments (jit/warm_calls.py): scalars and fixed tensors only, never a caller's array,
    and the same object on every repeat of that call, so a plan whose objects hold its scalars skips them."""

    __slots__ = ()


class CallPlan:
    """The arguments of one signature's calls (see the module docstring), and the launch that takes them."""

    def __init__(self, launch: CpuLaunch | GpuLaunch, arguments: Arguments, converted: Sequence[Tensor | Any]) -> None:
        self.launch = launch
        self.tensor_indices = [index for index, argument in enumerate(converted) if isinstance(argument, Tensor)]
        self._first = self.tensor_indices[0]
        self._first_name = arguments.names[self._first]
        self._scalars = [
            _scalar(index, arguments.names[index], dtype, convert)
            for index, (dtype, convert) in arguments.scalars.items()
        ]
        # the objects in parameter order, each a TensorView (shape and strides filled) or a scalar's ctypes
        # object, and the void*[] of their addresses that cuLaunchKernel reads
        self.objects: list[Any] = [None] * len(converted)
        for index in self.tensor_indices:
            self.objects[index] = converted[index].view()
        for index, (dtype, _convert) in arguments.scalars.items():
            self.objects[index] = dtypes.BY_NAME[dtype].ctype()
        self._addresses = (ctypes.c_void_p * len(self.objects))(*map(ctypes.addressof, self.objects))
        self.address = ctypes.addressof(self._addresses)
        self.lock = threading.Lock()  # the objects are one call's from its fill to its launch
        # the RememberedArguments whose scalars self.objects hold: their repeat needs no second write
        self._scalars_of: object = None

    def fill(self, objects: list[Any], pointers: Sequence[int], values: Sequence[Any]) -> None:
        """Write one call's pointers (in tensor order) and scalar values into `objects` (self.objects or
        copies())."""
        for index, pointer in zip(self.tensor_indices, pointers, strict=True):
            objects[index].data = pointer
        own = objects is self.objects
        if own and values is self._scalars_of:
            return
        for index, plain, lo, hi, name, convert in self._scalars:
            value = values[index]
            objects[index].value = value if type(value) is plain and lo <= value <= hi else convert(value, name).value
        if own:  # (other arguments are not kept: they may hold a caller's arrays)
            self._scalars_of = values if type(values) is RememberedArguments else None

    def copies(self) -> list[Any]:
        """Objects of one call's own: a CPU call runs without the plan's lock."""
        return [type(value).from_buffer_copy(value) for value in self.objects]

    def run(
        self, pointers: Sequence[int], values: Sequence[object], stream: object, first: Tensor | None = None
    ) -> None:
        """One call, its tensors' pointers read by the caller; `first`: its first tensor, when described."""
        self.launch.run(self, pointers, values, stream, first)

    def run_on(self, pointers: Sequence[int], values: Sequence[object], handle: int) -> None:
        """A GPU call on a caller's stream, given as its raw handle (a shipped kernel's remembered call)."""
        launch = self.launch
        assert isinstance(launch, GpuLaunch), "a CPU kernel takes no stream"
        launch.run_on(self, pointers, values, handle)

    def first_tensor(self, values: Sequence[object]) -> Tensor:
        """The call's first tensor, described: its framework says where an unbound call's stream is."""
        return tensors.describe(values[self._first], self._first_name)


class CpuLaunch:
    """The extern "C" trampoline, called with each argument by value."""

    def __init__(self, entry: Any, argtypes: list[Any]) -> None:
        entry.argtypes = argtypes
        entry.restype = None
        self.entry = entry

    def run(
        self, plan: CallPlan, pointers: Sequence[int], values: Sequence[object], stream: object, first: Tensor | None
    ) -> None:
        if stream is not None:
            raise ValueError("the CPU target has no streams: call without stream=")
        objects = plan.copies()
        plan.fill(objects, pointers, values)
        self.entry(*objects)


class GpuLaunch:
    """cuLaunchKernel of the instance with a plan's void*[], on the caller's stream. Plain launches, not the
    pipelines' programmatic ones: a user kernel does not wait for the previous kernel of the stream before
    reading (cudaGridDependencySynchronize), so it must not start before that kernel has finished."""

    def __init__(self, kernel: Any, grid: Dims, block: Dims, device: int) -> None:
        from fklir.runtime import cuda_driver

        self.kernel, self.grid, self.block, self.device = kernel, grid, block, device
        self.empty = 0 in grid or 0 in block  # nothing to launch (CUDA refuses empty grids)
        driver = cuda_driver._driver()  # pyright: ignore[reportPrivateUsage]
        # everything but (stream, kernelParams, extra) bound
        self._launch = functools.partial(driver.cuLaunchKernel, kernel.function, *grid, *block, 0)

    def run(
        self, plan: CallPlan, pointers: Sequence[int], values: Sequence[object], stream: object, first: Tensor | None
    ) -> None:
        if stream is not None:
            self.run_on(plan, pointers, values, stream_handle(stream))
            return
        with plan.lock:
            plan.fill(plan.objects, pointers, values)
            if self.empty:
                return
            handle, owned = self._launch_unbound(plan, first or plan.first_tensor(values))
        if owned:
            self._synchronize(handle)

    def run_on(self, plan: CallPlan, pointers: Sequence[int], values: Sequence[object], handle: int) -> None:
        """The call on the caller's stream `handle`."""
        with plan.lock:
            plan.fill(plan.objects, pointers, values)
            if self.empty:
                return
            # No query of the current context first: a stream carries its context, and a launch refused
            # because another context is current queues nothing, so it is made again in ours.
            if handle > LAST_DEFAULT_STREAM and not self._launch(handle, plan.address, 0)[0]:
                return
            self._launch_in_ours(plan, handle)

    def _launch_in_ours(self, plan: CallPlan, handle: int) -> None:
        """Launch with our context current, then give the caller's back. A thread that had none keeps ours:
        nothing of the caller's changes, and its next launch needs no retry."""
        from fklir.runtime import cuda_driver

        current = cuda_driver.check(cuda_driver._driver().cuCtxGetCurrent(), "cuCtxGetCurrent")  # pyright: ignore[reportPrivateUsage]
        if int(current) == 0:
            cuda_driver.ensure_context(self.device)
            cuda_driver.launch(self.kernel, self.grid, self.block, plan.address, handle)
            return
        with cuda_driver.using_device(self.device):
            cuda_driver.launch(self.kernel, self.grid, self.block, plan.address, handle)

    def _launch_unbound(self, plan: CallPlan, first: Tensor) -> tuple[int, bool]:
        """Launch on the stream of the first tensor's producer; (that stream, whether to wait for it)."""
        from fklir.jit.default_stream import launch_stream

        handle, owned = launch_stream(first, None)
        self._launch_in_ours(plan, handle)
        return handle, owned

    def _synchronize(self, handle: int) -> None:
        from fklir.runtime import cuda_driver

        with cuda_driver.using_device(self.device):
            cuda_driver.synchronize(handle)
