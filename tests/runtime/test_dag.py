"""DAG pipelines (SPEC §8): branches (fkl.Input) joined by Add ... Min, AbsDiff, Equal, Blend and Composite,
outputs along the way (MidWrite, MidSplit). Each graph runs on the CPU and GPU targets and in the reference
interpreter, checked against numpy formulas written from SPEC on random odd-sized images with ties."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.dialects import fkl as fkl_ir
from fklir.frontend.lowering import lower_graph, run_passes
from fklir.interpreters.fkl import run_module
from fklir.jit.signature import input_signature

TARGETS = [
    "cpu",
    pytest.param(
        "gpu",
        marks=[pytest.mark.gpu, pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")],
    ),
]
H, W = 17, 33  # odd sizes


def run(target: str, ops: Sequence[Any], *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """The graph's outputs on `target` as numpy arrays (always a tuple)."""
    pipe = fkl.compose(*ops, target=target)
    if target == "cpu":
        got = pipe(*inputs)
    else:
        from fklir.runtime.device_buffer import DeviceBuffer

        made = pipe(*(DeviceBuffer.from_host(x) for x in inputs))
        got = tuple(m.copy_to_host() for m in made) if isinstance(made, tuple) else made.copy_to_host()
    return got if isinstance(got, tuple) else (got,)


def interpret(ops: Sequence[Any], *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
    """The reference interpreter's outputs of the graph (shaped as the pipeline's, one image each)."""
    sources = []
    for i, x in enumerate(inputs):
        sig, _, _ = input_signature(x.shape, str(x.dtype))
        sources.append(fkl_ir.ImageType(sig.dtype, sig.channels, sig.planes))
    module = run_passes(lower_graph(ops, sources))
    names = {"src" if i == 0 else f"in{i}": x for i, x in enumerate(inputs)}
    outputs = run_module(module, names)
    return tuple(np.asarray(outputs[f"out{k}"]) for k in range(len(outputs)))


def check(
    target: str, ops: Sequence[Any], inputs: Sequence[np.ndarray], expected: Sequence[np.ndarray], tol: float = 0.0
) -> None:
    got = run(target, ops, *inputs)
    reference = interpret(ops, *inputs)
    assert len(got) == len(expected) == len(reference)
    for k, (g, r, e) in enumerate(zip(got, reference, expected, strict=True)):
        assert g.shape == e.shape and g.dtype == e.dtype, (k, g.shape, e.shape, g.dtype, e.dtype)
        assert r.reshape(e.shape).dtype == e.dtype
        np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=0, atol=tol, err_msg=f"output {k}")
        np.testing.assert_allclose(r.reshape(e.shape).astype(np.float64), e.astype(np.float64), rtol=0, atol=tol)


def images(seed: int, *shapes: tuple[int, ...], dtype: str = "uint8") -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    if dtype == "uint8":
        return [rng.integers(0, 256, shape, dtype=np.uint8) for shape in shapes]
    return [(rng.random(shape) * 200 - 100).astype(dtype) for shape in shapes]


def spec_background_subtraction() -> tuple[Any, ...]:
    """SPEC §8's example: |frame - background| as float32, then a uint8 mask of its channel maximum above 25."""
    return (
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.AbsDiff(fkl.Input(1, fkl.Cast("float32"))),
        fkl.MidWrite(),
        fkl.VectorReduce("Max"),
        fkl.Threshold(25.0),
        fkl.SaturateCast("uint8"),
        fkl.TensorWrite(),
    )


@pytest.mark.parametrize("target", TARGETS)
def test_spec_background_subtraction(target: str) -> None:
    """SPEC §8's example as written: |frame - background| as float32 and a uint8 mask of its channel maximum
    above 25 (ties at exactly 25 included: 25 is not above)."""
    frame, background = images(1, (H, W, 3), (H, W, 3))
    background[0, :5, 0] = frame[0, :5, 0].astype(np.int64).clip(25, 255) - 25  # |d| == 25 exactly
    ops = spec_background_subtraction()
    diff = np.abs(frame.astype(np.float64) - background).astype(np.float32)
    mask = (diff.max(axis=-1) > 25).astype(np.uint8)
    check(target, ops, [frame, background], [diff, mask])


JOINS = {
    "Add": np.add,
    "Sub": np.subtract,
    "Mul": np.multiply,
    "Div": np.divide,
    "Max": np.maximum,
    "Min": np.minimum,
    "AbsDiff": lambda a, b: np.abs(a - b),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(JOINS))
def test_float_joins_are_the_formula(target: str, name: str) -> None:
    a, b = images(2, (H, W, 3), (H, W, 3), dtype="float32")
    b[0, :4] = a[0, :4]  # equal operands: x - x, max/min ties
    b[1, :3] = 0.0  # division by zero: inf
    op = getattr(fkl, name)(fkl.Input(1))
    with np.errstate(all="ignore"):
        expected = JOINS[name](a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
    check(target, (fkl.TensorRead(), op, fkl.TensorWrite()), [a, b], [expected])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["Add", "Sub", "Mul", "Max", "Min", "AbsDiff"])
def test_integer_joins_wrap_like_c(target: str, name: str) -> None:
    a, b = images(3, (H, W, 2), (H, W, 2))
    wide = JOINS[name](a.astype(np.int64), b.astype(np.int64))
    expected = (wide % 256).astype(np.uint8)
    check(target, (fkl.TensorRead(), getattr(fkl, name)(fkl.Input(1)), fkl.TensorWrite()), [a, b], [expected])


@pytest.mark.parametrize("target", TARGETS)
def test_equal_of_two_frames_is_bool_per_channel(target: str) -> None:
    a, b = images(4, (H, W, 3), (H, W, 3))
    b[::2] = a[::2]
    ops = (fkl.TensorRead(), fkl.Equal(fkl.Input(1)), fkl.TensorWrite())
    check(target, ops, [a, b], [a == b])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_blend_rounds_once_with_ties_to_even(target: str, dtype: str) -> None:
    a, b = images(5, (H, W, 3), (H, W, 3), dtype=dtype)
    if dtype == "uint8":
        a[0, :, 0], b[0, :, 0] = 3, 4  # 3.5: ties go to even (4)
        a[1, :, 0], b[1, :, 0] = 4, 5  # 4.5 -> 4
    mixed = a.astype(np.float64) * 0.5 + b.astype(np.float64) * 0.5
    expected = np.rint(mixed).clip(0, 255).astype(np.uint8) if dtype == "uint8" else mixed.astype(np.float32)
    ops = (fkl.TensorRead(), fkl.Blend(fkl.Input(1), 0.5), fkl.TensorWrite())
    check(target, ops, [a, b], [expected])
    if dtype == "uint8":
        got = run(target, ops, a, b)[0]
        assert got[0, 0, 0] == 4 and got[1, 0, 0] == 4


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mask_channels", [1, 3])
def test_composite_with_a_uint8_mask_is_cvcudas_formula(target: str, mask_channels: int) -> None:
    fg, bg = images(6, (H, W, 3), (H, W, 3))
    (mask,) = images(7, (H, W, mask_channels) if mask_channels > 1 else (H, W))
    mask[0, :3] = 0
    mask[1, :3] = 255
    m = (mask.astype(np.float64) / 255.0).reshape(H, W, mask_channels)
    expected = np.rint(fg * m + bg * (1 - m)).clip(0, 255).astype(np.uint8)
    ops = (fkl.TensorRead(), fkl.Composite(fkl.Input(1), fkl.Input(2)), fkl.TensorWrite())
    check(target, ops, [fg, bg, mask], [expected])
    got = run(target, ops, fg, bg, mask)[0]
    np.testing.assert_array_equal(got[0, :3], bg[0, :3])  # m = 0: the background
    np.testing.assert_array_equal(got[1, :3], fg[1, :3])  # m = 1: the foreground


@pytest.mark.parametrize("target", TARGETS)
def test_composite_with_a_float_mask_branch_that_thresholds(target: str) -> None:
    """A mask made by the branch's own ops (the mask image thresholded, as float32) over float images."""
    fg, bg = images(8, (H, W, 3), (H, W, 3), dtype="float32")
    (gray,) = images(9, (H, W), dtype="float32")
    gray[0, :4] = 10.0  # exactly the threshold: not above
    m = (gray > 10.0).astype(np.float64)[..., None]
    expected = (fg * m + bg * (1 - m)).astype(np.float32)
    mask = fkl.Input(2, fkl.Threshold(10.0))
    check(target, (fkl.TensorRead(), fkl.Composite(fkl.Input(1), mask), fkl.TensorWrite()), [fg, bg, gray], [expected])


@pytest.mark.parametrize("target", TARGETS)
def test_branches_with_their_own_geometry(target: str) -> None:
    """The chain resizes its input, the branch crops a larger image to the same size: each folds into its own
    read; the main chain's input read again by a flipped branch (Input(0))."""
    a, b = images(10, (24, 40, 3), (H + 8, W + 6, 3))
    resize = fkl.Resize(W, H, "nearest")
    ops = (
        fkl.TensorRead(),
        resize,
        fkl.Cast("float32"),
        fkl.Sub(fkl.Input(1, fkl.Crop(3, 5, W, H), fkl.Cast("float32"))),
        fkl.Add(fkl.Input(0, fkl.Resize(W, H, "nearest"), fkl.Flip("horizontal"), fkl.Cast("float32"))),
        fkl.TensorWrite(),
    )
    small = fkl.compose(fkl.TensorRead(), resize, fkl.TensorWrite(), target="cpu")(a).astype(np.float64)
    crop = b[5 : 5 + H, 3 : 3 + W].astype(np.float64)
    expected = (small - crop + small[:, ::-1]).astype(np.float32)
    check(target, ops, [a, b], [expected])


@pytest.mark.parametrize("target", TARGETS)
def test_one_read_two_outputs_preview_and_planar_tensor(target: str) -> None:
    """A uint8 preview and a normalised planar float tensor from one read (MidWrite, then TensorSplit)."""
    (a,) = images(11, (H, W, 3))
    ops = (
        fkl.TensorRead(),
        fkl.Resize(16, 9, "linear"),
        fkl.SaturateCast("uint8"),
        fkl.MidWrite(),
        fkl.Cast("float32"),
        fkl.Sub((123.0, 117.0, 104.0)),
        fkl.Mul(1 / 58.0),
        fkl.TensorSplit(),
    )
    preview = fkl.compose(*ops[:3], fkl.TensorWrite(), target="cpu")(a)
    tensor = ((preview.astype(np.float32) - np.float32([123.0, 117.0, 104.0])) * np.float32(1 / 58.0)).transpose(
        2, 0, 1
    )
    check(target, ops, [a], [preview, tensor], tol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
def test_mid_split_and_batches(target: str) -> None:
    """Batches (B, H, W, C) of one size on every input; a planar output along the way."""
    a, b = images(12, (3, H, W, 3), (3, H, W, 3))
    ops = (fkl.TensorRead(), fkl.Max(fkl.Input(1)), fkl.MidSplit(), fkl.Sub(fkl.Input(1)), fkl.TensorWrite())
    top = np.maximum(a, b)
    check(target, ops, [a, b], [top.transpose(0, 3, 1, 2), top - b])


@pytest.mark.parametrize("target", TARGETS)
def test_a_flat_graph_over_a_batch_and_a_one_channel_output(target: str) -> None:
    """A flat graph (no geometry) over batches: one run of pixels across the images; a three-channel and a
    one-channel output of other element types than the inputs."""
    a, b = images(14, (3, H, W, 3), (3, H, W, 3))
    ops = (
        fkl.TensorRead(),
        fkl.Cast("int16"),
        fkl.Sub(fkl.Input(1, fkl.Cast("int16"))),
        fkl.MidWrite(),
        fkl.VectorReduce("Min"),
        fkl.TensorWrite(),
    )
    diff = a.astype(np.int16) - b.astype(np.int16)
    check(target, ops, [a, b], [diff, diff.min(axis=3)])
    if target == "cpu":
        pipe = fkl.compose(*ops, target="cpu")
        pipe(a, b)
        assert _mode(pipe) == "flat"


@pytest.mark.parametrize("target", TARGETS)
def test_out_takes_a_tuple_and_is_written_in_place(target: str) -> None:
    if target == "gpu":
        pytest.skip("the GPU call's out= is covered by test_spec_background_subtraction's shapes")
    a, b = images(13, (H, W), (H, W))
    pipe = fkl.compose(
        fkl.TensorRead(), fkl.Min(fkl.Input(1)), fkl.MidWrite(), fkl.Add(3), fkl.TensorWrite(), target="cpu"
    )
    first, second = np.zeros((H, W), np.uint8), np.zeros((H, W), np.uint8)
    got = pipe(a, b, out=(first, second))
    assert got[0] is first and got[1] is second
    np.testing.assert_array_equal(first, np.minimum(a, b))
    np.testing.assert_array_equal(second, np.minimum(a, b) + 3)


@pytest.mark.gpu
@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
def test_bound_graphs_run_their_bindings_and_overrides() -> None:
    """Bound compose of SPEC §8's background subtraction: everything bound (pipe(), pipe(stream=s)), the
    background alone bound (pipe(frame)), an override of the bound frame; each against numpy."""
    from fklir.runtime.device_buffer import DeviceBuffer

    torch = pytest.importorskip("torch")
    frame, background, other = images(31, (H, W, 3), (H, W, 3), (H, W, 3))

    def expected(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        d = np.abs(x.astype(np.float32) - background.astype(np.float32))
        return d, (d.max(axis=2) > 25.0).astype(np.uint8)

    def ops(read: Any, source: Any, mid: Any, write: Any) -> tuple[Any, ...]:
        return (
            read,
            fkl.Cast("float32"),
            fkl.AbsDiff(fkl.Input(1, fkl.Cast("float32"), source=source)),
            fkl.MidWrite(mid),
            fkl.VectorReduce("Max"),
            fkl.Threshold(25.0),
            fkl.SaturateCast("uint8"),
            fkl.TensorWrite(write),
        )

    x, bg = DeviceBuffer.from_host(frame), DeviceBuffer.from_host(background)
    diff, mask = DeviceBuffer((H, W, 3), "float32"), DeviceBuffer((H, W), "uint8")
    pipe = fkl.compose(*ops(fkl.TensorRead(x), bg, diff, mask), target="gpu")
    assert pipe() == (diff, mask)
    for got, want in zip((diff, mask), expected(frame), strict=True):
        np.testing.assert_array_equal(got.copy_to_host(), want)
    stream = torch.cuda.Stream()
    x.copy_from_host(other)  # new data in the bound buffer: the next launch reads it
    pipe(stream=stream)
    stream.synchronize()
    for got, want in zip((diff, mask), expected(other), strict=True):
        np.testing.assert_array_equal(got.copy_to_host(), want)
    pipe(DeviceBuffer.from_host(frame))  # an override of argument 0 into the bound outputs
    for got, want in zip((diff, mask), expected(frame), strict=True):
        np.testing.assert_array_equal(got.copy_to_host(), want)
    partly = fkl.compose(*ops(fkl.TensorRead(), bg, None, None), target="gpu")
    made = partly(DeviceBuffer.from_host(other))
    for got, want in zip(made, expected(other), strict=True):
        np.testing.assert_array_equal(got.copy_to_host(), want)


def test_branch_values_are_runtime_values(monkeypatch: pytest.MonkeyPatch) -> None:
    """New values in a branch (an Add, a Crop's rect) and a new Blend alpha: no IR is built, nothing compiles,
    and each pipeline of the structure computes with its own values."""
    from fklir.backend import build
    from fklir.frontend import lowering

    a, b = images(14, (H, W), (H + 4, W + 4), dtype="float32")

    def pipe(alpha: float, offset: float, x: int) -> Any:
        branch = fkl.Input(1, fkl.Crop(x, 2, W, H), fkl.Add(offset))
        return fkl.compose(fkl.TensorRead(), fkl.Blend(branch, alpha), fkl.TensorWrite(), target="cpu")

    def expected(alpha: float, offset: float, x: int) -> np.ndarray:
        crop = (b[2 : 2 + H, x : x + W] + np.float32(offset)).astype(np.float64)
        return (a.astype(np.float64) * alpha + crop * (1 - alpha)).astype(np.float32)

    first = pipe(0.25, 1.0, 0)
    np.testing.assert_allclose(first(a, b), expected(0.25, 1.0, 0), rtol=1e-6, atol=1e-5)
    compiles = build.STATS.compiles

    def no_ir(*args: object) -> None:
        raise AssertionError("a new value set built IR")

    monkeypatch.setattr(lowering, "lower_graph", no_ir)
    for alpha, offset, x in ((0.75, -2.5, 3), (0.5, 10.0, 4)):
        np.testing.assert_allclose(pipe(alpha, offset, x)(a, b), expected(alpha, offset, x), rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(first(a, b), expected(0.25, 1.0, 0), rtol=1e-6, atol=1e-5)  # its own values still
    assert build.STATS.compiles == compiles
    with pytest.raises(ValueError, match=r"Crop: rect .* outside"):
        pipe(0.5, 0.0, 6)(a, b)


def test_compose_orders_a_graphs_descriptors_as_its_lowering_marks_them() -> None:
    """The descriptors' order that compose keys a graph by (and packs its values by) is frontend.ops'
    graph_descriptors, which the lowering marks its ops with: nested branches, several per op, MidWrite."""
    from fklir.frontend import ops as fops

    inner = fkl.Input(2, fkl.Mul(3.0))
    ops = (
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.Composite(fkl.Input(1, fkl.Cast("float32"), fkl.Add(fkl.Input(0, fkl.Cast("float32")))), inner),
        fkl.MidWrite(),
        fkl.Blend(fkl.Input(1, fkl.Cast("float32"), fkl.Sub(inner)), 0.5),
        fkl.TensorWrite(),
    )
    pipe = fkl.compose(*ops, target="cpu")
    assert pipe._descriptors == fops.graph_descriptors(pipe.ops)
    assert len(pipe._descriptors) == 13


def test_one_branch_object_used_twice_is_another_structure_than_two_equal_ones() -> None:
    """fkl-cse merges a branch used twice (one descriptor: one set of values) but not two branches that are equal
    now (their values are runtime values): the two graphs must not share a plan."""
    a, b = images(22, (H, W), (H, W), dtype="float32")
    shared = fkl.Input(1, fkl.Add(1.0))
    once = fkl.compose(fkl.TensorRead(), fkl.Add(shared), fkl.Mul(shared), fkl.TensorWrite(), target="cpu")
    fb = b + np.float32(1.0)
    np.testing.assert_array_equal(once(a, b), (a + fb) * fb)
    assert once.ir(("float32", (H, W)), ("float32", (H, W))).count("fkl.read") == 2
    two = fkl.compose(
        fkl.TensorRead(),
        fkl.Add(fkl.Input(1, fkl.Add(2.0))),
        fkl.Mul(fkl.Input(1, fkl.Add(7.0))),
        fkl.TensorWrite(),
        target="cpu",
    )
    np.testing.assert_array_equal(two(a, b), (a + (b + np.float32(2.0))) * (b + np.float32(7.0)))


@pytest.mark.parametrize("target", TARGETS)
def test_list_calls_take_every_input_as_a_list(target: str) -> None:
    """Every argument a list of B same-size images (each list its own size): one kernel over pointer tables,
    outputs (B, H, W[, C]); 3 and 5 images share the kernel compiled for their capacity."""
    from fklir.backend import build

    ops = (
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.AbsDiff(fkl.Input(1, fkl.Resize(W, H, "nearest"), fkl.Cast("float32"))),
        fkl.MidWrite(),
        fkl.VectorReduce("Max"),
        fkl.TensorWrite(),
    )
    pipe = fkl.compose(*ops, target=target)
    for count in (3, 5):
        frames = images(30 + count, *[(H, W, 3)] * count)
        backgrounds = images(40 + count, *[(H + 6, W + 4, 3)] * count)
        if count == 5:
            compiles = build.STATS.compiles
        if target == "cpu":
            diff, top = pipe(frames, backgrounds)
        else:
            from fklir.runtime.device_buffer import DeviceBuffer

            made = pipe([DeviceBuffer.from_host(f) for f in frames], [DeviceBuffer.from_host(b) for b in backgrounds])
            diff, top = (m.copy_to_host() for m in made)
        for b in range(count):
            alone = fkl.compose(*ops, target="cpu")(frames[b], backgrounds[b])
            np.testing.assert_array_equal(diff[b], alone[0])
            np.testing.assert_array_equal(top[b], alone[1])
        assert diff.shape == (count, H, W, 3) and top.shape == (count, H, W)
    assert build.STATS.compiles == compiles


def test_list_calls_refuse_mixed_arguments() -> None:
    pipe = fkl.compose(fkl.TensorRead(), fkl.Add(fkl.Input(1)), fkl.TensorWrite(), target="cpu")
    a, b, c = images(23, (H, W), (H, W), (H, W + 1))
    with pytest.raises(
        ValueError, match=r"every input as a list of one length, got argument 0: a list of 2, argument 1: an array"
    ):
        pipe([a, b], b)
    with pytest.raises(ValueError, match=r"argument 0: a list of 2, argument 1: a list of 1"):
        pipe([a, b], [b])
    with pytest.raises(
        ValueError, match=r"Input\(1\) input: list image 1 is uint8 \(17, 34\), image 0 is uint8 \(17, 33\)"
    ):
        pipe([a, b], [b, c])


@pytest.mark.parametrize("target", TARGETS)
def test_crop_lists_apply_to_the_branch_they_are_in(target: str) -> None:
    """Each branch crops its own input with its own rects (as many as the chain's): one output plane per rect;
    3 and 5 rects share the kernel compiled for their capacity."""
    from fklir.backend import build

    a, b = images(70, (40, 50, 3), (45, 52, 3))

    def pipe(ours: list[tuple[int, int, int, int]], theirs: list[tuple[int, int, int, int]]) -> tuple[Any, ...]:
        branch = fkl.Input(1, fkl.Crop(theirs), fkl.Resize(9, 7, "nearest"))
        return (fkl.TensorRead(), fkl.Crop(ours), fkl.Resize(9, 7, "nearest"), fkl.AbsDiff(branch), fkl.TensorWrite())

    for count in (3, 5):
        ours = [(2 * k, k, 20 + k, 15) for k in range(count)]
        theirs = [(k, 3 * k, 11, 30 - k) for k in range(count)]
        if count == 5:
            compiles = build.STATS.compiles
        got = run(target, pipe(ours, theirs), a, b)[0]
        assert got.shape == (count, 7, 9, 3)
        for k in range(count):
            one = run("cpu", pipe([ours[k]], [theirs[k]]), a, b)[0]
            np.testing.assert_array_equal(got[k], one[0])
    assert build.STATS.compiles == compiles
    with pytest.raises(ValueError, match=r"Crop: the rects give planes of different sizes"):
        fkl.compose(
            fkl.TensorRead(),
            fkl.Crop([(0, 0, 4, 4), (0, 0, 5, 5)]),
            fkl.Add(fkl.Input(1, fkl.Crop([(0, 0, 4, 4)] * 2))),
            fkl.TensorWrite(),
            target="cpu",
        )(a, b)


@pytest.mark.parametrize("target", TARGETS)
def test_per_image_values_in_a_graph(target: str) -> None:
    """MixUp-like: sample b of a batch blended with its partner at its own brightness (fkl.per_image rows in a
    branch and in the chain); batches of 3 and 5 share the kernel compiled for their capacity."""
    from fklir.backend import build

    for count in (3, 5):
        a, b = images(80 + count, (count, H, W, 3), (count, H, W, 3), dtype="float32")
        gains = np.linspace(0.5, 1.5, count)
        offsets = np.arange(count, dtype=np.float64)
        ops = (
            fkl.TensorRead(),
            fkl.Add(fkl.per_image(offsets)),
            fkl.Blend(fkl.Input(1, fkl.Mul(fkl.per_image(gains))), 0.25),
            fkl.TensorWrite(),
        )
        if count == 5:
            compiles = build.STATS.compiles
        got = run(target, ops, a, b)[0]
        chain = (a + offsets.astype(np.float32)[:, None, None, None]).astype(np.float64)
        branch = (b * gains.astype(np.float32)[:, None, None, None]).astype(np.float64)
        np.testing.assert_allclose(got, (chain * 0.25 + branch * 0.75).astype(np.float32), rtol=1e-6, atol=1e-5)
        np.testing.assert_array_equal(got, interpret(ops, a, b)[0].reshape(got.shape))
    assert build.STATS.compiles == compiles
    with pytest.raises(ValueError, match=r"Mul: per_image gives 2 rows for a batch of 5 images"):
        fkl.compose(
            fkl.TensorRead(), fkl.Add(fkl.Input(1, fkl.Mul(fkl.per_image([1.0, 2.0])))), fkl.TensorWrite(), target="cpu"
        )(a, b)


# ---- bad input: each a ValueError or TypeError naming the op and the values --------------------------------


def test_a_missing_or_extra_argument_names_the_inputs() -> None:
    a, b = images(15, (H, W), (H, W))
    pipe = fkl.compose(fkl.TensorRead(), fkl.Add(fkl.Input(1)), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=r"reads 2 input\(s\).*the call gave 1"):
        pipe(a)
    with pytest.raises(ValueError, match=r"reads 2 input\(s\).*the call gave 3"):
        pipe(a, b, b)


def test_inputs_of_other_sizes_name_the_joining_op_and_both_sizes() -> None:
    a, b = images(16, (H, W, 3), (H, W + 1, 3))
    pipe = fkl.compose(fkl.TensorRead(), fkl.AbsDiff(fkl.Input(1)), fkl.TensorWrite(), target="cpu")
    with pytest.raises(
        ValueError, match=rf"AbsDiff: the branch Input\(1\) makes {W + 1}x{H} pixels where the chain has {W}x{H}"
    ):
        pipe(a, b)


def test_inputs_of_other_batch_sizes_are_refused() -> None:
    a, b = images(17, (2, H, W, 3), (3, H, W, 3))
    pipe = fkl.compose(fkl.TensorRead(), fkl.Add(fkl.Input(1)), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match=r"one batch size.*argument 0: 2, argument 1: 3"):
        pipe(a, b)


def test_joined_types_that_differ_are_a_located_error_naming_both_ops() -> None:
    a, b = images(18, (H, W, 3), (H, W, 3))
    pipe = fkl.compose(fkl.TensorRead(), fkl.Cast("float32"), fkl.Sub(fkl.Input(1)), fkl.TensorWrite(), target="cpu")
    with pytest.raises(
        ValueError, match=r"test_dag.py:\d+:1: error: 'fkl.join' joins .*xf32.*'fkl.cast'.*xui8.*'fkl.read'"
    ):
        pipe(a, b)


def test_a_branch_that_skips_an_argument_is_refused_at_compose() -> None:
    with pytest.raises(ValueError, match=r"reads call argument 2 but no branch reads argument\(s\) \[1\]"):
        fkl.compose(fkl.TensorRead(), fkl.Add(fkl.Input(2)), fkl.TensorWrite(), target="cpu")


def test_bad_branches_and_ops_are_refused_at_compose() -> None:
    with pytest.raises(TypeError, match="Pow: takes a value, not a branch"):
        fkl.Pow(fkl.Input(1))
    with pytest.raises(ValueError, match="argument index must be an int >= 0"):
        fkl.Input(-1)
    with pytest.raises(TypeError, match="a branch holds geometry and element ops"):
        fkl.Input(1, fkl.TensorRead())
    with pytest.raises(TypeError, match="Blend: the first argument is a branch"):
        fkl.Blend(3.0, 0.5)
    with pytest.raises(ValueError, match=r"Blend: takes one alpha, a number \(not NaN\), got \[0\.5, 0\.5\]"):
        fkl.Blend(fkl.Input(1), (0.5, 0.5))
    with pytest.raises(ValueError, match=r"Blend: takes one alpha, a number \(not NaN\), got \[nan\]"):
        fkl.Blend(fkl.Input(1), float("nan"))
    with pytest.raises(ValueError, match=r"Resize in the branch .* must come right after its read"):
        fkl.compose(fkl.TensorRead(), fkl.Add(fkl.Input(1, fkl.Cast("float32"), fkl.Resize(4, 4))), fkl.TensorWrite())
    two, three = [(0, 0, 2, 2)] * 2, [(0, 0, 2, 2)] * 3
    with pytest.raises(ValueError, match=r"the graph's Crop lists give \[2, 3\] rects"):
        fkl.compose(fkl.TensorRead(), fkl.Crop(two), fkl.Add(fkl.Input(1, fkl.Crop(three))), fkl.TensorWrite())


def test_integer_division_of_two_images_asks_for_a_cast() -> None:
    a, b = images(19, (H, W), (H, W))
    pipe = fkl.compose(fkl.TensorRead(), fkl.Div(fkl.Input(1)), fkl.TensorWrite(), target="cpu")
    with pytest.raises(ValueError, match="div of two uint8 images: an integer divisor may be 0; Cast to float first"):
        pipe(a, b)


def test_a_wrong_out_names_the_output() -> None:
    a, b = images(20, (H, W), (H, W))
    pipe = fkl.compose(
        fkl.TensorRead(), fkl.Add(fkl.Input(1)), fkl.MidWrite(), fkl.Cast("float32"), fkl.TensorWrite(), target="cpu"
    )
    with pytest.raises(ValueError, match=r"out: the graph writes 2 output\(s\)"):
        pipe(a, b, out=np.zeros((H, W), np.uint8))
    with pytest.raises(ValueError, match=r"out\[1\]: expected a float32 array of shape \(17, 33\), got uint8"):
        pipe(a, b, out=(np.zeros((H, W), np.uint8), np.zeros((H, W), np.uint8)))


def test_the_graph_shows_in_its_ir() -> None:
    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.AbsDiff(fkl.Input(1, fkl.Resize(8, 8, "nearest"))),
        fkl.MidWrite(),
        fkl.TensorWrite(),
        target="cpu",
    )
    text = pipe.ir(("uint8", (8, 8, 3)), ("uint8", (16, 16, 3)))
    assert 'fkl.read "in1"' in text and "fkl.join absdiff" in text and '"out1"' in text and "fkl.resize" in text
    assert "graph_pixel" in pipe.source_for(("uint8", (8, 8, 3)), ("uint8", (16, 16, 3)))


@pytest.mark.parametrize("target", TARGETS)
def test_identical_branches_are_read_once(target: str) -> None:
    """fkl-cse: a branch repeated (and one that re-reads the chain's input as it is) becomes one read."""
    a, b = images(21, (H, W, 3), (H, W, 3))
    branch = fkl.Input(1, fkl.Cast("float32"))
    ops = (
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.Add(branch),
        fkl.Mul(fkl.Input(1, fkl.Cast("float32"))),
        fkl.Sub(fkl.Input(0, fkl.Cast("float32"))),
        fkl.TensorWrite(),
    )
    text = fkl.compose(*ops, target="cpu").ir(("uint8", (H, W, 3)), ("uint8", (H, W, 3)))
    assert text.count("fkl.read") == 2 and text.count("fkl.cast") == 2, text
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    check(target, ops, [a, b], [(fa + fb) * fb - fa])


def _mode(pipe: Any) -> str:
    ((plan, _values),) = pipe._plans.values()
    return plan.layout.mode


def test_graphs_without_geometry_run_flat_and_others_sampled() -> None:
    """A graph of packed single images whose branches fold no geometry and whose ops take no per-image values is
    one run of pixels (flat: 16-byte vectors on the GPU); geometry in any branch, a planar output, a list call or
    per-image values keep the per-pixel sampled kernel."""
    a, b = images(23, (H, W, 3), (H, W, 3))

    def mode(*ops: Any, inputs: Sequence[Any] = (a, b)) -> str:
        pipe = fkl.compose(fkl.TensorRead(), *ops, target="cpu")
        pipe(*inputs)
        return _mode(pipe)

    joined = fkl.AbsDiff(fkl.Input(1, fkl.Cast("float32")))
    assert mode(fkl.Cast("float32"), joined, fkl.MidWrite(), fkl.VectorReduce("Max"), fkl.TensorWrite()) == "flat"
    assert mode(fkl.Cast("float32"), joined, fkl.TensorSplit()) == "sampled"
    assert (
        mode(fkl.Cast("float32"), fkl.Add(fkl.Input(1, fkl.Resize(W, H), fkl.Cast("float32"))), fkl.TensorWrite())
        == "sampled"
    )
    assert mode(fkl.Add(fkl.Input(1)), fkl.TensorWrite(), inputs=([a, a], [b, b])) == "sampled"
    rows = fkl.per_image([[1.0, 2.0, 3.0]])
    assert mode(fkl.Cast("float32"), fkl.Add(rows), joined, fkl.TensorWrite(), inputs=(a[None], b[None])) == "sampled"


def test_a_flat_graph_on_misaligned_arrays_clears_the_alignment_flag() -> None:
    """A flat DAG kernel moves every input and output in 16-byte vectors only where all their pointers are
    aligned: one misaligned further input clears the header's flag (the GPU kernel then goes pixel by pixel),
    and the results are the same."""
    a, b = images(29, (H, W, 3), (H, W, 3))
    pipe = fkl.compose(fkl.TensorRead(), fkl.Max(fkl.Input(1)), fkl.TensorWrite(), target="cpu")
    aligned = pipe(a, b)
    ((plan, _values),) = pipe._plans.values()
    assert plan.header.aligned == (
        a.ctypes.data % 16 == 0 and aligned.ctypes.data % 16 == 0 and b.ctypes.data % 16 == 0
    )
    buffer = np.empty(b.size + 1, np.uint8)
    shifted = buffer[1:].reshape(b.shape)
    shifted[...] = b
    assert shifted.ctypes.data % 16 != 0 and shifted.flags.c_contiguous
    np.testing.assert_array_equal(pipe(a, shifted), aligned)
    assert not plan.header.aligned
    np.testing.assert_array_equal(aligned, np.maximum(a, b))


@pytest.mark.gpu
@pytest.mark.skipif(not fkl.gpu_available(), reason="needs a CUDA GPU")
@pytest.mark.parametrize("offset", [0, 1])
def test_flat_graphs_on_the_gpu_over_whole_and_partial_tiles(offset: int) -> None:
    """The flat GPU kernel: an image of many whole tiles and a partial one (aligned: through shared memory in
    16-byte vectors), and the same with a misaligned input (pixel by pixel), against numpy."""
    torch = pytest.importorskip("torch")
    h, w = 257, 263
    frame, background = images(37, (h, w, 3), (h, w, 3))
    ops = spec_background_subtraction()
    pipe = fkl.compose(*ops, target="gpu")
    x = torch.from_numpy(frame).cuda()
    flat = torch.empty(background.size + offset, dtype=torch.uint8, device="cuda")
    y = flat[offset:].view(h, w, 3)
    y.copy_(torch.from_numpy(background))
    diff, mask = pipe(x, y)
    expected = np.abs(frame.astype(np.float32) - background.astype(np.float32))
    assert _mode(pipe) == "flat"
    np.testing.assert_array_equal(diff.cpu().numpy(), expected)
    np.testing.assert_array_equal(mask.cpu().numpy(), (expected.max(axis=2) > 25).astype(np.uint8))


def test_divergent_chains_stay_linear() -> None:
    with pytest.raises(ValueError, match=r"compose_divergent: Add makes a graph \(SPEC §8\)"):
        fkl.compose_divergent(
            [1, 2],
            [fkl.TensorRead(), fkl.Add(fkl.Input(1)), fkl.TensorWrite()],
            [fkl.TensorRead(), fkl.TensorWrite()],
            target="cpu",
        )


def test_a_graph_pickles_with_its_ops_and_values() -> None:
    """DataLoader workers receive pipelines pickled: a graph travels as its ops (one branch object stays one)."""
    import pickle

    a, b = images(24, (H, W, 3), (H, W, 3))
    shared = fkl.Input(1, fkl.Cast("float32"), fkl.Mul(0.5))
    pipe = fkl.compose(
        fkl.TensorRead(), fkl.Cast("float32"), fkl.Add(shared), fkl.Max(shared), fkl.TensorWrite(), target="cpu"
    )
    before = pipe(a, b)
    again = pickle.loads(pickle.dumps(pipe))
    np.testing.assert_array_equal(again(a, b), before)
    half = b.astype(np.float32) * np.float32(0.5)
    np.testing.assert_array_equal(before, np.maximum(a.astype(np.float32) + half, half))


def test_repeated_calls_take_the_warm_path_with_each_calls_arrays() -> None:
    """A call on arrays of the dtypes and shapes a full call checked launches with the new arrays (and the
    given outputs), and a wrong `out` still meets the full call's error."""
    pipe = fkl.compose(
        fkl.TensorRead(), fkl.Sub(fkl.Input(1)), fkl.MidWrite(), fkl.Max(fkl.Input(2)), fkl.TensorWrite(), target="cpu"
    )
    for seed in range(3):
        a, b, c = images(50 + seed, (H, W, 3), (H, W, 3), (H, W, 3), dtype="float32")
        first, second = pipe(a, b, c)
        np.testing.assert_array_equal(first, a - b)
        np.testing.assert_array_equal(second, np.maximum(a - b, c))
    out = (np.empty((H, W, 3), np.float32), np.empty((H, W, 3), np.float32))
    got = pipe(a, b, c, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    np.testing.assert_array_equal(out[1], np.maximum(a - b, c))
    with pytest.raises(ValueError, match=r"out\[1\]: expected a float32 array of shape \(17, 33, 3\), got float64"):
        pipe(a, b, c, out=(out[0], np.empty((H, W, 3))))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("dtype", ["int16", "uint16", "int32", "float16", "bfloat16", "float64"])
@pytest.mark.parametrize("mask_dtype", ["uint8", "bool", "float16", "float32"])
def test_blend_and_composite_on_every_type_and_mask(target: str, dtype: str, mask_dtype: str) -> None:
    """Blend and Composite in float64, rounded once to each chain type (bfloat16 made inside the chain), every
    kind of mask: against the interpreter, and against numpy where numpy holds the type. On the GPU over whole
    tiles of the flat kernel (16-byte vectors through shared memory) and a partial one."""
    h, w = (H, W) if target == "cpu" else (67, 131)
    a, b = images(60, (h, w, 2), (h, w, 2))
    (m,) = images(61, (h, w))
    mask = fkl.Input(
        2,
        *((fkl.Threshold(127.0), fkl.Cast("bool")) if mask_dtype == "bool" else ()),
        *((fkl.Cast(mask_dtype), fkl.Mul(1 / 255)) if mask_dtype.startswith("float") else ()),
    )
    ops = (
        fkl.TensorRead(),
        fkl.Cast(dtype),
        fkl.Blend(fkl.Input(1, fkl.Cast(dtype)), 0.3),
        fkl.Composite(fkl.Input(1, fkl.Cast(dtype)), mask),
        fkl.Cast("float64"),
        fkl.TensorWrite(),
    )
    got = run(target, ops, a, b, m)[0]
    reference = interpret(ops, a, b, m)[0].reshape(got.shape)
    # nvcc contracts a * m + b * (1 - m) into FMAs, g++ (-ffp-contract=off) and numpy do not: a last-bit
    # difference, which an integer chain's rounding makes one unit at most
    step = {"float16": 2.0**-10, "bfloat16": 2.0**-7, "float64": 2.0**-52}.get(dtype)
    gpu = target == "gpu"
    tolerance = dict(rtol=step if gpu and step else 0, atol=1 if gpu and step is None else 0)
    np.testing.assert_allclose(got, reference, **tolerance)
    if dtype == "bfloat16":
        return
    weight = {"uint8": m / 255.0, "bool": (m > 127).astype(np.float64)}.get(mask_dtype)
    if weight is None:
        weight = (m.astype(mask_dtype) * np.asarray(1 / 255, mask_dtype)).astype(np.float64)
    info = np.iinfo(dtype) if dtype.startswith(("int", "uint")) else None

    def rounded(v: np.ndarray) -> np.ndarray:
        if info is not None:
            return np.rint(np.clip(v, info.min, info.max)).astype(dtype).astype(np.float64)
        return v.astype(dtype).astype(np.float64)

    fa, fb = a.astype(np.float64), b.astype(np.float64)
    blended = rounded(fa * 0.3 + fb * (1 - 0.3))
    expected = rounded(blended * weight[..., None] + fb * (1 - weight[..., None]))
    np.testing.assert_allclose(got, expected, **tolerance)
