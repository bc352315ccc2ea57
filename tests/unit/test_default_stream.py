"""fkl.set_default_stream and FKLIR_DEFAULT_STREAM: the mode of GPU calls without stream= (SPEC §2 "Streams");
what each mode does to a launch is tested with the fake driver (tests/runtime/test_host_path.py) and on
the GPU (tests/runtime/test_default_stream_gpu.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import fklir as fkl
from fklir.jit import default_stream

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(default_stream, "_mode", [])
    monkeypatch.delenv("FKLIR_DEFAULT_STREAM", raising=False)


def test_the_seeds_synchronising_default_stays() -> None:
    assert fkl.default_stream() == "internal"


@pytest.mark.parametrize("mode", ["current", "internal", " Current "])
def test_set_default_stream_takes_each_mode(mode: str) -> None:
    fkl.set_default_stream(mode)
    assert fkl.default_stream() == mode.strip().lower()


@pytest.mark.parametrize("bad", ["torch", "", None, 1, "current stream"])
def test_a_bad_mode_is_a_clear_error(bad: object) -> None:
    with pytest.raises(ValueError, match=r'set_default_stream: the default stream is "internal" or "current", got'):
        fkl.set_default_stream(bad)  # pyright: ignore[reportArgumentType]
    assert fkl.default_stream() == "internal"


def test_the_environment_sets_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FKLIR_DEFAULT_STREAM", "current")
    assert fkl.default_stream() == "current"
    fkl.set_default_stream("internal")  # the call wins over the environment
    assert fkl.default_stream() == "internal"


def test_a_bad_environment_value_names_the_variable_at_the_first_call(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FKLIR_DEFAULT_STREAM", "sometimes")
    with pytest.raises(ValueError, match=r"FKLIR_DEFAULT_STREAM: the default stream is .* got 'sometimes'"):
        fkl.default_stream()


def test_a_bad_environment_value_does_not_break_import() -> None:
    script = "import fklir as fkl; print(fkl.compose is not None)"
    env = {"FKLIR_DEFAULT_STREAM": "sometimes", "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout.strip() == "True", result.stderr
