"""The declarations of fkl.op's user ops, which the IR refers to by content hash: the C++ to compile
and the numpy reference. xDSL-free, so that composing a chain with a user op in a fresh process does
not load the dialect (the IR ops themselves are fkl/ops_user.py's)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class UserDeclaration:
    """What the IR of a user op leaves out: the C++ to compile and the numpy reference."""

    name: str  # the C++ struct, also the op's name in messages
    digest: str  # content hash of `body` and every file it includes (the IR's `hash`)
    body: str
    source: str  # the file that compiler messages name (#line): the body file, or the declaring script
    first_line: int  # the body's first line in `source`
    include_dirs: tuple[str, ...]  # where its quoted includes are found
    reference: Callable[..., Any] | None = field(default=None, compare=False)


DECLARATIONS: dict[str, UserDeclaration] = {}


def declare_user_op(declaration: UserDeclaration) -> None:
    """Make a user op known to the backend and the interpreter (a redeclaration replaces the reference)."""
    DECLARATIONS[declaration.digest] = declaration
