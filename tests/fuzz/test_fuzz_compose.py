"""Fuzz compose() on the CPU target: random valid chains (tests/unit/property_chains.py) twisted by
tests/fuzz/compose_cases.py (zero-sized, 1x1 and 1x100000 images, strided and read-only arrays,
NaN/inf data, rects inside, outside, huge, negative and empty, calls with a guarded `out=`).

Invariant: a result equal to the reference interpreter's (tolerances of the property tests), or a
ValueError/TypeError; `out=` never writes outside its view; never a crash. Cases run one at a time
in a child process; a case that kills its child runs once more in a fresh one, so that the report
says whether it crashes alone.

Seeded and time-bounded: FKLIR_FUZZ_SEED, FKLIR_FUZZ_CASES and FKLIR_FUZZ_SECONDS make a larger run
(`FKLIR_FUZZ_CASES=5000 FKLIR_FUZZ_SECONDS=3600 pytest tests/fuzz/test_fuzz_compose.py`). A case is
named `seed S chunk C case I` and redrawn by `compose_cases.draw_cases(S, C, CHUNK)[I]`.
"""

from __future__ import annotations

import pickle
import shutil
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

import fklir as fkl
from fklir.backend import compilers
from tests.fuzz.child import Child, Died, budget, known_issues_apply
from tests.fuzz.compose_cases import TOO_LARGE_TO_RUN, Case, draw_cases

# =============================================================================================
# Known issues: a failure of a case that one of these applies to is counted, not raised; delete
# the entry when its fix lands. `before_run` cases are not run at all (they would allocate GiBs).
# =============================================================================================


@dataclass(frozen=True)
class KnownIssue:
    name: str
    reproduction: str
    applies: Callable[[Case], bool]
    before_run: bool = False


def _too_large_to_run(case: Case) -> bool:
    return any(
        isinstance(op, fkl.Resize) and op.size[0] * op.size[1] * case.template.channels >= TOO_LARGE_TO_RUN
        for op in case.ops
    )


KNOWN_ISSUES: tuple[KnownIssue, ...] = ()

# =============================================================================================

CHUNK = 10
CASE_TIMEOUT_S = 300.0  # a new structure compiles with g++ -O3 on a loaded 2-core machine
FAILURES = (
    "wrong",
    "wrote outside out=",
    "raised",
    "accepted what the reference rejects",
    "rejected a valid case",
    "accepted an unsupported dtype",
    "accepted a size past the index type",
)


def _known(case: Case) -> KnownIssue | None:
    issues = KNOWN_ISSUES if known_issues_apply() else ()
    return next((k for k in issues if k.applies(case)), None)


def _run_alone(case: Case) -> object:
    with Child("tests.fuzz.compose_worker") as child:
        return child.ask(case, CASE_TIMEOUT_S)


@pytest.mark.skipif(shutil.which(compilers.find_cxx()) is None, reason="no C++ compiler")
def test_compose_gives_the_reference_or_a_clear_error(tmp_path: Path) -> None:
    b = budget(default_cases=150, default_seconds=45.0)
    verdicts: Counter[str] = Counter()
    known: Counter[str] = Counter()
    failures: dict[str, list[str]] = {}
    stop = time.monotonic() + b.seconds
    ran = 0
    with Child("tests.fuzz.compose_worker") as child:
        chunk = 0
        while ran < b.cases and time.monotonic() < stop:
            for case in draw_cases(b.seed, chunk, CHUNK):
                if ran >= b.cases or time.monotonic() > stop:
                    break
                if _too_large_to_run(case):
                    verdicts["not run: output too large for a fuzz child"] += 1
                    continue
                issue = _known(case)
                if issue is not None and issue.before_run:
                    known[issue.name] += 1
                    continue
                reply = child.ask(case, CASE_TIMEOUT_S)
                ran += 1
                if isinstance(reply, Died):
                    alone = _run_alone(case)
                    verdict = "crash" if isinstance(alone, Died) else "crash after earlier cases"
                    detail = reply.describe() + f"\nalone in a fresh child: {alone}"
                else:
                    verdict, detail = reply
                if verdict not in (*FAILURES, "crash", "crash after earlier cases"):
                    verdicts[verdict] += 1
                    continue
                if issue is not None:
                    known[issue.name] += 1
                    continue
                saved = tmp_path / f"{case.name.replace(' ', '_')}.pickle"
                saved.write_bytes(pickle.dumps(case))
                failures.setdefault(verdict, []).append(f"{case.describe()}\n  (pickled at {saved})\n{detail}")
            chunk += 1
    print(f"compose fuzz: seed {b.seed}, {ran} cases: {dict(verdicts)}; known issues: {dict(known)}")
    report = [f"{kind}: {len(cases)} case(s); first:\n{cases[0]}" for kind, cases in sorted(failures.items())]
    assert not failures, f"{len(failures)} failure class(es)\n\n" + "\n\n".join(report)
    assert verdicts["ok"] > 0 or ran == 0, "no case ran to a checked result"


def test_the_cases_reach_every_twist() -> None:
    cases = [c for chunk in range(8) for c in draw_cases(0, chunk, CHUNK)]
    twists = {t.split()[0] for c in cases for t in c.twists} | {
        t.split()[1] for c in cases for t in c.twists if t.startswith("rect")
    }
    assert {"empty", "one", "wide", "nan/inf", "rect", "resize"} <= twists, twists
    assert {c.layout for c in cases} == {"contiguous", "strided", "reversed", "fortran", "readonly", "list"}
    assert any(t.startswith("dtype") for c in cases for t in c.twists)
    assert any(c.out_guard for c in cases) and any(isinstance(op, fkl.Crop) for c in cases for op in c.ops)
