"""What a compiled kernel's host side needs, with no IR: the entry names, the codegen version in its
cache key, the parameter block's layout and the record of a loaded kernel. The emitter writes them and a
fresh process's disk-plan path reads them, so this module imports nothing of xDSL."""

from typing import NamedTuple

from fklir.dialects.constants import PLANE_MAP_SLOT as PLANE_MAP_SLOT
from fklir.dialects.value_rules import RecipeStep

CODEGEN_VERSION = "23"
PIXELS_PER_THREAD = 4  # sampled kernels (GPU): pixels per thread along x, PIXEL_BLOCK_X apart (RESULTS.md)

# flat: one run of elements (emit_flat); sampled: each output pixel sampled through the geometry stages
KERNEL_MODES = ("flat", "sampled")

GPU_ENTRY = "fkl_kernel"
GPU_NARROW_ENTRY = "fkl_kernel_narrow"  # sampled kernels: one pixel per thread, for launches of few pixels
CPU_ENTRY = "fkl_run"


class KernelLayout(NamedTuple):
    """What the host needs to launch the emitted kernel (no IR in it). A named tuple: a fresh process
    reads it from a disk plan, and @dataclass builds its methods from source text at import."""

    mode: str  # KERNEL_MODES: "flat" | "sampled"
    elements_per_thread: int  # flat: elements per thread; pixel: 1
    slots: tuple[tuple[str, str, int], ...]
    in_dtype: str
    in_channels: int
    in_planes: int
    out_dtype: str
    out_channels: int
    out_planes: int
    write: str  # "packed" | "planar" ([B][C][H][W]) | "tsplit" ([C][B][H][W]) | "split_write"
    src_table: int = 0  # > 0: the read takes one pointer per plane from Params::src_table
    read: str = "packed"  # "packed" | "planar" (TensorPack: [B][C][H][W]) | "none" (ReadSet)
    dst_table: int = 0  # > 0 (split_write): one output buffer per channel in Params::dst_table
    reciprocals: tuple[str, ...] = ()  # slots whose float32 reciprocals follow the slots (`<slot>_rcp`)
    flat_block: int = 0  # flat kernels: threads per block, which the thread -> element mapping assumes
    pixels_per_thread: int = 1  # sampled kernels on the GPU: pixels along x per thread (grid x = w / (32 * this))
    wide_min_src_w: int = 1  # sampled kernels: narrower sources launch the narrow entry (column pairs need 2)
    # a DAG kernel (SPEC §8): its call arguments 1.. (dtype, channels, "packed" | "planar"), each a
    # Params::in<i> (fkl::InputSurface), and its outputs 1.. (dtype, channels, write kind), each a Params::out<k>
    inputs: tuple[tuple[str, int, str], ...] = ()
    outputs: tuple[tuple[str, int, str], ...] = ()


class BuiltKernel(NamedTuple):
    """A loaded kernel and what its host side needs; holds no IR."""

    key: str
    layout: KernelLayout
    entry: object  # ctypes function (cpu) or cuda_driver.LoadedKernel (gpu)
    values: dict[str, tuple[float, ...]]
    # the kernel was loaded in this process already, for another description of the same structure
    reused: bool = False
    # each slot that a pipeline of the same structure fills from its own descriptors' values (no IR)
    recipe: tuple[RecipeStep, ...] = ()
