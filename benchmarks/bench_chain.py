#!/usr/bin/env python3
"""Fused chains on one GPU: fklir against torch eager, torch.compile, CuPy and a device copy (SPEC §5).

    python benchmarks/bench_chain.py [--quick] [--size 3840x2160] [--out PATH]

Workloads on WxHx3 images: a 6-op float32 chain (Mul, Add per channel, Sub, Div, Max, Min) and the uint8
normalise chain (Cast float32, Mul, Sub per channel, SaturateCast uint8). Every peer is checked against torch
eager, then timed; benchmarks/RESULTS.md describes the method. Progress goes to stderr, the markdown report to
stdout (and is appended to --out PATH). Exit: 0 ok, 1 fklir failed or was wrong, 2 no GPU, torch or fklir.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import math
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol, TypeVar

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # measure this working tree's fklir, installed or not

DEVICE = "cuda"  # a test harness may point this at "cpu" with torch.cuda stubbed out
L2_FALLBACK_BYTES = 60 * 2**20  # the H200's, for a torch that does not report L2_cache_size
ROTATE_L2_MULTIPLE = 10  # inputs + outputs rotated over >= 10 L2s, so no call finds its data in L2
MAX_BUFFER_SETS = 256  # tiny --size values cannot defeat L2 anyway; the setup lines then say so
PEERS = ("copy", "fklir", "eager", "compile", "cupy")
Call = Callable[[int], object]  # one call of a peer on rotation slot i (modulo the number of sets)
Peer = tuple[Call, Callable[[], Any]]  # (call, the output that call(0) wrote)


@dataclass(frozen=True)
class Method:
    calls: int  # back-to-back calls per timed repetition
    reps: int  # repetitions; medians are reported
    warmup: int  # untimed calls first (loads, caches, clocks up)


FULL, QUICK = Method(calls=50, reps=21, warmup=10), Method(calls=8, reps=3, warmup=3)


@dataclass
class Result:
    ok: bool  # call(0)'s output matched torch eager
    gpu_us: list[float] = field(default_factory=list)  # GPU µs per call, one value per repetition
    host_us: float = math.nan  # median host µs per call (enqueue only)
    note: str = ""


@dataclass(frozen=True)
class Workload:
    label: str
    shape: tuple[int, int, int]  # (H, W, C)
    itemsize: int  # bytes per element of the input and of the output
    make_input: Callable[[], Any]  # a fresh random input tensor (never zeros)
    eager: Callable[[Any], Any]  # the same chain as separate torch ops
    fklir_ops: tuple[Any, ...]
    cupy_kernel: tuple[str, str, str, str]  # cupy.ElementwiseKernel(in params, out params, body, name)
    cupy_consts: tuple[tuple[float, ...], ...]  # the raw float32 arrays that follow x
    integer: bool  # compare within ±1 instead of within a float tolerance


def fail(message: str) -> NoReturn:
    print(f"bench_chain: {message}", file=sys.stderr)
    sys.exit(2)


def say(line: str, log: list[str]) -> None:
    print(line, file=sys.stderr, flush=True)
    log.append(line)


def parse_args(argv: list[str]) -> argparse.Namespace:
    def size(text: str) -> tuple[int, int]:
        w, _, h = text.lower().partition("x")
        if not (w.isdigit() and h.isdigit() and int(w) > 0 and int(h) > 0):
            raise argparse.ArgumentTypeError(f"expected WxH with positive integers, got {text!r}")
        return int(w), int(h)

    p = argparse.ArgumentParser(description="fklir vs torch eager, torch.compile, CuPy and a copy (SPEC §5)")
    p.add_argument("--quick", action="store_true", help="few calls and repetitions (smoke test)")
    p.add_argument("--size", type=size, default=(3840, 2160), metavar="WxH", help="default 3840x2160")
    p.add_argument("--out", type=Path, metavar="PATH", help="also append the markdown report to PATH")
    p.add_argument("--flat", action="store_true", help="only the flat chains: f32/f16/u8 with 1-4 channels (issue 19)")
    p.add_argument("--no-compile", action="store_true", help="leave torch.compile out (it compiles per workload)")
    p.add_argument("--dtypes", nargs="+", metavar="DTYPE", help="with --flat: these element types only (e.g. float16)")
    return p.parse_args(argv)


def workloads(torch: Any, fkl: Any, w: int, h: int) -> list[Workload]:
    dev, f32, shape = torch.device(DEVICE), torch.float32, (h, w, 3)
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
        return y.round().clamp(0, 255).to(torch.uint8)  # torch.round is half to even, like SaturateCast

    # CuPy: i is the flat element index, so i % 3 is the channel; Max/Min as SPEC writes them (NaN-safe order)
    float_body = (
        "float v = (x * 1.5f + add[i % 3] - 0.25f) / 1.7f; v = v >= -0.5f ? v : -0.5f; y = v <= 0.8f ? v : 0.8f;"
    )
    uint8_body = (
        "float v = (float)x * scale[i % 3] - mean[i % 3]; y = (unsigned char)rintf(fminf(fmaxf(v, 0.f), 255.f));"
    )
    float_chain = Workload(
        label=f"6-op float32 chain, {w}x{h}x3",
        shape=shape,
        itemsize=4,
        make_input=lambda: torch.rand(shape, dtype=f32, device=dev) * 2 - 1,
        eager=float_eager,
        fklir_ops=(
            fkl.TensorRead(),
            fkl.Mul(1.5),
            fkl.Add(add),
            fkl.Sub(0.25),
            fkl.Div(1.7),
            fkl.Max(-0.5),
            fkl.Min(0.8),
            fkl.TensorWrite(),
        ),
        cupy_kernel=("float32 x, raw float32 add", "float32 y", float_body, "bench_float_chain"),
        cupy_consts=(add,),
        integer=False,
    )
    uint8_chain = Workload(
        label=f"uint8x3 → float → Mul/Sub → SaturateCast uint8, {w}x{h}",
        shape=shape,
        itemsize=1,
        make_input=lambda: torch.randint(0, 256, shape, dtype=torch.uint8, device=dev),
        eager=uint8_eager,
        fklir_ops=(
            fkl.TensorRead(),
            fkl.Cast("float32"),
            fkl.Mul(scale),
            fkl.Sub(mean),
            fkl.SaturateCast("uint8"),
            fkl.TensorWrite(),
        ),
        cupy_kernel=("uint8 x, raw float32 scale, raw float32 mean", "uint8 y", uint8_body, "bench_u8_chain"),
        cupy_consts=(scale, mean),
        integer=True,
    )
    return [float_chain, uint8_chain]


def flat_workloads(torch: Any, fkl: Any, w: int, h: int) -> list[Workload]:
    """Issue 19's flat chains: float32 and float16 Mul + Add, uint8 Cast → Mul → Sub → SaturateCast, 1-4 channels."""
    dev, rows = torch.device(DEVICE), []
    for c in (1, 2, 3, 4):
        shape = (h, w, c)
        for name, dtype, cupy_type in (("float32", torch.float32, "float32"), ("float16", torch.float16, "float16")):
            rows.append(
                Workload(
                    label=f"flat {name}x{c} Mul + Add, {w}x{h}",
                    shape=shape,
                    itemsize=dtype.itemsize,
                    make_input=lambda shape=shape, dtype=dtype: (torch.rand(shape, device=dev) * 2 - 1).to(dtype),
                    eager=lambda x: x * 1.5 + 0.25,
                    fklir_ops=(fkl.TensorRead(), fkl.Mul(1.5), fkl.Add(0.25), fkl.TensorWrite()),
                    # each step rounded to the element type, as the chain keeps its type (SPEC §3)
                    cupy_kernel=(
                        f"{cupy_type} x",
                        f"{cupy_type} y",
                        f"{cupy_type} t = {cupy_type}(__fmul_rn((float)x, 1.5f));"
                        f" y = {cupy_type}(__fadd_rn((float)t, 0.25f));",
                        f"bench_flat_{name}_{c}",
                    ),
                    cupy_consts=(),
                    integer=False,
                )
            )
        rows.append(
            Workload(
                label=f"flat uint8x{c} → float → Mul/Sub → SaturateCast uint8, {w}x{h}",
                shape=shape,
                itemsize=1,
                make_input=lambda shape=shape: torch.randint(0, 256, shape, dtype=torch.uint8, device=dev),
                eager=lambda x: (x.to(torch.float32) * 1.2 - 10.0).round().clamp(0, 255).to(torch.uint8),
                fklir_ops=(
                    fkl.TensorRead(),
                    fkl.Cast("float32"),
                    fkl.Mul(1.2),
                    fkl.Sub(10.0),
                    fkl.SaturateCast("uint8"),
                    fkl.TensorWrite(),
                ),
                cupy_kernel=(
                    "uint8 x",
                    "uint8 y",
                    "float v = __fsub_rn(__fmul_rn((float)x, 1.2f), 10.f);"
                    " y = (unsigned char)rintf(fminf(fmaxf(v, 0.f), 255.f));",
                    f"bench_flat_u8_{c}",
                ),
                cupy_consts=(),
                integer=True,
            )
        )
    return rows


def compare(torch: Any, got: Any, ref: Any, integer: bool) -> tuple[bool, str]:
    """(ok, message): uint8 within ±1 (FMA contraction may flip a rounding tie); float32 within 1e-5 rel."""
    if tuple(got.shape) != tuple(ref.shape) or got.dtype != ref.dtype:
        return False, f"got {got.dtype} {tuple(got.shape)}, expected {ref.dtype} {tuple(ref.shape)}"
    if integer:
        diff = (got.to(torch.int32) - ref.to(torch.int32)).abs()
        worst, off = int(diff.max().item()), int((diff != 0).sum().item())
        return worst <= 1, f"max |d| = {worst}, {off} of {diff.numel()} elements differ"
    diff = (got.double() - ref.double()).abs()
    bad = int((diff > 1e-6 + 1e-5 * ref.double().abs()).sum().item())
    finite = bool(torch.isfinite(got).all().item())  # the output was poisoned with NaN before the call
    message = f"max |d| = {diff.max().item():.3g}, {bad} outside 1e-6 + 1e-5*|ref|, all finite: {finite}"
    return finite and bad == 0, message


def calibrate_sleep(torch: Any, stream: Any) -> float:
    """Sleep-kernel cycles per µs (the fastest of a few readings, so that planned sleeps err long)."""
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
        nonlocal counter  # keeps rotating through the buffer sets across repetitions
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
        torch.cuda._sleep(int(sleep_us * cycles_per_us))  # runs on the current stream, which is `stream`
        start.record(stream)
        run_calls(n)
        end.record(stream)
        too_short = start.query()  # the GPU began before all N calls were queued: host gaps may leak in
        end.synchronize()
        if too_short and doublings < 4:
            sleep_us, doublings = 2 * sleep_us, doublings + 1
            continue
        if too_short:
            result.note = "the sleep never covered the enqueue: GPU time may include host gaps"
        result.gpu_us.append(start.elapsed_time(end) * 1e3 / n)
    return result


def peers(
    torch: Any, fkl: Any, cp: Any, stream: Any, wl: Workload, inputs: list[Any], outputs: list[Any], ring: list[Any]
) -> dict[str, Callable[[], Peer]]:
    """Per peer, a factory of its call; built lazily so that one peer's failure stays its own."""
    sets = len(inputs)

    def held(fn: Callable[[Any], Any]) -> Peer:
        # torch peers allocate their outputs; holding the last `sets` of them makes the allocator rotate them
        return (lambda i: ring.__setitem__(i % sets, fn(inputs[i % sets]))), lambda: ring[0]

    def copy() -> Peer:
        return (lambda i: outputs[i % sets].copy_(inputs[i % sets])), lambda: outputs[0]

    def fklir() -> Peer:
        pipe = fkl.compose(*wl.fklir_ops, target="gpu")
        return (lambda i: pipe(inputs[i % sets], out=outputs[i % sets], stream=stream)), lambda: outputs[0]

    def cupy() -> Peer:
        kernel = cp.ElementwiseKernel(*wl.cupy_kernel)
        consts = [cp.asarray(v, dtype=cp.float32) for v in wl.cupy_consts]
        cp_in, cp_out = [cp.asarray(t) for t in inputs], [cp.asarray(t) for t in outputs]  # views, no copies
        return (lambda i: kernel(cp_in[i % sets], *consts, cp_out[i % sets])), lambda: outputs[0]

    factories = {
        "copy": copy,
        "fklir": fklir,
        "eager": lambda: held(wl.eager),
        "compile": lambda: held(torch.compile(wl.eager)),
    }
    return factories | ({"cupy": cupy} if cp is not None else {})


def run_workload(
    torch: Any,
    fkl: Any,
    cp: Any,
    stream: Any,
    wl: Workload,
    method: Method,
    l2: int,
    cycles_per_us: float,
    log: list[str],
    compile_peer: bool = True,
) -> dict[str, Result | str]:
    """Per peer: a Result, or a short string saying why there is none (torch.compile's: "not run" without
    compile_peer)."""
    frame_bytes = math.prod(wl.shape) * wl.itemsize
    sets = min(MAX_BUFFER_SETS, max(2, math.ceil(ROTATE_L2_MULTIPLE * l2 / (2 * frame_bytes))))
    inputs = [wl.make_input() for _ in range(sets)]
    outputs = [torch.empty_like(inputs[0]) for _ in range(sets)]  # both chains keep the input dtype
    rotated = 2 * frame_bytes * sets
    under = "" if rotated >= ROTATE_L2_MULTIPLE * l2 else " - UNDER 10x L2: some calls may hit L2"
    say(f"- {wl.label}: {sets} input/output sets rotated, {rotated / 1e6:.0f} MB = {rotated / l2:.1f} L2{under}", log)
    ref = wl.eager(inputs[0])
    ring: list[Any] = [None] * sets
    results: dict[str, Result | str] = dict.fromkeys(PEERS, "-")  # "-": the peer is not available
    for name, factory in peers(torch, fkl, cp, stream, wl, inputs, outputs, ring).items():
        if name == "compile" and not compile_peer:
            results[name] = "not run"
            continue
        try:
            call, output = factory()
            outputs[0].fill_(0xA5 if wl.integer else math.nan)  # poison: unwritten elements fail the check
            t0 = time.perf_counter()
            call(0)
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - t0) * 1e3
            if name == "eager":
                ok, msg = True, "the reference"
            elif name == "copy":
                ok, msg = bool(torch.equal(output(), inputs[0])), "compared with its source"
            else:
                ok, msg = compare(torch, output(), ref, wl.integer)
            verdict = "ok" if ok else "WRONG"
            say(f"  - {name}: {verdict} vs torch eager: {msg}; first call {first_ms:.0f} ms", log)
            results[name] = measure(torch, stream, call, method, cycles_per_us, ok)
        except Exception as error:  # one peer failing must not lose the others' numbers
            say(f"  - {name}: ERROR {type(error).__name__}: {error}", log)
            results[name] = "error"
        ring[:] = [None] * sets
    return results


def ratio(a: float | None, b: float | None) -> str:
    """a / b to two places, or "-" when either is missing."""
    return f"{a / b:.2f}" if a is not None and b is not None else "-"


def fmt(r: Result | str, host: bool = False) -> str:
    if isinstance(r, str):
        return r
    value = f"{r.host_us if host else statistics.median(r.gpu_us):.1f}"
    return value if r.ok else f"{value} (WRONG)"


def report(rows: list[tuple[Workload, dict[str, Result | str]]], method: Method) -> list[str]:
    out = [
        "| workload | copy floor µs | fklir µs | fklir/copy | torch eager µs | torch.compile µs | CuPy µs "
        "| speed-up vs eager |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for wl, r in rows:
        med = {p: statistics.median(v.gpu_us) for p, v in r.items() if isinstance(v, Result)}
        ratio = f"{med['fklir'] / med['copy']:.2f}" if {"fklir", "copy"} <= med.keys() else "-"
        speedup = f"{med['eager'] / med['fklir']:.1f}x" if {"fklir", "eager"} <= med.keys() else "-"
        cells = [fmt(r["copy"]), fmt(r["fklir"]), ratio, fmt(r["eager"]), fmt(r["compile"]), fmt(r["cupy"])]
        cells.append(speedup)
        out.append(f"| {wl.label} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Host µs per call (Python enqueue on a caller's stream, median):",
        "",
        "| workload | copy | fklir | torch eager | torch.compile | CuPy |",
        "|---|---|---|---|---|---|",
    ]
    out += [f"| {wl.label} | " + " | ".join(fmt(r[p], host=True) for p in PEERS) + " |" for wl, r in rows]
    out += ["", f"GPU µs per call, min-max of the {method.reps} repetitions (a gap inside it is noise):", ""]
    for wl, r in rows:
        timed = {p: v for p, v in r.items() if isinstance(v, Result)}
        spans = [f"{p} {min(v.gpu_us):.1f}-{max(v.gpu_us):.1f}" for p, v in timed.items()]
        if "copy" in timed:  # sanity: an H200 copies a big frame at about 3400-4250 GB/s
            gb_per_s = 2 * math.prod(wl.shape) * wl.itemsize / statistics.median(timed["copy"].gpu_us) / 1e3
            spans.append(f"the copy moves {gb_per_s:.0f} GB/s (read + write)")
        notes = "".join(f"; {p}: {v.note}" for p, v in timed.items() if v.note)
        out.append(f"- {wl.label}: " + ", ".join(spans) + notes)
    return out


def driver_version() -> str:
    try:
        driver = importlib.import_module("cuda.bindings.driver")
        error, version = driver.cuDriverGetVersion()
    except Exception:  # only informative
        return "unknown"
    return f"{version // 1000}.{version % 1000 // 10}" if error == driver.CUresult.CUDA_SUCCESS else "unknown"


def environment(torch: Any, cp: Any, method: Method, l2: int) -> list[str]:
    props = torch.cuda.get_device_properties(0)
    try:
        git = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        git = ""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cp_version = cp.__version__ if cp is not None else "absent"
    return [
        f"### {now} - {props.name}",
        "",
        f"- command: `{shlex.join([Path(sys.executable).name, *sys.argv])}`",
        f"- GPU: {props.name}, sm_{props.major}{props.minor}, {props.multi_processor_count} SMs, "
        f"L2 {l2 / 2**20:.0f} MiB, {props.total_memory / 2**30:.0f} GiB",
        f"- CUDA driver {driver_version()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
        f"CuPy {cp_version}, Python {platform.python_version()}, fklir tree {git or 'unknown (no git)'}",
        f"- method: per peer {method.warmup} warm-up calls, then {method.reps} repetitions of "
        f"{method.calls} back-to-back calls on one stream behind a sleep kernel, CUDA events; medians",
    ]


# ----- shared by the kernel benchmarks (bench_<kernel>.py) ----------------------------------------------

# A default kernel-benchmark run shares a device session with the test suite: fewer calls than FULL.
KERNEL_FULL = Method(calls=20, reps=11, warmup=5)
# Third-party peers whose set-up may stall (kernel loads, contexts) on a bare machine, and the first-call time
# past which they are left out of a workload.
CAPPED_PEERS = ("cvcuda", "cv2.cuda")
FIRST_CALL_CAP_S = 2.0


class Report:
    """The markdown report, written as it grows: to stdout, flushed, and appended to --out's PATH, so that a run
    stopped by a time limit still leaves what it finished."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.emit("")  # a blank line between reports appended to one file

    def emit(self, *lines: str) -> None:
        text = "".join(f"{line}\n" for line in lines)
        sys.stdout.write(text)
        sys.stdout.flush()
        if self.path is not None:
            with self.path.open("a", encoding="utf-8") as f:
                f.write(text)


LabelledT = TypeVar("LabelledT", bound="Labelled")


class Labelled(Protocol):
    @property
    def label(self) -> str: ...


def within_budget(items: Sequence[LabelledT], budget_s: float, started: float, report: Report) -> Iterator[LabelledT]:
    """`items` until `budget_s` seconds have passed since `started`; then one line naming those skipped."""
    for k, item in enumerate(items):
        elapsed = time.monotonic() - started
        if elapsed > budget_s:
            skipped = "; ".join(w.label for w in items[k:])
            report.emit("", f"Skipped after {elapsed:.0f} s (--budget {budget_s:g}): {skipped}.")
            return
        yield item


def measure_wall(call: Call, method: Method, ok: bool, finish: Callable[[], object] = lambda: None) -> Result:
    """Median µs per call from perf_counter around `method.calls` calls and `finish()` (a synchronize, for a
    peer timed on the host), over `method.reps` repetitions after `method.warmup` calls."""
    for i in range(method.warmup):
        call(i)
    finish()
    result = Result(ok)
    for _ in range(method.reps):
        t0 = time.perf_counter()
        for i in range(method.calls):
            call(i)
        finish()
        result.gpu_us.append((time.perf_counter() - t0) * 1e6 / method.calls)
    result.host_us = statistics.median(result.gpu_us)
    return result


def gpu_torch(fkl: Any) -> Any:
    """torch, once fklir and torch both see a CUDA device; else exit 2 saying which does not."""
    if not fkl.gpu_available():
        fail("no CUDA GPU or driver found (fklir.gpu_available() is False); this benchmark needs a GPU")
    try:
        import torch  # pyright: ignore[reportMissingImports]
    except ImportError as error:
        fail(f"needs PyTorch with CUDA: {error}")
    if not torch.cuda.is_available():
        fail(f"torch {torch.__version__} sees no CUDA device")
    return torch


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    method = QUICK if args.quick else FULL
    try:
        import fklir as fkl
    except Exception as error:
        fail(f"cannot import fklir from {REPO}: {type(error).__name__}: {error}")
    torch = gpu_torch(fkl)
    try:
        import cupy as cp  # pyright: ignore[reportMissingImports]
    except Exception:  # an optional peer: any import failure just empties its column
        cp = None
    stream = torch.cuda.Stream()
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or L2_FALLBACK_BYTES
    log: list[str] = []
    rows: list[tuple[Workload, dict[str, Result | str]]] = []
    with torch.cuda.stream(stream), torch.no_grad():
        cp_stream = cp.cuda.ExternalStream(stream.cuda_stream) if cp is not None else None
        if cp_stream is not None:
            cp_stream.use()  # CuPy kernels go on the same stream as everything else
        cycles_per_us = calibrate_sleep(torch, stream)
        say(f"- sleep kernel: {cycles_per_us:.0f} cycles per µs", log)
        chosen = flat_workloads(torch, fkl, *args.size) if args.flat else workloads(torch, fkl, *args.size)
        if args.dtypes:
            chosen = [wl for wl in chosen if any(f"{dtype}x" in wl.label for dtype in args.dtypes)]
        for wl in chosen:
            rows.append(
                (wl, run_workload(torch, fkl, cp, stream, wl, method, l2, cycles_per_us, log, not args.no_compile))
            )
            torch.cuda.empty_cache()
    sections = [*environment(torch, cp, method, l2), "", *report(rows, method), "", "Checks and setup:", ""]
    text = "\n".join([*sections, *log, ""])
    print(text, flush=True)
    if args.out is not None:
        with args.out.open("a", encoding="utf-8") as f:
            f.write("\n" + text)
        print(f"bench_chain: report appended to {args.out}", file=sys.stderr)
    return 0 if all(isinstance(r["fklir"], Result) and r["fklir"].ok for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
