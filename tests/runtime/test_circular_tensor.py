"""CircularTensor (SPEC §7): a ring of the last N frames written through a fused pipeline, read back in
temporal order. CPU here, and the GPU host path over the fake driver (one launch per update and per snapshot, on
the caller's stream, no synchronisation); the GPU tests (streams, CUDA graph capture) skip without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl

gpu = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
W, H, C = 5, 3, 3


def _frame(k: int, dtype: Any = np.uint8, channels: int = C) -> np.ndarray[Any, Any]:
    shape = (H, W, channels) if channels > 1 else (H, W)
    return (np.arange(np.prod(shape)).reshape(shape) % 7 + 10 * k).astype(dtype)


def _expected(pushed: list[np.ndarray[Any, Any]], batch: int, order: str) -> np.ndarray[Any, Any]:
    """The window as fkl's order defines it, unwritten slots as zeros."""
    window = [np.zeros_like(pushed[0])] * max(0, batch - len(pushed)) + pushed[-batch:]
    return np.stack(window if order == "oldest_first" else window[::-1])


@pytest.mark.parametrize("order", ["oldest_first", "newest_first"])
def test_ordering_and_wrap_around_cpu(order: str) -> None:
    ct = fkl.CircularTensor(W, H, 3, "uint8", C, order=order, target="cpu")
    pushed: list[np.ndarray[Any, Any]] = []
    for k in range(1, 8):  # fewer than N frames, then two wraps
        frame = _frame(k)
        ct.update(frame)
        pushed.append(frame)
        assert ct.frames_pushed == k
        np.testing.assert_array_equal(ct.snapshot(), _expected(pushed, 3, order))
    assert len(ct) == 3


def test_native_default_order_is_oldest_first() -> None:
    ct = fkl.CircularTensor(W, H, 2, "uint8", C, target="cpu")
    ct.update(_frame(1)).update(_frame(2))
    np.testing.assert_array_equal(ct.snapshot()[0], _frame(1))


@pytest.mark.parametrize(("dtype", "out_dtype"), [("uint8", None), ("uint8", "float32"), ("float32", "float32")])
@pytest.mark.parametrize("layout", ["packed", "planar"])
def test_layouts_dtypes_and_fused_ops_cpu(dtype: str, out_dtype: str | None, layout: str) -> None:
    ct = fkl.CircularTensor(W, H, 4, dtype, C, layout=layout, out_dtype=out_dtype, target="cpu")
    ops = [fkl.Cast("float32"), fkl.Div(255.0)] if out_dtype == "float32" else []
    pushed = []
    for k in range(1, 6):
        frame = _frame(k, np.dtype(dtype))
        ct.update(frame, ops=[*ops])  # freshly built op lists of the same values: the pipeline is reused
        pushed.append(frame.astype(np.float32) / np.float32(255.0) if ops else frame)
    snap = ct.snapshot()
    expected = _expected(pushed, 4, "oldest_first")
    if layout == "planar":
        expected = expected.transpose(0, 3, 1, 2)
    assert snap.dtype == np.dtype(out_dtype or dtype)
    np.testing.assert_allclose(snap, expected, rtol=1e-6)


def test_single_channel_ring_cpu() -> None:
    ct = fkl.CircularTensor(W, H, 2, "float32", target="cpu")
    ct.update(_frame(1, np.float32, 1), ops=[fkl.Mul(2.0)])
    assert ct.snapshot().shape == (2, H, W)
    np.testing.assert_array_equal(ct.snapshot()[1], _frame(1, np.float32, 1) * 2)


def test_update_pipeline_is_reused_for_equal_ops() -> None:
    ct = fkl.CircularTensor(W, H, 2, "uint8", C, out_dtype="float32", target="cpu")
    ct.update(_frame(1), ops=[fkl.Cast("float32"), fkl.Mul(2.0)])
    first = ct._update
    ct.update(_frame(2), ops=[fkl.Cast("float32"), fkl.Mul(2.0)])
    assert ct._update is first
    ct.update(_frame(3), ops=[fkl.Cast("float32"), fkl.Mul(3.0)])
    assert ct._update is not first
    np.testing.assert_array_equal(ct.snapshot()[1], _frame(3).astype(np.float32) * 3)


def test_errors_cpu() -> None:
    with pytest.raises(ValueError, match="order"):
        fkl.CircularTensor(W, H, 2, order="sideways")
    with pytest.raises(ValueError, match="layout"):
        fkl.CircularTensor(W, H, 2, layout="tiled")
    ct = fkl.CircularTensor(W, H, 2, "uint8", C, target="cpu")
    with pytest.raises(ValueError, match="compute ops only"):
        ct.update(_frame(1), ops=[fkl.TensorWrite()])
    with pytest.raises(ValueError, match="out"):
        ct.update(np.zeros((H + 1, W, C), np.uint8))  # a frame of another size does not fit the slot
    with pytest.raises(ValueError, match="out"):
        ct.update(_frame(1), ops=[fkl.Cast("float32")])  # the ring stores uint8
    assert ct.frames_pushed == 0


# ---- GPU ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch() -> Any:
    return pytest.importorskip("torch")


@gpu
@pytest.mark.parametrize("order", ["oldest_first", "newest_first"])
@pytest.mark.parametrize("layout", ["packed", "planar"])
def test_ordering_layouts_gpu(torch: Any, order: str, layout: str) -> None:
    ct = fkl.CircularTensor(W, H, 3, "uint8", C, order=order, layout=layout, out_dtype="float32")
    pushed = []
    for k in range(1, 6):
        frame = _frame(k)
        ct.update(torch.from_numpy(frame).cuda(), ops=[fkl.Cast("float32"), fkl.Mul(0.5)])
        pushed.append(frame.astype(np.float32) * np.float32(0.5))
    snap = ct.snapshot()
    assert isinstance(snap, fkl.DeviceBuffer)
    expected = _expected(pushed, 3, order)
    np.testing.assert_array_equal(snap.numpy(), expected.transpose(0, 3, 1, 2) if layout == "planar" else expected)


@gpu
def test_snapshot_while_updating_on_a_torch_stream(torch: Any) -> None:
    ct = fkl.CircularTensor(W, H, 4, "uint8", C)
    frames = [torch.from_numpy(_frame(k)).cuda() for k in range(1, 10)]
    out = torch.empty((4, H, W, C), dtype=torch.uint8, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    snaps = []
    with torch.cuda.stream(s):
        for k, frame in enumerate(frames, start=1):
            ct.update(frame, stream=s)
            if k >= 4:
                snaps.append(ct.snapshot(out=torch.empty_like(out), stream=s))
    s.synchronize()
    host = [f.cpu().numpy() for f in frames]
    for i, snap in enumerate(snaps):
        np.testing.assert_array_equal(snap.cpu().numpy(), np.stack(host[i : i + 4]))


@gpu
def test_cuda_graph_captures_an_update(torch: Any) -> None:
    ct = fkl.CircularTensor(W, H, 2, "uint8", C, out_dtype="float32")
    x = torch.from_numpy(_frame(1)).cuda()
    ops = [fkl.Cast("float32"), fkl.Add(1.0)]
    ct.update(x, ops=ops)  # warm: compiled and seen outside the capture
    ct.update(x, ops=ops)
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=s):
        ct.update(x, ops=ops, stream=torch.cuda.current_stream())  # writes slot 0 on every replay
    x.copy_(torch.from_numpy(_frame(5)))
    graph.replay()
    torch.cuda.synchronize()
    assert ct.frames_pushed == 3
    # after three updates the next slot is 1: the window is slot 1 (oldest) then slot 0 (the replayed one)
    np.testing.assert_array_equal(ct.snapshot().numpy()[1], _frame(5).astype(np.float32) + 1)


# ---- the GPU host path, over the fake driver ----------------------------------------------------


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """(driver, torch): the fake driver and torch of tests/runtime/fake_driver.py, kernels that 'compile'
    without a compiler, and host copies that do nothing (the ring's zeroing)."""
    from fklir.backend import build
    from tests.runtime.fake_driver import CUresult, FakeDriver, installed, make_fake_torch

    monkeypatch.setenv("FKLIR_CACHE_DIR", str(tmp_path))
    torch = make_fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(build, "get_backend", lambda: "nvcc")
    monkeypatch.setattr(build, "_compiler_and_flags", lambda target, backend: ("fake nvcc 1.0", ()))
    monkeypatch.setattr(build, "_compile_gpu", lambda emitted, key, arch: b"stand-in cubin")
    with installed(FakeDriver(devices=1)) as driver:
        ok = (CUresult.CUDA_SUCCESS,)
        driver.cuCtxSynchronize = lambda: ok  # pyright: ignore[reportAttributeAccessIssue]
        driver.cuMemcpyHtoD = lambda dst, src, nbytes: ok  # pyright: ignore[reportAttributeAccessIssue]
        yield driver, torch


def test_update_and_snapshot_are_one_launch_each_on_the_callers_stream(fake: Any) -> None:
    driver, torch = fake
    ct = fkl.CircularTensor(W, H, 4, "uint8", C, out_dtype="float32")
    frame = torch.empty((H, W, C), dtype=torch.uint8, device="cuda")
    stream = torch.cuda.Stream()
    ops = [fkl.Cast("float32"), fkl.Mul(0.5)]
    ct.update(frame, ops=ops, stream=stream)  # cold: compiles (a stand-in) and prepares
    ct.snapshot(stream=stream)
    launches, syncs = len(driver.launches), driver.calls.get("cuStreamSynchronize", 0)
    for _ in range(6):
        ct.update(frame, ops=[fkl.Cast("float32"), fkl.Mul(0.5)], stream=stream)
    ct.snapshot(stream=stream)
    assert len(driver.launches) == launches + 7  # one launch per update, one per snapshot
    assert {launch[3] for launch in driver.launches[launches:]} == {stream.cuda_stream}
    assert driver.calls.get("cuStreamSynchronize", 0) == syncs  # a caller's stream is never synchronised
    assert ct.frames_pushed == 7
