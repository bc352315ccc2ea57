"""The JIT driver: compose() and its pipelines, which lower, compile and cache a chain per input
signature on the first call (cold path) and launch the compiled kernel on every call (warm path)."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fklir.jit.matcher import SymbolicDevice, SymbolicDType, SymbolicSize, TensorMatcher
    from fklir.jit.template_args import cpp_args
    from fklir.jit.user_kernel import Kernel, kernel

# fkl.jit's user kernels (SPEC §6.2), resolved on first use so that importing the package stays light:
# name -> module that defines it. No module is named after its function (kernel, cpp_args): importing a
# submodule makes it the package's attribute of that name, which would hide the function.
_LAZY = {
    "Kernel": "fklir.jit.user_kernel",
    "kernel": "fklir.jit.user_kernel",
    "TensorMatcher": "fklir.jit.matcher",
    "SymbolicSize": "fklir.jit.matcher",
    "SymbolicDType": "fklir.jit.matcher",
    "SymbolicDevice": "fklir.jit.matcher",
    "cpp_args": "fklir.jit.template_args",
}

__all__ = ["Kernel", "SymbolicDType", "SymbolicDevice", "SymbolicSize", "TensorMatcher", "cpp_args", "kernel"]


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'fklir.jit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
