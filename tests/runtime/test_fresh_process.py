"""A fresh process with a warm disk cache: composing and calling chains whose plans are on disk imports no
xDSL and compiles nothing (issue 18: the plan on disk carries all the launch needs)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# Crop + Resize + Mul, a math op, a list call, a user op (fkl.op) and a DAG: each composed and called once; the
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
alpha = float(sys.argv[2])  # a DAG (SPEC §8) whose values each process picks anew: runtime values
branch = fkl.Input(1, fkl.Crop(2, 2, 8, 8), fkl.Add(alpha))
blended, diff = fkl.compose(
    fkl.TensorRead(), fkl.Blend(branch, alpha), fkl.MidWrite(), fkl.AbsDiff(fkl.Input(1, fkl.Crop(1, 0, 8, 8))),
    fkl.TensorWrite(), target="cpu",
)(floats, images[0].repeat(2, 0).repeat(2, 1))
np.savez(
    sys.argv[1], crop=crop, math=math, listed=np.asarray(listed), user=user, floats=floats, images=np.stack(images),
    blended=blended, diff=diff,
)
xdsl = sorted(m for m in sys.modules if m == "xdsl" or m.startswith("xdsl."))
print(json.dumps({"compiles": build.STATS.compiles, "xdsl": xdsl}))
"""


def _run(env: dict[str, str], out: Path, alpha: float = 0.25) -> dict[str, object]:
    command = [sys.executable, "-c", _SCRIPT, str(out), str(alpha)]
    run = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


def test_a_fresh_process_calls_chains_on_disk_without_xdsl(tmp_path: Path) -> None:
    env = {**os.environ, "FKLIR_CACHE_DIR": str(tmp_path / "cache")}
    first = _run(env, tmp_path / "first.npz")
    assert first["compiles"] == 5 and first["xdsl"], "the first process builds every plan from IR"
    second = _run(env, tmp_path / "second.npz", alpha=0.75)  # the DAG's values new to the cache
    assert second == {"compiles": 0, "xdsl": []}
    cold, warm = np.load(tmp_path / "first.npz"), np.load(tmp_path / "second.npz")
    for name in ("crop", "math", "listed", "user"):
        np.testing.assert_array_equal(warm[name], cold[name])
    floats, other = warm["floats"], warm["images"][0].repeat(2, 0).repeat(2, 1)
    crop = other[2:10, 2:10].astype(np.float64) + np.float32(0.75)
    expected = floats * 0.75 + crop.astype(np.float32).astype(np.float64) * 0.25
    np.testing.assert_allclose(warm["blended"], expected.astype(np.float32), rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(warm["diff"], np.abs(warm["blended"] - other[0:8, 1:9]))
    np.testing.assert_array_equal(warm["math"], np.sqrt(warm["floats"]))
    np.testing.assert_array_equal(warm["listed"], warm["images"] * np.float32(2) + np.float32(1))
    np.testing.assert_array_equal(warm["user"], warm["floats"] * np.float32(3))
    assert warm["crop"].shape == (16, 16, 3) and warm["crop"].dtype == np.float32


# One cached chain composed and called by a fresh process, with an audit hook that sees every file it opens
# and every process it starts; argv[2] == "warm" makes subprocess unusable first.
_ONE_CHAIN = """
import os, subprocess, sys
import numpy as np

root = os.path.realpath(os.environ["FKLIR_CACHE_DIR"])
opened, listed, started = [], [], []
WRITES = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def inside(path):
    return isinstance(path, (str, bytes, os.PathLike)) and os.path.realpath(os.fsdecode(path)).startswith(root)


def audit(event, args):
    if event == "open" and inside(args[0]):
        mode, flags = args[1], args[2]
        written = any(c in mode for c in "wax+") if isinstance(mode, str) else bool(flags & WRITES)
        opened.append((os.path.basename(os.fsdecode(args[0])), written))
    elif event in ("os.scandir", "os.listdir") and args and inside(args[0]):
        listed.append(os.fsdecode(args[0]))
    elif event in ("subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "os.system"):
        started.append(event)


def refuse(*args, **kwargs):
    raise AssertionError("a warm call started a process")


if sys.argv[2] == "warm":
    subprocess.Popen = refuse
before = set(sys.modules)
sys.addaudithook(audit)
import fklir as fkl

x = np.arange(48 * 64 * 3, dtype=np.uint8).reshape(48, 64, 3)
pipe = fkl.compose(
    fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.25), fkl.Sub(3.0), fkl.SaturateCast("uint8"), fkl.TensorWrite(),
    target="cpu",
)
out = pipe(x)
imported = sorted(set(sys.modules) - before)
np.save(sys.argv[1], out)
import json

print(json.dumps({"opened": opened, "listed": listed, "started": started, "imported": imported}))
"""

# What a warm first call of the CPU target has no use for: the IR and the passes, the emitter, a compiler
# process, the GPU runtime, logging (no application configured it), the version lookup, OpenSSL
# (hashlib: the cache checks with CPython's own SHA-256 when nothing imported hashlib before), dataclasses
# (they build their methods from source text), tempfile and fcntl (the warm call writes nothing and takes
# no lock) and json (a plan record is marshal data). The process runs without `site` (python -S), so that
# no .pth file imports any of these before fklir does.
_NOT_IMPORTED = (
    "dataclasses",
    "tempfile",
    "random",
    "json",
    "xdsl",
    "fklir.dialects.fkl",
    "fklir.frontend.lowering",
    "fklir.passes",
    "fklir.backend.emit_cpp",
    "fklir.runtime.device_buffer",
    "fklir.runtime.dlpack",
    "cuda",
    "subprocess",
    "logging",
    "importlib.metadata",
    "hashlib",
    "fcntl",
)


def _run_one_chain(env: dict[str, str], out: Path, mode: str) -> dict[str, list[Any]]:
    command = [sys.executable, "-S", "-c", _ONE_CHAIN, str(out), mode]
    bare = {**env, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # numpy and fklir, without site
    run = subprocess.run(command, env=bare, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.splitlines()[-1])


@pytest.fixture(scope="module")
def one_chain(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, list[Any]], Path]:
    """The warm process's report (after a cold one filled the cache) and the folder of both outputs."""
    folder = tmp_path_factory.mktemp("one-chain")
    env = {**os.environ, "FKLIR_CACHE_DIR": str(folder / "cache")}
    _run_one_chain(env, folder / "cold.npy", "cold")
    return _run_one_chain(env, folder / "warm.npy", "warm"), folder


def test_a_warm_first_call_reads_its_plan_and_kernel_only(one_chain: tuple[dict[str, list[Any]], Path]) -> None:
    """The warm first call runs no process (no compiler, no `--version`), lists no cache folder, writes
    nothing, reads the plan and the kernel (each with its checksum) and imports none of _NOT_IMPORTED."""
    warm, folder = one_chain
    assert warm["started"] == [] and warm["listed"] == []
    opened = sorted(name.partition(".")[2] for name, _written in warm["opened"])
    assert opened == ["plan", "plan.sha256", "so", "so.sha256"], warm["opened"]
    assert not any(written for _name, written in warm["opened"])
    loaded = [m for m in warm["imported"] if m.startswith(tuple(_NOT_IMPORTED))]
    assert not [m for m in loaded if any(m == n or m.startswith(n + ".") for n in _NOT_IMPORTED)], loaded
    np.testing.assert_array_equal(np.load(folder / "warm.npy"), np.load(folder / "cold.npy"))


def test_the_warm_paths_named_tuples_compile_no_annotation(one_chain: tuple[dict[str, list[Any]], Path]) -> None:
    """typing.NamedTuple compiles every string annotation into a ForwardRef when the class is made, so the
    modules that a warm first call imports declare their named tuples without `from __future__ import
    annotations`: their fields' types are objects already, and importing the module compiles nothing."""
    warm, _folder = one_chain
    modules = [importlib.import_module(name) for name in warm["imported"] if name.startswith("fklir")]
    tuples = [
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, tuple)
        and hasattr(value, "_fields")
        and value.__module__ == module.__name__
    ]
    assert len(tuples) >= 10, [t.__qualname__ for t in tuples]  # the check looks at the warm path's records
    compiled = [
        f"{t.__module__}.{t.__qualname__}.{name}"
        for t in tuples
        for name, kind in t.__annotations__.items()
        if isinstance(kind, typing.ForwardRef)
    ]
    assert compiled == [], "string annotations on the warm path's named tuples (a __future__ import?)"
