"""Shared test setup: a private kernel cache per test session, so tests never see (or leave) user state."""

from __future__ import annotations

import os
import re
import tempfile

import pytest

os.environ.setdefault("FKLIR_CACHE_DIR", tempfile.mkdtemp(prefix="fklir-test-cache-"))

try:
    import cv2

    # cv2's default: Intel IPP answers float32 INTER_LINEAR with exact source coordinates, as fklir
    # does; OpenCV's own C++ path rounds them to float32, past SPEC's tolerance at large sizes (see
    # fklir/interpreters/semantics_geometry.py). Set explicitly: tests may toggle it.
    cv2.ipp.setUseIPP(True)
except ImportError:  # opencv is a test extra; tests that need it import it themselves
    pass


def pytest_addoption(parser: object) -> None:
    parser.addoption(  # type: ignore[attr-defined]
        "--gpu-backend",
        choices=("nvcc", "nvrtc"),
        default=None,
        help="compile every GPU kernel of the run with this backend (fkl.set_backend); default: the automatic choice",
    )


def pytest_configure(config: object) -> None:
    backend = config.getoption("--gpu-backend")  # type: ignore[attr-defined]
    if backend is not None:
        import fklir

        fklir.set_backend(backend)


# A test that skips for want of a GPU is a GPU test: marking it lets `-m gpu` pick exactly those (the
# sanitizer runs in docs/testing.md), without a second, hand-kept list of markers.
_NEEDS_GPU = re.compile(r"\bGPU\b|CUDA device", re.IGNORECASE)


def pytest_collection_modifyitems(config: object, items: list[pytest.Item]) -> None:
    for item in items:
        for mark in item.iter_markers("skipif"):
            if _NEEDS_GPU.search(str(mark.kwargs.get("reason", ""))):
                item.add_marker(pytest.mark.gpu)
                break
