"""fklir: compile chains of image/tensor ops into one fused kernel (GPU via CUDA, or CPU).

    import fklir as fkl
    pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(10, 10, 200, 100), fkl.Resize(64, 64),
                       fkl.Mul(1 / 255), fkl.TensorWrite(), target="cpu")
    out = pipe(image)

Importing fklir needs no GPU, driver or compiler; they are looked up on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fklir.frontend.compose import DivergentPipeline, Pipeline, compose, compose_divergent
from fklir.frontend.ops import (
    Add,
    Cast,
    Crop,
    Div,
    Max,
    Min,
    Mul,
    Resize,
    SaturateCast,
    Sub,
    TensorRead,
    TensorSplit,
    TensorWrite,
)

if TYPE_CHECKING:
    from fklir.runtime.device_buffer import DeviceBuffer

__all__ = [
    "Add",
    "Cast",
    "Crop",
    "DeviceBuffer",
    "Div",
    "DivergentPipeline",
    "Max",
    "Min",
    "Mul",
    "Pipeline",
    "Resize",
    "SaturateCast",
    "Sub",
    "TensorRead",
    "TensorSplit",
    "TensorWrite",
    "clear_cache",
    "compose",
    "compose_divergent",
    "get_backend",
    "gpu_available",
    "set_backend",
]

_BACKENDS = ("nvcc",)
_backend = "nvcc"


def get_backend() -> str:
    """The GPU compiler in use ("nvcc")."""
    return _backend


def set_backend(name: str) -> None:
    """Choose the GPU compiler. Only "nvcc" exists so far."""
    global _backend
    if name not in _BACKENDS:
        raise ValueError(f"set_backend: unknown backend {name!r}; available: {', '.join(_BACKENDS)}")
    _backend = name


def clear_cache() -> None:
    """Delete every compiled kernel from the disk cache (~/.cache/fklir or $FKLIR_CACHE_DIR)."""
    from fklir.backend.cache import DiskCache

    DiskCache().clear()


def gpu_available() -> bool:
    """True when a CUDA driver and at least one GPU are present."""
    from fklir.backend.cuda_driver import gpu_available as available

    return available()


def __getattr__(name: str) -> Any:
    if name == "DeviceBuffer":
        from fklir.runtime.device_buffer import DeviceBuffer

        return DeviceBuffer
    raise AttributeError(f"module 'fklir' has no attribute {name!r}")
