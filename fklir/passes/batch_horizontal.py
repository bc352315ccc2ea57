"""`fkl-batch-horizontal`: merge identical chains that fill planes of one output into one chain.

The frontend lowers `Crop([r0, r1, ...])` to one chain per rect and `pipe([x0, x1, ...])` to one
chain per image, each writing its plane (`fkl.write %v, "dst" planes [i]`). Chains that do the
same thing — the same ops with the same values — differing only in their crop rect, their
source buffer or the row of a `per_plane` op (a `fkl.per_image` value) become one B-plane chain:
the rects become one `fkl.crop` with B rects (one per plane, hoisted into the parameter block
later), the rows one per-plane op of B rows, the sources a pointer table (`fkl.read ["src0", ...]`).
B is then part of the types; rect values and image sizes are not, and
compose() lowers as many chains as the capacity it compiles for (jit.signature.batch_capacity), so
that one kernel serves every count up to it. Chains that differ in anything else are left alone (see
`fkl-batch-divergent`).

Run before `fkl-infer-types` or after it: a merged chain's types are re-inferred when its read is
typed. No options.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, ModuleOp, StringAttr, f64, i64
from xdsl.ir import Attribute, Block, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from fklir.dialects import fkl, value_rules
from fklir.passes.infer_types import infer_chain

NO_DEST = StringAttr("")


def _per_plane_field(op: Operation) -> str | None:
    """The field of a per-plane op whose rows the planes take (fkl.per_image), else None."""
    return op.PER_PLANE_FIELD if isinstance(op, fkl.TypeRuleOp) and fkl.is_per_plane(op) else None


def _op_signature(op: Operation) -> tuple[object, ...]:
    """What must be equal for two chains to merge: everything but crop rects and read sources."""
    properties = {
        name: value
        for name, value in op.properties.items()
        if not (isinstance(op, fkl.CropOp) and name == "value")
        and name != _per_plane_field(op)
        and not (isinstance(op, fkl.ReadOp) and name == "source")
        and not (isinstance(op, fkl.WRITE_OPS) and name == "planes")
    }
    result_types = tuple(r.type for r in op.results) if isinstance(op, fkl.ReadOp) else ()
    # rows of per-plane values join when they have one length (broadcast rows and per-channel ones do not mix)
    field = _per_plane_field(op)
    row = 0 if field is None else len(fkl.field_values(op, field) or ())
    return (op.name, tuple(sorted(properties.items())), result_types, row)


def _chain_signature(chain: Sequence[Operation]) -> tuple[object, ...]:
    return tuple(_op_signature(op) for op in chain)


def _single_plane(chain: Sequence[Operation]) -> int | None:
    write = chain[-1]
    if not isinstance(write, fkl.WRITE_OPS):
        return None
    planes = write.plane_list
    return planes[0] if planes is not None and len(planes) == 1 else None


def _mergeable(chain: Sequence[Operation]) -> bool:
    if _single_plane(chain) is None or not isinstance(chain[0], fkl.ReadOp):
        return False
    if chain[0].sample is not None and chain[0].sample.blocks:
        return False  # fused reads carry their geometry inside; batch before backward fusion
    return all(not (isinstance(op, fkl.CropOp) and op.value is None) for op in chain)


def _own_row(chain: Sequence[Operation], index: int, field: str) -> Sequence[float]:
    """The row of chain[index]'s per-plane values that the plane its chain writes takes: its one row, or, in a
    chain reading a batch (one per rect of a Crop list, each cropping every image), the row of its plane."""
    op = chain[index]
    values = fkl.field_values(op, field) or ()
    read_type = chain[0].results[0].type
    planes = read_type.planes.data if isinstance(read_type, fkl.ImageType) else 1
    plane = _single_plane(chain)
    if planes <= 1 or plane is None:
        return values
    try:
        rows = value_rules.plane_rows(op.name, values, planes)
    except ValueError:  # not a row per plane: the verifier says so
        return values
    return rows[min(plane, planes - 1)]  # the value plane the write takes (as the interpreter does)


def _unknown_types(chain: Sequence[Operation]) -> None:
    for op in chain[1:]:
        for result in op.results:
            Rewriter.replace_value_with_new_type(result, fkl.ImageType.unknown())


def _merge(chains: list[list[Operation]]) -> None:
    """Rewrite chains[0] into the batched chain and erase the others."""
    chains.sort(key=lambda c: _single_plane(c) or 0)
    first = chains[0]
    read = first[0]
    assert isinstance(read, fkl.ReadOp)
    sources = [c[0].sources[0] for c in chains]  # pyright: ignore[reportAttributeAccessIssue]
    if len(set(sources)) > 1:
        typed = read.result.type
        planes = typed.with_planes(len(chains)) if isinstance(typed, fkl.ImageType) and typed.is_known else typed
        new_read = fkl.ReadOp(sources, planes)
        new_read.location = read.location
        new_read.result.name_hint = read.result.name_hint
        Rewriter.insert_op(new_read, _before(read))
        read.result.replace_all_uses_with(new_read.result)
        Rewriter.erase_op(read)
        first[0] = new_read
    for index, op in enumerate(first):
        if isinstance(op, fkl.CropOp):
            rects = [r for c in chains for r in c[index].rects]  # pyright: ignore[reportAttributeAccessIssue]
            op.properties["value"] = DenseArrayBase.from_list(i64, [v for r in rects for v in r])
        elif (field := _per_plane_field(op)) is not None and fkl.field_values(op, field) is not None:
            rows = [v for c in chains for v in _own_row(c, index, field)]
            op.properties[field] = DenseArrayBase.from_list(f64, rows)
    write = first[-1]
    assert isinstance(write, fkl.WRITE_OPS)
    del write.properties["planes"]
    for chain in chains[1:]:
        for op in reversed(chain):
            Rewriter.erase_op(op)
    source_type: Attribute = first[0].results[0].type
    if isinstance(source_type, fkl.ImageType) and source_type.is_known:
        _unknown_types(first)
        infer_chain(first)


def _before(op: Operation):
    from xdsl.rewriter import InsertPoint

    return InsertPoint.before(op)


def batch_block(block: Block) -> None:
    groups: dict[tuple[object, ...], list[list[Operation]]] = defaultdict(list)
    writers: dict[Attribute, int] = defaultdict(int)
    for chain in fkl.chains_in(block):
        writers[chain[-1].properties.get("dest", NO_DEST)] += 1
        if _mergeable(chain):
            groups[(chain[-1].properties["dest"], _chain_signature(chain))].append(chain)
    for (dest, _), chains in groups.items():  # pyright: ignore[reportAssignmentType]
        planes = sorted(_single_plane(c) or 0 for c in chains)
        if len(chains) < 2 or planes != list(range(len(chains))) or writers[dest] != len(chains):  # pyright: ignore[reportArgumentType]
            continue  # only chains that write every plane of their output, and nothing else does
        has_crop = any(isinstance(op, fkl.CropOp) for op in chains[0])
        distinct_sources = len({c[0].sources[0] for c in chains}) > 1  # pyright: ignore[reportAttributeAccessIssue]
        if not (has_crop or distinct_sources):
            continue  # identical chains on one image: nothing makes their planes differ
        _merge(chains)


@dataclass(frozen=True)
class HorizontalBatchingPass(ModulePass):
    name = "fkl-batch-horizontal"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        batch_block(op.body.block)
