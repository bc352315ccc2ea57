"""A jit kernel's tensor arguments: pointer, shape, strides in elements, dtype and device of any array a
caller passes (numpy and torch on the CPU; torch, CuPy, DeviceBuffer and other CUDA arrays on the GPU),
and the `fkl::TensorView` (fkl/tensor_view.h) a kernel receives for each.

Unlike a pipeline's input, a tensor here may be any strided view: the kernel's TensorMatcher decides
whether it must be contiguous. The reader is chosen once per array type, so describing a torch tensor costs
its own accessors only.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fklir import dtypes
from fklir.runtime.device_buffer import DeviceBuffer

MAX_DIMS = 8  # fkl::kMaxTensorDims

ACCEPTED = "a numpy array, a torch tensor, a CuPy array, a DeviceBuffer or a CUDA array (__cuda_array_interface__)"


class TensorView(ctypes.Structure):
    """fkl::TensorView, field for field."""

    _fields_ = (
        ("data", ctypes.c_void_p),
        ("ndim", ctypes.c_int),
        ("shape", ctypes.c_int64 * MAX_DIMS),
        ("strides", ctypes.c_int64 * MAX_DIMS),
    )


@dataclass(frozen=True, slots=True)
class Tensor:
    """One tensor argument of a call."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # in elements
    dtype: str  # a fklir.dtypes name
    device: int | None  # the CUDA device ordinal; None: host memory
    framework: str  # 'numpy' | 'torch' | 'cupy' | 'fklir' | 'cai' | 'dlpack': how its stream is found
    stream: int | None = None  # the stream the array advertises (a DeviceBuffer's, CAI v3), when known
    owner: object = None  # what keeps the memory alive, where the caller's object does not (DLPack)

    @property
    def signature(self) -> tuple[object, ...]:
        """What matching depends on: equal signatures match alike."""
        return (self.dtype, self.shape, self.strides, self.device)

    def view(self) -> TensorView:
        view = TensorView(self.ptr, len(self.shape))
        view.shape[: len(self.shape)] = self.shape
        view.strides[: len(self.strides)] = self.strides
        return view


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides, in elements, of a C-contiguous array of `shape`."""
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


_Reader = Callable[[Any, str], Tensor]
_readers: dict[type, _Reader] = {}
# (pointer, key) of an array from its own accessors, where equal keys (of one array type) describe alike: a
# repeated call's signature (call_plan.py). None: describe it in full (a freed DeviceBuffer, to raise).
_KeyReader = Callable[[Any], "tuple[int, object] | None"]
_key_readers: dict[type, _KeyReader] = {}


def describe(x: object, what: str) -> Tensor:
    """The Tensor of argument `what`; TypeError naming it for anything that is not an array we know, or an
    element type fklir has not, or a rank over MAX_DIMS."""
    reader = _readers.get(type(x))
    if reader is None:
        reader = _readers[type(x)] = _choose_reader(x, what)
        if (key_reader := _KEY_READERS.get(reader)) is not None:
            _key_readers[type(x)] = key_reader
    tensor = reader(x, what)
    if len(tensor.shape) > MAX_DIMS:
        raise TypeError(f"{what}: a tensor of {len(tensor.shape)} dims; an fkl::TensorView holds at most {MAX_DIMS}")
    return tensor


def read_key(x: object) -> tuple[int, object] | None:
    """(pointer, key) of `x` (see _KeyReader) when its type has been described before and has a key reader,
    else None. Everything describe() gives depends on the key, but the pointer, which is read alone."""
    key_reader = _key_readers.get(type(x))
    return None if key_reader is None else key_reader(x)


def _choose_reader(x: object, what: str) -> _Reader:
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return _torch
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(x, cupy.ndarray):
        return _cupy
    if isinstance(x, np.ndarray):
        return _numpy
    if isinstance(x, DeviceBuffer):
        return _device_buffer
    if hasattr(x, "__cuda_array_interface__") or hasattr(x, "__dlpack__"):
        return _other_gpu_array
    raise TypeError(f"{what}: expected a tensor ({ACCEPTED}), got {type(x).__qualname__}")


def _record(dtype: np.dtype[Any], what: str) -> dtypes.DType:
    record = dtypes.from_numpy(dtype)
    if record is None:
        raise TypeError(f"{what}: unsupported element type {dtype}; supported: {', '.join(dtypes.NAMES)}")
    return record


def _element_strides(byte_strides: Sequence[int], itemsize: int, what: str) -> tuple[int, ...]:
    if any(stride % itemsize for stride in byte_strides):
        raise ValueError(f"{what}: strides {tuple(byte_strides)} in bytes are not whole elements of {itemsize} bytes")
    return tuple(stride // itemsize for stride in byte_strides)


def _numpy(x: Any, what: str) -> Tensor:
    record = _record(x.dtype, what)
    strides = _element_strides(x.strides, record.size, what)
    return Tensor(int(x.ctypes.data), tuple(x.shape), strides, record.name, None, "numpy")


def _torch(x: Any, what: str) -> Tensor:
    name = str(x.dtype).removeprefix("torch.")
    if name not in dtypes.BY_NAME:
        raise TypeError(f"{what}: unsupported element type {x.dtype}; supported: {', '.join(dtypes.NAMES)}")
    device = x.get_device() if x.is_cuda else None
    return Tensor(x.data_ptr(), tuple(x.shape), tuple(x.stride()), name, device, "torch")


def _cupy(x: Any, what: str) -> Tensor:
    record = _record(x.dtype, what)
    strides = _element_strides(x.strides, record.size, what)
    return Tensor(int(x.data.ptr), tuple(x.shape), strides, record.name, int(x.data.device_id), "cupy")


def _device_buffer(x: DeviceBuffer, what: str) -> Tensor:
    if x.ptr == 0 and x.nbytes > 0:
        raise ValueError(f"{what}: the DeviceBuffer was freed")
    return Tensor(x.ptr, x.shape, contiguous_strides(x.shape), x.dtype_name, x.device, "fklir", x.stream)


def _other_gpu_array(x: Any, what: str) -> Tensor:
    """What the pipelines accept besides torch and CuPy (C-contiguous __cuda_array_interface__ or DLPack)."""
    from fklir.runtime.interop import describe_gpu_array

    array = describe_gpu_array(x, what)
    strides = contiguous_strides(array.shape)
    device, framework = array.device, array.framework
    return Tensor(array.ptr, array.shape, strides, array.dtype_name, device, framework, array.stream, array.obj)


def _numpy_key(x: Any) -> tuple[int, object]:
    return int(x.ctypes.data), (x.dtype, x.shape, x.strides)


def _torch_key(x: Any) -> tuple[int, object]:
    return x.data_ptr(), (x.dtype, x.shape, x.stride(), x.get_device())


def _cupy_key(x: Any) -> tuple[int, object]:
    return int(x.data.ptr), (x.dtype, x.shape, x.strides, x.data.device_id)


def _device_buffer_key(x: DeviceBuffer) -> tuple[int, object] | None:
    if x.ptr == 0 and x.nbytes > 0:
        return None
    return x.ptr, (x.dtype_name, x.shape, x.device)


# Arrays of other types (__cuda_array_interface__, DLPack) are described on every call: the owner DLPack gives
# must live through the launch.
_KEY_READERS: dict[_Reader, _KeyReader] = {
    _numpy: _numpy_key,
    _torch: _torch_key,
    _cupy: _cupy_key,
    _device_buffer: _device_buffer_key,
}
