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

A GPU call is one kernel, which sums its blocks' counts in a scratch buffer of its stream's (histogram.cuh):
the first call on a stream allocates it (synchronously, so not while a CUDA graph is being captured), and a
graph captured on a stream must be replayed on that stream, where it runs in turn with the stream's calls.
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np

from fklir import jit
from fklir.jit.default_stream import finish, launch_stream, per_thread
from fklir.jit.tensors import Tensor, describe
from fklir.jit.warm_calls import WarmCalls
from fklir.runtime import cuda_driver
from fklir.runtime.device_buffer import DeviceBuffer
from fklir.runtime.interop import empty_like_framework, output_maker

__all__ = ["histogram"]

BINS = 256
MAX_CHANNELS = 4
MAX_GRID_Y = 65535  # CUDA's limit; the kernel walks the images beyond it
MAX_PIXELS = 2**31 - 1  # per image: a bin's count must fit the int32 output
# At most this many blocks per image, so that an image's global atomics stay bounded (the blocks of a
# larger image take more rounds).
MAX_BLOCKS_PER_IMAGE = 1024
# A batch gets at least this many rounds of the device's resident blocks, so that a block's fixed work
# (clearing its bins, adding them to the image's sums) is spread over more of its pixels while the last
# round stays a small part of the whole.
BATCH_WAVES = 8

Grid = tuple[tuple[int, int, int], tuple[int, int, int]]


@dataclass(frozen=True)
class Layout:
    """How histogram.cuh's kernel cuts the work: its template arguments besides C, and its grid."""

    threads: int  # per block, a multiple of 32
    words: int  # 16-byte words a thread loads at once
    striped: bool  # a copy of the bins per lane (modulo histogram.cuh's kStripes), for distinct banks
    runs: bool  # merge runs of equal bytes in a word (else only a word of one value per channel)
    min_blocks: int = 0  # per multiprocessor at once (__launch_bounds__: fewer registers, maybe spilled); 0: any
    batch_waves: int = BATCH_WAVES  # 0: the blocks per image from the bytes alone

    def template(self, C: int) -> tuple[int, int, int, bool, bool, int]:
        return (C, self.threads, self.words, self.striped, self.runs, self.min_blocks)

    def grid(self, B: int, H: int, W: int, C: int, device: int) -> Grid:
        """One round of `words` words per thread for an image's bytes; fewer blocks per image (more rounds)
        when the batch fills the device `batch_waves` times over. At least one: an empty image's block still
        writes its zero counts."""
        blocks = max(1, min(math.ceil(H * W * C / (self.threads * self.words * 16)), MAX_BLOCKS_PER_IMAGE))
        if self.batch_waves:
            resident = cuda_driver.resident_threads(device) // self.threads
            blocks = min(blocks, max(1, math.ceil(self.batch_waves * resident / max(B, 1))))
        return (blocks, min(B, MAX_GRID_Y), 1), (self.threads, 1, 1)


# The shipped layouts, by channel count (benchmarks/RESULTS.md times the others): grey
# images take 1024 threads of one word each, so that an image's 2 MB is one round with every load in flight;
# colour images 256 threads of 4 words, whose one copy of C x 256 bins a block clears and sums cheaply. A
# copy of the bins per lane (striped) avoided bank conflicts but made each block's clearing and summing of
# 32 copies cost more than it saved.
GREY_LAYOUT = Layout(threads=1024, words=1, striped=False, runs=True)
COLOUR_LAYOUT = Layout(threads=256, words=4, striped=False, runs=True, batch_waves=0)


def layout_for(C: int) -> Layout:
    return GREY_LAYOUT if C == 1 else COLOUR_LAYOUT


def _template(C: int) -> tuple[int, int, int, bool, bool, int]:
    return layout_for(C).template(C)


def _grid(B: int, H: int, W: int, C: int, device: int) -> Grid:
    return layout_for(C).grid(B, H, W, C, device)


B, H, W, C = (jit.SymbolicSize(name) for name in ("B", "H", "W", "C"))
_DEVICE = jit.SymbolicDevice()
_COUNTS = jit.TensorMatcher((B, C, BINS)).with_dtype("int32").with_device(_DEVICE)
_IMAGES = jit.TensorMatcher((B, H, W, C)).with_dtype("uint8").with_device(_DEVICE)
_SCRATCH = jit.TensorMatcher((-1,)).with_dtype("uint32").with_device(_DEVICE)


# The images come first: a call without stream= launches where the first tensor's producer queues its work.
_count_gpu = jit.kernel(
    "histogram",
    cuda="histogram.cuh",
    args=[("images", _IMAGES), ("out", _COUNTS), ("scratch", _SCRATCH)],
    template=_template,
    grid=_grid,
)
_count_cpu = jit.kernel(
    "histogram",
    cpu="histogram.cpp",
    args=[("images", _IMAGES), ("out", _COUNTS)],
    template=lambda C: (C,),
)

# (device, stream handle, thread) -> the stream's scratch: its calls run in turn, so they may share it. A default
# stream handle (0, 1, 2) may be each thread's own stream (CUDA's per-thread default stream), so each thread
# has its own scratch for them.
_scratch: dict[tuple[int, int, int], DeviceBuffer] = {}
_scratch_lock = threading.Lock()


_warm = WarmCalls()


def histogram(images: Any, out: Any = None, *, stream: object = None) -> Any:
    """The per-channel 256-bin histograms of `images` (see the module docstring): `out`, or a new int32
    array of shape (C, 256) for one image, (B, C, 256) for a batch."""
    if (warm := _warm.run((images, out), (), stream, 1)) is not None:
        return warm
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
    given = out
    if out is None:
        out = _new_counts(images, described, counts_shape)
    elif len(out_shape := describe(out, "out").shape) != len(counts_shape):
        raise ValueError(f"out: expected shape {counts_shape} for images of shape {shape}, got {out_shape}")
    batch_out = out if batched else _with_axes(out, batch=True, channel=False)
    batch_images = images if batched else _with_axes(images, batch=True, channel=len(shape) == 2)
    if described.device is None:
        _count_cpu(batch_images, batch_out, stream=stream)
        return out
    handle, owned = launch_stream(described, stream)
    scratch = _stream_scratch(described.device, handle, (shape[0] if batched else 1) * (channels * BINS + 1))
    _count_gpu(batch_images, batch_out, scratch, stream=handle)
    finish(handle, described.device, owned)
    made = None
    if given is None:  # a repeated call makes its counts as this one did, in the images' framework
        made = (1, out, output_maker(described.framework, images, counts_shape, "int32", described.device))
    _warm.remember((images, given), (), stream, _count_gpu, (batch_images, batch_out, scratch), made)
    return out


def _stream_scratch(device: int, handle: int, size: int) -> DeviceBuffer:
    """The zeroed scratch of at least `size` uint32 of the stream (histogram.cuh leaves it zero). A larger one
    replaces it: made after the work queued so far (from_host waits for the device), so that none of that work
    still uses the one it replaces."""
    key = (device, handle, per_thread(handle))
    with _scratch_lock:
        scratch = _scratch.get(key)
        if scratch is None or scratch.size < size:
            scratch = _scratch[key] = DeviceBuffer.from_host(np.zeros(size, np.uint32), device)
            _warm.clear()  # the calls remembered take the stream's scratch as it was
    return scratch


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
