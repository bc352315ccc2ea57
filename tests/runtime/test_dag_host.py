"""A DAG's GPU call on the fake driver (tests/runtime/fake_driver.py): one launch whose parameter block holds
argument 0 and output 0 in the header and the others in Params::in<i> / out<k>, outputs made in the input's
framework, a caller's stream taken as it is and the internal one waited for. The kernels' numbers are
tests/runtime/test_dag.py's, on the device."""

from __future__ import annotations

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
