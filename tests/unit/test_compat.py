"""fkl-python compatibility (SPEC §7): native 1-D inputs, and every `fklir.compat` entry point against
fkl-python's documented behaviour."""

from __future__ import annotations

import numpy as np
import pytest

import fklir as fkl

gpu = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
RNG = np.random.default_rng(17)


# ---- native 1-D inputs --------------------------------------------------------------------------


def _scale(target: str) -> fkl.Pipeline:
    return fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite(), target=target)


def test_one_dim_input_is_one_row_cpu() -> None:
    x = RNG.standard_normal(16).astype(np.float32)
    y = _scale("cpu")(x)
    assert y.shape == (16,)
    np.testing.assert_allclose(y, x * 2 + 1, rtol=1e-6)
    out = np.empty(16, np.float32)
    assert _scale("cpu")(x, out=out) is out


def test_one_dim_output_follows_the_geometry_cpu() -> None:
    x = np.arange(16, dtype=np.float32)
    one_row = fkl.compose(fkl.TensorRead(), fkl.Resize(8, 1), fkl.TensorWrite(), target="cpu")
    two_rows = fkl.compose(fkl.TensorRead(), fkl.Resize(8, 2), fkl.TensorWrite(), target="cpu")
    assert one_row(x).shape == (8,)
    assert two_rows(x).shape == (2, 8)
    np.testing.assert_array_equal(one_row(x), two_rows(x)[0])


def test_one_dim_input_matches_one_row_image_cpu() -> None:
    x = RNG.integers(0, 255, 33, dtype=np.uint8)
    chain = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.5), fkl.TensorWrite(), target="cpu")
    np.testing.assert_array_equal(chain(x), chain(x[None, :])[0])


@gpu
def test_one_dim_input_gpu() -> None:
    torch = pytest.importorskip("torch")
    x = torch.arange(16, dtype=torch.float32, device="cuda")
    y = _scale("gpu")(x)
    assert tuple(y.shape) == (16,)
    torch.testing.assert_close(y, x * 2 + 1)
    out = torch.empty(16, dtype=torch.float32, device="cuda")
    assert _scale("gpu")(x, out=out) is out
    y_bound = fkl.compose(fkl.TensorRead(x), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite(out))()
    torch.testing.assert_close(y_bound, x * 2 + 1)
