"""Fuzz cases served one at a time by a child process, so that a crash or a hang costs one case, not the run.

The parent sends a pickled request and waits for a pickled reply with a deadline; a child that dies
(a signal, an abort) or misses the deadline is killed, reported with the tail of its stderr, and the
next request starts a fresh child. Requests and replies travel on the child's stdin and on a private
copy of its stdout: the child's fd 1 is pointed at its stderr, so that whatever the code under test
prints cannot corrupt a reply.
"""

from __future__ import annotations

import os
import pickle
import select
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

ROOT = Path(__file__).resolve().parents[2]
_HEADER = struct.Struct("<Q")
_Number = TypeVar("_Number", int, float)
MAX_REPLY = 1 << 30


@dataclass(frozen=True)
class Died:
    """The child ended (or was killed) before it replied."""

    reason: str  # "crash" | "timeout" | "garbled"
    returncode: int | None
    stderr_tail: str

    def describe(self) -> str:
        how = {"timeout": "timed out", "garbled": "wrote something that is not a reply"}.get(
            self.reason, f"died with exit status {self.returncode}"
        )
        return f"child {how}; stderr tail:\n{self.stderr_tail}"


class Child:
    """A `python -m module` child that answers one request per `ask()`; restarted after a death."""

    def __init__(self, module: str, env: dict[str, str] | None = None):
        self._module = module
        self._env = env
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    def _start(self) -> subprocess.Popen[bytes]:
        self._stderr = tempfile.TemporaryFile()
        env = {**os.environ, **(self._env or {})}
        self._proc = subprocess.Popen(
            [sys.executable, "-m", self._module],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        return self._proc

    def ask(self, request: Any, timeout: float) -> Any:
        """The child's reply to `request`, or a `Died` when it crashed or missed `timeout` seconds."""
        proc = self._proc if self._proc is not None and self._proc.poll() is None else self._start()
        assert proc.stdin is not None and proc.stdout is not None
        payload = pickle.dumps(request)
        try:
            proc.stdin.write(_HEADER.pack(len(payload)) + payload)
            proc.stdin.flush()
        except BrokenPipeError:
            return self._died("crash")
        deadline = time.monotonic() + timeout
        header = _read_exactly(proc.stdout, _HEADER.size, deadline)
        if header is None:
            return self._died(_ended(deadline))
        (size,) = _HEADER.unpack(header)
        if size > MAX_REPLY:  # not a reply of ours: the child printed to the reply channel
            return self._died("garbled")
        body = _read_exactly(proc.stdout, size, deadline)
        if body is None:
            return self._died(_ended(deadline))
        return pickle.loads(body)

    def _died(self, reason: str) -> Died:
        proc, err = self._proc, self._stderr
        assert proc is not None and err is not None
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        err.seek(0)
        tail = err.read()[-3000:].decode(errors="replace")
        err.close()
        self._proc = self._stderr = None
        return Died(reason, proc.returncode, tail)

    def close(self) -> None:
        proc = self._proc
        if proc is None:
            return
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._stderr is not None:
            self._stderr.close()
        self._proc = self._stderr = None

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def _ended(deadline: float) -> str:
    """Why a read came back empty: the deadline passed, or the pipe closed (the child ended) before it."""
    return "timeout" if time.monotonic() >= deadline else "crash"


def _read_exactly(stream: IO[bytes], size: int, deadline: float) -> bytes | None:
    """`size` bytes from a pipe, or None on end of file or past the deadline."""
    fd = stream.fileno()
    chunks: list[bytes] = []
    left = size
    while left > 0:
        wait = deadline - time.monotonic()
        if wait <= 0 or not select.select([fd], [], [], wait)[0]:
            return None
        chunk = os.read(fd, left)
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def serve(handle: Callable[[Any], Any]) -> None:
    """The child's loop: one reply per request until the parent closes stdin."""
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    requests = sys.stdin.buffer
    while True:
        header = requests.read(_HEADER.size)
        if len(header) < _HEADER.size:
            return
        (size,) = _HEADER.unpack(header)
        payload = pickle.dumps(handle(pickle.loads(requests.read(size))))
        replies.write(_HEADER.pack(len(payload)) + payload)
        replies.flush()


@dataclass(frozen=True)
class Budget:
    """How much one fuzz test runs: a seed, a case count and a wall-clock limit (both caps)."""

    seed: int
    cases: int
    seconds: float


def budget(default_cases: int, default_seconds: float) -> Budget:
    """CI's small default, or a larger run from FKLIR_FUZZ_SEED / FKLIR_FUZZ_CASES / FKLIR_FUZZ_SECONDS."""
    return Budget(
        seed=_env_number("FKLIR_FUZZ_SEED", 0, int),
        cases=_env_number("FKLIR_FUZZ_CASES", default_cases, int),
        seconds=_env_number("FKLIR_FUZZ_SECONDS", default_seconds, float),
    )


def known_issues_apply() -> bool:
    """False under FKLIR_FUZZ_IGNORE_KNOWN=1: run and raise everything, to see which entries can go."""
    return os.environ.get("FKLIR_FUZZ_IGNORE_KNOWN") != "1"


def _env_number(name: str, default: _Number, kind: Callable[[str], _Number]) -> _Number:
    text = os.environ.get(name)
    if text is None:
        return default
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name}={text!r} is not a number") from None
    if value < 0:
        raise ValueError(f"{name}={text!r} must not be negative")
    return value
