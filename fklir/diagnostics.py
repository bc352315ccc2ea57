"""Errors that point at the op (and its source location) that caused them.

Parsed ops carry a `FileLineColLoc` (see `LocatingParser`); ops built by the Python frontend carry
the user's call site. Messages read `file:line:col: error: 'fkl.mul' ...` like MLIR's.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException


class OpError(VerifyException):
    """A verification or pass error about one op."""

    def __init__(self, op: Operation, message: str):
        super().__init__(message)
        self.op = op


def location_prefix(op: Operation) -> str:
    """`file:line:col: ` of the op, else of the first op inside it that has one: a pass-made op (an
    outlined fkl.kernel) has no location of its own, but the chain it was made from does."""
    for candidate in op.walk():  # pre-order: the op itself first
        loc = candidate.location
        if isinstance(loc, FileLineColLoc):
            return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}: "
    return ""


def located_message(op: Operation, message: str) -> str:
    return f"{location_prefix(op)}error: {message}"


def first_invalid_op(module: ModuleOp) -> tuple[Operation, str] | None:
    """The first op (pre-order) whose own verifier fails, with the message.

    A verifier that blames a nested op (an `OpError` from a region check) names that op instead.
    """
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except OpError as e:
            return e.op, str(e)
        except VerifyException as e:
            return op, str(e)
    return None


class LocatingParser(Parser):
    """A parser that stamps each parsed op with its `file:line:col` (xDSL records none)."""

    line_offset: int = 0

    def parse_operation(self) -> Operation:
        start = self._current_token.span  # pyright: ignore[reportPrivateUsage]
        where = start.get_location()
        try:
            op = super().parse_operation()
        except (VerifyException, ValueError) as e:
            # a type or attribute whose own verify() fails while it is parsed, or a value that an op's
            # constructor refuses (xDSL's DenseArrayBase raises ValueError out of range): point at the op
            self.raise_error(str(e), start.start, start.end)
        op.location = FileLineColLoc(StringAttr(where.file), IntAttr(where.line + self.line_offset), IntAttr(where.col))
        return op
