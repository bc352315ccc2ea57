"""histogram: per-channel 256-bin histograms of uint8 images, a shipped fkl.jit kernel (SPEC §6.2).

    from fklir.kernels.histogram import histogram
    counts = histogram(image)                       # (H, W) -> (1, 256); (H, W, C) -> (C, 256)
    counts = histogram(batch)                       # (B, H, W, C) -> (B, C, 256)
    histogram(batch, out=counts, stream=s)          # into an int32 array of that shape, on s

counts[..., c, v] is the number of pixels whose channel c is v, as `np.bincount(image[..., c].ravel(),
minlength=256)` gives it. Images are numpy arrays or CPU torch tensors (the CPU kernel), or torch, CuPy or
DeviceBuffer CUDA arrays (the GPU kernel, on the caller's stream as for pipelines), C-contiguous, with 1 to
4 channels; a batch of grey images is (B, H, W, 1). A new output is allocated in the input's framework.

The counts are int32, the widest integer fklir's arrays have (and the type of cv2.cuda.calcHist and
cvcuda.histogram): an image of more than 2**31 - 1 pixels (46341 x 46341), whose counts could overflow it,
is refused with a ValueError.
"""

from __future__ import annotations

import math
import sys
from typing import Any

import numpy as np

from fklir import jit
from fklir.jit.tensors import Tensor, describe
from fklir.runtime.device_buffer import DeviceBuffer
from fklir.runtime.interop import empty_like_framework

__all__ = ["histogram"]

BINS = 256
MAX_CHANNELS = 4
THREADS = 256  # per GPU block
# Bytes of one image per GPU block: one round of histogram.cuh's kWords = 4 loads of 16 bytes per thread,
# enough counting to outweigh the block's final global atomics (one per bin).
BYTES_PER_BLOCK = THREADS * 4 * 16
# At most this many blocks per image, so that an image's global atomics stay bounded (the blocks of a
# larger image take more rounds).
MAX_BLOCKS_PER_IMAGE = 1024
MAX_GRID_Y = 65535  # CUDA's limit; the kernel walks the images beyond it
MAX_PIXELS = 2**31 - 1  # per image: a bin's count must fit the int32 output

B, H, W, C = (jit.SymbolicSize(name) for name in ("B", "H", "W", "C"))
_DEVICE = jit.SymbolicDevice()
_COUNTS = jit.TensorMatcher((B, C, BINS)).with_dtype("int32").with_device(_DEVICE)
_IMAGES = jit.TensorMatcher((B, H, W, C)).with_dtype("uint8").with_device(_DEVICE)


def _blocks_per_image(image_bytes: int) -> int:
    return min(math.ceil(image_bytes / BYTES_PER_BLOCK), MAX_BLOCKS_PER_IMAGE)


_clear = jit.kernel(
    "histogram_clear",
    cuda="histogram.cuh",
    cpu="histogram.cpp",
    args=[("out", _COUNTS)],
    grid=lambda B, C: ((B * C, 1, 1), (BINS, 1, 1)),
)

# The images come first: a call without stream= launches where the first tensor's producer queues its work.
_count = jit.kernel(
    "histogram",
    cuda="histogram.cuh",
    cpu="histogram.cpp",
    args=[("images", _IMAGES), ("out", _COUNTS)],
    template=lambda C: (C,),
    grid=lambda B, H, W, C: ((_blocks_per_image(H * W * C), min(B, MAX_GRID_Y), 1), (THREADS, 1, 1)),
)


def histogram(images: Any, out: Any = None, *, stream: object = None) -> Any:
    """The per-channel 256-bin histograms of `images` (see the module docstring): `out`, or a new int32
    array of shape (C, 256) for one image, (B, C, 256) for a batch."""
    described = describe(images, "images")
    shape = described.shape
    if len(shape) not in (2, 3, 4):
        raise ValueError(f"images: expected (H, W), (H, W, C) or (B, H, W, C), got shape {shape}")
    batched = len(shape) == 4
    height, width = shape[1:3] if batched else shape[:2]
    channels = shape[-1] if len(shape) > 2 else 1
    if not 1 <= channels <= MAX_CHANNELS:
        raise ValueError(f"images: {channels} channels (shape {shape}); histogram counts 1 to {MAX_CHANNELS}")
    if height * width > MAX_PIXELS:
        raise ValueError(f"images: {height} x {width} pixels is over {MAX_PIXELS}, more than int32 counts hold")
    counts_shape = (shape[0], channels, BINS) if batched else (channels, BINS)
    if out is None:
        out = _new_counts(images, described, counts_shape)
    elif len(out_shape := describe(out, "out").shape) != len(counts_shape):
        raise ValueError(f"out: expected shape {counts_shape} for images of shape {shape}, got {out_shape}")
    batch_out = out if batched else _with_axes(out, batch=True, channel=False)
    batch_images = images if batched else _with_axes(images, batch=True, channel=len(shape) == 2)
    _clear(batch_out, stream=stream)
    _count(batch_images, batch_out, stream=stream)
    return out


def _new_counts(images: Any, tensor: Tensor, shape: tuple[int, ...]) -> Any:
    """An int32 array of `shape` in the framework and on the device of `images` (described by `tensor`)."""
    if tensor.device is not None:
        return empty_like_framework(tensor.framework, shape, "int32", tensor.device, images)[0]
    if tensor.framework == "torch":
        return images.new_empty(shape, dtype=sys.modules["torch"].int32)
    return np.empty(shape, np.int32)


def _with_axes(x: Any, batch: bool, channel: bool) -> Any:
    """A view of `x` with a leading batch axis and/or a trailing channel axis of extent 1 (no copy)."""
    if isinstance(x, DeviceBuffer):
        shape = ((1,) if batch else ()) + x.shape + ((1,) if channel else ())
        return DeviceBuffer.from_ptr(x.ptr, shape, x.dtype_name, x.stream, x.device, owner=x, readonly=x.readonly)
    return x[((None,) if batch else ()) + (Ellipsis,) + ((None,) if channel else ())]
