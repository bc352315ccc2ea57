"""What a test does to stand for a new process that shares the disk cache."""

import pytest

from fklir.backend import build
from fklir.jit import pipeline


def forget_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernels this process loaded and the plans its pipelines share, forgotten until the test ends."""
    monkeypatch.setattr(build, "_LOADED", {})
    monkeypatch.setattr(pipeline, "_SHARED_PLANS", {})
