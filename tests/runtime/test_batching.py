"""Horizontal and divergent batching end to end, on the CPU target and (when present) the GPU:
one launch per call, results equal to per-ROI / per-image / per-plane references, and caching
that keys on structure (B, chains) but not on rect values or image sizes."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.build import STATS
from fklir.runtime.launch import LAUNCHES
from tests.runtime.chains import ROI_RECTS, from_target, on_target, roi_chain, roi_reference

RNG = np.random.default_rng(2024)
TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU"))]
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def _one_call(pipe: fkl.Pipeline, x: Any) -> Any:
    before = LAUNCHES.count
    out = pipe(x)
    assert LAUNCHES.count - before == 1, "one kernel launch per call"
    return out


@pytest.mark.parametrize("target", TARGETS)
def test_canonical_roi_example_is_one_launch(target: str) -> None:
    img = RNG.integers(0, 256, (108, 192, 3), dtype=np.uint8)
    pipe = roi_chain(target)
    out = from_target(target, _one_call(pipe, on_target(target, img)))
    assert out.shape == (3, 16, 16, 3)
    assert np.abs(out.astype(int) - roi_reference(img, ROI_RECTS)).max() <= 1
    assert pipe.ir().count("fkl.kernel") == 1


def _dnn_reference(img: np.ndarray, rects: list[tuple[int, int, int, int]], size: int) -> np.ndarray:
    import cv2

    planes = []
    for x, y, w, h in rects:
        r = cv2.resize(img[y : y + h, x : x + w].astype(np.float32), (size, size), interpolation=cv2.INTER_LINEAR)
        planes.append(np.transpose((r.astype(np.float64) / 255 - MEAN) / STD, (2, 0, 1)))
    return np.stack(planes)


def _dnn_pipe(rects: list[tuple[int, int, int, int]], target: str, size: int = 224) -> fkl.Pipeline:
    return fkl.compose(
        fkl.TensorRead(), fkl.Crop(rects), fkl.Resize(size, size), fkl.Mul(1 / 255), fkl.Sub(MEAN), fkl.Div(STD),
        fkl.TensorSplit(), target=target,
    )  # fmt: skip


def _random_rects(n: int, width: int, height: int, w: int = 200, h: int = 150) -> list[tuple[int, int, int, int]]:
    return [(int(RNG.integers(0, width - w)), int(RNG.integers(0, height - h)), w, h) for _ in range(n)]


@pytest.mark.parametrize("target", TARGETS)
def test_dnn_preprocessing_64_rois_one_launch(target: str) -> None:
    img = RNG.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)
    rects = _random_rects(64, 1920, 1080)
    out = from_target(target, _one_call(_dnn_pipe(rects, target), on_target(target, img)))
    assert out.shape == (64, 3, 224, 224) and out.dtype == np.float32
    np.testing.assert_allclose(out, _dnn_reference(img, rects, 224), atol=2e-4)


@pytest.mark.parametrize("target", TARGETS)
def test_rect_values_counts_and_image_size_do_not_recompile(target: str) -> None:
    img = RNG.integers(0, 256, (120, 200, 3), dtype=np.uint8)
    _dnn_pipe(_random_rects(5, 200, 120, 40, 30), target, 24)(on_target(target, img))
    compiles = STATS.compiles
    for shape in [(120, 200, 3), (97, 151, 3), (300, 333, 3)]:
        other = RNG.integers(0, 256, shape, dtype=np.uint8)
        rects = _random_rects(5, shape[1], shape[0], 37, 29)
        out = from_target(target, _dnn_pipe(rects, target, 24)(on_target(target, other)))
        np.testing.assert_allclose(out, _dnn_reference(other, rects, 24), atol=2e-4)
    assert STATS.compiles == compiles, "rect values and image sizes must not recompile"
    for n in (6, 1, 64):  # a count is a value up to the kernel's capacity
        rects = _random_rects(n, 200, 120, 20, 10)
        out = from_target(target, _dnn_pipe(rects, target, 24)(on_target(target, img)))
        np.testing.assert_allclose(out, _dnn_reference(img, rects, 24), atol=2e-4)
    assert STATS.compiles == compiles
    _dnn_pipe(_random_rects(65, 200, 120, 20, 10), target, 24)(on_target(target, img))
    assert STATS.compiles == compiles + 1, "a count past the capacity compiles the next one, once"


@pytest.mark.parametrize("target", TARGETS)
def test_rects_of_different_sizes(target: str) -> None:
    img = RNG.integers(0, 256, (90, 120, 3), dtype=np.uint8)
    rects = [(0, 0, 40, 30), (10, 20, 77, 51), (100, 80, 20, 10)]
    out = from_target(target, _dnn_pipe(rects, target, 32)(on_target(target, img)))
    np.testing.assert_allclose(out, _dnn_reference(img, rects, 32), atol=2e-4)
    no_resize = fkl.compose(fkl.TensorRead(), fkl.Crop(rects), fkl.TensorWrite(), target=target)
    with pytest.raises(ValueError, match="put a Resize after the Crop"):
        no_resize(on_target(target, img))


@pytest.mark.parametrize("target", TARGETS)
def test_a_one_rect_crop_before_a_rect_list_crops_every_plane(target: str) -> None:
    img = RNG.integers(0, 256, (45, 61, 3), dtype=np.uint8)
    rects = [(1, 2, 30, 20), (3, 4, 25, 31)]
    nested = fkl.compose(fkl.TensorRead(), fkl.Crop(2, 1, 50, 40), fkl.Crop(rects), fkl.Resize(16, 12),
                         fkl.TensorWrite(), target=target)  # fmt: skip
    shifted = fkl.compose(fkl.TensorRead(), fkl.Crop([(x + 2, y + 1, w, h) for x, y, w, h in rects]),
                          fkl.Resize(16, 12), fkl.TensorWrite(), target="cpu")  # fmt: skip
    np.testing.assert_array_equal(from_target(target, nested(on_target(target, img))), shifted(img))


def _wide_edge_case(dtype: str, channels: int, w: int) -> tuple[np.ndarray, list[fkl.Op]]:
    """An integer image `w` wide and crops at its edges (1 and 2 pixels wide among them), resized to 6
    planes of 256x192: more pixels than an H200 holds threads, so the GPU runs the wide entry."""
    h = 17
    info = np.iinfo(dtype)
    shape = (h, w, channels) if channels > 1 else (h, w)
    img = RNG.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)
    rects = {
        1: [(0, 0, 1, h), (0, 3, 1, 9), (0, 16, 1, 1), (0, 0, 1, 2), (0, 5, 1, 7), (0, 1, 1, 15)],
        2: [(1, 0, 1, h), (0, 0, 2, h), (0, 3, 1, 9), (1, 16, 1, 1), (0, 5, 2, 7), (1, 1, 1, 15)],
    }.get(w, [(w - 5, 0, 5, h), (w - 1, 3, 1, 9), (12, 2, 1, 14), (w - 2, 0, 2, h), (0, 0, w, h), (7, 5, 11, 3)])
    return img, [fkl.Crop(rects), fkl.Resize(256, 192), fkl.Mul(0.5), fkl.TensorWrite()]


@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize(
    ("dtype", "channels", "w"), [("uint8", 3, 33), ("int16", 1, 33), ("uint8", 4, 2), ("uint8", 3, 1)]
)
def test_wide_entry_taps_at_the_image_edges_equal_the_cpu_target(dtype: str, channels: int, w: int) -> None:
    """The wide entry reads an integer image's taps as column pairs (fkl::PairTap): a clamped tap at the
    last column blends its left neighbour with weight 1, elsewhere its right one with weight 0, and the
    bits equal the CPU target's, which samples each tap. A 1-pixel-wide image has no pair: the narrow
    entry runs."""
    img, ops = _wide_edge_case(dtype, channels, w)
    gpu = fkl.compose(fkl.TensorRead(), *ops, target="gpu")
    out = from_target("gpu", _one_call(gpu, on_target("gpu", img)))
    np.testing.assert_array_equal(out, fkl.compose(fkl.TensorRead(), *ops, target="cpu")(img))
    ((plan, _values),) = gpu._plans.values()  # the shared plan and this pipeline's values block
    assert (plan._function is plan.kernel.narrow) == (w == 1)


@pytest.mark.parametrize("target", TARGETS)
def test_list_of_images_is_one_launch(target: str) -> None:
    images = [(RNG.standard_normal((67, 45, 3)) * 10).astype(np.float32) for _ in range(8)]
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add((1.0, -1.0, 0.5)), fkl.TensorWrite(), target=target)
    out = from_target(target, _one_call(pipe, [on_target(target, x) for x in images]))
    assert out.shape == (8, 67, 45, 3)
    for i, x in enumerate(images):
        np.testing.assert_allclose(out[i], x.astype(np.float64) * 2 + (1.0, -1.0, 0.5), rtol=1e-6, atol=1e-5)
    compiles = STATS.compiles
    more = [(RNG.standard_normal((30, 31, 3))).astype(np.float32) for _ in range(8)]
    out2 = from_target(target, pipe([on_target(target, x) for x in more]))
    np.testing.assert_allclose(out2[7], more[7].astype(np.float64) * 2 + (1.0, -1.0, 0.5), rtol=1e-6, atol=1e-5)
    assert STATS.compiles == compiles
    with pytest.raises(ValueError, match="must share one shape and dtype"):
        pipe([on_target(target, images[0]), on_target(target, more[0])])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_list_of_images_with_a_misaligned_member(target: str, dtype: str) -> None:
    # a flat kernel over the pointer table: one member one element off a 16-byte boundary must send
    # every image down the element-wise path, and the results must not change
    shape = (33, 17, 3)
    backing = [RNG.integers(0, 200, (shape[0] * shape[1] * shape[2] + 1,)).astype(dtype) for _ in range(5)]
    images = [b[1:].reshape(shape) if i == 2 else b[:-1].reshape(shape) for i, b in enumerate(backing)]
    pipe = fkl.compose(fkl.TensorRead(), fkl.Add((3, 5, 7)), fkl.TensorWrite(), target=target)
    expected = [x.astype(np.float64) + np.array([3, 5, 7]) for x in images]
    inputs = [on_target(target, b) for b in backing]
    views = [v[1:].reshape(shape) if i == 2 else v[:-1].reshape(shape) for i, v in enumerate(inputs)]
    out = from_target(target, _one_call(pipe, views))
    for i in range(5):
        np.testing.assert_allclose(out[i], expected[i], rtol=1e-6)
    aligned = from_target(target, pipe([on_target(target, np.ascontiguousarray(x)) for x in images]))
    np.testing.assert_array_equal(aligned, out)


@pytest.mark.parametrize("target", TARGETS)
def test_list_of_images_with_crop_and_resize(target: str) -> None:
    images = [RNG.integers(0, 256, (50, 70), dtype=np.uint8) for _ in range(3)]
    pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(5, 6, 40, 30), fkl.Resize(17, 13), fkl.TensorWrite(), target=target)
    out = from_target(target, _one_call(pipe, [on_target(target, x) for x in images]))
    import cv2

    for i, x in enumerate(images):
        ref = cv2.resize(x[6:36, 5:45].astype(np.float32), (17, 13), interpolation=cv2.INTER_LINEAR)
        np.testing.assert_allclose(out[i], ref, atol=1e-3)


def _divergent_chains() -> tuple[tuple[fkl.frontend.ops.Op, ...], ...]:  # type: ignore[name-defined]
    a = (fkl.TensorRead(), fkl.Resize(16, 12), fkl.Mul(2.0), fkl.SaturateCast("uint8"), fkl.TensorWrite())
    b = (fkl.TensorRead(), fkl.Crop(3, 4, 20, 10), fkl.Resize(16, 12, "nearest"), fkl.TensorWrite())
    c = (fkl.TensorRead(), fkl.Crop(0, 0, 16, 12), fkl.Add(7), fkl.TensorWrite())
    return a, b, c


@pytest.mark.parametrize("target", TARGETS)
def test_divergent_batch_runs_each_plane_with_its_chain(target: str) -> None:
    img = RNG.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    chains = _divergent_chains()
    plane_map = [1, 2, 1, 3, 2]
    pipe = fkl.compose_divergent(plane_map, *chains, target=target)
    out = from_target(target, _one_call(pipe, on_target(target, img)))
    assert out.shape == (5, 12, 16, 3)
    singles = [fkl.compose(*chain, target="cpu")(img) for chain in chains]
    for z, k in enumerate(plane_map):
        np.testing.assert_array_equal(out[z], singles[k - 1], err_msg=f"plane {z} (chain {k})")
    ir = pipe.ir()
    assert ir.count("fkl.kernel") == 1 and "planemap: i32 x 5" in ir
    compiles = STATS.compiles
    again = fkl.compose_divergent([3, 3, 1, 2, 1], *chains, target=target)
    out2 = from_target(target, again(on_target(target, img)))
    np.testing.assert_array_equal(out2[0], singles[2])
    assert STATS.compiles == compiles, "a new plane map with the same plane count reuses the binary"


@pytest.mark.parametrize("target", TARGETS)
def test_divergent_batch_input_one_image_per_plane(target: str) -> None:
    batch = RNG.integers(0, 256, (3, 40, 50, 3), dtype=np.uint8)
    chains = _divergent_chains()
    out = from_target(target, fkl.compose_divergent([2, 3, 1], *chains, target=target)(on_target(target, batch)))
    for z, k in enumerate([2, 3, 1]):
        np.testing.assert_array_equal(out[z], fkl.compose(*chains[k - 1], target="cpu")(batch[z]))


def test_divergent_errors() -> None:
    a, b, c = _divergent_chains()
    with pytest.raises(ValueError, match=r"plane_map\[1\] = 4; chains are numbered 1..3"):
        fkl.compose_divergent([1, 4], a, b, c, target="cpu")
    with pytest.raises(ValueError, match=r"chain\(s\) \[3\] are not used"):
        fkl.compose_divergent([1, 2], a, b, c, target="cpu")
    small = (fkl.TensorRead(), fkl.Crop(0, 0, 4, 4), fkl.Add(1), fkl.TensorWrite())
    pipe = fkl.compose_divergent([1, 2], a, small, target="cpu")
    with pytest.raises(ValueError, match="chains produce different sizes"):
        pipe(RNG.integers(0, 256, (40, 50, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="one image or one per output plane"):
        fkl.compose_divergent([1, 2], a, b, target="cpu")(np.zeros((3, 40, 50, 3), np.uint8))


@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
def test_torch_profiler_sees_one_kernel() -> None:
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile

    img = torch.from_numpy(RNG.integers(0, 256, (1080, 1920, 3), dtype=np.uint8)).cuda()
    pipe = _dnn_pipe(_random_rects(64, 1920, 1080), "gpu")
    out = torch.empty((64, 3, 224, 224), dtype=torch.float32, device="cuda")
    pipe(img, out=out)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        pipe(img, out=out)
        torch.cuda.synchronize()
    kernels = [e for e in prof.events() if e.device_type.name == "CUDA" and "fkl_kernel" in e.name]
    others = [e.name for e in prof.events() if e.device_type.name == "CUDA" and "fkl_kernel" not in e.name]
    assert len(kernels) == 1, (len(kernels), others)
