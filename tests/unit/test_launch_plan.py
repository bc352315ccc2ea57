"""LaunchPlan.set_extent: the header it writes and the image sizes it refuses (no compiler, no GPU)."""

from __future__ import annotations

import numpy as np
import pytest

from fklir.backend.build import kernel_values
from fklir.backend.kernel_plan import emit_kernel
from fklir.frontend import ops as fops
from fklir.frontend.lowering import kernels_of, lower_chain, run_passes
from fklir.runtime.launch import MAX_SAMPLED_KERNEL_ELEMENTS, Extent, LaunchPlan


def _plan(*ops: fops.Op) -> LaunchPlan:
    module = run_passes(lower_chain([fops.TensorRead(), *ops, fops.TensorWrite()], "uint8", 3, 1))
    (kernel,) = kernels_of(module)
    return LaunchPlan(emit_kernel(kernel).layout, kernel_values(kernel))


def test_pixel_kernels_refuse_an_image_their_32_bit_offsets_cannot_address() -> None:
    plan = _plan(fops.Resize(64, 48))
    assert plan.layout.mode == "sampled"
    plan.set_extent(Extent(65535, 21845, 1, 3, 64, 48, 1, 3))  # 4_294_836_225 elements: the largest that fits
    assert plan.header.src_pitch == 65535 * 3 and plan.header.src_w == 65535
    too_big = Extent(65536, 21846, 1, 3, 64, 48, 1, 3)
    assert 65536 * 21846 * 3 > MAX_SAMPLED_KERNEL_ELEMENTS
    with pytest.raises(ValueError, match=r"^TensorRead: elements of one input plane 21846 x 65536 x 3 = 4295098368 "):
        plan.set_extent(too_big)
    assert plan.header.src_w == 65535, "a refused extent leaves the header as it was"


def test_flat_kernels_take_any_size() -> None:
    plan = _plan(fops.Mul(2.0))
    assert plan.layout.mode == "flat"
    plan.set_extent(Extent(65536, 21846, 1, 3, 65536, 21846, 1, 3))
    assert plan.header.n == 65536 * 21846 * 3


def test_the_host_packs_each_float_divisions_reciprocals_and_whether_the_gpu_may_take_its_fast_path() -> None:
    for divisors, fast in (((2.0, 0.1, -7.0), 1), ((2.0, 1e-25, 3.0), 0), ((2.0, 3.0, 2.0**61), 0)):
        plan = _plan(fops.Cast("float32"), fops.Div(divisors))
        (slot,) = plan.layout.reciprocals
        expected = [float(np.float32(1.0) / np.float32(v)) for v in divisors]
        assert list(getattr(plan.params, f"{slot}_rcp")) == expected
        assert getattr(plan.params, f"{slot}_fast") == fast
