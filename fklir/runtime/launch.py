"""Launch plans: a compiled kernel plus its prebuilt parameter block, ready for the warm path.

A plan is built once per (pipeline, input signature) on the cold path; a warm call only writes the
header's pointers and sizes in place and calls the kernel (cuLaunchKernel, or one C function).
Nothing here touches IR.
"""

import ctypes
import functools
import operator
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from fklir.limits import I32_MAX, I64_MAX, U32_MAX, check_index, check_product
from fklir.runtime import cuda_driver
from fklir.runtime.params import pack_reciprocals, pack_rects, pack_slots, params_struct_type

PIXEL_BLOCK = (32, 8, 1)
# Programmatic dependent launch on devices that have it (GpuLaunch); FKLIR_PDL=0 launches plainly
# (cuLaunchKernel), e.g. to measure what the overlap gains.
PROGRAMMATIC_LAUNCH = os.environ.get("FKLIR_PDL", "1") != "0"
MAX_SAMPLED_KERNEL_ELEMENTS = U32_MAX  # sampled kernels address a source plane with 32-bit offsets
GRID_YZ_MAX = 65535  # CUDA's limit on a grid's y and z extents
GPU_PARAM_BYTES = 32764  # CUDA's limit on a kernel's parameters (CUDA 12.1+, compute capability 7.0+)
MAX_LAUNCHES = 256  # launches a GpuLaunch keeps, one per grid it met (a rect list of 1..64 makes 64 grids)
MAX_ADMITTED = 256  # extents a plan remembers as checked (a per-frame rect count makes a new extent each frame)


class Extent(NamedTuple):
    """Input and output sizes of one call, in pixels and planes (a named tuple, not a dataclass: @dataclass
    builds its methods from source text at import, which a fresh process pays for)."""

    src_w: int
    src_h: int
    src_planes: int
    channels_in: int
    dst_w: int
    dst_h: int
    dst_planes: int
    channels_out: int


# A DAG call's further inputs (their pointers, then their (width, height)s), outputs (pointers) and, in a list
# call, each further input's pointer table: LaunchPlan.set_surfaces.
Surfaces = tuple[tuple[int, ...], tuple[tuple[int, int], ...], tuple[int, ...], Sequence[Sequence[int]]]


class LaunchCounter:
    """Kernel launches (GPU) and fused-loop calls (CPU) since start: tests assert one per call."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


LAUNCHES = LaunchCounter()


class LaunchPlan:
    """Shared by both targets: the parameter block, filled once per extent; per call only the
    source and output pointers (and the alignment flag that depends on them) change.

    Pipelines of one structure share a plan, each with its own values: `pack_values` makes a pipeline's
    values block once, and a call that brings another block than the last copies it in (`use_values`)."""

    def __init__(self, layout: Any, values: Mapping[str, Sequence[float]]):
        self.layout = layout
        self._params_type = params_struct_type(layout)
        self.params = self._params_type()
        pack_slots(self.params, layout.slots, values)
        pack_reciprocals(self.params, layout.reciprocals, values)
        self.header = self.params.h  # pyright: ignore[reportAttributeAccessIssue]
        # (name, rect count) of each rect slot, in slot order: a frame's new rects are packed into them
        self.rect_slots = tuple((name, count) for name, kind, count in layout.slots if kind == "rect")
        # the values: every field after the header and the pointer tables
        first = layout.slots[0][0] if layout.slots else None
        self._values_offset = getattr(self._params_type, first).offset if first else ctypes.sizeof(self._params_type)
        self._values_size = ctypes.sizeof(self._params_type) - self._values_offset
        self._values_block: object = None  # the block whose values the parameter block holds (None: its own)
        # a list input's pointer table, read once: each attribute read of a ctypes array field makes a new view
        self._src_table: Any = self.params.src_table if layout.src_table else None  # pyright: ignore[reportAttributeAccessIssue]
        # a DAG's further inputs and outputs (and a list call's tables), read once likewise; the last surfaces
        # written, which a loop over the same buffers passes again
        params: Any = self.params
        inputs, outputs = range(1, len(layout.inputs) + 1), range(1, len(layout.outputs) + 1)
        self._in_surfaces: list[Any] = [getattr(params, f"in{i}") for i in inputs]
        self._in_tables: list[Any] = [getattr(params, f"in{i}_table") for i in inputs] if layout.src_table else []
        self._out_surfaces: list[Any] = [getattr(params, f"out{k}") for k in outputs]
        # the extent and input sizes the surfaces' pitches were written for, and the pointers they hold
        self._surface_sizes: tuple[object, ...] | None = None
        self._surface_pointers: tuple[object, ...] | None = None
        # held from the first write of a call's sizes and pointers to its launch: two threads calling one
        # pipeline with images of different sizes would otherwise launch one's sizes with the other's
        # pointers (out-of-bounds writes). A bound pipeline's argless call takes no lock: its bindings have
        # a block of their own (twin), which only holds them.
        self.lock = threading.Lock()
        self.extent: Extent | None = None
        self._admitted: set[Extent] = set()  # extents that passed check_extent: a named tuple of ints checks alike
        self.op_names: tuple[str, str] = ("TensorRead", "TensorWrite")  # the chain's read and write, for size errors
        self._pointers: tuple[int, int, int] | None = None  # (src, dst, table and plane bits) as the header holds
        self._table_bits = 0  # the OR of the pointer table's entries: any misaligned one disables vectors
        # a list input's output planes start every plane_bytes: unless that is a multiple of 16, some
        # plane starts off a 16-byte boundary, so its low bits join the alignment check like a pointer's
        self._plane_bits = 0
        # a DAG's further inputs' and outputs' pointers (set_surfaces), OR-ed: a flat DAG kernel moves every one
        # of them in 16-byte vectors, so any misaligned one disables vectors like the header's own pointers
        self._surface_bits = 0

    def pack_values(self, values: Mapping[str, Sequence[float]]) -> ctypes.Structure:
        """A values block for `values` (a parameter block of which only the values are read)."""
        block = self._params_type()
        pack_slots(block, self.layout.slots, values)
        pack_reciprocals(block, self.layout.reciprocals, values)
        return block

    def values_with_rects(self, block: ctypes.Structure, rects: Mapping[str, Sequence[float]]) -> ctypes.Structure:
        """A copy of values block `block` whose rect slots hold `rects` (flat x, y, w, h by slot name): a new
        pipeline whose values equal another's but for its rects, a frame's new detections."""
        copy = self._params_type.from_buffer_copy(block)
        for name, count in self.rect_slots:
            pack_rects(getattr(copy, name), count, rects[name])
        return copy

    def use_values(self, block: ctypes.Structure) -> None:
        """The values of `block` (pack_values) in the parameter block, unless they are there already."""
        if block is self._values_block:
            return
        offset = self._values_offset
        ctypes.memmove(ctypes.addressof(self.params) + offset, ctypes.addressof(block) + offset, self._values_size)
        self._values_block = block

    def set_sources(self, pointers: Sequence[int]) -> None:
        """The pointer table of a list input (one image per plane); nothing for a single input."""
        table = self._src_table
        if table is None:
            return
        table[: len(pointers)] = pointers
        self._table_bits = functools.reduce(operator.or_, pointers, 0)

    def set_outputs(self, pointers: Sequence[int]) -> None:
        """SplitWrite's per-channel output table; nothing for the other writes."""
        if not self.layout.dst_table:
            return
        table = self.params.dst_table  # pyright: ignore[reportAttributeAccessIssue]
        for i, ptr in enumerate(pointers):
            table[i] = ptr

    def check_extent(self, e: Extent) -> None:
        """ValueError, naming the chain's read or write op (`op_names`), for sizes that the kernel's
        index types cannot hold: the pipeline calls it before it allocates the output."""
        read, write = self.op_names
        check_index(read, "input width", e.src_w)
        check_index(read, "input height", e.src_h)
        check_index(read, "input planes", e.src_planes)
        check_index(write, "output width", e.dst_w)
        check_index(write, "output height", e.dst_h)
        check_index(write, "output planes", e.dst_planes)
        check_product(write, "output elements", (e.dst_planes, e.dst_h, e.dst_w, e.channels_out), I64_MAX)
        if self.layout.mode == "sampled":
            plane = (e.src_h, e.src_w, e.channels_in)
            hint = "a resampling kernel addresses a plane with 32-bit offsets: split the image, e.g. into row bands"
            check_product(read, "elements of one input plane", plane, U32_MAX, hint)

    def admit(self, e: Extent) -> None:
        """check_extent(e), once per extent: a loop over frames of 1..64 rects meets the same few extents."""
        if e in self._admitted:
            return
        self.check_extent(e)
        if len(self._admitted) >= MAX_ADMITTED:
            self._admitted.clear()
        self._admitted.add(e)

    def set_extent(self, e: Extent) -> None:
        if e == self.extent:
            return
        self.admit(e)  # a refused extent leaves the header as it was: ctypes would wrap the sizes
        h = self.header
        h.src_pitch = e.src_w * e.channels_in
        h.src_plane_stride = e.src_h * e.src_w * e.channels_in
        h.src_w, h.src_h = e.src_w, e.src_h
        h.dst_pitch = e.dst_w * e.channels_out
        h.dst_plane_stride = e.dst_h * e.dst_w * e.channels_out
        h.dst_w, h.dst_h, h.dst_planes = e.dst_w, e.dst_h, e.dst_planes
        # a flat kernel over a list input runs one image per grid row: n counts one plane then
        h.n = (1 if self.layout.src_table else e.dst_planes) * e.dst_h * e.dst_w * e.channels_out
        if self.layout.src_table:
            self._plane_bits = h.dst_plane_stride * _itemsize(self.layout.out_dtype)
        self.extent = e

    def fill(
        self,
        src: int,
        dst: int,
        e: Extent,
        sources: Sequence[int],
        outputs: Sequence[int],
        values: Any,
        surfaces: Surfaces | None = None,
    ) -> None:
        """A call's values block, sizes and pointers, a list input's or SplitWrite's tables, and a DAG's further
        inputs and outputs (run holds the lock; the surfaces before the pointers, whose alignment flag counts
        theirs)."""
        if values is not None:
            self.use_values(values)
        if sources:
            self.set_sources(sources)
        if outputs:
            self.set_outputs(outputs)
        self.set_extent(e)
        if surfaces is not None:
            self.set_surfaces(*surfaces)
        self.set_pointers(src, dst)

    def set_surfaces(
        self,
        inputs: tuple[int, ...],
        sizes: tuple[tuple[int, int], ...],
        outputs: tuple[int, ...],
        tables: Sequence[Sequence[int]] = (),
    ) -> None:
        """A DAG kernel's call arguments 1.. (pointers and (width, height)s, Params::in<i>; in a list call each
        one's table of image pointers, Params::in<i>_table) and outputs 1.. (pointers, Params::out<k>, of the
        extent's size); after set_extent. A warm loop passes the same sizes and writes only new pointers."""
        e = self.extent
        assert e is not None  # set_extent ran first
        layout = self.layout
        if (e, sizes) != self._surface_sizes:
            for surface, (w, h), (_, channels, _) in zip(self._in_surfaces, sizes, layout.inputs, strict=True):
                surface.src_pitch = w * channels
                surface.src_plane_stride = h * w * channels
                surface.src_w, surface.src_h = w, h
            for surface, (_, channels, _) in zip(self._out_surfaces, layout.outputs, strict=True):
                surface.dst_pitch = e.dst_w * channels
                surface.dst_plane_stride = e.dst_h * e.dst_w * channels
            self._surface_sizes = (e, sizes)
        for table, pointers in zip(self._in_tables, tables[: len(self._in_tables)], strict=False):
            table[: len(pointers)] = pointers
        pointers = (inputs, outputs)
        if pointers == self._surface_pointers:
            return
        for surface, ptr in zip(self._in_surfaces, inputs, strict=True):
            surface.src = ptr
        for surface, ptr in zip(self._out_surfaces, outputs, strict=True):
            surface.dst = ptr
        self._surface_bits = functools.reduce(operator.or_, inputs, 0) | functools.reduce(operator.or_, outputs, 0)
        self._surface_pointers = pointers

    def set_pointers(self, src: int, dst: int) -> None:
        # a loop over preallocated buffers passes the same pair every call: comparing two ints is
        # cheaper than three ctypes field writes
        pointers = (src, dst, self._table_bits | self._plane_bits | self._surface_bits)
        if pointers == self._pointers:
            return
        h = self.header
        h.src = src
        h.dst = dst
        h.aligned = not ((src | dst | pointers[2]) & 15)
        self._pointers = pointers


def check_param_block(layout: Any, op: str, what: str) -> None:
    """ValueError naming `op` when the parameter block of a GPU kernel (passed by value) is larger than
    CUDA allows, e.g. for thousands of rects or list images: nvcc would refuse the kernel."""
    size = ctypes.sizeof(params_struct_type(layout))
    hint = "split the work over several calls"
    check_index(op, f"the kernel's parameter bytes for {what}", size, GPU_PARAM_BYTES, hint=hint)


def _itemsize(dtype_name: str) -> int:
    return 2 if dtype_name == "bfloat16" else np.dtype(dtype_name).itemsize


class CpuLaunch(LaunchPlan):
    """Calls the g++-built `fkl_run(const Params*)` (OpenMP inside)."""

    def __init__(self, entry: Any, layout: Any, values: Mapping[str, Sequence[float]]):
        super().__init__(layout, values)
        self.entry = entry
        self.entry.argtypes = [ctypes.c_void_p]
        self.entry.restype = None
        self.address = ctypes.addressof(self.params)

    def run(
        self,
        src: int,
        dst: int,
        e: Extent,
        sources: Sequence[int] = (),
        outputs: Sequence[int] = (),
        values: Any = None,
        surfaces: Surfaces | None = None,
    ) -> None:
        """One call: its block (fill), then fkl_run."""
        with self.lock:
            self.fill(src, dst, e, sources, outputs, values, surfaces)
            LAUNCHES.count += 1
            self.entry(self.address)


# Launch results that mean "this thread's current context is not the kernel's" (another device's or
# another library's context is current, or none is, as on a new thread): make ours current and retry.
_CONTEXT_ERRORS = frozenset(
    {
        201,  # CUDA_ERROR_INVALID_CONTEXT
        400,  # CUDA_ERROR_INVALID_HANDLE: the function belongs to another context than the current one
        709,  # CUDA_ERROR_CONTEXT_IS_DESTROYED: the current context was destroyed under us
    }
)

# Stream handles that name a default stream of the CURRENT context (legacy 0 and 1, per-thread 2) rather
# than a stream object that carries its own context.
LAST_DEFAULT_STREAM = 2


class GpuLaunch(LaunchPlan):
    """cuLaunchKernel of `fkl_kernel(Params)` with the block passed by value through a prebuilt void*[1].

    The launch callable is prebuilt with the function handle, grid and block bound (functools.partial),
    so a warm launch on a caller's stream is one driver call with three arguments. The thread's current
    context is not queried first: a stream handle carries its context, and a launch that the driver
    refuses because the current context is not ours has no side effect, so we then make ours current and
    launch once more (see _recover). Only the default streams (handles 0, 1, 2), which mean "the current
    context's", make the context current before launching.
    """

    def __init__(self, kernel: Any, layout: Any, values: Mapping[str, Sequence[float]]):
        super().__init__(layout, values)
        self.kernel = kernel
        self._values = values
        self.device = int(kernel.device)
        self.arg_array = (ctypes.c_void_p * 1)(ctypes.addressof(self.params))
        self.arg_address = ctypes.addressof(self.arg_array)
        self.grid: tuple[int, int, int] = (1, 1, 1)
        self.block: tuple[int, int, int] = PIXEL_BLOCK
        self._context = cuda_driver.primary_context_handle(self.device)
        driver = cuda_driver._driver()
        self._get_current = driver.cuCtxGetCurrent
        self._cu_launch = driver.cuLaunchKernel
        self._programmatic = PROGRAMMATIC_LAUNCH and cuda_driver.supports_programmatic_launch(self.device)
        self._function = kernel.function
        self._resident = cuda_driver.resident_threads(self.device)
        # launches by (function, grid, block): pipelines of one structure that share this plan with other
        # extents switch between them without making a launch (and its per-stream configs) each time
        self._launches: dict[tuple[int, tuple[int, int, int], tuple[int, int, int]], Any] = {}
        self._launch = self._bind_launch()
        self._grids: dict[Extent, tuple[tuple[int, int, int], tuple[int, int, int], Any]] = {}  # _grid by extent

    def twin(self, values: ctypes.Structure) -> "GpuLaunch":
        """The same kernel with a parameter block of its own holding `values` (a bound pipeline's bindings)."""
        twin = GpuLaunch(self.kernel, self.layout, self._values)
        twin.use_values(values)
        twin.op_names = self.op_names
        return twin

    def _bind_launch(self) -> Any:
        """The launch with everything but (stream, kernelParams, extra) bound: cuLaunchKernelEx with
        programmatic dependent launch where the device has it (back-to-back calls then overlap a kernel's
        set-up with the previous kernel's tail, which short kernels feel most; RESULTS.md), else cuLaunchKernel."""
        g, b = self.grid, self.block
        key = (id(self._function), g, b)  # the kernel holds its functions for the life of the plan
        if (known := self._launches.get(key)) is not None:
            return known
        if self._programmatic:
            launch = cuda_driver.programmatic_launcher(self._function, g, b)
        else:
            launch = functools.partial(self._cu_launch, self._function, g[0], g[1], g[2], b[0], b[1], b[2], 0)
        if len(self._launches) >= MAX_LAUNCHES:
            self._launches.clear()
        self._launches[key] = launch
        return launch

    def check_extent(self, e: Extent) -> None:
        """Also CUDA's grid limits: a launch past them would fail only at the driver."""
        super().check_extent(e)
        read, write = self.op_names
        (gx, gy, gz), _, _ = self._grid(e)
        if self.layout.mode == "flat":
            what = "list images" if self.layout.src_table else "output planes"
            check_index(read if self.layout.src_table else write, what, gy, GRID_YZ_MAX)
            check_index(write, "grid blocks for the output elements", gx, I32_MAX)
            return
        check_index(write, f"output height (in rows of {PIXEL_BLOCK[1]})", gy, GRID_YZ_MAX)
        check_index(write, "output planes", gz, GRID_YZ_MAX)

    def _grid(self, e: Extent) -> tuple[tuple[int, int, int], tuple[int, int, int], Any]:
        """(grid, block, kernel function) of a launch over extent `e`."""
        if self.layout.mode == "flat":
            # a list input: one grid row per image, each a flat run of its own
            rows = e.dst_planes if self.layout.src_table else 1
            n = e.dst_planes * e.dst_h * e.dst_w * e.channels_out // max(rows, 1)
            threads = -(-n // self.layout.elements_per_thread)
            block = self.layout.flat_block
            return (max(1, -(-threads // block)), rows, 1), (block, 1, 1), self.kernel.function
        bx, by, _ = PIXEL_BLOCK
        # few pixels (one wave of threads): one per thread, where latency and not the instruction
        # count sets the time; else several per thread
        narrow = self.kernel.narrow is not None and (
            e.dst_w * e.dst_h * e.dst_planes <= self._resident or e.src_w < self.layout.wide_min_src_w
        )
        function = self.kernel.narrow if narrow else self.kernel.function
        across = bx if narrow else bx * self.layout.pixels_per_thread
        return (-(-e.dst_w // across), -(-e.dst_h // by), e.dst_planes), PIXEL_BLOCK, function

    def set_extent(self, e: Extent) -> None:
        if e is self.extent or e == self.extent:
            return
        super().set_extent(e)
        grid = self._grids.get(e)
        if grid is None:
            if len(self._grids) >= MAX_ADMITTED:
                self._grids.clear()
            grid = self._grids[e] = self._grid(e)
        self.grid, self.block, self._function = grid
        self._launch = self._bind_launch()

    def run(
        self,
        src: int,
        dst: int,
        e: Extent,
        stream: int,
        sources: Sequence[int] = (),
        outputs: Sequence[int] = (),
        values: Any = None,
        surfaces: Surfaces | None = None,
    ) -> None:
        """One call: its block (fill), then the launch."""
        with self.lock:
            self.fill(src, dst, e, sources, outputs, values, surfaces)
            self.launch(stream)

    def launch(self, stream: int) -> None:
        """Launch with the block as it is (a bound pipeline's warm call does only this)."""
        if stream <= LAST_DEFAULT_STREAM and int(self._get_current()[1]) != self._context:
            (result,) = self._launch_in_ours(stream)  # a default stream is the current context's
        else:
            (result,) = self._launch(stream, self.arg_address, 0)
        if result:
            self._recover(int(result), stream)
        LAUNCHES.count += 1

    def _launch_in_ours(self, stream: int) -> Any:
        """Launch with our context current, then give the caller's back (another device's is PyTorch's and
        CuPy's current device). A thread that had none keeps ours: nothing of the caller's changes, and
        its next launch needs no retry."""
        if int(self._get_current()[1]) == 0:
            cuda_driver.ensure_context(self.device)
            return self._launch(stream, self.arg_address, 0)
        with cuda_driver.using_device(self.device):
            return self._launch(stream, self.arg_address, 0)

    def _recover(self, code: int, stream: int) -> None:
        """A refused launch: if it was refused because our context is not current, launch once more in
        ours (the refused launch queued nothing); any other error is raised."""
        if code in _CONTEXT_ERRORS and int(self._get_current()[1]) != self._context:
            (result,) = self._launch_in_ours(stream)
            code = int(result)
        if code:
            call = "cuLaunchKernelEx" if self._programmatic else "cuLaunchKernel"
            cuda_driver.check((code,), f"{call}(grid={self.grid}, block={self.block}, stream={stream:#x})")

    def synchronize(self, stream: int) -> None:
        """Wait for the stream; a default stream handle is waited on in the kernel's context."""
        if stream <= LAST_DEFAULT_STREAM and int(self._get_current()[1]) != self._context:
            with cuda_driver.using_device(self.device):
                cuda_driver.synchronize(stream)
            return
        cuda_driver.synchronize(stream)
