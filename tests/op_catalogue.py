"""The element-wise ops' shared test catalogue: one line per op.

From it come the IR tests (tests/unit/test_op_catalogue_ir.py: round trip, "Cast to float first";
tests/filecheck/dialects/fkl/catalogue.mlir runs `python -m tests.op_catalogue` through fklir-opt),
the reference-interpreter, CPU and GPU tests (tests/runtime/test_op_catalogue.py), and the chains
of the golden emission corpus (tests/unit/emit_corpus.py).

An entry's `formula` is SPEC §3's numpy formula: applied to float64 data (int64 for integer
chains, then wrapped like C) with the op's values in the chain type, and rounded to the chain type.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

import fklir as fkl
from fklir.frontend.ops import Op

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTEGERS = ("uint8", "int8", "uint16", "int16", "int32", "uint32")
INF, NAN = math.inf, math.nan


@dataclass(frozen=True)
class Entry:
    """One element-wise op: its descriptor and values, the chain types it takes, its numpy formula,
    the float32/float64 results' distance allowed from the rounded formula (ulps), and edge inputs."""

    op: Callable[..., Op]
    args: tuple[object, ...]
    dtypes: tuple[str, ...]
    formula: Callable[..., np.ndarray]
    ulps: int
    specials: tuple[float, ...]

    @property
    def name(self) -> str:
        return getattr(self.op, "__name__", "op")

    def descriptor(self) -> Op:
        return self.op(*self.args)

    @property
    def float_only(self) -> bool:
        """Whether an integer chain is refused ("Cast to float first")."""
        return not set(INTEGERS) <= set(self.dtypes)


def _typed(values: object, x: np.ndarray) -> np.ndarray:
    """A formula's values in the data's type: int64 for integer chains, so that the result wraps as integers."""
    return np.asarray(values, x.dtype)


CATALOGUE: tuple[Entry, ...] = (
    Entry(fkl.Abs, (), FLOATS + INTEGERS, np.abs, 0, (-0.0, 0.0, -INF, NAN, -1.5)),
    Entry(fkl.Sqrt, (), FLOATS, np.sqrt, 1, (-1.0, -0.0, 0.0, INF, NAN, -INF, 2.0)),
    Entry(fkl.Exp, (), FLOATS, np.exp, 2, (89.0, 710.0, -104.0, -800.0, -INF, INF, NAN, 0.0)),
    Entry(fkl.Log, (), FLOATS, np.log, 2, (0.0, -0.0, -1.0, INF, -INF, NAN, 1.0, 1e-30)),
    Entry(fkl.Pow, ((2.5, -1.5, 3.0),), FLOATS, np.power, 2, (-2.0, 0.0, -0.0, INF, -INF, NAN, 1.0, -3.0, 0.5)),
    # values that every integer type holds; x == v gives +0.0 (specials 3 and 7 fall on channels 0 and 2)
    Entry(fkl.AbsDiff, ((3.0, 100.0, 7.0),), FLOATS + INTEGERS, lambda x, v: np.abs(x - _typed(v, x)), 0,
          (INF, -INF, NAN, 3.0, -0.0, 7.0, 1e30)),
    # ties (x == v) give 0
    Entry(fkl.Threshold, ((1.0, 100.0, 7.0),), FLOATS + INTEGERS, lambda x, v: (x > _typed(v, x)).astype(x.dtype), 0,
          (NAN, INF, -INF, 1.0, 100.0, 7.0, -0.0)),
)  # fmt: skip


def is_float(dtype: str) -> bool:
    return dtype in FLOATS


# ---------------------------------------------------------------------------------------------
# The IR forms (for the lit test and the round-trip test)
# ---------------------------------------------------------------------------------------------

_IR_TYPE = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64", "uint8": "ui8", "int8": "i8",
            "uint16": "ui16", "int16": "i16", "int32": "i32", "uint32": "ui32"}  # fmt: skip


def ir_line(entry: Entry, dtype: str, operand: str = "%0") -> str:
    """The op in the custom syntax on a 3-channel chain of `dtype`."""
    op = entry.descriptor()
    ir_name = f"fkl.{entry.name.lower()}"
    image = f"!fkl.image<?x?x3x{_IR_TYPE[dtype]}>"
    values = getattr(op, "values", None)
    value = "" if values is None else ", [" + ", ".join(repr(float(v)) for v in values) + "]"
    return f"{ir_name} {operand}{value} : {image}"


def round_trip_module() -> str:
    """Every entry on every chain type it takes, one function each, for `fklir-opt | fklir-opt`."""
    lines: list[str] = []
    for entry in CATALOGUE:
        for dtype in entry.dtypes:
            lines.append(f'%r{len(lines)} = fkl.read "s" : !fkl.image<?x?x3x{_IR_TYPE[dtype]}>')
            lines.append(f"%r{len(lines)} = " + ir_line(entry, dtype, f"%r{len(lines) - 1}"))
    return "\n".join(lines) + "\n"


def invalid_chunks() -> str:
    """Each float-only entry on an integer chain: the verifier's "Cast to float first"."""
    chunks = []
    for entry in CATALOGUE:
        if not entry.float_only:
            continue
        chunks.append(f'%0 = fkl.read "s" : !fkl.image<?x?x3xui8>\n%1 = {ir_line(entry, "uint8")}\n')
    return "// -----\n".join(chunks)


def _checks(kind: str) -> str:
    """The FileCheck lines that go with round_trip_module (`kind` = "ops") or invalid_chunks."""
    lines: list[str] = []
    for entry in CATALOGUE:
        ir_name = f"fkl.{entry.name.lower()}"
        if kind == "ops":
            lines += [f"CHECK: {ir_line(entry, dtype, '%{{[a-z0-9]+}}')}" for dtype in entry.dtypes]
        elif entry.float_only:
            lines.append(f"CHECK: error: '{ir_name}' needs a float chain, got uint8; Cast to float first")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Data and the independent reference
# ---------------------------------------------------------------------------------------------

SHAPE = (33, 17, 3)


def bf16(values: np.ndarray) -> np.ndarray:
    """Round to bfloat16 (nearest, ties to even; NaN stays NaN), kept as float32."""
    f32 = np.asarray(values, np.float32)
    bits = f32.view(np.uint32).astype(np.uint64)
    rounded = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f32), np.float32(NAN), rounded)


def to_chain_type(values: np.ndarray, dtype: str) -> np.ndarray:
    """float64 values rounded to a float chain type (bfloat16 carried as float32)."""
    with np.errstate(all="ignore"):
        if dtype == "bfloat16":
            return bf16(np.asarray(values, np.float64).astype(np.float32))  # f64 -> f32 -> bf16 can double-round
        return np.asarray(values, np.float64).astype(dtype)


def data(entry: Entry, dtype: str, seed: int) -> np.ndarray:
    """Random SHAPE data of `dtype` (bfloat16 as bfloat16 values in float32), the specials first."""
    rng = np.random.default_rng(seed)
    if not is_float(dtype):
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, SHAPE, dtype=dtype, endpoint=True)
        x.reshape(-1)[:4] = [info.min, info.max, 0, info.min + 1]
        return x
    x = rng.standard_normal(SHAPE) * 6.0
    x.reshape(-1)[: len(entry.specials)] = entry.specials
    return to_chain_type(x, dtype)


def expected(entry: Entry, x: np.ndarray, dtype: str) -> np.ndarray:
    """The formula on `x` in float64 (int64 for integers, wrapped), rounded to the chain type."""
    if not is_float(dtype):
        return entry.formula(x.astype(np.int64), *entry.args).astype(dtype)
    args = [to_chain_type(np.asarray(a, np.float64), dtype).astype(np.float64) for a in entry.args]
    with np.errstate(all="ignore"):
        return to_chain_type(entry.formula(x.astype(np.float64), *args), dtype)


def _spacing(ref: np.ndarray, dtype: str) -> np.ndarray:
    magnitude = np.abs(ref.astype(np.float64))
    if dtype == "float16":
        return np.spacing(magnitude.astype(np.float16)).astype(np.float64)
    if dtype == "bfloat16":  # 8 significant bits: 2^16 float32 ulps, at every exponent
        return np.spacing(magnitude.astype(np.float32)).astype(np.float64) * 65536.0
    return np.spacing(magnitude.astype(dtype)).astype(np.float64)


def assert_matches(entry: Entry, got: np.ndarray, ref: np.ndarray, dtype: str, what: str) -> None:
    """Integers exactly; floats within `entry.ulps` (one ulp for float16/bfloat16, which round an
    f32 result), NaN where NaN, infinities and the sign of zeros exact."""
    got = np.asarray(got).reshape(ref.shape)
    if not is_float(dtype):
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    g, r = got.astype(np.float64), ref.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(g), np.isnan(r), err_msg=f"{what}: NaN positions")
    exact = ~np.isfinite(r) | (r == 0)
    np.testing.assert_array_equal(g[exact & ~np.isnan(r)], r[exact & ~np.isnan(r)], err_msg=f"{what}: inf/0")
    np.testing.assert_array_equal(np.signbit(g[r == 0]), np.signbit(r[r == 0]), err_msg=f"{what}: sign of zero")
    ulps = 1 if dtype in ("float16", "bfloat16") else entry.ulps
    with np.errstate(invalid="ignore"):  # inf - inf and the spacing of inf: those are `exact`
        close = exact | (np.abs(g - r) <= ulps * _spacing(r, dtype))
    bad = [tuple(int(j) for j in i) for i in np.argwhere(~close)]
    assert not bad, f"{what}: {len(bad)} values beyond {ulps} ulp, first at {bad[0]}: {g[bad[0]]} vs {r[bad[0]]}"


def chain(entry: Entry, dtype: str) -> list[Op]:
    """The ops between read and write: bfloat16 travels as float32 through two exact casts."""
    if dtype == "bfloat16":
        return [fkl.Cast("bfloat16"), entry.descriptor(), fkl.Cast("float32")]
    return [entry.descriptor()]


def cases() -> list[tuple[Entry, str]]:
    return [(entry, dtype) for entry in CATALOGUE for dtype in entry.dtypes]


def main(argv: Sequence[str]) -> int:
    """`python -m tests.op_catalogue ops|invalid|ops-checks|invalid-checks`: the lit test's inputs."""
    outputs = {
        "ops": round_trip_module,
        "invalid": invalid_chunks,
        "ops-checks": lambda: _checks("ops"),
        "invalid-checks": lambda: _checks("invalid"),
    }
    if len(argv) != 1 or argv[0] not in outputs:
        print(f"usage: python -m tests.op_catalogue {'|'.join(outputs)}", file=sys.stderr)
        return 2
    sys.stdout.write(outputs[argv[0]]())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
