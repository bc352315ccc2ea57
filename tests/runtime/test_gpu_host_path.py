"""The warm host path on a real device (SPEC §5 "Host side"): launches that find another context current (another
library's, another device's, none on a new thread), the unbound warm path's per-call pointers and outputs, and
capture of a warm unbound call in a CUDA graph. test_host_path.py checks the same logic over a fake driver.

Skipped without a CUDA device or torch.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.runtime import cuda_driver
from tests.runtime.chains import normalise_chain, normalise_reference

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda_driver.gpu_available(), reason="needs a CUDA device"),
]
RNG = np.random.default_rng(91)
SHAPE = (37, 29, 3)


@pytest.fixture(scope="module")
def torch() -> Any:
    return pytest.importorskip("torch")


def _image(torch: Any, device: int = 0) -> tuple[np.ndarray, Any]:
    host = RNG.integers(0, 256, SHAPE, dtype=np.uint8)
    return host, torch.from_numpy(host).to(f"cuda:{device}")


@contextlib.contextmanager
def foreign_context(device: int = 0) -> Iterator[int]:
    """A context of `device` that is not its primary one (as another library may create), current on this
    thread for the block; the thread's previous context is current again afterwards."""
    driver = cuda_driver._driver()
    previous = cuda_driver.check(driver.cuCtxGetCurrent(), "cuCtxGetCurrent")
    handle = cuda_driver.check(driver.cuDeviceGet(device), "cuDeviceGet")
    context = cuda_driver.check(driver.cuCtxCreate(None, 0, handle), "cuCtxCreate")
    try:
        yield int(context)
    finally:
        cuda_driver.check(driver.cuCtxDestroy(context), "cuCtxDestroy")
        cuda_driver.check(driver.cuCtxSetCurrent(previous), "cuCtxSetCurrent")


def normalise_chain_bound(x: Any, out: Any) -> fkl.Pipeline:
    """tests.runtime.chains.normalise_chain with its buffers bound."""
    return fkl.compose(
        fkl.TensorRead(x),
        fkl.Cast("float32"),
        fkl.Mul(0.5),
        fkl.Sub(3.0),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(out),
        target="gpu",
    )


def test_bound_and_unbound_calls_run_while_a_foreign_context_is_current(torch: Any) -> None:
    host, x = _image(torch)
    out, y = torch.empty_like(x), torch.empty_like(x)
    bound = normalise_chain_bound(x, out)
    pipe = normalise_chain("gpu")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    bound(stream=s)
    pipe(x, out=y, stream=s)  # both warm now
    s.synchronize()
    out.zero_()
    y.zero_()
    torch.cuda.synchronize()
    # (nothing but fklir runs inside the blocks: torch would allocate in the foreign context)
    with foreign_context(0):
        bound(stream=s)  # a real stream: a launch refused for the wrong context recovers
    with foreign_context(0):
        pipe(x, out=y, stream=s)
    s.synchronize()
    expected = normalise_reference(host)
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    np.testing.assert_array_equal(y.cpu().numpy(), expected)
    y.zero_()
    torch.cuda.synchronize()
    with foreign_context(0):
        pipe(x, out=y)  # torch's current stream, the default one: our context is made current first
    np.testing.assert_array_equal(y.cpu().numpy(), expected)


def test_a_new_thread_launches_without_setting_up_a_context(torch: Any) -> None:
    host, x = _image(torch)
    out, y = torch.empty_like(x), torch.empty_like(x)
    bound = normalise_chain_bound(x, out)
    pipe = normalise_chain("gpu")
    pipe(x, out=y)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            bound(stream=s.cuda_stream)
            pipe(x, out=y, stream=s.cuda_stream)
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert not errors, errors
    s.synchronize()
    expected = normalise_reference(host)
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    np.testing.assert_array_equal(y.cpu().numpy(), expected)


def test_calls_on_one_device_while_another_devices_context_is_current(torch: Any) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    pipe = normalise_chain("gpu")
    images = [_image(torch, device) for device in (0, 1, 0, 1)]
    streams = {device: torch.cuda.Stream(device=device) for device in (0, 1)}
    try:
        for round_ in range(2):  # cold, then warm
            for device, (host, x) in zip((0, 1, 0, 1), images, strict=True):
                torch.cuda.set_device(1 - device)  # the OTHER device's primary context is current
                s = streams[device]
                s.wait_stream(torch.cuda.default_stream(device))
                y = torch.empty_like(x)
                assert pipe(x, out=y, stream=s) is y
                assert torch.cuda.current_device() == 1 - device  # the caller's, not the pipeline's
                s.synchronize()
                np.testing.assert_array_equal(y.cpu().numpy(), normalise_reference(host), err_msg=f"round {round_}")
                out = pipe(x)
                assert out.device.index == device and torch.cuda.current_device() == 1 - device
                np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(host))
    finally:
        torch.cuda.set_device(0)


def test_warm_unbound_calls_take_each_calls_buffers(torch: Any) -> None:
    pipe = normalise_chain("gpu")
    s = torch.cuda.Stream()
    images = [_image(torch) for _ in range(4)]
    s.wait_stream(torch.cuda.current_stream())
    outputs = []
    for host, x in images:
        y = torch.empty_like(x)
        assert pipe(x, out=y, stream=s) is y
        outputs.append((host, y, pipe(x, stream=s)))
    s.synchronize()
    for host, y, allocated in outputs:
        expected = normalise_reference(host)
        np.testing.assert_array_equal(y.cpu().numpy(), expected)
        assert isinstance(allocated, torch.Tensor) and allocated.dtype == torch.uint8
        np.testing.assert_array_equal(allocated.cpu().numpy(), expected)


def test_cuda_graph_replays_a_warm_unbound_call(torch: Any) -> None:
    _, x = _image(torch)
    y = torch.empty_like(x)
    pipe = normalise_chain("gpu")
    pipe(x, out=y)  # warm
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=s):
        pipe(x, out=y, stream=torch.cuda.current_stream())
    refill = RNG.integers(0, 256, SHAPE, dtype=np.uint8)
    x.copy_(torch.from_numpy(refill))
    y.zero_()
    graph.replay()
    torch.cuda.synchronize()
    np.testing.assert_array_equal(y.cpu().numpy(), normalise_reference(refill))


# ---- back-to-back kernels (programmatic dependent launch) -------------------------------------------------


def _producer_and_consumer() -> tuple[fkl.Pipeline, fkl.Pipeline, fkl.Pipeline]:
    """A flat kernel whose output a sampled kernel reads (crops, a linear resize, a normalisation), and the
    consumer on the CPU target as the reference."""
    rects = [(3, 5, 301, 207), (0, 0, 640, 360), (517, 200, 123, 155), (1, 330, 77, 30)]
    consumer = [fkl.Crop(rects), fkl.Resize(97, 61), fkl.Sub((0.25, 0.5, 0.75)), fkl.TensorSplit()]
    producer = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(-0.5), fkl.TensorWrite(), target="gpu")
    gpu = fkl.compose(fkl.TensorRead(), *consumer, target="gpu")
    cpu = fkl.compose(fkl.TensorRead(), *consumer, target="cpu")
    return producer, gpu, cpu


def test_back_to_back_calls_read_what_the_previous_kernel_wrote(torch: Any) -> None:
    """Each producer call rewrites `mid` and the next kernel reads it at once, 12 times on one stream: a
    consumer block that read before the producer finished would see the previous round's values."""
    producer, consumer, reference = _producer_and_consumer()
    hosts = [RNG.random((361, 641, 3), dtype=np.float32) * 4 for _ in range(12)]
    xs = [torch.from_numpy(h).cuda() for h in hosts]
    mid = torch.empty_like(xs[0])
    outs = [torch.full((4, 3, 61, 97), float("nan"), device="cuda") for _ in hosts]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    for x, out in zip(xs, outs, strict=True):
        producer(x, out=mid, stream=s)
        consumer(mid, out=out, stream=s)
    s.synchronize()
    for host, out in zip(hosts, outs, strict=True):
        expected = reference((host * np.float32(2.0)) + np.float32(-0.5))
        np.testing.assert_array_equal(out.cpu().numpy(), expected)


def test_cuda_graph_replays_back_to_back_calls(torch: Any) -> None:
    producer, consumer, reference = _producer_and_consumer()
    host = RNG.random((361, 641, 3), dtype=np.float32)
    x = torch.from_numpy(host).cuda()
    mid = torch.empty_like(x)
    out = torch.empty((4, 3, 61, 97), device="cuda")
    producer(x, out=mid)
    consumer(mid, out=out)  # warm: both plans exist before capture
    graph = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=s):
        producer(x, out=mid, stream=torch.cuda.current_stream())
        consumer(mid, out=out, stream=torch.cuda.current_stream())
    for _ in range(3):
        host = RNG.random((361, 641, 3), dtype=np.float32) * 3
        x.copy_(torch.from_numpy(host))
        out.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(out.cpu().numpy(), reference(host * np.float32(2.0) + np.float32(-0.5)))
