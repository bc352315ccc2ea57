"""The element types of fklir: one `DType` record each, and lookups by name, slot kind, numpy dtype and
DLPack code.

Every layer reads the records: the dialect builds its IR types and value ranges from them, the emitter
its C++ spellings and sizes, the runtime its storage dtypes, ctypes and DLPack codes, the reference
interpreter its ranges. The module imports nothing from fklir and no xDSL, so the runtime's warm path
may use it without loading the compiler; the IR type of a record is built in the dialect
(`fkl.element_type`) from the record's `kind` and `bits`.
"""

import ctypes
import enum
import sys
from collections.abc import Mapping
from typing import Any, Literal, NamedTuple

import numpy as np


class DLDataTypeCode(enum.IntEnum):
    """DLPack's type codes (values fixed by dlpack.h)."""

    INT = 0
    UINT = 1
    FLOAT = 2
    OPAQUE_HANDLE = 3
    BFLOAT = 4
    COMPLEX = 5
    BOOL = 6


Kind = Literal["int", "uint", "float", "bool"]


class DType(NamedTuple):
    """One element type: how each layer spells, stores and bounds it. (A named tuple: @dataclass builds
    its methods from source text, which a fresh process's import pays for.)"""

    name: str  # as users and numpy spell it: 'uint8', 'bfloat16'
    kind: Kind
    bits: int  # value bits: 1 for bool, 16 for bfloat16
    slot_kind: str  # the IR's spelling, also a parameter slot's kind: 'ui8', 'bf16', 'i1'
    cpp: str  # the C++ type of fkl/types.h
    size: int  # bytes per element in memory
    storage: np.dtype[Any]  # numpy dtype of its bits in host memory (numpy has no bfloat16: raw uint16)
    carrier: np.dtype[Any]  # numpy dtype that holds every value exactly (float32 for bfloat16)
    ctype: type[Any]  # ctypes type of one parameter slot element (half floats travel as their raw bits)
    dlpack_code: DLDataTypeCode
    lo: float  # smallest finite value
    hi: float  # largest finite value

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_signed(self) -> bool:
        return self.kind in ("int", "float")

    @property
    def is_integer(self) -> bool:
        """An integer type proper (bool is not: it does no arithmetic)."""
        return self.kind in ("int", "uint")

    @property
    def integer_range(self) -> tuple[int, int] | None:
        """(lo, hi) of an integer or bool type, whose values must be integral; None for floats."""
        return None if self.is_float else (int(self.lo), int(self.hi))

    @property
    def dlpack(self) -> tuple[DLDataTypeCode, int]:
        """DLPack's (type code, bits) with one lane: a bool takes a whole byte."""
        return self.dlpack_code, 8 * self.size


def _integer(name: str, slot_kind: str, cpp: str, bits: int, signed: bool, ctype: type[Any]) -> DType:
    lo, hi = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if signed else (0, 2**bits - 1)
    kind: Kind = "int" if signed else "uint"
    code = DLDataTypeCode.INT if signed else DLDataTypeCode.UINT
    np_type = np.dtype(name)
    return DType(name, kind, bits, slot_kind, cpp, bits // 8, np_type, np_type, ctype, code, float(lo), float(hi))


def _float(name: str, slot_kind: str, cpp: str, bits: int, hi: float, storage: str, carrier: str) -> DType:
    code = DLDataTypeCode.BFLOAT if name == "bfloat16" else DLDataTypeCode.FLOAT
    ctype = {16: ctypes.c_uint16, 32: ctypes.c_float, 64: ctypes.c_double}[bits]
    return DType(
        name, "float", bits, slot_kind, cpp, bits // 8, np.dtype(storage), np.dtype(carrier), ctype, code, -hi, hi
    )


# In the order the dialect lists them (its verifier's messages name them in this order).
DTYPES: tuple[DType, ...] = (
    _integer("uint8", "ui8", "fkl::u8", 8, False, ctypes.c_uint8),
    _integer("int8", "i8", "fkl::i8", 8, True, ctypes.c_int8),
    _integer("uint16", "ui16", "fkl::u16", 16, False, ctypes.c_uint16),
    _integer("int16", "i16", "fkl::i16", 16, True, ctypes.c_int16),
    _integer("int32", "i32", "fkl::i32", 32, True, ctypes.c_int32),
    _integer("uint32", "ui32", "fkl::u32", 32, False, ctypes.c_uint32),
    _float("float16", "f16", "fkl::f16", 16, 65504.0, "float16", "float16"),
    # (2 - 2**-7) * 2**127: float32's exponent range with 8 significant bits
    _float("bfloat16", "bf16", "fkl::bf16", 16, float.fromhex("0x1.fep+127"), "uint16", "float32"),
    _float("float32", "f32", "fkl::f32", 32, float.fromhex("0x1.fffffep+127"), "float32", "float32"),
    _float("float64", "f64", "fkl::f64", 64, sys.float_info.max, "float64", "float64"),
    DType(
        name="bool",
        kind="bool",
        bits=1,
        slot_kind="i1",
        cpp="bool",
        size=1,
        storage=np.dtype(np.bool_),
        carrier=np.dtype(np.bool_),
        ctype=ctypes.c_bool,
        dlpack_code=DLDataTypeCode.BOOL,
        lo=0.0,
        hi=1.0,
    ),
)

NAMES: tuple[str, ...] = tuple(d.name for d in DTYPES)
BY_NAME: Mapping[str, DType] = {d.name: d for d in DTYPES}
# Each name's integer_range, computed once: a new pipeline's first call checks its values against it.
INTEGER_RANGES: Mapping[str, tuple[int, int] | None] = {d.name: d.integer_range for d in DTYPES}
BY_SLOT_KIND: Mapping[str, DType] = {d.slot_kind: d for d in DTYPES}
BY_DLPACK: Mapping[tuple[int, int], DType] = {d.dlpack: d for d in DTYPES}
# Native numpy dtypes: a uint16 array is uint16 (bfloat16 has no numpy dtype of its own).
_BY_NUMPY: Mapping[np.dtype[Any], DType] = {d.storage: d for d in DTYPES if d.name != "bfloat16"}


def from_numpy(dtype: np.dtype[Any]) -> DType | None:
    """The record of a numpy dtype (ml_dtypes' bfloat16 included), or None if fklir has no such type."""
    if dtype.name == "bfloat16" and dtype.itemsize == 2:
        return BY_NAME["bfloat16"]
    return _BY_NUMPY.get(dtype)
