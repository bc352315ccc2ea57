"""Experiment: time alternative tap reads and blends of the bilinear warp kernel (device only).

Each variant keeps the emitted kernel and replaces only stage1 (the warp's sampling), so its output
must equal the pipeline's own bit for bit. Written against codegen v17's stage1 (fkl::Warping::blend
and Cast<f64> taps); v18 ships its "interior + magic + finite" row. Not a benchmark of record: it
exists to choose how the emitter reads a warp's four taps (see RESULTS.md).
Usage: python3 benchmarks/warp_variants.py [--sass DIR]
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np
from flat_variants import INCLUDE, time_kernel

import fklir as fkl
from fklir.backend import compilers

try:
    import torch
except ImportError:  # the variants compile without it (checked on the build machine)
    torch = None  # type: ignore[assignment]

W, H = 1920, 1080

# The taps of an interior sample read straight from its two source rows; samples near the border (and
# non-finite ones) keep the emitted tap1 path.
INTERIOR = """
    const fkl::Size src = size0(p, z);
    if (s.finite && s.ix >= 0 && s.iy >= 0 && s.ix < src.w - 1 && s.iy < src.h - 1) {
        const fkl::u8* r0 = (const fkl::u8*)p.h.src + ((fkl::u32)s.iy * (fkl::u32)p.h.src_pitch + (fkl::u32)s.ix * 3u);
        const fkl::u8* r1 = r0 + p.h.src_pitch;
        for (int k = 0; k < 3; ++k) {
            out[k] = BLEND(CAST(r0[k]), CAST(r0[3 + k]), CAST(r1[k]), CAST(r1[3 + k]), s.fx, s.fy);
        }
        return;
    }
"""

# u8 -> f64 through the exponent trick: an integer add and a DADD instead of a conversion instruction
# (conversions issue at a quarter of the FP64 rate).
MAGIC_CAST = """
FKL_HD fkl::f64 u8_to_f64(fkl::u8 v) {
    return __hiloint2double(0x43300000, (int)v) - 4503599627370496.0;
}
"""

# For finite taps a weight of 0 or 1 already gives u or v exactly, so the branches of step() only
# matter for inf/NaN sources, which an integer source cannot hold.
FINITE_BLEND = """
FKL_HD fkl::f32 blend_finite(fkl::f64 p00, fkl::f64 p01, fkl::f64 p10, fkl::f64 p11, fkl::f64 fx, fkl::f64 fy) {
    const fkl::f64 top = p00 * (1.0 - fx) + p01 * fx;
    const fkl::f64 bottom = p10 * (1.0 - fx) + p11 * fx;
    return (fkl::f32)(top * (1.0 - fy) + bottom * fy);
}
"""


def stage1_variant(source: str, blend: str, cast: str, interior: bool) -> str:
    """The emitted source with stage1's body rewritten: `blend`/`cast` name the C++ helpers to use."""
    start = source.index("FKL_HD void stage1(")
    end = source.index("FKL_HD fkl::Size size1(")
    stage1 = source[start:end]
    stage1 = stage1.replace("fkl::Cast<fkl::f64>::exec", cast).replace("fkl::Warping::blend", blend)
    if interior:
        fast = INTERIOR.replace("BLEND", blend).replace("CAST", cast)
        stage1 = stage1.replace("        return;\n    }\n", "        return;\n    }\n" + fast, 1)
    helpers = MAGIC_CAST + FINITE_BLEND
    return source[:start] + helpers + stage1 + source[end:]


def variants(source: str) -> dict[str, str]:
    plain, magic = "fkl::Cast<fkl::f64>::exec", "u8_to_f64"
    exact, finite = "fkl::Warping::blend", "blend_finite"
    return {
        "emitted": source,
        "interior": stage1_variant(source, exact, plain, True),
        "magic cast": stage1_variant(source, exact, magic, False),
        "finite blend": stage1_variant(source, finite, plain, False),
        "interior + magic": stage1_variant(source, exact, magic, True),
        "interior + magic + finite": stage1_variant(source, finite, magic, True),
    }


def matrix(perspective: bool) -> np.ndarray:
    if perspective:
        m = np.array([[0.95, 0.05, 40.0], [-0.03, 0.9, 60.0], [1e-5, 2e-5, 1.0]])
    else:
        a = math.radians(15.0)
        m = np.array([[0.9 * math.cos(a), 0.9 * math.sin(a), 30.0], [-0.9 * math.sin(a), 0.9 * math.cos(a), 250.0]])
    return m


def run(perspective: bool, sass_dir: Path | None) -> list[str]:
    kind = "perspective" if perspective else "affine"
    ops = (fkl.TensorRead(), fkl.Warping(matrix(perspective), W, H), fkl.SaturateCast("uint8"), fkl.TensorWrite())
    source = fkl.compose(*ops).source_for(np.uint8, (H, W, 3))
    texts = variants(source)
    cubins: dict[str, bytes | str] = {}
    for label, text in texts.items():
        try:
            cubins[label] = compilers.compile_cubin(
                text, INCLUDE, "sm_90", Path("/tmp/warpvar") / re.sub(r"\W", "_", kind + label)
            )
        except compilers.CompileError as err:
            cubins[label] = f"compile error: {str(err)[:300]}"
    if sass_dir is not None:
        for label, cubin in cubins.items():
            if isinstance(cubin, bytes):
                (sass_dir / f"{kind}_{re.sub(r'[^A-Za-z0-9]+', '_', label)}.cubin").write_bytes(cubin)
    if torch is None or not torch.cuda.is_available():
        return [f"{kind}: {label}: {'built' if isinstance(c, bytes) else c}" for label, c in cubins.items()]
    return time_variants(kind, ops, cubins)


def time_variants(kind: str, ops: tuple[object, ...], cubins: dict[str, bytes | str]) -> list[str]:
    from fklir.runtime import cuda_driver

    assert torch is not None
    pipe = fkl.compose(*ops, target="gpu")
    sets = max(2, math.ceil(10 * 60e6 / (2 * W * H * 3)))
    g = torch.Generator().manual_seed(1)
    xs = [torch.randint(0, 256, (H, W, 3), generator=g, dtype=torch.uint8).cuda() for _ in range(sets)]
    ref = pipe(xs[0])
    outs = [torch.empty_like(ref) for _ in range(sets)]
    plan = next(iter(pipe._plans.values()))  # pyright: ignore[reportAttributeAccessIssue]
    stream = torch.cuda.current_stream().cuda_stream
    grid, block = (-(-W // 128), -(-H // 8), 1), (32, 8, 1)
    rows = [f"## warp {kind} {W}x{H} uint8x3, {sets} rotated sets", "", "| variant | µs | equal |", "|---|---|---|"]
    for label, cubin in cubins.items():
        if isinstance(cubin, str):
            rows.append(f"| {label} | - | {cubin} |")
            continue
        kernel = cuda_driver.load_kernel(cubin, "fkl_kernel", 0)

        def launch(i: int, kernel: object = kernel) -> None:
            plan.set_pointers(xs[i % sets].data_ptr(), outs[i % sets].data_ptr())
            cuda_driver.launch(kernel, grid, block, plan.arg_address, stream)

        for o in outs:
            o.zero_()
        us = time_kernel(launch)
        launch(0)
        torch.cuda.synchronize()
        rows.append(f"| {label} | {us:.1f} | {bool(torch.equal(outs[0], ref))} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sass", type=Path, default=None)
    args = parser.parse_args()
    if args.sass is not None:
        args.sass.mkdir(parents=True, exist_ok=True)
    print("\n".join([*run(False, args.sass), "", *run(True, args.sass)]))


if __name__ == "__main__":
    main()
