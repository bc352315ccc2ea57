"""The rules values must follow to enter a chain (SPEC §3), and how a value becomes its parameter slot. They
import nothing of xDSL: the dialect's verifiers apply them to IR (dialects/fkl/checks.py turns their
ValueError into a verifier error), and a pipeline whose structure is known applies them to its new values
without building IR (jit/pipeline.py), with the same words."""

from __future__ import annotations

import math
from collections.abc import Sequence

from fklir import dtypes
from fklir.dialects.constants import ASPECT_RATIOS, INTERPOLATIONS
from fklir.limits import I32_MAX, check_index, check_span

# A parameter slot that a pipeline fills from its own descriptor's values, without IR: (slot, the
# descriptor's index in its chain, op name, op word, element type and channels of the op's input, slot
# count). frontend.lowering.runtime_values makes them from the IR; plan records keep them.
RecipeStep = tuple[str, int, str, str, str, int, int]


def one_of(op_name: str, what: str, word: object, choices: Sequence[str], also: str = "") -> None:
    """`word` is one of `choices` (`also`: the other spellings the frontend takes, named in the error)."""
    if word not in choices:
        raise ValueError(f"{op_name} {what} must be one of {', '.join(choices)}{also}, got {word!r}")


def blend_alpha(op_name: str, values: Sequence[float]) -> None:
    """A blend's weight: one number, not NaN (any other weight extrapolates, as cv2.addWeighted does)."""
    if len(values) != 1 or math.isnan(values[0]):
        raise ValueError(f"{op_name} takes one alpha, a number (not NaN), got {[float(v) for v in values]}")


def bounds_lengths(op_name: str, lo: Sequence[float], hi: Sequence[float]) -> None:
    """A clamp's lower and upper bounds of one length, or one of them a single value (it serves every channel)."""
    if len(lo) != len(hi) and 1 not in (len(lo), len(hi)):
        raise ValueError(
            f"{op_name} needs lower and upper bounds of one length (or one value), got {[float(v) for v in lo]} and "
            f"{[float(v) for v in hi]}"
        )


def bounds_ordered(op_name: str, lo: Sequence[float], hi: Sequence[float]) -> None:
    """A clamp's lower bounds each at most its upper one (one per channel, or one for all)."""
    if any(a > b for a, b in zip(lo, hi, strict=True)):
        raise ValueError(f"{op_name} lower bound {list(lo)} is above the upper bound {list(hi)}")


def output_size(op_name: str, w: int, h: int) -> None:
    """An output size [w, h] that an op makes (Resize, Warping, ReadSet): positive, and int32 as the kernels hold it."""
    if w <= 0 or h <= 0:
        raise ValueError(f"{op_name} size must be [w, h] with positive values, got [{w}, {h}]")
    for what, value in (("w", w), ("h", h)):
        check_index(f"{op_name} size [{w}, {h}]", what, value, I32_MAX, 1)


def loop_count(op_name: str, n: int) -> None:
    """How many times a StaticLoop applies its op: n >= 1, an int32 (the kernel unrolls over a template int)."""
    if n < 1:
        raise ValueError(f"{op_name} applies its op n >= 1 times, got {n}")
    check_index(op_name, "n", n)


def rect_extent(op_name: str, x: int, y: int, w: int, h: int) -> None:
    """A rect of positive width and height whose columns x .. x + w - 1 and rows y .. y + h - 1 are int32
    indices (a kernel computes x + i for every i < w)."""
    rect = f"{op_name} rect [{x}, {y}, {w}, {h}]"
    if w <= 0 or h <= 0:
        raise ValueError(f"{rect} must have a positive width and height")
    check_span(rect, "", ("x", x), ("w", w))
    check_span(rect, "", ("y", y), ("h", h))


def values_fit_chain(op_name: str, values: Sequence[float], channels: int, dtype: str) -> None:
    """One value or one per channel, each representable in the chain's element type."""
    if len(values) not in (1, channels):
        raise ValueError(
            f"'{op_name}' has {len(values)} values but the chain has {channels} channels "
            "(give one value or one per channel)"
        )
    values_representable(op_name, values, dtype)


def values_representable(op_name: str, values: Sequence[float], dtype: str) -> None:
    """Integer (and bool) chains take only integral values inside their range."""
    if (limits := dtypes.INTEGER_RANGES.get(dtype)) is None:
        return
    lo, hi = limits
    for v in values:
        if not (math.isfinite(v) and v == int(v) and lo <= v <= hi):
            raise ValueError(
                f"'{op_name}' value {v} is not representable in the chain's element type {dtype}; Cast to float first"
            )


def no_integer_division_by_zero(op_name: str, values: Sequence[float], dtype: str) -> None:
    if not dtypes.BY_NAME[dtype].is_float and 0.0 in values:
        raise ValueError(f"'{op_name}' divides an integer chain ({dtype}) by zero")


def arithmetic_values(op_name: str, body: str, values: Sequence[float], channels: int, dtype: str) -> None:
    """The values of `op_name` computing `body` (add ... min) on a chain of `channels` x `dtype`
    (a division: not by zero on integers)."""
    values_fit_chain(op_name, values, channels, dtype)
    if body == "div":
        no_integer_division_by_zero(op_name, values, dtype)


def channel_count(op_name: str, n: int) -> None:
    """A pixel's channel count (what a read makes, what a Discard keeps, a user op's channels): 1 to 4."""
    if not 1 <= n <= 4:
        raise ValueError(f"{op_name} channel count must be from 1 to 4, got {n}")


def reorder_indices(op_name: str, order: Sequence[float], channels: int | None) -> None:
    """1 to 4 source channel indices, each one of the chain's `channels` (when known; else of a pixel's 4)."""
    if not 1 <= len(order) <= 4:
        raise ValueError(f"{op_name} takes 1 to 4 channel indices, got {len(order)}")
    limit = 4 if channels is None else channels
    bad = [int(i) for i in order if not 0 <= i < limit]  # integers on both layers (IR arrays, descriptors' ints)
    if bad:
        chain = "a pixel (at most 4 channels)" if channels is None else f"a chain of {channels} channels"
        raise ValueError(f"{op_name} channel indices {bad} are out of range for {chain}")


MATRIX_SHAPES = {6: "2x3", 9: "3x3"}  # a matrix's numbers, row-major: its shape


def matrix_numbers(op_name: str, numbers: Sequence[float], counts: Sequence[int]) -> None:
    """A matrix given row-major: as many numbers as one of its shapes holds (`counts`: 6 for 2x3, 9 for 3x3),
    each finite."""
    if len(numbers) not in counts:
        raise ValueError(f"{op_name} needs a {matrix_shapes(counts)} matrix, got {len(numbers)} numbers")
    if not all(math.isfinite(v) for v in numbers):
        raise ValueError(f"{op_name} matrix must be finite, got {[float(v) for v in numbers]}")


def matrix_shapes(counts: Sequence[int]) -> str:
    """The shapes of matrices of `counts` numbers, "2x3 or 3x3"."""
    return " or ".join(MATRIX_SHAPES[count] for count in counts)


def resize_options(op_name: str, interp: str, aspect_ratio: str, has_background: bool) -> None:
    """A resize's interpolation and aspect-ratio mode, and a background exactly when the mode keeps the aspect
    ratio (it fills the letterbox)."""
    one_of(op_name, "interpolation", interp, INTERPOLATIONS)
    one_of(op_name, "aspect ratio", aspect_ratio, ASPECT_RATIOS)
    if aspect_ratio == "ignore" and has_background:
        raise ValueError(f"{op_name} background is used only with a preserve aspect-ratio mode, not 'ignore'")
    if aspect_ratio != "ignore" and not has_background:
        raise ValueError(f"{op_name} aspect ratio {aspect_ratio!r} needs a background value (background=...)")


def per_element(values: Sequence[float], count: int) -> list[float]:
    """A broadcast value expanded to `count` elements, so a scalar and a tuple share one structure."""
    return list(values) * count if len(values) == 1 else list(values)


def plane_rows(op_name: str, values: Sequence[float], planes: int) -> list[tuple[float, ...]]:
    """The values of a per-plane op (row z for plane z, rows of one length) split into their rows."""
    if planes <= 0 or not values or len(values) % planes:
        raise ValueError(
            f"'{op_name}' has {len(values)} per-plane values for {planes} planes (give one row of values per plane)"
        )
    n = len(values) // planes
    return [tuple(values[z * n : (z + 1) * n]) for z in range(planes)]


def per_plane_elements(rows: Sequence[Sequence[float]], count: int) -> list[float]:
    """Rows of per-plane values laid out as a slot of `count` elements holds them: each row expanded to
    count / planes elements, one after the other."""
    per_row = count // len(rows)
    return [v for row in rows for v in per_element(row, per_row)]
