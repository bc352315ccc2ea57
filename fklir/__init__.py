"""fklir: compile chains of image/tensor ops into one fused kernel (GPU via CUDA, or CPU).

    import fklir as fkl
    pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(10, 10, 200, 100), fkl.Resize(64, 64),
                       fkl.Mul(1 / 255), fkl.TensorWrite(), target="cpu")
    out = pipe(image)

Importing fklir needs no GPU, driver or compiler; they are looked up on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fklir.errors import CacheError as CacheError
from fklir.errors import CompileError as CompileError
from fklir.errors import FklirError as FklirError
from fklir.errors import NoDriverError as NoDriverError
from fklir.errors import ReadOnlyOutputError as ReadOnlyOutputError

if TYPE_CHECKING:
    from fklir.frontend.ops import Add as Add
    from fklir.frontend.ops import AddLast as AddLast
    from fklir.frontend.ops import Blend as Blend
    from fklir.frontend.ops import BorderReader as BorderReader
    from fklir.frontend.ops import Cast as Cast
    from fklir.frontend.ops import ColorConversion as ColorConversion
    from fklir.frontend.ops import Composite as Composite
    from fklir.frontend.ops import Crop as Crop
    from fklir.frontend.ops import Deinterlace as Deinterlace
    from fklir.frontend.ops import Discard as Discard
    from fklir.frontend.ops import Div as Div
    from fklir.frontend.ops import Equal as Equal
    from fklir.frontend.ops import Flip as Flip
    from fklir.frontend.ops import Input as Input
    from fklir.frontend.ops import IsEven as IsEven
    from fklir.frontend.ops import Max as Max
    from fklir.frontend.ops import MidSplit as MidSplit
    from fklir.frontend.ops import MidWrite as MidWrite
    from fklir.frontend.ops import Min as Min
    from fklir.frontend.ops import Mul as Mul
    from fklir.frontend.ops import MxVFloat3 as MxVFloat3
    from fklir.frontend.ops import ReadSet as ReadSet
    from fklir.frontend.ops import Resize as Resize
    from fklir.frontend.ops import Rotate as Rotate
    from fklir.frontend.ops import Saturate as Saturate
    from fklir.frontend.ops import SaturateCast as SaturateCast
    from fklir.frontend.ops import SaturateFloat as SaturateFloat
    from fklir.frontend.ops import SplitWrite as SplitWrite
    from fklir.frontend.ops import StaticLoop as StaticLoop
    from fklir.frontend.ops import Sub as Sub
    from fklir.frontend.ops import TensorPack as TensorPack
    from fklir.frontend.ops import TensorRead as TensorRead
    from fklir.frontend.ops import TensorSplit as TensorSplit
    from fklir.frontend.ops import TensorTSplit as TensorTSplit
    from fklir.frontend.ops import TensorWrite as TensorWrite
    from fklir.frontend.ops import VectorAnd as VectorAnd
    from fklir.frontend.ops import VectorReduce as VectorReduce
    from fklir.frontend.ops import VectorReorder as VectorReorder
    from fklir.frontend.ops import VectorReorderRT as VectorReorderRT
    from fklir.frontend.ops import Warping as Warping
    from fklir.frontend.user_ops import op as op
    from fklir.frontend.values import PerImage as PerImage
    from fklir.frontend.values import per_image as per_image
    from fklir.jit.circular import CircularTensor as CircularTensor
    from fklir.jit.default_stream import default_stream as default_stream
    from fklir.jit.default_stream import set_default_stream as set_default_stream
    from fklir.jit.graph import GraphPipeline as GraphPipeline
    from fklir.jit.pipeline import DivergentPipeline as DivergentPipeline
    from fklir.jit.pipeline import Pipeline as Pipeline
    from fklir.jit.pipeline import compose as compose
    from fklir.jit.pipeline import compose_divergent as compose_divergent
    from fklir.runtime.device_buffer import DeviceBuffer as DeviceBuffer

    __version__: str

# The public names resolve on first use, so that `fklir-opt` (which imports this package) does not
# pay for numpy and the runtime: name -> module that defines it.
_LAZY = {
    "CircularTensor": "fklir.jit.circular",
    "Pipeline": "fklir.jit.pipeline",
    "DivergentPipeline": "fklir.jit.pipeline",
    "GraphPipeline": "fklir.jit.graph",
    "compose": "fklir.jit.pipeline",
    "compose_divergent": "fklir.jit.pipeline",
    "default_stream": "fklir.jit.default_stream",
    "set_default_stream": "fklir.jit.default_stream",
    "DeviceBuffer": "fklir.runtime.device_buffer",
    "op": "fklir.frontend.user_ops",
    "PerImage": "fklir.frontend.values",
    "per_image": "fklir.frontend.values",
}

# The names every release defines besides the op descriptors, which frontend/ops.py lists (PUBLIC_DESCRIPTORS).
_PUBLIC = [
    "CacheError",
    "CircularTensor",
    "CompileError",
    "DeviceBuffer",
    "DivergentPipeline",
    "FklirError",
    "GraphPipeline",
    "NoDriverError",
    "PerImage",
    "Pipeline",
    "ReadOnlyOutputError",
    "__version__",
    "clear_cache",
    "compose",
    "compose_divergent",
    "default_stream",
    "get_backend",
    "gpu_available",
    "op",
    "per_image",
    "set_backend",
    "set_default_stream",
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
    if name == "__all__":
        globals()[name] = [*_PUBLIC, *_descriptors()]
        return globals()[name]
    if name == "jit":  # the subpackage fkl.jit (user kernels), imported on first use
        return importlib.import_module("fklir.jit")
    module = _LAZY.get(name)
    # Only capitalised names can be descriptors: `from fklir import dtypes` asks here first, during
    # the very imports that _descriptors would start.
    if module is None and name[:1].isupper() and name in _descriptors():
        module = "fklir.frontend.ops"
    if module is None:
        raise AttributeError(f"module 'fklir' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__getattr__("__all__")})


def _descriptors() -> dict[str, Any]:
    """Every op descriptor by name (frontend/ops.py's PUBLIC_DESCRIPTORS): the core ops, Add ... Min and the math
    ops derived from their declarations, and any op added there."""
    from fklir.frontend.ops import PUBLIC_DESCRIPTORS

    return PUBLIC_DESCRIPTORS
