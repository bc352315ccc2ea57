"""A jit kernel's repeated GPU call without a GPU (tests/runtime/fake_driver.py): the matcher runs once per
signature, a new shape is matched again, every check and error of a first call still holds on a repeated
one, each call launches with its own pointers and scalars, and a launch refused in a foreign context is made
again in ours."""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.jit.tensors import TensorView
from fklir.runtime.device_buffer import DeviceBuffer
from tests.runtime.fake_driver import FakeDriver, installed, jit_without_compiler

jit = fkl.jit
N, C = jit.SymbolicSize("N"), jit.SymbolicSize("C")
D = jit.SymbolicDevice()


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """(driver, torch): a strict fake driver, a fake torch, and instances 'loaded' without a compiler."""
    torch = jit_without_compiler(monkeypatch, tmp_path)
    with installed(FakeDriver(devices=2)) as driver:
        launch = driver.cuLaunchKernel
        driver.passed = []  # what each accepted launch passed (_arguments), read while the call runs

        def recording(f: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, *rest: Any) -> Any:
            result = launch(f, gx, gy, gz, bx, by, bz, *rest)
            if result == (0,):
                driver.passed.append(_arguments(rest[2]))
            return result

        driver.cuLaunchKernel = recording
        yield driver, torch


def _kernel() -> jit.Kernel:
    tensor = jit.TensorMatcher((N, C)).with_dtype("float32").with_device(D)
    return jit.kernel(
        "scale",
        cuda="template <int B> __global__ void scale(fkl::TensorView out, fkl::TensorView x, float a, int n) {}",
        args=[("out", tensor), ("x", tensor), ("alpha", "float32"), ("n", "int32")],
        template=lambda C: (C,),
        grid=lambda N: ((N, 1, 1), (32, 1, 1)),
    )


def _arguments(params: int) -> tuple[list[tuple[int, tuple[int, ...]]], float, int]:
    """What a launch of _kernel() passes: each view's (data, shape), then alpha and n."""
    slots = (ctypes.c_void_p * 4).from_address(params)
    views = [TensorView.from_address(slots[i]) for i in (0, 1)]
    alpha = ctypes.c_float.from_address(slots[2]).value
    n = ctypes.c_int32.from_address(slots[3]).value
    return [(int(view.data), tuple(view.shape[: view.ndim])) for view in views], alpha, n


def test_the_matcher_runs_once_per_signature_and_each_call_passes_its_own_values(fake: Any) -> None:
    driver, torch = fake
    k = _kernel()
    s = torch.cuda.Stream()
    calls = [(torch.empty((4, 3), dtype=torch.float32), torch.empty((4, 3), dtype=torch.float32)) for _ in range(3)]
    for i, (out, x) in enumerate(calls):
        k(out, x, 0.5 * i, i, stream=s)
    assert k.arguments.matches == 1
    assert [launch[3] for launch in driver.launches] == [s.cuda_stream] * 3
    for i, ((out, x), (views, alpha, n)) in enumerate(zip(calls, driver.passed, strict=True)):
        assert views == [(out.data_ptr(), (4, 3)), (x.data_ptr(), (4, 3))]
        assert (alpha, n) == (0.5 * i, i)
    k(torch.empty((5, 3), dtype=torch.float32), torch.empty((5, 3), dtype=torch.float32), 1.0, 2, stream=s)
    assert k.arguments.matches == 2, "a new shape is matched"
    assert driver.launches[-1][1] == (5, 1, 1)
    assert driver.passed[-1][0][0][1] == (5, 3)


def test_a_repeated_call_keeps_every_check(fake: Any) -> None:
    driver, torch = fake
    k = _kernel()
    s = torch.cuda.Stream()
    x = torch.empty((4, 3), dtype=torch.float32)
    k(x, x, 1.0, 1, stream=s)
    with pytest.raises(ValueError, match=r"^x: dim 1 is 2, but C = 3 \(bound by out\)$"):
        k(x, torch.empty((4, 2), dtype=torch.float32), 1.0, 1, stream=s)
    with pytest.raises(TypeError, match=r"^x: dtype is float16, but must be float32$"):
        k(x, torch.empty((4, 3), dtype=torch.float16), 1.0, 1, stream=s)
    with pytest.raises(TypeError, match=r"^alpha: expected a number for float32, got NoneType None$"):
        k(x, x, None, 1, stream=s)
    with pytest.raises(ValueError, match=r"^n: 2147483648 is out of range for int32"):
        k(x, x, 1.0, 2**31, stream=s)
    with pytest.raises(TypeError, match=r"^scale: expected 4 arguments \(out, x, alpha, n\), got 3$"):
        k(x, x, 1.0, stream=s)
    launched = len(driver.launches)
    k(x, x, 2, np.int32(7), stream=s)  # a Python int for a float and a numpy integer are converted
    assert len(driver.launches) == launched + 1
    assert driver.passed[-1][1:] == (2.0, 7)
    assert k.arguments.matches == 1 + 2  # the first call and the two failed matches (never remembered)


@pytest.mark.usefixtures("fake")
def test_a_freed_device_buffer_is_refused_on_a_repeated_call() -> None:
    k = _kernel()
    out, x = DeviceBuffer((4, 3), "float32"), DeviceBuffer((4, 3), "float32")
    k(out, x, 1.0, 1, stream=0)
    x.free()
    with pytest.raises(ValueError, match=r"^x: the DeviceBuffer was freed$"):
        k(out, x, 1.0, 1, stream=0)


def test_a_launch_refused_in_a_foreign_context_is_made_in_ours(fake: Any) -> None:
    driver, torch = fake
    k = _kernel()
    s = torch.cuda.Stream()
    x = torch.empty((4, 3), dtype=torch.float32)
    k(x, x, 1.0, 1, stream=s)
    driver.set_current(driver.foreign)
    driver.launch_contexts.clear()
    attempts = driver.attempts
    k(x, x, 1.0, 1, stream=s)
    assert driver.attempts == attempts + 2, "refused once, then made in ours"
    assert driver.launch_contexts == [int(driver.primary[0])]
    assert driver.current() == int(driver.foreign), "the caller's context is given back"


def test_calls_on_two_devices_launch_each_in_its_own_context(fake: Any) -> None:
    driver, torch = fake
    k = _kernel()
    for device in (0, 1, 0):
        x = torch.Tensor((4, 3), torch.float32, device)
        k(x, x, 1.0, 1, stream=torch.cuda.Stream(device))
    assert driver.launch_contexts == [int(driver.primary[d]) for d in (0, 1, 0)]


def test_a_thread_without_a_context_keeps_ours(fake: Any) -> None:
    driver, torch = fake
    k = _kernel()
    s = torch.cuda.Stream()
    x = torch.empty((4, 3), dtype=torch.float32)
    driver.set_current(None)
    k(x, x, 1.0, 1, stream=s)
    assert driver.current() == int(driver.primary[0])
    attempts = driver.attempts
    k(x, x, 1.0, 1, stream=s)
    assert driver.attempts == attempts + 1, "accepted at once"


def test_a_call_without_a_stream_launches_on_the_producers_and_waits(fake: Any) -> None:
    driver, torch = fake
    k = _kernel()
    x = torch.empty((4, 3), dtype=torch.float32)
    for _ in range(2):
        k(x, x, 1.0, 1)
    assert [launch[3] for launch in driver.launches] == [torch.cuda.current_stream(0).cuda_stream] * 2
    assert driver.calls["cuStreamSynchronize"] == 2
