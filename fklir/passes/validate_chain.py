"""`fkl-validate-chain`: every chain is read → (geometry)* → compute* → write, a straight line.

Rules, each reported with the op that breaks it:
- a chain starts with `fkl.read` and ends with exactly one write op (`fkl.write`, `fkl.split`);
- every value in between has exactly one user (chains are linear: no fan-out, no dead ends); in a DAG at
  least one, and the input of a geometry op exactly one (the geometry folds into that branch's read);
- geometry ops (`fkl.read_set`, `fkl.border`, `fkl.crop`, `fkl.resize`, `fkl.warp`,
  `fkl.deinterlace`) come right after the read or after another geometry op, because they fold
  into the read (they change which source pixels each thread loads); `fkl.read_set` replaces what
  is read, so it comes right after the read itself.

No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from fklir.diagnostics import OpError
from fklir.dialects import fkl


def _check_geometry_position(op: Operation) -> None:
    if not isinstance(op, fkl.GEOMETRY_OPS):
        return
    producer = op.operands[0].owner
    if isinstance(op, fkl.ReadSetOp):
        if isinstance(producer, fkl.ReadOp):
            return
        raise OpError(
            op,
            f"'{op.name}' must come right after the read it replaces (it follows "
            f"'{getattr(producer, 'name', 'a block argument')}')",
        )
    if isinstance(producer, (fkl.ReadOp, *fkl.GEOMETRY_OPS)):
        return
    raise OpError(
        op,
        f"'{op.name}' must come right after the read or another geometry op (it follows "
        f"'{getattr(producer, 'name', 'a block argument')}'): geometry folds into the read",
    )


def _check_block(block: Block) -> None:
    for graph in fkl.graphs_in(block):
        check_link = fkl.check_dag_link if fkl.is_dag(graph) else fkl.check_chain_link
        for op in graph:
            if not isinstance(op, fkl.CHAIN_OPS):
                continue
            if any(not isinstance(operand.owner, Operation) for operand in op.operands):
                raise OpError(op, f"'{op.name}' must consume a value produced by the chain, not a block argument")
            check_link(op)
            _check_geometry_position(op)


@dataclass(frozen=True)
class ValidateChainPass(ModulePass):
    name = "fkl-validate-chain"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        _check_block(op.body.block)
        for kernel in op.walk():
            if isinstance(kernel, fkl.KernelOp):
                _check_block(kernel.body.block)
