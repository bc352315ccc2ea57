"""The emitted C++ of the corpus (tests/unit/emit_corpus.py) is byte-identical to its golden files,
and the corpus covers every exported op, every option of the geometry and vector ops, every read
and write kind, every fusion mode and every element type. A new op without a corpus case fails
here; an intended codegen change regenerates the goldens (see emit_corpus's docstring).
"""

from __future__ import annotations

import ctypes
import difflib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import fklir as fkl
from fklir.backend import compilers
from fklir.backend.build import INCLUDE_DIR
from fklir.backend.emit_cpp import EmittedKernel
from fklir.dialects import fkl as dialect
from fklir.frontend import ops as fops
from tests.unit.emit_corpus import GOLDEN_DIR, TARGETS, Case, corpus, emit, golden_path

CASES = corpus()


@pytest.fixture(scope="module")
def emitted() -> dict[tuple[str, str], EmittedKernel]:
    return {(case.name, target): emit(case, target) for case in CASES for target in TARGETS}


def _first_mismatch(names: list[str], target: str, emitted: dict[tuple[str, str], EmittedKernel]) -> str:
    case = next(c for c in CASES if c.name == names[0])
    path = golden_path(case, target)
    diff = difflib.unified_diff(
        path.read_text().splitlines(keepends=True),
        emitted[(case.name, target)].source.splitlines(keepends=True),
        fromfile=str(path.relative_to(GOLDEN_DIR.parent.parent.parent)),
        tofile=f"emitted ({case.name}, target {target})",
    )
    return "".join(diff)


@pytest.mark.parametrize("target", TARGETS)
def test_emitted_source_is_byte_identical_to_golden(target: str, emitted: dict[tuple[str, str], EmittedKernel]) -> None:
    missing = [c.name for c in CASES if not golden_path(c, target).is_file()]
    assert not missing, f"no golden file for {missing}: python -m tests.unit.emit_corpus --regenerate"
    differ = [c.name for c in CASES if golden_path(c, target).read_bytes() != emitted[(c.name, target)].source.encode()]
    assert not differ, (
        f"the emitted {target} source of {len(differ)} case(s) changed: {differ}\n"
        f"first difference:\n{_first_mismatch(differ, target, emitted)}"
    )


def test_every_golden_file_belongs_to_a_case() -> None:
    owned = {golden_path(c, t) for c in CASES for t in TARGETS}
    orphans = sorted(p.name for p in GOLDEN_DIR.iterdir() if p not in owned)
    assert not orphans, f"golden files of no corpus case: {orphans}"
    assert len(CASES) >= 40


BINARY_OPS: set[object] = {fkl.Add, fkl.Sub, fkl.Mul, fkl.Div, fkl.Max, fkl.Min}


def _used(kind: type[fops.Op], field: str) -> set[object]:
    return {getattr(op, field) for case in CASES for op in case.ops() if type(op) is kind}


def test_corpus_has_every_exported_op_descriptor() -> None:
    exported = {obj for name in fkl.__all__ if isinstance(obj := getattr(fkl, name), type) and issubclass(obj, fops.Op)}
    assert fops.TensorRead in exported and fops.MxVFloat3 in exported  # the catalogue was found
    used = {type(op) for case in CASES for op in case.ops()}
    missing = sorted(k.__name__ for k in exported - used)
    assert not missing, f"ops with no case in tests/unit/emit_corpus.py: {missing}"


def test_corpus_has_every_op_option() -> None:
    options: list[tuple[str, set[object], set[object]]] = [
        ("BorderReader mode", _used(fops.BorderReader, "mode"), set(dialect.BORDER_MODES)),
        ("Resize interp", _used(fops.Resize, "interp"), set(dialect.INTERPOLATIONS)),
        ("Resize aspect_ratio", _used(fops.Resize, "aspect_ratio"), set(dialect.ASPECT_RATIOS)),
        ("Warping kind", _used(fops.Warping, "kind"), set(dialect.WARP_KINDS)),
        ("Warping inverse", _used(fops.Warping, "inverse"), {True, False}),
        ("Deinterlace mode", _used(fops.Deinterlace, "mode"), set(dialect.DEINTERLACE_MODES)),
        ("Flip mode", _used(fops.Flip, "mode"), set(dialect.FLIP_MODES)),
        ("Rotate code", _used(fops.Rotate, "code"), set(dialect.ROTATIONS)),
        ("VectorReduce", _used(fops.VectorReduce, "reduction"), set(dialect.REDUCTIONS)),
        ("ColorConversion", _used(fops.ColorConversion, "code"), set(dialect.COLOR_CODES)),
        ("StaticLoop body", {type(body) for body in _used(fops.StaticLoop, "body")}, BINARY_OPS),
    ]
    for what, used, every in options:
        assert used >= every, f"{what}: no case for {sorted(map(str, every - used))}"


def test_corpus_has_every_read_write_fusion_mode_and_type(emitted: dict[tuple[str, str], EmittedKernel]) -> None:
    by_case = [(case, emitted[(case.name, "cpu")].layout) for case in CASES]
    seen: dict[str, set[Any]] = {
        "write": {layout.write for _, layout in by_case},
        "read": {layout.read for _, layout in by_case},
        "mode": {layout.mode for _, layout in by_case},
        "image list": {layout.mode for _, layout in by_case if layout.src_table},
        "rect list": {layout.write for case, layout in by_case if _crop_list(case)},
        "divergent": {layout.write for case, layout in by_case if case.plane_map is not None},
        "divergent image list": {bool(case.images) for case in CASES if case.plane_map is not None},
        "batched input": {layout.mode for _, layout in by_case if layout.in_planes > 1 and not layout.src_table},
        "input type": {layout.in_dtype for _, layout in by_case},
        "channels": {layout.in_channels for _, layout in by_case} | {layout.out_channels for _, layout in by_case},
    }
    wanted: dict[str, set[Any]] = {
        "write": {"packed", "planar", "tsplit", "split_write"},
        "read": {"packed", "planar", "none"},
        "mode": {"flat", "sampled"},
        "image list": {"flat", "sampled"},
        "rect list": {"packed", "planar"},
        "divergent": {"packed", "planar"},
        "divergent image list": {True, False},
        "batched input": {"flat", "sampled"},
        "input type": set(dialect.ELEMENT_TYPES),
        "channels": {1, 2, 3, 4},
    }
    for what, every in wanted.items():
        assert seen[what] >= every, f"{what}: no case for {sorted(map(str, every - seen[what]))}"


def _crop_list(case: Case) -> bool:
    return any(isinstance(op, fops.Crop) and op.batched for op in case.ops())


# A handful of the goldens, one per kernel shape: compiling them proves the committed text is C++.
COMPILED = (
    "flat_u8_images",
    "compiles_u8_divide",
    "geo_u8_border_replicate_affine",
    "batch_u8_rects_resize_split",
    "div_f32_warp_deinterlace",
    "rw_readset_bf16_split_write",
    "math_flat_i16_abs",
    "math_pixel_u8_resize_pow",
    "geo_f32_rotate_half_turn_resize",
    "geo_u16_crop_rotate_counterclockwise",
    "geo_f32_crop_flip_horizontal_resize",
    "batch_u8_rects_resize_per_image",
    "batch_u8_per_image_affine",
    "batch_u8_per_image_geometry",
    "dag_u8_absdiff_threshold_mid_write",
    "dag_f32_blend_branch_geometry_mid_split",
    "dag_u8_composite_mask",
)


@pytest.mark.skipif(shutil.which(compilers.find_cxx()) is None, reason="no C++ compiler on PATH")
def test_golden_cpu_sources_compile(tmp_path: Path) -> None:
    paths = [golden_path(c, "cpu") for c in CASES if c.name in COMPILED]
    assert len(paths) == len(COMPILED)
    command = [compilers.find_cxx(), *compilers.GXX_FLAGS, "-fsyntax-only", "-I", str(INCLUDE_DIR), "-x", "c++"]
    for path in paths:
        result = subprocess.run([*command, str(path)], capture_output=True, text=True, cwd=tmp_path, check=False)
        assert result.returncode == 0, f"{path.name}:\n{result.stderr[-4000:]}"


@pytest.mark.skipif(not compilers.nvcc_available(), reason="nvcc not on PATH")
@pytest.mark.parametrize("name", COMPILED)
def test_golden_gpu_sources_compile_to_sm90_cubin(name: str, tmp_path: Path) -> None:
    (case,) = [c for c in CASES if c.name == name]
    cubin = compilers.compile_cubin(golden_path(case, "gpu").read_text(), INCLUDE_DIR, "sm_90", tmp_path)
    assert cubin[:4] == b"\x7fELF" and b"fkl_kernel" in cubin


@pytest.mark.skipif(shutil.which(compilers.find_cxx()) is None, reason="no C++ compiler on PATH")
def test_the_ctypes_block_is_the_cpp_params_of_every_case(
    tmp_path: Path, emitted: dict[tuple[str, str], EmittedKernel]
) -> None:
    """Both parameter blocks come from one layout (kernel_plan.layout_of): the C++ `Params` of every corpus
    case has the ctypes struct's size and each of its fields' offsets (static_asserts, one g++ run)."""
    from fklir.runtime.params import params_struct_type

    units = []
    for k, case in enumerate(CASES):
        kernel = emitted[(case.name, "cpu")]
        struct = params_struct_type(kernel.layout)
        fields = [name for name, _ in struct._fields_]  # pyright: ignore[reportAttributeAccessIssue]
        checks = [f"static_assert(sizeof(Params) == {ctypes.sizeof(struct)}, {case.name!r});"]
        checks += [
            f"static_assert(offsetof(Params, {name}) == {getattr(struct, name).offset}, {case.name + '.' + name!r});"
            for name in fields
        ]
        # each case in a namespace of its own; the include guard keeps one copy of the headers
        body = kernel.source.replace('#include "fkl/kernel.h"', "")
        units.append(f"namespace case{k} {{\n{body}\n{chr(10).join(checks)}\n}}\n".replace("'", '"'))
    source = tmp_path / "params.cpp"
    source.write_text('#include <cstddef>\n#include "fkl/kernel.h"\n' + "".join(units))
    command = [compilers.find_cxx(), *compilers.GXX_FLAGS, "-fsyntax-only", "-I", str(INCLUDE_DIR), str(source)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
