"""A jit kernel's tensor arguments: pointer, shape, strides in elements, dtype and device of any array a
caller passes (numpy and torch on the CPU; torch, CuPy, DeviceBuffer and other CUDA arrays on the GPU),
and the `fkl::TensorView` (fkl/tensor_view.h) a kernel receives for each.

Unlike a pipeline's input, a tensor here may be any strided view: the kernel's TensorMatcher decides
whether it must be contiguous. Its library's adapter (runtime/adapters.py) reads it, chosen once per array type,
so describing a torch tensor costs its own accessors only.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fklir.runtime.adapters import adapter_of
from fklir.runtime.adapters import contiguous_strides as contiguous_strides

MAX_DIMS = 8  # fkl::kMaxTensorDims


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


# The array types described before, each with its adapter's key reader (ArrayAdapter.strided_key): read_key's
KEY_READERS: dict[type, Callable[[Any], tuple[int, object] | None]] = {}


def describe(x: object, what: str) -> Tensor:
    """The Tensor of argument `what`; TypeError naming it for anything that is not an array we know, or an
    element type fklir has not, or a rank over MAX_DIMS."""
    adapter = adapter_of(x)
    tensor = Tensor(*adapter.strided(x, what))
    KEY_READERS[type(x)] = adapter.strided_key
    if len(tensor.shape) > MAX_DIMS:
        raise TypeError(f"{what}: a tensor of {len(tensor.shape)} dims; an fkl::TensorView holds at most {MAX_DIMS}")
    return tensor


def read_key(x: object) -> tuple[int, object] | None:
    """(pointer, key) of `x` from its own accessors (ArrayAdapter.strided_key: equal keys describe alike; a
    repeated call's signature, call_plan.py) when its type has been described before, else None. Everything
    describe() gives depends on the key, but the pointer, which is read alone. Arrays whose owner must live
    through the launch (DLPack's) have no key: they are described on every call."""
    reader = KEY_READERS.get(type(x))
    return None if reader is None else reader(x)
