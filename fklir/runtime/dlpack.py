"""DLPack in ctypes: export memory in a capsule that gives its consumer a reference; import any producer.

The structs follow dlpack.h (v1.x): the legacy `DLManagedTensor` travels in a capsule named "dltensor", the
versioned `DLManagedTensorVersioned` (which adds a version and flags such as read-only) in one named
"dltensor_versioned". A consumer renames the capsule to "used_..." and calls the struct's deleter when it no
longer needs the memory.

Export: `export_capsule` keeps the struct, its shape/stride arrays and one reference to `owner` in a
module-level table until the deleter runs, so the memory lives exactly as long as the consumer wants it,
however long the exporting Python object lives. A capsule that nobody consumed is released once nobody holds
it (see collect_abandoned for why that is not done by a capsule destructor).

Import: `import_dlpack` asks the producer for a capsule, validates it (version, device, element type,
C-contiguity) before consuming it, and returns a view whose `owner` calls the producer's deleter when it is
garbage collected. Nothing here touches the CUDA driver, so all of it can be tested on a CPU.
"""

from __future__ import annotations

import atexit
import ctypes
import enum
import gc
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fklir import dtypes
from fklir.dtypes import DLDataTypeCode

if TYPE_CHECKING:
    from _ctypes import CFuncPtr

    from typing_extensions import CapsuleType

# ----- the C structs ---------------------------------------------------------------------------------


class DLDeviceType(enum.IntEnum):
    """The device types of dlpack.h that fklir meets (values are fixed by the standard)."""

    CPU = 1
    CUDA = 2
    CUDA_HOST = 3
    ROCM = 10
    CUDA_MANAGED = 13


class DLDevice(ctypes.Structure):
    _fields_ = (("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32))


class DLDataType(ctypes.Structure):
    _fields_ = (("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16))


class DLTensor(ctypes.Structure):
    _fields_ = (
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),  # in elements; NULL means C-contiguous
        ("byte_offset", ctypes.c_uint64),
    )


class DLManagedTensor(ctypes.Structure):
    """The legacy capsule's struct; its fields are set after the class, since the deleter's type points to it."""


# The deleters are typed as dlpack.h declares them (a function pointer has the size of any other pointer), so
# that Python code can call one as C does: fkl-python's scripts write `mt.deleter(ctypes.pointer(mt))`. Such a
# field takes only an instance of its own type, and an instance made without an address is NULL.
DLManagedTensorDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = (
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DLManagedTensorDeleter),
)


class DLPackVersion(ctypes.Structure):
    _fields_ = (("major", ctypes.c_uint32), ("minor", ctypes.c_uint32))


class DLManagedTensorVersioned(ctypes.Structure):
    """The versioned capsule's struct; its fields are set after the class, as the legacy struct's are."""


DLManagedTensorVersionedDeleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensorVersioned))
DLManagedTensorVersioned._fields_ = (
    ("version", DLPackVersion),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DLManagedTensorVersionedDeleter),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", DLTensor),
)


# The ABI of every 1.x release is the one above; we produce 1.0 and accept any 1.x.
DLPACK_VERSION = (1, 0)
FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1

LEGACY_NAME = b"dltensor"
VERSIONED_NAME = b"dltensor_versioned"
# PyCapsule_SetName keeps the pointer, not a copy: these module constants live as long as the process.
USED_LEGACY_NAME = b"used_dltensor"
USED_VERSIONED_NAME = b"used_dltensor_versioned"


# ----- the Python C API, through private prototypes (never by changing ctypes.pythonapi's shared ones) -----

_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi)
)
_capsule_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_IsValid", ctypes.pythonapi)
)
_capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
_capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi)
)
_incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", ctypes.pythonapi))
_DELETER_TYPE = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


# ----- export ----------------------------------------------------------------------------------------
# Why our capsules have NO destructor: a ctypes callback cannot run while a Python exception is pending (the
# callback machinery turns it into a SystemError and loses the original), and consumers free a capsule that
# they refused (wrong device, say) exactly then. Instead every export record holds its capsule until the
# consumer renames it ("used_..."); a capsule that nobody holds any more and nobody consumed is abandoned,
# and collect_abandoned() (run after every garbage collection, where no exception can be pending, and on
# each new export) releases its export.


@dataclass
class _Export:
    """Everything one exported capsule needs kept alive until its deleter runs (or it is abandoned)."""

    managed: DLManagedTensor | DLManagedTensorVersioned
    shape: ctypes.Array[ctypes.c_int64]
    strides: ctypes.Array[ctypes.c_int64]
    owner: object
    capsule: object = None  # until consumed
    name: bytes = b""


# Struct address → its export record. Removing an entry drops the references to the owner.
_live_exports: dict[int, _Export] = {}


def live_export_count() -> int:
    """How many exported tensors are still held by consumers (or by capsules nobody consumed yet)."""
    return len(_live_exports)


@_DELETER_TYPE
def _export_deleter(address: int | None) -> None:
    """The struct's deleter, called by the consumer (from any thread: ctypes takes the GIL)."""
    try:
        if address is not None and address in _live_exports:
            del _live_exports[address]
    except Exception:  # never let an exception cross into the consumer's C code (or module teardown)
        pass


# The one callback serves both structs: it reads its argument as an address, whichever struct it points to.
_LEGACY_EXPORT_DELETER = ctypes.cast(_export_deleter, DLManagedTensorDeleter)
_VERSIONED_EXPORT_DELETER = ctypes.cast(_export_deleter, DLManagedTensorVersionedDeleter)


def _function_address(function: CFuncPtr) -> int:
    """The address in a function-pointer field (0 for NULL).

    Kept as a number, not as the field's value: that value is a view into the producer's struct, which the
    deleter frees.
    """
    return int(ctypes.cast(function, ctypes.c_void_p).value or 0)


def _references_when_only_a_record_holds(value: object) -> int:
    """sys.getrefcount of an object that only an _Export's `capsule` field holds, measured the same way."""
    probe = _Export(DLManagedTensor(), (ctypes.c_int64 * 1)(), (ctypes.c_int64 * 1)(), None, value)
    del value
    return sys.getrefcount(probe.capsule)


_ABANDONED_REFERENCES = _references_when_only_a_record_holds(object())


def collect_abandoned() -> int:
    """Release the exports whose capsule nobody consumed and nobody holds; returns how many were released.

    A consumed capsule is forgotten here (its consumer calls the deleter when done with the memory).
    """
    released = 0
    for address, record in list(_live_exports.items()):
        if record.capsule is None:
            continue
        if not _capsule_is_valid(record.capsule, record.name):
            record.capsule = None  # consumed: renamed by the consumer
            continue
        if sys.getrefcount(record.capsule) <= _ABANDONED_REFERENCES:
            _live_exports.pop(address, None)
            released += 1
    return released


def _collect_after_gc(phase: str, info: dict[str, int]) -> None:
    if phase == "stop" and _live_exports:
        collect_abandoned()


gc.callbacks.append(_collect_after_gc)


def _disarm_at_exit() -> None:
    """Consumers that outlive the interpreter (torch frees its tensors during teardown) must not call back
    into Python then: that crashes. NULL deleters are allowed by DLPack and checked by consumers, and the
    structs are leaked on purpose, since consumers still read them while they tear down."""
    records = list(_live_exports.values())
    for record in records:
        record.managed.deleter = type(record.managed.deleter)()  # NULL (a typed field refuses None)
    _incref(records)


atexit.register(_disarm_at_exit)


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major strides in elements."""
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= max(int(extent), 1)
    return tuple(reversed(strides))


def export_capsule(
    ptr: int,
    shape: Sequence[int],
    dtype_name: str,
    device: tuple[int, int],
    owner: object,
    *,
    versioned: bool,
    readonly: bool = False,
    copied: bool = False,
) -> CapsuleType:
    """A DLPack capsule over C-contiguous memory at `ptr`, keeping `owner` alive until the consumer is done.

    A legacy capsule cannot say "read-only", so exporting read-only memory that way raises BufferError.
    """
    record = dtypes.BY_NAME.get(dtype_name)
    if record is None:
        raise BufferError(f"__dlpack__: element type {dtype_name!r} has no DLPack code")
    if readonly and not versioned:
        raise BufferError(
            "__dlpack__: the memory is read-only and a legacy (unversioned) DLPack capsule cannot say so; "
            "call with max_version=(1, 0)"
        )
    extents = tuple(int(extent) for extent in shape)
    shape_array = (ctypes.c_int64 * max(len(extents), 1))(*extents)
    strides_array = (ctypes.c_int64 * max(len(extents), 1))(*contiguous_strides(extents))
    managed: DLManagedTensor | DLManagedTensorVersioned
    if versioned:
        managed = DLManagedTensorVersioned()
        managed.version.major, managed.version.minor = DLPACK_VERSION
        managed.flags = (FLAG_READ_ONLY if readonly else 0) | (FLAG_IS_COPIED if copied else 0)
    else:
        managed = DLManagedTensor()
    tensor = managed.dl_tensor
    tensor.data = ptr or None
    tensor.device.device_type, tensor.device.device_id = int(device[0]), int(device[1])
    tensor.ndim = len(extents)
    # lanes are always 1: vector pixels are a trailing dimension
    code, bits = record.dlpack
    tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes = int(code), bits, 1
    tensor.shape = ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64))
    # Strides are always given (some consumers and DLPack >= 1.2 no longer accept NULL).
    tensor.strides = ctypes.cast(strides_array, ctypes.POINTER(ctypes.c_int64))
    tensor.byte_offset = 0
    managed.manager_ctx = None
    managed.deleter = _VERSIONED_EXPORT_DELETER if versioned else _LEGACY_EXPORT_DELETER
    collect_abandoned()
    address = ctypes.addressof(managed)
    name = VERSIONED_NAME if versioned else LEGACY_NAME
    capsule = _capsule_new(address, name, None)
    _live_exports[address] = _Export(managed, shape_array, strides_array, owner, capsule, name)
    return capsule


# ----- import ----------------------------------------------------------------------------------------


class ImportedTensor:
    """Keeps a consumed DLPack tensor alive; calls its producer's deleter once, when released or collected."""

    __slots__ = ("__weakref__", "_address", "_capsule", "_deleter")

    def __init__(self, address: int, deleter: int, capsule: object) -> None:
        self._address = address
        self._deleter = deleter
        self._capsule = capsule  # renamed "used_...": its destructor no longer frees anything

    def release(self) -> None:
        """Give the memory back to the producer now (idempotent)."""
        address, self._address = self._address, 0
        deleter, self._deleter = self._deleter, 0
        self._capsule = None
        if address and deleter:
            _DELETER_TYPE(deleter)(address)

    def __del__(self) -> None:
        if sys.is_finalizing():
            return  # the process is ending; the producer's library may already be gone
        try:
            self.release()
        except Exception:
            pass


@dataclass(frozen=True)
class DLPackView:
    """A validated, C-contiguous DLPack tensor; `owner` must stay referenced while `ptr` is used."""

    ptr: int
    shape: tuple[int, ...]
    dtype_name: str
    device_type: int
    device_id: int
    readonly: bool
    version: tuple[int, int] | None  # None: a legacy capsule
    owner: ImportedTensor


def dlpack_device(obj: object, what: str) -> tuple[int, int]:
    """`obj.__dlpack_device__()` as two ints; TypeError naming `what` when it is missing or malformed."""
    method = getattr(obj, "__dlpack_device__", None)
    if method is None:
        raise TypeError(f"{what}: {type(obj).__qualname__} has __dlpack__ but no __dlpack_device__")
    try:
        device_type, device_id = method()
        return int(device_type), int(device_id)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{what}: malformed __dlpack_device__() result ({error})") from error


_DEVICE_TYPE_NAMES: dict[int, str] = {
    DLDeviceType.CPU: "kDLCPU",
    DLDeviceType.CUDA: "kDLCUDA",
    DLDeviceType.CUDA_HOST: "kDLCUDAHost",
    DLDeviceType.ROCM: "kDLROCM",
    DLDeviceType.CUDA_MANAGED: "kDLCUDAManaged",
}


def device_type_name(device_type: int) -> str:
    """dlpack.h's name of a device type (kDLCPU, kDLCUDA, ...), or its number."""
    return _DEVICE_TYPE_NAMES.get(device_type, f"DLPack device type {device_type}")


def request_capsule(obj: object, stream: int | None) -> object:
    """Call the producer's __dlpack__, offering DLPack 1.x; falls back for producers that predate it."""
    exporter = getattr(obj, "__dlpack__", None)
    if exporter is None:
        raise TypeError(f"{type(obj).__qualname__} has no __dlpack__")
    keywords: dict[str, object] = {} if stream is None else {"stream": stream}
    try:
        return exporter(max_version=DLPACK_VERSION, **keywords)
    except TypeError:
        return exporter(**keywords)  # an older producer without max_version


def import_dlpack(obj: object, *, stream: int | None, what: str) -> DLPackView:
    """Consume `obj.__dlpack__(stream=stream)` into a DLPackView.

    `stream` is the consumer's stream for CUDA producers (None for CPU ones): the producer makes the data
    ready on it. Bad capsules raise TypeError/ValueError naming `what`; they are left unconsumed, so the
    producer's capsule destructor frees them.
    """
    capsule = request_capsule(obj, stream)
    if _capsule_is_valid(capsule, VERSIONED_NAME):
        name, used_name = VERSIONED_NAME, USED_VERSIONED_NAME
    elif _capsule_is_valid(capsule, LEGACY_NAME):
        name, used_name = LEGACY_NAME, USED_LEGACY_NAME
    else:
        raise TypeError(
            f"{what}: __dlpack__ did not return an unused DLPack capsule (got {type(capsule).__qualname__})"
        )
    address = int(_capsule_get_pointer(capsule, name) or 0)
    if address == 0:
        raise ValueError(f"{what}: the DLPack capsule holds a NULL tensor")
    version: tuple[int, int] | None = None
    flags = 0
    if name == VERSIONED_NAME:
        versioned = DLManagedTensorVersioned.from_address(address)
        version = (int(versioned.version.major), int(versioned.version.minor))
        if version[0] != DLPACK_VERSION[0]:
            raise TypeError(f"{what}: DLPack version {version[0]}.{version[1]} is not supported (need 1.x)")
        flags = int(versioned.flags)
        tensor, deleter = versioned.dl_tensor, _function_address(versioned.deleter)
    else:
        legacy = DLManagedTensor.from_address(address)
        tensor, deleter = legacy.dl_tensor, _function_address(legacy.deleter)
    view = _describe_tensor(tensor, what)
    # Valid: take it. From here on we own one reference and must call the deleter.
    if _capsule_set_name(capsule, used_name) != 0:
        raise RuntimeError(f"{what}: could not mark the DLPack capsule as used")
    owner = ImportedTensor(address, deleter, capsule)
    ptr, shape, dtype_name = view
    return DLPackView(
        ptr=ptr,
        shape=shape,
        dtype_name=dtype_name,
        device_type=int(tensor.device.device_type),
        device_id=int(tensor.device.device_id),
        readonly=bool(flags & FLAG_READ_ONLY),
        version=version,
        owner=owner,
    )


def _describe_tensor(tensor: DLTensor, what: str) -> tuple[int, tuple[int, ...], str]:
    """(data pointer incl. byte_offset, shape, element type) of a C-contiguous DLTensor, else an error."""
    ndim = int(tensor.ndim)
    if ndim < 0:
        raise ValueError(f"{what}: DLPack tensor has ndim {ndim}")
    shape = tuple(int(tensor.shape[i]) for i in range(ndim)) if ndim else ()
    code, bits, lanes = int(tensor.dtype.code), int(tensor.dtype.bits), int(tensor.dtype.lanes)
    record = dtypes.BY_DLPACK.get((code, bits))
    if record is None or lanes != 1:
        shown = f"code {code} ({_code_name(code)}), {bits} bits" + (f", {lanes} lanes" if lanes != 1 else "")
        raise TypeError(f"{what}: unsupported DLPack element type ({shown}); supported: {', '.join(dtypes.NAMES)}")
    if tensor.strides and math.prod(shape) > 0:
        strides = tuple(int(tensor.strides[i]) for i in range(ndim))
        expected = contiguous_strides(shape)
        if any(extent != 1 and got != want for extent, got, want in zip(shape, strides, expected, strict=True)):
            raise ValueError(
                f"{what}: DLPack tensor of shape {shape} is not C-contiguous (strides {strides} in elements, "
                f"expected {expected}); make it contiguous first"
            )
    ptr = int(tensor.data or 0) + int(tensor.byte_offset)
    if ptr == 0 and math.prod(shape) > 0:
        raise ValueError(f"{what}: DLPack tensor of shape {shape} has a NULL data pointer")
    return ptr, shape, record.name


def _code_name(code: int) -> str:
    try:
        return DLDataTypeCode(code).name.lower()
    except ValueError:
        return "unknown"


def is_exported(owner: object) -> bool:
    """Whether a consumer (or an unconsumed, still referenced capsule) holds an export of `owner`."""
    collect_abandoned()
    return any(record.owner is owner for record in _live_exports.values())
