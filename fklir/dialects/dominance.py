"""SSA dominance for fkl's single-block regions: every value is defined before it is used.

xDSL 0.74 verifies no dominance at all (`Operation.verify` checks operands only for erased
values), and its parser resolves a forward reference anywhere in the region. A chain is a
sequence: passes and emitters walk ops in text order, so a use before the definition gives wrong
math or C++ that does not compile. MLIR calls such regions SSACFG; `SSADominance` marks them.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import FileLineColLoc
from xdsl.ir import Block, BlockArgument, Operation, OpResult, Region, SSAValue
from xdsl.traits import OpTrait

from fklir.diagnostics import OpError


def _describe_definition(value: SSAValue) -> str:
    if isinstance(value, BlockArgument):
        return f"block argument #{value.index}"
    if not isinstance(value, OpResult):
        return "no op"
    # a use and its definition always sit in one file: the line and column say enough
    loc = value.op.location
    where = f" at line {loc.line.data}:{loc.column.data}" if isinstance(loc, FileLineColLoc) else ""
    return f"'{value.op.name}'{where}"


def _check_block(block: Block, visible: set[SSAValue]) -> None:
    # `visible` holds what enclosing blocks defined above this block's parent op; values are
    # added as they are defined and removed when the block ends, so the walk is linear.
    added: list[SSAValue] = [*block.args]
    visible.update(added)
    try:
        for op in block.ops:
            for index, operand in enumerate(op.operands):
                if operand not in visible:
                    message = (
                        f"'{op.name}' operand #{index} is used before it is defined"
                        f" (defined by {_describe_definition(operand)})"
                    )
                    raise OpError(op, message)
            for region in op.regions:
                check_region_dominance(region, visible)
            added.extend(op.results)
            visible.update(op.results)
    finally:
        visible.difference_update(added)


def check_region_dominance(region: Region, visible: set[SSAValue] | None = None) -> None:
    """Raise `OpError` at the first op that uses a value not defined above it.

    Regions of more than one block need a dominator tree; fkl has none, so they are left to
    the ops that own them.
    """
    if len(region.blocks) != 1:
        return
    check_block = region.blocks.first
    assert check_block is not None
    _check_block(check_block, set() if visible is None else visible)


@dataclass(frozen=True)
class SSADominance(OpTrait):
    """The op's regions are sequences: each value must be defined before its first use."""

    def verify(self, op: Operation) -> None:
        for region in op.regions:
            check_region_dominance(region)
