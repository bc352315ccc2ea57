"""benchmarks/plot_peers.py reads the newest bench_peers run of a RESULTS.md: its table, per-peer numbers, the
cells that hold none ("not installed", "wrong", a "(WRONG)" mark), and the README's table of ratios."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import plot_peers  # pyright: ignore[reportMissingImports]

OLD = """## fklir against its peers

### 2026-11-30 10:00 UTC - NVIDIA H200

| workload | floor µs | fklir µs | CV-CUDA µs | torch eager µs | torch.compile µs | fklir / best peer | fklir / floor |
|---|---|---|---|---|---|---|---|
| old row | 1.0 | 2.0 | 3.0 | 4.0 | 5.0 | 0.67 | 2.00 |
"""
HEADER = (
    "| workload | floor µs | fklir µs | CV-CUDA µs | DALI µs (wall per batch) | torch eager µs | torch.compile µs "
    "| fklir / best peer | fklir / floor |"
)
NEW = f"""## fklir against its peers

### 2026-12-06 09:00 UTC - NVIDIA H200

- command: `python3 benchmarks/bench_peers.py`

{HEADER}
|---|---|---|---|---|---|---|---|---|
| RGB2GRAY 3840x2160 uint8 | 10.0 | 11.0 | 15.5 | 240.0 | 234.0 | not run | 0.71 | 1.10 |
| RGB2RGBA 3840x2160 uint8 | 20.0 | 16.0 | 17.0 (WRONG) | no such op | wrong | not run | 0.94 | 0.80 |

Host µs per call (Python enqueue on a caller's stream, median):

| workload | copy | fklir |
|---|---|---|
| RGB2GRAY 3840x2160 uint8 | 8.8 | 12.4 |
"""


def test_the_newest_run_and_its_numbers_are_read() -> None:
    run = plot_peers.last_run(OLD + "\nlater text\n" + NEW)
    assert run.title == "2026-12-06 09:00 UTC - NVIDIA H200"
    assert [workload for workload, _ in run.rows] == ["RGB2GRAY 3840x2160 uint8", "RGB2RGBA 3840x2160 uint8"]
    gray, rgba = (values for _, values in run.rows)
    assert gray["floor µs"] == 10.0 and gray["DALI µs (wall per batch)"] == 240.0 and gray["torch.compile µs"] is None
    assert rgba["CV-CUDA µs"] is None and rgba["DALI µs (wall per batch)"] is None and rgba["fklir µs"] == 16.0


def test_the_readme_table_gives_each_peer_over_the_floor() -> None:
    lines = plot_peers.table(plot_peers.last_run(NEW))
    assert lines[2] == "| workload | copy floor | fklir | CV-CUDA | DALI (wall per batch) | torch eager |"
    assert (
        lines[4]
        == "| RGB2GRAY 3840x2160 uint8 | 10.0 | 11.0 (1.10×) | 15.5 (1.55×) | 240.0 (24.00×) | 234.0 (23.40×) |"
    )
    assert lines[5] == "| RGB2RGBA 3840x2160 uint8 | 20.0 | 16.0 (0.80×) | - | - | - |"


def test_results_without_a_run_are_refused() -> None:
    with pytest.raises(ValueError, match="no '## fklir against its peers' run"):
        plot_peers.last_run("# Benchmark results\n")


def test_the_plot_is_drawn(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    svg = tmp_path / "peers.svg"
    plot_peers.plot(plot_peers.last_run(NEW), svg)
    text = svg.read_text()
    assert text.startswith("<?xml") and "fklir" in text and "DALI" in text


def test_the_readme_shows_the_newest_recorded_run() -> None:
    """README's headline table is plot_peers' table of benchmarks/RESULTS.md: a new recorded run moves both."""
    root = Path(__file__).resolve().parents[2]
    run = plot_peers.last_run((root / "benchmarks" / "RESULTS.md").read_text())
    assert "\n".join(plot_peers.table(run)) in (root / "README.md").read_text()
    assert (root / "docs" / "peers.svg").is_file()
