"""compose() of a structure this process knows: a chain composed before builds no IR and reads no disk, and a
known structure with new values (a detector's boxes every frame) compiles nothing and writes no file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build, cache
from fklir.frontend import lowering


@pytest.fixture
def private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(tmp_path))
    return tmp_path


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _crop_resize(rects: list[tuple[int, int, int, int]], scale: float) -> fkl.Pipeline:
    return fkl.compose(
        fkl.TensorRead(), fkl.Crop(rects), fkl.Resize(4, 4), fkl.Mul(scale), fkl.TensorWrite(), target="cpu"
    )


def _no_ir(*args: object, **kwargs: object) -> object:
    raise AssertionError("a known chain built IR")


def test_a_chain_composed_before_builds_no_ir_and_reads_no_disk(
    private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    x = np.arange(6 * 8 * 3, dtype=np.float32).reshape(6, 8, 3)
    chain = (fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite())
    first = fkl.compose(*chain, target="cpu")(x)
    monkeypatch.setattr(lowering, "lower_pipeline", _no_ir)
    monkeypatch.setattr(cache.DiskCache, "load", _no_ir)
    monkeypatch.setattr(cache.DiskCache, "load_path", _no_ir)
    for _ in range(3):
        again = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite(), target="cpu")(x)
        np.testing.assert_array_equal(again, first)
    np.testing.assert_array_equal(first, x * 2 + 1)


def _alone(rect: tuple[int, int, int, int], scale: float) -> fkl.Pipeline:
    return fkl.compose(
        fkl.TensorRead(), fkl.Crop(*rect), fkl.Resize(4, 4), fkl.Mul(scale), fkl.TensorWrite(), target="cpu"
    )


def test_new_values_of_a_known_structure_compile_nothing_and_write_no_file(private_cache: Path) -> None:
    rng = np.random.default_rng(7)
    x = rng.random((32, 32, 3), dtype=np.float32)
    _crop_resize([(0, 0, 8, 8), (4, 4, 16, 16)], 1.0)(x)  # the structures: two rects, and one alone
    _alone((0, 0, 8, 8), 1.0)(x)
    files = _files(private_cache)
    compiles = build.STATS.compiles
    for frame in range(5):
        rects = [(*(int(v) for v in rng.integers(0, 16, 2)), *(int(v) for v in rng.integers(4, 16, 2))) for _ in "ab"]
        scale = float(frame + 2)
        got = _crop_resize(rects, scale)(x)  # pyright: ignore[reportArgumentType]
        for plane, rect in enumerate(rects):
            np.testing.assert_allclose(got[plane], _alone(rect, scale)(x), rtol=1e-6)  # pyright: ignore[reportArgumentType]
    assert build.STATS.compiles == compiles
    assert _files(private_cache) == files


FRESH = """
import sys
sys.path.insert(0, {root!r})
import numpy as np
import fklir as fkl
x = np.arange(4 * 5 * 3, dtype=np.float32).reshape(4, 5, 3)
before = set(sys.modules)
y = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite(), target="cpu")(x)
assert (y == x * 2 + 1).all()
print(" ".join(sorted(set(sys.modules) - before)))
"""


def test_a_fresh_process_calling_a_chain_on_disk_builds_no_ir(tmp_path: Path) -> None:
    """The plan record on disk stands for the IR: neither the lowering nor any pass is imported. (xDSL itself
    still is: the descriptors and the build module import the dialect.)"""
    env = {**os.environ, "FKLIR_CACHE_DIR": str(tmp_path)}
    script = FRESH.format(root=str(Path(__file__).resolve().parents[2]))

    def imported() -> set[str]:
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        return set(run.stdout.split())

    assert "fklir.frontend.lowering" in imported()  # the first process builds the plan
    second = imported()
    assert not {m for m in second if m == "fklir.frontend.lowering" or m.startswith("fklir.passes")}
