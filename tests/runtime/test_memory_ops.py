"""TensorPack, ReadSet, TensorTSplit and SplitWrite through compose() (SPEC §3 memory ops), on the
CPU target and (when present) the GPU, against numpy layouts written from SPEC."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fklir as fkl
from tests.runtime.chains import on_target

RNG = np.random.default_rng(31)
TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU"))]


def _back(target: str, y: Any) -> np.ndarray:
    if isinstance(y, tuple):
        return np.stack([_back(target, v) for v in y])
    if target == "cpu":
        return y
    return y.cpu().numpy() if hasattr(y, "cpu") else y.copy_to_host()


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_pack_reads_planar_input(target: str) -> None:
    x = RNG.integers(0, 256, (3, 11, 7), dtype=np.uint8)
    out = _back(
        target, fkl.compose(fkl.TensorPack(3), fkl.Add(5), fkl.TensorWrite(), target=target)(on_target(target, x))
    )
    np.testing.assert_array_equal(out, ((np.transpose(x, (1, 2, 0)).astype(int) + 5) % 256).astype(np.uint8))
    batch = RNG.integers(0, 256, (2, 4, 5, 6), dtype=np.uint8)
    packed = _back(target, fkl.compose(fkl.TensorPack(4), fkl.TensorWrite(), target=target)(on_target(target, batch)))
    np.testing.assert_array_equal(packed, np.transpose(batch, (0, 2, 3, 1)))
    with pytest.raises(ValueError, match="TensorPack"):
        fkl.compose(fkl.TensorPack(3), fkl.TensorWrite(), target=target)(
            on_target(target, np.zeros((5, 6, 7, 8, 9), np.uint8))
        )


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_split_roundtrip_through_tensor_pack(target: str) -> None:
    x = (RNG.standard_normal((2, 9, 13, 3)) * 5).astype(np.float32)
    planar = fkl.compose(fkl.TensorRead(), fkl.TensorSplit(), target=target)(on_target(target, x))
    back = _back(target, fkl.compose(fkl.TensorPack(3), fkl.TensorWrite(), target=target)(planar))
    np.testing.assert_array_equal(back, x)


def test_read_set_generates_without_input() -> None:
    pipe = fkl.compose(fkl.ReadSet((1.5, -2.0, 7.0), 13, 5), fkl.Mul(2.0), fkl.TensorWrite(), target="cpu")
    out = pipe()
    assert out.shape == (5, 13, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out, np.broadcast_to(np.array([3.0, -4.0, 14.0], np.float32), (5, 13, 3)))
    gray = fkl.compose(fkl.ReadSet(9, 4, 3, dtype="uint8"), fkl.Add(250), fkl.TensorWrite(), target="cpu")()
    np.testing.assert_array_equal(gray, np.full((3, 4), 3, np.uint8))  # 9 + 250 wraps to 3
    with pytest.raises(TypeError, match="reads no input"):
        pipe(np.zeros((2, 2), np.float32))


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_tsplit_is_channel_major(target: str) -> None:
    batch = RNG.integers(0, 256, (3, 5, 7, 2), dtype=np.uint8)
    out = _back(target, fkl.compose(fkl.TensorRead(), fkl.TensorTSplit(), target=target)(on_target(target, batch)))
    np.testing.assert_array_equal(out, np.transpose(batch, (3, 0, 1, 2)))


@pytest.mark.parametrize("target", TARGETS)
def test_split_write_gives_one_output_per_channel(target: str) -> None:
    x = RNG.integers(0, 256, (6, 10, 3), dtype=np.uint8)
    pipe = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.5), fkl.SplitWrite(), target=target)
    outs = pipe(on_target(target, x))
    assert isinstance(outs, tuple) and len(outs) == 3
    got = _back(target, outs)
    for c in range(3):
        np.testing.assert_array_equal(got[c], x[..., c].astype(np.float32) * 0.5)


def test_split_write_into_given_outputs() -> None:
    x = RNG.integers(0, 256, (4, 5, 2), dtype=np.uint8)
    pipe = fkl.compose(fkl.TensorRead(), fkl.SplitWrite(), target="cpu")
    outs = (np.zeros((4, 5), np.uint8), np.zeros((4, 5), np.uint8))
    result = pipe(x, out=outs)
    assert all(a is b for a, b in zip(result, outs, strict=True))
    np.testing.assert_array_equal(outs[1], x[..., 1])
    with pytest.raises(ValueError, match="one per channel"):
        pipe(x, out=(np.zeros((4, 5), np.uint8),))
