"""From a typed, hoisted `fkl.kernel` to something callable: emit, key, compile or load, cache.

Two cache levels: an in-process table (key → loaded kernel) and the disk cache (key → cubin or
.so). The key hashes the structural IR (the kernel without its `values`), the op headers, the
compiler identity and flags, the target arch and the codegen version: changing a value never
recompiles; changing any of those does, once.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import io
import marshal
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from fklir import log
from fklir.backend import cache, compilers
from fklir.backend.kernel_layout import (
    CODEGEN_VERSION,
    CPU_ENTRY,
    GPU_ENTRY,
    GPU_NARROW_ENTRY,
    KERNEL_MODES,
    BuiltKernel,
    KernelLayout,
)
from fklir.dialects.value_rules import RecipeStep

if TYPE_CHECKING:  # the IR and the emitter are the cold path's: a plan found on disk imports no xDSL
    from fklir.backend.emit_cpp import EmittedKernel
    from fklir.dialects import fkl

INCLUDE_DIR = Path(__file__).parent / "include"


class BuildStats:
    """Counters the tests read: how often a kernel was compiled, or found on disk / in memory."""

    __slots__ = ("compiles", "disk_hits", "memory_hits")

    def __init__(self) -> None:
        self.compiles = 0
        self.disk_hits = 0
        self.memory_hits = 0


STATS = BuildStats()


_LOADED: dict[tuple[str, str, int], tuple[KernelLayout, object]] = {}
# description key -> (kernel key, values, recipe): what this process learnt from load_plan or remember_plan;
# the kernel itself stays in _LOADED. Bounded: a loop composing new values every frame adds one per frame.
Recipe = tuple[RecipeStep, ...]
_PLANS: dict[str, tuple[str, dict[str, tuple[float, ...]], Recipe]] = {}
_PLANS_MAX = 4096


def structural_ir(kernel: fkl.KernelOp) -> str:
    """The kernel as text without its values: what the cache key hashes."""
    from xdsl.printer import Printer

    clone = kernel.clone()
    clone.properties.pop("values", None)
    out = io.StringIO()
    Printer(stream=out).print_op(clone)
    return out.getvalue()


def kernel_values(kernel: fkl.KernelOp) -> dict[str, tuple[float, ...]]:
    if kernel.values is None:
        return {}
    result: dict[str, tuple[float, ...]] = {}
    for name, attr in kernel.values.data.items():
        result[name] = tuple(float(v) for v in attr.get_values())  # pyright: ignore[reportAttributeAccessIssue]
    return result


GPU_BACKENDS = ("nvcc", "nvrtc")
_gpu_backend: str | None = None  # None: the automatic choice of compilers.default_gpu_compiler()


def get_backend() -> str:
    """The GPU compiler in use: the one set with set_backend(), else nvcc when it is on PATH, else NVRTC."""
    if _gpu_backend is not None:
        return _gpu_backend
    return _automatic_backend()


@functools.cache
def _automatic_backend() -> str:
    """compilers.default_gpu_compiler()'s choice, made once per process. An nvcc whose identity the disk
    cache remembers (see _remembered_identity) is taken without running `nvcc --version`, a process
    start that would weigh on a fresh process's first call; otherwise default_gpu_compiler decides."""
    nvcc = compilers.find_nvcc()
    if nvcc is not None:
        try:
            _remembered_identity(nvcc)
        except compilers.CompileError:
            pass  # a broken nvcc: default_gpu_compiler falls back to NVRTC or says what to install
        else:
            return "nvcc"
    return compilers.default_gpu_compiler()


def set_backend(name: str | None) -> None:
    """Choose the GPU compiler ("nvcc" or "nvrtc"); None restores the automatic choice."""
    global _gpu_backend
    if name is not None and name not in GPU_BACKENDS:
        raise ValueError(f"set_backend: unknown backend {name!r}; choose one of {', '.join(GPU_BACKENDS)}")
    _gpu_backend = name


@functools.cache
def _headers_hash() -> str:
    return compilers.cpp_file_hash(INCLUDE_DIR)


@functools.cache
def _headers_stamp() -> str:
    return compilers.cpp_file_stamp(INCLUDE_DIR)


@functools.cache
def _binary_stamp(compiler: str) -> str | None:
    """The compiler binary's resolved path, size and modification time, once per process; None when it
    cannot be stat'ed."""
    resolved = shutil.which(compiler) or compiler
    try:
        status = os.stat(resolved)
    except OSError:
        return None
    return f"{resolved} {status.st_size} {status.st_mtime_ns}"


def _remembered_identity(compiler: str) -> str:
    """compilers.compiler_identity, remembered on disk per compiler binary (its stamp): running
    `nvcc --version` starts a process, too slow for the first call of a fresh process."""
    stamp = _binary_stamp(compiler)
    if stamp is None:
        return compilers.compiler_identity(compiler)
    key = cache.make_key("compiler-identity", *stamp.rsplit(" ", 2))
    disk = cache.DiskCache()
    if (known := disk.load(key, ".identity")) is not None:
        return known.decode()
    identity = compilers.compiler_identity(compiler)
    with contextlib.suppress(OSError):  # remembering only saves the next process a `--version` run
        disk.store(key, ".identity", identity.encode(), announce=False)
    return identity


def _binary_and_flags(target: str) -> tuple[str, tuple[str, ...]]:
    """The compiler binary of `target` (g++ for the CPU, nvcc for the GPU) and its flags; a CPU kernel
    compiled for the host's instruction set also keys on the host CPU, which that flag stands for."""
    if target == "cpu":
        flags = compilers.gxx_flags()
        if compilers.NATIVE_FLAG not in flags:
            return compilers.find_cxx(), flags
        return compilers.find_cxx(), (*flags, f"host cpu: {compilers.host_cpu()}")
    return compilers.find_nvcc() or "nvcc", compilers.NVCC_FLAGS


@functools.cache
def _compiler_and_flags(target: str, backend: str) -> tuple[str, tuple[str, ...]]:
    if target == "gpu" and backend == "nvrtc":
        return compilers.nvrtc_identity(), compilers.nvrtc_flags()  # the fast flags too: they vary by version
    binary, flags = _binary_and_flags(target)
    return _remembered_identity(binary), flags


def _described_compiler(target: str, backend: str) -> tuple[str, tuple[str, ...]]:
    """The compiler as a plan's description key holds it: g++ or nvcc by its binary's stamp, so that a fresh
    process's first call reads no remembered identity (the kernel key's); an upgrade changes the stamp, and
    the plan is built from IR again, to the kernel that the new identity keys. NVRTC, or a binary that
    cannot be stat'ed: _compiler_and_flags."""
    if target == "gpu" and backend == "nvrtc":
        return _compiler_and_flags(target, backend)
    binary, flags = _binary_and_flags(target)
    stamp = _binary_stamp(binary)
    return (stamp, flags) if stamp is not None else _compiler_and_flags(target, backend)


def kernel_key(structure: str, target: str, arch: str) -> str:
    compiler, flags = _compiler_and_flags(target, get_backend() if target == "gpu" else "")
    return _key(structure, target, arch, _headers_hash(), compiler, flags)


def _key(structure: str, target: str, arch: str, headers: str, compiler: str, flags: tuple[str, ...]) -> str:
    return cache.make_key("fklir", CODEGEN_VERSION, target, arch, structure, headers, compiler, " ".join(flags))


def _compile_cpu(emitted: EmittedKernel, key: str) -> bytes:
    """g++ → .so bytes; on failure the source stays in the build folder that the error names."""
    STATS.compiles += 1
    with cache.DiskCache().work_dir(f"{key[:16]}-") as workdir:
        output = workdir / "kernel.so"
        compilers.compile_shared_library(emitted.source, INCLUDE_DIR, output, workdir, emitted.include_dirs)
        return output.read_bytes()


def _compile_gpu(emitted: EmittedKernel, key: str, arch: str) -> bytes:
    """nvcc or NVRTC → cubin bytes; on failure the source stays in the build folder that the error names."""
    STATS.compiles += 1
    with cache.DiskCache().work_dir(f"{key[:16]}-") as workdir:
        folders = emitted.include_dirs
        if get_backend() == "nvrtc":
            return compilers.compile_cubin_nvrtc_named(emitted.source, INCLUDE_DIR, arch, (), workdir, folders)[0]
        return compilers.compile_cubin(emitted.source, INCLUDE_DIR, arch, workdir, folders)


def chain_summary(kernel: fkl.KernelOp) -> str:
    """The kernel's ops in order, e.g. "read > crop > resize > mul > write" (a read's sampled geometry
    comes right after the read)."""
    names = [op.name.removeprefix("fkl.") for op in kernel.walk() if op is not kernel and op.name != "fkl.yield"]
    return " > ".join(names)


def dtype_summary(kernel: fkl.KernelOp) -> str:
    """What the kernel reads and writes, e.g. "uint8x3 -> float32x3"."""
    from fklir.dialects import fkl

    writes_ops = (fkl.WriteOp, fkl.SplitOp, fkl.TSplitOp, fkl.SplitWriteOp)

    def image(kind: object) -> str:
        if not isinstance(kind, fkl.ImageType) or not kind.is_known:
            return "?"
        return f"{kind.dtype}x{kind.channels.data}"

    reads = [image(op.source_type) for op in kernel.walk() if isinstance(op, fkl.ReadOp)]
    writes = [image(op.operands[0].type) for op in kernel.walk() if isinstance(op, writes_ops)]
    return f"{', '.join(dict.fromkeys(reads))} -> {', '.join(dict.fromkeys(writes))}"


def _summary(kernel: fkl.KernelOp) -> str:
    """What a log line names a kernel by: its chain and dtypes."""
    return f"{chain_summary(kernel)} ({dtype_summary(kernel)})"


def _describe(disk: cache.DiskCache, kernel: fkl.KernelOp, emitted: EmittedKernel, key: str, arch: str) -> None:
    """Store what `fklir cache list|info` shows of a new kernel next to it: best effort, a listing aid."""
    target = "cpu" if arch == "host" else "gpu"
    backend = "g++" if target == "cpu" else get_backend()
    meta = {
        "chain": chain_summary(kernel),
        "dtypes": dtype_summary(kernel),
        "target": target,
        "arch": arch,
        "compiler": f"{backend}: {_compiler_and_flags(target, backend if target == 'gpu' else '')[0]}",
        "created": time.time(),
    }
    import json  # the cold path's: a warm fresh process reads its plan with marshal

    with contextlib.suppress(OSError):
        disk.store(key, cache.META_SUFFIX, json.dumps(meta).encode())
        disk.store(key, cache.SOURCE_SUFFIX, emitted.source.encode())


def target_arch(target: str, device: int) -> str:
    if target != "gpu":
        return "host"
    from fklir.runtime import cuda_driver

    return cuda_driver.device_arch(device)


def _load_entry(key: str, target: str, device: int) -> object | None:
    """The loaded kernel of cache key `key`: from memory, else from the disk cache; None if absent or if
    the entry verifies but does not load (it is then deleted, so that the caller rebuilds it)."""
    if (loaded := _LOADED.get((key, target, device))) is not None:
        return loaded[1]
    disk = cache.DiskCache()
    try:
        if target == "cpu":
            path = disk.load_path(key, ".so")
            return None if path is None else getattr(ctypes.CDLL(str(path)), CPU_ENTRY)
        cubin = disk.load(key, ".cubin")
        if cubin is None:
            return None
        from fklir.runtime import cuda_driver

        return cuda_driver.load_kernel(cubin, GPU_ENTRY, device, GPU_NARROW_ENTRY)
    except _UNLOADABLE:
        disk.discard(key, cache.KERNEL_SUFFIXES[target])
        return None


# What dlopen, a missing entry symbol or the driver raise for an entry that passed its checksum but is not
# a kernel of ours (a truncated build before the sidecar existed, a file replaced by its owner).
_UNLOADABLE = (OSError, AttributeError, RuntimeError)


def description_key(description: str, target: str, device: int) -> str:
    """A cache key for a frontend-level description of a pipeline (its ops with their values). The headers
    and the compiler enter by their stamps (a stat each, where the kernel key reads and hashes the headers
    and the compiler's remembered identity): an edit or upgrade changes them, and a plan whose inputs only
    look changed is built from IR again, to the same kernel key."""
    compiler, flags = _described_compiler(target, get_backend() if target == "gpu" else "")
    return _key("plan:" + description, target, target_arch(target, device), _headers_stamp(), compiler, flags)


def _remember_in_memory(
    description_key_: str, kernel: str, values: dict[str, tuple[float, ...]], recipe: Recipe
) -> None:
    if len(_PLANS) >= _PLANS_MAX:
        del _PLANS[next(iter(_PLANS))]  # the oldest: insertion order
    _PLANS[description_key_] = (kernel, values, recipe)


def remember_plan(description_key_: str, built: BuiltKernel) -> None:
    """Record which kernel and values a described pipeline compiles to, so that the next compose() of it
    skips the IR: in memory always; on disk, for a fresh process, only when the kernel was new to this
    process, so that composing known structures with new values (a detector's boxes every frame) writes
    no file."""
    _remember_in_memory(description_key_, built.key, built.values, built.recipe)
    if built.reused:
        return
    entry = {"kernel": built.key, "layout": built.layout._asdict(), "values": built.values, "recipe": built.recipe}
    with contextlib.suppress(OSError):  # only a shortcut for the next process: a full disk must not fail this call
        record = marshal.dumps(entry, PLAN_MARSHAL_VERSION)
        cache.DiskCache().store(description_key_, PLAN_SUFFIX, record, announce=False)


# A plan record is marshal data of str, int, float, tuple and dict only: marshal is built into the
# interpreter, where importing json is a good part of a warm fresh process's start, and format 4 reads the
# same in every Python 3 since 3.4. It trusts the cache folder no more than loading the kernel beside it does.
PLAN_SUFFIX = ".plan"
PLAN_MARSHAL_VERSION = 4


def _parse_plan(raw: bytes) -> tuple[str, KernelLayout, dict[str, tuple[float, ...]], Recipe]:
    """(kernel key, layout, values, recipe) of a plan record; ValueError/KeyError/TypeError/AttributeError/
    EOFError when it is not one (written by another codegen version, or garbage whose sidecar matches)."""
    entry = marshal.loads(raw)
    layout_fields = dict(entry["layout"])
    layout_fields["slots"] = tuple(tuple(slot) for slot in layout_fields["slots"])
    layout_fields["reciprocals"] = tuple(layout_fields.get("reciprocals", ()))
    values = {str(name): tuple(float(v) for v in vs) for name, vs in entry["values"].items()}
    recipe = tuple(
        (str(slot), int(index), str(name), str(word), str(dtype), int(channels), int(count))
        for slot, index, name, word, dtype, channels, count in entry["recipe"]
    )
    kernel = entry["kernel"]
    if not isinstance(kernel, str):
        raise TypeError(f"plan record: kernel key {kernel!r} is not a string")
    if layout_fields.get("mode") not in KERNEL_MODES:  # a record of another codegen (it said "pixel")
        raise ValueError(f"plan record: kernel mode {layout_fields.get('mode')!r} is not one of {KERNEL_MODES}")
    return kernel, KernelLayout(**layout_fields), values, recipe


def plan_or_build(
    description_key_: str, target: str, device: int, lower: Callable[[], tuple[fkl.KernelOp, Recipe]]
) -> BuiltKernel:
    """The kernel a described pipeline compiled to before (load_plan: no IR), else the kernel of `lower()` (the
    pipeline's IR after the passes, and the recipe of its runtime values) built, and recorded for the next
    pipeline and process (remember_plan)."""
    built = load_plan(description_key_, target, device)
    if built is not None:
        return built
    kernel, recipe = lower()
    built = build_kernel(kernel, target, device)._replace(recipe=recipe)
    remember_plan(description_key_, built)
    return built


def load_plan(description_key_: str, target: str, device: int) -> BuiltKernel | None:
    """The kernel a described pipeline compiled to before, without building any IR; None if unknown, or if
    the record or its kernel does not load (then deleted, so that the caller builds and records anew)."""
    known = _PLANS.get(description_key_)
    if known is not None and (loaded := _LOADED.get((known[0], target, device))) is not None:
        STATS.memory_hits += 1
        return BuiltKernel(known[0], loaded[0], loaded[1], known[1], reused=True, recipe=known[2])
    disk = cache.DiskCache()
    raw = disk.load(description_key_, PLAN_SUFFIX)
    if raw is None:
        return None
    try:
        kernel, layout, values, recipe = _parse_plan(raw)
        entry_point = _load_entry(kernel, target, device)
    except (ValueError, KeyError, TypeError, AttributeError, EOFError):
        disk.discard(description_key_, PLAN_SUFFIX)
        return None
    if entry_point is None:
        return None
    _LOADED[(kernel, target, device)] = (layout, entry_point)
    _remember_in_memory(description_key_, kernel, values, recipe)
    STATS.disk_hits += 1
    log.cache_hit("disk", kernel, lambda: f"the kernel recorded for pipeline {description_key_[:16]}")
    return BuiltKernel(kernel, layout, entry_point, values, recipe=recipe)


def _open_library(path: Path) -> ctypes.CDLL:
    return ctypes.CDLL(str(path))


def _build_or_load(
    disk: cache.DiskCache, kernel: fkl.KernelOp, emitted: EmittedKernel, key: str, arch: str, device: int
) -> object:
    def compile_and_describe() -> bytes:
        target = "cpu" if arch == "host" else "gpu"
        compiler = "g++" if target == "cpu" else get_backend()
        entry = disk.writable_root(announce=False) / f"{key}{cache.KERNEL_SUFFIXES[target]}"  # where the build goes
        with log.compiling(_summary(kernel), target if target == "cpu" else f"gpu ({arch})", compiler, entry):
            if arch == "host":
                payload = _compile_cpu(emitted, key)
            else:
                payload = _compile_gpu(emitted, key, arch)
        _describe(disk, kernel, emitted, key, arch)
        return payload

    if arch == "host":
        library = disk.build_or_open(key, cache.KERNEL_SUFFIXES["cpu"], compile_and_describe, _open_library)
        return getattr(library, CPU_ENTRY)
    from fklir.runtime import cuda_driver

    cubin = disk.build_or_load(key, cache.KERNEL_SUFFIXES["gpu"], compile_and_describe)
    return cuda_driver.load_kernel(cubin, GPU_ENTRY, device, GPU_NARROW_ENTRY)


def build_kernel(kernel: fkl.KernelOp, target: str, device: int = 0) -> BuiltKernel:
    """Compile (or find) `kernel` for `target` ("cpu" | "gpu") on `device`."""
    from fklir.backend.emit_user import located_compile_error, user_declarations
    from fklir.backend.kernel_plan import emit_kernel

    arch = target_arch(target, device)
    key = kernel_key(structural_ir(kernel), target, arch)
    values = kernel_values(kernel)
    if (loaded := _LOADED.get((key, target, device))) is not None:
        STATS.memory_hits += 1
        log.cache_hit("memory", key, lambda: _summary(kernel))
        return BuiltKernel(key, loaded[0], loaded[1], values, reused=True)
    emitted = emit_kernel(kernel)
    disk = cache.DiskCache()
    compiles_before = STATS.compiles
    try:
        entry = _build_or_load(disk, kernel, emitted, key, arch, device)
    except compilers.CompileError as error:
        raise located_compile_error(error, user_declarations(kernel)) from None
    except _UNLOADABLE:
        # an entry that passed its checksum but that dlopen or the driver refuses: rebuild it once
        disk.discard(key, cache.KERNEL_SUFFIXES[target])
        entry = _build_or_load(disk, kernel, emitted, key, arch, device)
    if STATS.compiles == compiles_before:
        STATS.disk_hits += 1
        log.cache_hit("disk", key, lambda: _summary(kernel))
    _LOADED[(key, target, device)] = (emitted.layout, entry)
    return BuiltKernel(key, emitted.layout, entry, values)
