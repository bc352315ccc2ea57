"""Run a few calls of one benchmark workload, for `ncu` to profile (not a benchmark by itself).

    ncu --kernel-name fkl_kernel --launch-skip 2 --launch-count 1 --section SpeedOfLight \
        python3 benchmarks/profile_kernels.py roi64
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

import fklir as fkl

MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def workload(name: str) -> tuple[fkl.Pipeline, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    if name == "float6":
        x = torch.rand((2160, 3840, 3), generator=g).cuda()
        ops = [fkl.Mul(1.5), fkl.Add((0.1, 0.2, 0.3)), fkl.Sub(0.25), fkl.Div(1.7), fkl.Max(-0.5), fkl.Min(0.8)]
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite()), x
    if name == "u8norm":
        x = torch.randint(0, 256, (2160, 3840, 3), generator=g, dtype=torch.uint8).cuda()
        ops = [fkl.Cast("float32"), fkl.Mul((1.2, 0.9, 1.1)), fkl.Sub((10, -5, 20)), fkl.SaturateCast("uint8")]
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite()), x
    if name.startswith("roi"):
        count = int(name[3:])
        x = torch.randint(0, 256, (1080, 1920, 3), generator=g, dtype=torch.uint8).cuda()
        rects = [(int(i * 23 % 1700), int(i * 37 % 900), 200, 150) for i in range(count)]
        ops = [fkl.Crop(rects), fkl.Resize(224, 224), fkl.Mul(1 / 255), fkl.Sub(MEAN), fkl.Div(STD)]
        return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorSplit()), x
    raise SystemExit(f"unknown workload {name!r}: float6, u8norm, roi3, roi64")


if __name__ == "__main__":
    pipe, x = workload(sys.argv[1])
    for _ in range(5):
        pipe(x)
    torch.cuda.synchronize()
