"""float16 flat chains on the GPU give the CPU target's bits on every float16 bit pattern (skipped without a GPU).

The GPU converts f16 <-> f32 with cvt and selects the CPU's bit path for NaNs (fkl/core.h), so a NaN that no
arithmetic touches keeps the CPU's payload, and numbers, subnormals, infinities and rounding ties are the same.
Inputs of whole tiles, so the flat kernels' fast path (the shared tile) computes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fklir as fkl

pytestmark = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")


def every_f16(channels: int) -> np.ndarray:
    """Every float16 bit pattern, `channels` times over, as (256, 256, channels)."""
    patterns = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    return np.tile(patterns, channels).reshape(256, 256, channels)


def f32_edges() -> np.ndarray:
    """float32 values whose float16 rounding is an edge: NaN payloads of both signs, ties at the normal and the
    subnormal spacing, the overflow threshold, the smallest subnormal's halfway point, infinities."""
    f16 = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = f16[np.isfinite(f16)].astype(np.float32)
    above = np.nextafter(finite, np.float32(np.inf))
    halfway = ((finite.astype(np.float64) + np.roll(finite, -1).astype(np.float64)) / 2).astype(np.float32)
    payloads = np.arange(1, 1 << 23, 997, dtype=np.uint32)
    nans = np.concatenate([0x7F800000 | payloads, 0xFF800000 | payloads]).view(np.float32)
    special = np.array([65504, 65519.996, 65520, 2.0**-25, 2.0**-24 * 1.5, np.inf, -np.inf], dtype=np.float32)
    values = np.concatenate([special, -special, nans, finite, above, halfway])
    values = np.resize(values, 4 * 65536)  # whole tiles: the flat kernel's fast path
    return values.reshape(-1, 256, 4)


def run(x: np.ndarray, ops: list[Any], target: str) -> np.ndarray:
    from fklir.runtime.device_buffer import DeviceBuffer

    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)
    if target == "cpu":
        return pipe(x)
    return pipe(DeviceBuffer.from_host(x)).copy_to_host()


def bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint16 if x.dtype == np.float16 else np.uint32)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_f16_to_f32_and_back_keeps_the_cpu_bits(channels: int) -> None:
    x = every_f16(channels)
    for ops in ([fkl.Cast("float32")], [fkl.Cast("float32"), fkl.Cast("float16")]):
        np.testing.assert_array_equal(bits(run(x, ops, "gpu")), bits(run(x, ops, "cpu")))


def test_f32_to_f16_rounds_and_keeps_nan_payloads_as_the_cpu() -> None:
    x = f32_edges()
    np.testing.assert_array_equal(
        bits(run(x, [fkl.Cast("float16")], "gpu")), bits(run(x, [fkl.Cast("float16")], "cpu"))
    )


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("ops", [[fkl.Mul(1.5), fkl.Add(0.25)], [fkl.Max(-2.0), fkl.Sub(0.5), fkl.Min(1000.0)]])
def test_f16_arithmetic_equals_the_cpu_on_every_pattern(channels: int, ops: list[Any]) -> None:
    # groups without a NaN take compute_fast (cvt alone), the others compute() (emit_compute._emit_f16_fast)
    x = every_f16(channels)
    got, expected = run(x, ops, "gpu"), run(x, ops, "cpu")
    nan = np.isnan(expected)
    np.testing.assert_array_equal(np.isnan(got), nan)  # an arithmetic NaN's payload is the hardware's
    np.testing.assert_array_equal(bits(got)[~nan], bits(expected)[~nan])
