"""Values as users write them (SPEC §2), turned into the plain Python values descriptors hold.

A number is a Python int, float or bool, a numpy scalar, a 0-d array or anything numpy can read as one
(a one-element CPU torch tensor); per-channel values are any sequence or 1-D array of them. Integers
(sizes, counts, indices, rects) also take integral floats, never bools, fractions, NaN or infinity.
dtypes are names, numpy dtypes or types, or torch dtypes; interpolations and colour codes are names
or OpenCV's integer constants. Every refusal names the op and the value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from fklir import dtypes
from fklir.dialects import value_rules
from fklir.dialects.color_codes import COLOR_CODES
from fklir.dialects.constants import BORDER_MODES, FLIP_MODES, INTERPOLATIONS, REDUCTIONS, ROTATIONS

# OpenCV's cv2.COLOR_* values of the codes fklir implements; codes that are equal in OpenCV do the same
# (COLOR_BGR2RGB == COLOR_RGB2BGR swaps the outer channels whichever order the pixel has)
CV2_COLOR_CODES = {
    0: "RGB2RGBA",
    1: "RGBA2RGB",
    2: "RGB2BGRA",
    3: "RGBA2BGR",
    4: "RGB2BGR",
    5: "RGBA2BGRA",
    6: "BGR2GRAY",
    7: "RGB2GRAY",
    8: "GRAY2RGB",
    10: "BGRA2GRAY",
    11: "RGBA2GRAY",
}
CV2_INTERPOLATIONS = {0: "nearest", 1: "linear"}  # cv2.INTER_NEAREST, cv2.INTER_LINEAR
# cv2.BORDER_CONSTANT, _REPLICATE, _REFLECT, _WRAP, _REFLECT_101 (= BORDER_DEFAULT)
CV2_BORDERS = {0: "constant", 1: "replicate", 2: "reflect", 3: "wrap", 4: "reflect101"}


def _array(op: str, what: str, v: object) -> np.ndarray[Any, Any]:
    """`v` as a numpy array of real numbers (ints, floats or bools)."""
    if isinstance(v, str | bytes) or v is None:
        raise TypeError(f"{op}: {what} must be numbers, got {v!r}")
    try:
        array = np.asarray(v)
    except (TypeError, ValueError, RuntimeError) as e:  # ragged lists, types numpy lacks, device tensors
        array = _listed(v)
        if array is None:
            raise TypeError(f"{op}: {what} must be numbers, got {v!r} ({e})") from None
    if array.dtype.kind not in "biuf":
        raise TypeError(f"{op}: {what} must be numbers, got {v!r}")
    return array


def _listed(v: object) -> np.ndarray[Any, Any] | None:
    """`v.tolist()` as an array: tensors of types numpy lacks (torch.bfloat16) list their numbers."""
    tolist = getattr(v, "tolist", None)
    if tolist is None:
        return None
    try:
        return np.asarray(tolist())
    except (TypeError, ValueError, RuntimeError, NotImplementedError):
        return None


class PerImage:
    """Values per image of a batch (`fkl.per_image`): row b for image (plane, rect) b, each row one value or
    one per channel. Frozen and compared by its rows: a descriptor holding it is described by it."""

    __slots__ = ("rows",)
    rows: tuple[tuple[float, ...], ...]

    def __init__(self, rows: tuple[tuple[float, ...], ...]):
        object.__setattr__(self, "rows", rows)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("per_image values are frozen")

    def __reduce__(self) -> tuple[type[PerImage], tuple[tuple[tuple[float, ...], ...]]]:
        return (PerImage, (self.rows,))  # pickled through __init__: a pipeline travels to DataLoader workers

    def __repr__(self) -> str:
        return f"per_image({[list(row) for row in self.rows]!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PerImage) and other.rows == self.rows

    def __hash__(self) -> int:
        return hash(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def slot(self, count: int, per_plane: int) -> list[float]:
        """The rows as a per-plane slot of `count` elements, `per_plane` of them a plane, holds them: each row
        expanded to its plane's elements, and the planes past the rows (a kernel compiled for a larger batch,
        which never computes them) filled with row 0, so that every value of the slot is a valid one."""
        from fklir.dialects.value_rules import per_plane_elements

        planes = count // per_plane
        return per_plane_elements([self.row(z) for z in range(planes)], count)

    def check(self, op: str, lengths: tuple[int, ...], what: str) -> int:
        """The rows' length, which must be one of `lengths` (a value: 1 or one per channel; a matrix: 6 or 9)."""
        length = len(self.rows[0])
        if length not in lengths:
            raise ValueError(f"{op}: a per_image row holds {what}, got {length} numbers")
        return length

    def row(self, plane: int) -> tuple[float, ...]:
        """The row of `plane`; row 0 for a plane past the rows (see slot)."""
        return self.rows[plane] if plane < len(self.rows) else self.rows[0]


def per_image(values: object) -> PerImage:
    """Per-image values (SPEC §2): a (B,) or (B, C) array-like (a list, a numpy array, a CPU tensor), or
    (B, 2, 3) / (B, 3, 3) warp matrices; in a call on B images (a batch, a list or the B rects of a Crop)
    image b takes row b. Give it to an op in place of its value: `fkl.Mul(fkl.per_image(brightness))`.
    One kernel serves every set of rows; the op checks its rows as it checks one value."""
    if isinstance(values, PerImage):
        return values
    array = _array("per_image", "values", values)
    if array.ndim == 0 or array.shape[0] == 0 or array.size == 0:
        raise ValueError(f"per_image: give a (B, ...) array of numbers with B >= 1 (row b for image b), got {values!r}")
    table = array.astype(np.float64).reshape(array.shape[0], -1).tolist()
    return PerImage(tuple(tuple(float(v) for v in row) for row in table))


def number(op: str, v: object, what: str = "the value") -> float:
    """One number (int, float or bool, numpy or torch scalar, 0-d array)."""
    if type(v) is float or type(v) is int:
        return float(v)  # the common case, without numpy
    array = _array(op, what, v)
    if array.size != 1 or array.ndim > 1:
        raise TypeError(f"{op}: {what} is one number, got {v!r}")
    return float(array.reshape(()))


def numbers(op: str, v: object, what: str = "values") -> tuple[float, ...]:
    """One number, or one per channel (1 to 4): a sequence, a 1-D array or tensor."""
    if type(v) is float or type(v) is int:
        return (float(v),)
    if isinstance(v, list | tuple) and all(type(x) is float or type(x) is int for x in v):
        values = tuple(float(x) for x in v)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    else:
        array = _array(op, what, v)
        if array.ndim > 1:
            raise ValueError(f"{op}: {what} are one number or one per channel, got shape {array.shape}: {v!r}")
        values = tuple(float(x) for x in array.reshape(-1).tolist())
    if not 1 <= len(values) <= 4:
        raise ValueError(f"{op}: give one value or one per channel (1 to 4), got {len(values)}")
    return values


def integer(op: str, v: object, what: str) -> int:
    """An integer: int, numpy integer, 0-d integer array or an integral float; not a bool."""
    if type(v) is int:
        return v
    if isinstance(v, bool | np.bool_):
        raise TypeError(f"{op}: {what} must be an integer, got {v!r}")
    array = _array(op, what, v)
    if array.ndim != 0 and array.shape != (1,):
        raise TypeError(f"{op}: {what} must be one integer, got {v!r}")
    if array.dtype.kind == "b":
        raise TypeError(f"{op}: {what} must be an integer, got {v!r}")
    value = array.reshape(()).item()
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise ValueError(f"{op}: {what} must be an integer, got {v!r}")
    return int(value)


def channel_count(op: str, v: object) -> int:
    """A pixel's channel count: an integer from 1 to 4 (value_rules.channel_count, the verifier's words)."""
    count = integer(op, v, "the channel count")
    value_rules.channel_count(f"{op}:", count)
    return count


def integers(op: str, v: object, what: str) -> tuple[int, ...]:
    """A sequence, 1-D array or tensor of integers (each as integer() takes it)."""
    if isinstance(v, list | tuple):
        items: list[Any] = list(v)  # pyright: ignore[reportUnknownArgumentType]
    else:
        array = _array(op, what, v)
        if array.ndim != 1:
            raise ValueError(f"{op}: {what} must be a sequence of integers, got {v!r}")
        items = array.tolist()
    return tuple(integer(op, x, what) for x in items)


def unpacked(args: tuple[object, ...]) -> object:
    """The numbers of `f(2, 1, 0)` or of `f(numbers)` (one sequence, 1-D array or tensor)."""
    if len(args) != 1:
        return args
    try:
        return args[0] if np.ndim(args[0]) == 1 else args  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, RuntimeError):
        return args


def rect_list(op: str, v: object) -> Sequence[object] | None:
    """The rows of a list of (x, y, w, h) or an (N, 4) array, each still to be read by rect_ints; None
    for one (x, y, w, h)."""
    if isinstance(v, list | tuple):
        if not v:
            raise ValueError(f"{op}: the rect list is empty")
        if isinstance(v[0], list | tuple):
            return v  # pyright: ignore[reportUnknownVariableType]
    array = _array(op, "a rect", v)
    if array.ndim == 1:
        return None
    if array.ndim != 2 or array.shape[1] != 4:
        raise ValueError(f"{op}: give (x, y, w, h), a list of them or an (N, 4) array, got shape {array.shape}")
    if array.shape[0] == 0:
        raise ValueError(f"{op}: the rect list is empty")
    return array.tolist()


def rect_ints(op: str, r: object) -> tuple[int, int, int, int]:
    """(x, y, w, h) as Python integers (from a sequence, an array or a tensor of 4)."""
    # a tuple of classes, not `tuple | list`: that union is built anew at every call
    if isinstance(r, (tuple, list)) and len(r) == 4:  # pyright: ignore[reportUnknownArgumentType]
        x, y, w, h = r  # pyright: ignore[reportUnknownVariableType]
        if type(x) is int and type(y) is int and type(w) is int and type(h) is int:
            # the common case, without numpy: per-frame rects of a detector (a tuple is taken as it is)
            return r if type(r) is tuple else (x, y, w, h)  # pyright: ignore[reportUnknownVariableType]
    try:
        items = list(r) if isinstance(r, tuple | list) else _array(op, "a rect", r).tolist()  # pyright: ignore[reportUnknownArgumentType]
        if not isinstance(items, list) or len(items) != 4:  # pyright: ignore[reportUnknownArgumentType]
            raise ValueError
        x, y, w, h = (integer(op, x, "a rect") for x in items)  # pyright: ignore[reportUnknownVariableType]
    except (TypeError, ValueError):
        raise ValueError(f"{op}: a rect is (x, y, w, h) of integers, got {r!r}") from None
    return (x, y, w, h)


def dtype_name(op: str, dtype: object) -> str:
    """fklir's name of an element type given as a name, a numpy dtype or type, or a torch dtype."""
    if isinstance(dtype, str):
        name = dtype
    elif type(dtype).__module__ == "torch" and type(dtype).__name__ == "dtype":
        name = str(dtype).removeprefix("torch.")
    elif dtype is None:
        name = None
    else:
        try:
            parsed = np.dtype(dtype)  # pyright: ignore[reportArgumentType, reportCallIssue]
        except (TypeError, ValueError):
            parsed = None
        name = parsed.name if parsed is not None and parsed.isnative and parsed.fields is None else None
    if name is None or name not in dtypes.BY_NAME:
        raise ValueError(f"{op}: unknown dtype {dtype!r}; expected one of {', '.join(dtypes.NAMES)}")
    return name


def interpolation(op: str, interp: object) -> str:
    """ "linear" or "nearest", also as cv2.INTER_LINEAR or cv2.INTER_NEAREST."""
    if isinstance(interp, int | np.integer) and not isinstance(interp, bool):
        name = CV2_INTERPOLATIONS.get(int(interp))
        if name is not None:
            return name
        raise ValueError(
            f"{op}: OpenCV interpolation {interp!r} is not supported; use cv2.INTER_LINEAR (1) or cv2.INTER_NEAREST (0)"
        )
    value_rules.one_of(f"{op}:", "interpolation", interp, INTERPOLATIONS, " (or cv2.INTER_*)")
    return interp  # pyright: ignore[reportReturnType]


def border_mode(op: str, mode: object) -> str:
    """A border mode by name ("reflect101") or as OpenCV's constant (cv2.BORDER_REFLECT_101)."""
    if isinstance(mode, int | np.integer) and not isinstance(mode, bool):
        name = CV2_BORDERS.get(int(mode))
        if name is not None:
            return name
        raise ValueError(
            f"{op}: OpenCV border {mode!r} is not supported; use cv2.BORDER_CONSTANT, _REPLICATE, _REFLECT, "
            "_WRAP or _REFLECT_101"
        )
    value_rules.one_of(f"{op}:", "mode", mode, BORDER_MODES)
    return mode  # pyright: ignore[reportReturnType]


def flip_mode(op: str, mode: object) -> str:
    """ "vertical", "horizontal" or "both", or cv2.flip's flipCode: 0 (vertical), > 0 (horizontal), < 0 (both)."""
    if isinstance(mode, int | np.integer) and not isinstance(mode, bool):
        return "vertical" if mode == 0 else ("horizontal" if mode > 0 else "both")
    value_rules.one_of(f"{op}:", "mode", mode, FLIP_MODES, " or a cv2.flip flipCode (0, 1, -1)")
    return mode  # pyright: ignore[reportReturnType]


def rotation(op: str, code: object) -> str:
    """ "clockwise_90", "turn_180" or "counterclockwise_90", or cv2.ROTATE_90_CLOCKWISE (0), cv2.ROTATE_180 (1),
    cv2.ROTATE_90_COUNTERCLOCKWISE (2)."""
    if isinstance(code, int | np.integer) and not isinstance(code, bool):
        if 0 <= code < len(ROTATIONS):
            return ROTATIONS[int(code)]
        raise ValueError(
            f"{op}: OpenCV rotation {code!r} is not one of cv2.ROTATE_90_CLOCKWISE (0), cv2.ROTATE_180 (1), "
            "cv2.ROTATE_90_COUNTERCLOCKWISE (2)"
        )
    value_rules.one_of(f"{op}:", "code", code, ROTATIONS, " or a cv2.ROTATE_* constant")
    return code  # pyright: ignore[reportReturnType]


def reduction(op: str, word: object) -> str:
    """ "add", "mul", "max" or "min" in any case ("Max" is max)."""
    reduced = word.lower() if isinstance(word, str) else word
    if reduced not in REDUCTIONS:
        value_rules.one_of(f"{op}:", "reduction", word, REDUCTIONS, " (in any case: 'Max' is max)")
    return reduced  # pyright: ignore[reportReturnType]


def color_code(op: str, code: object) -> str:
    """A fklir colour code from "RGB2GRAY", "COLOR_RGB2GRAY" or cv2.COLOR_RGB2GRAY."""
    if isinstance(code, int | np.integer) and not isinstance(code, bool):
        name = CV2_COLOR_CODES.get(int(code))
        if name is None:
            raise ValueError(
                f"{op}: OpenCV colour code {code!r} is not supported; expected one of {', '.join(COLOR_CODES)}"
            )
        return name
    normalised = code.upper().removeprefix("COLOR_") if isinstance(code, str) else ""
    if normalised not in COLOR_CODES:
        value_rules.one_of(f"{op}:", "code", code, tuple(COLOR_CODES), " (in any case, COLOR_ prefixed or not)")
    return normalised


def flag(op: str, v: object, what: str) -> bool:
    """A yes/no argument: a Python or numpy bool (0 and 1 read too, other numbers do not)."""
    if isinstance(v, bool | np.bool_):
        return bool(v)
    if isinstance(v, int | np.integer) and int(v) in (0, 1):
        return bool(v)
    raise TypeError(f"{op}: {what} must be True or False, got {v!r}")
