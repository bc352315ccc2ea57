"""A fresh process with a warm disk cache: composing and calling chains whose plans are on disk imports no
xDSL and compiles nothing (issue 18: the plan on disk carries all the launch needs)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

# Crop + Resize + Mul, a math op, a list call and a user op (fkl.op): each composed and called once; the
# outputs are saved to argv[1], and what the process compiled and imported of xDSL is printed.
_SCRIPT = """
import json, sys
import numpy as np
import fklir as fkl
from fklir.backend import build

rng = np.random.default_rng(7)
image = rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)
floats = rng.random((8, 8, 3), dtype=np.float32)
images = [rng.random((6, 5, 3), dtype=np.float32) for _ in range(3)]
crop = fkl.compose(
    fkl.TensorRead(), fkl.Crop(4, 6, 32, 20), fkl.Resize(16, 16), fkl.Mul(1 / 255), fkl.TensorWrite(), target="cpu"
)(image)
math = fkl.compose(fkl.TensorRead(), fkl.Sqrt(), fkl.TensorWrite(), target="cpu")(floats)
listed = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite(), target="cpu")(images)
Twice = fkl.op(
    "Twice",
    body="struct Twice { static FKL_HD float exec(float x, float k) { return x * k; } };",
    params={"k": "float32"},
    inputs=("float32",),
    out="same",
)
user = fkl.compose(fkl.TensorRead(), Twice(k=3.0), fkl.TensorWrite(), target="cpu")(floats)
np.savez(
    sys.argv[1], crop=crop, math=math, listed=np.asarray(listed), user=user, floats=floats, images=np.stack(images)
)
xdsl = sorted(m for m in sys.modules if m == "xdsl" or m.startswith("xdsl."))
print(json.dumps({"compiles": build.STATS.compiles, "xdsl": xdsl}))
"""


def _run(env: dict[str, str], out: Path) -> dict[str, object]:
    command = [sys.executable, "-c", _SCRIPT, str(out)]
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_a_fresh_process_calls_chains_on_disk_without_xdsl(tmp_path: Path) -> None:
    env = {**os.environ, "FKLIR_CACHE_DIR": str(tmp_path / "cache")}
    first = _run(env, tmp_path / "first.npz")
    assert first["compiles"] == 4 and first["xdsl"], "the first process builds every plan from IR"
    second = _run(env, tmp_path / "second.npz")
    assert second == {"compiles": 0, "xdsl": []}
    cold, warm = np.load(tmp_path / "first.npz"), np.load(tmp_path / "second.npz")
    for name in ("crop", "math", "listed", "user"):
        np.testing.assert_array_equal(warm[name], cold[name])
    np.testing.assert_array_equal(warm["math"], np.sqrt(warm["floats"]))
    np.testing.assert_array_equal(warm["listed"], warm["images"] * np.float32(2) + np.float32(1))
    np.testing.assert_array_equal(warm["user"], warm["floats"] * np.float32(3))
    assert warm["crop"].shape == (16, 16, 3) and warm["crop"].dtype == np.float32
