"""DeviceBuffer: an owning, C-contiguous allocation on one GPU, plus the table of supported element types.

Memory comes from cuMemAlloc in the device's primary context (shared with PyTorch and CuPy). Copies to and
from the host are synchronous with respect to ALL work on the device, so `numpy()` after an asynchronous
pipeline call on any stream sees finished results.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

# Element type name → numpy storage dtype. numpy has no bfloat16: it is stored as its 16 raw bits.
ELEMENT_TYPES: dict[str, np.dtype[Any]] = {
    "bool": np.dtype(np.bool_),
    "uint8": np.dtype(np.uint8),
    "int8": np.dtype(np.int8),
    "uint16": np.dtype(np.uint16),
    "int16": np.dtype(np.int16),
    "uint32": np.dtype(np.uint32),
    "int32": np.dtype(np.int32),
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(np.uint16),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
}


def element_type_name(dtype: object, what: str = "dtype") -> str:
    """The fklir element type name for a numpy dtype, a dtype-like or a name ("bfloat16" included).

    Raises TypeError naming `what` and the dtype when it is not one of ELEMENT_TYPES.
    """
    if isinstance(dtype, str) and dtype in ELEMENT_TYPES:
        return dtype
    name: str | None = None
    if dtype is not None:  # np.dtype(None) would silently mean float64
        try:
            name = np.dtype(dtype).name  # type: ignore[call-overload]
        except (TypeError, ValueError):
            name = None
    if name not in ELEMENT_TYPES:
        raise TypeError(f"{what}: unsupported element type {dtype!r}; supported: {', '.join(ELEMENT_TYPES)}")
    return name


def host_view_for(array: np.ndarray[Any, Any], dtype_name: str) -> np.ndarray[Any, Any] | None:
    """`array` reinterpreted as the storage dtype of `dtype_name`, or None if its dtype does not match.

    For bfloat16 both raw uint16 bits and an ml_dtypes bfloat16 array are accepted.
    """
    storage = ELEMENT_TYPES[dtype_name]
    if dtype_name == "bfloat16":
        if array.dtype == np.uint16 or (array.dtype.name == "bfloat16" and array.dtype.itemsize == 2):
            return array.view(np.uint16)
        return None
    return array if array.dtype == storage else None


def normalize_shape(shape: int | Sequence[int], what: str = "shape") -> tuple[int, ...]:
    """A tuple of non-negative ints; ValueError/TypeError naming the bad value otherwise."""
    items = (shape,) if isinstance(shape, int) else tuple(shape)
    for extent in items:
        if isinstance(extent, bool) or not isinstance(extent, (int, np.integer)):
            raise TypeError(f"{what}: extents must be integers, got {shape!r}")
        if extent < 0:
            raise ValueError(f"{what}: extents must be >= 0, got {shape!r}")
    return tuple(int(extent) for extent in items)


class DeviceBuffer:
    """An owning, C-contiguous device allocation: `.ptr`, `.shape`, `.dtype` (numpy), `.dtype_name`."""

    def __init__(self, shape: int | Sequence[int], dtype: object = "float32", device: int = 0) -> None:
        self._owned_ptr = 0  # set first, so that __del__ of a half-built object is harmless
        self.shape: tuple[int, ...] = normalize_shape(shape, "DeviceBuffer shape")
        self.dtype_name: str = element_type_name(dtype, "DeviceBuffer dtype")
        self.dtype: np.dtype[Any] = ELEMENT_TYPES[self.dtype_name]
        self.device: int = device
        self.nbytes: int = math.prod(self.shape) * self.dtype.itemsize
        self.ptr: int = 0
        if self.nbytes == 0:
            return  # cuMemAlloc refuses 0 bytes; an empty buffer has a NULL pointer
        from fklir.backend import cuda_driver

        with cuda_driver.using_device(device):
            driver = cuda_driver._driver()
            allocation = cuda_driver.check(
                driver.cuMemAlloc(self.nbytes),
                f"DeviceBuffer: cuMemAlloc({self.nbytes} bytes, device {device})",
            )
        self.ptr = int(allocation)
        self._owned_ptr = self.ptr

    @classmethod
    def from_host(cls, array: np.ndarray[Any, Any], device: int = 0) -> DeviceBuffer:
        """A new buffer with the array's shape and dtype, holding a copy of it (bfloat16 via ml_dtypes)."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"DeviceBuffer.from_host: expected a numpy array, got {type(array).__name__}")
        buffer = cls(array.shape, element_type_name(array.dtype, "DeviceBuffer.from_host"), device)
        buffer.copy_from_host(array)
        return buffer

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def copy_from_host(self, array: np.ndarray[Any, Any]) -> None:
        """Copy a numpy array of exactly this shape and dtype (C-contiguous) into the buffer."""
        if not isinstance(array, np.ndarray):
            raise TypeError(
                f"DeviceBuffer.copy_from_host: expected a numpy array, got {type(array).__name__}"
            )
        if tuple(array.shape) != self.shape:
            raise ValueError(
                f"DeviceBuffer.copy_from_host: shape {tuple(array.shape)} "
                f"does not match the buffer's {self.shape}"
            )
        view = host_view_for(array, self.dtype_name)
        if view is None:
            raise TypeError(
                f"DeviceBuffer.copy_from_host: dtype {array.dtype} "
                f"does not match the buffer's {self.dtype_name}"
            )
        if not view.flags.c_contiguous:
            raise ValueError(
                f"DeviceBuffer.copy_from_host: array is not C-contiguous (strides {array.strides}); "
                "pass np.ascontiguousarray(array)"
            )
        if self.nbytes == 0:
            return
        from fklir.backend import cuda_driver

        driver = cuda_driver._driver()
        with cuda_driver.using_device(self.device):
            # Order after all queued work (a kernel may still read the old contents), and finish the DMA
            # before returning: a pageable-memory copy may return before it reaches the device.
            cuda_driver.check(driver.cuCtxSynchronize(), "DeviceBuffer.copy_from_host: cuCtxSynchronize")
            cuda_driver.check(
                driver.cuMemcpyHtoD(self.ptr, view.ctypes.data, self.nbytes), "DeviceBuffer: cuMemcpyHtoD"
            )
            cuda_driver.check(driver.cuCtxSynchronize(), "DeviceBuffer.copy_from_host: cuCtxSynchronize")

    def copy_to_host(self) -> np.ndarray[Any, Any]:
        """A new numpy array with the buffer's contents (bfloat16 comes back as its uint16 bits)."""
        result = np.empty(self.shape, dtype=self.dtype)
        if self.nbytes == 0:
            return result
        from fklir.backend import cuda_driver

        driver = cuda_driver._driver()
        with cuda_driver.using_device(self.device):
            # Wait for every stream on the device, so results of asynchronous calls are visible.
            cuda_driver.check(driver.cuCtxSynchronize(), "DeviceBuffer.copy_to_host: cuCtxSynchronize")
            cuda_driver.check(
                driver.cuMemcpyDtoH(result.ctypes.data, self.ptr, self.nbytes), "DeviceBuffer: cuMemcpyDtoH"
            )
        return result

    def numpy(self) -> np.ndarray[Any, Any]:
        """Alias of copy_to_host()."""
        return self.copy_to_host()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        # bfloat16 has no typestr in the protocol: consumers see its uint16 storage.
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": self.dtype.str,
            "strides": None,
            "data": (self.ptr, False),
            "stream": None,
        }

    def __repr__(self) -> str:
        return f"DeviceBuffer(shape={self.shape}, dtype={self.dtype_name!r}, device={self.device})"

    def free(self) -> None:
        """Release the allocation now (idempotent); the buffer must not be used afterwards."""
        pointer, self._owned_ptr = self._owned_ptr, 0
        if pointer == 0:
            return
        self.ptr = 0
        from fklir.backend import cuda_driver

        driver = cuda_driver._driver()
        with cuda_driver.using_device(self.device):
            cuda_driver.check(driver.cuMemFree(pointer), "DeviceBuffer: cuMemFree")

    def __del__(self) -> None:
        if getattr(self, "_owned_ptr", 0) == 0:
            return
        if sys.is_finalizing():
            return  # the process is exiting: the driver frees everything, and may already be torn down
        try:
            self.free()
        except Exception:  # a destructor must not raise (e.g. the context is already gone)
            pass
