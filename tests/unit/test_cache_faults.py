"""Cache faults heal, never reach the user: (a) load failures on the plan path, (b) read-only caches, (c) clearing
while other processes compile, (d) a folder where an entry file should be, (e) a cache path at or below a file,
(f) LRU eviction above FKLIR_CACHE_MAX_BYTES."""

from __future__ import annotations

import hashlib
import json
import logging
import marshal
import os
import shutil
import stat
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build
from fklir.backend import cache as cache_module
from fklir.backend.cache import CacheWarning, DiskCache, cache_dir, make_key
from fklir.backend.compilers import find_cxx
from fklir.errors import CacheError, FklirError
from tests.fresh_process import forget_loaded
from tests.unit import test_cache_trust
from tests.unit.test_cache import adds_reference, chain_image, fresh_adds, run_chain_in_fresh_process
from tests.unit.test_cache_trust import REPOSITORY, SUFFIX, needs_cxx

fresh_cache_state = test_cache_trust.fresh_cache_state  # autouse: every test here starts from a fresh state


def plant(folder: Path, name: str, payload: bytes) -> None:
    """Replace an entry with `payload` and a sidecar that matches it (what passes the checksum)."""
    (folder / name).unlink(missing_ok=True)
    (folder / name).write_bytes(payload)
    (folder / f"{name}.sha256").write_text(f"{hashlib.sha256(payload).hexdigest()} {len(payload)}\n")


def only_entry(root: Path, suffix: str) -> Path:
    (path,) = [path for path, _size in DiskCache(root).entries() if path.name.endswith(suffix)]
    return path


def adds_pipe(adds: list[float]) -> Any:
    return fkl.compose(fkl.TensorRead(), *(fkl.Add(v) for v in adds), fkl.TensorWrite(), target="cpu")


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under `root` with its content (modification times aside: a read touches them, best effort)."""
    return {str(path.relative_to(root)): path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


# ----- (a) every load failure on the plan path drops the entry and rebuilds --------------------------------


def _garbage_library(root: Path, plan: Path) -> None:
    plant(root, only_entry(root, ".so").name, hashlib.shake_256(b"garbage").digest(5000))


def _empty_library(root: Path, plan: Path) -> None:
    plant(root, only_entry(root, ".so").name, b"")


def _garbage_plan(root: Path, plan: Path) -> None:
    plant(root, plan.name, b"\x00{not marshal data")


def _plan_of_wrong_shape(root: Path, plan: Path) -> None:
    plant(root, plan.name, b'{"kernel": 3, "layout": [], "values": null}')


def _plan_with_unknown_layout(root: Path, plan: Path) -> None:
    entry = marshal.loads(plan.read_bytes())
    entry["layout"]["no_such_field"] = 1
    plant(root, plan.name, marshal.dumps(entry))


def _plan_of_an_old_kernel_mode(root: Path, plan: Path) -> None:
    """A record written when the mode of a sampled kernel was called "pixel" (or of any other codegen)."""
    entry = marshal.loads(plan.read_bytes())
    entry["layout"]["mode"] = "pixel"
    plant(root, plan.name, marshal.dumps(entry))


def _plan_of_a_missing_kernel(root: Path, plan: Path) -> None:
    entry = marshal.loads(plan.read_bytes())
    entry["kernel"] = make_key("no such kernel")
    plant(root, plan.name, marshal.dumps(entry))


def _plan_as_a_list(root: Path, plan: Path) -> None:
    plant(root, plan.name, marshal.dumps([1, 2, 3]))


def _cut_plan(root: Path, plan: Path) -> None:
    plant(root, plan.name, plan.read_bytes()[:-7])  # marshal.loads: EOFError


PLAN_PATH_FAULTS = [
    (_garbage_library, 1),
    (_empty_library, 1),
    (_garbage_plan, 0),
    (_plan_of_wrong_shape, 0),
    (_plan_with_unknown_layout, 0),
    (_plan_of_an_old_kernel_mode, 0),
    (_plan_of_a_missing_kernel, 0),
    (_plan_as_a_list, 0),
    (_cut_plan, 0),
]


@needs_cxx
@pytest.mark.parametrize(("fault", "compiles"), PLAN_PATH_FAULTS, ids=[f.__name__ for f, _ in PLAN_PATH_FAULTS])
def test_a_plan_path_entry_that_fails_to_load_is_dropped_and_rebuilt(
    tmp_path: Path, fault: Callable[[Path, Path], None], compiles: int
) -> None:
    root = tmp_path / "cache"
    adds = fresh_adds(len(fault.__name__) * 31 + compiles)
    expected = adds_reference(chain_image(), adds)
    assert run_chain_in_fresh_process(root, adds, tmp_path / "first.npy")["compiles"] == 1

    fault(root, only_entry(root, ".plan"))
    report = run_chain_in_fresh_process(root, adds, tmp_path / "healed.npy")
    assert report["compiles"] == compiles  # a broken library is compiled again; a broken plan only re-recorded
    np.testing.assert_array_equal(np.load(tmp_path / "healed.npy"), expected)

    assert run_chain_in_fresh_process(root, adds, tmp_path / "again.npy") == {"compiles": 0, "disk_hits": 1}
    np.testing.assert_array_equal(np.load(tmp_path / "again.npy"), expected)


# ----- (b) a read-only cache ---------------------------------------------------------------------------------


def make_read_only(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mode 555 (real for a normal user) and os.access saying so (root can write through any mode)."""
    for folder in [root, *(path for path in root.rglob("*") if path.is_dir())]:
        folder.chmod(0o555)
    real_access = os.access

    def access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        inside = str(os.path.abspath(path)).startswith(str(root))
        return False if inside and mode & os.W_OK else real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)


@needs_cxx
def test_a_read_only_cache_serves_its_kernels_and_compiles_new_ones_privately(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cache_state: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(root))
    adds = fresh_adds(8080)
    image = chain_image()
    np.testing.assert_array_equal(adds_pipe(adds)(image), adds_reference(image, adds))
    forget_loaded(monkeypatch)
    make_read_only(root, monkeypatch)
    before = snapshot(root)
    compiles = build.STATS.compiles
    try:
        new_values = [value + 1.25 for value in adds]
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # nothing to compile: no warning, no write, no lock
            out = adds_pipe(new_values)(image)
        np.testing.assert_array_equal(out, adds_reference(image, new_values))
        assert build.STATS.compiles == compiles
        assert snapshot(root) == before

        other = [*adds, 0.5]  # a new structure: compiled into the private folder, with one warning
        with warnings.catch_warnings(record=True) as record, caplog.at_level(logging.INFO, logger="fklir"):
            warnings.simplefilter("always")
            out = adds_pipe(other)(image)
            adds_pipe([*other, 1.0])(image)
        (warning,) = [warning for warning in record if warning.category is CacheWarning]
        assert f"{root} is read-only" in str(warning.message)
        np.testing.assert_array_equal(out, adds_reference(image, other))
        assert build.STATS.compiles == compiles + 2
        assert snapshot(root) == before
        private = cache_module.private_dir()
        assert private.parent == fresh_cache_state
        compiled = [record.getMessage() for record in caplog.records if "compiled" in record.getMessage()]
        assert len(compiled) == 2 and all(str(private) in line for line in compiled)  # the log says where it went
        assert len([path for path, _size in DiskCache(private).entries() if path.suffix == ".so"]) == 2

        forget_loaded(monkeypatch)  # the private copy is found next time
        np.testing.assert_array_equal(adds_pipe(other)(image), adds_reference(image, other))
        assert build.STATS.compiles == compiles + 2
    finally:
        for folder in [root, *(path for path in root.rglob("*") if path.is_dir())]:
            folder.chmod(0o700)


def test_an_unloadable_library_of_a_read_only_cache_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cache_state: Path
) -> None:
    cache = DiskCache(tmp_path / "cache")
    key = make_key("unloadable")
    garbage = b"\x7fELF garbage whose checksum matches"
    plant(cache.root, f"{key}{SUFFIX}", garbage)
    make_read_only(cache.root, monkeypatch)

    def dlopen(path: Path) -> bytes:
        if path.read_bytes() == garbage:
            raise OSError(f"{path}: invalid ELF header")
        return path.read_bytes()

    try:
        with pytest.raises(OSError, match="invalid ELF header"):
            cache.build_or_open(key, SUFFIX, lambda: b"must not build yet", dlopen)
        cache.discard(key, SUFFIX)  # what build.py does with an entry that does not load
        with pytest.warns(CacheWarning, match="read-only"):
            assert cache.build_or_open(key, SUFFIX, lambda: b"rebuilt", dlopen) == b"rebuilt"
        assert cache.load_path(key, SUFFIX) == cache_module.private_dir() / f"{key}{SUFFIX}"
        assert (cache.root / f"{key}{SUFFIX}").read_bytes() == garbage  # a read-only copy stays as it is
    finally:
        cache.root.chmod(0o700)


@needs_cxx
def test_an_unloadable_plan_of_a_read_only_cache_is_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(root))
    adds = fresh_adds(6060)
    image = chain_image()
    adds_pipe(adds)(image)
    forget_loaded(monkeypatch)
    plant(root, only_entry(root, ".plan").name, b"\x7fELF garbage whose checksum matches")
    make_read_only(root, monkeypatch)
    before = snapshot(root)
    compiles = build.STATS.compiles
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CacheWarning)
            for _call in range(2):  # the second pipeline finds what the first one made
                np.testing.assert_array_equal(adds_pipe(adds)(image), adds_reference(image, adds))
                forget_loaded(monkeypatch)
        assert build.STATS.compiles == compiles
        assert snapshot(root) == before
    finally:
        for folder in [root, *(path for path in root.rglob("*") if path.is_dir())]:
            folder.chmod(0o700)


def test_a_read_only_cache_reads_a_valid_entry_without_a_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = DiskCache(tmp_path / "cache")
    key = make_key("read only")
    cache.store(key, SUFFIX, b"kernel")
    shutil.rmtree(cache.root / "locks")
    make_read_only(cache.root, monkeypatch)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert DiskCache(cache.root).load(key, SUFFIX) == b"kernel"
            assert DiskCache(cache.root).build_or_load(key, SUFFIX, lambda: b"must not build") == b"kernel"
        assert not (cache.root / "locks").exists()
    finally:
        cache.root.chmod(0o700)


# ----- (c) clear() never breaks a compile in flight ---------------------------------------------------------

SLOW_COMPILER = """#!/bin/sh
case " $* " in *" --version "*) exec {cxx} "$@";; esac
touch "{marker}"
sleep 1.5
exec {cxx} "$@"
"""


@needs_cxx
def test_clearing_while_other_processes_compile_breaks_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(root))
    markers = [tmp_path / f"compiling-{index}" for index in range(2)]
    launched = []
    for index, marker in enumerate(markers):
        script = tmp_path / f"slow-g++-{index}"
        script.write_text(SLOW_COMPILER.format(cxx=shutil.which(find_cxx()), marker=marker))
        script.chmod(0o755)
        adds = fresh_adds(4000 + index)
        environment = {**os.environ, "FKLIR_CXX": str(script)}
        launched.append((adds, _start_chain(root, adds, tmp_path / f"out-{index}.npy", environment)))

    deadline = time.monotonic() + 300
    while not all(marker.exists() for marker in markers):
        assert time.monotonic() < deadline, "the compiles never started"
        assert all(process.poll() is None for _adds, process in launched), "a child ended before compiling"
        time.sleep(0.01)
    clears = 0
    while any(process.poll() is None for _adds, process in launched):
        fkl.clear_cache()  # again and again while g++ runs
        clears += 1
        time.sleep(0.02)
    assert clears > 10

    for index, (adds, process) in enumerate(launched):
        stdout, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
        assert json.loads(stdout.strip().splitlines()[-1])["compiles"] == 1
        np.testing.assert_array_equal(np.load(tmp_path / f"out-{index}.npy"), adds_reference(chain_image(), adds))
    DiskCache(root).clear()  # nobody compiles now: everything goes
    assert DiskCache(root).entries() == []
    assert list((root / "build").iterdir()) == [] and list((root / "locks").iterdir()) == []


def _start_chain(root: Path, adds: list[float], output: Path, environment: dict[str, str]) -> subprocess.Popen[str]:
    from tests.unit.test_cache import CHILD_SCRIPT

    return subprocess.Popen(
        [sys.executable, "-c", CHILD_SCRIPT, json.dumps(adds), str(output)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**environment, "FKLIR_CACHE_DIR": str(root)},
        cwd=REPOSITORY,
    )


def test_clear_keeps_a_locked_entry_and_a_busy_compile_folder(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    busy, idle = make_key("busy"), make_key("idle")
    cache.store(busy, SUFFIX, b"being replaced")
    cache.store(idle, SUFFIX, b"unused")
    with cache.work_dir("compiling-") as workdir, cache._locked(cache.root, f"{busy}{SUFFIX}"):  # pyright: ignore[reportPrivateUsage]
        (workdir / "kernel.cpp").write_text("// the compiler reads this now")
        (cache.root / f".tmp-{busy}{SUFFIX}.abc123").write_bytes(b"half written")
        cache.clear()
        assert workdir.is_dir() and (workdir / "kernel.cpp").exists()
        assert cache.load(busy, SUFFIX) == b"being replaced"
        assert (cache.root / f".tmp-{busy}{SUFFIX}.abc123").exists()
        assert cache.load(idle, SUFFIX) is None
    assert not workdir.exists()  # the compile finished: its folder went with it
    cache.clear()
    assert cache.entries() == [] and not [p for p in cache.root.iterdir() if p.name.startswith(".tmp-")]


def test_a_failed_compile_keeps_its_folder_until_clear(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "cache")
    kept: list[Path] = []

    def failing_compile() -> None:
        with cache.work_dir("failing-") as workdir:
            kept.append(workdir)
            (workdir / "kernel.cpp").write_text("// kept for the error message")
            raise RuntimeError("compiler failed")

    with pytest.raises(RuntimeError, match="compiler failed"):
        failing_compile()
    (workdir,) = kept
    assert (workdir / "kernel.cpp").exists()
    cache.clear()
    assert not workdir.exists()


# ----- (d) a folder where a file should be -------------------------------------------------------------------


def _folder_at(path: Path) -> None:
    path.unlink(missing_ok=True)
    (path / "inner").mkdir(parents=True)
    (path / "inner" / "file").write_bytes(b"x")


@pytest.mark.parametrize("where", ["payload", "sidecar", "lock file", "lock folder", "build folder"])
def test_anything_in_the_place_of_a_cache_file_or_folder_is_healed(tmp_path: Path, where: str) -> None:
    cache = DiskCache(tmp_path / "cache")
    key = make_key(where)
    cache.store(key, SUFFIX, b"old")
    in_place_of = {
        "payload": cache.root / f"{key}{SUFFIX}",
        "sidecar": cache.root / f"{key}{SUFFIX}.sha256",
        "lock file": cache.root / "locks" / f"{key}{SUFFIX}.lock",
    }
    if where in in_place_of:
        _folder_at(in_place_of[where])
    else:
        folder = cache.root / {"lock folder": "locks", "build folder": "build"}[where]
        shutil.rmtree(folder, ignore_errors=True)
        folder.write_bytes(b"a file where a folder should be")

    for attempt in range(2):  # healed the first time, not an error forever
        if where in ("payload", "sidecar") and attempt == 0:
            assert cache.load(key, SUFFIX) is None
            assert cache.build_or_load(key, SUFFIX, lambda: b"rebuilt") == b"rebuilt"
        else:
            cache.store(key, SUFFIX, b"stored")  # takes the entry's lock
            assert cache.load(key, SUFFIX) == b"stored"
        with cache.work_dir("probe-") as workdir:
            assert workdir.parent == cache.root / "build"
    cache.clear()
    assert cache.entries() == []
    assert sorted(path.name for path in cache.root.iterdir()) == ["build", "locks"]


@needs_cxx
def test_a_folder_in_place_of_the_library_is_healed_end_to_end(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    adds = fresh_adds(1717)
    assert run_chain_in_fresh_process(root, adds, tmp_path / "first.npy")["compiles"] == 1
    _folder_at(only_entry(root, ".so"))
    assert run_chain_in_fresh_process(root, adds, tmp_path / "healed.npy")["compiles"] == 1
    np.testing.assert_array_equal(np.load(tmp_path / "healed.npy"), adds_reference(chain_image(), adds))
    assert run_chain_in_fresh_process(root, adds, tmp_path / "again.npy") == {"compiles": 0, "disk_hits": 1}


# ----- (e) a cache path at or below a file ---------------------------------------------------------------


@pytest.mark.parametrize("below", ["", "sub", "sub/deeper"])
def test_a_cache_path_at_or_below_a_file_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, below: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    configured = blocker / below if below else blocker
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(configured))
    with pytest.raises(CacheError, match=rf"FKLIR_CACHE_DIR=.*{blocker}.*a file, not a folder") as error:
        cache_dir()
    assert isinstance(error.value, ValueError) and isinstance(error.value, FklirError)
    with pytest.raises(CacheError, match="FKLIR_CACHE_DIR"):
        DiskCache()
    pipe = adds_pipe(fresh_adds(99))
    with pytest.raises(ValueError, match="FKLIR_CACHE_DIR"):
        pipe(chain_image())
    assert blocker.read_text() == "not a folder"


def test_a_default_cache_path_below_a_file_names_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FKLIR_CACHE_DIR", raising=False)
    (tmp_path / ".cache").write_text("a file")
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(CacheError, match=r"default cache folder .*set FKLIR_CACHE_DIR"):
        cache_dir()


def test_an_uncreatable_cache_folder_falls_back_to_the_private_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_cache_state: Path
) -> None:
    root = tmp_path / "cache"
    real_mkdir = Path.mkdir

    def refuse(self: Path, *args: Any, **kwargs: Any) -> None:
        if self == root:
            raise PermissionError(13, "Permission denied", str(self))
        real_mkdir(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", refuse)
    with pytest.warns(CacheWarning, match=f"{root} cannot be created"):
        cache = DiskCache(root)
    assert cache.root.parent == fresh_cache_state
    assert cache.build_or_load("k", SUFFIX, lambda: b"ok") == b"ok"


# ----- (f) LRU eviction ---------------------------------------------------------------------------------


def fill(cache: DiskCache, sizes: list[int]) -> list[str]:
    """Keys whose entries (a kernel with a metadata entry) were last used 1000 s apart, oldest first."""
    keys = []
    now = time.time()
    for index, size in enumerate(sizes):
        key = make_key("lru", str(index))
        cache.store(key, SUFFIX, bytes(size))
        cache.store(key, ".meta.json", b"{}")
        for suffix in (SUFFIX, ".meta.json"):
            used = now - 1000 * (len(sizes) - index)
            os.utime(cache.path_for(key, suffix), (used, used))
        keys.append(key)
    return keys


def group_total(cache: DiskCache) -> int:
    return sum(group.size for group in cache.groups())


def test_eviction_removes_least_recently_used_keys_until_the_total_fits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = DiskCache(tmp_path / "cache")
    keys = fill(cache, [1000, 3000, 500, 2000])
    group_sizes = {group.key: group.size for group in cache.groups()}
    assert cache.load(keys[0], SUFFIX) == bytes(1000)  # a use: now the most recent
    limit = group_total(cache) + 4000 + 200 - group_sizes[keys[1]] - group_sizes[keys[2]] + 50
    monkeypatch.setenv("FKLIR_CACHE_MAX_BYTES", str(limit))

    new = make_key("new kernel")
    cache.build_or_load(new, SUFFIX, lambda: bytes(4000))
    remaining = {group.key for group in cache.groups()}
    assert remaining == {keys[0], keys[3], new}  # keys[1] and keys[2] were the least recently used
    assert group_total(cache) <= limit
    assert cache.load(keys[1], SUFFIX) is None and cache.load(keys[0], SUFFIX) == bytes(1000)
    assert list((cache.root / "locks").iterdir()) == []


def test_eviction_never_removes_a_locked_entry_nor_the_new_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = DiskCache(tmp_path / "cache")
    keys = fill(cache, [100, 200, 300])
    monkeypatch.setenv("FKLIR_CACHE_MAX_BYTES", "0")
    new = make_key("new kernel")
    with cache._locked(cache.root, f"{keys[0]}.meta.json"):  # pyright: ignore[reportPrivateUsage]
        cache.build_or_load(new, SUFFIX, lambda: bytes(5000))
    assert {group.key for group in cache.groups()} == {keys[0], new}
    assert cache.load(new, SUFFIX) == bytes(5000)
    assert cache.evict(cache.root, limit=0) == [keys[0], new]  # nothing in use now: even the newest goes


def test_the_default_limit_keeps_everything_small(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FKLIR_CACHE_MAX_BYTES", raising=False)
    assert cache_module.max_bytes() == 2 << 30
    cache = DiskCache(tmp_path / "cache")
    keys = fill(cache, [10_000, 20_000])
    cache.build_or_load(make_key("third"), SUFFIX, lambda: bytes(30_000))
    assert {group.key for group in cache.groups()} >= set(keys)


@pytest.mark.parametrize("value", ["lots", "1.5e9", "-1", "2GiB"])
def test_a_bad_size_limit_is_a_clear_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("FKLIR_CACHE_MAX_BYTES", value)
    with pytest.raises(CacheError, match=f"FKLIR_CACHE_MAX_BYTES={value!r}"):
        cache_module.max_bytes()


@needs_cxx
def test_compose_evicts_old_kernels_above_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "cache"
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(root))
    monkeypatch.setenv("FKLIR_CACHE_MAX_BYTES", "1")
    image = chain_image()
    first, second = fresh_adds(5150), fresh_adds(5151)
    np.testing.assert_array_equal(adds_pipe(first)(image), adds_reference(image, first))
    (first_library,) = [path for path, _size in DiskCache(root).entries() if path.suffix == ".so"]
    time.sleep(0.01)
    np.testing.assert_array_equal(adds_pipe(second)(image), adds_reference(image, second))
    libraries = [path for path, _size in DiskCache(root).entries() if path.suffix == ".so"]
    assert len(libraries) == 1 and libraries[0] != first_library
    assert not first_library.with_suffix(".source").exists()

    forget_loaded(monkeypatch)
    compiles = build.STATS.compiles
    np.testing.assert_array_equal(adds_pipe(first)(image), adds_reference(image, first))
    assert build.STATS.compiles == compiles + 1  # evicted, so compiled again


def test_modes_stay_private_under_a_permissive_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        cache = DiskCache(tmp_path / "cache")
        cache.build_or_load(make_key("umask"), SUFFIX, lambda: b"x")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(cache.root.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path, _size in cache.entries())
