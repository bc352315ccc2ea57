"""SPEC §3 "Edge inputs": every size, offset and product of sizes is checked against the kernel's index
type (fklir/limits.py), at compose time (op values) and at call time (image sizes), and refused with a
ValueError that names the op, the value and the limit. Nothing here allocates a large array: huge
inputs are sparse memory maps, and a huge output must be refused before it is allocated."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.build import kernel_values
from fklir.backend.kernel_plan import emit_kernel
from fklir.frontend import ops as fops
from fklir.frontend.lowering import kernels_of, lower_chain, run_passes
from fklir.limits import I32_MAX, I32_MIN, I64_MAX, U32_MAX, check_index, check_product, check_span
from fklir.runtime.launch import Extent, LaunchPlan

FITS = 2**31 - 1
TOO_LARGE = (2**31, 2**32, 2**32 + 3)
I32_LIMIT = "exceeds the limit 2147483647 (the kernel's int32 index)"


def _refused(op: str, value: int, limit: str = I32_LIMIT) -> str:
    """The pattern of the error for `value` refused by `op`."""
    return rf"^{op}: .*= {value} {re.escape(limit)}"


# ---- the check itself ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", [0, 1, FITS])
def test_values_inside_the_limit_pass_unchanged(value: int) -> None:
    assert check_index("Resize", "width", value) == value


@pytest.mark.parametrize("value", TOO_LARGE)
def test_values_above_the_limit_name_the_op_the_value_and_the_limit(value: int) -> None:
    with pytest.raises(ValueError, match=_refused("Resize", value)) as info:
        check_index("Resize", "width", value)
    assert str(info.value) == f"Resize: width = {value} {I32_LIMIT}"


def test_each_limit_names_its_index_type_and_lower_bounds_are_checked() -> None:
    assert check_index("X", "offset", I32_MIN, I32_MAX, I32_MIN) == I32_MIN
    with pytest.raises(ValueError, match=r"^X: offset = -2147483649 is below the limit -2147483648$"):
        check_index("X", "offset", I32_MIN - 1, I32_MAX, I32_MIN)
    with pytest.raises(ValueError, match=r"= 4294967296 exceeds the limit 4294967295 \(the kernel's uint32 index\)"):
        check_index("X", "offset", U32_MAX + 1, U32_MAX)
    with pytest.raises(ValueError, match=r"exceeds the limit 9223372036854775807 \(the kernel's int64 index\); split"):
        check_index("X", "count", I64_MAX + 1, I64_MAX, hint="split")
    with pytest.raises(ValueError, match=r"^X: count = 11 exceeds the limit 10$"):
        check_index("X", "count", 11, 10)


def test_products_are_checked_whole_and_show_their_factors() -> None:
    assert check_product("TensorWrite", "output elements", (3, 1080, 1920, 3)) == 3 * 1080 * 1920 * 3
    big = (2, FITS, FITS, 4)
    with pytest.raises(ValueError, match=r"^TensorWrite: output elements 2 x 2147483647 x 2147483647 x 4 = "):
        check_product("TensorWrite", "output elements", big)
    assert check_product("TensorRead", "plane", (65535, 65537), U32_MAX) == U32_MAX
    with pytest.raises(ValueError, match=r"65536 x 65536 = 4294967296 exceeds the limit 4294967295"):
        check_product("TensorRead", "plane", (65536, 65536), U32_MAX)


def test_a_span_must_start_end_and_count_in_int32() -> None:
    check_span("Crop", "", ("x", I32_MIN), ("w", 2))
    check_span("Crop", "", ("x", FITS), ("w", 1))  # the last index is 2^31 - 1
    check_span("Crop", "", ("x", 0), ("w", FITS))
    with pytest.raises(ValueError, match=r"^Crop: x \+ w - 1 = 2147483648 exceeds"):
        check_span("Crop", "", ("x", FITS), ("w", 2))
    with pytest.raises(ValueError, match=r"^Crop: x = -2147483649 is below the limit -2147483648"):
        check_span("Crop", "", ("x", I32_MIN - 1), ("w", 5))
    with pytest.raises(ValueError, match=r"^Crop: w = 4294967296 exceeds"):
        check_span("Crop", "", ("x", I32_MIN), ("w", 2**32))


# ---- op values at compose time ------------------------------------------------------------------------


@pytest.mark.parametrize("value", TOO_LARGE)
@pytest.mark.parametrize("field", ["x", "y", "w", "h"])
def test_crop_refuses_rect_values_beyond_int32(field: str, value: int) -> None:
    rect = {"x": 0, "y": 0, "w": 1, "h": 1} | {field: value}
    with pytest.raises(ValueError, match=_refused("Crop", value)):
        fkl.Crop(rect["x"], rect["y"], rect["w"], rect["h"])
    with pytest.raises(ValueError, match=_refused("Crop", value)):
        fkl.Crop([(1, 1, 2, 2), (rect["x"], rect["y"], rect["w"], rect["h"])])
    assert fkl.Crop(*{"x": 0, "y": 0, "w": 1, "h": 1, field: FITS}.values()).rects[0] == tuple(
        {"x": 0, "y": 0, "w": 1, "h": 1, field: FITS}.values()
    )


@pytest.mark.parametrize(("x", "w"), [(FITS, 2), (2, FITS), (2**31 - 3, 5), (I32_MIN - 1, 3)])
def test_crop_refuses_rects_whose_columns_leave_int32(x: int, w: int) -> None:
    with pytest.raises(ValueError, match=r"^Crop: rect .*: x( \+ w - 1)? = -?\d+ (exceeds|is below) the limit"):
        fkl.Crop(x, 0, w, 1)
    with pytest.raises(ValueError, match=r"^Crop: rect .*: y( \+ h - 1)? = -?\d+ (exceeds|is below) the limit"):
        fkl.Crop(0, x, 1, w)


@pytest.mark.parametrize("value", TOO_LARGE)
def test_sizes_of_resize_readset_and_warping_are_refused_beyond_int32(value: int) -> None:
    m = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    makers = {
        "Resize": (lambda w, h: fkl.Resize(w, h, "nearest")),
        "ReadSet": (lambda w, h: fkl.ReadSet(1.0, w, h)),
        "Warping": (lambda w, h: fkl.Warping(m, w, h)),
    }
    for op, make in makers.items():
        with pytest.raises(ValueError, match=_refused(op, value)):
            make(value, 1)
        with pytest.raises(ValueError, match=_refused(op, value)):
            make(1, value)
        assert make(FITS, FITS).size == (FITS, FITS)  # legal: described, never run


def test_a_constant_border_crop_at_int32_edges_reads_the_constant_not_wrapped_pixels() -> None:
    img = np.arange(5 * 6, dtype=np.uint8).reshape(5, 6)
    for rect in [(FITS, 0, 1, 1), (FITS - 2, FITS - 1, 3, 1), (I32_MIN, I32_MIN, 2, 3), (2**31 - 4, 0, 4, 5)]:
        pipe = fkl.compose(
            fkl.TensorRead(), fkl.BorderReader("constant", 99), fkl.Crop(*rect), fkl.TensorWrite(), target="cpu"
        )
        out = pipe(img)
        np.testing.assert_array_equal(out, np.full((rect[3], rect[2]), 99, np.uint8))


@pytest.mark.parametrize("mode", ["wrap", "reflect", "reflect101", "replicate"])
def test_border_modes_at_int32_offsets_follow_their_periodic_rule(mode: str) -> None:
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    x, y, w, h = 2**31 - 9, I32_MIN + 1, 8, 6
    pipe = fkl.compose(fkl.TensorRead(), fkl.BorderReader(mode), fkl.Crop(x, y, w, h), fkl.TensorWrite(), target="cpu")
    rows, cols = _border_index(mode, np.arange(y, y + h), 5), _border_index(mode, np.arange(x, x + w), 7)
    np.testing.assert_array_equal(pipe(img), img[np.ix_(rows, cols)])


def _border_index(mode: str, i: np.ndarray, n: int) -> np.ndarray:
    """numpy.pad's rule for each BorderReader mode, on int64 indices (independent of the kernel's)."""
    i = i.astype(np.int64)
    if mode == "wrap":
        return i % n
    if mode == "replicate":
        return np.clip(i, 0, n - 1)
    if mode == "reflect":
        m = i % (2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    m = i % (2 * n - 2)
    return np.where(m < n, m, 2 * n - 2 - m)


# ---- image sizes at call time ---------------------------------------------------------------------------


def _sparse(tmp_path: Path, shape: tuple[int, ...]) -> np.ndarray:
    """A zero-filled uint8 array of `shape` that takes no memory or disk (a sparse file, mapped)."""
    path = tmp_path / "sparse.bin"
    with path.open("wb") as f:
        f.truncate(int(np.prod(shape)))
    return np.memmap(path, dtype=np.uint8, mode="r+", shape=shape)


@pytest.mark.parametrize(
    ("shape", "what"),
    [((1, 2**31), "input width"), ((2**31, 1), "input height"), ((2**31, 1, 1), "input planes")],
)
def test_input_sizes_beyond_int32_are_refused_before_the_output_exists(
    tmp_path: Path, shape: tuple[int, ...], what: str
) -> None:
    x = _sparse(tmp_path, shape)
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=rf"^TensorRead: {what} = 2147483648 {re.escape(I32_LIMIT)}"):
        pipe(x)


def test_an_output_whose_element_count_leaves_int64_is_refused_before_allocation() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Resize(FITS, FITS, "nearest"), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=r"^TensorWrite: output elements 1 x 2147483647 x 2147483647 x 3 = \d+ "):
        pipe(np.zeros((4, 5, 3), np.uint8))
    split = fkl.compose(fkl.TensorRead(), fkl.Resize(FITS, FITS, "nearest"), fkl.TensorSplit(), target="cpu")
    with pytest.raises(ValueError, match=r"^TensorSplit: output elements .* exceeds the limit 9223372036854775807"):
        split(np.zeros((4, 5, 4), np.uint8))


def _plan(*ops: fops.Op) -> LaunchPlan:
    module = run_passes(lower_chain([fops.TensorRead(), *ops, fops.TensorWrite()], "uint8", 3, 1))
    (kernel,) = kernels_of(module)
    return LaunchPlan(emit_kernel(kernel).layout, kernel_values(kernel))


@pytest.mark.parametrize("count", TOO_LARGE)
def test_batch_counts_beyond_int32_are_refused(count: int) -> None:
    """Plane counts: a batch's images, a list input's length, a Crop's number of rects (the output planes)."""
    plan = _plan(fops.Mul(2.0))
    plan.set_extent(Extent(5, 4, FITS, 3, 5, 4, FITS, 3))  # legal: only the header is written
    assert plan.header.dst_planes == FITS
    with pytest.raises(ValueError, match=_refused("TensorRead", count)):
        plan.check_extent(Extent(5, 4, count, 3, 5, 4, 1, 3))
    with pytest.raises(ValueError, match=_refused("TensorWrite", count)):
        plan.set_extent(Extent(5, 4, 1, 3, 5, 4, count, 3))
    assert plan.header.dst_planes == FITS, "a refused extent leaves the header as it was"
