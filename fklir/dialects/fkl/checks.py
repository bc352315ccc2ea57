"""Verifier rules the ops share: the chain's element type, the result type, values that must fit the chain."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation
from xdsl.utils.exceptions import VerifyException

from fklir.dialects import value_rules
from fklir.dialects.fkl.types import ImageType, is_float_name, known

R = TypeVar("R")


def check_same_type(op: IRDLOperation, in_type: Attribute, out_type: Attribute) -> None:
    if known(in_type) and known(out_type) and in_type != out_type:
        raise VerifyException(f"'{op.name}' result type {out_type} must equal its input type {in_type}")


def check_not_bool(op: IRDLOperation, in_type: ImageType | None, why: str) -> None:
    if in_type is not None and in_type.dtype == "bool":
        raise VerifyException(f"'{op.name}' {why} on a bool chain; Cast to an integer or float type first")


def check_float(op: IRDLOperation, in_type: ImageType | None) -> None:
    if in_type is not None and not is_float_name(in_type.dtype):
        raise VerifyException(f"'{op.name}' needs a float chain, got {in_type.dtype}")


def check_integer(op: IRDLOperation, in_type: ImageType | None) -> None:
    if in_type is not None and (is_float_name(in_type.dtype) or in_type.dtype == "bool"):
        raise VerifyException(f"'{op.name}' needs an integer chain, got {in_type.dtype}")


def check_result(op: IRDLOperation, expected: ImageType | None, out_type: Attribute) -> None:
    """A known result type must equal what the op's rule gives for its known input."""
    actual = known(out_type)
    if expected is not None and actual is not None and actual != expected:
        raise VerifyException(f"'{op.name}' result type must be {expected}, got {actual}")


def check_no_integer_division_by_zero(op_name: str, values: Sequence[float], dtype: str) -> None:
    int32(value_rules.no_integer_division_by_zero, op_name, values, dtype)


def check_values_fit_chain(op_name: str, values: Sequence[float], channels: int, dtype: str) -> None:
    """The per-channel arity and integer-representability rules of SPEC §3 (raises VerifyException)."""
    int32(value_rules.values_fit_chain, op_name, values, channels, dtype)


def check_values_representable(op_name: str, values: Sequence[float], dtype: str) -> None:
    """Integer (and bool) chains take only integral values inside their range (SPEC §3)."""
    int32(value_rules.values_representable, op_name, values, dtype)


def check_one_of(op: IRDLOperation, what: str, word: str, choices: Sequence[str], also: str = "") -> None:
    """value_rules.one_of, as a verifier error."""
    int32(value_rules.one_of, f"'{op.name}'", what, word, choices, also)


def int32(check: Callable[..., R], *args: object) -> R:
    """`check(*args)`, a fklir.limits check or a rule of dialects/value_rules.py; its ValueError (naming
    the op and the value) becomes a verifier error."""
    try:
        return check(*args)
    except ValueError as e:
        raise VerifyException(str(e)) from None
