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

Types already written in the IR are checked against what is inferred. No options.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import VerifyException

from fklir.diagnostics import OpError
from fklir.dialects import fkl


def _crop_planes(op: fkl.CropOp, in_type: fkl.ImageType, result: Attribute) -> int:
    if op.value is None:  # already hoisted: the plane count was inferred before
        return result.planes.data if isinstance(result, fkl.ImageType) else in_type.planes.data
    n, planes = len(op.rects), in_type.planes.data
    if n == 1:
        return planes
    if planes in (1, n):
        return n
    raise VerifyException(f"'fkl.crop' has {n} rects for an input of {planes} planes (give 1, or one per plane)")


def _binary_values_rule(op: Operation, in_type: fkl.ImageType) -> fkl.ImageType:
    """Arithmetic (and StaticLoop): the type is kept; values per channel, representable, no integer / 0."""
    selects = isinstance(op, fkl.MaxOp | fkl.MinOp) or (
        isinstance(op, fkl.StaticLoopOp) and op.body.data in ("max", "min")
    )
    if in_type.dtype == "bool" and not selects:  # max/min of bools are or/and; the rest is arithmetic
        raise VerifyException(
            f"'{op.name}' computes arithmetic on a bool chain; Cast to an integer or float type first"
        )
    values = fkl.field_values(op)
    if values is not None:
        fkl.check_values_fit_chain(op.name, values, in_type.channels.data, in_type.dtype)
        divides = isinstance(op, fkl.DivOp) or (isinstance(op, fkl.StaticLoopOp) and op.body.data == "div")
        if divides:
            fkl.check_no_integer_division_by_zero(op.name, values, in_type.dtype)
    return in_type


def _resize_rule(op: fkl.ResizeOp, in_type: fkl.ImageType) -> fkl.ImageType:
    if op.interp.data == "nearest":
        out = in_type
    else:
        if in_type.dtype == "bool":
            raise VerifyException(
                "'fkl.resize' interpolates linearly on a bool chain; Cast to an integer or float type first"
            )
        out = in_type.with_element(fkl.element_type("float32"))
    if (background := fkl.field_values(op, "background")) is not None:
        fkl.check_values_fit_chain(op.name, background, out.channels.data, out.dtype)
    return out


def infer_result_type(op: Operation, in_type: fkl.ImageType) -> fkl.ImageType:
    """The result type of `op` given its (known) input type; raises VerifyException naming the op."""
    if isinstance(op, fkl.BinaryValueOp | fkl.StaticLoopOp):
        return _binary_values_rule(op, in_type)
    if isinstance(op, fkl.CastLikeOp):
        return in_type.with_element(op.to)
    if isinstance(op, fkl.CropOp):
        return in_type.with_planes(_crop_planes(op, in_type, op.results[0].type))
    if isinstance(op, fkl.ResizeOp):
        return _resize_rule(op, in_type)
    if isinstance(op, fkl.WarpOp):
        if in_type.dtype == "bool":
            raise VerifyException(
                "'fkl.warp' interpolates linearly on a bool chain; Cast to an integer or float type first"
            )
        return in_type.with_element(fkl.element_type("float32"))
    if isinstance(op, fkl.SaturateOp | fkl.BorderOp | fkl.ReadSetOp | fkl.MxVFloat3Op):
        op.verify_()  # their value rules read the (known) input type; the result keeps it
        return in_type
    if isinstance(op, fkl.TYPE_RULE_OPS):
        return op.result_for(in_type)  # pyright: ignore[reportAttributeAccessIssue]
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
    # with types known, the op's own rules (value ranges, division by zero, ...) apply in full
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
