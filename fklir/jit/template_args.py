"""cpp_args: Python values as C++ template arguments, e.g. cpp_args("float16", 256, True) == "fkl::f16, 256, true".

A dtype (a name such as "float32", a numpy dtype or scalar type, a torch dtype) becomes its fkl element type
(fklir/dtypes.py; float32 and float64 as the plain `float` and `double`); a bool `true`/`false`; an int a
literal (64-bit: larger ones are refused, not wrapped); a float a literal that reads back as the same double
(a numpy float32 as a `f` literal of the same float). Any other string is C++ text, passed as it is (a
type or constant of the user's own source).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from fklir import dtypes

# The C++ spelling of an element type as a template argument: fkl's typedefs, but the builtin names of the
# two types every C++ reader knows (the same types: fkl::f32 is float).
_BUILTIN_SPELLING = {"float32": "float", "float64": "double"}

_I64_MIN = -(2**63)
_I64_MAX = 2**63 - 1
_U64_MAX = 2**64 - 1


def dtype_name(value: object) -> str | None:
    """The fklir dtype name of a dtype given as a name, numpy dtype or scalar type, or torch dtype; None
    when `value` is not a dtype fklir knows."""
    if isinstance(value, str):
        return value if value in dtypes.BY_NAME else None
    if type(value).__module__ == "torch" and str(value).startswith("torch."):
        name = str(value).removeprefix("torch.")
        return name if name in dtypes.BY_NAME else None
    if isinstance(value, np.dtype) or (isinstance(value, type) and issubclass(value, np.generic)):
        record = dtypes.from_numpy(np.dtype(value))
        return None if record is None else record.name
    return None


def cpp_type(name: str) -> str:
    """The C++ type of a fklir dtype name, as cpp_args writes it."""
    return _BUILTIN_SPELLING.get(name) or dtypes.BY_NAME[name].cpp


def cpp_arg(value: Any) -> str:
    """One value as a C++ template argument (see the module docstring)."""
    if isinstance(value, bool | np.bool_):
        return "true" if value else "false"
    if (name := dtype_name(value)) is not None:
        return cpp_type(name)
    if isinstance(value, str):
        return value
    if isinstance(value, int | np.integer):
        return _integer_literal(int(value))
    if isinstance(value, float | np.floating):
        return _float_literal(value)
    raise TypeError(
        f"cpp_args: cannot write {type(value).__qualname__} {value!r} as a C++ template argument; "
        "expected a bool, int, float, dtype or C++ text"
    )


def cpp_args(*values: Any) -> str:
    """The values as a C++ template argument list, e.g. cpp_args("float32", 256) == "float, 256"."""
    return ", ".join(cpp_arg(value) for value in values)


def _integer_literal(value: int) -> str:
    if not _I64_MIN <= value <= _U64_MAX:
        raise ValueError(f"cpp_args: {value} does not fit a 64-bit C++ integer")
    if value == _I64_MIN:  # `-9223372036854775808` negates a literal that no signed type holds
        return f"({_I64_MIN + 1} - 1)"
    return f"{value}ull" if value > _I64_MAX else str(value)


def _float_literal(value: float | np.floating[Any]) -> str:
    if not math.isfinite(value):
        raise ValueError(f"cpp_args: {value} has no C++ literal (only finite floats do)")
    if isinstance(value, np.floating) and value.dtype == np.float32:
        return f"{float(value)!r}f"  # the float32's exact value, as a float literal
    return repr(float(value))  # the shortest decimal that reads back as the same double
