"""set_default_stream("current") on the GPU (skipped without one): a call without stream= on torch tensors is
queued on torch's current stream and returns at once; what torch queues after it sees its result. Pipelines,
fkl.jit kernels and the shipped kernels alike."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.jit import default_stream

pytestmark = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
RNG = np.random.default_rng(291)
SLEEP_CYCLES = 400_000_000  # a kernel of ~0.2 s on any current GPU


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


@pytest.fixture
def current(monkeypatch: pytest.MonkeyPatch) -> None:
    """set_default_stream("current") for the test."""
    monkeypatch.setattr(default_stream, "_mode", [])
    fkl.set_default_stream("current")


def _chain() -> fkl.Pipeline:
    ops = (fkl.Cast("float32"), fkl.Mul(0.5), fkl.Sub(3.0), fkl.SaturateCast("uint8"))
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")


def _expected(x: np.ndarray) -> np.ndarray:
    return np.clip(np.rint(x.astype(np.float32) * np.float32(0.5) - np.float32(3.0)), 0, 255).astype(np.uint8)


def _returns_behind_a_sleep(torch: Any, call: Any) -> float:
    """Seconds that `call()` takes to return while torch's current stream runs a ~0.2 s kernel."""
    torch.cuda.synchronize()
    torch.cuda._sleep(SLEEP_CYCLES)
    start = time.perf_counter()
    call()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed


def test_a_pipeline_call_returns_at_once_and_torch_sees_its_result(torch: Any, current: None) -> None:
    x = RNG.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    src = torch.from_numpy(x).cuda()
    pipe = _chain()
    pipe(src)  # the first call compiles; its time is not the point
    torch.cuda.synchronize()
    results: list[Any] = []
    for _ in range(2):  # a new output, then into the same one
        assert _returns_behind_a_sleep(torch, lambda: results.append(pipe(src))) < 0.05
    # torch's next op on the current stream runs after the kernel: no synchronisation in between
    total = results[-1].to(torch.int64).sum().item()
    assert total == int(_expected(x).astype(np.int64).sum())
    np.testing.assert_array_equal(results[0].cpu().numpy(), _expected(x))


def test_the_internal_default_waits_for_the_stream(torch: Any) -> None:
    src = torch.from_numpy(RNG.integers(0, 256, (64, 48, 3), dtype=np.uint8)).cuda()
    pipe = _chain()
    pipe(src)
    assert _returns_behind_a_sleep(torch, lambda: pipe(src)) > 0.05


def test_a_jit_kernel_and_the_shipped_kernels_return_at_once(torch: Any, current: None) -> None:
    from fklir.kernels.histogram import histogram
    from fklir.kernels.nv12_to_rgb import nv12_to_rgb

    frame = torch.from_numpy(RNG.integers(0, 256, (1080 * 3 // 2, 1920), dtype=np.uint8)).cuda()
    image = torch.from_numpy(RNG.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)).cuda()
    for call in (lambda: nv12_to_rgb(frame), lambda: histogram(image)):
        call()
        torch.cuda.synchronize()
        assert _returns_behind_a_sleep(torch, call) < 0.05
    counts = histogram(image)
    assert counts.sum().item() == 1080 * 1920 * 3  # torch reads the counts after the kernel
