#!/usr/bin/env python3
"""Fused chains on one GPU: fklir against torch eager, torch.compile, CuPy and a device copy (SPEC §5).

    python benchmarks/bench_chain.py [--quick] [--size 3840x2160] [--out PATH]

Workloads: a 6-op float32 chain (Mul, Add per channel, Sub, Div, Max, Min) and the uint8 normalise chain
(Cast float32, Mul, Sub per channel, SaturateCast uint8), both on W×H×3 images. Each peer is checked against
torch eager once, then timed: inputs and outputs rotate over at least 10× L2, calls are queued behind a sleep
kernel so that host enqueue cost stays out of the GPU time, and the median of the repetitions is reported.
benchmarks/RESULTS.md explains the method. Exit codes: 0 ok, 1 fklir failed or was wrong, 2 no GPU/torch/fklir.
Progress goes to stderr; the report (markdown) to stdout and, with --out, is appended to PATH.
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # measure this working tree's fklir, installed or not

EXIT_NO_GPU = 2
L2_FALLBACK_BYTES = 60 * 2**20  # the H200's, for a torch that does not report L2_cache_size
ROTATE_L2_MULTIPLE = 10  # rotated inputs + outputs >= this many L2s, so no call is served from L2
MAX_BUFFER_SETS = 256  # tiny --size values cannot defeat L2 anyway; the setup lines say so
PEERS = ("copy", "fklir", "eager", "compile", "cupy")
Call = Callable[[int], object]  # one call of a peer on rotation slot i (taken modulo the set count)


@dataclass(frozen=True)
class Method:
    calls: int  # back-to-back calls per timed repetition
    reps: int  # repetitions; medians are reported
    warmup: int  # untimed calls first (loads, caches, clocks up)


FULL, QUICK = Method(calls=50, reps=21, warmup=10), Method(calls=8, reps=3, warmup=3)


@dataclass
class Result:
    ok: bool  # the checked output matched torch eager
    gpu_us: list[float] = field(default_factory=list)  # GPU µs per call, one value per repetition
    host_us: float = math.nan  # median host µs per call (enqueue only)
    note: str = ""


@dataclass
class Workload:
    label: str
    shape: tuple[int, int, int]  # (H, W, C)
    itemsize: int  # bytes per element, input and output alike
    make_input: Callable[[], Any]  # a fresh random input tensor
    eager: Callable[[Any], Any]  # the chain as separate torch ops
    fklir_ops: tuple[Any, ...]
    cupy_kernel: tuple[str, str, str, str]  # ElementwiseKernel(in params, out params, body, name)
    cupy_consts: tuple[tuple[float, ...], ...]  # the raw float32 arrays that follow x
    integer: bool  # compare within ±1 instead of within a float tolerance


def fail(message: str) -> NoReturn:
    print(f"bench_chain: {message}", file=sys.stderr)
    sys.exit(EXIT_NO_GPU)


def say(line: str, log: list[str]) -> None:
    print(line, file=sys.stderr, flush=True)
    log.append(line)


def parse_args(argv: list[str]) -> argparse.Namespace:
    def size(text: str) -> tuple[int, int]:
        w, _, h = text.lower().partition("x")
        if not (w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0):
            raise argparse.ArgumentTypeError(f"expected WxH with positive integers, got {text!r}")
        return int(w), int(h)

    p = argparse.ArgumentParser(description="fklir vs torch eager / torch.compile / CuPy / copy (SPEC §5)")
    p.add_argument("--quick", action="store_true", help="few calls and repetitions (smoke test, noisy numbers)")
    p.add_argument("--size", type=size, default=(3840, 2160), metavar="WxH", help="image size (default 3840x2160)")
    p.add_argument("--out", type=Path, metavar="PATH", help="also append the markdown report to PATH")
    return p.parse_args(argv)


def workloads(torch: Any, fkl: Any, w: int, h: int) -> list[Workload]:
    dev, f32, shape = torch.device("cuda"), torch.float32, (h, w, 3)
    add, scale, mean = (0.1, 0.2, 0.3), (1.2, 0.9, 1.1), (10.0, -5.0, 20.0)
    add_t, scale_t, mean_t = (torch.tensor(v, dtype=f32, device=dev) for v in (add, scale, mean))

    def float_eager(x: Any) -> Any:
        y = x * 1.5
        y = y + add_t
        y = y - 0.25
        y = y / 1.7
        y = torch.clamp_min(y, -0.5)
        return torch.clamp_max(y, 0.8)

    def uint8_eager(x: Any) -> Any:
        y = x.to(f32)
        y = y * scale_t
        y = y - mean_t
        return y.round().clamp(0, 255).to(torch.uint8)  # round half to even, like SaturateCast

    float_body = (
        "float v = (x * 1.5f + add[i % 3] - 0.25f) / 1.7f;"
        " v = v >= -0.5f ? v : -0.5f; y = v <= 0.8f ? v : 0.8f;"
    )
    uint8_body = (
        "float v = (float)x * scale[i % 3] - mean[i % 3];"
        " v = fminf(fmaxf(v, 0.0f), 255.0f); y = (unsigned char)rintf(v);"
    )
    return [
        Workload(
            f"6-op float32 chain, {w}×{h}×3", shape, 4,
            lambda: torch.rand(shape, dtype=f32, device=dev) * 2 - 1,
            float_eager,
            (fkl.TensorRead(), fkl.Mul(1.5), fkl.Add(add), fkl.Sub(0.25), fkl.Div(1.7), fkl.Max(-0.5),
             fkl.Min(0.8), fkl.TensorWrite()),
            ("float32 x, raw float32 add", "float32 y", float_body, "bench_float_chain"), (add,), integer=False,
        ),
        Workload(
            f"uint8×3 → float → Mul/Sub → SaturateCast uint8, {w}×{h}", shape, 1,
            lambda: torch.randint(0, 256, shape, dtype=torch.uint8, device=dev),
            uint8_eager,
            (fkl.TensorRead(), fkl.Cast("float32"), fkl.Mul(scale), fkl.Sub(mean), fkl.SaturateCast("uint8"),
             fkl.TensorWrite()),
            ("uint8 x, raw float32 scale, raw float32 mean", "uint8 y", uint8_body, "bench_uint8_chain"),
            (scale, mean), integer=True,
        ),
    ]


def compare(torch: Any, got: Any, ref: Any, integer: bool) -> tuple[bool, str]:
    """(ok, message): uint8 within ±1 (FMA contraction may flip a rounding tie); float32 within 1e-5 rel."""
    if tuple(got.shape) != tuple(ref.shape) or got.dtype != ref.dtype:
        return False, f"got {got.dtype} {tuple(got.shape)}, expected {ref.dtype} {tuple(ref.shape)}"
    if integer:
        diff = (got.to(torch.int32) - ref.to(torch.int32)).abs()
        worst, off = int(diff.max().item()), int((diff != 0).sum().item())
        return worst <= 1, f"max |Δ| = {worst}, {off} of {diff.numel()} elements differ"
    diff = (got.double() - ref.double()).abs()
    bad = int((diff > 1e-6 + 1e-5 * ref.double().abs()).sum().item())
    finite = bool(torch.isfinite(got).all().item())  # the output was poisoned with NaN
    return finite and bad == 0, f"max |Δ| = {diff.max().item():.3g}, {bad} outside 1e-6 + 1e-5·|ref|, all finite: {finite}"


def calibrate_sleep(torch: Any, stream: Any) -> float:
    """Sleep-kernel cycles per µs (the fastest of a few readings, so that sleeps err long)."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    rates = []
    for cycles in (1_000_000, 20_000_000, 20_000_000, 20_000_000):
        start.record(stream)
        torch.cuda._sleep(cycles)
        end.record(stream)
        end.synchronize()
        rates.append(cycles / (start.elapsed_time(end) * 1e3))
    return max(rates[1:])


def measure(torch: Any, stream: Any, call: Call, method: Method, cycles_per_us: float, ok: bool) -> Result:
    """Warm up; host µs per call over N enqueues; GPU µs per call over N calls queued behind a sleep."""
    n, counter, result = method.calls, 0, Result(ok)

    def run_calls(count: int) -> None:
        nonlocal counter
        for _ in range(count):
            call(counter)
            counter += 1

    run_calls(method.warmup)
    torch.cuda.synchronize()
    host = []
    for _ in range(method.reps):
        t0 = time.perf_counter()
        run_calls(n)
        host.append((time.perf_counter() - t0) * 1e6 / n)
        torch.cuda.synchronize()
    result.host_us = statistics.median(host)
    sleep_us, doublings = 2 * result.host_us * n + 500, 0
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    while len(result.gpu_us) < method.reps:
        torch.cuda._sleep(int(sleep_us * cycles_per_us))  # on the current stream, which is `stream`
        start.record(stream)
        run_calls(n)
        end.record(stream)
        sleep_too_short = start.query()  # the GPU began before all N calls were queued: host time leaks in
        end.synchronize()
        if sleep_too_short and doublings < 4:
            sleep_us, doublings = 2 * sleep_us, doublings + 1
            continue
        if sleep_too_short:
            result.note = "sleep never covered the enqueue (launch queue full?): GPU time may include host gaps"
        result.gpu_us.append(start.elapsed_time(end) * 1e3 / n)
    return result


def peer_calls(torch: Any, fkl: Any, cp: Any, stream: Any, wl: Workload, inputs: list[Any], outputs: list[Any],
               ring: list[Any]) -> dict[str, Callable[[], tuple[Call, Callable[[], Any]]]]:
    """Per peer, a factory of (call, output of call(0)); built lazily so one peer's failure stays its own."""
    sets = len(inputs)

    def held(fn: Callable[[Any], Any]) -> tuple[Call, Callable[[], Any]]:
        # torch peers allocate their outputs; holding `sets` of them makes the allocator rotate them too
        return (lambda i: ring.__setitem__(i % sets, fn(inputs[i % sets]))), lambda: ring[0]

    def copy() -> tuple[Call, Callable[[], Any]]:
        return (lambda i: outputs[i % sets].copy_(inputs[i % sets])), lambda: outputs[0]

    def fklir() -> tuple[Call, Callable[[], Any]]:
        pipe = fkl.compose(*wl.fklir_ops, target="gpu")
        return (lambda i: pipe(inputs[i % sets], out=outputs[i % sets], stream=stream)), lambda: outputs[0]

    def cupy() -> tuple[Call, Callable[[], Any]]:
        kernel = cp.ElementwiseKernel(*wl.cupy_kernel)
        consts = [cp.asarray(v, dtype=cp.float32) for v in wl.cupy_consts]
        cp_in, cp_out = [cp.asarray(t) for t in inputs], [cp.asarray(t) for t in outputs]  # views, no copies
        return (lambda i: kernel(cp_in[i % sets], *consts, cp_out[i % sets])), lambda: outputs[0]

    factories = {"copy": copy, "fklir": fklir, "eager": lambda: held(wl.eager),
                 "compile": lambda: held(torch.compile(wl.eager))}
    if cp is not None:
        factories["cupy"] = cupy
    return factories


def run_workload(torch: Any, fkl: Any, cp: Any, stream: Any, wl: Workload, method: Method, l2: int,
                 cycles_per_us: float, log: list[str]) -> dict[str, Result | str]:
    """Per peer: a Result, or a short string saying why there is none."""
    frame_bytes = math.prod(wl.shape) * wl.itemsize
    sets = min(MAX_BUFFER_SETS, max(2, math.ceil(ROTATE_L2_MULTIPLE * l2 / (2 * frame_bytes))))
    inputs = [wl.make_input() for _ in range(sets)]  # random, never zeros
    outputs = [torch.empty_like(inputs[0]) for _ in range(sets)]  # both chains keep the input dtype
    rotated = 2 * frame_bytes * sets
    under = "" if rotated >= ROTATE_L2_MULTIPLE * l2 else " — UNDER 10× L2: some calls may hit L2"
    say(f"- {wl.label}: {sets} input/output sets rotated, {rotated / 1e6:.0f} MB = {rotated / l2:.1f}× L2{under}", log)
    ref = wl.eager(inputs[0])
    ring: list[Any] = [None] * sets
    results: dict[str, Result | str] = {peer: "—" for peer in PEERS}  # "—": peer not available
    for peer, factory in peer_calls(torch, fkl, cp, stream, wl, inputs, outputs, ring).items():
        try:
            call, output = factory()
            outputs[0].fill_(0xA5 if wl.integer else math.nan)  # poison: unwritten elements fail the check
            t0 = time.perf_counter()
            call(0)
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - t0) * 1e3
            if peer == "eager":
                ok, msg = True, "the reference"
            elif peer == "copy":
                ok, msg = bool(torch.equal(output(), inputs[0])), "equals its source"
            else:
                ok, msg = compare(torch, output(), ref, wl.integer)
            say(f"  - {peer}: {'ok' if ok else 'WRONG'} vs torch eager: {msg}; first call {first_ms:.0f} ms", log)
            results[peer] = measure(torch, stream, call, method, cycles_per_us, ok)
        except Exception as error:  # one peer failing must not lose the others' numbers
            say(f"  - {peer}: ERROR {type(error).__name__}: {error}", log)
            results[peer] = "error"
        ring[:] = [None] * sets
    return results


def fmt(r: Result | str, host: bool = False) -> str:
    if isinstance(r, str):
        return r
    value = f"{r.host_us if host else statistics.median(r.gpu_us):.1f}"
    return value if r.ok else f"{value} (WRONG)"


def report(rows: list[tuple[Workload, dict[str, Result | str]]], method: Method) -> list[str]:
    out = ["| workload | copy floor µs | fklir µs | fklir/copy | torch eager µs | torch.compile µs | CuPy µs "
           "| speed-up vs eager |", "|---|---|---|---|---|---|---|---|"]
    for wl, r in rows:
        med = {p: statistics.median(v.gpu_us) for p, v in r.items() if isinstance(v, Result)}
        ratio = f"{med['fklir'] / med['copy']:.2f}" if {"fklir", "copy"} <= med.keys() else "—"
        speedup = f"{med['eager'] / med['fklir']:.1f}×" if {"fklir", "eager"} <= med.keys() else "—"
        out.append(f"| {wl.label} | {fmt(r['copy'])} | {fmt(r['fklir'])} | {ratio} | {fmt(r['eager'])} "
                   f"| {fmt(r['compile'])} | {fmt(r['cupy'])} | {speedup} |")
    out += ["", "Host µs per call (Python enqueue on a caller's stream, median):", "",
            "| workload | copy | fklir | torch eager | torch.compile | CuPy |", "|---|---|---|---|---|---|"]
    out += [f"| {wl.label} | " + " | ".join(fmt(r[p], host=True) for p in PEERS) + " |" for wl, r in rows]
    out += ["", f"GPU µs per call, min–max over the {method.reps} repetitions (differences inside it are noise):", ""]
    for wl, r in rows:
        timed = {p: v for p, v in r.items() if isinstance(v, Result)}
        line = f"- {wl.label}: " + ", ".join(f"{p} {min(v.gpu_us):.1f}–{max(v.gpu_us):.1f}" for p, v in timed.items())
        if "copy" in timed:  # sanity: about 3400-4250 GB/s on an H200
            moved = 2 * math.prod(wl.shape) * wl.itemsize
            line += f"; the copy moves {moved / statistics.median(timed['copy'].gpu_us) / 1e3:.0f} GB/s (read + write)"
        out.append(line + "".join(f"; {p}: {v.note}" for p, v in timed.items() if v.note))
    return out


def environment(torch: Any, cp: Any, method: Method, l2: int) -> list[str]:
    props = torch.cuda.get_device_properties(0)
    try:
        git = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        git = "unknown"
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cupy_version = cp.__version__ if cp is not None else "not available"
    return [f"### {now} — {props.name}", "",
            f"- command: `{shlex.join(['python', *sys.argv])}`",
            f"- GPU: {props.name}, sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
            f"L2 {l2 / 2**20:.0f} MiB, {props.total_memory / 2**30:.0f} GiB",
            f"- torch {torch.__version__} (CUDA {torch.version.cuda}), CuPy {cupy_version}, "
            f"Python {platform.python_version()}, fklir tree {git}",
            f"- method: per peer {method.warmup} warm-up calls, then {method.reps} repetitions of {method.calls} "
            "back-to-back calls on one stream queued behind a sleep kernel, timed with CUDA events; medians"]


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    method = QUICK if args.quick else FULL
    try:
        import fklir as fkl
    except Exception as error:
        fail(f"cannot import fklir from {REPO} ({type(error).__name__}: {error}); install its deps (pip install -e .)")
    if not fkl.gpu_available():
        fail("no CUDA GPU or driver found (fklir.gpu_available() is False); this benchmark needs a GPU")
    try:
        import torch
    except ImportError as error:
        fail(f"needs PyTorch with CUDA ({error})")
    if not torch.cuda.is_available():
        fail(f"torch {torch.__version__} sees no CUDA device")
    try:
        import cupy as cp
    except Exception:  # an optional peer: any import failure just empties its column
        cp = None
    stream = torch.cuda.Stream()
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or L2_FALLBACK_BYTES
    log: list[str] = []
    rows: list[tuple[Workload, dict[str, Result | str]]] = []
    with torch.cuda.stream(stream), torch.no_grad():
        if cp is not None:
            cp.cuda.ExternalStream(stream.cuda_stream).use()  # CuPy kernels on the same stream as the rest
        cycles_per_us = calibrate_sleep(torch, stream)
        say(f"- sleep kernel: {cycles_per_us:.0f} cycles per µs", log)
        for wl in workloads(torch, fkl, *args.size):
            rows.append((wl, run_workload(torch, fkl, cp, stream, wl, method, l2, cycles_per_us, log)))
            torch.cuda.empty_cache()
    text = "\n".join([*environment(torch, cp, method, l2), "", *report(rows, method), "", "Checks and setup:", "",
                      *log, ""])
    print(text, flush=True)
    if args.out is not None:
        with args.out.open("a", encoding="utf-8") as f:
            f.write("\n" + text)
        print(f"bench_chain: report appended to {args.out}", file=sys.stderr)
    fklir_ok = all(isinstance(r["fklir"], Result) and r["fklir"].ok for _, r in rows)
    return 0 if fklir_ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
