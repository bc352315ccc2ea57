"""SaturateCast to 8- and 16-bit integers on the CPU target, through the flat kernel's vectorised loop
and its element-wise tail: ties round half to even, NaN gives 0, out-of-range values clamp (SPEC §3).

The CPU branches of fkl::SaturateCast (AVX-512's and the others') round by adding 1.5 * 2^23 before they
clamp, so the values that test them sit at that trick's edges too: beyond 2^22, where the sum's spacing
is no longer 1, and below -1.5 * 2^23, where the sum turns negative. Each test runs on both builds."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import fklir as fkl
from tests.runtime.test_cpu_native import BUILDS, built_for

RNG = np.random.default_rng(2020)

SPECIALS = np.array(
    [
        *(0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 126.5, 127.5, -128.5, 254.5, 255.5, 256.5),
        *(32766.5, 32767.5, -32768.5, 65534.5, 65535.5, 0.49999997, -0.49999997, 0.50000006),
        *(-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, 1e30, -1e30, 3.4e38, -3.4e38),
        *(4194303.5, 4194304.5, -4194303.5, 8388609.0, -8388609.0, 12582912.0, -12582912.0),
        *(-12582913.0, 16777216.0, -16777216.0, 1e-40, -1e-40),
    ],
    np.float32,
)

TARGETS = {"uint8": np.uint8, "int8": np.int8, "uint16": np.uint16, "int16": np.int16}

# odd sizes: whole groups and a tail, a tail alone, one element
SIZES = ((37, 61), (7, 13), (1, 1))


@pytest.fixture(autouse=True, params=BUILDS)
def build(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test on both builds: the host's instruction set (AVX-512 has a SaturateCast of its own) and the
    baseline."""
    with built_for(monkeypatch, request.param):
        yield


def _saturate(x: np.ndarray, dtype: type[np.integer]) -> np.ndarray:
    info = np.iinfo(dtype)
    y = np.clip(np.rint(x.astype(np.float64)), info.min, info.max)
    return np.where(np.isnan(y), 0, y).astype(dtype)


def _image(h: int, w: int, channels: int) -> np.ndarray:
    n = h * w * channels
    values = (RNG.standard_normal(n) * 40000).astype(np.float32)
    halves = (RNG.integers(-70000, 70000, n) + 0.5).astype(np.float32)
    values[::3] = halves[::3]  # ties everywhere, not only among the specials
    values[: min(n, SPECIALS.size)] = SPECIALS[:n]
    values[-min(n, SPECIALS.size) :] = SPECIALS[::-1][:n]  # in the last group and the tail as well
    return values.reshape(h, w, channels)


@pytest.mark.parametrize("target", sorted(TARGETS))
@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize(("h", "w"), SIZES)
def test_saturate_cast_from_float32(target: str, channels: int, h: int, w: int) -> None:
    x = _image(h, w, channels)
    pipe = fkl.compose(fkl.TensorRead(), fkl.SaturateCast(target), fkl.TensorWrite(), target="cpu")
    out = pipe(x)
    np.testing.assert_array_equal(out, _saturate(x, TARGETS[target]))


@pytest.mark.parametrize(("h", "w"), SIZES)
def test_uint8_scale_chain_rounds_ties_to_even_per_channel(h: int, w: int) -> None:
    """The chain of bench_cpu.py's saturate row: each channel its own values, half of the results ties."""
    x = RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)
    mul, sub = (0.5, 1.5, -2.5), (0.0, -1.0, -300.25)
    chain = (fkl.Cast("float32"), fkl.Mul(mul), fkl.Sub(sub), fkl.SaturateCast("uint8"), fkl.TensorWrite())
    out = fkl.compose(fkl.TensorRead(), *chain, target="cpu")(x)
    y = x.astype(np.float32) * np.array(mul, np.float32) - np.array(sub, np.float32)
    np.testing.assert_array_equal(out, _saturate(y, np.uint8))
