"""fklir.__version__, `fklir --version` and `python -m fklir` agree with pyproject.toml."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import fklir
from fklir.tools import cli

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT_VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_version_is_the_projects() -> None:
    assert fklir.__version__ == PYPROJECT_VERSION
    assert "__version__" in fklir.__all__


def test_source_tree_fallback_is_kept_in_step_with_pyproject(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without installed metadata (a bare source tree on sys.path) the constant answers."""

    def not_installed(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", not_installed)
    assert fklir._SOURCE_VERSION == PYPROJECT_VERSION
    assert fklir._version() == PYPROJECT_VERSION


def test_version_comes_from_the_installed_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.metadata, "version", lambda name: f"{name}-9.8.7")
    assert fklir._version() == "fklir-9.8.7"


def test_cli_version_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"fklir {PYPROJECT_VERSION}\n"


@pytest.mark.parametrize("command", [[sys.executable, "-m", "fklir"], ["fklir"]])
def test_python_dash_m_and_the_console_script_are_the_cli(command: list[str], tmp_path: Path) -> None:
    if command == ["fklir"]:
        script = Path(sys.executable).with_name("fklir")
        if not script.exists():
            pytest.skip("the fklir console script is not installed next to this interpreter")
        command = [str(script)]
    version = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert version.returncode == 0, version.stderr
    assert version.stdout == f"fklir {PYPROJECT_VERSION}\n"
    env = {**os.environ, "FKLIR_CACHE_DIR": str(tmp_path / "cache")}
    folder = subprocess.run([*command, "cache", "dir"], capture_output=True, text=True, timeout=60, env=env)
    assert folder.returncode == 0, folder.stderr
    assert folder.stdout == f"{tmp_path / 'cache'}\n"
    usage = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert usage.returncode == 2
    assert "usage: fklir" in usage.stderr
