"""The element type records of fklir/dtypes.py against independent sources: numpy's iinfo/finfo and
itemsizes, ctypes' sizes, the DLPack standard's type codes, the C++ header's types (compiled by g++),
and the element types the fkl dialect's verifier accepts."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from xdsl.dialects.builtin import (
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    Float80Type,
    Float128Type,
    IntegerType,
    Signedness,
)
from xdsl.ir import Attribute
from xdsl.utils.exceptions import VerifyException

from fklir import dtypes
from fklir.dialects import fkl

INCLUDE_DIR = Path(__file__).resolve().parents[2] / "fklir" / "backend" / "include"

# dlpack.h: typedef enum { kDLInt = 0U, kDLUInt = 1U, kDLFloat = 2U, kDLOpaqueHandle = 3U,
# kDLBfloat = 4U, kDLComplex = 5U, kDLBool = 6U } DLDataTypeCode;
K_DL_INT, K_DL_UINT, K_DL_FLOAT, K_DL_BFLOAT, K_DL_BOOL = 0, 1, 2, 4, 6

EXPECTED_NAMES = tuple("uint8 int8 uint16 int16 int32 uint32 float16 bfloat16 float32 float64 bool".split())
NUMPY_NAMES = [name for name in EXPECTED_NAMES if name != "bfloat16"]
INTEGER_NAMES = ["uint8", "int8", "uint16", "int16", "int32", "uint32"]
FLOAT_NAMES = ["float16", "float32", "float64"]

# The largest finite bfloat16, from its format: 8 significant bits, float32's exponent range.
BF16_MAX = (2 - 2**-7) * 2.0**127


def test_one_record_per_element_type_and_unique_spellings() -> None:
    assert dtypes.NAMES == EXPECTED_NAMES
    for field in ("name", "slot_kind", "cpp", "dlpack"):
        spellings = [getattr(record, field) for record in dtypes.DTYPES]
        assert len(set(spellings)) == len(spellings), field
    for record in dtypes.DTYPES:
        assert dtypes.BY_NAME[record.name] is record
        assert dtypes.BY_SLOT_KIND[record.slot_kind] is record
        assert dtypes.BY_DLPACK[record.dlpack] is record


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_numpy_types_match_numpy(name: str) -> None:
    record = dtypes.BY_NAME[name]
    reference = np.dtype(name)
    assert record.size == reference.itemsize
    assert record.storage == reference
    assert record.carrier == reference
    assert dtypes.from_numpy(reference) is record


def test_bfloat16_is_stored_as_raw_uint16_and_carried_in_float32() -> None:
    record = dtypes.BY_NAME["bfloat16"]
    assert (record.size, record.bits) == (2, 16)
    assert record.storage == np.dtype(np.uint16)
    assert record.carrier == np.dtype(np.float32)
    # A uint16 array is uint16 data; only a dtype named bfloat16 (ml_dtypes') is bfloat16.
    assert dtypes.from_numpy(np.dtype(np.uint16)) is dtypes.BY_NAME["uint16"]


@pytest.mark.parametrize("name", INTEGER_NAMES)
def test_integer_ranges_match_iinfo(name: str) -> None:
    record, info = dtypes.BY_NAME[name], np.iinfo(name)
    assert record.integer_range == (int(info.min), int(info.max))
    assert (record.lo, record.hi) == (float(info.min), float(info.max))
    assert record.bits == info.bits
    assert record.is_integer and not record.is_float
    assert record.is_signed == (info.min < 0)


@pytest.mark.parametrize("name", FLOAT_NAMES)
def test_float_ranges_match_finfo(name: str) -> None:
    record, info = dtypes.BY_NAME[name], np.finfo(name)
    assert (record.lo, record.hi) == (float(info.min), float(info.max))
    assert record.bits == info.bits
    assert record.is_float and record.is_signed and not record.is_integer
    assert record.integer_range is None


def test_bfloat16_and_bool_ranges() -> None:
    bf16, flag = dtypes.BY_NAME["bfloat16"], dtypes.BY_NAME["bool"]
    assert (bf16.lo, bf16.hi) == (-BF16_MAX, BF16_MAX)
    # bfloat16 is the top half of a float32: BF16_MAX's low 16 bits are zero, and the next pattern is inf.
    bits = np.array([BF16_MAX], np.float32).view(np.uint32)
    assert float(bits.view(np.float32)[0]) == BF16_MAX and int(bits[0]) & 0xFFFF == 0
    assert np.isinf((bits + np.uint32(0x10000)).view(np.float32)[0])
    assert flag.integer_range == (0, 1)
    assert flag.bits == 1 and flag.size == 1
    assert not (flag.is_integer or flag.is_float or flag.is_signed)


@pytest.mark.parametrize("record", dtypes.DTYPES, ids=lambda record: record.name)
def test_slot_ctype_holds_one_element(record: dtypes.DType) -> None:
    assert ctypes.sizeof(record.ctype) == record.size
    if record.is_float and record.bits == 16:
        return  # half floats travel as their raw 16 bits
    value = record.hi if record.is_float else int(record.hi)
    assert record.ctype(value).value == value  # the largest value survives the ctypes round trip


@pytest.mark.parametrize("record", dtypes.DTYPES, ids=lambda record: record.name)
def test_dlpack_codes_follow_the_standard(record: dtypes.DType) -> None:
    expected_code = {"int": K_DL_INT, "uint": K_DL_UINT, "bool": K_DL_BOOL}.get(record.kind)
    if record.kind == "float":
        expected_code = K_DL_BFLOAT if record.name == "bfloat16" else K_DL_FLOAT
    code, bits = record.dlpack
    assert (int(code), bits) == (expected_code, 8 * record.size)


def test_from_numpy_rejects_types_fklir_lacks() -> None:
    for other in ("int64", "uint64", "complex64", ">i4", ">f4", "V4", "U3"):
        assert dtypes.from_numpy(np.dtype(other)) is None, other


# Candidate IR element types: each fklir type, and others the dialect must refuse.
_IR_CANDIDATES: list[Attribute] = [
    *(IntegerType(bits, sign) for bits in (1, 8, 16, 32, 64) for sign in Signedness),
    Float16Type(),
    BFloat16Type(),
    Float32Type(),
    Float64Type(),
    Float80Type(),
    Float128Type(),
]


@pytest.mark.parametrize("element", _IR_CANDIDATES, ids=str)
def test_the_dialect_accepts_exactly_the_recorded_types(element: Attribute) -> None:
    accepted = True
    try:
        fkl.ImageType(element, 3).verify()
    except VerifyException:
        accepted = False
    spelling = str(element)  # the IR's spelling: ui8, i8, i1, bf16, ...
    assert accepted == (spelling in dtypes.BY_SLOT_KIND), spelling
    if accepted:
        record = dtypes.BY_SLOT_KIND[spelling]
        assert fkl.element_type(record.name) == element
        assert fkl.dtype_name(element) == record.name


def test_every_record_is_a_parameter_slot_kind() -> None:
    for record in dtypes.DTYPES:
        fkl.ParamsType([("v", record.slot_kind, 2)]).verify()
    with pytest.raises(VerifyException, match="unknown kind i64"):
        fkl.ParamsType([("v", "i64", 2)]).verify()


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
def test_cpp_types_have_the_recorded_size_and_range(tmp_path: Path) -> None:
    checks = ["#include <limits>", '#include "fkl/core.h"']
    for record in dtypes.DTYPES:
        t = record.cpp
        checks.append(f'static_assert(sizeof({t}) == {record.size}, "{record.name} size");')
        if record.is_integer or record.kind == "bool":
            lo, hi = record.integer_range or (0, 0)
            checks += [
                f'static_assert((long long)std::numeric_limits<{t}>::min() == {lo}LL, "{record.name} min");',
                f'static_assert((long long)std::numeric_limits<{t}>::max() == {hi}LL, "{record.name} max");',
            ]
        elif record.bits > 16:  # f32, f64: the C++ float types themselves
            checks.append(f'static_assert(std::numeric_limits<{t}>::max() == {record.hi!r}, "{record.name} max");')
    source = tmp_path / "dtypes.cpp"
    source.write_text("\n".join(checks) + "\n")
    result = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", f"-I{INCLUDE_DIR}", str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
