"""The CPU target's OpenMP loops: small outputs run on the calling thread, large ones on a team whose size
OMP_NUM_THREADS sets, and the values do not depend on which.

Threads are counted in /proc/self/task of a child process: libgomp keeps the workers of a team alive
after the loop, so a call that started a team of N leaves N - 1 more threads behind, deterministically.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.emit_flat import CPU_PARALLEL_MIN_ELEMENTS

cv2 = pytest.importorskip("cv2")

ROOT = Path(__file__).resolve().parents[2]
RNG = np.random.default_rng(3)
MEAN = (0.485, 0.456, 0.406)

pytestmark = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")

_CHILD = """
import json, os, sys
import numpy as np
import fklir as fkl

def threads():
    return len(os.listdir("/proc/self/task"))

def resize(w, h):
    return fkl.compose(fkl.TensorRead(), fkl.Resize(w, h), fkl.Mul(0.5), fkl.TensorWrite(), target="cpu")

flat = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.5), fkl.TensorWrite(), target="cpu")
small = np.zeros((5, 7, 3), np.uint8)
large = np.zeros((400, WIDE, 3), np.uint8)
counts = {"start": threads()}
for name, pipe, x in (("flat", flat, small), ("resize", resize(7, 5), large)):
    pipe(x)
    pipe(x)
    counts[name + " small"] = threads()
counts["flat large"] = (flat(large), threads())[1]
counts["resize large"] = (resize(WIDE, 400)(small), threads())[1]
print(json.dumps(counts))
"""


def _thread_counts(omp_threads: str | None, tmp_path: Path) -> dict[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env.update(FKLIR_CACHE_DIR=str(tmp_path), OPENBLAS_NUM_THREADS="1", OMP_WAIT_POLICY="passive")
    if omp_threads is not None:
        env["OMP_NUM_THREADS"] = omp_threads
    wide = 400  # 400 x 400 x 3 elements: above the threshold, and not a multiple of the flat loop's chunk
    assert 400 * wide * 3 > 2 * CPU_PARALLEL_MIN_ELEMENTS
    script = _CHILD.replace("WIDE", str(wide))
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("omp_threads", ["1", "3"])
def test_small_outputs_start_no_team_and_large_ones_follow_omp_num_threads(omp_threads: str, tmp_path: Path) -> None:
    counts = _thread_counts(omp_threads, tmp_path)
    start = counts["start"]
    assert counts["flat small"] == start, counts
    assert counts["resize small"] == start, counts
    workers = int(omp_threads) - 1
    assert counts["flat large"] == start + workers, counts
    assert counts["resize large"] == start + workers, counts


def test_without_omp_num_threads_a_large_output_uses_every_core(tmp_path: Path) -> None:
    counts = _thread_counts(None, tmp_path)
    cores = len(os.sched_getaffinity(0))
    assert counts["flat small"] == counts["resize small"] == counts["start"], counts
    assert counts["flat large"] == counts["start"] + cores - 1, counts


# ---- values on both sides of the threshold -----------------------------------------------------------

# (height, width) of outputs just below, at and above CPU_PARALLEL_MIN_ELEMENTS elements (3 channels),
# and one far above, all with odd sides.
SIDES = [(127, 171), (151, 145), (153, 149), (301, 257)]


@pytest.mark.parametrize(("h", "w"), SIDES)
def test_flat_values_either_side_of_the_threshold(h: int, w: int) -> None:
    x = RNG.integers(0, 256, (h, w, 3), dtype=np.uint8)
    pipe = fkl.compose(
        fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(1 / 255), fkl.Sub(MEAN), fkl.TensorWrite(), target="cpu"
    )
    expected = x.astype(np.float64) * np.float64(np.float32(1 / 255)) - np.array(MEAN, np.float32).astype(np.float64)
    np.testing.assert_allclose(pipe(x), expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize(("h", "w"), SIDES)
def test_resize_values_either_side_of_the_threshold(h: int, w: int) -> None:
    x = (RNG.random((2 * h + 3, 2 * w - 1, 3)) * 255).astype(np.float32)
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Crop(1, 2, 2 * w - 3, 2 * h),
        fkl.Resize(w, h),
        fkl.Mul(0.5),
        fkl.TensorWrite(),
        target="cpu",
    )
    out = pipe(x)
    expected = cv2.resize(x[2 : 2 + 2 * h, 1 : 2 * w - 2], (w, h), interpolation=cv2.INTER_LINEAR).astype(np.float64)
    expected *= 0.5
    assert out.shape == expected.shape
    err = np.abs(out.astype(np.float64) - expected)
    assert float((err - (1e-3 + 1e-4 * np.abs(expected))).max()) <= 0, float(err.max())


def test_sides_straddle_the_threshold() -> None:
    elements = [h * w * 3 for h, w in SIDES]
    assert elements[0] < CPU_PARALLEL_MIN_ELEMENTS <= elements[2]
    assert any(abs(e - CPU_PARALLEL_MIN_ELEMENTS) < 1000 for e in elements)
