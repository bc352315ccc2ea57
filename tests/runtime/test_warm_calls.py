"""The shipped kernels' repeated calls on a caller's stream (jit/warm_calls.py), without a GPU
(tests/runtime/fake_driver.py): a call on arrays like a remembered call's describes nothing and launches with
its own pointers, a new output is new each call, options and alignment are still told apart, and the caller's
arrays are not kept."""

from __future__ import annotations

import ctypes
import gc
import importlib
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fklir.jit import tensors
from fklir.jit.tensors import TensorView
from fklir.kernels import histogram as histogram_module
from fklir.kernels import nv12_to_rgb as nv12_module
from tests.runtime.fake_driver import FakeDriver, installed, jit_without_compiler


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[FakeDriver, Any, list[object]]]:
    """(driver, torch, the arrays described): a fake driver whose launches record their tensors' pointers, a
    fake torch, instances 'loaded' without a compiler, and both kernel modules imported afresh (and again
    after, so that no fake instance outlives the test)."""
    torch = jit_without_compiler(monkeypatch, tmp_path)
    described: list[object] = []
    describe = tensors.describe

    def counting(x: object, what: str) -> tensors.Tensor:
        described.append(x)
        return describe(x, what)

    monkeypatch.setattr(tensors, "describe", counting)
    with installed(FakeDriver()) as driver:
        driver.cuCtxSynchronize = lambda: (0,)
        driver.cuMemcpyHtoD = lambda destination, source, nbytes: (0,)
        launch = driver.cuLaunchKernel
        driver.pointers = []  # each accepted launch's first three tensor pointers (both kernels have three)
        driver.params = []  # and the address of its void*[] of arguments

        def recording(f: Any, gx: int, gy: int, gz: int, bx: int, by: int, bz: int, *rest: Any) -> Any:
            result = launch(f, gx, gy, gz, bx, by, bz, *rest)
            if not result[0]:
                views = (ctypes.c_void_p * 3).from_address(rest[2])
                driver.pointers.append(tuple(int(TensorView.from_address(views[i]).data) for i in range(3)))
                driver.params.append(rest[2])
            return result

        driver.cuLaunchKernel = recording
        importlib.reload(histogram_module)
        importlib.reload(nv12_module)
        monkeypatch.setattr(histogram_module, "describe", counting)
        yield driver, torch, described
    importlib.reload(histogram_module)
    importlib.reload(nv12_module)


def test_a_repeated_histogram_describes_nothing_and_launches_its_own_pointers(fake: Any) -> None:
    driver, torch, described = fake
    s = torch.cuda.Stream()
    images = [torch.empty((2, 9, 7, 3), dtype=torch.uint8) for _ in range(3)]
    outs = [torch.empty((2, 3, 256), dtype=torch.int32) for _ in range(3)]
    assert histogram_module.histogram(images[0], out=outs[0], stream=s) is outs[0]
    described.clear()
    for image, out in zip(images[1:], outs[1:], strict=True):
        assert histogram_module.histogram(image, out=out, stream=s) is out
        assert driver.pointers[-1][:2] == (image.data_ptr(), out.data_ptr())
        assert driver.launches[-1][3] == s.cuda_stream
    assert described == []
    assert len({p[2] for p in driver.pointers}) == 1, "one scratch for the stream's calls"


def test_a_repeated_histogram_without_out_makes_a_new_one_each_call(fake: Any) -> None:
    driver, torch, described = fake
    s = torch.cuda.Stream()
    image = torch.empty((9, 7), dtype=torch.uint8)
    made = [histogram_module.histogram(image, stream=s) for _ in range(3)]
    assert [tuple(m.shape) for m in made] == [(1, 256)] * 3 and all(m.dtype == torch.int32 for m in made)
    assert [p[1] for p in driver.pointers] == [m.data_ptr() for m in made]
    assert len({m.data_ptr() for m in made}) == 3
    assert described.count(image) == 1, "only the first call describes"


def test_other_options_and_a_misaligned_out_take_the_full_call(fake: Any) -> None:
    driver, torch, described = fake
    s = torch.cuda.Stream()
    frame = torch.empty((2, 12, 10), dtype=torch.uint8)
    out = torch.empty((2, 8, 10, 3), dtype=torch.uint8)
    assert nv12_module.nv12_to_rgb(frame, order="RGB", out=out, stream=s) is out
    described.clear()
    assert nv12_module.nv12_to_rgb(frame, order="RGB", out=out, stream=s) is out
    assert described == []
    assert nv12_module.nv12_to_rgb(frame, order="BGR", out=out, stream=s) is out
    assert frame in described, "another order: the full call"
    assert driver.pointers[-1][:2] == (out.data_ptr(), frame.data_ptr())
    planar = torch.empty((2, 3, 8, 10), dtype=torch.float32)
    nv12_module.nv12_to_rgb(frame, dtype="float32", out=planar, stream=s)
    misaligned = torch.empty((2, 3, 8, 10), dtype=torch.float32)
    misaligned._ptr += 4
    with pytest.raises(ValueError, match=r"^nv12_to_rgb: a GPU out must start at a multiple of 8 bytes"):
        nv12_module.nv12_to_rgb(frame, dtype="float32", out=misaligned, stream=s)


def test_repeated_calls_of_other_options_launch_their_own_scalars(fake: Any) -> None:
    """Remembered calls of one plan with other scalars (RGB, BGR) in turn: each launch carries its own, though
    a repeat of the call whose scalars the plan holds writes none."""
    driver, torch, _described = fake
    s = torch.cuda.Stream()
    frame = torch.empty((2, 12, 10), dtype=torch.uint8)
    out = torch.empty((2, 8, 10, 3), dtype=torch.uint8)
    orders = ["RGB", "BGR", "BGR", "RGB", "RGB", "BGR"]
    launched = []
    for order in orders:
        nv12_module.nv12_to_rgb(frame, order=order, out=out, stream=s)
        arguments = (ctypes.c_void_p * 5).from_address(driver.params[-1])  # out, y, uv, uv_row, bgr, ...
        launched.append(ctypes.c_bool.from_address(arguments[4]).value)  # as the launch read it: nothing since
    assert launched == [order == "BGR" for order in orders]


def test_the_callers_arrays_are_not_kept(fake: Any) -> None:
    _driver, torch, described = fake
    s = torch.cuda.Stream()
    y, uv = torch.empty((12, 10), dtype=torch.uint8), torch.empty((6, 5, 2), dtype=torch.uint8)
    made = nv12_module.nv12_to_rgb(y, uv, stream=s)
    again = nv12_module.nv12_to_rgb(y, uv, stream=s)
    described.clear()
    assert again is not made and tuple(again.shape) == (12, 10, 3)
    alive = [weakref.ref(a) for a in (y, uv, made, again)]
    del y, uv, made, again
    gc.collect()
    assert [ref() for ref in alive] == [None] * 4
