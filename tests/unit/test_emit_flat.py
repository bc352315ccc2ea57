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
