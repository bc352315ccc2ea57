"""fklir: compile chains of image/tensor ops into one fused kernel (GPU via CUDA, or CPU).

    import fklir as fkl
    pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(10, 10, 200, 100), fkl.Resize(64, 64),
                       fkl.Mul(1 / 255), fkl.TensorWrite(), target="cpu")
    out = pipe(image)

Importing fklir needs no GPU, driver or compiler; they are looked up on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fklir.errors import CacheError, CompileError, FklirError, NoDriverError, ReadOnlyOutputError

if TYPE_CHECKING:
    from fklir.frontend.ops import (
        Abs,
        Add,
        AddLast,
        BorderReader,
        Cast,
        ColorConversion,
        Crop,
        Deinterlace,
        Discard,
        Div,
        Exp,
        IsEven,
        Log,
        Max,
        Min,
        Mul,
        MxVFloat3,
        Pow,
        ReadSet,
        Resize,
        Saturate,
        SaturateCast,
        SaturateFloat,
        SplitWrite,
        Sqrt,
        StaticLoop,
        Sub,
        TensorPack,
        TensorRead,
        TensorSplit,
        TensorTSplit,
        TensorWrite,
        VectorAnd,
        VectorReduce,
        VectorReorder,
        VectorReorderRT,
        Warping,
    )
    from fklir.jit.pipeline import DivergentPipeline, Pipeline, compose, compose_divergent
    from fklir.runtime.device_buffer import DeviceBuffer

    __version__: str

# The public names resolve on first use, so that `fklir-opt` (which imports this package) does not
# pay for numpy and the runtime: name -> module that defines it.
_LAZY = {
    "Pipeline": "fklir.jit.pipeline",
    "DivergentPipeline": "fklir.jit.pipeline",
    "compose": "fklir.jit.pipeline",
    "compose_divergent": "fklir.jit.pipeline",
    "DeviceBuffer": "fklir.runtime.device_buffer",
}

__all__ = [
    "Abs",
    "Add",
    "AddLast",
    "BorderReader",
    "CacheError",
    "Cast",
    "ColorConversion",
    "CompileError",
    "Crop",
    "Deinterlace",
    "DeviceBuffer",
    "Discard",
    "Div",
    "DivergentPipeline",
    "Exp",
    "FklirError",
    "IsEven",
    "Log",
    "Max",
    "Min",
    "Mul",
    "MxVFloat3",
    "NoDriverError",
    "Pipeline",
    "Pow",
    "ReadOnlyOutputError",
    "ReadSet",
    "Resize",
    "Saturate",
    "SaturateCast",
    "SaturateFloat",
    "SplitWrite",
    "Sqrt",
    "StaticLoop",
    "Sub",
    "TensorPack",
    "TensorRead",
    "TensorSplit",
    "TensorTSplit",
    "TensorWrite",
    "VectorAnd",
    "VectorReduce",
    "VectorReorder",
    "VectorReorderRT",
    "Warping",
    "__version__",
    "clear_cache",
    "compose",
    "compose_divergent",
    "get_backend",
    "gpu_available",
    "set_backend",
]


# The version when fklir runs from a source tree that is not installed; tests keep it equal to pyproject's.
_SOURCE_VERSION = "0.1.0"


def _version() -> str:
    """The installed distribution's version (what pip and `fklir --version` agree on)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("fklir")
    except PackageNotFoundError:
        return _SOURCE_VERSION


def get_backend() -> str:
    """The GPU compiler in use: "nvcc" or "nvrtc" (automatic: nvcc when on PATH, else NVRTC)."""
    from fklir.backend.build import get_backend as current

    return current()


def set_backend(name: str | None) -> None:
    """Choose the GPU compiler, "nvcc" or "nvrtc" (None: automatic). Kernels are cached per compiler."""
    from fklir.backend.build import set_backend as choose

    choose(name)


def clear_cache() -> None:
    """Delete every compiled kernel from the disk cache (~/.cache/fklir or $FKLIR_CACHE_DIR)."""
    from fklir.backend.cache import DiskCache

    DiskCache().clear()


def gpu_available() -> bool:
    """True when a CUDA driver and at least one GPU are present."""
    from fklir.runtime.cuda_driver import gpu_available as available

    return available()


def __getattr__(name: str) -> Any:
    import importlib

    if name == "__version__":  # resolved on first use: importlib.metadata is slow to import
        globals()[name] = _version()
        return globals()[name]
    module = _LAZY.get(name)
    if module is None and name in __all__:
        module = "fklir.frontend.ops"
    if module is None:
        raise AttributeError(f"module 'fklir' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
