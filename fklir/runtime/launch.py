"""Launch plans: a compiled kernel plus its prebuilt parameter block, ready for the warm path.

A plan is built once per (pipeline, input signature) on the cold path; a warm call only writes the
header's pointers and sizes in place and calls the kernel (cuLaunchKernel, or one C function).
Nothing here touches IR.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fklir.runtime.params import pack_reciprocals, pack_slots, params_struct_type

PIXEL_BLOCK = (32, 8, 1)


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


@dataclass
class LaunchCounter:
    """Kernel launches (GPU) and fused-loop calls (CPU) since start: tests assert one per call."""

    count: int = 0


LAUNCHES = LaunchCounter()


class LaunchPlan:
    """Shared by both targets: the parameter block, filled once per extent; per call only the
    source and output pointers (and the alignment flag that depends on them) change."""

    def __init__(self, layout: Any, values: Mapping[str, Sequence[float]]):
        self.layout = layout
        self.params = params_struct_type(layout.slots, layout.src_table, layout.dst_table, layout.reciprocals)()
        pack_slots(self.params, layout.slots, values)
        pack_reciprocals(self.params, layout.reciprocals, values)
        self.header = self.params.h  # pyright: ignore[reportAttributeAccessIssue]
        self.extent: Extent | None = None

    def set_sources(self, pointers: Sequence[int]) -> None:
        """The pointer table of a list input (one image per plane); nothing for a single input."""
        if not self.layout.src_table:
            return
        table = self.params.src_table  # pyright: ignore[reportAttributeAccessIssue]
        for i, ptr in enumerate(pointers):
            table[i] = ptr

    def set_outputs(self, pointers: Sequence[int]) -> None:
        """SplitWrite's per-channel output table; nothing for the other writes."""
        if not self.layout.dst_table:
            return
        table = self.params.dst_table  # pyright: ignore[reportAttributeAccessIssue]
        for i, ptr in enumerate(pointers):
            table[i] = ptr

    def set_extent(self, e: Extent) -> None:
        if e == self.extent:
            return
        h = self.header
        h.src_pitch = e.src_w * e.channels_in
        h.src_plane_stride = e.src_h * e.src_w * e.channels_in
        h.src_w, h.src_h = e.src_w, e.src_h
        h.dst_pitch = e.dst_w * e.channels_out
        h.dst_plane_stride = e.dst_h * e.dst_w * e.channels_out
        h.dst_w, h.dst_h, h.dst_planes = e.dst_w, e.dst_h, e.dst_planes
        h.n = e.dst_planes * e.dst_h * e.dst_w * e.channels_out
        self.extent = e

    def set_pointers(self, src: int, dst: int) -> None:
        h = self.header
        h.src = src
        h.dst = dst
        h.aligned = not ((src | dst) & 15)


class CpuLaunch(LaunchPlan):
    """Calls the g++-built `fkl_run(const Params*)` (OpenMP inside)."""

    def __init__(self, entry: Any, layout: Any, values: Mapping[str, Sequence[float]]):
        super().__init__(layout, values)
        self.entry = entry
        self.entry.argtypes = [ctypes.c_void_p]
        self.entry.restype = None
        self.address = ctypes.addressof(self.params)

    def run(self, src: int, dst: int, e: Extent) -> None:
        self.set_extent(e)
        self.set_pointers(src, dst)
        LAUNCHES.count += 1
        self.entry(self.address)


class GpuLaunch(LaunchPlan):
    """cuLaunchKernel of `fkl_kernel(Params)` with the block passed by value through a prebuilt void*[1].

    The launch callable, the function handle and the device's context handle are looked up once, so
    a warm launch is one context query and one driver call.
    """

    def __init__(self, kernel: Any, layout: Any, values: Mapping[str, Sequence[float]]):
        from cuda.bindings import driver  # pyright: ignore[reportAttributeAccessIssue]

        from fklir.backend import cuda_driver

        super().__init__(layout, values)
        self.kernel = kernel
        self.device = int(kernel.device)
        self.arg_array = (ctypes.c_void_p * 1)(ctypes.addressof(self.params))
        self.arg_address = ctypes.addressof(self.arg_array)
        self.grid: tuple[int, int, int] = (1, 1, 1)
        self.block: tuple[int, int, int] = PIXEL_BLOCK
        cuda_driver.ensure_context(self.device)
        self._context = cuda_driver.current_context_handle()
        self._get_current = driver.cuCtxGetCurrent
        self._cu_launch = driver.cuLaunchKernel
        self._function = kernel.function
        self._success = driver.CUresult.CUDA_SUCCESS

    def set_extent(self, e: Extent) -> None:
        if e is self.extent or e == self.extent:
            return
        super().set_extent(e)
        if self.layout.mode == "flat":
            n = e.dst_planes * e.dst_h * e.dst_w * e.channels_out
            threads = -(-n // self.layout.elements_per_thread)
            block = self.layout.flat_block
            self.grid, self.block = (max(1, -(-threads // block)), 1, 1), (block, 1, 1)
        else:
            bx, by, _ = PIXEL_BLOCK
            self.grid, self.block = (-(-e.dst_w // bx), -(-e.dst_h // by), e.dst_planes), PIXEL_BLOCK

    def make_current(self) -> None:
        """Make the kernel's device context current when something (another device, a library) changed it."""
        if int(self._get_current()[1]) != self._context:
            from fklir.backend import cuda_driver

            cuda_driver.ensure_context(self.device)

    def run(self, src: int, dst: int, e: Extent, stream: int) -> None:
        self.set_extent(e)
        self.set_pointers(src, dst)
        self.launch(stream)

    def launch(self, stream: int) -> None:
        """Launch with the block as it is (a bound pipeline's warm call does only this)."""
        LAUNCHES.count += 1
        g, b = self.grid, self.block
        (result,) = self._cu_launch(self._function, g[0], g[1], g[2], b[0], b[1], b[2], 0, stream, self.arg_address, 0)
        if result != self._success:
            from fklir.backend import cuda_driver

            cuda_driver.check((result,), f"cuLaunchKernel(grid={g}, block={b})")
