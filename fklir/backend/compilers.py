"""Run the external C++ compilers: nvcc (CUDA source → cubin) and g++ (C++ source → shared library).

This module knows nothing about the IR: it takes finished source text and produces binaries. A failed
compile keeps its source file where it was written and names it in the error, so that the user can read
(and recompile) exactly what the compiler saw.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

# No --use_fast_math: it flushes denormals, approximates division and breaks NaN handling and rounding
# (SaturateCast must round half to even and map NaN to 0 exactly as on the CPU target).
# --fmad=false: nvcc would otherwise contract a*b+c into one FMA (one rounding instead of two), so float
# results would differ in the last bit from the CPU target and from numpy; the chains are memory-bound,
# so the separate multiply costs nothing measurable.
NVCC_FLAGS: tuple[str, ...] = ("-std=c++17", "-O3", "--fmad=false", "-cubin")

# No -march=native: a cached .so must stay valid when the cache folder is shared with another CPU.
GXX_FLAGS: tuple[str, ...] = ("-std=c++17", "-O3", "-fopenmp", "-fPIC", "-shared")

HEADER_SUFFIXES: tuple[str, ...] = (".h", ".hpp", ".cuh", ".inl")

# A generous wall-clock limit: a hung compiler must not hang the user's program forever.
COMPILE_TIMEOUT_S = 600.0

_VERSION_PATTERN = re.compile(r"\d+\.\d+")


class CompileError(RuntimeError):
    """A compiler failed (or could not be run). The message holds its stderr and the kept source path."""

    def __init__(self, message: str, *, stderr: str = "", source_path: Path | None = None) -> None:
        super().__init__(message)
        self.stderr = stderr
        self.source_path = source_path


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
    try:
        result = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise CompileError(f"cannot run the compiler {compiler!r}: {error}") from error
    if result.returncode != 0:
        raise CompileError(
            f"{compiler!r} --version failed with exit code {result.returncode}:\n{result.stderr}",
            stderr=result.stderr,
        )
    lines = [line.strip() for line in result.stdout.splitlines() if line.strip()]
    versioned = [line for line in lines if _VERSION_PATTERN.search(line) and "Copyright" not in line]
    chosen = versioned or lines[:1]
    if not chosen:
        raise CompileError(f"{compiler!r} --version printed nothing")
    return "\n".join(chosen)


def cpp_file_hash(include_dir: Path) -> str:
    """sha256 over every header under include_dir: sorted relative names and contents, length-prefixed."""
    digest = hashlib.sha256()
    headers = sorted(
        path for path in include_dir.rglob("*") if path.is_file() and path.suffix in HEADER_SUFFIXES
    )
    for header in headers:
        name = header.relative_to(include_dir).as_posix().encode()
        content = header.read_bytes()
        for part in (name, content):
            digest.update(len(part).to_bytes(8, "little"))
            digest.update(part)
    return digest.hexdigest()


def compile_cubin(source: str, include_dir: Path, arch: str, workdir: Path) -> bytes:
    """Compile CUDA source with nvcc for one arch (e.g. "sm_90") and return the cubin's bytes.

    The source is written to workdir/kernel.cu; on failure it stays there and CompileError names it.
    """
    if not re.fullmatch(r"sm_\d+[a-z]?", arch):
        raise ValueError(f"compile_cubin: arch must look like 'sm_90', got {arch!r}")
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


def compile_shared_library(source: str, include_dir: Path, output: Path, workdir: Path) -> None:
    """Compile C++ source with g++ into the shared library `output`.

    The source is written to workdir/kernel.cpp; on failure it stays there and CompileError names it.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    output.parent.mkdir(parents=True, exist_ok=True)
    source_path = workdir / "kernel.cpp"
    source_path.write_text(source)
    command = [find_cxx(), *GXX_FLAGS, "-I", str(include_dir), "-o", str(output), str(source_path)]
    _run_compiler(command, source_path, cwd=workdir)
    if not output.is_file():
        raise CompileError(
            f"the C++ compiler reported success but wrote no library at {output}; "
            f"source kept at {source_path}",
            source_path=source_path,
        )


def _run_compiler(command: list[str], source_path: Path, cwd: Path) -> None:
    """Run one compiler command; any failure becomes a CompileError with stderr and the source path."""
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
        f"compilation failed (exit code {result.returncode}): {shown}\n"
        f"source kept at {source_path}\n{diagnostics}",
        stderr=diagnostics,
        source_path=source_path,
    )
