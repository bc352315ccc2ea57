"""`fklir`: command-line helpers. So far the kernel cache:

    fklir cache dir        print the cache folder (~/.cache/fklir or $FKLIR_CACHE_DIR)
    fklir cache list       every compiled kernel: key prefix, size, last use, target/arch, dtypes, chain
    fklir cache info KEY   one kernel (a unique key prefix is enough): all of that, then its source
    fklir cache clear      delete every compiled kernel (and kept sources of failed compiles)

It needs no GPU and no compiler.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import fklir
from fklir.backend.cache import (
    JIT_SUFFIXES,
    KERNEL_SUFFIXES,
    MAX_BYTES_VARIABLE,
    META_SUFFIX,
    SOURCE_SUFFIX,
    DiskCache,
    KeyGroup,
    cache_dir,
    max_bytes,
)
from fklir.errors import CacheError

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


KEY_PREFIX = 12  # hex digits of a key that `cache list` shows; `cache info` takes any unique prefix
LIST_HEADER = ("KEY", "SIZE", "LAST USED", "TARGET", "DTYPES", "CHAIN")


# payload suffix -> target, of pipelines' kernels and of fkl.jit instances (their chain reads "jit name<...>")
_TARGET_OF_SUFFIX = {
    suffix: target for suffixes in (KERNEL_SUFFIXES, JIT_SUFFIXES) for target, suffix in suffixes.items()
}


def _kernel_suffix(group: KeyGroup) -> str | None:
    """The payload suffix of a kernel's key group (.so, .cubin, .jit.so, .jit.cubin); None for other records
    (plans, ...)."""
    for suffix in _TARGET_OF_SUFFIX:
        if any(path.name == f"{group.key}{suffix}" for path in group.files):
            return suffix
    return None


def _metadata(cache: DiskCache, group: KeyGroup, suffix: str) -> dict[str, Any]:
    """What build.py stored about the kernel; a kernel stored without it shows its target only."""
    target = _TARGET_OF_SUFFIX[suffix]
    fallback: dict[str, Any] = {"target": target, "arch": "?", "dtypes": "?", "chain": "?", "compiler": "?"}
    raw = cache.peek(group.key, META_SUFFIX)
    if raw is None:
        return fallback
    try:
        stored = json.loads(raw)
    except ValueError:
        return fallback
    return {**fallback, **stored} if isinstance(stored, dict) else fallback


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def _list_row(group: KeyGroup, meta: dict[str, Any]) -> tuple[str, ...]:
    target = f"{meta['target']}/{meta['arch']}"
    return (
        group.key[:KEY_PREFIX],
        human_size(group.size),
        _when(group.last_used),
        target,
        str(meta["dtypes"]),
        str(meta["chain"]),
    )


def cache_list(arguments: argparse.Namespace, out: TextIO) -> int:
    cache = DiskCache(cache_dir())
    groups = cache.groups()
    kernels = [(group, suffix) for group in groups if (suffix := _kernel_suffix(group)) is not None]
    rows = [LIST_HEADER, *(_list_row(group, _metadata(cache, group, suffix)) for group, suffix in kernels)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(LIST_HEADER) - 1)]
    if kernels:
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")
    total = sum(group.size for group in groups)
    kernel_total = sum(group.size for group, _suffix in kernels)
    plural = "kernel" if len(kernels) == 1 else "kernels"
    out.write(
        f"total: {len(kernels)} {plural} ({human_size(kernel_total)}) and {len(groups) - len(kernels)} other "
        f"records, {human_size(total)} ({total} bytes) in {cache.root}; "
        f"limit {human_size(max_bytes())} (${MAX_BYTES_VARIABLE})\n"
    )
    kept = _kept_builds(cache.root)
    if kept:
        out.write(f"{len(kept)} build folder(s) under {cache.root / BUILD_FOLDER} (sources of failed compiles)\n")
    return 0


def cache_info(arguments: argparse.Namespace, out: TextIO) -> int:
    cache = DiskCache(cache_dir())
    prefix: str = arguments.key
    matches = [group for group in cache.groups() if group.key.startswith(prefix)] if prefix else []
    if len(matches) != 1:
        found = "no entry" if not matches else f"{len(matches)} entries ({', '.join(g.key[:16] for g in matches)})"
        sys.stderr.write(f"fklir cache info: {found} in {cache.root} with a key starting {prefix!r}\n")
        return 1
    (group,) = matches
    suffix = _kernel_suffix(group)
    meta = _metadata(cache, group, suffix) if suffix is not None else {}
    lines = [("key", group.key)]
    if meta:
        lines += [("chain", str(meta["chain"])), ("dtypes", str(meta["dtypes"]))]
        lines += [("target", f"{meta['target']}/{meta['arch']}"), ("compiler", str(meta["compiler"]))]
        if isinstance(meta.get("created"), (int, float)):
            lines.append(("created", _when(meta["created"])))
    lines += [("last used", _when(group.last_used)), ("size", f"{human_size(group.size)} ({group.size} bytes)")]
    lines += [("file", str(path)) for path in sorted(group.files)]
    for name, value in lines:
        out.write(f"{name + ':':<11}{value}\n")
    source = cache.peek(group.key, SOURCE_SUFFIX)
    if source is not None:
        out.write("source:\n")
        out.write(source.decode(errors="replace"))
    elif suffix is not None:
        out.write("source:    not stored (a kernel compiled before fklir kept sources)\n")
    return 0


def cache_clear(arguments: argparse.Namespace, out: TextIO) -> int:
    cache = DiskCache(cache_dir())
    before = cache.entries()
    cache.clear()
    kept = set(cache.entries())
    removed = [entry for entry in before if entry not in kept]
    total = sum(size for _path, size in removed)
    out.write(f"removed {len(removed)} entries ({human_size(total)}) from {cache.root}\n")
    if kept:
        out.write(f"kept {len(kept)} entries that other processes are using\n")
    return 0


def cache_dir_command(arguments: argparse.Namespace, out: TextIO) -> int:
    out.write(f"{cache_dir()}\n")
    return 0


def build_parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The `fklir` parser and its `cache` sub-parser."""
    parser = argparse.ArgumentParser(prog="fklir", description="fklir command-line helpers")
    parser.add_argument("--version", action="version", version=f"fklir {fklir.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    cache = commands.add_parser("cache", help="inspect or clear the compiled-kernel cache")
    actions = cache.add_subparsers(dest="action", metavar="ACTION")
    actions.add_parser("list", help="list compiled kernels: key, size, last use, target, dtypes, chain")
    info = actions.add_parser("info", help="show one compiled kernel and its generated source")
    info.add_argument("key", help="the kernel's key or a unique prefix of it (as `fklir cache list` shows)")
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
    handlers = {"list": cache_list, "info": cache_info, "clear": cache_clear, "dir": cache_dir_command}
    handler = handlers.get(arguments.action)
    if handler is None:
        cache_parser.print_help(sys.stderr)
        return 2
    try:
        return handler(arguments, stream)
    except (OSError, CacheError) as error:
        sys.stderr.write(f"fklir cache {arguments.action}: {error}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
