"""One instance of a jit kernel (its source, template arguments and parameter types) compiled or found in
the caches, and loaded: a ctypes function on the CPU, a cuda_driver.LoadedKernel on the GPU.

The compiler sees one generated translation unit: fkl/tensor_view.h, the user's source under a #line that
names the user's file (so that the compiler's messages point at the user's lines), then what exports the
instance: an extern "C" trampoline that calls `name<args>(...)` on the CPU, an explicit instantiation on
the GPU (NVRTC also gets it as a name expression, which tells its lowered name; nvcc has no such API, so
the instance is found among the cubin's kernels by demangling, see fklir/backend/cubin.py). The explicit
instantiation spells out the parameter types, so a kernel whose parameters differ from the declared
arguments fails to compile instead of reading its arguments wrongly.

The cache key hashes that unit together with every file it includes (fklir/includes.py), the
compiler's identity and flags, the target and arch: an edit of the source or of any header it includes
compiles once, anything else never. The GPU payload is the entry's name, a NUL, then the cubin, so that a
later process loads it without compiling or demangling again.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fklir import includes, log
from fklir.backend import cache, compilers, cubin
from fklir.errors import CompileError

JIT_VERSION = "1"  # bump when the generated translation unit changes
CPU_ENTRY = "fkl_jit_entry"
SUFFIXES = cache.JIT_SUFFIXES
TENSOR_PARAMETER = "fkl::TensorView"


@dataclass(frozen=True)
class Source:
    """User C++ as the compiler will see it."""

    text: str
    folder: Path  # where its quoted includes are found
    shown: str  # the file name its #line gives: the user's file, or where the text was declared


@dataclass(frozen=True)
class Instance:
    """What to compile: the kernel `name`, called `name<template_args>` (without <> when None)."""

    name: str
    template_args: str | None
    parameters: tuple[str, ...]  # C++ parameter types, in argument order
    target: str  # "cpu" | "gpu"

    @property
    def call(self) -> str:
        return self.name if self.template_args is None else f"{self.name}<{self.template_args}>"


_LOADED: dict[tuple[str, int | None], Any] = {}


def translation_unit(source: Source, instance: Instance) -> str:
    """The C++ the compiler sees for `instance` of `source`."""
    shown = source.shown.replace("\\", "\\\\").replace('"', '\\"')
    lines = ['#include "fkl/tensor_view.h"', f'#line 1 "{shown}"', source.text, f'#line 1 "<fkl.jit {instance.call}>"']
    if instance.target == "cpu":
        declared = ", ".join(f"{kind} a{index}" for index, kind in enumerate(instance.parameters))
        passed = ", ".join(f"a{index}" for index in range(len(instance.parameters)))
        lines.append(f'extern "C" void {CPU_ENTRY}({declared}) {{ {instance.call}({passed}); }}')
    elif instance.template_args is not None:
        lines.append(f"template __global__ void {instance.call}({', '.join(instance.parameters)});")
    return "\n".join(lines) + "\n"


def load(source: Source, instance: Instance, device: int | None, link_flags: Sequence[str] = ()) -> Any:
    """The loaded instance: compiled once per content (see the module docstring), then found in memory or on
    disk. CompileError names the kernel and carries the compiler's message."""
    from fklir.backend import build

    unit = translation_unit(source, instance)
    target = instance.target
    backend = build.get_backend() if target == "gpu" else "g++"
    arch = build.target_arch(target, device if device is not None else 0)
    compiler, flags = build._compiler_and_flags(target, backend)  # pyright: ignore[reportPrivateUsage]
    content = includes.closure_hash(unit, source.folder, (source.folder, build.INCLUDE_DIR))
    key = cache.make_key("fklir-jit", JIT_VERSION, target, arch, backend, compiler, *flags, "|", *link_flags, content)
    if (loaded := _LOADED.get((key, device))) is not None:
        build.STATS.memory_hits += 1
        return loaded
    disk = cache.DiskCache()

    def compile_instance() -> bytes:
        entry = disk.writable_root(announce=False) / f"{key}{SUFFIXES[target]}"
        with log.compiling(f"jit {instance.call}", target, backend, entry), _named(instance):
            build.STATS.compiles += 1
            folders = (build.INCLUDE_DIR, source.folder)
            payload = _compile(unit, instance, key, folders, arch, backend, link_flags)
        _describe(disk, key, instance, unit, arch, f"{backend}: {compiler}")
        return payload

    if target == "cpu":
        library = disk.build_or_open(key, SUFFIXES[target], compile_instance, lambda path: ctypes.CDLL(str(path)))
        loaded = getattr(library, CPU_ENTRY)
    else:
        from fklir.runtime import cuda_driver

        payload = disk.build_or_load(key, SUFFIXES[target], compile_instance)
        name, _, image = payload.partition(b"\0")
        loaded = cuda_driver.load_kernel(image, name.decode(), device if device is not None else 0)
    _LOADED[(key, device)] = loaded
    return loaded


@contextlib.contextmanager
def _named(instance: Instance) -> Iterator[None]:
    """A compile error says which kernel and instance failed; the compiler's message (with the user's file
    and lines, from the #line) follows."""
    try:
        yield
    except CompileError as error:
        raise CompileError(
            f"fkl.jit kernel {instance.name!r} ({instance.target}, {instance.call}) does not compile:\n{error}",
            stderr=error.stderr,
            source_path=error.source_path,
        ) from error


def _compile(
    unit: str,
    instance: Instance,
    key: str,
    folders: tuple[Path, Path],
    arch: str,
    backend: str,
    link_flags: Sequence[str],
) -> bytes:
    """The payload: a shared library's bytes (CPU), or the entry's name, a NUL and the cubin (GPU).
    `folders`: fklir's include folder, then the user source's."""
    ours, users = folders
    with cache.DiskCache().work_dir(f"{key[:16]}-") as workdir:
        if instance.target == "cpu":
            output = workdir / "kernel.so"
            compilers.compile_shared_library(unit, ours, output, workdir, include_dirs=(users,), link_flags=link_flags)
            return output.read_bytes()
        if backend == "nvrtc":
            image, lowered = compilers.compile_cubin_nvrtc_named(
                unit, ours, arch, (instance.call,), workdir, include_dirs=(users,)
            )
            return lowered[instance.call].encode() + b"\0" + image
        image = compilers.compile_cubin(unit, ours, arch, workdir, include_dirs=(users,))
        entry, found = cubin.find_instance(image, instance.name, instance.template_args or "")
        if entry is None:
            raise CompileError(
                f"nvcc compiled, but the cubin has no single kernel {instance.call}; kernels of that name: "
                f"{', '.join(found) or 'none'} (a __global__ function, not declared static?)"
            )
        return entry.encode() + b"\0" + image


def _describe(disk: cache.DiskCache, key: str, instance: Instance, unit: str, arch: str, compiler: str) -> None:
    """What `fklir cache list|info` shows of a new instance: best effort, a listing aid."""
    meta = {
        "chain": f"jit {instance.call}",
        "dtypes": ", ".join(instance.parameters),
        "target": instance.target,
        "arch": arch,
        "compiler": compiler,
        "created": time.time(),
    }
    with contextlib.suppress(OSError):
        disk.store(key, cache.META_SUFFIX, json.dumps(meta).encode())
        disk.store(key, cache.SOURCE_SUFFIX, unit.encode())
