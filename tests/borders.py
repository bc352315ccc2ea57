"""fklir's border modes as the tests' references spell them: numpy.pad's mode names and cv2's border codes."""

from __future__ import annotations

from typing import Any, Literal

PadMode = Literal["constant", "edge", "symmetric", "reflect", "wrap"]

NUMPY_PAD: dict[str, PadMode] = {
    "constant": "constant",
    "replicate": "edge",
    "reflect": "symmetric",
    "reflect101": "reflect",
    "wrap": "wrap",
}


def cv2_borders(cv2: Any) -> dict[str, int]:
    """cv2's BORDER_* code of each mode (cv2 is passed in: its tests import it with pytest.importorskip)."""
    return {
        "constant": cv2.BORDER_CONSTANT,
        "replicate": cv2.BORDER_REPLICATE,
        "reflect": cv2.BORDER_REFLECT,
        "reflect101": cv2.BORDER_REFLECT_101,
        "wrap": cv2.BORDER_WRAP,
    }
