"""The fuzz harnesses' own judges: a silent child, a write past `out=`, a bad diagnostic are caught."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import fklir as fkl
from tests.fuzz import compose_worker
from tests.fuzz.child import Child, Died
from tests.fuzz.compose_cases import Case as ComposeCase
from tests.fuzz.compose_worker import _guarded_out, _guards_kept
from tests.fuzz.mlir_mutants import Mutant
from tests.fuzz.test_fuzz_fklir_opt import Case, _cpp_units, _violation
from tests.unit.property_chains import TEMPLATES


def test_a_child_that_ends_without_replying_is_a_crash() -> None:
    with Child("tests.fuzz.child") as child:  # a module without a main: it exits at once
        reply = child.ask("anything", timeout=60)
    assert isinstance(reply, Died) and reply.reason == "crash" and reply.returncode == 0


def test_a_child_that_prints_on_the_reply_channel_is_caught() -> None:
    with Child("this") as child:  # prints the Zen of Python to stdout
        reply = child.ask("anything", timeout=60)
    assert isinstance(reply, Died) and reply.reason == "garbled"


def test_the_guard_check_sees_a_write_past_the_view() -> None:
    rng = np.random.default_rng(5)
    like = np.zeros((3, 5, 2), np.float32)
    buffer, view, before = _guarded_out(like, rng)
    view[...] = 7.0
    assert _guards_kept(buffer, before, like.shape[0])
    buffer[-1, 4, 1] = np.nextafter(buffer[-1, 4, 1], np.float32(np.inf))
    assert not _guards_kept(buffer, before, like.shape[0])
    buffer, view, before = _guarded_out(like, rng)
    buffer[1, 0, 0] += 1
    assert not _guards_kept(buffer, before, like.shape[0])


def test_only_a_located_error_or_success_keeps_the_opt_contract(tmp_path: Path) -> None:
    case = Case(0, Mutant("x.mlir", (), ""), (), tmp_path / "case0.mlir")
    where = str(case.path)
    assert _violation(case, (0, "", "")) is None
    assert _violation(case, (1, "", f"{where}:3:7: error: bad\n  ^")) is None
    assert _violation(case, (1, "", "fklir-opt: error: bad")) == "unlocated diagnostic: fklir-opt: error: bad"
    assert _violation(case, (1, "", "other.mlir:3:7: error: bad")) is not None
    assert _violation(case, (2, "", f"{where}:3:7: error: bad")) == "exit code 2"
    assert _violation(case, (None, "", "Traceback (most recent call last):\n  ...\nKeyError: 'x'")) == (
        "traceback: KeyError: 'x'"
    )
    assert (_violation(case, (1, "", "fklir-opt: internal error: boom")) or "").startswith("internal error")
    assert _violation(case, Died("timeout", None, "")) == "hang"
    assert _violation(case, Died("crash", -11, "")) == "crash (exit status -11)"


def test_cpp_output_splits_into_one_unit_per_kernel() -> None:
    text = (
        "// ---- fkl.kernel @k0 (target cpp) ----\nA\n"
        "// ---- fkl.kernel @k1 (target cpp) ----\nB\n// -----\n"
        "// ---- fkl.kernel @k0 (target cpp) ----\nC\n"
    )
    units = _cpp_units(text)
    assert [u.splitlines()[1] for u in units] == ["A", "B", "C"]
    assert all("// -----\n" not in u for u in units)


def test_the_compose_judge_sees_a_wrong_result(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.random.default_rng(3).standard_normal((3, 5, 2)).astype(np.float32)
    ops = [fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite()]
    case = ComposeCase(ops, x, TEMPLATES[0], out_guard=True, name="judge")
    assert compose_worker.run_case(case) == ("ok", "")
    real = compose_worker.reference
    monkeypatch.setattr(compose_worker, "reference", lambda chain, src: real(chain, src) + 1)
    assert compose_worker.run_case(case)[0] == "wrong"


def test_the_compose_judge_refuses_an_accepted_odd_dtype() -> None:
    ops = [fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite()]
    case = ComposeCase(ops, np.zeros((3, 5), np.int64), TEMPLATES[0], ("dtype <i8",), name="judge")
    verdict, detail = compose_worker.run_case(case)
    assert verdict == "rejected" and "int64" in detail
