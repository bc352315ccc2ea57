"""What the runtime reads of any array without a device: the storage view of an element type and the
extents of a shape. Apart from device_buffer, so that the CPU target's calls import no GPU module."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fklir import dtypes


def host_view_for(array: np.ndarray[Any, Any], dtype_name: str) -> np.ndarray[Any, Any] | None:
    """`array` reinterpreted as the storage dtype of `dtype_name`, or None if its dtype does not match.

    For bfloat16 both raw uint16 bits and an ml_dtypes bfloat16 array are accepted.
    """
    if dtype_name == "bfloat16":
        if array.dtype == np.uint16 or (array.dtype.name == "bfloat16" and array.dtype.itemsize == 2):
            return array.view(np.uint16)
        return None
    return array if array.dtype == dtypes.BY_NAME[dtype_name].storage else None


def normalize_shape(shape: int | Sequence[int], what: str = "shape") -> tuple[int, ...]:
    """A tuple of non-negative ints; ValueError/TypeError naming the bad value otherwise."""
    items = (shape,) if isinstance(shape, int) else tuple(shape)
    for extent in items:
        if isinstance(extent, bool) or not isinstance(extent, (int, np.integer)):
            raise TypeError(f"{what}: extents must be integers, got {shape!r}")
        if extent < 0:
            raise ValueError(f"{what}: extents must be >= 0, got {shape!r}")
    return tuple(int(extent) for extent in items)
