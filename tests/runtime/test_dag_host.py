"""A DAG's GPU call on the fake driver (tests/runtime/fake_driver.py): one launch whose parameter block holds
argument 0 and output 0 in the header and the others in Params::in<i> / out<k>, outputs made in the input's
framework, a caller's stream taken as it is and the internal one waited for. The kernels' numbers are
tests/runtime/test_dag.py's, on the device."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import fklir as fkl
from fklir.runtime.launch import GpuLaunch
from tests.runtime.test_host_path import fake  # noqa: F401  (the fixture: fake driver, fake torch, stand-in cubins)

H, W = 5, 7


def _pipe() -> Any:
    return fkl.compose(
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.AbsDiff(fkl.Input(1, fkl.Cast("float32"))),
        fkl.MidWrite(),
        fkl.Composite(fkl.Input(1, fkl.Cast("float32")), fkl.Input(2, fkl.Cast("float32"))),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),
        target="gpu",
    )


@pytest.mark.usefixtures("fake")
def test_one_launch_with_every_argument_and_output_in_its_place(fake: Any) -> None:  # noqa: F811
    driver, torch = fake
    a = torch.empty((H, W, 3), dtype=torch.uint8)
    b = torch.empty((H, W, 3), dtype=torch.uint8)
    m = torch.empty((H, W), dtype=torch.uint8)
    pipe = _pipe()
    stream = torch.cuda.Stream()
    driver.launches.clear()
    driver.calls.clear()
    diff, blended = pipe(a, b, m, stream=stream)
    assert (tuple(diff.shape), diff.dtype) == ((H, W, 3), torch.float32)
    assert (tuple(blended.shape), blended.dtype) == ((H, W, 3), torch.uint8)
    assert len(driver.launches) == 1 and driver.launches[0][3] == stream.cuda_stream
    ((_, (plan, _values)),) = pipe._plans.items()
    assert isinstance(plan, GpuLaunch)
    params: Any = plan.params
    assert (params.h.src, params.h.dst) == (a.data_ptr(), diff.data_ptr())
    assert (params.h.src_w, params.h.src_h, params.h.dst_w, params.h.dst_h) == (W, H, W, H)
    assert (params.in1.src, params.in1.src_pitch, params.in1.src_plane_stride) == (b.data_ptr(), W * 3, H * W * 3)
    assert (params.in2.src, params.in2.src_pitch, params.in2.src_w, params.in2.src_h) == (m.data_ptr(), W, W, H)
    assert (params.out1.dst, params.out1.dst_pitch, params.out1.dst_plane_stride) == (
        blended.data_ptr(),
        W * 3,
        H * W * 3,
    )
    assert driver.calls.get("cuStreamSynchronize", 0) == 0  # a caller's stream: no wait


@pytest.mark.usefixtures("fake")
def test_without_a_stream_the_call_waits_and_out_takes_a_tuple(fake: Any) -> None:  # noqa: F811
    driver, torch = fake
    a, b = (torch.empty((H, W, 3), dtype=torch.uint8) for _ in range(2))
    m = torch.empty((H, W), dtype=torch.uint8)
    out = (torch.empty((H, W, 3), dtype=torch.float32), torch.empty((H, W, 3), dtype=torch.uint8))
    driver.calls.clear()
    got = _pipe()(a, b, m, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    assert driver.calls.get("cuStreamSynchronize", 0) == 1
    with pytest.raises(ValueError, match=r"out\[1\]: expected a uint8 array of shape \(5, 7, 3\), got float32"):
        _pipe()(a, b, m, out=(out[0], out[0]))


@pytest.mark.usefixtures("fake")
def test_a_repeated_call_launches_with_the_new_arrays(fake: Any) -> None:  # noqa: F811
    """The warm path (arrays with the warm keys of a checked call): new pointers in the header and in<i>, new
    outputs, one launch per call."""
    driver, torch = fake
    pipe = _pipe()
    stream = torch.cuda.Stream()
    for _ in range(3):
        a, b = (torch.empty((H, W, 3), dtype=torch.uint8) for _ in range(2))
        m = torch.empty((H, W), dtype=torch.uint8)
        driver.launches.clear()
        diff, blended = pipe(a, b, m, stream=stream)
        assert len(driver.launches) == 1
        ((_, (plan, _values)),) = pipe._plans.items()
        params: Any = plan.params
        assert (params.h.src, params.in1.src, params.in2.src) == (a.data_ptr(), b.data_ptr(), m.data_ptr())
        assert (params.h.dst, params.out1.dst) == (diff.data_ptr(), blended.data_ptr())
    assert pipe._warm, "the calls after the first took the warm path"


# ---- bound compose (SPEC §2, §8): TensorRead(x), Input(i, source=x), MidWrite(out), TensorWrite(out) ---------


def _bound_pipe(a: Any, b: Any, m: Any, diff: Any = None, blended: Any = None) -> Any:
    return fkl.compose(
        fkl.TensorRead(a),
        fkl.Cast("float32"),
        fkl.AbsDiff(fkl.Input(1, fkl.Cast("float32"), source=b)),
        fkl.MidWrite(diff),
        fkl.Composite(fkl.Input(1, fkl.Cast("float32")), fkl.Input(2, fkl.Cast("float32"), source=m)),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(blended),
        target="gpu",
    )


def _frames(torch: Any) -> tuple[Any, Any, Any, Any, Any]:
    a, b = (torch.empty((H, W, 3), dtype=torch.uint8) for _ in range(2))
    m = torch.empty((H, W), dtype=torch.uint8)
    return a, b, m, torch.empty((H, W, 3), dtype=torch.float32), torch.empty((H, W, 3), dtype=torch.uint8)


@pytest.mark.usefixtures("fake")
def test_a_fully_bound_graph_compiles_at_compose_and_launches_its_own_block(fake: Any) -> None:  # noqa: F811
    """Every input and output bound: compose plans the call; pipe(stream=s) is one launch of a block that holds
    the bindings (and only them: an override call fills the shared plan's block)."""
    driver, torch = fake
    a, b, m, diff, blended = _frames(torch)
    pipe = _bound_pipe(a, b, m, diff, blended)
    assert pipe._plans, "compose planned the bound call"
    own = pipe._bound.launch
    params: Any = own.params
    assert (params.h.src, params.h.dst, params.in1.src, params.in2.src, params.out1.dst) == (
        a.data_ptr(),
        diff.data_ptr(),
        b.data_ptr(),
        m.data_ptr(),
        blended.data_ptr(),
    )
    stream = torch.cuda.Stream()
    driver.launches.clear()
    driver.calls.clear()
    for _ in range(3):
        got = pipe(stream=stream)
        assert got[0] is diff and got[1] is blended
    assert len(driver.launches) == 3 and all(launch[3] == stream.cuda_stream for launch in driver.launches)
    assert driver.calls.get("cuStreamSynchronize", 0) == 0
    assert pipe() == (diff, blended) and driver.calls.get("cuStreamSynchronize", 0) == 1  # no stream: waits
    # an override of argument 1 runs on the shared block and leaves the bound one as it was
    b2 = torch.empty((H, W, 3), dtype=torch.uint8)
    got = pipe(None, b2, stream=stream)
    assert got == (diff, blended)
    ((plan, _values),) = pipe._plans.values()
    assert plan is not own and plan.params.in1.src == b2.data_ptr()  # pyright: ignore[reportAttributeAccessIssue]
    assert params.in1.src == b.data_ptr()


@pytest.mark.usefixtures("fake")
def test_a_bound_background_is_the_default_of_its_argument(fake: Any) -> None:  # noqa: F811
    """Only Input(1)'s source bound: a call passes the frame (argument 0) and the mask (argument 2); the
    background comes from the binding; outputs are made per call."""
    driver, torch = fake
    _, b, _, _, _ = _frames(torch)
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.Blend(fkl.Input(1, fkl.Cast("float32"), source=b), 0.25),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),
        target="gpu",
    )
    assert not pipe._plans, "an unbound argument 0: nothing to plan at compose"
    stream = torch.cuda.Stream()
    for _ in range(2):
        frame = torch.empty((H, W, 3), dtype=torch.uint8)
        driver.launches.clear()
        got = pipe(frame, stream=stream)
        assert (tuple(got.shape), got.dtype) == ((H, W, 3), torch.uint8)
        ((plan, _values),) = pipe._plans.values()
        params: Any = plan.params
        assert (params.h.src, params.h.dst, params.in1.src) == (frame.data_ptr(), got.data_ptr(), b.data_ptr())
        assert len(driver.launches) == 1
    with pytest.raises(TypeError, match=r"needs call argument 0 \(TensorRead input\): pass it, or bind it"):
        pipe()


@pytest.mark.usefixtures("fake")
def test_bound_graph_errors_name_the_binding(fake: Any) -> None:  # noqa: F811
    _driver, torch = fake
    a, b, m, diff, _ = _frames(torch)
    with pytest.raises(ValueError, match=r"bound output does not fit the graph: out\[1\]: expected a uint8 array"):
        _bound_pipe(a, b, m, diff, diff)
    with pytest.raises(ValueError, match=r"Composite: the branch .* makes 6x4 pixels where the chain has 7x5"):
        _bound_pipe(a, b, torch.empty((4, 6), dtype=torch.uint8))
    with pytest.raises(TypeError, match="bind one array, not a list"):
        _bound_pipe([a, a], b, m)
    with pytest.raises(ValueError, match="is bound to two arrays"):
        fkl.compose(
            fkl.TensorRead(),
            fkl.Add(fkl.Input(1, source=a)),
            fkl.Sub(fkl.Input(1, source=b)),
            fkl.TensorWrite(),
            target="gpu",
        )
    pipe = _bound_pipe(a, b, m)
    with pytest.raises(ValueError, match=r"Input\(1\) input override: expected uint8 \(5, 7, 3\) on device 0 like"):
        pipe(None, torch.empty((5, 7), dtype=torch.uint8))
    with pytest.raises(ValueError, match="takes one array per input; compose an unbound graph for lists"):
        pipe([a], [b], [m])
    with pytest.raises(ValueError, match=r"the graph reads 3 input\(s\)"):
        pipe(a, b, m, m)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(pipe)


def test_bound_graphs_need_the_gpu_target() -> None:
    import numpy as np

    x = np.zeros((H, W, 3), np.uint8)
    with pytest.raises(ValueError, match="need target='gpu'"):
        fkl.compose(fkl.TensorRead(), fkl.Add(fkl.Input(1, source=x)), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match="need target='gpu'"):
        fkl.compose(fkl.TensorRead(), fkl.MidWrite(x), fkl.Add(fkl.Input(1)), fkl.TensorWrite(), target="cpu")


@pytest.mark.usefixtures("fake")
def test_repeated_calls_into_outputs_of_a_checked_kind_describe_nothing(
    fake: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """out= of outputs whose warm keys passed their check once: the warm path, the given outputs' pointers in the
    launch; an output of another kind goes through the full check and its error."""
    from fklir.jit import graph

    driver, torch = fake
    pipe = _pipe()
    stream = torch.cuda.Stream()
    a, b = (torch.empty((H, W, 3), dtype=torch.uint8) for _ in range(2))
    m = torch.empty((H, W), dtype=torch.uint8)
    out = (torch.empty((H, W, 3), dtype=torch.float32), torch.empty((H, W, 3), dtype=torch.uint8))
    pipe(a, b, m, out=out, stream=stream)
    described: list[object] = []
    real = graph.describe_gpu_array
    monkeypatch.setattr(graph, "describe_gpu_array", lambda x, *rest: described.append(x) or real(x, *rest))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    for _ in range(3):
        new = (torch.empty((H, W, 3), dtype=torch.float32), torch.empty((H, W, 3), dtype=torch.uint8))
        driver.launches.clear()
        got = pipe(a, b, m, out=new, stream=stream)
        assert got[0] is new[0] and got[1] is new[1] and len(driver.launches) == 1
        ((_, (plan, _values)),) = pipe._plans.items()
        params: Any = plan.params
        assert (params.h.dst, params.out1.dst) == (new[0].data_ptr(), new[1].data_ptr())
    assert described == []
    with pytest.raises(ValueError, match=r"out\[1\]: expected a uint8 array of shape \(5, 7, 3\), got float32"):
        pipe(a, b, m, out=(new[0], new[0]), stream=stream)


@pytest.mark.usefixtures("fake")
def test_one_structure_on_both_targets_keeps_a_plan_per_target(fake: Any) -> None:  # noqa: F811
    """Graphs of one structure share plans within a target only: the CPU's plan is a g++ library's, the GPU's a
    loaded kernel's, whichever target composed first."""
    import numpy as np

    _driver, torch = fake

    def ops() -> tuple[Any, ...]:
        return (fkl.TensorRead(), fkl.Add(fkl.Input(1)), fkl.TensorWrite())

    x = np.arange(H * W * 3, dtype=np.uint8).reshape(H, W, 3)
    on_cpu = fkl.compose(*ops(), target="cpu")
    np.testing.assert_array_equal(on_cpu(x, x), x + x)
    a = torch.empty((H, W, 3), dtype=torch.uint8)
    on_gpu = fkl.compose(*ops(), target="gpu")
    on_gpu(a, a, stream=torch.cuda.Stream())
    ((cpu_plan, _),) = on_cpu._plans.values()
    ((gpu_plan, _),) = on_gpu._plans.values()
    assert isinstance(gpu_plan, GpuLaunch) and not isinstance(cpu_plan, GpuLaunch)
    np.testing.assert_array_equal(fkl.compose(*ops(), target="cpu")(x, x), x + x)


@pytest.mark.usefixtures("fake")
def test_a_new_graphs_first_call_takes_the_call_a_graph_of_its_structure_checked(
    fake: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A new graph object of a known structure and geometry, on arrays of a kind such a graph called: nothing
    described, its own values in the launch; other geometry values (another size) make their own call; a value
    its chain cannot take is still the located error."""
    from fklir.jit import graph

    _driver, torch = fake
    stream = torch.cuda.Stream()
    a, b = (torch.empty((H, W, 3), dtype=torch.uint8) for _ in range(2))

    def scaled(gain: float, size: tuple[int, int] = (W, H)) -> Any:
        branch = fkl.Input(1, fkl.Resize(*size, "nearest"), fkl.Mul(gain))
        geometry = fkl.Resize(*size, "nearest")
        return fkl.compose(fkl.TensorRead(), geometry, fkl.Add(branch), fkl.TensorWrite(), target="gpu")

    scaled(2)(a, b, stream=stream)
    described: list[object] = []
    real = graph.describe_gpu_array
    monkeypatch.setattr(graph, "describe_gpu_array", lambda x, *rest: described.append(x) or real(x, *rest))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    twin = scaled(3)
    assert tuple(twin(a, b, stream=stream).shape) == (H, W, 3)
    assert described == []
    ((plan, _values),) = twin._plans.values()
    (name,) = [name for name, _, _ in plan.layout.slots if name.startswith("mul")]
    assert getattr(plan.params, name)[:3] == [3, 3, 3]  # this graph's values launched
    assert tuple(scaled(2, (3, 2))(a, b, stream=stream).shape) == (2, 3, 3)
    assert described, "another output size: a call of its own"
    with pytest.raises(ValueError, match=r"test_dag_host\.py:\d+:1: error: .*300"):
        scaled(300)(a, b, stream=stream)


@pytest.mark.usefixtures("fake")
def test_new_frames_into_bound_outputs_take_the_warm_path(
    fake: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The background and both outputs bound, a new frame per call: after the first call nothing is described
    (the frame's kind was found like the binding, the outputs' keys passed), one launch each with the frame's
    pointer; a frame of another shape is still the override's error."""
    from fklir.jit import graph

    driver, torch = fake
    _, b, m, diff, blended = _frames(torch)
    pipe = _bound_pipe(torch.empty((H, W, 3), dtype=torch.uint8), b, m, diff, blended)
    stream = torch.cuda.Stream()
    pipe(torch.empty((H, W, 3), dtype=torch.uint8), stream=stream)
    described: list[object] = []
    real = graph.describe_gpu_array
    monkeypatch.setattr(graph, "describe_gpu_array", lambda x, *rest: described.append(x) or real(x, *rest))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    for _ in range(3):
        frame = torch.empty((H, W, 3), dtype=torch.uint8)
        driver.launches.clear()
        assert pipe(frame, stream=stream) == (diff, blended)
        assert len(driver.launches) == 1
        ((_, (plan, _values)),) = pipe._plans.items()
        params: Any = plan.params
        assert (params.h.src, params.in1.src, params.out1.dst) == (frame.data_ptr(), b.data_ptr(), blended.data_ptr())
    assert described == []
    with pytest.raises(ValueError, match=r"TensorRead input override: expected uint8 \(5, 7, 3\)"):
        pipe(torch.empty((H, W + 1, 3), dtype=torch.uint8), stream=stream)
