"""The GPU host path without a GPU: warm bound and unbound calls, the launch's context recovery, stream rules
and the first call of a fresh process, over a fake driver and a fake torch (tests/runtime/fake_driver.py).

What these pin down is fklir's own logic (which driver calls a call makes, on which stream, with which
pointers, and which checks still run on the warm path); test_bound_compose.py and test_gpu_*.py check the
same paths numerically on a real device.
"""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build
from fklir.jit import binding, default_stream, gpu_executor
from fklir.runtime import cuda_driver, interop
from fklir.runtime import launch as launch_module
from fklir.runtime.device_buffer import DeviceBuffer
from fklir.runtime.launch import LAUNCHES, GpuLaunch
from tests.runtime.fake_driver import CUresult, FakeDriver, installed, make_fake_torch

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """(driver, torch): a strict fake driver with one device, a fake torch, a private disk cache, and
    kernels that 'compile' to a stand-in cubin without any compiler."""
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(tmp_path))
    torch = make_fake_torch()
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setattr(build, "get_backend", lambda: "nvcc")
    monkeypatch.setattr(build, "_compiler_and_flags", lambda target, backend: ("fake nvcc 1.0", ()))
    monkeypatch.setattr(build, "_compile_gpu", lambda emitted, key, arch: b"stand-in cubin")
    with installed(FakeDriver(devices=2)) as driver:
        yield driver, torch


def _chain(read: fkl.TensorRead, write: fkl.TensorWrite) -> fkl.Pipeline:
    return fkl.compose(read, fkl.Cast("float32"), fkl.Mul(0.5), fkl.SaturateCast("uint8"), write, target="gpu")


def _plan(pipe: fkl.Pipeline) -> GpuLaunch:
    ((plan, _values),) = pipe._plans.values()
    assert isinstance(plan, GpuLaunch)
    return plan


def _primary(driver: FakeDriver, device: int = 0) -> int:
    return int(driver.primary[device])


# ---- the warm bound call ----------------------------------------------------------------------------


def test_warm_bound_call_is_one_launch_on_the_callers_stream(fake: Any) -> None:
    driver, torch = fake
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    y = torch.empty((6, 5, 3), dtype=torch.uint8)
    s = torch.cuda.Stream()
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(y))
    assert k(stream=s) is y  # the first call fills the block with the bindings
    assert k._bound is not None
    plan = k._bound.prepared.plan
    assert (plan.header.src, plan.header.dst) == (x.data_ptr(), y.data_ptr())
    driver.calls.clear()
    driver.launches.clear()
    launches = LAUNCHES.count
    for _ in range(3):
        assert k(stream=s) is y
    assert LAUNCHES.count == launches + 3
    assert [launch[3] for launch in driver.launches] == [s.cuda_stream] * 3
    assert driver.calls.get("cuCtxGetCurrent", 0) == 0, "a warm launch on a real stream queries no context"
    assert driver.calls.get("cuStreamSynchronize", 0) == 0, "a caller's stream is never synchronised"


def test_launches_overlap_the_previous_kernel_on_devices_that_can(fake: Any) -> None:
    """Compute capability 9.0: cuLaunchKernelEx with programmatic stream serialization, each launch on the
    stream it was given (the config is rebuilt when the stream changes)."""
    driver, torch = fake
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    y = torch.empty((6, 5, 3), dtype=torch.uint8)
    s, t = torch.cuda.Stream(), torch.cuda.Stream()
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(y))
    k(stream=s)
    driver.launches.clear()
    driver.programmatic = 0
    for stream in (s, t, t, s):
        k(stream=stream)
    assert [launch[3] for launch in driver.launches] == [v.cuda_stream for v in (s, t, t, s)]
    assert driver.programmatic == 4
    # a new stream per call: more streams than the launcher remembers, each call still on its own
    streams = [torch.cuda.Stream() for _ in range(cuda_driver.MAX_LAUNCH_CONFIGS + 5)]
    driver.launches.clear()
    for stream in [*streams, s, streams[0]]:
        k(stream=stream)
    assert [launch[3] for launch in driver.launches] == [v.cuda_stream for v in [*streams, s, streams[0]]]


@pytest.mark.parametrize("why", ["compute capability 8.0", "FKLIR_PDL=0"])
def test_launches_are_plain_where_overlap_is_unavailable_or_switched_off(
    fake: Any, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    driver, torch = fake
    if why == "FKLIR_PDL=0":
        monkeypatch.setattr(launch_module, "PROGRAMMATIC_LAUNCH", False)
    else:
        driver.compute_major = 8
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    y = torch.empty((6, 5, 3), dtype=torch.uint8)
    s = torch.cuda.Stream()
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(y))
    for _ in range(2):
        k(stream=s)
    assert [launch[3] for launch in driver.launches] == [s.cuda_stream] * 2
    assert driver.programmatic == 0


def test_overrides_never_touch_the_bindings_block(fake: Any) -> None:
    """The bindings have a parameter block of their own: an override fills the pipeline's shared plan, and
    an argless call, which takes no lock, launches the bindings' block whatever ran in between."""
    driver, torch = fake
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    y = torch.empty((6, 5, 3), dtype=torch.uint8)
    other = torch.empty((6, 5, 3), dtype=torch.uint8)
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(y))
    shared = _plan(k)
    assert k._bound is not None
    bound = k._bound.prepared.plan
    assert bound is not shared and bound.kernel is shared.kernel  # one compiled kernel
    k(stream=7)
    k(other, stream=7)
    assert (shared.header.src, shared.header.dst) == (other.data_ptr(), y.data_ptr())
    assert (bound.header.src, bound.header.dst) == (x.data_ptr(), y.data_ptr())
    driver.calls.clear()
    k(stream=7)  # the fast path: no re-fill
    assert driver.launches[-1][4] == bound.arg_address and driver.launches[-2][4] == shared.arg_address
    assert driver.calls.get("cuCtxGetCurrent", 0) == 0
    with pytest.raises(ValueError, match="input override: expected uint8"):
        k(torch.empty((7, 5, 3), dtype=torch.uint8), stream=7)
    k(stream=7)
    assert (bound.header.src, bound.header.dst) == (x.data_ptr(), y.data_ptr())
    assert driver.launches[-1][4] == bound.arg_address


@pytest.mark.parametrize("who", ["foreign", "other device", "none"])
def test_a_launch_refused_for_the_wrong_context_runs_once_in_ours(fake: Any, who: str) -> None:
    driver, torch = fake
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(torch.empty((6, 5, 3), dtype=torch.uint8)))
    k(stream=7)
    callers = {"foreign": driver.foreign, "other device": driver.primary[1], "none": None}[who]
    driver.set_current(callers)
    driver.launches.clear()
    driver.attempts = 0
    k(stream=7)
    assert len(driver.launches) == 1 and driver.attempts == 2
    # another library's context, or another device's (PyTorch's and CuPy's current device), comes back;
    # a thread that had none keeps ours
    assert driver.current() == (_primary(driver) if callers is None else int(callers))


def test_first_calls_leave_the_callers_context_current(fake: Any) -> None:
    driver, torch = fake
    driver.set_current(driver.primary[1])  # the caller works on device 1; the images are on device 0
    x, y = torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 5, 3), dtype=torch.uint8)
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    assert pipe(x, out=y, stream=7) is y  # plan, kernel load and launch
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(y))  # compiled and loaded at compose
    k(stream=7)
    assert len(driver.launches) == 2
    assert {launch[0].context for launch in driver.launches} == {_primary(driver)}
    assert driver.current() == _primary(driver, 1)


def test_a_new_thread_without_a_current_context_can_launch(fake: Any) -> None:
    driver, torch = fake
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(torch.empty((6, 5, 3), dtype=torch.uint8)))
    k(stream=7)
    driver.launches.clear()
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            assert driver.current() == 0
            k(stream=7)
            k(torch.empty((6, 5, 3), dtype=torch.uint8), stream=7)
        except BaseException as error:
            errors.append(error)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert not errors
    assert len(driver.launches) == 2


def test_other_launch_errors_are_raised_without_a_retry(fake: Any) -> None:
    driver, torch = fake
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(torch.empty((6, 5, 3), dtype=torch.uint8)))
    k(stream=7)
    for code in (CUresult.CUDA_ERROR_INVALID_VALUE, CUresult.CUDA_ERROR_INVALID_HANDLE):
        driver.fail, driver.attempts = code, 0
        launches = LAUNCHES.count
        with pytest.raises(cuda_driver.CudaError, match=f"cuLaunchKernel.*failed with {code.name}"):
            k(stream=7)
        # our context is current, so even a context-like error is the stream's or the call's: no retry
        assert driver.attempts == 1
        assert LAUNCHES.count == launches


def test_default_stream_handles_mean_our_contexts_default_stream(fake: Any) -> None:
    """0, 1 and 2 name the CURRENT context's default streams: the launch runs with ours current (at the
    first attempt, even on a driver that would accept it in another context), then the caller's comes back."""
    driver, torch = fake
    driver.strict = False
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    k = _chain(fkl.TensorRead(x), fkl.TensorWrite(torch.empty((6, 5, 3), dtype=torch.uint8)))
    for callers in (driver.foreign, driver.primary[1]):
        for handle in (0, 1, 2):
            driver.set_current(callers)
            driver.launch_contexts.clear()
            driver.attempts = 0
            k(stream=handle)
            assert driver.attempts == 1 and driver.launch_contexts == [_primary(driver)]
            assert driver.launches[-1][3] == handle
            assert driver.current() == int(callers)
    driver.set_current(driver.foreign)
    driver.launch_contexts.clear()
    k(stream=7)  # a real stream carries its context: nothing to change
    assert driver.launch_contexts == [int(driver.foreign)]
    assert driver.current() == int(driver.foreign)


# ---- the warm unbound call --------------------------------------------------------------------------


@pytest.fixture
def counted_descriptions(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every array that the pipeline describes in full (the slow path), from no input known to the process."""
    described: list[object] = []
    real = gpu_executor.describe_gpu_array
    monkeypatch.setattr(gpu_executor, "_GPU_INPUTS", {})

    def counting(x: object, what: str, stream: int | None = None) -> Any:
        described.append(x)
        return real(x, what, stream)

    for module in (gpu_executor, binding):  # inputs are described in one, outputs in the other
        monkeypatch.setattr(module, "describe_gpu_array", counting)
    return described


def test_an_input_seen_before_is_not_described_again(fake: Any, counted_descriptions: list[object]) -> None:
    driver, torch = fake
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    s = torch.cuda.Stream()
    x, y = torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 5, 3), dtype=torch.uint8)
    assert pipe(x, out=y, stream=s) is y
    assert counted_descriptions == [x, y]
    driver.calls.clear()
    for _ in range(3):  # new arrays of the same kind: keys only, pointers per call
        x, y = torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 5, 3), dtype=torch.uint8)
        assert pipe(x, out=y, stream=s) is y
        assert (_plan(pipe).header.src, _plan(pipe).header.dst) == (x.data_ptr(), y.data_ptr())
    assert len(counted_descriptions) == 2
    assert driver.launches[-1][3] == s.cuda_stream
    assert driver.calls.get("cuCtxGetCurrent", 0) == 0
    assert driver.calls.get("cuStreamSynchronize", 0) == 0


def test_a_new_pipelines_first_call_on_a_known_kind_describes_nothing_and_makes_no_plan(
    fake: Any, counted_descriptions: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new pipeline of a known structure: its twin described its input's kind and the output's, and prepared
    the call (plan, extent, output), so its first call describes nothing and loads nothing."""
    driver, torch = fake
    s = torch.cuda.Stream()
    x, y = torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 5, 3), dtype=torch.uint8)
    _chain(fkl.TensorRead(), fkl.TensorWrite())(x, out=y, stream=s)
    counted_descriptions.clear()
    driver.calls.clear()
    monkeypatch.setattr(launch_module.GpuLaunch, "__init__", None)  # a new plan would fail
    other = torch.empty((6, 5, 3), dtype=torch.uint8)
    twin = fkl.compose(
        fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.25), fkl.SaturateCast("uint8"), fkl.TensorWrite()
    )
    assert twin(other, out=y, stream=s) is y
    assert counted_descriptions == []
    assert not {"cuModuleLoadData", "cuLibraryLoadData", "cuCtxGetCurrent"} & set(driver.calls)
    assert driver.launches[-1][3] == s.cuda_stream


def test_a_dropped_pipeline_is_freed_at_once(fake: Any) -> None:
    """No reference cycle keeps a per-frame pipeline (a detector's crops composed every frame) for the garbage
    collector: dropped after its first and its warm calls, with the collector off, it is gone, on both targets."""
    _driver, torch = fake
    x, stream = torch.empty((5, 7, 3), dtype=torch.uint8), torch.cuda.Stream()
    frames = [(fkl.Crop([(0, 0, 3, 2), (i, 1, 2, 3)]), fkl.Resize(4, 4)) for i in range(3)]
    gc.disable()
    try:
        for crop, resize in frames:
            pipe = fkl.compose(fkl.TensorRead(), crop, resize, fkl.Mul(0.5), fkl.TensorSplit(), target="gpu")
            pipe(x, stream=stream)
            pipe(x, stream=stream)
            alive = weakref.ref(pipe)
            del pipe
            assert alive() is None
        cpu = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.5), fkl.TensorWrite(), target="cpu")
        cpu(np.arange(105, dtype=np.uint8).reshape(5, 7, 3))
        alive = weakref.ref(cpu)
        del cpu
        assert alive() is None
    finally:
        gc.enable()


def _launched_slot(driver: FakeDriver, pipe: fkl.Pipeline, kind: str) -> list[float]:
    """The values that the last launch passed in `pipe`'s plan's first slot of `kind` (read at once: the plan's
    block is reused)."""
    plan = _plan(pipe)
    block = ctypes.c_void_p.from_address(driver.launches[-1][4]).value
    assert block is not None
    params = plan._params_type.from_address(block)  # pyright: ignore[reportPrivateUsage]
    name, _, count = next(slot for slot in plan.layout.slots if slot[1] == kind)
    return list(getattr(params, name)[:count])


def test_new_pipelines_of_a_known_structure_launch_their_own_values_and_sizes(fake: Any) -> None:
    """A new pipeline's first call takes a call that a pipeline of the same structure prepared on a like input
    only with its own values, and only where its geometry gives the same sizes."""
    driver, torch = fake
    s = torch.cuda.Stream()
    x = torch.empty((7, 9, 3), dtype=torch.uint8)

    def resized(w: int, h: int, mul: float) -> fkl.Pipeline:
        ops = (fkl.Resize(w, h), fkl.Mul(mul), fkl.SaturateCast("uint8"))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")

    first = resized(5, 4, 0.5)
    assert tuple(first(x, stream=s).shape) == (4, 5, 3)
    assert _launched_slot(driver, first, "f32") == [0.5] * 3
    twin = resized(5, 4, 0.25)
    assert tuple(twin(x, stream=s).shape) == (4, 5, 3)
    assert _launched_slot(driver, twin, "f32") == [0.25] * 3
    other_size = resized(3, 6, 2.0)
    assert tuple(other_size(x, stream=s).shape) == (6, 3, 3)
    assert _launched_slot(driver, other_size, "f32") == [2.0] * 3
    assert _plan(other_size) is _plan(twin) is _plan(first)  # one plan: only the prepared calls differ
    first(x, stream=s)
    assert _launched_slot(driver, first, "f32") == [0.5] * 3


def test_per_frame_rect_lists_of_a_known_count_take_the_known_call(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The per-frame ROI loop: Crop([rects]) then Resize gives every plane one size, so a new frame's pipeline
    with as many rects takes the call a pipeline of the same structure prepared (nothing described), with its
    own rects in the launch; a rect that leaves the image is still the Crop's error; another count, or rects
    without a Resize after them, prepare their own call."""
    driver, torch = fake
    s = torch.cuda.Stream()
    x = torch.empty((40, 60, 3), dtype=torch.uint8)

    def roi(rects: list[tuple[int, int, int, int]], resize: bool = True) -> fkl.Pipeline:
        sized = (fkl.Resize(8, 6),) if resize else ()
        ops = (fkl.Crop(rects), *sized, fkl.Mul(2))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorSplit(), target="gpu")

    assert tuple(roi([(0, 0, 9, 9), (3, 4, 20, 11)])(x, stream=s).shape) == (2, 3, 6, 8)
    prepared: list[object] = []
    prepare = gpu_executor.GpuExecutor._prepare  # pyright: ignore[reportPrivateUsage]
    monkeypatch.setattr(gpu_executor.GpuExecutor, "_prepare", lambda *a: prepared.append(a) or prepare(*a))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    frame = [(1, 2, 30, 7), (50, 30, 10, 10)]
    pipe = roi(frame)
    assert tuple(pipe(x, stream=s).shape) == (2, 3, 6, 8)
    assert prepared == []  # no sizes, extent or output shape made again
    launched = _launched_slot(driver, pipe, "rect")[:2]
    assert [(r.x, r.y, r.w, r.h) for r in launched] == frame  # pyright: ignore[reportAttributeAccessIssue]
    with pytest.raises(ValueError, match=r"Crop: rect \[51, 30, 10, 10\] leaves the 60x40 image"):
        roi([(1, 2, 30, 7), (51, 30, 10, 10)])(x, stream=s)
    assert tuple(roi([(1, 2, 3, 4)] * 3)(x, stream=s).shape) == (3, 3, 6, 8)
    assert len(prepared) == 2  # (the rect outside the image, and three rects)
    assert roi(frame, resize=False).call_key() is None  # the rects' own sizes: no call key
    unsized = roi([(0, 0, 5, 4), (2, 2, 5, 4)], resize=False)
    assert tuple(unsized(x, stream=s).shape) == (2, 3, 4, 5)


def test_compose_packs_the_values_for_the_kind_of_input_called_last(fake: Any) -> None:
    """A structure planned for several kinds of input (one image, lists of them): compose() of a new pipeline
    packs its values block for the kind its pipelines called last, so that its first call on that kind packs
    nothing; the other kinds are packed by their first call."""
    _driver, torch = fake
    s = torch.cuda.Stream()
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    first = _chain(fkl.TensorRead(), fkl.TensorWrite())
    first([x, x], stream=s)
    first(x, stream=s)
    single = next(key for key in first._plans if not key[0].images)
    lists = next(key for key in first._plans if key[0].images)  # lists of 2 and 3 share a capacity's kernel
    twin = _chain(fkl.TensorRead(), fkl.TensorWrite())
    assert list(twin._plans) == [single]
    twin([x, x, x], stream=s)
    assert list(_chain(fkl.TensorRead(), fkl.TensorWrite())._plans) == [lists]


def test_a_known_call_still_checks_the_new_pipelines_values(fake: Any) -> None:
    """A new pipeline whose call key was prepared by another: a value its chain cannot take is the same located
    error as on any first call, and the other pipeline's call is untouched."""
    _driver, torch = fake
    s = torch.cuda.Stream()
    x = torch.empty((5, 7, 3), dtype=torch.uint8)

    def added(value: float) -> fkl.Pipeline:
        return fkl.compose(fkl.TensorRead(), fkl.Add(value), fkl.TensorWrite(), target="gpu")

    good = added(3)
    good(x, stream=s)
    bad = added(300)
    with pytest.raises(ValueError, match=r"test_host_path\.py:\d+:1: error: .*add.*300"):
        bad(x, stream=s)
    assert tuple(good(x, stream=s).shape) == (5, 7, 3)


def test_no_input_stays_alive_in_what_a_call_remembers(fake: Any, counted_descriptions: list[object]) -> None:
    """The kinds of input the process has seen are remembered by their description only: a tensor given to a
    call (the first of its kind, or a later one) is freed when its owner drops it, the pipeline kept."""
    _, torch = fake
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    s = torch.cuda.Stream()
    for _ in range(2):  # cold, then warm
        x, y = torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 5, 3), dtype=torch.uint8)
        pipe(x, out=y, stream=s)
        alive = weakref.ref(x)
        counted_descriptions.clear()
        del x
        gc.collect()
        assert alive() is None


def test_a_list_seen_before_reads_each_tensors_pointer_once(
    fake: Any, monkeypatch: pytest.MonkeyPatch, counted_descriptions: list[object]
) -> None:
    """A warm list call reads each tensor's own accessors once (its key and its pointer), never its
    __cuda_array_interface__, and describes nothing; the table holds this call's pointers."""
    _, torch = fake
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    s = torch.cuda.Stream()
    pipe([torch.empty((6, 5, 3), dtype=torch.uint8) for _ in range(16)], stream=s)
    counted_descriptions.clear()
    reads: dict[str, list[int]] = {"data_ptr": [], "is_contiguous": [], "get_device": []}
    for name, ids in reads.items():
        real = getattr(torch.Tensor, name)

        def counting(self: Any, real: Any = real, ids: list[int] = ids) -> Any:
            ids.append(id(self))
            return real(self)

        monkeypatch.setattr(torch.Tensor, name, counting)
    interfaces: list[object] = []
    real_interface = torch.Tensor.__cuda_array_interface__
    monkeypatch.setattr(
        torch.Tensor, "__cuda_array_interface__", property(lambda t: interfaces.append(t) or real_interface.fget(t))
    )
    for _ in range(2):  # new tensors of the same kind: keys only, pointers per call
        xs = [torch.empty((6, 5, 3), dtype=torch.uint8) for _ in range(16)]
        for ids in reads.values():
            ids.clear()
        out = pipe(xs, stream=s)
        assert tuple(out.shape) == (16, 6, 5, 3)
        for name, ids in reads.items():  # the new output's pointer is read once too
            assert sorted(ids) == sorted([id(x) for x in xs] + ([id(out)] if name == "data_ptr" else [])), name
        assert list(_plan(pipe).params.src_table[:16]) == [x.data_ptr() for x in xs]  # pyright: ignore[reportAttributeAccessIssue]
    assert interfaces == []
    assert counted_descriptions == []


def test_a_list_unlike_the_one_seen_is_described_and_checked(fake: Any) -> None:
    """A list whose tensors differ from one another, or one that cannot be read as it is, takes the full path
    and its errors."""
    _, torch = fake
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    s = torch.cuda.Stream()
    pipe([torch.empty((6, 5, 3), dtype=torch.uint8) for _ in range(3)], stream=s)
    mixed = [torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 4, 3), dtype=torch.uint8)]
    with pytest.raises(ValueError, match="list input 1"):
        pipe([*mixed, mixed[0]], stream=s)
    strided = torch.Tensor((6, 5, 3), torch.uint8, strides=(30, 3, 2))
    with pytest.raises(ValueError, match="not C-contiguous"):
        pipe([mixed[0], strided, mixed[0]], stream=s)
    on_host = torch.Tensor((6, 5, 3), torch.uint8, -1)  # its device -1 differs from the first's
    with pytest.raises(TypeError, match=r"TensorRead input 2: .*needs a CUDA tensor"):
        pipe([mixed[0], mixed[0], on_host], stream=s)


def test_the_warm_path_keeps_every_check(fake: Any) -> None:
    _driver, torch = fake
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    x, y = torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 5, 3), dtype=torch.uint8)
    pipe(x, out=y, stream=7)
    with pytest.raises(ValueError, match=r"out: expected a uint8 array of shape \(6, 5, 3\) on device 0"):
        pipe(x, out=torch.empty((6, 5, 3), dtype=torch.float32), stream=7)
    with pytest.raises(ValueError, match="out: expected a uint8 array of shape"):
        pipe(x, out=torch.empty((5, 6, 3), dtype=torch.uint8), stream=7)
    with pytest.raises(ValueError, match=r"on device 0, got uint8 .* on device 1"):
        pipe(x, out=torch.empty((6, 5, 3), dtype=torch.uint8, device="cuda:1"), stream=7)
    with pytest.raises(ValueError, match="not C-contiguous"):
        pipe(x, out=torch.Tensor((6, 5, 3), torch.uint8, 0, strides=(1, 6, 30)), stream=7)
    with pytest.raises(ValueError, match="not C-contiguous"):
        pipe(torch.Tensor((6, 5, 3), torch.uint8, 0, strides=(1, 6, 30)), out=y, stream=7)
    with pytest.raises(TypeError, match="needs a CUDA tensor"):
        pipe(torch.Tensor((6, 5, 3), torch.uint8, -1), out=y, stream=7)
    with pytest.raises(TypeError, match="unsupported element type"):
        pipe(torch.empty((6, 5, 3), dtype=torch.complex64), stream=7)
    read_only = DeviceBuffer.from_ptr(0x7000, (6, 5, 3), "uint8", readonly=True)
    with pytest.raises(ValueError, match="read-only"):
        pipe(x, out=read_only, stream=7)
    with pytest.raises(ValueError, match="read-only"):  # and again, now that its kind was seen
        pipe(x, out=read_only, stream=7)
    writable = DeviceBuffer.from_ptr(0x7000, (6, 5, 3), "uint8")
    assert pipe(x, out=writable, stream=7) is writable


def test_outputs_follow_the_inputs_framework_and_device(fake: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    driver, torch = fake
    pipe = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.TensorWrite(), target="gpu")
    for device in (0, 1, 0, 1):
        x = torch.empty((4, 3), dtype=torch.uint8, device=f"cuda:{device}")
        out = pipe(x, stream=7)
        assert isinstance(out, torch.Tensor)
        assert (tuple(out.shape), out.dtype, out.get_device()) == ((4, 3), torch.float32, device)
        assert _plan_for(pipe, device).header.dst == out.data_ptr()

    class Subclass(torch.Tensor):
        __slots__ = ()

    made: list[object] = []
    real_empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: made.append(k) or real_empty(*a, **k))
    out = pipe(Subclass((4, 3), torch.uint8, 0), stream=7)
    assert type(out) is torch.Tensor and len(made) == 1  # a subclass input: torch.empty, never new_empty
    for _ in range(2):  # cold, then warm
        out = pipe(DeviceBuffer.from_ptr(0x9000, (4, 3), "uint8", device=1), stream=7)
        assert isinstance(out, DeviceBuffer) and (out.shape, out.dtype_name, out.device) == ((4, 3), "float32", 1)
        assert _plan_for(pipe, 1).header.dst == out.ptr
    assert driver.launches


def _plan_for(pipe: fkl.Pipeline, device: int) -> GpuLaunch:
    (plan,) = [plan for (_sig, d), (plan, _values) in pipe._plans.items() if d == device]
    assert isinstance(plan, GpuLaunch)
    return plan


def test_without_a_stream_the_producers_stream_is_used_and_synchronised(fake: Any) -> None:
    driver, torch = fake
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    x, y = torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 5, 3), dtype=torch.uint8)
    for _ in range(2):  # cold, then warm
        driver.calls.clear()
        driver.set_current(driver.foreign)
        pipe(x, out=y)
        assert driver.launches[-1][3] == 0  # torch's current stream: its default stream here
        assert driver.calls["cuStreamSynchronize"] == 1
        assert driver.launch_contexts[-1] == _primary(driver), "the default stream meant is our context's"
        assert driver.current() == int(driver.foreign), "and the caller's context comes back"
    advertised = DeviceBuffer.from_ptr(0x8000, (6, 5, 3), "uint8", stream=0x55)
    for _ in range(2):
        driver.calls.clear()
        pipe(advertised, out=y)
        assert driver.launches[-1][3] == 0x55 and driver.calls["cuStreamSynchronize"] == 1


@pytest.fixture
def current_stream_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """fkl.set_default_stream("current") for the test."""
    monkeypatch.setattr(default_stream, "_mode", [])
    fkl.set_default_stream("current")


def test_with_the_current_default_a_torch_call_queues_on_its_stream_and_returns(
    fake: Any, current_stream_default: None
) -> None:
    """Under set_default_stream("current"), a call without stream= launches on torch's current stream and
    waits for nothing, cold and warm; an array of a library without a current stream still waits."""
    driver, torch = fake
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    x, y = torch.empty((6, 5, 3), dtype=torch.uint8), torch.empty((6, 5, 3), dtype=torch.uint8)
    for _ in range(2):  # cold, then warm
        driver.calls.clear()
        pipe(x, out=y)
        assert driver.launches[-1][3] == 0  # torch's current stream: its default stream here
        assert driver.calls.get("cuStreamSynchronize", 0) == 0
    advertised = DeviceBuffer.from_ptr(0x8000, (6, 5, 3), "uint8", stream=0x55)
    for _ in range(2):
        driver.calls.clear()
        pipe(advertised, out=y)
        assert driver.launches[-1][3] == 0x55 and driver.calls["cuStreamSynchronize"] == 1


def test_pixel_kernels_make_one_pixel_per_thread_when_the_output_is_one_wave(fake: Any) -> None:
    """The fake device holds 132 x 2048 threads: up to that many output pixels launch the narrow entry."""
    driver, torch = fake
    x = torch.empty((40, 50, 3), dtype=torch.uint8)
    for (w, h), narrow in (((16, 12), True), ((600, 450), True), ((640, 480), False)):
        pipe = fkl.compose(fkl.TensorRead(), fkl.Resize(w, h), fkl.Mul(0.5), fkl.TensorWrite(), target="gpu")
        pipe(x)
        kernel = _plan(pipe).kernel
        function, grid, block = driver.launches[-1][:3]
        assert function is (kernel.narrow if narrow else kernel.function)
        assert grid == (-(-w // (32 if narrow else 128)), -(-h // 8), 1) and block == (32, 8, 1)


def test_column_pair_taps_need_an_image_two_pixels_wide(fake: Any) -> None:
    """An integer image's final resize reads its taps as column pairs in the wide entry, which needs a
    right or left neighbour: a 1-pixel-wide image launches the narrow entry, whatever the output size."""
    driver, torch = fake
    pipe = fkl.compose(fkl.TensorRead(), fkl.Resize(640, 480), fkl.Mul(0.5), fkl.TensorWrite(), target="gpu")
    for width, narrow in ((2, False), (1, True), (7, False)):
        pipe(torch.empty((40, width, 3), dtype=torch.uint8))
        kernel = _plan(pipe).kernel
        assert driver.launches[-1][0] is (kernel.narrow if narrow else kernel.function)


def test_an_empty_output_launches_nothing_but_still_synchronises(fake: Any) -> None:
    driver, torch = fake
    pipe = _chain(fkl.TensorRead(), fkl.TensorWrite())
    x = torch.empty((0, 5, 3), dtype=torch.uint8)
    for _ in range(2):
        driver.launches.clear()
        driver.calls.clear()
        driver.set_current(None)
        assert tuple(pipe(x).shape) == (0, 5, 3)
        assert not driver.launches and driver.calls["cuStreamSynchronize"] == 1


def test_warm_keys_tell_apart_what_a_description_tells_apart(fake: Any) -> None:
    _driver, torch = fake
    x = torch.empty((6, 5, 3), dtype=torch.uint8)
    key, ptr = interop.warm_key(x) or ((), 0)
    assert ptr == x.data_ptr()
    assert interop.warm_key(torch.empty((6, 5, 3), dtype=torch.uint8))[0] == key  # pyright: ignore[reportOptionalSubscript]
    others = [
        torch.empty((6, 5, 3), dtype=torch.int8),
        torch.empty((6, 5, 4), dtype=torch.uint8),
        torch.empty((6, 5, 3), dtype=torch.uint8, device="cuda:1"),
    ]
    assert all(interop.warm_key(o)[0] != key for o in others)  # pyright: ignore[reportOptionalSubscript]
    assert interop.warm_key(torch.Tensor((6, 5, 3), torch.uint8, 0, strides=(1, 6, 30))) is None
    assert interop.warm_key(torch.Tensor((6, 5, 3), torch.uint8, -1)) is None
    assert interop.warm_key([x]) is None and interop.warm_key(None) is None
    plain = DeviceBuffer.from_ptr(0x7000, (6, 5, 3), "uint8")
    read_only = DeviceBuffer.from_ptr(0x7000, (6, 5, 3), "uint8", readonly=True)
    assert interop.warm_key(plain)[0] != interop.warm_key(read_only)[0]  # pyright: ignore[reportOptionalSubscript]


def test_a_list_key_is_its_length_and_every_tensors_key(fake: Any) -> None:
    """warm_list_key's torch path agrees with warm_key per tensor: a list keys alike only when every tensor
    has the first one's key; any tensor that differs, or cannot be used as it is, sends the list to the full path."""
    _driver, torch = fake
    xs = [torch.empty((6, 5, 3), dtype=torch.uint8) for _ in range(5)]
    key, pointers = interop.warm_list_key(xs) or ((), [])
    assert key == (5, interop.warm_key(xs[0])[0])  # pyright: ignore[reportOptionalSubscript]
    assert pointers == [x.data_ptr() for x in xs]
    odd_ones = [
        torch.empty((6, 5, 3), dtype=torch.int8),
        torch.empty((6, 5, 4), dtype=torch.uint8),
        torch.empty((6, 5, 3), dtype=torch.uint8, device="cuda:1"),
        torch.Tensor((6, 5, 3), torch.uint8, 0, strides=(1, 6, 30)),
        torch.Tensor((6, 5, 3), torch.uint8, -1),
        DeviceBuffer.from_ptr(0x7000, (6, 5, 3), "uint8"),
    ]
    for odd in odd_ones:
        for where in (0, 2, 4):
            assert interop.warm_list_key([*xs[:where], odd, *xs[where + 1 :]]) is None, (odd, where)


# ---- the first call of a fresh process --------------------------------------------------------------

FIRST_CALL = r"""
import sys
sys.path.insert(0, {root!r})
from tests.runtime.fake_driver import FakeDriver, install, make_fake_torch
torch = sys.modules["torch"] = make_fake_torch()
install(FakeDriver())
import fklir as fkl
from fklir.backend import build
def compile_gpu(emitted, key, arch):
    build.STATS.compiles += 1
    return b"stand-in cubin"
if {fill}:
    build._compile_gpu = compile_gpu
x = torch.empty((8, 6, 3), dtype=torch.uint8)
pipe = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(0.5), fkl.TensorWrite(), target="gpu")
before = set(sys.modules)
pipe(x)
print(sorted(set(sys.modules) - before), build.STATS.compiles, build.STATS.disk_hits)
"""


def test_a_fresh_processs_first_call_imports_nothing_and_runs_no_compiler(tmp_path: Path) -> None:
    """compose() imports what the first call needs; the first call finds the kernel on disk and learns
    the compiler from the disk cache instead of running `nvcc --version`."""
    runs = tmp_path / "identity-runs"
    nvcc = tmp_path / "nvcc"  # answers --version like python does, and logs each run
    nvcc.write_text(f'#!/bin/sh\necho run >> "{runs}"\nexec "{sys.executable}" "$@"\n')
    nvcc.chmod(0o755)
    env = {**os.environ, "FKLIR_CACHE_DIR": str(tmp_path / "cache"), "FKLIR_NVCC": str(nvcc)}

    def first_call(fill: bool) -> tuple[str, str, str]:
        script = FIRST_CALL.format(root=str(ROOT), fill=fill)
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
        assert run.returncode == 0, run.stderr
        imported, compiles, disk_hits = run.stdout.rsplit(maxsplit=2)
        return imported, compiles, disk_hits

    assert first_call(fill=True)[1:] == ("1", "0")
    assert runs.read_text().count("run") == 1
    assert first_call(fill=False) == ("[]", "0", "1")
    assert runs.read_text().count("run") == 1, "the compiler's identity is remembered on disk"
