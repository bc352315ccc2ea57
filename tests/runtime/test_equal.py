"""Equal(v): a bool per channel where x == v (SPEC §8's Equal with a value), on the reference interpreter, the
CPU target and the GPU target (skipped without one), against numpy on odd-sized random data with ties."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.runtime.device_buffer import DeviceBuffer
from tests.runtime.catalogue_support import packed_source, reference

VALUES = (3.0, 200.0, 7.0)
DTYPES = ("uint8", "int16", "uint32", "float16", "float32", "float64")
TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU"))]


def data(dtype: str, seed: int) -> np.ndarray[Any, Any]:
    """33x17x3 values of `dtype` drawn from a few, so that every channel meets its value often."""
    rng = np.random.default_rng(seed)
    x = rng.choice(np.array([3, 200, 7, 0, 1, 4], np.float64), (33, 17, 3)).astype(dtype)
    if dtype.startswith("float"):
        x[0, 0] = [np.nan, -0.0, np.inf]  # NaN equals nothing; no channel's value is -0.0 or inf
        x[0, 1] = [3.0, np.nan, 7.0]
    return x


def expected(x: np.ndarray[Any, Any], values: Any) -> np.ndarray[Any, Any]:
    return x == np.asarray(values, np.float64).astype(x.dtype)


def run(target: str, ops: list[Any], x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)
    if target == "cpu":
        return pipe(x)
    return pipe(DeviceBuffer.from_host(x)).copy_to_host()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("target", TARGETS)
def test_equal_matches_numpy(target: str, dtype: str) -> None:
    x = data(dtype, seed=len(dtype))
    got = run(target, [fkl.Equal(VALUES)], x)
    assert got.dtype == np.bool_ and got.shape == x.shape
    np.testing.assert_array_equal(got, expected(x, VALUES))
    assert got.any() and not got.all()


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_the_interpreter_matches_numpy(dtype: str) -> None:
    x = data(dtype, seed=5)
    got = reference([fkl.TensorRead(), fkl.Equal(VALUES), fkl.TensorWrite()], packed_source(x))
    np.testing.assert_array_equal(np.asarray(got).reshape(x.shape), expected(x, VALUES))


@pytest.mark.parametrize("target", TARGETS)
def test_one_value_for_every_channel_and_a_bool_chain_after(target: str) -> None:
    x = data("uint8", seed=9)
    got = run(target, [fkl.Equal(7), fkl.VectorAnd(), fkl.Cast("uint8")], x)
    np.testing.assert_array_equal(got, (x == 7).all(axis=2).astype(np.uint8))


@pytest.mark.parametrize("target", TARGETS)
def test_per_image_values(target: str) -> None:
    x = np.stack([data("int16", seed=s) for s in range(4)])
    rows = [[3, 200, 7], [0, 1, 4], [7, 7, 7], [200, 3, 0]]
    got = run(target, [fkl.Equal(fkl.per_image(rows))], x)
    np.testing.assert_array_equal(got, np.stack([expected(x[b], rows[b]) for b in range(4)]))


def test_bad_values_and_chains_are_refused_naming_the_op() -> None:
    x = data("uint8", seed=1)
    with pytest.raises(ValueError, match=r"fkl\.equal"):
        run("cpu", [fkl.Equal(300)], x)
    with pytest.raises(ValueError, match=r"'fkl\.equal' computes arithmetic on a bool chain"):
        run("cpu", [fkl.Equal(1), fkl.Equal(1)], x)
