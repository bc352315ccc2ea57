"""The reference interpreter's registry: every op of the dialect has exactly one implementation."""

from __future__ import annotations

import pytest
from xdsl.dialects import test as xdsl_test
from xdsl.dialects.builtin import ModuleOp
from xdsl.traits import IsTerminator

from fklir.dialects import fkl
from fklir.interpreters.fkl import IMPLS, impl, run_module


def test_every_dialect_op_that_can_run_has_an_implementation() -> None:
    # A terminator only ends a region its parent op runs, so it needs none; fkl.yield is the only one.
    terminators = [op.name for op in fkl.FKL.operations if op.has_trait(IsTerminator)]
    assert terminators == ["fkl.yield"]
    missing = [op.name for op in fkl.FKL.operations if not op.has_trait(IsTerminator) and op not in IMPLS]
    assert missing == []
    assert set(IMPLS) <= set(fkl.FKL.operations)


def test_an_op_registers_once() -> None:
    before = IMPLS[fkl.MulOp]
    with pytest.raises(ValueError, match=r"'fkl\.mul' already has an implementation"):
        impl(fkl.MulOp)(lambda run, op, kernel_values: None)
    assert IMPLS[fkl.MulOp] is before


def test_an_op_without_implementation_is_refused_by_name() -> None:
    with pytest.raises(NotImplementedError, match=r"no semantics for 'test\.op'"):
        run_module(ModuleOp([xdsl_test.TestOp()]), {})
