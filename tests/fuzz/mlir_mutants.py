"""Mutants of the tests/filecheck corpus for the fklir-opt fuzz harness.

A mutant is a corpus file without its RUN/CHECK comments, changed by one to three random edits:
lines deleted, duplicated or swapped, the text truncated, garbage inserted, a type, a number or a
keyword replaced, an SSA name swapped for another, lines wrapped in a hand-written fkl.kernel.
Each edit is recorded so that a failure names what was done to which file.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.child import ROOT

FILECHECK = ROOT / "tests" / "filecheck"

TYPES = ("ui8", "i8", "ui16", "i16", "i32", "ui32", "f16", "bf16", "f32", "f64", "i1", "none", "i64", "f80")
EDGE_NUMBERS = (
    "0", "-1", "1", "3", "-0.0", "2147483647", "2147483648", "4294967296", "4294967299", "-2147483649",
    "18446744073709551616", "1e309", "1.5e-320", "nan", "inf", "0x7fffffff", "99999999999999999999999",
)  # fmt: skip
KEYWORDS = (
    "linear", "nearest", "constant", "reflect", "reflect101", "replicate", "wrap", "ignore", "preserve",
    "preserve_left", "preserve_even", "blend", "planes", "packed", "param", "sample", "rects", "size",
    "to", "affine", "perspective", "inverse", "values", "params", "fkl.kernel", "fkl.read", "fkl.write",
    "fkl.yield", "fkl.crop", "fkl.resize", "fkl.mul", "fkl.border", "fkl.split", "builtin.module",
)  # fmt: skip
GARBAGE = (
    "{", "}", "(", ")", "[", "]", "<", ">", ",", ":", "=", "->", "%", "%0", "^bb0:", "@k0", "!fkl.image<", "?x?x",
    "// -----", "fkl.kernel @k9 params !fkl.params<> {", "\"", "\\", "#", "0x", "-", "\x00", "\u00e9", "\t",
)  # fmt: skip

_TYPE = re.compile(r"\b(" + "|".join(TYPES) + r")\b")
_NUMBER = re.compile(r"(?<![\w%@^])-?\d+(\.\d+)?(e[-+]?\d+)?")
_KEYWORD = re.compile(r"\b(" + "|".join(re.escape(k) for k in KEYWORDS) + r")\b")
_SSA = re.compile(r"%[\w.$-]+")


def corpus_files() -> list[Path]:
    return sorted(p for p in FILECHECK.rglob("*.mlir") if "Output" not in p.parts)


def strip_checks(text: str) -> str:
    """The IR of a lit test: comment lines go, except the `// -----` split markers."""
    kept = [line for line in text.splitlines() if not line.lstrip().startswith("//") or line.strip() == "// -----"]
    return "\n".join(kept) + "\n"


@dataclass(frozen=True)
class Mutant:
    origin: str  # the corpus file, relative to the repository
    edits: tuple[str, ...]
    text: str


def _pick_line(rng: random.Random, lines: list[str]) -> int:
    return rng.randrange(len(lines))


def _delete_line(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    i = _pick_line(rng, lines)
    return "\n".join(lines[:i] + lines[i + 1 :]) + "\n", f"delete line {i + 1}"


def _duplicate_line(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    i = _pick_line(rng, lines)
    return "\n".join(lines[: i + 1] + lines[i:]) + "\n", f"duplicate line {i + 1}"


def _swap_lines(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.splitlines()
    i, j = _pick_line(rng, lines), _pick_line(rng, lines)
    lines[i], lines[j] = lines[j], lines[i]
    return "\n".join(lines) + "\n", f"swap lines {i + 1} and {j + 1}"


def _truncate(rng: random.Random, text: str) -> tuple[str, str]:
    at = rng.randrange(len(text) + 1)
    return text[:at], f"truncate at offset {at}"


def _insert_garbage(rng: random.Random, text: str) -> tuple[str, str]:
    at = rng.randrange(len(text) + 1)
    junk = rng.choice(GARBAGE)
    return text[:at] + junk + text[at:], f"insert {junk!r} at offset {at}"


def _replace_match(rng: random.Random, text: str, pattern: re.Pattern[str], menu: tuple[str, ...], what: str):
    found = list(pattern.finditer(text))
    if not found:
        return _insert_garbage(rng, text)
    m = rng.choice(found)
    new = rng.choice([item for item in menu if item != m.group()] or menu)
    return text[: m.start()] + new + text[m.end() :], f"{what} {m.group()!r} -> {new!r} at offset {m.start()}"


def _change_type(rng: random.Random, text: str) -> tuple[str, str]:
    return _replace_match(rng, text, _TYPE, TYPES, "type")


def _change_number(rng: random.Random, text: str) -> tuple[str, str]:
    return _replace_match(rng, text, _NUMBER, EDGE_NUMBERS, "number")


def _change_keyword(rng: random.Random, text: str) -> tuple[str, str]:
    return _replace_match(rng, text, _KEYWORD, KEYWORDS, "keyword")


def _swap_ssa(rng: random.Random, text: str) -> tuple[str, str]:
    names = sorted(set(_SSA.findall(text)))
    return _replace_match(rng, text, _SSA, tuple(names) or ("%0",), "SSA name")


def _wrap_in_kernel(rng: random.Random, text: str) -> tuple[str, str]:
    """Lines i..j as the body of a hand-written fkl.kernel: the emitter then sees IR no pass made."""
    lines = text.splitlines()
    i = _pick_line(rng, lines)
    j = rng.randrange(i, len(lines))
    header = rng.choice(KERNEL_HEADERS)
    wrapped = [*lines[:i], header, *lines[i : j + 1], "}", *lines[j + 1 :]]
    return "\n".join(wrapped) + "\n", f"wrap lines {i + 1}..{j + 1} in {header!r}"


KERNEL_HEADERS = (
    "fkl.kernel @w params !fkl.params<> {",
    "fkl.kernel @w params !fkl.params<mul1: f32 x 3> values {mul1 = [1.0, 2.0, 3.0]} {",
    "fkl.kernel @w params !fkl.params<crop1: rect x 2, resize2: i32 x 2> {",
)


EDITS: tuple[Callable[[random.Random, str], tuple[str, str]], ...] = (
    _delete_line,
    _duplicate_line,
    _swap_lines,
    _truncate,
    _insert_garbage,
    _change_type,
    _change_type,
    _change_number,
    _change_number,
    _change_keyword,
    _swap_ssa,
    _swap_ssa,
    _wrap_in_kernel,
    _wrap_in_kernel,
)


def mutant(rng: random.Random, corpus: dict[str, str]) -> Mutant:
    origin = rng.choice(sorted(corpus))
    text = corpus[origin]
    edits: list[str] = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        if not text.strip():
            break
        text, edit = rng.choice(EDITS)(rng, text)
        edits.append(edit)
    return Mutant(origin, tuple(edits), text)


def load_corpus() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): strip_checks(p.read_text()) for p in corpus_files()}
