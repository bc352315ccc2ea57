"""Error locations from a checkout in a folder named `fklir` (git clone's default name): the IR errors of
the suite's location tests, and of a user's own script there, point at the user's line, not at the
caller of the first frame outside a folder of that name."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCATION_TESTS = (
    "tests/runtime/test_cpu_pipeline.py::test_error_points_at_the_user_line",
    "tests/runtime/test_catalogue_cpu.py::test_invalid_combination_is_an_error_naming_the_op",
)


def _clone(tmp_path: Path) -> Path:
    """The working tree's package and tests, copied into <tmp>/fklir (what is tested is what is edited)."""
    clone = tmp_path / "fklir"
    skip = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", "*.so", "Output")
    for folder in ("fklir", "tests"):
        shutil.copytree(ROOT / folder, clone / folder, ignore=skip)
    shutil.copy2(ROOT / "pyproject.toml", clone / "pyproject.toml")
    return clone


def _run(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # The clone first; the rest of the caller's path stays (where xdsl may live, as on the device machine).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(clone), os.environ.get("PYTHONPATH")]))}
    return subprocess.run(
        [sys.executable, *args], cwd=clone, env=env, capture_output=True, text=True, timeout=600, check=False
    )


def test_location_tests_pass_in_a_clone_named_fklir(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    imported = _run(clone, "-c", "import fklir; print(fklir.__file__)")
    assert imported.stdout.strip() == str(clone / "fklir" / "__init__.py"), imported.stderr
    result = _run(clone, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", *LOCATION_TESTS)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


def test_a_users_script_in_a_folder_named_fklir_gets_its_own_line(tmp_path: Path) -> None:
    clone = _clone(tmp_path)
    script = clone / "examples" / "bad_chain.py"
    script.parent.mkdir()
    script.write_text(
        textwrap.dedent(
            """\
            import numpy as np
            import fklir as fkl

            ops = [fkl.TensorRead(),
                   fkl.Mul(0.5),
                   fkl.TensorWrite()]
            try:
                fkl.compose(*ops, target="cpu")(np.zeros((3, 5), np.uint8))
            except ValueError as e:
                print(e)
            """
        )
    )
    result = _run(clone, str(script))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"{script}:5:1: error: 'fkl.mul'"), result.stdout
