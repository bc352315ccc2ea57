#!/usr/bin/env python3
"""The headline of bench_peers.py's newest recorded run: a plot (docs/peers.svg) and the README's table.

    pip install -e ".[bench]"                          # matplotlib, for the plot only
    python benchmarks/plot_peers.py                    # draws docs/peers.svg, prints the markdown table
    python benchmarks/plot_peers.py --results PATH --svg PATH --table-only

It reads the last "## fklir against its peers" run in benchmarks/RESULTS.md (nothing is measured here):
per workload, each peer's GPU µs per call over the copy floor of the same bytes measured in the same run
(1.0 is the floor; lower is faster), on a log axis because torch eager is up to ~100x the floor. A peer
without a number in the run (not installed, wrong, no such op) has no bar. DALI's figure is wall time per
batch (its executor), the others GPU time: the plot says so in its legend.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_TITLE = "## fklir against its peers"
# column header -> the legend's name, in the plot's order (the floor is the axis' 1.0)
PEER_COLUMNS = {
    "fklir µs": "fklir",
    "CV-CUDA µs": "CV-CUDA",
    "DALI µs (wall per batch)": "DALI (wall per batch)",
    "torch.compile µs": "torch.compile",
    "torch eager µs": "torch eager",
}
FLOOR_COLUMN = "floor µs"
NUMBER = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*$")  # a cell with a "(WRONG)" mark or a word is no number


@dataclass(frozen=True)
class Run:
    """One recorded bench_peers run: its heading line and, per workload, the µs of each column."""

    title: str
    rows: list[tuple[str, dict[str, float | None]]]


def last_run(text: str) -> Run:
    """The newest `## fklir against its peers` run of a RESULTS.md text (ValueError when there is none)."""
    at = text.rfind(RUN_TITLE)
    if at < 0:
        raise ValueError(f"no '{RUN_TITLE}' run in the results")
    lines = text[at:].splitlines()
    title = next((line.lstrip("# ").strip() for line in lines[1:] if line.startswith("### ")), "")
    start = next((k for k, line in enumerate(lines) if line.startswith("| workload | floor µs |")), None)
    if start is None:
        raise ValueError(f"the last '{RUN_TITLE}' run has no table")
    header = [cell.strip() for cell in lines[start].strip("|").split("|")]
    rows: list[tuple[str, dict[str, float | None]]] = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        values = {name: _number(cell) for name, cell in zip(header[1:], cells[1:], strict=False)}
        rows.append((cells[0], values))
    return Run(title, rows)


def _number(cell: str) -> float | None:
    match = NUMBER.match(cell)
    return float(match.group(1)) if match else None


def table(run: Run) -> list[str]:
    """The README's markdown table: µs per call and each over the floor."""
    peers = [column for column in PEER_COLUMNS if any(values.get(column) is not None for _, values in run.rows)]
    out = [
        f"bench_peers.py, {run.title}: µs per call (× the copy floor of the same bytes)",
        "",
        "| workload | copy floor | " + " | ".join(PEER_COLUMNS[p] for p in peers) + " |",
        "|---" * (len(peers) + 2) + "|",
    ]
    for workload, values in run.rows:
        floor = values.get(FLOOR_COLUMN)
        cells = [_cell(values.get(p), floor) for p in peers]
        out.append(f"| {workload} | {_cell(floor, None)} | " + " | ".join(cells) + " |")
    return out


def _cell(us: float | None, floor: float | None) -> str:
    if us is None:
        return "-"
    return f"{us:.1f}" if floor is None else f"{us:.1f} ({us / floor:.2f}×)"


def plot(run: Run, svg: Path) -> None:
    """Grouped horizontal bars: each peer's time over the floor per workload, on a log axis."""
    import matplotlib

    matplotlib.use("svg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.hashsalt"] = "fklir"  # stable ids: a re-drawn plot of the same run is the same file
    rows = [(w, v) for w, v in run.rows if v.get(FLOOR_COLUMN)]
    peers = [c for c in PEER_COLUMNS if any(v.get(c) is not None for _, v in rows)]
    height = 0.8 / max(1, len(peers))
    fig, ax = plt.subplots(figsize=(10, 0.2 * len(rows) * max(2, len(peers)) + 1.5))
    for k, column in enumerate(peers):
        ys = [i + (k - (len(peers) - 1) / 2) * height for i in range(len(rows))]
        ratios = [(v[column] or 0) / (v[FLOOR_COLUMN] or 1) for _, v in rows]
        present = [(y, r) for y, r, (_, v) in zip(ys, ratios, rows, strict=True) if v.get(column) is not None]
        ax.barh([y for y, _ in present], [r for _, r in present], height=height, label=PEER_COLUMNS[column])
    ax.axvline(1.0, color="black", linewidth=1, linestyle="--", label="copy floor")
    ax.set_xscale("log")
    ax.set_yticks(range(len(rows)), [_short(w) for w, _ in rows])
    ax.invert_yaxis()
    ax.set_xlabel("time per call / copy floor of the same bytes (log; lower is faster)")
    ax.set_title(f"fklir and its peers ({run.title})", fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    svg.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(svg, format="svg", metadata={"Date": None})
    plt.close(fig)


def _short(workload: str) -> str:
    return workload if len(workload) <= 48 else workload[:45] + "..."


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "RESULTS.md")
    parser.add_argument("--svg", type=Path, default=ROOT / "docs" / "peers.svg")
    parser.add_argument("--table-only", action="store_true", help="print the table, draw nothing")
    args = parser.parse_args(argv)
    run = last_run(args.results.read_text())
    print("\n".join(table(run)))
    if not args.table_only:
        plot(run, args.svg)
        print(f"plot_peers: drew {args.svg}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
