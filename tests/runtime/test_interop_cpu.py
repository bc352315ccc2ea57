"""Array/stream interop, DLPack, DeviceBuffer views and driver helpers that can be checked without a GPU."""

from __future__ import annotations

import gc
import itertools
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from fklir.runtime import cuda_driver, dlpack
from fklir.runtime.device_buffer import ELEMENT_TYPES, DeviceBuffer, element_type_name, host_view_for
from fklir.runtime.interop import (
    GpuArray,
    HostArray,
    describe_gpu_array,
    describe_host_array,
    empty_like_framework,
    is_c_contiguous,
)
from fklir.runtime.streams import stream_handle

if TYPE_CHECKING:
    from typing_extensions import CapsuleType

NUMPY_TYPES = [name for name in ELEMENT_TYPES if name != "bfloat16"]


class FakeCai:
    """A minimal producer of __cuda_array_interface__ (never dereferenced by these tests)."""

    def __init__(self, **interface: Any) -> None:
        self.__cuda_array_interface__ = {"version": 3, "strides": None, "stream": None, **interface}


# ----- describe_host_array ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype_name", NUMPY_TYPES)
def test_host_array_description(dtype_name: str) -> None:
    array = np.zeros((33, 17, 3), dtype=dtype_name)
    described = describe_host_array(array, "src")
    assert described == HostArray(
        ptr=array.ctypes.data, shape=(33, 17, 3), dtype_name=dtype_name, writeable=True, obj=array
    )


def test_host_array_read_only_and_empty() -> None:
    array = np.arange(12, dtype=np.float32).reshape(3, 4)
    array.flags.writeable = False
    assert not describe_host_array(array, "src").writeable
    empty = np.zeros((0, 5), dtype=np.uint8)
    assert describe_host_array(empty, "src").shape == (0, 5)


def test_host_array_non_contiguous_names_argument_and_strides() -> None:
    array = np.zeros((33, 17, 3), dtype=np.float32)[:, ::2]
    with pytest.raises(ValueError, match=r"src.*not C-contiguous.*\(204, 24, 4\)"):
        describe_host_array(array, "src")
    with pytest.raises(ValueError, match="out"):
        describe_host_array(np.zeros((4, 5), np.uint8).T, "out")


@pytest.mark.parametrize("dtype", ["int64", "uint64", "complex64", "float128", ">f4", ">u2", "U3"])
def test_host_array_unsupported_dtype_names_it(dtype: str) -> None:
    try:
        array = np.zeros((2, 3), dtype=dtype)
    except TypeError:
        pytest.skip(f"numpy here has no {dtype}")
    with pytest.raises(TypeError, match=rf"src: unsupported element type {np.dtype(dtype)}"):
        describe_host_array(array, "src")


def test_host_array_rejects_non_numpy() -> None:
    with pytest.raises(TypeError, match="src: the CPU target takes a numpy array, got list"):
        describe_host_array([[1, 2], [3, 4]], "src")
    with pytest.raises(TypeError, match="target='gpu'"):
        describe_host_array(FakeCai(shape=(1,), typestr="<f4", data=(0, False)), "src")


def test_host_bfloat16_bits_are_accepted_as_uint16_storage() -> None:
    bits = np.array([[0x3F80, 0x7FC0]], dtype=np.uint16)
    assert host_view_for(bits, "bfloat16") is not None
    assert host_view_for(np.zeros(2, np.float16), "bfloat16") is None
    assert host_view_for(np.zeros(2, np.float16), "float16") is not None


# ----- describe_gpu_array without a GPU --------------------------------------------------------------


def test_gpu_description_refuses_numpy_and_says_why() -> None:
    with pytest.raises(TypeError, match=r"src: got a numpy array.*host memory.*DeviceBuffer.from_host"):
        describe_gpu_array(np.zeros((3, 3), np.uint8), "src")


@pytest.mark.parametrize("value", [[1, 2, 3], 3.0, None, "image.png"])
def test_gpu_description_lists_what_is_accepted(value: object) -> None:
    with pytest.raises(TypeError, match=r"out: expected a CUDA torch.Tensor, a CuPy array, an fklir DeviceBuffer"):
        describe_gpu_array(value, "out")


def test_cai_description_of_an_empty_array_needs_no_driver() -> None:
    fake = FakeCai(shape=(0, 17, 3), typestr="|u1", data=(0, True), stream=1)
    described = describe_gpu_array(fake, "src")
    assert described == GpuArray(
        ptr=0,
        shape=(0, 17, 3),
        dtype_name="uint8",
        device=0,
        stream=1,
        framework="cai",
        obj=fake,
        readonly=True,
    )


def test_cai_non_contiguous_strides_are_reported() -> None:
    fake = FakeCai(shape=(33, 17), typestr="<f4", data=(0x1000, False), strides=(136, 8))
    with pytest.raises(ValueError, match=r"src: array of shape \(33, 17\) is not C-contiguous.*\(136, 8\)"):
        describe_gpu_array(fake, "src")


def test_cai_unsupported_types_and_malformed_interfaces() -> None:
    with pytest.raises(TypeError, match="src: unsupported element type int64"):
        describe_gpu_array(FakeCai(shape=(2,), typestr="<i8", data=(0, False)), "src")
    with pytest.raises(TypeError, match="src: big-endian"):
        describe_gpu_array(FakeCai(shape=(2,), typestr=">f4", data=(0, False)), "src")
    with pytest.raises(TypeError, match="src: malformed __cuda_array_interface__"):
        describe_gpu_array(FakeCai(shape=(2,), data=(0, False)), "src")
    with pytest.raises(ValueError, match=r"src: .* NULL data pointer for shape \(2, 3\)"):
        describe_gpu_array(FakeCai(shape=(2, 3), typestr="<f4", data=(0, False)), "src")
    with pytest.raises(ValueError, match="src: masked arrays"):
        describe_gpu_array(FakeCai(shape=(2,), typestr="<f4", data=(0, False), mask=object()), "src")


def test_device_buffer_of_size_zero_needs_no_gpu() -> None:
    buffer = DeviceBuffer((0, 4, 3), "bfloat16")
    assert buffer.ptr == 0
    assert buffer.nbytes == 0
    assert buffer.dtype == np.uint16
    assert buffer.dtype_name == "bfloat16"
    assert buffer.copy_to_host().shape == (0, 4, 3)
    assert buffer.__cuda_array_interface__ == {
        "version": 3,
        "shape": (0, 4, 3),
        "typestr": "<u2",
        "strides": None,
        "data": (0, False),
        "stream": None,
    }
    described = describe_gpu_array(buffer, "src")
    assert (described.framework, described.dtype_name, described.shape) == ("fklir", "bfloat16", (0, 4, 3))


@pytest.mark.parametrize(
    ("shape", "dtype", "error", "pattern"),
    [
        ((3, -1), "uint8", ValueError, r"DeviceBuffer shape: extents must be >= 0, got \(3, -1\)"),
        ((3, 2.5), "uint8", TypeError, "DeviceBuffer shape: extents must be integers"),
        ((3, 4), "int64", TypeError, "DeviceBuffer dtype: unsupported element type 'int64'"),
        ((3, 4), None, TypeError, "DeviceBuffer dtype: unsupported element type None"),
        ((3, 4), "float8", TypeError, "DeviceBuffer dtype: unsupported element type 'float8'"),
    ],
)
def test_device_buffer_rejects_bad_arguments_before_touching_the_driver(
    shape: Any, dtype: Any, error: type[Exception], pattern: str
) -> None:
    with pytest.raises(error, match=pattern):
        DeviceBuffer(shape, dtype)


def test_element_type_names() -> None:
    assert element_type_name(np.float32) == "float32"
    assert element_type_name(np.dtype(np.bool_)) == "bool"
    assert element_type_name("bfloat16") == "bfloat16"
    assert element_type_name("<u2") == "uint16"
    assert element_type_name(float) == "float64"


# ----- contiguity against numpy's own flag -----------------------------------------------------------


def _views(base: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
    slicers = [slice(None), slice(None, None, 2), slice(1, 2), slice(None, None, -1), slice(0, 0)]
    views = [base[index] for index in itertools.product(slicers, repeat=3)]
    return [*views, base.transpose(1, 0, 2), base.transpose(2, 1, 0), base[:, :1, :], base[:1, :1, :]]


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64"])
def test_is_c_contiguous_agrees_with_numpy(dtype: str) -> None:
    base = np.zeros((5, 4, 3), dtype=dtype)
    for view in _views(base) + _views(np.zeros((1, 4, 1), dtype=dtype)):
        assert is_c_contiguous(view.shape, view.strides, view.itemsize) == view.flags.c_contiguous, (
            view.shape,
            view.strides,
        )


def test_is_c_contiguous_rejects_rank_mismatch() -> None:
    assert not is_c_contiguous((2, 3), (12,), 4)


# ----- streams ---------------------------------------------------------------------------------------


class ProtocolStream:
    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


class Handle(int):
    """An int subclass, as some libraries hand out stream handles."""


class BrokenProtocolStream:
    def __cuda_stream__(self) -> int:
        return 7


def test_stream_handles() -> None:
    assert stream_handle(0) == 0
    assert stream_handle(0x7F00DEADBEEF) == 0x7F00DEADBEEF
    assert stream_handle(ProtocolStream(0x1234)) == 0x1234
    assert stream_handle(Handle(9)) == 9
    driver = pytest.importorskip("cuda.bindings.driver")
    assert stream_handle(driver.CUstream(0x5678)) == 0x5678


def test_stream_handle_errors() -> None:
    with pytest.raises(TypeError, match=r"stream: expected an int handle, a torch\.cuda\.Stream"):
        stream_handle("default")
    with pytest.raises(TypeError, match="stream: expected"):
        stream_handle(True)
    with pytest.raises(TypeError, match="stream: expected"):
        stream_handle(None)
    with pytest.raises(ValueError, match="stream: a stream handle must be >= 0, got -1"):
        stream_handle(-1)
    with pytest.raises(TypeError, match=r"__cuda_stream__ returned 7"):
        stream_handle(BrokenProtocolStream())


# ----- outputs ---------------------------------------------------------------------------------------


def test_empty_like_framework_refuses_unknown_types_and_makes_empty_buffers() -> None:
    with pytest.raises(TypeError, match="output: unsupported element type 'int64'"):
        empty_like_framework("fklir", (2, 2), "int64", 0, None)
    array, ptr = empty_like_framework("cai", (0, 3), "float32", 0, None)
    assert isinstance(array, DeviceBuffer)
    assert (array.shape, array.dtype_name, ptr) == ((0, 3), "float32", 0)


# ----- driver helpers --------------------------------------------------------------------------------


def test_gpu_available_is_a_bool_and_never_raises() -> None:
    assert isinstance(cuda_driver.gpu_available(), bool)


def test_check_unpacks_results_and_names_errors() -> None:
    pytest.importorskip("cuda.bindings.driver")
    assert cuda_driver.check((0,)) is None
    assert cuda_driver.check((0, 42)) == 42
    assert cuda_driver.check((0, 1, 2)) == (1, 2)
    with pytest.raises(cuda_driver.CudaError, match="cuLaunchKernel failed with CUDA_ERROR_ILLEGAL_ADDRESS") as caught:
        cuda_driver.check((700,), "cuLaunchKernel")
    assert caught.value.code == 700
    assert caught.value.name == "CUDA_ERROR_ILLEGAL_ADDRESS"


# ----- DLPack without a GPU: host memory through numpy (and torch, when installed) ------------------------
# The export/import machinery does not care where memory lives, so it is exercised on host memory with real
# consumers and producers; fake CUDA pointers (never dereferenced) cover the CUDA-specific paths.


class HostMemory:
    """Host memory that counts nothing itself; a weakref to it tells when every holder let go."""

    def __init__(self, values: np.ndarray[Any, Any]) -> None:
        self.array = np.ascontiguousarray(values)

    @property
    def ptr(self) -> int:
        return int(self.array.ctypes.data)


class HostProducer:
    """A DLPack producer over HostMemory, built on fklir's exporter; records how it was asked."""

    def __init__(
        self, memory: HostMemory, dtype_name: str, *, legacy_only: bool = False, readonly: bool = False
    ) -> None:
        self.memory = memory
        self.dtype_name = dtype_name
        self.legacy_only = legacy_only
        self.readonly = readonly
        self.requests: list[dict[str, Any]] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return (dlpack.DLDeviceType.CPU, 0)

    def __dlpack__(self, **keywords: Any) -> CapsuleType:
        self.requests.append(keywords)
        if self.legacy_only and "max_version" in keywords:
            raise TypeError("__dlpack__() got an unexpected keyword argument 'max_version'")
        versioned = keywords.get("max_version") is not None and keywords["max_version"][0] >= 1
        return dlpack.export_capsule(
            self.memory.ptr,
            self.memory.array.shape,
            self.dtype_name,
            (dlpack.DLDeviceType.CPU, 0),
            self.memory,
            versioned=versioned,
            readonly=self.readonly,
        )


class FakeCudaProducer:
    """Says CUDA and hands out a capsule over a made-up device address (nothing here reads it)."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype_name: str, device: int = 0, **options: Any) -> None:
        self.ptr, self.shape, self.dtype_name, self.device, self.options = (
            ptr,
            shape,
            dtype_name,
            device,
            options,
        )
        self.owner = HostMemory(np.zeros(1))  # stands for the producer's tensor
        self.requests: list[dict[str, Any]] = []

    def __dlpack_device__(self) -> tuple[int, int]:
        return (dlpack.DLDeviceType.CUDA, self.device)

    def __dlpack__(self, **keywords: Any) -> CapsuleType:
        self.requests.append(keywords)
        return dlpack.export_capsule(
            self.ptr,
            self.shape,
            self.dtype_name,
            (dlpack.DLDeviceType.CUDA, self.device),
            self.owner,
            versioned=keywords.get("max_version") is not None,
            **self.options,
        )


def collected() -> None:
    gc.collect()


@pytest.fixture(autouse=False)
def no_leaked_exports() -> Any:
    collected()
    before = dlpack.live_export_count()
    yield
    collected()
    assert dlpack.live_export_count() == before


DLPACK_TYPES = [name for name in ELEMENT_TYPES if name != "bfloat16"]  # numpy has no bfloat16


@pytest.mark.usefixtures("no_leaked_exports")
@pytest.mark.parametrize("legacy_only", [False, True], ids=["versioned", "legacy"])
@pytest.mark.parametrize("dtype_name", DLPACK_TYPES)
def test_numpy_consumes_our_capsules_without_copying(dtype_name: str, legacy_only: bool) -> None:
    rng = np.random.default_rng(7)
    values = (
        rng.integers(0, 2, (33, 17, 3)).astype(dtype_name)
        if dtype_name == "bool"
        else ((rng.standard_normal((33, 17, 3)) * 50).astype(dtype_name))
    )
    memory = HostMemory(values)
    alive = weakref.ref(memory)
    producer = HostProducer(memory, dtype_name, legacy_only=legacy_only)
    consumer = np.from_dlpack(producer)
    assert consumer.ctypes.data == memory.ptr
    assert consumer.dtype == np.dtype(dtype_name) and consumer.shape == (33, 17, 3)
    np.testing.assert_array_equal(consumer, values)
    assert producer.requests[0].get("max_version") == (1, 0)  # numpy offers DLPack 1.0 first

    del memory, producer
    collected()
    assert alive() is not None  # the consumer's reference keeps it
    np.testing.assert_array_equal(consumer, values)
    del consumer
    collected()
    assert alive() is None  # the deleter ran exactly when the consumer went


@pytest.mark.usefixtures("no_leaked_exports")
def test_read_only_exports() -> None:
    memory = HostMemory(np.arange(12, dtype=np.float32).reshape(3, 4))
    consumer = np.from_dlpack(HostProducer(memory, "float32", readonly=True))
    assert not consumer.flags.writeable  # the versioned flag reached numpy
    with pytest.raises(BufferError, match=r"read-only.*legacy.*max_version=\(1, 0\)"):
        dlpack.export_capsule(memory.ptr, (3, 4), "float32", (1, 0), memory, versioned=False, readonly=True)


@pytest.mark.usefixtures("no_leaked_exports")
def test_an_unconsumed_capsule_releases_its_owner_once_dropped() -> None:
    memory = HostMemory(np.zeros(5, np.int32))
    alive = weakref.ref(memory)
    capsule = HostProducer(memory, "int32").__dlpack__(max_version=(1, 0))
    del memory
    collected()
    assert alive() is not None  # the capsule may still be consumed
    del capsule
    collected()
    assert alive() is None


@pytest.mark.usefixtures("no_leaked_exports")
def test_a_refusing_consumer_keeps_its_own_error_and_the_export_is_released() -> None:
    owner = HostMemory(np.zeros(6, np.float32))
    producer = FakeCudaProducer(owner.ptr, (2, 3), "float32")
    alive = weakref.ref(producer.owner)
    with pytest.raises((BufferError, RuntimeError, ValueError, TypeError)) as caught:
        np.from_dlpack(producer)  # numpy reads host memory only
    assert not isinstance(caught.value, SystemError)
    del producer
    collected()
    assert alive() is None


def test_export_refuses_types_without_a_dlpack_code() -> None:
    with pytest.raises(BufferError, match="element type 'int64'"):
        dlpack.export_capsule(0, (0,), "int64", (1, 0), None, versioned=True)


@pytest.mark.usefixtures("no_leaked_exports")
def test_import_from_numpy_keeps_the_array_alive_until_released() -> None:
    array = np.arange(33 * 17, dtype=np.uint16).reshape(33, 17)
    address = array.ctypes.data
    alive = weakref.ref(array)
    view = dlpack.import_dlpack(array, stream=None, what="src")
    assert (view.ptr, view.shape, view.dtype_name) == (address, (33, 17), "uint16")
    assert (view.device_type, view.device_id, view.readonly) == (dlpack.DLDeviceType.CPU, 0, False)
    assert view.version is not None and view.version[0] == 1
    owner = view.owner
    del array, view
    collected()
    assert alive() is not None
    owner.release()
    owner.release()  # idempotent
    collected()
    assert alive() is None


def test_import_of_read_only_numpy_and_legacy_producers() -> None:
    array = np.arange(6, dtype=np.float64)
    array.flags.writeable = False
    assert dlpack.import_dlpack(array, stream=None, what="src").readonly
    memory = HostMemory(np.arange(6, dtype=np.int8).reshape(2, 3))
    producer = HostProducer(memory, "int8", legacy_only=True)
    view = dlpack.import_dlpack(producer, stream=None, what="src")
    assert view.version is None and view.ptr == memory.ptr and view.shape == (2, 3)
    assert [sorted(request) for request in producer.requests] == [["max_version"], []]


@pytest.mark.parametrize(
    ("array", "error", "pattern"),
    [
        (
            np.zeros((4, 6), np.float32)[:, ::2],
            ValueError,
            r"src: DLPack tensor of shape \(4, 3\) is not C-contiguous",
        ),
        (np.zeros((4, 6), np.float32).T, ValueError, r"strides \(1, 6\) in elements, expected \(4, 1\)"),
        (
            np.zeros(3, np.int64),
            TypeError,
            r"src: unsupported DLPack element type \(code 0 \(int\), 64 bits\)",
        ),
        (np.zeros(3, np.complex64), TypeError, "code 5 \\(complex\\)"),
    ],
)
def test_import_rejects_what_a_kernel_cannot_read(array: np.ndarray[Any, Any], error: type, pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        dlpack.import_dlpack(array, stream=None, what="src")


def test_import_accepts_unit_extents_with_any_stride_and_empty_arrays() -> None:
    base = np.zeros((4, 6, 3), np.float32)
    assert dlpack.import_dlpack(base[1:2], stream=None, what="src").shape == (1, 6, 3)
    unit_stride_zero = np.zeros((5, 3), np.float32)[:, None, :]  # strides (12, 0, 4) bytes
    assert unit_stride_zero.flags.c_contiguous
    assert dlpack.import_dlpack(unit_stride_zero, stream=None, what="src").shape == (5, 1, 3)
    assert dlpack.import_dlpack(base[:0], stream=None, what="src").shape == (0, 6, 3)


def test_import_of_something_that_is_not_a_capsule() -> None:
    class Liar:
        def __dlpack__(self, **keywords: Any) -> object:
            return "not a capsule"

    with pytest.raises(TypeError, match="src: __dlpack__ did not return an unused DLPack capsule"):
        dlpack.import_dlpack(Liar(), stream=None, what="src")


def test_torch_cpu_tensors_round_trip_when_torch_is_installed() -> None:
    torch = pytest.importorskip("torch")
    memory = HostMemory(np.arange(12, dtype=np.float32).reshape(3, 4))
    alive = weakref.ref(memory)
    for legacy_only in (False, True):
        tensor = torch.from_dlpack(HostProducer(memory, "float32", legacy_only=legacy_only))
        assert tensor.data_ptr() == memory.ptr
        assert tensor.dtype == torch.float32 and tuple(tensor.shape) == (3, 4)
        del tensor
    source = torch.arange(12, dtype=torch.bfloat16).reshape(3, 4)
    view = dlpack.import_dlpack(source, stream=None, what="src")
    assert (view.ptr, view.dtype_name, view.shape) == (source.data_ptr(), "bfloat16", (3, 4))
    del memory, view
    collected()
    assert alive() is None


# ----- DeviceBuffer.from_ptr and views (no driver involved) ------------------------------------------

FAKE_DEVICE_ADDRESS = 0x7F00_0000_1000


def test_from_ptr_describes_foreign_memory_without_owning_it() -> None:
    owner = HostMemory(np.zeros(1))
    alive = weakref.ref(owner)
    view = DeviceBuffer.from_ptr(FAKE_DEVICE_ADDRESS, (33, 17, 3), "uint8", owner=owner)
    del owner
    assert alive() is not None
    assert (view.ptr, view.shape, view.dtype_name, view.device) == (
        FAKE_DEVICE_ADDRESS,
        (33, 17, 3),
        "uint8",
        0,
    )
    assert not view.owns_memory
    assert view.__cuda_array_interface__ == {
        "version": 3,
        "shape": (33, 17, 3),
        "typestr": "|u1",
        "strides": None,
        "data": (FAKE_DEVICE_ADDRESS, False),
        "stream": None,
    }
    described = describe_gpu_array(view, "src")
    assert (described.ptr, described.shape, described.dtype_name, described.framework) == (
        FAKE_DEVICE_ADDRESS,
        (33, 17, 3),
        "uint8",
        "fklir",
    )
    view.free()
    assert view.ptr == 0 and alive() is None  # a view only forgets its owner
    with pytest.raises(ValueError, match="src: the DeviceBuffer was freed"):
        describe_gpu_array(view, "src")
    with pytest.raises(ValueError, match=r"DeviceBuffer\.copy_to_host: the buffer was freed"):
        view.copy_to_host()


@pytest.mark.parametrize(
    ("stream", "advertised"),
    [(None, None), (0, 1), (1, 1), (2, 2), (0x7F00DEAD, 0x7F00DEAD), (ProtocolStream(0x5000), 0x5000)],
)
def test_from_ptr_advertises_the_producer_stream_as_cai_v3_spells_it(stream: object, advertised: int | None) -> None:
    view = DeviceBuffer.from_ptr(FAKE_DEVICE_ADDRESS, (4, 4), "float32", stream=stream, device=3)
    assert view.stream == advertised
    assert view.__cuda_array_interface__["stream"] == advertised
    described = describe_gpu_array(view, "src")
    assert (described.stream, described.device) == (advertised, 3)


def test_from_ptr_read_only_views() -> None:
    view = DeviceBuffer.from_ptr(FAKE_DEVICE_ADDRESS, (4,), "int16", readonly=True)
    assert view.__cuda_array_interface__["data"] == (FAKE_DEVICE_ADDRESS, True)
    assert describe_gpu_array(view, "out").readonly
    with pytest.raises(ValueError, match="read-only"):
        view.copy_from_host(np.zeros(4, np.int16))


@pytest.mark.parametrize(
    ("dtype", "shape", "expected_shape", "expected_dtype"),
    [
        ("uint8x3", (1080, 1920), (1080, 1920, 3), "uint8"),
        ("float32x4", (2, 33, 17), (2, 33, 17, 4), "float32"),
        ("bfloat16x2", (5, 7), (5, 7, 2), "bfloat16"),
        ("uint8x3", (33, 17, 5), (33, 17, 5, 3), "uint8"),  # a last extent of 5 is a width, not channels
        ("uint8", (1080, 1920, 3), (1080, 1920, 3), "uint8"),
        (np.float16, (3, 3), (3, 3), "float16"),
    ],
)
def test_from_ptr_accepts_the_vector_spelling(
    dtype: object, shape: tuple[int, ...], expected_shape: tuple[int, ...], expected_dtype: str
) -> None:
    view = DeviceBuffer.from_ptr(FAKE_DEVICE_ADDRESS, shape, dtype)
    assert (view.shape, view.dtype_name) == (expected_shape, expected_dtype)
    assert view.nbytes == int(np.prod(expected_shape)) * ELEMENT_TYPES[expected_dtype].itemsize


@pytest.mark.parametrize("shape", [(1080, 1920, 3), (1080, 1920, 4), (2, 1080, 1920, 3)])
def test_from_ptr_refuses_a_vector_dtype_with_a_channel_dim_and_names_both_spellings(
    shape: tuple[int, ...],
) -> None:
    grid = shape[:-1]
    with pytest.raises(TypeError) as caught:
        DeviceBuffer.from_ptr(FAKE_DEVICE_ADDRESS, shape, "uint8x3")
    message = str(caught.value)
    assert message.startswith("DeviceBuffer.from_ptr:")
    assert f"dtype='uint8x3' with shape {grid}" in message
    assert f"dtype='uint8' with shape {(*grid, 3)}" in message


@pytest.mark.parametrize(
    ("arguments", "error", "pattern"),
    [
        ((0, (4, 4), "uint8"), ValueError, r"DeviceBuffer.from_ptr: ptr is NULL \(0\) for shape \(4, 4\)"),
        ((0, (2, 2), "uint8x3"), ValueError, r"ptr is NULL \(0\) for shape \(2, 2, 3\)"),
        ((-8, (4,), "uint8"), ValueError, "ptr must be >= 0, got -8"),
        ((True, (4,), "uint8"), TypeError, "ptr must be an integer address"),
        ((4096.0, (4,), "uint8"), TypeError, "ptr must be an integer address"),
        (("0x1000", (4,), "uint8"), TypeError, "ptr must be an integer address, got str"),
        ((4096, (4, -1), "uint8"), ValueError, r"DeviceBuffer.from_ptr shape: extents must be >= 0"),
        ((4096, (4,), "int64"), TypeError, "DeviceBuffer.from_ptr dtype: unsupported element type 'int64'"),
        ((4096, (4,), "int64x3"), TypeError, "unsupported element type 'int64x3'"),
        ((4096, (4,), "uint8x1"), TypeError, r"'uint8x1' has 1 channel\(s\).*write 'uint8'"),
        ((4096, (4,), "uint8x5"), TypeError, "vector pixels have 2 to 4 channels"),
    ],
)
def test_from_ptr_guards(arguments: tuple[Any, ...], error: type[Exception], pattern: str) -> None:
    with pytest.raises(error, match=pattern):
        DeviceBuffer.from_ptr(*arguments)


def test_from_ptr_guards_device_and_stream() -> None:
    with pytest.raises(ValueError, match="device must be >= 0"):
        DeviceBuffer.from_ptr(4096, (4,), "uint8", device=-1)
    with pytest.raises(TypeError, match="device must be a device ordinal"):
        DeviceBuffer.from_ptr(4096, (4,), "uint8", device="cuda:0")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"DeviceBuffer\.from_ptr: stream: expected an int handle"):
        DeviceBuffer.from_ptr(4096, (4,), "uint8", stream="default")
    with pytest.raises(ValueError, match=r"DeviceBuffer\.from_ptr: stream: a stream handle must be >= 0"):
        DeviceBuffer.from_ptr(4096, (4,), "uint8", stream=-1)


def test_from_ptr_accepts_null_for_empty_arrays_and_driver_pointer_objects() -> None:
    assert DeviceBuffer.from_ptr(0, (0, 17, 3), "uint8").nbytes == 0
    assert DeviceBuffer.from_ptr(np.uint64(4096), (4,), "uint8").ptr == 4096
    driver = pytest.importorskip("cuda.bindings.driver")
    assert DeviceBuffer.from_ptr(driver.CUdeviceptr(8192), (4,), "uint8").ptr == 8192


def test_vector_dtype_in_the_constructor() -> None:
    buffer = DeviceBuffer((0, 5), "float32x3")  # empty: no allocation, so no GPU needed
    assert (buffer.shape, buffer.dtype_name) == ((0, 5, 3), "float32")
    with pytest.raises(TypeError, match="dtype='float32x3' with shape \\(0, 5\\)"):
        DeviceBuffer((0, 5, 3), "float32x3")


# ----- DeviceBuffer DLPack export/import with fake device pointers ------------------------------------


class CapsuleHolder:
    """Hands out one capsule that was made beforehand."""

    def __init__(self, capsule: CapsuleType, device: tuple[int, int]) -> None:
        self.capsule, self.device = capsule, device

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, **keywords: Any) -> CapsuleType:
        return self.capsule


@pytest.mark.usefixtures("no_leaked_exports")
@pytest.mark.parametrize("max_version", [None, (1, 0), (1, 3)])
def test_views_export_and_reimport_keeping_the_owner_alive(max_version: tuple[int, int] | None) -> None:
    owner = HostMemory(np.zeros(1))
    alive = weakref.ref(owner)
    view = DeviceBuffer.from_ptr(FAKE_DEVICE_ADDRESS, (33, 17), "bfloat16", device=2, owner=owner)
    assert view.__dlpack_device__() == (2, 2)
    assert view.__dlpack_device__()[0] is dlpack.DLDeviceType.CUDA
    holder = CapsuleHolder(view.__dlpack__(max_version=max_version), view.__dlpack_device__())
    imported = dlpack.import_dlpack(holder, stream=None, what="src")
    assert (imported.ptr, imported.shape, imported.dtype_name) == (FAKE_DEVICE_ADDRESS, (33, 17), "bfloat16")
    assert (imported.device_type, imported.device_id) == (dlpack.DLDeviceType.CUDA, 2)
    assert imported.version == (None if max_version is None else (1, 0))
    del owner, view, holder
    collected()
    assert alive() is not None  # the consumer still holds it
    imported.owner.release()
    collected()
    assert alive() is None


@pytest.mark.usefixtures("no_leaked_exports")
def test_from_dlpack_of_a_cuda_producer_asks_for_the_stream_and_advertises_it() -> None:
    producer = FakeCudaProducer(FAKE_DEVICE_ADDRESS, (2, 33, 17, 3), "float16", device=1)
    owner_alive = weakref.ref(producer.owner)
    buffer = DeviceBuffer.from_dlpack(producer)
    assert (buffer.ptr, buffer.shape, buffer.dtype_name, buffer.device) == (
        FAKE_DEVICE_ADDRESS,
        (2, 33, 17, 3),
        "float16",
        1,
    )
    assert producer.requests == [{"max_version": (1, 0), "stream": 1}]  # None: the legacy default stream
    assert buffer.stream == 1 and buffer.__cuda_array_interface__["stream"] == 1
    assert not buffer.owns_memory
    on_stream = DeviceBuffer.from_dlpack(producer, stream=0x5000)
    assert producer.requests[-1] == {"max_version": (1, 0), "stream": 0x5000}
    assert on_stream.stream == 0x5000
    unsynchronised = DeviceBuffer.from_dlpack(producer, stream=-1)
    assert producer.requests[-1] == {"max_version": (1, 0), "stream": -1}
    assert unsynchronised.stream is None
    del producer, on_stream, unsynchronised
    collected()
    assert owner_alive() is not None
    del buffer
    collected()
    assert owner_alive() is None


def test_from_dlpack_refuses_host_arrays_and_read_only_flags_travel() -> None:
    with pytest.raises(TypeError, match=r"DeviceBuffer.from_dlpack: the array lives on kDLCPU.*from_host"):
        DeviceBuffer.from_dlpack(np.zeros(3, np.float32))
    producer = FakeCudaProducer(FAKE_DEVICE_ADDRESS, (4,), "uint8", readonly=True)
    assert DeviceBuffer.from_dlpack(producer).readonly


def test_dlpack_export_arguments() -> None:
    view = DeviceBuffer.from_ptr(FAKE_DEVICE_ADDRESS, (4, 4), "float32", device=0, readonly=True)
    with pytest.raises(BufferError, match="cannot export to kDLCUDA 1; the data is on CUDA device 0"):
        view.__dlpack__(max_version=(1, 0), dl_device=(dlpack.DLDeviceType.CUDA, 1))
    with pytest.raises(BufferError, match="cannot export to kDLROCM 0"):
        view.__dlpack__(max_version=(1, 0), dl_device=(dlpack.DLDeviceType.ROCM, 0))
    with pytest.raises(BufferError, match="needs a copy, and copy=False forbids one"):
        view.__dlpack__(max_version=(1, 0), dl_device=(dlpack.DLDeviceType.CPU, 0), copy=False)
    with pytest.raises(BufferError, match="read-only"):
        view.__dlpack__()  # a legacy capsule cannot carry the read-only flag
    same_device = view.__dlpack__(max_version=(1, 0), dl_device=(dlpack.DLDeviceType.CUDA, 0), stream=-1)
    assert type(same_device).__name__ == "PyCapsule"


# ----- describe_gpu_array of DLPack-only objects -----------------------------------------------------


class DLPackOnly:
    """Forwards only the DLPack protocol of another object (like a JAX or Numba array would offer)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.inner.__dlpack_device__()

    def __dlpack__(self, **keywords: Any) -> CapsuleType:
        return self.inner.__dlpack__(**keywords)


@pytest.mark.usefixtures("no_leaked_exports")
def test_describe_a_dlpack_only_cuda_array() -> None:
    producer = FakeCudaProducer(FAKE_DEVICE_ADDRESS, (33, 17, 3), "uint8", device=0)
    owner_alive = weakref.ref(producer.owner)
    described = describe_gpu_array(producer, "src")
    assert (described.ptr, described.shape, described.dtype_name, described.device) == (
        FAKE_DEVICE_ADDRESS,
        (33, 17, 3),
        "uint8",
        0,
    )
    assert (described.framework, described.stream, described.readonly) == ("dlpack", 1, False)
    assert producer.requests[-1]["stream"] == 1
    on_stream = describe_gpu_array(producer, "src", stream=0x7000)
    assert producer.requests[-1]["stream"] == 0x7000 and on_stream.stream == 0x7000
    del producer, on_stream
    collected()
    assert owner_alive() is not None  # the GpuArray's obj keeps the consumed tensor
    del described
    collected()
    assert owner_alive() is None


def test_describe_a_non_contiguous_or_host_dlpack_array() -> None:
    with pytest.raises(TypeError, match=r"src: the array lives on kDLCPU, not on a CUDA device"):
        describe_gpu_array(DLPackOnly(np.zeros((3, 3), np.float32)), "src")
    with pytest.raises(TypeError, match="src: got a numpy array, which lives in host memory"):
        describe_gpu_array(np.zeros((3, 3), np.float32), "src")  # numpy has __dlpack__ too

    class Strided:
        def __dlpack_device__(self) -> tuple[int, int]:
            return (dlpack.DLDeviceType.CUDA, 0)

        def __dlpack__(self, **keywords: Any) -> CapsuleType:
            return np.zeros((4, 6), np.float32)[:, ::2].__dlpack__()  # strides of a host array, never read

    with pytest.raises(ValueError, match=r"src: DLPack tensor of shape \(4, 3\) is not C-contiguous"):
        describe_gpu_array(Strided(), "src")
