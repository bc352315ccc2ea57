"""What the libraries fklir stands on cost a call or a process, beside fklir's own list-call cost (issue 18).

    python benchmarks/host_costs.py [--out PATH]

Needs a GPU, torch and nvcc. Rows, each measured in this run:
- `import cuda.bindings.driver` in a fresh process that imported torch and made its CUDA context first,
  median of 5 (what a fresh GPU process pays before its first launch, whatever fklir does);
- cuLaunchKernel of an empty one-argument kernel, host µs per launch: cuda.bindings with a prebuilt
  `void*[]`, and ctypes on libcuda.so.1 three ways (argtypes; prebuilt ctypes objects without
  argtypes; a CFUNCTYPE): what a hand-written ctypes binding would cost each call;
- torch's accessors on CUDA tensors, ns per tensor: what any list key must read of every tensor;
- fklir's list call `pipe(xs, out=y, stream=s)` and its key (warm_list_key) for 1, 2, 16, 32 tensors.
Timings are the median over 7 repetitions of the mean over N back-to-back calls.
"""

from __future__ import annotations

import argparse
import ctypes
import datetime
import importlib
import statistics
import subprocess
import sys
import tempfile
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_launch import emit, host_us  # it also puts this tree's fklir first on sys.path

IMPORT_AFTER_TORCH = r"""
import time, torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
start = time.perf_counter()
import cuda.bindings.driver
print((time.perf_counter() - start) * 1e3)
"""


def import_rows() -> list[tuple[str, str]]:
    runs = [
        float(subprocess.run([sys.executable, "-c", IMPORT_AFTER_TORCH], capture_output=True, text=True, check=True)
              .stdout)
        for _ in range(5)
    ]  # fmt: skip
    return [("import cuda.bindings.driver after torch + CUDA context, fresh process (ms, median of 5)",
             f"{statistics.median(runs):.1f} (min {min(runs):.1f})")]  # fmt: skip


def launch_rows(torch: Any) -> list[tuple[str, str]]:
    driver = importlib.import_module("cuda.bindings.driver")
    folder = Path(tempfile.mkdtemp(prefix="fklir-host-costs-"))
    (folder / "k.cu").write_text('extern "C" __global__ void k(const char* p) {}\n')
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(folder / "k.cubin"), str(folder / "k.cu")], check=True)
    _, module = driver.cuModuleLoadData((folder / "k.cubin").read_bytes())
    _, function = driver.cuModuleGetFunction(module, b"k")
    stream = torch.cuda.Stream().cuda_stream
    block = (ctypes.c_uint64 * 1)(1234)
    arguments = (ctypes.c_void_p * 1)(ctypes.addressof(block))
    address = ctypes.addressof(arguments)
    bindings = driver.cuLaunchKernel
    library = ctypes.CDLL("libcuda.so.1")
    uint, pointer = ctypes.c_uint, ctypes.c_void_p
    typed = library.cuLaunchKernel
    typed.restype = ctypes.c_int
    typed.argtypes = [pointer, uint, uint, uint, uint, uint, uint, uint, pointer, pointer, pointer]
    untyped = ctypes.CDLL("libcuda.so.1").cuLaunchKernel
    prototype = ctypes.CFUNCTYPE(ctypes.c_int, pointer, *[uint] * 7, pointer, pointer, pointer)
    through = ctypes.cast(library.cuLaunchKernel, prototype)
    handle = int(function)
    one, warp, zero = uint(1), uint(32), uint(0)
    f, s, a = pointer(handle), pointer(stream), pointer(address)
    launches: dict[str, Callable[[], object]] = {
        "cuda.bindings, prebuilt void*[]": lambda: bindings(function, 1, 1, 1, 32, 1, 1, 0, stream, address, 0),
        "ctypes with argtypes": lambda: typed(handle, 1, 1, 1, 32, 1, 1, 0, stream, address, None),
        "ctypes, prebuilt ctypes objects, no argtypes": lambda: untyped(
            f, one, one, one, warp, one, one, zero, s, a, None
        ),
        "ctypes through a CFUNCTYPE": lambda: through(handle, 1, 1, 1, 32, 1, 1, 0, stream, address, None),
    }
    rows = [
        (f"cuLaunchKernel: {name} (µs)", host_us(call, torch.cuda.synchronize, 20000, 7))
        for name, call in launches.items()
    ]
    return [(name, f"{value:.2f}") for name, value in rows]


def accessor_rows(torch: Any) -> list[tuple[str, str]]:
    xs = [torch.empty((64, 48, 3), dtype=torch.uint8, device="cuda") for _ in range(16)]
    shape = xs[0].shape
    reads: dict[str, Callable[[], object]] = {
        "type(x)": lambda: [type(x) for x in xs],
        "x.is_cuda": lambda: [x.is_cuda for x in xs],
        "x.dtype": lambda: [x.dtype for x in xs],
        "x.shape": lambda: [x.shape for x in xs],
        "x.shape != a kept shape": lambda: [x.shape != shape for x in xs],
        "x.get_device()": lambda: [x.get_device() for x in xs],
        "x.is_contiguous()": lambda: [x.is_contiguous() for x in xs],
        "x.data_ptr()": lambda: [x.data_ptr() for x in xs],
        "the loop alone": lambda: [x for x in xs],
    }
    rows = []
    for name, read in reads.items():
        seconds = min(timeit.repeat(read, number=20000, repeat=5)) / 20000
        rows.append((f"torch accessor {name}, per tensor (ns)", f"{seconds / len(xs) * 1e9:.0f}"))
    return rows


def list_rows(torch: Any) -> list[tuple[str, str]]:
    import fklir as fkl
    from fklir.runtime.interop import warm_list_key

    pipe = fkl.compose(fkl.TensorRead(), fkl.Mul(2), fkl.TensorWrite(), target="gpu")
    stream = torch.cuda.Stream()
    sync = torch.cuda.synchronize
    rows = []
    x = torch.empty((64, 48, 3), dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    pipe(x, out=y, stream=stream)
    rows.append(("fklir unbound pipe(x, out=y, stream=s), one tensor (µs)",
                 f"{host_us(lambda: pipe(x, out=y, stream=stream), sync, 20000, 7):.2f}"))  # fmt: skip
    for count in (1, 2, 16, 32):
        xs = [torch.empty((64, 48, 3), dtype=torch.uint8, device="cuda") for _ in range(count)]
        stacked = torch.empty((count, 64, 48, 3), dtype=torch.uint8, device="cuda")
        pipe(xs, out=stacked, stream=stream)
        call = host_us(lambda: pipe(xs, out=stacked, stream=stream), sync, 5000, 7)
        key = host_us(lambda: warm_list_key(xs), sync, 5000, 7)
        rows.append((f"fklir list call of {count} tensors / its warm_list_key alone (µs)", f"{call:.2f} / {key:.2f}"))
    return rows


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, help="append the table to this file")
    args = parser.parse_args(argv)
    import torch

    torch.zeros(1, device="cuda")
    rows = import_rows() + launch_rows(torch) + accessor_rows(torch) + list_rows(torch)
    lines = [
        f"### {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC - {torch.cuda.get_device_name(0)} - "
        "host_costs.py",
        "",
        f"- command: `python3 benchmarks/host_costs.py {' '.join(argv)}`; torch {torch.__version__}",
        "",
        "| what | measured |",
        "|---|---|",
        *(f"| {name} | {value} |" for name, value in rows),
    ]
    emit(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
