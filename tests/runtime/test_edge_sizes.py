"""SPEC §3 "Edge inputs": images with a zero dimension (0 x W, H x 0, B = 0) through every kind of op,
border mode, geometry and write, on both targets. The output has the shape the chain implies and
nothing is read or launched for it; a constant border makes its value out of an empty image without
reading it; every other way of making pixels out of an empty image is a ValueError naming the op
and the size (numpy.pad and cv2.resize refuse those too).

The GPU cases run on a device (marked gpu); the GPU host path's decisions (no launch for an empty
output, CUDA's grid limits refused before a launch) are also checked here over the fake driver.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.runtime import cuda_driver
from fklir.runtime.launch import LAUNCHES
from tests.runtime import test_host_path

TARGETS = [
    "cpu",
    pytest.param(
        "gpu", marks=[pytest.mark.gpu, pytest.mark.skipif(not cuda_driver.gpu_available(), reason="needs a GPU")]
    ),
]
RNG = np.random.default_rng(13)
EMPTY_SHAPES = [(0, 0, 3), (0, 5, 3), (5, 0, 3), (0, 5), (7, 0), (0, 4, 6, 3), (2, 0, 7, 3), (3, 5, 0)]
BORDERS_THAT_REPEAT = ["replicate", "reflect", "reflect101", "wrap"]

fake = test_host_path.fake  # (driver, torch): the fake driver and torch, as a fixture


def _run(target: str, ops: list[Any], x: Any, read: Any = None, write: Any = None) -> Any:
    """The chain on `x` (an array or a list of arrays) on `target`, results back as numpy arrays."""
    pipe = fkl.compose(read or fkl.TensorRead(), *ops, write or fkl.TensorWrite(), target=target)
    if target == "cpu":
        return pipe(x)
    device = [fkl.DeviceBuffer.from_host(a) for a in x] if isinstance(x, list) else fkl.DeviceBuffer.from_host(x)
    out = pipe(device)
    return tuple(o.copy_to_host() for o in out) if isinstance(out, tuple) else out.copy_to_host()


def _empty(shape: tuple[int, ...], dtype: Any = np.uint8) -> np.ndarray:
    return np.zeros(shape, dtype)


def _geometry(shape: tuple[int, ...]) -> tuple[int, int, int, int, bool]:
    """(planes, height, width, channels, batched) of a packed input shape, as TensorRead reads it."""
    if len(shape) == 2:
        return 1, shape[0], shape[1], 1, False
    if len(shape) == 3 and 2 <= shape[2] <= 4:
        return 1, shape[0], shape[1], shape[2], False
    if len(shape) == 3:
        return shape[0], shape[1], shape[2], 1, True
    return shape[0], shape[1], shape[2], shape[3], True


def _packed(b: int, h: int, w: int, c: int, batched: bool) -> tuple[int, ...]:
    return ((b,) if batched else ()) + (h, w) + ((c,) if c > 1 else ())


# ---- empty in, empty out -----------------------------------------------------------------------------

# (ops, output channels, output dtype): one of each kind of compute op
COMPUTE = {
    "mul": ([fkl.Mul(2)], None, np.uint8),
    "cast_div": ([fkl.Cast("float32"), fkl.Div(3.0)], None, np.float32),
    "saturate": ([fkl.Cast("float32"), fkl.Mul(300.0), fkl.SaturateCast("uint8")], None, np.uint8),
    "reorder_addlast": ([fkl.VectorReorder(0, 0), fkl.AddLast(9)], 3, np.uint8),
    "reduce": ([fkl.VectorReduce("Max")], 1, np.uint8),
    "discard": ([fkl.Discard(1)], 1, np.uint8),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", EMPTY_SHAPES)
@pytest.mark.parametrize("chain", sorted(COMPUTE))
def test_compute_chains_on_empty_images_give_empty_outputs(target: str, shape: tuple[int, ...], chain: str) -> None:
    ops, channels, dtype = COMPUTE[chain]
    b, h, w, c, batched = _geometry(shape)
    out = _run(target, ops, _empty(shape))
    assert out.shape == _packed(b, h, w, channels or c, batched) and out.dtype == dtype and out.size == 0


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", [(0, 5, 3), (5, 0, 4), (0, 2, 3, 3), (4, 0, 0, 2)])
def test_every_write_kind_gives_the_empty_shape_the_chain_implies(target: str, shape: tuple[int, ...]) -> None:
    b, h, w, c, batched = _geometry(shape)
    lead = (b,) if batched else ()
    x = _empty(shape)
    assert _run(target, [fkl.Mul(3)], x, write=fkl.TensorSplit()).shape == (*lead, c, h, w)
    assert _run(target, [fkl.Mul(3)], x, write=fkl.TensorTSplit()).shape == (c, b, h, w)
    split = _run(target, [fkl.Mul(3)], x, write=fkl.SplitWrite())
    assert len(split) == c and all(o.shape == (*lead, h, w) for o in split)


@pytest.mark.parametrize("target", TARGETS)
def test_planar_reads_and_list_inputs_of_empty_images(target: str) -> None:
    packed = _run(target, [fkl.Mul(2)], _empty((3, 0, 5)), read=fkl.TensorPack(3))
    assert packed.shape == (0, 5, 3)
    assert _run(target, [fkl.Mul(2)], _empty((2, 3, 4, 0)), read=fkl.TensorPack(3)).shape == (2, 4, 0, 3)
    assert _run(target, [fkl.Mul(2)], [_empty((0, 5, 3))] * 3).shape == (3, 0, 5, 3)
    with pytest.raises(ValueError, match=r"^Resize: cannot make a 4x4 image from the empty 5x0 image"):
        _run(target, [fkl.Resize(4, 4)], [_empty((0, 5, 3))] * 2)


@pytest.mark.parametrize("target", TARGETS)
def test_geometry_on_a_batch_of_no_images_keeps_its_plane_size(target: str) -> None:
    batch = _empty((0, 6, 9, 3))
    assert _run(target, [fkl.Resize(4, 5)], batch).shape == (0, 5, 4, 3)
    assert _run(target, [fkl.Resize(4, 5, "nearest"), fkl.Mul(2)], _empty((0, 0, 9, 3))).shape == (0, 5, 4, 3)
    assert _run(target, [fkl.Crop(1, 2, 3, 4)], batch).shape == (0, 4, 3, 3)
    warp = [fkl.Warping([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0]], 7, 3)]
    assert _run(target, warp, batch).shape == (0, 3, 7, 3)
    assert _run(target, [fkl.Deinterlace("linear")], batch).shape == (0, 6, 9, 3)
    with pytest.raises(ValueError, match=r"^Crop: 2 rects for 0 input planes"):
        _run(target, [fkl.Crop([(0, 0, 2, 2), (1, 1, 2, 2)])], batch)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", [(0, 7, 3), (5, 0), (2, 0, 0, 3)])
def test_size_preserving_geometry_of_an_empty_image_is_empty(target: str, shape: tuple[int, ...]) -> None:
    b, h, w, c, batched = _geometry(shape)
    out = _run(target, [fkl.Deinterlace("blend")], _empty(shape))
    assert out.shape == _packed(b, h, w, c, batched) and out.dtype == np.float32


# ---- a constant border makes pixels out of nothing ------------------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape", [(0, 0, 3), (0, 5, 3), (5, 0, 3), (2, 0, 7, 3)])
def test_a_constant_border_of_an_empty_image_is_all_its_value(target: str, shape: tuple[int, ...]) -> None:
    """On the GPU an empty DeviceBuffer's pointer is NULL, so a read of the source would fault."""
    b, _, _, _, batched = _geometry(shape)
    value = (7.0, 200.0, 31.0)
    border = fkl.BorderReader("constant", value)
    out = _run(target, [border, fkl.Crop(-2, -1, 5, 4)], _empty(shape))
    np.testing.assert_array_equal(out, np.broadcast_to(np.array(value, np.uint8), _packed(b, 4, 5, 3, batched)))
    # numpy.pad agrees: a constant pad of an empty image is all the constant
    np.testing.assert_array_equal(np.pad(_empty((0, 3)), ((2, 2), (0, 0)), constant_values=7), np.full((4, 3), 7))
    resized = _run(
        target,
        [border, fkl.Crop(3, 3, 2, 3), fkl.Resize(6, 5, "nearest"), fkl.Cast("float32"), fkl.Mul(0.5)],
        _empty(shape),
    )
    np.testing.assert_array_equal(resized, np.broadcast_to(np.float32(value) * 0.5, _packed(b, 5, 6, 3, batched)))
    warp = [border, fkl.Warping([[2.0, 0.0, 1.0], [0.0, 1.0, -3.0]], 9, 4)]
    np.testing.assert_array_equal(
        _run(target, warp, _empty(shape)), np.broadcast_to(np.float32(value), (*(b,) * batched, 4, 9, 3))
    )


@pytest.mark.parametrize("target", TARGETS)
def test_a_constant_border_under_a_list_of_rects_makes_one_plane_per_rect(target: str) -> None:
    ops = [fkl.BorderReader("constant", 5), fkl.Crop([(0, 0, 3, 2), (-4, 9, 3, 2)]), fkl.Cast("int16"), fkl.Sub(9)]
    out = _run(target, ops, _empty((0, 4)))
    np.testing.assert_array_equal(out, np.full((2, 2, 3), -4, np.int16))


def test_a_constant_border_never_reads_the_empty_image(tmp_path: Any) -> None:
    """The empty input sits at an inaccessible page, so a read would kill the process."""
    script = textwrap.dedent(
        """
        import mmap
        import numpy as np
        import fklir as fkl

        page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, prot=0)
        for shape in [(0, 4, 3), (4, 0, 3), (0, 0, 3), (2, 0, 4, 3)]:
            x = np.ndarray(shape=shape, dtype=np.uint8, buffer=page)
            for geometry in (fkl.Crop(-3, -3, 33, 9), fkl.Warping([[1.0, 0.5, 0.0], [0.0, 1.0, 0.0]], 33, 9)):
                pipe = fkl.compose(fkl.TensorRead(), fkl.BorderReader("constant", (1, 2, 3)), geometry,
                                   fkl.TensorWrite(), target="cpu")
                out = pipe(x)
                assert out.shape[-3:] == (9, 33, 3) and (out == np.array([1, 2, 3], out.dtype)).all(), out
        print("read nothing")
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0 and done.stdout.strip() == "read nothing", (done.returncode, done.stderr[-2000:])


# ---- everything else refuses to make pixels out of nothing -------------------------------------------


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("mode", BORDERS_THAT_REPEAT)
@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0, 3), (2, 0, 7, 3)])
def test_borders_that_repeat_pixels_refuse_an_empty_image(target: str, mode: str, shape: tuple[int, ...]) -> None:
    _, h, w, _, _ = _geometry(shape)
    with pytest.raises(ValueError, match=rf"^BorderReader\('{mode}'\): cannot extend the empty {w}x{h} image to 4x4"):
        _run(target, [fkl.BorderReader(mode), fkl.Crop(-2, -2, 4, 4)], _empty(shape))
    warp = [fkl.BorderReader(mode), fkl.Warping([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], 5, 2)]
    with pytest.raises(ValueError, match=rf"^BorderReader\('{mode}'\): cannot extend the empty {w}x{h} image to 5x2"):
        _run(target, warp, _empty(shape))
    numpy_mode = {"replicate": "edge", "reflect": "symmetric", "reflect101": "reflect", "wrap": "wrap"}[mode]
    with pytest.raises(ValueError, match="empty"):  # the reference refuses as well
        np.pad(_empty((h, w)), 2, mode=numpy_mode)  # pyright: ignore[reportArgumentType, reportCallIssue]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("interp", ["nearest", "linear"])
@pytest.mark.parametrize(("shape", "dtype"), [((0, 0, 3), np.uint8), ((0, 5), np.float32), ((5, 0, 3), np.uint8)])
def test_resize_refuses_an_empty_image(target: str, interp: str, shape: tuple[int, ...], dtype: Any) -> None:
    cv2 = pytest.importorskip("cv2")
    _, h, w, _, _ = _geometry(shape)
    x = _empty(shape, dtype)
    with pytest.raises(ValueError, match=rf"^Resize: cannot make a 4x3 image from the empty {w}x{h} image$"):
        _run(target, [fkl.Resize(4, 3, interp)], x)
    preserve = fkl.Resize(4, 3, interp, "preserve", background=0)
    with pytest.raises(ValueError, match=rf"^Resize: cannot make a 4x3 image from the empty {w}x{h} image$"):
        _run(target, [preserve], x)
    with pytest.raises(cv2.error):
        cv2.resize(x, (4, 3), interpolation=cv2.INTER_NEAREST if interp == "nearest" else cv2.INTER_LINEAR)


@pytest.mark.parametrize("target", TARGETS)
def test_geometry_without_a_border_refuses_an_empty_image(target: str) -> None:
    with pytest.raises(ValueError, match=r"^Warping: cannot make a 5x3 image from the empty 0x3 image$"):
        _run(target, [fkl.Warping([[1.0, 0.0, 1.0], [0.0, 1.0, 2.0]], 5, 3)], _empty((3, 0), np.float32))
    with pytest.raises(ValueError, match=r"^Crop: rect \[0, 0, 1, 1\] leaves the 4x0 image"):
        _run(target, [fkl.Crop(0, 0, 1, 1)], _empty((0, 4, 3)))
    with pytest.raises(ValueError, match=r"^Resize: cannot make a 2x2 image from the empty 3x0 image$"):
        _run(target, [fkl.BorderReader("constant", 0), fkl.Resize(2, 2)], _empty((0, 3)))


# ---- the GPU host path, over the fake driver ---------------------------------------------------------


def test_gpu_empty_outputs_launch_nothing_for_any_write(fake: Any) -> None:
    driver, torch = fake
    x = torch.empty((0, 6, 3), dtype=torch.uint8)
    launches = LAUNCHES.count
    for write, shape in [
        (fkl.TensorWrite(), (0, 6, 3)),
        (fkl.TensorSplit(), (3, 0, 6)),
        (fkl.TensorTSplit(), (3, 1, 0, 6)),
    ]:
        out = fkl.compose(fkl.TensorRead(), fkl.Mul(2), write, target="gpu")(x)
        assert tuple(out.shape) == shape
    outs = fkl.compose(fkl.TensorRead(), fkl.Mul(2), fkl.SplitWrite(), target="gpu")(x)
    assert [tuple(o.shape) for o in outs] == [(0, 6)] * 3
    batch = torch.empty((0, 5, 4, 3), dtype=torch.uint8)
    assert tuple(fkl.compose(fkl.TensorRead(), fkl.Resize(3, 2), fkl.TensorWrite(), target="gpu")(batch).shape) == (
        0,
        2,
        3,
        3,
    )
    assert LAUNCHES.count == launches and not driver.launches


def test_gpu_empty_sources_are_refused_or_filled_like_on_the_cpu(fake: Any) -> None:
    driver, torch = fake
    x = torch.empty((0, 4, 3), dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"^BorderReader\('wrap'\): cannot extend the empty 4x0 image to 3x2"):
        fkl.compose(fkl.TensorRead(), fkl.BorderReader("wrap"), fkl.Crop(0, 0, 3, 2), fkl.TensorWrite())(x)
    with pytest.raises(ValueError, match=r"^Resize: cannot make a 3x2 image from the empty 4x0 image"):
        fkl.compose(fkl.TensorRead(), fkl.Resize(3, 2), fkl.TensorWrite())(x)
    assert not driver.launches
    pipe = fkl.compose(fkl.TensorRead(), fkl.BorderReader("constant", 1), fkl.Crop(0, 0, 3, 2), fkl.TensorWrite())
    assert tuple(pipe(x).shape) == (2, 3, 3)
    ((_, grid, _, _, _),) = driver.launches
    assert grid[2] == 1


@pytest.mark.parametrize(
    ("shape", "ops", "message"),
    [
        (
            (70000, 2, 2, 3),
            [fkl.Resize(3, 3, "nearest")],
            r"^TensorWrite: output planes = 70000 exceeds the limit 65535$",
        ),
        ((1, 4), [fkl.Resize(4, 524281, "nearest")], r"^TensorWrite: output height \(in rows of 8\) = 65536 exceeds"),
    ],
)
def test_gpu_grids_beyond_cudas_limits_are_refused_before_a_launch(
    fake: Any, shape: tuple[int, ...], ops: list[Any], message: str
) -> None:
    driver, torch = fake
    pipe = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu")
    with pytest.raises(ValueError, match=message):
        pipe(torch.empty(shape, dtype=torch.uint8))
    assert not driver.launches


def test_gpu_grids_at_cudas_limits_launch(fake: Any) -> None:
    driver, torch = fake
    tall = fkl.compose(fkl.TensorRead(), fkl.Resize(4, 524280, "nearest"), fkl.TensorWrite(), target="gpu")
    tall(torch.empty((1, 4), dtype=torch.uint8))
    many = fkl.compose(fkl.TensorRead(), fkl.Resize(3, 3, "nearest"), fkl.TensorWrite(), target="gpu")
    many(torch.empty((65535, 2, 2, 3), dtype=torch.uint8))
    assert [launch[1][1:] for launch in driver.launches] == [(65535, 1), (1, 65535)]


def test_gpu_parameter_blocks_beyond_cudas_limit_are_refused_before_compiling(fake: Any) -> None:
    """A Crop's rects travel in the kernel's parameter block, which CUDA caps at 32764 bytes (nvcc says
    'Formal parameter space overflowed (33688 bytes required, max 32764 bytes allowed)' for 2100 rects
    of this chain)."""
    driver, torch = fake
    x = torch.empty((64, 64, 3), dtype=torch.uint8)

    def crop(n: int) -> fkl.Pipeline:
        rects = [(i % 50, i % 40, 8, 8) for i in range(n)]
        return fkl.compose(fkl.TensorRead(), fkl.Crop(rects), fkl.Resize(4, 4), fkl.TensorWrite(), target="gpu")

    with pytest.raises(ValueError, match=r"^Crop: the kernel's parameter bytes for 2100 rects = 33688 exceeds the lim"):
        crop(2100)(x)
    with pytest.raises(ValueError, match=r"^Crop: .* for 2043 rects = 32776 exceeds the limit 32764; split the work"):
        crop(2043)(x)
    assert not driver.launches
    assert tuple(crop(2042)(x).shape) == (2042, 4, 4, 3)
    assert len(driver.launches) == 1


def test_gpu_per_image_values_beyond_cudas_parameter_limit_are_refused_by_name(fake: Any) -> None:
    """Per-image values travel in the parameter block, a row per plane of the batch capacity compiled for:
    600 perspective matrices (1024 rows of 9 doubles) are refused before compiling, naming the op."""
    driver, torch = fake

    def warp(batch: int) -> Any:
        matrices = fkl.per_image(np.tile(np.eye(3), (batch, 1, 1)))
        pipe = fkl.compose(fkl.TensorRead(), fkl.Warping(matrices, 4, 4), fkl.TensorWrite(), target="gpu")
        return pipe(torch.empty((batch, 8, 8, 3), dtype=torch.uint8))

    with pytest.raises(ValueError, match=r"^Warping: the kernel's parameter bytes for per_image values of 600 images"):
        warp(600)
    assert not driver.launches
    assert tuple(warp(200).shape) == (200, 4, 4, 3)
    assert len(driver.launches) == 1


def test_gpu_bound_pipelines_of_empty_images_launch_nothing(fake: Any) -> None:
    driver, torch = fake
    s = torch.cuda.Stream()
    for shape, ops, out_shape in [
        ((0, 5, 3), [fkl.Mul(2)], (0, 5, 3)),
        ((0, 4, 6, 3), [fkl.Resize(3, 2, "nearest")], (0, 2, 3, 3)),
    ]:
        x, y = torch.empty(shape, dtype=torch.uint8), torch.empty(out_shape, dtype=torch.uint8)
        bound = fkl.compose(fkl.TensorRead(x), *ops, fkl.TensorWrite(y), target="gpu")
        assert bound() is y and bound(stream=s) is y and bound(stream=s) is y
        assert tuple(bound(x).shape) == out_shape
    assert not driver.launches
