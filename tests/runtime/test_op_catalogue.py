"""The element-wise ops of tests/op_catalogue.py, generated from it: the reference interpreter, the
CPU target and the GPU target (skipped without a GPU), each against the catalogue's numpy formula
on random odd-sized data with the op's edge inputs (NaN, infinities, signed zeros, INT_MIN)."""

from __future__ import annotations

import numpy as np
import pytest

import fklir as fkl
from tests import op_catalogue as cat
from tests.runtime.catalogue_support import packed_source, reference

CASES = cat.cases()
IDS = [f"{entry.name}-{dtype}" for entry, dtype in CASES]


def _compose(entry: cat.Entry, dtype: str, target: str) -> fkl.Pipeline:
    return fkl.compose(fkl.TensorRead(), *cat.chain(entry, dtype), fkl.TensorWrite(), target=target)


@pytest.mark.parametrize(("entry", "dtype"), CASES, ids=IDS)
def test_reference_interpreter(entry: cat.Entry, dtype: str) -> None:
    x = cat.data(entry, dtype, seed=1)
    got = reference([fkl.TensorRead(), *cat.chain(entry, dtype), fkl.TensorWrite()], packed_source(x))
    cat.assert_matches(entry, got, cat.expected(entry, x, dtype), dtype, f"interpreter {entry.name} {dtype}")


@pytest.mark.parametrize(("entry", "dtype"), CASES, ids=IDS)
def test_cpu(entry: cat.Entry, dtype: str) -> None:
    x = cat.data(entry, dtype, seed=2)
    got = _compose(entry, dtype, "cpu")(x)
    cat.assert_matches(entry, got, cat.expected(entry, x, dtype), dtype, f"cpu {entry.name} {dtype}")


@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize(("entry", "dtype"), CASES, ids=IDS)
def test_gpu(entry: cat.Entry, dtype: str) -> None:
    from fklir.runtime.device_buffer import DeviceBuffer

    x = cat.data(entry, dtype, seed=3)
    got = _compose(entry, dtype, "gpu")(DeviceBuffer.from_host(x)).copy_to_host()
    cat.assert_matches(entry, got, cat.expected(entry, x, dtype), dtype, f"gpu {entry.name} {dtype}")


@pytest.mark.parametrize("entry", [e for e in cat.CATALOGUE if e.float_only], ids=lambda e: e.name)
def test_integer_chain_is_refused_with_cast_to_float_first(entry: cat.Entry) -> None:
    message = rf"'fkl\.{entry.name.lower()}' needs a float chain, got int16; Cast to float first"
    with pytest.raises(ValueError, match=message):
        _compose(entry, "int16", "cpu")(np.zeros((3, 5, 3), np.int16))


def test_bool_chain_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'fkl\.abs' computes arithmetic on a bool chain"):
        fkl.compose(fkl.TensorRead(), fkl.Abs(), fkl.TensorWrite(), target="cpu")(np.zeros((3, 5), np.bool_))


def test_abs_wraps_like_c() -> None:
    # independent of the catalogue's formula: the values C gives, written out
    x = np.array([[-(2**31), -1, 2**31 - 1, 0, -7]], np.int32)
    assert _compose(cat.CATALOGUE[0], "int32", "cpu")(x).tolist() == [[-(2**31), 1, 2**31 - 1, 0, 7]]
    x8 = np.array([[-128, -127, 127, -1]], np.int8)
    assert _compose(cat.CATALOGUE[0], "int8", "cpu")(x8).tolist() == [[-128, 127, 127, 1]]
    xu = np.array([[0, 255, 128]], np.uint8)
    assert _compose(cat.CATALOGUE[0], "uint8", "cpu")(xu).tolist() == [[0, 255, 128]]


@pytest.mark.parametrize(
    "target", ["cpu", pytest.param("gpu", marks=pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU"))]
)
def test_a_mask_from_absdiff_and_threshold(target: str) -> None:
    """SPEC §8's mask with a background colour for a value: |x - bg| per channel, the largest channel, > 25 -> 1,
    as uint8; against numpy on odd-sized random data with pixels exactly 25 away (a tie: no mask)."""
    from fklir.runtime.device_buffer import DeviceBuffer

    rng = np.random.default_rng(8)
    x = rng.integers(0, 256, (33, 17, 3), dtype=np.uint8)
    background = (120.0, 64.0, 200.0)
    x[0, :3] = [[145, 64, 200], [95, 89, 175], [146, 64, 200]]  # 25, 25 and 26 away
    ops = [fkl.Cast("float32"), fkl.AbsDiff(background), fkl.VectorReduce("Max"), fkl.Threshold(25.0)]
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.SaturateCast("uint8"), fkl.TensorWrite(), target=target)
    got = pipe(x) if target == "cpu" else pipe(DeviceBuffer.from_host(x)).copy_to_host()
    expected = (np.abs(x.astype(np.float64) - background).max(axis=2) > 25).astype(np.uint8)
    np.testing.assert_array_equal(got, expected)
    assert got[0, :3].tolist() == [0, 0, 1] and 0 < got.sum() < got.size
