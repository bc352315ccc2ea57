"""A walk through fklir-opt, the mlir-opt of fklir, on chain.mlir (beside this script): the chain as
the frontend emits it, the same after type inference, after the whole default pipeline (one
`fkl.kernel` whose geometry is folded into the read and whose values sit in a parameter block), and
the C++ that `-t cpp` emits for it. Each step is the command a user would type; the script prints it
and its output.

Then it checks what the steps claim: no unknown type is left, one kernel, and the reference
interpreter gives the same image before and after the passes, equal to cv2.resize within ±1 (the
tolerance SPEC gives for uint8 after a linear resize).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
from common import opencv, target
from xdsl.parser import Parser

from fklir.frontend.lowering import make_context
from fklir.interpreters.fkl import run_module

CHAIN = Path(__file__).with_name("chain.mlir")
RECTS = [(30, 12, 60, 40), (40, 12, 60, 40), (53, 27, 60, 40)]  # as in chain.mlir


def fklir_opt(*args: str) -> str:
    """`fklir-opt chain.mlir ARGS`, through this Python so that it works without an activated venv."""
    print(f"$ fklir-opt {CHAIN.name} {' '.join(args)}")
    done = subprocess.run(
        [sys.executable, "-m", "fklir.tools.fklir_opt", str(CHAIN), *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    print(done.stdout)
    return done.stdout


def interpret(ir: str, image: np.ndarray) -> np.ndarray:
    module = Parser(make_context(), ir).parse_module()
    return run_module(module, {"src": image})["dst"]


def reference(image: np.ndarray) -> np.ndarray:
    cv2 = opencv()
    planes = []
    for x, y, w, h in RECTS:
        resized = cv2.resize(image[y : y + h, x : x + w].astype(np.float32), (16, 16), interpolation=cv2.INTER_LINEAR)
        planes.append(np.clip(np.rint(resized * 2 - (1.0, 2.0, 3.0)), 0, 255).astype(np.uint8))
    return np.stack(planes)


def main() -> None:
    target(__doc__)  # the IR and C++ are the same on every target; --target is accepted for symmetry
    print(CHAIN.read_text())
    typed = fklir_opt("-p", "fkl-validate-chain,fkl-infer-types")
    fused = fklir_opt("-p", "fkl-default-pipeline")
    cpp = fklir_opt("-p", "fkl-default-pipeline", "-t", "cpp")

    assert "xnone" not in typed, "fkl-infer-types left an unknown type"
    assert fused.count("fkl.kernel @") == 1 and "sample {" in fused, "not one kernel with the geometry folded in"
    assert "struct Params" in cpp and "fkl::Rect crop1[3];" in cpp, "the C++ has no parameter block with 3 rects"
    image = np.random.default_rng(4).integers(0, 256, (108, 192, 3), dtype=np.uint8)
    before, after = interpret(typed, image), interpret(fused, image)
    assert np.array_equal(before, after), "the passes changed the result"
    off = int(np.abs(after.astype(np.int16) - reference(image)).max())
    assert off <= 1, f"max |interpreter - cv2| = {off}"
    print("checked: types inferred, one fkl.kernel, same image before and after the passes, cv2 within ±1")


if __name__ == "__main__":
    main()
