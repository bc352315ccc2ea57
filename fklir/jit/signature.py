"""What a compiled kernel depends on: the signature of an input (element type, channels, planes, list
length), read from its shape; sizes are not part of it.

The number of images in a list call and of rects in `Crop([rects])` is a value, not a type: a kernel is
compiled for a capacity (`batch_capacity`) and serves every count up to it. The per-plane tables (the
source pointer table, the crop's rect slot) are sized to the capacity in the parameter block, and the
count travels in the header as `dst_planes`, which is the launch's plane extent on the GPU and the
plane loop's bound on the CPU: no kernel reads a table entry at or past it. The tables stay in the
parameter block rather than in a device buffer because a call writes them anyway and the block reaches
the kernel with the launch, with no allocation, copy or ordering of its own. The capacity is a power of
two from BATCH_MIN, so that a detector's 1..64 boxes per frame share one kernel and larger counts
compile a few buckets only; BATCH_MIN rects (16 bytes each) or pointers (8 bytes) keep the block within
the classic 4 KiB kernel parameter limit with room for the chain's own slots, and BATCH_MAX rects fill
half of the 32 KiB that CUDA 12.1+ allows on sm_70+. Past BATCH_MAX a kernel is compiled for the count
itself, which keeps every count the parameter limit admits (runtime.launch.check_param_block) callable.
"""

from typing import Any, NamedTuple, Protocol

BATCH_MIN = 64
BATCH_MAX = 1024


def batch_capacity(count: int) -> int:
    """The planes a kernel is compiled for to serve a list of `count` images or rects (see above)."""
    if count > BATCH_MAX:
        return count
    return max(BATCH_MIN, 1 << (count - 1).bit_length())


class Signature(NamedTuple):
    """What the compiled kernel depends on (sizes are not part of it). A named tuple: a fresh process
    defines it at import, and @dataclass builds its methods from source text."""

    dtype: str
    channels: int
    planes: int
    batched: bool  # the input has a leading plane dimension
    images: int = 0  # > 0: a list of this many same-size images (one plane each); compiled: the capacity
    rects: int = 0  # compiled for Crop([rects]): the capacity of its rect table (0: no rect list)
    # a 1-D input (N,): read as one row (1, N), and an output of one row is given back 1-D. Not in the
    # repr, which is the plan's description: the kernel is the one a (1, N) input compiles.
    row: bool = False

    def __repr__(self) -> str:
        return (
            f"Signature(dtype={self.dtype!r}, channels={self.channels!r}, planes={self.planes!r}, "
            f"batched={self.batched!r}, images={self.images!r}, rects={self.rects!r})"
        )


def input_signature(shape: tuple[int, ...], dtype: str, planar: bool = False) -> tuple[Signature, int, int]:
    """(signature, width, height) of an input shape: (N,) (one row of one channel), (H, W), (H, W, C)
    with C in 2..4, (B, H, W[, C]); for a planar read (TensorPack), (C, H, W) or (B, C, H, W)."""
    if planar:
        if len(shape) == 3 and 1 <= shape[0] <= 4:
            return Signature(dtype, shape[0], 1, False), shape[2], shape[1]
        if len(shape) == 4 and 1 <= shape[1] <= 4:
            return Signature(dtype, shape[1], shape[0], True), shape[3], shape[2]
        raise ValueError(f"TensorPack: cannot read a planar input of shape {shape}; expected (C, H, W) or (B, C, H, W)")
    if len(shape) == 1:
        return Signature(dtype, 1, 1, False, row=True), shape[0], 1
    if len(shape) == 2:
        return Signature(dtype, 1, 1, False), shape[1], shape[0]
    if len(shape) == 3 and 2 <= shape[2] <= 4:
        return Signature(dtype, shape[2], 1, False), shape[1], shape[0]
    if len(shape) == 3:
        return Signature(dtype, 1, shape[0], True), shape[2], shape[1]
    if len(shape) == 4 and 1 <= shape[3] <= 4:
        return Signature(dtype, shape[3], shape[0], True), shape[2], shape[1]
    raise ValueError(
        f"TensorRead: cannot read an input of shape {shape}; expected (N,), (H, W), (H, W, C) with C in 2..4, "
        "(B, H, W) or (B, H, W, C)"
    )


def output_shape(write: str, batched: bool, planes: int, channels: int, height: int, width: int) -> tuple[int, ...]:
    """An output's shape by its write: packed (B, H, W[, C]), planar (B, C, H, W), tsplit (C, B, H, W) or one
    SplitWrite buffer (B, H, W); B only for a batched call (tsplit always has it)."""
    batch = (planes,) if batched else ()
    if write == "planar":
        return (*batch, channels, height, width)
    if write == "tsplit":
        return (channels, planes, height, width)
    if write == "split_write":
        return (*batch, height, width)
    return (*batch, height, width, *((channels,) if channels > 1 else ()))


def inputs_of(x: object) -> list[object]:
    """The arrays of a call's argument: a list's items, else the one array."""
    if isinstance(x, list | tuple):
        if not x:
            raise ValueError("TensorRead: the input list is empty")
        return list(x)
    return [x]


class ChainCalls(Protocol):
    """What a target's executor (cpu_executor.py, gpu_executor.py) asks of the pipeline whose calls it runs:
    the chain's kind of read and write, and its per-call steps (jit/pipeline.py)."""

    generator: Any  # the ReadSet that replaces the read, or None
    write_kind: str
    read_planar: bool
    _last_signature: Signature | None

    def call_key(self) -> tuple[object, ...] | None: ...

    def known_rects_fit(self, e: Any) -> bool: ...

    def _input(self, x: object, described: list[tuple[tuple[int, ...], str]]) -> tuple[Signature, int, int]: ...

    def _generator_input(self) -> tuple[Signature, int, int]: ...

    def _sizes(self, sig: Signature, width: int, height: int) -> tuple[int, int, int]: ...

    def plan_key(self, sig: Signature, device: int) -> tuple[Signature, int]: ...

    def planned(self, key: tuple[Signature, int]) -> tuple[Any, Any] | None: ...

    def _plan(self, sig: Signature, device: int) -> tuple[Any, Any]: ...

    def _checked_extent(
        self, sig: Signature, width: int, height: int, sizes: tuple[int, int, int], plan: Any
    ) -> Any: ...

    def _out_shape(self, sig: Signature, e: Any) -> tuple[int, ...]: ...
