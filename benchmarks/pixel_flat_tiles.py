"""Experiment: the pixel-wise flat kernels' block size and tile budget at 4K (device only).

Each setting runs in its own process with its own cache folder (emit_flat's MAX_THREADS and TILE_BYTES
are module constants that the kernel key does not carry), and times the four colour conversions of
bench_peers with CUDA events over rotated inputs, outputs checked against cv2 first. Not a benchmark of
record: it exists to choose emit_flat's constants. Usage: python3 benchmarks/pixel_flat_tiles.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = ((256, 24 * 1024), (128, 24 * 1024), (512, 32 * 1024), (1024, 48 * 1024))
CODES = (("RGB2GRAY", 3, 1), ("BGR2RGB", 3, 3), ("RGB2RGBA", 3, 4), ("GRAY2RGB", 1, 3))

CHILD = r"""
import sys
sys.path.insert(0, {root!r}); sys.path.insert(0, {bench!r})
import cv2, torch
import fklir as fkl
import fklir.backend.emit_flat as ef
from flat_variants import time_kernel
ef.MAX_THREADS, ef.TILE_BYTES = {threads}, {tile}
h, w = 2160, 3840
cells = []
for code, cin, cout in {codes!r}:
    shape = lambda c: (h, w) if c == 1 else (h, w, c)
    sets = 10
    xs = [torch.randint(0, 256, shape(cin), dtype=torch.uint8, device="cuda") for _ in range(sets)]
    ys = [torch.empty(shape(cout), dtype=torch.uint8, device="cuda") for _ in range(sets)]
    pipe = fkl.compose(fkl.TensorRead(), fkl.ColorConversion(code), fkl.TensorWrite(), target="gpu")
    stream = torch.cuda.current_stream()
    pipe(xs[0], out=ys[0], stream=stream)
    torch.cuda.synchronize()
    ref = cv2.cvtColor(xs[0].cpu().numpy(), getattr(cv2, "COLOR_" + code))
    worst = abs(ys[0].cpu().numpy().astype(int) - ref.reshape(ys[0].shape)).max()
    ok = bool(worst <= (1 if code == "RGB2GRAY" else 0))
    us = time_kernel(lambda i: pipe(xs[i % sets], out=ys[i % sets], stream=stream))
    cells.append(f"{{us:.1f}}" + ("" if ok else " WRONG"))
print(" | ".join(cells))
"""


def main() -> int:
    rows = [
        "| threads, tile bytes | " + " | ".join(f"{code} µs" for code, _, _ in CODES) + " |",
        "|---" * (len(CODES) + 1) + "|",
    ]
    for threads, tile in SETTINGS:
        script = CHILD.format(root=str(ROOT), bench=str(ROOT / "benchmarks"), threads=threads, tile=tile, codes=CODES)
        env = {**os.environ, "FKLIR_CACHE_DIR": tempfile.mkdtemp(prefix="fklir-tiles-")}
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=False)
        cells = done.stdout.strip().splitlines()[-1] if done.returncode == 0 else f"failed: {done.stderr[-300:]}"
        rows.append(f"| {threads}, {tile} | {cells} |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
