"""compose_divergent called like the seed: `pipe([img0, img1, ...])`, one image per output plane, plane z
running chain plane_map[z] on image z (one kernel, a pointer table); the same as one (B, H, W, C) array.
CPU target against the reference interpreter and OpenCV; the GPU against the CPU (on the device)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

import fklir as fkl
from fklir.backend import compilers
from fklir.backend.build import INCLUDE_DIR, STATS
from fklir.backend.kernel_plan import emit_kernel
from fklir.frontend.lowering import kernels_of, lower_chain, lower_pipeline, run_passes
from fklir.interpreters.fkl import run_module
from fklir.passes.infer_types import InferTypesPass
from fklir.runtime.launch import LAUNCHES
from tests.runtime import test_host_path

RNG = np.random.default_rng(77)
GPU = pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")


def _chains() -> tuple[tuple[Any, ...], ...]:
    """Three chains of one output type and size (16 x 12 uint8 x 3) from a 50 x 40 image."""
    return (
        (fkl.TensorRead(), fkl.Resize(16, 12), fkl.Mul(2.0), fkl.SaturateCast("uint8"), fkl.TensorWrite()),
        (fkl.TensorRead(), fkl.Crop(3, 4, 20, 10), fkl.Resize(16, 12, "nearest"), fkl.TensorWrite()),
        (fkl.TensorRead(), fkl.Crop(5, 1, 16, 12), fkl.Add(7), fkl.TensorWrite()),
    )


def _images(n: int, shape: tuple[int, ...] = (40, 50, 3)) -> list[np.ndarray[Any, Any]]:
    return [RNG.integers(0, 256, shape, dtype=np.uint8) for _ in range(n)]


def _interpreted(chain: tuple[Any, ...], image: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The reference interpreter on one chain's frontend IR."""
    channels = image.shape[2] if image.ndim == 3 else 1
    module = run_passes(lower_chain(chain, str(image.dtype), channels, 1), (InferTypesPass(),))
    return run_module(module, {"src": image})["dst"][0]


def _opencv(k: int, image: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """What chain k + 1 of _chains() computes, written with OpenCV and numpy."""
    if k == 0:
        resized = cv2.resize(image.astype(np.float32), (16, 12), interpolation=cv2.INTER_LINEAR)
        return np.clip(np.rint(resized.astype(np.float64) * 2.0), 0, 255).astype(np.uint8)
    if k == 1:
        return cv2.resize(image[4:14, 3:23], (16, 12), interpolation=cv2.INTER_NEAREST)
    return image[1:13, 5:21] + np.uint8(7)  # uint8 wraps, like the chain


@pytest.mark.parametrize("plane_map", [[1, 2, 2], [2, 3, 1, 1, 3], [3, 1, 2]])
def test_list_call_runs_chain_plane_map_z_on_image_z(plane_map: list[int]) -> None:
    chains = _chains()[: max(plane_map)]
    images = _images(len(plane_map))
    pipe = fkl.compose_divergent(plane_map, *chains, target="cpu")
    launches = LAUNCHES.count
    out = pipe(images)
    assert LAUNCHES.count == launches + 1, "one kernel for the whole list"
    assert out.shape == (len(plane_map), 12, 16, 3) and out.dtype == np.uint8
    for z, k in enumerate(plane_map):
        chain = chains[k - 1]
        np.testing.assert_array_equal(out[z], _interpreted(chain, images[z]), err_msg=f"plane {z} (chain {k})")
        tolerance = 1 if k == 1 else 0  # linear resize then rounding: within 1 of OpenCV (SPEC)
        error = np.abs(out[z].astype(np.int64) - _opencv(k - 1, images[z]).astype(np.int64)).max()
        assert error <= tolerance, f"plane {z} (chain {k}): {error} from OpenCV"
    np.testing.assert_array_equal(pipe(np.stack(images)), out, err_msg="a list is the same as its stack")


def test_list_call_compiles_once_per_plane_count_and_takes_out() -> None:
    chains = _chains()
    pipe = fkl.compose_divergent([1, 2, 3], *chains, target="cpu")
    pipe(_images(3))
    compiles = STATS.compiles
    images = _images(3, (33, 47, 3))  # another size: a value, not a new kernel
    out = np.empty((3, 12, 16, 3), np.uint8)
    assert pipe(images, out=out) is out
    again = fkl.compose_divergent([2, 3, 1], *chains, target="cpu")  # another map of the same count
    remapped = again(tuple(images))
    assert STATS.compiles == compiles
    for z, k in enumerate([1, 2, 3]):
        np.testing.assert_array_equal(out[z], _interpreted(chains[k - 1], images[z]))
    for z, k in enumerate([2, 3, 1]):
        np.testing.assert_array_equal(remapped[z], _interpreted(chains[k - 1], images[z]))


def test_list_of_gray_float_images_with_numpy_plane_map() -> None:
    a = (fkl.TensorRead(), fkl.Mul(-1.5), fkl.TensorWrite())
    b = (fkl.TensorRead(), fkl.Sub(0.25), fkl.Max(0.0), fkl.TensorWrite())
    images = [RNG.standard_normal((9, 13)).astype(np.float32) for _ in range(4)]
    out = fkl.compose_divergent(np.array([2, 1, 1, 2]), a, b, target="cpu")(images)
    assert out.shape == (4, 9, 13) and out.dtype == np.float32
    for z, k in enumerate([2, 1, 1, 2]):
        x = images[z]
        expected = x * np.float32(-1.5) if k == 1 else np.maximum(x - np.float32(0.25), np.float32(0.0))
        np.testing.assert_array_equal(out[z], expected, err_msg=f"plane {z}")


def test_one_image_in_a_list_feeds_every_plane() -> None:
    chains = _chains()
    (image,) = _images(1)
    out = fkl.compose_divergent([1, 3, 2], *chains, target="cpu")([image])
    for z, k in enumerate([1, 3, 2]):
        np.testing.assert_array_equal(out[z], _interpreted(chains[k - 1], image))


def test_target_comes_from_composed_chains() -> None:
    a, b, c = (fkl.compose(*chain, target="cpu") for chain in _chains())
    pipe = fkl.compose_divergent([1, 2, 3], a, b, c)
    assert pipe.target == "cpu"
    images = _images(3)
    out = pipe(images)  # numpy images: the CPU target, as the chains were composed
    np.testing.assert_array_equal(out[1], _interpreted(_chains()[1], images[1]))
    assert fkl.compose_divergent([1, 2], a, b, target="gpu").target == "gpu"  # an explicit target wins
    gpu_chain = fkl.compose(*_chains()[2], target="gpu")
    with pytest.raises(ValueError, match=r"compose_divergent: the chains were composed for targets \['cpu', 'gpu'\]"):
        fkl.compose_divergent([1, 2], a, gpu_chain)
    with pytest.raises(ValueError, match="compose_divergent: target must be 'gpu' or 'cpu', got 'tpu'"):
        fkl.compose_divergent([1, 2], a, b, target="tpu")


def test_list_errors_name_what_is_wrong() -> None:
    pipe = fkl.compose_divergent([1, 2, 2], *_chains()[:2], target="cpu")
    with pytest.raises(ValueError, match=r"the input has 2 images; give one image or one per output"):
        pipe(_images(2))
    with pytest.raises(ValueError, match="must share one shape and dtype"):
        pipe([*_images(2), _images(1, (40, 51, 3))[0]])
    with pytest.raises(ValueError, match="TensorRead: the input list is empty"):
        pipe([])
    with pytest.raises(ValueError, match="a list input holds single images"):
        pipe([np.zeros((3, 40, 50, 3), np.uint8)] * 3)
    with pytest.raises(ValueError, match=r"compose_divergent: plane_map\[1\] = 0; chains are numbered 1..2"):
        fkl.compose_divergent(np.array([1, 0]), *_chains()[:2], target="cpu")
    with pytest.raises(ValueError, match=r"compose_divergent: .*plane_map.*1\.5"):
        fkl.compose_divergent([1, 1.5], *_chains()[:2], target="cpu")


def _divergent_list_source() -> str:
    module = lower_pipeline([c for c in _chains()], "uint8", 3, 1, images=3, plane_map=[0, 1, 2])
    (kernel,) = kernels_of(run_passes(module))
    return emit_kernel(kernel).source


def test_divergent_list_kernel_reads_the_pointer_table() -> None:
    source = _divergent_list_source()
    assert "const void* src_table[3];" in source and "p.src_table[z]" in source
    assert len(re.findall(r"^namespace c\d \{", source, re.MULTILINE)) == 3  # one per chain


@pytest.mark.skipif(not compilers.nvcc_available(), reason="nvcc not on PATH")
def test_divergent_list_kernel_compiles_to_sm90_cubin(tmp_path: Path) -> None:
    cubin = compilers.compile_cubin(_divergent_list_source(), INCLUDE_DIR, "sm_90", tmp_path)
    assert cubin[:4] == b"\x7fELF" and b"fkl_kernel" in cubin


@GPU
@pytest.mark.parametrize("plane_map", [[1, 2, 2], [2, 3, 1, 1, 3]])
def test_gpu_list_call_equals_the_cpu(plane_map: list[int]) -> None:
    torch = pytest.importorskip("torch")
    chains = _chains()[: max(plane_map)]
    images = _images(len(plane_map))
    expected = fkl.compose_divergent(plane_map, *chains, target="cpu")(images)
    pipe = fkl.compose_divergent(plane_map, *chains, target="gpu")
    out = pipe([torch.from_numpy(x).cuda() for x in images])
    assert isinstance(out, torch.Tensor) and out.is_cuda
    np.testing.assert_array_equal(out.cpu().numpy(), expected)
    buffers = [fkl.DeviceBuffer.from_host(x) for x in images]
    np.testing.assert_array_equal(pipe(buffers).numpy(), expected)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
def test_pickled_divergent_pipeline_keeps_its_map_and_target() -> None:
    import pickle

    pipe = fkl.compose_divergent(np.array([3, 1, 2]), *_chains(), target="cpu")
    images = _images(3)
    again = pickle.loads(pickle.dumps(pipe))
    assert again.target == "cpu"
    np.testing.assert_array_equal(again(images), pipe(images))


# ---- a batch of no images (SPEC §3 edge inputs) ------------------------------------------------------

fake = test_host_path.fake  # (driver, torch): the fake driver and torch, as a fixture


@pytest.mark.parametrize("plane_map", [[1, 2, 3], [2, 3, 1, 1, 3]])
def test_a_batch_of_no_images_gives_no_planes_like_compose(plane_map: list[int]) -> None:
    """(0, H, W, C) in, (0, h, w, C) out of the plane size the chains imply; nothing launched."""
    chains = _chains()[: max(plane_map)]
    pipe = fkl.compose_divergent(plane_map, *chains, target="cpu")
    full = pipe(_images(1)[0])  # one image feeds every plane: the plane size and type of a real call
    none = np.zeros((0, 40, 50, 3), np.uint8)
    launches = LAUNCHES.count
    out = pipe(none)
    assert out.shape == (0, *full.shape[1:]) == (0, 12, 16, 3) and out.dtype == full.dtype
    assert fkl.compose(*chains[0], target="cpu")(none).shape == out.shape
    given = np.empty((0, 12, 16, 3), np.uint8)
    assert pipe(none, out=given) is given
    split = fkl.compose_divergent(plane_map, *((*c[:-1], fkl.TensorSplit()) for c in chains), target="cpu")
    assert split(none).shape == (0, 3, 12, 16)
    assert LAUNCHES.count == launches
    module = lower_pipeline(chains, "uint8", 3, 1, plane_map=[k - 1 for k in plane_map])
    reference = run_module(run_passes(module, (InferTypesPass(),)), {"src": none})["dst"]
    assert reference.shape == out.shape, "the reference interpreter agrees"


def test_a_batch_of_no_images_still_checks_the_rects() -> None:
    pipe = fkl.compose_divergent([1, 2, 3], *_chains(), target="cpu")
    with pytest.raises(ValueError, match=r"^Crop: rect \[3, 4, 20, 10\] leaves the 50x5 image"):
        pipe(np.zeros((0, 5, 50, 3), np.uint8))
    with pytest.raises(ValueError, match=r"the input has 2 planes; give one image or one per output plane \(3\)"):
        pipe(np.zeros((2, 40, 50, 3), np.uint8))


def test_gpu_batch_of_no_images_launches_nothing(fake: Any) -> None:
    driver, torch = fake
    pipe = fkl.compose_divergent([2, 1, 3, 3], *_chains(), target="gpu")
    out = pipe(torch.empty((0, 40, 50, 3), dtype=torch.uint8))
    assert tuple(out.shape) == (0, 12, 16, 3) and not driver.launches
