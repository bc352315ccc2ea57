"""The GPU entry of sampled kernels: what a block computes once, and where the division checks its range."""

from __future__ import annotations

import fklir as fkl

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def _source(*ops: object, dtype: str = "uint8") -> str:
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")  # type: ignore[arg-type]
    return pipe.source_for(dtype, (45, 61, 3))


def _entries(*ops: object, dtype: str = "uint8") -> tuple[str, str]:
    """The GPU entries of a one-chain sampled kernel: (fkl_kernel, fkl_kernel_narrow)."""
    source = _source(*ops, dtype=dtype)
    wide = source.index('extern "C" __global__ void fkl_kernel(')
    narrow = source.index('extern "C" __global__ void fkl_kernel_narrow(')
    return source[wide:narrow], source[narrow : source.index("#else")]


def _entry(*ops: object, dtype: str = "uint8") -> str:
    return _entries(*ops, dtype=dtype)[0]


def test_a_final_linear_resize_shares_its_taps_across_the_block() -> None:
    entry = _entry(fkl.Crop([(1, 2, 30, 20), (3, 4, 25, 31)]), fkl.Resize(16, 12), fkl.Mul(0.5), dtype="float32")
    assert (
        "block_tx[threadIdx.x + k * 32] = stage2_tap_x(p, q, x < p.h.dst_w ? x : p.h.dst_w - 1, blockIdx.z);" in entry
    )
    assert "block_ty[threadIdx.y] = stage2_tap_y(p, q, y < p.h.dst_h ? y : p.h.dst_h - 1, blockIdx.z);" in entry
    # every thread of the block reaches both barriers: the rows below the image return after them
    assert entry.count("__syncthreads();") == 2
    assert entry.rindex("__syncthreads();") < entry.index("if (y >= p.h.dst_h) return;")
    # a pixel right of the output is not sampled (nor stored)
    skip = "if (x0 + k * 32 < p.h.dst_w)\n"
    assert skip + "            sample_taps(p, q, block_tx[threadIdx.x + k * 32], ty, blockIdx.z, out[k]);" in entry
    assert "if (x < p.h.dst_w) store(p, x, y, blockIdx.z, out[k]);" in entry


def test_integer_crops_share_column_pair_taps() -> None:
    """Crops of an integer image, then a linear resize: the block's x taps are column pairs whose offsets
    include every crop's x, and each thread reads its two tap rows through two row pointers."""
    ops = (fkl.Crop(2, 1, 50, 40), fkl.Crop([(1, 2, 30, 20), (3, 4, 25, 31)]), fkl.Resize(16, 12), fkl.Mul(0.5))
    source = _source(*ops)
    entry = _entry(*ops)
    assert "__shared__ fkl::PairTap block_tx[128];" in entry
    tap = "stage3_tap_x(p, q, x < p.h.dst_w ? x : p.h.dst_w - 1, blockIdx.z)"
    assert f"block_tx[threadIdx.x + k * 32] = fkl::pair_tap({tap}, origin.x, p.h.src_w, 3);" in entry
    assert "const fkl::u8* row0 = pair_row(p, ty.i0 + origin.y, blockIdx.z);" in entry
    assert "const fkl::u8* row1 = pair_row(p, ty.i1 + origin.y, blockIdx.z);" in entry
    assert "sample_pair(p, row0, row1, block_tx[threadIdx.x + k * 32], ty.w1, out[k]);" in entry
    origin = source[source.index("FKL_HD fkl::Rect pair_origin(") : source.index("FKL_HD const fkl::u8* pair_row(")]
    assert origin.count("o.x += p.crop") == 2 and "p.crop1[z].x" in origin and "p.crop2[z].x" in origin
    assert "fb = fkl::tap_f32(a[k + 3]);" in source and "fd = fkl::tap_f32(c[k + 3]);" in source


def test_float_sources_keep_their_own_taps() -> None:
    """A float tap may be infinite or NaN (a zero weight would not cancel it): block taps, not pairs."""
    for dtype in ("float32", "float16"):
        entry = _entry(fkl.Crop([(1, 2, 30, 20), (3, 4, 25, 31)]), fkl.Resize(16, 12), dtype=dtype)
        assert "fkl::LinearTap block_tx[128]" in entry and "PairTap" not in entry


def test_the_narrow_entry_makes_one_pixel_per_thread_without_shared_taps() -> None:
    wide, narrow = _entries(fkl.Crop([(1, 2, 30, 20), (3, 4, 25, 31)]), fkl.Resize(16, 12), fkl.Mul(0.5))
    assert "const fkl::i32 x0 = blockIdx.x * 128 + threadIdx.x;" in wide  # 4 pixels of 32 threads
    assert "const fkl::i32 x0 = blockIdx.x * 32 + threadIdx.x;" in narrow
    assert "block_tx" not in narrow and narrow.count("__syncthreads();") == 1
    assert "if (x < p.h.dst_w) sample(p, q, x, y, blockIdx.z, out[k]);" in narrow


def test_other_geometry_samples_per_pixel() -> None:
    for ops in (
        (fkl.Resize(16, 12, "nearest"),),
        (fkl.Resize(16, 12, aspect_ratio="preserve", background=0.0),),
        (fkl.Resize(16, 12), fkl.Crop(1, 1, 8, 8)),  # the resize is not the last stage
    ):
        entry = _entry(*ops)
        assert "block_tx" not in entry and "if (x < p.h.dst_w) sample(p, q, x, y, blockIdx.z, out[k]);" in entry


def test_a_pixel_division_checks_the_range_of_all_channels_once() -> None:
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Crop([(0, 0, 20, 10)] * 2),
        fkl.Resize(8, 8),
        fkl.Sub(MEAN),
        fkl.Div(STD),
        fkl.TensorSplit(),
    )
    source = pipe.source_for("uint8", (40, 60, 3))
    block = source[source.index("// fkl.div") :]
    assert "bool fast = p.div5_fast != 0;" in block  # the divisors' range, checked by the host
    assert "for (int c = 0; c < 3; ++c) fast = fast & fkl::Div::fast_dividend(v1[c]);" in block
    assert "v2[c] = fkl::Div::fast(v1[c], fkl::pick(p.div5, c), fkl::pick(p.div5_rcp, c));" in block
    assert "v2[c] = fkl::Div::exec(v1[c], fkl::pick(p.div5, c));" in block  # the exact path for the rest
