"""Fuzz fklir-opt with mutants of the tests/filecheck corpus (tests/fuzz/mlir_mutants.py).

Invariant, for every mutant and pass pipeline: exit 0, or exit 1 with a `file:line:col: error: ...`
diagnostic first on stderr — never a traceback, an internal error, another exit code, a crash or a
hang; and the C++ that `-t cpp` prints on exit 0 passes `g++ -fsyntax-only`.

Seeded and time-bounded: FKLIR_FUZZ_SEED, FKLIR_FUZZ_CASES and FKLIR_FUZZ_SECONDS make a larger run
(`FKLIR_FUZZ_CASES=100000 FKLIR_FUZZ_SECONDS=3600 pytest tests/fuzz/test_fuzz_fklir_opt.py`).
Case i of seed s is drawn from its own `random.Random(f"{s}:{i}")`, so any case reproduces alone.
"""

from __future__ import annotations

import hashlib
import random
import re
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from fklir.backend import compilers
from fklir.backend.build import INCLUDE_DIR
from tests.fuzz.child import Budget, Child, Died, budget, known_issues_apply
from tests.fuzz.mlir_mutants import Mutant, load_corpus, mutant

# =============================================================================================
# Known issues: a mutant that one of these applies to is not run until the fix lands; delete the
# entry then. Each names the reproduction and the issue that tracks it.
# =============================================================================================


@dataclass(frozen=True)
class KnownIssue:
    name: str
    reproduction: str
    before_run: Callable[[str], bool] | None = None  # on the mutant's text: such a mutant is not run
    failure: str | None = None  # a regex on the failure class: such a failure is counted, not raised


KNOWN_ISSUES: tuple[KnownIssue, ...] = ()

# =============================================================================================

PIPELINES: tuple[tuple[str, ...], ...] = (
    (),
    ("--print-op-generic",),
    ("-p", "fkl-default-pipeline"),
    ("-p", "fkl-default-pipeline", "-t", "cpp"),
    ("-p", "fkl-default-pipeline", "-t", "cpp"),
    ("-p", "fkl-default-pipeline", "-t", "cpp"),
    ("-p", "fkl-validate-chain,fkl-infer-types"),
    ("-p", "fkl-infer-types,fkl-backward-fusion,fkl-outline-kernels"),
    ("-p", "fkl-outline-kernels,fkl-hoist-params", "-t", "cpp"),
    ("-p", "fkl-batch-horizontal,fkl-infer-types,fkl-batch-divergent"),
)
CASE_TIMEOUT_S = 20.0
_BANNER = re.compile(r"^// ---- fkl\.kernel @\S+ \(target cpp\) ----$", re.M)


@dataclass(frozen=True)
class Case:
    index: int
    mutant: Mutant
    args: tuple[str, ...]
    path: Path

    def describe(self, seed: int) -> str:
        command = " ".join(["fklir-opt", str(self.path), *self.args])
        return (
            f"seed {seed} case {self.index}: {self.mutant.origin} with {'; '.join(self.mutant.edits)}\n"
            f"  {command}\n--- mutant ---\n{self.mutant.text[:2000]}\n--- end ---"
        )


def _draw(seed: int, index: int, corpus: dict[str, str], folder: Path) -> Case:
    rng = random.Random(f"{seed}:{index}")
    m = mutant(rng, corpus)
    args = list(rng.choice(PIPELINES))
    if "// -----" in m.text:
        args.insert(0, "--split-input-file")
    path = folder / f"case{index}.mlir"
    path.write_text(m.text)
    return Case(index, m, tuple(args), path)


def _violation(case: Case, reply: object) -> str | None:
    """The failure class of one run, or None when it keeps the invariant."""
    if isinstance(reply, Died):
        return "hang" if reply.reason == "timeout" else f"crash (exit status {reply.returncode})"
    code, _, stderr = reply  # type: ignore[misc]
    if code is None or "Traceback (most recent call last)" in stderr:
        return "traceback: " + _last_line(stderr)
    if "internal error" in stderr:
        return "internal error: " + _normalise(stderr.splitlines()[0], case)
    if code == 0:
        return None
    if code != 1:
        return f"exit code {code}"
    first = stderr.splitlines()[0] if stderr else ""
    if not re.match(re.escape(str(case.path)) + r":\d+:\d+: error: ", first):
        return "unlocated diagnostic: " + _normalise(first, case)
    return None


def _last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _normalise(line: str, case: Case) -> str:
    """A diagnostic's first line without the paths and numbers that differ between mutants."""
    line = line.replace(str(case.path), "FILE")
    return re.sub(r"\d+", "N", line)[:120]


def _cpp_units(stdout: str) -> list[str]:
    """The translation units that `-t cpp` printed, one per fkl.kernel."""
    starts = [m.start() for m in _BANNER.finditer(stdout)]
    units = []
    for begin, end in zip(starts, [*starts[1:], len(stdout)], strict=True):
        units.append(stdout[begin:end].split("\n// -----\n")[0])
    return units


def _syntax_errors(units: dict[str, str], folder: Path) -> dict[str, str]:
    """g++ -fsyntax-only on each distinct unit (batched); the compiler's message per failing unit."""
    paths = {}
    for digest, source in units.items():
        paths[digest] = folder / f"unit_{digest}.cpp"
        paths[digest].write_text(source)
    errors: dict[str, str] = {}
    digests = sorted(paths)
    for i in range(0, len(digests), 8):
        batch = digests[i : i + 8]
        if _gxx([paths[d] for d in batch]) is None:
            continue
        for d in batch:
            if (message := _gxx([paths[d]])) is not None:
                errors[d] = message
    return errors


def _gxx(files: list[Path]) -> str | None:
    command = [compilers.find_cxx(), "-std=c++17", "-fopenmp", "-fsyntax-only", "-I", str(INCLUDE_DIR)]
    result = subprocess.run([*command, *map(str, files)], capture_output=True, text=True, timeout=600, check=False)
    return None if result.returncode == 0 else result.stderr[:3000]


def _run(b: Budget, folder: Path) -> tuple[dict[str, list[str]], Counter[str], int]:
    corpus = load_corpus()
    failures: dict[str, list[str]] = {}
    skipped: Counter[str] = Counter()
    units: dict[str, str] = {}
    unit_case: dict[str, Case] = {}
    ran = 0
    stop = time.monotonic() + b.seconds
    with Child("tests.fuzz.opt_worker") as child:
        for index in range(b.cases):
            if time.monotonic() > stop:
                break
            case = _draw(b.seed, index, corpus, folder)
            issues = KNOWN_ISSUES if known_issues_apply() else ()
            known = next((k for k in issues if k.before_run and k.before_run(case.mutant.text)), None)
            if known is not None:
                skipped[known.name] += 1
                continue
            # the first run imports xDSL and fklir in the child
            reply = child.ask([str(case.path), *case.args], CASE_TIMEOUT_S * (3 if ran == 0 else 1))
            ran += 1
            if (kind := _violation(case, reply)) is not None:
                failures.setdefault(kind, []).append(case.describe(b.seed) + f"\n--- stderr ---\n{_stderr(reply)}")
                continue
            if "cpp" in case.args and reply[0] == 0:  # type: ignore[index]
                for unit in _cpp_units(reply[1]):  # type: ignore[index]
                    digest = hashlib.sha256(unit.encode()).hexdigest()[:16]
                    units.setdefault(digest, unit)
                    unit_case.setdefault(digest, case)
    for digest, message in _syntax_errors(units, folder).items():
        kind = "g++ rejects -t cpp output: " + _first_error(message)
        failures.setdefault(kind, []).append(unit_case[digest].describe(b.seed) + f"\n--- g++ ---\n{message}")
    return failures, skipped, ran


def _stderr(reply: object) -> str:
    if isinstance(reply, Died):
        return reply.stderr_tail
    return reply[2][-2000:]  # type: ignore[index]


def _first_error(message: str) -> str:
    line = next((line for line in message.splitlines() if ": error:" in line), message[:120])
    return re.sub(r"\d+", "N", line.split(": error:", 1)[-1].strip())[:120]


def _known(kind: str) -> KnownIssue | None:
    issues = KNOWN_ISSUES if known_issues_apply() else ()
    return next((k for k in issues if k.failure and re.search(k.failure, kind)), None)


@pytest.mark.skipif(shutil.which(compilers.find_cxx()) is None, reason="no C++ compiler")
def test_fklir_opt_keeps_its_diagnostic_contract_on_mutants(tmp_path: Path) -> None:
    b = budget(default_cases=1000, default_seconds=30.0)
    failures, skipped, ran = _run(b, tmp_path)
    new = {kind: cases for kind, cases in failures.items() if _known(kind) is None}
    for kind, cases in failures.items():
        if (issue := _known(kind)) is not None:
            skipped[issue.name] += len(cases)
    print(f"fklir-opt fuzz: seed {b.seed}, {ran} mutants run; known issues (skipped or failed): {dict(skipped)}")
    report = [f"{kind}: {len(cases)} case(s); first:\n{cases[0]}" for kind, cases in sorted(new.items())]
    assert not new, f"{len(new)} failure class(es)\n\n" + "\n\n".join(report)
