"""Test helper: whether a device allocation is still alive, seen by this process alone."""

from __future__ import annotations

from fklir.runtime import cuda_driver


def allocation_id(ptr: int) -> int | None:
    """The driver's id of the live allocation at ptr, None once it is freed. Unlike free device memory,
    this sees only this allocation, so other processes (pytest-xdist workers) cannot disturb it."""
    driver = cuda_driver._driver()
    with cuda_driver.using_device(0):
        cuda_driver.check(driver.cuCtxSynchronize(), "cuCtxSynchronize")
        attribute = driver.CUpointer_attribute.CU_POINTER_ATTRIBUTE_BUFFER_ID
        result, value = driver.cuPointerGetAttribute(attribute, ptr)
    if result != driver.CUresult.CUDA_SUCCESS:
        return None
    return int(value)
