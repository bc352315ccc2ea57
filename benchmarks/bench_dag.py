#!/usr/bin/env python3
"""DAG pipelines (SPEC §8) against their peers, beside the byte floor: several inputs and outputs, one kernel.

    python benchmarks/bench_dag.py [--quick] [--compile] [--only NAME ...] [--out PATH]

Workloads (--only takes their names):
- bgsub: background subtraction of a 4K uint8x3 frame: |frame - background| as float32 and a uint8 mask
  (channel maximum above 25), from two inputs in one kernel; peers: torch eager, torch.compile.
  SPEC: <= 1.05 x the floor, ahead of torch.compile.
- composite: a 1080p uint8x3 foreground over a background through a one-channel uint8 mask (m = mask / 255);
  peers: cvcuda.composite, torch eager, torch.compile. SPEC: at least as fast as cvcuda.composite.
- preview: one 1080p uint8x3 read -> a 640x640 letterboxed uint8 preview and the normalised planar float32
  tensor of it; peers: the same two outputs from two separate fklir pipelines (each reading the frame), CV-CUDA's
  ops (resize + copymakeborder for the preview, crop_flip_normalize_reformat of it), torch eager / compile.
  SPEC: <= 0.75 x the two fklir pipelines, ahead of CV-CUDA.

The floor is a device copy moving as many bytes as the workload reads and writes (half of them each way).
Every peer's outputs are compared with numpy/OpenCV on the host before it is timed; bench_chain's method
(CUDA events around back-to-back calls behind a sleep kernel, medians, buffers rotated past 10x L2).
CV-CUDA is optional (../shared/tools/device-cvcuda stages it); a peer that fails says why in its cell.
Exit: 0 ok, 1 fklir failed or was wrong, 2 no GPU, torch, cv2 or fklir.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Result, say

UHD, FHD = (3840, 2160), (1920, 1080)  # (W, H)
THRESHOLD = 25.0
BOX, PAD = 640, 114.0  # the preview: 640x640, the letterbox's grey
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
PEERS = ("copy", "fklir", "fklir x2", "cvcuda", "eager", "compile")
RIVALS = ("fklir x2", "cvcuda", "eager", "compile")

Peer = tuple[bc.Call, Callable[[], list[Any]]]  # (call on rotation slot i, the outputs call(0) wrote)


@dataclass(frozen=True)
class Workload:
    label: str
    make_inputs: Callable[[], list[Any]]  # one rotation set's inputs (device tensors)
    out_shapes: list[tuple[tuple[int, ...], Any]]  # each output's shape and torch dtype
    bytes_moved: int  # what one call reads and writes
    reference: Callable[[list[Any]], list[Any]]  # numpy/cv2 on host inputs: the expected outputs
    tolerances: list[float]  # per output, max |peer - reference| accepted, in its units
    why: str
    fklir: Callable[[Any, Any], Callable[[list[Any], list[Any]], object]]  # (fkl, stream) -> call(inputs, outs)
    peers: Callable[[Any, Any], dict[str, Callable[[list[Any], list[Any]], object] | str]]  # (torch, modules)


def _floor(torch: Any, nbytes: int, sets: int) -> Peer:
    half = nbytes // 2
    sources = [torch.randint(0, 256, (half,), dtype=torch.uint8, device=bc.DEVICE) for _ in range(sets)]
    targets = [torch.empty_like(s) for s in sources]
    return (lambda i: targets[i % sets].copy_(sources[i % sets])), lambda: []


def bgsub(torch: Any, np: Any, cv2: Any) -> Workload:
    w, h = UHD

    def eager(frame: Any, background: Any, outs: list[Any]) -> None:
        diff = (frame.float() - background.float()).abs()
        outs[0].copy_(diff)
        outs[1].copy_((diff.amax(-1) > THRESHOLD).to(torch.uint8))

    def reference(inputs: list[Any]) -> list[Any]:
        diff = np.abs(inputs[0].astype(np.float64) - inputs[1]).astype(np.float32)
        return [diff, (diff.max(-1) > THRESHOLD).astype(np.uint8)]

    def fklir(fkl: Any, stream: Any) -> Callable[[list[Any], list[Any]], object]:
        pipe = fkl.compose(
            fkl.TensorRead(),
            fkl.Cast("float32"),
            fkl.AbsDiff(fkl.Input(1, fkl.Cast("float32"))),
            fkl.MidWrite(),
            fkl.VectorReduce("Max"),
            fkl.Threshold(THRESHOLD),
            fkl.SaturateCast("uint8"),
            fkl.TensorWrite(),
        )
        return lambda ins, outs: pipe(*ins, out=tuple(outs), stream=stream)

    def peers(torch: Any, modules: Any) -> dict[str, Callable[[list[Any], list[Any]], object] | str]:
        compiled = torch.compile(eager) if modules.compile else None
        return {
            "eager": lambda ins, outs: eager(*ins, outs),
            "compile": (lambda ins, outs: compiled(*ins, outs)) if compiled else "not run",
        }

    frame = lambda: torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device=bc.DEVICE)  # noqa: E731
    return Workload(
        f"background subtraction {w}x{h} uint8x3 -> |d| float32 + uint8 mask",
        lambda: [frame(), frame()],
        [((h, w, 3), torch.float32), ((h, w), torch.uint8)],
        h * w * (3 + 3 + 12 + 1),
        reference,
        [0.0, 0.0],
        "exact: a difference of integers and a comparison",
        fklir,
        peers,
    )


def composite(torch: Any, np: Any, cv2: Any) -> Workload:
    w, h = FHD

    def eager(fg: Any, bg: Any, mask: Any, outs: list[Any]) -> None:
        m = mask.float().unsqueeze(-1) / 255.0
        outs[0].copy_((fg.float() * m + bg.float() * (1.0 - m)).round().clamp(0, 255).to(torch.uint8))

    def reference(inputs: list[Any]) -> list[Any]:
        fg, bg, mask = inputs
        m = mask.astype(np.float64)[..., None] / 255.0
        return [np.rint(fg * m + bg * (1.0 - m)).clip(0, 255).astype(np.uint8)]

    def fklir(fkl: Any, stream: Any) -> Callable[[list[Any], list[Any]], object]:
        pipe = fkl.compose(fkl.TensorRead(), fkl.Composite(fkl.Input(1), fkl.Input(2)), fkl.TensorWrite())
        return lambda ins, outs: pipe(*ins, out=tuple(outs), stream=stream)

    def peers(torch: Any, modules: Any) -> dict[str, Callable[[list[Any], list[Any]], object] | str]:
        cvcuda = modules.cvcuda
        compiled = torch.compile(eager) if modules.compile else None

        def cv(ins: list[Any], outs: list[Any]) -> None:
            fg, bg, mask = (cvcuda.as_tensor(t.reshape(1, h, w, -1), "NHWC") for t in ins)
            dst = cvcuda.as_tensor(outs[0].reshape(1, h, w, 3), "NHWC")
            cvcuda.composite_into(dst, fg, bg, mask, stream=modules.cv_stream)

        return {
            "cvcuda": cv if cvcuda is not None else "not installed",
            "eager": lambda ins, outs: eager(*ins, outs),
            "compile": (lambda ins, outs: compiled(*ins, outs)) if compiled else "not run",
        }

    image = lambda *c: torch.randint(0, 256, (h, w, *c), dtype=torch.uint8, device=bc.DEVICE)  # noqa: E731
    return Workload(
        f"alpha composite {w}x{h} uint8x3 through a uint8 mask",
        lambda: [image(3), image(3), image()],  # the mask (H, W): fklir reads (H, W, 1) as a batch of H images
        [((h, w, 3), torch.uint8)],
        h * w * (3 + 3 + 1 + 3),
        reference,
        [1.0],
        "a blend near .5 may round either way in float32 (CV-CUDA, torch)",
        fklir,
        peers,
    )


def preview(torch: Any, np: Any, cv2: Any) -> Workload:
    w, h = FHD
    inner_h = round(h * BOX / w)  # the letterbox's content: 640x360, centred
    top = (BOX - inner_h) // 2
    mean = tuple(255 * m for m in MEAN)
    scale = tuple(1 / (255 * s) for s in STD)

    def preview_ops(fkl: Any) -> list[Any]:
        return [fkl.Resize(BOX, BOX, "linear", "preserve", PAD), fkl.SaturateCast("uint8")]

    def tensor_ops(fkl: Any) -> list[Any]:
        return [fkl.Cast("float32"), fkl.Sub(mean), fkl.Mul(scale), fkl.TensorSplit()]

    def reference(inputs: list[Any]) -> list[Any]:
        small = cv2.resize(inputs[0], (BOX, inner_h), interpolation=cv2.INTER_LINEAR)
        box = np.full((BOX, BOX, 3), PAD, np.uint8)
        box[top : top + inner_h] = small
        tensor = (box.astype(np.float32) - np.float32(mean)) * np.float32(scale)
        return [box, tensor.transpose(2, 0, 1)]

    def fklir(fkl: Any, stream: Any) -> Callable[[list[Any], list[Any]], object]:
        pipe = fkl.compose(fkl.TensorRead(), *preview_ops(fkl), fkl.MidWrite(), *tensor_ops(fkl))
        return lambda ins, outs: pipe(*ins, out=tuple(outs), stream=stream)

    def peers(torch: Any, modules: Any) -> dict[str, Callable[[list[Any], list[Any]], object] | str]:
        fkl, cvcuda = modules.fkl, modules.cvcuda
        first = fkl.compose(fkl.TensorRead(), *preview_ops(fkl), fkl.TensorWrite())
        second = fkl.compose(fkl.TensorRead(), *preview_ops(fkl), *tensor_ops(fkl))

        def twice(ins: list[Any], outs: list[Any]) -> None:
            first(ins[0], out=outs[0], stream=modules.stream)
            second(ins[0], out=outs[1], stream=modules.stream)

        mean_t = torch.tensor(mean, dtype=torch.float32, device=bc.DEVICE).reshape(1, 1, 1, 3)
        scale_t = torch.tensor(scale, dtype=torch.float32, device=bc.DEVICE).reshape(1, 1, 1, 3)
        small_t = torch.empty((1, inner_h, BOX, 3), dtype=torch.uint8, device=bc.DEVICE)

        def cv(ins: list[Any], outs: list[Any]) -> None:
            src = cvcuda.as_tensor(ins[0].reshape(1, h, w, 3), "NHWC")
            small = cvcuda.as_tensor(small_t, "NHWC")
            box = cvcuda.as_tensor(outs[0].reshape(1, BOX, BOX, 3), "NHWC")
            cvcuda.resize_into(small, src, cvcuda.Interp.LINEAR, stream=modules.cv_stream)
            cvcuda.copymakeborder_into(
                box,
                small,
                border_mode=cvcuda.Border.CONSTANT,
                border_value=[PAD] * 3,
                top=top,
                left=0,
                stream=modules.cv_stream,
            )
            rect = cvcuda.as_tensor(torch.tensor([[[[0, 0, BOX, BOX]]]], dtype=torch.int32, device=bc.DEVICE), "NHWC")
            flip = cvcuda.as_tensor(torch.tensor([[2]], dtype=torch.int32, device=bc.DEVICE), "NC")
            base, mul = cvcuda.as_tensor(mean_t, "NHWC"), cvcuda.as_tensor(scale_t, "NHWC")
            images = cvcuda.as_images([outs[0]], cvcuda.Format.RGB8)
            target = cvcuda.as_tensor(outs[1].reshape(1, 3, BOX, BOX), "NCHW")
            cvcuda.crop_flip_normalize_reformat_into(target, images, rect, flip, base, mul, stream=modules.cv_stream)

        def eager(x: Any, outs: list[Any]) -> None:
            small = torch.nn.functional.interpolate(
                x.permute(2, 0, 1)[None].float(), size=(inner_h, BOX), mode="bilinear", align_corners=False
            )
            outs[0].fill_(int(PAD))
            outs[0][top : top + inner_h] = small[0].permute(1, 2, 0).round().clamp(0, 255).to(torch.uint8)
            outs[1].copy_(((outs[0].float() - mean_t[0, 0]) * scale_t[0, 0]).permute(2, 0, 1))

        compiled = torch.compile(eager) if modules.compile else None
        return {
            "fklir x2": twice,
            "cvcuda": cv if cvcuda is not None else "not installed",
            "eager": lambda ins, outs: eager(ins[0], outs),
            "compile": (lambda ins, outs: compiled(ins[0], outs)) if compiled else "not run",
        }

    return Workload(
        f"{w}x{h} uint8x3 -> {BOX}x{BOX} letterbox uint8 preview + normalised planar float32",
        lambda: [torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device=bc.DEVICE)],
        [((BOX, BOX, 3), torch.uint8), ((3, BOX, BOX), torch.float32)],
        h * w * 3 + BOX * BOX * (3 + 12),
        reference,
        [1.0, 1 / (255 * min(STD)) + 1e-5],
        "resampling weights other than OpenCV's round the preview (and its tensor) by one unit (torch, CV-CUDA)",
        fklir,
        peers,
    )


BUILDERS = {"bgsub": bgsub, "composite": composite, "preview": preview}


def check(np: Any, got: list[Any], expected: list[Any], tolerances: list[float]) -> tuple[bool, str]:
    """Each output against its reference within its tolerance; the worst differences."""
    worst: list[float] = []
    for g, e in zip(got, expected, strict=True):
        g = g.cpu().numpy()
        if g.shape != e.shape:
            return False, f"shape {g.shape}, expected {e.shape}"
        worst.append(float(np.max(np.abs(g.astype(np.float64) - e.astype(np.float64)))) if e.size else 0.0)
    ok = all(w <= t for w, t in zip(worst, tolerances, strict=True))
    shown = ", ".join(f"{w:g} (<= {t:g})" for w, t in zip(worst, tolerances, strict=True))
    return ok, f"max |peer - reference| per output: {shown}"


def run(kit: Any, wl: Workload, method: bc.Method, l2: int, cycles: float, log: list[str]) -> dict[str, Result | str]:
    torch, np = kit.torch, kit.np
    sets = min(bc.MAX_BUFFER_SETS, max(2, math.ceil(bc.ROTATE_L2_MULTIPLE * l2 / wl.bytes_moved)))
    inputs = [wl.make_inputs() for _ in range(sets)]
    outputs = [
        [torch.empty(shape, dtype=dtype, device=bc.DEVICE) for shape, dtype in wl.out_shapes] for _ in range(sets)
    ]
    moved = sets * wl.bytes_moved / 1e6
    say(f"- {wl.label}: {sets} sets rotated, {moved:.0f} MB; tolerances {wl.tolerances}: {wl.why}", log)
    expected = wl.reference([x.cpu().numpy() for x in inputs[0]])
    calls: dict[str, Callable[[list[Any], list[Any]], object] | str] = {"fklir": wl.fklir(kit.fkl, kit.stream)}
    try:
        calls |= wl.peers(torch, kit)
    except Exception as error:  # a peer's set-up failing must not lose fklir's numbers
        say(f"  - peers' set-up failed: {type(error).__name__}: {error}", log)
    results: dict[str, Result | str] = {
        "copy": bc.measure(torch, kit.stream, _floor(torch, wl.bytes_moved, sets)[0], method, cycles, True)
    }
    for name in PEERS[1:]:
        call = calls.get(name, "-")
        if isinstance(call, str):
            results[name] = call
            continue
        try:
            for out in outputs[0]:
                out.fill_(0xA5 if out.dtype == torch.uint8 else math.nan)  # unwritten elements fail the check
            t0 = time.perf_counter()
            call(inputs[0], outputs[0])
            torch.cuda.synchronize()
            ok, message = check(np, outputs[0], expected, wl.tolerances)
            first_ms = (time.perf_counter() - t0) * 1e3
            say(f"  - {name}: {'ok' if ok else 'WRONG'}: {message}; first call {first_ms:.0f} ms", log)
            if not ok:
                results[name] = "wrong"
                continue
            rotate = (lambda c: lambda i: c(inputs[i % sets], outputs[i % sets]))(call)
            results[name] = bc.measure(torch, kit.stream, rotate, method, cycles, ok)
        except Exception as error:  # one peer failing must not lose the others' numbers
            say(f"  - {name}: not measured: {type(error).__name__}: {error}", log)
            results[name] = "error"
    return results


def row(wl: Workload, r: dict[str, Result | str]) -> str:
    med = {p: statistics.median(v.gpu_us) for p, v in r.items() if isinstance(v, Result)}
    best = min((med[p] for p in RIVALS if p in med), default=None)
    cells = [bc.fmt(r[p]) for p in PEERS]
    cells += [
        bc.ratio(med.get("fklir"), best),
        bc.ratio(med.get("fklir"), med.get("fklir x2")),
        bc.ratio(med.get("fklir"), med.get("copy")),
    ]
    return f"| {wl.label} | " + " | ".join(cells) + " |"


HEADER = [
    "| workload | floor µs | fklir µs | two fklir pipelines µs | CV-CUDA µs | torch eager µs | torch.compile µs "
    "| fklir / best peer | fklir / two pipelines | fklir / floor |",
    "|---|---|---|---|---|---|---|---|---|---|",
]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description="DAG pipelines vs their peers and the byte floor")
    p.add_argument("--quick", action="store_true", help="few calls and repetitions (smoke test)")
    p.add_argument("--compile", action="store_true", help="also torch.compile (~20 s per workload to compile)")
    p.add_argument("--only", nargs="+", choices=list(BUILDERS), metavar="NAME", help=", ".join(BUILDERS))
    p.add_argument("--out", type=Path, metavar="PATH", help="also append the markdown report to PATH")
    args = p.parse_args(argv)
    try:
        import cv2
        import numpy as np

        import fklir as fkl
    except Exception as error:
        bc.fail(f"needs fklir, cv2 and numpy: {type(error).__name__}: {error}")
    torch = bc.gpu_torch(fkl)
    try:
        import cvcuda  # pyright: ignore[reportMissingImports]
    except Exception:  # an optional peer: any import failure empties its column
        cvcuda = None
    stream = torch.cuda.Stream()
    cv_stream = cvcuda.as_stream(stream) if cvcuda is not None else None
    from types import SimpleNamespace

    kit = SimpleNamespace(
        torch=torch, np=np, fkl=fkl, cvcuda=cvcuda, stream=stream, cv_stream=cv_stream, compile=args.compile
    )
    method = bc.QUICK if args.quick else bc.KERNEL_FULL
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or bc.L2_FALLBACK_BYTES
    report = bc.Report(args.out)
    cv_version = getattr(cvcuda, "__version__", "unknown") if cvcuda is not None else "not installed"
    report.emit("## DAG pipelines (SPEC §8)", "", *bc.environment(torch, None, method, l2))
    report.emit(f"- CV-CUDA {cv_version}, OpenCV {cv2.__version__} (reference)", "", *HEADER)
    log: list[str] = []
    failed = False
    with torch.cuda.stream(stream), torch.no_grad():
        cycles = bc.calibrate_sleep(torch, stream)
        for name, build in BUILDERS.items():
            if args.only and name not in args.only:
                continue
            wl = build(torch, np, cv2)
            results = run(kit, wl, method, l2, cycles, log)
            failed = failed or not isinstance(results["fklir"], Result)
            report.emit(row(wl, results))
            torch.cuda.empty_cache()
    report.emit("", "Checks and setup:", "", *log, "")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
