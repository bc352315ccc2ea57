#!/usr/bin/env python3
"""ROI crop → resize → normalise, and 8 images in one call: fklir against torch peers and copies (SPEC §5).

    python benchmarks/bench_roi.py [--quick] [--out PATH]

Workloads: a 1920x1080 uint8x3 image, 64 (then 3) crops 200x150 → Resize 224x224 linear → ×1/255 → −mean
→ ÷std → TensorSplit, against torch eager per ROI and torchvision roi_align; and 8 separate 1080p float32x3
images through Mul+Add in one list call, against 8 fklir calls, torch eager, torch.compile and two copies.
The timing method is bench_chain.py's (imported from it); benchmarks/RESULTS.md describes both. Progress goes
to stderr, the markdown report to stdout (and is appended to --out PATH). Exit: 0 ok, 1 fklir failed, was
wrong or did not launch exactly one kernel per call, 2 no GPU, torch or fklir.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import tempfile
import time
import types
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Method, Result, say

DEVICE = "cuda"  # a test harness may point this at "cpu" with torch.cuda stubbed out
IMAGE_W, IMAGE_H, CROP_W, CROP_H, OUT_SIZE = 1920, 1080, 200, 150, 224
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
SEED = 2024  # rect positions; both ROI workloads draw from it, so the 3 crops are the first 3 of the 64
ROI_TARGET_US = {64: 21.0, 3: 3.5}  # SPEC §5
LIST_IMAGES, SCALE, OFFSET, LIST_TARGET = 8, 1.7, 0.3, 1.05  # fklir list call ≤ 1.05 × the big copy
ROI_WARN, ROI_FAIL = 1e-3, 1e-2  # max |fklir - eager| after normalisation: noted above WARN, wrong above FAIL
MAX_SETS = 512  # 3 crops touch ~2 MB per call: ~300 sets reach 10x L2
QUEUED_KERNELS = 500  # a stream queues ~1000 launches, then the host blocks: keep a repetition's under that

Results = dict[str, "Result | str"]  # per peer: its Result, or why there is none ("error")
Check = Callable[[Any], tuple[bool, str]]  # (ok, message) about what a peer's call(0) wrote


@dataclass
class Timed:
    """One peer: its call on rotation slot i, what call(0) wrote, and how to judge that."""

    call: bc.Call
    output: Callable[[], Any]
    check: Check
    launches: int = 0  # fklir peers: kernel launches one call must make (0: not counted)
    kernels: int = 1  # kernels one call queues (at most): bounds the calls per timed repetition
    counted: str = "not measured"  # fklir peers: what the launch counter saw over the timed calls


@dataclass
class Bench:
    """One workload: its peers, in the order they run, and what they share."""

    label: str
    peers: dict[str, Callable[[], Timed]]  # built lazily, so that one peer's failure stays its own
    poisoned: list[Any]  # set-0 outputs that peers write in place: NaN before each check, so gaps show
    ring: list[Any] = field(default_factory=list)  # outputs that allocating peers hold (see held())


def fail(message: str) -> NoReturn:
    print(f"bench_roi: {message}", file=sys.stderr)
    sys.exit(2)


def sets_for(label: str, touched: int, allocated: int, l2: int, log: list[str]) -> int:
    """Buffer sets to rotate so that the bytes calls touch add up to 10x L2 (crops read part of an image)."""
    sets = min(MAX_SETS, max(2, math.ceil(bc.ROTATE_L2_MULTIPLE * l2 / touched)))
    under = "" if sets * touched >= bc.ROTATE_L2_MULTIPLE * l2 else " - UNDER 10x L2: some calls may hit L2"
    say(
        f"- {label}: {sets} sets rotated, {touched / 1e6:.1f} MB touched per call, "
        f"{sets * touched / l2:.1f} L2 in all, {sets * allocated / 1e9:.2f} GB allocated{under}",
        log,
    )
    return sets


def held(fn: Callable[[Any], Any], inputs: list[Any], ring: list[Any], check: Check, kernels: int) -> Timed:
    """A peer that allocates its output; holding the last len(inputs) makes the allocator rotate them too."""
    sets = len(inputs)
    ring[:] = [None] * sets
    return Timed(lambda i: ring.__setitem__(i % sets, fn(inputs[i % sets])), lambda: ring[0], check, kernels=kernels)


def roi_bench(torch: Any, fkl: Any, tv_ops: Any, stream: Any, rois: int, l2: int, log: list[str]) -> Bench:
    dev, f32, fn = torch.device(DEVICE), torch.float32, torch.nn.functional
    draw = random.Random(SEED)
    rects = [
        (draw.randrange(IMAGE_W - CROP_W + 1), draw.randrange(IMAGE_H - CROP_H + 1), CROP_W, CROP_H)
        for _ in range(rois)
    ]
    out_shape = (rois, 3, OUT_SIZE, OUT_SIZE)
    label = f"ROI: 1080p uint8x3, {rois} crops {CROP_W}x{CROP_H} → {OUT_SIZE}x{OUT_SIZE} → normalise → planar"
    touched = rois * CROP_W * CROP_H * 3 + math.prod(out_shape) * 4  # crop bytes read (at most) + output
    sets = sets_for(label, touched, IMAGE_W * IMAGE_H * 3 + math.prod(out_shape) * 4, l2, log)
    images = [torch.randint(0, 256, (IMAGE_H, IMAGE_W, 3), dtype=torch.uint8, device=dev) for _ in range(sets)]
    outs = [torch.empty(out_shape, dtype=f32, device=dev) for _ in range(sets)]
    mean, std = (torch.tensor(v, dtype=f32, device=dev).view(3, 1, 1) for v in (MEAN, STD))
    boxes = torch.tensor([[0, x, y, x + w, y + h] for x, y, w, h in rects], dtype=f32, device=dev)

    def eager(img: Any) -> Any:  # what a torch user writes: per ROI slice, resize, normalise; then stack
        planes = []
        for x, y, w, h in rects:
            crop = img[y : y + h, x : x + w].permute(2, 0, 1).unsqueeze(0).float()
            r = fn.interpolate(crop, size=(OUT_SIZE, OUT_SIZE), mode="bilinear", align_corners=False, antialias=False)
            planes.append((r[0] * (1 / 255) - mean) / std)
        return torch.stack(planes)

    def roi_align(img: Any) -> Any:  # one float NCHW conversion of the image, then all boxes at once
        nchw = img.permute(2, 0, 1).unsqueeze(0).to(f32, memory_format=torch.contiguous_format)
        r = tv_ops.roi_align(nchw, boxes, output_size=OUT_SIZE, spatial_scale=1.0, sampling_ratio=1, aligned=True)
        return (r * (1 / 255) - mean) / std

    ref = eager(images[0])

    def diff(got: Any) -> tuple[float, bool]:
        if tuple(got.shape) != out_shape or got.dtype != f32:
            raise ValueError(f"got {got.dtype} {tuple(got.shape)}, expected float32 {out_shape}")
        return (got.double() - ref.double()).abs().max().item(), bool(torch.isfinite(got).all().item())

    def check_fklir(got: Any) -> tuple[bool, str]:
        worst, finite = diff(got)  # an unwritten element stays NaN (outputs are poisoned): worst is NaN
        note = f" (above {ROI_WARN:g})" if worst > ROI_WARN else ""
        return finite and worst <= ROI_FAIL, f"max |d| = {worst:.3g}{note} vs eager, all finite: {finite}"

    def check_roi_align(got: Any) -> tuple[bool, str]:
        worst, _ = diff(got)
        return True, f"max |d| = {worst:.3g} vs eager: another sampling at the rect edges, not judged"

    def fklir() -> Timed:
        pipe = fkl.compose(
            fkl.TensorRead(),
            fkl.Crop(rects),
            fkl.Resize(OUT_SIZE, OUT_SIZE),
            fkl.Mul(1 / 255),
            fkl.Sub(MEAN),
            fkl.Div(STD),
            fkl.TensorSplit(),
            target="gpu",
        )
        return Timed(
            lambda i: pipe(images[i % sets], out=outs[i % sets], stream=stream),
            lambda: outs[0],
            check_fklir,
            launches=1,
        )

    bench = Bench(label, {}, [outs[0]])
    per_roi = 5  # kernels: float(), interpolate, mul, sub, div
    bench.peers = {
        "fklir": fklir,
        "eager": lambda: held(eager, images, bench.ring, lambda _: (True, "the reference"), per_roi * rois + 1),
    }
    if tv_ops is not None:  # kernels: the float NCHW conversion, roi_align, mul, sub, div
        bench.peers["roi_align"] = lambda: held(roi_align, images, bench.ring, check_roi_align, 5)
    return bench


def list_bench(torch: Any, fkl: Any, stream: Any, l2: int, log: list[str]) -> Bench:
    dev, shape = torch.device(DEVICE), (IMAGE_H, IMAGE_W, 3)
    label = f"{LIST_IMAGES} separate 1080p float32x3 images, Mul({SCALE}) + Add({OFFSET}), one call"
    frames = LIST_IMAGES * math.prod(shape) * 4
    sets = sets_for(label, 2 * frames, 4 * frames, l2, log)  # allocated: the lists and the big copy's pair
    inputs = [[torch.rand(shape, device=dev) * 2 - 1 for _ in range(LIST_IMAGES)] for _ in range(sets)]
    outs = [torch.empty((LIST_IMAGES, *shape), device=dev) for _ in range(sets)]
    views = [list(o.unbind(0)) for o in outs]  # contiguous (H, W, 3) views, made once
    big_in = [torch.stack(xs) for xs in inputs]  # the same bytes, contiguous, for the one-copy floor
    big_out = [torch.empty_like(b) for b in big_in]
    ref = big_in[0] * SCALE + OFFSET

    def check(got: Any) -> tuple[bool, str]:
        return bc.compare(torch, torch.stack(got) if isinstance(got, list) else got, ref, integer=False)

    def same_as_source(got: Any) -> tuple[bool, str]:
        return bool(torch.equal(got, big_in[0])), "compared with its source"

    def eager(xs: list[Any]) -> list[Any]:
        return [x * SCALE + OFFSET for x in xs]

    def copies(i: int) -> None:
        for x, y in zip(inputs[i % sets], views[i % sets], strict=True):
            y.copy_(x)

    def mul_add() -> Any:
        return fkl.compose(fkl.TensorRead(), fkl.Mul(SCALE), fkl.Add(OFFSET), fkl.TensorWrite(), target="gpu")

    def fklir() -> Timed:
        pipe = mul_add()
        return Timed(
            lambda i: pipe(inputs[i % sets], out=outs[i % sets], stream=stream), lambda: outs[0], check, launches=1
        )

    def fklir_single_calls() -> Timed:
        pipe = mul_add()

        def calls(i: int) -> None:
            for x, y in zip(inputs[i % sets], views[i % sets], strict=True):
                pipe(x, out=y, stream=stream)

        return Timed(calls, lambda: outs[0], check, launches=LIST_IMAGES, kernels=LIST_IMAGES)

    bench = Bench(label, {}, [outs[0], big_out[0]])
    bench.peers = {
        "copy": lambda: Timed(lambda i: big_out[i % sets].copy_(big_in[i % sets]), lambda: big_out[0], same_as_source),
        "copy_8": lambda: Timed(copies, lambda: outs[0], same_as_source, kernels=LIST_IMAGES),
        "fklir": fklir,
        "fklir_8": fklir_single_calls,
        "eager": lambda: held(eager, inputs, bench.ring, check, 2 * LIST_IMAGES),
        "compile": lambda: held(torch.compile(eager), inputs, bench.ring, check, 2 * LIST_IMAGES),  # at most
    }
    return bench


def measure_counted(
    torch: Any, stream: Any, name: str, timed: Timed, method: Method, cycles_per_us: float, ok: bool, log: list[str]
) -> Result:
    """bc.measure, at most QUEUED_KERNELS per repetition; fklir: did each call launch `launches` kernels?"""
    per_rep = max(1, min(method.calls, QUEUED_KERNELS // timed.kernels))
    if per_rep < method.calls:
        say(f"  - {name}: calls per repetition: {per_rep} (up to {timed.kernels} kernels a call)", log)
        method = Method(calls=per_rep, reps=method.reps, warmup=method.warmup)
    if not timed.launches:
        return bc.measure(torch, stream, timed.call, method, cycles_per_us, ok)
    from fklir.runtime.launch import LAUNCHES

    calls, before = 0, LAUNCHES.count

    def counting(i: int) -> None:
        nonlocal calls
        calls += 1
        timed.call(i)

    result = bc.measure(torch, stream, counting, method, cycles_per_us, ok)
    launched, expected = LAUNCHES.count - before, timed.launches * calls
    verdict = "ok" if launched == expected else "WRONG"
    timed.counted = f"{calls} timed calls, {launched} launches ({timed.launches} per call): {verdict}"
    say(f"  - {name}: {timed.counted}", log)
    if launched != expected:
        result.ok, result.note = False, f"{launched} launches for {calls} calls"
    return result


def run_bench(
    torch: Any,
    stream: Any,
    bench: Bench,
    method: Method,
    cycles_per_us: float,
    log: list[str],
    profiled: list[tuple[str, Timed]],
) -> Results:
    results: Results = {}
    for name, factory in bench.peers.items():
        try:
            timed = factory()
            for t in bench.poisoned:
                t.fill_(math.nan)
            t0 = time.perf_counter()
            timed.call(0)
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - t0) * 1e3
            ok, message = timed.check(timed.output())
            say(f"  - {name}: {'ok' if ok else 'WRONG'}: {message}; first call {first_ms:.0f} ms", log)
            results[name] = measure_counted(torch, stream, name, timed, method, cycles_per_us, ok, log)
            if timed.launches:
                profiled.append((f"{bench.label}, {name}", timed))
        except Exception as error:  # one peer failing must not lose the others' numbers
            say(f"  - {name}: ERROR {type(error).__name__}: {error}", log)
            results[name] = "error"
        bench.ring[:] = [None] * len(bench.ring)
    torch.cuda.empty_cache()
    return results


def kernels_in_profile(torch: Any, timed: Timed) -> str:
    """How many CUDA kernels torch.profiler (CUPTI) sees in one call; run after all timing, not to skew it."""
    try:
        profiler = torch.profiler
        if profiler.ProfilerActivity.CUDA not in profiler.supported_activities():
            return "torch.profiler has no CUDA activity here"
        torch.cuda.synchronize()
        with profiler.profile(activities=[profiler.ProfilerActivity.CUDA]) as prof:
            timed.call(0)
            torch.cuda.synchronize()
        with tempfile.TemporaryDirectory() as folder:
            trace = Path(folder) / "trace.json"
            prof.export_chrome_trace(str(trace))
            events = json.loads(trace.read_text()).get("traceEvents", [])
    except Exception as error:  # only a record; the launch counter is the check
        return f"profile failed: {type(error).__name__}: {error}"
    names = [str(e.get("name", "?")) for e in events if str(e.get("cat", "")).lower() == "kernel"]
    expect = "" if len(names) == timed.launches else f" (expected {timed.launches})"
    return f"{len(names)} CUDA kernel(s) in a profile of one call{expect}: {', '.join(sorted(set(names)))}"


def med(r: Result | str) -> float | None:
    return statistics.median(r.gpu_us) if isinstance(r, Result) and r.gpu_us else None


def ratio(a: Result | str, b: Result | str, fmt: str = "{:.2f}") -> str:
    x, y = med(a), med(b)
    return fmt.format(x / y) if x is not None and y else "-"


def verdict(fklir: Result | str, limit_us: float | None) -> str:
    """A correct fklir result against its SPEC target ("-": no result, or a wrong one)."""
    us = med(fklir) if isinstance(fklir, Result) and fklir.ok else None
    return "-" if us is None or limit_us is None else ("met" if us <= limit_us else "MISSED")


def report(
    rois: list[tuple[Bench, int, Results]], lists: list[tuple[Bench, Results]], method: Method, launch_lines: list[str]
) -> list[str]:
    out = [
        "| workload | fklir µs | torch eager per-ROI µs | roi_align + normalise µs ¹ | eager / fklir "
        "| roi_align / fklir | SPEC target |",
        "|---|---|---|---|---|---|---|",
    ]
    for bench, n, results in rois:
        r = defaultdict(lambda: "-", results)  # "-": the peer is not available
        cells = [bc.fmt(r[p]) for p in ("fklir", "eager", "roi_align")]
        cells += [ratio(r["eager"], r["fklir"], "{:.1f}x"), ratio(r["roi_align"], r["fklir"], "{:.1f}x")]
        cells.append(f"≤ {ROI_TARGET_US[n]:g} µs: {verdict(r['fklir'], ROI_TARGET_US[n])}")
        out.append(f"| {bench.label} | " + " | ".join(cells) + " |")
    out += [
        "",
        f"¹ torchvision.ops.roi_align(output_size={OUT_SIZE}, sampling_ratio=1, aligned=True) on the "
        "image converted to float NCHW (the conversion is timed), then the same normalise. Inside a rect "
        "it samples where the resize does; at the rect's edges it reads pixels outside it: a speed peer "
        "only.",
        "",
        "| workload | one big copy µs | 8 copy_ µs | fklir list µs | fklir / big copy | fklir / 8 copies "
        "| fklir 8 calls µs | torch eager µs | torch.compile µs | SPEC target |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for bench, results in lists:
        r = defaultdict(lambda: "-", results)
        floor = med(r["copy"])
        cells = [bc.fmt(r[p]) for p in ("copy", "copy_8", "fklir")]
        cells += [ratio(r["fklir"], r["copy"]), ratio(r["fklir"], r["copy_8"])]
        cells += [bc.fmt(r[p]) for p in ("fklir_8", "eager", "compile")]
        cells.append(f"≤ {LIST_TARGET} × big copy: {verdict(r['fklir'], floor and LIST_TARGET * floor)}")
        out.append(f"| {bench.label} | " + " | ".join(cells) + " |")
    everything = [(b, r) for b, _, r in rois] + lists
    out += ["", "Host µs per call (Python enqueue on a caller's stream, median):", ""]
    for bench, r in everything:
        out.append(f"- {bench.label}: " + ", ".join(f"{p} {bc.fmt(v, host=True)}" for p, v in r.items()))
    out += ["", f"GPU µs per call, min-max of the {method.reps} repetitions (a gap inside it is noise):", ""]
    for bench, r in everything:
        timed = {p: v for p, v in r.items() if isinstance(v, Result) and v.gpu_us}
        spans = [f"{p} {min(v.gpu_us):.1f}-{max(v.gpu_us):.1f}" for p, v in timed.items()]
        for p in ("copy", "copy_8"):  # sanity: an H200 copies big buffers at ~4250 GB/s, a 1080p frame ~3400
            if p in timed:
                gb_s = 2 * LIST_IMAGES * IMAGE_W * IMAGE_H * 3 * 4 / statistics.median(timed[p].gpu_us) / 1e3
                spans.append(f"{p} moves {gb_s:.0f} GB/s (read + write)")
        notes = "".join(f"; {p}: {v.note}" for p, v in timed.items() if v.note)
        out.append(f"- {bench.label}: " + ", ".join(spans) + notes)
    title = "Kernels per fklir call (fklir's launch counter over the timed calls, torch.profiler on one):"
    return [*out, "", title, "", *launch_lines]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="fklir ROI and list-call workloads vs torch peers (SPEC §5)")
    p.add_argument("--quick", action="store_true", help="few calls and repetitions (smoke test)")
    p.add_argument("--out", type=Path, metavar="PATH", help="also append the markdown report to PATH")
    args = p.parse_args(argv)
    method = bc.QUICK if args.quick else bc.FULL
    try:
        import fklir as fkl
    except Exception as error:
        fail(f"cannot import fklir from {bc.REPO}: {type(error).__name__}: {error}")
    torch = bc.gpu_torch(fkl)
    try:
        import torchvision  # pyright: ignore[reportMissingImports]
        from torchvision import ops as tv_ops  # pyright: ignore[reportMissingImports]

        tv_version = torchvision.__version__
    except Exception as error:  # an optional peer: its column then reads "-"
        tv_ops, tv_version = None, f"absent ({type(error).__name__})"
    stream = torch.cuda.Stream()
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or bc.L2_FALLBACK_BYTES
    log: list[str] = []
    rois: list[tuple[Bench, int, Results]] = []
    lists: list[tuple[Bench, Results]] = []
    profiled: list[tuple[str, Timed]] = []  # the fklir peers, profiled once all timing is done
    with torch.cuda.stream(stream), torch.no_grad():
        cycles_per_us = bc.calibrate_sleep(torch, stream)
        say(f"- sleep kernel: {cycles_per_us:.0f} cycles per µs", log)
        for n in ROI_TARGET_US:
            bench = roi_bench(torch, fkl, tv_ops, stream, n, l2, log)
            rois.append((bench, n, run_bench(torch, stream, bench, method, cycles_per_us, log, profiled)))
        bench = list_bench(torch, fkl, stream, l2, log)
        lists.append((bench, run_bench(torch, stream, bench, method, cycles_per_us, log, profiled)))
        launch_lines = [
            f"- {label}: launch counter: {timed.counted}; {kernels_in_profile(torch, timed)}"
            for label, timed in profiled
        ]
    not_a_peer = types.SimpleNamespace(__version__="not a peer here")  # bc.environment names CuPy's version
    sections = [
        *bc.environment(torch, not_a_peer, method, l2),
        f"- torchvision {tv_version} (roi_align)",
        "",
        *report(rois, lists, method, launch_lines),
        "",
        "Checks and setup:",
        "",
    ]
    text = "\n".join([*sections, *log, ""])
    print(text, flush=True)
    if args.out is not None:
        with args.out.open("a", encoding="utf-8") as f:
            f.write("\n" + text)
        print(f"bench_roi: report appended to {args.out}", file=sys.stderr)
    fklir = [r.get("fklir") for _, _, r in rois] + [r.get(p) for _, r in lists for p in ("fklir", "fklir_8")]
    return 0 if all(isinstance(r, Result) and r.ok for r in fklir) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
