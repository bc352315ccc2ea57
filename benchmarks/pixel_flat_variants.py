"""Experiment: time the pixel-wise flat kernel (emit_flat.emit_pixel_flat_gpu) against its alternatives (device).

    PYTHONPATH=. python3 benchmarks/pixel_flat_variants.py

Issue 19's colour conversions on a 4K uint8 image, each kernel launched on the emitted parameter block:
- staged (shipped): a block's tile of whole pixels through shared memory, coalesced 16-byte loads and stores;
- direct: each thread loads its group of whole pixels straight from global memory (16-byte loads at the
  group's stride, 48 bytes for RGB) and stores its results the same way, no barrier;
- pixel kernel: the generic pixel kernel that these chains took before (codegen v16: 4 pixels a thread,
  byte loads), emitted by the same emitter with the flat path turned off.
Each is built first, which needs no GPU (NVRTC, else nvcc; without a GPU also ptxas's register counts); on a
GPU each is checked equal to cv2.cvtColor, then timed with bench_chain's method, beside a device copy of
the bytes read + written (the floor). Not a benchmark of record: it exists to choose the shipped kernel.
"""

from __future__ import annotations

import ctypes
import math
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Method
from ptxas_usage import kernel_usage

import fklir as fkl
from fklir.backend import compilers, emit_cpp
from fklir.backend.build import INCLUDE_DIR, kernel_values
from fklir.backend.emit_flat import pixel_flat_shape
from fklir.frontend import ops as fops
from fklir.frontend.lowering import kernels_of, lower_chain, run_passes
from fklir.runtime.launch import Extent, LaunchPlan

ARCH = "sm_90"
METHOD = Method(calls=20, reps=11, warmup=5)
W, H = 3840, 2160
CODES = (("RGB2GRAY", 3, 1), ("BGR2RGB", 3, 3), ("RGB2RGBA", 3, 4), ("GRAY2RGB", 1, 3))
PIXEL_BLOCK = (32, 8, 1)


@dataclass(frozen=True)
class Variant:
    label: str
    source: str
    layout: Any
    values: Any

    def grid(self) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        if self.layout.mode == "flat":
            threads = -(-H * W * self.layout.out_channels // self.layout.elements_per_thread)
            return (-(-threads // self.layout.flat_block), 1, 1), (self.layout.flat_block, 1, 1)
        across = PIXEL_BLOCK[0] * self.layout.pixels_per_thread
        return (-(-W // across), -(-H // PIXEL_BLOCK[1]), 1), PIXEL_BLOCK


def _kernel(code: str, cin: int) -> Any:
    module = run_passes(
        lower_chain([fops.TensorRead(), fkl.ColorConversion(code), fops.TensorWrite()], "uint8", cin, 1)
    )
    (kernel,) = kernels_of(module)
    return kernel


def _direct(source: str, cin: int, cout: int) -> str:
    """The emitted source with its GPU entry replaced by one that loads and stores each group directly."""
    s = pixel_flat_shape("uint8", cin, "uint8", cout)
    g, vin, vout = s.pixels, s.vectors_in, s.vectors_out
    entry = f"""#if defined(__CUDACC__)
extern "C" __global__ void __launch_bounds__({s.threads}) fkl_kernel(const Params p) {{
    fkl::let_next_kernel_start();
    fkl::wait_for_previous_kernel();
    const fkl::i64 pixels = p.h.n / {cout};
    const fkl::i64 first = ((fkl::i64)blockIdx.x * {s.threads} + threadIdx.x) * {g};
    const fkl::u8* src = (const fkl::u8*)p.h.src + first * {cin};
    fkl::u8* dst = (fkl::u8*)p.h.dst + first * {cout};
    if (first >= pixels) return;
    if (!p.h.aligned || first + {g} > pixels) {{
#pragma unroll 1
        for (int x = 0; x < {g} && first + x < pixels; ++x) compute_pixel(p, src + x * {cin}, dst + x * {cout});
        return;
    }}
    fkl::Vec16<fkl::u8> in[{vin}];
#pragma unroll
    for (int k = 0; k < {vin}; ++k) in[k] = fkl::load16(src + 16 * k);
    fkl::Vec16<fkl::u8> out[{vout}];
#pragma unroll
    for (int i = 0; i < {g}; ++i) {{
        fkl::u8 px[{cin}];
#pragma unroll
        for (int c = 0; c < {cin}; ++c) px[c] = in[(i * {cin} + c) / 16].v[(i * {cin} + c) % 16];
        fkl::u8 r[{cout}];
        compute_pixel(p, px, r);
#pragma unroll
        for (int c = 0; c < {cout}; ++c) out[(i * {cout} + c) / 16].v[(i * {cout} + c) % 16] = r[c];
    }}
#pragma unroll
    for (int k = 0; k < {vout}; ++k) fkl::store16(dst + 16 * k, out[k]);
}}
#else
"""
    head, rest = source.split("#if defined(__CUDACC__)\n", 1)
    return head + entry + rest.split("#else\n", 1)[1]


def variants(code: str, cin: int, cout: int) -> list[Variant]:
    kernel = _kernel(code, cin)
    shipped = emit_cpp.emit_kernel(kernel)
    with mock.patch.object(emit_cpp, "_is_flat", return_value=False):
        pixel = emit_cpp.emit_kernel(kernel)
    values = kernel_values(kernel)
    return [
        Variant("staged (shipped)", shipped.source, shipped.layout, values),
        Variant("direct", _direct(shipped.source, cin, cout), shipped.layout, values),
        Variant("pixel kernel (v16)", pixel.source, pixel.layout, values),
    ]


def build(variant: Variant) -> bytes:
    if compilers.nvrtc_available():
        return compilers.compile_cubin_nvrtc(variant.source, INCLUDE_DIR, ARCH)
    with tempfile.TemporaryDirectory() as folder:
        return compilers.compile_cubin(variant.source, INCLUDE_DIR, ARCH, Path(folder))


def registers(variant: Variant) -> str:
    """ptxas's registers and shared memory of fkl_kernel, or '?' without nvcc."""
    flags = [f for f in compilers.NVCC_FLAGS if f != "-cubin"]
    usage = kernel_usage(variant.source, [*flags, f"-arch={ARCH}", "-I", str(INCLUDE_DIR)])
    return (usage or {}).get("fkl_kernel", "?")


def run_code(
    torch: Any,
    cv2: Any,
    stream: Any,
    code: str,
    cin: int,
    cout: int,
    built: list[tuple[Variant, bytes]],
    l2: int,
    cycles: float,
) -> list[str]:
    from fklir.runtime import cuda_driver

    in_shape, out_shape = (H, W, cin) if cin > 1 else (H, W), (H, W, cout)
    frame_bytes = H * W * (cin + cout)
    sets = min(bc.MAX_BUFFER_SETS, max(2, math.ceil(bc.ROTATE_L2_MULTIPLE * l2 / frame_bytes)))
    inputs = [torch.randint(0, 256, in_shape, dtype=torch.uint8, device="cuda") for _ in range(sets)]
    outputs = [torch.empty(out_shape, dtype=torch.uint8, device="cuda") for _ in range(sets)]
    expected = (
        torch.from_numpy(cv2.cvtColor(inputs[0].cpu().numpy(), getattr(cv2, f"COLOR_{code}"))).cuda().reshape(out_shape)
    )
    cells = []
    for variant, cubin in built:
        try:
            kernel = cuda_driver.load_kernel(cubin, "fkl_kernel", 0)
            plan = LaunchPlan(variant.layout, variant.values)
            plan.set_extent(Extent(W, H, 1, cin, W, H, 1, cout))
            args = (ctypes.c_void_p * 1)(ctypes.addressof(plan.params))
            grid, block = variant.grid()

            def call(
                i: int,
                kernel: Any = kernel,
                plan: LaunchPlan = plan,
                args: Any = args,
                grid: Any = grid,
                block: Any = block,
            ) -> None:
                plan.set_pointers(inputs[i % sets].data_ptr(), outputs[i % sets].data_ptr())
                cuda_driver.launch(kernel, grid, block, ctypes.addressof(args), stream.cuda_stream)

            outputs[0].fill_(0xA5)
            call(0)
            torch.cuda.synchronize()
            if not torch.equal(outputs[0], expected):
                cells.append("WRONG")
                continue
            cells.append(f"{statistics.median(bc.measure(torch, stream, call, METHOD, cycles, True).gpu_us):.1f}")
        except Exception as error:  # one variant failing must not lose the others' numbers
            print(f"pixel_flat_variants: {code} {variant.label}: {type(error).__name__}: {error}", file=sys.stderr)
            cells.append("failed")
    half = frame_bytes // 2  # a copy of half the bytes reads and writes them all
    src, dst = torch.empty(half, dtype=torch.uint8, device="cuda"), torch.empty(half, dtype=torch.uint8, device="cuda")
    copies = [(src.roll(i), dst.clone()) for i in range(sets)]
    floor = bc.measure(
        torch, stream, lambda i: copies[i % len(copies)][1].copy_(copies[i % len(copies)][0]), METHOD, cycles, True
    )
    return [*cells, f"{statistics.median(floor.gpu_us):.1f}"]


def main() -> int:
    table = {code: variants(code, cin, cout) for code, cin, cout in CODES}
    built = {code: [(v, build(v)) for v in vs] for code, vs in table.items()}
    labels = [v.label for v in next(iter(table.values()))]
    gpu = fkl.gpu_available()
    print("| conversion 3840x2160 uint8 | " + " | ".join(f"{label} µs" for label in labels) + " | copy floor µs |")
    print("|---|" + "---|" * (len(labels) + 1))
    failed = False
    if gpu:
        import cv2
        import torch  # pyright: ignore[reportMissingImports]

        stream = torch.cuda.Stream()
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or bc.L2_FALLBACK_BYTES
        with torch.cuda.stream(stream), torch.no_grad():
            cycles = bc.calibrate_sleep(torch, stream)
            for code, cin, cout in CODES:
                cells = run_code(torch, cv2, stream, code, cin, cout, built[code], l2, cycles)
                failed = failed or any(c in ("WRONG", "failed") for c in cells)
                print(f"| {code} | " + " | ".join(cells) + " |")
                torch.cuda.empty_cache()
    else:
        for code, vs in table.items():
            print(f"| {code} (ptxas) | " + " | ".join(registers(v) for v in vs) + " | - |")
        print("\nNo GPU: built only.")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
