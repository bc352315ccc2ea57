"""Reference semantics of the fkl op catalogue (SPEC §3) as pure numpy functions.

This module is the oracle that the compiler is tested against: it knows nothing about the IR or
any backend.  An image state is an :class:`Image` -- a 4-D ``(B, H, W, C)`` numpy array in the
chain's REAL element type plus the dtype name -- so wrap-around and rounding are exact:

- integer chains compute in int64 and wrap modulo 2**bits (two's complement) after each op;
- float chains compute in float64 and round to the chain type after each op (float32/float16 via
  ``astype``, bfloat16 via :func:`round_to_bfloat16`).  One float64 step followed by one rounding
  equals the correctly rounded operation in the chain type for + - * / (float64 has more than
  2p + 2 bits for every p <= 24), so a backend that computes in the chain type natively agrees
  bit for bit;
- op values (factors, bounds, fill values) are first converted to the chain type, exactly as they
  travel in the launch parameter block.

bfloat16 data is carried in float32 arrays whose values are all representable in bfloat16.

Geometry lives in :mod:`semantics_geometry` and colour conversion in :mod:`semantics_color`,
both built on this module's :class:`Image` and dtype helpers.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeAlias

import numpy as np
from numpy.typing import NDArray

from fklir import dtypes

__all__ = [
    "ARITH_OPS",
    "DTYPES",
    "REDUCE_OPS",
    "DTypeInfo",
    "Image",
    "Values",
    "add_last",
    "arith",
    "cast",
    "discard",
    "dtype_info",
    "dtype_name_of",
    "elementwise",
    "from_planar",
    "is_even",
    "mxv_float3",
    "per_channel_values",
    "read",
    "read_set",
    "round_to_bfloat16",
    "round_to_dtype",
    "saturate",
    "saturate_cast",
    "saturate_float",
    "to_planar",
    "to_tsplit",
    "value_in_dtype",
    "vector_and",
    "vector_reduce",
    "vector_reorder",
    "wrap_to_dtype",
    "write",
]

# A scalar broadcasts over channels; a sequence is per channel.
Values: TypeAlias = float | int | Sequence[float] | Sequence[int]


# --------------------------------------------------------------------------------------------
# Element types
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DTypeInfo:
    """What the reference needs to know about one element type (a view of its fklir.dtypes record)."""

    name: str
    storage: np.dtype[Any]  # numpy dtype of the carrying array (float32 for bfloat16)
    is_float: bool
    is_signed: bool
    bits: int
    lo: float  # smallest finite value
    hi: float  # largest finite value


def _info(record: dtypes.DType) -> DTypeInfo:
    return DTypeInfo(record.name, record.carrier, record.is_float, record.is_signed, record.bits, record.lo, record.hi)


DTYPES: Final[dict[str, DTypeInfo]] = {record.name: _info(record) for record in dtypes.DTYPES}


def dtype_info(dtype: str, op: str = "dtype") -> DTypeInfo:
    """Look up an element type by name; unknown names are a ValueError that names ``op``."""
    info = DTYPES.get(dtype)
    if info is None:
        raise ValueError(f"{op}: unknown element type {dtype!r}; expected one of {sorted(DTYPES)}")
    return info


def _is_integer(info: DTypeInfo) -> bool:
    return not info.is_float and info.name != "bool"


# --------------------------------------------------------------------------------------------
# Rounding to an element type
# --------------------------------------------------------------------------------------------


def _round_float32_bits_to_bfloat16(a: NDArray[np.float32]) -> NDArray[np.float32]:
    bits = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    lsb = (bits >> np.uint32(16)) & np.uint32(1)
    # Round to nearest even on the upper 16 bits; a carry into the exponent correctly gives the
    # next binade or infinity.  No non-NaN pattern overflows uint32 here.
    rounded = (bits + np.uint32(0x7FFF) + lsb) & np.uint32(0xFFFF0000)
    is_nan = np.isnan(a)
    # Truncating a NaN whose payload sits in the low bits would make it an infinity: keep it quiet.
    nan_bits = (bits & np.uint32(0xFFFF0000)) | np.uint32(0x00400000)
    return np.where(is_nan, nan_bits, rounded).astype(np.uint32).view(np.float32)


def _round_float64_to_bfloat16(a: NDArray[np.float64]) -> NDArray[np.float32]:
    # Going through float32 first would round twice; round the float64 value directly to
    # 8 significant bits (fewer for bfloat16 subnormals, whose quantum is 2**-133).
    with np.errstate(invalid="ignore", over="ignore"):
        _, exponent = np.frexp(a)
        quantum_exp = np.maximum(exponent.astype(np.int64) - 8, -133)
        scaled = np.rint(np.ldexp(a, -quantum_exp))
        rounded = np.ldexp(scaled, quantum_exp)
        special = ~np.isfinite(a) | (a == 0)
        rounded = np.where(special, a, rounded)
        # Values that round past the largest finite bfloat16 become infinities (IEEE overflow).
        rounded = np.where(np.abs(rounded) > DTYPES["bfloat16"].hi, np.copysign(np.inf, rounded), rounded)
    return rounded.astype(np.float32)


def round_to_bfloat16(a: np.ndarray) -> NDArray[np.float32]:
    """Round to the nearest bfloat16 (ties to even), returned as float32; NaN stays NaN.

    float32 input is rounded on its bit pattern; float64 input is rounded directly (no double
    rounding through float32); other inputs are converted to float64 first.
    """
    arr = np.asarray(a)
    if arr.dtype == np.float32:
        return _round_float32_bits_to_bfloat16(arr)
    return _round_float64_to_bfloat16(arr.astype(np.float64))


def round_to_dtype(values: np.ndarray, dtype: str) -> np.ndarray:
    """Round float64 results to a float element type (the storage array of that type)."""
    info = dtype_info(dtype, "round_to_dtype")
    if not info.is_float:
        raise ValueError(f"round_to_dtype: {dtype!r} is not a float type")
    arr = np.asarray(values, dtype=np.float64)
    if dtype == "bfloat16":
        return round_to_bfloat16(arr)
    with np.errstate(over="ignore"):
        return arr.astype(info.storage)


def wrap_to_dtype(values: np.ndarray, dtype: str) -> np.ndarray:
    """Wrap int64 results modulo 2**bits into an integer element type (two's complement)."""
    info = dtype_info(dtype, "wrap_to_dtype")
    if not _is_integer(info):
        raise ValueError(f"wrap_to_dtype: {dtype!r} is not an integer type")
    # numpy integer -> integer casts are modular, exactly the C/CUDA behaviour on two's complement.
    return np.asarray(values, dtype=np.int64).astype(info.storage)


def _to_float64(img: Image) -> NDArray[np.float64]:
    return img.data.astype(np.float64)


def _to_int64(img: Image) -> NDArray[np.int64]:
    return img.data.astype(np.int64)


# --------------------------------------------------------------------------------------------
# The image state
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Image:
    """One chain state: ``data`` is (B, H, W, C) in the storage type of ``dtype``; B, H and W may be
    0 (SPEC's edge inputs: an empty image flows through the chain with the shape it implies)."""

    data: np.ndarray
    dtype: str

    def __post_init__(self) -> None:
        info = dtype_info(self.dtype, "Image")
        if self.data.ndim != 4:
            raise ValueError(f"Image: data must be 4-D (B, H, W, C), got shape {self.data.shape}")
        channels = self.data.shape[3]
        if not 1 <= channels <= 4:
            raise ValueError(f"Image: {channels} channels; fkl pixels have 1 to 4 channels")
        if self.data.dtype != info.storage:
            raise ValueError(
                f"Image: a {self.dtype} image is carried as {info.storage}, got array dtype {self.data.dtype}"
            )

    @property
    def batch(self) -> int:
        return int(self.data.shape[0])

    @property
    def height(self) -> int:
        return int(self.data.shape[1])

    @property
    def width(self) -> int:
        return int(self.data.shape[2])

    @property
    def channels(self) -> int:
        return int(self.data.shape[3])

    @property
    def info(self) -> DTypeInfo:
        return DTYPES[self.dtype]


def _float_image(values: np.ndarray, dtype: str) -> Image:
    return Image(round_to_dtype(values, dtype), dtype)


def _int_image(values: np.ndarray, dtype: str) -> Image:
    return Image(wrap_to_dtype(values, dtype), dtype)


# --------------------------------------------------------------------------------------------
# Op values
# --------------------------------------------------------------------------------------------


def per_channel_values(values: Values, channels: int, op: str) -> tuple[float, ...]:
    """Broadcast a scalar, or check a per-channel tuple against the chain's channel count."""
    if isinstance(values, int | float | np.integer | np.floating):
        return (float(values),) * channels
    seq = tuple(float(v) for v in values)
    if len(seq) == 1:
        return seq * channels
    if len(seq) != channels:
        raise ValueError(f"{op}: {len(seq)} values {seq} for a chain of {channels} channels")
    return seq


def value_in_dtype(value: float, dtype: str, op: str) -> float | int:
    """Convert one op value to the chain type the way the parameter block carries it.

    Integer types need an exactly representable integral value (otherwise the op cannot mean
    what the user wrote: "Cast to float first"); float types round to the nearest value.
    """
    info = dtype_info(dtype, op)
    if info.is_float:
        return float(round_to_dtype(np.array([value]), dtype)[0])
    if np.isnan(value) or value != np.floor(value) or not info.lo <= value <= info.hi:
        hint = "; Cast to float first" if _is_integer(info) else ""
        raise ValueError(f"{op}: value {value!r} is not representable in {dtype}{hint}")
    return int(value)


def _channel_vector(values: Values, img: Image, op: str) -> np.ndarray:
    """Per-channel op values as an array that broadcasts against (B, H, W, C) data."""
    per_channel = per_channel_values(values, img.channels, op)
    converted = [value_in_dtype(v, img.dtype, op) for v in per_channel]
    if img.info.is_float:
        return np.array(converted, dtype=np.float64)
    return np.array(converted, dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Memory: read / write / layouts
# --------------------------------------------------------------------------------------------


def read(array: np.ndarray, dtype: str) -> Image:
    """TensorRead: a packed host array as a chain state.

    (H, W) is one scalar plane, (H, W, C) one plane of C channels, (B, H, W, C) B planes.  A
    (B, H, W) scalar tensor is ambiguous with (H, W, C), so the caller passes it as 4-D.
    """
    info = dtype_info(dtype, "read")
    arr = np.asarray(array)
    if arr.dtype != info.storage:
        raise ValueError(f"read: a {dtype} input is carried as {info.storage}, got {arr.dtype}")
    if arr.ndim == 2:
        arr = arr[None, :, :, None]
    elif arr.ndim == 3:
        if not 1 <= arr.shape[2] <= 4:
            raise ValueError(
                f"read: a 3-D input is (H, W, C) with C in 1..4, got shape {arr.shape}; "
                "pass a (B, H, W) tensor as (B, H, W, 1)"
            )
        arr = arr[None]
    elif arr.ndim != 4:
        raise ValueError(f"read: expected (H, W), (H, W, C) or (B, H, W, C), got shape {arr.shape}")
    if dtype == "bfloat16":
        rounded = round_to_bfloat16(arr)
        exact = (rounded == arr) | (np.isnan(rounded) & np.isnan(arr))
        if not bool(exact.all()):
            raise ValueError("read: a bfloat16 input holds float32 values that are not bfloat16 values")
    return Image(np.array(arr, copy=True), dtype)


def write(img: Image) -> np.ndarray:
    """TensorWrite: (H, W) for one scalar plane, (H, W, C) for one plane, (B, H, W[, C]) else."""
    data = img.data[0] if img.batch == 1 else img.data
    return (data[..., 0] if img.channels == 1 else data).copy()


def read_set(value: Values, w: int, h: int, dtype: str, channels: int) -> Image:
    """ReadSet(value, w, h): a constant generator of one plane, no memory read."""
    if w < 1 or h < 1:
        raise ValueError(f"read_set: size {w}x{h} must be at least 1x1")
    if not 1 <= channels <= 4:
        raise ValueError(f"read_set: {channels} channels; fkl pixels have 1 to 4 channels")
    info = dtype_info(dtype, "read_set")
    per_channel = [value_in_dtype(v, dtype, "read_set") for v in per_channel_values(value, channels, "read_set")]
    pixel = np.array(per_channel, dtype=np.float64 if info.is_float else np.int64)
    data = np.broadcast_to(pixel, (1, h, w, channels))
    if info.is_float:
        return _float_image(data, dtype)
    if dtype == "bool":
        return Image(data.astype(np.bool_), dtype)
    return _int_image(data, dtype)


def to_planar(img: Image) -> np.ndarray:
    """TensorSplit: packed (B, H, W, C) -> planar (B, C, H, W)."""
    return np.ascontiguousarray(img.data.transpose(0, 3, 1, 2))


def dtype_name_of(array: np.ndarray) -> str:
    """The element type an array carries natively (float32 arrays read as float32, not bfloat16)."""
    for name, info in DTYPES.items():
        if name != "bfloat16" and info.storage == array.dtype:
            return name
    raise ValueError(f"dtype_name_of: numpy dtype {array.dtype} is not an fkl element type")


def from_planar(array: np.ndarray, dtype: str | None = None) -> Image:
    """TensorPack: planar (B, C, H, W) -- or (C, H, W) for one plane -- back to packed pixels.

    ``dtype`` defaults to the array's own type; pass "bfloat16" for bfloat16 data in float32.
    """
    arr = np.asarray(array)
    dtype = dtype if dtype is not None else dtype_name_of(arr)
    if arr.ndim == 3:
        arr = arr[None]
    if arr.ndim != 4:
        raise ValueError(f"from_planar: expected (C, H, W) or (B, C, H, W), got shape {arr.shape}")
    info = dtype_info(dtype, "from_planar")
    if arr.dtype != info.storage:
        raise ValueError(f"from_planar: a {dtype} input is carried as {info.storage}, got {arr.dtype}")
    return Image(np.ascontiguousarray(arr.transpose(0, 2, 3, 1)), dtype)


def to_tsplit(img: Image) -> np.ndarray:
    """TensorTSplit: packed (B, H, W, C) -> (C, B, H, W)."""
    return np.ascontiguousarray(img.data.transpose(3, 0, 1, 2))


# --------------------------------------------------------------------------------------------
# Arithmetic
# --------------------------------------------------------------------------------------------

ARITH_OPS: Final = ("add", "sub", "mul", "div", "max", "min")


def _select_max(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # max(a, b) = a >= b ? a : b -- a NaN pixel gives the value, a NaN value gives NaN.
    return np.where(a >= b, a, b)


def _select_min(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.where(a <= b, a, b)


def _int_div_trunc(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    # C division truncates toward zero; numpy's // floors.
    quotient = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -quotient, quotient)


_FLOAT_OPS: Final[dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "max": _select_max,
    "min": _select_min,
}

_INT_OPS: Final[dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,  # int64 products wrap modulo 2**64, a multiple of 2**bits: still exact
    "div": _int_div_trunc,
    "max": _select_max,
    "min": _select_min,
}


def arith(op: str, img: Image, values: Values) -> Image:
    """Add/Sub/Mul/Div/Max/Min(v): ``pixel op v`` per channel; the chain keeps its element type."""
    name = op.lower()
    if name not in ARITH_OPS:
        raise ValueError(f"arith: unknown op {op!r}; expected one of {ARITH_OPS}")
    label = name.capitalize()
    if img.dtype == "bool":
        if name not in ("max", "min"):
            raise ValueError(f"{label}: arithmetic on a bool chain; Cast to an integer or float type first")
        # max/min of bools select (an OR / AND with the value); the value must be 0 or 1
        operand = _channel_vector(values, img, label).astype(np.bool_)
        return Image(_INT_OPS[name](img.data, operand), "bool")
    operand = _channel_vector(values, img, label)
    if img.info.is_float:
        with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are the semantics
            return _float_image(_FLOAT_OPS[name](_to_float64(img), operand), img.dtype)
    if name == "div" and bool((operand == 0).any()):
        raise ValueError(f"Div: integer division by zero (values {tuple(operand.tolist())})")
    with np.errstate(over="ignore"):
        return _int_image(_INT_OPS[name](_to_int64(img), operand), img.dtype)


# --------------------------------------------------------------------------------------------
# Casts
# --------------------------------------------------------------------------------------------


def _float_to_int_c(values: NDArray[np.float64], info: DTypeInfo) -> np.ndarray:
    # C conversion truncates toward zero.  Out-of-range is unspecified in the SPEC; the reference
    # wraps modulo 2**bits (fmod by a power of two is exact) and maps NaN/inf to 0.
    finite = np.isfinite(values)
    truncated = np.trunc(np.where(finite, values, 0.0))
    wrapped = np.fmod(truncated, float(2**info.bits))
    return wrapped.astype(np.int64).astype(info.storage)


def cast(img: Image, to: str) -> Image:
    """Cast(dtype): C conversion (float -> int truncates toward zero; -> bool is ``x != 0``)."""
    target = dtype_info(to, "Cast")
    source = img.info
    if to == "bool":
        return Image(img.data != 0, to)
    if target.is_float:
        values = _to_float64(img)  # every integer up to 32 bits is exact in float64
        return _float_image(values, to)
    if source.is_float:
        return Image(_float_to_int_c(_to_float64(img), target), to)
    return _int_image(_to_int64(img), to)


def saturate_cast(img: Image, to: str) -> Image:
    """SaturateCast(dtype): clamp to the target range, then round half to even; NaN -> 0.

    Float targets clamp to their finite range (an infinity becomes the largest finite value) and
    keep NaN.  A bool target is the integer range [0, 1]: 0.5 -> False, 0.7 -> True, 3 -> True,
    -2 -> False, NaN -> False.
    """
    target = dtype_info(to, "SaturateCast")
    if target.is_float:
        clamped = np.clip(_to_float64(img), target.lo, target.hi)
        return _float_image(clamped, to)
    if img.info.is_float:
        values = _to_float64(img)
        values = np.where(np.isnan(values), 0.0, values)
        # The bounds are integers, so clamp-then-round equals round-then-clamp.
        rounded = np.rint(np.clip(values, target.lo, target.hi)).astype(np.int64)
    else:
        rounded = np.clip(_to_int64(img), int(target.lo), int(target.hi))
    if to == "bool":
        return Image(rounded != 0, to)
    return Image(rounded.astype(target.storage), to)


def saturate(img: Image, lo: Values, hi: Values) -> Image:
    """Saturate(lo, hi): clamp each channel to [lo, hi] in the chain type; NaN stays NaN."""
    if img.dtype == "bool":
        raise ValueError("Saturate: clamping a bool chain")
    low = _channel_vector(lo, img, "Saturate")
    high = _channel_vector(hi, img, "Saturate")
    if bool((low > high).any()):
        raise ValueError(f"Saturate: lower bound {tuple(low.tolist())} above upper bound {tuple(high.tolist())}")
    if img.info.is_float:
        return _float_image(np.clip(_to_float64(img), low, high), img.dtype)
    return _int_image(np.clip(_to_int64(img), low, high), img.dtype)


def saturate_float(img: Image) -> Image:
    """SaturateFloat: clamp a float chain to [0, 1]."""
    if not img.info.is_float:
        raise ValueError(f"SaturateFloat: needs a float chain, got {img.dtype}")
    return _float_image(np.clip(_to_float64(img), 0.0, 1.0), img.dtype)


# Element-wise semantics that numpy has no single ufunc for, by the name a math declaration gives.
COMPOSED: dict[str, Callable[..., NDArray[Any]]] = {"absdiff": lambda x, v: np.abs(np.subtract(x, v))}


def elementwise(ufunc: str, img: Image, values: Values | None, integers: bool, op: str) -> Image:
    """An element-wise math op (Abs, Sqrt, Exp, Log, Pow(v)): numpy's `ufunc` of each element (and
    the channel's value, converted to the chain type first), in float64 rounded to the chain type.

    `integers`: whether integer chains are allowed (Abs), computed in int64 and wrapped like C
    (abs(INT_MIN) == INT_MIN); otherwise an integer chain is an error that says "Cast to float first".
    """
    if img.dtype == "bool" or (not img.info.is_float and not integers):
        raise ValueError(f"{op}: needs a float chain, got {img.dtype}; Cast to float first")
    func = COMPOSED.get(ufunc) or getattr(np, ufunc)
    operands = () if values is None else (_channel_vector(values, img, op),)
    if img.info.is_float:
        with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are the semantics
            return _float_image(func(_to_float64(img), *operands), img.dtype)
    with np.errstate(over="ignore"):
        return _int_image(func(_to_int64(img), *operands), img.dtype)


# --------------------------------------------------------------------------------------------
# Logic
# --------------------------------------------------------------------------------------------


def is_even(img: Image) -> Image:
    """IsEven: integer -> bool, per channel."""
    if not _is_integer(img.info):
        raise ValueError(f"IsEven: needs an integer chain, got {img.dtype}")
    return Image(_to_int64(img) % 2 == 0, "bool")


def equal(img: Image, values: Values) -> Image:
    """Equal(v): bool per channel, x == v with v in the chain type (NaN equals nothing)."""
    if img.dtype == "bool":
        raise ValueError("Equal: compares numbers, not a bool chain")
    operand = _channel_vector(values, img, "Equal")
    data = _to_float64(img) if img.info.is_float else _to_int64(img)
    return Image(data == operand, "bool")


def vector_and(img: Image) -> Image:
    """VectorAnd: boolN -> bool, the AND of all channels."""
    if img.dtype != "bool":
        raise ValueError(f"VectorAnd: needs a bool chain, got {img.dtype}")
    return Image(np.all(img.data, axis=3, keepdims=True), "bool")


# --------------------------------------------------------------------------------------------
# Vector ops
# --------------------------------------------------------------------------------------------

REDUCE_OPS: Final = ("add", "mul", "max", "min")


def vector_reduce(img: Image, op: str) -> Image:
    """VectorReduce(op): left fold over the channels, each step in the chain type -> 1 channel."""
    name = op.lower()
    if name not in REDUCE_OPS:
        raise ValueError(f"VectorReduce: unknown op {op!r}; expected Add, Mul, Max or Min")
    if img.dtype == "bool":
        raise ValueError("VectorReduce: reducing a bool chain; use VectorAnd")
    step = _FLOAT_OPS[name] if img.info.is_float else _INT_OPS[name]
    acc = img.data[..., :1]
    for channel in range(1, img.channels):
        nxt = img.data[..., channel : channel + 1]
        if img.info.is_float:
            with np.errstate(all="ignore"):
                acc = round_to_dtype(step(acc.astype(np.float64), nxt.astype(np.float64)), img.dtype)
        else:
            with np.errstate(over="ignore"):
                acc = wrap_to_dtype(step(acc.astype(np.int64), nxt.astype(np.int64)), img.dtype)
    return Image(np.ascontiguousarray(acc), img.dtype)


def discard(img: Image, keep_n: int) -> Image:
    """Discard(keep_n): keep the first ``keep_n`` channels."""
    if not 1 <= keep_n <= img.channels:
        raise ValueError(f"Discard: keep_n={keep_n} for a chain of {img.channels} channels")
    return Image(np.ascontiguousarray(img.data[..., :keep_n]), img.dtype)


def add_last(img: Image, value: float) -> Image:
    """AddLast(v): append one channel holding ``v`` (in the chain type)."""
    if img.channels >= 4:
        raise ValueError(f"AddLast: the chain already has {img.channels} channels (at most 4)")
    fill = value_in_dtype(value, img.dtype, "AddLast") if img.dtype != "bool" else bool(value)
    extra = np.full((*img.data.shape[:3], 1), fill, dtype=img.data.dtype)
    return Image(np.concatenate([img.data, extra], axis=3), img.dtype)


def vector_reorder(img: Image, idx: Sequence[int]) -> Image:
    """VectorReorder(i0, i1, ...): output channel k is input channel idx[k] (repeats allowed)."""
    order = [int(i) for i in idx]
    if not 1 <= len(order) <= 4:
        raise ValueError(f"VectorReorder: {len(order)} indices {order}; a pixel has 1 to 4 channels")
    bad = [i for i in order if not 0 <= i < img.channels]
    if bad:
        raise ValueError(f"VectorReorder: indices {bad} out of range for {img.channels} channels")
    return Image(np.ascontiguousarray(img.data[..., order]), img.dtype)


def mxv_float3(img: Image, m3x3: Sequence[float] | Sequence[Sequence[float]] | np.ndarray) -> Image:
    """MxVFloat3(M): row-major 3x3 matrix times the float3 pixel (as a column)."""
    if img.dtype != "float32" or img.channels != 3:
        raise ValueError(f"MxVFloat3: needs a float32 chain of 3 channels, got {img.dtype}x{img.channels}")
    matrix = np.asarray(m3x3, dtype=np.float64).reshape(-1)
    if matrix.size != 9:
        raise ValueError(f"MxVFloat3: matrix has {matrix.size} entries, expected 9 (3x3)")
    # The matrix travels as float32 in the parameter block. Each row is summed left to right in
    # float64 (products of two float32 are exact) and rounded once: no BLAS, so no reordering or FMA.
    m = matrix.astype(np.float32).astype(np.float64).reshape(3, 3)
    x = _to_float64(img)
    rows = [(m[r, 0] * x[..., 0] + m[r, 1] * x[..., 1]) + m[r, 2] * x[..., 2] for r in range(3)]
    return _float_image(np.stack(rows, axis=-1), "float32")


# --------------------------------------------------------------------------------------------
# Two images (SPEC §8's joins)
# --------------------------------------------------------------------------------------------

_JOIN_OPS: Final[dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]]] = {
    "absdiff": lambda a, b: np.abs(np.subtract(a, b)),
}


def _check_joined(a: Image, b: Image, op: str) -> None:
    if a.dtype != b.dtype or a.data.shape != b.data.shape:
        raise ValueError(
            f"{op}: joins a {a.dtype} image of shape {a.data.shape} and a {b.dtype} image of shape {b.data.shape}"
        )


def join(kind: str, a: Image, b: Image) -> Image:
    """fkl.join: `a kind b` per element of two images of one type: Add ... Min as the value ops compute
    them (integers wrapped like C), AbsDiff |a - b| (integers in int64, wrapped), Equal a == b (bool)."""
    label = f"join {kind}"
    _check_joined(a, b, label)
    if kind == "equal":
        wide = _to_float64 if a.info.is_float else _to_int64
        return Image(wide(a) == wide(b), "bool")
    if a.dtype == "bool":
        if kind not in ("max", "min"):
            raise ValueError(f"{label}: arithmetic on a bool chain; Cast to an integer or float type first")
        return Image(_INT_OPS[kind](a.data, b.data), "bool")
    if a.info.is_float:
        with np.errstate(all="ignore"):  # IEEE results (inf, NaN) are the semantics
            return _float_image((_JOIN_OPS.get(kind) or _FLOAT_OPS[kind])(_to_float64(a), _to_float64(b)), a.dtype)
    if kind == "div":
        raise ValueError(f"{label}: an integer divisor may be 0; Cast to float first")
    with np.errstate(over="ignore"):
        return _int_image((_JOIN_OPS.get(kind) or _INT_OPS[kind])(_to_int64(a), _to_int64(b)), a.dtype)


def _mixed(a: Image, b: Image, m: NDArray[np.float64] | np.float64) -> Image:
    """a m + b (1 - m) in float64, rounded once to the chain type (integers: to nearest, ties to even,
    saturated)."""
    with np.errstate(all="ignore"):
        values = _to_float64(a) * m + _to_float64(b) * (1.0 - m)
    if a.info.is_float:
        return _float_image(values, a.dtype)
    values = np.where(np.isnan(values), 0.0, values)
    return Image(np.rint(np.clip(values, a.info.lo, a.info.hi)).astype(a.info.storage), a.dtype)


def blend(a: Image, b: Image, alpha: float) -> Image:
    """Blend(branch, alpha): a alpha + b (1 - alpha), in float64, rounded once to the chain type."""
    _check_joined(a, b, "Blend")
    if a.dtype == "bool":
        raise ValueError("Blend: blends numbers, not a bool chain")
    return _mixed(a, b, np.float64(alpha))


def composite(a: Image, b: Image, mask: Image) -> Image:
    """Composite(background, mask): a m + b (1 - m), m = mask / 255 for a uint8 mask, else the mask as a
    number (bool: 0 or 1); a one-channel mask weighs every channel."""
    _check_joined(a, b, "Composite")
    if mask.data.shape[:3] != a.data.shape[:3]:
        raise ValueError(f"Composite: a mask of shape {mask.data.shape} for images of shape {a.data.shape}")
    if a.dtype == "bool":
        raise ValueError("Composite: composites numbers, not a bool chain")
    m = _to_float64(mask) / 255.0 if mask.dtype == "uint8" else _to_float64(mask)
    return _mixed(a, b, m)
