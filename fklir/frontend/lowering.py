"""Descriptors → fkl IR: one op per descriptor, result types left for `fkl-infer-types`."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.ir import Block
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from fklir.dialects import fkl
from fklir.frontend.ops import Op, TensorRead
from fklir.passes.default_pipeline import DEFAULT_PASSES


def make_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(fkl.FKL)
    return ctx


def lower_chain(ops: Sequence[Op], dtype: str, channels: int, planes: int) -> ModuleOp:
    """The module for one chain on an input of the given element type, channels and planes."""
    read = ops[0]
    assert isinstance(read, TensorRead)
    module = ModuleOp([])
    b = Builder(InsertPoint.at_end(module.body.block))
    read_op = fkl.ReadOp("src", fkl.ImageType(dtype, channels, planes))
    read_op.location = read.location
    b.insert(read_op)
    value = read_op.result
    for op in ops[1:]:
        value = op.lower(b, value)
    return module


def run_passes(module: ModuleOp, passes: Sequence[ModulePass] = DEFAULT_PASSES) -> ModuleOp:
    ctx = make_context()
    module.verify()
    for p in passes:
        p.apply(ctx, module)
        module.verify()
    return module


def kernels_of(module: ModuleOp) -> list[fkl.KernelOp]:
    block: Block = module.body.block
    return [op for op in block.ops if isinstance(op, fkl.KernelOp)]
