"""What a compiled kernel depends on: the signature of an input (element type, channels, planes, list
length), read from its shape; sizes are not part of it."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Signature:
    """What the compiled kernel depends on (sizes are not part of it)."""

    dtype: str
    channels: int
    planes: int
    batched: bool  # the input has a leading plane dimension
    images: int = 0  # > 0: a list of this many same-size images (one plane each)
    # a 1-D input (N,): read as one row (1, N), and an output of one row is given back 1-D. Not in the
    # repr, which is the plan's description: the kernel is the one a (1, N) input compiles.
    row: bool = field(default=False, repr=False)


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
