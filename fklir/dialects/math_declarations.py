"""The element-wise math ops (SPEC §3), each one record: its whole declaration.

The dialect makes each record's IRDL class (`fkl.AbsOp`, in fkl/ops_math.py), the reference interpreter
and the emitter read that class, and the frontend makes each record's descriptor (`fkl.Abs`) from the
record alone: this module imports nothing of xDSL, so composing a known chain does not load the dialect
(and its record is a named tuple, which a fresh process defines faster than a dataclass).
"""

from typing import NamedTuple


class MathDeclaration(NamedTuple):
    """`name` is the descriptor's name (the IR class is `<name>Op`, its C++ struct `fkl::<name>`), `doc`
    both's docstring. `formula` is the C comment of the emitted statement; `numpy` names the numpy ufunc (or
    interpreters/semantics.py's COMPOSED function) that is the op's semantics (in float64, then rounded to the
    chain type; on integers in int64, then wrapped). `keeps_integers`: integer chains are allowed;
    `takes_value`: one value per channel, like `Add(v)` (a MathValueOp), else none (a MathUnaryOp)."""

    name: str
    ir_name: str
    doc: str
    formula: str
    numpy: str
    keeps_integers: bool = False
    takes_value: bool = False


MATH_DECLARATIONS = (
    MathDeclaration(
        "Abs",
        "fkl.abs",
        "Abs: |x|; integers keep their type and wrap like C (abs(INT_MIN) == INT_MIN). `fkl.abs %x : T`",
        formula="|x|",
        numpy="abs",
        keeps_integers=True,
    ),
    MathDeclaration(
        "Sqrt", "fkl.sqrt", "Sqrt: the square root (x < 0 -> NaN). `fkl.sqrt %x : T`", formula="sqrt(x)", numpy="sqrt"
    ),
    MathDeclaration("Exp", "fkl.exp", "Exp: e^x (overflow -> inf). `fkl.exp %x : T`", formula="exp(x)", numpy="exp"),
    MathDeclaration(
        "Log",
        "fkl.log",
        "Log: the natural logarithm (log(0) = -inf, x < 0 -> NaN). `fkl.log %x : T`",
        formula="log(x)",
        numpy="log",
    ),
    MathDeclaration(
        "Pow",
        "fkl.pow",
        "Pow: x^v (a negative x with a non-integer v -> NaN). `fkl.pow %x, v : T`",
        formula="pow(x, v)",
        numpy="power",
        takes_value=True,
    ),
    MathDeclaration(
        "AbsDiff",
        "fkl.absdiff",
        "AbsDiff: |x - v| (cv2.absdiff with a value); integers wrap like C (int8: |-128 - 127| = 255 -> -1). "
        "`fkl.absdiff %x, v : T`",
        formula="|x - v|",
        numpy="absdiff",
        keeps_integers=True,
        takes_value=True,
    ),
    MathDeclaration(
        "Threshold",
        "fkl.threshold",
        "Threshold: 1 where x > v, else 0, in the chain type (NaN -> 0; cv2.threshold's THRESH_BINARY with maxval "
        "1). `fkl.threshold %x, v : T`",
        formula="x > v ? 1 : 0",
        numpy="greater",
        keeps_integers=True,
        takes_value=True,
    ),
)
