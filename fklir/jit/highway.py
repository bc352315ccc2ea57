"""Google Highway for fkl.jit CPU sources (SPEC §6.2): whether the C++ compiler finds it, and the error that
names Debian's package when it does not.

A kernel declared with `fkl.jit.kernel(..., highway=True)` links its CPU instances with -lhwy and checks,
before it builds one, that `#include <hwy/highway.h>` compiles: without Highway the user gets an error
that says which package to install rather than the compiler's "No such file or directory".
"""

from __future__ import annotations

import functools
import subprocess

from fklir.backend.compilers import find_cxx

PACKAGE = "libhwy-dev"  # Debian's: the headers and libhwy.so
LINK_FLAGS = ("-lhwy",)


@functools.cache
def highway_available() -> bool:
    """Whether the C++ compiler finds <hwy/highway.h> (asked once per process)."""
    try:
        found = subprocess.run(
            [find_cxx(), "-E", "-x", "c++", "-", "-o", "/dev/null"],
            input="#include <hwy/highway.h>\n",
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return found.returncode == 0


def require_highway(kernel: str) -> None:
    """RuntimeError naming `kernel` and Debian's package when the compiler does not find Highway."""
    if not highway_available():
        raise RuntimeError(
            f"{kernel}: its cpu= source uses Google Highway, which the C++ compiler ({find_cxx()}) does not find: "
            f"install Debian's {PACKAGE} (apt-get install {PACKAGE})"
        )
