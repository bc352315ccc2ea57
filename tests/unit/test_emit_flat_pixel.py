"""Pixel-wise flat kernels (emit_flat.PixelFlatShape): chains without geometry whose ops mix or change
channels run over the image as one run of whole pixels.

The CPU target runs them here against cv2 and numpy float64 references; the GPU kernel's tile, its
fallback loop and its indexing run here too, compiled by g++ with the CUDA built-ins emulated (one
std::thread per GPU thread, __syncthreads a std::barrier), so that a mistake in them shows without a
device.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

import fklir as fkl
from fklir.backend.build import INCLUDE_DIR, kernel_values
from fklir.backend.emit_cpp import EmittedKernel
from fklir.backend.emit_flat import TILE_BYTES, pixel_flat_shape
from fklir.backend.kernel_plan import emit_kernel
from fklir.frontend import ops as fops
from fklir.frontend.lowering import kernels_of, lower_chain, lower_pipeline, run_passes
from fklir.runtime.launch import Extent, LaunchPlan

RNG = np.random.default_rng(19)


@pytest.mark.parametrize(
    ("in_dtype", "cin", "out_dtype", "cout", "pixels", "threads"),
    [
        ("uint8", 3, "uint8", 1, 16, 256),  # RGB -> gray: 48 bytes in, 16 out
        ("uint8", 3, "uint8", 4, 16, 256),  # 48 in, 64 out
        ("uint8", 1, "uint8", 3, 16, 256),
        ("float32", 3, "float32", 1, 4, 256),  # 48 in, 16 out
        ("uint8", 3, "float32", 3, 16, 128),  # 192 bytes of results a thread: half the threads
        ("float64", 4, "float64", 2, 1, 256),  # one pixel: 32 bytes in, 16 out
    ],
)
def test_pixel_flat_shape(in_dtype: str, cin: int, out_dtype: str, cout: int, pixels: int, threads: int) -> None:
    shape = pixel_flat_shape(in_dtype, cin, out_dtype, cout)
    assert (shape.pixels, shape.threads, shape.per_thread) == (pixels, threads, pixels * cout)
    in_bytes, out_bytes = pixels * cin * np.dtype(in_dtype).itemsize, pixels * cout * np.dtype(out_dtype).itemsize
    assert in_bytes % 16 == 0 and out_bytes % 16 == 0, "whole 16-byte vectors on both sides"
    assert (shape.vectors_in, shape.vectors_out) == (in_bytes // 16, out_bytes // 16)
    assert threads * max(in_bytes, out_bytes) <= TILE_BYTES


def _emitted(ops: tuple[fops.Op, ...], dtype: str, channels: int, planes: int = 1) -> tuple[EmittedKernel, Any]:
    module = run_passes(lower_chain([fops.TensorRead(), *ops, fops.TensorWrite()], dtype, channels, planes))
    (kernel,) = kernels_of(module)
    return emit_kernel(kernel), kernel_values(kernel)


@pytest.mark.parametrize(
    ("ops", "dtype", "channels", "cout"),
    [
        ((fkl.ColorConversion("RGB2GRAY"),), "uint8", 3, 1),
        ((fkl.ColorConversion("BGR2RGB"),), "uint8", 3, 3),
        ((fkl.ColorConversion("RGB2RGBA"),), "uint8", 3, 4),
        ((fkl.ColorConversion("GRAY2RGB"),), "uint8", 1, 3),
        ((fkl.VectorReorder(2, 1, 0), fkl.Mul(2.0)), "float32", 3, 3),
        ((fkl.Discard(2), fkl.AddLast(255)), "uint8", 4, 3),
    ],
)
def test_pixel_wise_chains_without_geometry_are_flat(
    ops: tuple[fops.Op, ...], dtype: str, channels: int, cout: int
) -> None:
    emitted, _ = _emitted(ops, dtype, channels)
    shape = pixel_flat_shape(dtype, channels, emitted.layout.out_dtype, cout)
    assert emitted.layout.mode == "flat"
    assert (emitted.layout.elements_per_thread, emitted.layout.flat_block) == (shape.per_thread, shape.threads)
    assert "compute_pixel(p, px, r);" in emitted.source


def test_geometry_and_planar_writes_stay_pixel_kernels() -> None:
    assert _emitted((fkl.Crop(1, 1, 8, 8), fkl.ColorConversion("RGB2GRAY")), "uint8", 3)[0].layout.mode == "sampled"
    module = run_passes(
        lower_chain([fops.TensorRead(), fkl.ColorConversion("BGR2RGB"), fops.TensorSplit()], "uint8", 3, 1)
    )
    (kernel,) = kernels_of(module)
    assert emit_kernel(kernel).layout.mode == "sampled"


def _image(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return (RNG.random(shape) * 255).astype(dtype)
    return RNG.integers(0, 256, shape, dtype=dtype)


def _run_cpu(x: Any, *ops: fops.Op) -> Any:
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x)


# 33x17: one partial group; 129x127 (16383 pixels): whole groups and a tail of 15 pixels
SIZES = [(17, 33), (127, 129), (1, 1)]
CV2_CODES = [("RGB2GRAY", 3), ("BGR2RGB", 3), ("RGB2RGBA", 3), ("GRAY2RGB", 1), ("BGRA2GRAY", 4), ("RGBA2BGR", 4)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize(("code", "channels"), CV2_CODES)
def test_color_conversions_equal_cv2_on_the_cpu(code: str, channels: int, size: tuple[int, int]) -> None:
    x = _image("uint8", (*size, channels) if channels > 1 else size)
    np.testing.assert_array_equal(
        _run_cpu(x, fkl.ColorConversion(code)), cv2.cvtColor(x, getattr(cv2, f"COLOR_{code}"))
    )


def _misaligned(x: np.ndarray, offset: int) -> np.ndarray:
    """A copy of x that starts `offset` bytes past a 16-byte boundary."""
    held = np.zeros(x.nbytes + 16 + offset, np.uint8)
    start = -held.ctypes.data % 16 + offset
    copy = held[start : start + x.nbytes].view(x.dtype).reshape(x.shape)
    copy[...] = x
    return copy


def test_unaligned_batches_on_the_cpu() -> None:
    x = _misaligned(_image("uint8", (2, 40, 67, 3)), 1)
    out = _run_cpu(x, fkl.ColorConversion("RGB2BGR"), fkl.Cast("float32"), fkl.Mul(0.5))
    np.testing.assert_array_equal(out, x[..., ::-1].astype(np.float64) * 0.5)


def test_image_lists_on_the_cpu() -> None:
    images = [_image("uint8", (35, 61, 3)) for _ in range(3)]
    pipe = fkl.compose(fkl.TensorRead(), fkl.ColorConversion("RGB2GRAY"), fkl.TensorWrite(), target="cpu")
    out = pipe(images)
    for k, image in enumerate(images):
        np.testing.assert_array_equal(out[k], cv2.cvtColor(image, cv2.COLOR_RGB2GRAY))


def test_a_float_pixel_chain_equals_numpy_float64_on_the_cpu() -> None:
    x = _image("float32", (33, 17, 3))
    out = _run_cpu(x, fkl.MxVFloat3(((0.5, 0.25, 0.25), (0.0, 1.0, 0.0), (1.0, -1.0, 0.5))), fkl.VectorReduce("Add"))
    m = np.array(((0.5, 0.25, 0.25), (0.0, 1.0, 0.0), (1.0, -1.0, 0.5)))
    expected = (x.astype(np.float64) @ m.T).sum(-1, keepdims=True)
    np.testing.assert_allclose(out.reshape(expected.shape), expected, rtol=1e-5, atol=1e-4)


# ---- the GPU kernel, emulated on the CPU ------------------------------------------------------------

_HARNESS = r"""
#include <barrier>
#include <thread>
#include <vector>
#define __CUDACC__ 1
#define __host__
#define __device__
#define __global__
#define __shared__ static
#define __launch_bounds__(n)
struct Dim3 { unsigned x, y, z; };
thread_local Dim3 threadIdx, blockIdx;
static std::barrier<>* block_barrier;
inline void __syncthreads() { block_barrier->arrive_and_wait(); }
#include "kernel.cu"
extern "C" void launch(const Params* p, int blocks, int rows, int threads) {
    for (int y = 0; y < rows; ++y)
        for (int b = 0; b < blocks; ++b) {
            std::barrier<> barrier(threads);
            block_barrier = &barrier;
            std::vector<std::thread> team;
            for (int t = 0; t < threads; ++t)
                team.emplace_back([=] {
                    threadIdx = {(unsigned)t, 0, 0};
                    blockIdx = {(unsigned)b, (unsigned)y, 0};
                    fkl_kernel(*p);
                });
            for (auto& thread : team) thread.join();
        }
}
"""


def _emulate(emitted: EmittedKernel, values: Any, sources: list[np.ndarray], out: np.ndarray, tmp: Path) -> None:
    """Run the emitted GPU kernel into out (planes, h, w, c) as the launcher would launch it: on sources[0]
    (planes, h, w, c), or on the list `sources` (each h, w, c) through the pointer table."""
    (tmp / "kernel.cu").write_text(emitted.source)
    (tmp / "harness.cpp").write_text(_HARNESS)
    library = tmp / "harness.so"
    command = ["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-pthread", "-I", str(INCLUDE_DIR), "-I", str(tmp)]
    subprocess.run([*command, "-o", str(library), str(tmp / "harness.cpp")], check=True)
    layout = emitted.layout
    plan = LaunchPlan(layout, values)
    planes, h, w, cout = out.shape
    plan.set_sources([x.ctypes.data for x in sources])
    plan.set_extent(Extent(w, h, planes, sources[0].shape[-1], w, h, planes, cout))
    plan.set_pointers(sources[0].ctypes.data, out.ctypes.data)
    rows = planes if layout.src_table else 1
    threads = -(-plan.header.n // layout.elements_per_thread)
    blocks = max(1, -(-threads // layout.flat_block))
    ctypes.CDLL(str(library)).launch(ctypes.byref(plan.params), blocks, rows, layout.flat_block)


@pytest.mark.parametrize(
    ("code", "channels", "size", "offset"),
    [
        ("RGB2GRAY", 3, (70, 131), 0),  # two whole tiles of 4096 pixels and a partial one
        ("RGB2RGBA", 3, (17, 33), 0),  # a partial tile only
        ("GRAY2RGB", 1, (64, 128), 0),  # exactly two tiles
        ("BGR2RGB", 3, (64, 128), 1),  # unaligned: every pixel through the fallback loop
    ],
)
def test_the_gpu_kernel_emulated(code: str, channels: int, size: tuple[int, int], offset: int, tmp_path: Path) -> None:
    emitted, values = _emitted((fkl.ColorConversion(code),), "uint8", channels)
    x = _image("uint8", (*size, channels))
    source = _misaligned(x[None], offset)
    expected = cv2.cvtColor(x[..., 0] if channels == 1 else x, getattr(cv2, f"COLOR_{code}"))
    expected = expected.reshape(*size, -1)
    out = np.full((1, *expected.shape), 7, np.uint8)
    _emulate(emitted, values, [source], out, tmp_path)
    np.testing.assert_array_equal(out[0], expected)


def test_the_gpu_kernel_emulated_on_a_list(tmp_path: Path) -> None:
    ops = [fops.TensorRead(), fkl.ColorConversion("RGB2BGRA"), fops.TensorWrite()]
    (kernel,) = kernels_of(run_passes(lower_pipeline([ops], "uint8", 3, 1, images=3)))
    emitted = emit_kernel(kernel)
    assert emitted.layout.mode == "flat" and emitted.layout.src_table
    # grid row z is image z: two whole tiles and a partial one each
    images = [_misaligned(_image("uint8", (70, 131, 3)), 0) for _ in range(3)]
    out = np.full((3, 70, 131, 4), 7, np.uint8)
    _emulate(emitted, kernel_values(kernel), images, out, tmp_path)
    for k, image in enumerate(images):
        np.testing.assert_array_equal(out[k], cv2.cvtColor(image, cv2.COLOR_RGB2BGRA))
