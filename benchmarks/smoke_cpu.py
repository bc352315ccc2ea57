#!/usr/bin/env python3
"""Run bench_chain.py (or bench_peers.py) end to end on a machine WITHOUT a GPU, to catch mistakes in the script itself.

    pip install torch==2.13.0        # any CPU build; CuPy is not needed (its column then reads "-")
    python benchmarks/smoke_cpu.py --quick --size 64x32
    python benchmarks/smoke_cpu.py bench_peers --quick --shrink 8     # CV-CUDA's column: "not installed"

torch.cuda's stream, event and sleep calls are replaced by host stand-ins, tensors live on the CPU, and
fklir runs its CPU target behind a wrapper that takes the GPU call form `pipe(x, out=y, stream=s)`.
The checks, buffer rotation, retry logic, tables and exit code are the real ones; the numbers mean nothing.
Environment: SMOKE_SLEEP_TOO_SHORT=1 makes every sleep look too short (exercises the retry and its note);
SMOKE_FKLIR_FAILS=1 makes fklir's compose raise (the script must go on and exit 1).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import torch  # noqa: E402  # pyright: ignore[reportMissingImports]

import fklir  # noqa: E402


class HostEvent:
    """A torch.cuda.Event stand-in: timestamps taken on the host when recorded."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.t = 0.0

    def record(self, stream: object = None) -> None:
        self.t = time.perf_counter()

    def query(self) -> bool:
        return bool(os.environ.get("SMOKE_SLEEP_TOO_SHORT"))

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: HostEvent) -> float:
        return (end.t - self.t) * 1e3


class HostStream:
    cuda_stream = 0


def stub_cuda() -> None:
    answers = [True]  # the script's GPU check sees a device; torch.compile later sees none (CPU inductor)
    torch.cuda.is_available = lambda: answers.pop() if answers else False
    torch.cuda.Event = HostEvent
    torch.cuda.Stream = HostStream
    torch.cuda.stream = lambda stream: contextlib.nullcontext()
    torch.cuda._sleep = lambda cycles: time.sleep(1e-4)
    torch.cuda.synchronize = lambda device=None: None
    torch.cuda.empty_cache = lambda: None
    props = types.SimpleNamespace(
        name="host stand-in", major=0, minor=0, multi_processor_count=0, total_memory=0, L2_cache_size=60 * 2**20
    )
    torch.cuda.get_device_properties = lambda device: props


def stub_fklir() -> None:
    cpu_compose = fklir.compose

    def compose(*ops: Any, target: str = "gpu") -> Any:
        if target != "gpu":
            raise AssertionError(f"the benchmark should compose for the GPU, got target={target!r}")
        if os.environ.get("SMOKE_FKLIR_FAILS"):
            raise RuntimeError("compose failed on purpose (SMOKE_FKLIR_FAILS)")
        pipe = cpu_compose(*ops, target="cpu")

        def call(x: Any, out: Any = None, stream: object = None) -> Any:
            if not isinstance(stream, HostStream) or out is None:
                raise AssertionError("the benchmark should time fklir as pipe(x, out=y, stream=s)")
            src = [t.numpy() for t in x] if isinstance(x, list) else x.numpy()  # a list: separate images
            pipe(src, out=out.numpy())  # out.numpy() shares out's memory
            return out

        return call

    fklir.gpu_available = lambda: True
    fklir.compose = compose


TARGETS = ("bench_chain", "bench_peers")  # the scripts it runs; a first argument naming one picks it


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up here; bench_peers imports bench_chain by name
    spec.loader.exec_module(module)
    return module


def main() -> int:
    argv = sys.argv[1:]
    target = argv.pop(0) if argv and argv[0] in TARGETS else "bench_chain"
    stub_cuda()
    stub_fklir()
    chain = load("bench_chain")
    setattr(chain, "DEVICE", "cpu")  # loaded from a path, so the module type has no static DEVICE; bench_peers reads it
    bench = chain if target == "bench_chain" else load(target)
    return bench.main(argv)


if __name__ == "__main__":
    sys.exit(main())
