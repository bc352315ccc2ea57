"""CircularTensor: a ring of the last N frames on the device (or in host memory on the CPU target), each
written through a fused pipeline, read back as one (N, ...) tensor in temporal order.

An update is one launch: the frame's pipeline (TensorRead, the caller's ops, TensorWrite) writes straight
into the ring's next slot. A snapshot is one launch too: a copy pipeline reads the N slots as a list of
images, in the order asked for, and writes them as one packed (N, H, W[, C]) or planar (N, C, H, W) tensor.
Nothing is rotated: the ring only moves its write position, so an update costs one frame's work whatever N.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from fklir.frontend import ops as fops
from fklir.jit.pipeline import Pipeline, compose
from fklir.runtime.device_buffer import ELEMENT_TYPES, DeviceBuffer, element_type_name

ORDERS = ("oldest_first", "newest_first")
LAYOUTS = ("packed", "planar")


class CircularTensor:
    """The last `batch` frames of `width` x `height` pixels of `channels` channels.

    `update(frame, ops=...)` writes a (H, W[, C]) frame of `dtype` through `ops` (compute ops, no read or
    write) into the ring; the ring stores `out_dtype` (by default `dtype`), what the ops must produce.
    `snapshot()` gives the window oldest frame first ("oldest_first") or newest first ("newest_first"),
    packed (N, H, W[, C]) or planar (N, C, H, W). Slots not yet written hold zeros. On the GPU the ring
    lives on `device`; on target="cpu" it is a numpy array and frames are numpy arrays.
    """

    def __init__(
        self,
        width: int,
        height: int,
        batch: int,
        dtype: object = "uint8",
        channels: int = 1,
        order: str = "oldest_first",
        layout: str = "packed",
        out_dtype: object = None,
        *,
        target: str = "gpu",
        device: int = 0,
    ):
        if order not in ORDERS:
            raise ValueError(f"CircularTensor: order must be one of {', '.join(ORDERS)}, got {order!r}")
        if layout not in LAYOUTS:
            raise ValueError(f"CircularTensor: layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")
        if int(batch) < 1 or int(width) < 1 or int(height) < 1:
            raise ValueError(
                f"CircularTensor: width, height and batch must be positive, got {width}, {height}, {batch}"
            )
        if not 1 <= int(channels) <= 4:
            raise ValueError(f"CircularTensor: channels must be 1..4, got {channels}")
        self.width, self.height, self.batch, self.channels = int(width), int(height), int(batch), int(channels)
        self.dtype = element_type_name(dtype, "CircularTensor dtype")
        self.out_dtype = self.dtype if out_dtype is None else element_type_name(out_dtype, "CircularTensor out_dtype")
        self.order, self.layout, self.target = order, layout, target
        pixel = (self.height, self.width) + ((self.channels,) if self.channels > 1 else ())
        self._ring, self._slots = _allocate_ring(self.batch, pixel, self.out_dtype, target, device)
        self._next = 0  # the slot the next update writes
        self._pushed = 0
        self._update: Pipeline | None = None
        self._update_key: tuple[object, ...] = ()
        write = fops.TensorSplit() if layout == "planar" else fops.TensorWrite()
        self._snapshot = compose(fops.TensorRead(), write, target=target)

    @property
    def frames_pushed(self) -> int:
        """How many frames update() has written since the ring was made."""
        return self._pushed

    def __len__(self) -> int:
        return self.batch

    def update(self, frame: object, ops: Sequence[fops.Op] | None = None, stream: object = None) -> CircularTensor:
        """Write `frame` through `ops` into the ring's next slot: one launch, on `stream` when given (no
        synchronisation then, and the call can be captured in a CUDA graph once it has run outside one)."""
        pipe = self._pipeline_for(tuple(ops or ()))
        pipe(frame, out=self._slots[self._next], stream=stream)
        self._next = (self._next + 1) % self.batch
        self._pushed += 1
        return self

    def snapshot(self, stream: object = None, out: object = None) -> Any:
        """The window as one tensor, in `order` and `layout` (one launch; a DeviceBuffer on the GPU unless
        `out` is given, a numpy array on the CPU)."""
        return self._snapshot(self.window(), out=out, stream=stream)

    def window(self) -> list[Any]:
        """The ring's slots (views, no copy) in the snapshot's order."""
        start = self._next
        if self.order == "oldest_first":
            return self._slots[start:] + self._slots[:start]
        newest = start - 1
        return [self._slots[(newest - i) % self.batch] for i in range(self.batch)]

    def _pipeline_for(self, ops: tuple[fops.Op, ...]) -> Pipeline:
        """The update pipeline of these ops: reused while their description (kinds and values) is the same,
        so that a loop passing freshly built but equal ops stays on the warm path."""
        key = tuple(op.description() for op in ops)
        if self._update is not None and key == self._update_key:
            return self._update
        for op in ops:
            if isinstance(op, fops.Read | fops.Write):
                raise ValueError(f"CircularTensor.update: ops are compute ops only; got {type(op).__name__}")
        update = compose(fops.TensorRead(), *ops, fops.TensorWrite(), target=self.target)
        assert isinstance(update, Pipeline)  # a chain of compute ops: no graph
        self._update, self._update_key = update, key
        return self._update


def _allocate_ring(
    batch: int, pixel: tuple[int, ...], dtype_name: str, target: str, device: int
) -> tuple[object, list[Any]]:
    """The ring (zeros) and a view of each of its slots."""
    zeros = np.zeros((batch, *pixel), dtype=ELEMENT_TYPES[dtype_name])
    if target == "cpu":
        return zeros, list(zeros)
    ring = DeviceBuffer(zeros.shape, dtype_name, device)
    ring.copy_from_host(zeros)
    step = zeros[0].nbytes
    slots = [
        DeviceBuffer.from_ptr(ring.ptr + i * step, pixel, dtype_name, device=device, owner=ring) for i in range(batch)
    ]
    return ring, slots
