"""The disk cache trusts a location as ssh trusts ~/.ssh: folders 0700, files 0600, and nothing is loaded from a
folder or entry that another user owns or can write; such a location is refused with one warning naming it
and the fix, and a private folder is used instead. A planted library is never loaded."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

from fklir.backend import cache as cache_module
from fklir.backend.cache import CacheWarning, DiskCache, make_key
from fklir.backend.compilers import find_cxx
from tests.fresh_process import forget_loaded

SUFFIX = ".so"
REPOSITORY = Path(__file__).resolve().parents[2]
needs_cxx = pytest.mark.skipif(shutil.which(find_cxx()) is None, reason="needs the host C++ compiler")


@pytest.fixture(autouse=True)
def fresh_cache_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temp directory of its own (where the private folder goes), no warnings given yet, no kernel loaded."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(cache_module, "_warned", set())
    monkeypatch.setattr(cache_module, "_private", {})
    monkeypatch.setattr(cache_module, "_refused", set())
    forget_loaded(monkeypatch)
    return temp


def plant(folder: Path, key: str, suffix: str, payload: bytes) -> Path:
    """Write an entry whose sidecar matches, as an attacker who can write the folder would."""
    path = folder / f"{key}{suffix}"
    path.write_bytes(payload)
    (folder / f"{key}{suffix}.sha256").write_text(f"{hashlib.sha256(payload).hexdigest()} {len(payload)}\n")
    return path


def fake_owner(monkeypatch: pytest.MonkeyPatch, path: Path, uid: int) -> None:
    """os.stat reports `path` as owned by `uid` (every other path as it is)."""
    real_stat = os.stat

    def stat_as_other_user(target: object, *args: object, **kwargs: object) -> os.stat_result:
        status = real_stat(target, *args, **kwargs)  # pyright: ignore[reportArgumentType, reportCallIssue]
        if isinstance(target, (str, os.PathLike)) and os.path.abspath(target) == str(path):  # pyright: ignore[reportUnknownArgumentType]
            fields = list(status)
            fields[stat.ST_UID] = uid
            return os.stat_result(fields)
        return status

    monkeypatch.setattr(os, "stat", stat_as_other_user)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ----- modes ---------------------------------------------------------------------------------------------


def test_folders_are_created_0700_and_files_0600(tmp_path: Path) -> None:
    cache = DiskCache(tmp_path / "deep" / "cache")
    cache.build_or_load(make_key("modes"), SUFFIX, lambda: b"library bytes")
    cache.store(make_key("plan"), ".plan", b"{}")
    with cache.work_dir("probe-") as workdir:
        assert mode_of(workdir) == 0o700
    assert mode_of(cache.root) == 0o700
    assert mode_of(cache.root / "build") == 0o700
    files = [path for path in cache.root.iterdir() if path.is_file()]
    assert len(files) == 4  # two payloads, two sidecars
    assert all(mode_of(path) == 0o600 for path in files), {path.name: oct(mode_of(path)) for path in files}


def test_an_existing_0755_cache_of_older_versions_stays_trusted(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    key = make_key("old entry")
    plant(root, key, SUFFIX, b"built by an older fklir").chmod(0o644)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert DiskCache(root).load(key, SUFFIX) == b"built by an older fklir"


# ----- refused roots ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "extra_bits", [stat.S_IWGRP, stat.S_IWOTH, stat.S_IWGRP | stat.S_IWOTH], ids=["group", "others", "both"]
)
def test_a_root_others_can_write_is_refused_with_one_warning(
    tmp_path: Path, fresh_cache_state: Path, extra_bits: int
) -> None:
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o700 | extra_bits)
    key = make_key("planted")
    plant(root, key, SUFFIX, b"planted library")

    with pytest.warns(CacheWarning) as record:
        cache = DiskCache(root)
    (warning,) = record
    message = str(warning.message)
    assert str(root) in message and f"chmod 700 '{root}'" in message
    assert cache.root != root and cache.root.parent == fresh_cache_state
    assert mode_of(cache.root) == 0o700
    assert cache.load(key, SUFFIX) is None  # never read from the refused folder
    assert cache.build_or_load(key, SUFFIX, lambda: b"built here") == b"built here"
    assert (root / f"{key}{SUFFIX}").read_bytes() == b"planted library"  # left alone, not used

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per location and process
        assert DiskCache(root).load(key, SUFFIX) == b"built here"


def test_a_root_owned_by_another_user_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "theirs"
    root.mkdir(mode=0o700)
    key = make_key("planted")
    plant(root, key, SUFFIX, b"their library")
    other = os.getuid() + 4242
    fake_owner(monkeypatch, root, other)

    with pytest.warns(CacheWarning, match=f"owned by uid {other}.*chown {os.getuid()} '{root}'"):
        cache = DiskCache(root)
    assert cache.root != root
    assert cache.load(key, SUFFIX) is None


def test_root_owned_folders_are_trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "system"
    root.mkdir(mode=0o755)
    key = make_key("system kernel")
    plant(root, key, SUFFIX, b"installed by root")
    fake_owner(monkeypatch, root, 0)
    monkeypatch.setattr(os, "getuid", lambda: 4243)  # we are someone else; root owns the folder
    real_fstat = os.fstat
    monkeypatch.setattr(os, "fstat", lambda handle: _as_owner(real_fstat(handle), 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert DiskCache(root).load(key, SUFFIX) == b"installed by root"


def _as_owner(status: os.stat_result, uid: int) -> os.stat_result:
    fields = list(status)
    fields[stat.ST_UID] = uid
    return os.stat_result(fields)


def test_a_taken_private_folder_name_gives_a_unique_private_folder(tmp_path: Path, fresh_cache_state: Path) -> None:
    squatted = fresh_cache_state / f"fklir-cache-{os.getuid()}"
    squatted.mkdir()
    squatted.chmod(0o777)  # made first by someone who wants our kernels to land there
    root = tmp_path / "shared"
    root.mkdir()
    root.chmod(0o777)
    with pytest.warns(CacheWarning):
        cache = DiskCache(root)
    assert cache.root not in (root, squatted)
    assert cache.root.parent == fresh_cache_state and cache.root.name.startswith(f"fklir-cache-{os.getuid()}-")
    assert mode_of(cache.root) == 0o700


# ----- refused entries ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666], ids=oct)
def test_an_entry_others_can_write_is_never_loaded_and_is_rebuilt(tmp_path: Path, mode: int) -> None:
    cache = DiskCache(tmp_path / "cache")
    key = make_key("entry")
    plant(cache.root, key, SUFFIX, b"changed by someone else").chmod(mode)
    with pytest.warns(CacheWarning, match="not loading the cached kernel .*chmod 600"):
        assert cache.load(key, SUFFIX) is None
    assert not cache.path_for(key, SUFFIX).exists()  # deleted, so that it is rebuilt
    assert cache.build_or_load(key, SUFFIX, lambda: b"rebuilt") == b"rebuilt"
    assert mode_of(cache.path_for(key, SUFFIX)) == 0o600


def test_an_entry_owned_by_another_user_is_never_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = DiskCache(tmp_path / "cache")
    key = make_key("entry")
    planted = plant(cache.root, key, SUFFIX, b"theirs")
    planted_inode = planted.stat().st_ino
    real_fstat = os.fstat

    def fstat_planted_as_other(handle: int) -> os.stat_result:
        status = real_fstat(handle)
        return _as_owner(status, os.getuid() + 7) if status.st_ino == planted_inode else status

    monkeypatch.setattr(os, "fstat", fstat_planted_as_other)
    with pytest.warns(CacheWarning, match=f"owned by uid {os.getuid() + 7}"):
        assert cache.build_or_load(key, SUFFIX, lambda: b"ours") == b"ours"


# ----- a planted library, end to end ---------------------------------------------------------------------

PLANTED_SOURCE = r"""
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
    FILE* marker = fopen(MARKER, "w");
    if (marker) { fputs("planted code ran", marker); fclose(marker); }
}
extern "C" void fkl_run(void*) {}
"""

CHILD = """
import json, sys, warnings
import numpy as np
import fklir as fkl
from fklir.backend.build import STATS

warnings.simplefilter("always")
image = np.arange(5 * 7 * 3, dtype=np.uint8).reshape(5, 7, 3)
pipe = fkl.compose(fkl.TensorRead(), fkl.Add(3), fkl.Mul(2), fkl.Cast("float32"), fkl.TensorWrite(), target="cpu")
out = pipe(image)
expected = (image.astype(np.float32) + 3) * 2
print(json.dumps({"correct": bool(np.array_equal(out, expected)), "compiles": STATS.compiles}))
"""


def run_child(root: Path, temp: Path) -> tuple[dict[str, object], str]:
    environment = {**os.environ, "FKLIR_CACHE_DIR": str(root), "TMPDIR": str(temp)}
    completed = subprocess.run(
        [sys.executable, "-c", CHILD],
        capture_output=True,
        text=True,
        timeout=600,
        env=environment,
        cwd=REPOSITORY,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.strip().splitlines()[-1]), completed.stderr


@needs_cxx
@pytest.mark.parametrize("where", ["group-writable folder", "group-writable entry"])
def test_a_planted_library_is_never_loaded(tmp_path: Path, fresh_cache_state: Path, where: str) -> None:
    root = tmp_path / "cache"
    report, _stderr = run_child(root, fresh_cache_state)
    assert report == {"correct": True, "compiles": 1}
    ((library, _size),) = [entry for entry in DiskCache(root).entries() if entry[0].suffix == ".so"]

    marker = tmp_path / "planted-code-ran"
    planted = tmp_path / "planted.so"
    source = tmp_path / "planted.cpp"
    source.write_text(PLANTED_SOURCE)
    subprocess.run(
        [find_cxx(), "-shared", "-fPIC", f'-DMARKER="{marker}"', str(source), "-o", str(planted)],
        check=True,
        capture_output=True,
    )
    library.unlink()
    plant(root, library.stem, ".so", planted.read_bytes())  # the other user's library, sidecar and all
    if where == "group-writable folder":
        root.chmod(0o770)
    else:
        library.chmod(0o660)

    report, stderr = run_child(root, fresh_cache_state)
    assert not marker.exists(), "the planted library's constructor ran"
    assert report["correct"] is True
    assert "CacheWarning" in stderr and "chmod" in stderr
    assert stderr.count("CacheWarning") == 1


def test_a_failed_compiles_kept_source_lies_in_private_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fklir.backend import compilers

    monkeypatch.setenv("FKLIR_CACHE_DIR", str(tmp_path / "cache"))
    kept = compilers._keep_source('extern "C" __global__ void k() {}\n', None)
    assert kept.read_text().startswith('extern "C"')
    assert kept.parent.parent == tmp_path / "cache" / "build"
    assert mode_of(kept.parent) == 0o700 and mode_of(kept.parent.parent) == 0o700
