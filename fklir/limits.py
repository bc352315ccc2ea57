"""The index types of the emitted kernels, and the one check that every size, offset and product of
sizes goes through before it reaches them.

The kernels hold widths, heights, plane counts and rect coordinates as 32-bit signed integers
(`fkl::KernelHeader`, `fkl::Rect`, `fkl::Size`), a resampling kernel addresses the elements of one
source plane with unsigned 32-bit offsets, and strides and element counts are 64-bit signed. A value
that does not fit would wrap around in the parameter block (ctypes truncates silently) and the
kernel would read or write the wrong pixels, so it is refused here with an error that names the op,
the value and the limit. No imports: every layer may use it.
"""

from __future__ import annotations

from collections.abc import Sequence

I32_MIN = -(2**31)
I32_MAX = 2**31 - 1
U32_MAX = 2**32 - 1
I64_MAX = 2**63 - 1

_TYPE_OF_LIMIT = {I32_MAX: "int32", U32_MAX: "uint32", I64_MAX: "int64"}


def check_index(op: str, what: str, value: int, limit: int = I32_MAX, low: int = 0, hint: str = "") -> int:
    """`value` when low <= value <= limit, else ValueError naming `op`, `what`, the value and the
    limit it breaks (and `hint`, what to do instead)."""
    if low <= value <= limit:
        return value
    kind = _TYPE_OF_LIMIT.get(limit, "") if value > limit else ""
    index = f" (the kernel's {kind} index)" if kind else ""
    broken = f"exceeds the limit {limit}" if value > limit else f"is below the limit {low}"
    raise ValueError(f"{op}: {what} = {value} {broken}{index}" + (f"; {hint}" if hint else ""))


def check_product(op: str, what: str, factors: Sequence[int], limit: int = I64_MAX, hint: str = "") -> int:
    """The product of `factors` when it is at most `limit` (e.g. an image's element count B*H*W*C)."""
    product = 1
    for f in factors:
        product *= f
    return check_index(op, f"{what} {' x '.join(str(f) for f in factors)}", product, limit, 0, hint)


def check_span(op: str, what: str, start: tuple[str, int], length: tuple[str, int]) -> None:
    """An int32 run of indices (a rect's columns x .. x + w - 1): `start` and `length` are (name, value);
    the first and the last index and the length must all be int32, as a kernel computes start + i for
    every i < length."""
    (s, first), (n, count) = start, length
    check_index(op, f"{what}{s}", first, I32_MAX, I32_MIN)
    check_index(op, f"{what}{n}", count, I32_MAX, 1)
    check_index(op, f"{what}{s} + {n} - 1", first + count - 1, I32_MAX, I32_MIN)
