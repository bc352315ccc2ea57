"""Tests of the header-only op library fklir/backend/include/fkl/*.h.

How: every check is an elementwise *case*: a C++ expression over one or two input elements
(``fkl::SaturateCast<fkl::u8>::exec(a)``), the inputs, and what SPEC says the outputs are. The
cases are written into a few generated translation units that compile for the CPU (g++, a
``main`` that runs every case over stdin/stdout) and for the GPU (nvcc or NVRTC, one
``extern "C"`` kernel per case). Expected values come from numpy float64 formulas written from
SPEC section 3, from numpy's own float16 conversions, and from OpenCV where it has the same op.

The CPU build is the ground truth compared against the references; the GPU run (skipped
without a device) must give the same bits as the CPU build.
"""

from __future__ import annotations

import ctypes
import importlib
import itertools
import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

INCLUDE_DIR = Path(__file__).resolve().parents[2] / "fklir" / "backend" / "include"
HEADER_DIR = INCLUDE_DIR / "fkl"
CPP_DIR = Path(__file__).resolve().parent / "cpp"
LIBRARY_HEADERS = ("core.h", "arith.h", "cast.h", "math.h", "geometry.h", "memory.h", "fkl.h")
HEADERS = tuple(sorted(path.name for path in HEADER_DIR.glob("*.h")))  # the library's and any added next to it

CPU_FLAGS = ("-std=c++17", "-O3", "-ffp-contract=off", "-fopenmp", "-Wall", "-Wextra", "-Werror")
UBSAN_FLAGS = ("-std=c++17", "-O1", "-fsanitize=undefined,float-cast-overflow", "-fno-sanitize-recover=all")
NVCC_FLAGS = ("-std=c++17", "-cubin", "-arch=sm_90", "-O3")
NVRTC_FLAGS = ("--std=c++17", "-arch=sm_90")

RNG_SEED = 20240607

Array = npt.NDArray[Any]

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not on PATH")
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


# =============================================================================================
# Element types and number formats
# =============================================================================================


@dataclass(frozen=True)
class ElemType:
    """One fkl element type: its C++ name and the numpy dtype that holds the same bytes."""

    name: str  # the typedef in namespace fkl
    storage: np.dtype[Any]  # f16 and bf16 are held as their raw uint16 bits
    kind: str  # "int", "float", "half" or "bool"

    @property
    def cpp(self) -> str:
        return "bool" if self.name == "bool" else f"fkl::{self.name}"


TYPES: dict[str, ElemType] = {
    "u8": ElemType("u8", np.dtype(np.uint8), "int"),
    "i8": ElemType("i8", np.dtype(np.int8), "int"),
    "u16": ElemType("u16", np.dtype(np.uint16), "int"),
    "i16": ElemType("i16", np.dtype(np.int16), "int"),
    "i32": ElemType("i32", np.dtype(np.int32), "int"),
    "u32": ElemType("u32", np.dtype(np.uint32), "int"),
    "f16": ElemType("f16", np.dtype(np.uint16), "half"),
    "bf16": ElemType("bf16", np.dtype(np.uint16), "half"),
    "f32": ElemType("f32", np.dtype(np.float32), "float"),
    "f64": ElemType("f64", np.dtype(np.float64), "float"),
    "bool": ElemType("bool", np.dtype(np.bool_), "bool"),
}
INT_TYPES = ("u8", "i8", "u16", "i16", "i32", "u32")
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
NUMERIC_TYPES = INT_TYPES + FLOAT_TYPES


@dataclass(frozen=True)
class FloatFormat:
    """A binary floating-point format, enough to round a float64 to it exactly."""

    significand_bits: int  # including the implicit leading bit
    min_normal_exponent: int  # the smallest normal value is 2**min_normal_exponent
    max_finite: float


F16 = FloatFormat(11, -14, 65504.0)
BF16 = FloatFormat(8, -126, 3.3895313892515355e38)
F32 = FloatFormat(24, -126, float(np.finfo(np.float32).max))

FORMATS = {"f16": F16, "bf16": BF16, "f32": F32}


def int_range(name: str) -> tuple[int, int]:
    info = np.iinfo(TYPES[name].storage)
    return int(info.min), int(info.max)


def round_to_format(x: Array, fmt: FloatFormat) -> Array:
    """Round float64 values to `fmt`, to nearest with ties to even; overflow gives +-Inf.

    Independent of any bit trick: the value of the last kept significand bit (the quantum) is
    a power of two, so x / quantum is exact and np.rint does the tie-to-even rounding.
    Subnormals share the quantum of the smallest normal binade.
    """
    x = np.asarray(x, dtype=np.float64)
    finite = np.isfinite(x)
    safe = np.where(finite, x, 0.0)
    _, exponent = np.frexp(safe)  # safe = m * 2**exponent with 0.5 <= |m| < 1
    exponent = np.maximum(exponent, fmt.min_normal_exponent + 1)
    quantum = np.ldexp(1.0, exponent - fmt.significand_bits)
    rounded = np.rint(safe / quantum) * quantum
    rounded = np.where(np.abs(rounded) > fmt.max_finite, np.copysign(np.inf, safe), rounded)
    return np.where(finite, rounded, x)


def decode(stored: Array, type_name: str) -> Array:
    """Stored elements -> their exact values as float64."""
    with np.errstate(invalid="ignore"):  # signalling NaN patterns convert quietly
        if type_name == "f16":
            return stored.view(np.float16).astype(np.float64)
        if type_name == "bf16":
            return (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        return stored.astype(np.float64)


def encode_exact(values: Array, type_name: str) -> Array:
    """float64 values that are exactly representable in the type -> stored elements."""
    if type_name == "f16":
        return values.astype(np.float16).view(np.uint16)
    if type_name == "bf16":
        return (values.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return values.astype(TYPES[type_name].storage)


def encode_rounded(values: Array, type_name: str) -> Array:
    """Any float64 values -> stored elements of a float type, rounded to nearest even."""
    if type_name in FORMATS:
        return encode_exact(round_to_format(values, FORMATS[type_name]), type_name)
    return values.astype(TYPES[type_name].storage)


def wrap_int(values: Array, type_name: str) -> Array:
    """Integers held in int64/uint64 -> the type, modulo 2**bits."""
    lo, hi = int_range(type_name)
    bits = (hi - lo + 1).bit_length() - 1
    low_bits = values.astype(np.uint64) & np.uint64((1 << bits) - 1)
    signed = low_bits.astype(np.int64) - np.where(low_bits >= (1 << (bits - 1)), 1 << bits, 0) * (lo < 0)
    return signed.astype(TYPES[type_name].storage)


# =============================================================================================
# Cases
# =============================================================================================


@dataclass(frozen=True)
class Case:
    """One elementwise check: r[i] = expr(a[i], b[i]) in C++, compared against `expected`."""

    name: str
    arg: str  # element type of a (and b)
    out: str  # element type of r
    expr: str  # C++ expression over `a` (and `b`)
    a: Array
    b: Array | None = None
    expected: Array | None = None  # None: a dedicated test checks the output

    @property
    def arity(self) -> int:
        return 1 if self.b is None else 2


def special_ints(type_name: str) -> Array:
    lo, hi = int_range(type_name)
    # 2**24 + 2**16 + 1 rounds to a bf16 tie through f32 (a double-rounding trap for Cast<bf16>)
    candidates = [
        0,
        1,
        2,
        3,
        7,
        10,
        250,
        -1,
        -2,
        -7,
        lo,
        lo + 1,
        hi,
        hi - 1,
        hi // 2,
        lo // 2,
        2**24 + 2**16 + 1,
        -(2**24 + 2**16 + 1),
    ]
    return np.array(sorted({v for v in candidates if lo <= v <= hi}), dtype=np.int64)


def int_operands(type_name: str, rng: np.random.Generator, count: int) -> tuple[Array, Array]:
    """Every pair of special values, then random pairs over the full range."""
    lo, hi = int_range(type_name)
    specials = special_ints(type_name)
    pairs = np.array(list(itertools.product(specials, specials)), dtype=np.int64)
    random_a = rng.integers(lo, hi, size=count, endpoint=True, dtype=np.int64)
    random_b = rng.integers(lo, hi, size=count, endpoint=True, dtype=np.int64)
    return np.concatenate([pairs[:, 0], random_a]), np.concatenate([pairs[:, 1], random_b])


SPECIAL_FLOATS = np.array(
    [
        0.0,
        -0.0,
        0.5,
        -0.5,
        1.0,
        -1.0,
        1.5,
        -1.5,
        2.5,
        -2.5,
        3.5,
        -3.5,
        0.49999997,
        -0.49999997,
        0.50000006,
        127.5,
        128.5,
        -127.5,
        -128.5,
        -129.0,
        254.5,
        255.5,
        255.49998,
        256.0,
        256.5,
        32766.5,
        32767.5,
        -32768.5,
        -32769.0,
        65534.5,
        65535.5,
        65536.0,
        65504.0,
        65519.0,
        65520.0,
        -65520.0,
        2147483520.0,
        2147483646.5,
        2147483647.0,
        2147483647.5,
        2147483648.0,
        -2147483648.0,
        -2147483648.5,
        -2147483649.0,
        4294967294.5,
        4294967295.0,
        4294967295.5,
        4294967296.0,
        1e10,
        -1e10,
        3.3895313892515355e38,
        3.39e38,
        3.4028234663852886e38,
        3.5e38,
        -3.5e38,
        1e300,
        -1e300,
        1e-40,
        -1e-40,
        5.960464477539063e-08,
        2.9802322387695312e-08,
        2.98e-08,
        5e-324,
        np.inf,
        -np.inf,
        np.nan,
        -np.nan,
        # just off the f16 / bf16 ties next to 1.0: through an f32 intermediate they become the tie
        1 + 2.0**-11 + 2.0**-40,
        -1 - 2.0**-11 - 2.0**-40,
        1 + 2.0**-11 - 2.0**-40,
        1 + 2.0**-8 + 2.0**-40,
        -1 - 2.0**-8 - 2.0**-40,
        1 + 2.0**-8 - 2.0**-40,
    ],
    dtype=np.float64,
)


def float_samples(rng: np.random.Generator, count: int) -> Array:
    """Specials, random half-integers (rounding ties), and random values over many ranges."""
    ties = rng.integers(-70000, 70000, size=count // 4) + 0.5
    small = rng.uniform(-300.0, 300.0, size=count // 4)
    wide = rng.uniform(-5e9, 5e9, size=count // 4)
    log_spread = np.exp(rng.uniform(-100.0, 100.0, size=count // 4)) * rng.choice([-1.0, 1.0], size=count // 4)
    return np.concatenate([SPECIAL_FLOATS, ties, small, wide, log_spread])


def samples_of(type_name: str, rng: np.random.Generator, count: int) -> Array:
    """Stored input elements of any type: floats rounded to the type, integers over their range."""
    kind = TYPES[type_name].kind
    if kind == "bool":
        return np.array([False, True] * 4, dtype=np.bool_)
    if kind == "int":
        lo, hi = int_range(type_name)
        random = rng.integers(lo, hi, size=count, endpoint=True, dtype=np.int64)
        return np.concatenate([special_ints(type_name), random]).astype(TYPES[type_name].storage)
    return encode_rounded(float_samples(rng, count), type_name)


# --- arithmetic ------------------------------------------------------------------------------


def int_arith_expected(op: str, a: Array, b: Array, type_name: str) -> Array:
    """SPEC: integer results wrap modulo 2**bits; division truncates toward zero."""
    if op == "Max":
        return np.where(a >= b, a, b).astype(TYPES[type_name].storage)
    if op == "Min":
        return np.where(a <= b, a, b).astype(TYPES[type_name].storage)
    if op == "Div":
        quotient = (np.abs(a) // np.abs(b)) * np.sign(a) * np.sign(b)
        return wrap_int(quotient, type_name)
    ua, ub = a.astype(np.uint64), b.astype(np.uint64)  # uint64 wraps modulo 2**64, a multiple of 2**bits
    exact = {"Add": ua + ub, "Sub": ua - ub, "Mul": ua * ub}[op]
    return wrap_int(exact, type_name)


def float_arith_expected(op: str, x: Array, y: Array) -> Array:
    """Operands as float64 values; the result before rounding to the element type."""
    with np.errstate(all="ignore"):
        if op == "Max":
            return np.where(x >= y, x, y)
        if op == "Min":
            return np.where(x <= y, x, y)
        return {"Add": x + y, "Sub": x - y, "Mul": x * y, "Div": x / y}[op]


ARITH_OPS = ("Add", "Sub", "Mul", "Div", "Max", "Min")


def arith_cases(rng: np.random.Generator) -> list[Case]:
    cases: list[Case] = []
    for type_name in INT_TYPES:
        a, b = int_operands(type_name, rng, 3000)
        storage = TYPES[type_name].storage
        for op in ARITH_OPS:
            b_op = np.where(b == 0, 1, b) if op == "Div" else b  # the host rejects division by 0
            cases.append(
                Case(
                    name=f"{op}_{type_name}",
                    arg=type_name,
                    out=type_name,
                    expr=f"fkl::{op}::exec(a, b)",
                    a=a.astype(storage),
                    b=b_op.astype(storage),
                    expected=int_arith_expected(op, a, b_op, type_name),
                )
            )
        cases.append(
            Case(
                name=f"IsEven_{type_name}",
                arg=type_name,
                out="bool",
                expr="fkl::IsEven::exec(a)",
                a=a.astype(storage),
                expected=(a % 2 == 0),
            )
        )

    float_specials = np.array(
        [0.0, -0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 3.0, 1e-40, 1e30, -1e30, 65504.0, np.inf, -np.inf, np.nan]
    )
    for type_name in FLOAT_TYPES:
        pairs = np.array(list(itertools.product(float_specials, float_specials)))
        if type_name in ("f16", "bf16"):  # every bit pattern is a value: draw random patterns
            random = rng.integers(0, 1 << 16, size=(4000, 2), dtype=np.uint16)
            a = np.concatenate([encode_rounded(pairs[:, 0], type_name), random[:, 0]])
            b = np.concatenate([encode_rounded(pairs[:, 1], type_name), random[:, 1]])
        else:
            random = rng.standard_normal((4000, 2)) * np.exp(rng.uniform(-20, 20, (4000, 2)))
            a = encode_rounded(np.concatenate([pairs[:, 0], random[:, 0]]), type_name)
            b = encode_rounded(np.concatenate([pairs[:, 1], random[:, 1]]), type_name)
        x, y = decode(a, type_name), decode(b, type_name)
        for op in ARITH_OPS:
            if op in ("Max", "Min"):  # a selection, no rounding: the result is one of the operands
                chosen_a = (x >= y) if op == "Max" else (x <= y)
                expected = np.where(chosen_a, a, b)
            elif type_name in ("f16", "bf16"):  # SPEC: compute in f32, round back
                with np.errstate(all="ignore"):
                    x32, y32 = x.astype(np.float32), y.astype(np.float32)
                    in_f32 = {"Add": x32 + y32, "Sub": x32 - y32, "Mul": x32 * y32, "Div": x32 / y32}[op]
                expected = encode_rounded(in_f32.astype(np.float64), type_name)
            else:  # one IEEE operation: the float64 result rounded once (exact for f64)
                expected = encode_rounded(float_arith_expected(op, x, y), type_name)
            cases.append(
                Case(
                    name=f"{op}_{type_name}",
                    arg=type_name,
                    out=type_name,
                    expr=f"fkl::{op}::exec(a, b)",
                    a=a,
                    b=b,
                    expected=expected,
                )
            )
    return cases


# --- casts -----------------------------------------------------------------------------------


def saturate_expected(x: Array, to: str) -> Array:
    """SPEC SaturateCast from float64 values: clamp to the range, round half to even, NaN -> 0."""
    kind = TYPES[to].kind
    if kind == "bool":  # the range [0, 1]: 0.5 -> False, 0.7 -> True, NaN -> False
        return np.where(np.isnan(x), 0.0, np.rint(np.clip(x, 0, 1))) != 0
    if kind == "int":
        lo, hi = int_range(to)
        return np.where(np.isnan(x), 0.0, np.rint(np.clip(x, lo, hi))).astype(TYPES[to].storage)
    largest = float(np.finfo(np.float64).max) if to == "f64" else FORMATS[to].max_finite
    return encode_rounded(np.clip(x, -largest, largest), to)  # np.clip keeps NaN


def cast_expected(x: Array, stored: Array, frm: str, to: str) -> Array:
    """SPEC Cast: the C conversion (float -> integer truncates toward zero)."""
    kind = TYPES[to].kind
    if kind == "bool":
        return x != 0
    if kind == "int":
        if TYPES[frm].kind in ("int", "bool"):
            return wrap_int(stored.astype(np.int64), to)
        return np.trunc(x).astype(TYPES[to].storage)
    with np.errstate(over="ignore"):
        return encode_rounded(x, to)


def cast_inputs(frm: str, to: str, rng: np.random.Generator) -> Array:
    """Inputs for Cast: float -> integer only inside the target's range (outside is unspecified)."""
    stored = samples_of(frm, rng, 1200)
    if TYPES[frm].kind in ("float", "half") and TYPES[to].kind == "int":
        lo, hi = int_range(to)
        x = decode(stored, frm)
        stored = stored[np.isfinite(x) & (x > lo - 1) & (x < hi + 1)]
    return stored


def cast_cases(rng: np.random.Generator) -> list[Case]:
    cases: list[Case] = []
    all_types = (*NUMERIC_TYPES, "bool")
    for frm in all_types:
        for to in all_types:
            stored = cast_inputs(frm, to, rng)
            cases.append(
                Case(
                    name=f"Cast_{frm}_to_{to}",
                    arg=frm,
                    out=to,
                    expr=f"fkl::Cast<{TYPES[to].cpp}>::exec(a)",
                    a=stored,
                    expected=cast_expected(decode(stored, frm), stored, frm, to),
                )
            )
    for frm in NUMERIC_TYPES:
        stored = samples_of(frm, rng, 2400)
        x = decode(stored, frm)
        for to in all_types:
            cases.append(
                Case(
                    name=f"SaturateCast_{frm}_to_{to}",
                    arg=frm,
                    out=to,
                    expr=f"fkl::SaturateCast<{TYPES[to].cpp}>::exec(a)",
                    a=stored,
                    expected=saturate_expected(x, to),
                )
            )
    return cases


def clamp_cases(rng: np.random.Generator) -> list[Case]:
    """Saturate(x, lo, hi) and SaturateFloat(x): clamps that keep the type; NaN passes through."""
    cases: list[Case] = []
    bounds = {
        "u8": (10, 200),
        "i8": (-100, 50),
        "i16": (-1000, 1000),
        "i32": (-70000, 70000),
        "u32": (5, 4000000000),
        "f16": (-2.5, 100.0),
        "bf16": (-2.5, 100.0),
        "f32": (-2.5, 100.0),
        "f64": (-2.5, 100.0),
    }
    for type_name, (lo, hi) in bounds.items():
        stored = samples_of(type_name, rng, 2000)
        x = decode(stored, type_name)
        lo_stored, hi_stored = encode_exact(np.array([lo, hi], dtype=np.float64), type_name)
        if TYPES[type_name].kind == "half":
            bound = f"{TYPES[type_name].cpp}{{{int(lo_stored)}u}}", f"{TYPES[type_name].cpp}{{{int(hi_stored)}u}}"
        else:
            bound = f"({TYPES[type_name].cpp}){lo}", f"({TYPES[type_name].cpp}){hi}"
        expected = np.where(x < lo, lo_stored, np.where(x > hi, hi_stored, stored)).astype(stored.dtype)
        cases.append(
            Case(
                name=f"Saturate_{type_name}",
                arg=type_name,
                out=type_name,
                expr=f"fkl::Saturate::exec(a, {bound[0]}, {bound[1]})",
                a=stored,
                expected=expected,
            )
        )
    for type_name in FLOAT_TYPES:
        stored = samples_of(type_name, rng, 2000)
        stored = np.concatenate([stored, encode_rounded(rng.uniform(-0.5, 1.5, 1000), type_name)])
        x = decode(stored, type_name)
        zero, one = encode_exact(np.array([0.0, 1.0]), type_name)
        expected = np.where(x < 0, zero, np.where(x > 1, one, stored)).astype(stored.dtype)
        cases.append(
            Case(
                name=f"SaturateFloat_{type_name}",
                arg=type_name,
                out=type_name,
                expr="fkl::SaturateFloat::exec(a)",
                a=stored,
                expected=expected,
            )
        )
    return cases


# --- f16 / bf16 conversions ------------------------------------------------------------------


def all_half_patterns() -> Array:
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def midpoints_f32(format_name: str) -> Array:
    """float32 values exactly halfway between neighbouring finite values of f16 / bf16, and
    their float32 neighbours: the ties that round-to-nearest-even must get right."""
    values = np.unique(np.abs(decode(all_half_patterns(), format_name)))
    values = values[np.isfinite(values)]
    mids = ((values[:-1] + values[1:]) / 2).astype(np.float32)  # exact: one more bit fits in f32
    up = np.nextafter(mids, np.float32(np.inf))
    down = np.nextafter(mids, np.float32(0))
    return np.concatenate([mids, up, down, -mids, -up])


def half_conversion_cases(rng: np.random.Generator) -> list[Case]:
    cases: list[Case] = []
    patterns = all_half_patterns()
    cases.append(
        Case(
            name="f16_bits_to_f32",
            arg="f16",
            out="f32",
            expr="fkl::to_f32(a)",
            a=patterns,
            expected=patterns.view(np.float16).astype(np.float32),
        )
    )
    cases.append(
        Case(
            name="bf16_bits_to_f32",
            arg="bf16",
            out="f32",
            expr="fkl::to_f32(a)",
            a=patterns,
            expected=(patterns.astype(np.uint32) << 16).view(np.float32),
        )
    )

    random_bits = rng.integers(0, 1 << 32, size=40000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    in_half_range = (rng.uniform(-70000, 70000, 20000) * np.exp(rng.uniform(-25, 0, 20000))).astype(np.float32)
    with np.errstate(over="ignore"):
        specials = SPECIAL_FLOATS.astype(np.float32)
    for to in ("f16", "bf16"):
        x32 = np.concatenate([specials, midpoints_f32(to), random_bits, in_half_range])
        with np.errstate(over="ignore", invalid="ignore"):
            # f16: numpy's own conversion; bf16 (numpy has none): the exact rounding of round_to_format
            expected = (
                x32.astype(np.float16).view(np.uint16) if to == "f16" else encode_rounded(x32.astype(np.float64), to)
            )
        from_fn = "fkl::f16_from_f32(a)" if to == "f16" else "fkl::bf16_from_f32(a)"
        cases.append(Case(name=f"{to}_from_f32", arg="f32", out=to, expr=from_fn, a=x32, expected=expected))

        # From f64 the rounding must happen once: a value just off a tie must not become the tie
        # through an f32 intermediate (numpy converts float64 -> float16 directly).
        mids = midpoints_f32(to).astype(np.float64)
        traps = np.concatenate([mids * (1 + 2.0**-35), mids * (1 - 2.0**-35)])
        x64 = np.concatenate([SPECIAL_FLOATS, traps, rng.standard_normal(20000) * np.exp(rng.uniform(-20, 12, 20000))])
        with np.errstate(over="ignore"):
            expected = x64.astype(np.float16).view(np.uint16) if to == "f16" else encode_rounded(x64, to)
        from_fn = "fkl::f16_from_f64(a)" if to == "f16" else "fkl::bf16_from_f64(a)"
        cases.append(Case(name=f"{to}_from_f64", arg="f64", out=to, expr=from_fn, a=x64, expected=expected))
    return cases


def limits_cases() -> list[Case]:
    cases: list[Case] = []
    for type_name in (*NUMERIC_TYPES, "bool"):
        if TYPES[type_name].kind == "int":
            lo, hi = int_range(type_name)
        elif type_name == "bool":
            lo, hi = 0, 1
        elif type_name == "f64":
            lo, hi = float(np.finfo(np.float64).min), float(np.finfo(np.float64).max)
        else:
            lo, hi = -FORMATS[type_name].max_finite, FORMATS[type_name].max_finite
        for which, value in (("lowest", lo), ("highest", hi)):
            cases.append(
                Case(
                    name=f"Limits_{type_name}_{which}",
                    arg="i32",
                    out="f64",
                    expr=f"(fkl::f64)fkl::Limits<{TYPES[type_name].cpp}>::{which}()",
                    a=np.zeros(1, np.int32),
                    expected=np.array([value], np.float64),
                )
            )
    return cases


# --- geometry --------------------------------------------------------------------------------

RESIZE_SIZES = ((300, 224), (416, 640), (33, 17), (17, 33), (1, 5), (2, 5), (5, 1), (224, 300))
NEAREST_SIZES = ((300, 224), (416, 640), (33, 17), (17, 33), (1, 5), (5, 1))
BORDER_MODES = {  # fkl helper -> numpy.pad mode
    "border_replicate": "edge",
    "border_reflect": "symmetric",
    "border_reflect101": "reflect",
    "border_wrap": "wrap",
}
BORDER_SIZES = (1, 2, 3, 7)


def linear_tap_name(field: str, src: int, dst: int) -> str:
    return f"linear_tap_{field}_{src}_to_{dst}"


def nearest_name(src: int, dst: int) -> str:
    return f"nearest_index_{src}_to_{dst}"


def border_offsets(n: int) -> Array:
    """Every index from -5n to 6n, and a few overshoots of about a hundred periods."""
    near = np.arange(-5 * n, 6 * n)
    far = np.array([-100 * n - 1, -100 * n, -97 * n + 1, 100 * n, 100 * n + 1, 103 * n - 1])
    return np.concatenate([near, far]).astype(np.int32)


def numpy_border_index(i: Array, n: int, pad_mode: str) -> Array:
    pad = int(np.abs(i).max()) + n
    padded = np.pad(np.arange(n), pad, mode=pad_mode)  # type: ignore[call-overload]
    return padded[i.astype(np.int64) + pad].astype(np.int32)


def geometry_cases() -> list[Case]:
    cases: list[Case] = []
    for src, dst in RESIZE_SIZES:
        d = np.arange(dst, dtype=np.int32)
        for field, out in (("i0", "i32"), ("i1", "i32"), ("w1", "f32")):
            cases.append(
                Case(
                    name=linear_tap_name(field, src, dst),
                    arg="i32",
                    out=out,
                    expr=f"fkl::linear_tap(a, fkl::resize_scale({src}, {dst}), {src}).{field}",
                    a=d,
                )
            )
    for src, dst in NEAREST_SIZES:
        cases.append(
            Case(
                name=nearest_name(src, dst),
                arg="i32",
                out="i32",
                expr=f"fkl::nearest_index(a, fkl::resize_scale({src}, {dst}), {src})",
                a=np.arange(dst, dtype=np.int32),
            )
        )
    for fn, pad_mode in BORDER_MODES.items():
        for n in BORDER_SIZES:
            i = border_offsets(n)
            cases.append(
                Case(
                    name=f"{fn}_{n}",
                    arg="i32",
                    out="i32",
                    expr=f"fkl::{fn}(a, {n})",
                    a=i,
                    expected=numpy_border_index(i, n, pad_mode),
                )
            )
    for n in BORDER_SIZES:
        i = border_offsets(n)
        cases.append(
            Case(
                name=f"border_constant_{n}",
                arg="i32",
                out="i32",
                expr=f"fkl::border_constant(a, {n})",
                a=i,
                expected=np.where((i >= 0) & (i < n), i, -1).astype(np.int32),
            )
        )
    return cases


# --- all cases, grouped into translation units -------------------------------------------------


def build_units() -> dict[str, list[Case]]:
    rng = np.random.default_rng(RNG_SEED)
    cast = cast_cases(rng)
    middle = len(cast) // 2  # two units compile in parallel
    return {
        "arith": arith_cases(rng) + clamp_cases(rng),
        "cast_a": cast[:middle],
        "cast_b": cast[middle:],
        "half_geometry": half_conversion_cases(rng) + limits_cases() + geometry_cases(),
    }


UNITS = build_units()
ALL_CASES = [case for cases in UNITS.values() for case in cases]
CASES_BY_NAME = {case.name: case for case in ALL_CASES}
assert len(CASES_BY_NAME) == len(ALL_CASES), "case names must be unique"
CHECKED_CASES = [case for case in ALL_CASES if case.expected is not None]


# =============================================================================================
# C++ generation, compilation and running
# =============================================================================================


def case_function(index: int, case: Case) -> str:
    arg, out = TYPES[case.arg].cpp, TYPES[case.out].cpp
    b_param = "pb" if case.arity == 2 else "/* pb */"
    lines = [
        f"// {case.name}",
        f"FKL_HD void case_{index}(const void* pa, const void* {b_param}, void* pr, fkl::i64 i) {{",
        f"    const {arg} a = static_cast<const {arg}*>(pa)[i];",
        "    (void)a;  // some cases ignore their input",
    ]
    if case.arity == 2:
        lines.append(f"    const {arg} b = static_cast<const {arg}*>(pb)[i];")
    lines += [f"    static_cast<{out}*>(pr)[i] = {case.expr};", "}", ""]
    return "\n".join(lines)


def case_kernel(index: int) -> str:
    return (
        f'extern "C" __global__ void kernel_{index}(const void* a, const void* b, void* r, fkl::i64 n) {{\n'
        "    const fkl::i64 i = (fkl::i64)blockIdx.x * blockDim.x + threadIdx.x;\n"
        f"    if (i < n) case_{index}(a, b, r, i);\n"
        "}\n"
    )


HOST_MAIN = """
#include <cstdio>
#include <vector>

typedef void (*CaseFn)(const void*, const void*, void*, fkl::i64);
struct CaseInfo {
    CaseFn fn;
    int arity;
    int arg_size;
    int out_size;
};

static const CaseInfo CASES[] = {
%s
};

// stdin, for each case in order: int64 n, n elements of a, and (arity 2) n elements of b.
// stdout, for each case in order: n elements of r.
int main() {
    for (const CaseInfo& c : CASES) {
        fkl::i64 n = 0;
        if (std::fread(&n, sizeof n, 1, stdin) != 1) return 2;
        const size_t in_bytes = (size_t)n * (size_t)c.arg_size;
        std::vector<double> a(in_bytes / 8 + 1), b(in_bytes / 8 + 1), r((size_t)n * (size_t)c.out_size / 8 + 1);
        if (std::fread(a.data(), 1, in_bytes, stdin) != in_bytes) return 2;
        if (c.arity == 2 && std::fread(b.data(), 1, in_bytes, stdin) != in_bytes) return 2;
        for (fkl::i64 i = 0; i < n; ++i) c.fn(a.data(), b.data(), r.data(), i);
        std::fwrite(r.data(), 1, (size_t)n * (size_t)c.out_size, stdout);
    }
    return 0;
}
"""


def generate_unit(cases: Sequence[Case]) -> str:
    """One translation unit: a FKL_HD function per case, a kernel per case under CUDA (nvcc or
    NVRTC, which also needs no system header here), and a CPU main otherwise."""
    parts = ["// Generated by tests/unit/test_op_headers.py", '#include "fkl/fkl.h"', ""]
    parts += [case_function(i, case) for i, case in enumerate(cases)]
    parts.append("#if defined(__CUDACC__)")
    parts += [case_kernel(i) for i in range(len(cases))]
    parts.append("#else")
    table = ",\n".join(
        f"    {{case_{i}, {case.arity}, {TYPES[case.arg].storage.itemsize}, {TYPES[case.out].storage.itemsize}}}"
        for i, case in enumerate(cases)
    )
    parts.append(HOST_MAIN % table)
    parts.append("#endif")
    return "\n".join(parts) + "\n"


def unit_input(cases: Sequence[Case]) -> bytes:
    chunks: list[bytes] = []
    for case in cases:
        chunks.append(np.int64(len(case.a)).tobytes())
        chunks.append(np.ascontiguousarray(case.a, dtype=TYPES[case.arg].storage).tobytes())
        if case.b is not None:
            chunks.append(np.ascontiguousarray(case.b, dtype=TYPES[case.arg].storage).tobytes())
    return b"".join(chunks)


def split_output(cases: Sequence[Case], raw: bytes) -> dict[str, Array]:
    results: dict[str, Array] = {}
    offset = 0
    for case in cases:
        dtype = TYPES[case.out].storage
        size = len(case.a) * dtype.itemsize
        results[case.name] = np.frombuffer(raw[offset : offset + size], dtype=dtype)
        offset += size
    assert offset == len(raw), f"the program wrote {len(raw)} bytes, expected {offset}"
    return results


def run_checked(command: Sequence[str], stdin: bytes = b"", what: str = "") -> bytes:
    done = subprocess.run(list(command), input=stdin, capture_output=True, timeout=120, check=False)
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace")[-4000:]
        raise AssertionError(f"{what or command[0]} failed (exit {done.returncode}):\n{message}")
    return done.stdout


def gxx_command(source: Path, binary: Path, flags: Sequence[str]) -> list[str]:
    return ["g++", *flags, "-I", str(INCLUDE_DIR), str(source), "-o", str(binary)]


@dataclass(frozen=True)
class Build:
    """Sources written for every unit, and (when g++ exists) their CPU binaries."""

    folder: Path
    sources: dict[str, Path]
    binaries: dict[str, Path]
    ubsan_binaries: dict[str, Path]  # the same units built with -fsanitize=undefined


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    folder = tmp_path_factory.mktemp("fkl_headers")
    sources: dict[str, Path] = {}
    for name, cases in UNITS.items():
        sources[name] = folder / f"{name}.cu"  # .cu for nvcc; g++ reads it as C++ (-x c++)
        sources[name].write_text(generate_unit(cases))
    if shutil.which("g++") is None:
        return Build(folder, sources, {}, {})

    jobs: dict[str, list[str]] = {}
    binaries = {name: folder / name for name in UNITS}
    for name, source in sources.items():
        jobs[name] = gxx_command(source, binaries[name], ("-x", "c++", *CPU_FLAGS))
    memory_binary = folder / "memory_check"
    jobs["memory_check"] = gxx_command(CPP_DIR / "memory_check.cpp", memory_binary, CPU_FLAGS)
    ubsan_binaries = {name: folder / f"{name}_ubsan" for name in UNITS}
    for name, source in sources.items():
        jobs[f"{name}_ubsan"] = gxx_command(source, ubsan_binaries[name], ("-x", "c++", *UBSAN_FLAGS))
    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        outcomes = dict(
            zip(jobs, pool.map(lambda cmd: run_checked(cmd, what=" ".join(cmd)), jobs.values()), strict=True)
        )
    assert len(outcomes) == len(jobs)
    binaries["memory_check"] = memory_binary
    return Build(folder, sources, binaries, ubsan_binaries)


@pytest.fixture(scope="module")
def cpu_results(build: Build) -> dict[str, Array]:
    if not build.binaries:
        pytest.skip("g++ is not on PATH")
    results: dict[str, Array] = {}
    for name, cases in UNITS.items():
        raw = run_checked([str(build.binaries[name])], unit_input(cases), what=f"CPU unit {name}")
        results.update(split_output(cases, raw))
    return results


# =============================================================================================
# Comparison
# =============================================================================================


def nan_mask(stored: Array, type_name: str) -> Array:
    if type_name == "f16":
        return np.isnan(stored.view(np.float16))
    if type_name == "bf16":
        return ((stored & 0x7F80) == 0x7F80) & ((stored & 0x007F) != 0)
    if type_name in ("f32", "f64"):
        return np.isnan(stored)
    return np.zeros(stored.shape, dtype=bool)


def same_bits(got: Array, expected: Array, type_name: str) -> Array:
    """Elementwise: identical bits (so -0.0 differs from 0.0), or both NaN of any payload."""
    got_nan, expected_nan = nan_mask(got, type_name), nan_mask(expected, type_name)
    if type_name in ("f32", "f64"):
        width = np.uint32 if type_name == "f32" else np.uint64
        equal = got.view(width) == expected.astype(got.dtype).view(width)
    else:
        equal = got == expected.astype(got.dtype)
    return np.where(got_nan | expected_nan, got_nan & expected_nan, equal)


def describe_mismatches(case: Case, got: Array, expected: Array, ok: Array, limit: int = 8) -> str:
    bad = np.flatnonzero(~ok)
    rows = []
    for i in bad[:limit]:
        inputs = f"a={case.a[i]!r}" + ("" if case.b is None else f", b={case.b[i]!r}")
        if case.arg in ("f16", "bf16"):
            inputs += f" (a value {decode(case.a[i : i + 1], case.arg)[0]!r})"
        rows.append(f"  [{i}] {inputs}: got {got[i]!r}, expected {expected[i]!r}")
    return f"{case.name} (`{case.expr}`): {len(bad)} of {len(ok)} differ\n" + "\n".join(rows)


# =============================================================================================
# Tests: header hygiene (no compiler needed)
# =============================================================================================


def rtc_system_includes(text: str) -> list[str]:
    """`#include <...>` lines that a compile with __CUDACC_RTC__ defined would reach.

    Tracks the #if nesting and knows the two ways the headers spell "not under NVRTC":
    `#if !defined(__CUDACC_RTC__)` / `#ifndef __CUDACC_RTC__`, and the #else of a
    `#if defined(__CUDACC_RTC__)` / `#ifdef __CUDACC_RTC__`.
    """
    excluded_stack: list[bool] = []  # per open #if: does this branch exclude NVRTC?
    flip_on_else: list[bool] = []  # per open #if: does its #else exclude NVRTC?
    reached: list[str] = []
    for line in text.splitlines():
        directive = line.strip()
        positive = re.match(r"#\s*(if\s+defined\s*\(?\s*__CUDACC_RTC__\s*\)?\s*$|ifdef\s+__CUDACC_RTC__)", directive)
        negative = re.match(
            r"#\s*(if\s+!\s*defined\s*\(?\s*__CUDACC_RTC__\s*\)?\s*$|ifndef\s+__CUDACC_RTC__)", directive
        )
        if negative:
            excluded_stack.append(True)
            flip_on_else.append(False)
        elif positive:
            excluded_stack.append(False)
            flip_on_else.append(True)
        elif re.match(r"#\s*if", directive):
            excluded_stack.append(False)
            flip_on_else.append(False)
        elif re.match(r"#\s*el", directive):
            excluded_stack[-1] = flip_on_else[-1]
            flip_on_else[-1] = False
        elif re.match(r"#\s*endif", directive):
            excluded_stack.pop()
            flip_on_else.pop()
        elif re.match(r"#\s*include\s*<", directive) and not any(excluded_stack):
            reached.append(directive)
    return reached


def test_rtc_include_scanner_finds_unguarded_includes() -> None:
    guarded = "#if !defined(__CUDACC_RTC__)\n#include <cmath>\n#endif\n"
    else_guarded = "#ifdef __CUDACC_RTC__\ntypedef int i32;\n#else\n#include <cstdint>\n#endif\n"
    unguarded = "#if defined(__CUDACC__)\n#include <cstdio>\n#endif\n#include <vector>\n"
    assert rtc_system_includes(guarded) == []
    assert rtc_system_includes(else_guarded) == []
    assert rtc_system_includes(unguarded) == ["#include <cstdio>", "#include <vector>"]


@pytest.mark.parametrize("header", HEADERS)
def test_header_reaches_no_system_include_under_nvrtc(header: str) -> None:
    assert rtc_system_includes((HEADER_DIR / header).read_text()) == []


@pytest.mark.parametrize("header", HEADERS)
def test_header_includes_only_library_headers(header: str) -> None:
    text = (HEADER_DIR / header).read_text()
    for included in re.findall(r'#\s*include\s*"([^"]+)"', text):
        name = included.removeprefix("fkl/")
        assert name in HEADERS, f'{header} includes "{included}", which is not an fkl header'


def test_fkl_h_includes_the_whole_library() -> None:
    text = (HEADER_DIR / "fkl.h").read_text()
    included = set(re.findall(r'#\s*include\s*"([^"]+)"', text))
    assert included == set(LIBRARY_HEADERS) - {"fkl.h"}


def test_round_to_format_reference_agrees_with_numpy_float16() -> None:
    """The bf16 references use round_to_format; on f16 it must agree with numpy's conversion."""
    rng = np.random.default_rng(RNG_SEED)
    x = np.concatenate(
        [
            SPECIAL_FLOATS,
            midpoints_f32("f16").astype(np.float64),
            rng.standard_normal(50000) * np.exp(rng.uniform(-25, 12, 50000)),
        ]
    )
    with np.errstate(over="ignore"):
        expected = x.astype(np.float16).view(np.uint16)
    got = encode_rounded(x, "f16")
    assert same_bits(got, expected, "f16").all()


# =============================================================================================
# Tests: CPU (g++)
# =============================================================================================


@needs_gxx
@pytest.mark.parametrize("case", CHECKED_CASES, ids=lambda case: case.name)
def test_case_matches_reference(case: Case, cpu_results: dict[str, Array]) -> None:
    assert case.expected is not None
    got = cpu_results[case.name]
    expected = np.asarray(case.expected)
    assert got.shape == expected.shape, f"{case.name}: {got.shape} outputs, expected {expected.shape}"
    ok = same_bits(got, expected, case.out)
    assert ok.all(), describe_mismatches(case, got, expected, ok)


@needs_gxx
def test_brief_examples_are_among_the_cases() -> None:
    """The wrap-around examples SPEC cares about are really exercised (a guard on the generators)."""

    def has_pair(name: str, a: int, b: int) -> bool:
        case = CASES_BY_NAME[name]
        assert case.b is not None
        return bool(np.any((case.a == a) & (case.b == b)))

    assert has_pair("Add_u8", 250, 10)
    assert has_pair("Add_i32", 2**31 - 1, 1)
    assert has_pair("Div_i8", -128, -1)
    assert has_pair("Div_i32", -(2**31), -1)
    ties = decode(CASES_BY_NAME["SaturateCast_f32_to_u8"].a, "f32")
    for tie in (0.5, 1.5, 2.5, -2.5, 254.5, 255.5, -0.5):
        assert np.any(ties == tie), tie
    assert np.isnan(ties).any() and np.isposinf(ties).any() and np.isneginf(ties).any()


@needs_gxx
@pytest.mark.parametrize("unit", list(UNITS))
def test_no_undefined_behaviour(unit: str, build: Build, cpu_results: dict[str, Array]) -> None:
    """Each unit built with -fsanitize=undefined,float-cast-overflow aborts on signed overflow
    (a naive INT_MAX + 1 or INT_MIN / -1) or an out-of-range float -> int conversion (a clamp to
    a bound that is not exact in f32), and must give the same outputs as the -O3 build, where
    such UB can pass unnoticed (g++ folds it to the saturated value)."""
    cases = UNITS[unit]
    raw = run_checked([str(build.ubsan_binaries[unit])], unit_input(cases), what=f"unit {unit} under UBSan")
    for name, got in split_output(cases, raw).items():
        assert np.array_equal(got.view(np.uint8), cpu_results[name].view(np.uint8)), name


def independent_linear_position(src: int, dst: int) -> Array:
    """SPEC: sx = (dx + 0.5) * src / dst - 0.5, clamped to the pixel centres [0, src - 1]."""
    s = (np.arange(dst) + 0.5) * src / dst - 0.5
    return np.clip(s, 0, src - 1)


@needs_gxx
@pytest.mark.parametrize(("src", "dst"), RESIZE_SIZES)
def test_linear_tap_matches_the_spec_formula(src: int, dst: int, cpu_results: dict[str, Array]) -> None:
    i0 = cpu_results[linear_tap_name("i0", src, dst)].astype(np.int64)
    i1 = cpu_results[linear_tap_name("i1", src, dst)].astype(np.int64)
    w1 = cpu_results[linear_tap_name("w1", src, dst)].astype(np.float64)
    assert ((i0 >= 0) & (i0 < src) & (i1 >= 0) & (i1 < src)).all(), "taps must stay inside the source"
    assert ((w1 >= 0) & (w1 < 1)).all()
    assert ((i1 == i0 + 1) | ((i1 == i0) & (w1 == 0))).all()
    position = (1 - w1) * i0 + w1 * i1
    np.testing.assert_allclose(position, independent_linear_position(src, dst), rtol=0, atol=2e-4 * max(src, 1))


def resize_with_taps(image: Array, taps_x: tuple[Array, Array, Array], taps_y: tuple[Array, Array, Array]) -> Array:
    (x0, x1, wx), (y0, y1, wy) = taps_x, taps_y
    wx64, wy64 = wx.astype(np.float64)[None, :], wy.astype(np.float64)[:, None]
    top = (1 - wx64) * image[y0][:, x0] + wx64 * image[y0][:, x1]
    bottom = (1 - wx64) * image[y1][:, x0] + wx64 * image[y1][:, x1]
    return (1 - wy64) * top + wy64 * bottom


@needs_gxx
@pytest.mark.parametrize(
    ("size_x", "size_y"),
    # A source of 2 rows, not 1: cv2 answers a one-row source with its own float32-coordinate path.
    [((300, 224), (33, 17)), ((416, 640), (17, 33)), ((1, 5), (5, 1)), ((224, 300), (5, 1)), ((33, 17), (2, 5))],
)
def test_linear_taps_reproduce_cv2_resize(
    size_x: tuple[int, int], size_y: tuple[int, int], cpu_results: dict[str, Array]
) -> None:
    cv2 = pytest.importorskip("cv2")
    (src_w, dst_w), (src_h, dst_h) = size_x, size_y
    image = np.random.default_rng(RNG_SEED).uniform(-100, 100, (src_h, src_w)).astype(np.float32)

    def taps(src: int, dst: int) -> tuple[Array, Array, Array]:
        return (
            cpu_results[linear_tap_name("i0", src, dst)],
            cpu_results[linear_tap_name("i1", src, dst)],
            cpu_results[linear_tap_name("w1", src, dst)],
        )

    ours = resize_with_taps(image.astype(np.float64), taps(src_w, dst_w), taps(src_h, dst_h))
    # cv2's IPP path keeps the source coordinate exact, as fkl::linear_tap does; OpenCV's own path
    # (IPP off, or a one-row or one-column source) rounds it to float32 first.
    used_ipp = cv2.ipp.useIPP()
    cv2.ipp.setUseIPP(True)
    try:
        reference = cv2.resize(image, (dst_w, dst_h), interpolation=cv2.INTER_LINEAR).astype(np.float64)
    finally:
        cv2.ipp.setUseIPP(used_ipp)
    np.testing.assert_allclose(ours, reference, rtol=1e-6, atol=1e-5)


@needs_gxx
@pytest.mark.parametrize(
    ("size_x", "size_y"),
    [((300, 224), (33, 17)), ((416, 640), (17, 33)), ((33, 17), (300, 224)), ((17, 33), (416, 640)), ((1, 5), (5, 1))],
)
def test_nearest_index_matches_cv2_index_maps(
    size_x: tuple[int, int], size_y: tuple[int, int], cpu_results: dict[str, Array]
) -> None:
    """Resize an image whose pixel holds its own index with cv2 INTER_NEAREST: the output says
    which source pixel cv2 picked for every destination pixel."""
    cv2 = pytest.importorskip("cv2")
    (src_w, dst_w), (src_h, dst_h) = size_x, size_y
    index_image = np.arange(src_h * src_w, dtype=np.float32).reshape(src_h, src_w)  # exact below 2**24
    picked = cv2.resize(index_image, (dst_w, dst_h), interpolation=cv2.INTER_NEAREST).astype(np.int64)
    ours_x = cpu_results[nearest_name(src_w, dst_w)].astype(np.int64)
    ours_y = cpu_results[nearest_name(src_h, dst_h)].astype(np.int64)
    np.testing.assert_array_equal(picked % src_w, np.broadcast_to(ours_x[None, :], picked.shape))
    np.testing.assert_array_equal(picked // src_w, np.broadcast_to(ours_y[:, None], picked.shape))


def test_nearest_sizes_include_one_where_naive_floor_differs() -> None:
    """SPEC: floor(d * src / dst) differs from cv2's floor(d * (1 / (dst / src))) on 300 -> 224;
    the nearest-index checks above must include such a size, or they could not tell the two apart."""
    d = np.arange(224)
    naive = np.floor(d * 300 / 224)
    cv2_style = np.floor(d * (1.0 / (224 / 300)))
    assert (naive != cv2_style).any()


@needs_gxx
@pytest.mark.parametrize("fn", list(BORDER_MODES))
def test_border_helpers_match_cv2_border_interpolate(fn: str, cpu_results: dict[str, Array]) -> None:
    cv2 = pytest.importorskip("cv2")
    cv2_mode = {
        "border_replicate": cv2.BORDER_REPLICATE,
        "border_reflect": cv2.BORDER_REFLECT,
        "border_reflect101": cv2.BORDER_REFLECT_101,
        "border_wrap": cv2.BORDER_WRAP,
    }[fn]
    for n in BORDER_SIZES:
        offsets = border_offsets(n)
        expected = np.array([cv2.borderInterpolate(int(i), n, cv2_mode) for i in offsets])
        np.testing.assert_array_equal(cpu_results[f"{fn}_{n}"], expected, err_msg=f"{fn}(i, {n})")


MEMORY_SHAPE = (17, 33)  # height, width: odd on purpose
MEMORY_SRC_PITCH = 3 * 33 + 5
MEMORY_DST_PITCH = 3 * 33 + 7
MEMORY_WORDS = 37


def memory_inputs() -> tuple[Array, Array]:
    rng = np.random.default_rng(RNG_SEED)
    height, _ = MEMORY_SHAPE
    packed = rng.integers(0, 256, size=(height, MEMORY_SRC_PITCH), dtype=np.uint8)
    words = rng.integers(0, 256, size=MEMORY_WORDS * 16, dtype=np.uint8)
    return packed, words


def check_memory_outputs(planar: Array, repacked: Array, reversed_words: dict[str, Array]) -> None:
    packed, words = memory_inputs()
    height, width = MEMORY_SHAPE
    image = packed[:, : 3 * width].reshape(height, width, 3)
    np.testing.assert_array_equal(planar.reshape(3, height, width), image.transpose(2, 0, 1))
    repacked = repacked.reshape(height, MEMORY_DST_PITCH)
    np.testing.assert_array_equal(repacked[:, : 3 * width].reshape(height, width, 3), image)
    assert (repacked[:, 3 * width :] == 0xEE).all(), "a store wrote into the row padding"
    for dtype_name, got in reversed_words.items():
        dtype = np.dtype(dtype_name)
        lanes = 16 // dtype.itemsize
        expected = words.view(dtype).reshape(-1, lanes)[:, ::-1].reshape(-1)
        np.testing.assert_array_equal(got.view(dtype).view(np.uint8), expected.view(np.uint8), err_msg=dtype_name)


@needs_gxx
def test_packed_planar_and_vec16_access_on_cpu(build: Build) -> None:
    packed, words = memory_inputs()
    height, width = MEMORY_SHAPE
    args = [
        str(build.binaries["memory_check"]),
        str(width),
        str(height),
        str(MEMORY_SRC_PITCH),
        str(MEMORY_DST_PITCH),
        str(MEMORY_WORDS),
    ]
    out = np.frombuffer(run_checked(args, packed.tobytes() + words.tobytes(), what="memory_check"), np.uint8)
    planar_size, repacked_size, words_size = 3 * height * width, height * MEMORY_DST_PITCH, MEMORY_WORDS * 16
    assert out.size == planar_size + repacked_size + 4 * words_size
    planar, rest = out[:planar_size], out[planar_size:]
    repacked, rest = rest[:repacked_size], rest[repacked_size:]
    reversed_words = {
        name: rest[k * words_size : (k + 1) * words_size]
        for k, name in enumerate(("uint8", "float16", "float32", "float64"))
    }
    check_memory_outputs(planar, repacked, reversed_words)


# =============================================================================================
# Tests: GPU compilers (no device needed) and GPU runs
# =============================================================================================


@needs_nvcc
def test_nvcc_compiles_a_unit_to_cubin(build: Build) -> None:
    """nvcc -cubin -arch=sm_90 (host and device passes over the same headers)."""
    cubin = build.folder / "half_geometry.cubin"
    run_checked(
        ["nvcc", *NVCC_FLAGS, "-I", str(INCLUDE_DIR), str(build.sources["half_geometry"]), "-o", str(cubin)],
        what="nvcc",
    )
    assert cubin.stat().st_size > 0


def nvrtc_module() -> Any:
    """cuda.bindings.nvrtc when libnvrtc loads, else None."""
    try:
        nvrtc = importlib.import_module("cuda.bindings.nvrtc")
        nvrtc.nvrtcVersion()
    except Exception:
        return None
    return nvrtc


def nvrtc_compile(source: str, name: str) -> bytes:
    """Compile with NVRTC, which has no default include path; the only path given is the fkl one."""
    nvrtc = nvrtc_module()
    assert nvrtc is not None
    err, program = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    try:
        options = [flag.encode() for flag in NVRTC_FLAGS] + [f"--include-path={INCLUDE_DIR}".encode()]
        (result,) = nvrtc.nvrtcCompileProgram(program, len(options), options)
        _, log_size = nvrtc.nvrtcGetProgramLogSize(program)
        log = b" " * log_size
        nvrtc.nvrtcGetProgramLog(program, log)
        assert result == nvrtc.nvrtcResult.NVRTC_SUCCESS, f"NVRTC failed on {name}:\n{log.decode(errors='replace')}"
        _, cubin_size = nvrtc.nvrtcGetCUBINSize(program)
        cubin = b" " * cubin_size
        nvrtc.nvrtcGetCUBIN(program, cubin)
        return cubin
    finally:
        nvrtc.nvrtcDestroyProgram(program)


needs_nvrtc = pytest.mark.skipif(nvrtc_module() is None, reason="libnvrtc cannot be loaded")


@needs_nvrtc
def test_nvrtc_compiles_fkl_h_with_no_include_path() -> None:
    source = (
        '#include "fkl/fkl.h"\n'
        'extern "C" __global__ void k(fkl::u8* p) { p[0] = fkl::SaturateCast<fkl::u8>::exec(1.5f); }\n'
    )
    assert len(nvrtc_compile(source, "fkl_h_only.cu")) > 0


@needs_nvrtc
def test_nvrtc_compiles_every_unit(build: Build) -> None:
    for name, source in build.sources.items():
        assert len(nvrtc_compile(source.read_text(), f"{name}.cu")) > 0
    assert len(nvrtc_compile((CPP_DIR / "memory_check.cpp").read_text(), "memory_check.cu")) > 0


def gpu_available() -> bool:
    try:
        driver = importlib.import_module("cuda.bindings.driver")
        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return False
        err, count = driver.cuDeviceGetCount()
        return err == driver.CUresult.CUDA_SUCCESS and count > 0
    except Exception:
        return False


class Gpu:
    """The minimum of the CUDA driver API to run the test kernels: primary context, memory, launch."""

    def __init__(self) -> None:
        driver = importlib.import_module("cuda.bindings.driver")
        self.driver = driver
        self.device = self.check(driver.cuDeviceGet(0))
        self.context = self.check(driver.cuDevicePrimaryCtxRetain(self.device))
        self.check(driver.cuCtxSetCurrent(self.context))

    def check(self, result: tuple[Any, ...]) -> Any:
        err, *values = result
        if err != self.driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA driver call failed: {err}")
        return values[0] if len(values) == 1 else tuple(values)

    def load(self, cubin: bytes) -> Any:
        return self.check(self.driver.cuModuleLoadData(cubin))

    def upload(self, data: bytes) -> int:
        pointer = self.check(self.driver.cuMemAlloc(max(len(data), 16)))
        if data:
            self.check(self.driver.cuMemcpyHtoD(pointer, data, len(data)))
        return int(pointer)

    def download(self, pointer: int, size: int) -> bytes:
        host = bytearray(size)
        if size:
            self.check(self.driver.cuMemcpyDtoH(host, pointer, size))
        return bytes(host)

    def free(self, pointer: int) -> None:
        self.check(self.driver.cuMemFree(pointer))

    def launch(
        self, module: Any, kernel: str, grid: tuple[int, int], block: int, args: Sequence[tuple[int, Any]]
    ) -> None:
        function = self.check(self.driver.cuModuleGetFunction(module, kernel.encode()))
        values = tuple(value for value, _ in args)
        types = tuple(ctype for _, ctype in args)
        self.check(self.driver.cuLaunchKernel(function, grid[0], grid[1], 1, block, 1, 1, 0, 0, (values, types), 0))
        self.check(self.driver.cuCtxSynchronize())

    def close(self, modules: Sequence[Any]) -> None:
        for module in modules:
            self.check(self.driver.cuModuleUnload(module))
        self.check(self.driver.cuDevicePrimaryCtxRelease(self.device))


needs_gpu = pytest.mark.skipif(not gpu_available(), reason="no CUDA device")


def compile_for_gpu(compiler: str, source: Path, folder: Path) -> bytes:
    if compiler == "nvcc":
        if shutil.which("nvcc") is None:
            pytest.skip("nvcc is not on PATH")
        cubin = folder / f"{source.stem}.{compiler}.cubin"
        run_checked(
            ["nvcc", *NVCC_FLAGS, "-x", "cu", "-I", str(INCLUDE_DIR), str(source), "-o", str(cubin)],
            what=f"nvcc {source.name}",
        )
        return cubin.read_bytes()
    if nvrtc_module() is None:
        pytest.skip("libnvrtc cannot be loaded")
    return nvrtc_compile(source.read_text(), source.name)


def run_cases_on_gpu(gpu: Gpu, module: Any, cases: Sequence[Case]) -> dict[str, Array]:
    results: dict[str, Array] = {}
    for index, case in enumerate(cases):
        n = len(case.a)
        a = gpu.upload(np.ascontiguousarray(case.a, dtype=TYPES[case.arg].storage).tobytes())
        b = gpu.upload(b"" if case.b is None else np.ascontiguousarray(case.b, TYPES[case.arg].storage).tobytes())
        out_size = n * TYPES[case.out].storage.itemsize
        r = gpu.upload(bytes(out_size))
        try:
            block = 256
            gpu.launch(
                module,
                f"kernel_{index}",
                ((n + block - 1) // block, 1),
                block,
                [(a, ctypes.c_void_p), (b, ctypes.c_void_p), (r, ctypes.c_void_p), (n, ctypes.c_int64)],
            )
            results[case.name] = np.frombuffer(gpu.download(r, out_size), dtype=TYPES[case.out].storage)
        finally:
            for pointer in (a, b, r):
                gpu.free(pointer)
    return results


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("compiler", ["nvcc", "nvrtc"])
def test_gpu_gives_the_same_bits_as_cpu(compiler: str, build: Build, cpu_results: dict[str, Array]) -> None:
    gpu = Gpu()
    modules: list[Any] = []
    failures: list[str] = []
    try:
        for name, cases in UNITS.items():
            modules.append(gpu.load(compile_for_gpu(compiler, build.sources[name], build.folder)))
            for case_name, got in run_cases_on_gpu(gpu, modules[-1], cases).items():
                case = CASES_BY_NAME[case_name]
                ok = same_bits(got, cpu_results[case_name], case.out)
                if not ok.all():
                    failures.append(describe_mismatches(case, got, cpu_results[case_name], ok))
    finally:
        gpu.close(modules)
    assert not failures, f"GPU ({compiler}) differs from CPU:\n" + "\n".join(failures)


@needs_gpu
@pytest.mark.gpu
@pytest.mark.parametrize("compiler", ["nvcc", "nvrtc"])
def test_packed_planar_and_vec16_access_on_gpu(compiler: str, build: Build) -> None:
    packed, words = memory_inputs()
    height, width = MEMORY_SHAPE
    gpu = Gpu()
    module = gpu.load(compile_for_gpu(compiler, CPP_DIR / "memory_check.cpp", build.folder))
    pointers: list[int] = []
    try:
        src = gpu.upload(packed.tobytes())
        planar = gpu.upload(bytes(3 * height * width))
        repacked = gpu.upload(bytes([0xEE]) * (height * MEMORY_DST_PITCH))
        pointers += [src, planar, repacked]
        grid = ((width + 31) // 32, height)
        gpu.launch(
            module,
            "split_kernel",
            grid,
            32,
            [
                (src, ctypes.c_void_p),
                (width, ctypes.c_int32),
                (height, ctypes.c_int32),
                (MEMORY_SRC_PITCH, ctypes.c_int64),
                (planar, ctypes.c_void_p),
            ],
        )
        gpu.launch(
            module,
            "pack_kernel",
            grid,
            32,
            [
                (planar, ctypes.c_void_p),
                (width, ctypes.c_int32),
                (height, ctypes.c_int32),
                (repacked, ctypes.c_void_p),
                (MEMORY_DST_PITCH, ctypes.c_int64),
            ],
        )
        reversed_words: dict[str, Array] = {}
        for suffix, dtype_name in (("u8", "uint8"), ("f16", "float16"), ("f32", "float32"), ("f64", "float64")):
            word_src = gpu.upload(words.tobytes())
            word_dst = gpu.upload(bytes(words.size))
            pointers += [word_src, word_dst]
            gpu.launch(
                module,
                f"vec16_reverse_{suffix}",
                (1, 1),
                64,
                [(word_src, ctypes.c_void_p), (word_dst, ctypes.c_void_p), (MEMORY_WORDS, ctypes.c_int64)],
            )
            reversed_words[dtype_name] = np.frombuffer(gpu.download(word_dst, words.size), np.uint8)
        check_memory_outputs(
            np.frombuffer(gpu.download(planar, 3 * height * width), np.uint8),
            np.frombuffer(gpu.download(repacked, height * MEMORY_DST_PITCH), np.uint8),
            reversed_words,
        )
    finally:
        for pointer in pointers:
            gpu.free(pointer)
        gpu.close([module])


@needs_gxx
@pytest.mark.parametrize("header", HEADERS)
def test_header_preprocesses_without_system_headers_under_rtc_macros(header: str) -> None:
    """Preprocess the header as NVRTC would see it (__CUDACC_RTC__ defined) with no system include
    path at all: any system header reached under NVRTC fails here (a stricter twin of the scan)."""
    run_checked(
        [
            "g++",
            "-E",
            "-nostdinc",
            "-x",
            "c++",
            "-D__CUDACC_RTC__",
            "-D__CUDACC__",
            "-D__CUDA_ARCH__=900",
            "-I",
            str(INCLUDE_DIR),
            str(HEADER_DIR / header),
            "-o",
            os.devnull,
        ],
        what=f"g++ -E -nostdinc {header}",
    )
