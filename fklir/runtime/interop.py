"""Recognise the caller's arrays and streams (PyTorch, CuPy, DeviceBuffer, __cuda_array_interface__, DLPack,
numpy).

describe_gpu_array() turns an input into a GpuArray (pointer, shape, element type, device, stream) or raises
an error that names the argument and the problem. torch and CuPy are never imported here: an object can only
be a torch tensor if torch is already in sys.modules, which keeps `import fklir` light. The per-type handler
is cached, so the hot path for a torch tensor is one dict lookup plus the tensor's own accessors.

The warm path of a pipeline call does not even build a GpuArray: warm_key() gives a hashable key (type,
element type, shape, device, ...) and the pointer of an array that is usable as it is, so that a call on
an input seen before is one dict hit (see GpuExecutor._call_warm); anything unusual falls back to
describe_gpu_array, which also says what is wrong.
"""

import importlib
import math
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from fklir import dtypes
from fklir.errors import ReadOnlyOutputError
from fklir.runtime import cuda_driver
from fklir.runtime.array_views import host_view_for, normalize_shape

if TYPE_CHECKING:
    from fklir.runtime.device_buffer import DeviceBuffer

ACCEPTED_GPU_ARRAYS = (
    "a CUDA torch.Tensor, a CuPy array, an fklir DeviceBuffer, or an object with __cuda_array_interface__ "
    "or __dlpack__ (JAX, Numba, ...)"
)


# Named tuples, not dataclasses: @dataclass builds its methods from source text at import, which a fresh
# process's first call would pay for.
class GpuArray(NamedTuple):
    """What a kernel launch needs to know about one device array."""

    ptr: int
    shape: tuple[int, ...]
    dtype_name: str  # a fklir.dtypes name: 'uint8', 'float32', 'bfloat16', ...
    device: int
    stream: int | None  # the producer's stream (CAI v3, or the one DLPack data was made ready on), when known
    framework: str  # 'torch' | 'cupy' | 'fklir' | 'cai' | 'dlpack'
    obj: object  # keeps the memory alive (for DLPack: the consumed tensor, which holds the producer's)
    readonly: bool = False


class HostArray(NamedTuple):
    """What a CPU-target call needs to know about one numpy array."""

    ptr: int
    shape: tuple[int, ...]
    dtype_name: str
    writeable: bool
    obj: object


# ----- GPU arrays ------------------------------------------------------------------------------------

_Describer = Callable[[Any, str, int | None], GpuArray]
_describers: dict[type, _Describer] = {}
_torch_dtype_names: dict[object, str] = {}


def describe_gpu_array(x: object, what: str, stream: int | None = None) -> GpuArray:
    """Describe a C-contiguous GPU array; `what` names the argument in error messages.

    `stream` is the raw handle of the stream the array will be used on, when the caller knows it: an object
    that offers only DLPack is asked to make its data ready there (otherwise on the legacy default stream,
    which the GpuArray's `stream` then names). The other kinds of array ignore it.
    Non-contiguous → ValueError (with the strides); unsupported element type → TypeError (naming it);
    anything that is not a GPU array → TypeError saying what is accepted.
    """
    describer = _describers.get(type(x))
    if describer is None:
        describer = _choose_describer(x, what)
        _describers[type(x)] = describer
    return describer(x, what, stream)


def _choose_describer(x: object, what: str) -> _Describer:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _describe_torch
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return _describe_cupy
    if _is_device_buffer(x):
        return _describe_device_buffer
    if hasattr(x, "__cuda_array_interface__"):
        return _describe_cai
    if isinstance(x, np.ndarray):
        raise TypeError(
            f"{what}: got a numpy array, which lives in host memory; the GPU target takes "
            f"{ACCEPTED_GPU_ARRAYS} (use DeviceBuffer.from_host(array), or target='cpu' for numpy)"
        )
    if hasattr(x, "__dlpack__"):
        return _describe_dlpack
    raise TypeError(f"{what}: expected {ACCEPTED_GPU_ARRAYS}, got {type(x).__module__}.{type(x).__qualname__}")


def _is_device_buffer(x: object) -> bool:
    """A DeviceBuffer exists only once its module is imported: asked like torch and CuPy, so that the CPU
    target's calls never import it (nor DLPack's ctypes structures)."""
    module = sys.modules.get("fklir.runtime.device_buffer")
    return module is not None and isinstance(x, module.DeviceBuffer)


def _torch_dtype_name(dtype: object, what: str) -> str:
    name = _torch_dtype_names.get(dtype)
    if name is not None:
        return name
    candidate = str(dtype).removeprefix("torch.")
    if candidate not in dtypes.BY_NAME:
        raise TypeError(f"{what}: unsupported element type {dtype}; supported: {', '.join(dtypes.NAMES)}")
    _torch_dtype_names[dtype] = candidate
    return candidate


def _describe_torch(x: Any, what: str, stream: int | None = None) -> GpuArray:
    if not x.is_cuda:
        raise TypeError(
            f"{what}: got a torch tensor on {x.device}; the GPU target needs a CUDA tensor "
            "(tensor.cuda()), or use target='cpu' with a numpy array"
        )
    dtype_name = _torch_dtype_name(x.dtype, what)
    if not x.is_contiguous():
        raise ValueError(
            f"{what}: torch tensor of shape {tuple(x.shape)} is not C-contiguous "
            f"(strides {tuple(x.stride())} in elements); pass tensor.contiguous()"
        )
    return GpuArray(
        ptr=x.data_ptr(),
        shape=tuple(x.shape),
        dtype_name=dtype_name,
        device=x.get_device(),
        stream=None,
        framework="torch",
        obj=x,
    )


def _describe_cupy(x: Any, what: str, stream: int | None = None) -> GpuArray:
    dtype_name = _numpy_dtype_name(x.dtype, what)
    if not x.flags.c_contiguous:
        raise ValueError(
            f"{what}: CuPy array of shape {x.shape} is not C-contiguous (strides {x.strides} in bytes); "
            "pass cupy.ascontiguousarray(array)"
        )
    return GpuArray(
        ptr=int(x.data.ptr),
        shape=tuple(x.shape),
        dtype_name=dtype_name,
        device=int(x.data.device_id),
        stream=None,
        framework="cupy",
        obj=x,
    )


def _describe_device_buffer(x: "DeviceBuffer", what: str, stream: int | None = None) -> GpuArray:
    if x.ptr == 0 and x.nbytes > 0:
        raise ValueError(f"{what}: the DeviceBuffer was freed")
    return GpuArray(
        ptr=x.ptr,
        shape=x.shape,
        dtype_name=x.dtype_name,
        device=x.device,
        stream=x.stream,
        framework="fklir",
        obj=x,
        readonly=x.readonly,
    )


def _describe_dlpack(x: Any, what: str, stream: int | None = None) -> GpuArray:
    """An object that offers only DLPack (JAX, Numba, ...): consume one capsule; the GpuArray keeps it."""
    from fklir.runtime import dlpack

    device_type, _device_id = dlpack.dlpack_device(x, what)
    if device_type not in (dlpack.DLDeviceType.CUDA, dlpack.DLDeviceType.CUDA_MANAGED):
        raise TypeError(
            f"{what}: the array lives on {dlpack.device_type_name(device_type)}, not on a CUDA device; "
            "move it to the GPU first (or use target='cpu' with numpy.from_dlpack(array))"
        )
    consumer = 1 if stream is None or stream == 0 else stream
    view = dlpack.import_dlpack(x, stream=consumer, what=what)
    return GpuArray(
        ptr=view.ptr,
        shape=view.shape,
        dtype_name=view.dtype_name,
        device=view.device_id,
        stream=consumer,
        framework="dlpack",
        obj=view.owner,
        readonly=view.readonly,
    )


def _describe_cai(x: Any, what: str, stream: int | None = None) -> GpuArray:
    try:
        interface = x.__cuda_array_interface__
        shape = tuple(int(extent) for extent in interface["shape"])
        typestr = interface["typestr"]
        ptr, readonly = interface["data"]
    except (KeyError, TypeError, ValueError) as error:
        raise TypeError(f"{what}: malformed __cuda_array_interface__ ({error!r})") from error
    if interface.get("mask") is not None:
        raise ValueError(f"{what}: masked arrays (__cuda_array_interface__ 'mask') are not supported")
    try:
        dtype = np.dtype(typestr)
    except TypeError as error:
        raise TypeError(f"{what}: unsupported element type {typestr!r}") from error
    if dtype.byteorder == ">":
        raise TypeError(f"{what}: big-endian element type {typestr!r} is not supported")
    dtype_name = _numpy_dtype_name(dtype, what)
    strides = interface.get("strides")
    if strides is not None and not is_c_contiguous(shape, tuple(strides), dtype.itemsize):
        raise ValueError(f"{what}: array of shape {shape} is not C-contiguous (strides {tuple(strides)} in bytes)")
    ptr = int(ptr or 0)
    if ptr == 0 and math.prod(shape) > 0:
        raise ValueError(f"{what}: __cuda_array_interface__ has a NULL data pointer for shape {shape}")
    device = _device_of_pointer(ptr, what) if ptr else 0
    stream = interface.get("stream")
    return GpuArray(
        ptr=ptr,
        shape=shape,
        dtype_name=dtype_name,
        device=device,
        stream=None if stream is None else int(stream),
        framework="cai",
        obj=x,
        readonly=bool(readonly),
    )


def _device_of_pointer(ptr: int, what: str) -> int:
    try:
        return cuda_driver.pointer_device(ptr)
    except cuda_driver.CudaError as error:
        raise TypeError(f"{what}: pointer {ptr:#x} is not device memory ({error})") from error


def _numpy_dtype_name(dtype: np.dtype[Any], what: str) -> str:
    record = dtypes.from_numpy(dtype)
    if record is None:
        raise TypeError(f"{what}: unsupported element type {dtype}; supported: {', '.join(dtypes.NAMES)}")
    return record.name


def is_c_contiguous(shape: Sequence[int], strides: Sequence[int], itemsize: int) -> bool:
    """C-contiguity as numpy defines it: extents of 1 may have any stride; empty arrays always qualify."""
    if len(shape) != len(strides):
        return False
    if any(extent == 0 for extent in shape):
        return True
    expected = itemsize
    for extent, stride in zip(reversed(shape), reversed(strides), strict=True):
        if extent != 1 and stride != expected:
            return False
        expected *= extent
    return True


# ----- the warm path: a key and a pointer per call ---------------------------------------------------

WarmKey = tuple[object, ...]
_WarmReader = Callable[[Any], "tuple[WarmKey, int] | None"]
_warm_readers: dict[type, _WarmReader | None] = {}


def warm_key(x: object) -> tuple[WarmKey, int] | None:
    """(key, device pointer) of a torch tensor, CuPy array or DeviceBuffer that a kernel can use as it is
    (on a CUDA device, C-contiguous, not freed); None for anything else, which then goes through
    describe_gpu_array.

    Arrays with equal keys describe alike (describe_gpu_array gives the same element type, shape, device,
    framework and read-only flag), so a check made once on a full description holds for every array with
    the same key. A key costs the array's own accessors (no __cuda_array_interface__ dict).
    """
    try:
        reader = _warm_readers[type(x)]
    except KeyError:
        reader = _warm_readers[type(x)] = _choose_warm_reader(x)
    return None if reader is None else reader(x)


def warm_list_key(xs: Sequence[object]) -> tuple[WarmKey, list[int]] | None:
    """(key, device pointers) of a list of arrays of one kind that all have the same warm key; None
    when the list is empty or any array has none or differs, which sends the list through describe_gpu_array.

    The key stands for the list's full description as warm_key's does for one array (equal element keys
    and the length), so a list seen before keeps every check made on it then. A list of torch tensors is
    compared with its first tensor field by field and each pointer is read once; other kinds go through
    their reader per array."""
    if not xs:
        return None
    first = xs[0]
    kind = type(first)
    try:
        reader = _warm_readers[kind]
    except KeyError:
        reader = _warm_readers[kind] = _choose_warm_reader(first)
    if reader is None:
        return None
    if reader is _torch_warm:
        return _torch_list_warm(xs, first)
    seen = reader(first)
    if seen is None:
        return None
    key, pointer = seen
    pointers = [pointer]
    for x in xs[1:]:
        if type(x) is not kind or (seen := reader(x)) is None or seen[0] != key:
            return None
        pointers.append(seen[1])
    return (len(pointers), key), pointers


def _torch_list_warm(xs: Sequence[Any], first: Any) -> tuple[WarmKey, list[int]] | None:
    """warm_list_key of torch tensors: the first tensor's warm key, then each other tensor compared with it
    field by field, each accessor read once per tensor."""
    seen = _torch_warm(first)
    if seen is None:
        return None
    key, pointer = seen
    kind, dtype, shape, device = key
    others = xs[1:]
    for x in others:
        if (
            type(x) is not kind
            or not x.is_cuda
            or x.dtype is not dtype
            or x.shape != shape
            or x.get_device() != device
            or not x.is_contiguous()
        ):
            return None
    return (len(xs), key), [pointer, *map(type(first).data_ptr, others)]


def _choose_warm_reader(x: object) -> _WarmReader | None:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _torch_warm
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return _cupy_warm
    if _is_device_buffer(x):
        return _device_buffer_warm
    return None


def _torch_warm(x: Any) -> tuple[WarmKey, int] | None:
    if not x.is_cuda or not x.is_contiguous():
        return None
    return (type(x), x.dtype, x.shape, x.get_device()), x.data_ptr()


def _cupy_warm(x: Any) -> tuple[WarmKey, int] | None:
    if not x.flags.c_contiguous:
        return None
    memory = x.data
    return (type(x), x.dtype, x.shape, memory.device_id), memory.ptr


def _device_buffer_warm(x: "DeviceBuffer") -> tuple[WarmKey, int] | None:
    ptr = x.ptr
    if ptr == 0 and x.nbytes > 0:
        return None  # freed: describe_gpu_array says so
    return (type(x), x.dtype_name, x.shape, x.device, x.readonly), ptr


def producer_stream(framework: str, device: int, advertised: int | None) -> int | None:
    """The raw handle of the stream on which an array's producer queues its work, or None when unknown:
    torch's and CuPy's current stream, else the stream the array advertises (CAI v3, DeviceBuffer)."""
    if framework == "torch":
        return _torch_current_stream(device)
    if framework == "cupy":
        cupy = importlib.import_module("cupy")
        return int(cupy.cuda.get_current_stream().ptr)
    return int(advertised) if advertised else None


def _torch_current_stream(device: int) -> int:
    """torch's current stream on `device` as a raw handle. torch._C._cuda_getCurrentRawStream (what
    torch.compile's generated code calls) skips building a torch.cuda.Stream object, the bulk of the cost."""
    torch = sys.modules["torch"]
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return int(raw(device))
    return int(torch.cuda.current_stream(device).cuda_stream)


def output_maker(framework: str, like: object, shape: tuple[int, ...], dtype_name: str, device: int) -> Any:
    """A callable `make(like) -> (array, pointer)` that allocates one output per call, in `like`'s framework
    (see empty_like_framework), with the framework's objects resolved once. For a plain torch.Tensor
    input it is `like.new_empty(shape, dtype=...)`: no device string to parse."""
    if framework == "torch":
        torch = sys.modules["torch"]
        dtype = getattr(torch, dtype_name)
        if type(like) is torch.Tensor:

            def make_torch(like: Any) -> tuple[object, int]:
                tensor = like.new_empty(shape, dtype=dtype)
                return tensor, tensor.data_ptr()

            return make_torch

    def make(like: Any) -> tuple[object, int]:
        return empty_like_framework(framework, shape, dtype_name, device, like)

    return make


# ----- outputs ---------------------------------------------------------------------------------------


def empty_like_framework(
    framework: str, shape: Sequence[int], dtype_name: str, device: int, like: object
) -> tuple[object, int]:
    """A new C-contiguous array in the input's framework on `device`, and its device pointer.

    torch → torch.empty on cuda:<device>; cupy → cupy.empty on that device (CuPy has no bfloat16: such
    outputs come back as a DeviceBuffer); anything else → DeviceBuffer. `like` is the input array; it is
    accepted so that callers need not know which frameworks use it.
    """
    shape = normalize_shape(shape, "output shape")
    record = dtypes.BY_NAME.get(dtype_name)
    if record is None:
        raise TypeError(f"output: unsupported element type {dtype_name!r}; supported: {', '.join(dtypes.NAMES)}")
    if framework == "torch":
        torch = importlib.import_module("torch")
        tensor = torch.empty(shape, dtype=getattr(torch, dtype_name), device=f"cuda:{device}")
        return tensor, int(tensor.data_ptr())
    if framework == "cupy" and dtype_name != "bfloat16":
        cupy = importlib.import_module("cupy")
        with cupy.cuda.Device(device):
            array = cupy.empty(shape, dtype=record.storage)
        return array, int(array.data.ptr)
    from fklir.runtime.device_buffer import DeviceBuffer

    buffer = DeviceBuffer(shape, dtype_name, device)
    return buffer, buffer.ptr


# ----- host arrays (CPU target) ----------------------------------------------------------------------


def describe_host_array(x: object, what: str) -> HostArray:
    """Describe a C-contiguous numpy array for the CPU target; errors name `what` like describe_gpu_array."""
    if not isinstance(x, np.ndarray):
        hint = ""
        if hasattr(x, "__cuda_array_interface__") or type(x).__module__.startswith(("torch", "cupy")):
            hint = " (for GPU arrays use target='gpu'; for a CPU torch tensor pass tensor.numpy())"
        raise TypeError(f"{what}: the CPU target takes a numpy array, got {type(x).__qualname__}{hint}")
    dtype_name = _numpy_dtype_name(x.dtype, what)
    if not x.flags.c_contiguous:
        raise ValueError(
            f"{what}: numpy array of shape {x.shape} is not C-contiguous (strides {x.strides} in bytes); "
            "pass np.ascontiguousarray(array)"
        )
    view = host_view_for(x, dtype_name)
    assert view is not None  # _numpy_dtype_name accepted the dtype
    return HostArray(
        ptr=int(view.ctypes.data),
        shape=tuple(x.shape),
        dtype_name=dtype_name,
        writeable=bool(x.flags.writeable),
        obj=x,
    )


# ----- outputs -------------------------------------------------------------------------------------------


def require_writable(array: GpuArray | HostArray, what: str) -> None:
    """ReadOnlyOutputError, naming `what`, when the array described cannot be written (checked before shape
    and dtype: a read-only array of the right shape is the mistake a shape message would hide)."""
    readonly = array.readonly if isinstance(array, GpuArray) else not array.writeable
    if not readonly:
        return
    raise ReadOnlyOutputError(
        f"{what}: the {array.dtype_name} array of shape {array.shape} is read-only; pass a writable output "
        "(a read-only view, e.g. from np.broadcast_to or a read-only DLPack export, cannot be written)"
    )
