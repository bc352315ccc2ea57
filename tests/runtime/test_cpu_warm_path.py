"""The CPU target's warm path: a call on a C-contiguous numpy array of a dtype and shape seen before skips
the full description and its checks (they hold for every such array) and looks only at `out`; anything
else takes the full call, with its errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.jit import cpu_executor
from fklir.runtime import interop

RNG = np.random.default_rng(23)


def _chain() -> fkl.Pipeline:
    ops = (fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.5), fkl.Sub(3.0), fkl.TensorWrite())
    return fkl.compose(*ops, target="cpu")


def _reference(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return x.astype(np.float32) * np.float32(0.5) - np.float32(3.0)


@pytest.fixture
def descriptions(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The arrays the full call describes (describe_host_array), in order; no input of the process's earlier
    calls is known (cpu_executor._HOST_INPUTS: a new pipeline's first call on a kind of array seen before
    describes nothing either)."""
    seen: list[object] = []
    monkeypatch.setattr(cpu_executor, "_HOST_INPUTS", {})
    real = interop.describe_host_array

    def counting(x: object, what: str) -> Any:
        seen.append(x)
        return real(x, what)

    monkeypatch.setattr(cpu_executor, "describe_host_array", counting)
    return seen


def test_new_arrays_of_a_known_kind_take_their_own_pointers(descriptions: list[object]) -> None:
    pipe = _chain()
    pipe(RNG.integers(0, 256, (17, 33, 3), dtype=np.uint8))
    descriptions.clear()
    for _ in range(3):  # new inputs and new or given outputs: each call reads and writes its own arrays
        x = RNG.integers(0, 256, (17, 33, 3), dtype=np.uint8)
        np.testing.assert_array_equal(pipe(x), _reference(x))
        out = np.full((17, 33, 3), np.nan, np.float32)
        assert pipe(x, out=out) is out
        np.testing.assert_array_equal(out, _reference(x))
    assert descriptions == [], "a warm call described an array"


def test_a_new_pipelines_first_call_on_a_known_kind_describes_nothing(descriptions: list[object]) -> None:
    x = RNG.integers(0, 256, (17, 33, 3), dtype=np.uint8)
    _chain()(x)
    descriptions.clear()
    out = np.full((17, 33, 3), np.nan, np.float32)
    assert _chain()(x, out=out) is out
    np.testing.assert_array_equal(out, _reference(x))
    assert descriptions == []
    with pytest.raises(ValueError, match="not C-contiguous"):  # another kind still takes the full call
        _chain()(np.asfortranarray(x))


def test_another_shape_or_dtype_takes_the_full_call(descriptions: list[object]) -> None:
    pipe = _chain()
    pipe(RNG.integers(0, 256, (17, 33, 3), dtype=np.uint8))
    for x in (
        RNG.integers(0, 256, (33, 17, 3), dtype=np.uint8),
        RNG.integers(0, 256, (17, 33, 4), dtype=np.uint8),
        RNG.integers(-100, 100, (17, 33, 3), dtype=np.int16),
    ):
        descriptions.clear()
        np.testing.assert_array_equal(pipe(x), _reference(x))
        assert descriptions == [x]


def test_the_warm_path_keeps_every_check() -> None:
    pipe = _chain()
    x = RNG.integers(0, 256, (17, 33, 3), dtype=np.uint8)
    pipe(x)
    with pytest.raises(ValueError, match="not C-contiguous"):
        pipe(np.asfortranarray(x))
    with pytest.raises(ValueError, match="shape"):
        pipe(x, out=np.empty((17, 33, 4), np.float32))
    with pytest.raises(ValueError, match="float32"):
        pipe(x, out=np.empty((17, 33, 3), np.float64))
    read_only = np.empty((17, 33, 3), np.float32)
    read_only.flags.writeable = False
    with pytest.raises(fkl.ReadOnlyOutputError):
        pipe(x, out=read_only)
    with pytest.raises(ValueError, match="not C-contiguous"):
        pipe(x, out=np.empty((33, 17, 3), np.float32).transpose(1, 0, 2))
    with pytest.raises(ValueError, match="streams"):
        pipe(x, stream=object())
    np.testing.assert_array_equal(pipe(x), _reference(x))  # the errors left the pipeline usable


def test_an_empty_output_is_made_without_a_launch() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.TensorWrite(), target="cpu")
    empty = np.empty((0, 5, 3), np.float32)
    for _ in range(2):
        assert pipe(empty).shape == (0, 5, 3)
