"""Per-image values (SPEC §2, issue 29 item 1): `fkl.per_image(rows)` gives image b of a batch, a list or the
rects of a Crop its own row of values in one kernel; a row count that differs from the batch is a ValueError
naming the op; a kernel serves every batch size up to its capacity and every set of rows (no compile, no IR).

References: numpy formulas in float64 written from SPEC (the chain's float32 rounding where the kernel has
it), and the reference interpreter on the IR of the same chain."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend import build
from fklir.frontend.lowering import lower_chain, run_passes
from fklir.frontend.ops import Write
from fklir.interpreters.fkl import run_module
from fklir.jit.pipeline import Pipeline
from fklir.passes.infer_types import InferTypesPass

RNG = np.random.default_rng(29)
TARGETS = ["cpu", "gpu"] if fkl.gpu_available() else ["cpu"]
F32 = np.float32


def _on(target: str, x: Any) -> Any:
    if target == "cpu":
        return x
    from fklir.runtime.device_buffer import DeviceBuffer

    return [DeviceBuffer.from_host(i) for i in x] if isinstance(x, list) else DeviceBuffer.from_host(x)


def _host(target: str, y: Any) -> np.ndarray:
    return np.asarray(y) if target == "cpu" else y.copy_to_host()


def _column(rows: np.ndarray) -> np.ndarray:
    """(B,) or (B, C) rows broadcast against (B, H, W, C) images."""
    return rows.reshape(rows.shape[0], 1, 1, -1)


def _brightness_contrast(x: np.ndarray, gain: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """SaturateCast<uint8>(float32(x) * gain_b + offset_b): each product and sum rounded to float32 as the
    chain computes them, then rounded half to even and clamped."""
    value = (x.astype(F32) * _column(gain).astype(F32)).astype(F32) + _column(offset).astype(F32)
    return np.clip(np.rint(value.astype(np.float64)), 0, 255).astype(np.uint8)


def _augment(gain: object, offset: object, target: str) -> fkl.Pipeline:
    ops = (fkl.Cast("float32"), fkl.Mul(gain), fkl.Add(offset), fkl.SaturateCast("uint8"))
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)


@pytest.mark.parametrize("target", TARGETS)
def test_a_batch_takes_a_row_per_image(target: str) -> None:
    x = RNG.integers(0, 256, (5, 17, 33, 3), dtype=np.uint8)
    gain = RNG.uniform(0.5, 1.5, 5)
    offset = RNG.uniform(-40, 40, (5, 3))
    offset[0] = 0.5  # ties: x * 1 + 0.5 rounds half to even
    gain[0] = 1.0
    got = _host(target, _augment(fkl.per_image(gain), fkl.per_image(offset), target)(_on(target, x)))
    np.testing.assert_array_equal(got, _brightness_contrast(x, gain, offset))
    assert len(np.unique(got.reshape(5, -1).mean(axis=1))) == 5  # the rows made the planes differ


@pytest.mark.parametrize("target", TARGETS)
def test_a_list_of_images_takes_a_row_per_image(target: str) -> None:
    images = [RNG.integers(0, 256, (9, 13, 3), dtype=np.uint8) for _ in range(3)]
    gain, offset = np.array([0.25, 1.0, 2.0]), np.array([3.0, -7.5, 0.0])
    got = _host(target, _augment(fkl.per_image(gain), fkl.per_image(offset), target)(_on(target, images)))
    np.testing.assert_array_equal(got, _brightness_contrast(np.stack(images), gain, offset))


@pytest.mark.parametrize("target", TARGETS)
def test_the_rects_of_a_crop_take_a_row_each(target: str) -> None:
    x = RNG.random((40, 50, 3), dtype=F32) * 100
    rects = [(0, 0, 20, 10), (5, 7, 30, 20), (13, 2, 37, 38)]
    scale = np.array([[1.0, 2.0, 3.0], [0.5, 0.25, -1.0], [-2.0, 4.0, 0.125]])
    ops = (fkl.Crop(rects), fkl.Resize(11, 7), fkl.Mul(fkl.per_image(scale)), fkl.Max(fkl.per_image([0.0, 5.0, -50.0])))
    got = _host(target, fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)(_on(target, x)))
    plain = fkl.compose(fkl.TensorRead(), fkl.Crop(rects), fkl.Resize(11, 7), fkl.TensorWrite(), target=target)
    resized = _host(target, plain(_on(target, x)))
    expected = np.maximum((resized * _column(scale).astype(F32)).astype(F32), _column(np.array([0.0, 5.0, -50.0])))
    np.testing.assert_array_equal(got, expected.astype(F32))


@pytest.mark.parametrize("target", TARGETS)
def test_division_and_saturate_per_image(target: str) -> None:
    x = (RNG.random((4, 7, 9, 3), dtype=F32) - 0.5) * 600
    x[1, 2, 3] = np.nan
    divisor = np.array([2.0, -3.0, 0.5, 7.0])
    lo, hi = RNG.uniform(-100, 0, (4, 3)), np.array([10.0, 50.0, 100.0, 250.0])
    ops = (fkl.Div(fkl.per_image(divisor)), fkl.Saturate(fkl.per_image(lo), fkl.per_image(hi)))
    got = _host(target, fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)(_on(target, x)))
    quotient = (x / _column(divisor).astype(F32)).astype(F32)
    expected = np.clip(quotient, _column(lo).astype(F32), _column(hi).astype(F32))  # NaN passes through
    np.testing.assert_array_equal(got, expected)
    assert np.isnan(got[1, 2, 3]).all()


def test_the_interpreter_agrees_on_every_per_image_op() -> None:
    """The reference interpreter on the IR of a per-image chain equals the CPU kernel and the numpy formula."""
    x = RNG.integers(-1000, 1000, (3, 5, 11, 2), dtype=np.int16)
    chain = (
        fkl.TensorRead(),
        fkl.Add(fkl.per_image([[1, -2], [30, 4], [-500, 6]])),
        fkl.Sub(fkl.per_image([7, -8, 9])),
        fkl.Min(fkl.per_image([[100, 200], [300, 400], [0, 0]])),
        fkl.Saturate(fkl.per_image([-5, -50, -500]), 1000),
        fkl.TensorWrite(),
    )
    module = lower_chain(chain, "int16", 2, 3)
    run_passes(module, (InferTypesPass(),))
    interpreted = run_module(module, {"src": x})["dst"]
    kernel = np.asarray(fkl.compose(*chain, target="cpu")(x))
    wide = x.astype(np.int64) + _column(np.array([[1, -2], [30, 4], [-500, 6]])) - _column(np.array([7, -8, 9]))
    wide = np.minimum(wide, _column(np.array([[100, 200], [300, 400], [0, 0]])))
    expected = np.clip(wide, _column(np.array([-5, -50, -500])), 1000).astype(np.int16)
    np.testing.assert_array_equal(interpreted, expected)
    np.testing.assert_array_equal(kernel, expected)


@pytest.mark.parametrize("target", TARGETS)
def test_a_crop_list_on_a_batch_takes_each_images_row(target: str) -> None:
    """A batch of as many images as rects: plane b is rect b of image b, letterboxed with background row b and
    scaled by row b. The frontend's IR (a chain per rect, each cropping every image by its rect and writing
    its plane) is typed as its planes, so the reference interpreter runs it as it is (a fuzz case refused it);
    the kernel and the interpreter equal one plain pipeline per image (its own rect and values, no per_image)."""
    x = RNG.integers(-50, 50, (3, 10, 36, 2)).astype(np.int32)
    rects = [(0, 0, 36, 10), (3, 1, 9, 7), (30, 8, 1, 1)]
    background, scale = [[-2.5, 4.0], [0.5, 1.0], [7.0, -1.0]], [1.5, -0.75, 2.0]

    def chain(crop: object, fill: object, factor: object) -> tuple[Any, ...]:
        letterbox = fkl.Resize(25, 12, "linear", "preserve_left", background=fill)
        return (fkl.TensorRead(), fkl.Crop(crop), letterbox, fkl.Mul(factor), fkl.TensorWrite())

    ops = chain(rects, fkl.per_image(background), fkl.per_image(scale))
    got = _host(target, fkl.compose(*ops, target=target)(_on(target, x)))
    expected = np.stack(
        [
            _host(target, fkl.compose(*chain(rects[b], background[b], scale[b]), target=target)(_on(target, x[b])))
            for b in range(3)
        ]
    )
    np.testing.assert_array_equal(got, expected)
    assert (got[2, :, 12:] == np.array(background[2], F32) * F32(scale[2])).all()  # 1x1 -> 12x12 at x = 0
    module = lower_chain(ops, "int32", 2, 3)
    run_passes(module, (InferTypesPass(),))
    np.testing.assert_array_equal(run_module(module, {"src": x})["dst"], expected)


def _forbid_ir(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Pipeline, sig: object) -> Any:
        raise AssertionError("IR was built for a known structure")

    monkeypatch.setattr(Pipeline, "_lowered", refuse)


@pytest.mark.parametrize("target", TARGETS)
def test_new_rows_and_batch_sizes_compile_nothing(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One kernel of a capacity serves every batch size up to it, and new rows are values: no IR, no compile."""
    x = RNG.integers(0, 256, (64, 6, 10, 3), dtype=np.uint8)
    _augment(fkl.per_image(np.ones(3)), fkl.per_image(np.zeros(3)), target)(_on(target, x[:3]))
    compiles = build.STATS.compiles
    _forbid_ir(monkeypatch)
    for batch in (1, 5, 17, 64):
        gain, offset = RNG.uniform(0, 2, batch), RNG.uniform(-9, 9, (batch, 3))
        pipe = _augment(fkl.per_image(gain), fkl.per_image(offset), target)
        got = _host(target, pipe(_on(target, x[:batch])))
        np.testing.assert_array_equal(got, _brightness_contrast(x[:batch], gain, offset))
        images = [x[b] for b in range(batch)]  # a list of the same images: its own kernel, compiled once
        if batch == 1:
            monkeypatch.undo()
        np.testing.assert_array_equal(_host(target, pipe(_on(target, images))), got)
        _forbid_ir(monkeypatch)
    assert build.STATS.compiles <= compiles + 1  # the list's kernel


@pytest.mark.parametrize(
    ("ops", "batch", "message"),
    [
        ((fkl.Mul(fkl.per_image([1.0, 2.0])),), 3, "Mul: per_image gives 2 rows for a batch of 3 images"),
        ((fkl.Saturate(0, fkl.per_image([1.0, 2.0, 3.0, 4.0])),), 3, "Saturate: per_image gives 4 rows"),
        ((fkl.Add(fkl.per_image([1.0, 2.0])),), None, "Add: per_image gives 2 rows for a batch of 1 images"),
    ],
)
def test_a_row_count_other_than_the_batch_is_refused_naming_the_op(
    ops: tuple[fkl.ops.Op, ...], batch: int | None, message: str
) -> None:
    shape = (7, 5, 3) if batch is None else (batch, 7, 5, 3)
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=message):
        pipe(RNG.random(shape, dtype=F32))


def test_a_crop_batch_names_rects_in_its_refusal() -> None:
    crops = fkl.Crop([(0, 0, 4, 4), (1, 1, 4, 4)])
    pipe = fkl.compose(fkl.TensorRead(), crops, fkl.Mul(fkl.per_image([1, 2, 3])), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match="Mul: per_image gives 3 rows for a batch of 2 rects"):
        pipe(RNG.random((9, 9, 3), dtype=F32))


@pytest.mark.parametrize(
    ("values", "error", "message"),
    [
        ([], ValueError, r"per_image: give a \(B, \.\.\.\) array of numbers with B >= 1"),
        (np.zeros((2, 0)), ValueError, r"per_image: give a \(B, \.\.\.\) array of numbers with B >= 1"),
        (3.0, ValueError, r"per_image: give a \(B, \.\.\.\) array of numbers with B >= 1"),
        (["a", "b"], TypeError, "per_image: values must be numbers"),
    ],
)
def test_bad_per_image_values_are_refused(values: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        fkl.per_image(values)


def test_bad_rows_are_refused_in_the_irs_words() -> None:
    x = RNG.integers(0, 256, (2, 5, 5, 3), dtype=np.uint8)
    unrepresentable = r"'fkl\.add' value 0\.5 is not representable in the chain's element type uint8"
    with pytest.raises(ValueError, match=unrepresentable):
        fkl.compose(fkl.TensorRead(), fkl.Add(fkl.per_image([1, 0.5])), fkl.TensorWrite(), target="cpu")(x)
    with pytest.raises(ValueError, match=r"'fkl\.mul' has 2 values but the chain has 3 channels"):
        fkl.compose(fkl.TensorRead(), fkl.Mul(fkl.per_image([[1, 2], [3, 4]])), fkl.TensorWrite(), target="cpu")(x)
    with pytest.raises(ValueError, match=r"Saturate: lower bound \[5.0\] is above the upper bound \[1.0\]"):
        fkl.Saturate(fkl.per_image([0, 5]), 1)
    with pytest.raises(ValueError, match="StaticLoop: a loop body takes one value for every image"):
        fkl.StaticLoop(fkl.Add(fkl.per_image([1, 2])), 3)
    with pytest.raises(ValueError, match="compose_divergent: Mul has per_image values"):
        fkl.compose_divergent([1, 1], [fkl.TensorRead(), fkl.Mul(fkl.per_image([1, 2])), fkl.TensorWrite()])


def test_per_image_values_are_frozen_and_described_by_their_rows() -> None:
    a, b = fkl.per_image([1, 2]), fkl.per_image(np.array([1.0, 2.0]))
    assert a == b and hash(a) == hash(b) and repr(a) == "per_image([[1.0], [2.0]])"
    assert fkl.per_image(a) is a
    with pytest.raises(AttributeError):
        a.rows = ()  # type: ignore[misc]
    assert fkl.Mul(a).structure() == fkl.Mul(fkl.per_image([5, 6, 7])).structure() != fkl.Mul(2.0).structure()


_AFFINE = np.array([[0.9, -0.2, 3.5], [0.25, 1.1, -2.0]])


def _strategies() -> list[tuple[str, str, tuple[int, ...], Any]]:
    """(name, dtype, input shape, ops of a value) chains whose kernels sample through each strategy: CPU warp
    rows, a resize's column pairs, nearest columns, a crop's row spans with a planar write, a sampled kernel of
    a chain that would otherwise be flat."""
    return [
        (
            "warp_rows",
            "uint8",
            (3, 23, 17, 3),
            lambda v: (fkl.Warping(_AFFINE, 19, 13), fkl.Saturate(v, 230), fkl.SaturateCast("uint8")),
        ),
        ("pair_taps", "uint8", (2, 20, 30, 3), lambda v: (fkl.Crop(3, 2, 21, 15), fkl.Resize(9, 6), fkl.Div(v))),
        ("nearest", "int16", (4, 17, 13), lambda v: (fkl.Resize(4, 11, "nearest"), fkl.Max(v))),
        ("row_spans", "float32", (2, 9, 11, 2), lambda v: (fkl.Crop(1, 1, 7, 7), fkl.Sub(v), fkl.TensorSplit())),
        ("sampled", "uint8", (3, 9, 11, 3), lambda v: (fkl.Cast("float32"), fkl.Mul(v), fkl.SaturateCast("uint8"))),
    ]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("name", "dtype", "shape", "ops"), _strategies(), ids=[s[0] for s in _strategies()])
def test_every_sampling_strategy_gives_each_plane_its_row(
    target: str, name: str, dtype: str, shape: tuple[int, ...], ops: Any
) -> None:
    """Plane b of a per-image call equals the same chain with row b's scalar value run on image b alone."""
    info = np.iinfo(dtype) if dtype != "float32" else None
    x = RNG.integers(info.min, info.max, shape, dtype=dtype) if info else RNG.random(shape, dtype=F32) * 50
    rows = [float(v) for v in RNG.integers(1, 60, shape[0])]
    write = () if isinstance(ops(1.0)[-1], Write) else (fkl.TensorWrite(),)
    batch = fkl.compose(fkl.TensorRead(), *ops(fkl.per_image(rows)), *write, target=target)
    got = _host(target, batch(_on(target, x)))
    for b, value in enumerate(rows):
        alone = fkl.compose(fkl.TensorRead(), *ops(value), *write, target=target)
        np.testing.assert_array_equal(got[b], _host(target, alone(_on(target, x[b]))), err_msg=f"plane {b}")


def _rotations(count: int, centre: tuple[float, float]) -> np.ndarray:
    """`count` 2x3 source -> destination maps: rotations about `centre` by random angles, random scales."""
    cx, cy = centre
    matrices = []
    for angle, scale in zip(RNG.uniform(-40, 40, count), RNG.uniform(0.8, 1.25, count), strict=True):
        a, b = scale * np.cos(np.radians(angle)), scale * np.sin(np.radians(angle))
        matrices.append([[a, b, (1 - a) * cx - b * cy], [-b, a, b * cx + (1 - a) * cy]])
    return np.array(matrices)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("kind", ["affine", "perspective"])
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_warp_matrices_per_image(target: str, kind: str, dtype: str) -> None:
    """A batch, and a list of the same images, each warped by its own matrix, equal to the exact warp
    formula (SPEC §3) per image and to the same chain run on each image with its matrix."""
    from tests.warp_formula import warp_formula

    x = RNG.integers(0, 256, (4, 23, 17, 3)).astype(dtype)
    matrices = _rotations(4, (8.0, 11.0))
    if kind == "perspective":
        last = np.column_stack([RNG.uniform(-2e-3, 2e-3, (4, 2)), np.ones(4)])
        matrices = np.concatenate([matrices, last[:, None, :]], axis=1)
    batch = fkl.compose(
        fkl.TensorRead(), fkl.Warping(fkl.per_image(matrices), 19, 13), fkl.TensorWrite(), target=target
    )
    got = _host(target, batch(_on(target, x)))
    np.testing.assert_array_equal(_host(target, batch(_on(target, list(x)))), got)
    for b, matrix in enumerate(matrices):
        alone = fkl.compose(fkl.TensorRead(), fkl.Warping(matrix, 19, 13), fkl.TensorWrite(), target=target)
        np.testing.assert_array_equal(got[b], _host(target, alone(_on(target, x[b]))), err_msg=f"plane {b}")
        exact = warp_formula(x[b].astype(np.float64), matrix, 19, 13)
        np.testing.assert_allclose(got[b], exact, rtol=1e-4, atol=1e-4 * 255, err_msg=f"plane {b}")


def test_bad_per_image_matrices_are_refused() -> None:
    with pytest.raises(ValueError, match=r"Warping: a per_image row holds a 2x3 or 3x3 matrix, got 4 numbers"):
        fkl.Warping(fkl.per_image(np.zeros((2, 2, 2))), 8, 8)
    with pytest.raises(ValueError, match=r"Warping: matrix .* is singular"):
        fkl.Warping(fkl.per_image(np.zeros((2, 2, 3))), 8, 8)
    pipe = fkl.compose(fkl.TensorRead(), fkl.Warping(fkl.per_image(_rotations(2, (4, 4))), 8, 8), fkl.TensorWrite())
    with pytest.raises(ValueError, match="Warping: per_image gives 2 rows for a batch of 3 images"):
        fkl.compose(*pipe.ops, target="cpu")(RNG.random((3, 9, 9), dtype=F32))


@pytest.mark.parametrize("target", TARGETS)
def test_border_values_and_resize_backgrounds_per_image(target: str) -> None:
    """A constant border (read by a warp and by a crop that leaves the image) and a letterbox background,
    each per image: plane b equals the chain with row b's values run on image b alone, and its border and
    background pixels hold row b exactly."""
    x = RNG.integers(0, 256, (3, 23, 17, 3), dtype=np.uint8)
    border = np.array([[10, 20, 30], [40, 50, 60], [255, 0, 128]])
    background = np.array([1.5, -2.0, 300.0])
    matrix = np.array([[0.9, -0.2, 3.5], [0.25, 1.1, -2.0]])

    def chain(border_value: object, background_value: object) -> tuple[fkl.ops.Op, ...]:
        return (
            fkl.BorderReader("constant", border_value),
            fkl.Warping(matrix, 19, 13),
            fkl.Resize(24, 20, aspect_ratio="preserve", background=background_value),
        )

    def crop(border_value: object) -> tuple[fkl.ops.Op, ...]:
        return (fkl.BorderReader("constant", border_value), fkl.Crop(-3, -2, 12, 9))

    for ops, alone in [
        (chain(fkl.per_image(border), fkl.per_image(background)), lambda b: chain(border[b], background[b])),
        (crop(fkl.per_image(border)), lambda b: crop(border[b])),
    ]:
        got = _host(target, fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target=target)(_on(target, x)))
        for b in range(3):
            single = fkl.compose(fkl.TensorRead(), *alone(b), fkl.TensorWrite(), target=target)
            np.testing.assert_array_equal(got[b], _host(target, single(_on(target, x[b]))), err_msg=f"plane {b}")
    np.testing.assert_array_equal(got[:, 0, 0], border)  # the crop's corner lies outside: the border's value
    np.testing.assert_array_equal(got[:, 2:, 3:], x[:, :7, :9])


def test_per_image_values_before_a_crop_of_one_image_are_refused() -> None:
    x = RNG.integers(0, 256, (23, 17, 3), dtype=np.uint8)
    rects = [(-2, -2, 8, 8), (-1, -3, 8, 8)]
    border = fkl.BorderReader("constant", fkl.per_image([1, 2]))
    pipe = fkl.compose(fkl.TensorRead(), border, fkl.Crop(rects), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=r"BorderReader: per_image values before Crop\(\[rects\]\) of one image"):
        pipe(x)
    # a batch of as many images as rects crops one rect from each: its border may be per image
    got = pipe(np.stack([x, x]))
    np.testing.assert_array_equal(got[:, 0, 0, 0], [1, 2])


def test_a_pipeline_with_per_image_values_pickles() -> None:
    """A pipeline travels to DataLoader workers and Ray actors by pickle: its per-image rows with it."""
    import pickle

    x = RNG.integers(0, 256, (3, 7, 9, 3), dtype=np.uint8)
    gain, offset = np.array([0.5, 1.0, 1.5]), np.array([[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    pipe = _augment(fkl.per_image(gain), fkl.per_image(offset), "cpu")
    copy = pickle.loads(pickle.dumps(pipe))
    assert copy.ops[2].values == fkl.per_image(gain)
    np.testing.assert_array_equal(copy(x), _brightness_contrast(x, gain, offset))


@pytest.mark.parametrize("target", TARGETS)
def test_a_colour_matrix_per_image(target: str) -> None:
    """A colour twist per sample (MxVFloat3 of fkl.per_image((B, 3, 3))): out_b = M_b x_b, summed in float64
    from the float32 matrix and pixel as SPEC's MxVFloat3 says, rounded once to float32."""
    x = RNG.random((5, 9, 13, 3), dtype=F32) * 255
    matrices = RNG.uniform(-1.5, 1.5, (5, 3, 3))
    matrices[0] = np.eye(3)
    pipe = fkl.compose(fkl.TensorRead(), fkl.MxVFloat3(fkl.per_image(matrices)), fkl.TensorWrite(), target=target)
    got = _host(target, pipe(_on(target, x)))
    exact = np.einsum("bij,bhwj->bhwi", matrices.astype(F32).astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(got, exact.astype(F32), rtol=1e-6, atol=1e-4)
    np.testing.assert_array_equal(got[0], x[0])
    with pytest.raises(ValueError, match="MxVFloat3: a per_image row holds a 3x3 matrix, got 4 numbers"):
        fkl.MxVFloat3(fkl.per_image(np.zeros((2, 2, 2))))
