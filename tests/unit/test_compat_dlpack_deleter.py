"""fkl-python's DLPack walk-through (its example 07) under `fklir.compat`: a script reads the exported capsule's
struct with `fkl.tensor._DLManagedTensor` and gives the memory back through `mt.deleter(ctypes.pointer(mt))`.

The CPU tests allocate through the fake driver of tests/runtime/fake_driver.py, which records every cuMemFree,
so "freed exactly once" is read from the driver calls themselves; the GPU test asks the real driver.
"""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
from _ctypes import CFuncPtr
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import fklir.compat as fklc
from fklir.compat.tensor import _DLManagedTensor
from fklir.dtypes import DLDataTypeCode
from fklir.runtime import cuda_driver, dlpack
from tests.runtime.fake_driver import FakeDriver, installed

# The script's own prototypes, as example 07 declares them; private ones, so that no other test sees
# ctypes.pythonapi's shared prototypes changed.
capsule_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi)
)
capsule_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_SetName", ctypes.pythonapi)
)
capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", ctypes.pythonapi)
)


class FreeRecordingDriver(FakeDriver):
    """The fake driver, recording the pointer of each cuMemFree."""

    def __init__(self) -> None:
        super().__init__(devices=1)
        self.freed: list[int] = []

    def cuMemFree(self, pointer: int) -> tuple[Any, ...]:
        self.freed.append(int(pointer))
        return super().cuMemFree(pointer)


@pytest.fixture
def driver() -> Iterator[FreeRecordingDriver]:
    gc.collect()
    before = dlpack.live_export_count()
    with installed(FreeRecordingDriver()) as fake:
        yield fake
        gc.collect()
    assert dlpack.live_export_count() == before


class CapsuleOnly:
    """A producer that hands out one capsule built beforehand."""

    def __init__(self, capsule: object) -> None:
        self.capsule = capsule

    def __dlpack__(self, **keywords: Any) -> object:
        return self.capsule


def deleter_type(struct: type[ctypes.Structure]) -> Any:
    """The deleter field's type as the struct declares it (a script reaches it through `_fields_` only)."""
    return {field[0]: field[1] for field in struct._fields_}["deleter"]


@pytest.mark.parametrize("struct", [_DLManagedTensor, dlpack.DLManagedTensorVersioned])
def test_the_deleter_field_is_a_c_function_pointer_to_its_struct(struct: type[ctypes.Structure]) -> None:
    function_type = deleter_type(struct)
    assert issubclass(function_type, CFuncPtr)
    assert function_type._flags_ == ctypes.CFUNCTYPE(None)._flags_  # C's calling convention, as CFUNCTYPE makes
    assert function_type._restype_ is None
    assert function_type._argtypes_ == (ctypes.POINTER(struct),)
    # The ABI is the one of a bare pointer: dlpack.h's layout, unchanged.
    pointer = ctypes.sizeof(ctypes.c_void_p)
    assert ctypes.sizeof(function_type) == pointer
    assert struct.manager_ctx.offset + pointer == struct.deleter.offset  # pyright: ignore[reportAttributeAccessIssue]
    assert not struct().deleter  # a fresh struct's deleter is NULL


@pytest.mark.parametrize("consumed", [False, True], ids=["unconsumed", "consumed"])
@pytest.mark.parametrize("buffer_first", [True, False], ids=["buffer-gone-first", "buffer-gone-last"])
def test_example_07_frees_through_the_deleter_exactly_once(
    driver: FreeRecordingDriver, consumed: bool, buffer_first: bool
) -> None:
    exports = dlpack.live_export_count()
    buf = fklc.DeviceBuffer(8, 4, "uint8", channels=3)
    address = buf.ptr
    capsule = buf.__dlpack__()
    ptr = capsule_get_pointer(capsule, b"dltensor")
    mt = _DLManagedTensor.from_address(ptr)
    assert isinstance(mt.deleter, deleter_type(_DLManagedTensor)) and mt.deleter
    assert (mt.dl_tensor.data, mt.dl_tensor.ndim) == (address, 3)
    assert [mt.dl_tensor.shape[i] for i in range(3)] == [4, 8, 3]
    if consumed:  # what a consumer does before it owns the memory
        assert capsule_set_name(capsule, b"used_dltensor") == 0

    if buffer_first:
        del buf
        gc.collect()
    assert driver.freed == []  # the capsule's reference keeps the memory
    assert dlpack.live_export_count() == exports + 1

    mt.deleter(ctypes.pointer(mt))  # example 07's call
    assert dlpack.live_export_count() == exports
    if not buffer_first:
        assert driver.freed == []  # the buffer still owns it
        del buf
        gc.collect()
    assert driver.freed == [address]

    # The other release paths find nothing left to free: the capsule dropped, the abandoned-capsule sweep.
    del capsule, mt
    gc.collect()
    assert dlpack.collect_abandoned() == 0
    assert driver.freed == [address]


@pytest.mark.parametrize("max_version", [None, (1, 0)], ids=["legacy", "versioned"])
def test_fklirs_consumer_calls_the_typed_deleter_once(
    driver: FreeRecordingDriver, max_version: tuple[int, int] | None
) -> None:
    exports = dlpack.live_export_count()
    buf = fklc.DeviceBuffer(16)
    address = buf.ptr
    view = dlpack.import_dlpack(CapsuleOnly(buf.__dlpack__(max_version=max_version)), stream=None, what="src")
    assert view.ptr == address
    del buf
    gc.collect()
    assert driver.freed == [] and dlpack.live_export_count() == exports + 1
    view.owner.release()
    assert driver.freed == [address] and dlpack.live_export_count() == exports
    view.owner.release()  # idempotent: the producer's deleter is not called again
    del view
    gc.collect()
    assert driver.freed == [address]


def test_a_foreign_producers_deleter_runs_once_and_a_null_one_is_skipped() -> None:
    """A producer's struct built as a C library would: its deleter takes the address, not our struct type."""
    calls: list[int | None] = []

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def foreign_deleter(address: int | None) -> None:
        calls.append(address)

    data = np.arange(6, dtype=np.float32)
    shape = (ctypes.c_int64 * 1)(6)
    structs: list[int] = []
    for deleter in (ctypes.cast(foreign_deleter, deleter_type(_DLManagedTensor)), deleter_type(_DLManagedTensor)()):
        managed = _DLManagedTensor()
        structs.append(ctypes.addressof(managed))
        managed.dl_tensor.data = data.ctypes.data
        managed.dl_tensor.device.device_type = dlpack.DLDeviceType.CPU
        managed.dl_tensor.ndim = 1
        managed.dl_tensor.dtype.code, managed.dl_tensor.dtype.bits = DLDataTypeCode.FLOAT, 32
        managed.dl_tensor.dtype.lanes = 1
        managed.dl_tensor.shape = shape
        managed.deleter = deleter
        view = dlpack.import_dlpack(
            CapsuleOnly(capsule_new(ctypes.addressof(managed), b"dltensor", None)), stream=None, what="src"
        )
        assert (view.ptr, view.shape, view.dtype_name) == (data.ctypes.data, (6,), "float32")
        view.owner.release()
        view.owner.release()
        del view
        gc.collect()
    assert calls == [structs[0]]  # the NULL deleter was never called (that would crash)


def test_exit_disarms_the_typed_deleters_without_an_error() -> None:
    script = (
        "import numpy as np\n"
        "from fklir.runtime import dlpack\n"
        "held = np.zeros(4, np.float32)\n"
        "legacy = dlpack.export_capsule(held.ctypes.data, held.shape, 'float32', (1, 0), held, versioned=False)\n"
        "versioned = dlpack.export_capsule(held.ctypes.data, held.shape, 'float32', (1, 0), held, versioned=True)\n"
        "records = list(dlpack._live_exports.values())\n"
        "assert len(records) == 2 and all(record.managed.deleter for record in records)\n"
        "dlpack._disarm_at_exit()\n"
        "assert not any(record.managed.deleter for record in records)\n"
        "print('disarmed')\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "disarmed\n" and run.stderr == ""


@pytest.mark.skipif(not cuda_driver.gpu_available(), reason="needs a CUDA device")
def test_example_07_frees_through_the_deleter_exactly_once_gpu() -> None:
    from tests.runtime.gpu_memory import allocation_id

    gc.collect()
    exports = dlpack.live_export_count()
    buf = fklc.DeviceBuffer(256, 64, "float32", channels=3)
    address = buf.ptr
    live = allocation_id(address)
    assert live is not None
    capsule = buf.__dlpack__()
    mt = _DLManagedTensor.from_address(capsule_get_pointer(capsule, b"dltensor"))
    del buf
    gc.collect()
    assert allocation_id(address) == live
    mt.deleter(ctypes.pointer(mt))
    assert allocation_id(address) != live
    assert dlpack.live_export_count() == exports
    del capsule, mt
    gc.collect()
    assert dlpack.collect_abandoned() == 0 and dlpack.live_export_count() == exports
