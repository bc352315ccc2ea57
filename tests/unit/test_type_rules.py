"""One type rule per op: the verifier and fkl-infer-types refuse a chain with the same message.

Each case is written twice: once with the op's input type known when the IR is verified (the
verifier applies the rule), once with it `none` until fkl-infer-types fills it in (the pass applies
it). Both must fail, naming the op, with the same text.
"""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp

from fklir.diagnostics import LocatingParser, OpError, first_invalid_op
from fklir.dialects import fkl
from fklir.passes.infer_types import InferTypesPass

UNKNOWN = "!fkl.image<?x?x?xnone>"
IDENTITY = "[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]"

# (input as CxT, the op with {x} for its input and {t} for its types, what the error says)
CASES = [
    ("3xi1", "fkl.add {x}, 1.0 : {t}", "'fkl.add' computes arithmetic on a bool chain"),
    ("3xui8", "fkl.mul {x}, [1.0, 2.0] : {t}", "'fkl.mul' has 2 values but the chain has 3 channels"),
    ("1xi16", "fkl.div {x}, 0.0 : {t}", "'fkl.div' divides an integer chain (int16) by zero"),
    ("1xui8", "fkl.sub {x}, 0.5 : {t}", "'fkl.sub' value 0.5 is not representable"),
    ("2xi32", "fkl.static_loop {x}, div [1.0, 0.0], 2 : {t}", "'fkl.static_loop' divides an integer chain"),
    ("1xi1", "fkl.static_loop {x}, sub 1.0, 2 : {t}", "'fkl.static_loop' computes arithmetic on a bool"),
    ("3xi1", "fkl.saturate {x}, 0.0, 1.0 : {t}", "'fkl.saturate' clamps on a bool chain"),
    ("2xui8", "fkl.saturate {x}, [0.0, -1.0], 9.0 : {t}", "'fkl.saturate' value -1.0 is not representable"),
    ("3xui8", "fkl.border {x}, constant 300.0 : {t}", "'fkl.border' value 300.0 is not representable"),
    ("3xui8", f"fkl.mxv_float3 {{x}}, {IDENTITY} : {{t}}", "'fkl.mxv_float3' needs a chain of exactly float32 x 3"),
    ("3xi1", "fkl.resize {x}, size [4, 5], linear : {t}", "'fkl.resize' interpolates linearly on a bool chain"),
    (
        "3xui8",
        "fkl.resize {x}, size [4, 5], nearest, preserve, background 0.25 : {t}",
        "'fkl.resize' value 0.25 is not representable",
    ),
    (
        "1xi1",
        "fkl.warp {x}, affine [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], size [3, 3] : {t}",
        "'fkl.warp' interpolates linearly on a bool chain",
    ),
    ("4xui8", "fkl.add_last {x}, 1.0 : {t}", "'fkl.add_last' cannot append a channel to a chain of 4"),
    ("2xi8", "fkl.add_last {x}, 200.0 : {t}", "'fkl.add_last' value 200.0 is not representable"),
    ("3xf32", "fkl.is_even {x} : {t}", "'fkl.is_even' needs an integer chain, got float32"),
    ("3xui8", "fkl.vector_and {x} : {t}", "'fkl.vector_and' needs a bool chain, got uint8"),
    ("1xi16", "fkl.saturate_float {x} : {t}", "'fkl.saturate_float' needs a float chain, got int16"),
    ("2xi1", "fkl.vector_reduce {x}, add : {t}", "'fkl.vector_reduce' reduces on a bool chain"),
    ("1xui8", "fkl.color_conversion {x}, RGB2GRAY : {t}", "'fkl.color_conversion' RGB2GRAY needs 3 channels"),
    ("3xi1", "fkl.color_conversion {x}, BGR2GRAY : {t}", "'fkl.color_conversion' computes gray on a bool"),
    ("3xf32", "fkl.discard {x}, 4 : {t}", "'fkl.discard' keeps 4 channels of a chain of 3"),
    ("3xui16", "fkl.vector_reorder {x}, [0, 3] : {t}", "'fkl.vector_reorder' channel indices [3] are out of range"),
    ("2xf16", "fkl.vector_reorder_rt {x}, [2] : {t}", "'fkl.vector_reorder_rt' channel indices [2] are out of range"),
    ("1xi1", "fkl.deinterlace {x}, blend : {t}", "'fkl.deinterlace' averages rows on a bool chain"),
]


def _parse(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(fkl.FKL)
    return LocatingParser(ctx, text, "t.mlir").parse_module()


def _chain(image: str, op: str, known: bool) -> str:
    """read -> (cast to its own element type, whose result is left `none`) -> op -> write."""
    source = f"!fkl.image<?x?x{image}>"
    element = image.split("x")[1]
    if known:
        middle, x, types = "", "%0", f"{source} -> {UNKNOWN}"
    else:
        middle, x, types = f"%c = fkl.cast %0 to {element} : {source} -> {UNKNOWN}\n", "%c", UNKNOWN
    return (
        f'%0 = fkl.read "src" : {source}\n'
        + middle
        + f"%1 = {op.format(x=x, t=types)}\n"
        + f'fkl.write %1, "dst" : {UNKNOWN}\n'
    )


@pytest.mark.parametrize(("image", "op", "says"), CASES, ids=[c[1].split()[0] + "-" + c[0] for c in CASES])
def test_the_verifier_and_inference_refuse_with_one_message(image: str, op: str, says: str) -> None:
    verified = first_invalid_op(_parse(_chain(image, op, known=True)))
    assert verified is not None, "the verifier accepted the op on a known input"
    bad_op, verifier_message = verified
    assert bad_op.name == op.split()[0]

    module = _parse(_chain(image, op, known=False))
    assert first_invalid_op(module) is None, "with the input unknown there is nothing to refuse yet"
    with pytest.raises(OpError) as inferred:
        InferTypesPass().apply(Context(), module)
    assert inferred.value.op.name == op.split()[0]

    assert says in verifier_message
    assert str(inferred.value) == verifier_message


def test_every_op_between_read_and_write_has_a_type_rule() -> None:
    ends = (fkl.ReadOp, fkl.YieldOp, fkl.KernelOp, *fkl.WRITE_OPS)
    between = [op for op in fkl.FKL.operations if not issubclass(op, ends)]
    assert len(between) >= 25
    assert [op.name for op in between if not issubclass(op, fkl.TypeRuleOp)] == []
