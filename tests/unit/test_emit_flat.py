"""How flat kernels cut the element run (emit_flat.flat_shape) and what plane_of computes once per thread."""

from __future__ import annotations

import pytest

import fklir as fkl
from fklir.backend.emit_flat import TILE_BYTES, flat_shape


@pytest.mark.parametrize(
    ("in_dtype", "out_dtype", "channels", "group", "threads", "staged"),
    [
        ("uint8", "uint8", 3, 48, 256, False),  # 1-byte chains load their group directly
        ("float32", "float32", 3, 12, 256, True),  # 4 pixels, 3 vectors in and out
        ("uint8", "float32", 3, 48, 128, True),  # 192 bytes of results a thread: half the threads
        ("uint8", "float64", 3, 48, 64, True),  # 384 bytes a thread
        ("float64", "float64", 4, 4, 256, True),  # one pixel, two 16-byte vectors of 2 lanes
        ("float16", "bool", 1, 16, 256, True),  # lcm(8, 16, 1)
    ],
)
def test_flat_shape(in_dtype: str, out_dtype: str, channels: int, group: int, threads: int, staged: bool) -> None:
    shape = flat_shape(in_dtype, out_dtype, channels)
    assert (shape.group, shape.threads, shape.staged, shape.per_thread) == (group, threads, staged, group)
    assert group % channels == 0, "whole pixels, so every element's channel is a compile-time constant"
    assert shape.vectors(in_dtype) * shape.lanes(in_dtype) == group, "whole 16-byte input vectors"
    assert shape.vectors(out_dtype) * shape.lanes(out_dtype) == group, "whole 16-byte output vectors"
    widest = max(shape.vectors(in_dtype), shape.vectors(out_dtype)) * 16
    assert threads * widest <= TILE_BYTES


def _source(*ops: object, dtype: str = "uint8", shape: tuple[int, ...] = (40, 60, 3)) -> str:
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu").source_for(dtype, shape)  # type: ignore[arg-type]


def test_plane_of_holds_each_resize_scale_and_box_once() -> None:
    source = _source(fkl.Crop(1, 2, 30, 20), fkl.Resize(16, 12, aspect_ratio="preserve", background=0.0))
    assert "fkl::Rect box2;" in source and "fkl::f64 scale2_x, scale2_y;" in source
    # a single image: the crop's size does not depend on the plane
    assert "const fkl::Size src2 = size1(p, 0);" in source
    assert "q.scale2_x = fkl::resize_scale(src2.w, q.box2.w);" in source
    assert source.count("fkl::resize_scale(") == 2, "the scales are computed in plane_of only"
    # one thread of the block computes them for all (f64 divisions), before any thread returns
    entry = source[source.index("__global__") :]
    assert "if (threadIdx.x == 0 && threadIdx.y == 0) block_plane = plane_of(p, blockIdx.z);" in entry
    assert entry.index("__syncthreads();") < entry.index("if (y >= p.h.dst_h) return;")


def test_plane_of_follows_the_plane_when_each_plane_has_its_rect() -> None:
    source = _source(fkl.Crop([(0, 0, 20, 10), (5, 5, 30, 12)]), fkl.Resize(8, 8, "nearest"))
    assert "const fkl::Size src2 = size1(p, z);" in source
    assert "fkl::nearest_index(x, q.scale2_x, src.w)" in source


def test_a_chain_without_resize_has_an_empty_plane() -> None:
    source = _source(fkl.Crop(1, 1, 8, 8), fkl.Mul(2))
    assert "struct Plane {\n};" in source
    entry = source[source.index("__global__") :]
    assert "__shared__" not in entry and "const Plane q = plane_of(p, blockIdx.z);" in entry


def _gpu_part(source: str) -> str:
    return source[source.index("#if defined(__CUDACC__)") : source.index("#else")]


def test_a_one_byte_chain_compiles_its_chain_once_per_window() -> None:
    """48 elements a thread, but compute() appears once in the rounds (12 elements of whole pixels)
    and once in the element-wise path: what NVRTC compiles does not grow with the group."""
    gpu = _gpu_part(_source(fkl.Add(1), fkl.Mul(3)))
    assert "fkl::u8 out[12];" in gpu and "for (int round = 0; round < 4; ++round) {" in gpu
    assert gpu.count("compute(p,") == 2
    assert "compute_fast" not in gpu  # no float division, no range check


def test_a_dividing_chain_checks_its_dividends_once_per_group() -> None:
    """The rounds call compute_fast with the divisors' host check as the start of `fast`; compute() with
    the exact division appears once, in the loop that partial groups and out-of-range groups share."""
    gpu = _gpu_part(_source(fkl.Cast("float32"), fkl.Div((3.0, 0.5, 7.0)), fkl.SaturateCast("uint8")))
    assert "fast = fast & fkl::Div::fast_dividend(v1);" in gpu
    assert "bool fast = p.div2_fast != 0;" in gpu
    assert "compute_fast(p, fkl::byte_of<fkl::u8>(w[e / 4], e % 4), e % 3, fast)" in gpu
    assert gpu.count("compute(p,") == 1 and "fkl::Div::exec" not in gpu
    assert gpu.index("if (fast) {") < gpu.index("fkl::store16(")
