"""`fkl-outline-kernels`: move each top-level read ... write chain (or DAG) into its own `fkl.kernel`.

One `fkl.kernel` is one launch. Kernels are named `@k0`, `@k1`, ... in chain order (numbering
skips names that kernels already have). Run after `fkl-validate-chain`. No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass

from fklir.dialects import fkl


@dataclass(frozen=True)
class OutlineKernelsPass(ModulePass):
    name = "fkl-outline-kernels"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        block = op.body.block
        taken = {o.sym_name.data for o in block.ops if isinstance(o, fkl.KernelOp)}
        index = 0
        for chain in fkl.graphs_in(block):
            if not isinstance(chain[0], fkl.ReadOp):  # a kernel already outlined, or no chain
                continue
            while f"k{index}" in taken:
                index += 1
            anchor = chain[-1].next_op
            body = Block()
            for chain_op in chain:
                chain_op.detach()
                body.add_op(chain_op)
            kernel = fkl.KernelOp(f"k{index}", Region(body))
            if anchor is None:
                block.add_op(kernel)
            else:
                block.insert_op_before(kernel, anchor)
            index += 1
