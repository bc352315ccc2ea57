"""The CPU target end to end: numeric results against numpy formulas from SPEC, OpenCV and the
reference interpreter; caching; errors. Always runs (g++ is required, as in CI)."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.build import STATS
from fklir.frontend.lowering import lower_chain
from fklir.interpreters.fkl import run_module
from tests.runtime.chains import (
    ROI_RECTS,
    float_chain,
    float_chain_reference,
    normalise_chain,
    normalise_reference,
    roi_chain,
    roi_reference,
)

RNG = np.random.default_rng(1234)


def _reference(pipe: fkl.Pipeline, x: np.ndarray, dtype: str) -> np.ndarray:
    """The reference interpreter on the frontend's IR (before any pass)."""
    from fklir.jit.signature import input_signature

    sig = input_signature(x.shape, dtype)[0]
    module = lower_chain(pipe.ops, sig.dtype, sig.channels, sig.planes)
    from fklir.frontend.lowering import run_passes
    from fklir.passes.infer_types import InferTypesPass

    run_passes(module, (InferTypesPass(),))
    return run_module(module, {"src": x})["dst"]


def test_roi_example_matches_opencv_and_reference() -> None:
    img = RNG.integers(0, 256, (108, 192, 3), dtype=np.uint8)
    out = roi_chain("cpu")(img)
    assert out.shape == (3, 16, 16, 3) and out.dtype == np.uint8
    expected = roi_reference(img, ROI_RECTS)
    assert np.abs(out.astype(int) - expected).max() <= 1
    assert (out == expected).mean() > 0.99
    ref = _reference(roi_chain("cpu"), img, "uint8")
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1


def test_float_chain_matches_formula_on_odd_size() -> None:
    x = (RNG.standard_normal((17, 33, 3)) * 40).astype(np.float32)
    out = float_chain("cpu")(x)
    assert out.dtype == np.float32 and out.shape == x.shape
    np.testing.assert_allclose(out, float_chain_reference(x), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out, _reference(float_chain("cpu"), x, "float32")[0], rtol=1e-6, atol=1e-5)
    # clamps are active on both sides: the test exercises Max and Min, not only the arithmetic
    assert (out == np.float32(-10.0)).any() and (out == np.float32(40.0)).any()


@pytest.mark.parametrize("shape", [(17, 33, 3), (5, 7), (2, 9, 11, 4), (1, 3, 2)])
def test_normalise_chain_rounds_half_to_even(shape: tuple[int, ...]) -> None:
    x = RNG.integers(0, 256, shape, dtype=np.uint8)
    x.flat[:6] = [7, 9, 11, 255, 0, 13]  # 0.5*x - 3 = 0.5, 1.5, 2.5 (ties), 124.5, -3, 3.5
    out = normalise_chain("cpu")(x)
    expected = normalise_reference(x)
    np.testing.assert_array_equal(out, expected)
    assert list(out.flat[:6]) == [0, 2, 2, 124, 0, 4]


def test_integer_chains_wrap_and_match_reference() -> None:
    x = np.array([[250, 251, 3], [0, 128, 255]], dtype=np.uint8)
    out = fkl.compose(fkl.TensorRead(), fkl.Add(10), fkl.TensorWrite(), target="cpu")(x)
    np.testing.assert_array_equal(out, ((x.astype(int) + 10) % 256).astype(np.uint8))
    big = np.array([[2**31 - 1, -(2**31), 7]], dtype=np.int32)
    out32 = fkl.compose(fkl.TensorRead(), fkl.Mul(3), fkl.Sub(1), fkl.TensorWrite(), target="cpu")(big)
    wrapped = ((big.astype(np.int64) * 3 - 1 + 2**31) % 2**32 - 2**31).astype(np.int32)
    np.testing.assert_array_equal(out32, wrapped)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "uint16", "int16", "int32", "uint32", "float16", "float64"])
def test_every_numpy_dtype_against_reference(dtype: str) -> None:
    info = np.iinfo(dtype) if np.dtype(dtype).kind in "iu" else None
    if info is not None:
        x = RNG.integers(info.min, info.max, (9, 13, 2), dtype=dtype, endpoint=True)
        ops = [fkl.Add(3), fkl.Mul(2), fkl.Div((3, 2)), fkl.Max(1), fkl.Min(info.max - 5)]
    else:
        x = (RNG.standard_normal((9, 13, 2)) * 20).astype(dtype)
        ops = [fkl.Add(0.5), fkl.Mul((2.0, -1.0)), fkl.Div(3.0), fkl.Max(-4.0), fkl.Min(9.0)]
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")
    out = pipe(x)
    ref = _reference(pipe, x, dtype)[0]
    if info is not None:
        np.testing.assert_array_equal(out, ref)
    else:
        np.testing.assert_allclose(
            out.astype(np.float64), ref.astype(np.float64), rtol=2e-3 if dtype == "float16" else 1e-12
        )


def test_saturate_cast_ties_nan_and_range() -> None:
    x = np.array([[0.5, 1.5, 2.5, -2.5, 254.5, 255.5, np.nan, -np.inf, np.inf, 300.0, -0.5, 3.49]], np.float32)
    to_u8 = fkl.compose(fkl.TensorRead(), fkl.SaturateCast("uint8"), fkl.TensorWrite(), target="cpu")(x)
    assert list(to_u8[0]) == [0, 2, 2, 0, 254, 255, 0, 0, 255, 255, 0, 3]
    to_i8 = fkl.compose(fkl.TensorRead(), fkl.SaturateCast("int8"), fkl.TensorWrite(), target="cpu")(x)
    assert list(to_i8[0]) == [0, 2, 2, -2, 127, 127, 0, -128, 127, 127, 0, 3]


def test_cast_truncates_toward_zero() -> None:
    x = np.array([[1.9, -1.9, 2.5, -0.5, 100.2]], np.float32)
    out = fkl.compose(fkl.TensorRead(), fkl.Cast("int32"), fkl.TensorWrite(), target="cpu")(x)
    assert list(out[0]) == [1, -1, 2, 0, 100]


def test_tensor_split_layouts() -> None:
    x = RNG.integers(0, 256, (11, 7, 3), dtype=np.uint8)
    one = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(1 / 255), fkl.TensorSplit(), target="cpu")(x)
    assert one.shape == (3, 11, 7)
    np.testing.assert_allclose(one, np.transpose(x.astype(np.float64) / 255, (2, 0, 1)), rtol=1e-6)
    batch = RNG.integers(0, 256, (4, 11, 7, 3), dtype=np.uint8)
    many = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.TensorSplit(), target="cpu")(batch)
    assert many.shape == (4, 3, 11, 7)
    np.testing.assert_array_equal(many, np.transpose(batch, (0, 3, 1, 2)).astype(np.float32))


def test_roi_dnn_preprocessing_planar() -> None:
    img = RNG.integers(0, 256, (91, 131, 3), dtype=np.uint8)
    rects = [(0, 0, 40, 30), (90, 60, 41, 31), (13, 7, 77, 50)]
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Crop(rects),
        fkl.Resize(24, 20),
        fkl.Mul(1 / 255),
        fkl.Sub(mean),
        fkl.Div(std),
        fkl.TensorSplit(),
        target="cpu",
    )
    out = pipe(img)
    assert out.shape == (3, 3, 20, 24) and out.dtype == np.float32
    import cv2

    for z, (x, y, w, h) in enumerate(rects):
        r = cv2.resize(img[y : y + h, x : x + w].astype(np.float32), (24, 20), interpolation=cv2.INTER_LINEAR)
        expected = np.transpose((r.astype(np.float64) / 255 - mean) / std, (2, 0, 1))
        np.testing.assert_allclose(out[z], expected, atol=1e-4)


def test_nearest_resize_matches_opencv_exactly() -> None:
    import cv2

    img = RNG.integers(0, 256, (300, 300, 3), dtype=np.uint8)
    out = fkl.compose(fkl.TensorRead(), fkl.Resize(224, 224, "nearest"), fkl.TensorWrite(), target="cpu")(img)
    np.testing.assert_array_equal(out, cv2.resize(img, (224, 224), interpolation=cv2.INTER_NEAREST))


@pytest.mark.parametrize(("src", "dst"), [((300, 300), (224, 224)), ((416, 234), (640, 360)), ((33, 17), (20, 45))])
def test_linear_resize_matches_opencv(src: tuple[int, int], dst: tuple[int, int]) -> None:
    import cv2

    img = (RNG.random((src[1], src[0], 3)) * 255).astype(np.float32)
    out = fkl.compose(fkl.TensorRead(), fkl.Resize(*dst), fkl.TensorWrite(), target="cpu")(img)
    expected = cv2.resize(img, dst, interpolation=cv2.INTER_LINEAR)
    np.testing.assert_allclose(out, expected, atol=1e-3, rtol=1e-4)


def test_same_pipeline_on_different_sizes() -> None:
    pipe = normalise_chain("cpu")
    for shape in [(20, 30, 3), (41, 17, 3), (5, 99, 3)]:
        x = RNG.integers(0, 256, shape, dtype=np.uint8)
        out = pipe(x)
        assert out.shape == shape
        np.testing.assert_array_equal(out, normalise_reference(x))
    roi = roi_chain("cpu")
    for shape in [(108, 192, 3), (200, 300, 3)]:
        img = RNG.integers(0, 256, shape, dtype=np.uint8)
        assert np.abs(roi(img).astype(int) - roi_reference(img, ROI_RECTS)).max() <= 1


def test_changing_values_does_not_recompile() -> None:
    x = RNG.integers(0, 256, (13, 21, 3), dtype=np.uint8)
    normalise_chain("cpu", 0.25, 1.0)(x)  # compile (or load) once
    before = STATS.compiles
    for mul, sub in [(0.5, 3.0), (1.5, -2.0), (0.1, 7.0)]:
        np.testing.assert_array_equal(normalise_chain("cpu", mul, sub)(x), normalise_reference(x, mul, sub))
    rects_b = [(1, 2, 50, 30), (3, 4, 60, 40), (0, 0, 10, 10)]
    roi_chain("cpu")(RNG.integers(0, 256, (108, 192, 3), dtype=np.uint8))
    before_roi = STATS.compiles
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Crop(rects_b),
        fkl.Resize(16, 16),
        fkl.Mul(3.0),
        fkl.Sub(1.0),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),
        target="cpu",
    )
    pipe(RNG.integers(0, 256, (64, 80, 3), dtype=np.uint8))
    assert STATS.compiles == before_roi
    assert before == STATS.compiles or before_roi >= before


def test_fresh_process_loads_from_disk_cache(tmp_path: object) -> None:
    import os
    import subprocess
    import sys

    script = (
        "import numpy as np, fklir as fkl\n"
        "from fklir.backend.build import STATS\n"
        "p = fkl.compose(fkl.TensorRead(), fkl.Mul(3.0), fkl.Add(1.0), fkl.TensorWrite(), target='cpu')\n"
        "x = np.arange(30, dtype=np.float32).reshape(5, 6)\n"
        "assert np.array_equal(p(x), x * 3 + 1)\n"
        "print(STATS.compiles, STATS.disk_hits)\n"
    )
    env = {**os.environ, "FKLIR_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    second = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert first.stdout.split() == ["1", "0"]
    assert second.stdout.split() == ["0", "1"]


# ---- errors: checked before launch, naming the op and the value -------------------------------------


def test_rect_outside_image_is_rejected() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(180, 100, 20, 10), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=r"Crop: rect \[180, 100, 20, 10\] leaves the 192x108 image"):
        pipe(np.zeros((108, 192, 3), np.uint8))


def test_rects_of_different_sizes_need_a_resize() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Crop([(0, 0, 4, 4), (0, 0, 5, 4)]), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match="Resize after the Crop"):
        pipe(np.zeros((10, 10, 3), np.uint8))


def test_value_errors_name_the_op() -> None:
    x = np.zeros((4, 5, 3), np.uint8)
    with pytest.raises(ValueError, match=r"'fkl.mul' has 2 values but the chain has 3 channels"):
        fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul((1.0, 2.0)), fkl.TensorWrite(), target="cpu")(x)
    with pytest.raises(ValueError, match="Cast to float first"):
        fkl.compose(fkl.TensorRead(), fkl.Mul(0.5), fkl.TensorWrite(), target="cpu")(x)
    with pytest.raises(ValueError, match="divides an integer chain"):
        fkl.compose(fkl.TensorRead(), fkl.Div(0), fkl.TensorWrite(), target="cpu")(x)
    with pytest.raises(ValueError, match="unknown dtype 'float8'"):
        fkl.Cast("float8")
    with pytest.raises(ValueError, match="must come right after TensorRead"):
        fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Resize(4, 4), fkl.TensorWrite(), target="cpu")


def test_chain_checks_hold_after_the_same_classes_composed_fine() -> None:
    """compose() checks a sequence of op classes once (a per-frame loop meets it again and again); a second Crop
    list, which the classes alone do not show, is still refused every time."""
    x = RNG.integers(0, 256, (20, 30, 3), dtype=np.uint8)

    def crops(first: object, second: object) -> fkl.Pipeline:
        ops = (fkl.Crop(first), fkl.Crop(second), fkl.Resize(4, 3))
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorSplit(), target="cpu")

    got = np.asarray(crops((2, 1, 20, 15), [(0, 0, 5, 5), (3, 4, 10, 8)])(x))
    assert got.shape == (2, 3, 3, 4)
    for _ in range(2):
        with pytest.raises(ValueError, match=r"only one Crop\(\[rects\]\) per chain"):
            crops([(0, 0, 9, 9), (1, 1, 8, 8)], [(0, 0, 5, 5)])
        with pytest.raises(ValueError, match="must come right after TensorRead"):
            fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Resize(4, 4), fkl.TensorWrite(), target="cpu")


def test_error_points_at_the_user_line() -> None:
    x = np.zeros((4, 5, 3), np.uint8)
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(0.5), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=r"test_cpu_pipeline\.py:\d+:1: error:"):
        pipe(x)


def test_bad_inputs_are_rejected() -> None:
    pipe = normalise_chain("cpu")
    with pytest.raises(ValueError, match="not C-contiguous"):
        pipe(np.zeros((10, 12, 3), np.uint8)[:, ::2])
    with pytest.raises(TypeError, match="numpy array"):
        pipe("not an image")
    with pytest.raises(ValueError, match="cannot read an input of shape"):
        pipe(np.zeros((2, 3, 4, 5, 6), np.uint8))
    with pytest.raises(ValueError, match="out: expected a uint8 array of shape"):
        pipe(np.zeros((10, 12, 3), np.uint8), out=np.zeros((10, 12, 3), np.float32))


def test_out_argument_is_filled() -> None:
    x = RNG.integers(0, 256, (9, 8, 3), dtype=np.uint8)
    out = np.full((9, 8, 3), 77, np.uint8)
    result = normalise_chain("cpu")(x, out=out)
    assert result is out
    np.testing.assert_array_equal(out, normalise_reference(x))


def test_warm_call_touches_no_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once compiled, a call neither lowers, runs passes nor builds: the IR layers may be absent."""
    import fklir.backend.build as build
    import fklir.frontend.lowering as lowering

    pipe = roi_chain("cpu")
    img = RNG.integers(0, 256, (108, 192, 3), dtype=np.uint8)
    first = pipe(img)

    def forbidden(*args: object, **kwargs: object) -> None:
        raise AssertionError("the warm path touched the IR")

    monkeypatch.setattr(lowering, "lower_chain", forbidden)
    monkeypatch.setattr(lowering, "run_passes", forbidden)
    monkeypatch.setattr(build, "build_kernel", forbidden)
    np.testing.assert_array_equal(pipe(img), first)
    bigger = RNG.integers(0, 256, (150, 250, 3), dtype=np.uint8)
    assert np.abs(pipe(bigger).astype(int) - roi_reference(bigger, ROI_RECTS)).max() <= 1


def test_threads_calling_one_pipeline_with_different_sizes() -> None:
    """Each call writes its sizes and pointers into the pipeline's one parameter block and then runs: four
    threads with images of four sizes, switching as often as the interpreter allows, must each get their
    own result (without the plan's lock, three of four threads saw another's sizes or pointers)."""
    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2.0), fkl.Add(1.0), fkl.TensorWrite(), target="cpu")
    rng = np.random.default_rng(5)
    images = [rng.random((h, w, 3), dtype=np.float32) for h, w in ((31, 17), (64, 48), (5, 7), (100, 90))]
    lists = [[rng.random((9, 11, 3), dtype=np.float32) for _ in range(3)] for _ in range(2)]
    for x in [*images, *lists]:
        pipe(x)  # the plans exist before the threads start
    wrong: list[int] = []

    def calls(i: int, x: np.ndarray | list[np.ndarray]) -> None:
        expected = np.stack(x) * np.float32(2.0) + np.float32(1.0) if isinstance(x, list) else x * 2 + 1
        for _ in range(1500):
            if not np.array_equal(pipe(x), expected.astype(np.float32)):
                wrong.append(i)
                return

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=calls, args=(i, x)) for i, x in enumerate([*images, *lists])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(switch)
    assert not wrong, f"threads {wrong} got another call's result"
