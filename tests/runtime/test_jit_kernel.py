"""fkl.jit.kernel (SPEC §6.2): the SPEC's scale_rows on both targets against numpy, template instances,
strided views, the content cache (an edited header recompiles once, an unchanged kernel never), errors,
and on the GPU: torch, CuPy and DeviceBuffer inputs, both compilers, the caller's stream, CUDA graphs."""

from __future__ import annotations

import runpy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build, compilers

jit = fkl.jit
RNG = np.random.default_rng(616)
gpu = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")

COMMON_H = """#pragma once
#include "fkl/core.h"
FKL_HD float row_factor(long long i) { return float(i + 1); }
FKL_HD float load(float v) { return v; }
FKL_HD float load(fkl::f16 v) { return fkl::to_f32(v); }
template <class T> FKL_HD T store(float v);
template <> FKL_HD float store<float>(float v) { return v; }
template <> FKL_HD fkl::f16 store<fkl::f16>(float v) { return fkl::f16_from_f32(v); }
"""

CPU_SOURCE = """#include "scale_rows_common.h"
// out[i, j] = x[i, j] * alpha * row_factor(i), any strides
template <class T, int Block>
void scale_rows(fkl::TensorView out, fkl::TensorView x, float alpha) {
#pragma omp parallel for if (out.shape[0] * out.shape[1] > 65536)
    for (long long i = 0; i < out.shape[0]; ++i)
        for (long long j = 0; j < out.shape[1]; ++j) {
            const T v = x.ptr<T>()[i * x.strides[0] + j * x.strides[1]];
            out.ptr<T>()[i * out.strides[0] + j * out.strides[1]] = store<T>(load(v) * alpha * row_factor(i));
        }
}
"""

CUDA_SOURCE = """#include "scale_rows_common.h"
// one block per row, Block threads across it
template <class T, int Block>
__global__ void scale_rows(fkl::TensorView out, fkl::TensorView x, float alpha) {
    const long long i = blockIdx.x;
    for (long long j = threadIdx.x; j < out.shape[1]; j += Block) {
        const T v = x.ptr<T>()[i * x.strides[0] + j * x.strides[1]];
        out.ptr<T>()[i * out.strides[0] + j * out.strides[1]] = store<T>(load(v) * alpha * row_factor(i));
    }
}
"""

N, C = jit.SymbolicSize("N"), jit.SymbolicSize("C")
T = jit.SymbolicDType("T", ("float32", "float16"))
D = jit.SymbolicDevice()


@pytest.fixture
def csrc(tmp_path: Path) -> Path:
    """The SPEC's csrc folder (each test's own, so that each test's kernels are new to the cache)."""
    folder = tmp_path / "csrc"
    folder.mkdir()
    (folder / "scale_rows_common.h").write_text(COMMON_H)
    (folder / "scale_rows.cpp").write_text(CPU_SOURCE)
    (folder / "scale_rows.cuh").write_text(CUDA_SOURCE)
    return folder


def _scale_rows(csrc: Path, x_strides: Any = None) -> jit.Kernel:
    x = jit.TensorMatcher((N, C)).with_dtype(T).with_device(D)
    return jit.kernel(
        "scale_rows",
        cuda=csrc / "scale_rows.cuh",
        cpu=csrc / "scale_rows.cpp",
        args=[
            ("out", jit.TensorMatcher((N, C)).with_dtype(T).with_device(D)),
            ("x", x if x_strides is None else x.with_strides(x_strides)),
            ("alpha", "float32"),
        ],
        template=lambda T: jit.cpp_args(T, 256),
        grid=lambda N, C: ((N, 1, 1), (256, 1, 1)),
    )


def _reference(x: np.ndarray[Any, Any], alpha: float, first_row: int = 1) -> np.ndarray[Any, Any]:
    rows = np.arange(first_row, first_row + x.shape[0], dtype=np.float32)[:, None]
    return (x.astype(np.float32) * np.float32(alpha) * rows).astype(x.dtype)


def _random(shape: tuple[int, ...], dtype: Any) -> np.ndarray[Any, Any]:
    return RNG.uniform(-4, 4, shape).astype(dtype)


# ----- CPU ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_scale_rows_on_the_cpu(csrc: Path, dtype: Any) -> None:
    k = _scale_rows(csrc)
    x = _random((33, 17), dtype)
    out = np.empty_like(x)
    assert k(out, x, 2.5) is None
    np.testing.assert_array_equal(out, _reference(x, 2.5))


def test_one_compile_per_instance_and_none_for_new_values(csrc: Path) -> None:
    k = _scale_rows(csrc)
    before = build.STATS.compiles
    for alpha in (1.0, -3.0):
        for dtype in (np.float32, np.float16):
            x = _random((5, 9), dtype)
            out = np.empty_like(x)
            k(out, x, alpha)
            np.testing.assert_array_equal(out, _reference(x, alpha))
    assert build.STATS.compiles - before == 2  # one per template instance (float, fkl::f16)
    k(np.empty((7, 3), np.float32), _random((7, 3), np.float32), 1.0)  # a new size: the same instance
    assert build.STATS.compiles - before == 2


def test_strided_views(csrc: Path) -> None:
    k = _scale_rows(csrc, x_strides=(-1, -1))
    base = _random((40, 66), np.float32)
    for view in (base.T, base[3:36:2, 1:60:3], base[::-1, ::5]):
        out = np.empty(view.shape, np.float32)
        k(out, view, 0.5)
        np.testing.assert_array_equal(out, _reference(np.ascontiguousarray(view), 0.5))
    out_view = np.zeros((66, 40), np.float32).T  # a strided output needs its own declaration
    with pytest.raises(ValueError, match=r"^out: not contiguous \(shape \(40, 66\), strides \(1, 40\) in elements\)"):
        k(out_view, base, 1.0)


def test_torch_cpu_tensors(csrc: Path) -> None:
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(_random((33, 17), np.float32))
    out = torch.empty_like(x)
    _scale_rows(csrc)(out, x, 2.0)
    np.testing.assert_array_equal(out.numpy(), _reference(x.numpy(), 2.0))


def test_an_edited_header_recompiles_once_and_an_unchanged_kernel_never(csrc: Path) -> None:
    x = _random((6, 5), np.float32)
    out = np.empty_like(x)
    before = build.STATS.compiles
    _scale_rows(csrc)(out, x, 1.0)
    assert build.STATS.compiles - before == 1
    _scale_rows(csrc)(out, x, 1.0)  # a new kernel object on the same sources: found in the cache
    assert build.STATS.compiles - before == 1
    header = csrc / "scale_rows_common.h"
    header.write_text(header.read_text().replace("float(i + 1)", "float(i + 2)"))
    edited = _scale_rows(csrc)
    edited(out, x, 1.0)
    assert build.STATS.compiles - before == 2
    np.testing.assert_array_equal(out, _reference(x, 1.0, first_row=2))
    edited(out, x, 3.0)
    _scale_rows(csrc)(out, x, 1.0)
    assert build.STATS.compiles - before == 2


def test_sources_as_text_and_paths_relative_to_the_declaring_file(tmp_path: Path, csrc: Path) -> None:
    module = tmp_path / "my_kernels.py"
    module.write_text(
        "import fklir as fkl\n"
        "x = fkl.jit.TensorMatcher((-1, -1)).with_dtype('float32')\n"
        "k = fkl.jit.kernel('scale_rows', cpu='csrc/scale_rows.cpp', args=[('out', x), ('x', x), ('a', 'float32')],\n"
        "                   template=lambda: fkl.jit.cpp_args('float32', 1))\n"
    )
    k = runpy.run_path(str(module))["k"]
    x = _random((4, 3), np.float32)
    out = np.empty_like(x)
    k(out, x, 2.0)
    np.testing.assert_array_equal(out, _reference(x, 2.0))
    negate = jit.kernel(
        "negate",
        cpu="void negate(fkl::TensorView x) { for (int i = 0; i < x.shape[0]; ++i) x.ptr<int>()[i] *= -1; }",
        args=[("x", jit.TensorMatcher((-1,)).with_dtype("int32"))],
    )
    values = np.arange(5, dtype=np.int32)
    negate(values)
    np.testing.assert_array_equal(values, -np.arange(5))


def test_a_compile_error_names_the_kernel_and_the_users_line(csrc: Path) -> None:
    source = csrc / "scale_rows.cpp"
    source.write_text(source.read_text().replace("row_factor(i)", "row_factr(i)"))
    with pytest.raises(fkl.CompileError) as caught:
        _scale_rows(csrc)(np.empty((2, 2), np.float32), np.zeros((2, 2), np.float32), 1.0)
    message = str(caught.value)
    assert message.startswith("fkl.jit kernel 'scale_rows' (cpu, scale_rows<float, 256>) does not compile:")
    assert f"{source}:9:" in message  # the user's file and line
    assert "row_factr" in message


def test_declaration_errors(csrc: Path) -> None:
    matcher = jit.TensorMatcher((N, C))
    with pytest.raises(TypeError, match=r"^scale_rows: template takes a parameter 'K', which no argument binds"):
        jit.kernel("scale_rows", cpu=csrc / "scale_rows.cpp", args=[("x", matcher)], template=lambda K: "")
    with pytest.raises(
        TypeError, match=r"^scale_rows: grid takes a parameter 'M', which no argument binds \(symbols: N, C\)$"
    ):
        jit.kernel("scale_rows", cuda=csrc / "scale_rows.cuh", args=[("x", matcher)], grid=lambda M: ((1,), (1,)))
    with pytest.raises(FileNotFoundError, match=r"^scale_rows: cpu source .*missing.cpp does not exist$"):
        jit.kernel("scale_rows", cpu=csrc / "missing.cpp", args=[("x", matcher)])
    with pytest.raises(ValueError, match=r"^scale_rows: give a cuda= or cpu= source \(or both\)$"):
        jit.kernel("scale_rows", args=[("x", matcher)])
    with pytest.raises(ValueError, match=r"^fkl.jit.kernel: the name must be a C\+\+ \(qualified\) name"):
        jit.kernel("scale rows", cpu=csrc / "scale_rows.cpp", args=[("x", matcher)])


def test_call_errors(csrc: Path) -> None:
    x = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"^the CPU target has no streams: call without stream=$"):
        _scale_rows(csrc)(x, x, 1.0, stream=0)
    gpu_only = jit.kernel(
        "scale_rows",
        cuda=csrc / "scale_rows.cuh",
        args=[("x", jit.TensorMatcher((N, C)))],
        grid=lambda N: ((N,), (1,)),
    )
    with pytest.raises(TypeError, match=r"^scale_rows: the tensors are on the CPU, but the kernel has no cpu= source$"):
        gpu_only(x)


# ----- GPU ---------------------------------------------------------------------------------------------


@pytest.fixture(params=["nvcc", "nvrtc"])
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each GPU test on both compilers, the caller's choice restored after."""
    name = str(request.param)
    if not (compilers.nvcc_available() if name == "nvcc" else compilers.nvrtc_available()):
        pytest.skip(f"needs {name}")
    previous = build._gpu_backend
    fkl.set_backend(name)
    yield name
    fkl.set_backend(previous)


@pytest.fixture
def torch() -> Any:
    return pytest.importorskip("torch")


@gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_scale_rows_on_torch_tensors(csrc: Path, backend: str, torch: Any, dtype: Any) -> None:
    x_np = _random((33, 17), dtype)
    x = torch.from_numpy(x_np).cuda()
    out = torch.empty_like(x)
    _scale_rows(csrc)(out, x, 2.5)
    np.testing.assert_array_equal(out.cpu().numpy(), _reference(x_np, 2.5))


@gpu
def test_scale_rows_on_strided_torch_views(csrc: Path, backend: str, torch: Any) -> None:
    base_np = _random((40, 66), np.float32)
    base = torch.from_numpy(base_np).cuda()
    k = _scale_rows(csrc, x_strides=(-1, -1))
    for view, view_np in ((base.t(), base_np.T), (base[3:36:2, 1:60:3], base_np[3:36:2, 1:60:3])):
        out = torch.empty(tuple(view.shape), dtype=torch.float32, device="cuda")
        k(out, view, 0.5)
        np.testing.assert_array_equal(out.cpu().numpy(), _reference(np.ascontiguousarray(view_np), 0.5))


@gpu
def test_scale_rows_on_cupy_arrays(csrc: Path, backend: str) -> None:
    cupy = pytest.importorskip("cupy")
    x_np = _random((33, 17), np.float32)
    x = cupy.asarray(x_np)
    out = cupy.empty_like(x)
    _scale_rows(csrc)(out, x, -1.25)
    np.testing.assert_array_equal(cupy.asnumpy(out), _reference(x_np, -1.25))


@gpu
def test_scale_rows_on_device_buffers(csrc: Path, backend: str) -> None:
    x_np = _random((33, 17), np.float16)
    x = fkl.DeviceBuffer.from_host(x_np)
    out = fkl.DeviceBuffer((33, 17), "float16")
    _scale_rows(csrc)(out, x, 3.0)
    np.testing.assert_array_equal(out.copy_to_host(), _reference(x_np, 3.0))


@gpu
def test_the_callers_stream(csrc: Path, backend: str, torch: Any) -> None:
    x_np = _random((33, 17), np.float32)
    x = torch.from_numpy(x_np).cuda()
    out = torch.zeros_like(x)
    k = _scale_rows(csrc)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        k(out, x, 2.0, stream=stream)
        doubled = out * 2  # queued after the kernel on the same stream
    stream.synchronize()
    np.testing.assert_array_equal(out.cpu().numpy(), _reference(x_np, 2.0))
    np.testing.assert_array_equal(doubled.cpu().numpy(), _reference(x_np, 2.0) * 2)


@gpu
def test_cuda_graph_capture(csrc: Path, backend: str, torch: Any) -> None:
    x = torch.empty((33, 17), dtype=torch.float32, device="cuda")
    out = torch.empty_like(x)
    k = _scale_rows(csrc)
    k(out, x, 2.0)  # compiled and loaded before the capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.graph(graph, stream=stream):
        k(out, x, 2.0, stream=torch.cuda.current_stream())
    for _ in range(3):
        refill = _random((33, 17), np.float32)
        x.copy_(torch.from_numpy(refill))
        out.zero_()
        graph.replay()
        torch.cuda.synchronize()
        np.testing.assert_array_equal(out.cpu().numpy(), _reference(refill, 2.0))


@gpu
def test_cpu_and_gpu_tensors_are_refused_together(csrc: Path, torch: Any) -> None:
    out = torch.empty((2, 3), dtype=torch.float32, device="cuda")
    with pytest.raises(TypeError, match=r"^x: on cpu, but out is on cuda:0; CPU and GPU tensors cannot be mixed"):
        _scale_rows(csrc)(out, np.zeros((2, 3), np.float32), 1.0)


@gpu
def test_a_gpu_compile_error_names_the_kernel_and_the_users_line(csrc: Path, backend: str, torch: Any) -> None:
    source = csrc / "scale_rows.cuh"
    source.write_text(source.read_text().replace("row_factor(i)", "row_factr(i)"))
    x = torch.zeros((2, 2), dtype=torch.float32, device="cuda")
    with pytest.raises(fkl.CompileError) as caught:
        _scale_rows(csrc)(x, x, 1.0)
    message = str(caught.value)
    assert message.startswith("fkl.jit kernel 'scale_rows' (gpu, scale_rows<float, 256>) does not compile:")
    assert "scale_rows.cuh" in message and "row_factr" in message
