"""The CPU target side by side with OpenCV and numpy on the same machine, in one process (issue 20).

    python benchmarks/bench_cpu.py [--threads N] [--reps N] [--only NAME ...] [--size WxH] [--out PATH]

Every workload runs on a 1920x1080 image (uint8x3 unless the row says otherwise), fklir target="cpu" with
its output preallocated, against the peers that do the same work: OpenCV's one-call equivalent where
there is one, its op-by-op version, numpy. Before any timing each peer's output is compared with
fklir's within SPEC §3's tolerance for that op (exact where the rounding is the same); a peer that
differs fails the run. Calls alternate between the workload's contestants in rounds, so that a load
change on a shared machine falls on all of them alike; each figure is the median of the warm calls.
The ratio is the fastest OpenCV peer's time over fklir's (> 1: fklir is faster).

Threads: `--threads N` sets OMP_NUM_THREADS (read by libgomp when the first kernel loads) and
cv2.setNumThreads(N); without it both keep their defaults. Both counts are printed.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

W, H = 1920, 1080
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
MUL, ADD, SUB, DIV, LO, HI = 1.5, (0.1, 0.2, 0.3), 0.25, 1.7, -0.5, 0.8  # the 6-op float32 chain
U8_MUL, U8_SUB = 1.2, -10.0  # 1.2 x + 10 >= 0: cv2.convertScaleAbs's abs changes nothing
U8_LO, U8_HI = 16, 235
ROI_SIZE, ROI_CROP = (224, 224), (200, 150)
BORDER = 32
ANGLE, SCALE = 12.0, 0.9

Call = Callable[[], object]


@dataclass
class Peer:
    name: str
    call: Call
    output: Callable[[], np.ndarray]
    opencv: bool = True  # counts for the ratio (numpy peers and floors do not)


@dataclass
class Workload:
    name: str
    fklir: Call
    fklir_out: Callable[[], np.ndarray]
    peers: list[Peer]
    tolerance: float  # max |fklir - peer| accepted, in output units
    note: str = ""


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _openmp_threads() -> int:
    """libgomp's team size for the next parallel loop: the one the fklir kernels link against."""
    return ctypes.CDLL("libgomp.so.1").omp_get_max_threads()


def _compose(*ops: object) -> Callable[..., np.ndarray]:
    import fklir as fkl

    return fkl.compose(fkl.TensorRead(), *ops, target="cpu")  # type: ignore[arg-type]


def _resize_planar(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    pipe = _compose(fkl.Resize(640, 640), fkl.Mul(1 / 255), fkl.TensorSplit())
    out = pipe(x)
    small = np.empty((640, 640, 3), np.uint8)
    planar = np.empty((3, 640, 640), np.float32)

    def blob_from_image() -> object:
        return cv2.dnn.blobFromImage(x, 1 / 255, (640, 640))  # type: ignore[attr-defined]

    def resize_convert() -> object:
        cv2.resize(x, (640, 640), dst=small, interpolation=cv2.INTER_LINEAR)  # type: ignore[attr-defined]
        for c, plane in enumerate(cv2.split(small)):  # type: ignore[attr-defined]
            cv2.multiply(plane, 1 / 255, dst=planar[c], dtype=cv2.CV_32F)  # type: ignore[attr-defined]
        return planar

    return Workload(
        "resize 1080p -> 640x640, x1/255, planar float32",
        lambda: pipe(x, out=out),
        lambda: out,
        [
            Peer("cv2.dnn.blobFromImage", blob_from_image, lambda: blob_from_image()[0]),  # type: ignore[index]
            Peer("cv2.resize + cv2.multiply per plane", resize_convert, lambda: planar),
        ],
        # OpenCV rounds the resized pixel to uint8 (fixed point) before the scale; fklir does not
        1 / 255 + 1e-5,
        "cv2 resizes in uint8 fixed point, then scales; fklir interpolates in float",
    )


def _gray(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    pipe = _compose(fkl.ColorConversion("RGB2GRAY"), fkl.TensorWrite())
    out = pipe(x)
    dst = np.empty((H, W), np.uint8)

    def cvt() -> object:
        return cv2.cvtColor(x, cv2.COLOR_RGB2GRAY, dst=dst)  # type: ignore[attr-defined]

    return Workload(
        "RGB -> GRAY uint8",
        lambda: pipe(x, out=out),
        lambda: out,
        [Peer("cv2.cvtColor", cvt, lambda: dst)],
        0,
    )


def _bgr(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    pipe = _compose(fkl.ColorConversion("RGB2BGR"), fkl.TensorWrite())
    out = pipe(x)
    dst = np.empty_like(x)

    def cvt() -> object:
        return cv2.cvtColor(x, cv2.COLOR_RGB2BGR, dst=dst)  # type: ignore[attr-defined]

    return Workload(
        "RGB -> BGR uint8", lambda: pipe(x, out=out), lambda: out, [Peer("cv2.cvtColor", cvt, lambda: dst)], 0
    )


def _u8_saturate(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    pipe = _compose(fkl.Cast("float32"), fkl.Mul(U8_MUL), fkl.Sub(U8_SUB), fkl.SaturateCast("uint8"), fkl.TensorWrite())
    out = pipe(x)
    abs_dst, weighted, copy = np.empty_like(x), np.empty_like(x), np.empty_like(x)

    def scale_abs() -> object:
        return cv2.convertScaleAbs(x, dst=abs_dst, alpha=U8_MUL, beta=-U8_SUB)  # type: ignore[attr-defined]

    def add_weighted() -> object:  # convertTo's saturate(alpha x + beta), the one OpenCV call that has it
        return cv2.addWeighted(x, U8_MUL, x, 0.0, -U8_SUB, dst=weighted)  # type: ignore[attr-defined]

    return Workload(
        "uint8 -> Cast f32 -> Mul -> Sub -> SaturateCast uint8",
        lambda: pipe(x, out=out),
        lambda: out,
        [
            Peer("cv2.convertScaleAbs", scale_abs, lambda: abs_dst),
            Peer("cv2.addWeighted (convertTo)", add_weighted, lambda: weighted),
            Peer("np.copyto (copy floor)", lambda: np.copyto(copy, x), lambda: out, opencv=False),
        ],
        0,
    )


def _warp_matrix(cv2: object, perspective: bool) -> np.ndarray:
    m = cv2.getRotationMatrix2D((W / 2, H / 2), ANGLE, SCALE)  # type: ignore[attr-defined]
    if not perspective:
        return m
    return np.vstack([m, [2e-5, -3e-5, 1.0]])


def _warp(cv2: object, x: np.ndarray, dtype: str, perspective: bool) -> Workload:
    """A 1080p warp of x (as float32, or uint8 then SaturateCast back to uint8) beside cv2.warpAffine /
    warpPerspective."""
    import fklir as fkl

    m = _warp_matrix(cv2, perspective)
    src = x.astype(np.float32) if dtype == "float32" else x
    ops = (fkl.Warping(m, W, H),) if dtype == "float32" else (fkl.Warping(m, W, H), fkl.SaturateCast("uint8"))
    pipe = _compose(*ops, fkl.TensorWrite())
    out = pipe(src)
    dst = np.empty_like(src)
    kind, fn = ("perspective", "warpPerspective") if perspective else ("affine", "warpAffine")

    def warp() -> object:
        return getattr(cv2, fn)(src, m, (W, H), dst=dst, flags=cv2.INTER_LINEAR)  # type: ignore[attr-defined]

    if dtype == "float32":
        return Workload(
            f"warp {kind} 1080p bilinear, float32x3",
            lambda: pipe(src, out=out),
            lambda: out,
            [Peer(f"cv2.{fn}", warp, lambda: dst)],
            1e-3,
        )
    return Workload(
        f"warp {kind} 1080p bilinear, uint8x3 -> SaturateCast uint8",
        lambda: pipe(src, out=out),
        lambda: out,
        [Peer(f"cv2.{fn}", warp, lambda: dst)],
        # both round the exact blend; a value within float error of .5 may round either way
        1,
        "cv2 5.1 rounds blends near .5 either way",
    )


def _normalise(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    mean = tuple(255 * m for m in MEAN)
    scale = tuple(1 / (255 * s) for s in STD)
    pipe = _compose(fkl.Cast("float32"), fkl.Sub(mean), fkl.Mul(scale), fkl.TensorSplit())
    out = pipe(x)
    mean_a, scale_a = np.array(mean, np.float32), np.array(scale, np.float32)
    planar = np.empty((3, H, W), np.float32)
    work = np.empty((H, W, 3), np.float32)
    params = cv2.dnn.Image2BlobParams(scalefactor=scale, size=(W, H), mean=mean)  # type: ignore[attr-defined]

    def numpy_chain() -> object:
        np.subtract(x, mean_a, out=work)
        np.multiply(work, scale_a, out=work)
        planar[...] = work.transpose(2, 0, 1)
        return planar

    def cv2_ops() -> object:
        for c, plane in enumerate(cv2.split(x)):  # type: ignore[attr-defined]
            # one pass per plane: saturate-free (x - mean_c) * scale_c into float32
            cv2.addWeighted(plane, scale[c], plane, 0.0, -mean[c] * scale[c], dst=planar[c], dtype=cv2.CV_32F)  # type: ignore[attr-defined]
        return planar

    def blob() -> object:
        return cv2.dnn.blobFromImageWithParams(x, params)  # type: ignore[attr-defined]

    return Workload(
        "uint8 -> (x - mean) / std -> planar float32",
        lambda: pipe(x, out=out),
        lambda: out,
        [
            Peer("numpy", numpy_chain, lambda: planar, opencv=False),
            Peer("cv2.addWeighted per plane", cv2_ops, lambda: planar),
            Peer("cv2.dnn.blobFromImageWithParams", blob, lambda: blob()[0]),  # type: ignore[index]
        ],
        1e-5,
    )


def _rects(n: int) -> list[tuple[int, int, int, int]]:
    rng = np.random.default_rng(2024)
    cw, ch = ROI_CROP
    return [(int(rng.integers(0, W - cw)), int(rng.integers(0, H - ch)), cw, ch) for _ in range(n)]


def _roi(cv2: object, x: np.ndarray, n: int) -> Workload:
    import fklir as fkl

    rects = _rects(n)
    pipe = _compose(fkl.Crop(rects), fkl.Resize(*ROI_SIZE), fkl.SaturateCast("uint8"), fkl.TensorWrite())
    out = pipe(x)
    dst = np.empty_like(out)

    def per_rect() -> object:
        for i, (rx, ry, rw, rh) in enumerate(rects):
            cv2.resize(x[ry : ry + rh, rx : rx + rw], ROI_SIZE, dst=dst[i], interpolation=cv2.INTER_LINEAR)  # type: ignore[attr-defined]
        return dst

    return Workload(
        f"ROI crop {ROI_CROP[0]}x{ROI_CROP[1]} -> resize {ROI_SIZE[0]}x{ROI_SIZE[1]} uint8, {n} crops",
        lambda: pipe(x, out=out),
        lambda: out,
        [Peer("cv2.resize per crop", per_rect, lambda: dst)],
        1,
    )


def _nearest(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    pipe = _compose(fkl.Resize(640, 640, "nearest"), fkl.TensorWrite())
    out = pipe(x)
    dst = np.empty_like(out)

    def resize() -> object:
        return cv2.resize(x, (640, 640), dst=dst, interpolation=cv2.INTER_NEAREST)  # type: ignore[attr-defined]

    return Workload(
        "nearest resize 1080p -> 640x640 uint8",
        lambda: pipe(x, out=out),
        lambda: out,
        [Peer("cv2.resize INTER_NEAREST", resize, lambda: dst)],
        0,
    )


def _border(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    b = BORDER
    pipe = _compose(fkl.BorderReader("reflect101"), fkl.Crop(-b, -b, W + 2 * b, H + 2 * b), fkl.TensorWrite())
    out = pipe(x)
    dst = np.empty_like(out)

    def border() -> object:
        return cv2.copyMakeBorder(x, b, b, b, b, cv2.BORDER_REFLECT_101, dst=dst)  # type: ignore[attr-defined]

    return Workload(
        f"border reflect101 {b} px, uint8",
        lambda: pipe(x, out=out),
        lambda: out,
        [Peer("cv2.copyMakeBorder", border, lambda: dst)],
        0,
    )


def _float_chain(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    xf = (x.astype(np.float32) / 255) * 2 - 0.5
    pipe = _compose(fkl.Mul(MUL), fkl.Add(ADD), fkl.Sub(SUB), fkl.Div(DIV), fkl.Max(LO), fkl.Min(HI), fkl.TensorWrite())
    out = pipe(xf)
    y_np, y_cv = np.empty_like(xf), np.empty_like(xf)
    add = np.array(ADD, np.float32)

    def numpy_chain() -> object:
        np.multiply(xf, np.float32(MUL), out=y_np)
        np.add(y_np, add, out=y_np)
        np.subtract(y_np, np.float32(SUB), out=y_np)
        np.divide(y_np, np.float32(DIV), out=y_np)
        np.maximum(y_np, np.float32(LO), out=y_np)
        np.minimum(y_np, np.float32(HI), out=y_np)
        return y_np

    def cv2_chain() -> object:
        cv2.multiply(xf, (MUL, MUL, MUL, 0), dst=y_cv)  # type: ignore[attr-defined]
        cv2.add(y_cv, (*ADD, 0), dst=y_cv)  # type: ignore[attr-defined]
        cv2.subtract(y_cv, (SUB, SUB, SUB, 0), dst=y_cv)  # type: ignore[attr-defined]
        cv2.divide(y_cv, (DIV, DIV, DIV, 1), dst=y_cv)  # type: ignore[attr-defined]
        cv2.max(y_cv, (LO, LO, LO, 0), dst=y_cv)  # type: ignore[attr-defined]
        cv2.min(y_cv, (HI, HI, HI, 0), dst=y_cv)  # type: ignore[attr-defined]
        return y_cv

    return Workload(
        "6-op float32 chain (Mul, Add, Sub, Div, Max, Min), float32x3",
        lambda: pipe(xf, out=out),
        lambda: out,
        [Peer("numpy", numpy_chain, lambda: y_np, opencv=False), Peer("cv2 op by op", cv2_chain, lambda: y_cv)],
        1e-6,
    )


def _u8_chain(cv2: object, x: np.ndarray) -> Workload:
    import fklir as fkl

    pipe = _compose(fkl.Max(U8_LO), fkl.Min(U8_HI), fkl.TensorWrite())
    out = pipe(x)
    y_np, y_cv = np.empty_like(x), np.empty_like(x)
    lo, hi = (U8_LO,) * 3 + (0,), (U8_HI,) * 3 + (0,)

    def numpy_chain() -> object:
        return np.clip(x, U8_LO, U8_HI, out=y_np)

    def cv2_chain() -> object:
        cv2.max(x, lo, dst=y_cv)  # type: ignore[attr-defined]
        return cv2.min(y_cv, hi, dst=y_cv)  # type: ignore[attr-defined]

    return Workload(
        "uint8 chain Max(16), Min(235), uint8x3",
        lambda: pipe(x, out=out),
        lambda: out,
        [
            Peer("numpy clip", numpy_chain, lambda: y_np, opencv=False),
            Peer("cv2.max + cv2.min", cv2_chain, lambda: y_cv),
        ],
        0,
    )


def workloads(cv2: object) -> dict[str, Callable[[], Workload]]:
    """Each workload by its short name (--only), made only when asked for: making one compiles it."""
    x = _rng().integers(0, 256, (H, W, 3), dtype=np.uint8)
    return {
        "resize": lambda: _resize_planar(cv2, x),
        "gray": lambda: _gray(cv2, x),
        "bgr": lambda: _bgr(cv2, x),
        "saturate": lambda: _u8_saturate(cv2, x),
        "warp-f32": lambda: _warp(cv2, x, "float32", False),
        "warp-u8": lambda: _warp(cv2, x, "uint8", False),
        "warp-persp-f32": lambda: _warp(cv2, x, "float32", True),
        "warp-persp-u8": lambda: _warp(cv2, x, "uint8", True),
        "normalise": lambda: _normalise(cv2, x),
        "roi8": lambda: _roi(cv2, x, 8),
        "roi64": lambda: _roi(cv2, x, 64),
        "nearest": lambda: _nearest(cv2, x),
        "border": lambda: _border(cv2, x),
        "f32-chain": lambda: _float_chain(cv2, x),
        "u8-chain": lambda: _u8_chain(cv2, x),
    }


def check(w: Workload) -> None:
    """Every peer's output against fklir's, before any timing; SystemExit naming the first that differs."""
    w.fklir()
    mine = np.asarray(w.fklir_out(), np.float64)
    for p in w.peers:
        p.call()
        theirs = np.asarray(p.output(), np.float64).reshape(mine.shape)
        worst = float(np.max(np.abs(mine - theirs))) if mine.size else 0.0
        if not worst <= w.tolerance:
            raise SystemExit(f"{w.name}: {p.name} differs from fklir by {worst:g} (> {w.tolerance:g})")


def timed(calls: list[Call], reps: int, rounds: int = 5) -> list[float]:
    """Median ms per call of each call, alternating between them in `rounds` rounds of reps/rounds calls."""
    samples: list[list[float]] = [[] for _ in calls]
    per_round = max(1, -(-reps // rounds))
    for _ in range(rounds):
        for call, into in zip(calls, samples, strict=True):
            call()  # warm: this call's caches and threads
            for _ in range(per_round):
                start = time.perf_counter()
                call()
                into.append((time.perf_counter() - start) * 1e3)
    return [statistics.median(s) for s in samples]


def main(argv: list[str]) -> int:
    global W, H  # the workloads read the input size from here
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--threads", type=int, help="OpenMP threads of fklir and cv2.setNumThreads")
    parser.add_argument("--reps", type=int, default=25, help="timed calls per contestant (at least 20)")
    parser.add_argument("--only", nargs="*", help="these workloads only (short names: see workloads())")
    parser.add_argument("--size", default=f"{W}x{H}", help="WxH of the input; SPEC §5's CPU figure is at 3840x2160")
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    W, H = (int(v) for v in args.size.split("x"))
    if args.threads is not None:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before libgomp loads
    import cv2

    if args.threads is not None:
        cv2.setNumThreads(args.threads)
    rows = []
    for key, make in workloads(cv2).items():
        if args.only and key not in args.only:
            continue
        w = make()
        check(w)
        times = timed([w.fklir, *(p.call for p in w.peers)], max(args.reps, 20))
        fk, peers = times[0], list(zip(w.peers, times[1:], strict=True))
        best = min((t for p, t in peers if p.opencv), default=float("nan"))
        cells = "; ".join(f"{p.name} {t:.2f}" for p, t in peers)
        rows.append(f"| {w.name} | {fk:.2f} | {cells} | {best / fk:.2f}x |")
        print(rows[-1], file=sys.stderr)
    now = datetime.datetime.now(datetime.UTC)
    lines = [
        f"{now:%Y-%m-%d %H:%M} UTC - {platform.node()} ({os.cpu_count()} CPUs, {_cpu_model()}), load "
        f"{os.getloadavg()[0]:.2f} at the end",
        "",
        f"- command: `python3 benchmarks/bench_cpu.py {' '.join(argv)}`".rstrip(),
        f"- threads: fklir OpenMP {_openmp_threads()}, cv2.getNumThreads() {cv2.getNumThreads()}; "
        f"OpenCV {cv2.__version__}, numpy {np.__version__}; medians of {max(args.reps, 20)} warm calls (ms)",
        "",
        "| workload | fklir cpu ms | peers ms | fklir vs best OpenCV |",
        "|---|---:|---|---:|",
        *rows,
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "a") as f:
            f.write(report + "\n")
    return 0


def _cpu_model() -> str:
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
