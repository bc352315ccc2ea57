"""The errors fklir raises for conditions a user can act on.

Each class also subclasses the builtin error a user would already catch (ValueError, TypeError,
RuntimeError), so `except ValueError` keeps working while `except fklir.FklirError` catches
every fklir-specific failure.
"""

from __future__ import annotations

from pathlib import Path


class FklirError(Exception):
    """Base class of every fklir-specific error."""


class NoDriverError(FklirError, RuntimeError):
    """No CUDA driver could be loaded, so nothing can run on a GPU."""

    def __init__(self, detail: str = "") -> None:
        message = "no CUDA driver found; use target='cpu'"
        super().__init__(f"{message} ({detail})" if detail else message)


class ReadOnlyOutputError(FklirError, ValueError):
    """`out=` was given an array that cannot be written to."""


class CompileError(FklirError, RuntimeError):
    """A compiler failed (or could not be run). The message holds its stderr and the kept source path."""

    def __init__(self, message: str, *, stderr: str = "", source_path: Path | None = None) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.source_path = source_path


class CacheError(FklirError, ValueError):
    """The kernel cache cannot be used, e.g. FKLIR_CACHE_DIR names a path that is not a writable directory."""


__all__ = ["CacheError", "CompileError", "FklirError", "NoDriverError", "ReadOnlyOutputError"]
