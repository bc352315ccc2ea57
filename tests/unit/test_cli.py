"""`fklir cache dir|list|clear`, run as a separate process with its own FKLIR_CACHE_DIR."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fklir.backend.cache import DiskCache, make_key
from fklir.tools.cli import human_size

REPOSITORY = Path(__file__).resolve().parents[2]


def fklir_command(root: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "FKLIR_CACHE_DIR": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "fklir.tools.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=REPOSITORY,
        check=False,
    )


def payload(size: int, seed: int) -> bytes:
    return hashlib.shake_256(seed.to_bytes(4, "little")).digest(size)


@pytest.fixture
def filled_cache(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A cache with three entries of odd sizes, a lock file, a leftover temp file and a kept failed build."""
    root = tmp_path / "cache"
    cache = DiskCache(root)
    sizes = {
        f"{make_key('a')}.so": 12_345,
        f"{make_key('b')}.cubin": 777,
        f"{make_key('c')}.cubin": 3_000_017,
    }
    for seed, (name, size) in enumerate(sizes.items()):
        key, suffix = name.rsplit(".", 1)
        cache.build_or_load(key, f".{suffix}", lambda size=size, seed=seed: payload(size, seed))
    (root / ".tmp-half-written.so.x").write_bytes(b"partial")
    (root / "build" / "0123456789abcdef-failed").mkdir(parents=True)
    (root / "build" / "0123456789abcdef-failed" / "kernel.cu").write_text("// kept source")
    return root, sizes


def test_dir_prints_the_configured_folder(tmp_path: Path) -> None:
    root = tmp_path / "somewhere" / "cache"
    result = fklir_command(root, "cache", "dir")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{root}\n"


def test_list_shows_every_entry_with_its_size_and_the_total(
    filled_cache: tuple[Path, dict[str, int]],
) -> None:
    root, sizes = filled_cache
    result = fklir_command(root, "cache", "list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    listed = {}
    for line in lines[: len(sizes)]:
        human, exact, name = re.fullmatch(r"\s*(\S+ \S+)\s+(\d+)\s+(\S+)", line).groups()  # type: ignore[union-attr]
        assert human == human_size(int(exact))
        listed[name] = int(exact)
    assert listed == sizes  # no sidecars, locks or temp files
    assert sorted(listed) == [line.split()[-1] for line in lines[: len(sizes)]]  # sorted by name
    total = sum(sizes.values())
    assert lines[len(sizes)] == f"total: 3 entries, {human_size(total)} ({total} bytes) in {root}"
    assert lines[len(sizes) + 1] == f"1 build folder(s) under {root / 'build'} (sources of failed compiles)"


def test_list_of_an_empty_cache(tmp_path: Path) -> None:
    result = fklir_command(tmp_path / "empty", "cache", "list")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"total: 0 entries, 0 B (0 bytes) in {tmp_path / 'empty'}\n"


def test_clear_removes_everything_and_says_how_much(filled_cache: tuple[Path, dict[str, int]]) -> None:
    root, sizes = filled_cache
    result = fklir_command(root, "cache", "clear")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"removed 3 entries ({human_size(sum(sizes.values()))}) from {root}\n"
    assert list(root.iterdir()) == []
    after = fklir_command(root, "cache", "list")
    assert after.stdout == f"total: 0 entries, 0 B (0 bytes) in {root}\n"


def test_clear_leaves_other_folders_alone(tmp_path: Path, filled_cache: tuple[Path, dict[str, int]]) -> None:
    root, _sizes = filled_cache
    neighbour = tmp_path / "neighbour.txt"
    neighbour.write_text("keep me")
    assert fklir_command(root, "cache", "clear").returncode == 0
    assert neighbour.read_text() == "keep me"


@pytest.mark.parametrize("arguments", [(), ("cache",), ("cache", "bogus"), ("bogus",)])
def test_usage_errors_exit_with_2(tmp_path: Path, arguments: tuple[str, ...]) -> None:
    result = fklir_command(tmp_path / "cache", *arguments)
    assert result.returncode == 2
    assert "usage: fklir" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (3_000_017, "2.9 MiB"),
        (5 << 30, "5.0 GiB"),
    ],
)
def test_human_sizes(size: int, shown: str) -> None:
    assert human_size(size) == shown


def test_console_script_is_declared() -> None:
    text = (REPOSITORY / "pyproject.toml").read_text()
    assert re.search(r'^fklir = "fklir\.tools\.cli:main"$', text, re.MULTILINE)
