"""`fklir cache dir|list|info|clear`, run as a separate process with its own FKLIR_CACHE_DIR."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fklir.backend.cache import DiskCache, make_key
from fklir.backend.compilers import find_cxx
from fklir.tools.cli import human_size

REPOSITORY = Path(__file__).resolve().parents[2]


def fklir_command(root: Path, *arguments: str, **variables: str) -> subprocess.CompletedProcess[str]:
    inherited = {name: value for name, value in os.environ.items() if name != "FKLIR_CACHE_MAX_BYTES"}
    environment = {**inherited, "FKLIR_CACHE_DIR": str(root), **variables}
    return subprocess.run(
        [sys.executable, "-m", "fklir.tools.cli", *arguments],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=REPOSITORY,
        check=False,
    )


def payload(size: int, seed: int) -> bytes:
    return hashlib.shake_256(seed.to_bytes(4, "little")).digest(size)


@pytest.fixture
def filled_cache(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """A cache with three entries of odd sizes, a lock file, a leftover temp file and a kept failed build."""
    root = tmp_path / "cache"
    cache = DiskCache(root)
    sizes = {
        f"{make_key('a')}.so": 12_345,
        f"{make_key('b')}.cubin": 777,
        f"{make_key('c')}.cubin": 3_000_017,
    }
    for seed, (name, size) in enumerate(sizes.items()):
        key, suffix = name.rsplit(".", 1)
        cache.build_or_load(key, f".{suffix}", lambda size=size, seed=seed: payload(size, seed))
    (root / ".tmp-half-written.so.x").write_bytes(b"partial")
    (root / "build" / "0123456789abcdef-failed").mkdir(parents=True)
    (root / "build" / "0123456789abcdef-failed" / "kernel.cu").write_text("// kept source")
    return root, sizes


def test_dir_prints_the_configured_folder(tmp_path: Path) -> None:
    root = tmp_path / "somewhere" / "cache"
    result = fklir_command(root, "cache", "dir")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{root}\n"


def when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def test_list_shows_each_kernel_with_size_last_use_and_target(filled_cache: tuple[Path, dict[str, int]]) -> None:
    root, sizes = filled_cache
    used = {name: 1_700_000_000 + 86_400 * index for index, name in enumerate(sorted(sizes))}
    for name, timestamp in used.items():
        os.utime(root / name, (timestamp, timestamp))
    result = fklir_command(root, "cache", "list")
    assert result.returncode == 0, result.stderr
    header, *rows, total_line, builds_line = result.stdout.splitlines()
    assert header.split() == ["KEY", "SIZE", "LAST", "USED", "TARGET", "DTYPES", "CHAIN"]
    expected_rows = []
    for name in sorted(sizes, key=lambda name: used[name]):  # least recently used first
        size = sizes[name] + len((root / f"{name}.sha256").read_bytes())
        target = "cpu/?" if name.endswith(".so") else "gpu/?"  # stored without metadata: the suffix tells
        expected_rows.append([name[:12], *human_size(size).split(), *when(used[name]).split(), target, "?", "?"])
    assert [row.split() for row in rows] == expected_rows
    total = sum(sizes.values()) + sum(len((root / f"{name}.sha256").read_bytes()) for name in sizes)
    assert total_line == (
        f"total: 3 kernels ({human_size(total)}) and 0 other records, {human_size(total)} ({total} bytes) in "
        f"{root}; limit 2.0 GiB ($FKLIR_CACHE_MAX_BYTES)"
    )
    assert builds_line == f"1 build folder(s) under {root / 'build'} (sources of failed compiles)"


def test_list_of_an_empty_cache(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    result = fklir_command(root, "cache", "list")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        f"total: 0 kernels (0 B) and 0 other records, 0 B (0 bytes) in {root}; limit 2.0 GiB ($FKLIR_CACHE_MAX_BYTES)\n"
    )


COMPILE_SCRIPT = """
import sys
import numpy as np
import fklir as fkl

pipe = fkl.compose(fkl.TensorRead(), fkl.Crop(1, 2, 10, 8), fkl.Resize(5, 4), fkl.Mul(0.5), fkl.Cast("float32"),
                   fkl.TensorWrite(), target="cpu")
image = np.random.default_rng(5).integers(0, 256, (21, 33, 3), dtype=np.uint8)
pipe(image)
sys.stdout.write(pipe.source_for("uint8", image.shape))
"""


@pytest.mark.skipif(shutil.which(find_cxx()) is None, reason="needs the host C++ compiler")
def test_list_and_info_describe_a_compiled_kernel_and_print_its_source(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    compiled = subprocess.run(
        [sys.executable, "-c", COMPILE_SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "FKLIR_CACHE_DIR": str(root), "FKLIR_CACHE_MAX_BYTES": "1000000000"},
        cwd=REPOSITORY,
        check=True,
    )
    source = compiled.stdout
    (library,) = [path for path, _size in DiskCache(root).entries() if path.suffix == ".so"]
    key = library.stem
    kernel_files = sorted(root.glob(f"{key}*"))
    size = sum(path.stat().st_size for path in kernel_files)
    chain = "read > crop > resize > mul > cast > write"

    listed = fklir_command(root, "cache", "list", FKLIR_CACHE_MAX_BYTES="1000000000")
    assert listed.returncode == 0, listed.stderr
    header, row, total_line = listed.stdout.splitlines()
    assert header.split()[:2] == ["KEY", "SIZE"]
    assert row.split() == [
        key[:12],
        *human_size(size).split(),
        *when(library.stat().st_mtime).split(),
        "cpu/host",
        "uint8x3",
        "->",
        "float32x3",
        *chain.split(),
    ]
    assert total_line.startswith(f"total: 1 kernel ({human_size(size)}) and ")
    assert total_line.endswith(f"in {root}; limit 953.7 MiB ($FKLIR_CACHE_MAX_BYTES)")

    info = fklir_command(root, "cache", "info", key[:7])
    assert info.returncode == 0, info.stderr
    head, printed_source = info.stdout.split("source:\n", 1)
    assert printed_source == source and "fkl_run" in source
    fields = dict(line.split(":", 1) for line in head.splitlines() if not line.startswith("file:"))
    assert {name: value.strip() for name, value in fields.items() if name != "compiler"} == {
        "key": key,
        "chain": chain,
        "dtypes": "uint8x3 -> float32x3",
        "target": "cpu/host",
        "created": fields["created"].strip(),
        "last used": when(library.stat().st_mtime),
        "size": f"{human_size(size)} ({size} bytes)",
    }
    assert fields["compiler"].strip().startswith("g++: ")
    assert [line.split(None, 1)[1] for line in head.splitlines() if line.startswith("file:")] == [
        str(path) for path in kernel_files
    ]


def test_info_of_an_unknown_or_ambiguous_prefix_exits_with_1(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    cache = DiskCache(root)
    cache.store("abc1", ".so", b"one")
    cache.store("abc2", ".so", b"two")
    ambiguous = fklir_command(root, "cache", "info", "abc")
    assert ambiguous.returncode == 1
    assert ambiguous.stderr == f"fklir cache info: 2 entries (abc1, abc2) in {root} with a key starting 'abc'\n"
    unknown = fklir_command(root, "cache", "info", "ffff")
    assert unknown.returncode == 1
    assert unknown.stderr == f"fklir cache info: no entry in {root} with a key starting 'ffff'\n"
    one = fklir_command(root, "cache", "info", "abc2")
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines()[0] == "key:       abc2"
    assert one.stdout.endswith("source:    not stored (a kernel compiled before fklir kept sources)\n")


@pytest.mark.parametrize("action", ["dir", "list", "clear"])
def test_a_cache_path_below_a_file_is_a_clear_error(tmp_path: Path, action: str) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = fklir_command(blocker / "cache", "cache", action)
    assert result.returncode == 1
    assert result.stderr.startswith(f"fklir cache {action}: FKLIR_CACHE_DIR=")
    assert f"lies below {blocker}, which is a file" in result.stderr
    assert "Traceback" not in result.stderr
    assert blocker.read_text() == "not a folder"


def test_clear_removes_everything_and_says_how_much(filled_cache: tuple[Path, dict[str, int]]) -> None:
    root, sizes = filled_cache
    result = fklir_command(root, "cache", "clear")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"removed 3 entries ({human_size(sum(sizes.values()))}) from {root}\n"
    assert sorted(path.name for path in root.iterdir()) == ["build", "locks"]
    assert list((root / "build").iterdir()) == [] and list((root / "locks").iterdir()) == []
    after = fklir_command(root, "cache", "list")
    assert after.stdout.startswith("total: 0 kernels (0 B) and 0 other records, 0 B (0 bytes)")


def test_clear_leaves_other_folders_alone(tmp_path: Path, filled_cache: tuple[Path, dict[str, int]]) -> None:
    root, _sizes = filled_cache
    neighbour = tmp_path / "neighbour.txt"
    neighbour.write_text("keep me")
    assert fklir_command(root, "cache", "clear").returncode == 0
    assert neighbour.read_text() == "keep me"


@pytest.mark.parametrize("arguments", [(), ("cache",), ("cache", "bogus"), ("bogus",)])
def test_usage_errors_exit_with_2(tmp_path: Path, arguments: tuple[str, ...]) -> None:
    result = fklir_command(tmp_path / "cache", *arguments)
    assert result.returncode == 2
    assert "usage: fklir" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1024, "1.0 KiB"),
        (1536, "1.5 KiB"),
        (3_000_017, "2.9 MiB"),
        (5 << 30, "5.0 GiB"),
    ],
)
def test_human_sizes(size: int, shown: str) -> None:
    assert human_size(size) == shown


def test_console_script_is_declared() -> None:
    text = (REPOSITORY / "pyproject.toml").read_text()
    assert re.search(r'^fklir = "fklir\.tools\.cli:main"$', text, re.MULTILINE)


JIT_SCRIPT = """
import numpy as np
import fklir as fkl
jit = fkl.jit
N = jit.SymbolicSize("N")
twice = jit.kernel(
    "twice",
    cpu="#include \\"fkl/tensor_view.h\\"\\ntemplate <class T> void twice(fkl::TensorView x) {"
        " for (long long i = 0; i < x.shape[0]; ++i) x.ptr<T>()[i] *= 2; }",
    args=[("x", jit.TensorMatcher((N,)).with_dtype(jit.SymbolicDType("T", ("float32",))))],
    template=lambda T: jit.cpp_args(T),
)
x = np.arange(5, dtype=np.float32)
twice(x)
assert x.tolist() == [0, 2, 4, 6, 8]
"""


def test_list_shows_an_fkl_jit_instance_as_a_kernel(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    subprocess.run(
        [sys.executable, "-c", JIT_SCRIPT],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "FKLIR_CACHE_DIR": str(root)},
        cwd=REPOSITORY,
        check=True,
    )
    listed = fklir_command(root, "cache", "list")
    assert listed.returncode == 0, listed.stderr
    _header, row, total_line = listed.stdout.splitlines()
    assert row.split()[-4:] == ["cpu/host", "fkl::TensorView", "jit", "twice<float>"]
    assert total_line.startswith("total: 1 kernel (")
