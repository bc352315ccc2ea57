"""The compiler drivers: g++ → shared library (called through ctypes), nvcc → cubin, and their errors."""

from __future__ import annotations

import ctypes
import math
import shutil
from pathlib import Path

import pytest

from fklir.backend import compilers
from fklir.backend.compilers import (
    GXX_FLAGS,
    NVCC_FLAGS,
    CompileError,
    compile_cubin,
    compile_shared_library,
    compiler_identity,
    cpp_file_hash,
    cpp_file_stamp,
    nvcc_available,
)

needs_gxx = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc is not installed")

EM_CUDA = 190  # ELF e_machine of NVIDIA CUDA objects

HEADER = """
#pragma once
namespace probe {
inline double weight(int i) { return 0.5 * i + 0.25; }
}
"""

LIBRARY_SOURCE = """
#include <cmath>
#include "probe/weights.h"

extern "C" double weighted_sum(int n) {
    double total = 0.0;
    #pragma omp parallel for reduction(+ : total)
    for (int i = 0; i < n; ++i) total += probe::weight(i);
    return total;
}

// With -ffast-math the compiler may assume no NaN exists and fold this to 0.
extern "C" int is_nan(double x) { return std::isnan(x) ? 1 : 0; }

// Round half to even, as SaturateCast needs (fast-math may replace it).
extern "C" double round_even(double x) { return std::nearbyint(x); }
"""


@pytest.fixture
def include_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "include"
    (folder / "probe").mkdir(parents=True)
    (folder / "probe" / "weights.h").write_text(HEADER)
    return folder


# ----- flags and identity ----------------------------------------------------------------------------


def test_flags_keep_exact_float_semantics_and_portable_binaries() -> None:
    assert not any("fast-math" in flag or "fast_math" in flag for flag in NVCC_FLAGS + GXX_FLAGS)
    assert "--fmad=false" in NVCC_FLAGS
    assert "-ffp-contract=off" in GXX_FLAGS  # no FMA contraction on the CPU either (aarch64 has FMA)
    assert "-fno-tree-pre" in GXX_FLAGS  # else a flat Threshold chain's group is not vectorised (RESULTS.md)
    assert "-cubin" in NVCC_FLAGS
    assert not any(flag.startswith("-march") for flag in GXX_FLAGS)
    assert {"-shared", "-fPIC", "-fopenmp"} <= set(GXX_FLAGS)


@needs_gxx
def test_gxx_identity_names_the_version_and_is_cached() -> None:
    identity = compiler_identity("g++")
    assert "g++" in identity or "GCC" in identity or "clang" in identity
    assert any(char.isdigit() for char in identity)
    assert "Copyright" not in identity
    assert compiler_identity("g++") is identity


@needs_nvcc
def test_nvcc_identity_holds_the_release_line() -> None:
    nvcc = compilers.find_nvcc()
    assert nvcc is not None
    identity = compiler_identity(nvcc)
    assert "release" in identity
    assert "Copyright" not in identity


def test_identity_of_a_missing_compiler_raises_compile_error() -> None:
    with pytest.raises(CompileError, match="no-such-compiler-fklir"):
        compiler_identity("no-such-compiler-fklir")


def test_nvcc_is_unavailable_when_it_points_nowhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FKLIR_NVCC", "/nonexistent/nvcc-fklir")
    assert not nvcc_available()


# ----- header hash -----------------------------------------------------------------------------------


def test_header_hash_tracks_contents_names_and_new_headers(include_dir: Path) -> None:
    base = cpp_file_hash(include_dir)
    assert len(base) == 64
    assert cpp_file_hash(include_dir) == base

    (include_dir / "README.txt").write_text("not a header")
    assert cpp_file_hash(include_dir) == base  # only headers count

    header = include_dir / "probe" / "weights.h"
    header.write_text(HEADER.replace("0.25", "0.75"))
    changed_content = cpp_file_hash(include_dir)
    assert changed_content != base

    header.write_text(HEADER)
    assert cpp_file_hash(include_dir) == base

    header.rename(include_dir / "probe" / "weights2.h")
    assert cpp_file_hash(include_dir) != base

    header2 = include_dir / "probe" / "weights2.h"
    header2.rename(header)
    (include_dir / "extra.cuh").write_text("// new")
    assert cpp_file_hash(include_dir) not in {base, changed_content}


def test_header_hash_depends_on_relative_paths_only(tmp_path: Path, include_dir: Path) -> None:
    copy = tmp_path / "elsewhere" / "inc"
    shutil.copytree(include_dir, copy)
    assert cpp_file_hash(copy) == cpp_file_hash(include_dir)


def test_header_stamp_names_headers_from_the_root_with_size_and_time(tmp_path: Path, include_dir: Path) -> None:
    (include_dir / "README.txt").write_text("not a header")
    header = include_dir / "probe" / "weights.h"
    status = header.stat()
    assert cpp_file_stamp(include_dir) == f"probe/weights.h {status.st_size} {status.st_mtime_ns}"
    copy = tmp_path / "elsewhere" / "inc"
    shutil.copytree(include_dir, copy)  # copy2: the same sizes and modification times
    assert cpp_file_stamp(copy) == cpp_file_stamp(include_dir)
    header.write_text(HEADER.replace("0.25", "0.755"))
    assert cpp_file_stamp(include_dir) != cpp_file_stamp(copy)


def test_project_headers_hash() -> None:
    project_include = Path(compilers.__file__).parent / "include"
    if not project_include.is_dir():
        pytest.skip("the op-library headers are not there yet")
    assert len(cpp_file_hash(project_include)) == 64


# ----- g++ -------------------------------------------------------------------------------------------


@needs_gxx
def test_shared_library_is_built_and_callable(tmp_path: Path, include_dir: Path) -> None:
    output = tmp_path / "out" / "libprobe.so"
    compile_shared_library(LIBRARY_SOURCE, include_dir, output, tmp_path / "work")
    assert (tmp_path / "work" / "kernel.cpp").read_text() == LIBRARY_SOURCE

    library = ctypes.CDLL(str(output))
    library.weighted_sum.restype = ctypes.c_double
    library.weighted_sum.argtypes = [ctypes.c_int]
    n = 100_003
    expected = math.fsum(0.5 * i + 0.25 for i in range(n))
    assert library.weighted_sum(n) == pytest.approx(expected, rel=1e-12)

    library.is_nan.restype = ctypes.c_int
    library.is_nan.argtypes = [ctypes.c_double]
    assert library.is_nan(float("nan")) == 1
    assert library.is_nan(1.5) == 0

    library.round_even.restype = ctypes.c_double
    library.round_even.argtypes = [ctypes.c_double]
    ties = [0.5, 1.5, 2.5, -2.5, -0.5, 3.5]
    assert [library.round_even(value) for value in ties] == [0.0, 2.0, 2.0, -2.0, -0.0, 4.0]


@needs_gxx
def test_gxx_syntax_error_names_the_kept_source(tmp_path: Path, include_dir: Path) -> None:
    broken = 'extern "C" int f() { return 1 +; }\n'
    workdir = tmp_path / "failed-build"
    with pytest.raises(CompileError) as caught:
        compile_shared_library(broken, include_dir, tmp_path / "lib.so", workdir)
    kept = workdir / "kernel.cpp"
    assert str(kept) in str(caught.value)
    assert "error" in str(caught.value)
    assert caught.value.source_path == kept
    assert "error" in caught.value.stderr
    assert kept.read_text() == broken
    assert not (tmp_path / "lib.so").exists()


@needs_gxx
def test_gxx_missing_header_is_a_compile_error(tmp_path: Path, include_dir: Path) -> None:
    source = '#include "probe/absent.h"\n'
    with pytest.raises(CompileError, match=r"absent\.h"):
        compile_shared_library(source, include_dir, tmp_path / "lib.so", tmp_path / "w")


def test_missing_host_compiler_is_a_compile_error(
    tmp_path: Path, include_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FKLIR_CXX", "/nonexistent/g++-fklir")
    with pytest.raises(CompileError, match="compiler not found") as caught:
        compile_shared_library(LIBRARY_SOURCE, include_dir, tmp_path / "lib.so", tmp_path / "w")
    assert str(tmp_path / "w" / "kernel.cpp") in str(caught.value)


# ----- nvcc ------------------------------------------------------------------------------------------

CUDA_SOURCE = """
#include "probe/weights.h"
struct ProbeParams { float* out; int n; float scale; };

extern "C" __global__ void fklir_probe_kernel(ProbeParams p) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.out[i] = p.scale * i;
}
"""


@needs_nvcc
def test_cubin_for_sm_90_is_a_cuda_elf_holding_the_kernel(tmp_path: Path, include_dir: Path) -> None:
    cubin = compile_cubin(CUDA_SOURCE, include_dir, "sm_90", tmp_path / "work")
    assert cubin[:4] == b"\x7fELF"
    assert int.from_bytes(cubin[18:20], "little") == EM_CUDA
    # CUDA ELF e_flags (64-bit header, offset 48) carry the SM version in bits 8..15 (0x5a = 90).
    assert (int.from_bytes(cubin[48:52], "little") >> 8) & 0xFF == 90
    assert b"fklir_probe_kernel" in cubin
    assert (tmp_path / "work" / "kernel.cu").read_text() == CUDA_SOURCE


@needs_nvcc
def test_nvcc_syntax_error_names_the_kept_source(tmp_path: Path, include_dir: Path) -> None:
    broken = 'extern "C" __global__ void k(int* p) { p[0] = ; }\n'
    workdir = tmp_path / "failed"
    with pytest.raises(CompileError) as caught:
        compile_cubin(broken, include_dir, "sm_90", workdir)
    kept = workdir / "kernel.cu"
    assert str(kept) in str(caught.value)
    assert "error" in caught.value.stderr
    assert kept.read_text() == broken


@pytest.mark.parametrize("arch", ["90", "compute_90", "sm_", "sm_90; rm -rf /"])
def test_malformed_arch_is_refused(tmp_path: Path, include_dir: Path, arch: str) -> None:
    with pytest.raises(ValueError, match="arch"):
        compile_cubin(CUDA_SOURCE, include_dir, arch, tmp_path)
