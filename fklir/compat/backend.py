"""fkl-python's `fkl.backend`: get_backend() returns an object whose `.kind` names the GPU compiler,
set_backend(kind) chooses it, clear_cache() empties the kernel cache."""

from __future__ import annotations

import warnings
from pathlib import Path

import fklir
from fklir.backend import build

# fkl-python's compilers that fklir lacks: a script choosing one gets fklir's automatic choice
_WITHOUT_EQUIVALENT = ("clang", "cpu")


class CompilerBackend:
    """The GPU compiler fklir uses: `kind` is "nvcc" or "nvrtc" (fkl-python's are "clang" or "nvcc");
    `cache_dir` is where compiled kernels are kept."""

    NVCC = "nvcc"
    NVRTC = "nvrtc"

    def __init__(self, kind: str | None = None):
        self.kind = kind or build.get_backend()

    @property
    def cache_dir(self) -> Path:
        from fklir.backend.cache import DiskCache

        return DiskCache().root

    def __repr__(self) -> str:
        return f"CompilerBackend(kind={self.kind!r})"


def get_backend() -> CompilerBackend:
    return CompilerBackend()


def set_backend(kind: str | None) -> None:
    """Choose "nvcc" or "nvrtc" (None: automatic). fkl-python's "clang" and "cpu" have no fklir GPU
    compiler: they warn and leave the choice automatic."""
    if kind in _WITHOUT_EQUIVALENT:
        warnings.warn(
            f"set_backend({kind!r}): fklir compiles GPU kernels with nvcc or NVRTC; using the automatic choice",
            RuntimeWarning,
            stacklevel=2,
        )
        kind = None
    build.set_backend(kind)


def clear_cache() -> None:
    fklir.clear_cache()
