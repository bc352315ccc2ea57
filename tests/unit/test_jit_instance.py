"""What an fkl.jit instance compiles and how it is keyed, without a GPU: the generated translation unit,
the include closure that the cache key hashes (fklir/includes.py), and nvcc's template instance
found among a cubin's kernels (fklir/backend/cubin.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fklir import includes
from fklir.backend import build, compilers, cubin
from fklir.jit import instance as instances

TENSOR = instances.TENSOR_PARAMETER


def _source(folder: Path, text: str) -> instances.Source:
    return instances.Source(text, folder, str(folder / "k.cuh"))


def test_the_cpu_unit_ends_in_an_extern_c_trampoline(tmp_path: Path) -> None:
    wanted = instances.Instance("ns::k", "float, 4", (TENSOR, "float"), "cpu")
    unit = instances.translation_unit(_source(tmp_path, "template <class T, int B> void k(...);"), wanted)
    assert unit.splitlines() == [
        '#include "fkl/tensor_view.h"',
        f'#line 1 "{tmp_path / "k.cuh"}"',
        "template <class T, int B> void k(...);",
        '#line 1 "<fkl.jit ns::k<float, 4>>"',
        'extern "C" void fkl_jit_entry(fkl::TensorView a0, float a1) { ns::k<float, 4>(a0, a1); }',
    ]


def test_the_gpu_unit_instantiates_the_template_explicitly(tmp_path: Path) -> None:
    wanted = instances.Instance("k", "fkl::f16", (TENSOR, TENSOR), "gpu")
    unit = instances.translation_unit(_source(tmp_path, "// kernel"), wanted)
    assert unit.splitlines()[-1] == "template __global__ void k<fkl::f16>(fkl::TensorView, fkl::TensorView);"
    plain = instances.Instance("k", None, (TENSOR,), "gpu")
    assert instances.translation_unit(_source(tmp_path, "// kernel"), plain).splitlines()[-1] == '#line 1 "<fkl.jit k>"'


def test_the_closure_follows_quoted_includes_in_the_folders_the_compiler_searches(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "a.h").write_text('#include "sub/b.h"\n#include <vector>\n')
    (tmp_path / "sub" / "b.h").write_text('  #  include "c.h"\n#include "fkl/core.h"\n#include "missing.h"\n')
    (tmp_path / "sub" / "c.h").write_text('#include "../a.h"\n')  # a cycle, followed once
    (tmp_path / "unrelated.h").write_text("")
    found = includes.include_closure('#include "a.h"\n', tmp_path, (tmp_path, build.INCLUDE_DIR))
    assert found == [
        (tmp_path / "a.h").resolve(),
        (tmp_path / "sub" / "b.h").resolve(),
        (tmp_path / "sub" / "c.h").resolve(),
        (build.INCLUDE_DIR / "fkl" / "core.h").resolve(),
    ]


def test_the_closure_hash_changes_with_any_included_file_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "a.h").write_text('#include "b.h"\n')
    (tmp_path / "b.h").write_text("int b;\n")
    (tmp_path / "unrelated.h").write_text("int u;\n")

    def digest() -> str:
        return includes.closure_hash('#include "a.h"\n', tmp_path, (build.INCLUDE_DIR,))

    first = digest()
    (tmp_path / "unrelated.h").write_text("int v;\n")
    assert digest() == first
    (tmp_path / "b.h").write_text("int c;\n")
    assert digest() != first


CUDA = """
struct View { void* data; };
template <class T, unsigned B> __global__ void scale(View v, float a) { ((T*)v.data)[threadIdx.x] *= a + B; }
template __global__ void scale<double, 3u>(View, float);  // the source's own instance
namespace ns { __global__ void plain(View) {} }
extern "C" __global__ void c_kernel() {}
template __global__ void scale<float, 256>(View, float);
"""


@pytest.mark.skipif(not compilers.nvcc_available(), reason="needs nvcc")
def test_nvccs_instance_is_found_among_the_cubins_kernels(tmp_path: Path) -> None:
    image = compilers.compile_cubin(CUDA, build.INCLUDE_DIR, "sm_90", tmp_path)
    assert sorted(cubin.entry_names(image)) == [
        "_Z5scaleIdLj3EEv4Viewf",
        "_Z5scaleIfLj256EEv4Viewf",
        "_ZN2ns5plainE4View",
        "c_kernel",
    ]
    mangled, found = cubin.find_instance(image, "scale", "float, 256")
    assert mangled == "_Z5scaleIfLj256EEv4Viewf"
    assert sorted(found) == ["void scale<double, 3u>(View, float)", "void scale<float, 256u>(View, float)"]
    assert cubin.find_instance(image, "scale", "int, 1")[0] is None
    assert cubin.find_instance(image, "ns::plain", "")[0] == "_ZN2ns5plainE4View"
    assert cubin.find_instance(image, "c_kernel", "")[0] == "c_kernel"
    with pytest.raises(ValueError, match="not a 64-bit little-endian ELF file"):
        cubin.entry_names(b"not a cubin")


@pytest.mark.skipif(not compilers.nvcc_available(), reason="needs nvcc")
def test_nvcc_payload_names_its_entry(tmp_path: Path) -> None:
    (tmp_path / "k.cuh").write_text(
        "template <class T> __global__ void k(fkl::TensorView x, T a) { x.ptr<T>()[threadIdx.x] = a; }\n"
    )
    source = instances.Source((tmp_path / "k.cuh").read_text(), tmp_path, str(tmp_path / "k.cuh"))
    wanted = instances.Instance("k", "fkl::i32", (TENSOR, "fkl::i32"), "gpu")
    unit = instances.translation_unit(source, wanted)
    folders = (build.INCLUDE_DIR, tmp_path)
    payload = instances._compile(unit, wanted, "0" * 64, folders, "sm_90", "nvcc", ())
    name, _, image = payload.partition(b"\0")
    assert name == b"_Z1kIiEvN3fkl10TensorViewET_"
    assert cubin.entry_names(image) == [name.decode()]
