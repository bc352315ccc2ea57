"""benchmarks/host_overhead.py end to end with small counts: the script, and the helpers it shares with
bench_launch.py (frame_rects, median_us, new_graph_objects), run only on the device otherwise. The figures
mean nothing here; every row must be there with a number, and the fresh process must find its kernel on disk."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fklir.backend import compilers

ROOT = Path(__file__).resolve().parents[2]

ROWS = (
    "stub floor: cuLaunchKernel(pre-packed)",
    "unbound pipe(x, out=y, stream=s)",
    "histogram(grey, out=counts, stream=s)",
    "nv12_to_rgb(frame, stream=s) (allocates)",
    "compose(), known structure, new values",
    "first call of a new pipeline object (compose excluded)",
    "per-frame ROI loop: compose(1..64 new rects) + call",
    "per-frame ROI loop: a frame's first call (compose excluded)",
    "per-frame ROI loop: the warm call of one frame's pipeline",
    "per-frame ROI loop: compose(64 new rects)",
    "DAG first call of a new object (compose excluded), new values",
)


@pytest.mark.skipif(
    not (compilers.nvcc_available() or compilers.nvrtc_available()),
    reason="the stubbed kernels' cache keys name a GPU compiler: needs nvcc or NVRTC",
)
def test_host_overhead_prints_every_row(tmp_path: Path) -> None:
    command = [sys.executable, str(ROOT / "benchmarks" / "host_overhead.py"), "--calls", "50", "--reps", "2"]
    env = {**os.environ, "FKLIR_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run([*command, "--objects", "20"], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    figures = dict(re.findall(r"^\| (.+?) \| ([0-9.]+) (?:µs|ms) \|$", done.stdout, re.MULTILINE))
    for row in ROWS:
        label = next((name for name in figures if name.startswith(row)), None)
        assert label is not None, f"no row {row!r} in:\n{done.stdout}"
        assert float(figures[label]) > 0
    assert "fresh process: first call after compose (compiles=0, disk hits=1)" in done.stdout, done.stdout
