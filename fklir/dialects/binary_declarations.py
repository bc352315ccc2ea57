"""The arithmetic ops with one value per channel (Add ... Min), each one record: its whole declaration.

The dialect makes each record's IRDL class (`fkl.AddOp`, a BinaryValueOp, in fkl/ops_compute.py), the
frontend its descriptor (`fkl.Add`) from that class, the emitter its statement from `formula` and the op
headers' struct `fkl::<name>`; the reference interpreter computes `word` (numpy in the chain type). This
module imports nothing of xDSL (a fresh process that composes a known chain does not load the dialect).
"""

from typing import NamedTuple


class BinaryDeclaration(NamedTuple):
    """`name` is the descriptor's name (the IR class is `<name>Op`, its C++ struct `fkl::<name>`), `ir_name` the
    op's, `doc` the docstring of both, `formula` the C comment of the emitted statement."""

    name: str
    ir_name: str
    doc: str
    formula: str


BINARY_DECLARATIONS = (
    BinaryDeclaration("Add", "fkl.add", "Add: out = x + v (integers wrap modulo 2^bits).", "x + v"),
    BinaryDeclaration("Sub", "fkl.sub", "Sub: out = x - v (integers wrap modulo 2^bits).", "x - v"),
    BinaryDeclaration("Mul", "fkl.mul", "Mul: out = x * v (integers wrap modulo 2^bits).", "x * v"),
    BinaryDeclaration(
        "Div", "fkl.div", "Div: out = x / v (integers truncate toward zero; v = 0 on integers is rejected).", "x / v"
    ),
    BinaryDeclaration("Max", "fkl.max", "Max: out = x >= v ? x : v.", "x >= v ? x : v"),
    BinaryDeclaration("Min", "fkl.min", "Min: out = x <= v ? x : v.", "x <= v ? x : v"),
)
