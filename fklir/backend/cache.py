"""The on-disk cache of compiled kernels (cubins, shared libraries), safe with many processes at once.

Where: $FKLIR_CACHE_DIR, else ~/.cache/fklir. Layout under that root folder:
    <key><suffix>            the payload (written to a temp file, then renamed into place)
    <key><suffix>.sha256     its sidecar "<sha256 hex> <length>", written the same way AFTER the payload
    locks/<key><suffix>.lock per-entry fcntl.flock lock files, there while held (the kernel drops a lock
                             when its holder dies)
    build/<prefix>XXXX/      a compile's working folder, flock-ed while the compiler runs; a failed
                             compile leaves its source there for the error message to name

A payload is trusted only when its sidecar exists and both its length and its sha256 match, so a
truncated, garbled or half-written entry is never returned: it is deleted and the caller rebuilds it.
Nothing is fsynced: other processes see a renamed file at once, and what a power loss leaves behind (a
renamed file whose bytes never reached the disk) fails that check. fsync would add a flush to the disk
per file, two files per new kernel, to every cold compile (its cost: benchmarks/RESULTS.md).
Deleting a broken entry and building a missing one happen under the entry's lock, so a reader never
deletes an entry that a writer is in the middle of storing, and concurrent builders build once. Reading a
valid entry takes no lock and writes nothing that matters (its modification time is touched, best effort,
for the eviction order), so a read-only cache serves every kernel it holds.

The sidecar protects against torn writes, not against other users: a cached library is code that runs in
the caller's process. So the cache trusts a location as ssh trusts ~/.ssh: the root folder and every
payload must be owned by the current user (or root) and writable by no one else. Folders are created
0700 and files 0600. An untrusted root is refused with one warning (naming the folder and the fix) and a
private folder under the temp directory, itself checked, is used instead; an untrusted payload is never
loaded: it is deleted and rebuilt. A root that this process cannot write (mode 555, a shared read-only
cache) is read from, and new kernels go to the private folder, with one warning.

Size: above $FKLIR_CACHE_MAX_BYTES (default 2 GiB) a new kernel's store evicts the least recently used
keys (by their payloads' modification time, which a load touches) until the total fits; a key whose entry
is locked (being built or deleted by another process) is never evicted.

clear() deletes every entry that no process holds a lock on, and every compile folder that no compiler is
using, so that clearing never breaks a compile in flight.
"""

import contextlib
import errno
import functools
import importlib
import os
import stat
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from fklir.errors import CacheError

# tempfile and shutil are imported where files are written or removed: a warm fresh process only reads,
# and their imports (with random, bz2, lzma, fnmatch) would be much of its start-up time.

SIDECAR_SUFFIX = ".sha256"
LOCK_FOLDER = "locks"
BUILD_FOLDER = "build"
TEMP_PREFIX = ".tmp-"
CACHE_DIR_VARIABLE = "FKLIR_CACHE_DIR"
MAX_BYTES_VARIABLE = "FKLIR_CACHE_MAX_BYTES"
DEFAULT_MAX_BYTES = 2 << 30
PRIVATE_PREFIX = "fklir-cache-"
KERNEL_SUFFIXES = {"cpu": ".so", "gpu": ".cubin"}  # a kernel's payload, per target
JIT_SUFFIXES = {"cpu": ".jit.so", "gpu": ".jit.cubin"}  # an fkl.jit instance's payload, per target
META_SUFFIX = ".meta.json"  # next to a kernel: what `fklir cache list|info` shows of it
SOURCE_SUFFIX = ".source"  # next to a kernel: its generated C++ (`fklir cache info` prints it)


def _sha256(data: bytes = b"") -> Any:
    """A SHA-256 hash object: hashlib's (OpenSSL) when the process has imported it already, else CPython's
    own, the same digests without the OpenSSL that importing hashlib loads, which weighs on a fresh
    process's first call more than the slower hashing of the few kernels it verifies."""
    hashlib = sys.modules.get("hashlib")
    return (hashlib.sha256 if hashlib is not None else _builtin_sha256())(data)


@functools.cache
def _builtin_sha256() -> Callable[..., Any]:
    """`_sha2.sha256` (3.12+) or `_sha256.sha256`; hashlib's in a build without them."""
    for name in ("_sha2", "_sha256"):
        with contextlib.suppress(ImportError):
            return importlib.import_module(name).sha256
    return importlib.import_module("hashlib").sha256


if "hashlib" not in sys.modules:  # found at import, which compose() does: a warm first call imports nothing
    _builtin_sha256()


class CacheWarning(UserWarning):
    """A cache location refused (untrusted) or read-only: fklir uses a private folder instead."""


# ----- locations ---------------------------------------------------------------------------------------

_warned: set[str] = set()
_private: dict[tuple[str, int], Path] = {}
_refused: set[Path] = set()  # verified payloads in read-only folders that proved unusable (see discard)


def _warn_once(location: Path, message: str) -> None:
    """One warning per location and process: a refused folder is consulted on every compile."""
    if str(location) in _warned:
        return
    _warned.add(str(location))
    warnings.warn(message, CacheWarning, stacklevel=3)


def configured_root() -> Path:
    """$FKLIR_CACHE_DIR, else ~/.cache/fklir, as configured (not created, not checked for trust).

    A file at that path or above it is a CacheError naming the variable: nothing could ever be cached there.
    """
    configured = os.environ.get(CACHE_DIR_VARIABLE)
    root = Path(configured).expanduser() if configured else Path.home() / ".cache" / "fklir"
    for folder in (root, *root.parents):
        try:
            mode = os.stat(folder).st_mode
        except FileNotFoundError:
            continue
        except NotADirectoryError:
            continue  # a file further up: reported when the loop reaches it
        if stat.S_ISDIR(mode):
            return root
        where = "is" if folder == root else f"lies below {folder}, which is"
        setting = f"{CACHE_DIR_VARIABLE}={configured!r}" if configured else f"the default cache folder {root}"
        raise CacheError(f"{setting}: {root} {where} a file, not a folder; set {CACHE_DIR_VARIABLE} to a folder path")
    return root


def untrusted_reason(path: Path, status: os.stat_result | None = None) -> str | None:
    """Why `path` may not be trusted (ssh's rule: owned by this user or root, writable by no one else),
    with the command that fixes it; None when it may be."""
    status = os.stat(path) if status is None else status
    uid = os.getuid()
    if status.st_uid not in (uid, 0):
        return f"{path} is owned by uid {status.st_uid}, not by you (uid {uid}); fix: chown {uid} '{path}'"
    writers = [who for who, bit in (("its group", stat.S_IWGRP), ("other users", stat.S_IWOTH)) if status.st_mode & bit]
    if writers:
        mode = "700" if stat.S_ISDIR(status.st_mode) else "600"
        return f"{path} is writable by {' and '.join(writers)}; fix: chmod {mode} '{path}'"
    return None


def private_dir() -> Path:
    """This user's private cache folder under the temp directory: fklir-cache-<uid> when it is ours and
    nobody else's (another user may have made that name first), else a fresh unique folder."""
    import tempfile

    uid = os.getuid()
    base = tempfile.gettempdir()
    if (known := _private.get((base, uid))) is not None:
        return known
    stable = Path(base) / f"{PRIVATE_PREFIX}{uid}"
    with contextlib.suppress(FileExistsError):
        stable.mkdir(mode=0o700)
    status = os.lstat(stable)
    if stat.S_ISDIR(status.st_mode) and untrusted_reason(stable, status) is None:
        folder = stable
    else:
        folder = Path(tempfile.mkdtemp(prefix=f"{PRIVATE_PREFIX}{uid}-", dir=base))
        if (reason := untrusted_reason(folder)) is not None:
            raise CacheError(f"no private cache folder can be made under {base}: {reason}")
    _private[(base, uid)] = folder
    return folder


def _trusted_root(root: Path) -> Path:
    """`root` created 0700 if missing; the private folder instead, with one warning, when it cannot be
    created or is not trusted."""
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        reason = untrusted_reason(root)
    except OSError as error:
        reason = f"{root} cannot be created ({error.strerror})"
    if reason is None:
        return root
    fallback = private_dir()
    _warn_once(
        root,
        f"fklir: not using the kernel cache folder {root}: {reason}. A cached kernel is code that runs in "
        f"your process, so fklir loads none from a folder another user can change; compiling into {fallback} "
        "instead.",
    )
    return fallback


def cache_dir() -> Path:
    """The cache folder in use: $FKLIR_CACHE_DIR or ~/.cache/fklir (created 0700), or the private folder
    when that one is refused (see the module docstring)."""
    return _trusted_root(configured_root())


def max_bytes() -> int:
    """$FKLIR_CACHE_MAX_BYTES, else DEFAULT_MAX_BYTES."""
    text = os.environ.get(MAX_BYTES_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        value = int(text)
    except ValueError:
        raise CacheError(f"{MAX_BYTES_VARIABLE}={text!r}: expected a whole number of bytes") from None
    if value < 0:
        raise CacheError(f"{MAX_BYTES_VARIABLE}={text!r}: expected a number of bytes >= 0")
    return value


def make_key(*parts: str | bytes) -> str:
    """sha256 hex of the parts, each length-prefixed so that ("ab", "c") and ("a", "bc") differ."""
    digest = _sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else bytes(part)
        digest.update(len(data).to_bytes(8, "little"))
        digest.update(data)
    return digest.hexdigest()


# ----- files -------------------------------------------------------------------------------------------


def _check_key(key: str, suffix: str) -> None:
    """Keys and suffixes become file names: refuse anything that could leave the cache folder."""
    if not key or any(char in key for char in "/\\\0") or key.startswith("."):
        raise ValueError(f"DiskCache: invalid key {key!r}")
    if any(char in suffix for char in "/\\\0"):
        raise ValueError(f"DiskCache: invalid suffix {suffix!r}")


def _remove(path: Path) -> None:
    """Delete whatever is at `path` (a file, a link, or a folder in the way of a file); absent is fine."""
    import shutil

    try:
        is_folder = stat.S_ISDIR(os.lstat(path).st_mode)
    except FileNotFoundError:
        return
    if is_folder:
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def own_folder(path: Path) -> Path:
    """`path` as a folder of ours that no one else can write, made 0700 if missing; whatever else stands
    there (a file, a folder someone else can write) is removed first."""
    try:
        status: os.stat_result | None = os.lstat(path)
    except FileNotFoundError:
        status = None
    if status is not None and (not stat.S_ISDIR(status.st_mode) or untrusted_reason(path, status)):
        _remove(path)
        status = None
    if status is None:
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
    if (reason := untrusted_reason(path)) is not None:
        raise CacheError(f"fklir cache: cannot use {path}: {reason}")
    return path


def _write_atomically(path: Path, payload: bytes) -> None:
    """Write to a temp file (0600) in the same folder, then rename it over `path`."""
    import tempfile

    handle, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX + path.name + ".", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(payload)
        _remove(path)  # only a folder in the way matters: a file would be replaced atomically anyway
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise


def _sidecar_text(payload: bytes) -> str:
    return f"{_sha256(payload).hexdigest()} {len(payload)}\n"


def _is_same_file(handle: int, path: Path) -> bool:
    """Whether the open file `handle` is still the file that `path` names."""
    opened = os.fstat(handle)
    current = os.stat(path)
    return (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino)


def _flock(handle: int, exclusive: bool, blocking: bool = True) -> None:
    """flock(2) the open lock file: take it exclusively (non-blocking: BlockingIOError while another holds it)
    or release it. fcntl is imported here because a warm read takes no lock."""
    import fcntl

    if not exclusive:
        fcntl.flock(handle, fcntl.LOCK_UN)
    else:
        fcntl.flock(handle, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)


def _entry_name(file_name: str) -> str:
    """The entry (<key><suffix>) that a file in the root belongs to: itself, its sidecar or a temp file."""
    if file_name.startswith(TEMP_PREFIX):
        file_name = file_name[len(TEMP_PREFIX) :].rpartition(".")[0]
    return file_name.removesuffix(SIDECAR_SUFFIX)


Opened = TypeVar("Opened")


class KeyGroup(NamedTuple):
    """Every file of one key (its payloads of each suffix and their sidecars): what eviction and
    `fklir cache list` treat as one thing."""

    key: str
    files: list[Path]
    size: int
    last_used: float  # the newest modification time of its payloads


# ----- the cache -----------------------------------------------------------------------------------------


class DiskCache:
    """Content-addressed files under one folder; see the module docstring for the layout and guarantees."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = _trusted_root(Path(root) if root is not None else configured_root())

    # ----- paths -------------------------------------------------------------------------------------

    def path_for(self, key: str, suffix: str) -> Path:
        """Where the payload of (key, suffix) lives in the root (whether or not it exists)."""
        _check_key(key, suffix)
        return self.root / f"{key}{suffix}"

    def writable_root(self, announce: bool = True) -> Path:
        """The root, or the private folder when this process cannot write the root (with one warning,
        when `announce`)."""
        if os.access(self.root, os.W_OK | os.X_OK):
            return self.root
        fallback = private_dir()
        if not announce:
            return fallback
        _warn_once(
            self.root,
            f"fklir: the kernel cache folder {self.root} is read-only for you: kernels it holds are used, "
            f"new ones are compiled into {fallback}",
        )
        return fallback

    def _folders(self) -> list[Path]:
        """Where to look for an entry: the root, then the private folder where new kernels of a read-only
        root go (no warning: reading needs no write)."""
        if os.access(self.root, os.W_OK | os.X_OK):
            return [self.root]
        try:
            return [self.root, private_dir()]
        except (OSError, CacheError):
            return [self.root]

    # ----- locks -------------------------------------------------------------------------------------

    def _open_lock(self, folder: Path, name: str, blocking: bool) -> int | None:
        """An open, flock-ed handle on folder/locks/<name>.lock; None when not blocking and it is held."""
        lock_path = folder / LOCK_FOLDER / f"{name}.lock"
        while True:
            try:
                handle = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            except (FileNotFoundError, NotADirectoryError):  # a first use, or something in the folder's place
                own_folder(folder / LOCK_FOLDER)
                continue
            except IsADirectoryError:
                _remove(lock_path)
                continue
            try:
                _flock(handle, exclusive=True, blocking=blocking)
            except BlockingIOError:
                os.close(handle)
                return None
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
                return handle
            os.close(handle)

    @contextlib.contextmanager
    def _locked(self, folder: Path, name: str) -> Iterator[None]:
        """Hold the entry's exclusive flock. The kernel drops it if this process dies. The lock file is
        unlinked before the lock is released (a waiter then retries on a new file), so that lock files
        do not pile up, one for every entry ever made."""
        handle = self._open_lock(folder, name, blocking=True)
        assert handle is not None
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                os.unlink(folder / LOCK_FOLDER / f"{name}.lock")
            _flock(handle, exclusive=False)
            os.close(handle)

    def _remove_if_idle(self, folder: Path, name: str, files: list[Path]) -> bool:
        """Delete `files` of entry `name` unless a process holds its lock; then drop the lock file too."""
        handle = self._open_lock(folder, name, blocking=False)
        if handle is None:
            return False
        try:
            for path in files:
                _remove(path)
            with contextlib.suppress(OSError):
                os.unlink(folder / LOCK_FOLDER / f"{name}.lock")
        finally:
            _flock(handle, exclusive=False)
            os.close(handle)
        return True

    # ----- validation --------------------------------------------------------------------------------

    def _read_valid(self, folder: Path, key: str, suffix: str, touch: bool = True) -> bytes | None:
        """The payload when it is trusted and it and its sidecar agree (length and sha256); None otherwise.
        Deletes nothing; `touch` marks it used (for eviction)."""
        _check_key(key, suffix)
        payload_path = folder / f"{key}{suffix}"
        try:
            handle = os.open(payload_path, os.O_RDONLY)
        except OSError:
            return None
        try:
            status = os.fstat(handle)
            if not stat.S_ISREG(status.st_mode):
                return None  # e.g. a folder in the entry's place: the caller deletes it and rebuilds
            if (reason := untrusted_reason(payload_path, status)) is not None:
                _warn_once(payload_path, f"fklir: not loading the cached kernel {payload_path}: {reason}")
                return None
            with os.fdopen(os.dup(handle), "rb") as stream:
                payload = stream.read()
            expected = (folder / f"{key}{suffix}{SIDECAR_SUFFIX}").read_text()
        except (OSError, UnicodeDecodeError):
            return None
        finally:
            os.close(handle)
        if expected != _sidecar_text(payload):
            return None
        if touch:
            with contextlib.suppress(OSError):
                os.utime(payload_path)
        return payload

    def _discard_locked(self, folder: Path, key: str, suffix: str) -> None:
        """Delete an entry; called only while holding the entry's lock."""
        _remove(folder / f"{key}{suffix}{SIDECAR_SUFFIX}")
        _remove(folder / f"{key}{suffix}")

    def _load_or_discard_locked(self, folder: Path, key: str, suffix: str) -> bytes | None:
        payload = self._read_valid(folder, key, suffix)
        if payload is None:
            self._discard_locked(folder, key, suffix)
        return payload

    def _store_locked(self, folder: Path, key: str, suffix: str, payload: bytes) -> Path:
        payload_path = folder / f"{key}{suffix}"
        sidecar_path = folder / f"{key}{suffix}{SIDECAR_SUFFIX}"
        # Remove the old sidecar first, so that no reader ever pairs a new payload with an old sidecar.
        _remove(sidecar_path)
        _write_atomically(payload_path, payload)
        _write_atomically(sidecar_path, _sidecar_text(payload).encode())
        return payload_path

    def _exists(self, folder: Path, key: str, suffix: str) -> bool:
        name = f"{key}{suffix}"
        return os.path.lexists(folder / name) or os.path.lexists(folder / f"{name}{SIDECAR_SUFFIX}")

    # ----- public API --------------------------------------------------------------------------------

    def _find(self, key: str, suffix: str) -> tuple[Path, bytes] | None:
        """(folder, payload) of the first verified copy; a broken one in a writable folder is deleted."""
        _check_key(key, suffix)
        for folder in self._folders():
            if folder / f"{key}{suffix}" in _refused:
                continue
            if (payload := self._read_valid(folder, key, suffix)) is not None:
                return folder, payload
        writable = self.writable_root(announce=False)  # a miss needs no warning; a build gives it
        if not self._exists(writable, key, suffix):
            return None
        with self._locked(writable, f"{key}{suffix}"):
            payload = self._load_or_discard_locked(writable, key, suffix)
        return None if payload is None else (writable, payload)

    def load(self, key: str, suffix: str) -> bytes | None:
        """The verified payload, or None (a broken entry is deleted so that the caller rebuilds it)."""
        found = self._find(key, suffix)
        return None if found is None else found[1]

    def peek(self, key: str, suffix: str) -> bytes | None:
        """The verified payload in the root, or None; unlike load, it neither marks the entry used nor
        deletes a broken one (for listing)."""
        return self._read_valid(self.root, key, suffix, touch=False)

    def load_path(self, key: str, suffix: str) -> Path | None:
        """The payload's path once verified (for files that must be opened by path, e.g. dlopen), or None."""
        found = self._find(key, suffix)
        return None if found is None else found[0] / f"{key}{suffix}"

    def store(self, key: str, suffix: str, payload: bytes, announce: bool = True) -> Path:
        """Store a payload atomically (payload first, then its sidecar) and return its path. `announce`
        False: a record that only saves time later (a plan) goes to the private folder of a read-only root
        without the warning, which is for kernels that must be compiled."""
        _check_key(key, suffix)
        folder = self.writable_root(announce)
        with self._locked(folder, f"{key}{suffix}"):
            return self._store_locked(folder, key, suffix, bytes(payload))

    def _obtain(
        self, key: str, suffix: str, build: Callable[[], bytes], use: Callable[[Path, bytes], Opened]
    ) -> Opened:
        """use(path, payload) of the verified entry, else of what build() made, stored once across all
        processes: concurrent callers with the same key wait on the entry's lock; the first builds, the rest
        then find the finished entry. If build() raises, nothing is stored and the next caller tries again.

        A new entry is used before its lock is released, so that neither clear() nor eviction in another
        process removes it between its store and, say, its dlopen; an entry found without the lock that
        vanishes before use() opens it is looked up again under the lock. Other errors of use() propagate.
        """
        name = f"{key}{suffix}"
        if (found := self._find(key, suffix)) is not None:
            try:
                return use(found[0] / name, found[1])
            except OSError:
                if os.path.lexists(found[0] / name):
                    raise
        folder = self.writable_root()
        with self._locked(folder, name):
            payload = self._load_or_discard_locked(folder, key, suffix)
            built = payload is None
            if payload is None:
                payload = bytes(build())
                self._store_locked(folder, key, suffix, payload)
            result = use(folder / name, payload)
        if built:
            with contextlib.suppress(OSError):  # housekeeping: never fails the build that triggered it
                self.evict(folder, keep=key)
        return result

    def build_or_load(self, key: str, suffix: str, build: Callable[[], bytes]) -> bytes:
        """The cached payload, else build() once across all processes, store it and return it."""
        return self._obtain(key, suffix, build, lambda _path, payload: payload)

    def build_or_load_path(self, key: str, suffix: str, build: Callable[[], bytes]) -> Path:
        """Like build_or_load, but returns the verified file's path."""
        return self._obtain(key, suffix, build, lambda path, _payload: path)

    def build_or_open(
        self, key: str, suffix: str, build: Callable[[], bytes], open_: Callable[[Path], Opened]
    ) -> Opened:
        """Like build_or_load, but returns open_(path) of the verified file (for dlopen), opened before another
        process can remove a new entry (see _obtain)."""
        return self._obtain(key, suffix, build, lambda path, _payload: open_(path))

    def discard(self, key: str, suffix: str) -> None:
        """Delete an entry that verified but proved unusable (e.g. a cubin that the driver refuses), under
        its lock, so that the next build_or_load rebuilds it. A read-only root keeps its copy, which this
        process then no longer looks at; the rebuilt one goes to the private folder."""
        _check_key(key, suffix)
        folder = self.writable_root(announce=False)
        if folder != self.root:
            _refused.add(self.root / f"{key}{suffix}")
        with self._locked(folder, f"{key}{suffix}"):
            self._discard_locked(folder, key, suffix)

    @contextlib.contextmanager
    def work_dir(self, prefix: str) -> Iterator[Path]:
        """A fresh 0700 folder under build/ for one compile, flock-ed so that clear() leaves it alone; it is
        removed when the body returns and kept when it raises (the error names the source kept there)."""
        import shutil
        import tempfile

        while True:
            parent = own_folder(self.writable_root() / BUILD_FOLDER)
            try:
                path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
                handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
            except FileNotFoundError:  # clear() removed it before we could lock it
                continue
            _flock(handle, exclusive=True)
            try:
                if _is_same_file(handle, path):
                    break
            except OSError:
                pass
            os.close(handle)
        try:
            yield path
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(handle)

    # ----- listing, eviction, clearing ---------------------------------------------------------------

    def entries(self) -> list[tuple[Path, int]]:
        """Every payload file (not sidecars, locks or temp files) with its size in bytes, sorted by name."""
        found: list[tuple[Path, int]] = []
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(".") or path.name.endswith(SIDECAR_SUFFIX):
                continue
            with contextlib.suppress(FileNotFoundError):
                status = path.lstat()
                if stat.S_ISREG(status.st_mode):
                    found.append((path, status.st_size))
        return found

    def groups(self, folder: Path | None = None) -> list[KeyGroup]:
        """The files of `folder` (the root by default) grouped by key, least recently used first."""
        folder = self.root if folder is None else folder
        files: dict[str, list[Path]] = {}
        sizes: dict[str, int] = {}
        used: dict[str, float] = {}
        for path in folder.iterdir():
            if path.name.startswith(".") or path.name in (LOCK_FOLDER, BUILD_FOLDER):
                continue
            try:
                status = path.lstat()
            except FileNotFoundError:
                continue
            key = path.name.partition(".")[0]
            files.setdefault(key, []).append(path)
            sizes[key] = sizes.get(key, 0) + status.st_size
            if not path.name.endswith(SIDECAR_SUFFIX):
                used[key] = max(used.get(key, 0.0), status.st_mtime)
        groups = [KeyGroup(key, paths, sizes[key], used.get(key, 0.0)) for key, paths in files.items()]
        return sorted(groups, key=lambda group: (group.last_used, group.key))

    def evict(self, folder: Path, keep: str = "", limit: int | None = None) -> list[str]:
        """Delete least recently used keys of `folder` until its files fit in `limit` bytes
        ($FKLIR_CACHE_MAX_BYTES by default); never `keep`, never a key with a locked entry. Returns the
        evicted keys."""
        limit = max_bytes() if limit is None else limit
        groups = self.groups(folder)
        total = sum(group.size for group in groups)
        evicted: list[str] = []
        for group in groups:
            if total <= limit:
                break
            if group.key == keep or not self._remove_group_if_idle(folder, group):
                continue
            total -= group.size
            evicted.append(group.key)
        return evicted

    def _remove_group_if_idle(self, folder: Path, group: KeyGroup) -> bool:
        entries: dict[str, list[Path]] = {}
        for path in group.files:
            entries.setdefault(_entry_name(path.name), []).append(path)
        handles: list[int] = []
        try:
            for name in entries:
                handle = self._open_lock(folder, name, blocking=False)
                if handle is None:
                    return False
                handles.append(handle)
            for name, files in entries.items():
                for path in files:
                    _remove(path)
                with contextlib.suppress(OSError):
                    os.unlink(folder / LOCK_FOLDER / f"{name}.lock")
            return True
        finally:
            for handle in handles:
                _flock(handle, exclusive=False)
                os.close(handle)

    def clear(self) -> None:
        """Delete every entry no process holds a lock on (with its sidecar and temp files), every compile
        folder no compiler is using and every stale lock file; what is in use stays, so that clearing never
        breaks a compile in flight. A read-only root is left as it is; its private folder is cleared."""
        folder = self.writable_root()
        entries: dict[str, list[Path]] = {}
        for path in folder.iterdir():
            if path.name in (LOCK_FOLDER, BUILD_FOLDER):
                continue
            entries.setdefault(_entry_name(path.name), []).append(path)
        for name, files in entries.items():
            self._remove_if_idle(folder, name, files)
        self._clear_builds(folder / BUILD_FOLDER)
        locks = folder / LOCK_FOLDER
        if locks.is_dir():
            for path in locks.iterdir():
                if path.name.endswith(".lock"):
                    self._remove_if_idle(folder, path.name.removesuffix(".lock"), [])
                else:
                    _remove(path)

    @staticmethod
    def _clear_builds(build: Path) -> None:
        import shutil

        if not build.is_dir():
            return
        for path in build.iterdir():
            try:
                handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
            except OSError as error:
                if error.errno in (errno.ENOTDIR, errno.ELOOP):
                    _remove(path)
                continue
            try:
                _flock(handle, exclusive=True, blocking=False)
            except BlockingIOError:
                os.close(handle)
                continue  # a compiler works there
            try:
                shutil.rmtree(path, ignore_errors=True)
            finally:
                os.close(handle)
