"""Two source trees of fklir side by side: the whole first call of a fresh process on each (issue 18).

    python benchmarks/fresh_ab.py OLD_TREE [NEW_TREE] [--cpu-runs N] [--gpu-runs N] [--out PATH]

A tree is a folder holding the `fklir` package (e.g. `git archive <rev> | tar -x -C old`); NEW_TREE
defaults to this checkout. Each tree gets its own warm disk cache (one process fills it), then the
measured processes alternate between the trees, so that both see the same machine minute by minute: a
fresh process's start-up varies from one minute to the next far more than a change to it moves it.
Each process is bench_launch.py's fresh-process script (import fklir + compose + first call of its
chain on a 1080p uint8x3 input; torch, numpy and the CUDA context before the clock). Both trees'
bytecode is compiled first, as an installed package has it.

Rows: per tree and target, min / median / max of the whole, and min / median of each of its parts.
"""

from __future__ import annotations

import argparse
import compileall
import datetime
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_launch import FRESH_SETUP, FRESH_WHOLE, emit

PARTS = ("whole", "import", "compose", "first call")


def fresh_run(tree: Path, cache: Path, target: str) -> dict[str, float]:
    """One fresh process of `tree`: ms of the whole and its parts; raises unless it compiled nothing."""
    setup, sync = FRESH_SETUP[target]
    script = FRESH_WHOLE.format(root=str(tree), mul=0.25, target=target, setup=setup, sync=sync)
    env = {**os.environ, "FKLIR_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", script], env=env, check=True, capture_output=True, text=True)
    whole, compiles, _hits, xdsl, imported, composed, first = out.stdout.split()
    return {"whole": float(whole), "import": float(imported), "compose": float(composed), "first call": float(first),
            "compiles": float(compiles), "xdsl": float(xdsl)}  # fmt: skip


def compare(trees: dict[str, Path], target: str, runs: int, caches: Path) -> list[str]:
    for name, tree in trees.items():
        fresh_run(tree, caches / f"{name}-{target}", target)  # fills the tree's cache
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(runs):
        for name, tree in trees.items():
            rows[name].append(fresh_run(tree, caches / f"{name}-{target}", target))
    lines = []
    for name, runs_of_tree in rows.items():
        assert not any(r["compiles"] or r["xdsl"] for r in runs_of_tree), f"{name}: a warm process compiled"
        cells = []
        for part in PARTS:
            values = sorted(r[part] for r in runs_of_tree)
            spread = f" / {values[-1]:.2f}" if part == "whole" else ""
            cells.append(f"{values[0]:.2f} / {statistics.median(values):.2f}{spread}")
        lines.append(f"| {target.upper()} | {name} ({trees[name]}) | {len(runs_of_tree)} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old", type=Path, help="a folder holding the fklir package to compare with")
    parser.add_argument("new", type=Path, nargs="?", default=Path(__file__).resolve().parents[1])
    parser.add_argument("--cpu-runs", type=int, default=15)
    parser.add_argument("--gpu-runs", type=int, default=5, help="0 skips the GPU target (it needs torch and a GPU)")
    parser.add_argument("--caches", type=Path, default=Path("/tmp/fklir-fresh-ab"))
    parser.add_argument("--out", type=Path, help="append the table to this file")
    args = parser.parse_args(argv)
    trees = {"old": args.old.resolve(), "new": args.new.resolve()}
    for tree in trees.values():
        if not (tree / "fklir" / "__init__.py").is_file():
            parser.error(f"{tree} holds no fklir package")
        compileall.compile_dir(tree / "fklir", quiet=1)
    lines = [
        f"### {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC - fresh_ab.py",
        "",
        f"- command: `python3 benchmarks/fresh_ab.py {' '.join(argv)}`",
        "",
        "| target | tree | runs | whole ms min / median / max | import min / median | compose min / median "
        "| first call min / median |",
        "|---|---|---:|---|---|---|---|",
    ]
    for target, runs in (("cpu", args.cpu_runs), ("gpu", args.gpu_runs)):
        if runs > 0:
            lines += compare(trees, target, runs, args.caches)
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
