"""Dialects of fklir. `get_all_dialects()` is the lazy registry, in xDSL's shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the package also holds xDSL-free tables (color_codes, constants) a fresh process reads
    from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def get_fkl() -> Dialect:
        from fklir.dialects.fkl import FKL

        return FKL

    return {"fkl": get_fkl}
