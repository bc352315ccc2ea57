"""The on-disk cache of compiled kernels (cubins, shared libraries), safe with many processes at once.

Layout under the root folder:
    <key><suffix>            the payload (written to a temp file, then renamed into place)
    <key><suffix>.sha256     its sidecar "<sha256 hex> <length>", written the same way AFTER the payload
    locks/<key><suffix>.lock per-entry fcntl.flock lock files (the kernel drops a lock when its holder dies)

A payload is trusted only when its sidecar exists and both its length and its sha256 match, so a
truncated, garbled or half-written entry is never returned: it is deleted and the caller rebuilds it.
Nothing is fsynced: other processes see a renamed file at once, and what a power loss leaves behind (a
renamed file whose bytes never reached the disk) fails that check. fsync cost about 1 ms per file, two
files per new kernel, in every cold compile.
Deleting a broken entry and building a missing one happen under the entry's lock, so a reader never
deletes an entry that a writer is in the middle of storing, and concurrent builders build once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

SIDECAR_SUFFIX = ".sha256"
LOCK_FOLDER = "locks"
TEMP_PREFIX = ".tmp-"


def cache_dir() -> Path:
    """$FKLIR_CACHE_DIR, else ~/.cache/fklir; created on demand."""
    configured = os.environ.get("FKLIR_CACHE_DIR")
    root = Path(configured).expanduser() if configured else Path.home() / ".cache" / "fklir"
    root.mkdir(parents=True, exist_ok=True)
    return root


def make_key(*parts: str | bytes) -> str:
    """sha256 hex of the parts, each length-prefixed so that ("ab", "c") and ("a", "bc") differ."""
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else bytes(part)
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


def _check_key(key: str, suffix: str) -> None:
    """Keys and suffixes become file names: refuse anything that could leave the cache folder."""
    if not key or any(char in key for char in "/\\\0") or key.startswith("."):
        raise ValueError(f"DiskCache: invalid key {key!r}")
    if any(char in suffix for char in "/\\\0"):
        raise ValueError(f"DiskCache: invalid suffix {suffix!r}")


def _write_atomically(path: Path, payload: bytes) -> None:
    """Write to a temp file in the same folder, then rename it over `path`."""
    handle, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX + path.name + ".", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        os.chmod(temp_name, 0o644)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise


def _sidecar_text(payload: bytes) -> str:
    return f"{hashlib.sha256(payload).hexdigest()} {len(payload)}\n"


class DiskCache:
    """Content-addressed files under one folder; see the module docstring for the layout and guarantees."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = Path(root) if root is not None else cache_dir()
        self.root.mkdir(parents=True, exist_ok=True)

    # ----- paths -------------------------------------------------------------------------------------

    def path_for(self, key: str, suffix: str) -> Path:
        """Where the payload of (key, suffix) lives (whether or not it exists)."""
        _check_key(key, suffix)
        return self.root / f"{key}{suffix}"

    def _sidecar_for(self, key: str, suffix: str) -> Path:
        return self.root / f"{key}{suffix}{SIDECAR_SUFFIX}"

    @contextlib.contextmanager
    def _locked(self, key: str, suffix: str) -> Iterator[None]:
        """Hold the entry's exclusive flock. The kernel drops it if this process dies."""
        lock_folder = self.root / LOCK_FOLDER
        lock_folder.mkdir(parents=True, exist_ok=True)
        lock_path = lock_folder / f"{key}{suffix}.lock"
        while True:
            handle = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX)
            except BaseException:
                os.close(handle)
                raise
            # clear() may have unlinked the lock file while we waited: then our lock guards nothing that
            # a newcomer would see, so retry on the file that is there now.
            try:
                same_file = _is_same_file(handle, lock_path)
            except OSError:
                same_file = False
            if same_file:
                break
            os.close(handle)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
            os.close(handle)

    # ----- validation --------------------------------------------------------------------------------

    def _read_valid(self, key: str, suffix: str) -> bytes | None:
        """The payload when it and its sidecar agree (length and sha256); None otherwise. Deletes nothing."""
        payload_path = self.path_for(key, suffix)
        try:
            expected = self._sidecar_for(key, suffix).read_text()
            payload = payload_path.read_bytes()
        except (OSError, UnicodeDecodeError):
            return None
        if expected != _sidecar_text(payload):
            return None
        return payload

    def _entry_exists(self, key: str, suffix: str) -> bool:
        return self.path_for(key, suffix).exists() or self._sidecar_for(key, suffix).exists()

    def _discard(self, key: str, suffix: str) -> None:
        """Delete a broken entry; called only while holding the entry's lock."""
        self._sidecar_for(key, suffix).unlink(missing_ok=True)
        self.path_for(key, suffix).unlink(missing_ok=True)

    def _load_or_discard_locked(self, key: str, suffix: str) -> bytes | None:
        payload = self._read_valid(key, suffix)
        if payload is None and self._entry_exists(key, suffix):
            self._discard(key, suffix)
        return payload

    def _store_locked(self, key: str, suffix: str, payload: bytes) -> Path:
        payload_path = self.path_for(key, suffix)
        sidecar_path = self._sidecar_for(key, suffix)
        # Remove the old sidecar first, so that no reader ever pairs a new payload with an old sidecar.
        sidecar_path.unlink(missing_ok=True)
        _write_atomically(payload_path, payload)
        _write_atomically(sidecar_path, _sidecar_text(payload).encode())
        return payload_path

    # ----- public API --------------------------------------------------------------------------------

    def load(self, key: str, suffix: str) -> bytes | None:
        """The verified payload, or None (a broken entry is deleted so that the caller rebuilds it)."""
        payload = self._read_valid(key, suffix)
        if payload is not None:
            return payload
        if not self._entry_exists(key, suffix):
            return None
        with self._locked(key, suffix):
            return self._load_or_discard_locked(key, suffix)

    def load_path(self, key: str, suffix: str) -> Path | None:
        """The payload's path once verified (for files that must be opened by path, e.g. dlopen), or None."""
        if self.load(key, suffix) is None:
            return None
        return self.path_for(key, suffix)

    def store(self, key: str, suffix: str, payload: bytes) -> Path:
        """Store a payload atomically (payload first, then its sidecar) and return its path."""
        _check_key(key, suffix)
        with self._locked(key, suffix):
            return self._store_locked(key, suffix, bytes(payload))

    def build_or_load(self, key: str, suffix: str, build: Callable[[], bytes]) -> bytes:
        """The cached payload, else build() once across all processes, store it and return it.

        Concurrent callers with the same key wait on the entry's lock; the first builds, the rest then
        find the finished entry. If build() raises, nothing is stored and the next caller tries again.
        """
        payload = self._read_valid(key, suffix)
        if payload is not None:
            return payload
        with self._locked(key, suffix):
            payload = self._load_or_discard_locked(key, suffix)
            if payload is not None:
                return payload
            payload = bytes(build())
            self._store_locked(key, suffix, payload)
            return payload

    def build_or_load_path(self, key: str, suffix: str, build: Callable[[], bytes]) -> Path:
        """Like build_or_load, but returns the verified file's path (for shared libraries)."""
        self.build_or_load(key, suffix, build)
        return self.path_for(key, suffix)

    def discard(self, key: str, suffix: str) -> None:
        """Delete an entry that verified but proved unusable (e.g. a cubin that the driver refuses), under
        its lock, so that the next build_or_load rebuilds it."""
        _check_key(key, suffix)
        with self._locked(key, suffix):
            self._discard(key, suffix)

    def entries(self) -> list[tuple[Path, int]]:
        """Every payload file (not sidecars, locks or temp files) with its size in bytes, sorted by name."""
        found: list[tuple[Path, int]] = []
        for path in sorted(self.root.iterdir()):
            if not path.is_file() or path.name.startswith(".") or path.name.endswith(SIDECAR_SUFFIX):
                continue
            with contextlib.suppress(FileNotFoundError):
                found.append((path, path.stat().st_size))
        return found

    def clear(self) -> None:
        """Delete everything under the root (entries, sidecars, locks, leftover temp files and folders)."""
        if not self.root.exists():
            return
        for path in self.root.iterdir():
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def _is_same_file(handle: int, path: Path) -> bool:
    """Whether the open file `handle` is still the file that `path` names."""
    opened = os.fstat(handle)
    current = os.stat(path)
    return (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino)
