"""The element-wise math ops (SPEC §3): each is one `@math_op` class (a MathUnaryOp or MathValueOp of
abstract_ops.py), its whole declaration. The package imports this module with *: it defines
no other public name."""

from typing import ClassVar as _ClassVar  # underscored: the package's * import takes only the ops

from fklir.dialects.fkl.abstract_ops import MathUnaryOp, MathValueOp, math_op


@math_op
class AbsOp(MathUnaryOp):
    """Abs: |x|; integers keep their type and wrap like C (abs(INT_MIN) == INT_MIN). `fkl.abs %x : T`"""

    name = "fkl.abs"
    FORMULA: _ClassVar[str] = "|x|"
    NUMPY: _ClassVar[str] = "abs"
    KEEPS_INTEGERS: _ClassVar[bool] = True


@math_op
class SqrtOp(MathUnaryOp):
    """Sqrt: the square root (x < 0 -> NaN). `fkl.sqrt %x : T`"""

    name = "fkl.sqrt"
    FORMULA: _ClassVar[str] = "sqrt(x)"
    NUMPY: _ClassVar[str] = "sqrt"


@math_op
class ExpOp(MathUnaryOp):
    """Exp: e^x (overflow -> inf). `fkl.exp %x : T`"""

    name = "fkl.exp"
    FORMULA: _ClassVar[str] = "exp(x)"
    NUMPY: _ClassVar[str] = "exp"


@math_op
class LogOp(MathUnaryOp):
    """Log: the natural logarithm (log(0) = -inf, x < 0 -> NaN). `fkl.log %x : T`"""

    name = "fkl.log"
    FORMULA: _ClassVar[str] = "log(x)"
    NUMPY: _ClassVar[str] = "log"


@math_op
class PowOp(MathValueOp):
    """Pow: x^v (a negative x with a non-integer v -> NaN). `fkl.pow %x, v : T`"""

    name = "fkl.pow"
    FORMULA: _ClassVar[str] = "pow(x, v)"
    NUMPY: _ClassVar[str] = "power"
