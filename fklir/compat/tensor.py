"""fkl-python's `fkl.tensor`: its DeviceBuffer (width, height, dtype, channels, planes; bytes in and out) as a
subclass of fklir's, and the DLPack structure names its scripts import."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fklir.jit.signature import input_signature
from fklir.runtime import device_buffer as native
from fklir.runtime.dlpack import DLDataType as _DLDataType
from fklir.runtime.dlpack import DLDevice as _DLDevice
from fklir.runtime.dlpack import DLManagedTensor as _DLManagedTensor
from fklir.runtime.dlpack import DLTensor as _DLTensor
from fklir.runtime.streams import stream_handle

__all__ = ["DeviceBuffer", "_DLDataType", "_DLDevice", "_DLManagedTensor", "_DLTensor", "stream_handle"]


def fkl_shape(width: int, height: int, channels: int, planes: int) -> tuple[int, ...]:
    """fkl-python's array shape of a buffer: (planes, height, width, channels), leaving out a plane count
    of 1, a height of 1 when there is one plane (a 1-D row) and a channel count of 1."""
    leading = (planes, height) if planes > 1 else (height,) if height > 1 else ()
    return (*leading, width, *((channels,) if channels > 1 else ()))


class DeviceBuffer(native.DeviceBuffer):
    """fkl-python's DeviceBuffer(width, height=1, dtype="float32", channels=1, planes=1, device=0): device
    memory of `planes` images of `height` rows of `width` pixels, filled from and read back as bytes.

    It is an fklir DeviceBuffer (shape, __cuda_array_interface__, DLPack, numpy()), so every pipeline takes
    it; a pipeline given one returns one.
    """

    def __init__(
        self,
        width: int,
        height: int = 1,
        dtype: object = "float32",
        channels: int = 1,
        planes: int = 1,
        device: int = 0,
    ) -> None:
        super().__init__(fkl_shape(int(width), int(height), int(channels), int(planes)), dtype, device)
        self._dims = (int(width), int(height), int(channels), int(planes))

    @classmethod
    def adopt(cls, buffer: native.DeviceBuffer, dims: tuple[int, int, int, int] | None = None) -> DeviceBuffer:
        """`buffer` itself (no copy) as an fkl-python DeviceBuffer; `dims` (width, height, channels, planes)
        reshapes it to fkl-python's shape for them, else they are read from its shape as fklir reads an input."""
        if dims is not None:
            shape = fkl_shape(*dims)
            if math.prod(shape) != buffer.size:
                raise ValueError(f"DeviceBuffer: {dims} does not describe a buffer of shape {buffer.shape}")
            buffer.shape = shape
        else:
            dims = _dims_of(buffer.shape, buffer.dtype_name)
        buffer.__class__ = cls
        assert isinstance(buffer, cls)
        buffer._dims = dims
        return buffer

    @property
    def width(self) -> int:
        return self._dims[0]

    @property
    def height(self) -> int:
        return self._dims[1]

    @property
    def channels(self) -> int:
        return self._dims[2]

    @property
    def planes(self) -> int:
        return self._dims[3]

    def copy_from_host(self, array: Any) -> None:
        """Copy bytes-like data (bytes, bytearray, memoryview, array.array; a numpy array as in fklir) into the
        start of the buffer; data shorter than the buffer leaves the rest as it was, as in fkl-python."""
        if isinstance(array, np.ndarray):
            super().copy_from_host(array)
            return
        data = memoryview(array).cast("B")
        if data.nbytes > self.nbytes:
            raise ValueError(f"DeviceBuffer.copy_from_host: {data.nbytes} bytes do not fit in {self.nbytes}")
        if data.nbytes < self.nbytes:
            whole = super().copy_to_host().reshape(-1).view(np.uint8)
            whole[: data.nbytes] = np.frombuffer(data, dtype=np.uint8)
            super().copy_from_host(whole.view(self.dtype).reshape(self.shape))
            return
        super().copy_from_host(np.frombuffer(data, dtype=self.dtype).reshape(self.shape))

    def copy_to_host(self) -> bytes:  # pyright: ignore[reportIncompatibleMethodOverride]
        """The buffer's contents as bytes (fkl-python's return type; numpy() gives an array)."""
        return super().copy_to_host().tobytes()

    def numpy(self) -> np.ndarray[Any, Any]:
        return super().copy_to_host()


def _dims_of(shape: tuple[int, ...], dtype_name: str) -> tuple[int, int, int, int]:
    """(width, height, channels, planes) of a pipeline's output, read as fklir reads an input of that shape;
    a shape no read takes (a planar (B, C, H, W) output) is planes of single-channel rows, as fkl-python
    counts a planar output's channel planes."""
    try:
        sig, width, height = input_signature(shape, dtype_name)
    except ValueError:
        return shape[-1], shape[-2] if len(shape) > 1 else 1, 1, math.prod(shape[:-2])
    return width, height, sig.channels, sig.planes
