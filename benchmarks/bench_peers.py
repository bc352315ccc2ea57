#!/usr/bin/env python3
"""fklir against CV-CUDA, DALI, torch eager and torch.compile on SPEC §5's workloads, beside the byte floor.

    python benchmarks/bench_peers.py [--quick] [--compile] [--only NAME ...] [--budget SECONDS] [--out PATH]
                                     [--shrink N]     (every image side / N: benchmarks/smoke_cpu.py's CPU run)

Workloads (--only takes their names): colour conversions on a 4K uint8 image (gray: RGB2GRAY, bgr: BGR2RGB,
rgba: RGB2RGBA, gray2rgb: GRAY2RGB); batch-resize: 16 separate 1080p frames → resize 640x640 → ×1/255 → planar
float32 in one call; normalise: 4K uint8 → (x - mean) / std per channel → planar float32; roi64: 64 crops 200x150
of a 1080p image → 224x224 → normalise → planar; warp-affine and warp-perspective of a 1080p uint8 image; nearest:
resize 1080p → 640x360 nearest.

Peers: the floor (a device copy of half the bytes a call reads + writes, so that it reads and writes as many), fklir,
CV-CUDA (the op or ops a CV-CUDA user would call: cvtcolor, resize_crop_convert_reformat, crop_flip_normalize_reformat,
normalize + reformat, warp_affine, warp_perspective, resize; an optional import whose version the report names),
torch eager and, with --compile, torch.compile (its first calls cost ~20 s each). CV-CUDA is `pip install
cvcuda-cu13`; the GPU machine reaches no package index, so `../shared/tools/device-cvcuda` prints the runs that stage
it there into /tmp/cvsite: put /tmp/cvsite on PYTHONPATH. Its column says "not installed" when the import fails.
DALI 2.4 (`nvidia-dali-cuda130`, staged by `../shared/tools/device-stage dali ...`, see ../shared/CUDA-NOTES.md) runs
wherever it has the op (`fn.color_space_conversion`, `fn.resize`, `fn.crop_mirror_normalize`, `fn.warp_affine`,
`fn.experimental.warp_perspective`), one batch per call through its own executor on its own stream: its column is
wall µs per batch (`pipe.run()` and a synchronize), which CUDA events on our stream cannot see, so it is shown beside
the others and kept out of "fklir / best peer" (a wall time is not a GPU time).

Before any timing every peer's output is compared with a cv2/numpy reference computed on the host, within the
workload's tolerance (the report's log gives each one and why); a peer outside it is reported and not timed. Timing
is bench_chain.py's: CUDA events around back-to-back calls queued behind a sleep kernel, medians, inputs and outputs
rotated past 10x L2. Each workload's row (GPU µs per call, fklir over the best of CV-CUDA / eager / compile, fklir
over the floor) is printed and appended to --out as soon as it is done; workloads not started after --budget seconds
are skipped with a line naming them. Exit: 0 ok, 1 fklir failed or was wrong, 2 no GPU, torch, cv2 or fklir.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NoReturn

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_chain as bc  # the timing method; importing it also puts this tree's fklir on sys.path
from bench_chain import Result, say

UHD, FHD = (3840, 2160), (1920, 1080)  # (W, H)
BATCH, LETTERBOX = 16, (640, 640)
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
ROIS, CROP, ROI_OUT, SEED = 64, (200, 150), (224, 224), 2024
ANGLE, SCALE = 12.0, 0.9  # the affine warp: a rotation about the centre
NEAREST_OUT = (640, 360)
PEERS = ("copy", "fklir", "cvcuda", "dali", "eager", "compile")
RIVALS = ("cvcuda", "eager", "compile")  # fklir / best peer is over these (GPU times; DALI's is wall time)
NO_FLIP = 2  # crop_flip_normalize_reformat flips for -1, 0 and 1 only

CvCall = Callable[[Any, Any, list[Any], list[Any]], bc.Call]  # (cvcuda, its stream, inputs, outputs) -> call(i)
DaliGraph = Callable[[Any, Any, Any], Any]  # (nvidia.dali.fn, nvidia.dali.types, the input node) -> the output node


def fail(message: str) -> NoReturn:
    print(f"bench_peers: {message}", file=sys.stderr)
    sys.exit(2)


@dataclass(frozen=True)
class Kit:
    """The modules the workloads are built from, and --shrink."""

    torch: Any
    fkl: Any
    cv2: Any
    np: Any
    shrink: int

    def size(self, wh: tuple[int, int]) -> tuple[int, int]:
        return max(1, wh[0] // self.shrink), max(1, wh[1] // self.shrink)

    def rand_u8(self, shape: tuple[int, ...]) -> Any:
        return self.torch.randint(0, 256, shape, dtype=self.torch.uint8, device=bc.DEVICE)

    def on_device(self, array: Any) -> Any:
        return self.torch.from_numpy(self.np.ascontiguousarray(array)).to(bc.DEVICE)


@dataclass(frozen=True)
class Workload:
    label: str
    make_input: Callable[[], Any]  # one rotation set's input: a tensor, or a list of tensors (separate frames)
    out_shape: tuple[int, ...]
    out_float: bool  # float32 output, else uint8
    in_bytes: int  # bytes one call reads (crops: the rects only)
    fklir_ops: tuple[Any, ...]
    reference: Callable[[Any], Any]  # cv2/numpy on the host: one input set's expected output
    eager: Callable[[Any], Any]
    cvcuda: CvCall
    tolerance: float  # max |peer - reference| accepted, in output units
    why: str  # the tolerance's reason
    cvcuda_reference: Callable[[Any], Any] | None = None  # CV-CUDA's own convention where it differs (same work)
    dali: DaliGraph | None = None  # DALI's graph of the workload, where DALI has the op
    dali_reference: Callable[[Any], Any] | None = None  # DALI's own convention where it differs (same work)

    @property
    def out_bytes(self) -> int:
        return math.prod(self.out_shape) * (4 if self.out_float else 1)


def rotated(sets: int, call: Callable[[int], object]) -> bc.Call:
    return lambda i: call(i % sets)


# ----- workloads ---------------------------------------------------------------------------------------


def colour(kit: Kit, code: str, cin: int, cout: int) -> Workload:
    torch, cv2 = kit.torch, kit.cv2
    w, h = kit.size(UHD)

    def shape(c: int) -> tuple[int, ...]:
        return (h, w) if c == 1 else (h, w, c)  # fklir reads (H, W, 1) as a batch of one-pixel-wide images

    alpha = torch.full((h, w, 1), 255, dtype=torch.uint8, device=bc.DEVICE)
    eager = {
        "RGB2GRAY": lambda x: (
            (x[..., 0].int() * 9798 + x[..., 1].int() * 19235 + x[..., 2].int() * 3735 + 16384) >> 15
        ).to(torch.uint8),  # OpenCV's fixed-point weights
        "BGR2RGB": lambda x: x.flip(-1),
        "RGB2RGBA": lambda x: torch.cat((x, alpha), -1),
        "GRAY2RGB": lambda x: x.unsqueeze(-1).expand(h, w, 3).contiguous(),
    }[code]

    def cv_call(cvcuda: Any, stream: Any, inputs: list[Any], outputs: list[Any]) -> bc.Call:
        conversion = getattr(cvcuda.ColorConversion, code)
        sources = [cvcuda.as_tensor(x.reshape(1, h, w, cin), "NHWC") for x in inputs]
        targets = [cvcuda.as_tensor(y.reshape(1, h, w, cout), "NHWC") for y in outputs]
        return rotated(len(inputs), lambda k: cvcuda.cvtcolor_into(targets[k], sources[k], conversion, stream=stream))

    dali_spaces = {"RGB2GRAY": ("RGB", "GRAY"), "BGR2RGB": ("BGR", "RGB"), "GRAY2RGB": ("GRAY", "RGB")}.get(code)

    def dali(fn: Any, types: Any, x: Any) -> Any:
        image, output = dali_spaces or ("", "")
        return fn.color_space_conversion(x, image_type=getattr(types, image), output_type=getattr(types, output))

    gray = code == "RGB2GRAY"
    return Workload(
        f"{code} {w}x{h} uint8",
        lambda: kit.rand_u8(shape(cin)),
        shape(cout),
        False,
        h * w * cin,
        (kit.fkl.TensorRead(), kit.fkl.ColorConversion(code), kit.fkl.TensorWrite()),
        lambda x: cv2.cvtColor(x, getattr(cv2, f"COLOR_{code}")),
        eager,
        cv_call,
        1 if gray else 0,
        "gray weights other than OpenCV's fixed point may round the other way" if gray else "exact",
        dali=dali if dali_spaces else None,
    )


def batch_resize(kit: Kit) -> Workload:
    torch, cv2, np, fkl = kit.torch, kit.cv2, kit.np, kit.fkl
    (w, h), (ow, oh) = kit.size(FHD), kit.size(LETTERBOX)

    def reference(frames: list[Any]) -> Any:
        resized = [cv2.resize(f.astype(np.float32), (ow, oh), interpolation=cv2.INTER_LINEAR) for f in frames]
        return np.stack(resized).transpose(0, 3, 1, 2) * np.float32(1 / 255)

    def eager(frames: list[Any]) -> Any:
        x = torch.stack(frames).permute(0, 3, 1, 2).float()
        y = torch.nn.functional.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=False, antialias=False)
        return (y * (1 / 255)).contiguous()

    def cv_call(cvcuda: Any, stream: Any, inputs: list[Any], outputs: list[Any]) -> bc.Call:
        targets = [cvcuda.as_tensor(y, "NCHW") for y in outputs]

        def call(k: int) -> None:
            images = cvcuda.as_images(inputs[k], cvcuda.Format.RGB8)  # per call, as for frames new each call
            cvcuda.resize_crop_convert_reformat_into(
                targets[k], images, (ow, oh), cvcuda.Interp.LINEAR, (0, 0), scale=1 / 255, srcCast=False, stream=stream
            )

        return rotated(len(inputs), call)

    def dali(fn: Any, types: Any, x: Any) -> Any:
        linear = types.INTERP_LINEAR
        y = fn.resize(x, resize_x=ow, resize_y=oh, interp_type=linear, antialias=False, dtype=types.FLOAT)
        return fn.crop_mirror_normalize(y, dtype=types.FLOAT, output_layout="CHW", mean=[0.0] * 3, std=[255.0] * 3)

    return Workload(
        f"{BATCH} separate {w}x{h} frames → resize {ow}x{oh} → ×1/255 → planar float32",
        lambda: [kit.rand_u8((h, w, 3)) for _ in range(BATCH)],
        (BATCH, 3, oh, ow),
        True,
        BATCH * h * w * 3,
        (fkl.TensorRead(), fkl.Resize(ow, oh), fkl.Mul(1 / 255), fkl.TensorSplit()),
        reference,
        eager,
        cv_call,
        1e-4,
        "float interpolation with other rounding orders (CV-CUDA called with srcCast=False: no uint8 step)",
        dali=dali,
    )


def normalise(kit: Kit) -> Workload:
    torch, np, fkl = kit.torch, kit.np, kit.fkl
    w, h = kit.size(UHD)
    mean = tuple(255 * m for m in MEAN)
    scale = tuple(1 / (255 * s) for s in STD)
    mean_a, scale_a = np.array(mean, np.float32), np.array(scale, np.float32)
    mean_t, scale_t = kit.on_device(mean_a), kit.on_device(scale_a)

    def eager(x: Any) -> Any:
        return ((x.float() - mean_t) * scale_t).permute(2, 0, 1).contiguous()

    def cv_call(cvcuda: Any, stream: Any, inputs: list[Any], outputs: list[Any]) -> bc.Call:
        rect = cvcuda.as_tensor(torch.tensor([[[[0, 0, w, h]]]], dtype=torch.int32, device=bc.DEVICE), "NHWC")
        flip = cvcuda.as_tensor(torch.tensor([[NO_FLIP]], dtype=torch.int32, device=bc.DEVICE), "NC")
        base, mul = (cvcuda.as_tensor(t.reshape(1, 1, 1, 3), "NHWC") for t in (mean_t, scale_t))
        targets = [cvcuda.as_tensor(y.reshape(1, 3, h, w), "NCHW") for y in outputs]

        def call(k: int) -> None:
            images = cvcuda.as_images([inputs[k]], cvcuda.Format.RGB8)  # the op takes image batches only
            cvcuda.crop_flip_normalize_reformat_into(targets[k], images, rect, flip, base, mul, stream=stream)

        return rotated(len(inputs), call)

    def dali(fn: Any, types: Any, x: Any) -> Any:
        std = [255 * s for s in STD]
        return fn.crop_mirror_normalize(x, dtype=types.FLOAT, output_layout="CHW", mean=list(mean), std=std)

    return Workload(
        f"{w}x{h} uint8 → (x - mean) / std → planar float32",
        lambda: kit.rand_u8((h, w, 3)),
        (3, h, w),
        True,
        h * w * 3,
        (fkl.TensorRead(), fkl.Cast("float32"), fkl.Sub(mean), fkl.Mul(scale), fkl.TensorSplit()),
        lambda x: ((x.astype(np.float32) - mean_a) * scale_a).transpose(2, 0, 1),
        eager,
        cv_call,
        1e-5,
        "float32 rounding",
        dali=dali,
    )


def roi(kit: Kit) -> Workload:
    torch, cv2, np, fkl = kit.torch, kit.cv2, kit.np, kit.fkl
    (w, h), (cw, ch), (ow, oh) = kit.size(FHD), kit.size(CROP), kit.size(ROI_OUT)
    draw = random.Random(SEED)
    rects = [(draw.randrange(w - cw + 1), draw.randrange(h - ch + 1), cw, ch) for _ in range(ROIS)]
    mean_a, std_a = np.array(MEAN, np.float32), np.array(STD, np.float32)
    mean_t, std_t = kit.on_device(mean_a), kit.on_device(std_a)

    def crops(image: Any) -> list[Any]:
        return [image[y : y + ch, x : x + cw] for x, y, _, _ in rects]

    def reference(image: Any) -> Any:
        resized = [cv2.resize(c.astype(np.float32), (ow, oh), interpolation=cv2.INTER_LINEAR) for c in crops(image)]
        return ((np.stack(resized) * np.float32(1 / 255) - mean_a) / std_a).transpose(0, 3, 1, 2)

    def eager(image: Any) -> Any:  # the crops share a size: one interpolate for all
        x = torch.stack(crops(image)).permute(0, 3, 1, 2).float()
        y = torch.nn.functional.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=False, antialias=False)
        return ((y * (1 / 255) - mean_t.view(3, 1, 1)) / std_t.view(3, 1, 1)).contiguous()

    def cv_call(cvcuda: Any, stream: Any, inputs: list[Any], outputs: list[Any]) -> bc.Call:
        scratch = [torch.empty((ROIS, oh, ow, 3), dtype=torch.float32, device=bc.DEVICE) for _ in range(2)]
        resized, normalised = (cvcuda.as_tensor(t, "NHWC") for t in scratch)
        base, mul = (cvcuda.as_tensor(t.reshape(1, 1, 1, 3), "NHWC") for t in (mean_t, 1 / std_t))
        targets = [cvcuda.as_tensor(y, "NCHW") for y in outputs]

        def call(k: int) -> None:  # the three ops SPEC §5 names, the crops wrapped per call as new rects would be
            images = cvcuda.as_images(crops(inputs[k]), cvcuda.Format.RGB8)
            cvcuda.resize_crop_convert_reformat_into(
                resized, images, (ow, oh), cvcuda.Interp.LINEAR, (0, 0), scale=1 / 255, srcCast=False, stream=stream
            )
            cvcuda.normalize_into(normalised, resized, base, mul, stream=stream)
            cvcuda.reformat_into(targets[k], normalised, stream=stream)

        return rotated(len(inputs), call)

    return Workload(
        f"{ROIS} crops {cw}x{ch} of {w}x{h} uint8 → {ow}x{oh} → normalise → planar float32",
        lambda: kit.rand_u8((h, w, 3)),
        (ROIS, 3, oh, ow),
        True,
        ROIS * cw * ch * 3,
        (
            fkl.TensorRead(),
            fkl.Crop(rects),
            fkl.Resize(ow, oh),
            fkl.Mul(1 / 255),
            fkl.Sub(MEAN),
            fkl.Div(STD),
            fkl.TensorSplit(),
        ),
        reference,
        eager,
        cv_call,
        1e-3,
        "float interpolation; 1/std as a multiplier (CV-CUDA) or a divisor",
    )


def warp(kit: Kit, perspective: bool) -> Workload:
    torch, cv2, np, fkl = kit.torch, kit.cv2, kit.np, kit.fkl
    w, h = kit.size(FHD)
    if perspective:
        corners = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
        moved = np.float32([[0.05 * w, 0.1 * h], [0.9 * w, 0], [w, h], [0.1 * w, 0.95 * h]])
        m = cv2.getPerspectiveTransform(corners, moved)
        full = m
    else:
        m = cv2.getRotationMatrix2D((w / 2, h / 2), ANGLE, SCALE)
        full = np.vstack([m, [0.0, 0.0, 1.0]])
    # torch's peer samples where the inverse map sends each destination pixel centre (grid_sample's -1..1 units)
    inv = np.linalg.inv(full)
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    sx, sy, sw = (inv[r, 0] * xs + inv[r, 1] * ys + inv[r, 2] for r in range(3))
    grid = kit.on_device(np.stack([(2 * sx / sw + 1) / w - 1, (2 * sy / sw + 1) / h - 1], -1)[None].astype(np.float32))
    cv_warp = cv2.warpPerspective if perspective else cv2.warpAffine

    def reference(x: Any) -> Any:  # in float, then rounded: cv2's uint8 path quantises coordinates to 1/32 px
        y = cv_warp(x.astype(np.float32), m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        return np.rint(np.clip(y, 0, 255))

    def eager(x: Any) -> Any:
        src = x.permute(2, 0, 1)[None].float()
        y = torch.nn.functional.grid_sample(src, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        return y[0].round().clamp(0, 255).to(torch.uint8).permute(1, 2, 0).contiguous()

    def cv_call(cvcuda: Any, stream: Any, inputs: list[Any], outputs: list[Any]) -> bc.Call:
        op = cvcuda.warp_perspective_into if perspective else cvcuda.warp_affine_into
        xform, border = m.astype(np.float32), np.zeros(4, np.float32)
        sources = [cvcuda.as_tensor(x[None], "NHWC") for x in inputs]
        targets = [cvcuda.as_tensor(y[None], "NHWC") for y in outputs]
        return rotated(
            len(inputs),
            lambda k: op(
                targets[k],
                sources[k],
                xform,
                cvcuda.Interp.LINEAR,
                border_mode=cvcuda.Border.CONSTANT,
                border_value=border,
                stream=stream,
            ),
        )

    def dali(fn: Any, types: Any, x: Any) -> Any:
        matrix = [float(v) for v in m.reshape(-1)]  # source -> destination, as cv2's: inverse_map=False
        linear, size = types.INTERP_LINEAR, [h, w]  # DALI sizes are (H, W)
        if perspective:  # (0, 0) at the centre of the top-left pixel, as in OpenCV
            op = fn.experimental.warp_perspective
            return op(x, matrix=matrix, size=size, inverse_map=False, interp_type=linear, pixel_origin="center")
        return fn.warp_affine(x, matrix=matrix, size=size, inverse_map=False, interp_type=linear, fill_value=0)

    def dali_affine_reference(x: Any) -> Any:
        """fn.warp_affine's own convention: pixel centres at x + 0.5 (its origin is the top-left pixel's corner),
        i.e. cv2's destination -> source map A, t shifted to t + A (0.5, 0.5) - (0.5, 0.5)."""
        inverse = np.linalg.inv(full)[:2]
        shifted = inverse.copy()
        shifted[:, 2] += inverse[:, :2] @ np.array([0.5, 0.5]) - 0.5
        flags = cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP
        y = cv2.warpAffine(x.astype(np.float32), shifted, (w, h), flags=flags, borderMode=cv2.BORDER_CONSTANT)
        return np.rint(np.clip(y, 0, 255))

    kind = "perspective" if perspective else "affine"
    return Workload(
        f"warp {kind} {w}x{h} uint8, bilinear",
        lambda: kit.rand_u8((h, w, 3)),
        (h, w, 3),
        False,
        h * w * 3,
        (fkl.TensorRead(), fkl.Warping(m, w, h), fkl.SaturateCast("uint8"), fkl.TensorWrite()),
        reference,
        eager,
        cv_call,
        1,
        "coordinates rounded in float32 by some peers: a value near .5 may round either way",
        dali=dali,
        dali_reference=None if perspective else dali_affine_reference,
    )


def nearest(kit: Kit) -> Workload:
    torch, cv2, fkl = kit.torch, kit.cv2, kit.fkl
    (w, h), (ow, oh) = kit.size(FHD), kit.size(NEAREST_OUT)

    def eager(x: Any) -> Any:
        y = torch.nn.functional.interpolate(x.permute(2, 0, 1)[None], size=(oh, ow), mode="nearest")
        return y[0].permute(1, 2, 0).contiguous()

    def cv_call(cvcuda: Any, stream: Any, inputs: list[Any], outputs: list[Any]) -> bc.Call:
        sources = [cvcuda.as_tensor(x[None], "NHWC") for x in inputs]
        targets = [cvcuda.as_tensor(y[None], "NHWC") for y in outputs]
        return rotated(
            len(inputs), lambda k: cvcuda.resize_into(targets[k], sources[k], cvcuda.Interp.NEAREST, stream=stream)
        )

    return Workload(
        f"nearest resize {w}x{h} → {ow}x{oh} uint8",
        lambda: kit.rand_u8((h, w, 3)),
        (oh, ow, 3),
        False,
        h * w * 3,
        (fkl.TensorRead(), fkl.Resize(ow, oh, "nearest"), fkl.TensorWrite()),
        lambda x: cv2.resize(x, (ow, oh), interpolation=cv2.INTER_NEAREST),
        eager,
        cv_call,
        0,
        "exact; CV-CUDA samples pixel centres (cv2 INTER_NEAREST_EXACT, the same work) and is checked against that",
        cvcuda_reference=lambda x: cv2.resize(x, (ow, oh), interpolation=cv2.INTER_NEAREST_EXACT),
        dali=lambda fn, types, x: fn.resize(x, resize_x=ow, resize_y=oh, interp_type=types.INTERP_NN, antialias=False),
        dali_reference=lambda x: cv2.resize(x, (ow, oh), interpolation=cv2.INTER_NEAREST_EXACT),
    )


# Each workload by its --only name, built only when chosen.
BUILDERS: dict[str, Callable[[Kit], Workload]] = {
    "gray": lambda kit: colour(kit, "RGB2GRAY", 3, 1),
    "bgr": lambda kit: colour(kit, "BGR2RGB", 3, 3),
    "rgba": lambda kit: colour(kit, "RGB2RGBA", 3, 4),
    "gray2rgb": lambda kit: colour(kit, "GRAY2RGB", 1, 3),
    "batch-resize": batch_resize,
    "normalise": normalise,
    "roi64": roi,
    "warp-affine": lambda kit: warp(kit, perspective=False),
    "warp-perspective": lambda kit: warp(kit, perspective=True),
    "nearest": nearest,
}


# ----- running -----------------------------------------------------------------------------------------


def host(x: Any) -> Any:
    return [t.cpu().numpy() for t in x] if isinstance(x, list) else x.cpu().numpy()


def judge(np: Any, got: Any, expected: Any, tolerance: float, against: str) -> tuple[bool, str]:
    """(within tolerance everywhere, message); an element left unwritten is NaN or 0xA5 (outputs are poisoned)."""
    diff = np.abs(np.asarray(got, np.float64).reshape(expected.shape) - expected)
    worst = float(np.max(diff)) if diff.size else 0.0
    outside = int(np.count_nonzero(~(diff <= tolerance)))  # NaN counts as outside
    message = f"max |d| = {worst:.3g} vs {against}, {outside} of {diff.size} outside ±{tolerance:g}"
    return outside == 0, message


def dali_peer(dali: Any, wl: Workload, inputs: list[Any], torch: Any) -> bc.Peer:
    """One DALI pipeline of the workload's graph, fed one rotation set per call (a batch: its frames, HWC)."""
    graph_of, sets, at = wl.dali, len(inputs), [0]
    last: list[Any] = [None]
    assert graph_of is not None

    def batch(k: int) -> list[Any]:
        x = inputs[k % sets]
        return [f if f.dim() == 3 else f.unsqueeze(-1) for f in (x if isinstance(x, list) else [x])]

    size = len(batch(0))

    @dali.pipeline_def(
        batch_size=size,
        num_threads=1,
        device_id=torch.cuda.current_device(),
        exec_async=False,
        exec_pipelined=False,
        prefetch_queue_depth=1,
    )
    def graph() -> Any:
        x = dali.fn.external_source(source=lambda: batch(at[0]), device="gpu", batch=True, layout="HWC", no_copy=True)
        return graph_of(dali.fn, dali.types, x)

    pipe = graph()
    pipe.build()

    def call(k: int) -> None:
        at[0] = k
        (last[0],) = pipe.run()

    def output() -> Any:
        out = torch.from_dlpack(last[0].as_tensor())
        return out[0] if size == 1 else out

    return call, output


def peer_factories(
    kit: Kit,
    cvcuda: Any,
    dali: Any,
    stream: Any,
    wl: Workload,
    inputs: list[Any],
    outputs: list[Any],
    ring: list[Any],
    use_compile: bool,
) -> dict[str, Callable[[], bc.Peer] | str]:
    """Per peer, a factory of its call (bench_chain's shape), or why it has none."""
    torch, sets = kit.torch, len(inputs)

    def held(fn: Callable[[Any], Any]) -> bc.Peer:
        # torch peers allocate their outputs; holding the last `sets` of them makes the allocator rotate them
        return (lambda i: ring.__setitem__(i % sets, fn(inputs[i % sets]))), lambda: ring[0]

    def copy() -> bc.Peer:
        half = (wl.in_bytes + wl.out_bytes) // 2
        sources = [torch.randint(0, 256, (half,), dtype=torch.uint8, device=bc.DEVICE) for _ in range(sets)]
        targets = [torch.empty_like(s) for s in sources]
        return rotated(sets, lambda k: targets[k].copy_(sources[k])), lambda: None

    def fklir() -> bc.Peer:
        pipe = kit.fkl.compose(*wl.fklir_ops, target="gpu")
        return rotated(sets, lambda k: pipe(inputs[k], out=outputs[k], stream=stream)), lambda: outputs[0]

    def cv() -> bc.Peer:
        return wl.cvcuda(cvcuda, cvcuda.as_stream(stream), inputs, outputs), lambda: outputs[0]

    return {
        "copy": copy,
        "fklir": fklir,
        "cvcuda": cv if cvcuda is not None else "not installed",
        "dali": (lambda: dali_peer(dali, wl, inputs, torch))
        if dali is not None and wl.dali is not None
        else ("no such op" if dali is not None else "not installed"),
        "eager": lambda: held(wl.eager),
        "compile": (lambda: held(torch.compile(wl.eager))) if use_compile else "not run",
    }


def run_workload(
    kit: Kit,
    cvcuda: Any,
    dali: Any,
    stream: Any,
    wl: Workload,
    method: bc.Method,
    l2: int,
    cycles: float,
    use_compile: bool,
    log: list[str],
) -> dict[str, Result | str]:
    """Per peer: a Result, or a short string saying why there is none."""
    torch, np = kit.torch, kit.np
    per_call = wl.in_bytes + wl.out_bytes
    sets = min(bc.MAX_BUFFER_SETS, max(2, math.ceil(bc.ROTATE_L2_MULTIPLE * l2 / per_call)))
    inputs = [wl.make_input() for _ in range(sets)]
    out_dtype = torch.float32 if wl.out_float else torch.uint8
    outputs = [torch.empty(wl.out_shape, dtype=out_dtype, device=bc.DEVICE) for _ in range(sets)]
    moved = sets * per_call
    under = "" if moved >= bc.ROTATE_L2_MULTIPLE * l2 else " - UNDER 10x L2: some calls may hit L2"
    say(f"- {wl.label}: {sets} sets rotated, {moved / 1e6:.0f} MB = {moved / l2:.1f} L2{under}", log)
    say(f"  - tolerance ±{wl.tolerance:g}: {wl.why}", log)
    first = host(inputs[0])
    expected = wl.reference(first)
    ring: list[Any] = [None] * sets
    results: dict[str, Result | str] = {}
    factories = peer_factories(kit, cvcuda, dali, stream, wl, inputs, outputs, ring, use_compile)
    for name, factory in factories.items():
        if isinstance(factory, str):
            results[name] = factory
            continue
        try:
            call, output = factory()
            outputs[0].fill_(math.nan if wl.out_float else 0xA5)  # poison: unwritten elements fail the check
            t0 = time.perf_counter()
            call(0)
            torch.cuda.synchronize()
            first_ms = (time.perf_counter() - t0) * 1e3
            got = output()
            if got is None:
                ok, message = True, "moves the same bytes"
            elif (own := {"cvcuda": wl.cvcuda_reference, "dali": wl.dali_reference}.get(name)) is not None:
                ok, message = judge(np, host(got), own(first), wl.tolerance, "its own convention")
            else:
                ok, message = judge(np, host(got), expected, wl.tolerance, "cv2/numpy")
            say(f"  - {name}: {'ok' if ok else 'WRONG'}: {message}; first call {first_ms:.0f} ms", log)
            if not ok:
                results[name] = "wrong"
            elif name in bc.CAPPED_PEERS and first_ms > bc.FIRST_CALL_CAP_S * 1e3:
                say(f"  - {name}: not timed: its first call took over {bc.FIRST_CALL_CAP_S:g} s", log)
                results[name] = "skipped"
            elif name == "dali":  # its own executor and stream: wall time per batch
                results[name] = bc.measure_wall(call, method, ok, torch.cuda.synchronize)
            else:
                results[name] = bc.measure(torch, stream, call, method, cycles, ok)
        except Exception as error:  # one peer failing must not lose the others' numbers
            say(f"  - {name}: not measured: {type(error).__name__}: {error}", log)
            results[name] = "error"
        ring[:] = [None] * sets
    return results


# ----- report ------------------------------------------------------------------------------------------

HEADER = [
    "| workload | floor µs | fklir µs | CV-CUDA µs | DALI µs (wall per batch) | torch eager µs | torch.compile µs "
    "| fklir / best peer | fklir / floor |",
    "|---|---|---|---|---|---|---|---|---|",
]


def row(wl: Workload, r: dict[str, Result | str]) -> str:
    med = {p: statistics.median(v.gpu_us) for p, v in r.items() if isinstance(v, Result)}
    best = min((med[p] for p in RIVALS if p in med), default=None)
    cells = [bc.fmt(r[p]) for p in PEERS]
    cells += [bc.ratio(med.get("fklir"), best), bc.ratio(med.get("fklir"), med.get("copy"))]
    return f"| {wl.label} | " + " | ".join(cells) + " |"


def host_table(rows: list[tuple[Workload, dict[str, Result | str]]]) -> list[str]:
    out = ["Host µs per call (Python enqueue on a caller's stream, median):", ""]
    out += ["| workload | " + " | ".join(PEERS) + " |", "|---" * (len(PEERS) + 1) + "|"]
    return out + [f"| {wl.label} | " + " | ".join(bc.fmt(r[p], host=True) for p in PEERS) + " |" for wl, r in rows]


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="fklir vs CV-CUDA, torch eager, torch.compile and the byte floor")
    p.add_argument("--quick", action="store_true", help="few calls and repetitions (smoke test)")
    p.add_argument("--compile", action="store_true", help="also torch.compile (~20 s per workload to compile)")
    names = list(BUILDERS)
    p.add_argument("--only", nargs="+", choices=names, metavar="NAME", help="these workloads only: " + ", ".join(names))
    p.add_argument("--budget", type=float, default=120.0, metavar="SECONDS", help="skip workloads after this (120)")
    p.add_argument("--shrink", type=int, default=1, metavar="N", help="divide every image side by N (smoke tests)")
    p.add_argument("--out", type=Path, metavar="PATH", help="also append the markdown report to PATH")
    args = p.parse_args(argv)
    if args.shrink < 1:
        p.error("--shrink must be at least 1")
    return args


def import_dali() -> tuple[Any, str]:
    """DALI's fn, types and pipeline_def, and its version."""
    try:
        import nvidia.dali  # pyright: ignore[reportMissingImports]
        from nvidia.dali import fn, pipeline_def, types  # pyright: ignore[reportMissingImports]
    except Exception:  # an optional peer: any import failure empties its column
        return None, "not installed"
    version = str(getattr(nvidia.dali, "__version__", "unknown version"))
    return SimpleNamespace(fn=fn, types=types, pipeline_def=pipeline_def), version


def import_cvcuda() -> tuple[Any, str]:
    try:
        import cvcuda  # pyright: ignore[reportMissingImports]
    except Exception:  # an optional peer: any import failure empties its column
        return None, "not installed"
    return cvcuda, str(getattr(cvcuda, "__version__", "unknown version"))


def main(argv: list[str]) -> int:
    started = time.monotonic()
    args = parse_args(argv)
    try:
        import cv2
        import numpy as np

        import fklir as fkl
    except Exception as error:
        fail(f"needs fklir, cv2 and numpy: {type(error).__name__}: {error}")
    torch = bc.gpu_torch(fkl)
    cvcuda, cv_version = import_cvcuda()
    dali, dali_version = import_dali()
    kit = Kit(torch, fkl, cv2, np, args.shrink)
    chosen = [build(kit) for name, build in BUILDERS.items() if not args.only or name in args.only]
    method = bc.QUICK if args.quick else bc.KERNEL_FULL
    stream = torch.cuda.Stream()
    l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0)) or bc.L2_FALLBACK_BYTES
    report = bc.Report(args.out)
    compiled = "on" if args.compile else "not run (--compile adds it)"
    report.emit("## fklir against its peers", "", *bc.environment(torch, None, method, l2))
    report.emit(
        f"- CV-CUDA {cv_version}, DALI {dali_version}, OpenCV {cv2.__version__} (references), torch.compile {compiled}",
        "",
    )
    report.emit(*HEADER)
    log: list[str] = []
    rows: list[tuple[Workload, dict[str, Result | str]]] = []
    with torch.cuda.stream(stream), torch.no_grad():
        cycles = bc.calibrate_sleep(torch, stream)
        for wl in bc.within_budget(chosen, args.budget, started, report):
            rows.append((wl, run_workload(kit, cvcuda, dali, stream, wl, method, l2, cycles, args.compile, log)))
            report.emit(row(*rows[-1]))
            torch.cuda.empty_cache()
    report.emit("", *(host_table(rows) if rows else []), "", "Checks and setup:", "", *log, "")
    if args.out is not None:
        print(f"bench_peers: report appended to {args.out}", file=sys.stderr)
    return 0 if all(isinstance(r["fklir"], Result) for _, r in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
