"""The "fklir" logger: one INFO line per compile, a line while a slow compile runs, DEBUG cache hits, and
FKLIR_LOG turning it on from the environment."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import fklir as fkl
from fklir import log
from fklir.backend import build, compilers
from fklir.jit import pipeline
from tests.fresh_process import forget_loaded

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(41)
COMPILED = re.compile(
    r"^compiled (?P<chain>.+) for (?P<target>\S+) with (?P<compiler>\S+) in (?P<s>[0-9.]+) s: (?P<path>.+)$"
)


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty disk cache and in-process table, so that the next compose compiles."""
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(tmp_path))
    forget_loaded(monkeypatch)
    return tmp_path


def _messages(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "fklir" and r.levelno == level]


def _chain(mul: float, *more: fkl.ops.Op) -> fkl.Pipeline:
    ops = (fkl.Crop(1, 2, 9, 7), fkl.Resize(5, 3), fkl.Mul(mul), *more)
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")


def test_a_compile_is_one_info_line(fresh_cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="fklir")
    x = RNG.integers(0, 256, (11, 13, 3), dtype=np.uint8)
    out = _chain(0.5)(x)
    assert out.shape == (3, 5, 3)
    compiled = [m for m in _messages(caplog, logging.INFO) if m.startswith("compiled ")]
    assert len(compiled) == 1, compiled
    match = COMPILED.match(compiled[0])
    assert match is not None, compiled[0]
    assert match["chain"] == "read > crop > resize > mul > write (uint8x3 -> float32x3)"
    assert (match["target"], match["compiler"]) == ("cpu", "g++")
    assert 0 < float(match["s"]) < 600
    entry = Path(match["path"])
    assert entry.parent == fresh_cache and entry.suffix == ".so" and entry.is_file()


def test_cache_hits_are_debug_lines(
    fresh_cache: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.DEBUG, logger="fklir")
    x = RNG.integers(0, 256, (11, 13, 3), dtype=np.uint8)
    _chain(0.5, fkl.AddLast(1.0))(x)

    def forget_plans() -> None:
        """The pipelines' plans and their records gone (in memory and on disk): the next call builds IR."""
        monkeypatch.setattr(pipeline, "_SHARED_PLANS", {})
        monkeypatch.setattr(build, "_PLANS", {})
        for record in fresh_cache.glob("*.plan"):
            record.unlink()

    forget_plans()
    _chain(0.25, fkl.AddLast(2.0))(x)  # the kernel in memory
    forget_loaded(monkeypatch)
    forget_plans()
    _chain(0.125, fkl.AddLast(3.0))(x)  # and now from the disk
    debug = _messages(caplog, logging.DEBUG)
    summary = "read > crop > resize > mul > add_last > write (uint8x3 -> float32x4)"
    assert [m.split(":")[0] for m in debug] == ["memory cache hit", "disk cache hit"], debug
    assert all(summary in m for m in debug), debug
    assert sum(m.startswith("compiled ") for m in _messages(caplog, logging.INFO)) == 1


def test_nothing_is_logged_or_described_below_the_level(fresh_cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="fklir")

    def must_not_run() -> str:
        raise AssertionError("described although DEBUG is off")

    log.cache_hit("memory", "0" * 64, must_not_run)
    _chain(2.0)(RNG.integers(0, 256, (11, 13, 3), dtype=np.uint8))
    assert [r for r in caplog.records if r.name == "fklir"] == []


# ---- a slow compile --------------------------------------------------------------------------------


def test_a_slow_compile_says_so_while_it_runs(
    fresh_cache: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger="fklir")
    monkeypatch.setattr(log, "SLOW_COMPILE_S", 0.05)
    real = compilers.compile_shared_library
    seen_during_compile: list[list[str]] = []

    def slow(*args: object, **kwargs: object) -> object:
        deadline = time.monotonic() + 10
        while not any(m.startswith("still compiling") for m in _messages(caplog, logging.INFO)):
            assert time.monotonic() < deadline, "no 'still compiling' line while the compile ran"
            time.sleep(0.01)
        seen_during_compile.append(_messages(caplog, logging.INFO))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(compilers, "compile_shared_library", slow)
    _chain(3.0)(RNG.integers(0, 256, (11, 13, 3), dtype=np.uint8))
    (during,) = seen_during_compile
    assert during == [
        "still compiling read > crop > resize > mul > write (uint8x3 -> float32x3) for cpu with g++ (0 s so far) ..."
    ]
    assert [m.split(" ")[0] for m in _messages(caplog, logging.INFO)] == ["still", "compiled"]


def test_a_fast_or_failed_compile_leaves_no_timer_behind(caplog: pytest.LogCaptureFixture, tmp_path: Path) -> None:
    caplog.set_level(logging.INFO, logger="fklir")
    before = threading.active_count()
    with log.compiling("a > b", "cpu", "g++", tmp_path / "k.so"):
        pass
    with pytest.raises(compilers.CompileError), log.compiling("a > c", "cpu", "g++", tmp_path / "k.so"):
        raise compilers.CompileError("g++ failed")
    time.sleep(0.05)
    assert threading.active_count() == before
    messages = _messages(caplog, logging.INFO)
    assert len(messages) == 1 and messages[0].startswith("compiled a > b for cpu with g++ in "), messages


def test_the_slow_line_uses_the_threshold(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    caplog.set_level(logging.INFO, logger="fklir")
    monkeypatch.setattr(log, "SLOW_COMPILE_S", 0.02)
    with log.compiling("a > b", "gpu (sm_90)", "nvrtc", tmp_path / "k.cubin"):
        time.sleep(0.3)
    assert _messages(caplog, logging.INFO)[0] == "still compiling a > b for gpu (sm_90) with nvrtc (0 s so far) ..."


def test_the_default_threshold_is_two_seconds() -> None:
    assert log.SLOW_COMPILE_S == 2.0


# ---- FKLIR_LOG ---------------------------------------------------------------------------------------


def _environment_handlers() -> list[logging.Handler]:
    return [h for h in log.LOGGER.handlers if isinstance(h, log._EnvironmentHandler)]


@pytest.fixture
def restore_logger() -> object:
    level, handlers = log.LOGGER.level, list(log.LOGGER.handlers)
    yield
    log.LOGGER.setLevel(level)
    log.LOGGER.handlers[:] = handlers


def test_fklir_log_adds_one_handler_once(monkeypatch: pytest.MonkeyPatch, restore_logger: object) -> None:
    monkeypatch.setenv("FKLIR_LOG", " Debug ")
    log.configure_from_environment()
    log.configure_from_environment()
    assert len(_environment_handlers()) == 1
    assert log.LOGGER.level == logging.DEBUG


def test_without_fklir_log_no_handler_is_added(monkeypatch: pytest.MonkeyPatch, restore_logger: object) -> None:
    monkeypatch.delenv("FKLIR_LOG", raising=False)
    log.LOGGER.handlers[:] = [h for h in log.LOGGER.handlers if not isinstance(h, log._EnvironmentHandler)]
    log.configure_from_environment()
    assert _environment_handlers() == []


def test_an_unknown_fklir_log_value_warns(monkeypatch: pytest.MonkeyPatch, restore_logger: object) -> None:
    monkeypatch.setenv("FKLIR_LOG", "loud")
    log.LOGGER.handlers[:] = [h for h in log.LOGGER.handlers if not isinstance(h, log._EnvironmentHandler)]
    with pytest.warns(UserWarning, match=r"FKLIR_LOG='loud' is not a log level; use one of debug, info"):
        log.configure_from_environment()
    assert _environment_handlers() == []


_SCRIPT = """
import numpy as np, fklir as fkl
pipe = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.5), fkl.TensorWrite(), target="cpu")
out = pipe(np.arange(12, dtype=np.uint8).reshape(2, 2, 3))
assert out.tolist() == (np.arange(12).reshape(2, 2, 3) * 0.5).tolist()
"""


def _run(level: str | None, cache: Path) -> str:
    env = {k: v for k, v in os.environ.items() if k != "FKLIR_LOG"}
    env["FKLIR_CACHE_DIR"] = str(cache)
    if level is not None:
        env["FKLIR_LOG"] = level
    result = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result.stderr


def test_fklir_log_in_the_environment_logs_to_stderr(tmp_path: Path) -> None:
    first = _run("info", tmp_path)
    lines = [line for line in first.splitlines() if " fklir INFO: compiled " in line]
    assert len(lines) == 1, first
    assert "compiled read > cast > mul > write (uint8x3 -> float32x3) for cpu with g++ in " in lines[0]
    assert str(tmp_path) in lines[0]
    assert " DEBUG" not in first
    second = _run("debug", tmp_path)  # compiled already: the kernel comes from the disk
    assert " fklir DEBUG: disk cache hit: " in second, second
    assert " INFO: compiled " not in second
    assert _run(None, tmp_path / "other") == ""


@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
def test_a_gpu_compile_names_the_arch_and_the_compiler(fresh_cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    from fklir.runtime import cuda_driver
    from fklir.runtime.device_buffer import DeviceBuffer

    caplog.set_level(logging.INFO, logger="fklir")
    x = DeviceBuffer.from_host(RNG.integers(0, 256, (11, 13, 3), dtype=np.uint8))
    fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(7.0), fkl.TensorWrite(), target="gpu")(x)
    (line,) = [m for m in _messages(caplog, logging.INFO) if m.startswith("compiled ")]
    match = COMPILED.match(line.replace("gpu (", "gpu(", 1))
    assert match is not None, line
    assert match["target"] == f"gpu({cuda_driver.device_arch(0)})"
    assert match["compiler"] == fkl.get_backend()
    entry = Path(match["path"])
    assert entry.suffix == ".cubin" and entry.is_file()
