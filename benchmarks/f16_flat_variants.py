"""Experiment (issue 19): flat float16 Mul + Add and uint8x4 Cast -> Mul -> Sub -> SaturateCast at 4K on the GPU.

float16 variants keep the emitted kernel and swap the GPU side of fkl/core.h's f16 conversions (a patched copy
of the include folder), the shared tile's lanes or the kernel's inner loop; uint8 variants give a thread more of
the emitter's groups, or unroll its rounds. Every variant's output is compared bit for bit with the first row's
(float16: the kernel before this change, on an input of every float16 bit pattern: NaN payloads, infinities,
subnormals, rounding ties), then timed on bench_chain's input against a device copy of the same bytes. Not a
benchmark of record: it chooses what fkl/core.h and emit_flat.py ship. Usage:
python3 benchmarks/f16_flat_variants.py [--compile-only]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import bench_chain
import flat_variants
import ptxas_usage

import fklir as fkl
from fklir.backend import compilers, emit_flat

W, H = 3840, 2160
METHOD = bench_chain.Method(calls=20, reps=9, warmup=5)

# The GPU prologues of the conversions before this change: a branch per conversion, falling through to the
# bit path (the CPU's code) for NaNs.
BRANCH_TO_F32 = """    if ((h.bits & 0x7c00u) != 0x7c00u || (h.bits & 0x3ffu) == 0) {
        f32 x;
        asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h.bits));
        return x;
    }
"""
BRANCH_FROM_F32 = """    if (x == x) {
        u16 h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
        return f16{h};
    }
"""
# cvt alone: a NaN gets whatever the instruction gives (its payload may differ from the CPU's)
CVT_TO_F32 = """    f32 x;
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h.bits));
    return x;
"""
CVT_FROM_F32 = """    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    return f16{h};
"""
_FUNCTION = r"(FKL_HD {ret} {name}\({arg}\) \{{\n#if defined\(__CUDA_ARCH__\)\n)(.*?)#else\n(.*?)#endif\n\}}"


def patched_core(core: str, to_f32: str, from_f32: str, fall_through: bool) -> str:
    """core.h with the GPU sides of to_f32(f16) and f16_from_f32 replaced; `fall_through`: they end in the
    CPU's bit path, as before this change, instead of being whole GPU bodies."""
    for ret, name, arg, gpu in (("f32", "to_f32", "f16 h", to_f32), ("f16", "f16_from_f32", "f32 x", from_f32)):
        pattern = re.compile(_FUNCTION.format(ret=ret, name=name, arg=arg), re.S)
        match = pattern.search(core)
        assert match is not None, f"core.h: no GPU branch in {name}"
        body = f"{gpu}#endif\n{match.group(3)}}}" if fall_through else f"{gpu}#else\n{match.group(3)}#endif\n}}"
        core = core[: match.start()] + match.group(1) + body + core[match.end() :]
    return core


def include_variants(root: Path) -> dict[str, Path]:
    """{name: include folder}: copies of the shipped headers with other f16 conversions."""
    folders = {}
    core = (flat_variants.INCLUDE / "fkl" / "core.h").read_text()
    for name, to_f32, from_f32, fall_through in (
        ("branches", BRANCH_TO_F32, BRANCH_FROM_F32, True),
        ("cvt only", CVT_TO_F32, CVT_FROM_F32, False),
    ):
        folder = root / re.sub(r"\W+", "_", name)
        shutil.copytree(flat_variants.INCLUDE, folder)
        (folder / "fkl" / "core.h").write_text(patched_core(core, to_f32, from_f32, fall_through))
        folders[name] = folder
    return folders


def u8_tile(source: str) -> str:
    """The emitted f16 kernel with its shared tile of byte lanes, as before this change (nvcc splits each
    16-byte copy of a Vec16<u8> into its bytes and puts them back together)."""
    before = source.replace("__shared__ fkl::Vec16<fkl::u32> tile[", "__shared__ fkl::Vec16<fkl::u8> tile[")
    before = before.replace(
        "const fkl::u32* src = (const fkl::u32*)(in_base", "const fkl::u8* src = (const fkl::u8*)(in_base"
    )
    before = before.replace("fkl::u32* dst = (fkl::u32*)(out_base", "fkl::u8* dst = (fkl::u8*)(out_base")
    before = re.sub(r"(tile\[t \+ k \* \d+\] = fkl::load16\(src \+ \(t \+ k \* \d+\)) \* 4\)", r"\1 * 16)", before)
    before = re.sub(r"(fkl::store16\(dst \+ \(t \+ k \* \d+\)) \* 4,", r"\1 * 16,", before)
    assert before.count("* 16") == source.count("* 16") + 2, "the emitted staging changed"
    return before


def regrouped(source: str, shape: emit_flat.FlatShape, groups: int) -> tuple[str, int]:
    """The emitted kernel with `groups` of the emitter's groups a thread (more bytes in flight per thread)."""
    wider = dataclasses.replace(shape, group=shape.group * groups)
    flag = "true" if "bool fast = true;" in source else None  # the f16 fast path's (no division here)
    cut, end = source.index("// Block b owns elements"), source.index("#else\n")
    return source[:cut] + "\n".join(emit_flat.emit_flat_gpu(wider, flag)) + "\n" + source[end:], wider.group


def exact_only(source: str) -> str:
    """The emitted f16 kernel without compute_fast: every element through compute()'s exact conversions, as
    before this change."""
    start, end = source.index("// compute() on the float16 conversions' fast path"), source.index("// Block b owns")
    exact = source[:start] + source[end:]
    exact = exact.replace("    bool fast = true;\n", "    const bool fast = true;  // no float division\n")
    exact, calls = re.subn(r"compute_fast\(p, (.*?), (e % \d+), fast\)", r"compute(p, \1, \2)", exact)
    assert calls == 1 and "compute_fast" not in exact, "the emitted f16 kernel changed"
    return exact


def half2_native(source: str, channels: int) -> str:
    """The emitted f16 Mul + Add kernel computing two elements per mul.rn.f16x2 / add.rn.f16x2: each f16 product
    and sum rounded once, which is the f32 computation rounded to f16 (f32 holds the exact product, and 24 >=
    2 * 11 + 2 bits make the sum's double rounding harmless); NaN payloads are the instruction's."""
    loop = re.search(
        r"        for \(int e = 0; e < (\d+); \+\+e\) out\[e / 8\]\.v\[e % 8\]"
        r" = compute\(p, in\[e / 8\]\.v\[e % 8\], e % \d+\);\n",
        source,
    )
    assert loop is not None, "the emitted compute loop changed"
    group = int(loop.group(1))
    body = f"""        for (int e = 0; e < {group}; e += 2) {{
            const int c0 = e % {channels}, c1 = (e + 1) % {channels};
            const fkl::u32 m = (fkl::u32)p.mul1[c0].bits | ((fkl::u32)p.mul1[c1].bits << 16);
            const fkl::u32 a = (fkl::u32)p.add2[c0].bits | ((fkl::u32)p.add2[c1].bits << 16);
            const fkl::u32 x = (fkl::u32)in[e / 8].v[e % 8].bits | ((fkl::u32)in[e / 8].v[e % 8 + 1].bits << 16);
            fkl::u32 y;
            asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(y) : "r"(x), "r"(m));
            asm("add.rn.f16x2 %0, %0, %1;" : "+r"(y) : "r"(a));
            out[e / 8].v[e % 8].bits = (fkl::u16)y;
            out[e / 8].v[e % 8 + 1].bits = (fkl::u16)(y >> 16);
        }}
"""
    return source[: loop.start()] + body + source[loop.end() :]


def rounds(source: str, unrolled: bool) -> str:
    """The emitted 1-byte kernel with its rounds loop unrolled or rolled (the emitter rolls them for groups of
    more than emit_flat.UNROLLED_GROUP elements, to keep the code small)."""
    rolled_text, unrolled_text = "#pragma unroll 1\n        for (int round", "#pragma unroll\n        for (int round"
    assert rolled_text in source or unrolled_text in source, "the emitted rounds loop changed"
    return source.replace(rolled_text, unrolled_text) if unrolled else source.replace(unrolled_text, rolled_text)


# a variant: (label, source, include folder, elements per thread, block)
Variant = tuple[str, str, Path, int, int]


def variants_of(
    name: str, pipe: Any, dtype: str, shape: tuple[int, int, int], folders: dict[str, Path]
) -> list[Variant]:
    """The variants of one workload; the first is the kernel before this change, the reference."""
    source = pipe.source_for(dtype, shape)
    per_thread, block = _emitted_shape(source)
    flat = emit_flat.flat_shape(dtype, dtype if dtype == "float16" else "uint8", shape[2])
    shipped = flat_variants.INCLUDE
    if dtype == "float16":
        exact = exact_only(source)
        wide, per = regrouped(source, flat, 2)
        return [
            ("before: branches, u8 tile", u8_tile(exact), folders["branches"], per_thread, block),
            ("select, u8 tile", u8_tile(exact), shipped, per_thread, block),
            ("select, u32 tile", exact, shipped, per_thread, block),
            ("shipped: select, u32 tile, fast path + NaN flag", source, shipped, per_thread, block),
            ("cvt only (NaNs the hardware's), u32 tile", exact, folders["cvt only"], per_thread, block),
            ("half2 native (NaNs the hardware's), u32 tile", half2_native(exact, shape[2]), shipped, per_thread, block),
            ("shipped, 2 groups a thread", wide, shipped, per, block),
        ]
    found = [
        ("before: rounds rolled", rounds(source, unrolled=False), shipped, per_thread, block),
        ("shipped", source, shipped, per_thread, block),
    ]
    if rounds(source, unrolled=True) != source:
        found.append(("rounds unrolled", rounds(source, unrolled=True), shipped, per_thread, block))
    for groups, unrolled in ((2, False), (2, True), (4, True)):
        text, per = regrouped(source, flat, groups)
        how = "unrolled" if unrolled else "rolled"
        found.append((f"{groups} groups a thread, rounds {how}", rounds(text, unrolled), shipped, per, block))
    return found


def _emitted_shape(source: str) -> tuple[int, int]:
    """(elements per thread, block) from the emitted kernel's comment: 'Block b owns elements [b * N, ...'."""
    match = re.search(r"Block b owns elements \[b \* (\d+), .*?: 256 groups of (\d+) elements", source, re.S)
    assert match is not None, "the emitted flat kernel's comment changed"
    return int(match.group(2)), 256


def build(variants: list[tuple[str, list[Variant]]], workdir: Path) -> dict[tuple[str, str], tuple[bytes | str, str]]:
    """{(workload, label): (cubin or compile error, ptxas registers)}, compiled in parallel (nvcc processes)."""
    jobs: dict[tuple[str, str], Callable[[], tuple[bytes | str, str]]] = {}
    for name, found in variants:
        for label, text, folder, _, _ in found:
            stem = workdir / re.sub(r"\W+", "_", f"{name}_{label}")

            def job(text: str = text, folder: Path = folder, stem: Path = stem) -> tuple[bytes | str, str]:
                try:
                    cubin: bytes | str = compilers.compile_cubin(text, folder, "sm_90", stem)
                except compilers.CompileError as err:
                    return str(err)[:300], "-"
                usage = ptxas_usage.kernel_usage(text, [*compilers.NVCC_FLAGS[:-1], "-arch=sm_90", "-I", str(folder)])
                return cubin, ", ".join(usage.values()) if usage else "-"

            jobs[(name, label)] = job
    with ThreadPoolExecutor(max_workers=os.cpu_count()) as pool:
        futures = {key: pool.submit(job) for key, job in jobs.items()}
        return {key: future.result() for key, future in futures.items()}


def every_f16(torch: Any, shape: tuple[int, int, int]) -> Any:
    """An input holding every float16 bit pattern, repeated (NaN payloads, infinities, subnormals, ties)."""
    n = shape[0] * shape[1] * shape[2]
    bits = torch.arange(n, dtype=torch.int64) * 40503 % 65536  # 40503 is odd: every pattern in each 65536
    return (bits - 65536 * (bits >= 32768)).to(torch.int16).view(torch.float16).reshape(shape)


def run(
    name: str, pipe: Any, wl: Any, found: list[Variant], built: dict[Any, Any], torch: Any, rate: float
) -> list[str]:
    from fklir.runtime import cuda_driver

    h, w, c = wl.shape
    stream = torch.cuda.current_stream()
    timed = wl.make_input()
    special = every_f16(torch, wl.shape).cuda() if timed.dtype == torch.float16 else timed
    pair_bytes = 2 * timed.numel() * timed.element_size()
    sets = max(
        2,
        min(
            bench_chain.MAX_BUFFER_SETS,
            -(-bench_chain.ROTATE_L2_MULTIPLE * bench_chain.L2_FALLBACK_BYTES // pair_bytes),
        ),
    )
    inputs = [timed.roll(i, 0).contiguous() for i in range(sets)]
    outputs = [torch.empty_like(timed) for _ in range(sets)]
    pipe(inputs[0])  # builds the plan this experiment launches through
    plan = next(iter(pipe._plans.values()))
    n = timed.numel()

    def copy(i: int) -> None:
        outputs[i % sets].copy_(inputs[i % sets])

    copy_us = statistics.median(bench_chain.measure(torch, stream, copy, METHOD, rate, True).gpu_us)
    rows = [
        f"## {name}: {w}x{h}x{c}, {sets} rotated sets, device copy of the same bytes {copy_us:.1f} µs",
        "",
        "| variant | µs | copy/µs | bit-exact vs the first row (f16: every bit pattern) | ptxas |",
        "|---|---|---|---|---|",
    ]
    reference = None
    for label, _, _, per_thread, block in found:
        cubin, regs = built[(name, label)]
        if isinstance(cubin, str):
            rows.append(f"| {label} | compile error | | {cubin} | |")
            continue
        kernel = cuda_driver.load_kernel(cubin, "fkl_kernel", 0)
        grid = -(-n // (per_thread * block))

        def launch(src: Any, dst: Any, kernel: Any = kernel, grid: int = grid, block: int = block) -> None:
            plan.set_pointers(src.data_ptr(), dst.data_ptr())
            cuda_driver.launch(kernel, (grid, 1, 1), (block, 1, 1), plan.arg_address, stream.cuda_stream)

        check = torch.full_like(special, 0)
        launch(special, check)
        torch.cuda.synchronize()
        if reference is None:
            reference = check.clone()
        same = check.view(torch.uint8).eq(reference.view(torch.uint8)).all().item()
        verdict = "yes" if same else _difference(torch, check, reference)
        result = bench_chain.measure(
            torch, stream, lambda i, launch=launch: launch(inputs[i % sets], outputs[i % sets]), METHOD, rate, True
        )
        us = statistics.median(result.gpu_us)
        rows.append(f"| {label} | {us:.1f} | {copy_us / us:.2f} | {verdict} | {regs} |")
    return rows


def _difference(torch: Any, got: Any, ref: Any) -> str:
    if got.dtype != torch.float16:
        return f"no: {int((got != ref).sum().item())} differ"
    bits_differ = got.view(torch.int16) != ref.view(torch.int16)
    both_nan = torch.isnan(got) & torch.isnan(ref)
    not_nan = int((bits_differ & ~both_nan).sum().item())
    return f"no: {int(bits_differ.sum().item())} differ, {not_nan} of them not NaN vs NaN"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--compile-only", action="store_true", help="build every variant (no GPU needed)")
    args = parser.parse_args()
    import torch

    shapes = [(dtype, c) for dtype in ("float16", "uint8") for c in (1, 2, 3, 4)]
    workloads = {(wl.label.split()[1], wl.shape[2]): wl for wl in bench_chain.flat_workloads(torch, fkl, W, H)}
    with tempfile.TemporaryDirectory() as tmp:
        folders = include_variants(Path(tmp))
        chosen = []
        for dtype, c in shapes:
            wl = workloads[(f"{dtype}x{c}", c)]
            pipe = fkl.compose(*wl.fklir_ops, target="gpu")
            name = f"{dtype}x{c}"
            chosen.append((name, pipe, wl, variants_of(name, pipe, dtype, wl.shape, folders)))
        built = build([(name, found) for name, _, _, found in chosen], Path(tmp) / "build")
    if args.compile_only:
        for (name, label), (cubin, regs) in built.items():
            print(f"{name} | {label} | {'ok' if isinstance(cubin, bytes) else cubin} | {regs}")
        return
    torch.cuda.init()
    stream = torch.cuda.current_stream()
    rate = bench_chain.calibrate_sleep(torch, stream)
    lines = [f"f16_flat_variants: {torch.cuda.get_device_name()}, method {METHOD}", ""]
    for name, pipe, wl, found in chosen:
        lines += [*run(name, pipe, wl, found, built, torch, rate), ""]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
