"""A thin wrapper over the CUDA driver API (cuda.bindings.driver), for loading cubins and launching them.

cuda.bindings is imported lazily, inside functions, so that `import fklir` works on machines without the
package or without an NVIDIA driver. Everything here works in the device's PRIMARY context, the one that
PyTorch and CuPy use, so their pointers and streams are valid for our launches and ours for theirs.
"""

import contextlib
import functools
import importlib
import threading
from collections.abc import Iterator
from types import ModuleType
from typing import Any, NamedTuple

from fklir.errors import FklirError, NoDriverError

_state_lock = threading.Lock()
_primary_contexts: dict[int, Any] = {}  # device ordinal → retained primary CUcontext
_primary_context_handles: dict[int, int] = {}  # device ordinal → int(CUcontext), for cheap comparison
_internal_streams: dict[int, Any] = {}  # device ordinal → CUstream created once (kept alive here)


class CudaError(FklirError, RuntimeError):
    """A CUDA driver call failed; `code` is the CUresult value and `name` its symbolic name."""

    def __init__(self, message: str, code: int = 0, name: str = "") -> None:
        super().__init__(message)
        self.code = code
        self.name = name


@functools.cache
def _driver() -> ModuleType:
    """The cuda.bindings.driver module, imported on first use (ImportError when it is not installed)."""
    return importlib.import_module("cuda.bindings.driver")


def preload() -> None:
    """Import cuda.bindings.driver (a slow import) now rather than in the first call that needs it. Never raises:
    when the import fails, the first real use of the driver fails the same way and says why (a failed
    import is not cached). Touches no device."""
    try:
        _driver()
    except Exception:  # an optimisation only: the error belongs to the call that needs the driver
        pass


def _error_name(code: int) -> str:
    try:
        return str(_driver().CUresult(code).name)
    except (ImportError, ValueError):
        return f"CUresult {code}"


def _error_text(code: int) -> str:
    """The driver's description of an error, when the driver can give one."""
    try:
        status, text = _driver().cuGetErrorString(code)
    except Exception:  # the driver itself may be unusable; the name alone is still informative
        return ""
    if int(status) != 0 or not text:
        return ""
    return text.decode(errors="replace") if isinstance(text, bytes) else str(text)


def check(result_tuple: Any, what: str = "CUDA driver call") -> Any:
    """Unpack a cuda.bindings result: raise CudaError unless it is CUDA_SUCCESS, else return the value(s).

    (err,) → None; (err, value) → value; (err, a, b, ...) → (a, b, ...).
    """
    code = int(result_tuple[0])
    if code != 0:
        name = _error_name(code)
        text = _error_text(code)
        detail = f": {text}" if text else ""
        raise CudaError(f"{what} failed with {name}{detail}", code=code, name=name)
    values = tuple(result_tuple[1:])
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return values


@functools.cache
def _initialise() -> None:
    """cuInit once per process; every use of the driver passes through here first, so this is where a
    missing driver becomes NoDriverError (CudaError when the driver loads but cannot initialise)."""
    try:
        result = _driver().cuInit(0)
    except (ImportError, OSError, RuntimeError) as error:
        # No cuda-bindings, or no libcuda to load: cuda-pathfinder's DynamicLibNotFoundError (a RuntimeError)
        # or older bindings' dlopen RuntimeError. A driver that loads answers with a status, not an exception.
        raise NoDriverError(f"{type(error).__name__}: {error}") from error
    check(result, "cuInit")


@functools.cache
def gpu_available() -> bool:
    """True only if the driver initialises and reports at least one device; never raises."""
    try:
        return device_count() > 0
    except Exception:  # no package, no libcuda, no device, broken driver: all mean "no GPU here"
        return False


def device_count() -> int:
    """Number of CUDA devices (raises when the driver cannot be initialised)."""
    _initialise()
    return int(check(_driver().cuDeviceGetCount(), "cuDeviceGetCount"))


def _primary_context(device: int) -> Any:
    """The device's retained primary context (retained once per process, never released)."""
    context = _primary_contexts.get(device)
    if context is not None:
        return context
    with _state_lock:
        context = _primary_contexts.get(device)
        if context is not None:
            return context
        count = device_count()
        if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device < count:
            raise ValueError(f"CUDA device {device!r} does not exist (this machine has {count} device(s))")
        driver = _driver()
        handle = check(driver.cuDeviceGet(device), f"cuDeviceGet({device})")
        context = check(driver.cuDevicePrimaryCtxRetain(handle), f"cuDevicePrimaryCtxRetain({device})")
        _primary_context_handles[device] = int(context)
        _primary_contexts[device] = context
        return context


def ensure_context(device: int) -> None:
    """Make the device's primary context current on this thread (one cheap query when it already is)."""
    context = _primary_context(device)
    driver = _driver()
    current = check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if int(current) != _primary_context_handles[device]:
        check(driver.cuCtxSetCurrent(context), f"cuCtxSetCurrent(device {device})")


def primary_context_handle(device: int) -> int:
    """int(CUcontext) of the device's primary context (retained once per process)."""
    _primary_context(device)
    return _primary_context_handles[device]


@contextlib.contextmanager
def using_device(device: int) -> Iterator[None]:
    """Run a block in the device's primary context, then give the thread its previous current context
    back (none, another device's: what PyTorch and CuPy call their current device, or another library's).
    """
    context = _primary_context(device)
    driver = _driver()
    current = int(check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent"))
    if current == _primary_context_handles[device]:
        yield
        return
    check(driver.cuCtxPushCurrent(context), f"cuCtxPushCurrent(device {device})")
    try:
        yield
    finally:
        check(driver.cuCtxPopCurrent(), "cuCtxPopCurrent")


def _device_attribute(device: int, name: str) -> int:
    """cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_<name>) of device `device`."""
    driver = _driver()
    handle = check(driver.cuDeviceGet(device), f"cuDeviceGet({device})")
    attribute = getattr(driver.CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
    return int(check(driver.cuDeviceGetAttribute(attribute, handle), f"cuDeviceGetAttribute({name})"))


@functools.cache
def device_arch(device: int) -> str:
    """The device's architecture for nvcc's -arch, e.g. "sm_90" for compute capability 9.0."""
    _primary_context(device)  # validates the ordinal with a clear message
    major = _device_attribute(device, "COMPUTE_CAPABILITY_MAJOR")
    minor = _device_attribute(device, "COMPUTE_CAPABILITY_MINOR")
    return f"sm_{major}{minor}"


@functools.cache
def resident_threads(device: int) -> int:
    """How many threads the device holds at once (SMs x threads per SM): an output with at most this
    many pixels is one wave of a one-pixel-per-thread grid."""
    return _device_attribute(device, "MULTIPROCESSOR_COUNT") * _device_attribute(
        device, "MAX_THREADS_PER_MULTIPROCESSOR"
    )


MAX_LAUNCH_CONFIGS = 64  # programmatic_launcher: streams remembered per launch plan


@functools.cache
def supports_programmatic_launch(device: int) -> bool:
    """Whether the device runs programmatic dependent launches (compute capability 9.0 or newer)."""
    return _device_attribute(device, "COMPUTE_CAPABILITY_MAJOR") >= 9


def programmatic_launcher(function: Any, grid: tuple[int, int, int], block: tuple[int, int, int]) -> Any:
    """cuLaunchKernelEx of `function` with programmatic stream serialization: the kernel's blocks may start
    while the previous kernel of the stream finishes, and wait for it (`fkl::wait_for_previous_kernel`)
    before they touch global memory. Returns launch(stream, kernel_params, extra) -> (CUresult,), like
    cuLaunchKernel with everything else bound. One config per stream, never changed once made, so that
    threads launching on different streams cannot see each other's (a few streams are usual; a caller
    that makes a new stream per call starts the table afresh every MAX_LAUNCH_CONFIGS of them)."""
    driver = _driver()
    overlap = driver.CUlaunchAttribute()
    overlap.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
    overlap.value.programmaticStreamSerializationAllowed = 1
    launch_ex = driver.cuLaunchKernelEx
    configs: dict[int, Any] = {}

    def config_for(stream: int) -> Any:
        config = driver.CUlaunchConfig()
        config.gridDimX, config.gridDimY, config.gridDimZ = grid
        config.blockDimX, config.blockDimY, config.blockDimZ = block
        config.sharedMemBytes = 0
        config.hStream = stream
        config.attrs = [overlap]
        config.numAttrs = 1
        if len(configs) >= MAX_LAUNCH_CONFIGS:
            configs.clear()
        configs[stream] = config
        return config

    def launch(stream: int, kernel_params: int, extra: int) -> Any:
        config = configs.get(stream)
        if config is None:
            config = config_for(stream)
        return launch_ex(config, function, kernel_params, extra)

    return launch


class LoadedKernel(NamedTuple):
    """One kernel of a cubin loaded into one device's primary context, with its optional second entry.

    The module stays loaded for the life of the process (unloading while work is queued is unsafe).
    """

    module: Any  # CUmodule
    function: Any  # CUfunction
    name: str
    device: int
    narrow: Any = None  # CUfunction of the one-pixel-per-thread entry of a sampled kernel, if the cubin has one


def load_kernel(cubin: bytes, name: str, device: int, narrow_name: str | None = None) -> LoadedKernel:
    """Load a cubin into the device's primary context and look up the (extern "C") kernel `name`, and
    `narrow_name` where the cubin has it (sampled kernels do, flat ones do not)."""
    driver = _driver()
    with using_device(device):
        module = check(driver.cuModuleLoadData(cubin), f"cuModuleLoadData (kernel {name!r}, device {device})")
        try:
            function = check(driver.cuModuleGetFunction(module, name.encode()), f"cuModuleGetFunction({name!r})")
        except CudaError:
            driver.cuModuleUnload(module)
            raise
        narrow = None
        if narrow_name is not None and _exports(driver, module, narrow_name):
            narrow = check(
                driver.cuModuleGetFunction(module, narrow_name.encode()), f"cuModuleGetFunction({narrow_name!r})"
            )
    return LoadedKernel(module=module, function=function, name=name, device=device, narrow=narrow)


def _exports(driver: Any, module: Any, name: str) -> bool:
    """Whether `module` has the kernel `name`, found by listing its functions rather than by a lookup that
    may fail: compute-sanitizer reports every failed driver call as an error, which would bury real ones."""
    if not hasattr(driver, "cuModuleEnumerateFunctions"):  # a driver binding older than CUDA 12.4
        result, _ = driver.cuModuleGetFunction(module, name.encode())
        return int(result) == 0
    count = check(driver.cuModuleGetFunctionCount(module), "cuModuleGetFunctionCount")
    functions = check(driver.cuModuleEnumerateFunctions(count, module), "cuModuleEnumerateFunctions")
    wanted = name.encode()
    for function in functions:
        found = check(driver.cuFuncGetName(function), "cuFuncGetName")
        if (found.encode() if isinstance(found, str) else bytes(found)) == wanted:
            return True
    return False


def launch(
    kernel: LoadedKernel,
    grid: tuple[int, int, int],
    block: tuple[int, int, int],
    params_address: int,
    stream: int,
) -> None:
    """cuLaunchKernel with a prebuilt parameter array.

    params_address is the address of a `void*[1]` whose element points to the ONE packed struct that the
    kernel takes by value. The caller runs it in the kernel's device context (using_device or
    ensure_context); this function adds nothing to the launch beyond the driver call and its error check.
    """
    (result,) = _driver().cuLaunchKernel(
        kernel.function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0, stream, params_address, 0
    )
    if result:
        check((result,), f"cuLaunchKernel({kernel.name!r}, grid={grid}, block={block})")


def internal_stream(device: int) -> int:
    """fklir's own non-blocking stream on the device, created once per process."""
    stream = _internal_streams.get(device)
    if stream is not None:
        return int(stream)
    with _state_lock:
        stream = _internal_streams.get(device)
        if stream is None:
            driver = _driver()
            with using_device(device):
                flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
                stream = check(driver.cuStreamCreate(flags), f"cuStreamCreate(device {device})")
            _internal_streams[device] = stream
    return int(stream)


def synchronize(stream: int) -> None:
    """Wait until all work queued on the stream has finished (raises the error of a failed kernel)."""
    check(_driver().cuStreamSynchronize(stream), "cuStreamSynchronize")


def stream_wait(waiting: int, producer: int, device: int) -> None:
    """Make stream `waiting` wait, on the GPU, for the work queued on stream `producer` so far.

    An event is recorded on `producer` and waited on by `waiting`; the host never blocks. Handles 1 and 2 are
    the driver's legacy and per-thread default streams. Destroying the event right away is allowed: the wait
    keeps what it needs.
    """
    driver = _driver()
    with using_device(device):
        flags = int(driver.CUevent_flags.CU_EVENT_DISABLE_TIMING)
        event = check(driver.cuEventCreate(flags), f"cuEventCreate(device {device})")
        try:
            check(driver.cuEventRecord(event, producer), f"cuEventRecord(stream {producer:#x})")
            check(driver.cuStreamWaitEvent(waiting, event, 0), f"cuStreamWaitEvent(stream {waiting:#x})")
        finally:
            driver.cuEventDestroy(event)


def pointer_device(ptr: int) -> int:
    """The ordinal of the device that owns a device pointer (CudaError when it is not device memory).

    Through cuda-bindings 13 on the 2-GPU H200 machine, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL answered 0 for
    memory of device 1, so the device comes from the allocation's context instead (a primary context we
    know, else cuCtxGetDevice inside it); the ordinal attribute is the fallback for context-less memory.
    """
    _initialise()
    driver = _driver()
    attributes = driver.CUpointer_attribute
    what = f"cuPointerGetAttribute({ptr:#x})"
    context = check(driver.cuPointerGetAttribute(attributes.CU_POINTER_ATTRIBUTE_CONTEXT, ptr), what)
    handle = int(context)
    if handle == 0:
        return int(check(driver.cuPointerGetAttribute(attributes.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr), what))
    for device, known in _primary_context_handles.items():
        if known == handle:
            return device
    check(driver.cuCtxPushCurrent(context), "cuCtxPushCurrent")
    try:
        return int(check(driver.cuCtxGetDevice(), "cuCtxGetDevice"))
    finally:
        driver.cuCtxPopCurrent()
