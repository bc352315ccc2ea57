"""Every script in examples/ runs to the end on the CPU target (and, on a GPU machine, on the GPU):
each one asserts its own result against numpy / OpenCV, so exit code 0 means its numbers are right.
A script that needs what the machine lacks (a GPU, CuPy, torch, Ray) says `skipped: <why>` and the
test reports it as skipped."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import fklir as fkl

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
README = ROOT / "README.md"
SCRIPTS = sorted(path for path in EXAMPLES.glob("*.py") if path.name != "common.py")
# The examples the issue asks for; a renamed or lost one fails here instead of silently not running.
EXPECTED = {
    "roi_crops_dnn.py",
    "letterbox_yolo.py",
    "video_loop.py",
    "torch_dataloader.py",
    "ray_data.py",
    "cupy_dlpack.py",
    "fklir_opt_walkthrough.py",
    "custom_pass.py",
    "augment.py",
    "background_subtraction.py",
}
SKIPPED = "skipped: "
# .ci/run installs the ray and torch extras: in CI these must run, not skip for a missing package.
RUN_IN_CI = {"ray_data.py", "torch_dataloader.py"}


def run_example(script: Path, target: str) -> None:
    # The kernel cache of this test session (conftest's FKLIR_CACHE_DIR) travels in os.environ.
    done = subprocess.run(
        [sys.executable, str(script), "--target", target],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning:__main__"},
        check=False,
    )
    command = f"{script.name} --target {target}"
    assert done.returncode == 0, f"{command} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    if done.stdout.startswith(SKIPPED):
        assert not (os.environ.get("CI") and script.name in RUN_IN_CI), f"{command} skipped in CI: {done.stdout}"
        pytest.skip(done.stdout.strip().removeprefix(SKIPPED))
    assert done.stdout.strip(), f"{script.name} printed nothing"


def test_every_expected_example_is_there_with_a_docstring() -> None:
    assert {path.name for path in SCRIPTS} >= EXPECTED
    for path in SCRIPTS:
        docstring = ast.get_docstring(ast.parse(path.read_text()))
        assert docstring and len(docstring.split()) >= 15, f"{path.name}: its docstring should say what it shows"


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_example_runs_on_the_cpu(script: Path) -> None:
    run_example(script, "cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: path.stem)
def test_example_runs_on_the_gpu(script: Path) -> None:
    run_example(script, "gpu")


def _fenced(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_readme_chain_is_examples_chain_mlir() -> None:
    """The README shows chain.mlir inline; the file the walk-through runs must be the same chain."""
    shipped = [line for line in (EXAMPLES / "chain.mlir").read_text().splitlines() if not line.startswith("//")]
    assert [block.splitlines() for block in _fenced("mlir")] == [shipped]


def test_readme_quick_start_runs() -> None:
    blocks = [block for block in _fenced("sh") if "<<'PY'" in block]
    assert len(blocks) == 1, "one quick start block"
    script = blocks[0].split("<<'PY'\n", 1)[1].rsplit("PY\n", 1)[0]
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert "(3, 16, 16, 3) uint8" in done.stdout, done.stdout
