"""`fkl-cse`: common-subexpression elimination of a DAG's identical branches (SPEC §8).

Two reads of one buffer through the same geometry (structurally equal sample regions, values included)
make the same pixels: within one graph the later read is replaced by the earlier one, and then xDSL's
`cse` merges the identical pure ops that now take the same operands (a branch `Input(1, Cast("float32"))`
joined twice becomes one read and one cast). Reads of separate graphs are never merged: that would join
chains that a divergent batch or separate kernels keep apart. A graph's outputs never alias its inputs, so
a write between two reads does not change what the second one reads.

Run after `fkl-backward-fusion` (the geometry is in the reads' regions) and before `fkl-hoist-params`
(equal values are still inline, not in slots of different names). No options.

    %a = fkl.read "in1" : T                          %a = fkl.read "in1" : T
    %b = fkl.cast %a to f32 : T -> F                 %b = fkl.cast %a to f32 : T -> F
    %c = fkl.join add %x, %b : F               =>    %c = fkl.join add %x, %b : F
    %d = fkl.read "in1" : T                          %f = fkl.join mul %c, %b : F
    %e = fkl.cast %d to f32 : T -> F
    %f = fkl.join mul %c, %e : F
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.transforms.common_subexpression_elimination import cse

from fklir.dialects import fkl


def _same_read(a: fkl.ReadOp, b: fkl.ReadOp) -> bool:
    if (a.sources, a.result.type, a.source_type) != (b.sources, b.result.type, b.source_type):
        return False
    if a.sample is None or not a.sample.blocks:
        return b.sample is None or not b.sample.blocks
    return b.sample is not None and a.sample.is_structurally_equivalent(b.sample)


def merge_reads(block: Block) -> None:
    """Within each graph of `block`, each read that repeats an earlier one of the graph takes its result."""
    for graph in fkl.graphs_in(block):
        seen: list[fkl.ReadOp] = []
        for op in graph:
            if not isinstance(op, fkl.ReadOp):
                continue
            earlier = next((read for read in seen if _same_read(read, op)), None)
            if earlier is None:
                seen.append(op)
                continue
            op.result.replace_all_uses_with(earlier.result)
            Rewriter.erase_op(op)


@dataclass(frozen=True)
class EliminateCommonBranchesPass(ModulePass):
    name = "fkl-cse"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        blocks = [op.body.block] + [k.body.block for k in op.walk() if isinstance(k, fkl.KernelOp)]
        for block in blocks:
            merge_reads(block)
        cse(op)
