"""Experiment: GPU time of the ROI kernels for several pixels-per-thread settings (device only).

Each setting runs in its own process with its own disk cache (the setting is not part of the kernel
key), fklir only, timed as bench_chain.py times (calls queued behind a sleep kernel, so host cost does
not leak into the GPU time). Not a benchmark of record: it exists to choose
emit_cpp.PIXELS_PER_THREAD (see RESULTS.md). Usage: python3 benchmarks/roi_variants.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE_SETTING = """
import statistics, sys
sys.path.insert(0, {root!r})
sys.path.insert(0, {root!r} + "/benchmarks")
import torch
import fklir as fkl
from fklir.backend import emit_cpp
from bench_chain import FULL, calibrate_sleep, measure
emit_cpp.PIXELS_PER_THREAD = {ppt}
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
g = torch.Generator().manual_seed(0)
img = torch.randint(0, 256, (1080, 1920, 3), generator=g, dtype=torch.uint8).cuda()
stream = torch.cuda.Stream()
with torch.cuda.stream(stream):
    cycles_per_us = calibrate_sleep(torch, stream)
    for count in (64, 3):
        rects = [(int(i * 23 % 1700), int(i * 37 % 900), 200, 150) for i in range(count)]
        pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(rects), fkl.Resize(224, 224), fkl.Mul(1 / 255),
                           fkl.Sub(MEAN), fkl.Div(STD), fkl.TensorSplit(), target="gpu")
        outs = [pipe(img) for _ in range(4)]
        result = measure(torch, stream, lambda i: pipe(img, out=outs[i % 4], stream=stream), FULL, cycles_per_us, True)
        print(f"| {ppt} | B={{count}} | {{statistics.median(result.gpu_us):.1f}} | {{result.host_us:.1f}} |")
"""


def main() -> None:
    print("| pixels per thread | workload | fklir GPU µs | host µs |\n|---|---|---|---|")
    for ppt in (1, 2, 4):
        env = {**os.environ, "FKLIR_CACHE_DIR": tempfile.mkdtemp(prefix=f"fklir-ppt{ppt}-")}
        script = ONE_SETTING.format(root=str(ROOT), ppt=ppt)
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
        print(done.stdout.strip() or f"| {ppt} | failed | {done.stderr.strip()[-300:]} |")


if __name__ == "__main__":
    main()
