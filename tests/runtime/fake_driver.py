"""Test doubles for the GPU host path on a machine without a GPU: a fake `cuda.bindings.driver` and a fake
`torch` with CUDA tensors and streams.

The fake driver keeps what the host path depends on: primary contexts per device, the thread's current
context, modules loaded into a context, and a launch that fails with CUDA_ERROR_INVALID_CONTEXT when the
current context is not the function's (`strict=True`, what an old driver does with a foreign context) or
that succeeds in the function's own context (`strict=False`). Every call is as cheap as a Python call can
be, so a timing harness over it measures fklir's own Python work (benchmarks/host_overhead.py).

The fake torch has what fklir reads from a tensor (data_ptr, dtype, shape, is_cuda, is_contiguous,
get_device, new_empty, __cuda_array_interface__) and from a stream (cuda_stream), with plain Python
accessors, so the fast paths and their fallbacks can be tested and timed here; its accessors cost about
what torch's do (tens of ns), which the GPU run confirms.

Use `installed(driver)` (a context manager) or the pytest fixtures of the tests that import this module.
"""

from __future__ import annotations

import contextlib
import enum
import functools
import importlib
import itertools
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1
    CUDA_ERROR_NOT_INITIALIZED = 3
    CUDA_ERROR_INVALID_CONTEXT = 201
    CUDA_ERROR_INVALID_HANDLE = 400
    CUDA_ERROR_CONTEXT_IS_DESTROYED = 709


class CUstream_flags(enum.IntEnum):
    CU_STREAM_DEFAULT = 0
    CU_STREAM_NON_BLOCKING = 1


class CUevent_flags(enum.IntEnum):
    CU_EVENT_DISABLE_TIMING = 2


class CUdevice_attribute(enum.IntEnum):
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75
    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76


class CUlaunchAttributeID(enum.IntEnum):
    CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION = 5


class CUlaunchAttribute:
    def __init__(self) -> None:
        self.id: CUlaunchAttributeID | None = None
        self.value = types.SimpleNamespace(programmaticStreamSerializationAllowed=0)


class CUlaunchConfig(types.SimpleNamespace):
    """gridDim*, blockDim*, sharedMemBytes, hStream, attrs, numAttrs: set by the caller."""


class CUpointer_attribute(enum.IntEnum):
    CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9


class Handle:
    """A driver handle (CUcontext, CUstream, CUfunction, ...): int() gives its address."""

    __slots__ = ("value",)

    def __init__(self, value: int) -> None:
        self.value = value

    def __int__(self) -> int:
        return self.value

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.value:#x}>"


class CUcontext(Handle):
    __slots__ = ()


class CUfunction(Handle):
    __slots__ = ("context",)

    def __init__(self, value: int, context: int) -> None:
        super().__init__(value)
        self.context = context


_OK = (CUresult.CUDA_SUCCESS,)
_INVALID_CONTEXT = (CUresult.CUDA_ERROR_INVALID_CONTEXT,)


class FakeDriver(types.SimpleNamespace):
    """The part of cuda.bindings.driver that fklir calls, with one H200-like device per ordinal.

    `launches` records (function, grid, block, stream, params address) of each accepted launch, `attempts`
    counts launch calls and `calls` counts some other entry points, when `record` is true (off for timing).
    `strict`: a launch whose function belongs to another context than the current one fails with
    CUDA_ERROR_INVALID_CONTEXT, without side effects. `fail`: every launch fails with that code.
    """

    def __init__(self, devices: int = 1, strict: bool = True, record: bool = True) -> None:
        super().__init__()
        self.CUresult = CUresult
        self.CUstream_flags = CUstream_flags
        self.CUevent_flags = CUevent_flags
        self.CUdevice_attribute = CUdevice_attribute
        self.CUpointer_attribute = CUpointer_attribute
        self.CUlaunchAttributeID = CUlaunchAttributeID
        self.CUlaunchAttribute = CUlaunchAttribute
        self.CUlaunchConfig = CUlaunchConfig
        self.CUcontext = CUcontext
        self.devices = devices
        self.strict = strict
        self.record = record
        self.launches: list[tuple[Any, ...]] = []  # accepted launches: (function, grid, block, stream, params)
        self.launch_contexts: list[int] = []  # the thread's current context at each accepted launch
        self.attempts = 0  # cuLaunchKernel and cuLaunchKernelEx calls, accepted or not
        self.programmatic = 0  # accepted cuLaunchKernelEx calls that allow programmatic stream serialization
        self.compute_major = 9  # an H200; 8 makes an A100-like device without programmatic launch
        self.fail: CUresult | None = None  # when set, every launch returns it
        self.calls: dict[str, int] = {}
        self.primary = [CUcontext(0x1000 * (d + 1)) for d in range(devices)]
        self.foreign = CUcontext(0xF000)  # a context nobody's kernels live in (another library's)
        self._current = threading.local()
        self._handles = itertools.count(0x100000, 0x100)
        self._current_result = (CUresult.CUDA_SUCCESS, CUcontext(0))
        # the hot entry points are plain closures over this state: as cheap as a Python call can be
        self.cuLaunchKernel = self._make_launch()
        self.cuLaunchKernelEx = self._make_launch_ex(self.cuLaunchKernel)
        self.cuCtxGetCurrent = self._get_current

    # ----- helpers for tests -------------------------------------------------------------------------

    def current(self) -> int:
        return int(getattr(self._current, "context", None) or 0)

    def set_current(self, context: CUcontext | None) -> None:
        self._current.context = context
        self._current.result = (CUresult.CUDA_SUCCESS, context or CUcontext(0))

    def _count(self, name: str) -> None:
        self.calls[name] = self.calls.get(name, 0) + 1

    # ----- init, devices, contexts -------------------------------------------------------------------

    def cuInit(self, flags: int) -> tuple[Any, ...]:
        return _OK

    def cuDeviceGetCount(self) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, self.devices)

    def cuDeviceGet(self, ordinal: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, ordinal)

    def cuDeviceGetAttribute(self, attribute: int, device: int) -> tuple[Any, ...]:
        values = {  # an H200
            CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: self.compute_major,
            CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: 132,
            CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: 2048,
        }
        return (CUresult.CUDA_SUCCESS, values.get(CUdevice_attribute(attribute), 0))

    def cuDevicePrimaryCtxRetain(self, device: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, self.primary[device])

    def _get_current(self) -> tuple[Any, ...]:
        if self.record:
            self._count("cuCtxGetCurrent")
        return getattr(self._current, "result", self._current_result)

    def cuCtxSetCurrent(self, context: CUcontext) -> tuple[Any, ...]:
        self._count("cuCtxSetCurrent")
        self.set_current(context)
        return _OK

    def cuCtxPushCurrent(self, context: CUcontext) -> tuple[Any, ...]:
        stack = self.__dict__.setdefault("_stack", [])
        stack.append(getattr(self._current, "context", None))
        self.set_current(context)
        return _OK

    def cuCtxPopCurrent(self) -> tuple[Any, ...]:
        self.set_current(self.__dict__["_stack"].pop())
        return (CUresult.CUDA_SUCCESS, CUcontext(0))

    # ----- modules and launches ----------------------------------------------------------------------

    def cuModuleLoadData(self, image: bytes) -> tuple[Any, ...]:
        self._count("cuModuleLoadData")
        context = self.current()
        if not context:
            return _INVALID_CONTEXT
        return (CUresult.CUDA_SUCCESS, CUfunction(next(self._handles), context))

    def cuModuleGetFunction(self, module: CUfunction, name: bytes) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, CUfunction(next(self._handles), module.context))

    def cuModuleUnload(self, module: Any) -> tuple[Any, ...]:
        return _OK

    def _make_launch(self) -> Any:
        driver = self

        def cuLaunchKernel(f: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, *rest: Any) -> Any:
            if driver.record:
                driver.attempts += 1
            if driver.fail:
                return (driver.fail,)
            if driver.strict and int(getattr(driver._current, "context", None) or 0) != f.context:
                return _INVALID_CONTEXT
            if driver.record:
                driver.launches.append((f, (gx, gy, gz), (bx, by, bz), rest[1], rest[2]))
                driver.launch_contexts.append(int(getattr(driver._current, "context", None) or 0))
            return _OK

        return cuLaunchKernel

    def _make_launch_ex(self, launch: Any) -> Any:
        driver = self
        programmatic = CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION

        def cuLaunchKernelEx(config: CUlaunchConfig, f: Any, params: Any, extra: Any) -> Any:
            if not driver.record:  # timing (benchmarks/host_overhead.py): one more Python call than the plain stub
                return launch(f, 0, 0, 0, 0, 0, 0, 0, config.hStream, params, extra)
            grid = (config.gridDimX, config.gridDimY, config.gridDimZ)
            block = (config.blockDimX, config.blockDimY, config.blockDimZ)
            result = launch(f, *grid, *block, config.sharedMemBytes, config.hStream, params, extra)
            overlap = any(
                a.id == programmatic and a.value.programmaticStreamSerializationAllowed
                for a in config.attrs[: config.numAttrs]
            )
            if driver.record and overlap and result == _OK:
                driver.programmatic += 1
            return result

        return cuLaunchKernelEx

    # ----- streams, events, pointers -----------------------------------------------------------------

    def cuStreamCreate(self, flags: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, Handle(next(self._handles)))

    def cuStreamSynchronize(self, stream: int) -> tuple[Any, ...]:
        self._count("cuStreamSynchronize")
        if int(stream) <= 2 and not self.current():
            return _INVALID_CONTEXT  # the default streams are the CURRENT context's
        return _OK

    def cuStreamDestroy(self, stream: int) -> tuple[Any, ...]:
        return _OK

    def cuMemAlloc(self, nbytes: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, Handle(next(self._handles)))

    def cuMemFree(self, pointer: int) -> tuple[Any, ...]:
        return _OK

    def cuPointerGetAttribute(self, attribute: int, ptr: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, 0)

    def cuGetErrorString(self, code: int) -> tuple[Any, ...]:
        return (CUresult.CUDA_SUCCESS, CUresult(code).name.encode())


def _reset_cuda_driver_state() -> None:
    from fklir.runtime import cuda_driver

    for cached in (
        cuda_driver._driver,
        cuda_driver._initialise,
        cuda_driver.gpu_available,
        cuda_driver.device_arch,
        cuda_driver.resident_threads,
        cuda_driver.supports_programmatic_launch,
    ):
        cached.cache_clear()
    cuda_driver._primary_contexts.clear()
    cuda_driver._primary_context_handles.clear()
    cuda_driver._internal_streams.clear()


def _in_memory_tables() -> list[dict[Any, Any]]:
    """build's in-memory kernel and plan tables and the pipelines' shared plans, of the modules imported
    (installing must not import them: the fresh-process measurement times that import). A plan found there
    would lead to a kernel the real driver loaded."""
    build = sys.modules.get("fklir.backend.build")
    pipeline = sys.modules.get("fklir.jit.pipeline")
    graph = sys.modules.get("fklir.jit.graph")
    tables = [] if build is None else [build._LOADED, build._PLANS]  # pyright: ignore[reportAttributeAccessIssue]
    tables += [] if pipeline is None else [pipeline._SHARED_PLANS]  # pyright: ignore[reportAttributeAccessIssue]
    return tables + ([] if graph is None else [graph._SHARED_GRAPH_PLANS])  # pyright: ignore[reportAttributeAccessIssue]


def install(driver: FakeDriver, pay_real_import: bool = False) -> None:
    """Make fklir (and `from cuda.bindings import driver`) use `driver` from now on.

    pay_real_import: the first use of the driver (fklir's cuda_driver._driver()) still imports the real
    cuda.bindings.driver, which is slow (tens of ms), and then hands out the fake, so that a timing of a
    fresh process sees that import where fklir makes it.
    """
    _put_in_place(driver)
    _reset_cuda_driver_state()
    if not pay_real_import:
        return
    from fklir.runtime import cuda_driver

    @functools.cache
    def first_use_imports_the_real_module() -> Any:
        sys.modules.pop("cuda.bindings.driver", None)
        with contextlib.suppress(ImportError):
            importlib.import_module("cuda.bindings.driver")
        _put_in_place(driver)
        return driver

    cuda_driver._driver = first_use_imports_the_real_module  # pyright: ignore[reportAttributeAccessIssue]


def _put_in_place(driver: FakeDriver) -> None:
    sys.modules["cuda.bindings.driver"] = driver  # pyright: ignore[reportArgumentType]
    package = sys.modules.get("cuda.bindings")
    if package is not None:
        package.driver = driver  # pyright: ignore[reportAttributeAccessIssue]


@contextlib.contextmanager
def installed(driver: FakeDriver) -> Iterator[FakeDriver]:
    """install(driver) for the block, then restore the real driver module.

    build's in-memory tables are empty for the block and as before after it; the caller gives the
    block its own FKLIR_CACHE_DIR so that no stand-in cubin reaches a real cache.
    """
    saved_module = sys.modules.get("cuda.bindings.driver")
    package = sys.modules.get("cuda.bindings")
    saved_attribute = getattr(package, "driver", None) if package is not None else None
    tables = _in_memory_tables()
    saved_tables = [dict(table) for table in tables]
    for table in tables:  # the real driver's kernels are not the fake's
        table.clear()
    install(driver)
    try:
        yield driver
    finally:
        if saved_module is not None:
            sys.modules["cuda.bindings.driver"] = saved_module
        else:
            sys.modules.pop("cuda.bindings.driver", None)
        package = sys.modules.get("cuda.bindings")
        if package is not None:
            if saved_attribute is not None:
                package.driver = saved_attribute  # pyright: ignore[reportAttributeAccessIssue]
            elif getattr(package, "driver", None) is driver:
                del package.driver  # pyright: ignore[reportAttributeAccessIssue]
        for table, saved in zip(tables, saved_tables, strict=True):
            table.clear()
            table.update(saved)
        _reset_cuda_driver_state()


# ----- a fake torch ----------------------------------------------------------------------------------


class _Dtype:
    __slots__ = ("itemsize", "name", "typestr")

    def __init__(self, name: str, itemsize: int, typestr: str) -> None:
        self.name, self.itemsize, self.typestr = name, itemsize, typestr

    def __repr__(self) -> str:
        return f"torch.{self.name}"


_DTYPES = {
    "uint8": (1, "|u1"),
    "int8": (1, "|i1"),
    "uint16": (2, "<u2"),
    "int16": (2, "<i2"),
    "int32": (4, "<i4"),
    "uint32": (4, "<u4"),
    "float16": (2, "<f2"),
    "bfloat16": (2, "<V2"),
    "float32": (4, "<f4"),
    "float64": (8, "<f8"),
    "bool": (1, "|b1"),
    "complex64": (8, "<c8"),
}


class _Device:
    __slots__ = ("index", "type")

    def __init__(self, type_: str, index: int | None) -> None:
        self.type, self.index = type_, index

    def __repr__(self) -> str:
        return f"device(type='{self.type}', index={self.index})"

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"


def make_fake_torch() -> types.ModuleType:
    """A module object that passes for `torch` with CUDA tensors (fresh classes on each call)."""
    torch = types.ModuleType("torch")
    allocations = itertools.count(0x7F0000000000, 0x100000)

    class Size(tuple):  # pyright: ignore[reportMissingTypeArgument]
        __slots__ = ()

    class Tensor:
        __slots__ = (
            "__weakref__",
            "_contiguous",
            "_device",
            "_ptr",
            "_strides",
            "dtype",
            "shape",
        )  # weakly referable like torch's

        def __init__(self, shape: Any, dtype: _Dtype, device: int = 0, strides: tuple[int, ...] | None = None):
            self.shape = Size(int(s) for s in shape)
            self.dtype = dtype
            self._device = device
            self._ptr = next(allocations)
            self._strides = strides if strides is not None else _c_strides(self.shape)
            self._contiguous = self._strides == _c_strides(self.shape)  # torch keeps this flag too

        @property
        def is_cuda(self) -> bool:
            return self._device >= 0

        @property
        def device(self) -> _Device:
            return _Device("cuda", self._device) if self._device >= 0 else _Device("cpu", None)

        def data_ptr(self) -> int:
            return self._ptr

        def get_device(self) -> int:
            return self._device

        def stride(self) -> tuple[int, ...]:
            return self._strides

        def is_contiguous(self) -> bool:
            return self._contiguous

        def numel(self) -> int:
            n = 1
            for s in self.shape:
                n *= s
            return n

        def new_empty(self, shape: Any, dtype: _Dtype | None = None) -> Tensor:
            return Tensor(shape, dtype or self.dtype, self._device)

        def reshape(self, shape: Any) -> Tensor:
            """A view of a C-contiguous tensor with another shape of as many elements."""
            view = Tensor(shape, self.dtype, self._device)
            if not self._contiguous or view.numel() != self.numel():
                raise NotImplementedError("the fake torch reshapes C-contiguous tensors only")
            view._ptr = self._ptr
            return view

        def __getitem__(self, index: tuple[Any, ...]) -> Tensor:
            """A view with unit axes added (`x[None, ...]`, `x[..., None]`): the only indexing fklir does."""
            at = index.index(Ellipsis)
            if any(i is not None for k, i in enumerate(index) if k != at):
                raise NotImplementedError("the fake torch indexes with None and one Ellipsis only")
            shape, strides = list(self.shape), list(self._strides)
            for k in range(len(index) - 1, at, -1):  # after the ellipsis, from the end
                shape.append(1)
                strides.append(1)
            shape = [1] * at + shape
            strides = [shape[at] * strides[0] if strides else 1] * at + strides
            view = Tensor(shape, self.dtype, self._device, tuple(strides))
            view._ptr = self._ptr
            return view

        @property
        def __cuda_array_interface__(self) -> dict[str, Any]:
            # torch builds this dict (and checks the tensor) on every access
            if not self.is_cuda:
                raise AttributeError("not a CUDA tensor")
            return {
                "typestr": self.dtype.typestr,
                "shape": tuple(self.shape),
                "strides": None if self.is_contiguous() else tuple(s * self.dtype.itemsize for s in self._strides),
                "data": (self._ptr, False),
                "version": 3,
                "stream": 1,
            }

    Tensor.__module__ = "torch"
    Size.__module__ = "torch"

    class Stream:
        __slots__ = ("cuda_stream", "device_index")

        def __init__(self, device: int = 0, handle: int | None = None) -> None:
            self.device_index = device
            self.cuda_stream = handle if handle is not None else next(allocations)

    Stream.__module__ = "torch.cuda.streams"
    default_streams: dict[int, Any] = {}

    def current_stream(device: int | None = None) -> Any:
        index = device or 0
        if index not in default_streams:
            default_streams[index] = Stream(index, 0)
        return default_streams[index]

    def empty(shape: Any, dtype: _Dtype, device: Any = "cuda:0") -> Tensor:
        index = 0
        if isinstance(device, str) and ":" in device:
            index = int(device.split(":")[1])
        return Tensor(shape, dtype, index)

    for name, (itemsize, typestr) in _DTYPES.items():
        setattr(torch, name, _Dtype(name, itemsize, typestr))
    torch.Tensor = Tensor  # pyright: ignore[reportAttributeAccessIssue]
    torch.Size = Size  # pyright: ignore[reportAttributeAccessIssue]
    torch.empty = empty  # pyright: ignore[reportAttributeAccessIssue]
    torch.cuda = types.SimpleNamespace(Stream=Stream, current_stream=current_stream)  # pyright: ignore[reportAttributeAccessIssue]
    torch._C = types.SimpleNamespace(  # pyright: ignore[reportAttributeAccessIssue]
        _cuda_getCurrentRawStream=lambda device: current_stream(device).cuda_stream
    )
    return torch


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def jit_without_compiler(monkeypatch: Any, cache: Path) -> Any:
    """For a test of fkl.jit's host path: its own cache folder, a fake torch in sys.modules (returned), and jit
    instances 'loaded' from a stand-in cubin without a compiler (install the fake driver around the test)."""
    from fklir.jit import user_kernel

    monkeypatch.setenv("FKLIR_CACHE_DIR", str(cache))
    torch = make_fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)

    monkeypatch.setattr(user_kernel.instances, "load", load_stand_in)
    return torch


def load_stand_in(source: Any, instance: Any, device: int | None, link_flags: Any = ()) -> Any:
    """jit instances' `load` without a compiler: the instance 'loaded' from a stand-in cubin."""
    from fklir.runtime import cuda_driver

    return cuda_driver.load_kernel(b"stand-in cubin", instance.call, device or 0)
