"""Launch plans: a compiled kernel plus its prebuilt parameter block, ready for the warm path.

A plan is built once per (pipeline, input signature) on the cold path; a warm call only writes the
header's pointers and sizes in place and calls the kernel (cuLaunchKernel, or one C function).
Nothing here touches IR.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

from fklir.runtime.params import pack_slots, params_struct_type

PIXEL_BLOCK = (32, 8, 1)
FLAT_BLOCK = 256


@dataclass(frozen=True)
class Extent:
    """Input and output sizes of one call, in pixels and planes."""

    src_w: int
    src_h: int
    src_planes: int
    channels_in: int
    dst_w: int
    dst_h: int
    dst_planes: int
    channels_out: int


class LaunchPlan:
    """Shared by both targets: the parameter block and how to fill its header."""

    def __init__(
        self,
        mode: str,
        elements_per_thread: int,
        write: str,
        slots: Sequence[tuple[str, str, int]],
        values: dict[str, Sequence[float]],
    ):
        self.mode = mode
        self.elements_per_thread = elements_per_thread
        self.write = write
        self.params = params_struct_type(slots)()
        pack_slots(self.params, slots, values)

    def fill_header(self, src: int, dst: int, e: Extent) -> None:
        h = self.params.h  # pyright: ignore[reportAttributeAccessIssue]
        h.src = src
        h.src_pitch = e.src_w * e.channels_in
        h.src_plane_stride = e.src_h * e.src_w * e.channels_in
        h.src_w, h.src_h = e.src_w, e.src_h
        h.dst = dst
        h.dst_pitch = e.dst_w * e.channels_out
        h.dst_plane_stride = e.dst_h * e.dst_w * e.channels_out
        h.dst_w, h.dst_h, h.dst_planes = e.dst_w, e.dst_h, e.dst_planes
        h.n = e.dst_planes * e.dst_h * e.dst_w * e.channels_out
        h.aligned = int(src % 16 == 0 and dst % 16 == 0)


class CpuLaunch(LaunchPlan):
    """Calls the g++-built `fkl_run(const Params*)` (OpenMP inside)."""

    def __init__(self, entry: object, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)  # pyright: ignore[reportArgumentType]
        self.entry = entry
        self.entry.argtypes = [ctypes.c_void_p]  # pyright: ignore[reportAttributeAccessIssue]
        self.entry.restype = None  # pyright: ignore[reportAttributeAccessIssue]
        self.address = ctypes.addressof(self.params)

    def run(self, src: int, dst: int, e: Extent) -> None:
        self.fill_header(src, dst, e)
        self.entry(self.address)  # pyright: ignore[reportCallIssue]


class GpuLaunch(LaunchPlan):
    """cuLaunchKernel of `fkl_kernel(Params)` with the block passed by value through a prebuilt void*[1]."""

    def __init__(self, kernel: object, *args: object, **kwargs: object):
        super().__init__(*args, **kwargs)  # pyright: ignore[reportArgumentType]
        self.kernel = kernel
        self.arg_array = (ctypes.c_void_p * 1)(ctypes.addressof(self.params))
        self.arg_address = ctypes.addressof(self.arg_array)

    def grid(self, e: Extent) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        if self.mode == "flat":
            n = e.dst_planes * e.dst_h * e.dst_w * e.channels_out
            threads = -(-n // self.elements_per_thread)
            return (max(1, -(-threads // FLAT_BLOCK)), 1, 1), (FLAT_BLOCK, 1, 1)
        bx, by, _ = PIXEL_BLOCK
        return (-(-e.dst_w // bx), -(-e.dst_h // by), e.dst_planes), PIXEL_BLOCK

    def run(self, src: int, dst: int, e: Extent, stream: int) -> None:
        from fklir.backend import cuda_driver

        self.fill_header(src, dst, e)
        grid, block = self.grid(e)
        cuda_driver.launch(self.kernel, grid, block, self.arg_address, stream)  # pyright: ignore[reportArgumentType]
