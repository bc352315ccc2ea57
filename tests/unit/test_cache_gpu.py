"""The cache faults of the GPU target (run on the device): a cubin that passes its checksum but that the driver
refuses, on the plan path, is dropped and rebuilt; `fklir cache list|info` describe GPU kernels."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fklir.backend.cache import DiskCache
from fklir.runtime import cuda_driver

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not cuda_driver.gpu_available(), reason="needs a CUDA device"),
]

REPOSITORY = Path(__file__).resolve().parents[2]


def expected_chain_output() -> np.ndarray:
    """What tests.runtime.test_gpu_plumbing's GPU_CHILD_SCRIPT computes, in numpy (float32 after each op)."""
    image = np.arange(33 * 17 * 3, dtype=np.float32).reshape(33, 17, 3) / np.float32(7)
    for operation, operand in ((np.multiply, 1.5), (np.add, -2.0), (np.add, 0.25), (np.subtract, 0.125)):
        image = operation(image, np.float32(operand)).astype(np.float32)
    return image


def plant(path: Path, payload: bytes) -> None:
    path.write_bytes(payload)
    Path(f"{path}.sha256").write_text(f"{hashlib.sha256(payload).hexdigest()} {len(payload)}\n")


@pytest.mark.driver_error
@pytest.mark.parametrize("payload", [b"", b"\x7fELF not a cubin" * 100], ids=["empty", "garbage"])
def test_an_unloadable_cubin_on_the_plan_path_is_dropped_and_rebuilt(tmp_path: Path, payload: bytes) -> None:
    from tests.runtime.test_gpu_plumbing import run_gpu_chain_in_fresh_process

    root = tmp_path / "cache"
    assert run_gpu_chain_in_fresh_process(root, tmp_path / "a.npy")["compiles"] == 1
    ((cubin, _size),) = [entry for entry in DiskCache(root).entries() if entry[0].suffix == ".cubin"]
    plant(cubin, payload)  # the checksum matches: only the driver can tell

    assert run_gpu_chain_in_fresh_process(root, tmp_path / "b.npy") == {"compiles": 1, "disk_hits": 0}
    np.testing.assert_array_equal(np.load(tmp_path / "b.npy"), expected_chain_output())
    assert run_gpu_chain_in_fresh_process(root, tmp_path / "c.npy") == {"compiles": 0, "disk_hits": 1}
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), expected_chain_output())


def test_cache_list_and_info_describe_a_gpu_kernel(tmp_path: Path) -> None:
    from tests.runtime.test_gpu_plumbing import run_gpu_chain_in_fresh_process

    root = tmp_path / "cache"
    run_gpu_chain_in_fresh_process(root, tmp_path / "a.npy")
    ((cubin, _size),) = [entry for entry in DiskCache(root).entries() if entry[0].suffix == ".cubin"]
    arch = cuda_driver.device_arch(0)
    environment = {**os.environ, "FKLIR_CACHE_DIR": str(root)}
    listed = subprocess.run(
        [sys.executable, "-m", "fklir.tools.cli", "cache", "list"],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPOSITORY,
        check=True,
    )
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith(cubin.stem[:12])]
    assert f"gpu/{arch}" in row.split()
    assert row.endswith("float32x3 -> float32x3  read > mul > add > add > sub > write")

    info = subprocess.run(
        [sys.executable, "-m", "fklir.tools.cli", "cache", "info", cubin.stem[:10]],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPOSITORY,
        check=True,
    )
    head, source = info.stdout.split("source:\n", 1)
    assert f"target:    gpu/{arch}" in head.splitlines()
    assert 'extern "C" __global__' in source or "__global__" in source
