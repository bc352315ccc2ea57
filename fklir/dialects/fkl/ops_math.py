"""The element-wise math ops' IRDL classes, one per record of fklir/dialects/math_declarations.py (each record is
the op's whole declaration). The package imports this module with *: it defines no other public name."""

from typing import ClassVar as _ClassVar  # underscored: the package's * import takes only the ops
from typing import cast as _cast

from fklir.dialects.fkl.abstract_ops import MathUnaryOp as _MathUnaryOp
from fklir.dialects.fkl.abstract_ops import MathValueOp as _MathValueOp
from fklir.dialects.fkl.abstract_ops import math_op as _math_op
from fklir.dialects.math_declarations import MATH_DECLARATIONS as _MATH_DECLARATIONS
from fklir.dialects.math_declarations import MathDeclaration as _MathDeclaration


def _op_class(declared: _MathDeclaration) -> type[_MathUnaryOp] | type[_MathValueOp]:
    base = _MathValueOp if declared.takes_value else _MathUnaryOp
    namespace = {
        "__module__": __name__,
        "__qualname__": f"{declared.name}Op",
        "__doc__": declared.doc,
        # IRDL takes a class's unannotated attributes for op fields: the constants are ClassVars
        "__annotations__": {"FORMULA": _ClassVar[str], "NUMPY": _ClassVar[str], "KEEPS_INTEGERS": _ClassVar[bool]},
        "name": declared.ir_name,
        "FORMULA": declared.formula,
        "NUMPY": declared.numpy,
        "KEEPS_INTEGERS": declared.keeps_integers,
    }
    return _math_op(_cast("type[_MathUnaryOp | _MathValueOp]", type(f"{declared.name}Op", (base,), namespace)))


# The package's * import takes every name without an underscore: the op classes alone.
for _declared in _MATH_DECLARATIONS:
    globals()[f"{_declared.name}Op"] = _op_class(_declared)
