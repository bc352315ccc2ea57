"""From a typed, hoisted `fkl.kernel` to something callable: emit, key, compile or load, cache.

Two cache levels: an in-process table (key → loaded kernel) and the disk cache (key → cubin or
.so). The key hashes the structural IR (the kernel without its `values`), the op headers, the
compiler identity and flags, the target arch and the codegen version: changing a value never
recompiles; changing any of those does, once.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from xdsl.printer import Printer

from fklir.backend import cache, compilers
from fklir.backend.emit_cpp import (
    CODEGEN_VERSION,
    CPU_ENTRY,
    GPU_ENTRY,
    GPU_NARROW_ENTRY,
    EmittedKernel,
    KernelLayout,
    emit_kernel,
)
from fklir.dialects import fkl

INCLUDE_DIR = Path(__file__).parent / "include"


@dataclass
class BuildStats:
    """Counters the tests read: how often a kernel was compiled, or found on disk / in memory."""

    compiles: int = 0
    disk_hits: int = 0
    memory_hits: int = 0


STATS = BuildStats()


@dataclass(frozen=True)
class BuiltKernel:
    """A loaded kernel and what its host side needs; holds no IR."""

    key: str
    layout: KernelLayout
    entry: object  # ctypes function (cpu) or cuda_driver.LoadedKernel (gpu)
    values: dict[str, tuple[float, ...]] = field(default_factory=lambda: {})


_LOADED: dict[tuple[str, str, int], tuple[KernelLayout, object]] = {}


def structural_ir(kernel: fkl.KernelOp) -> str:
    """The kernel as text without its values: what the cache key hashes."""
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
    cache remembers (see _remembered_identity) is taken without running `nvcc --version`, which alone
    costs 5-30 ms of a fresh process's first call; otherwise default_gpu_compiler decides."""
    nvcc = compilers.find_nvcc()
    if nvcc is not None:
        try:
            _remembered_identity(nvcc)
        except compilers.CompileError:
            pass  # a broken nvcc: default_gpu_compiler falls back to NVRTC or says what to install
        else:
            return "nvcc"
    choose = getattr(compilers, "default_gpu_compiler", None)
    return choose() if choose is not None else "nvcc"


def set_backend(name: str | None) -> None:
    """Choose the GPU compiler ("nvcc" or "nvrtc"); None restores the automatic choice."""
    global _gpu_backend
    if name is not None and name not in GPU_BACKENDS:
        raise ValueError(f"set_backend: unknown backend {name!r}; choose one of {', '.join(GPU_BACKENDS)}")
    _gpu_backend = name


@functools.cache
def _headers_hash() -> str:
    return compilers.cpp_file_hash(INCLUDE_DIR)


def _remembered_identity(compiler: str) -> str:
    """compilers.compiler_identity, remembered on disk per compiler binary (path, size, mtime): running
    `nvcc --version` costs tens of ms, too much for the first call of a fresh process."""
    resolved = shutil.which(compiler) or compiler
    try:
        stat = os.stat(resolved)
    except OSError:
        return compilers.compiler_identity(compiler)
    key = cache.make_key("compiler-identity", resolved, str(stat.st_size), str(stat.st_mtime_ns))
    disk = cache.DiskCache()
    if (known := disk.load(key, ".identity")) is not None:
        return known.decode()
    identity = compilers.compiler_identity(compiler)
    disk.store(key, ".identity", identity.encode())
    return identity


@functools.cache
def _compiler_and_flags(target: str, backend: str) -> tuple[str, tuple[str, ...]]:
    if target == "cpu":
        return _remembered_identity(compilers.find_cxx()), compilers.GXX_FLAGS
    if backend == "nvrtc":
        return compilers.nvrtc_identity(), compilers.nvrtc_flags()  # the fast flags too: they vary by version
    return _remembered_identity(compilers.find_nvcc() or "nvcc"), compilers.NVCC_FLAGS


def kernel_key(structure: str, target: str, arch: str) -> str:
    compiler, flags = _compiler_and_flags(target, get_backend() if target == "gpu" else "")
    return cache.make_key(
        "fklir",
        CODEGEN_VERSION,
        target,
        arch,
        structure,
        _headers_hash(),
        compiler,
        " ".join(flags),
    )


def _build_dir(key: str) -> Path:
    folder = cache.cache_dir() / "build"
    folder.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{key[:16]}-", dir=folder))


def _compile_cpu(emitted: EmittedKernel, key: str) -> bytes:
    """g++ → .so bytes; on failure the source stays in the build folder that the error names."""
    STATS.compiles += 1
    workdir = _build_dir(key)
    output = workdir / "kernel.so"
    compilers.compile_shared_library(emitted.source, INCLUDE_DIR, output, workdir)
    payload = output.read_bytes()
    shutil.rmtree(workdir, ignore_errors=True)
    return payload


def _compile_gpu(emitted: EmittedKernel, key: str, arch: str) -> bytes:
    """nvcc or NVRTC → cubin bytes; on failure the source stays in the build folder that the error names."""
    STATS.compiles += 1
    workdir = _build_dir(key)
    if get_backend() == "nvrtc":
        cubin = compilers.compile_cubin_nvrtc(emitted.source, INCLUDE_DIR, arch, workdir)
    else:
        cubin = compilers.compile_cubin(emitted.source, INCLUDE_DIR, arch, workdir)
    shutil.rmtree(workdir, ignore_errors=True)
    return cubin


def target_arch(target: str, device: int) -> str:
    if target != "gpu":
        return "host"
    from fklir.backend import cuda_driver

    return cuda_driver.device_arch(device)


def _load_entry(key: str, target: str, device: int) -> object | None:
    """The loaded kernel of cache key `key`: from memory, else from the disk cache (None if absent)."""
    if (loaded := _LOADED.get((key, target, device))) is not None:
        return loaded[1]
    disk = cache.DiskCache()
    if target == "cpu":
        path = disk.load_path(key, ".so")
        return None if path is None else getattr(ctypes.CDLL(str(path)), CPU_ENTRY)
    cubin = disk.load(key, ".cubin")
    if cubin is None:
        return None
    from fklir.backend import cuda_driver

    return cuda_driver.load_kernel(cubin, GPU_ENTRY, device, GPU_NARROW_ENTRY)


def description_key(description: str, target: str, device: int) -> str:
    """A cache key for a frontend-level description of a pipeline (its ops with their values)."""
    return kernel_key("plan:" + description, target, target_arch(target, device))


def remember_plan(description_key_: str, built: BuiltKernel) -> None:
    """Record which kernel and values a described pipeline compiles to, so that a fresh process can
    skip the IR entirely on its first call (see load_plan)."""
    entry = {"kernel": built.key, "layout": dataclasses.asdict(built.layout), "values": built.values}
    cache.DiskCache().store(description_key_, ".plan.json", json.dumps(entry).encode())


def load_plan(description_key_: str, target: str, device: int) -> BuiltKernel | None:
    """The kernel a described pipeline compiled to before, without building any IR; None if unknown."""
    raw = cache.DiskCache().load(description_key_, ".plan.json")
    if raw is None:
        return None
    entry = json.loads(raw)
    layout_fields = dict(entry["layout"])
    layout_fields["slots"] = tuple(tuple(slot) for slot in layout_fields["slots"])
    layout = KernelLayout(**layout_fields)
    entry_point = _load_entry(entry["kernel"], target, device)
    if entry_point is None:
        return None
    _LOADED[(entry["kernel"], target, device)] = (layout, entry_point)
    STATS.disk_hits += 1
    values = {name: tuple(v) for name, v in entry["values"].items()}
    return BuiltKernel(entry["kernel"], layout, entry_point, values)


def _build_or_load(
    disk: cache.DiskCache, emitted: EmittedKernel, key: str, target: str, arch: str, device: int
) -> object:
    if target == "cpu":
        path = disk.build_or_load_path(key, ".so", lambda: _compile_cpu(emitted, key))
        return getattr(ctypes.CDLL(str(path)), CPU_ENTRY)
    from fklir.backend import cuda_driver

    cubin = disk.build_or_load(key, ".cubin", lambda: _compile_gpu(emitted, key, arch))
    return cuda_driver.load_kernel(cubin, GPU_ENTRY, device, GPU_NARROW_ENTRY)


def build_kernel(kernel: fkl.KernelOp, target: str, device: int = 0) -> BuiltKernel:
    """Compile (or find) `kernel` for `target` ("cpu" | "gpu") on `device`."""
    arch = target_arch(target, device)
    key = kernel_key(structural_ir(kernel), target, arch)
    values = kernel_values(kernel)
    if (loaded := _LOADED.get((key, target, device))) is not None:
        STATS.memory_hits += 1
        return BuiltKernel(key, loaded[0], loaded[1], values)
    emitted = emit_kernel(kernel)
    disk = cache.DiskCache()
    compiles_before = STATS.compiles
    try:
        entry = _build_or_load(disk, emitted, key, target, arch, device)
    except compilers.CompileError:
        raise
    except (OSError, RuntimeError):
        # an entry that passed its checksum but that dlopen or the driver refuses: rebuild it once
        disk.discard(key, ".so" if target == "cpu" else ".cubin")
        entry = _build_or_load(disk, emitted, key, target, arch, device)
    if STATS.compiles == compiles_before:
        STATS.disk_hits += 1
    _LOADED[(key, target, device)] = (emitted.layout, entry)
    return BuiltKernel(key, emitted.layout, entry, values)
