"""DeviceBuffer: a C-contiguous array in GPU memory (owning, or a view of foreign memory), plus the table of
supported element types.

Owned memory comes from cuMemAlloc in the device's primary context (shared with PyTorch and CuPy) and is freed
when its last holder lets go: the DeviceBuffer itself and every DLPack consumer it was exported to. Copies to
and from the host are synchronous with respect to ALL work on the device, so `numpy()` after an asynchronous
pipeline call on any stream sees finished results.

Streams: an owning DeviceBuffer has no pending work of its own (its copies are synchronous; pipeline calls
without a stream synchronize before returning; with a caller's stream, the caller orders its own work), so it
advertises no stream. A view made by from_ptr(stream=s) or from_dlpack says that its data becomes ready on
that stream: `__cuda_array_interface__["stream"]` carries it, and `__dlpack__(stream=c)` makes the
consumer's stream c wait for it (an event recorded on the producer stream, waited on by c; the host never
blocks).
"""

from __future__ import annotations

import math
import operator
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from fklir import dtypes
from fklir.runtime import cuda_driver, dlpack
from fklir.runtime.array_views import host_view_for as host_view_for
from fklir.runtime.array_views import normalize_shape as normalize_shape
from fklir.runtime.dlpack import DLDeviceType
from fklir.runtime.streams import stream_handle

if TYPE_CHECKING:
    from typing_extensions import CapsuleType

# Element type name → numpy storage dtype. numpy has no bfloat16: it is stored as its 16 raw bits.
ELEMENT_TYPES: dict[str, np.dtype[Any]] = {record.name: record.storage for record in dtypes.DTYPES}

# "uint8x3": a pixel of 3 uint8 channels, i.e. a trailing channel dimension of 3.
_VECTOR_TYPE = re.compile(r"(?P<scalar>[a-z]+[0-9]*)x(?P<lanes>[0-9]+)")
_CUDA_DEVICE_TYPES = (DLDeviceType.CUDA, DLDeviceType.CUDA_MANAGED)


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


def has_channel_dim(shape: tuple[int, ...]) -> bool:
    """Whether a shape ends in a channel dimension as fklir reads shapes: (H, W, C) with C in 2..4, or 4-D."""
    return len(shape) >= 4 or (len(shape) == 3 and 2 <= shape[-1] <= 4)


def resolve_element_type(dtype: object, shape: int | Sequence[int], what: str) -> tuple[str, tuple[int, ...]]:
    """(element type name, full shape) for a dtype that may be a vector spelling such as "uint8x3".

    "uint8x3" with shape (H, W) means "uint8" with shape (H, W, 3). Giving both a vector dtype and a
    trailing channel dimension is ambiguous (is it a 4-D array?) and raises TypeError naming both spellings.
    """
    extents = normalize_shape(shape, f"{what} shape")
    match = _VECTOR_TYPE.fullmatch(dtype) if isinstance(dtype, str) else None
    if match is None or match["scalar"] not in ELEMENT_TYPES:
        return element_type_name(dtype, f"{what} dtype"), extents
    scalar, lanes = match["scalar"], int(match["lanes"])
    if not 2 <= lanes <= 4:
        raise TypeError(
            f"{what} dtype: {dtype!r} has {lanes} channel(s); vector pixels have 2 to 4 channels "
            f"(for one channel write {scalar!r})"
        )
    if has_channel_dim(extents):
        grid = extents[:-1]
        raise TypeError(
            f"{what}: dtype {dtype!r} already has {lanes} channels per pixel, and shape {extents} ends in a "
            f"channel dimension; write either dtype={dtype!r} with shape {grid}, "
            f"or dtype={scalar!r} with shape {(*grid, lanes)}"
        )
    return scalar, (*extents, lanes)


def _address(ptr: object, what: str) -> int:
    """An integer device address from an int, a numpy integer or an object with __int__ (CUdeviceptr)."""
    if isinstance(ptr, bool | float):
        raise TypeError(f"{what}: ptr must be an integer address, got {ptr!r}")
    try:
        value = operator.index(ptr)  # pyright: ignore[reportArgumentType]
    except TypeError:
        try:
            value = int(ptr)  # pyright: ignore[reportArgumentType]
        except (TypeError, ValueError):
            raise TypeError(f"{what}: ptr must be an integer address, got {type(ptr).__qualname__}") from None
    if value < 0:
        raise ValueError(f"{what}: ptr must be >= 0, got {value}")
    return value


def _device_ordinal(device: object, what: str) -> int:
    if isinstance(device, bool) or not isinstance(device, int | np.integer):
        raise TypeError(f"{what}: device must be a device ordinal (int), got {device!r}")
    if device < 0:
        raise ValueError(f"{what}: device must be >= 0, got {device}")
    return int(device)


def _advertised_stream(stream: object, what: str) -> int | None:
    """A producer stream as __cuda_array_interface__ v3 spells it: 0 (ambiguous there) becomes 1, the legacy
    default stream that handle 0 means in the driver API."""
    if stream is None:
        return None
    try:
        handle = stream_handle(stream)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{what}: {error}") from None
    return 1 if handle == 0 else handle


def _consumer_stream(stream: object) -> int | None:
    """The stream a DLPack consumer asked for, as a handle; None when it wants no synchronisation (-1).

    DLPack: None means the legacy default stream (1), 2 the per-thread default stream; 0 is disallowed, and
    read as the legacy default stream too, like the driver API does.
    """
    if stream is None:
        return 1
    if type(stream) is int and stream == -1:
        return None
    handle = stream_handle(stream)
    return 1 if handle == 0 else handle


class _Allocation:
    """cuMemAlloc'd bytes on one device; freed by release() or when the last reference goes."""

    __slots__ = ("device", "nbytes", "ptr")

    def __init__(self, nbytes: int, device: int) -> None:
        self.ptr = 0  # set first, so that __del__ of a half-built object is harmless
        self.nbytes = nbytes
        self.device = device
        with cuda_driver.using_device(device):
            allocation = cuda_driver.check(
                cuda_driver._driver().cuMemAlloc(nbytes),
                f"DeviceBuffer: cuMemAlloc({nbytes} bytes, device {device})",
            )
        self.ptr = int(allocation)

    def release(self) -> None:
        pointer, self.ptr = self.ptr, 0
        if pointer == 0:
            return
        with cuda_driver.using_device(self.device):
            cuda_driver.check(cuda_driver._driver().cuMemFree(pointer), "DeviceBuffer: cuMemFree")

    def __del__(self) -> None:
        if self.ptr == 0 or sys.is_finalizing():
            return  # at exit the driver frees everything, and may already be torn down
        try:
            self.release()
        except Exception:  # a destructor must not raise (e.g. the context is already gone)
            pass


class DeviceBuffer:
    """A C-contiguous device array: `.ptr`, `.shape`, `.dtype` (numpy storage), `.dtype_name`, `.device`,
    `.stream` (the producer stream it advertises, or None) and `.readonly`.

    `DeviceBuffer(shape, dtype, device)` allocates; `from_host`, `from_ptr` and `from_dlpack` build one from
    host data, a raw pointer or any DLPack producer. A dtype may be a vector spelling: "uint8x3" with shape
    (H, W) is "uint8" with shape (H, W, 3).
    """

    def __init__(self, shape: int | Sequence[int], dtype: object = "float32", device: int = 0) -> None:
        dtype_name, extents = resolve_element_type(dtype, shape, "DeviceBuffer")
        device = _device_ordinal(device, "DeviceBuffer")
        self._set_fields(extents, dtype_name, device, stream=None, readonly=False)
        if self.nbytes == 0:
            return  # cuMemAlloc refuses 0 bytes; an empty buffer has a NULL pointer
        allocation = _Allocation(self.nbytes, device)
        self.ptr = allocation.ptr
        self._holder = allocation

    def _set_fields(
        self, shape: tuple[int, ...], dtype_name: str, device: int, stream: int | None, readonly: bool
    ) -> None:
        self.shape: tuple[int, ...] = shape
        self.dtype_name: str = dtype_name
        self.dtype: np.dtype[Any] = ELEMENT_TYPES[dtype_name]
        self.device: int = device
        self.nbytes: int = math.prod(shape) * self.dtype.itemsize
        self.ptr: int = 0
        self.stream: int | None = stream
        self.readonly: bool = readonly
        # What keeps the memory alive: our _Allocation, a foreign owner (a view), or None.
        self._holder: object = None

    # ----- construction ------------------------------------------------------------------------------

    @classmethod
    def from_host(cls, array: np.ndarray[Any, Any], device: int = 0) -> DeviceBuffer:
        """A new buffer with the array's shape and dtype, holding a copy of it (bfloat16 via ml_dtypes)."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"DeviceBuffer.from_host: expected a numpy array, got {type(array).__name__}")
        buffer = cls(array.shape, element_type_name(array.dtype, "DeviceBuffer.from_host"), device)
        buffer.copy_from_host(array)
        return buffer

    @classmethod
    def from_ptr(
        cls,
        ptr: object,
        shape: int | Sequence[int],
        dtype: object,
        stream: object = None,
        device: int = 0,
        *,
        owner: object = None,
        readonly: bool = False,
    ) -> DeviceBuffer:
        """Wrap C-contiguous device memory that someone else owns (nothing is copied or freed).

        `stream` is the producer's stream (an int handle or a torch/CuPy/cuda.bindings stream): the data is
        ready once the work queued there has run; 0 is advertised as 1, CAI v3's legacy default stream.
        `owner` is kept referenced for as long as the buffer (and any DLPack export of it) lives.
        The caller vouches that `ptr` is memory of `device` with at least the shape's bytes: a foreign pointer
        cannot be checked. Errors: NULL for a non-empty shape → ValueError; a vector dtype ("uint8x3") with
        a trailing channel dimension → TypeError naming both valid spellings.
        """
        what = "DeviceBuffer.from_ptr"
        address = _address(ptr, what)
        dtype_name, extents = resolve_element_type(dtype, shape, what)
        ordinal = _device_ordinal(device, what)
        if address == 0 and math.prod(extents) > 0:
            raise ValueError(f"{what}: ptr is NULL (0) for shape {extents}; pass the address of device memory")
        buffer = cls.__new__(cls)
        buffer._set_fields(extents, dtype_name, ordinal, _advertised_stream(stream, what), bool(readonly))
        buffer.ptr = address
        buffer._holder = owner
        return buffer

    @classmethod
    def from_dlpack(cls, obj: object, stream: object = None) -> DeviceBuffer:
        """A view of any DLPack producer's CUDA array (torch, CuPy, JAX, Numba, ...), without a copy.

        The producer is asked to make its data ready on `stream` (the stream the view will be used on; None
        means the legacy default stream, -1 no synchronisation at all); the view advertises that stream.
        The producer's tensor stays alive until the view (and anything exported from it) is gone. The array
        must be C-contiguous.
        """
        what = "DeviceBuffer.from_dlpack"
        device_type, _device_id = dlpack.dlpack_device(obj, what)
        if device_type not in _CUDA_DEVICE_TYPES:
            raise TypeError(
                f"{what}: the array lives on {dlpack.device_type_name(device_type)}, not on a CUDA device; "
                "for host data use DeviceBuffer.from_host(numpy.from_dlpack(array))"
            )
        # -1: the caller synchronises itself, so the producer must not and the view advertises no stream.
        advertised = None if type(stream) is int and stream == -1 else _consumer_stream(stream)
        view = dlpack.import_dlpack(obj, stream=-1 if advertised is None else advertised, what=what)
        if view.device_type not in _CUDA_DEVICE_TYPES:
            raise TypeError(f"{what}: the capsule's device is {dlpack.device_type_name(view.device_type)}")
        buffer = cls.__new__(cls)
        buffer._set_fields(view.shape, view.dtype_name, view.device_id, advertised, view.readonly)
        buffer.ptr = view.ptr
        buffer._holder = view.owner
        return buffer

    # ----- properties --------------------------------------------------------------------------------

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def owns_memory(self) -> bool:
        """True for a buffer that allocated its memory (False for from_ptr / from_dlpack views)."""
        return isinstance(self._holder, _Allocation)

    def _require_memory(self, what: str) -> None:
        if self.ptr == 0 and self.nbytes > 0:
            raise ValueError(f"DeviceBuffer.{what}: the buffer was freed")

    # ----- host copies -------------------------------------------------------------------------------

    def copy_from_host(self, array: np.ndarray[Any, Any]) -> None:
        """Copy a numpy array of exactly this shape and dtype (C-contiguous) into the buffer."""
        if not isinstance(array, np.ndarray):
            raise TypeError(f"DeviceBuffer.copy_from_host: expected a numpy array, got {type(array).__name__}")
        if tuple(array.shape) != self.shape:
            raise ValueError(
                f"DeviceBuffer.copy_from_host: shape {tuple(array.shape)} does not match the buffer's {self.shape}"
            )
        view = host_view_for(array, self.dtype_name)
        if view is None:
            raise TypeError(
                f"DeviceBuffer.copy_from_host: dtype {array.dtype} does not match the buffer's {self.dtype_name}"
            )
        if not view.flags.c_contiguous:
            raise ValueError(
                f"DeviceBuffer.copy_from_host: array is not C-contiguous (strides {array.strides}); "
                "pass np.ascontiguousarray(array)"
            )
        if self.readonly:
            raise ValueError("DeviceBuffer.copy_from_host: the buffer is read-only")
        if self.nbytes == 0:
            return
        self._require_memory("copy_from_host")
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
        self._require_memory("copy_to_host")
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

    def copy(self) -> DeviceBuffer:
        """A new owning buffer on this device with the same contents (synchronous, like the host copies)."""
        duplicate = DeviceBuffer(self.shape, self.dtype_name, self.device)
        if self.nbytes == 0:
            return duplicate
        self._require_memory("copy")
        driver = cuda_driver._driver()
        with cuda_driver.using_device(self.device):
            cuda_driver.check(driver.cuCtxSynchronize(), "DeviceBuffer.copy: cuCtxSynchronize")
            cuda_driver.check(
                driver.cuMemcpyDtoD(duplicate.ptr, self.ptr, self.nbytes), "DeviceBuffer.copy: cuMemcpyDtoD"
            )
            cuda_driver.check(driver.cuCtxSynchronize(), "DeviceBuffer.copy: cuCtxSynchronize")
        return duplicate

    # ----- interchange protocols ---------------------------------------------------------------------

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        # bfloat16 has no typestr in the protocol: consumers see its uint16 storage.
        return {
            "version": 3,
            "shape": self.shape,
            "typestr": self.dtype.str,
            "strides": None,
            "data": (self.ptr, self.readonly),
            "stream": self.stream,
        }

    def __dlpack_device__(self) -> tuple[DLDeviceType, int]:
        return (DLDeviceType.CUDA, self.device)

    def __dlpack__(
        self,
        stream: object = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType:
        """Export as a DLPack capsule (versioned when max_version asks for 1.x, else legacy "dltensor").

        The consumer gets its own reference to the memory: the data stays valid while it lives, even after
        this buffer is deleted, and is freed when both are gone (no copy, no double free). `stream` is the
        consumer's stream (None: legacy default; -1: no synchronisation): when this buffer advertises a
        producer stream, the consumer's stream is made to wait for it. `dl_device=(kDLCPU, 0)` exports a host
        copy (refused with copy=False); `copy=True` exports a fresh device copy.
        """
        versioned = max_version is not None and int(max_version[0]) >= 1
        if dl_device is not None:
            target = (int(dl_device[0]), int(dl_device[1]))
            if target[0] == DLDeviceType.CPU:
                return self._export_host_copy(copy, versioned)
            if target != (DLDeviceType.CUDA, self.device):
                raise BufferError(
                    f"DeviceBuffer.__dlpack__: cannot export to {dlpack.device_type_name(target[0])} "
                    f"{target[1]}; the data is on CUDA device {self.device}"
                )
        consumer = _consumer_stream(stream)
        self._make_ready_on(consumer)
        if copy:
            duplicate = self.copy()
            return dlpack.export_capsule(
                duplicate.ptr,
                self.shape,
                self.dtype_name,
                (DLDeviceType.CUDA, self.device),
                duplicate._holder,
                versioned=versioned,
                copied=True,
            )
        self._require_memory("__dlpack__")
        return dlpack.export_capsule(
            self.ptr,
            self.shape,
            self.dtype_name,
            (DLDeviceType.CUDA, self.device),
            self._holder,
            versioned=versioned,
            readonly=self.readonly,
        )

    def _export_host_copy(self, copy: bool | None, versioned: bool) -> CapsuleType:
        if copy is False:
            raise BufferError(
                f"DeviceBuffer.__dlpack__: the data is on CUDA device {self.device}; exporting it to the CPU "
                "needs a copy, and copy=False forbids one"
            )
        host = self.copy_to_host()  # synchronises the device first
        return dlpack.export_capsule(
            host.ctypes.data,
            self.shape,
            self.dtype_name,
            (DLDeviceType.CPU, 0),
            host,
            versioned=versioned,
            copied=True,
        )

    def _make_ready_on(self, consumer: int | None) -> None:
        """Make the consumer's stream wait, on the GPU, for the work queued on this view's producer stream."""
        if consumer is None or self.stream is None or consumer == self.stream:
            return
        cuda_driver.stream_wait(consumer, self.stream, self.device)

    # ----- lifetime ----------------------------------------------------------------------------------

    def free(self) -> None:
        """Drop this buffer's memory now (idempotent); the buffer must not be used afterwards.

        Owned memory is freed at once unless a DLPack consumer still holds it (then it is freed when the
        consumer lets go); a view only forgets its owner.
        """
        holder, self._holder = self._holder, None
        self.ptr = 0
        if isinstance(holder, _Allocation) and not dlpack.is_exported(holder):
            holder.release()

    def __repr__(self) -> str:
        kind = "" if self.owns_memory or self.nbytes == 0 else ", view"
        return f"DeviceBuffer(shape={self.shape}, dtype={self.dtype_name!r}, device={self.device}{kind})"
