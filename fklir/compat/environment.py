"""fkl-python's environment variables. Each names something fkl-python's own build needs (FKL's headers,
its checkout, the nvcc arch and C++ standard, its .so cache); fklir has its own for all of them, so none is
honoured: a set one gets one warning that names it and says what fklir does instead."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping

IGNORED = {
    "FKL_ARCH": "fklir compiles each kernel for the compute capability of the GPU it runs on",
    "FKL_INCLUDE": "fklir compiles against its own op headers (fklir/backend/include)",
    "FKL_ROOT": "fklir compiles against its own op headers (fklir/backend/include)",
    "FKL_STD": "fklir chooses the C++ standard of its generated code",
    "FKL_CACHE": "fklir caches kernels in ~/.cache/fklir or $FKLIR_CACHE_DIR",
}

_warned: set[str] = set()


def warn_ignored(environ: Mapping[str, str] = os.environ) -> list[str]:
    """Warn once per process for each of fkl-python's variables that is set; returns those warned now."""
    named = [name for name in IGNORED if environ.get(name) and name not in _warned]
    for name in named:
        _warned.add(name)
        warnings.warn(f"{name} is set but fklir.compat ignores it: {IGNORED[name]}", RuntimeWarning, stacklevel=3)
    return named
