"""fkl.jit.cpp_args (SPEC §6.2): Python values as C++ template arguments; g++ reads the literals back exactly."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

import fklir as fkl
from fklir import dtypes
from fklir.backend.build import INCLUDE_DIR

cpp_args = fkl.jit.cpp_args


def test_the_spec_example() -> None:
    assert cpp_args("float32", 256) == "float, 256"


def test_bools() -> None:
    assert cpp_args(True, False, np.bool_(True)) == "true, false, true"


def test_dtypes_in_every_spelling() -> None:
    torch = pytest.importorskip("torch")
    expected = {
        "float32": "float",
        "float64": "double",
        "float16": "fkl::f16",
        "bfloat16": "fkl::bf16",
        "uint8": "fkl::u8",
    }
    for name, cpp in expected.items():
        assert cpp_args(name) == cpp
        assert cpp_args(getattr(torch, name)) == cpp
        if name != "bfloat16":  # numpy has no bfloat16
            assert cpp_args(np.dtype(name)) == cpp
            assert cpp_args(getattr(np, name)) == cpp
    assert cpp_args("bool") == "bool"


def test_every_fklir_dtype_has_a_spelling() -> None:
    for record in dtypes.DTYPES:
        assert cpp_args(record.name) in (record.cpp, "float", "double")


def test_integers() -> None:
    assert cpp_args(0, -3, np.uint8(200), 2**63 - 1) == "0, -3, 200, 9223372036854775807"
    assert cpp_args(2**64 - 1) == "18446744073709551615ull"
    assert cpp_args(-(2**63)) == "(-9223372036854775807 - 1)"
    with pytest.raises(ValueError, match=r"^cpp_args: 18446744073709551616 does not fit a 64-bit C\+\+ integer$"):
        cpp_args(2**64)


def test_floats() -> None:
    assert cpp_args(1.5, 0.1, 1e300) == "1.5, 0.1, 1e+300"
    assert cpp_args(np.float32(0.1)) == "0.10000000149011612f"
    with pytest.raises(ValueError, match=r"^cpp_args: inf has no C\+\+ literal \(only finite floats do\)$"):
        cpp_args(float("inf"))


def test_other_text_passes_through_and_other_objects_are_refused() -> None:
    assert cpp_args("MyFunctor<3>", 4) == "MyFunctor<3>, 4"
    with pytest.raises(TypeError, match=r"^cpp_args: cannot write list \[1\] as a C\+\+ template argument"):
        cpp_args([1])


def test_gxx_reads_the_literals_back_exactly(tmp_path: Path) -> None:
    """g++ reads every literal cpp_args writes as the very value given, and every dtype as its fkl type."""
    doubles = [0.1, -2.5e-308, 1.7976931348623157e308, 5e-324, 1.0, 123456789.125]
    singles = [np.float32(0.1), np.float32(3.4028235e38), np.float32(1e-45)]
    lines = ['#include "fkl/core.h"']
    lines += [f'static_assert({cpp_args(v)} == {v.hex()}, "{v!r}");' for v in doubles]
    lines += [f'static_assert({cpp_args(v)} == {float(v).hex()}f, "{v!r}");' for v in singles]
    lines.append(f'static_assert({cpp_args(2**63 - 1)} == 0x7fffffffffffffffll, "i64 max");')
    lines.append(f'static_assert({cpp_args(-(2**63))} == -{2**63 - 1}ll - 1, "i64 min");')
    lines.append(f'static_assert({cpp_args(2**64 - 1)} + 1 == 0, "u64 max");')
    lines.append("template <class A, class B> struct IsType { static constexpr bool value = false; };")
    lines.append("template <class A> struct IsType<A, A> { static constexpr bool value = true; };")
    for record in dtypes.DTYPES:
        lines.append(f'static_assert(IsType<{cpp_args(record.name)}, {record.cpp}>::value, "{record.name}");')
    source = tmp_path / "literals.cpp"
    source.write_text("\n".join(lines) + "\n")
    result = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", "-I", str(INCLUDE_DIR), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
