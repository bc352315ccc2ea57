"""`fkl-infer-types`: element type, channel count and plane count through every chain.

The read's type is given (the frontend knows the input); every other result type follows from
its input and the op:
- arithmetic keeps the type; its values must be one per channel or one broadcast value, and
  representable in the element type on integer chains ("Cast to float first");
- casts change the element type; resize linear, warp and deinterlace produce f32, nearest keeps
  the type; is_even gives bool; vector_and, vector_reduce and the gray colour codes give one
  channel, discard / add_last / vector_reorder / colour codes the count they say;
- ops that need a kind of chain say so: mxv_float3 (exactly f32 x 3), saturate_float (float),
  is_even (integer), vector_and (bool), no arithmetic, interpolation or gray on bool;
- a crop with several rects makes one plane per rect (from a one-plane input, or one rect per
  plane); one rect keeps the plane count.

Each rule is the op's own `result_for` (fkl.TypeRuleOp), the one the verifier applies too. Types
already written in the IR are checked against what is inferred. No options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from fklir.diagnostics import OpError
from fklir.dialects import fkl


def infer_result_type(op: Operation, in_type: fkl.ImageType) -> fkl.ImageType:
    """The result type of `op` given its (known) input type; raises VerifyException naming the op."""
    if isinstance(op, fkl.TypeRuleOp):
        return op.result_for(in_type)
    raise OpError(op, f"'{op.name}': no type rule")


def _infer_op(op: Operation) -> None:
    if isinstance(op, fkl.ReadOp):
        _infer_sampled_read(op)
        return
    if not op.results or not op.operands:
        return
    in_type = op.operands[0].type
    if not isinstance(in_type, fkl.ImageType) or not in_type.is_known:
        raise OpError(op, f"'{op.name}' input type is not known: is the chain connected to a read?")
    _set_result_type(op, infer_result_type(op, in_type))
    # the rest of the op's verifier (value counts, rect bounds, sizes, ...): a chain built by the
    # frontend is verified here first, before later passes rely on it
    op.verify(verify_nested_ops=False)


def _set_result_type(op: Operation, inferred: fkl.ImageType) -> None:
    current = op.results[0].type
    if current == inferred:
        return
    if isinstance(current, fkl.ImageType) and current.is_known:
        raise OpError(op, f"'{op.name}' result type {current} does not match the inferred {inferred}")
    Rewriter.replace_value_with_new_type(op.results[0], inferred)


def _infer_sampled_read(read: fkl.ReadOp) -> None:
    """A fused read: infer through its geometry; its result has the type the region yields."""
    geometry = read.geometry
    if not geometry:
        return
    for op in geometry:
        _infer_op(op)
    yielded = geometry[-1].results[0].type
    assert isinstance(yielded, fkl.ImageType)
    if read.result.type != yielded:
        Rewriter.replace_value_with_new_type(read.result, yielded)


def infer_chain(chain: Sequence[Operation]) -> None:
    """Infer the types of one chain's ops, in order (its read must be typed)."""
    for op in chain:
        try:
            _infer_op(op)
        except OpError:
            raise
        except VerifyException as e:
            raise OpError(op, str(e)) from None


@dataclass(frozen=True)
class InferTypesPass(ModulePass):
    name = "fkl-infer-types"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        blocks = [op.body.block] + [k.body.block for k in op.walk() if isinstance(k, fkl.KernelOp)]
        for block in blocks:
            infer_chain(list(block.ops))
