"""The user C++ of a kernel's user ops (fkl.op): each distinct body once, before the kernel code, and the
compile errors it causes named after the op and the user's own lines.

A body is preceded by `#line 1 "<its file>"` (or the line of the declaring script where an inline body
starts), so that a compiler message about it names the user's file and line; a second `#line` gives the
generated code its own line numbers back, under the name GENERATED (the kept kernel source is that
file). The include folders of every body go to the compiler after fklir's own.
"""

from __future__ import annotations

import json
from pathlib import Path

from fklir.dialects import fkl
from fklir.errors import CompileError

GENERATED = "<fklir kernel>"


def user_declarations(kernel: fkl.KernelOp) -> list[fkl.UserDeclaration]:
    """The declarations of the kernel's user ops, each once, in the order the chains use them."""
    found: dict[str, fkl.UserDeclaration] = {}
    for op in kernel.body.walk():
        if isinstance(op, fkl.UserOpBase) and op.digest.data not in found:
            found[op.digest.data] = fkl.user_declaration(op)
    return list(found.values())


def _line_directive(line: int, source: str) -> str:
    return f"#line {line} {json.dumps(source)}"


def emit_user_bodies(declarations: list[fkl.UserDeclaration], first_line: int) -> list[str]:
    """The bodies as lines of a translation unit whose next line is number `first_line`: each under a
    #line of its own source, then a #line back to the generated code (none without user ops)."""
    if not declarations:
        return []
    lines: list[str] = []
    for declaration in declarations:
        lines += [
            f"// fkl.op {declaration.name} (hash {declaration.digest[:16]})",
            _line_directive(declaration.first_line, declaration.source),
            *declaration.body.splitlines(),
        ]
    # the directive names the line after it: the one after the whole block
    return [*lines, _line_directive(first_line + len(lines) + 1, GENERATED), ""]


def user_include_dirs(declarations: list[fkl.UserDeclaration]) -> tuple[Path, ...]:
    """The folders the bodies' quoted includes are found in, each once."""
    return tuple(dict.fromkeys(Path(folder) for d in declarations for folder in d.include_dirs))


def located_compile_error(error: CompileError, declarations: list[fkl.UserDeclaration]) -> CompileError:
    """`error`, named after the user op(s) whose source the compiler's messages point at; a failure
    elsewhere (the generated call of a body with the wrong signature) names every user op of the kernel."""
    if not declarations:
        return error
    diagnostics = error.stderr or str(error)
    blamed = [d for d in declarations if d.source in diagnostics] or declarations
    lines = diagnostics.splitlines()
    # the user's own lines, else (a call that does not fit the body's exec) the errors in the generated code
    own = [line for line in lines if any(d.source in line for d in blamed)] or [
        line for line in lines if line.startswith(GENERATED) and "error" in line
    ]
    names = ", ".join(f"'{d.name}'" for d in blamed)
    where = "\n".join(own) if own else "(see the compiler's messages below)"
    return CompileError(
        f"fkl.op {names} does not compile:\n{where}\n\n{error}",
        stderr=error.stderr,
        source_path=error.source_path,
    )
