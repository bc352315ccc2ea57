"""The element-wise math ops (SPEC §3): each is one `@math_op` class (a MathUnaryOp or MathValueOp of
abstract_ops.py), its whole declaration."""

from __future__ import annotations

from typing import ClassVar

from fklir.dialects.fkl.abstract_ops import MathUnaryOp, MathValueOp, math_op


@math_op
class AbsOp(MathUnaryOp):
    """Abs: |x|; integers keep their type and wrap like C (abs(INT_MIN) == INT_MIN). `fkl.abs %x : T`"""

    name = "fkl.abs"
    FORMULA: ClassVar[str] = "|x|"
    NUMPY: ClassVar[str] = "abs"
    KEEPS_INTEGERS: ClassVar[bool] = True


@math_op
class SqrtOp(MathUnaryOp):
    """Sqrt: the square root (x < 0 -> NaN). `fkl.sqrt %x : T`"""

    name = "fkl.sqrt"
    FORMULA: ClassVar[str] = "sqrt(x)"
    NUMPY: ClassVar[str] = "sqrt"


@math_op
class ExpOp(MathUnaryOp):
    """Exp: e^x (overflow -> inf). `fkl.exp %x : T`"""

    name = "fkl.exp"
    FORMULA: ClassVar[str] = "exp(x)"
    NUMPY: ClassVar[str] = "exp"


@math_op
class LogOp(MathUnaryOp):
    """Log: the natural logarithm (log(0) = -inf, x < 0 -> NaN). `fkl.log %x : T`"""

    name = "fkl.log"
    FORMULA: ClassVar[str] = "log(x)"
    NUMPY: ClassVar[str] = "log"


@math_op
class PowOp(MathValueOp):
    """Pow: x^v (a negative x with a non-integer v -> NaN). `fkl.pow %x, v : T`"""

    name = "fkl.pow"
    FORMULA: ClassVar[str] = "pow(x, v)"
    NUMPY: ClassVar[str] = "power"
