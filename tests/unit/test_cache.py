"""DiskCache: atomic, verified, multi-process-safe storage of compiled kernels; end to end through compose;
what the kernel key covers."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fklir.backend import compilers
from fklir.backend.cache import DiskCache, cache_dir, make_key
from fklir.backend.compilers import find_cxx

SUFFIX = ".cubin"


def reference_key(*parts: bytes) -> str:
    """make_key written out independently: sha256 over (8-byte little-endian length, bytes) per part."""
    data = b"".join(len(part).to_bytes(8, "little") + part for part in parts)
    return hashlib.sha256(data).hexdigest()


def deterministic_payload(size: int, seed: int = 7) -> bytes:
    return hashlib.shake_256(seed.to_bytes(4, "little")).digest(size)


@pytest.fixture
def cache(tmp_path: Path) -> DiskCache:
    return DiskCache(tmp_path / "cache")


def counting_build(payload: bytes) -> tuple[list[int], Callable[[], bytes]]:
    calls: list[int] = []

    def build() -> bytes:
        calls.append(1)
        return payload

    return calls, build


# ----- keys and folders ------------------------------------------------------------------------------


def test_make_key_matches_the_length_prefixed_formula() -> None:
    assert make_key("ir text", b"\x00\x01", "sm_90") == reference_key(b"ir text", b"\x00\x01", b"sm_90")
    assert make_key() == hashlib.sha256(b"").hexdigest()


def test_make_key_separates_part_boundaries_and_is_unicode_safe() -> None:
    assert make_key("ab", "c") != make_key("a", "bc")
    assert make_key("ab", "") != make_key("ab")
    assert make_key("é") == reference_key("é".encode())
    assert len(make_key("x")) == 64
    assert all(char in "0123456789abcdef" for char in make_key("x"))


def test_cache_dir_follows_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "a" / "b"
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(target))
    assert cache_dir() == target
    assert target.is_dir()  # created on demand
    default_cache = DiskCache()
    assert default_cache.root == target
    default_cache.store("k", SUFFIX, b"payload")
    assert (target / f"k{SUFFIX}").read_bytes() == b"payload"


def test_cache_dir_defaults_to_home_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FKLIR_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cache_dir() == tmp_path / ".cache" / "fklir"
    assert (tmp_path / ".cache" / "fklir").is_dir()


@pytest.mark.parametrize("key", ["", "../escape", "a/b", ".hidden", "nul\0"])
def test_keys_that_could_leave_the_folder_are_refused(cache: DiskCache, key: str) -> None:
    with pytest.raises(ValueError, match="invalid key"):
        cache.store(key, SUFFIX, b"x")


# ----- store / load ----------------------------------------------------------------------------------


def test_store_then_load_round_trips_and_writes_the_sidecar(cache: DiskCache) -> None:
    key = make_key("round trip")
    payload = deterministic_payload(10_001)
    path = cache.store(key, SUFFIX, payload)
    assert path == cache.path_for(key, SUFFIX) == cache.root / f"{key}{SUFFIX}"
    assert cache.load(key, SUFFIX) == payload
    sidecar = (cache.root / f"{key}{SUFFIX}.sha256").read_text().split()
    assert sidecar == [hashlib.sha256(payload).hexdigest(), str(len(payload))]
    assert cache.load_path(key, SUFFIX) == path
    assert not [name for name in os.listdir(cache.root) if name.startswith(".tmp-")]


def test_missing_entry_loads_as_none(cache: DiskCache) -> None:
    assert cache.load("absent", SUFFIX) is None
    assert cache.load_path("absent", SUFFIX) is None


def test_suffixes_are_separate_entries(cache: DiskCache) -> None:
    cache.store("k", ".cubin", b"gpu")
    cache.store("k", ".so", b"cpu")
    assert cache.load("k", ".cubin") == b"gpu"
    assert cache.load("k", ".so") == b"cpu"


def test_empty_payload_is_a_valid_entry(cache: DiskCache) -> None:
    cache.store("empty", SUFFIX, b"")
    assert cache.load("empty", SUFFIX) == b""


def _corrupt_truncate(payload_path: Path, sidecar_path: Path) -> None:
    payload_path.write_bytes(payload_path.read_bytes()[:-1])


def _corrupt_garble(payload_path: Path, sidecar_path: Path) -> None:
    data = bytearray(payload_path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same length, different content
    payload_path.write_bytes(bytes(data))


def _corrupt_remove_sidecar(payload_path: Path, sidecar_path: Path) -> None:
    sidecar_path.unlink()


def _corrupt_garble_sidecar(payload_path: Path, sidecar_path: Path) -> None:
    sidecar_path.write_bytes(b"\xff\xfe not a digest")


def _corrupt_remove_payload(payload_path: Path, sidecar_path: Path) -> None:
    payload_path.unlink()


def _corrupt_empty_payload(payload_path: Path, sidecar_path: Path) -> None:
    payload_path.write_bytes(b"")


def _corrupt_power_loss_payload(payload_path: Path, sidecar_path: Path) -> None:
    # nothing is fsynced: after a power loss a renamed file can keep its length but not its bytes
    payload_path.write_bytes(bytes(len(payload_path.read_bytes())))


def _corrupt_power_loss_sidecar(payload_path: Path, sidecar_path: Path) -> None:
    sidecar_path.write_bytes(bytes(len(sidecar_path.read_bytes())))


Corruption = Callable[[Path, Path], None]

CORRUPTIONS: list[Corruption] = [
    _corrupt_truncate,
    _corrupt_garble,
    _corrupt_remove_sidecar,
    _corrupt_garble_sidecar,
    _corrupt_remove_payload,
    _corrupt_empty_payload,
    _corrupt_power_loss_payload,
    _corrupt_power_loss_sidecar,
]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda function: function.__name__)
def test_broken_entry_is_deleted_and_never_returned(cache: DiskCache, corrupt: Corruption) -> None:
    key = make_key("broken")
    payload = deterministic_payload(4096)
    cache.store(key, SUFFIX, payload)
    payload_path = cache.path_for(key, SUFFIX)
    sidecar_path = cache.root / f"{key}{SUFFIX}.sha256"
    corrupt(payload_path, sidecar_path)

    assert cache.load(key, SUFFIX) is None
    assert not payload_path.exists()
    assert not sidecar_path.exists()
    assert cache.load_path(key, SUFFIX) is None


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda function: function.__name__)
def test_broken_entry_is_rebuilt_by_build_or_load(cache: DiskCache, corrupt: Corruption) -> None:
    key = make_key("rebuild")
    payload = deterministic_payload(4096)
    cache.store(key, SUFFIX, payload)
    corrupt(cache.path_for(key, SUFFIX), cache.root / f"{key}{SUFFIX}.sha256")

    calls, build = counting_build(payload)
    assert cache.build_or_load(key, SUFFIX, build) == payload
    assert len(calls) == 1
    assert cache.load(key, SUFFIX) == payload


def test_build_or_load_builds_once_then_loads(cache: DiskCache) -> None:
    payload = deterministic_payload(777)
    calls, build = counting_build(payload)
    assert cache.build_or_load("once", SUFFIX, build) == payload
    assert cache.build_or_load("once", SUFFIX, build) == payload
    assert DiskCache(cache.root).build_or_load("once", SUFFIX, build) == payload
    assert len(calls) == 1


def test_build_or_load_path_returns_a_verified_file(cache: DiskCache) -> None:
    payload = deterministic_payload(2048)
    calls, build = counting_build(payload)
    path = cache.build_or_load_path("lib", ".so", build)
    assert path == cache.path_for("lib", ".so")
    assert path.read_bytes() == payload
    _corrupt_truncate(path, path)
    rebuilt = cache.build_or_load_path("lib", ".so", build)
    assert rebuilt.read_bytes() == payload
    assert len(calls) == 2


def test_failed_build_stores_nothing_and_the_next_call_retries(cache: DiskCache) -> None:
    def failing_build() -> bytes:
        raise RuntimeError("compiler exploded")

    with pytest.raises(RuntimeError, match="compiler exploded"):
        cache.build_or_load("flaky", SUFFIX, failing_build)
    assert cache.load("flaky", SUFFIX) is None
    assert cache.entries() == []
    assert cache.build_or_load("flaky", SUFFIX, lambda: b"fine") == b"fine"


def test_discard_deletes_a_verified_entry_so_that_it_is_rebuilt(cache: DiskCache) -> None:
    cache.store("k", SUFFIX, b"refused by the driver")
    cache.discard("k", SUFFIX)
    assert cache.load("k", SUFFIX) is None
    assert not cache.path_for("k", SUFFIX).exists()
    calls, build = counting_build(b"fresh")
    assert cache.build_or_load("k", SUFFIX, build) == b"fresh" and len(calls) == 1
    cache.discard("absent", SUFFIX)  # nothing there: no error
    with pytest.raises(ValueError, match="invalid key"):
        cache.discard("../k", SUFFIX)


# ----- listing and clearing --------------------------------------------------------------------------


def test_entries_lists_payloads_with_sizes_only(cache: DiskCache) -> None:
    cache.store("b", ".so", b"12345")
    cache.store("a", ".cubin", b"xyz")
    cache.build_or_load("c", ".cubin", lambda: b"")  # also creates a lock file
    assert cache.entries() == [
        (cache.root / "a.cubin", 3),
        (cache.root / "b.so", 5),
        (cache.root / "c.cubin", 0),
    ]


def test_clear_removes_entries_sidecars_locks_and_leftovers(cache: DiskCache) -> None:
    cache.store("a", ".cubin", b"xyz")
    cache.build_or_load("b", ".so", lambda: b"lib")
    (cache.root / ".tmp-a.cubin.abandoned").write_bytes(b"half")
    (cache.root / "build" / "k").mkdir(parents=True)
    (cache.root / "build" / "k" / "kernel.cu").write_text("// kept source of a failed compile")

    cache.clear()
    assert sorted(path.name for path in cache.root.iterdir()) == ["build", "locks"]  # both kept, empty
    assert list((cache.root / "build").iterdir()) == [] and list((cache.root / "locks").iterdir()) == []
    assert cache.entries() == []
    assert cache.load("a", ".cubin") is None
    assert cache.build_or_load("b", ".so", lambda: b"lib2") == b"lib2"  # usable after clear


# ----- several processes -----------------------------------------------------------------------------
# Workers are fresh interpreters (not fork()ed copies of a possibly multi-threaded test process) that load
# cache.py straight from its file, so they need neither the installed package nor its dependencies.

CONCURRENT_PAYLOAD_SIZE = 3_000_017

WORKER_SCRIPT = """
import hashlib, importlib.util, os, sys, time
from pathlib import Path

cache_file, root, key, counter, ready, go, mode = sys.argv[1:8]
spec = importlib.util.spec_from_file_location("fklir_cache_under_test", cache_file)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)

def build():
    with open(counter, "a") as stream:
        stream.write(f"{os.getpid()}\\n")
    if mode == "die":
        Path(go).touch()  # tell the test that the lock is held, then hang until killed
        time.sleep(600)
    time.sleep(0.5)  # long enough that every other worker arrives while this one builds
    return hashlib.shake_256((42).to_bytes(4, "little")).digest(int(mode))

Path(ready).touch()
while mode != "die" and not Path(go).exists():
    time.sleep(0.001)
payload = module.DiskCache(Path(root)).build_or_load(key, ".cubin", build)
print(len(payload), hashlib.sha256(payload).hexdigest())
"""


def start_worker(tmp_path: Path, root: Path, key: str, index: int, mode: str) -> subprocess.Popen[str]:
    import fklir.backend.cache as cache_module

    arguments = [
        str(Path(cache_module.__file__)),
        str(root),
        key,
        str(tmp_path / "builds.txt"),
        str(tmp_path / f"ready-{index}"),
        str(tmp_path / "go"),
        mode,
    ]
    return subprocess.Popen(
        [sys.executable, "-c", WORKER_SCRIPT, *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"timed out waiting for {path}"
        time.sleep(0.005)


def test_concurrent_builders_build_once_and_all_get_the_full_payload(tmp_path: Path) -> None:
    root = tmp_path / "shared-cache"
    key = make_key("concurrent")
    workers = [start_worker(tmp_path, root, key, index, str(CONCURRENT_PAYLOAD_SIZE)) for index in range(4)]
    for index in range(4):
        wait_for(tmp_path / f"ready-{index}")
    (tmp_path / "go").touch()  # release all four at once
    outputs = []
    for worker in workers:
        stdout, stderr = worker.communicate(timeout=60)
        assert worker.returncode == 0, stderr
        outputs.append(stdout.split())

    expected = deterministic_payload(CONCURRENT_PAYLOAD_SIZE, seed=42)
    assert outputs == [[str(len(expected)), hashlib.sha256(expected).hexdigest()]] * 4
    assert len((tmp_path / "builds.txt").read_text().splitlines()) == 1
    assert DiskCache(root).load(key, SUFFIX) == expected


def test_a_builder_that_dies_releases_its_lock(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    doomed = start_worker(tmp_path, root, "k", 0, "die")
    try:
        wait_for(tmp_path / "go")  # the worker is inside build(), holding the entry's lock
    finally:
        doomed.kill()
        doomed.communicate(timeout=30)

    start = time.monotonic()
    assert DiskCache(root).build_or_load("k", SUFFIX, lambda: b"rebuilt") == b"rebuilt"
    assert time.monotonic() - start < 10
    assert DiskCache(root).load("k", SUFFIX) == b"rebuilt"


# ----- end to end through compose (CPU target) -------------------------------------------------------
# Fresh processes (spawn or a new interpreter), so that no in-process table of loaded kernels can hide what
# the disk cache does; the cache folder is a new one per test, so every chain is new to it.

IMAGE_SHAPE = (33, 17, 3)


def chain_image() -> np.ndarray[Any, Any]:
    values = np.random.default_rng(33).standard_normal(IMAGE_SHAPE) * 100
    image = values.astype(np.float32)
    image.flat[:4] = [0.5, -2.5, np.nan, np.inf]
    return image


def adds_reference(image: np.ndarray[Any, Any], adds: list[float]) -> np.ndarray[Any, Any]:
    """SPEC: each Add on float32 rounds to float32 (no fusion into one rounding)."""
    value = image.copy()
    for addend in adds:
        value = (value + np.float32(addend)).astype(np.float32)
    return value


def fresh_adds(seed: int) -> list[float]:
    """A structure no other test uses: a random number (5..12) of Add ops with random values."""
    rng = np.random.default_rng(seed)
    return [round(float(v), 3) for v in rng.uniform(-4, 4, size=int(rng.integers(5, 13)))]


def compose_and_run_worker(cache_root: str, adds: list[float], barrier: Any, results: Any) -> None:
    """One spawned process: compose the chain, wait for the others, then make the first call (it builds)."""
    os.environ["FKLIR_CACHE_DIR"] = cache_root
    import fklir as fkl
    from fklir.backend.build import STATS

    pipe = fkl.compose(fkl.TensorRead(), *(fkl.Add(v) for v in adds), fkl.TensorWrite(), target="cpu")
    image = chain_image()
    barrier.wait(timeout=300)
    out = pipe(image)
    results.put((os.getpid(), STATS.compiles, STATS.disk_hits, out))


@pytest.mark.skipif(shutil.which(find_cxx()) is None, reason="needs the host C++ compiler")
def test_four_processes_composing_one_new_chain_compile_it_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "shared-cache"
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(root))
    adds = fresh_adds(int.from_bytes(os.urandom(4), "little"))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(4)
    results = context.Queue()
    workers = [
        context.Process(target=compose_and_run_worker, args=(str(root), adds, barrier, results)) for _ in range(4)
    ]
    for worker in workers:
        worker.start()
    try:
        reports = [results.get(timeout=300) for _ in workers]
    finally:
        for worker in workers:
            worker.join(timeout=60)
            if worker.is_alive():
                worker.kill()
    assert all(worker.exitcode == 0 for worker in workers)

    expected = adds_reference(chain_image(), adds)
    assert len({pid for pid, *_ in reports}) == 4
    for _pid, _compiles, _hits, out in reports:
        np.testing.assert_array_equal(out, expected)
    assert sum(compiles for _pid, compiles, _hits, _out in reports) == 1
    assert sum(hits for _pid, _compiles, hits, _out in reports) == 3  # the others waited, then loaded it
    libraries = [path for path, _size in DiskCache(root).entries() if path.suffix == ".so"]
    assert len(libraries) == 1


CHILD_SCRIPT = """
import json, sys
import numpy as np
import fklir as fkl
from fklir.backend.build import STATS
from tests.unit.test_cache import chain_image

adds = json.loads(sys.argv[1])
pipe = fkl.compose(fkl.TensorRead(), *(fkl.Add(v) for v in adds), fkl.TensorWrite(), target="cpu")
np.save(sys.argv[2], pipe(chain_image()))
print(json.dumps({"compiles": STATS.compiles, "disk_hits": STATS.disk_hits}))
"""


def run_chain_in_fresh_process(root: Path, adds: list[float], output: Path) -> dict[str, int]:
    environment = {**os.environ, "FKLIR_CACHE_DIR": str(root)}
    repository = Path(__file__).resolve().parents[2]
    completed = subprocess.run(
        [sys.executable, "-c", CHILD_SCRIPT, json.dumps(adds), str(output)],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
        cwd=repository,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    report: dict[str, int] = json.loads(completed.stdout.strip().splitlines()[-1])
    return report


def _truncate_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _garbage_same_length(path: Path) -> None:
    path.write_bytes(deterministic_payload(path.stat().st_size, seed=99))


@pytest.mark.skipif(shutil.which(find_cxx()) is None, reason="needs the host C++ compiler")
@pytest.mark.parametrize("corrupt", [_truncate_half, _garbage_same_length], ids=["truncated", "garbage"])
def test_a_broken_shared_library_is_detected_and_rebuilt_end_to_end(
    tmp_path: Path, corrupt: Callable[[Path], None]
) -> None:
    root = tmp_path / "cache"
    adds = fresh_adds(len(corrupt.__name__))
    expected = adds_reference(chain_image(), adds)

    assert run_chain_in_fresh_process(root, adds, tmp_path / "first.npy") == {"compiles": 1, "disk_hits": 0}
    np.testing.assert_array_equal(np.load(tmp_path / "first.npy"), expected)
    ((library, _size),) = [entry for entry in DiskCache(root).entries() if entry[0].suffix == ".so"]
    good = library.read_bytes()
    corrupt(library)
    assert library.read_bytes() != good

    assert run_chain_in_fresh_process(root, adds, tmp_path / "rebuilt.npy") == {"compiles": 1, "disk_hits": 0}
    np.testing.assert_array_equal(np.load(tmp_path / "rebuilt.npy"), expected)
    assert DiskCache(root).load(library.stem, library.suffix) is not None  # rebuilt and verified

    assert run_chain_in_fresh_process(root, adds, tmp_path / "loaded.npy") == {"compiles": 0, "disk_hits": 1}
    np.testing.assert_array_equal(np.load(tmp_path / "loaded.npy"), expected)


# ----- what the kernel key covers --------------------------------------------------------------------


def clear_build_caches() -> None:
    """Forget what build.py memoises per process (e.g. the header hash), so that patched inputs are seen."""
    from fklir.backend import build

    for value in vars(build).values():
        clear = getattr(value, "cache_clear", None)
        if callable(clear) and getattr(value, "__module__", None) == build.__name__:
            clear()


def patched_key(monkeypatch: pytest.MonkeyPatch, patches: dict[str, Any], target: str, arch: str) -> str:
    import tempfile

    from fklir.backend import build

    with monkeypatch.context() as patch, tempfile.TemporaryDirectory() as fresh_cache:
        # build remembers compiler identities in the disk cache: give the patched run an empty one
        patch.setenv("FKLIR_CACHE_DIR", fresh_cache)
        for name, value in patches.items():
            patch.setattr(compilers, name, value)
        clear_build_caches()
        key = build.kernel_key("structure", target, arch)
    clear_build_caches()
    return key


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_kernel_key_is_deterministic_and_separates_structure_target_and_arch(target: str) -> None:
    from fklir.backend import build

    if target == "gpu" and not compilers.nvcc_available() and not compilers.nvrtc_available():
        pytest.skip("no GPU compiler to identify")
    arch = "sm_90" if target == "gpu" else "host"
    key = build.kernel_key("structure A", target, arch)
    assert len(key) == 64 and key == build.kernel_key("structure A", target, arch)
    assert build.kernel_key("structure B", target, arch) != key
    other_target, other_arch = ("cpu", "host") if target == "gpu" else ("gpu", "sm_90")
    if other_target == "cpu" or compilers.nvcc_available() or compilers.nvrtc_available():
        assert build.kernel_key("structure A", other_target, other_arch) != key
    if target == "gpu":
        assert build.kernel_key("structure A", target, "sm_80") != key


@pytest.mark.parametrize("target", ["cpu", "gpu"])
def test_kernel_key_changes_with_headers_compiler_and_flags(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from fklir.backend import build

    if target == "gpu" and not compilers.nvcc_available() and not compilers.nvrtc_available():
        pytest.skip("no GPU compiler to identify")
    arch = "sm_90" if target == "gpu" else "host"
    clear_build_caches()
    base = build.kernel_key("structure", target, arch)
    headers = patched_key(monkeypatch, {"cpp_file_hash": lambda include_dir: "0" * 64}, target, arch)
    compiler = patched_key(
        monkeypatch,
        {
            "compiler_identity": lambda compiler: "g++ (GCC) 99.1.0 / nvcc release 99.0",
            "nvrtc_identity": lambda: "NVRTC 99.0",
        },
        target,
        arch,
    )
    flags = patched_key(
        monkeypatch,
        {name: (*getattr(compilers, name), "-DFKLIR_KEY_TEST") for name in ("GXX_FLAGS", "NVCC_FLAGS", "NVRTC_FLAGS")},
        target,
        arch,
    )
    assert headers != base, "an op-header change must give a new key"
    assert compiler != base, "a compiler change must give a new key"
    assert flags != base, "a flag change must give a new key"
    assert len({base, headers, compiler, flags}) == 4
    assert build.kernel_key("structure", target, arch) == base  # everything restored
