"""A new fusion pass written in a script: `fkl-merge-mul` folds two consecutive `fkl.mul` ops of a
float chain into one (x·a·b → x·(a·b), per channel), so the kernel does one multiply per element
instead of two. It is an xDSL ModulePass with one RewritePattern on the fkl dialect.

The script registers it beside fklir's own passes twice: in a pass registry for xDSL's
PassPipeline (run in-process), and in a subclass of the fklir-opt driver, where `-p fkl-merge-mul`
then works like any built-in pass. It checks that the two muls became one and that the reference
interpreter gives the same image as numpy before and after (within float32 rounding: a·b is rounded
once where x·a·b was rounded twice).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from common import target
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from fklir.dialects import fkl
from fklir.frontend.lowering import make_context
from fklir.interpreters.fkl import run_module
from fklir.passes import get_all_passes
from fklir.tools.fklir_opt import FklirOptMain

CHAIN = """
%x = fkl.read "src" : !fkl.image<?x?x3xf32>
%a = fkl.mul %x, 2.5 : !fkl.image<?x?x3xf32>
%b = fkl.mul %a, [0.3, 1.7, 4.1] : !fkl.image<?x?x3xf32>
%c = fkl.sub %b, 1.0 : !fkl.image<?x?x3xf32>
fkl.write %c, "dst" : !fkl.image<?x?x3xf32>
"""


def _per_channel(values: tuple[float, ...], channels: int) -> tuple[float, ...]:
    return values * channels if len(values) == 1 else values


@dataclass
class MergeConsecutiveMul(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fkl.MulOp, rewriter: PatternRewriter, /) -> None:
        inner = op.input.owner
        if not isinstance(inner, fkl.MulOp) or not inner.result.has_one_use():
            return
        if op.value is None or inner.value is None:  # hoisted: the values live in the parameter block
            return
        image = op.result.type
        # On integer chains a·b may not be representable in the element type, which the verifier refuses.
        if not isinstance(image, fkl.ImageType) or not fkl.is_float_name(image.dtype):
            return
        channels = image.channels.data
        merged = [a * b for a, b in zip(_per_channel(inner.values, channels), _per_channel(op.values, channels))]
        rewriter.replace(op, fkl.MulOp(inner.input, merged, image))
        rewriter.erase(inner)


@dataclass(frozen=True)
class MergeMulPass(ModulePass):
    """`fkl-merge-mul`: consecutive float `fkl.mul` ops with inline values become one. Needs inferred
    types (run it after fkl-infer-types). No options."""

    name = "fkl-merge-mul"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(MergeConsecutiveMul(), apply_recursively=True).rewrite_module(op)


class MyOptMain(FklirOptMain):
    """fklir-opt with one more pass."""

    def register_all_passes(self) -> None:
        super().register_all_passes()
        self.register_pass(MergeMulPass.name, lambda: MergeMulPass)


def count_muls(module: ModuleOp) -> int:
    return sum(isinstance(op, fkl.MulOp) for op in module.walk())


def main() -> None:
    target(__doc__)  # IR only: the same on every target
    ctx = make_context()
    passes = {**get_all_passes(), MergeMulPass.name: lambda: MergeMulPass}
    module = Parser(ctx, CHAIN).parse_module()
    image = np.random.default_rng(9).uniform(-100, 100, (37, 53, 3)).astype(np.float32)
    before = run_module(module, {"src": image})["dst"]

    PassPipeline.parse_spec(passes, "fkl-validate-chain,fkl-infer-types,fkl-merge-mul").apply(ctx, module)
    print(module)
    assert count_muls(module) == 1, f"{count_muls(module)} muls left"
    after = run_module(module, {"src": image})["dst"]
    expected = image.astype(np.float64) * 2.5 * np.array([0.3, 1.7, 4.1]) - 1.0
    for name, result in (("before", before), ("after", after)):
        error = float(np.abs(result[0] - expected).max() / np.abs(expected).max())
        assert error < 1e-6, f"{name} the pass: relative error {error} against numpy"

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "chain.mlir")
        path.write_text(CHAIN)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            MyOptMain(args=[str(path), "-p", "fkl-infer-types,fkl-merge-mul,fkl-default-pipeline"]).run()
    print(printed.getvalue())
    fused = Parser(make_context(), printed.getvalue()).parse_module()
    assert count_muls(fused) == 1 and sum(isinstance(op, fkl.KernelOp) for op in fused.walk()) == 1
    assert np.array_equal(run_module(fused, {"src": image})["dst"], after)
    print("checked: two fkl.mul became one, in PassPipeline and in fklir-opt; numpy agrees before and after")


if __name__ == "__main__":
    main()
