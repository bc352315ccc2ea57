#!/usr/bin/env python3
"""Per-channel 256-bin histograms of uint8 images: fklir's shipped kernel (fklir/kernels/histogram) against
torch, OpenCV and CV-CUDA.

    python benchmarks/bench_histogram.py [--quick] [--all] [--cpu] [--budget SECONDS] [--out PATH]

Workloads: one 1920x1080 grey image, one 1920x1080x3 image and 64 grey 1920x1080 images (--all adds a constant
image, a 3840x2160x3 one and 16 1920x1080x3 ones). GPU, when there is one: fklir, torch.bincount (one call for
every image and channel, the values offset per channel), cv2.cuda.calcHist (grey images, when OpenCV has CUDA)
and cvcuda.histogram_into (grey images, when CV-CUDA imports), beside a device copy of the same input: a
histogram reads its input once, so the copy is its bandwidth floor. Timed with bench_chain.py's method (imported
from it), with fewer calls than bench_chain's so that a default run fits a shared device session; cv2.cuda and CV-
CUDA are left out of a workload when their first call takes longer than bench_chain.FIRST_CALL_CAP_S. CPU: fklir's
OpenMP kernel against cv2.calcHist (one call per image and channel, as OpenCV counts one channel at a time), timed
with perf_counter; measured without a GPU, or with --cpu, so that `--quick` is a smoke test on a machine without
one.
Every peer's counts are checked against numpy's bincount before it is timed.

Once --budget seconds have passed, the workloads not yet started are skipped with a line naming them. Progress
goes to stderr; the markdown report goes to stdout and, with --out, is appended to PATH, one row as soon as its
workload is done, so that a run stopped by a time limit keeps its finished rows. Exit: 0 ok, 1 fklir failed or
was wrong, 2 fklir cannot be imported.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Method, Result, say

GPU_PEERS = ("copy", "fklir", "torch", "cv2.cuda", "cvcuda")
CPU_PEERS = ("fklir", "cv2")
# CPU calls take milliseconds, not microseconds: fewer of them give as steady a median.
CPU_FULL, CPU_QUICK = Method(calls=5, reps=9, warmup=2), Method(calls=2, reps=3, warmup=1)
# A GPU workload whose input alone overflows L2 (the 64-image batch): two inputs rotate past it, and a few calls
# of ~100 µs and more give as steady a median, so that the default run reaches it within its budget.
GPU_BIG = Method(calls=5, reps=7, warmup=2)

Results = dict[str, "Result | str"]  # per peer: its Result, or why there is none ("-": absent, "error")
Check = Callable[[], tuple[bool, str]]  # (ok, message) about what the peer's call(0) wrote
Peer = tuple[bc.Call, Check]  # (call on rotation slot i, its check)
Rows = list[tuple["Workload", Results]]  # the workloads measured so far and their results


@dataclass(frozen=True)
class Workload:
    label: str
    shape: tuple[int, int, int, int]  # (B, H, W, C)
    constant: bool  # every pixel 255 (one bin takes every count) instead of uniform random values

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape)


ASKED = (  # issue 16's
    Workload("1920x1080 grey", (1, 1080, 1920, 1), False),
    Workload("1920x1080x3", (1, 1080, 1920, 3), False),
    Workload("64 x 1920x1080 grey", (64, 1080, 1920, 1), False),
)
MORE = (  # --all
    Workload("1920x1080 grey, constant", (1, 1080, 1920, 1), True),
    Workload("3840x2160x3", (1, 2160, 3840, 3), False),
    Workload("16 x 1920x1080x3", (16, 1080, 1920, 3), False),
)


def fail(message: str) -> NoReturn:
    print(f"bench_histogram: {message}", file=sys.stderr)
    sys.exit(2)


def make_images(wl: Workload, rng: np.random.Generator) -> np.ndarray[Any, Any]:
    if wl.constant:
        return np.full(wl.shape, 255, np.uint8)
    return rng.integers(0, 256, wl.shape, dtype=np.uint8)


def reference(images: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """(B, C, 256): np.bincount of every channel of every image."""
    b, _h, _w, c = images.shape
    return np.array([[np.bincount(images[k, ..., j].ravel(), minlength=256) for j in range(c)] for k in range(b)])


def verdict(got: Any, expected: np.ndarray[Any, Any]) -> tuple[bool, str]:
    """Whether `got` (numpy, or a torch tensor on any device) holds exactly the expected counts."""
    counts = np.asarray(got.cpu() if hasattr(got, "cpu") else got)
    if counts.shape != expected.shape:
        return False, f"shape {counts.shape}, expected {expected.shape}"
    wrong = int((counts != expected).sum())
    return wrong == 0, "equal to numpy's bincount" if wrong == 0 else f"{wrong} of {counts.size} counts differ"


# ----- GPU ---------------------------------------------------------------------------------------------


def gpu_peers(
    torch: Any, histogram: Any, cv2: Any, cvcuda: Any, stream: Any, wl: Workload, inputs: list[Any], expected: Any
) -> dict[str, Callable[[], Peer]]:
    """Per peer, a factory of its call; built lazily so that one peer's failure stays its own."""
    sets, (b, h, w, c), device = len(inputs), wl.shape, inputs[0].device

    def copy() -> Peer:
        copies = [torch.empty_like(x) for x in inputs]

        def check() -> tuple[bool, str]:
            return bool(torch.equal(copies[0], inputs[0])), "compared with its source"

        return (lambda i: copies[i % sets].copy_(inputs[i % sets])), check

    def fklir() -> Peer:
        counts = [torch.full((b, c, 256), -1, dtype=torch.int32, device=device) for _ in range(sets)]

        def call(i: int) -> None:
            histogram(inputs[i % sets], out=counts[i % sets], stream=stream)

        return call, lambda: verdict(counts[0], expected)

    def torch_bincount() -> Peer:
        # torch.bincount sizes its output by the input's maximum, which it reads back: every call synchronises
        offsets = (torch.arange(b, device=device).view(b, 1, 1, 1) * c + torch.arange(c, device=device)) * 256
        ring: list[Any] = [None] * sets

        def call(i: int) -> None:
            keys = (inputs[i % sets].to(torch.int32) + offsets).view(-1)
            ring[i % sets] = torch.bincount(keys, minlength=b * c * 256)

        return call, lambda: verdict(ring[0].view(b, c, 256), expected)

    def cv2_cuda() -> Peer:
        cv_stream = cv2.cuda.wrapStream(stream.cuda_stream)
        mats = [
            [cv2.cuda.createGpuMatFromCudaMemory(h, w, cv2.CV_8UC1, x[k].data_ptr()) for k in range(b)] for x in inputs
        ]
        hists = [[cv2.cuda.GpuMat(1, 256, cv2.CV_32SC1) for _ in range(b)] for _ in range(sets)]

        def call(i: int) -> None:
            for mat, hist in zip(mats[i % sets], hists[i % sets], strict=True):
                cv2.cuda.calcHist(mat, hist, stream=cv_stream)

        return call, lambda: verdict(np.stack([hist.download() for hist in hists[0]]).reshape(b, 1, 256), expected)

    def cv_cuda() -> Peer:
        cv_stream = cvcuda.as_stream(stream)
        sources = [cvcuda.as_tensor(x, "NHWC") for x in inputs]
        hists = [torch.empty((b, 256, 1), dtype=torch.int32, device=device) for _ in range(sets)]
        targets = [cvcuda.as_tensor(hist, "HWC") for hist in hists]

        def call(i: int) -> None:
            cvcuda.histogram_into(targets[i % sets], sources[i % sets], stream=cv_stream)

        return call, lambda: verdict(hists[0].permute(0, 2, 1), expected)

    peers: dict[str, Callable[[], Peer]] = {"copy": copy, "fklir": fklir, "torch": torch_bincount}
    if c == 1 and cv2 is not None:
        peers["cv2.cuda"] = cv2_cuda
    if c == 1 and cvcuda is not None:
        peers["cvcuda"] = cv_cuda
    return peers


def run_gpu(
    torch: Any,
    histogram: Any,
    cv2: Any,
    cvcuda: Any,
    method: Method,
    l2: int,
    workloads: Iterator[Workload],
    report: bc.Report,
    log: list[str],
    started: float,
) -> Rows:
    stream = torch.cuda.Stream()
    rows: Rows = []
    with torch.cuda.stream(stream), torch.no_grad():
        cycles_per_us = bc.calibrate_sleep(torch, stream)
        say(f"- sleep kernel: {cycles_per_us:.0f} cycles per µs", log)
        for wl in workloads:
            rng = np.random.default_rng(16)
            big = wl.nbytes > l2
            sets = 2 if big else min(bc.MAX_BUFFER_SETS, max(2, math.ceil(bc.ROTATE_L2_MULTIPLE * l2 / wl.nbytes)))
            timing = min(method, GPU_BIG, key=lambda m: m.calls) if big else method
            say(
                f"- GPU {wl.label}: {sets} inputs rotated, {sets * wl.nbytes / l2:.1f} L2, {timing.reps} x "
                f"{timing.calls} calls; {time.monotonic() - started:.0f} s since start",
                log,
            )
            host = make_images(wl, rng)
            expected = reference(host)
            inputs = [torch.from_numpy(host).to("cuda") for _ in range(sets)]
            results: Results = dict.fromkeys(GPU_PEERS, "-")
            peers = gpu_peers(torch, histogram, cv2, cvcuda, stream, wl, inputs, expected)
            for name, factory in peers.items():
                try:
                    call, check = factory()
                    t0 = time.perf_counter()
                    call(0)
                    torch.cuda.synchronize()
                    first_ms = (time.perf_counter() - t0) * 1e3
                    ok, message = check()
                    say(f"  - {name}: {'ok' if ok else 'WRONG'}: {message}; first call {first_ms:.0f} ms", log)
                    if name in bc.CAPPED_PEERS and first_ms > bc.FIRST_CALL_CAP_S * 1e3:
                        say(f"  - {name}: not timed: its first call took over {bc.FIRST_CALL_CAP_S:g} s", log)
                        results[name] = "skipped"
                    else:
                        results[name] = bc.measure(torch, stream, call, timing, cycles_per_us, ok)
                except Exception as error:  # one peer failing must not lose the others' numbers
                    say(f"  - {name}: ERROR {type(error).__name__}: {error}", log)
                    results[name] = "error"
            rows.append((wl, results))
            report.emit(gpu_row(wl, results))
            del inputs, peers
            torch.cuda.empty_cache()
    return rows


def median_us(r: Result | str) -> float | None:
    return statistics.median(r.gpu_us) if isinstance(r, Result) and r.gpu_us else None


GPU_HEADER = [
    "| workload | copy floor µs | fklir µs | fklir/copy | torch.bincount µs | cv2.cuda µs | CV-CUDA µs "
    "| fastest peer / fklir |",
    "|---|---|---|---|---|---|---|---|",
]


def gpu_row(wl: Workload, r: Results) -> str:
    fklir, copy = median_us(r["fklir"]), median_us(r["copy"])
    peers = [t for p in ("torch", "cv2.cuda", "cvcuda") if (t := median_us(r[p])) is not None]
    floor = f"{fklir / copy:.2f}" if fklir and copy else "-"
    best = f"{min(peers) / fklir:.2f}x" if fklir and peers else "-"
    cells = [bc.fmt(r[p]) for p in ("copy", "fklir")] + [floor] + [bc.fmt(r[p]) for p in GPU_PEERS[2:]]
    return f"| {wl.label} | " + " | ".join([*cells, best]) + " |"


def gpu_details(rows: Rows, method: Method) -> list[str]:
    """After the table: host µs per call and the spread of the repetitions."""
    out = ["Host µs per call (Python enqueue on a caller's stream, median):", ""]
    out += ["| workload | " + " | ".join(GPU_PEERS) + " |", "|---|" + "---|" * len(GPU_PEERS)]
    out += [f"| {wl.label} | " + " | ".join(bc.fmt(r[p], host=True) for p in GPU_PEERS) + " |" for wl, r in rows]
    reps = f"{method.reps}, {min(method, GPU_BIG, key=lambda m: m.calls).reps} for an input over L2"
    out += ["", f"GPU µs per call, min-max of the repetitions ({reps}; a gap inside it is noise):", ""]
    for wl, r in rows:
        timed = {p: v for p, v in r.items() if isinstance(v, Result) and v.gpu_us}
        spans = [f"{p} {min(v.gpu_us):.1f}-{max(v.gpu_us):.1f}" for p, v in timed.items()]
        notes = "".join(f"; {p}: {v.note}" for p, v in timed.items() if v.note)
        out.append(f"- {wl.label}: " + ", ".join(spans) + notes)
    return out


# ----- CPU ---------------------------------------------------------------------------------------------


def cpu_peers(histogram: Any, cv2: Any, images: Any, expected: Any) -> dict[str, Callable[[], Peer]]:
    b, _h, _w, c = images.shape

    def fklir() -> Peer:
        counts = np.full((b, c, 256), -1, np.int32)
        return (lambda _i: histogram(images, out=counts)), lambda: verdict(counts, expected)

    def opencv() -> Peer:
        hists: list[Any] = [None] * (b * c)

        def call(_i: int) -> None:
            for k in range(b):
                for channel in range(c):
                    hists[k * c + channel] = cv2.calcHist([images[k]], [channel], None, [256], [0, 256])

        return call, lambda: verdict(np.stack([hist.ravel() for hist in hists]).reshape(b, c, 256), expected)

    return {"fklir": fklir} | ({"cv2": opencv} if cv2 is not None else {})


def run_cpu(
    histogram: Any, cv2: Any, method: Method, workloads: Iterator[Workload], report: bc.Report, log: list[str]
) -> Rows:
    rows: Rows = []
    for wl in workloads:
        images = make_images(wl, np.random.default_rng(16))
        expected = reference(images)
        say(f"- CPU {wl.label}", log)
        results: Results = dict.fromkeys(CPU_PEERS, "-")
        for name, factory in cpu_peers(histogram, cv2, images, expected).items():
            try:
                call, check = factory()
                t0 = time.perf_counter()
                call(0)
                first_ms = (time.perf_counter() - t0) * 1e3
                ok, message = check()
                say(f"  - {name}: {'ok' if ok else 'WRONG'}: {message}; first call {first_ms:.0f} ms", log)
                results[name] = bc.measure_wall(call, method, ok)
            except Exception as error:  # one peer failing must not lose the others' numbers
                say(f"  - {name}: ERROR {type(error).__name__}: {error}", log)
                results[name] = "error"
        rows.append((wl, results))
        report.emit(cpu_row(wl, results))
    return rows


CPU_HEADER = ["| workload | fklir µs | cv2.calcHist µs | cv2 / fklir |", "|---|---|---|---|"]


def cpu_row(wl: Workload, r: Results) -> str:
    fklir, opencv = median_us(r["fklir"]), median_us(r["cv2"])
    speedup = f"{opencv / fklir:.2f}x" if fklir and opencv else "-"
    return f"| {wl.label} | {bc.fmt(r['fklir'])} | {bc.fmt(r['cv2'])} | {speedup} |"


def cpu_details(rows: Rows, method: Method) -> list[str]:
    out = [f"µs per call, min-max of the {method.reps} repetitions:", ""]
    for wl, r in rows:
        timed = {p: v for p, v in r.items() if isinstance(v, Result)}
        out.append(
            f"- {wl.label}: " + ", ".join(f"{p} {min(v.gpu_us):.0f}-{max(v.gpu_us):.0f}" for p, v in timed.items())
        )
    return out


# ----- report --------------------------------------------------------------------------------------------


# ----- main ----------------------------------------------------------------------------------------------


def optional(module: str) -> Any:
    """An optional peer's module, or None (any import failure just empties its column)."""
    try:
        return __import__(module)
    except Exception:
        return None


def cv2_with_cuda(cv2: Any) -> Any:
    try:
        return cv2 if cv2 is not None and cv2.cuda.getCudaEnabledDeviceCount() > 0 else None
    except Exception:  # an OpenCV built without its CUDA modules
        return None


def header(args: argparse.Namespace, gpu: str, cv2: Any, cvcuda: Any, cpu: bool) -> list[str]:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    threads = os.environ.get("OMP_NUM_THREADS", f"{os.cpu_count()} (all cores)")
    versions = f"CV-CUDA {getattr(cvcuda, '__version__', 'absent')}, numpy {np.__version__}"
    lines = [
        f"### {now} - histogram - {gpu}",
        "",
        f"- command: `{shlex.join([Path(sys.executable).name, 'benchmarks/bench_histogram.py', *sys.argv[1:]])}`",
        f"- CPU: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, OpenMP threads {threads}; "
        f"OpenCV {getattr(cv2, '__version__', 'absent')} ({cv2.getNumThreads() if cv2 else 0} threads), "
        f"{versions}, Python {platform.python_version()}",
    ]
    if cpu:
        lines.append(
            f"- CPU method: per peer {(CPU_QUICK if args.quick else CPU_FULL).warmup} warm-up calls, then medians of "
            "repetitions of back-to-back calls (perf_counter)"
        )
    return lines


def main(argv: list[str]) -> int:
    started = time.monotonic()
    p = argparse.ArgumentParser(description="fklir's histogram kernel vs torch, OpenCV and CV-CUDA (SPEC §6.2)")
    p.add_argument("--quick", action="store_true", help="few calls and repetitions (smoke test)")
    p.add_argument("--all", action="store_true", help="also the workloads beyond issue 16's three")
    p.add_argument("--cpu", action="store_true", help="also measure the CPU when there is a GPU")
    p.add_argument("--budget", type=float, default=45.0, metavar="SECONDS", help="skip workloads after this (45)")
    p.add_argument("--out", type=Path, metavar="PATH", help="also append the markdown report to PATH")
    args = p.parse_args(argv)
    try:
        import fklir as fkl
        from fklir.kernels.histogram import histogram
    except Exception as error:
        fail(f"cannot import fklir from {bc.REPO}: {type(error).__name__}: {error}")
    cv2, cvcuda, torch = optional("cv2"), optional("cvcuda"), optional("torch")
    workloads = ASKED + MORE if args.all else ASKED
    on_gpu = fkl.gpu_available() and torch is not None and torch.cuda.is_available()
    on_cpu = args.cpu or not on_gpu
    log: list[str] = []
    report = bc.Report(args.out)
    gpu_name = torch.cuda.get_device_name(0) if on_gpu and torch is not None else "no GPU"
    report.emit(*header(args, gpu_name, cv2, cvcuda, on_cpu))
    gpu_ok = cpu_ok = True
    if on_gpu and torch is not None:
        method = bc.QUICK if args.quick else bc.KERNEL_FULL
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or bc.L2_FALLBACK_BYTES
        # bench_chain's environment lines after its title and command: the GPU, the versions, the method
        report.emit(*bc.environment(torch, optional("cupy") or _NotAPeer(), method, l2)[3:], "", "GPU:", "")
        report.emit(*GPU_HEADER)
        todo = bc.within_budget(workloads, args.budget, started, report)
        rows = run_gpu(torch, histogram, cv2_with_cuda(cv2), cvcuda, method, l2, todo, report, log, started)
        if rows:
            report.emit("", *gpu_details(rows, method))
        gpu_ok = all(isinstance(r["fklir"], Result) and r["fklir"].ok for _, r in rows)
    else:
        say("- no CUDA GPU (or no torch with CUDA): the GPU part is skipped", log)
    if on_cpu:
        cpu_method = CPU_QUICK if args.quick else CPU_FULL
        report.emit("", "CPU:", "", *CPU_HEADER)
        todo = bc.within_budget(workloads, args.budget, started, report)
        cpu_rows = run_cpu(histogram, cv2, cpu_method, todo, report, log)
        if cpu_rows:
            report.emit("", *cpu_details(cpu_rows, cpu_method))
        cpu_ok = all(isinstance(r["fklir"], Result) and r["fklir"].ok for _, r in cpu_rows)
    else:
        say("- CPU: not measured beside the GPU (--cpu adds it)", log)
    report.emit("", "Checks and setup:", "", *log, "")
    if args.out is not None:
        print(f"bench_histogram: report appended to {args.out}", file=sys.stderr)
    return 0 if gpu_ok and cpu_ok else 1


class _NotAPeer:
    __version__ = "not a peer here"  # bc.environment names CuPy's version


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
