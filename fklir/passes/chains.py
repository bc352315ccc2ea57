"""Finding the read ... write chains of a block (shared by the passes that work per chain)."""

from __future__ import annotations

from xdsl.ir import Block, Operation

from fklir.dialects import fkl


def chain_from(read: fkl.ReadOp) -> list[Operation]:
    """The ops of the chain that starts at `read`, in order: follow the single use of each result."""
    chain: list[Operation] = [read]
    op: Operation = read
    while op.results and op.results[0].uses:
        uses = list(op.results[0].uses)
        if len(uses) != 1:
            break
        op = uses[0].operation
        chain.append(op)
    return chain


def chains_of(block: Block) -> list[list[Operation]]:
    """Every chain in `block`, one list per read op, in block order."""
    return [chain_from(op) for op in block.ops if isinstance(op, fkl.ReadOp)]
