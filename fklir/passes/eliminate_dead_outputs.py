"""`fkl-eliminate-dead-outputs`: drop a graph's outputs that nobody reads, and the ops that only they needed.

Option `outputs` names the dead buffers (`-p 'fkl-eliminate-dead-outputs{outputs=out0}'`, several separated by
commas): their writes are erased. Then, with or without names, every op whose result reaches no write is
erased, reads included, until none is left: a branch that fed only a dropped output disappears with it, and
the dead ops another pass left behind (a rewrite that took away a value's last use) go too. A graph that keeps
one output becomes a chain again. Run before `fkl-outline-kernels` (it works on the ops of the module's
block and of each kernel alike).

    %a = fkl.read "src" : T                          %a = fkl.read "src" : T
    %b = fkl.read "in1" : T                    =>    %n = fkl.mul %a, 2.0 : T
    %d = fkl.join absdiff %a, %b : T                 fkl.write %n, "out1" : T
    fkl.write %d, "out0" : T
    %n = fkl.mul %a, 2.0 : T
    fkl.write %n, "out1" : T
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from fklir.dialects import fkl


def _dead(op: Operation) -> bool:
    """A value op (not a write, not a kernel) whose results no op uses."""
    return bool(op.results) and not isinstance(op, fkl.KernelOp) and all(not r.uses for r in op.results)


def eliminate(block: Block, outputs: frozenset[str]) -> None:
    for op in list(block.ops):
        if isinstance(op, fkl.WRITE_OPS) and op.dest.data in outputs:
            Rewriter.erase_op(op)
    while dead := [op for op in block.ops if _dead(op)]:
        for op in reversed(dead):  # users before what they use
            Rewriter.erase_op(op)


@dataclass(frozen=True)
class EliminateDeadOutputsPass(ModulePass):
    name = "fkl-eliminate-dead-outputs"

    outputs: str = ""  # the dead outputs' buffer names, comma-separated

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        outputs = frozenset(name.strip() for name in self.outputs.split(",") if name.strip())
        eliminate(op.body.block, outputs)
        for kernel in op.walk():
            if isinstance(kernel, fkl.KernelOp):
                eliminate(kernel.body.block, outputs)
