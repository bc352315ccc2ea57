"""Runtime batch counts (issue 18 item 3): the number of rects in `Crop([rects])` and of images in a list call
is a value. One kernel, compiled for a capacity, serves every count up to it; a structure known to the
process with new rects or a new count builds no IR and writes no file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build
from fklir.frontend import lowering
from fklir.jit.signature import BATCH_MIN
from tests.runtime import test_host_path
from tests.runtime.chains import from_target, on_target

FRAMES = 200
fake = test_host_path.fake  # (driver, torch): the fake driver and torch, as a fixture
TARGETS = ["cpu", pytest.param("gpu", marks=pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU"))]


@pytest.fixture
def private_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def lowerings(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Each IR build of the test (compose's cold path), by its module."""
    built: list[object] = []
    lower = lowering.lower_pipeline

    def counted(*args: Any, **kwargs: Any) -> Any:
        module = lower(*args, **kwargs)
        built.append(module)
        return module

    monkeypatch.setattr(lowering, "lower_pipeline", counted)
    return built


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _frames(rng: np.random.Generator, make: Callable[[int], object]) -> list[object]:
    """FRAMES frames of 1..BATCH_MIN items each, every count among them."""
    counts = [*range(1, BATCH_MIN + 1), *(int(n) for n in rng.integers(1, BATCH_MIN + 1, FRAMES - BATCH_MIN))]
    return [make(n) for n in rng.permutation(counts)]


def _crop_resize(rects: list[tuple[int, int, int, int]], target: str) -> fkl.Pipeline:
    # a structure of this module's own: the one compile it counts is not another test's kernel
    return fkl.compose(
        fkl.TensorRead(), fkl.Crop(rects), fkl.Resize(13, 11), fkl.Mul(3.0), fkl.Add(0.5), fkl.TensorWrite(),
        target=target,
    )  # fmt: skip


def _crop_reference(img: np.ndarray, rects: list[tuple[int, int, int, int]]) -> np.ndarray:
    import cv2

    planes = [cv2.resize(img[y : y + h, x : x + w], (13, 11), interpolation=cv2.INTER_LINEAR) for x, y, w, h in rects]
    return np.stack(planes) * np.float32(3.0) + np.float32(0.5)


@pytest.mark.parametrize("target", TARGETS)
def test_a_detectors_rois_every_frame_compile_once(target: str, private_cache: Path, lowerings: list[object]) -> None:
    """A new compose() per frame with 1..64 random rects: one compile, one IR build, one set of files (the
    first frame's), and every frame matches OpenCV."""
    rng = np.random.default_rng(18)
    img = rng.random((90, 120, 3), dtype=np.float32)
    x = on_target(target, img)

    def rects(n: int) -> list[tuple[int, int, int, int]]:
        sizes = rng.integers(4, 40, (n, 2))
        corners = rng.integers(0, (120 - 40, 90 - 40), (n, 2))
        return [(int(cx), int(cy), int(w), int(h)) for (cx, cy), (w, h) in zip(corners, sizes, strict=True)]

    compiles = build.STATS.compiles
    files: list[Path] | None = None
    for frame in _frames(rng, rects):
        boxes: list[tuple[int, int, int, int]] = frame  # pyright: ignore[reportAssignmentType]
        got = from_target(target, _crop_resize(boxes, target)(x))
        assert got.shape == (len(boxes), 11, 13, 3)
        np.testing.assert_allclose(got, _crop_reference(img, boxes), rtol=1e-5, atol=1e-5)
        files = _files(private_cache) if files is None else files
        assert _files(private_cache) == files, "a new rect set wrote a file"
    assert build.STATS.compiles - compiles == 1
    assert len(lowerings) == 1, "a known structure with new rects built IR"


def _list_chain(target: str) -> fkl.Pipeline:
    return fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Sub(1.5), fkl.TensorWrite(), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_lists_of_1_to_64_images_compile_once(target: str, private_cache: Path, lowerings: list[object]) -> None:
    """One pipeline and new ones alike: every list length up to the capacity runs the one kernel."""
    rng = np.random.default_rng(19)
    pipe = _list_chain(target)
    compiles = build.STATS.compiles

    def images(n: int) -> list[np.ndarray]:
        h, w = (int(v) for v in rng.integers(1, 20, 2))
        return [rng.random((h, w, 3), dtype=np.float32) for _ in range(n)]

    for k, frame in enumerate(_frames(rng, images)):
        batch: list[np.ndarray] = frame  # pyright: ignore[reportAssignmentType]
        call = pipe if k % 2 else _list_chain(target)
        got = from_target(target, call([on_target(target, a) for a in batch]))
        np.testing.assert_array_equal(got, np.stack(batch) * np.float32(2.0) - np.float32(1.5))
    assert build.STATS.compiles - compiles == 1
    assert len(lowerings) == 1


def test_capacity_is_in_the_kernel_and_the_count_in_the_output() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Crop([(0, 0, 2, 2), (1, 1, 2, 2)]), fkl.TensorWrite(), target="cpu")
    source = pipe.source_for("uint8", (4, 4, 3))
    assert f"fkl::Rect crop1[{BATCH_MIN}];" in source
    img = np.arange(4 * 4 * 3, dtype=np.uint8).reshape(4, 4, 3)
    np.testing.assert_array_equal(pipe(img), np.stack([img[0:2, 0:2], img[1:3, 1:3]]))


def test_a_single_rect_is_a_value_too(private_cache: Path, lowerings: list[object]) -> None:
    """Crop(x, y, w, h) with new numbers finds the plan of the old ones: no IR, no file, no compile."""
    rng = np.random.default_rng(20)
    img = rng.random((30, 40), dtype=np.float32)

    def crop(x: int, y: int) -> fkl.Pipeline:
        return fkl.compose(fkl.TensorRead(), fkl.Crop(x, y, 7, 5), fkl.Mul(0.25), fkl.TensorWrite(), target="cpu")

    crop(0, 0)(img)
    files, compiles, built = _files(private_cache), build.STATS.compiles, len(lowerings)
    for x, y in rng.integers(0, 20, (10, 2)):
        np.testing.assert_array_equal(crop(int(x), int(y))(img), img[y : y + 5, x : x + 7] * np.float32(0.25))
    assert (build.STATS.compiles, len(lowerings)) == (compiles, built)
    assert _files(private_cache) == files


def test_gpu_launches_grid_the_count_and_pack_its_rects_and_pointers(
    monkeypatch: pytest.MonkeyPatch, fake: Any
) -> None:
    """On the fake driver: the launch's plane extent is the call's count, never the capacity, and the block
    holds this call's rects and pointers; every count builds the one kernel."""
    driver, torch = fake
    builds: list[str] = []
    monkeypatch.setattr(build, "_compile_gpu", lambda emitted, key, arch: builds.append(key) or b"stand-in cubin")
    x = torch.empty((40, 50, 3), dtype=torch.uint8)
    for n in (1, 7, BATCH_MIN, 33):
        rects = [(i % 10, i % 7, 5 + i % 3, 4) for i in range(n)]
        pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(rects), fkl.Resize(6, 6), fkl.TensorWrite(), target="gpu")
        assert tuple(pipe(x).shape) == (n, 6, 6, 3)
        assert driver.launches[-1][1][2] == n
        ((plan, _values),) = pipe._plans.values()
        packed = plan.params.crop1  # pyright: ignore[reportAttributeAccessIssue]
        assert len(packed) == BATCH_MIN
        assert [(r.x, r.y, r.w, r.h) for r in packed[:n]] == rects
    images = fkl.compose(fkl.TensorRead(), fkl.Resize(6, 6), fkl.TensorWrite(), target="gpu")
    for n in (2, BATCH_MIN, 1):
        listed = [torch.empty((20, 30, 3), dtype=torch.uint8) for _ in range(n)]
        assert tuple(images(listed).shape) == (n, 6, 6, 3)
        assert driver.launches[-1][1][2] == n
        ((plan, _values),) = images._plans.values()
        assert list(plan.params.src_table[:n]) == [t.data_ptr() for t in listed]  # pyright: ignore[reportAttributeAccessIssue]
    assert len(builds) == 2
