#!/usr/bin/env python3
"""The shipped nv12_to_rgb kernel against torch, OpenCV and CV-CUDA, on the GPU and on the CPU (SPEC §6.2).

    python benchmarks/bench_nv12_to_rgb.py [--quick] [--all] [--cpu] [--budget SECONDS] [--size 3840x2160]
                                           [--out PATH]

GPU workloads (NV12 frames in cv2's single-buffer layout, BT.601 limited range): one WxH frame and 8 1080p
frames to packed RGB uint8, and 8 1080p frames to planar float32 / 255 (--all adds one 1080p frame to packed
RGB and one WxH frame to planar float32). Peers: a device copy moving the same bytes (the bandwidth floor),
fklir, torch eager and torch.compile (OpenCV's fixed-point formula in int32 ops), CV-CUDA
(cvcuda.cvtcolor_into, then convertto_into and reformat_into for planar float32; absent unless installed:
/work/shared/CUDA-NOTES.md says how the device stages it) and cv2.cuda.cvtColor when OpenCV has CUDA. Every
peer is checked against cv2.cvtColor on the CPU, then timed with bench_chain.py's method (CUDA events around
back-to-back calls queued behind a sleep kernel, medians; inputs and outputs rotated past L2), with fewer
calls than bench_chain's so that a default run fits a shared device session. CV-CUDA and cv2.cuda are left out
of a workload when their first call takes longer than bench_chain.FIRST_CALL_CAP_S. CPU workloads (the packed ones):
fklir's Highway and plain C++ versions against cv2.cvtColor, perf_counter medians; measured without a GPU, or
with --cpu, so that on a machine without one --quick still runs.

Once --budget seconds have passed, the workloads not yet started are skipped with a line naming them. Progress
goes to stderr; the markdown report goes to stdout and, with --out, is appended to PATH, one row as soon as its
workload is done, so that a run stopped by a time limit keeps its finished rows. Exit: 0 ok, 1 fklir failed or
was wrong, 2 no fklir, cv2 or numpy.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Method, Result, say

GPU_PEERS = ("copy", "fklir", "eager", "compile", "cvcuda", "cv2.cuda")
CPU_PEERS = ("fklir", "fklir plain C++", "cv2")
CPU_FULL, CPU_QUICK = Method(calls=10, reps=11, warmup=3), Method(calls=3, reps=3, warmup=1)
# OpenCV's BT.601 limited-range constants (color_yuv.simd.hpp), for the torch peers
CY, CVR, CVG, CUG, CUB, SHIFT = 1220542, 1673527, -852492, -409993, 2116026, 20


def fail(message: str) -> NoReturn:
    print(f"bench_nv12_to_rgb: {message}", file=sys.stderr)
    sys.exit(2)


def parse_args(argv: list[str]) -> argparse.Namespace:
    def size(text: str) -> tuple[int, int]:
        w, _, h = text.lower().partition("x")
        if not (w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0 and int(w) % 2 == 0 and int(h) % 2 == 0):
            raise argparse.ArgumentTypeError(f"expected WxH with positive even integers, got {text!r}")
        return int(w), int(h)

    p = argparse.ArgumentParser(description="nv12_to_rgb vs torch, OpenCV and CV-CUDA (SPEC §6.2)")
    p.add_argument("--quick", action="store_true", help="few calls and repetitions (smoke test)")
    p.add_argument("--all", action="store_true", help="also the workloads beyond issue 16's three")
    p.add_argument("--cpu", action="store_true", help="also measure the CPU when there is a GPU")
    p.add_argument("--budget", type=float, default=45.0, metavar="SECONDS", help="skip workloads after this (45)")
    p.add_argument("--size", type=size, default=(3840, 2160), metavar="WxH", help="the single frame, default 3840x2160")
    p.add_argument("--out", type=Path, metavar="PATH", help="also append the markdown report to PATH")
    return p.parse_args(argv)


@dataclass(frozen=True)
class Workload:
    label: str
    batch: int
    width: int
    height: int
    planar: bool  # planar float32 / 255, else packed RGB uint8

    @property
    def in_bytes(self) -> int:
        return self.batch * self.height * 3 // 2 * self.width

    @property
    def out_bytes(self) -> int:
        return self.batch * self.height * self.width * 3 * (4 if self.planar else 1)


def workloads(width: int, height: int, every: bool) -> list[Workload]:
    """Issue 16's three, and with `every` two more."""
    asked = [
        Workload(f"{width}x{height} NV12 → RGB uint8", 1, width, height, False),
        Workload("8 × 1920x1080 NV12 → RGB uint8", 8, 1920, 1080, False),
        Workload("8 × 1920x1080 NV12 → planar float32 / 255", 8, 1920, 1080, True),
    ]
    more = [
        Workload("1920x1080 NV12 → RGB uint8", 1, 1920, 1080, False),
        Workload(f"{width}x{height} NV12 → planar float32 / 255", 1, width, height, True),
    ]
    return asked + more if every else asked


def cv2_reference(cv2: Any, np: Any, frames: Any) -> Any:
    """cv2.cvtColor of each frame: (B, H, W, 3) uint8."""
    return np.stack([cv2.cvtColor(frame, cv2.COLOR_YUV2RGB_NV12) for frame in frames])


# ----- GPU ---------------------------------------------------------------------------------------------


def torch_nv12_to_rgb(torch: Any, frames: Any, height: int) -> Any:
    """OpenCV's fixed-point NV12 -> RGB in torch int32 ops: (B, H * 3 / 2, W) uint8 -> (B, H, W, 3) uint8."""
    batch, _rows, width = frames.shape
    y = frames[:, :height].to(torch.int32)
    uv = frames[:, height:].reshape(batch, height // 2, width // 2, 2).to(torch.int32) - 128
    uv = uv.repeat_interleave(2, dim=1).repeat_interleave(2, dim=2)
    u, v = uv[..., 0], uv[..., 1]
    luma = (y - 16).clamp_min(0) * CY + (1 << (SHIFT - 1))
    r = (luma + CVR * v) >> SHIFT
    g = (luma + CUG * u + CVG * v) >> SHIFT
    b = (luma + CUB * u) >> SHIFT
    return torch.stack([r, g, b], dim=-1).clamp(0, 255).to(torch.uint8)


def gpu_peers(
    torch: Any, fkl: Any, stream: Any, wl: Workload, inputs: list[Any], outputs: list[Any], ring: list[Any]
) -> dict[str, Callable[[], bc.Peer]]:
    """Per peer, a factory of its call (bench_chain's shape); a factory that raises leaves its peer out."""
    from fklir.kernels.nv12_to_rgb import nv12_to_rgb

    sets = len(inputs)
    half = (wl.in_bytes + wl.out_bytes) // 2

    def eager_call(frames: Any) -> Any:
        rgb = torch_nv12_to_rgb(torch, frames, wl.height)
        return rgb.permute(0, 3, 1, 2).to(torch.float32).div(255).contiguous() if wl.planar else rgb

    def held(fn: Callable[[Any], Any]) -> bc.Peer:
        return (lambda i: ring.__setitem__(i % sets, fn(inputs[i % sets]))), lambda: ring[0]

    def copy() -> bc.Peer:
        # a copy of (in + out) / 2 bytes reads and writes what the conversion reads and writes
        sources = [torch.randint(0, 256, (half,), dtype=torch.uint8, device="cuda") for _ in range(sets)]
        targets = [torch.empty_like(s) for s in sources]
        return (lambda i: targets[i % sets].copy_(sources[i % sets])), lambda: None

    def fklir() -> bc.Peer:
        options: dict[str, Any] = {"dtype": "float32", "normalize": True} if wl.planar else {}
        return (
            lambda i: nv12_to_rgb(inputs[i % sets], out=outputs[i % sets], stream=stream, **options)
        ), lambda: outputs[0]

    def cvcuda_peer() -> bc.Peer:
        import cvcuda  # pyright: ignore[reportMissingImports]

        cv_stream = cvcuda.as_stream(stream)
        rows = wl.height * 3 // 2
        sources = [cvcuda.as_tensor(x.reshape(wl.batch, rows, wl.width, 1), "NHWC") for x in inputs]
        code = cvcuda.ColorConversion.YUV2RGB_NV12
        if not wl.planar:
            targets = [cvcuda.as_tensor(out, "NHWC") for out in outputs]
            return (
                lambda i: cvcuda.cvtcolor_into(targets[i % sets], sources[i % sets], code, stream=cv_stream)
            ), lambda: outputs[0]
        rgb = torch.empty((wl.batch, wl.height, wl.width, 3), dtype=torch.uint8, device="cuda")
        scaled = torch.empty((wl.batch, wl.height, wl.width, 3), dtype=torch.float32, device="cuda")
        rgb_t, scaled_t = cvcuda.as_tensor(rgb, "NHWC"), cvcuda.as_tensor(scaled, "NHWC")
        targets = [cvcuda.as_tensor(out, "NCHW") for out in outputs]

        def three_ops(i: int) -> None:
            cvcuda.cvtcolor_into(rgb_t, sources[i % sets], code, stream=cv_stream)
            cvcuda.convertto_into(scaled_t, rgb_t, scale=1 / 255, offset=0.0, stream=cv_stream)
            cvcuda.reformat_into(targets[i % sets], scaled_t, stream=cv_stream)

        return three_ops, lambda: outputs[0]

    def cv2_cuda() -> bc.Peer:
        import cv2

        if wl.planar or not hasattr(cv2, "cuda") or cv2.cuda.getCudaEnabledDeviceCount() == 0:
            raise RuntimeError("OpenCV has no CUDA here (or no NV12 -> planar float path)")
        frames = [cv2.cuda.GpuMat(x.reshape(wl.height * 3 // 2, wl.width).cpu().numpy()) for x in inputs[:1]]
        result: list[Any] = [None]

        def call(i: int) -> None:
            result[0] = cv2.cuda.cvtColor(frames[0], cv2.COLOR_YUV2RGB_NV12)

        return call, lambda: torch.from_numpy(result[0].download()).cuda()[None]

    factories: dict[str, Callable[[], bc.Peer]] = {
        "copy": copy,
        "fklir": fklir,
        "eager": lambda: held(eager_call),
        "compile": lambda: held(torch.compile(eager_call)),
        "cvcuda": cvcuda_peer,
    }
    if wl.batch == 1:
        factories["cv2.cuda"] = cv2_cuda
    return factories


def compare(torch: Any, got: Any, expected: Any, planar: bool) -> tuple[bool, str]:
    """(within ±1 of cv2, message); a planar float32 output is compared after * 255."""
    if planar:
        got = (got.permute(0, 2, 3, 1) * 255).round()
    diff = (got.to(torch.int32) - expected.to(torch.int32)).abs()
    worst, off = int(diff.max().item()), int((diff != 0).sum().item())
    return worst <= 1, f"max |d| = {worst} vs cv2, {off} of {diff.numel()} elements differ"


def run_gpu_workload(
    torch: Any,
    fkl: Any,
    cv2: Any,
    np: Any,
    stream: Any,
    wl: Workload,
    method: Method,
    l2: int,
    cycles: float,
    log: list[str],
) -> dict[str, Result | str]:
    frame_bytes = wl.in_bytes + wl.out_bytes
    sets = min(bc.MAX_BUFFER_SETS, max(2, math.ceil(bc.ROTATE_L2_MULTIPLE * l2 / frame_bytes)))
    shape = (wl.batch, wl.height * 3 // 2, wl.width)
    inputs = [torch.randint(0, 256, shape, dtype=torch.uint8, device="cuda") for _ in range(sets)]
    out_shape = (wl.batch, 3, wl.height, wl.width) if wl.planar else (wl.batch, wl.height, wl.width, 3)
    out_dtype = torch.float32 if wl.planar else torch.uint8
    outputs = [torch.empty(out_shape, dtype=out_dtype, device="cuda") for _ in range(sets)]
    say(
        f"- {wl.label}: {sets} input/output sets rotated, {sets * frame_bytes / 1e6:.0f} MB = "
        f"{sets * frame_bytes / l2:.1f} L2",
        log,
    )
    expected = torch.from_numpy(cv2_reference(cv2, np, inputs[0].cpu().numpy())).cuda()
    ring: list[Any] = [None] * sets
    results: dict[str, Result | str] = dict.fromkeys(GPU_PEERS, "-")
    for name, factory in gpu_peers(torch, fkl, stream, wl, inputs, outputs, ring).items():
        try:
            call, output = factory()
            outputs[0].fill_(0xA5 if not wl.planar else math.nan)  # poison: unwritten elements fail the check
            t0 = time.perf_counter()
            call(0)
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - t0) * 1e3
            got = output()
            ok, message = (True, "moves the same bytes") if got is None else compare(torch, got, expected, wl.planar)
            say(f"  - {name}: {'ok' if ok else 'WRONG'}: {message}; first call {first_ms:.0f} ms", log)
            if name in bc.CAPPED_PEERS and first_ms > bc.FIRST_CALL_CAP_S * 1e3:
                say(f"  - {name}: not timed: its first call took over {bc.FIRST_CALL_CAP_S:g} s", log)
                results[name] = "skipped"
            elif name == "cv2.cuda":  # its own stream: timed on the host around a synchronize
                results[name] = bc.measure_wall(call, method, ok, torch.cuda.synchronize)
            else:
                results[name] = bc.measure(torch, stream, call, method, cycles, ok)
        except Exception as error:  # one peer failing must not lose the others' numbers
            say(f"  - {name}: not measured: {type(error).__name__}: {error}", log)
            results[name] = "-"
        ring[:] = [None] * sets
    return results


# ----- CPU ---------------------------------------------------------------------------------------------


def run_cpu_workload(cv2: Any, np: Any, wl: Workload, method: Method, log: list[str]) -> dict[str, Result | str]:
    from fklir.jit.highway import highway_available
    from fklir.kernels.nv12_to_rgb import nv12_to_rgb

    rng = np.random.default_rng(0)
    frames = rng.integers(0, 256, (wl.batch, wl.height * 3 // 2, wl.width), dtype=np.uint8)
    expected = cv2_reference(cv2, np, frames)
    out = np.empty((wl.batch, wl.height, wl.width, 3), np.uint8)

    def cv2_call(_i: int) -> None:
        for frame, target in zip(frames, out, strict=True):
            cv2.cvtColor(frame, cv2.COLOR_YUV2RGB_NV12, dst=target)

    calls: dict[str, Callable[[int], object]] = {
        "fklir plain C++": lambda _i: nv12_to_rgb(frames, out=out, highway=False),
        "cv2": cv2_call,
    }
    if highway_available():
        calls["fklir"] = lambda _i: nv12_to_rgb(frames, out=out, highway=True)
    say(f"- CPU {wl.label}", log)
    results: dict[str, Result | str] = dict.fromkeys(CPU_PEERS, "-")
    for name, call in calls.items():
        out.fill(0xA5)
        call(0)
        worst = int(np.abs(out.astype(np.int32) - expected).max())
        say(f"  - {name}: {'ok' if worst <= 1 else 'WRONG'}: max |d| = {worst} vs cv2", log)
        results[name] = bc.measure_wall(call, method, worst <= 1)
    if "fklir" not in calls:
        say("  - fklir (Highway): not measured: libhwy-dev is not installed", log)
    return results


# ----- report ------------------------------------------------------------------------------------------


def median(r: Result | str) -> float | None:
    return statistics.median(r.gpu_us) if isinstance(r, Result) else None


GPU_HEADER = [
    "| workload | copy floor µs | fklir µs | fklir/copy | torch eager µs | torch.compile µs | CV-CUDA µs "
    "| cv2.cuda µs (host-timed) |",
    "|---|---|---|---|---|---|---|---|",
]


def gpu_row(wl: Workload, r: dict[str, Result | str]) -> str:
    fklir, copy = median(r["fklir"]), median(r["copy"])
    ratio = f"{fklir / copy:.2f}" if fklir is not None and copy is not None else "-"
    cells = [bc.fmt(r["copy"]), bc.fmt(r["fklir"]), ratio, *(bc.fmt(r[p]) for p in GPU_PEERS[2:])]
    return f"| {wl.label} | " + " | ".join(cells) + " |"


def host_table(rows: list[tuple[Workload, dict[str, Result | str]]]) -> list[str]:
    out = ["Host µs per call (Python enqueue on a caller's stream, median):", ""]
    out += ["| workload | " + " | ".join(GPU_PEERS) + " |", "|---" * (len(GPU_PEERS) + 1) + "|"]
    return out + [f"| {wl.label} | " + " | ".join(bc.fmt(r[p], host=True) for p in GPU_PEERS) + " |" for wl, r in rows]


def cpu_header() -> list[str]:
    threads = f"{os.cpu_count()} CPUs, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}"
    columns = "| workload | " + " | ".join(CPU_PEERS) + " |"
    return [f"CPU ({threads}), µs per call, median:", "", columns, "|---" * (len(CPU_PEERS) + 1) + "|"]


def cpu_row(wl: Workload, r: dict[str, Result | str]) -> str:
    return f"| {wl.label} | " + " | ".join(bc.fmt(r[p]) for p in CPU_PEERS) + " |"


def gpu_section(
    args: argparse.Namespace, cv2: Any, np: Any, report: bc.Report, started: float, log: list[str]
) -> tuple[bool, bool]:
    """(whether it ran, fklir ok): the GPU table row by row, or a line saying why there is none."""
    import fklir as fkl

    if not fkl.gpu_available():
        report.emit("GPU: skipped (no CUDA GPU or driver: fklir.gpu_available() is False).", "")
        return False, True
    try:
        import torch  # pyright: ignore[reportMissingImports]
    except ImportError:
        report.emit("GPU: skipped (no PyTorch).", "")
        return False, True
    method = bc.QUICK if args.quick else bc.KERNEL_FULL
    stream = torch.cuda.Stream()
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or bc.L2_FALLBACK_BYTES
    report.emit(*bc.environment(torch, None, method, l2), "", *GPU_HEADER)
    rows: list[tuple[Workload, dict[str, Result | str]]] = []
    with torch.cuda.stream(stream), torch.no_grad():
        cycles = bc.calibrate_sleep(torch, stream)
        for wl in bc.within_budget(workloads(*args.size, args.all), args.budget, started, report):
            rows.append((wl, run_gpu_workload(torch, fkl, cv2, np, stream, wl, method, l2, cycles, log)))
            report.emit(gpu_row(*rows[-1]))
            torch.cuda.empty_cache()
    report.emit("", *(host_table(rows) if rows else []), "")
    return True, all(isinstance(r["fklir"], Result) and r["fklir"].ok for _, r in rows)


def cpu_section(args: argparse.Namespace, cv2: Any, np: Any, report: bc.Report, started: float, log: list[str]) -> bool:
    """fklir ok: the CPU table row by row, for the packed workloads (cv2 has no planar float32 output)."""
    method = CPU_QUICK if args.quick else CPU_FULL
    packed = [wl for wl in workloads(*args.size, args.all) if not wl.planar]
    report.emit(*cpu_header())
    ok = True
    for wl in bc.within_budget(packed, args.budget, started, report):
        results = run_cpu_workload(cv2, np, wl, method, log)
        report.emit(cpu_row(wl, results))
        ok &= all(v.ok for p, v in results.items() if p.startswith("fklir") and isinstance(v, Result))
    report.emit("")
    return ok


def main(argv: list[str]) -> int:
    started = time.monotonic()
    args = parse_args(argv)
    try:
        import cv2
        import numpy as np

        import fklir  # noqa: F401 (the tree's fklir must import)
    except Exception as error:
        fail(f"needs fklir, cv2 and numpy: {type(error).__name__}: {error}")
    log: list[str] = []
    report = bc.Report(args.out)
    report.emit("## nv12_to_rgb", "")
    gpu_ran, gpu_ok = gpu_section(args, cv2, np, report, started, log)
    cpu_ok = True
    if gpu_ran and not args.cpu:
        say("- CPU: not measured beside the GPU (--cpu adds it)", log)
    else:
        cpu_ok = cpu_section(args, cv2, np, report, started, log)
    report.emit("Checks and setup:", "", *log, "")
    if args.out is not None:
        print(f"bench_nv12_to_rgb: report appended to {args.out}", file=sys.stderr)
    return 0 if gpu_ok and cpu_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
