"""`fklir`: command-line helpers. So far the kernel cache:

    fklir cache dir      print the cache folder (~/.cache/fklir or $FKLIR_CACHE_DIR)
    fklir cache list     every compiled kernel with its size, then the total
    fklir cache clear    delete every compiled kernel (and kept sources of failed compiles)

It needs no GPU and no compiler.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import fklir
from fklir.backend.cache import DiskCache, cache_dir

BUILD_FOLDER = "build"  # where build.py compiles; failed compiles leave their source there


def human_size(size: int) -> str:
    """1536 → "1.5 KiB"; plain bytes below 1 KiB."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    raise AssertionError("unreachable")


def _kept_builds(root: Path) -> list[Path]:
    folder = root / BUILD_FOLDER
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if path.is_dir())


def cache_list(out: TextIO) -> int:
    cache = DiskCache(cache_dir())
    entries = cache.entries()
    for path, size in entries:
        out.write(f"{human_size(size):>10}  {size:>12}  {path.name}\n")
    total = sum(size for _path, size in entries)
    plural = "entry" if len(entries) == 1 else "entries"
    out.write(f"total: {len(entries)} {plural}, {human_size(total)} ({total} bytes) in {cache.root}\n")
    kept = _kept_builds(cache.root)
    if kept:
        out.write(f"{len(kept)} build folder(s) under {cache.root / BUILD_FOLDER} (sources of failed compiles)\n")
    return 0


def cache_clear(out: TextIO) -> int:
    cache = DiskCache(cache_dir())
    entries = cache.entries()
    total = sum(size for _path, size in entries)
    cache.clear()
    out.write(f"removed {len(entries)} entries ({human_size(total)}) from {cache.root}\n")
    return 0


def cache_dir_command(out: TextIO) -> int:
    out.write(f"{cache_dir()}\n")
    return 0


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The `fklir` parser and its `cache` sub-parser."""
    parser = argparse.ArgumentParser(prog="fklir", description="fklir command-line helpers")
    parser.add_argument("--version", action="version", version=f"fklir {fklir.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    cache = commands.add_parser("cache", help="inspect or clear the compiled-kernel cache")
    actions = cache.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("list", help="list compiled kernels with their sizes and the total")
    actions.add_parser("clear", help="delete every compiled kernel")
    actions.add_parser("dir", help="print the cache folder")
    return parser, cache


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Entry point of the `fklir` console script; returns the exit code (2 for usage errors)."""
    stream = out if out is not None else sys.stdout
    parser, cache_parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.command != "cache":
        parser.print_help(sys.stderr)
        return 2
    handlers = {"list": cache_list, "clear": cache_clear, "dir": cache_dir_command}
    handler = handlers.get(arguments.action)
    if handler is None:
        cache_parser.print_help(sys.stderr)
        return 2
    try:
        return handler(stream)
    except OSError as error:
        sys.stderr.write(f"fklir cache {arguments.action}: {error}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
