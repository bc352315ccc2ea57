"""GPU plumbing: DeviceBuffer, cubin loading and struct-by-value launches, torch/CuPy interop, stream
ordering, a corrupt cubin in the disk cache.

Skipped without a CUDA device. Needs nvcc for the launch tests.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fklir.backend.cache import DiskCache
from fklir.backend.compilers import compile_cubin, nvcc_available
from fklir.runtime import cuda_driver
from fklir.runtime.device_buffer import ELEMENT_TYPES, DeviceBuffer
from fklir.runtime.interop import describe_gpu_array, empty_like_framework
from fklir.runtime.streams import stream_handle
from tests.runtime.gpu_memory import allocation_id

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda_driver.gpu_available(), reason="needs a CUDA device"),
]
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="needs nvcc")

HEIGHT, WIDTH = 17, 33  # odd on purpose: partial blocks in both directions
BLOCK = (16, 8, 1)
GRID = ((WIDTH + BLOCK[0] - 1) // BLOCK[0], (HEIGHT + BLOCK[1] - 1) // BLOCK[1], 1)
GUARD = 61  # extra elements after the image that the kernel must not touch

PROBE_SOURCE = r"""
struct ProbeParams {
    unsigned long long out;  // float*
    int width;
    int height;
    float scale;
    double offset;           // 8-byte aligned: 4 bytes of padding before it
    unsigned char flag;      // trailing byte: 7 bytes of tail padding
};

extern "C" __global__ void fklir_probe_write(ProbeParams p) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.width || y >= p.height) return;
    float* out = reinterpret_cast<float*>(p.out);
    const float v = p.scale * static_cast<float>(x - 7 * y);
    out[y * p.width + x] = p.flag ? static_cast<float>(static_cast<double>(v) + p.offset) : -v;
}
"""


class ProbeParams(ctypes.Structure):
    _fields_ = (
        ("out", ctypes.c_uint64),
        ("width", ctypes.c_int32),
        ("height", ctypes.c_int32),
        ("scale", ctypes.c_float),
        ("offset", ctypes.c_double),
        ("flag", ctypes.c_uint8),
    )


def probe_reference(scale: float, offset: float, flag: bool) -> np.ndarray[Any, Any]:
    """The kernel's formula in numpy, with the same float32/float64 roundings."""
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    v = np.float32(scale) * (xs - 7 * ys).astype(np.float32)
    if not flag:
        return -v
    return (v.astype(np.float64) + np.float64(offset)).astype(np.float32)


class PreparedLaunch:
    """The parameter block and its void*[1] built once; fields are patched in place per call."""

    def __init__(self, out_ptr: int, scale: float, offset: float, flag: bool) -> None:
        self.params = ProbeParams(out_ptr, WIDTH, HEIGHT, scale, offset, int(flag))
        self.param_array = (ctypes.c_void_p * 1)(ctypes.addressof(self.params))
        self.address = ctypes.addressof(self.param_array)


@pytest.fixture(scope="module")
def probe_kernel(tmp_path_factory: pytest.TempPathFactory) -> cuda_driver.LoadedKernel:
    if not nvcc_available():
        pytest.skip("needs nvcc")
    workdir = tmp_path_factory.mktemp("probe")
    include_dir = workdir / "include"
    include_dir.mkdir()
    cubin = compile_cubin(PROBE_SOURCE, include_dir, cuda_driver.device_arch(0), workdir)
    return cuda_driver.load_kernel(cubin, "fklir_probe_write", 0)


def filled_output(sentinel: float = -12345.0) -> DeviceBuffer:
    return DeviceBuffer.from_host(np.full(HEIGHT * WIDTH + GUARD, sentinel, dtype=np.float32))


# ----- driver basics ---------------------------------------------------------------------------------


def test_device_arch_and_count() -> None:
    arch = cuda_driver.device_arch(0)
    assert re.fullmatch(r"sm_\d+", arch)
    assert int(arch[3:]) >= 50
    assert cuda_driver.device_count() >= 1
    with pytest.raises(ValueError, match="CUDA device 99 does not exist"):
        cuda_driver.ensure_context(99)


def test_ensure_context_makes_the_primary_context_current() -> None:
    driver = cuda_driver._driver()

    def in_fresh_thread() -> None:
        assert int(cuda_driver.check(driver.cuCtxGetCurrent())) == 0
        cuda_driver.ensure_context(0)
        current = int(cuda_driver.check(driver.cuCtxGetCurrent()))
        device = cuda_driver.check(driver.cuDeviceGet(0))
        primary = cuda_driver.check(driver.cuDevicePrimaryCtxRetain(device))
        assert current == int(primary) != 0
        cuda_driver.check(driver.cuDevicePrimaryCtxRelease(device))
        cuda_driver.ensure_context(0)  # already current: a no-op
        assert int(cuda_driver.check(driver.cuCtxGetCurrent())) == current

    run_in_thread(in_fresh_thread)


def test_allocation_does_not_change_the_threads_current_context() -> None:
    driver = cuda_driver._driver()

    def in_fresh_thread() -> None:
        buffer = DeviceBuffer((5, 3), "float32")
        assert int(cuda_driver.check(driver.cuCtxGetCurrent())) == 0
        buffer.free()
        assert int(cuda_driver.check(driver.cuCtxGetCurrent())) == 0

    run_in_thread(in_fresh_thread)


def run_in_thread(function: Any) -> None:
    failures: list[BaseException] = []

    def wrapper() -> None:
        try:
            function()
        except BaseException as error:  # re-raised in the test's thread
            failures.append(error)

    thread = threading.Thread(target=wrapper)
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


def test_internal_stream_is_created_once_and_synchronizes() -> None:
    first = cuda_driver.internal_stream(0)
    assert first != 0
    assert cuda_driver.internal_stream(0) == first
    cuda_driver.synchronize(first)


@pytest.mark.driver_error  # asks the driver about freed or host memory
def test_pointer_device_of_an_allocation() -> None:
    buffer = DeviceBuffer((4,), "uint8")
    assert cuda_driver.pointer_device(buffer.ptr) == 0
    host = np.zeros(4, np.uint8)
    with pytest.raises(cuda_driver.CudaError):
        cuda_driver.pointer_device(host.ctypes.data)


# ----- DeviceBuffer ----------------------------------------------------------------------------------


def random_host_array(dtype_name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray[Any, Any]:
    storage = ELEMENT_TYPES[dtype_name]
    if dtype_name == "bool":
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    raw = rng.integers(0, 256, size=(*shape, storage.itemsize), dtype=np.uint8)
    array = raw.view(storage).reshape(shape).copy()  # every bit pattern, NaNs and infinities included
    if storage.kind == "f":
        array.flat[:4] = [np.nan, -0.0, np.inf, 2.5]
    return array


@pytest.mark.parametrize("dtype_name", list(ELEMENT_TYPES))
@pytest.mark.parametrize("shape", [(HEIGHT, WIDTH), (HEIGHT, WIDTH, 3), (3, 7, 5, 4), (1,)])
def test_device_buffer_round_trip_is_bit_exact(dtype_name: str, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{dtype_name}{shape}".encode()))
    host = random_host_array(dtype_name, shape, rng)
    buffer = DeviceBuffer.from_host(host) if dtype_name != "bfloat16" else DeviceBuffer(shape, "bfloat16")
    if dtype_name == "bfloat16":
        buffer.copy_from_host(host)
    assert buffer.dtype_name == dtype_name
    assert buffer.nbytes == host.nbytes
    back = buffer.numpy()
    assert back.dtype == ELEMENT_TYPES[dtype_name]
    assert back.shape == shape
    np.testing.assert_array_equal(back.view(np.uint8), host.view(np.uint8))


def test_device_buffer_overwrite_and_interface() -> None:
    buffer = DeviceBuffer((HEIGHT, WIDTH, 3), np.uint8)
    first = np.arange(HEIGHT * WIDTH * 3, dtype=np.uint8).reshape(HEIGHT, WIDTH, 3)
    buffer.copy_from_host(first)
    buffer.copy_from_host(255 - first)
    np.testing.assert_array_equal(buffer.copy_to_host(), 255 - first)
    interface = buffer.__cuda_array_interface__
    assert interface == {
        "version": 3,
        "shape": (HEIGHT, WIDTH, 3),
        "typestr": "|u1",
        "strides": None,
        "data": (buffer.ptr, False),
        "stream": None,
    }


def test_copy_from_host_names_the_problem() -> None:
    buffer = DeviceBuffer((4, 6), "float32")
    with pytest.raises(ValueError, match=r"shape \(6, 4\) does not match the buffer's \(4, 6\)"):
        buffer.copy_from_host(np.zeros((6, 4), np.float32))
    with pytest.raises(TypeError, match="dtype float64 does not match the buffer's float32"):
        buffer.copy_from_host(np.zeros((4, 6), np.float64))
    with pytest.raises(ValueError, match=r"not C-contiguous \(strides \(4, 16\)\)"):
        buffer.copy_from_host(np.zeros((6, 4), np.float32).T)
    with pytest.raises(TypeError, match="expected a numpy array, got list"):
        buffer.copy_from_host([[0.0] * 6] * 4)  # type: ignore[arg-type]


@pytest.mark.driver_error  # asks the driver about freed memory
def test_dropped_buffers_return_their_memory() -> None:
    kept = DeviceBuffer((1024,), "uint8")
    for _ in range(8):
        buffer = DeviceBuffer((1 << 30,), "uint16")  # 2 GiB each: 16 GiB if nothing were freed
        ptr, live = buffer.ptr, allocation_id(buffer.ptr)
        assert live is not None and live != allocation_id(kept.ptr), "two live allocations, two ids"
        del buffer
        assert allocation_id(ptr) != live, "a dropped buffer's memory must go back to the driver"


def test_free_is_idempotent() -> None:
    buffer = DeviceBuffer((1024,), "float64")
    buffer.free()
    buffer.free()
    assert buffer.ptr == 0
    del buffer  # __del__ after free must not free again


# ----- launching -------------------------------------------------------------------------------------


@needs_nvcc
def test_struct_by_value_launch_matches_numpy(probe_kernel: cuda_driver.LoadedKernel) -> None:
    output = filled_output()
    launch = PreparedLaunch(output.ptr, scale=0.1, offset=0.3, flag=True)
    stream = cuda_driver.internal_stream(0)
    cuda_driver.ensure_context(0)
    cuda_driver.launch(probe_kernel, GRID, BLOCK, launch.address, stream)
    cuda_driver.synchronize(stream)
    result = output.numpy()
    np.testing.assert_array_equal(result[: HEIGHT * WIDTH].reshape(HEIGHT, WIDTH), probe_reference(0.1, 0.3, True))
    np.testing.assert_array_equal(result[HEIGHT * WIDTH :], np.float32(-12345.0))  # nothing past the image

    # Patch fields of the prebuilt block in place and launch again with the same address.
    second_output = filled_output()
    launch.params.out = second_output.ptr
    launch.params.scale = -2.75
    launch.params.flag = 0
    cuda_driver.launch(probe_kernel, GRID, BLOCK, launch.address, stream)
    cuda_driver.synchronize(stream)
    np.testing.assert_array_equal(
        second_output.numpy()[: HEIGHT * WIDTH].reshape(HEIGHT, WIDTH), probe_reference(-2.75, 0.3, False)
    )
    # The first output was not touched by the second launch.
    np.testing.assert_array_equal(output.numpy(), result)


@pytest.mark.driver_error
@needs_nvcc
def test_launch_errors_are_cuda_errors(probe_kernel: cuda_driver.LoadedKernel) -> None:
    output = filled_output()
    launch = PreparedLaunch(output.ptr, 1.0, 0.0, True)
    cuda_driver.ensure_context(0)
    with pytest.raises(cuda_driver.CudaError, match=r"cuLaunchKernel\('fklir_probe_write'.*CUDA_ERROR_INVALID_VALUE"):
        cuda_driver.launch(probe_kernel, GRID, (4096, 1, 1), launch.address, cuda_driver.internal_stream(0))


@pytest.mark.driver_error
@needs_nvcc
def test_unknown_kernel_name_is_reported(tmp_path: Path) -> None:
    include_dir = tmp_path / "include"
    include_dir.mkdir()
    cubin = compile_cubin(PROBE_SOURCE, include_dir, cuda_driver.device_arch(0), tmp_path)
    with pytest.raises(cuda_driver.CudaError, match="cuModuleGetFunction\\('no_such_kernel'\\)"):
        cuda_driver.load_kernel(cubin, "no_such_kernel", 0)


# ----- torch -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch_module() -> Any:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA")
    return torch


TORCH_TYPES = [
    "uint8",
    "int8",
    "uint16",
    "int16",
    "uint32",
    "int32",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "bool",
]


@pytest.mark.parametrize("dtype_name", TORCH_TYPES)
def test_describe_torch_tensor(torch_module: Any, dtype_name: str) -> None:
    torch = torch_module
    tensor = torch.empty((HEIGHT, WIDTH, 3), dtype=getattr(torch, dtype_name), device="cuda:0")
    described = describe_gpu_array(tensor, "src")
    assert described.ptr == tensor.data_ptr()
    assert described.shape == (HEIGHT, WIDTH, 3)
    assert described.dtype_name == dtype_name
    assert described.device == 0
    assert described.framework == "torch"
    assert described.obj is tensor
    assert cuda_driver.pointer_device(described.ptr) == 0


def test_torch_errors(torch_module: Any) -> None:
    torch = torch_module
    tensor = torch.zeros((HEIGHT, WIDTH, 3), device="cuda:0")
    with pytest.raises(ValueError, match=r"src: torch tensor of shape \(17, 17, 3\) is not C-contiguous.*\(99, 6, 1\)"):
        describe_gpu_array(tensor[:, ::2], "src")
    with pytest.raises(TypeError, match=r"src: unsupported element type torch\.int64"):
        describe_gpu_array(torch.zeros(3, dtype=torch.int64, device="cuda:0"), "src")
    with pytest.raises(TypeError, match="src: got a torch tensor on cpu"):
        describe_gpu_array(torch.zeros(3), "src")


def test_torch_outputs_and_streams(torch_module: Any) -> None:
    torch = torch_module
    like = torch.zeros(2, device="cuda:0")
    tensor: Any
    tensor, ptr = empty_like_framework("torch", (HEIGHT, WIDTH), "bfloat16", 0, like)
    assert isinstance(tensor, torch.Tensor)
    assert tensor.dtype == torch.bfloat16
    assert tensor.device == torch.device("cuda:0")
    assert tuple(tensor.shape) == (HEIGHT, WIDTH)
    assert ptr == tensor.data_ptr()

    stream = torch.cuda.Stream()
    assert stream_handle(stream) == stream.cuda_stream != 0
    assert stream_handle(torch.cuda.current_stream()) == torch.cuda.current_stream().cuda_stream


def test_device_buffer_is_readable_by_torch(torch_module: Any) -> None:
    torch = torch_module
    host = np.random.default_rng(3).standard_normal((HEIGHT, WIDTH, 3)).astype(np.float32)
    buffer = DeviceBuffer.from_host(host)
    tensor = torch.as_tensor(buffer, device="cuda:0")
    assert tensor.data_ptr() == buffer.ptr
    np.testing.assert_array_equal(tensor.cpu().numpy(), host)


@needs_nvcc
def test_launch_into_a_torch_tensor_on_a_torch_stream(
    torch_module: Any, probe_kernel: cuda_driver.LoadedKernel
) -> None:
    torch = torch_module
    output, ptr = empty_like_framework("torch", (HEIGHT, WIDTH), "float32", 0, None)
    stream = torch.cuda.Stream()
    launch = PreparedLaunch(ptr, scale=1.5, offset=-0.7, flag=True)
    cuda_driver.ensure_context(0)
    cuda_driver.launch(probe_kernel, GRID, BLOCK, launch.address, stream_handle(stream))
    stream.synchronize()
    np.testing.assert_array_equal(output.cpu().numpy(), probe_reference(1.5, -0.7, True))  # type: ignore[attr-defined]


# ----- CuPy ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cupy_module() -> Any:
    return pytest.importorskip("cupy")


class CaiOnly:
    """Exposes another array only through __cuda_array_interface__."""

    def __init__(self, inner: Any) -> None:
        self.__cuda_array_interface__ = inner.__cuda_array_interface__


def test_describe_cupy_array(cupy_module: Any) -> None:
    cupy = cupy_module
    array = cupy.zeros((HEIGHT, WIDTH, 3), dtype=cupy.float16)
    described = describe_gpu_array(array, "src")
    assert (described.ptr, described.shape, described.dtype_name) == (
        array.data.ptr,
        (HEIGHT, WIDTH, 3),
        "float16",
    )
    assert (described.device, described.framework, described.obj) == (0, "cupy", array)
    with pytest.raises(ValueError, match=r"src: CuPy array of shape \(17, 17, 3\) is not C-contiguous"):
        describe_gpu_array(array[:, ::2], "src")
    with pytest.raises(TypeError, match="src: unsupported element type int64"):
        describe_gpu_array(cupy.zeros(3, dtype=cupy.int64), "src")


def test_describe_through_the_array_interface(cupy_module: Any) -> None:
    cupy = cupy_module
    array = cupy.arange(HEIGHT * WIDTH, dtype=cupy.int32).reshape(HEIGHT, WIDTH)
    wrapper = CaiOnly(array)
    described = describe_gpu_array(wrapper, "src")
    assert (described.ptr, described.shape, described.dtype_name) == (
        array.data.ptr,
        (HEIGHT, WIDTH),
        "int32",
    )
    assert (described.device, described.framework) == (0, "cai")
    stream = wrapper.__cuda_array_interface__.get("stream")
    assert described.stream == (None if stream is None else int(stream))
    with pytest.raises(ValueError, match=r"src: array of shape .* is not C-contiguous"):
        describe_gpu_array(CaiOnly(array[:, 1::2]), "src")


def test_cupy_outputs_and_streams(cupy_module: Any) -> None:
    cupy = cupy_module
    array: Any
    array, ptr = empty_like_framework("cupy", (HEIGHT, WIDTH, 3), "uint16", 0, None)
    assert isinstance(array, cupy.ndarray)
    assert (array.dtype, array.shape) == (cupy.uint16, (HEIGHT, WIDTH, 3))
    assert (array.device.id, ptr) == (0, array.data.ptr)
    fallback, fallback_ptr = empty_like_framework("cupy", (HEIGHT, WIDTH), "bfloat16", 0, None)
    assert isinstance(fallback, DeviceBuffer)
    assert fallback.dtype_name == "bfloat16"
    assert fallback_ptr == fallback.ptr

    stream = cupy.cuda.Stream(non_blocking=True)
    assert stream_handle(stream) == stream.ptr != 0


def test_device_buffer_is_readable_by_cupy(cupy_module: Any) -> None:
    cupy = cupy_module
    host = np.random.default_rng(5).integers(0, 256, size=(HEIGHT, WIDTH, 3), dtype=np.uint8)
    buffer = DeviceBuffer.from_host(host)
    view = cupy.asarray(buffer)
    assert view.data.ptr == buffer.ptr
    np.testing.assert_array_equal(cupy.asnumpy(view), host)


# ----- several GPUs ----------------------------------------------------------------------------------


@pytest.mark.skipif(not cuda_driver.gpu_available() or cuda_driver.device_count() < 2, reason="needs two CUDA devices")
def test_second_device() -> None:
    host = np.arange(HEIGHT * WIDTH, dtype=np.float32).reshape(HEIGHT, WIDTH)
    buffer = DeviceBuffer.from_host(host, device=1)
    assert buffer.device == 1
    assert cuda_driver.pointer_device(buffer.ptr) == 1
    np.testing.assert_array_equal(buffer.numpy(), host)
    assert describe_gpu_array(CaiOnly(buffer), "src").device == 1


# ----- stream ordering without a framework -----------------------------------------------------------

SPIN_SOURCE = r"""
extern "C" __global__ void fklir_spin_then_fill(float* out, int n, float value, long long spin_cycles) {
    const long long start = clock64();
    while (clock64() - start < spin_cycles) {
    }
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = value;
}
"""


@pytest.fixture(scope="module")
def spin_kernel(tmp_path_factory: pytest.TempPathFactory) -> cuda_driver.LoadedKernel:
    if not nvcc_available():
        pytest.skip("needs nvcc")
    workdir = tmp_path_factory.mktemp("spin")
    (workdir / "include").mkdir()
    cubin = compile_cubin(SPIN_SOURCE, workdir / "include", cuda_driver.device_arch(0), workdir)
    return cuda_driver.load_kernel(cubin, "fklir_spin_then_fill", 0)


def new_stream() -> int:
    driver = cuda_driver._driver()
    with cuda_driver.using_device(0):
        flags = int(driver.CUstream_flags.CU_STREAM_NON_BLOCKING)
        return int(cuda_driver.check(driver.cuStreamCreate(flags), "cuStreamCreate"))


def destroy_stream(stream: int) -> None:
    with cuda_driver.using_device(0):
        cuda_driver.check(cuda_driver._driver().cuStreamDestroy(stream), "cuStreamDestroy")


def test_stream_wait_accepts_real_and_default_streams() -> None:
    internal = cuda_driver.internal_stream(0)
    cuda_driver.stream_wait(internal, 1, 0)  # wait for the legacy default stream
    cuda_driver.stream_wait(1, internal, 0)
    cuda_driver.stream_wait(internal, 2, 0)  # the per-thread default stream
    cuda_driver.synchronize(internal)


@needs_nvcc
def test_stream_wait_orders_a_consumer_after_a_slow_producer(spin_kernel: cuda_driver.LoadedKernel) -> None:
    count = 4096
    driver = cuda_driver._driver()
    producer, consumer = new_stream(), new_stream()
    try:
        copies = {}
        for name, ordered in (("ordered", True), ("unordered control", False)):
            data = DeviceBuffer.from_host(np.zeros(count, np.float32))
            copy = DeviceBuffer.from_host(np.full(count, -1.0, np.float32))
            out_ptr = ctypes.c_uint64(data.ptr)
            n = ctypes.c_int32(count)
            value = ctypes.c_float(7.0)
            spin = ctypes.c_int64(150_000_000)  # about 0.1 s on a ~1.5-2 GHz GPU
            arguments = (ctypes.c_void_p * 4)(*(ctypes.addressof(a) for a in (out_ptr, n, value, spin)))
            cuda_driver.ensure_context(0)
            cuda_driver.launch(spin_kernel, (count // 256, 1, 1), (256, 1, 1), ctypes.addressof(arguments), producer)
            if ordered:
                cuda_driver.stream_wait(consumer, producer, 0)
            cuda_driver.check(driver.cuMemcpyDtoDAsync(copy.ptr, data.ptr, data.nbytes, consumer), "cuMemcpyDtoDAsync")
            cuda_driver.synchronize(consumer)
            copies[name] = copy.numpy()
            cuda_driver.synchronize(producer)
        np.testing.assert_array_equal(copies["ordered"], np.full(count, 7.0, np.float32))
        assert (copies["unordered control"] == 0).all()  # proof that the ordering mattered
    finally:
        destroy_stream(producer)
        destroy_stream(consumer)


# ----- a corrupt cubin in the disk cache, end to end -------------------------------------------------

GPU_CHILD_SCRIPT = """
import json, sys
import numpy as np
import fklir as fkl
from fklir.backend.build import STATS

image = np.arange(33 * 17 * 3, dtype=np.float32).reshape(33, 17, 3) / 7
ops = [fkl.Mul(1.5), fkl.Add(-2.0), fkl.Add(0.25), fkl.Sub(0.125)]
pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite())
np.save(sys.argv[1], pipe(fkl.DeviceBuffer.from_host(image)).numpy())
print(json.dumps({"compiles": STATS.compiles, "disk_hits": STATS.disk_hits}))
"""


def run_gpu_chain_in_fresh_process(root: Path, output: Path) -> dict[str, int]:
    completed = subprocess.run(
        [sys.executable, "-c", GPU_CHILD_SCRIPT, str(output)],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "FKLIR_CACHE_DIR": str(root)},
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    report: dict[str, int] = json.loads(completed.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.driver_error
@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_broken_cubin_is_detected_and_rebuilt_end_to_end(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "cache"
    image = np.arange(33 * 17 * 3, dtype=np.float32).reshape(33, 17, 3) / np.float32(7)
    expected = image
    for operation, operand in ((np.multiply, 1.5), (np.add, -2.0), (np.add, 0.25), (np.subtract, 0.125)):
        expected = operation(expected, np.float32(operand)).astype(np.float32)

    assert run_gpu_chain_in_fresh_process(root, tmp_path / "a.npy") == {"compiles": 1, "disk_hits": 0}
    np.testing.assert_array_equal(np.load(tmp_path / "a.npy"), expected)
    ((binary, size),) = [entry for entry in DiskCache(root).entries() if entry[0].suffix == ".cubin"]
    good = binary.read_bytes()
    if damage == "truncated":
        binary.write_bytes(good[: size // 2])
    else:
        binary.write_bytes(bytes(byte ^ 0x5A for byte in good))

    assert run_gpu_chain_in_fresh_process(root, tmp_path / "b.npy") == {"compiles": 1, "disk_hits": 0}
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), expected)
    assert DiskCache(root).load(binary.stem, binary.suffix) is not None  # rebuilt whole and verified
    assert run_gpu_chain_in_fresh_process(root, tmp_path / "c.npy") == {"compiles": 0, "disk_hits": 1}
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), expected)
