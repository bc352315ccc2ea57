"""CPU kernels compiled for the host's instruction set (-march=native, issue 20): the host CPU joins the
kernel key, FKLIR_CPU_NATIVE=0 compiles for the baseline, and both builds give cv2's and SPEC's values
on the rows whose loops the instruction set changes: colour reorders and gray (byte shuffles) and the
uint8 saturate chain (the CPU SaturateCast's AVX-512 clamp)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

import cv2
import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build, compilers

RNG = np.random.default_rng(20)

# odd sizes: whole groups and a tail, a tail alone; and one large enough for OpenMP to share it
SIZES = ((17, 33), (3, 5), (300, 301))

BUILDS = ("native", "baseline")

COLOURS = {
    "RGB2BGR": (3, cv2.COLOR_RGB2BGR),
    "RGB2GRAY": (3, cv2.COLOR_RGB2GRAY),
    "BGR2GRAY": (3, cv2.COLOR_BGR2GRAY),
    "RGB2RGBA": (3, cv2.COLOR_RGB2RGBA),
    "RGBA2BGR": (4, cv2.COLOR_RGBA2BGR),
    "RGBA2GRAY": (4, cv2.COLOR_RGBA2GRAY),
}


def _forget_keys() -> None:
    """Forget the memoised compiler flags, so that the next kernel key reads FKLIR_CPU_NATIVE again."""
    build._compiler_and_flags.cache_clear()  # pyright: ignore[reportPrivateUsage]


@contextlib.contextmanager
def built_for(monkeypatch: pytest.MonkeyPatch, build: str) -> Iterator[None]:
    """Kernels composed inside compile for the host's instruction set ("native") or the baseline."""
    with monkeypatch.context() as patch:
        patch.setenv(compilers.CPU_NATIVE_ENV, "1" if build == "native" else "0")
        _forget_keys()
        yield
    _forget_keys()


@pytest.fixture(params=BUILDS)
def native(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with built_for(monkeypatch, request.param):
        yield request.param


def _key_with(monkeypatch: pytest.MonkeyPatch, cpu: Callable[[], str], setting: str) -> str:
    with monkeypatch.context() as patch:
        patch.setattr(compilers, "host_cpu", cpu)
        patch.setenv(compilers.CPU_NATIVE_ENV, setting)
        _forget_keys()
        key = build.kernel_key("structure", "cpu", "host")
    _forget_keys()
    return key


def test_native_key_changes_with_the_host_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    first = _key_with(monkeypatch, lambda: "model name : CPU A | flags : sse2 avx2", "1")
    assert _key_with(monkeypatch, lambda: "model name : CPU A | flags : sse2 avx2", "1") == first
    assert _key_with(monkeypatch, lambda: "model name : CPU B | flags : sse2 avx512bw", "1") != first


def test_baseline_key_leaves_the_host_cpu_out(monkeypatch: pytest.MonkeyPatch) -> None:
    baseline = _key_with(monkeypatch, lambda: "CPU A", "0")
    assert _key_with(monkeypatch, lambda: "CPU B", "0") == baseline  # a cache shared across machines
    assert _key_with(monkeypatch, lambda: "CPU A", "1") != baseline


def test_baseline_compiles_without_native_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(compilers.CPU_NATIVE_ENV, "0")
    assert compilers.gxx_flags() == compilers.GXX_FLAGS
    monkeypatch.setenv(compilers.CPU_NATIVE_ENV, "1")
    assert compilers.gxx_flags() == (*compilers.GXX_FLAGS, compilers.NATIVE_FLAG)


def test_host_cpu_is_named() -> None:
    assert compilers.host_cpu().strip()


def test_host_cpu_without_proc_is_the_platforms_name(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_proc(*args: object, **kwargs: object) -> None:
        raise OSError("no /proc here")

    monkeypatch.setattr(compilers, "open", no_proc, raising=False)
    compilers.host_cpu.cache_clear()
    try:
        assert compilers.host_cpu().strip()
        assert "flags" not in compilers.host_cpu()
    finally:
        monkeypatch.undo()
        compilers.host_cpu.cache_clear()


@pytest.mark.parametrize("code", sorted(COLOURS))
@pytest.mark.parametrize(("h", "w"), SIZES)
def test_colour_conversion_equals_cv2(native: str, code: str, h: int, w: int) -> None:
    channels, cv2_code = COLOURS[code]
    x = RNG.integers(0, 256, (h, w, channels), dtype=np.uint8)
    pipe = fkl.compose(fkl.TensorRead(), fkl.ColorConversion(code), fkl.TensorWrite(), target="cpu")
    out = pipe(x)
    np.testing.assert_array_equal(out.reshape(cv2.cvtColor(x, cv2_code).shape), cv2.cvtColor(x, cv2_code))


@pytest.mark.parametrize(("h", "w"), SIZES)
def test_uint8_saturate_chain_equals_the_float64_formula(native: str, h: int, w: int) -> None:
    # x * 0.5 - v puts every odd x on a tie; per-channel values keep each lane's parameter apart
    x = RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)
    scale, shift = (0.5, 1.5, -0.5), (-0.25, 100.0, -3.0)
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.Mul(scale),
        fkl.Sub(shift),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),
        target="cpu",
    )
    y = x.astype(np.float32) * np.float32(scale) - np.float32(shift)  # exact in f32: SPEC's f64 value
    expected = np.clip(np.rint(y.astype(np.float64)), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(pipe(x), expected)
