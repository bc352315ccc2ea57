"""NVRTC: cubins from the op headers without a CUDA toolkit, its errors, its identity and the compiler choice.

The compile tests skip when libnvrtc cannot be loaded (pip install nvidia-cuda-nvrtc provides it); the launch
test also needs a GPU and checks float16/bfloat16 SaturateCast results bit for bit against numpy.
"""

from __future__ import annotations

import ctypes
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fklir.backend import compilers
from fklir.backend.build import INCLUDE_DIR
from fklir.backend.compilers import (
    NVCC_FLAGS,
    NVRTC_FAST_FLAGS,
    NVRTC_FLAGS,
    CompileError,
    compile_cubin_nvrtc,
    default_gpu_compiler,
    nvrtc_available,
    nvrtc_flags,
    nvrtc_identity,
    nvrtc_options,
    nvrtc_version,
)

needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="libnvrtc is not loadable here")

EM_CUDA = 190  # ELF e_machine of NVIDIA CUDA objects

# float16 and bfloat16 in and out, through the library's storage types and SaturateCast, with f16/bf16
# arithmetic (Mul computes in f32 and rounds back to the storage type).
HALF_SOURCE = r"""
#include "fkl/fkl.h"

struct HalfParams {
    const fkl::f16* src_f16;
    const fkl::bf16* src_bf16;
    const fkl::f32* src_f32;
    fkl::u8* u8_of_f16_product;   // SaturateCast<u8>(h * scale16)
    fkl::u8* u8_of_bf16;          // SaturateCast<u8>(b)
    fkl::f16* f16_of_bf16;        // SaturateCast<f16>(b)
    fkl::bf16* bf16_of_f32;       // SaturateCast<bf16>(x)
    fkl::bf16* bf16_product;      // b * scale_bf16
    fkl::i32 n;
    fkl::f32 scale;
};

extern "C" __global__ void fklir_half_probe(HalfParams p) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= p.n) return;
    const fkl::f16 h = p.src_f16[i];
    const fkl::bf16 b = p.src_bf16[i];
    const fkl::f16 scale16 = fkl::f16_from_f32(p.scale);
    const fkl::bf16 scale_bf16 = fkl::bf16_from_f32(p.scale);
    p.u8_of_f16_product[i] = fkl::SaturateCast<fkl::u8>::exec(fkl::Mul::exec(h, scale16));
    p.u8_of_bf16[i] = fkl::SaturateCast<fkl::u8>::exec(b);
    p.f16_of_bf16[i] = fkl::SaturateCast<fkl::f16>::exec(b);
    p.bf16_of_f32[i] = fkl::SaturateCast<fkl::bf16>::exec(p.src_f32[i]);
    p.bf16_product[i] = fkl::Mul::exec(b, scale_bf16);
}
"""


def cubin_sm(cubin: bytes) -> int:
    """The SM version in a CUDA ELF's e_flags (64-bit header, offset 48, bits 8..15)."""
    return (int.from_bytes(cubin[48:52], "little") >> 8) & 0xFF


# ----- flags, identity, availability -----------------------------------------------------------------


def test_flags_match_the_nvcc_float_semantics() -> None:
    assert "--std=c++17" in NVRTC_FLAGS
    assert "-default-device" in NVRTC_FLAGS
    assert "--fmad=false" in NVRTC_FLAGS and "--fmad=false" in NVCC_FLAGS
    assert not any("fast" in flag for flag in NVRTC_FLAGS)
    assert not any(flag.startswith(("-arch", "-I", "--include-path")) for flag in NVRTC_FLAGS)  # per call


@pytest.fixture
def fresh_nvrtc_state() -> Any:
    compilers.nvrtc_version.cache_clear()
    yield
    compilers.nvrtc_version.cache_clear()


def _missing_library() -> Any:
    raise RuntimeError('Failure finding "libnvrtc.so.13": No such file')


def test_missing_library_means_unavailable_with_an_install_hint(
    monkeypatch: pytest.MonkeyPatch, fresh_nvrtc_state: None, tmp_path: Path
) -> None:
    class NoLibrary:
        nvrtcVersion = staticmethod(_missing_library)

    monkeypatch.setattr(compilers, "_nvrtc", lambda: NoLibrary)
    assert nvrtc_available() is False
    with pytest.raises(CompileError, match=r"NVRTC is not available.*libnvrtc\.so\.13.*pip install nvidia-cuda-nvrtc"):
        nvrtc_identity()
    with pytest.raises(CompileError, match="pip install nvidia-cuda-nvrtc"):
        compile_cubin_nvrtc(HALF_SOURCE, INCLUDE_DIR, "sm_90", tmp_path)


def test_missing_bindings_mean_unavailable(monkeypatch: pytest.MonkeyPatch, fresh_nvrtc_state: None) -> None:
    def no_module() -> Any:
        raise ImportError("No module named 'cuda.bindings.nvrtc'")

    monkeypatch.setattr(compilers, "_nvrtc", no_module)
    assert nvrtc_available() is False


@pytest.mark.parametrize(
    ("has_nvcc", "has_nvrtc", "expected"),
    [(True, True, "nvcc"), (True, False, "nvcc"), (False, True, "nvrtc")],
)
def test_default_gpu_compiler_prefers_nvcc_then_nvrtc(
    monkeypatch: pytest.MonkeyPatch, has_nvcc: bool, has_nvrtc: bool, expected: str
) -> None:
    monkeypatch.setattr(compilers, "nvcc_available", lambda: has_nvcc)
    monkeypatch.setattr(compilers, "nvrtc_available", lambda: has_nvrtc)
    assert default_gpu_compiler() == expected


def test_default_gpu_compiler_without_any_compiler_says_how_to_get_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compilers, "nvcc_available", lambda: False)
    monkeypatch.setattr(compilers, "nvrtc_available", lambda: False)
    with pytest.raises(CompileError, match=r"no CUDA compiler found: nvcc is not on PATH.*nvidia-cuda-nvrtc"):
        default_gpu_compiler()


def test_default_gpu_compiler_follows_a_broken_fklir_nvcc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FKLIR_NVCC", "/nonexistent/nvcc-fklir")
    expected = "nvrtc" if nvrtc_available() else None
    if expected is None:
        with pytest.raises(CompileError, match="no CUDA compiler found"):
            default_gpu_compiler()
    else:
        assert default_gpu_compiler() == expected


@pytest.mark.parametrize("arch", ["90", "compute_90", "sm_", "sm_90 -I/etc"])
def test_malformed_arch_is_refused_before_loading_anything(tmp_path: Path, arch: str) -> None:
    with pytest.raises(ValueError, match="compile_cubin_nvrtc: arch must look like 'sm_90'"):
        compile_cubin_nvrtc(HALF_SOURCE, INCLUDE_DIR, arch, tmp_path)


@pytest.mark.parametrize(
    ("version", "extra"),
    [
        ((12, 3), ()),
        ((12, 4), ("--minimal",)),
        ((12, 8), ("--minimal", "--pch")),
        ((13, 0), ("--minimal", "--pch", "--no-cache")),
    ],
)
def test_fast_flags_are_those_the_nvrtc_version_knows(
    monkeypatch: pytest.MonkeyPatch, version: tuple[int, int], extra: tuple[str, ...]
) -> None:
    monkeypatch.setattr(compilers, "nvrtc_version", lambda: version)  # an older NVRTC refuses unknown options
    assert nvrtc_flags() == (*NVRTC_FLAGS, *extra)
    assert set(extra) <= {flag for _since, flag in NVRTC_FAST_FLAGS}
    assert not any("fast" in flag or flag.startswith("-O") for flag in nvrtc_flags())  # no code changes


def test_pch_folder_is_per_call_and_stays_out_of_the_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(compilers, "nvrtc_version", lambda: (13, 0))
    monkeypatch.setattr(compilers, "_pch_folder", lambda include_dir: tmp_path / "pch")
    options = nvrtc_options(INCLUDE_DIR, "sm_90")
    assert options == [*nvrtc_flags(), "-arch=sm_90", f"-I{INCLUDE_DIR}", f"--pch-dir={tmp_path / 'pch'}"]
    assert not any(flag.startswith("--pch-dir") for flag in nvrtc_flags())  # a temporary path: not in the key
    # without a folder NVRTC would put its PCH files in the current directory: no --pch then
    monkeypatch.setattr(compilers, "_pch_folder", lambda include_dir: None)
    assert nvrtc_options(INCLUDE_DIR, "sm_90") == [
        *(flag for flag in nvrtc_flags() if flag != "--pch"),
        "-arch=sm_90",
        f"-I{INCLUDE_DIR}",
    ]


def test_kernel_key_follows_the_fast_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    from fklir.backend import build

    monkeypatch.setattr(build, "_gpu_backend", "nvrtc")
    monkeypatch.setattr(compilers, "nvrtc_identity", lambda: "NVRTC 13.0")  # the same identity for both

    def key_with(version: tuple[int, int]) -> str:
        monkeypatch.setattr(compilers, "nvrtc_version", lambda: version)
        build._compiler_and_flags.cache_clear()  # pyright: ignore[reportPrivateUsage]
        return build.kernel_key("structure", "gpu", "sm_90")

    try:
        assert key_with((12, 3)) != key_with((13, 0)), "other options must give another key"
        assert key_with((13, 0)) == key_with((13, 0))
    finally:
        build._compiler_and_flags.cache_clear()  # pyright: ignore[reportPrivateUsage]


# ----- compiling -------------------------------------------------------------------------------------


@needs_nvrtc
def test_identity_names_the_version() -> None:
    identity = nvrtc_identity()
    assert re.fullmatch(r"NVRTC \d+\.\d+", identity), identity
    assert int(identity.split()[1].split(".")[0]) >= 12


@needs_nvrtc
@pytest.mark.parametrize("arch", ["sm_90", "sm_80"])
def test_half_precision_kernel_compiles_to_a_cubin(tmp_path: Path, arch: str) -> None:
    cubin = compile_cubin_nvrtc(HALF_SOURCE, INCLUDE_DIR, arch, tmp_path / "work")
    assert cubin[:4] == b"\x7fELF"
    assert int.from_bytes(cubin[18:20], "little") == EM_CUDA
    assert cubin_sm(cubin) == int(arch[3:])
    assert b"fklir_half_probe" in cubin
    assert not (tmp_path / "work").exists()  # nothing is written on success


@needs_nvrtc
def test_a_generated_pipeline_kernel_compiles() -> None:
    import fklir as fkl

    pipe = fkl.compose(
        fkl.TensorRead(),
        fkl.Cast("float32"),
        fkl.Mul(0.5),
        fkl.Sub(3.0),
        fkl.SaturateCast("bfloat16"),
        fkl.TensorWrite(),
        target="gpu",
    )
    source = pipe.source_for("float16", (33, 17, 3))
    cubin = compile_cubin_nvrtc(source, INCLUDE_DIR, "sm_90")
    assert b"fkl_kernel" in cubin
    assert cubin_sm(cubin) == 90


@needs_nvrtc
def test_syntax_error_keeps_the_source_and_carries_the_log(tmp_path: Path) -> None:
    broken = '#include "fkl/fkl.h"\nextern "C" __global__ void k(int* p) { p[0] = fkl::no_such_thing; }\n'
    workdir = tmp_path / "failed"
    with pytest.raises(CompileError) as caught:
        compile_cubin_nvrtc(broken, INCLUDE_DIR, "sm_90", workdir)
    kept = workdir / "kernel.cu"
    assert kept.read_text() == broken
    assert caught.value.source_path == kept
    assert str(kept) in str(caught.value)
    assert "no_such_thing" in caught.value.stderr
    assert "NVRTC_ERROR_COMPILATION" in str(caught.value)


@needs_nvrtc
def test_failed_compile_without_a_workdir_keeps_the_source_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FKLIR_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(CompileError) as caught:
        compile_cubin_nvrtc('extern "C" __global__ void k() { undeclared(); }\n', INCLUDE_DIR, "sm_90")
    kept = caught.value.source_path
    assert kept is not None and kept.is_file()
    assert kept.parent.parent == tmp_path / "cache" / "build"
    assert "undeclared" in kept.read_text()


@needs_nvrtc
def test_no_system_header_is_reachable(tmp_path: Path) -> None:
    # Our headers include nothing under NVRTC; a kernel that includes a system header must fail cleanly.
    with pytest.raises(CompileError, match="cstdio"):
        compile_cubin_nvrtc('#include <cstdio>\nextern "C" __global__ void k() {}\n', INCLUDE_DIR, "sm_90", tmp_path)


def _pipeline_source(scale: float, dtype: str = "float32") -> str:
    import fklir as fkl

    ops = [fkl.Mul(scale)] * (1 + int(scale)) + [fkl.Add(1.0)]  # scale picks the structure
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu").source_for(dtype, (9, 9, 3))


@pytest.fixture
def own_pch_root(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A PCH root of this test's own, under tmp_path (the process's root stays as it was)."""
    import tempfile

    monkeypatch.setattr(compilers, "_pch_root", None)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _pch_files(root: Path) -> list[Path]:
    return sorted(root.glob("fklir-nvrtc-pch-*/*/*.pch"))


@needs_nvrtc
def test_fast_flags_leave_the_cubin_unchanged(monkeypatch: pytest.MonkeyPatch, own_pch_root: Path) -> None:
    sources = [_pipeline_source(2.0), _pipeline_source(1.0, "uint8")]
    fast = [compile_cubin_nvrtc(source, INCLUDE_DIR, "sm_90") for source in sources]  # the 2nd one reads a PCH

    def plain_options(include_dir: Path, arch: str) -> list[str]:
        return [*NVRTC_FLAGS, f"-arch={arch}", f"-I{include_dir}"]

    monkeypatch.setattr(compilers, "nvrtc_options", plain_options)
    plain = [compile_cubin_nvrtc(source, INCLUDE_DIR, "sm_90") for source in sources]
    assert fast == plain


@needs_nvrtc
@pytest.mark.skipif(nvrtc_available() and nvrtc_version() < (12, 8), reason="NVRTC < 12.8 has no PCH")
def test_precompiled_header_is_made_once_per_process_and_reused(own_pch_root: Path) -> None:
    compile_cubin_nvrtc(_pipeline_source(1.0), INCLUDE_DIR, "sm_90")
    (made,) = _pch_files(own_pch_root)  # the first compile wrote it
    written = made.stat().st_mtime_ns
    for scale in (2.0, 3.0):
        assert b"fkl_kernel" in compile_cubin_nvrtc(_pipeline_source(scale), INCLUDE_DIR, "sm_90")
    assert _pch_files(own_pch_root) == [made] and made.stat().st_mtime_ns == written  # read, not rewritten


@needs_nvrtc
@pytest.mark.skipif(nvrtc_available() and nvrtc_version() < (12, 8), reason="NVRTC < 12.8 has no PCH")
def test_an_edited_header_is_not_read_from_a_stale_pch(own_pch_root: Path, tmp_path: Path) -> None:
    # NVRTC itself would reuse the PCH of the old header (measured on 13.0); each header state has its folder
    include_dir = tmp_path / "include"
    include_dir.mkdir()
    source = '#include "value.h"\nextern "C" __global__ void k(unsigned* p) { p[0] = VALUE; }\n'
    cubins = []
    for value in (0x1234567, 0x7654321):
        (include_dir / "value.h").write_text(f"#pragma once\n#define VALUE {value}u\n")
        cubins.append(compile_cubin_nvrtc(source + f"// {value}\n", include_dir, "sm_90"))
    assert (0x1234567).to_bytes(4, "little") in cubins[0]
    assert (0x7654321).to_bytes(4, "little") in cubins[1] and (0x1234567).to_bytes(4, "little") not in cubins[1]
    assert len(_pch_files(own_pch_root)) == 2


# ----- running (needs a GPU) -------------------------------------------------------------------------


def _gpu_available() -> bool:
    from fklir.runtime import cuda_driver

    return cuda_driver.gpu_available()


class HalfParams(ctypes.Structure):
    _fields_ = (
        ("src_f16", ctypes.c_uint64),
        ("src_bf16", ctypes.c_uint64),
        ("src_f32", ctypes.c_uint64),
        ("u8_of_f16_product", ctypes.c_uint64),
        ("u8_of_bf16", ctypes.c_uint64),
        ("f16_of_bf16", ctypes.c_uint64),
        ("bf16_of_f32", ctypes.c_uint64),
        ("bf16_product", ctypes.c_uint64),
        ("n", ctypes.c_int32),
        ("scale", ctypes.c_float),
    )


def bf16_bits_to_f32(bits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Round to nearest even on the 16 dropped bits; NaN becomes a quiet NaN (checked with isnan only)."""
    bits = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return np.where(np.isnan(x), 0x7FC0, rounded).astype(np.uint16)


def saturate_u8(v: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """SPEC: NaN → 0, clamp to [0, 255], round half to even."""
    v = v.astype(np.float64)
    return np.where(np.isnan(v), 0, np.clip(np.rint(v), 0, 255)).astype(np.uint8)


def half_inputs(n: int, rng: np.random.Generator) -> tuple[np.ndarray[Any, Any], ...]:
    ties = [0.5, 1.5, 2.5, -2.5, 254.5, 255.5, 253.5, -0.5, 300.0, -300.0, np.nan, np.inf, -np.inf, 65504.0]
    f16 = (rng.standard_normal(n) * 150).astype(np.float16)
    f16[: len(ties)] = np.array(ties, dtype=np.float64).astype(np.float16)
    f32 = (rng.standard_normal(n) * 200).astype(np.float32)
    f32[: len(ties) + 2] = np.array([*ties, 3.39e38, -3.39e38], dtype=np.float32)  # past bf16's max
    f32[len(ties) + 2 : len(ties) + 5] = [1.00390625, 1.01171875, 70000.0]  # bf16 ties: even below, odd up
    bf16 = f32_to_bf16_bits(f32 * np.float32(0.75))
    bf16[: len(ties)] = f32_to_bf16_bits(np.array(ties, dtype=np.float32))
    return f16, bf16, f32


@needs_nvrtc
@pytest.mark.gpu
@pytest.mark.skipif(not _gpu_available(), reason="needs a CUDA device")
def test_half_precision_kernel_runs_exactly_like_numpy() -> None:
    from fklir.runtime import cuda_driver
    from fklir.runtime.device_buffer import DeviceBuffer

    n, scale = 4099, 1.5
    f16, bf16, f32 = half_inputs(n, np.random.default_rng(16))
    cubin = compile_cubin_nvrtc(HALF_SOURCE, INCLUDE_DIR, cuda_driver.device_arch(0))
    kernel = cuda_driver.load_kernel(cubin, "fklir_half_probe", 0)
    inputs = [DeviceBuffer.from_host(f16), DeviceBuffer.from_host(bf16, 0), DeviceBuffer.from_host(f32)]
    outputs = [DeviceBuffer((n,), dtype) for dtype in ("uint8", "uint8", "float16", "uint16", "uint16")]
    params = HalfParams(*(b.ptr for b in inputs), *(b.ptr for b in outputs), n, scale)
    argument_array = (ctypes.c_void_p * 1)(ctypes.addressof(params))
    stream = cuda_driver.internal_stream(0)
    cuda_driver.ensure_context(0)
    cuda_driver.launch(kernel, (-(-n // 128), 1, 1), (128, 1, 1), ctypes.addressof(argument_array), stream)
    cuda_driver.synchronize(stream)
    u8_product, u8_bf16, f16_bf16, bf16_f32, bf16_product = (b.numpy() for b in outputs)

    with np.errstate(over="ignore"):  # 65504 * 1.5 overflows to Inf, as on the GPU
        product16 = (f16.astype(np.float32) * np.float32(np.float16(scale))).astype(np.float16)
    np.testing.assert_array_equal(u8_product, saturate_u8(product16))
    bf16_values = bf16_bits_to_f32(bf16)
    np.testing.assert_array_equal(u8_bf16, saturate_u8(bf16_values))
    expected_f16 = np.clip(bf16_values, -65504.0, 65504.0).astype(np.float16)
    np.testing.assert_array_equal(
        f16_bf16.view(np.uint16)[~np.isnan(expected_f16)],
        expected_f16.view(np.uint16)[~np.isnan(expected_f16)],
    )
    assert np.isnan(f16_bf16[np.isnan(expected_f16)]).all()
    bf16_max = float(bf16_bits_to_f32(np.array([0x7F7F], np.uint16))[0])
    expected_bf16 = f32_to_bf16_bits(np.clip(f32, -bf16_max, bf16_max))
    finite = ~np.isnan(f32)
    np.testing.assert_array_equal(bf16_f32[finite], expected_bf16[finite])
    assert np.isnan(bf16_bits_to_f32(bf16_f32[~finite])).all()
    scale_bf16 = bf16_bits_to_f32(f32_to_bf16_bits(np.array([scale], np.float32)))[0]
    expected_product = f32_to_bf16_bits(bf16_values * scale_bf16)
    product_finite = ~np.isnan(bf16_values)
    np.testing.assert_array_equal(bf16_product[product_finite], expected_product[product_finite])
