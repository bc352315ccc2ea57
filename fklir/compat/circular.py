"""fkl-python's CircularTensor: fklir's, with fkl-python's defaults (newest frame first), its rule of at
least two frames, and its snapshot shapes as fkl-python DeviceBuffers."""

from __future__ import annotations

from typing import Any

from fklir.compat.tensor import DeviceBuffer
from fklir.jit import circular
from fklir.runtime import device_buffer as native


class CircularTensor(circular.CircularTensor):
    """fkl-python's CircularTensor(width, height, batch, dtype="uint8", channels=1, order="newest_first",
    layout="packed", out_dtype=None): snapshot() is a DeviceBuffer of `batch` planes (packed) or of
    batch x channels single-channel planes (planar), as in fkl-python."""

    def __init__(
        self,
        width: int,
        height: int,
        batch: int,
        dtype: object = "uint8",
        channels: int = 1,
        order: str = "newest_first",
        layout: str = "packed",
        out_dtype: object = None,
        *,
        target: str = "gpu",
        device: int = 0,
    ):
        if int(batch) < 2:
            raise ValueError("batch must be >= 2")
        super().__init__(width, height, batch, dtype, channels, order, layout, out_dtype, target=target, device=device)

    def snapshot(self, stream: object = None, out: object = None) -> Any:
        result = super().snapshot(stream, out)
        if type(result) is not native.DeviceBuffer:
            return result
        planar = self.layout == "planar"
        planes = self.batch * self.channels if planar else self.batch
        return DeviceBuffer.adopt(result, (self.width, self.height, 1 if planar else self.channels, planes))

    def close(self) -> None:
        """fkl-python frees its ring here; fklir's is freed with the object, so there is nothing to do."""
