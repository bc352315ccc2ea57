"""`fklir-opt -t cuda` / `-t cpp`: print the C++ of every `fkl.kernel` in the module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException
from xdsl.utils.target import Target

from fklir.backend.kernel_plan import emit_kernel
from fklir.diagnostics import located_message
from fklir.dialects import fkl


def _emit_all(module: ModuleOp, output: IO[str], target: str) -> None:
    kernels = [op for op in module.walk() if isinstance(op, fkl.KernelOp)]
    if not kernels:
        raise ValueError("no fkl.kernel to emit: run fkl-default-pipeline first")
    for kernel in kernels:
        output.write(f"// ---- fkl.kernel @{kernel.sym_name.data} (target {target}) ----\n")
        try:
            source = emit_kernel(kernel).source
        except ValueError as e:  # IR the emitter cannot take: fklir-opt's located error, not a crash
            raise DiagnosticException(located_message(kernel, str(e))) from None
        output.write(source)


@dataclass(frozen=True)
class CudaTarget(Target):
    name = "cuda"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        _emit_all(module, output, "cuda")


@dataclass(frozen=True)
class CppTarget(Target):
    name = "cpp"

    def emit(self, ctx: Context, module: ModuleOp, output: IO[str]) -> None:
        _emit_all(module, output, "cpp")
