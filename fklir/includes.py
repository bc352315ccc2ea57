"""The include closure of user C++: every file that a source reaches through `#include "..."`, for cache keys.

A user kernel (fkl.jit) or op (fkl.op) is cached by content, so that editing the source or any header it
includes recompiles it by itself and nothing else ever does. The closure follows quoted includes the way
the compilers look them up: first the including file's own folder, then the include folders in order.
Angle-bracket includes are system headers, which the compiler's identity stands for. A quoted include that
resolves nowhere is left to the compiler to report (it may sit in a branch of #if that is never taken).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

# `#include "name"` at the start of a line (after optional blanks), as the preprocessor reads it.
_QUOTED_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.MULTILINE)


def quoted_includes(text: str) -> list[str]:
    """The names of the quoted includes of `text`, in order."""
    return _QUOTED_INCLUDE.findall(text)


def _resolve(name: str, folder: Path | None, include_dirs: Sequence[Path]) -> Path | None:
    for base in (folder, *include_dirs) if folder is not None else include_dirs:
        candidate = base / name
        if candidate.is_file():
            return candidate.resolve()
    return None


def include_closure(text: str, folder: Path | None, include_dirs: Sequence[Path]) -> list[Path]:
    """Every file reached from `text` (whose own quoted includes resolve against `folder` first) through
    quoted includes, each once, in the order first reached."""
    found: dict[Path, None] = {}
    pending: list[tuple[str, Path | None]] = [(text, folder)]
    while pending:
        current, where = pending.pop()
        for name in quoted_includes(current):
            path = _resolve(name, where, include_dirs)
            if path is None or path in found:
                continue
            found[path] = None
            pending.append((path.read_text(errors="replace"), path.parent))
    return list(found)


def closure_hash(text: str, folder: Path | None, include_dirs: Sequence[Path]) -> str:
    """sha256 over `text` and every file of its include closure (path and content, length-prefixed)."""
    digest = hashlib.sha256()
    parts: list[bytes] = [text.encode()]
    for path in include_closure(text, folder, include_dirs):
        parts += [str(path).encode(), path.read_bytes()]
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()
