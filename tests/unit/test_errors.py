"""fklir's error hierarchy: each error is a FklirError and the builtin error a user would catch, and the
conditions that raise them (no CUDA driver, a read-only out=) say so in words."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.errors import CacheError, FklirError, NoDriverError, ReadOnlyOutputError
from fklir.runtime import cuda_driver
from fklir.runtime.device_buffer import DeviceBuffer
from tests.runtime.fake_driver import FakeDriver, installed

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(14)


@pytest.mark.parametrize(
    ("error", "builtin"),
    [(NoDriverError, RuntimeError), (ReadOnlyOutputError, ValueError), (CacheError, ValueError)],
)
def test_each_error_is_a_fklir_error_and_the_builtin_one(error: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(error, FklirError)
    assert issubclass(error, builtin)
    with pytest.raises(builtin):
        raise error("x")
    assert getattr(fkl, error.__name__) is error
    assert fkl.FklirError is FklirError
    assert not issubclass(FklirError, (ValueError, TypeError, RuntimeError))


def test_no_driver_message_says_what_to_do() -> None:
    assert str(NoDriverError()) == "no CUDA driver found; use target='cpu'"
    assert str(NoDriverError("libcuda.so.1: not found")) == (
        "no CUDA driver found; use target='cpu' (libcuda.so.1: not found)"
    )


# ---- no driver ---------------------------------------------------------------------------------------


def _driver_whose_cuinit_raises(error: BaseException) -> types.SimpleNamespace:
    def cu_init(flags: int) -> Any:
        raise error

    return types.SimpleNamespace(cuInit=cu_init)


@pytest.fixture
def no_driver(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Lets a test swap what cuda_driver._driver() returns, with the driver's cached state reset around it."""

    def use(driver: Any) -> None:
        monkeypatch.setattr(cuda_driver, "_driver", lambda: driver)
        # On a GPU machine an earlier test of this process has retained the real contexts: hide them.
        monkeypatch.setattr(cuda_driver, "_primary_contexts", {})
        monkeypatch.setattr(cuda_driver, "_primary_context_handles", {})
        cuda_driver._initialise.cache_clear()
        cuda_driver.gpu_available.cache_clear()

    yield use
    cuda_driver._initialise.cache_clear()
    cuda_driver.gpu_available.cache_clear()


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError('"cuda" is an NVIDIA driver library and can only be found via system search.'),
        OSError("libcuda.so.1: cannot open shared object file"),
    ],
)
def test_a_driver_library_that_cannot_load_is_no_driver_error(no_driver: Any, error: Exception) -> None:
    no_driver(_driver_whose_cuinit_raises(error))
    with pytest.raises(NoDriverError, match=r"^no CUDA driver found; use target='cpu' \(") as raised:
        DeviceBuffer.from_host(np.zeros(4, np.uint8))
    assert raised.value.__cause__ is error
    assert str(error) in str(raised.value)
    assert fkl.gpu_available() is False


def test_missing_cuda_bindings_is_no_driver_error(no_driver: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Any:
        raise ModuleNotFoundError("No module named 'cuda.bindings'")

    no_driver(None)
    monkeypatch.setattr(cuda_driver, "_driver", missing)
    with pytest.raises(NoDriverError, match=r"ModuleNotFoundError: No module named 'cuda.bindings'"):
        cuda_driver.device_count()
    assert fkl.gpu_available() is False


def test_a_driver_that_loads_but_fails_to_initialise_stays_a_cuda_error(no_driver: Any) -> None:
    """A status from cuInit (e.g. no device) is the driver speaking: not "no driver"."""
    driver = FakeDriver(devices=1)
    no_driver(types.SimpleNamespace(cuInit=lambda flags: (100,), CUresult=driver.CUresult, cuGetErrorString=None))
    with pytest.raises(cuda_driver.CudaError) as raised:
        cuda_driver.device_count()
    assert not isinstance(raised.value, NoDriverError)
    assert isinstance(raised.value, FklirError) and isinstance(raised.value, RuntimeError)
    assert raised.value.code == 100


@pytest.mark.skipif(fkl.gpu_available(), reason="checks the machine without a CUDA driver")
def test_this_machine_without_a_driver_says_so_in_a_fresh_process() -> None:
    """No monkeypatching: the real cuda-bindings and cuda-pathfinder find no libcuda here."""
    script = (
        "import numpy as np, fklir as fkl\n"
        "assert fkl.gpu_available() is False\n"
        "try:\n"
        "    fkl.DeviceBuffer.from_host(np.zeros(4, np.uint8))\n"
        "except fkl.NoDriverError as e:\n"
        "    assert isinstance(e, RuntimeError)\n"
        "    print(e)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("no CUDA driver found; use target='cpu'")


class _ForeignDeviceArray:
    """What a CUDA library's array shows fklir: device memory that only a driver can check."""

    @property
    def __cuda_array_interface__(self) -> dict[str, object]:
        return {"shape": (4, 5), "typestr": "<f4", "data": (0x7000, False), "version": 3}


@pytest.mark.skipif(fkl.gpu_available(), reason="checks the machine without a CUDA driver")
def test_gpu_compose_and_call_without_a_driver_raise_no_driver_error() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite())
    with pytest.raises(NoDriverError, match=r"^no CUDA driver found; use target='cpu'"):
        pipe(_ForeignDeviceArray())
    with pytest.raises(NoDriverError, match=r"^no CUDA driver found; use target='cpu'"):
        fkl.compose(fkl.TensorRead(_ForeignDeviceArray()), fkl.Mul(2.0), fkl.TensorWrite())
    assert fkl.gpu_available() is False


# ---- read-only out= ----------------------------------------------------------------------------------


def test_read_only_out_on_the_cpu_target_says_read_only() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite(), target="cpu")
    x = RNG.random((5, 7), dtype=np.float32)
    out = np.full((5, 7), -1.0, np.float32)
    out.flags.writeable = False
    with pytest.raises(ReadOnlyOutputError, match=r"^out: the float32 array of shape \(5, 7\) is read-only"):
        pipe(x, out=out)
    assert (out == -1.0).all()
    out.flags.writeable = True
    assert pipe(x, out=out) is out
    np.testing.assert_allclose(out, x.astype(np.float64) * 2.0, rtol=1e-6)


def test_a_wrong_shape_out_that_is_writable_is_not_called_read_only() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=r"out: expected a float32 array of shape \(5, 7\)") as raised:
        pipe(np.zeros((5, 7), np.float32), out=np.zeros((7, 5), np.float32))
    assert not isinstance(raised.value, ReadOnlyOutputError)


def test_read_only_out_of_a_split_write_names_the_output() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.SplitWrite(), target="cpu")
    x = RNG.integers(0, 256, (3, 4, 3), dtype=np.uint8)
    outs = [np.zeros((3, 4), np.uint8) for _ in range(3)]
    outs[1].flags.writeable = False
    with pytest.raises(ReadOnlyOutputError, match=r"^out \(output 1\): the uint8 array .* is read-only"):
        pipe(x, out=outs)


def test_read_only_device_out_is_read_only_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The GPU path, on the fake driver: a read-only DeviceBuffer as out=."""
    from fklir.backend import build

    monkeypatch.setenv("FKLIR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(build, "get_backend", lambda: "nvcc")
    monkeypatch.setattr(build, "_compiler_and_flags", lambda target, backend: ("fake nvcc 1.0", ()))
    monkeypatch.setattr(build, "_compile_gpu", lambda *args: b"stand-in cubin")
    with installed(FakeDriver(devices=1)):
        pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite(), target="gpu")
        x = DeviceBuffer.from_ptr(0x6000, (6, 5), "float32")
        read_only = DeviceBuffer.from_ptr(0x7000, (6, 5), "float32", readonly=True)
        for _ in range(2):  # the second call takes the warm path
            with pytest.raises(ReadOnlyOutputError, match=r"^out: the float32 array of shape \(6, 5\) is read-only"):
                pipe(x, out=read_only, stream=7)
