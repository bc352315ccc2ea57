"""Output targets of fklir-opt (`-t cuda`, `-t cpp`): the C++ of every `fkl.kernel`."""

from __future__ import annotations

from collections.abc import Callable

from xdsl.utils.target import Target


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    def cuda() -> type[Target]:
        from fklir.backend.emit_target import CudaTarget

        return CudaTarget

    def cpp() -> type[Target]:
        from fklir.backend.emit_target import CppTarget

        return CppTarget

    return {"cuda": cuda, "cpp": cpp}
