"""What every example shares: the target to run on and the moves between host and device.

Each example runs as `python examples/NAME.py [--target cpu|gpu]`; without --target it uses the
GPU when there is one. A part that needs what the machine lacks prints `skipped: <why>` and exits 0,
so that the examples' test can report it as skipped rather than passed.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

import numpy as np

import fklir as fkl


def target(description: str | None = None) -> str:
    """`--target` from the command line, else "gpu" when a GPU is present, else "cpu"."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--target", choices=("cpu", "gpu"), default=None)
    chosen = parser.parse_args().target
    if chosen is not None:
        return chosen
    return "gpu" if fkl.gpu_available() else "cpu"


def opencv() -> Any:
    """cv2 on OpenCV's own code paths: its IPP build answers INTER_LINEAR on float32 with Intel IPP,
    whose weights differ from OpenCV's own (and fklir's) by up to ~5e-3 on 0..255 data."""
    import cv2

    cv2.ipp.setUseIPP(False)
    return cv2


def skip(reason: str) -> NoReturn:
    print(f"skipped: {reason}")
    sys.exit(0)


def to_target(array: np.ndarray, where: str) -> Any:
    """A host array as the pipeline's input: itself on the CPU, a DeviceBuffer copy on the GPU."""
    return array if where == "cpu" else fkl.DeviceBuffer.from_host(array)


def to_host(result: Any) -> np.ndarray:
    """A pipeline's output as a numpy array (DeviceBuffer outputs are copied back)."""
    return result if isinstance(result, np.ndarray) else result.copy_to_host()
