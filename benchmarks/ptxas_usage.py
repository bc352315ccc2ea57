"""ptxas's resource report for the device experiments' register columns: it needs nvcc, not a GPU."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fklir.backend import compilers

_ENTRY = re.compile(
    r"Compiling entry function '(\w+)'.*?(\d+) bytes spill stores.*?Used (\d+) registers.*?(?:(\d+) bytes smem)?\n",
    re.S,
)


def kernel_usage(source: str, flags: Sequence[str]) -> dict[str, str] | None:
    """{entry function (mangled): 'N regs (S B spilled), M B smem'} of every kernel `source` instantiates, from
    one `nvcc -cubin -Xptxas -v` build with `flags`; None without nvcc. RuntimeError when nvcc fails."""
    nvcc = compilers.find_nvcc()
    if nvcc is None:
        return None
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cu"
        path.write_text(source)
        command = [nvcc, *flags, "-cubin", "-Xptxas", "-v", "-o", str(path.with_suffix(".cubin")), str(path)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"nvcc failed:\n{done.stderr}")
    return {
        name: f"{regs} regs" + (f" ({spilled} B spilled)" if int(spilled) else "") + f", {smem or 0} B smem"
        for name, spilled, regs, smem in _ENTRY.findall(done.stderr)
    }
