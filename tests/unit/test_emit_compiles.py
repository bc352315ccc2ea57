"""The emitted C++ of several chains compiles with nvcc to sm_90 cubin (no GPU needed) and g++."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import fklir as fkl
from fklir.backend import compilers
from fklir.backend.build import INCLUDE_DIR

CHAINS = {
    "float6": (
        (fkl.Mul(1.5), fkl.Add((1.0, 2.0, 3.0)), fkl.Sub(3.0), fkl.Div(0.75), fkl.Max(-1.0), fkl.Min(9.0)),
        "float32",
        (2160, 3840, 3),
    ),
    "normalise": (
        (fkl.Cast("float32"), fkl.Mul(0.5), fkl.Sub(3.0), fkl.SaturateCast("uint8")),
        "uint8",
        (9, 9, 3),
    ),
    "roi": (
        (fkl.Crop([(0, 0, 4, 4), (1, 1, 4, 4)]), fkl.Resize(16, 16), fkl.Mul(2.0), fkl.SaturateCast("uint8")),
        "uint8",
        (9, 9, 3),
    ),
    "f16": ((fkl.Add(1.0), fkl.Max(0.0), fkl.Cast("bfloat16")), "float16", (5, 5, 4)),
    "nearest_i16": ((fkl.Resize(7, 3, "nearest"), fkl.Mul(-2)), "int16", (9, 9)),
    # the widest flat group: 48 u8 in, 48 f64 out (384 bytes a thread), so the tile shrinks to 64 threads
    "u8_to_f64": ((fkl.Cast("float64"), fkl.Mul(0.5)), "uint8", (7, 5, 3)),
    # 1-byte chains: words through a window of whole pixels (emit_flat._direct_body)
    "u8_divide": ((fkl.Cast("float32"), fkl.Div((3.0, 0.5, 7.0)), fkl.SaturateCast("uint8")), "uint8", (9, 9, 3)),
    "i8_pairs": ((fkl.Mul((-3, 5)), fkl.Add((100, -7))), "int8", (9, 9, 2)),
    "u8_is_even": ((fkl.IsEven(),), "uint8", (9, 9, 3)),
    "u8_to_f16_rounds": ((fkl.Cast("float32"), fkl.Div(3.0), fkl.Cast("float16")), "uint8", (9, 9, 3)),
    "letterbox": ((fkl.Resize(12, 8, aspect_ratio="preserve", background=0.0), fkl.Mul(2.0)), "uint8", (9, 13, 3)),
}


@pytest.mark.skipif(not compilers.nvcc_available(), reason="nvcc not on PATH")
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_emitted_cuda_compiles_to_sm90_cubin(name: str, tmp_path: Path) -> None:
    ops, dtype, shape = CHAINS[name]
    source = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu").source_for(dtype, shape)
    cubin = compilers.compile_cubin(source, INCLUDE_DIR, "sm_90", tmp_path)
    assert cubin[:4] == b"\x7fELF"
    assert b"fkl_kernel" in cubin


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not on PATH")
@pytest.mark.parametrize("name", ["f16", "nearest_i16"])
def test_emitted_cpp_compiles_with_gxx(name: str, tmp_path: Path) -> None:
    ops, dtype, shape = CHAINS[name]
    source = fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="cpu").source_for(dtype, shape)
    compilers.compile_shared_library(source, INCLUDE_DIR, tmp_path / "k.so", tmp_path)
    assert (tmp_path / "k.so").stat().st_size > 0
