"""Run the C++ compilers: nvcc or NVRTC (CUDA source → cubin) and g++ (C++ source → shared library).

This module knows nothing about the IR: it takes finished source text and produces binaries. A failed
compile keeps its source file where it was written and names it in the error, so that the user can read
(and recompile) exactly what the compiler saw.

NVRTC (the CUDA runtime compiler, a library: `pip install nvidia-cuda-nvrtc`, or fklir's `nvrtc` extra)
needs no CUDA toolkit and, running in-process, compiles a fused kernel many times faster than nvcc. It is
reached through cuda.bindings.nvrtc, which finds libnvrtc with cuda-pathfinder (the pip wheel's
site-packages/nvidia/cu13/lib, conda, then the system loader path and $CUDA_HOME) and raises
cuda.pathfinder's DynamicLibNotFoundError (a RuntimeError) on the first call when there is none.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import itertools
import os
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from fklir.errors import CompileError

# No --use_fast_math: it flushes denormals, approximates division and breaks NaN handling and rounding
# (SaturateCast must round half to even and map NaN to 0 exactly as on the CPU target).
# --fmad=false: nvcc would otherwise contract a*b+c into one FMA (one rounding instead of two), so float
# results would differ in the last bit from the CPU target and from numpy; the chains are memory-bound,
# so the separate multiply costs nothing measurable.
NVCC_FLAGS: tuple[str, ...] = ("-std=c++17", "-O3", "--fmad=false", "-cubin")

# The same exact-float choices as NVCC_FLAGS (NVRTC contracts to FMA by default too), so that both GPU
# compilers give the CPU target's bits. -default-device: functions without an execution space are device
# functions (our headers mark theirs explicitly). NVRTC has no default include path and ours include nothing
# under __CUDACC_RTC__; -arch=sm_XX (a real arch) makes NVRTC emit a cubin, not only PTX.
NVRTC_FLAGS: tuple[str, ...] = ("--std=c++17", "--fmad=false", "-default-device")

# Options that only make NVRTC faster, each with the first NVRTC version that knows it (older ones refuse
# unknown options). None changes the code: with and without them NVRTC 13.0 gives byte-identical cubins.
# Most of a compile is NVVM and ptxas working on the kernel body (what the emitters write decides it:
# see emit_flat's rounds); these trim the C++ front end, from the second compile in a process on (the
# first one pays more, to write the precompiled header; figures in benchmarks/RESULTS.md):
# --minimal: NVRTC's builtin header leaves out textures, the device runtime and the CUDA runtime types,
#   none of which our headers use.
# --pch: automatic precompiled header of the leading #include "fkl/kernel.h", created by the first compile
#   in a process and reused by the next ones (see _pch_folder for where, and why per process).
# --no-cache: NVRTC would also store every result in the driver's compute cache (where a driver is
#   installed), a second copy of what fklir's disk cache already keeps.
# Left out on purpose: -Ofast-compile (mid and max drop the 16-byte vector loads and stores; min compiles
# faster but its kernels run longer, a poor trade for a kernel that is compiled once and launched many
# times; on NVRTC 13.0 a compile with max also changes the code of later compiles in the same process) and
# ptxas -O levels or --fast-compile (they change the code without making the compile faster). Figures in
# benchmarks/RESULTS.md.
NVRTC_FAST_FLAGS: tuple[tuple[tuple[int, int], str], ...] = (
    ((12, 4), "--minimal"),
    ((12, 8), "--pch"),
    ((12, 9), "--no-cache"),
)

# The flags every CPU kernel is compiled with (gxx_flags() adds the host's instruction set).
# -ffp-contract=off: the CPU twin of --fmad=false (g++ contracts a*b+c to an FMA wherever the target
# has one, e.g. on aarch64), so CPU results equal the GPU's and the reference's bit for bit.
# -fno-tree-pre: g++'s partial redundancy elimination turns an op whose result it knows to be one of two
# values (Threshold's 0 or 1, then a saturating cast) into a branch per element, whose phi nodes the SLP
# vectoriser of a flat kernel's unrolled group cannot take, so such chains ran as scalar code (RESULTS.md).
GXX_FLAGS: tuple[str, ...] = (
    "-std=c++17",
    "-O3",
    "-ffp-contract=off",
    "-fno-tree-pre",
    "-fopenmp",
    "-fPIC",
    "-shared",
)

# Kernels are compiled on the machine that runs them, so by default for its whole instruction set: the
# byte shuffles of colour reorders and the narrowing of saturating casts need more than x86-64's SSE2.
# The host CPU then joins the cache key (build._binary_and_flags); FKLIR_CPU_NATIVE=0 compiles for the
# baseline instead, for a cache folder shared by machines of different CPUs.
NATIVE_FLAG = "-march=native"
CPU_NATIVE_ENV = "FKLIR_CPU_NATIVE"

HEADER_SUFFIXES: tuple[str, ...] = (".h", ".hpp", ".cuh", ".inl")

# A generous wall-clock limit: a hung compiler must not hang the user's program forever.
COMPILE_TIMEOUT_S = 600.0

# Patterns compiled on first use (re caches them): only a compile needs them, never a warm call.
_VERSION_PATTERN = r"\d+\.\d+"
_ARCH_PATTERN = r"sm_\d+[a-z]?"

NVRTC_INSTALL_HINT = (
    "install it with `pip install nvidia-cuda-nvrtc` (the `fklir[nvrtc]` extra) or install a CUDA toolkit"
)


def find_nvcc() -> str | None:
    """The nvcc to use: $FKLIR_NVCC, else nvcc on PATH, else $CUDA_HOME/bin/nvcc; None when there is none."""
    explicit = os.environ.get("FKLIR_NVCC")
    if explicit:
        return explicit
    on_path = shutil.which("nvcc")
    if on_path is not None:
        return on_path
    for variable in ("CUDA_HOME", "CUDA_PATH"):
        home = os.environ.get(variable)
        if home and (Path(home) / "bin" / "nvcc").is_file():
            return str(Path(home) / "bin" / "nvcc")
    return None


def find_cxx() -> str:
    """The host C++ compiler: $FKLIR_CXX, else g++."""
    return os.environ.get("FKLIR_CXX") or "g++"


def nvcc_available() -> bool:
    """True when an nvcc can be found and answers --version."""
    nvcc = find_nvcc()
    if nvcc is None:
        return False
    try:
        compiler_identity(nvcc)
    except CompileError:
        return False
    return True


@functools.cache
def compiler_identity(compiler: str) -> str:
    """The compiler's version lines (they go into the cache key); cached per process.

    Only lines that carry a version number are kept (copyright and warranty text is dropped);
    for nvcc these are the "release 13.0, V13.0.88" and "Build cuda_13.0..." lines.
    """
    import subprocess  # here, not at the top: a warm call never runs a compiler and need not import it

    try:
        result = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CompileError(f"cannot run the compiler {compiler!r}: {error}") from error
    if result.returncode != 0:
        raise CompileError(
            f"{compiler!r} --version failed with exit code {result.returncode}:\n{result.stderr}",
            stderr=result.stderr,
        )
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    versioned = [line for line in lines if re.search(_VERSION_PATTERN, line) and "Copyright" not in line]
    chosen = versioned or lines[:1]
    if not chosen:
        raise CompileError(f"{compiler!r} --version printed nothing")
    return "\n".join(chosen)


def cpp_file_hash(include_dir: Path) -> str:
    """sha256 over every header under include_dir: sorted relative names and contents, length-prefixed."""
    import hashlib  # here, not at the top: a warm call keys its plan by cpp_file_stamp, and hashlib loads OpenSSL

    digest = hashlib.sha256()
    headers = sorted(path for path in include_dir.rglob("*") if path.is_file() and path.suffix in HEADER_SUFFIXES)
    for header in headers:
        name = header.relative_to(include_dir).as_posix().encode()
        content = header.read_bytes()
        for part in (name, content):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    return digest.hexdigest()


def cpp_file_stamp(include_dir: Path) -> str:
    """The headers under include_dir by relative name, size and modification time: what changes whenever
    cpp_file_hash does, from one stat per header (no read, no hash; os.scandir, as pathlib's rglob weighs on
    a fresh process's first call)."""
    stamps: list[str] = []
    root = str(include_dir)
    folders = [root]
    while folders:
        with os.scandir(folders.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    folders.append(entry.path)
                elif os.path.splitext(entry.name)[1] in HEADER_SUFFIXES and entry.is_file():
                    status = entry.stat()
                    name = entry.path[len(root) + 1 :]  # scandir's paths extend the root as given
                    stamps.append(f"{name} {status.st_size} {status.st_mtime_ns}")
    return "\n".join(sorted(stamps))


def compile_cubin(source: str, include_dir: Path, arch: str, workdir: Path, include_dirs: Sequence[Path] = ()) -> bytes:
    """Compile CUDA source with nvcc for one arch (e.g. "sm_90") and return the cubin's bytes.

    The source is written to workdir/kernel.cu; on failure it stays there and CompileError names it.
    `include_dirs` are searched after `include_dir` (a user kernel's own folders).
    """
    _check_arch(arch, "compile_cubin")
    nvcc = find_nvcc()
    if nvcc is None:
        raise CompileError("compile_cubin: nvcc was not found (set FKLIR_NVCC, PATH or CUDA_HOME)")
    workdir.mkdir(parents=True, exist_ok=True)
    source_path = workdir / "kernel.cu"
    cubin_path = workdir / "kernel.cubin"
    source_path.write_text(source)
    cubin_path.unlink(missing_ok=True)
    command = [
        nvcc,
        *NVCC_FLAGS,
        f"-arch={arch}",
        "-I",
        str(include_dir),
        *_include_options(include_dirs),
        "-o",
        str(cubin_path),
        str(source_path),
    ]
    _run_compiler(command, source_path, cwd=workdir)
    if not cubin_path.is_file():
        raise CompileError(
            f"nvcc reported success but wrote no cubin at {cubin_path}; source kept at {source_path}",
            source_path=source_path,
        )
    return cubin_path.read_bytes()


def gxx_flags() -> tuple[str, ...]:
    """GXX_FLAGS, and NATIVE_FLAG unless FKLIR_CPU_NATIVE=0."""
    if os.environ.get(CPU_NATIVE_ENV, "1") == "0":
        return GXX_FLAGS
    return (*GXX_FLAGS, NATIVE_FLAG)


@functools.cache
def host_cpu() -> str:
    """What NATIVE_FLAG compiles for, as a cache key holds it: the first processor's model and features
    (Linux's /proc/cpuinfo, read up to the end of that processor's block), else the platform's names."""
    wanted = ("model name", "flags", "CPU implementer", "CPU part", "Features")
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            lines = [line.strip() for line in itertools.takewhile(str.strip, info) if line.startswith(wanted)]
    except OSError:
        lines = []
    if lines:
        return " | ".join(lines)
    import platform  # only here: its import costs a fresh process more than reading /proc does

    return f"{platform.machine()} {platform.processor()}"


def compile_shared_library(
    source: str,
    include_dir: Path,
    output: Path,
    workdir: Path,
    include_dirs: Sequence[Path] = (),
    link_flags: Sequence[str] = (),
) -> None:
    """Compile C++ source with g++ into the shared library `output`.

    The source is written to workdir/kernel.cpp; on failure it stays there and CompileError names it.
    `include_dirs` are searched after `include_dir`; `link_flags` (e.g. "-lhwy") follow the source, where
    the linker needs libraries to be.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    source_path = workdir / "kernel.cpp"
    source_path.write_text(source)
    includes = _include_options(include_dirs)
    command = [find_cxx(), *gxx_flags(), "-I", str(include_dir), *includes, "-o", str(output), str(source_path)]
    command += link_flags
    _run_compiler(command, source_path, cwd=workdir)
    if not output.is_file():
        raise CompileError(
            f"the C++ compiler reported success but wrote no library at {output}; source kept at {source_path}",
            source_path=source_path,
        )


def _include_options(include_dirs: Sequence[Path]) -> list[str]:
    return [option for folder in include_dirs for option in ("-I", str(folder))]


def _run_compiler(command: list[str], source_path: Path, cwd: Path) -> None:
    """Run one compiler command; any failure becomes a CompileError with stderr and the source path."""
    import subprocess

    shown = " ".join(command)
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, cwd=cwd, check=False
        )
    except FileNotFoundError as error:
        raise CompileError(
            f"compiler not found: {command[0]!r} ({error}); source kept at {source_path}",
            source_path=source_path,
        ) from error
    except subprocess.TimeoutExpired as error:
        raise CompileError(
            f"compiler timed out after {COMPILE_TIMEOUT_S:.0f} s: {shown}\nsource kept at {source_path}",
            source_path=source_path,
        ) from error
    if result.returncode == 0:
        return
    diagnostics = (result.stderr + result.stdout).strip()
    raise CompileError(
        f"compilation failed (exit code {result.returncode}): {shown}\nsource kept at {source_path}\n{diagnostics}",
        stderr=diagnostics,
        source_path=source_path,
    )


def _check_arch(arch: str, what: str) -> None:
    """Refuse anything but a real architecture such as "sm_90" (it also ends up on a command line)."""
    if not isinstance(arch, str) or not re.fullmatch(_ARCH_PATTERN, arch):
        raise ValueError(f"{what}: arch must look like 'sm_90', got {arch!r}")


# ----- NVRTC -----------------------------------------------------------------------------------------


def _nvrtc() -> ModuleType:
    """cuda.bindings.nvrtc (ImportError without cuda-python; the library itself loads on the first call)."""
    return importlib.import_module("cuda.bindings.nvrtc")


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """(major, minor) of the loadable libnvrtc; CompileError saying how to install it when there is none."""
    try:
        module = _nvrtc()
        result = module.nvrtcVersion()
    except Exception as error:  # ImportError, or cuda.pathfinder's DynamicLibNotFoundError (a RuntimeError)
        raise CompileError(f"NVRTC is not available ({str(error).strip()}); {NVRTC_INSTALL_HINT}") from error
    _check_nvrtc(module, result[0], "nvrtcVersion")
    return int(result[1]), int(result[2])


def nvrtc_available() -> bool:
    """True when libnvrtc can be loaded (from the nvidia-cuda-nvrtc wheel, conda or a CUDA toolkit)."""
    try:
        nvrtc_version()
    except CompileError:
        return False
    return True


def nvrtc_identity() -> str:
    """The NVRTC version as it goes into the cache key, e.g. "NVRTC 13.0"."""
    major, minor = nvrtc_version()
    return f"NVRTC {major}.{minor}"


def default_gpu_compiler() -> str:
    """The GPU compiler used when none was chosen with fkl.set_backend(): "nvcc" or "nvrtc".

    "nvcc" when an nvcc is found ($FKLIR_NVCC, PATH, $CUDA_HOME/bin) and answers --version: the toolkit that
    the test suite and benchmarks are measured with. Otherwise "nvrtc" when libnvrtc can be loaded, which
    needs no toolkit (pip install nvidia-cuda-nvrtc). Otherwise CompileError saying how to get either.
    """
    if nvcc_available():
        return "nvcc"
    if nvrtc_available():
        return "nvrtc"
    raise CompileError(
        "no CUDA compiler found: nvcc is not on PATH (nor $FKLIR_NVCC or $CUDA_HOME/bin) and libnvrtc cannot "
        f"be loaded; {NVRTC_INSTALL_HINT}"
    )


def _check_nvrtc(module: ModuleType, code: Any, call: str) -> None:
    if int(code) == 0:
        return
    try:
        _status, text = module.nvrtcGetErrorString(code)
        name = text.decode() if isinstance(text, bytes) else str(text)
    except Exception:  # the library is broken: the number is all there is
        name = f"nvrtcResult {int(code)}"
    raise CompileError(f"{call} failed: {name}")


def nvrtc_flags() -> tuple[str, ...]:
    """NVRTC_FLAGS plus the NVRTC_FAST_FLAGS that this libnvrtc knows: the options that go into the cache key.

    Per call compile_cubin_nvrtc adds -arch, -I and the process's --pch-dir (a temporary path that must not
    reach the key).
    """
    version = nvrtc_version()
    return (*NVRTC_FLAGS, *(flag for since, flag in NVRTC_FAST_FLAGS if version >= since))


def nvrtc_options(include_dir: Path, arch: str) -> list[str]:
    """Every option of one compile_cubin_nvrtc call."""
    options = [*nvrtc_flags(), f"-arch={arch}", f"-I{include_dir}"]
    if "--pch" not in options:
        return options
    folder = _pch_folder(include_dir)
    if folder is None:  # without --pch-dir NVRTC would write its 9 MB files into the current directory
        return [option for option in options if option != "--pch"]
    return [*options, f"--pch-dir={folder}"]


# (pid, folder): the temporary folder of this process's precompiled headers. A PCH file holds addresses
# in the PCH heap of the libnvrtc instance that wrote it, so another process cannot use it (NVRTC warns
# "incompatible precompiled header (PCH) heap allocation address" and parses the headers again): such
# files cannot live in the disk cache, and a forked child starts a folder of its own.
_pch_root: tuple[int, Path] | None = None


def _pch_folder(include_dir: Path) -> Path | None:
    """The --pch-dir for headers under include_dir as they are now; None when no folder can be made.

    One subfolder per include path and header contents: NVRTC 13.0 reuses a PCH file without checking
    whether the headers changed since (a header edited in a running process would be compiled stale).
    """
    root = _process_pch_root()
    if root is None:
        return None
    import hashlib

    digest = hashlib.sha256(f"{include_dir.resolve()}\0{cpp_file_hash(include_dir)}".encode()).hexdigest()
    folder = root / digest[:16]
    try:
        folder.mkdir(exist_ok=True)
    except OSError:
        return None
    return folder


def _process_pch_root() -> Path | None:
    import tempfile

    global _pch_root
    if _pch_root is not None and _pch_root[0] == os.getpid():
        return _pch_root[1]
    try:
        root = Path(tempfile.mkdtemp(prefix="fklir-nvrtc-pch-"))
    except OSError:
        return None
    _pch_root = (os.getpid(), root)
    atexit.register(_remove_pch_root, os.getpid(), root)
    return root


def _remove_pch_root(owner: int, root: Path) -> None:
    if os.getpid() != owner:  # a forked child exiting: the folder is its parent's
        return
    shutil.rmtree(root, ignore_errors=True)


def compile_cubin_nvrtc(source: str, include_dir: Path, arch: str, workdir: Path | None = None) -> bytes:
    """Compile CUDA source with NVRTC for one arch (e.g. "sm_90") and return the cubin's bytes.

    Options: nvrtc_options() (NVRTC_FLAGS, the fast flags this NVRTC knows, -arch=<arch>, -I<include_dir>
    for our headers only, the process's PCH folder). Kernels must be extern "C" so that their names are
    known without name expressions. Nothing is written on success but precompiled headers in a temporary
    folder that is removed at exit; on failure the source is kept as <workdir>/kernel.cu (workdir
    defaults to a new folder under the cache's build/) and CompileError carries the program log and that
    path.
    """
    return compile_cubin_nvrtc_named(source, include_dir, arch, (), workdir)[0]


def compile_cubin_nvrtc_named(
    source: str,
    include_dir: Path,
    arch: str,
    name_expressions: Sequence[str],
    workdir: Path | None = None,
    include_dirs: Sequence[Path] = (),
) -> tuple[bytes, dict[str, str]]:
    """compile_cubin_nvrtc, and NVRTC's name expressions: each one (e.g. "scale_rows<float, 256>") is
    instantiated and comes back with its lowered (mangled) name, under which the cubin exports it.
    `include_dirs` are searched after `include_dir` (a user kernel's own folders)."""
    _check_arch(arch, "compile_cubin_nvrtc")
    nvrtc_version()  # CompileError with an install hint when libnvrtc is missing
    module = _nvrtc()
    options = [*nvrtc_options(include_dir, arch), *(f"-I{folder}" for folder in include_dirs)]
    status, program = module.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])
    _check_nvrtc(module, status, "nvrtcCreateProgram")
    try:
        for expression in name_expressions:
            (status,) = module.nvrtcAddNameExpression(program, expression.encode())
            _check_nvrtc(module, status, f"nvrtcAddNameExpression({expression!r})")
        (status,) = module.nvrtcCompileProgram(program, len(options), [option.encode() for option in options])
        if int(status) != 0:
            log = _nvrtc_log(module, program)
            source_path = _keep_source(source, workdir)
            _status, name = module.nvrtcGetErrorString(status)
            shown = name.decode() if isinstance(name, bytes) else str(name)
            command = " ".join(options)
            raise CompileError(
                f"NVRTC compilation failed ({shown}): {command}\nsource kept at {source_path}\n{log}",
                stderr=log,
                source_path=source_path,
            )
        status, size = module.nvrtcGetCUBINSize(program)
        _check_nvrtc(module, status, "nvrtcGetCUBINSize")
        if int(size) == 0:
            raise CompileError(f"NVRTC produced no cubin for arch {arch!r}")
        cubin = b"\0" * int(size)
        (status,) = module.nvrtcGetCUBIN(program, cubin)  # the binding fills the buffer in place
        _check_nvrtc(module, status, "nvrtcGetCUBIN")
        return cubin, {expression: _lowered_name(module, program, expression) for expression in name_expressions}
    finally:
        module.nvrtcDestroyProgram(program)


def _lowered_name(module: ModuleType, program: Any, expression: str) -> str:
    status, lowered = module.nvrtcGetLoweredName(program, expression.encode())
    _check_nvrtc(module, status, f"nvrtcGetLoweredName({expression!r})")
    return lowered.decode() if isinstance(lowered, bytes) else str(lowered)


def _nvrtc_log(module: ModuleType, program: Any) -> str:
    status, size = module.nvrtcGetProgramLogSize(program)
    if int(status) != 0 or int(size) <= 1:
        return ""
    log = b"\0" * int(size)
    module.nvrtcGetProgramLog(program, log)
    return log.rstrip(b"\0").decode(errors="replace").strip()


def _keep_source(source: str, workdir: Path | None) -> Path:
    """Write a failed compile's source where the user can find it: <workdir>/kernel.cu."""
    if workdir is None:
        import tempfile

        from fklir.backend.cache import BUILD_FOLDER, cache_dir, own_folder

        workdir = Path(tempfile.mkdtemp(prefix="nvrtc-", dir=own_folder(cache_dir() / BUILD_FOLDER)))
    workdir.mkdir(parents=True, exist_ok=True)
    source_path = workdir / "kernel.cu"
    source_path.write_text(source)
    return source_path
