"""The emission corpus: named chains whose emitted C++ is kept byte for byte in tests/golden/emit/.

It is the safety net of refactors that must not change behaviour (issue 15): every op descriptor,
every fusion mode (flat, pixel with geometry folded into the read, horizontal batching of rect lists
and of image lists, divergent batching), every read and write kind, several element types and
channel counts 1-4, on both targets. tests/unit/test_emit_corpus.py emits each case again and
compares it with its golden file; bound compose is left out (GPU only: it needs a device at compose).

One source serves both targets today (the CUDA and the CPU entries sit under `#if
defined(__CUDACC__)`), so a case has one golden file, `<name>.cpp.golden`, that both targets'
sources must equal; where the targets come to differ, regeneration writes `<name>.cpu.cpp.golden`
and `<name>.gpu.cu.golden`.

Regenerate (`python -m tests.unit.emit_corpus --regenerate`) only for an intended codegen change:
bump CODEGEN_VERSION in fklir/backend/kernel_layout.py and say in the commit why the output changed.
A refactor that fails the test has changed the emitted code; fix the refactor, not the goldens.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import fklir as fkl
from fklir.backend.emit_cpp import EmittedKernel
from fklir.backend.kernel_plan import emit_kernel
from fklir.frontend.lowering import kernels_of
from fklir.frontend.ops import Joining, Op, Read, StaticLoop, Write
from fklir.jit.graph import GraphPipeline, _shapes  # pyright: ignore[reportPrivateUsage]
from fklir.jit.pipeline import Pipeline
from tests import op_catalogue
from tests.runtime import chains as runtime_chains
from tests.unit.test_emit_compiles import CHAINS as COMPILE_CHAINS

GOLDEN_DIR = Path(__file__).resolve().parent.parent / "golden" / "emit"
TARGETS = ("cpu", "gpu")
# `.golden` after the language's ending: generated text, which source tools (duplicates) leave alone
SHARED_SUFFIX = ".cpp.golden"
TARGET_SUFFIX = {"cpu": ".cpu.cpp.golden", "gpu": ".gpu.cu.golden"}


@dataclass(frozen=True)
class Case:
    """One composed pipeline and the input it is emitted for: an array of `dtype` and `shape`, or a
    list of `images` such arrays; `plane_map` (1-based) makes it compose_divergent of `chains`."""

    name: str
    chains: tuple[tuple[Op, ...], ...]
    dtype: str
    shape: tuple[int, ...]
    images: int = 0
    plane_map: tuple[int, ...] | None = None
    # a DAG's further call arguments (SPEC §8): (dtype, shape) of arguments 1, 2, ...
    arguments: tuple[tuple[str, tuple[int, ...]], ...] = ()

    def pipeline(self, target: str) -> Pipeline | GraphPipeline:
        if self.plane_map is not None:
            return fkl.compose_divergent(self.plane_map, *self.chains, target=target)
        (chain,) = self.chains
        return fkl.compose(*chain, target=target)

    def ops(self) -> Iterator[Op]:
        """Every descriptor of the case, StaticLoop bodies and a DAG's branches included."""
        for chain in self.chains:
            yield from _with_inner(chain)


def _with_inner(ops: Sequence[Op]) -> Iterator[Op]:
    for op in ops:
        yield op
        if isinstance(op, StaticLoop):
            yield op.body
        if isinstance(op, Joining):
            for branch in op.branches():
                yield branch
                yield from _with_inner(branch.ops)


def emit(case: Case, target: str) -> EmittedKernel:
    """The kernel a call of the case's pipeline on its input compiles.

    `source_for(dtype, shape)` takes one packed array only; the signature of a list of images, a
    planar read or a generator is what a call computes, so this goes through the call's own steps
    (`_input` / `_generator_input`, then `_module`). A refactor that moves them edits only this."""
    pipe = case.pipeline(target)
    if isinstance(pipe, GraphPipeline):
        return emit_kernel(pipe._kernel(pipe._signatures(_shapes([(case.dtype, case.shape), *case.arguments]))[0]))
    if pipe.generator is not None:
        sig = pipe._generator_input()[0]
    else:
        given = [None] * case.images if case.images else None
        sig = pipe._input(given, [(case.shape, case.dtype)] * max(case.images, 1))[0]
    (kernel,) = kernels_of(pipe._module(sig))
    return emit_kernel(kernel)


def golden_path(case: Case, target: str) -> Path:
    own = GOLDEN_DIR / f"{case.name}{TARGET_SUFFIX[target]}"
    return own if own.exists() else GOLDEN_DIR / f"{case.name}{SHARED_SUFFIX}"


# =============================================================================================
# The cases
# =============================================================================================

R, W = fkl.TensorRead, fkl.TensorWrite


def _case(name: str, dtype: str, shape: tuple[int, ...], *ops: Op, images: int = 0) -> Case:
    """A single chain TensorRead → ops → TensorWrite; `ops` starts with its own read or ends with its
    own write where the chain has another kind."""
    tail: tuple[Op, ...] = ops if ops and isinstance(ops[-1], Write) else (*ops, W())
    head: tuple[Op, ...] = () if isinstance(tail[0], Read) else (R(),)
    return Case(name, ((*head, *tail),), dtype, shape, images)


def _from_pipeline(name: str, pipe: Pipeline, dtype: str, shape: tuple[int, ...]) -> Case:
    return Case(name, pipe.chains, dtype, shape)


_AFFINE = np.array([[0.9, -0.2, 3.5], [0.25, 1.1, -2.0]])
_PERSPECTIVE = np.array([[1.05, 0.1, -2.0], [-0.05, 0.95, 1.5], [0.001, -0.002, 1.0]])
_MATRIX3 = [[0.299, 0.587, 0.114], [-0.169, -0.331, 0.5], [0.5, -0.419, -0.081]]

# every ColorConversion code, chained so that each one's input has the channels it needs
_COLOR_FROM_3 = ("RGB2BGR", "BGR2RGB", "RGB2RGBA", "RGBA2BGR", "BGR2BGRA", "BGRA2RGB", "RGB2BGRA", "BGRA2BGR")
_COLOR_MORE_3 = ("BGR2RGBA", "RGBA2BGRA", "BGRA2RGBA", "RGBA2RGB", "RGB2GRAY", "GRAY2RGB", "BGR2GRAY", "GRAY2BGR")
_COLOR_FROM_4 = ("RGBA2GRAY",)
_COLOR_FROM_4B = ("BGRA2GRAY",)


def _reused() -> list[Case]:
    """The chains other tests already run: tests/runtime/chains.py and test_emit_compiles.CHAINS."""
    cases = [
        _from_pipeline("runtime_roi", runtime_chains.roi_chain("cpu"), "uint8", (80, 120, 3)),
        _from_pipeline("runtime_float6", runtime_chains.float_chain("cpu"), "float32", (17, 23, 3)),
        _from_pipeline("runtime_normalise", runtime_chains.normalise_chain("cpu"), "uint8", (19, 21, 3)),
    ]
    for name, (ops, dtype, shape) in sorted(COMPILE_CHAINS.items()):
        cases.append(_case(f"compiles_{name}", dtype, shape, *ops))
    return cases


def _flat() -> list[Case]:
    """No geometry, channel-wise ops, packed write: the flat kernels, by element size and channels."""
    return [
        _case("flat_u8_gray_add", "uint8", (31, 17), fkl.Add(7)),
        _case("flat_i16_c2_sub_max_min", "int16", (9, 11, 2), fkl.Sub((3, -4)), fkl.Max(-100), fkl.Min((90, 7))),
        _case("flat_u16_c4_saturate", "uint16", (7, 13, 4), fkl.Saturate((10, 0, 5, 1), (60000, 100, 9, 2))),
        _case("flat_f32_c3_saturate_float", "float32", (5, 9, 3), fkl.Mul(0.5), fkl.SaturateFloat()),
        _case("flat_f64_c1_div", "float64", (3, 7), fkl.Div(-2.5), fkl.Add(1.0)),
        _case("flat_u32_is_even", "uint32", (13, 5, 3), fkl.IsEven()),
        _case("flat_f16_c3_equal", "float16", (7, 9, 3), fkl.Equal((0.5, 1.0, -2.0)), fkl.Cast("uint8")),
        _case(
            "pixel_u8_resize_equal_and",
            "uint8",
            (11, 13, 3),
            fkl.Resize(6, 5, "nearest"),
            fkl.Equal(7),
            fkl.VectorAnd(),
        ),
        _case("flat_i8_c4_cast_f16", "int8", (6, 10, 4), fkl.Cast("float16"), fkl.Mul(0.25)),
        _case("flat_f32_to_bool", "float32", (11, 3), fkl.Cast("bool")),
        _case("flat_bool_c3_satcast_u8", "bool", (9, 9, 3), fkl.SaturateCast("uint8"), fkl.Mul(200)),
        _case("flat_f32_satcast_bf16", "float32", (8, 8, 2), fkl.Cast("bfloat16"), fkl.Sub(1.0), fkl.Cast("float32")),
        _case(
            "flat_i32_static_loops",
            "int32",
            (7, 7, 2),
            fkl.StaticLoop(fkl.Add((1, 2)), 2),
            fkl.StaticLoop(fkl.Sub(3), 3),
            fkl.StaticLoop(fkl.Max((-5, 0)), 1),
            fkl.StaticLoop(fkl.Min(1000), 2),
        ),
        _case(
            "flat_f32_static_loops", "float32", (5, 5), fkl.StaticLoop(fkl.Mul(2.0), 3), fkl.StaticLoop(fkl.Div(3.0), 2)
        ),
        _case("flat_u8_batched", "uint8", (3, 9, 7, 4), fkl.Sub(12), fkl.Max(3)),
        _case("flat_u8_images", "uint8", (9, 7, 3), fkl.Mul(3), images=3),
    ]


def _vector() -> list[Case]:
    """Ops that change or mix channels (flat kernels of whole pixels, no geometry)."""
    return [
        _case("vec_bool_and", "bool", (9, 9, 3), fkl.VectorAnd()),
        _case("vec_u8_is_even_and", "uint8", (7, 11, 4), fkl.IsEven(), fkl.VectorAnd()),
        _case("vec_f32_reduce_add", "float32", (5, 7, 4), fkl.VectorReduce("Add")),
        _case("vec_i32_reduce_mul", "int32", (5, 7, 3), fkl.VectorReduce("Mul")),
        _case("vec_u8_reduce_max", "uint8", (5, 7, 2), fkl.VectorReduce("Max")),
        _case("vec_f16_reduce_min", "float16", (5, 7, 4), fkl.VectorReduce("Min")),
        _case("vec_u8_discard_add_last", "uint8", (9, 5, 4), fkl.Discard(2), fkl.AddLast(255)),
        _case("vec_u8_reorder", "uint8", (9, 5, 3), fkl.VectorReorder(2, 1, 0)),
        _case("vec_f32_reorder_rt", "float32", (9, 5, 3), fkl.VectorReorderRT(0, 0, 1, 2), fkl.Mul(2.0)),
        _case("vec_f32_mxv", "float32", (9, 5, 3), fkl.MxVFloat3(_MATRIX3), fkl.Add((0.0, 128.0, 128.0))),
        _case("vec_u8_colors_from_3", "uint8", (9, 5, 3), *map(fkl.ColorConversion, _COLOR_FROM_3)),
        _case("vec_f32_colors_more_3", "float32", (9, 5, 3), *map(fkl.ColorConversion, _COLOR_MORE_3)),
        _case("vec_u16_rgba2gray", "uint16", (9, 5, 4), *map(fkl.ColorConversion, _COLOR_FROM_4)),
        _case("vec_f16_bgra2gray", "float16", (9, 5, 4), *map(fkl.ColorConversion, _COLOR_FROM_4B)),
    ]


def _geometry() -> list[Case]:
    """Geometry folded into the read's sample region (sampled kernels)."""
    return [
        _case("geo_u8_crop_split", "uint8", (21, 33, 3), fkl.Crop(3, 4, 11, 9), fkl.Mul(2), fkl.TensorSplit()),
        _case("geo_u8_gray_resize_linear", "uint8", (37, 29), fkl.Resize(13, 11), fkl.SaturateCast("uint8")),
        _case("geo_u8_c4_resize_linear", "uint8", (37, 29, 4), fkl.Resize(17, 9), fkl.Mul(0.5)),
        _case("geo_f16_resize_linear", "float16", (15, 19, 3), fkl.Resize(8, 30)),
        _case("geo_i16_resize_nearest_even", "int16", (15, 19, 2), fkl.Resize(10, 6, "nearest", "preserve_even", 0)),
        _case(
            "geo_f32_resize_preserve_left",
            "float32",
            (15, 31, 3),
            fkl.Resize(12, 12, "linear", "preserve_left", (1.0, 2.0, 3.0)),
        ),
        _case(
            "geo_u8_border_constant_crop",
            "uint8",
            (11, 13, 3),
            fkl.BorderReader("constant", (1, 2, 3)),
            fkl.Crop(-4, -3, 20, 17),
        ),
        _case(
            "geo_u8_border_reflect101_crop",
            "uint8",
            (11, 13),
            fkl.BorderReader("reflect101"),
            fkl.Crop(-5, 2, 30, 9),
            fkl.Add(1),
        ),
        _case(
            "geo_i8_border_wrap_crop_nearest",
            "int8",
            (11, 13, 2),
            fkl.BorderReader("wrap"),
            fkl.Crop(-7, -7, 25, 25),
            fkl.Resize(9, 9, "nearest"),
        ),
        _case(
            "geo_u8_border_replicate_affine",
            "uint8",
            (23, 17, 3),
            fkl.BorderReader("replicate"),
            fkl.Warping(_AFFINE, 19, 13),
        ),
        _case("geo_f32_perspective", "float32", (23, 17), fkl.Warping(_PERSPECTIVE, 21, 15), fkl.Sub(0.5)),
        _case("geo_u8_affine_inverse", "uint8", (23, 17, 4), fkl.Warping(_AFFINE, 12, 20, inverse=True)),
        _case("geo_u8_deinterlace_blend", "uint8", (19, 15, 3), fkl.Deinterlace("blend"), fkl.SaturateCast("uint8")),
        _case(
            "geo_u16_border_reflect_crop_deinterlace",
            "uint16",
            (19, 15),
            fkl.BorderReader("reflect"),
            fkl.Crop(-2, -2, 20, 18),
            fkl.Deinterlace("linear"),
        ),
        _case("geo_f32_batched_resize", "float32", (2, 15, 19, 3), fkl.Resize(7, 5), fkl.Max(0.0)),
        _case("geo_u8_flip_vertical", "uint8", (19, 15, 3), fkl.Flip("vertical")),
        _case(
            "geo_f32_crop_flip_horizontal_resize",
            "float32",
            (19, 15),
            fkl.Crop(1, 2, 12, 11),
            fkl.Flip(1),
            fkl.Resize(7, 9),
        ),
        _case("geo_i16_border_flip_both", "int16", (19, 15, 4), fkl.BorderReader("wrap"), fkl.Flip("both")),
        _case("geo_u8_rotate_clockwise", "uint8", (19, 15, 3), fkl.Rotate("clockwise_90")),
        _case("geo_f32_rotate_half_turn_resize", "float32", (2, 19, 15, 2), fkl.Rotate("turn_180"), fkl.Resize(9, 7)),
        _case("geo_u16_crop_rotate_counterclockwise", "uint16", (19, 15), fkl.Crop(2, 1, 9, 13), fkl.Rotate(2)),
    ]


def _batching() -> list[Case]:
    """Horizontal batching (a rect list, a list of images) and divergent batching."""
    resize_a = (R(), fkl.Resize(8, 8), fkl.Mul(2.0), W())
    resize_b = (R(), fkl.Crop(1, 1, 5, 5), fkl.Resize(8, 8), fkl.Sub(1.0), W())
    flat_a = (R(), fkl.Mul(2), W())
    flat_b = (R(), fkl.IsEven(), fkl.Cast("uint8"), W())
    split_a = (R(), fkl.Crop(0, 0, 6, 6), fkl.TensorSplit())
    split_b = (R(), fkl.Crop(2, 3, 6, 6), fkl.Add(9), fkl.TensorSplit())
    warp = (R(), fkl.BorderReader("reflect101"), fkl.Warping(_PERSPECTIVE, 9, 9), W())
    deinterlace = (R(), fkl.Deinterlace("linear"), fkl.Mul(0.5), W())
    resize = (R(), fkl.Resize(9, 9, "linear", "preserve", 0.0), W())
    return [
        _case(
            "batch_f32_rects",
            "float32",
            (20, 30, 2),
            fkl.Crop([(0, 0, 9, 9), (5, 4, 9, 9), (11, 10, 9, 9)]),
            fkl.Mul(0.5),
        ),
        _case(
            "batch_u8_rects_resize_split",
            "uint8",
            (20, 30, 3),
            fkl.Crop([(0, 0, 9, 7), (5, 4, 12, 5)]),
            fkl.Resize(6, 6),
            fkl.TensorSplit(),
        ),
        _case("batch_u8_images_resize", "uint8", (17, 13, 3), fkl.Resize(9, 9), fkl.SaturateCast("uint8"), images=2),
        _case(
            "batch_i16_images_crop_nearest",
            "int16",
            (17, 13),
            fkl.Crop(2, 2, 7, 7),
            fkl.Resize(4, 11, "nearest"),
            images=4,
        ),
        # per-image values (fkl.per_image): compute_pixel takes the plane in every sampling strategy
        _case(
            "batch_u8_per_image_pixel",
            "uint8",
            (3, 9, 11, 3),
            fkl.Cast("float32"),
            fkl.Mul(fkl.per_image([0.5, 1.0, 2.0])),
            fkl.Add(fkl.per_image([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
            fkl.SaturateCast("uint8"),
        ),
        _case(
            "batch_u8_rects_resize_per_image",
            "uint8",
            (20, 30, 3),
            fkl.Crop([(0, 0, 9, 7), (5, 4, 12, 5)]),
            fkl.Resize(6, 6),
            fkl.Div(fkl.per_image([2.0, 3.0])),
        ),
        _case(
            "batch_u8_per_image_affine",
            "uint8",
            (2, 23, 17, 3),
            fkl.Warping(_AFFINE, 19, 13),
            fkl.Saturate(fkl.per_image([0.0, 10.0]), fkl.per_image([[200, 210, 220], [250, 240, 230]])),
            fkl.SaturateCast("uint8"),
        ),
        _case(
            "batch_i16_images_nearest_per_image",
            "int16",
            (17, 13),
            fkl.Resize(4, 11, "nearest"),
            fkl.Max(fkl.per_image([-1, 0, 1, 2])),
            images=4,
        ),
        _case(
            "batch_f32_crop_per_image_split",
            "float32",
            (2, 9, 11, 2),
            fkl.Crop(1, 1, 7, 7),
            fkl.Sub(fkl.per_image([[0.5, 1.5], [2.5, 3.5]])),
            fkl.TensorSplit(),
        ),
        _case(
            "batch_u8_per_image_geometry",
            "uint8",
            (3, 23, 17, 3),
            fkl.BorderReader("constant", fkl.per_image([[1, 2, 3], [4, 5, 6], [7, 8, 9]])),
            fkl.Warping(fkl.per_image(np.stack([_AFFINE, _AFFINE * 0.5, _AFFINE * 2])), 19, 13),
            fkl.Resize(24, 20, aspect_ratio="preserve", background=fkl.per_image([1.5, 2.5, 3.5])),
        ),
        Case("div_u8_resize", (resize_a, resize_b), "uint8", (13, 11, 3), plane_map=(1, 2, 1)),
        Case("div_u8_flat_chains", (flat_a, flat_b), "uint8", (9, 9, 3), plane_map=(2, 1)),
        Case("div_i16_split", (split_a, split_b), "int16", (12, 12, 2), plane_map=(1, 2, 2)),
        Case("div_f32_warp_deinterlace", (warp, deinterlace, resize), "float32", (9, 9, 3), plane_map=(3, 1, 2, 1)),
        Case("div_f32_images", (resize_a, resize_b), "float32", (13, 11), images=2, plane_map=(2, 1)),
    ]


def _reads_writes() -> list[Case]:
    """The planar read, the generator, and the channel-major and per-channel writes."""
    return [
        _case("rw_u8_pack_write", "uint8", (3, 9, 11), fkl.TensorPack(3), fkl.Mul(2), W()),
        _case(
            "rw_f32_pack_batched_split", "float32", (2, 4, 9, 11), fkl.TensorPack(4), fkl.Sub(1.0), fkl.TensorSplit()
        ),
        _case(
            "rw_u8_pack_resize_tsplit", "uint8", (2, 3, 9, 11), fkl.TensorPack(3), fkl.Resize(5, 5), fkl.TensorTSplit()
        ),
        _case("rw_u8_batched_tsplit", "uint8", (2, 9, 11, 3), fkl.Add(1), fkl.TensorTSplit()),
        _case("rw_u8_split_write", "uint8", (9, 11, 3), fkl.Crop(1, 1, 7, 7), fkl.SplitWrite()),
        _case("rw_f16_c4_split_write", "float16", (9, 11, 4), fkl.Mul(0.5), fkl.SplitWrite()),
        _case("rw_readset_f32", "float32", (1, 1), fkl.ReadSet((1.0, 2.0, 3.0), 7, 5, "float32"), fkl.Mul(2.0), W()),
        _case(
            "rw_readset_bf16_split_write",
            "bfloat16",
            (1, 1),
            fkl.ReadSet(1.5, 4, 4, "bfloat16", channels=2),
            fkl.Cast("float32"),
            fkl.SplitWrite(),
        ),
        _case(
            "rw_readset_u8_tsplit",
            "uint8",
            (1, 1),
            fkl.ReadSet((7, 9), 6, 3, "uint8"),
            fkl.IsEven(),
            fkl.TensorTSplit(),
        ),
    ]


def _elementwise() -> list[Case]:
    """Each op of tests/op_catalogue.py in a flat float32 kernel, after a linear resize (a pixel
    kernel), and on an integer chain where it takes one."""
    cases: list[Case] = []
    for entry in op_catalogue.CATALOGUE:
        name = entry.name.lower()
        cases.append(_case(f"math_flat_f32_{name}", "float32", (7, 9, 3), entry.descriptor()))
        cases.append(_case(f"math_pixel_u8_resize_{name}", "uint8", (11, 13, 3), fkl.Resize(6, 5), entry.descriptor()))
        if "int16" in entry.dtypes:  # one channel, or one per value
            shape = (5, 9, 3) if entry.args else (5, 9)
            cases.append(_case(f"math_flat_i16_{name}", "int16", shape, entry.descriptor()))
    return cases


def _graphs() -> list[Case]:
    """DAGs (SPEC §8): branches with and without geometry joined by each kind of op, outputs along the way."""
    frame = ("uint8", (9, 13, 3))
    f32 = fkl.Cast("float32")
    return [
        Case(
            "dag_u8_absdiff_threshold_mid_write",
            (
                (
                    R(),
                    f32,
                    fkl.AbsDiff(fkl.Input(1, f32)),
                    fkl.MidWrite(),
                    fkl.VectorReduce("Max"),
                    fkl.Threshold(25.0),
                    fkl.SaturateCast("uint8"),
                    W(),
                ),
            ),
            *frame,
            arguments=(frame,),
        ),
        Case(
            "dag_u8_composite_mask",
            ((R(), fkl.Composite(fkl.Input(1), fkl.Input(2)), W()),),
            *frame,
            arguments=(frame, ("uint8", (9, 13))),
        ),
        Case(
            "dag_f32_blend_branch_geometry_mid_split",
            (
                (
                    R(),
                    fkl.Resize(8, 6),
                    fkl.Blend(fkl.Input(1, fkl.Crop(2, 1, 8, 6), fkl.Mul(0.5)), 0.25),
                    fkl.MidSplit(),
                    fkl.Sub(fkl.Input(0, fkl.Resize(8, 6), fkl.Flip("vertical"))),
                    fkl.TensorSplit(),
                ),
            ),
            "float32",
            (12, 16, 3),
            arguments=(("float32", (10, 14, 3)),),
        ),
        Case(
            "dag_i16_joins",
            (
                (
                    R(),
                    fkl.Add(fkl.Input(1)),
                    fkl.Sub(fkl.Input(1)),
                    fkl.Mul(fkl.Input(1)),
                    fkl.Max(fkl.Input(1)),
                    fkl.Min(fkl.Input(1)),
                    fkl.Equal(fkl.Input(1)),
                    W(),
                ),
            ),
            "int16",
            (5, 7, 2),
            arguments=(("int16", (5, 7, 2)),),
        ),
        Case(
            "dag_f32_div_join",
            ((R(), fkl.Div(fkl.Input(1)), W()),),
            "float32",
            (5, 7),
            arguments=(("float32", (5, 7)),),
        ),
    ]


def corpus() -> list[Case]:
    cases = [
        *_reused(),
        *_flat(),
        *_vector(),
        *_geometry(),
        *_batching(),
        *_reads_writes(),
        *_elementwise(),
        *_graphs(),
    ]
    names = [c.name for c in cases]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise ValueError(f"emit corpus: case names {duplicated} are used twice")
    return cases


# =============================================================================================
# Regeneration
# =============================================================================================


def regenerate(cases: Sequence[Case]) -> list[Path]:
    """Write every case's golden file(s) and remove files no case owns; returns what was written."""
    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for case in cases:
        sources = {target: emit(case, target).source for target in TARGETS}
        for target in TARGETS:
            (GOLDEN_DIR / f"{case.name}{TARGET_SUFFIX[target]}").unlink(missing_ok=True)
        if sources["cpu"] == sources["gpu"]:
            paths = {GOLDEN_DIR / f"{case.name}{SHARED_SUFFIX}": sources["cpu"]}
        else:
            (GOLDEN_DIR / f"{case.name}{SHARED_SUFFIX}").unlink(missing_ok=True)
            paths = {GOLDEN_DIR / f"{case.name}{TARGET_SUFFIX[t]}": sources[t] for t in TARGETS}
        for path, source in paths.items():
            path.write_text(source)
            written.append(path)
    for stale in set(GOLDEN_DIR.iterdir()) - set(written):
        stale.unlink()
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.unit.emit_corpus", description=(__doc__ or "").split("\n\n")[0]
    )
    parser.add_argument(
        "--regenerate",
        action="store_true",
        help="rewrite tests/golden/emit/ (only for an intended codegen change, with CODEGEN_VERSION bumped)",
    )
    args = parser.parse_args(argv)
    cases = corpus()
    if not args.regenerate:
        for case in cases:
            print(case.name)
        return 0
    written = regenerate(cases)
    print(f"wrote {len(written)} golden files for {len(cases)} cases under {GOLDEN_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
