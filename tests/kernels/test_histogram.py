"""The shipped histogram kernel (fklir/kernels/histogram) against numpy's bincount per channel, exactly, on
both targets: random, constant and small-valued images, odd sizes, 1 to 4 channels, batches, empty images,
misaligned GPU inputs (the kernel's byte-by-byte head and tail), every input framework and its errors."""

from __future__ import annotations

import ctypes
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build, compilers
from fklir.jit.tensors import TensorView
from fklir.kernels import histogram as histogram_module
from fklir.kernels.histogram import histogram
from fklir.runtime import cuda_driver
from tests.runtime.fake_driver import FakeDriver, installed, jit_without_compiler

RNG = np.random.default_rng(1616)
gpu = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")

Histogram = Callable[..., Any]


def reference(images: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """np.bincount of every channel of every image: (C, 256) for an image, (B, C, 256) for a batch."""
    batch = images if images.ndim == 4 else images[None] if images.ndim == 3 else images[None, ..., None]
    c = batch.shape[3]
    # one bincount per image: value v of channel j counts at j * 256 + v
    per_image = [np.bincount((np.arange(c) * 256 + image).ravel(), minlength=c * 256) for image in batch]
    counts = np.array(per_image, np.int64).reshape(-1, c, 256)
    return counts if images.ndim == 4 else counts[0]


def counts_shape(shape: tuple[int, ...]) -> tuple[int, ...]:
    channels = shape[-1] if len(shape) > 2 else 1
    return (shape[0], channels, 256) if len(shape) == 4 else (channels, 256)


def random_images(shape: tuple[int, ...], kind: str = "random") -> np.ndarray[Any, Any]:
    if kind == "random":
        return RNG.integers(0, 256, shape, dtype=np.uint8)
    if kind == "few values":  # long runs of equal values: the GPU's merged counts
        return RNG.integers(0, 3, shape, dtype=np.uint8) * 127
    return np.full(shape, {"zeros": 0, "255": 255}[kind], np.uint8)


SHAPES = [
    (33, 17),
    (1, 1),
    (33, 17, 1),
    (33, 17, 2),
    (33, 17, 3),
    (17, 33, 4),
    (5, 33, 17, 3),
    (3, 7, 9, 1),
    (2, 31, 29, 4),
    (4, 1, 1, 2),
]
KINDS = ["random", "few values", "zeros", "255"]


def on_host(counts: Any) -> np.ndarray[Any, Any]:
    """A numpy copy of counts in any framework."""
    if isinstance(counts, fkl.DeviceBuffer):
        return counts.copy_to_host()
    if hasattr(counts, "get"):  # CuPy
        return counts.get()
    if hasattr(counts, "cpu"):  # torch
        return counts.cpu().numpy()
    return np.asarray(counts)


def check(run: Histogram, images: np.ndarray[Any, Any], convert: Callable[[Any], Any] = lambda a: a) -> None:
    got = on_host(run(convert(images)))
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, reference(images))


# ----- CPU ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_cpu_equals_numpy(shape: tuple[int, ...], kind: str) -> None:
    check(histogram, random_images(shape, kind))


def test_cpu_full_hd_batch_in_many_pieces() -> None:
    check(histogram, random_images((3, 1080, 1920, 3)))
    check(histogram, random_images((1080, 1920, 3), "few values"))


def test_cpu_agrees_with_opencv() -> None:
    cv2 = pytest.importorskip("cv2")
    image = random_images((45, 61, 3))
    counts = histogram(image)
    for c in range(3):
        expected = cv2.calcHist([image], [c], None, [256], [0, 256]).ravel()  # (256, 1) before OpenCV 5
        np.testing.assert_array_equal(counts[c], expected.astype(np.int64))


@pytest.mark.parametrize("shape", [(0, 5), (5, 0, 3), (0, 0, 4), (3, 0, 7, 2), (0, 4, 4, 3)], ids=str)
def test_empty_images_give_zero_counts(shape: tuple[int, ...]) -> None:
    out = np.full(counts_shape(shape), 9, np.int32)
    assert histogram(np.zeros(shape, np.uint8), out=out) is out
    assert not out.any()


def test_out_is_written_and_returned_and_earlier_counts_are_cleared() -> None:
    images = random_images((2, 9, 11, 3))
    out = np.full((2, 3, 256), -5, np.int32)
    for _ in range(2):  # a second call counts afresh, not on top
        assert histogram(images, out=out) is out
        np.testing.assert_array_equal(out, reference(images))


def test_torch_cpu_tensors_give_torch_counts() -> None:
    torch = pytest.importorskip("torch")
    images = random_images((2, 13, 7, 4))
    counts = histogram(torch.from_numpy(images))
    assert isinstance(counts, torch.Tensor) and counts.dtype == torch.int32
    np.testing.assert_array_equal(counts.numpy(), reference(images))


def test_errors() -> None:
    image = random_images((6, 5, 3))
    with pytest.raises(
        ValueError, match=r"^images: expected \(H, W\), \(H, W, C\) or \(B, H, W, C\), got shape \(90,\)$"
    ):
        histogram(image.ravel())
    with pytest.raises(ValueError, match=r"^images: 5 channels \(shape \(6, 5, 5\)\); histogram counts 1 to 4$"):
        histogram(random_images((6, 5, 5)))
    with pytest.raises(TypeError, match=r"^images: dtype is float32, but must be uint8$"):
        histogram(image.astype(np.float32))
    with pytest.raises(ValueError, match=r"^images: not contiguous"):
        histogram(random_images((6, 10, 3))[:, ::2])
    with pytest.raises(
        ValueError, match=r"^out: expected shape \(3, 256\) for images of shape \(6, 5, 3\), got \(1, 3, 256\)$"
    ):
        histogram(image, out=np.zeros((1, 3, 256), np.int32))
    with pytest.raises(TypeError, match=r"^out: dtype is float32, but must be int32$"):
        histogram(image, out=np.zeros((3, 256), np.float32))
    with pytest.raises(ValueError, match=r"^out: dim 1 is 3, but C = 4 \(bound by images\)$"):
        histogram(random_images((2, 6, 5, 4)), out=np.zeros((2, 3, 256), np.int32))
    with pytest.raises(ValueError, match=r"^the CPU target has no streams: call without stream=$"):
        histogram(image, stream=1)


def test_images_of_more_pixels_than_int32_counts_are_refused() -> None:
    huge = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), shape=(46341, 46341), strides=(0, 0))
    with pytest.raises(ValueError, match=r"^images: 46341 x 46341 pixels is over 2147483647, more than int32"):
        histogram(huge)


# ----- GPU ---------------------------------------------------------------------------------------------


@pytest.fixture(params=["nvcc", "nvrtc"])
def gpu_histogram(request: pytest.FixtureRequest) -> Iterator[Histogram]:
    """histogram compiled by each GPU compiler: the module imported afresh declares new kernels, whose
    instances the chosen compiler builds (a kernel keeps the instances it loaded)."""
    name = str(request.param)
    if not (compilers.nvcc_available() if name == "nvcc" else compilers.nvrtc_available()):
        pytest.skip(f"needs {name}")
    previous = build._gpu_backend  # pyright: ignore[reportPrivateUsage]
    fkl.set_backend(name)
    yield importlib.reload(histogram_module).histogram
    fkl.set_backend(previous)
    importlib.reload(histogram_module)


@pytest.fixture
def torch() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


@gpu
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_gpu_equals_numpy(gpu_histogram: Histogram, torch: Any, shape: tuple[int, ...], kind: str) -> None:
    check(gpu_histogram, random_images(shape, kind), lambda a: torch.from_numpy(a).cuda())


@gpu
@pytest.mark.parametrize(
    "shape",
    [(1080, 1920), (1080, 1920, 3), (4, 1080, 1920, 4), (64, 1080, 1920, 1), (8, 1080, 1920, 3), (2, 4000, 3000, 2)],
    ids=str,
)
def test_gpu_large_images_and_batches(gpu_histogram: Histogram, torch: Any, shape: tuple[int, ...]) -> None:
    # (2, 4000, 3000, 2): more blocks than MAX_BLOCKS_PER_IMAGE would take, and the batches: more than a few
    # rounds of the device's resident blocks, so each block takes several rounds
    check(gpu_histogram, random_images(shape), lambda a: torch.from_numpy(a).cuda())
    check(gpu_histogram, random_images(shape, "few values"), lambda a: torch.from_numpy(a).cuda())


@gpu
def test_gpu_more_images_than_a_grid_column(gpu_histogram: Histogram, torch: Any) -> None:
    check(gpu_histogram, random_images((70000, 2, 3, 2)), lambda a: torch.from_numpy(a).cuda())


@gpu
@pytest.mark.parametrize("offset", [1, 3, 7, 15])
@pytest.mark.parametrize("channels", [1, 3, 4])
def test_gpu_misaligned_images(gpu_histogram: Histogram, torch: Any, offset: int, channels: int) -> None:
    images = random_images((3, 37, 53, channels))
    flat = torch.from_numpy(np.concatenate([np.zeros(offset, np.uint8), images.ravel()])).cuda()
    counts = gpu_histogram(flat[offset:].view(images.shape))  # a view whose data starts off 16-byte alignment
    np.testing.assert_array_equal(on_host(counts), reference(images))


@gpu
@pytest.mark.parametrize("shape", [(0, 5), (5, 0, 3), (3, 0, 7, 2), (0, 4, 4, 3)], ids=str)
def test_gpu_empty_images(gpu_histogram: Histogram, torch: Any, shape: tuple[int, ...]) -> None:
    check(gpu_histogram, np.zeros(shape, np.uint8), lambda a: torch.from_numpy(a).cuda())


@gpu
def test_gpu_cupy_and_device_buffers(gpu_histogram: Histogram) -> None:
    images = random_images((2, 33, 17, 3))
    assert isinstance(gpu_histogram(fkl.DeviceBuffer.from_host(images)), fkl.DeviceBuffer)
    check(gpu_histogram, images, fkl.DeviceBuffer.from_host)
    check(gpu_histogram, random_images((33, 17)), fkl.DeviceBuffer.from_host)  # a view with both axes added
    cupy = pytest.importorskip("cupy")
    check(gpu_histogram, images, cupy.asarray)


@gpu
def test_gpu_out_and_the_callers_stream(gpu_histogram: Histogram, torch: Any) -> None:
    images_np = random_images((3, 33, 17, 3))
    images = torch.from_numpy(images_np).cuda()
    out = torch.full((3, 3, 256), 7, dtype=torch.int32, device="cuda")
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):  # each call clears out first
            assert gpu_histogram(images, out=out, stream=stream) is out
        doubled = out * 2  # queued after the kernels on the same stream
    stream.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), reference(images_np))
    np.testing.assert_array_equal(doubled.cpu().numpy(), reference(images_np) * 2)


@gpu
def test_gpu_and_cpu_arrays_are_refused_together(torch: Any) -> None:
    with pytest.raises(TypeError, match=r"CPU and GPU tensors cannot be mixed"):
        histogram(torch.zeros((2, 4, 4, 3), dtype=torch.uint8, device="cuda"), out=np.zeros((2, 3, 256), np.int32))


@gpu
def test_gpu_calls_in_turn_on_one_stream_share_its_scratch(gpu_histogram: Histogram, torch: Any) -> None:
    """Each call leaves the stream's scratch zero for the next, whatever their batch and channels."""
    stream = torch.cuda.Stream()
    shapes = [(3, 33, 17, 3), (1080, 1920), (2, 31, 29, 4), (3, 33, 17, 3), (5, 0, 3), (64, 40, 30, 1)]
    images = [random_images(shape) for shape in shapes]
    with torch.cuda.stream(stream):
        results = [gpu_histogram(torch.from_numpy(image).cuda(), stream=stream) for image in images]
    stream.synchronize()
    for image, counts in zip(images, results, strict=True):
        np.testing.assert_array_equal(on_host(counts), reference(image))


@gpu
def test_gpu_concurrent_calls_on_two_streams(gpu_histogram: Histogram, torch: Any) -> None:
    """Calls on two streams at once, each into its own out, many times over."""
    streams = [torch.cuda.Stream() for _ in range(2)]
    images_np = [random_images((4, 270, 480, 3)), random_images((4, 270, 480, 3), "few values")]
    images = [torch.from_numpy(image).cuda() for image in images_np]
    outs = [[torch.full((4, 3, 256), -1, dtype=torch.int32, device="cuda") for _ in range(8)] for _ in streams]
    for stream in streams:
        stream.wait_stream(torch.cuda.current_stream())
    for i in range(8):
        for stream, image, out in zip(streams, images, outs, strict=True):
            with torch.cuda.stream(stream):
                gpu_histogram(image, out=out[i], stream=stream)
    torch.cuda.synchronize()
    for image, out in zip(images_np, outs, strict=True):
        for counts in out:
            np.testing.assert_array_equal(counts.cpu().numpy(), reference(image))


@gpu
def test_gpu_empty_images_clear_out(gpu_histogram: Histogram, torch: Any) -> None:
    out = torch.full((3, 2, 256), 9, dtype=torch.int32, device="cuda")
    gpu_histogram(torch.zeros((3, 0, 7, 2), dtype=torch.uint8, device="cuda"), out=out)
    assert not out.cpu().numpy().any()


# ----- the GPU host path, on a fake driver (tests/runtime/fake_driver.py) ------------------------------


@pytest.fixture
def fake_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[FakeDriver, Any, Any]]:
    """(driver, torch, the histogram module imported afresh): a fake driver that records each launch's scratch
    pointer, a fake torch, and instances 'loaded' without a compiler. The module is imported afresh again
    after, so that no fake instance outlives the test."""
    torch = jit_without_compiler(monkeypatch, tmp_path)
    with installed(FakeDriver()) as driver:
        driver.cuCtxSynchronize = lambda: (0,)
        driver.cuMemcpyHtoD = lambda destination, source, nbytes: (0,)
        launch = driver.cuLaunchKernel
        driver.scratch = []  # the scratch pointer of each accepted launch

        def recording(f: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, *rest: Any) -> Any:
            result = launch(f, gx, gy, gz, bx, by, bz, *rest)
            if not result[0]:
                views = (ctypes.c_void_p * 3).from_address(rest[2])
                driver.scratch.append(int(TensorView.from_address(views[2]).data))
            return result

        driver.cuLaunchKernel = recording
        yield driver, torch, importlib.reload(histogram_module)
    importlib.reload(histogram_module)


def test_one_launch_per_gpu_call_with_a_scratch_per_stream(fake_gpu: tuple[FakeDriver, Any, Any]) -> None:
    driver, torch, module = fake_gpu
    images = torch.empty((2, 8, 8, 3), dtype=torch.uint8)
    out = torch.empty((2, 3, 256), dtype=torch.int32)
    first, second = torch.cuda.Stream(), torch.cuda.Stream()
    for stream in (first, first, second):
        assert module.histogram(images, out=out, stream=stream) is out
    assert [launch[3] for launch in driver.launches] == [first.cuda_stream] * 2 + [second.cuda_stream]
    assert driver.scratch[0] == driver.scratch[1] != driver.scratch[2], "calls on one stream share its scratch"
    more = torch.empty((5, 8, 8, 3), dtype=torch.uint8)
    module.histogram(more, out=torch.empty((5, 3, 256), dtype=torch.int32), stream=first)
    assert driver.scratch[3] not in driver.scratch[:3], "a larger batch gets a larger scratch"
    module.histogram(images, out=out, stream=first)
    assert driver.scratch[4] == driver.scratch[3]


def test_gpu_blocks_per_image_from_its_bytes_and_for_a_batch_from_the_device(
    fake_gpu: tuple[FakeDriver, Any, Any],
) -> None:
    _driver, _torch, module = fake_gpu
    layout = module.GREY_LAYOUT
    per_block = layout.threads * layout.words * 16
    (blocks, rows, _), (threads, _, _) = layout.grid(1, 1080, 1920, 1, 0)
    assert (blocks, rows, threads) == (-(-1080 * 1920 // per_block), 1, layout.threads), "one round per thread"
    resident = cuda_driver.resident_threads(0) // layout.threads
    (blocks, rows, _), _block = layout.grid(64, 1080, 1920, 1, 0)
    assert rows == 64
    assert (blocks - 1) * 64 < layout.batch_waves * resident <= blocks * 64, "the waves asked for, no more"
    assert layout.grid(1, 0, 7, 3, 0)[0][0] == 1, "an empty image still has a block to write its zero counts"


def test_gpu_batch_of_no_images_launches_nothing(fake_gpu: tuple[FakeDriver, Any, Any]) -> None:
    driver, torch, module = fake_gpu
    out = torch.empty((0, 3, 256), dtype=torch.int32)
    assert module.histogram(torch.empty((0, 4, 4, 3), dtype=torch.uint8), out=out) is out
    assert driver.launches == [], "a grid of no image rows is not a launch"


def test_gpu_layout_by_channel_count(fake_gpu: tuple[FakeDriver, Any, Any]) -> None:
    _driver, _torch, module = fake_gpu
    assert module.layout_for(1) == module.GREY_LAYOUT
    assert {module.layout_for(c) for c in (2, 3, 4)} == {module.COLOUR_LAYOUT}
    for c in (1, 3):
        (blocks, rows, _), (threads, _, _) = module._grid(1, 1080, 1920, c, 0)  # pyright: ignore[reportPrivateUsage]
        layout = module.layout_for(c)
        assert threads == layout.threads and rows == 1
        assert blocks == -(-1080 * 1920 * c // (layout.threads * layout.words * 16))


@gpu
def test_gpu_repeated_calls_on_a_stream_count_each_call_s_images(gpu_histogram: Histogram, torch: Any) -> None:
    """Calls on arrays like the last ones on a caller's stream (jit/warm_calls.py): each counts its own images,
    into its own out or a new one."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    batches = [random_images((2, 33, 17, 3), kind) for kind in (*KINDS, *KINDS)]
    given = [torch.full((2, 3, 256), -1, dtype=torch.int32, device="cuda") for _ in batches]
    with torch.cuda.stream(stream):
        images = [torch.from_numpy(batch).cuda() for batch in batches]
        into = [gpu_histogram(image, out=out, stream=stream) for image, out in zip(images, given, strict=True)]
        made = [gpu_histogram(image, stream=stream) for image in images]
    stream.synchronize()
    assert all(a is b for a, b in zip(into, given, strict=True))
    assert len({m.data_ptr() for m in made}) == len(made)
    for batch, out, new in zip(batches, given, made, strict=True):
        np.testing.assert_array_equal(out.cpu().numpy(), reference(batch))
        np.testing.assert_array_equal(new.cpu().numpy(), reference(batch))
