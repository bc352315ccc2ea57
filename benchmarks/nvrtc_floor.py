"""Experiment: what an NVRTC compile costs, from an empty kernel up to an emitted chain (NVRTC 12.8+).

Compiles, in one process and with fklir's own NVRTC options (`--pch` warm after the first compile), each
of: a kernel that includes nothing; the same with `#include "fkl/kernel.h"`; our header and a one-element
compute; and the flat kernel that fklir emits for a uint8 chain of four Adds and a Mul. Each source gets
a unique trailing comment so that no cache can answer. Prints the median of the later compiles and
NVRTC's own phase times (`--time`). Needs libnvrtc, not a GPU. Usage: python3 benchmarks/nvrtc_floor.py
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import fklir as fkl
from fklir.backend import compilers

INCLUDE = Path(fkl.__file__).resolve().parent / "backend" / "include"
REPEATS = 7


def emitted_chain() -> str:
    ops = [fkl.Add(1)] * 4 + [fkl.Mul(3.0)]
    return fkl.compose(fkl.TensorRead(), *ops, fkl.TensorWrite(), target="gpu").source_for("uint8", (48, 64, 3))


def sources() -> dict[str, str]:
    chain = emitted_chain()
    head = chain[: chain.index("#if defined(__CUDACC__)")]
    return {
        "nothing included, d[i] += 1": 'extern "C" __global__ void k(unsigned char* d) { d[threadIdx.x] += 1; }\n',
        "fkl/kernel.h included, d[i] += 1": '#include "fkl/kernel.h"\n'
        'extern "C" __global__ void k(unsigned char* d) { d[threadIdx.x] += 1; }\n',
        "fkl/kernel.h, Params, compute of one element": head + 'extern "C" __global__ void k(const Params p) {\n'
        "    fkl::u8* d = (fkl::u8*)p.h.dst;\n"
        "    d[threadIdx.x] = compute(p, d[threadIdx.x], threadIdx.x % 3);\n}\n",
        "emitted flat kernel, uint8 4 x Add + Mul": chain,
    }


def compile_ms(module: object, source: str, options: list[str]) -> float:
    status, program = module.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])  # type: ignore[attr-defined]
    start = time.perf_counter()
    (status,) = module.nvrtcCompileProgram(program, len(options), [o.encode() for o in options])  # type: ignore[attr-defined]
    elapsed = (time.perf_counter() - start) * 1e3
    module.nvrtcDestroyProgram(program)  # type: ignore[attr-defined]
    if int(status) != 0:
        raise SystemExit(f"NVRTC failed on:\n{source[:400]}")
    return elapsed


def main() -> None:
    nvrtc = compilers._nvrtc()  # cuda.bindings.nvrtc, as fklir loads it

    options = compilers.nvrtc_options(INCLUDE, "sm_90")
    print(f"NVRTC {'.'.join(map(str, compilers.nvrtc_version()))}, options: {' '.join(options)}")
    print("\n| source | median ms (compiles 2..7) | all ms | front end / NVVM / ptxas ms (--time, last compile) |")
    print("|---|---|---|---|")
    for label, source in sources().items():
        times = [compile_ms(nvrtc, f"{source}\n// {label} {i} {time.time()}\n", options) for i in range(REPEATS)]
        with tempfile.TemporaryDirectory() as folder:
            report = Path(folder) / "time.csv"
            compile_ms(nvrtc, f"{source}\n// timed {time.time()}\n", [*options, f"--time={report}"])
            phases = [line.split(",")[2].strip() for line in report.read_text().splitlines()[1:]]
        cells = " / ".join(phases)
        print(f"| {label} | {statistics.median(times[1:]):.1f} | {', '.join(f'{t:.0f}' for t in times)} | {cells} |")


if __name__ == "__main__":
    main()
