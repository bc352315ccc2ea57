"""DLPack on the GPU: DeviceBuffer → torch / CuPy without a copy (ownership moves to the consumer), any
producer → DeviceBuffer or a pipeline input, and the stream contract. Skipped without a CUDA device.

"Still held" and "released" are read from the allocation itself (the driver's buffer id of its address,
tests/runtime/gpu_memory.py), not from free device memory, which other test processes move.
"""

from __future__ import annotations

import gc
import zlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

import fklir as fkl
from fklir.runtime import cuda_driver, dlpack
from fklir.runtime.device_buffer import ELEMENT_TYPES, DeviceBuffer
from fklir.runtime.interop import describe_gpu_array
from tests.runtime.gpu_memory import allocation_id

if TYPE_CHECKING:
    from typing_extensions import CapsuleType

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda_driver.gpu_available(), reason="needs a CUDA device"),
]

GIB = 1 << 30
SHAPE = (33, 17, 3)  # odd sizes on purpose


def collected() -> None:
    gc.collect()


def random_host(dtype_name: str, shape: tuple[int, ...] = SHAPE) -> np.ndarray[Any, Any]:
    """Every bit pattern (NaNs included) for the element type, as its numpy storage."""
    rng = np.random.default_rng(zlib.crc32(dtype_name.encode()))
    storage = ELEMENT_TYPES[dtype_name]
    if dtype_name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    raw = rng.integers(0, 256, size=(*shape, storage.itemsize), dtype=np.uint8)
    return raw.view(storage).reshape(shape).copy()


def device_copy(host: np.ndarray[Any, Any], dtype_name: str) -> DeviceBuffer:
    buffer = DeviceBuffer(host.shape, dtype_name)
    buffer.copy_from_host(host)
    return buffer


@pytest.fixture(autouse=True)
def no_leaked_exports() -> Iterator[None]:
    collected()
    before = dlpack.live_export_count()
    yield
    collected()
    assert dlpack.live_export_count() == before


@pytest.fixture(scope="module")
def torch() -> Any:
    module = pytest.importorskip("torch")
    if not module.cuda.is_available():
        pytest.skip("torch has no CUDA")
    module.zeros(1, device="cuda:0")  # create torch's context and allocator before any accounting
    return module


@pytest.fixture(scope="module")
def cupy() -> Any:
    module = pytest.importorskip("cupy")
    try:
        module.zeros(1)
    except Exception as error:  # a CuPy without a usable CUDA runtime
        pytest.skip(f"CuPy cannot use the GPU: {error}")
    return module


def torch_bytes(tensor: Any) -> np.ndarray[Any, Any]:
    """A CUDA tensor's contents as host bytes: a dtype view and a uint8 copy, so that no dtype needs a kernel
    of its own (torch has few for uint16/uint32)."""
    import torch  # pyright: ignore[reportMissingImports]

    return tensor.contiguous().view(-1).view(torch.uint8).cpu().numpy()


def torch_owned_copy(torch: Any, host: np.ndarray[Any, Any], dtype_name: str) -> Any:
    """A tensor in torch's own memory holding `host`, built from bytes (no per-dtype kernels needed)."""
    raw = torch.from_numpy(host.view(np.uint8).reshape(-1).copy()).to("cuda:0")
    return raw.view(getattr(torch, dtype_name)).view(host.shape)


# ----- export: DeviceBuffer → torch ------------------------------------------------------------------

TORCH_TYPES = list(ELEMENT_TYPES)


@pytest.mark.parametrize("kind", ["protocol", "legacy capsule", "versioned capsule"])
@pytest.mark.parametrize("dtype_name", TORCH_TYPES)
def test_torch_takes_a_device_buffer_without_a_copy(torch: Any, dtype_name: str, kind: str) -> None:
    host = random_host(dtype_name)
    buffer = device_copy(host, dtype_name)
    if kind == "protocol":
        tensor = torch.from_dlpack(buffer)
    elif kind == "legacy capsule":
        tensor = torch.from_dlpack(buffer.__dlpack__())
    else:
        tensor = torch.from_dlpack(buffer.__dlpack__(max_version=(1, 0)))
    assert tensor.data_ptr() == buffer.ptr
    assert tensor.dtype == getattr(torch, dtype_name)
    assert tensor.device == torch.device("cuda:0")
    assert tuple(tensor.shape) == SHAPE and tensor.is_contiguous()
    np.testing.assert_array_equal(torch_bytes(tensor), host.view(np.uint8).reshape(-1))

    del buffer
    collected()
    scratch = torch.full((host.nbytes,), 0xA5, dtype=torch.uint8, device="cuda:0")  # may reuse freed memory
    np.testing.assert_array_equal(torch_bytes(tensor), host.view(np.uint8).reshape(-1))
    del scratch, tensor


@pytest.mark.driver_error  # asks the driver about freed memory
def test_exported_memory_lives_until_both_buffer_and_tensor_are_gone(torch: Any) -> None:
    buffer = DeviceBuffer((GIB // 4,), "float32")
    ptr = buffer.ptr
    live = allocation_id(ptr)
    assert live is not None
    tensor = torch.from_dlpack(buffer)
    tensor.fill_(3.5)

    del buffer
    collected()
    assert allocation_id(ptr) == live, "the consumer's memory was freed under it"
    samples = tensor[:: 1 << 20].cpu().numpy()
    np.testing.assert_array_equal(samples, np.full(samples.shape, 3.5, np.float32))

    del tensor, samples
    collected()
    assert allocation_id(ptr) != live, "the memory was not released after both were gone"


@pytest.mark.driver_error  # asks the driver about freed memory
def test_tensor_first_then_buffer(torch: Any) -> None:
    buffer = DeviceBuffer((GIB // 2,), "uint16")
    ptr, live = buffer.ptr, allocation_id(buffer.ptr)
    tensor = torch.from_dlpack(buffer)
    del tensor
    collected()
    assert allocation_id(ptr) == live  # the buffer still owns it
    assert buffer.ptr == ptr
    del buffer
    collected()
    assert allocation_id(ptr) != live


@pytest.mark.driver_error  # asks the driver about freed memory
def test_free_while_exported_defers_to_the_consumer(torch: Any) -> None:
    buffer = DeviceBuffer((GIB // 4,), "float32")
    ptr, live = buffer.ptr, allocation_id(buffer.ptr)
    tensor = torch.from_dlpack(buffer)
    tensor.fill_(-1.25)
    buffer.free()
    assert buffer.ptr == 0
    assert allocation_id(ptr) == live
    assert float(tensor[-1].item()) == -1.25
    del tensor
    collected()
    assert allocation_id(ptr) != live
    buffer.free()  # still idempotent


@pytest.mark.driver_error  # asks the driver about freed memory
def test_an_unconsumed_capsule_gives_the_memory_back() -> None:
    buffer = DeviceBuffer((GIB,), "uint8")
    ptr, live = buffer.ptr, allocation_id(buffer.ptr)
    capsule = buffer.__dlpack__(max_version=(1, 0))
    del buffer
    collected()
    assert allocation_id(ptr) == live  # the capsule may still be consumed
    del capsule
    collected()
    assert allocation_id(ptr) != live


def test_copy_and_host_exports(torch: Any) -> None:
    host = random_host("float32")
    buffer = device_copy(host, "float32")
    copied = torch.from_dlpack(buffer.__dlpack__(max_version=(1, 0), copy=True))
    assert copied.data_ptr() != buffer.ptr
    np.testing.assert_array_equal(copied.cpu().numpy().view(np.uint32), host.view(np.uint32))
    on_host = np.from_dlpack(buffer, device="cpu")
    np.testing.assert_array_equal(on_host.view(np.uint32), host.view(np.uint32))
    with pytest.raises(BufferError, match="copy=False forbids one"):
        np.from_dlpack(buffer, device="cpu", copy=False)
    del copied, on_host


def test_a_view_makes_the_consumer_stream_wait_for_its_producer_stream(torch: Any) -> None:
    sleep = getattr(torch.cuda, "_sleep", None)
    if sleep is None:
        pytest.skip("torch.cuda._sleep is not available")
    count = 1 << 20
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    results = {}
    for name, advertised in (("ordered", producer), ("unordered control", None)):
        data = torch.zeros(count, device="cuda:0")
        torch.cuda.synchronize()
        with torch.cuda.stream(producer):
            sleep(200_000_000)  # about 0.1 s of GPU time before the fill
            data.fill_(7.0)
        view = DeviceBuffer.from_ptr(data.data_ptr(), (count,), "float32", stream=advertised, owner=data)
        with torch.cuda.stream(consumer):
            seen = torch.from_dlpack(view)  # torch passes `consumer`; the view orders it after `producer`
            snapshot = seen.clone()
        consumer.synchronize()
        results[name] = snapshot.cpu().numpy()
        torch.cuda.synchronize()
        del data, view, seen, snapshot
    np.testing.assert_array_equal(results["ordered"], np.full(count, 7.0, np.float32))
    # Proof that the test can fail: without the producer stream, the copy ran before the fill.
    assert (results["unordered control"] == 0).all()


def test_view_of_a_torch_tensor_advertises_its_stream_through_cai(torch: Any) -> None:
    stream = torch.cuda.Stream()
    data = torch.arange(12, dtype=torch.float32, device="cuda:0")
    view = DeviceBuffer.from_ptr(data.data_ptr(), (3, 4), "float32", stream=stream, owner=data)
    assert view.__cuda_array_interface__["stream"] == stream.cuda_stream
    again = torch.as_tensor(view, device="cuda:0")
    assert again.data_ptr() == data.data_ptr()
    np.testing.assert_array_equal(again.cpu().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4))
    default_stream_view = DeviceBuffer.from_ptr(data.data_ptr(), (12,), "float32", stream=0)
    assert default_stream_view.__cuda_array_interface__["stream"] == 1


# ----- export: DeviceBuffer → CuPy -------------------------------------------------------------------

CUPY_TYPES = [name for name in ELEMENT_TYPES if name != "bfloat16"]  # CuPy has no bfloat16


@pytest.mark.parametrize("dtype_name", CUPY_TYPES)
def test_cupy_takes_a_device_buffer_without_a_copy(cupy: Any, dtype_name: str) -> None:
    host = random_host(dtype_name)
    buffer = device_copy(host, dtype_name)
    array = cupy.from_dlpack(buffer)
    assert array.data.ptr == buffer.ptr
    assert array.dtype == np.dtype(dtype_name) and array.shape == SHAPE
    np.testing.assert_array_equal(cupy.asnumpy(array).view(np.uint8), host.view(np.uint8))
    del buffer
    collected()
    np.testing.assert_array_equal(cupy.asnumpy(array).view(np.uint8), host.view(np.uint8))
    del array


@pytest.mark.driver_error  # asks the driver about freed memory
def test_cupy_array_keeps_the_memory_until_it_goes(cupy: Any) -> None:
    buffer = DeviceBuffer((GIB // 8,), "float64")
    ptr, live = buffer.ptr, allocation_id(buffer.ptr)
    driver = cuda_driver._driver()
    with cuda_driver.using_device(0):  # a memset, so that CuPy need not compile a kernel (that needs NVRTC)
        cuda_driver.check(driver.cuMemsetD8(buffer.ptr, 0x3F, buffer.nbytes), "cuMemsetD8")
    array = cupy.from_dlpack(buffer)
    assert array.data.ptr == buffer.ptr
    del buffer
    collected()
    assert allocation_id(ptr) == live
    last = cupy.asnumpy(array[-2:])
    np.testing.assert_array_equal(last.view(np.uint8), np.full(16, 0x3F, np.uint8))
    del array
    collected()
    cupy.get_default_memory_pool().free_all_blocks()
    assert allocation_id(ptr) != live


# ----- import: any producer → DeviceBuffer -----------------------------------------------------------


@pytest.mark.parametrize("dtype_name", TORCH_TYPES)
def test_device_buffer_from_a_torch_tensor(torch: Any, dtype_name: str) -> None:
    host = random_host(dtype_name)
    tensor = torch_owned_copy(torch, host, dtype_name)
    view = DeviceBuffer.from_dlpack(tensor)
    assert (view.ptr, view.shape, view.dtype_name, view.device) == (tensor.data_ptr(), SHAPE, dtype_name, 0)
    assert view.stream == 1 and not view.owns_memory
    address = tensor.data_ptr()
    del tensor
    collected()
    scratch = torch.full((host.nbytes,), 0x5A, dtype=torch.uint8, device="cuda:0")
    assert view.ptr == address
    np.testing.assert_array_equal(view.numpy().view(np.uint8), host.view(np.uint8))
    # Re-exported to torch: still the same memory, and still alive through both hops.
    again = torch.from_dlpack(view)
    assert again.data_ptr() == address
    del view, scratch
    collected()
    np.testing.assert_array_equal(torch_bytes(again), host.view(np.uint8).reshape(-1))
    del again


def test_device_buffer_from_dlpack_errors(torch: Any) -> None:
    with pytest.raises(ValueError, match=r"DeviceBuffer.from_dlpack: DLPack tensor of shape \(17, 33\) is not C"):
        DeviceBuffer.from_dlpack(torch.zeros((33, 17), device="cuda:0").t())
    with pytest.raises(TypeError, match=r"DeviceBuffer\.from_dlpack: the array lives on kDLCPU"):
        DeviceBuffer.from_dlpack(torch.zeros(3))
    with pytest.raises(TypeError, match=r"unsupported DLPack element type \(code 0 \(int\), 64 bits\)"):
        DeviceBuffer.from_dlpack(torch.zeros(3, dtype=torch.int64, device="cuda:0"))


def test_device_buffer_from_a_cupy_array(cupy: Any) -> None:
    host = random_host("int16")
    array = cupy.asarray(host)
    view = DeviceBuffer.from_dlpack(array)
    assert (view.ptr, view.shape, view.dtype_name) == (array.data.ptr, SHAPE, "int16")
    del array
    collected()
    np.testing.assert_array_equal(view.numpy(), host)


class DLPackOnly:
    """Offers only the DLPack protocol of another array, as JAX or Numba arrays would."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __dlpack_device__(self) -> Any:
        return self.inner.__dlpack_device__()

    def __dlpack__(self, **keywords: Any) -> CapsuleType:
        return self.inner.__dlpack__(**keywords)


def test_describe_and_run_a_pipeline_on_a_dlpack_only_input(torch: Any) -> None:
    rng = np.random.default_rng(5)
    host = (rng.standard_normal(SHAPE) * 100).astype(np.float32)
    host.flat[:6] = [0.5, 1.5, 2.5, -2.5, np.nan, np.inf]
    tensor = torch.from_numpy(host).cuda()
    wrapped = DLPackOnly(tensor)
    described = describe_gpu_array(wrapped, "src")
    assert (described.ptr, described.shape, described.dtype_name) == (tensor.data_ptr(), SHAPE, "float32")
    assert (described.framework, described.stream) == ("dlpack", 1)

    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(-0.75), fkl.TensorWrite(), target="gpu")
    out = pipe(wrapped)
    assert isinstance(out, DeviceBuffer)
    expected = (host * np.float32(2.0)).astype(np.float32) + np.float32(-0.75)
    np.testing.assert_array_equal(out.numpy(), expected)
    also = pipe(DeviceBuffer.from_dlpack(tensor))
    np.testing.assert_array_equal(also.numpy(), expected)
