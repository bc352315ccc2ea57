"""The op catalogue on the GPU target (skipped without a GPU): the GPU equals the CPU target, which
test_catalogue_cpu.py checks against numpy formulas and OpenCV, on every op with representative
element types, on the reads and writes that compose() does not take yet (direct launch), and on
hypothesis-generated chains. Both targets compile the same source with --fmad=false, so the
results are the same bits (float outputs are still compared to a few ulps, NaN where NaN).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given

import fklir as fkl
from tests.runtime.catalogue_support import no_source, packed_source, planar_source, run_cpu, run_gpu
from tests.unit.property_chains import TEMPLATES, Drawn, assert_same, chains, property_settings, run_target

pytestmark = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
RNG = np.random.default_rng(5150)


def gpu(x: np.ndarray, ops: list[Any]) -> np.ndarray:
    from fklir.runtime.device_buffer import DeviceBuffer

    out = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")(DeviceBuffer.from_host(x))
    return out.copy_to_host()


def cpu(x: np.ndarray, ops: list[Any]) -> np.ndarray:
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x)


def image(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == "bool":
        return RNG.integers(0, 2, shape).astype(np.bool_)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    x = (RNG.standard_normal(shape) * 60).astype(dtype)
    x.reshape(-1)[:5] = [np.nan, 0.5, 1.5, -2.5, 2.5]
    return x


M_AFFINE = np.array([[0.9, -0.2, 3.5], [0.25, 1.1, -4.0]])
M_PERSPECTIVE = np.array([[0.9, -0.2, 3.5], [0.25, 1.1, -4.0], [0.002, -0.001, 1.0]])

# (name, ops, element types, channels): every op of SPEC §3 that compose() runs.
CASES: list[tuple[str, list[Any], list[str], int]] = [
    (
        "arith",
        [fkl.Add(3), fkl.Mul(2), fkl.Div((3, 2, 5)), fkl.Max(1), fkl.Min(100), fkl.Sub(7)],
        ["uint8", "int16", "uint32"],
        3,
    ),
    ("arith_signed", [fkl.Div((3, -2, -1)), fkl.Mul(-3), fkl.Sub(-128)], ["int8", "int32"], 3),
    (
        "arith_float",
        [fkl.Add(0.5), fkl.Mul((2.0, -1.0, 0.1)), fkl.Div(3.0), fkl.Max(-4.0), fkl.Min(9.0)],
        ["float16", "float32", "float64"],
        3,
    ),
    (
        "casts",
        [
            fkl.Cast("float32"),
            fkl.Mul(1.7),
            fkl.SaturateCast("int8"),
            fkl.Cast("float16"),
            fkl.SaturateCast("uint8"),
        ],
        ["int32", "float64"],
        2,
    ),
    (
        "bf16",
        [fkl.Cast("bfloat16"), fkl.Add(0.375), fkl.Mul(-3.0), fkl.Cast("float32")],
        ["float32", "int16"],
        3,
    ),
    ("saturate", [fkl.Saturate(-20, (10, 20, 30, 40))], ["int8", "int32", "float32", "float16"], 4),
    ("saturate_float", [fkl.SaturateFloat()], ["float16", "float32", "float64"], 3),
    ("is_even_and", [fkl.IsEven(), fkl.VectorAnd()], ["uint8", "int16", "int32"], 3),
    ("reduce_add", [fkl.VectorReduce("Add")], ["uint8", "int32", "float16", "float32"], 4),
    ("reduce_mul_max_min", [fkl.VectorReorder(0, 1, 2, 0), fkl.VectorReduce("Mul")], ["int16", "float64"], 3),
    ("reduce_max", [fkl.VectorReduce("Max")], ["float32", "uint16"], 3),
    ("reduce_min", [fkl.VectorReduce("Min")], ["int8", "float16"], 2),
    (
        "vector",
        [fkl.Discard(2), fkl.AddLast(1), fkl.VectorReorder(2, 2, 0), fkl.VectorReorderRT(1, 0, 2, 1)],
        ["bool", "uint8", "float16"],
        3,
    ),
    (
        "mxv",
        [fkl.MxVFloat3([[0.299, 0.587, 0.114], [-0.169, -0.331, 0.5], [0.5, -0.419, -0.081]])],
        ["float32"],
        3,
    ),
    ("static_loop", [fkl.StaticLoop(fkl.Mul(3), 3), fkl.StaticLoop(fkl.Div(2), 2)], ["uint8", "int32"], 1),
    ("static_loop_float", [fkl.StaticLoop(fkl.Mul(1.1), 4)], ["float16", "float32"], 3),
    ("gray", [fkl.ColorConversion("RGB2GRAY")], ["uint8", "uint16", "int16", "float32", "float16"], 3),
    (
        "bgra_gray",
        [fkl.ColorConversion("BGRA2GRAY"), fkl.ColorConversion("GRAY2BGR")],
        ["uint8", "float64"],
        4,
    ),
    ("alpha", [fkl.ColorConversion("RGB2BGRA")], ["uint8", "uint16", "float32", "int32", "bool"], 3),
    (
        "border_constant",
        [fkl.BorderReader("constant", (1, 2, 3)), fkl.Crop(-40, -31, 97, 88)],
        ["uint8", "float32"],
        3,
    ),
    ("border_reflect", [fkl.BorderReader("reflect"), fkl.Crop(-55, 9, 130, 40)], ["int16", "float16"], 3),
    (
        "border_reflect101",
        [fkl.BorderReader("reflect101"), fkl.Crop(-70, -70, 160, 150)],
        ["uint8", "float64"],
        1,
    ),
    ("border_wrap", [fkl.BorderReader("wrap"), fkl.Crop(-100, 50, 120, 60)], ["uint32", "bool"], 2),
    ("border_replicate", [fkl.BorderReader("replicate"), fkl.Crop(20, -25, 50, 90)], ["int8"], 4),
    ("resize_linear", [fkl.Resize(224, 224)], ["uint8", "float32", "float16"], 3),
    ("resize_linear_up", [fkl.Resize(640, 640), fkl.SaturateCast("uint8")], ["uint8"], 3),
    ("resize_nearest", [fkl.Resize(224, 224, "nearest")], ["uint8", "int16", "float32", "bool"], 3),
    ("resize_preserve", [fkl.Resize(64, 63, "linear", "preserve", (114.0, 0.0, 255.0))], ["uint8"], 3),
    ("resize_preserve_left", [fkl.Resize(63, 64, "nearest", "preserve_left", 7)], ["int16"], 1),
    ("resize_preserve_even", [fkl.Resize(41, 41, "linear", "preserve_even", 0.5)], ["float32"], 4),
    ("warp_affine", [fkl.Warping(M_AFFINE, 64, 23)], ["float32", "uint8"], 3),
    ("warp_affine_inverse", [fkl.Warping(M_AFFINE, 41, 23, inverse=True)], ["float16"], 1),
    ("warp_perspective", [fkl.Warping(M_PERSPECTIVE, 128, 40)], ["float32", "int32"], 4),
    (
        "warp_border",
        [fkl.BorderReader("reflect101"), fkl.Warping(M_PERSPECTIVE, 70, 50)],
        ["uint8", "float64"],
        3,
    ),
    ("warp_constant", [fkl.BorderReader("constant", 37.5), fkl.Warping(M_AFFINE, 70, 50)], ["float32"], 2),
    ("deinterlace_blend", [fkl.Deinterlace("blend")], ["uint8", "float16"], 3),
    ("deinterlace_linear", [fkl.Deinterlace("linear")], ["int32", "float64"], 2),
    ("flip_vertical", [fkl.Flip("vertical")], ["uint8", "float32"], 3),
    ("flip_horizontal", [fkl.Flip("horizontal")], ["uint16"], 1),
    ("flip_both", [fkl.Flip("both")], ["int8", "float64"], 4),
    ("rotate_clockwise", [fkl.Rotate("clockwise_90")], ["uint8", "float16"], 3),
    ("rotate_half_turn", [fkl.Rotate("turn_180")], ["int32"], 2),
    ("rotate_counterclockwise", [fkl.Rotate("counterclockwise_90"), fkl.Resize(97, 61)], ["uint8", "float32"], 3),
    ("crop_flip_resize", [fkl.Crop(3, 5, 200, 150), fkl.Flip("horizontal"), fkl.Resize(224, 224)], ["uint8"], 3),
    (
        "crop_resize_chain",
        [fkl.Crop(3, 5, 200, 150), fkl.Resize(224, 224), fkl.Mul(1 / 255), fkl.Sub(0.5), fkl.SaturateFloat()],
        ["uint8"],
        3,
    ),
]


@pytest.mark.parametrize(
    ("name", "ops", "dtype", "channels"),
    [(name, ops, dtype, channels) for name, ops, dtypes, channels in CASES for dtype in dtypes],
    ids=[f"{name}-{dtype}" for name, _, dtypes, _ in CASES for dtype in dtypes],
)
def test_every_op_gpu_equals_cpu(name: str, ops: list[Any], dtype: str, channels: int) -> None:
    shape = (301, 299, channels) if channels > 1 else (301, 299)
    x = image(dtype, shape)
    out_gpu, out_cpu = gpu(x, ops), cpu(x, ops)
    assert_same(out_gpu, out_cpu, name)


@pytest.mark.parametrize("shape", [(33, 17, 3), (2, 9, 11, 4), (1, 1, 2), (1080, 1920, 3)])
def test_flat_channelwise_chains_gpu_equal_cpu_at_odd_sizes(shape: tuple[int, ...]) -> None:
    ops = [fkl.Saturate(3, (200, 100, 50, 25)[: shape[-1]]), fkl.StaticLoop(fkl.Add(7), 3), fkl.IsEven()]
    x = image("uint8", shape)
    assert_same(gpu(x, ops), cpu(x, ops), "flat")


def test_runtime_permutation_reuses_the_gpu_binary() -> None:
    from fklir.backend.build import STATS

    x = image("uint8", (40, 50, 4))
    gpu(x, [fkl.VectorReorderRT(0, 1, 2, 3)])
    before = STATS.compiles + STATS.disk_hits
    for perm in [(3, 2, 1, 0), (2, 2, 2, 2)]:
        np.testing.assert_array_equal(gpu(x, [fkl.VectorReorderRT(*perm)]), x[..., list(perm)])
    assert STATS.compiles + STATS.disk_hits == before  # no new build: the permutation is a value


# Reads and writes that compose() does not take yet: the same kernels, launched directly.
MEMORY_CASES: list[tuple[str, list[Any], Any]] = [
    (
        "pack",
        [fkl.TensorPack(3), fkl.Mul(2), fkl.TensorWrite()],
        lambda: planar_source(image("uint8", (2, 3, 37, 29))),
    ),
    (
        "pack_geometry",
        [fkl.TensorPack(4), fkl.BorderReader("wrap"), fkl.Crop(-9, -9, 50, 40), fkl.TensorSplit()],
        lambda: planar_source(image("float16", (4, 17, 23))),
    ),
    (
        "tsplit",
        [fkl.TensorRead(), fkl.Cast("float32"), fkl.TensorTSplit()],
        lambda: packed_source(image("int16", (3, 19, 21, 3))),
    ),
    (
        "split_write",
        [fkl.TensorRead(), fkl.Resize(30, 20), fkl.SplitWrite()],
        lambda: packed_source(image("uint8", (2, 19, 21, 4))),
    ),
    (
        "read_set",
        [fkl.ReadSet((1, 2, 3), 77, 33, "int32"), fkl.Mul(3), fkl.TensorWrite()],
        lambda: no_source("int32", 3),
    ),
    (
        "read_set_warp",
        [fkl.ReadSet(2.5, 40, 30, "float32"), fkl.Warping(M_AFFINE, 50, 40), fkl.TensorSplit()],
        lambda: no_source("float32", 1),
    ),
]


@pytest.mark.parametrize(("name", "ops", "source"), MEMORY_CASES, ids=[c[0] for c in MEMORY_CASES])
def test_memory_ops_gpu_equal_cpu(name: str, ops: list[Any], source: Any) -> None:
    src = source()
    out_cpu, expected = run_cpu(ops, src)
    assert_same(out_cpu, expected, f"{name} cpu")
    assert_same(run_gpu(ops, src), out_cpu, f"{name} gpu")


@property_settings(150)
@given(chains())
def test_random_chains_gpu_equals_cpu(drawn: Drawn) -> None:
    out_cpu, expected = run_target(drawn, "cpu")
    out_gpu, _ = run_target(drawn, "gpu")
    assert_same(out_cpu, expected, f"cpu {drawn.template}")
    assert_same(out_gpu, out_cpu, f"gpu {drawn.template}")


@property_settings(60)
@given(chains([t for t in TEMPLATES if t.per_image]))
def test_random_per_image_chains_gpu_equals_cpu(drawn: Drawn) -> None:
    """Batches with their values per image (fkl.per_image): each plane's row read at blockIdx.z."""
    out_cpu, expected = run_target(drawn, "cpu")
    out_gpu, _ = run_target(drawn, "gpu")
    assert_same(out_cpu, expected, f"cpu {drawn.template}")
    assert_same(out_gpu, out_cpu, f"gpu {drawn.template}")


EXTREME_DIVIDENDS = np.array(
    [0.0, -0.0, 1e-40, -3e-39, 1e-30, 2e20, -7e37, np.inf, -np.inf, np.nan, 1.0, -1.5], dtype=np.float32
)


def assert_quotients(got: np.ndarray, expected: np.ndarray) -> None:
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)  # NaN payloads may differ
    np.testing.assert_array_equal(got[~nan].view(np.uint32), expected[~nan].view(np.uint32))


@pytest.mark.parametrize("divisors", [(3.0, 0.1, -7.0), (3.0, 1e-25, 7e25)], ids=["fast", "divisor-out-of-range"])
def test_a_flat_division_is_correctly_rounded_on_extreme_values(divisors: tuple[float, ...]) -> None:
    """A flat float32 kernel divides a whole group on fkl::Div's fast path with one range check and
    recomputes a group with a dividend out of range element by element (emit_flat, compute_fast).
    67x49x3 is three whole tiles and a partial one; the extreme values are sparse, so both kinds of
    group occur, and a divisor out of range sends every group the exact way."""
    x = (RNG.standard_normal((67, 49, 3)) * 50).astype(np.float32)
    flat = x.reshape(-1)
    flat[RNG.choice(flat.size, 40, replace=False)] = RNG.choice(EXTREME_DIVIDENDS, 40)
    flat[:3] = [0.0, 0.0, 0.0]  # +0 stays on the fast path: +0 / b, -0 / b and NaN are all checked
    got = gpu(x, [fkl.Mul(1.0), fkl.Div(divisors)])
    assert_quotients(got, x / np.array(divisors, dtype=np.float32))


def test_a_uint8_chain_that_divides_takes_the_exact_path_only_where_a_dividend_asks() -> None:
    """The 1-byte flat kernel (words through a window, compute_fast): x * -1 turns each zero of channel 0
    into -0, which fkl::Div's fast path would get wrong (+0), so only those groups go element by element.
    67x131x3 is two whole tiles of 256 groups and a partial one."""
    x = RNG.integers(1, 256, (67, 131, 3)).astype(np.uint8)
    zeros = RNG.choice(x.shape[0] * x.shape[1], 25, replace=False)
    x.reshape(-1, 3)[zeros, 0] = 0
    ops = [fkl.Cast("float32"), fkl.Mul((-1.0, 2.0, 0.5)), fkl.Div((-3.0, 7.0, 0.1)), fkl.SaturateCast("uint8")]
    got = gpu(x, ops)
    quotient = (x.astype(np.float32) * np.array([-1.0, 2.0, 0.5], np.float32)) / np.array([-3.0, 7.0, 0.1], np.float32)
    expected = np.clip(np.rint(quotient), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, cpu(x, ops))


@pytest.mark.parametrize(
    ("dtype", "channels", "ops"),
    [
        ("uint8", 3, [fkl.Add((1, 2, 3)), fkl.Mul((3, 5, 7))]),
        ("uint8", 1, [fkl.Sub(9), fkl.Max(40)]),
        ("int8", 2, [fkl.Mul((-3, 5)), fkl.Add((100, -7))]),
        ("uint8", 4, [fkl.Cast("float32"), fkl.Mul((0.5, 1.5, 2.5, 3.5)), fkl.SaturateCast("uint8")]),
        ("uint8", 3, [fkl.IsEven()]),
    ],
    ids=["u8x3", "u8x1", "i8x2", "u8x4-float", "u8x3-bool"],
)
def test_one_byte_chains_pass_their_words_through_the_window_in_order(
    dtype: str, channels: int, ops: list[Any]
) -> None:
    """Every element of a 1-byte group goes through the window round of its own position and channel:
    whole groups, a partial last one, and an unaligned view (element by element) equal the CPU target."""
    x = image(dtype, (53, 97, channels))
    np.testing.assert_array_equal(gpu(x, ops), cpu(x, ops))
    from fklir.runtime.device_buffer import DeviceBuffer

    host = image(dtype, (53 * 97 * channels + 1,))
    whole = DeviceBuffer.from_host(host)
    shape = (53, 97, channels)
    shifted = DeviceBuffer.from_ptr(whole.ptr + 1, shape, dtype, owner=whole)  # 1 byte past a 16-byte boundary
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")
    np.testing.assert_array_equal(pipe(shifted).copy_to_host(), cpu(host[1:].reshape(shape), ops))


@pytest.mark.parametrize(
    ("channels", "out_dtype"),
    [(3, "float32"), (3, "float16"), (3, "float64"), (1, "float32"), (4, "float32"), (2, "int16")],
)
def test_one_byte_inputs_with_wider_results_go_through_the_window_in_order(channels: int, out_dtype: str) -> None:
    """A staged group of 1-byte inputs runs in rounds over a window of whole words, pixels and output
    vectors (emit_flat._staged_group), each round storing into the tile: whole tiles, a partial one and
    an unaligned view equal the CPU target."""
    from fklir.runtime.device_buffer import DeviceBuffer

    scale = tuple(0.25 + 0.5 * c for c in range(channels))
    ops = [fkl.Cast("float32"), fkl.Mul(scale), fkl.Sub(3.0), fkl.Cast(out_dtype)]
    shape = (61, 107, channels)
    host = image("uint8", (61 * 107 * channels + 1,))
    np.testing.assert_array_equal(gpu(host[:-1].reshape(shape), ops), cpu(host[:-1].reshape(shape), ops))
    whole = DeviceBuffer.from_host(host)
    shifted = DeviceBuffer.from_ptr(whole.ptr + 1, shape, "uint8", owner=whole)  # element by element
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")
    np.testing.assert_array_equal(pipe(shifted).copy_to_host(), cpu(host[1:].reshape(shape), ops))


def test_a_uint8_to_float_division_recomputes_only_the_groups_that_ask() -> None:
    """The staged twin of the uint8 -> uint8 case: -0 dividends (zeros of channel 0 times -1) send their
    group through the exact loop, which rewrites it in the tile; every quotient is numpy's bit for bit."""
    x = RNG.integers(1, 256, (67, 131, 3)).astype(np.uint8)
    x.reshape(-1, 3)[RNG.choice(x.shape[0] * x.shape[1], 25, replace=False), 0] = 0
    ops = [fkl.Cast("float32"), fkl.Mul((-1.0, 2.0, 0.5)), fkl.Div((-3.0, 7.0, 0.1))]
    expected = (x.astype(np.float32) * np.array([-1.0, 2.0, 0.5], np.float32)) / np.array([-3.0, 7.0, 0.1], np.float32)
    got = gpu(x, ops)
    assert_quotients(got, expected)
    assert np.signbit(got[..., 0][x[..., 0] == 0]).sum() == 0  # -0 / -3 = +0


@pytest.mark.parametrize("divisors", [(3.0, 0.1, -7.0), (3.0, 1e-25, 7e25)], ids=["fast", "divisor-out-of-range"])
def test_a_pixel_division_is_correctly_rounded_on_extreme_values(divisors: tuple[float, ...]) -> None:
    """A sampled kernel divides a whole pixel with one range check (emit_rules._divide_pixel):
    pixels whose channels all lie in range take the fast path, the others the exact one for every
    channel, and a slot with a divisor out of range always the exact one. Each must give numpy's
    correctly rounded float32 quotient bit for bit."""
    x = (RNG.standard_normal((33, 17, 3)) * 50).astype(np.float32)
    flat = x.reshape(-1)
    flat[RNG.choice(flat.size, 300, replace=False)] = RNG.choice(EXTREME_DIVIDENDS, 300)
    ops = [fkl.Crop(0, 0, 17, 33), fkl.Div(divisors)]  # the crop makes it a sampled kernel
    assert_quotients(gpu(x, ops), x / np.array(divisors, dtype=np.float32))
