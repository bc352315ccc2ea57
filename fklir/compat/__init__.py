"""fkl-python's public API on fklir's pipelines (SPEC §7): its names, signatures, defaults and semantics.

    import fklir.compat as fkl          # or: fklir.compat.install(); import fkl
    pipe = fkl.compose(fkl.TensorRead(), fkl.Warping(M, w, h), fkl.TensorWrite())   # M: output -> source

`python -m fklir.compat script.py [args]` runs an fkl-python script unchanged. What differs from fklir's
native API, and why, is in docs/migrating-from-fkl-python.md. fkl-python's FKL_* environment variables are
reported (one warning each) and ignored: fklir builds with its own headers, arch and cache.
"""

from __future__ import annotations

import sys

from fklir.compat import backend, tensor
from fklir.compat.backend import CompilerBackend, clear_cache, get_backend, set_backend
from fklir.compat.circular import CircularTensor
from fklir.compat.environment import warn_ignored
from fklir.compat.ops import BorderReader, ReadSet, SplitWrite, Warping
from fklir.compat.pipeline import DivergentKernel, FusedKernel, compose, compose_divergent
from fklir.compat.tensor import DeviceBuffer
from fklir.frontend.ops import (
    Add,
    AddLast,
    Cast,
    ColorConversion,
    Crop,
    Deinterlace,
    Discard,
    Div,
    IsEven,
    Max,
    Min,
    Mul,
    MxVFloat3,
    Resize,
    Saturate,
    SaturateCast,
    SaturateFloat,
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
)

__all__ = [
    "Add",
    "AddLast",
    "BorderReader",
    "Cast",
    "CircularTensor",
    "ColorConversion",
    "CompilerBackend",
    "Crop",
    "Deinterlace",
    "DeviceBuffer",
    "Discard",
    "Div",
    "DivergentKernel",
    "FusedKernel",
    "IsEven",
    "Max",
    "Min",
    "Mul",
    "MxVFloat3",
    "ReadSet",
    "Resize",
    "Saturate",
    "SaturateCast",
    "SaturateFloat",
    "SplitWrite",
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
    "backend",
    "clear_cache",
    "compose",
    "compose_divergent",
    "get_backend",
    "install",
    "set_backend",
    "tensor",
]

# fkl-python's module names that its scripts import, and what stands for each
MODULES = {"fkl": sys.modules[__name__], "fkl.tensor": tensor, "fkl.backend": backend}


def install() -> None:
    """Make `import fkl` (and `fkl.tensor`, `fkl.backend`) resolve to this package."""
    sys.modules.update(MODULES)


warn_ignored()
