"""Helpers shared by the catalogue tests (CPU and GPU): the reference interpreter on a chain, and a
direct launch of a compiled chain for the reads and writes that compose() does not accept yet
(TensorPack, ReadSet, TensorTSplit, SplitWrite).

The direct launch is the same kernel build and parameter block as compose() uses; only the output
allocation and the header sizes are done here, from the reference's output shape.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fklir.backend.build import BuiltKernel, build_kernel
from fklir.frontend import ops as fops
from fklir.frontend.lowering import kernels_of, lower_chain, run_passes
from fklir.interpreters.fkl import run_module
from fklir.passes.infer_types import InferTypesPass
from fklir.runtime.params import pack_reciprocals, pack_slots, params_struct_type

PIXEL_BLOCK = (32, 8, 1)


@dataclass(frozen=True)
class Source:
    """How the chain's read sees its input: element type, channels, planes, and the array."""

    array: np.ndarray | None  # None for ReadSet chains
    dtype: str
    channels: int
    planes: int
    width: int
    height: int


def packed_source(x: np.ndarray, dtype: str | None = None) -> Source:
    """A packed (H, W), (H, W, C) or (B, H, W, C) input."""
    x = np.ascontiguousarray(x)
    name = dtype or str(x.dtype)
    if x.ndim == 2:
        return Source(x, name, 1, 1, x.shape[1], x.shape[0])
    if x.ndim == 3:
        return Source(x, name, x.shape[2], 1, x.shape[1], x.shape[0])
    return Source(x, name, x.shape[3], x.shape[0], x.shape[2], x.shape[1])


def planar_source(x: np.ndarray) -> Source:
    """A planar (C, H, W) or (B, C, H, W) input (TensorPack)."""
    x = np.ascontiguousarray(x)
    if x.ndim == 3:
        return Source(x, str(x.dtype), x.shape[0], 1, x.shape[2], x.shape[1])
    return Source(x, str(x.dtype), x.shape[1], x.shape[0], x.shape[3], x.shape[2])


def no_source(dtype: str, channels: int) -> Source:
    """ReadSet chains read nothing."""
    return Source(None, dtype, channels, 1, 1, 1)


def reference(chain: Sequence[fops.Op], src: Source) -> Any:
    """The reference interpreter on the frontend's IR (types inferred, no other pass)."""
    module = lower_chain(chain, src.dtype, src.channels, src.planes)
    run_passes(module, (InferTypesPass(),))
    inputs = {} if src.array is None else {"src": src.array}
    return run_module(module, inputs)["dst"]


def build(chain: Sequence[fops.Op], src: Source, target: str) -> BuiltKernel:
    module = run_passes(lower_chain(chain, src.dtype, src.channels, src.planes))
    (kernel,) = kernels_of(module)
    return build_kernel(kernel, target)


def params_for(built: BuiltKernel) -> ctypes.Structure:
    """The parameter block of the emitted `struct Params` (pointer tables, slots, reciprocals)."""
    layout = built.layout
    struct = params_struct_type(layout)
    params = struct()
    pack_slots(params, layout.slots, built.values)
    pack_reciprocals(params, layout.reciprocals, built.values)
    return params


def out_extent(expected: Any, write: str) -> tuple[int, int, int, int]:
    """(planes, height, width, channels) of an output in the reference's layout."""
    if write == "split_write":
        planes, height, width = expected[0].shape
        return planes, height, width, len(expected)
    if write == "packed":
        planes, height, width, channels = expected.shape
    elif write == "planar":
        planes, channels, height, width = expected.shape
    else:  # tsplit
        channels, planes, height, width = expected.shape
    return planes, height, width, channels


def fill_header(
    params: ctypes.Structure, src: Source, src_ptr: int, dst_ptr: int, out: tuple[int, int, int, int]
) -> None:
    planes, height, width, channels = out
    h = params.h  # pyright: ignore[reportAttributeAccessIssue]
    h.src = src_ptr
    h.src_pitch = src.width * src.channels
    h.src_plane_stride = src.height * src.width * src.channels
    h.src_w, h.src_h = src.width, src.height
    h.dst = dst_ptr
    h.dst_pitch = width * channels
    h.dst_plane_stride = height * width * channels
    h.dst_w, h.dst_h, h.dst_planes = width, height, planes
    h.n = planes * height * width * channels
    h.aligned = int(src_ptr % 16 == 0 and dst_ptr % 16 == 0)


def run_cpu(chain: Sequence[fops.Op], src: Source) -> tuple[Any, Any]:
    """(kernel output, reference output) of a chain on the CPU target, in the reference's layout."""
    expected = reference(chain, src)
    built = build(chain, src, "cpu")
    params = params_for(built)
    outputs = [np.empty_like(a) for a in expected] if isinstance(expected, tuple) else [np.empty_like(expected)]
    extent = out_extent(expected, built.layout.write)
    source = src.array if src.array is not None else np.zeros(1, np.uint8)
    fill_header(params, src, source.ctypes.data, outputs[0].ctypes.data, extent)
    if built.layout.dst_table:
        for c, out in enumerate(outputs):
            params.dst_table[c] = out.ctypes.data  # pyright: ignore[reportAttributeAccessIssue]
    entry: Any = built.entry
    entry.argtypes = [ctypes.c_void_p]
    entry.restype = None
    entry(ctypes.addressof(params))
    result = tuple(outputs) if isinstance(expected, tuple) else outputs[0]
    return result, expected


def run_gpu(chain: Sequence[fops.Op], src: Source) -> Any:
    """The kernel output of a chain on the GPU target, in the reference's layout."""
    from fklir.runtime import cuda_driver
    from fklir.runtime.device_buffer import DeviceBuffer

    expected = reference(chain, src)
    cuda_driver.ensure_context(0)
    built = build(chain, src, "gpu")
    params = params_for(built)
    host_outputs = list(expected) if isinstance(expected, tuple) else [expected]
    outputs = [DeviceBuffer(a.shape, str(a.dtype)) for a in host_outputs]
    source = DeviceBuffer.from_host(src.array) if src.array is not None else DeviceBuffer((16,), "uint8")
    extent = out_extent(expected, built.layout.write)
    fill_header(params, src, source.ptr, outputs[0].ptr, extent)
    if built.layout.dst_table:
        for c, out in enumerate(outputs):
            params.dst_table[c] = out.ptr  # pyright: ignore[reportAttributeAccessIssue]
    planes, height, width, channels = extent
    entry = built.entry
    wide = built.layout.mode == "flat" or src.width >= built.layout.wide_min_src_w
    if not wide:  # the wide entry's column-pair taps need 2 pixels a row: the launcher takes the narrow one
        entry = entry._replace(function=entry.narrow)
    if built.layout.mode == "flat":
        threads = -(-(planes * height * width * channels) // built.layout.elements_per_thread)
        flat_block = built.layout.flat_block
        grid, block = (max(1, -(-threads // flat_block)), 1, 1), (flat_block, 1, 1)
    else:
        across = PIXEL_BLOCK[0] * (built.layout.pixels_per_thread if wide else 1)
        grid, block = (-(-width // across), -(-height // PIXEL_BLOCK[1]), planes), PIXEL_BLOCK
    args = (ctypes.c_void_p * 1)(ctypes.addressof(params))
    stream = cuda_driver.internal_stream(0)
    cuda_driver.launch(entry, grid, block, ctypes.addressof(args), stream)  # pyright: ignore[reportArgumentType]
    cuda_driver.synchronize(stream)
    result = [out.copy_to_host() for out in outputs]
    return tuple(result) if isinstance(expected, tuple) else result[0]
