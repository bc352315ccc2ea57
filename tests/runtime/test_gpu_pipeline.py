"""The GPU target end to end (skipped without a GPU): against the CPU target, the reference
interpreter, OpenCV and numpy formulas; frameworks in and out; streams; caching; errors."""

from __future__ import annotations

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.build import STATS
from tests.runtime.chains import (
    ROI_RECTS,
    float_chain,
    float_chain_reference,
    normalise_chain,
    normalise_reference,
    roi_chain,
    roi_reference,
)

pytestmark = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
RNG = np.random.default_rng(99)


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def _to_gpu(torch, x: np.ndarray):
    return torch.from_numpy(x).cuda()


def test_roi_example_gpu_equals_cpu_and_opencv(torch) -> None:
    img = RNG.integers(0, 256, (108, 192, 3), dtype=np.uint8)
    out = roi_chain("gpu")(_to_gpu(torch, img))
    assert isinstance(out, torch.Tensor) and out.is_cuda and tuple(out.shape) == (3, 16, 16, 3)
    got = out.cpu().numpy()
    assert np.abs(got.astype(int) - roi_reference(img, ROI_RECTS)).max() <= 1
    np.testing.assert_array_equal(got, roi_chain("cpu")(img))


def test_float_chain_4k_gpu(torch) -> None:
    x = (RNG.standard_normal((2160, 3840, 3)) * 40).astype(np.float32)
    out = float_chain("gpu")(_to_gpu(torch, x)).cpu().numpy()
    np.testing.assert_allclose(out, float_chain_reference(x), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(out, float_chain("cpu")(x))


@pytest.mark.parametrize("shape", [(17, 33, 3), (5, 7), (2, 9, 11, 4), (2160, 3840, 3), (1, 3, 2)])
def test_normalise_chain_gpu_exact(torch, shape: tuple[int, ...]) -> None:
    x = RNG.integers(0, 256, shape, dtype=np.uint8)
    x.flat[:6] = [7, 9, 11, 255, 0, 13]
    out = normalise_chain("gpu")(_to_gpu(torch, x)).cpu().numpy()
    np.testing.assert_array_equal(out, normalise_reference(x))


def test_misaligned_input_takes_the_scalar_path(torch) -> None:
    base = torch.from_numpy(RNG.integers(0, 256, (1 + 31 * 17 * 3,), dtype=np.uint8)).cuda()
    x = base[1:].view(31, 17, 3)  # contiguous, but 1 byte past a 16-byte boundary
    out = normalise_chain("gpu")(x).cpu().numpy()
    np.testing.assert_array_equal(out, normalise_reference(x.cpu().numpy()))


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "int32", "float16", "float64"])
def test_dtypes_gpu_equal_cpu(torch, dtype: str) -> None:
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:
        x = RNG.integers(info.min, info.max, (19, 23, 2), dtype=dtype, endpoint=True)
        ops = [fkl.Add(3), fkl.Mul(2), fkl.Div((3, 2)), fkl.Max(1), fkl.Min(int(info.max) - 5)]
    else:
        x = (RNG.standard_normal((19, 23, 2)) * 20).astype(dtype)
        ops = [fkl.Add(0.5), fkl.Mul((2.0, -1.0)), fkl.Div(3.0), fkl.Max(-4.0), fkl.Min(9.0)]
    gpu = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")(_to_gpu(torch, x)).cpu().numpy()
    cpu = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")(x)
    np.testing.assert_array_equal(gpu, cpu)


def test_dnn_preprocessing_planar_gpu(torch) -> None:
    img = RNG.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    rects = [(int(RNG.integers(0, 1700)), int(RNG.integers(0, 900)), 200, 150) for _ in range(64)]
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    ops = (
        fkl.TensorRead(),
        fkl.Crop(rects),
        fkl.Resize(224, 224),
        fkl.Mul(1 / 255),
        fkl.Sub(mean),
        fkl.Div(std),
        fkl.TensorSplit(),
    )
    out = fkl.compose(*ops, target="gpu")(_to_gpu(torch, img))
    assert tuple(out.shape) == (64, 3, 224, 224) and out.dtype == torch.float32
    np.testing.assert_allclose(out.cpu().numpy(), fkl.compose(*ops, target="cpu")(img), atol=1e-5)


def test_frameworks_in_and_out(torch) -> None:
    x = RNG.integers(0, 256, (21, 13, 3), dtype=np.uint8)
    buf = fkl.DeviceBuffer.from_host(x)
    out = normalise_chain("gpu")(buf)
    assert isinstance(out, fkl.DeviceBuffer)
    np.testing.assert_array_equal(out.copy_to_host(), normalise_reference(x))
    cupy = pytest.importorskip("cupy")
    out_cp = normalise_chain("gpu")(cupy.asarray(x))
    assert isinstance(out_cp, cupy.ndarray)
    np.testing.assert_array_equal(cupy.asnumpy(out_cp), normalise_reference(x))


def test_caller_stream_and_out(torch) -> None:
    x = _to_gpu(torch, RNG.integers(0, 256, (64, 48, 3), dtype=np.uint8))
    out = torch.empty_like(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    pipe = normalise_chain("gpu")
    with torch.cuda.stream(s):
        result = pipe(x, out=out, stream=s)
    s.synchronize()
    assert result is out
    np.testing.assert_array_equal(out.cpu().numpy(), normalise_reference(x.cpu().numpy()))


def test_same_pipeline_different_sizes_and_no_recompile(torch) -> None:
    pipe = roi_chain("gpu")
    for shape in [(108, 192, 3), (300, 400, 3), (70, 120, 3)]:
        img = RNG.integers(0, 256, shape, dtype=np.uint8)
        got = pipe(_to_gpu(torch, img)).cpu().numpy()
        assert np.abs(got.astype(int) - roi_reference(img, ROI_RECTS)).max() <= 1
    before = STATS.compiles
    for mul, sub in [(0.25, 1.0), (2.0, 9.0)]:
        x = RNG.integers(0, 256, (30, 40, 3), dtype=np.uint8)
        got = normalise_chain("gpu", mul, sub)(_to_gpu(torch, x)).cpu().numpy()
        np.testing.assert_array_equal(got, normalise_reference(x, mul, sub))
    normalise_chain("gpu", 0.5, 3.0)(_to_gpu(torch, x))
    assert STATS.compiles <= before + 1  # at most the first normalise kernel; value changes never compile


def test_gpu_errors(torch) -> None:
    pipe = normalise_chain("gpu")
    x = _to_gpu(torch, np.zeros((10, 12, 3), np.uint8))
    with pytest.raises(ValueError, match="strides"):
        pipe(x[:, ::2])
    with pytest.raises(ValueError, match="out: expected a uint8 array of shape"):
        pipe(x, out=torch.empty((10, 12, 3), dtype=torch.float32, device="cuda"))
    with pytest.raises(TypeError):
        pipe(np.zeros((10, 12, 3), np.uint8))
    roi = fkl.compose(fkl.TensorRead(), fkl.Crop(5, 5, 20, 20), fkl.TensorWrite(), target="gpu")
    with pytest.raises(ValueError, match=r"Crop: rect \[5, 5, 20, 20\] leaves the 12x10 image"):
        roi(x)
