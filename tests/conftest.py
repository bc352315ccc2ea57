"""Shared test setup: a private kernel cache per test session, so tests never see (or leave) user state."""

from __future__ import annotations

import os
import tempfile

os.environ.setdefault("FKLIR_CACHE_DIR", tempfile.mkdtemp(prefix="fklir-test-cache-"))

try:
    import cv2

    # OpenCV's IPP build answers INTER_LINEAR on float32 with Intel IPP, whose weights differ from
    # OpenCV's own C++ path by up to ~5e-3 on 0..255 data; SPEC's convention is OpenCV's own path.
    cv2.ipp.setUseIPP(False)
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
