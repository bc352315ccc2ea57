"""`fkl-backward-fusion`: fold the geometry after a read into the read (backwards vertical fusion).

Crop and Resize change *which* source pixels an output pixel depends on, not what is computed
from them. Folding them into the read's `sample` region turns the chain into "sample the source
through this geometry, then compute": every thread loads exactly the source pixels it needs and no
intermediate image exists. Any depth and order of geometry ops folds (Crop then Resize, Resize then
Crop, ...). Run after `fkl-infer-types` (the region's block argument is the typed source).

    %img = fkl.read "src" : T0                       %px = fkl.read "src" : T0 -> T2 sample {
    %c = fkl.crop %img, rects [...] : T0 -> T1   =>  ^bb0(%s : T0):
    %r = fkl.resize %c, size [..], linear : ...        %c = fkl.crop %s, rects [...] : T0 -> T1
                                                        %r = fkl.resize %c, ... : T1 -> T2
                                                        fkl.yield %r : T2
                                                      }
No options.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, ModuleOp
from xdsl.ir import Block, Region
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)

from fklir.dialects import fkl


def _sample_block(read: fkl.ReadOp) -> Block:
    """The read's sample block, created (identity: yield the source) when it has none yet."""
    if read.sample is not None and read.sample.blocks:
        return read.sample.block
    block = Block(arg_types=[read.result.type])
    block.args[0].name_hint = "src"
    block.add_op(fkl.YieldOp(block.args[0]))
    return block


@dataclass
class FoldGeometryIntoRead(RewritePattern):
    """read → geometry op  ⇒  one read whose sample region ends with that geometry op."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: fkl.ReadOp, rewriter: PatternRewriter, /) -> None:
        if not op.result.has_one_use():
            return
        geometry = op.result.get_user_of_unique_use()
        if not isinstance(geometry, fkl.GEOMETRY_OPS):
            return
        block = _sample_block(op)
        old_yield = block.last_op
        assert isinstance(old_yield, fkl.YieldOp)
        sampled = old_yield.input
        geometry.detach()
        geometry.operands = [sampled]
        block.insert_op_before(geometry, old_yield)
        block.insert_op_before(fkl.YieldOp(geometry.results[0]), old_yield)
        rewriter.erase(old_yield)
        if op.sample is not None and op.sample.blocks:
            op.sample.detach_block(block)
        source = op.sources if isinstance(op.source, ArrayAttr) else op.sources[0]
        new_read = fkl.ReadOp(source, geometry.results[0].type, Region(block))
        new_read.location = op.location
        new_read.result.name_hint = op.result.name_hint
        block.args[0].name_hint = "src"
        rewriter.insert(new_read)
        # users outside the region now take the fused read's result; the new yield keeps the op's
        rewriter.replace_uses_with_if(
            geometry.results[0], new_read.result, lambda use: use.operation.parent_block() is not block
        )
        rewriter.erase(op)


@dataclass(frozen=True)
class BackwardFusionPass(ModulePass):
    name = "fkl-backward-fusion"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(FoldGeometryIntoRead(), apply_recursively=True).rewrite_module(op)
