"""Bound compose (SPEC §2), streams, CUDA graphs, multi-GPU and pickling."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.build import STATS
from fklir.runtime.launch import LAUNCHES
from tests.fresh_process import forget_loaded
from tests.runtime.chains import normalise_chain, normalise_reference

RNG = np.random.default_rng(77)
gpu = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")


def _chain(read: fkl.TensorRead, write: fkl.TensorWrite) -> fkl.Pipeline:
    return fkl.compose(
        read, fkl.Cast("float32"), fkl.Mul(0.5), fkl.Sub(3.0), fkl.SaturateCast("uint8"), write, target="gpu"
    )


@pytest.fixture(scope="module")
def torch() -> Any:
    return pytest.importorskip("torch")


# ---- CPU-side rules -----------------------------------------------------------------------------


def test_bindings_are_rejected_where_spec_says() -> None:
    x = np.zeros((4, 5, 3), np.uint8)
    with pytest.raises(ValueError, match="need target='gpu'"):
        fkl.compose(fkl.TensorRead(x), fkl.Add(1), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match="need target='gpu'"):
        fkl.compose(fkl.TensorRead(), fkl.Add(1), fkl.TensorWrite(x), target="cpu")
    with pytest.raises(TypeError, match="bind one array, not a list"):
        fkl.compose(fkl.TensorRead([x, x]), fkl.Add(1), fkl.TensorWrite(), target="gpu")
    with pytest.raises(ValueError, match="chains cannot bind buffers"):
        fkl.compose_divergent([1], (fkl.TensorRead(x), fkl.Add(1), fkl.TensorWrite()), target="cpu")
    with pytest.raises(TypeError, match=r"pipe\(\) needs an input"):
        fkl.compose(fkl.TensorRead(), fkl.Add(1), fkl.TensorWrite(), target="cpu")()


def test_pickled_pipeline_runs_in_a_spawned_process_from_the_disk_cache(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import multiprocessing as mp
    import os

    forget_loaded(monkeypatch)  # a structure that an earlier test planned here would not compile into tmp_path
    os.environ["FKLIR_CACHE_DIR"] = str(tmp_path)  # inherited by the spawned child
    try:
        pipe = normalise_chain("cpu", 0.75, 2.0)
        x = RNG.integers(0, 256, (23, 31, 3), dtype=np.uint8)
        expected = pipe(x)  # compiles into tmp_path
        ctx = mp.get_context("spawn")
        with ctx.Pool(1) as pool:
            got, compiles = pool.apply(_run_pickled, (pickle.dumps(pipe), x))
        np.testing.assert_array_equal(got, expected)
        assert compiles == 0, "the worker must load the kernel from the disk cache"
    finally:
        del os.environ["FKLIR_CACHE_DIR"]


def _run_pickled(blob: bytes, x: np.ndarray) -> tuple[np.ndarray, int]:
    from fklir.backend.build import STATS as child_stats

    pipe = pickle.loads(blob)
    return pipe(x), child_stats.compiles


# ---- GPU ----------------------------------------------------------------------------------------


@gpu
def test_bound_compose_compiles_eagerly_and_runs_argless(torch: Any) -> None:
    x_np = RNG.integers(0, 256, (37, 29, 3), dtype=np.uint8)
    x = torch.from_numpy(x_np).cuda()
    out = torch.empty_like(x)
    before = STATS.compiles + STATS.disk_hits + STATS.memory_hits
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(out))
    assert STATS.compiles + STATS.disk_hits + STATS.memory_hits == before + 1, "compose() compiled eagerly"
    launches = LAUNCHES.count
    assert k() is out
    assert LAUNCHES.count == launches + 1
    np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(x_np))
    # an in-place refill of the bound input is seen by the next call
    refill = RNG.integers(0, 256, (37, 29, 3), dtype=np.uint8)
    x.copy_(torch.from_numpy(refill))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    k(stream=s)
    s.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(refill))


@gpu
def test_bound_and_unbound_share_one_binary(torch: Any) -> None:
    x = torch.from_numpy(RNG.integers(0, 256, (11, 13, 3), dtype=np.uint8)).cuda()
    fkl.compose(fkl.TensorRead(), fkl.Add(3), fkl.Mul(5), fkl.TensorWrite(), target="gpu")(x)
    compiles = STATS.compiles
    k = fkl.compose(fkl.TensorRead(x), fkl.Add(3), fkl.Mul(5), fkl.TensorWrite(), target="gpu")
    assert STATS.compiles == compiles
    np.testing.assert_array_equal(k().cpu().numpy(), ((x.cpu().numpy().astype(int) + 3) * 5 % 256).astype(np.uint8))


@gpu
def test_overrides_and_their_errors(torch: Any) -> None:
    x = torch.from_numpy(RNG.integers(0, 256, (20, 24, 3), dtype=np.uint8)).cuda()
    out = torch.empty_like(x)
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(out))
    y_np = RNG.integers(0, 256, (20, 24, 3), dtype=np.uint8)
    y = torch.from_numpy(y_np).cuda()
    assert k(y) is out
    np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(y_np))
    z = torch.empty_like(x)
    assert k(y, out=z) is z
    np.testing.assert_array_equal(z.cpu().numpy(), normalise_reference(y_np))
    k()  # back to the bindings
    np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(x.cpu().numpy()))
    with pytest.raises(ValueError, match="input override: expected uint8"):
        k(torch.zeros((21, 24, 3), dtype=torch.uint8, device="cuda"))
    with pytest.raises(ValueError, match="input override: expected uint8"):
        k(torch.zeros((20, 24, 3), dtype=torch.float32, device="cuda"))
    with pytest.raises(ValueError, match="out: expected a uint8 array of shape"):
        k(y, out=torch.empty((20, 24, 3), dtype=torch.float32, device="cuda"))
    with pytest.raises(ValueError, match="takes one input"):
        k([y, y])
    with pytest.raises(ValueError, match="bound output does not fit"):
        _chain(fkl.TensorRead(x), fkl.TensorWrite(torch.empty((3, 3, 3), dtype=torch.uint8, device="cuda")))


@gpu
def test_read_only_and_write_only_bindings(torch: Any) -> None:
    x_np = RNG.integers(0, 256, (9, 10, 3), dtype=np.uint8)
    x = torch.from_numpy(x_np).cuda()
    read_only = _chain(fkl.TensorRead(x), fkl.TensorWrite())
    np.testing.assert_array_equal(read_only().cpu().numpy(), normalise_reference(x_np))
    out = torch.empty_like(x)
    write_only = _chain(fkl.TensorRead(), fkl.TensorWrite(out))
    assert write_only(x) is out
    np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(x_np))
    with pytest.raises(TypeError, match="only the output is bound"):
        write_only()


@gpu
def test_cuda_graph_replays_a_bound_pipeline(torch: Any) -> None:
    x = torch.from_numpy(RNG.integers(0, 256, (64, 48, 3), dtype=np.uint8)).cuda()
    out = torch.empty_like(x)
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(out))
    k()  # warm
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=s):
        k(stream=torch.cuda.current_stream())
    for _ in range(3):
        refill = RNG.integers(0, 256, (64, 48, 3), dtype=np.uint8)
        x.copy_(torch.from_numpy(refill))
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(refill))


@gpu
def test_cupy_stream_and_raw_handle(torch: Any) -> None:
    cupy = pytest.importorskip("cupy")
    x_np = RNG.integers(0, 256, (15, 17, 3), dtype=np.uint8)
    x = cupy.asarray(x_np)
    out = cupy.empty_like(x)
    s = cupy.cuda.Stream(non_blocking=True)
    normalise_chain("gpu")(x, out=out, stream=s)
    s.synchronize()
    np.testing.assert_array_equal(cupy.asnumpy(out), normalise_reference(x_np))
    ts = torch.cuda.Stream()
    xt = torch.from_numpy(x_np).cuda()
    ts.wait_stream(torch.cuda.current_stream())
    result = normalise_chain("gpu")(xt, stream=ts.cuda_stream)
    ts.synchronize()
    np.testing.assert_array_equal(result.cpu().numpy(), normalise_reference(x_np))


@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
def test_pipeline_follows_its_input_device(torch: Any) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    pipe = normalise_chain("gpu")
    x_np = RNG.integers(0, 256, (19, 21, 3), dtype=np.uint8)
    callers = torch.cuda.current_device()
    for device in range(torch.cuda.device_count()):
        x = torch.from_numpy(x_np).to(f"cuda:{device}")
        out = pipe(x)
        assert out.device.index == device
        assert torch.cuda.current_device() == callers  # the caller's current device is left alone
        np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(x_np))
