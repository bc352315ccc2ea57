"""fkl-python's op descriptors where their signature or meaning differs from fklir's; every other op is
fklir's own (fklir.compat re-exports it)."""

from __future__ import annotations

from fklir.frontend import ops as fops


class Warping(fops.Warping):
    """fkl-python's Warping(matrix, dst_w, dst_h): FKL's convention, the 2x3 or 3x3 `matrix` maps output
    pixels to source pixels (cv2's WARP_INVERSE_MAP). fklir's native Warping takes OpenCV's source →
    output map; this one is fklir's warp told its matrix is already the inverse (no inversion)."""

    def __init__(self, matrix: object, dst_w: int, dst_h: int):
        super().__init__(matrix, dst_w, dst_h, inverse=True)


def SplitWrite() -> fops.TensorSplit:
    """fkl-python's SplitWrite(): one output buffer holding the channels as consecutive planes. That is the
    memory of fklir's TensorSplit, shaped (C, H, W) ((B, C, H, W) for B planes); fklir's own SplitWrite
    writes one buffer per channel."""
    return fops.TensorSplit()


class BorderReader(fops.BorderReader):
    """fkl-python's BorderReader(border="replicate", value=0.0) (fklir's names the mode `mode`, with no
    default)."""

    def __init__(self, border: str = "replicate", value: object = 0.0):
        super().__init__(border, value)


class ReadSet(fops.ReadSet):
    """fkl-python's ReadSet(value, width, height=1, dtype="float32") (fklir's has no default height)."""

    def __init__(self, value: object, width: int, height: int = 1, dtype: object = "float32"):
        super().__init__(value, width, height, dtype)
