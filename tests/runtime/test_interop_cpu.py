"""Array/stream interop and driver helpers that can be checked without a GPU."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from fklir.backend import cuda_driver
from fklir.runtime.device_buffer import ELEMENT_TYPES, DeviceBuffer, element_type_name, host_view_for
from fklir.runtime.interop import (
    GpuArray,
    HostArray,
    describe_gpu_array,
    describe_host_array,
    empty_like_framework,
    is_c_contiguous,
    stream_handle,
)

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
    with pytest.raises(
        TypeError, match=r"out: expected a CUDA torch.Tensor, a CuPy array, an fklir DeviceBuffer"
    ):
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
    with pytest.raises(
        cuda_driver.CudaError, match="cuLaunchKernel failed with CUDA_ERROR_ILLEGAL_ADDRESS"
    ) as caught:
        cuda_driver.check((700,), "cuLaunchKernel")
    assert caught.value.code == 700
    assert caught.value.name == "CUDA_ERROR_ILLEGAL_ADDRESS"
