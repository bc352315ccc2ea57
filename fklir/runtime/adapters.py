"""One adapter per array library: how fklir reads a torch tensor, a CuPy array, a DeviceBuffer, a numpy array,
an object with __cuda_array_interface__ or one that offers only DLPack, finds its producer's stream and makes an
output like it. `adapter_of(x)` picks the adapter once per array type (torch and CuPy are never imported here:
an object can only be a torch tensor if torch is already in sys.modules, which keeps `import fklir` light).

Each adapter answers four questions, each in its library's own accessors:
- `gpu_array(x, what, stream)`: a pipeline's GPU input, C-contiguous (interop.GpuArray), or the error that
  names the argument and the problem;
- `warm(x)`: the (key, pointer) of an array a kernel can use as it is, None to describe it in full;
- `strided(x, what)` and `strided_key(x)`: any strided view, for a jit kernel's TensorMatcher (jit/tensors);
- `producer_stream(device, advertised)` and `empty(shape, dtype_name, device, like)`: where its producer queues
  work, and a new array of the library (a DeviceBuffer where it has none).
"""

import importlib
import math
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

import numpy as np

from fklir import dtypes
from fklir.runtime import cuda_driver

if TYPE_CHECKING:
    from fklir.runtime.device_buffer import DeviceBuffer

ACCEPTED_GPU_ARRAYS = (
    "a CUDA torch.Tensor, a CuPy array, an fklir DeviceBuffer, or an object with __cuda_array_interface__ "
    "or __dlpack__ (JAX, Numba, ...)"
)
ACCEPTED_TENSORS = (
    "a numpy array, a torch tensor, a CuPy array, a DeviceBuffer or a CUDA array (__cuda_array_interface__)"
)

WarmKey = tuple[object, ...]


# Named tuples, not dataclasses: @dataclass builds its methods from source text at import, which a fresh
# process's first call would pay for; and no `from __future__ import annotations`, under which a named tuple
# compiles each of its annotations into a ForwardRef when the class is made.
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


class Strided(NamedTuple):
    """Any strided view of an array: what a jit kernel's tensor argument is read as (jit/tensors.Tensor)."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: str  # a fklir.dtypes name
    device: int | None  # the CUDA device ordinal; None: host memory
    framework: str  # 'numpy' | 'torch' | 'cupy' | 'fklir' | 'cai' | 'dlpack'
    stream: int | None = None  # the stream the array advertises (a DeviceBuffer's, CAI v3), when known
    owner: object = None  # what keeps the memory alive, where the caller's object does not (DLPack)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides, in elements, of a C-contiguous array of `shape`."""
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


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


def numpy_dtype_name(dtype: np.dtype[Any], what: str) -> str:
    return _record(dtype, what).name


def _record(dtype: np.dtype[Any], what: str) -> dtypes.DType:
    record = dtypes.from_numpy(dtype)
    if record is None:
        raise TypeError(f"{what}: unsupported element type {dtype}; supported: {', '.join(dtypes.NAMES)}")
    return record


def _element_strides(byte_strides: Sequence[int], itemsize: int, what: str) -> tuple[int, ...]:
    if any(stride % itemsize for stride in byte_strides):
        raise ValueError(f"{what}: strides {tuple(byte_strides)} in bytes are not whole elements of {itemsize} bytes")
    return tuple(stride // itemsize for stride in byte_strides)


class ArrayAdapter:
    """The default answers: an array a pipeline cannot take, no warm key, a DeviceBuffer for outputs."""

    framework: ClassVar[str] = ""

    def gpu_array(self, x: Any, what: str, stream: int | None) -> GpuArray:
        raise TypeError(f"{what}: expected {ACCEPTED_GPU_ARRAYS}, got {type(x).__module__}.{type(x).__qualname__}")

    def warm(self, x: Any) -> tuple[WarmKey, int] | None:
        return None

    def strided(self, x: Any, what: str) -> Strided:
        raise TypeError(f"{what}: expected a tensor ({ACCEPTED_TENSORS}), got {type(x).__qualname__}")

    def strided_key(self, x: Any) -> tuple[int, object] | None:
        """(pointer, key) from the array's own accessors, equal keys describing alike; None: describe it in full
        (on every call for arrays whose owner must live through the launch, DLPack's)."""
        return None

    def producer_stream(self, device: int, advertised: int | None) -> int | None:
        return int(advertised) if advertised else None

    def empty(self, shape: tuple[int, ...], dtype_name: str, device: int, like: object) -> tuple[object, int]:
        from fklir.runtime.device_buffer import DeviceBuffer

        buffer = DeviceBuffer(shape, dtype_name, device)
        return buffer, buffer.ptr

    def output_maker(
        self, like: object, shape: tuple[int, ...], dtype_name: str, device: int
    ) -> Callable[[Any], tuple[object, int]]:
        """`make(like) -> (array, pointer)`: one new output per call, the library's objects resolved once."""
        return lambda like: self.empty(shape, dtype_name, device, like)


class TorchArrays(ArrayAdapter):
    framework = "torch"
    _dtype_names: ClassVar[dict[object, str]] = {}

    def _dtype_name(self, dtype: object, what: str) -> str:
        name = self._dtype_names.get(dtype)
        if name is not None:
            return name
        candidate = str(dtype).removeprefix("torch.")
        if candidate not in dtypes.BY_NAME:
            raise TypeError(f"{what}: unsupported element type {dtype}; supported: {', '.join(dtypes.NAMES)}")
        self._dtype_names[dtype] = candidate
        return candidate

    def gpu_array(self, x: Any, what: str, stream: int | None) -> GpuArray:
        if not x.is_cuda:
            raise TypeError(
                f"{what}: got a torch tensor on {x.device}; the GPU target needs a CUDA tensor "
                "(tensor.cuda()), or use target='cpu' with a numpy array"
            )
        dtype_name = self._dtype_name(x.dtype, what)
        if not x.is_contiguous():
            raise ValueError(
                f"{what}: torch tensor of shape {tuple(x.shape)} is not C-contiguous "
                f"(strides {tuple(x.stride())} in elements); pass tensor.contiguous()"
            )
        return GpuArray(x.data_ptr(), tuple(x.shape), dtype_name, x.get_device(), None, "torch", x)

    def warm(self, x: Any) -> tuple[WarmKey, int] | None:
        if not x.is_cuda or not x.is_contiguous():
            return None
        return (type(x), x.dtype, x.shape, x.get_device()), x.data_ptr()

    def warm_list(self, xs: Sequence[Any]) -> tuple[WarmKey, list[int]] | None:
        """warm_list_key of torch tensors: the first tensor's warm key, then each other tensor compared with it
        field by field, each accessor read once per tensor (the first's CUDA device stands for is_cuda: a CPU
        tensor's get_device() is -1)."""
        first = xs[0]
        seen = self.warm(first)
        if seen is None:
            return None
        key, pointer = seen
        kind, dtype, shape, device = key
        others = xs[1:]
        for x in others:
            if (
                type(x) is not kind
                or x.dtype is not dtype
                or x.shape != shape
                or x.get_device() != device
                or not x.is_contiguous()
            ):
                return None
        return (len(xs), key), [pointer, *map(type(first).data_ptr, others)]

    def strided(self, x: Any, what: str) -> Strided:
        name = str(x.dtype).removeprefix("torch.")
        if name not in dtypes.BY_NAME:
            raise TypeError(f"{what}: unsupported element type {x.dtype}; supported: {', '.join(dtypes.NAMES)}")
        device = x.get_device() if x.is_cuda else None
        return Strided(x.data_ptr(), tuple(x.shape), tuple(x.stride()), name, device, "torch")

    def strided_key(self, x: Any) -> tuple[int, object] | None:
        return x.data_ptr(), (x.dtype, x.shape, x.stride(), x.get_device())

    def producer_stream(self, device: int, advertised: int | None) -> int | None:
        """torch's current stream on `device` as a raw handle. torch._C._cuda_getCurrentRawStream (what
        torch.compile's generated code calls) skips building a torch.cuda.Stream object, the bulk of the cost."""
        torch = sys.modules["torch"]
        raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        if raw is not None:
            return int(raw(device))
        return int(torch.cuda.current_stream(device).cuda_stream)

    def empty(self, shape: tuple[int, ...], dtype_name: str, device: int, like: object) -> tuple[object, int]:
        torch = importlib.import_module("torch")
        tensor = torch.empty(shape, dtype=getattr(torch, dtype_name), device=f"cuda:{device}")
        return tensor, int(tensor.data_ptr())

    def output_maker(
        self, like: object, shape: tuple[int, ...], dtype_name: str, device: int
    ) -> Callable[[Any], tuple[object, int]]:
        """For a plain torch.Tensor input `like.new_empty(shape, dtype=...)`: no device string to parse."""
        torch = sys.modules["torch"]
        if type(like) is not torch.Tensor:
            return super().output_maker(like, shape, dtype_name, device)
        dtype = getattr(torch, dtype_name)

        def make_torch(like: Any) -> tuple[object, int]:
            tensor = like.new_empty(shape, dtype=dtype)
            return tensor, tensor.data_ptr()

        return make_torch


class CupyArrays(ArrayAdapter):
    framework = "cupy"

    def gpu_array(self, x: Any, what: str, stream: int | None) -> GpuArray:
        dtype_name = numpy_dtype_name(x.dtype, what)
        if not x.flags.c_contiguous:
            raise ValueError(
                f"{what}: CuPy array of shape {x.shape} is not C-contiguous (strides {x.strides} in bytes); "
                "pass cupy.ascontiguousarray(array)"
            )
        return GpuArray(int(x.data.ptr), tuple(x.shape), dtype_name, int(x.data.device_id), None, "cupy", x)

    def warm(self, x: Any) -> tuple[WarmKey, int] | None:
        if not x.flags.c_contiguous:
            return None
        memory = x.data
        return (type(x), x.dtype, x.shape, memory.device_id), memory.ptr

    def strided(self, x: Any, what: str) -> Strided:
        record = _record(x.dtype, what)
        strides = _element_strides(x.strides, record.size, what)
        return Strided(int(x.data.ptr), tuple(x.shape), strides, record.name, int(x.data.device_id), "cupy")

    def strided_key(self, x: Any) -> tuple[int, object] | None:
        return int(x.data.ptr), (x.dtype, x.shape, x.strides, x.data.device_id)

    def producer_stream(self, device: int, advertised: int | None) -> int | None:
        cupy = importlib.import_module("cupy")
        return int(cupy.cuda.get_current_stream().ptr)

    def empty(self, shape: tuple[int, ...], dtype_name: str, device: int, like: object) -> tuple[object, int]:
        if dtype_name == "bfloat16":  # CuPy has no bfloat16: such outputs come back as a DeviceBuffer
            return super().empty(shape, dtype_name, device, like)
        cupy = importlib.import_module("cupy")
        with cupy.cuda.Device(device):
            array = cupy.empty(shape, dtype=dtypes.BY_NAME[dtype_name].storage)
        return array, int(array.data.ptr)


class DeviceBufferArrays(ArrayAdapter):
    framework = "fklir"

    def gpu_array(self, x: "DeviceBuffer", what: str, stream: int | None) -> GpuArray:
        if x.ptr == 0 and x.nbytes > 0:
            raise ValueError(f"{what}: the DeviceBuffer was freed")
        return GpuArray(x.ptr, x.shape, x.dtype_name, x.device, x.stream, "fklir", x, x.readonly)

    def warm(self, x: "DeviceBuffer") -> tuple[WarmKey, int] | None:
        ptr = x.ptr
        if ptr == 0 and x.nbytes > 0:
            return None  # freed: gpu_array says so
        return (type(x), x.dtype_name, x.shape, x.device, x.readonly), ptr

    def strided(self, x: "DeviceBuffer", what: str) -> Strided:
        if x.ptr == 0 and x.nbytes > 0:
            raise ValueError(f"{what}: the DeviceBuffer was freed")
        return Strided(x.ptr, x.shape, contiguous_strides(x.shape), x.dtype_name, x.device, "fklir", x.stream)

    def strided_key(self, x: "DeviceBuffer") -> tuple[int, object] | None:
        if x.ptr == 0 and x.nbytes > 0:
            return None
        return x.ptr, (x.dtype_name, x.shape, x.device)


class NumpyArrays(ArrayAdapter):
    """Host memory: a jit kernel's CPU tensor; a pipeline's GPU input it is not."""

    framework = "numpy"

    def gpu_array(self, x: Any, what: str, stream: int | None) -> GpuArray:
        raise TypeError(
            f"{what}: got a numpy array, which lives in host memory; the GPU target takes "
            f"{ACCEPTED_GPU_ARRAYS} (use DeviceBuffer.from_host(array), or target='cpu' for numpy)"
        )

    def strided(self, x: Any, what: str) -> Strided:
        record = _record(x.dtype, what)
        strides = _element_strides(x.strides, record.size, what)
        return Strided(int(x.ctypes.data), tuple(x.shape), strides, record.name, None, "numpy")

    def strided_key(self, x: Any) -> tuple[int, object] | None:
        return int(x.ctypes.data), (x.dtype, x.shape, x.strides)


class CudaArrayInterfaceArrays(ArrayAdapter):
    """Anything with __cuda_array_interface__ (Numba, JAX's older arrays, ...): C-contiguous only."""

    framework = "cai"

    def gpu_array(self, x: Any, what: str, stream: int | None) -> GpuArray:
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
        dtype_name = numpy_dtype_name(dtype, what)
        strides = interface.get("strides")
        if strides is not None and not is_c_contiguous(shape, tuple(strides), dtype.itemsize):
            raise ValueError(f"{what}: array of shape {shape} is not C-contiguous (strides {tuple(strides)} in bytes)")
        ptr = int(ptr or 0)
        if ptr == 0 and math.prod(shape) > 0:
            raise ValueError(f"{what}: __cuda_array_interface__ has a NULL data pointer for shape {shape}")
        device = _device_of_pointer(ptr, what) if ptr else 0
        advertised = interface.get("stream")
        stream_of = None if advertised is None else int(advertised)
        return GpuArray(ptr, shape, dtype_name, device, stream_of, "cai", x, bool(readonly))

    def strided(self, x: Any, what: str) -> Strided:
        return _strided_of(self.gpu_array(x, what, None))


class DlpackArrays(ArrayAdapter):
    """An object that offers only DLPack (JAX, ...): one capsule consumed per description; its owner is kept."""

    framework = "dlpack"

    def gpu_array(self, x: Any, what: str, stream: int | None) -> GpuArray:
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
            view.ptr, view.shape, view.dtype_name, view.device_id, consumer, "dlpack", view.owner, view.readonly
        )

    def strided(self, x: Any, what: str) -> Strided:
        return _strided_of(self.gpu_array(x, what, None))


def _strided_of(array: GpuArray) -> Strided:
    strides = contiguous_strides(array.shape)
    return Strided(
        array.ptr, array.shape, strides, array.dtype_name, array.device, array.framework, array.stream, array.obj
    )


def _device_of_pointer(ptr: int, what: str) -> int:
    try:
        return cuda_driver.pointer_device(ptr)
    except cuda_driver.CudaError as error:
        raise TypeError(f"{what}: pointer {ptr:#x} is not device memory ({error})") from error


NOT_AN_ARRAY = ArrayAdapter()
TORCH, CUPY, DEVICE_BUFFER, NUMPY = TorchArrays(), CupyArrays(), DeviceBufferArrays(), NumpyArrays()
CUDA_ARRAY_INTERFACE, DLPACK = CudaArrayInterfaceArrays(), DlpackArrays()
BY_FRAMEWORK: dict[str, ArrayAdapter] = {
    a.framework: a for a in (TORCH, CUPY, DEVICE_BUFFER, NUMPY, CUDA_ARRAY_INTERFACE, DLPACK)
}
_adapters: dict[type, ArrayAdapter] = {}


def adapter_of(x: object) -> ArrayAdapter:
    """The adapter of `x`'s array library, chosen once per type (NOT_AN_ARRAY for anything else)."""
    adapter = _adapters.get(type(x))
    if adapter is None:
        adapter = _adapters[type(x)] = _choose(x)
    return adapter


def _choose(x: object) -> ArrayAdapter:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return TORCH
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return CUPY
    if _is_device_buffer(x):
        return DEVICE_BUFFER
    if hasattr(x, "__cuda_array_interface__"):
        return CUDA_ARRAY_INTERFACE
    if isinstance(x, np.ndarray):
        return NUMPY
    if hasattr(x, "__dlpack__"):
        return DLPACK
    return NOT_AN_ARRAY


def _is_device_buffer(x: object) -> bool:
    """A DeviceBuffer exists only once its module is imported: asked like torch and CuPy, so that the CPU
    target's calls never import it (nor DLPack's ctypes structures)."""
    module = sys.modules.get("fklir.runtime.device_buffer")
    return module is not None and isinstance(x, module.DeviceBuffer)
