"""Descriptors → fkl IR: one op per descriptor, result types left for `fkl-infer-types`."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, IntAttr, ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint

from fklir.dialects import fkl
from fklir.dialects.constants import input_name, input_names, output_name
from fklir.dialects.value_rules import RecipeStep
from fklir.frontend.ops import Crop, Input, Joining, MidWrite, Op, Read, Write, graph_descriptors
from fklir.passes.default_pipeline import DEFAULT_PASSES

# Marks the op a runtime-value descriptor lowered to with the descriptor's index in its chain, until
# runtime_values reads it after the passes.
ORIGIN = "fkl.origin"


def make_context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(fkl.FKL)
    return ctx


def _lower_one(
    b: Builder,
    ops: Sequence[Op],
    source_type: fkl.ImageType,
    source: str | list[str],
    write_planes: list[int] | None,
    rect_index: int | None,
) -> None:
    """One chain: a typed read, one op per descriptor, a write (to `write_planes` if given: one plane of a
    batch lowered one chain per plane, whose row of per-image values its ops take: on every plane of its values,
    which are as many as the source's, so that the chain's IR is typed as its planes; a chain of a Crop list on
    a batch computes every image's crop by its rect and writes only its own plane)."""
    one_plane = write_planes is not None and len(write_planes) == 1
    if write_planes is not None and one_plane:
        planes: Sequence[int] = write_planes * source_type.planes.data
    else:
        planes = range(source_type.planes.data)
    read = ops[0]
    if not isinstance(read, Read):
        raise ValueError(f"a chain starts with a read (TensorRead, TensorPack, ReadSet), not {read.op_name}")
    value: SSAValue = read.lower_read(b, source_type, source)
    if read.RUNTIME_VALUES and isinstance(value.owner, Operation):
        value.owner.attributes[ORIGIN] = IntAttr(0)
    for index, op in enumerate(ops[1:-1], start=1):
        if isinstance(op, Crop) and rect_index is not None:
            value = op.lower_rect(b, value, rect_index)
        else:
            value = op.lower_plane(b, value, planes)
        if op.RUNTIME_VALUES and isinstance(value.owner, Operation):
            value.owner.attributes[ORIGIN] = IntAttr(index)
    write = ops[-1]
    if not isinstance(write, Write):
        raise ValueError(f"a chain ends with a write (TensorWrite, TensorSplit, ...), not {write.op_name}")
    write.lower_write(b, value, write_planes)


def lower_pipeline(
    chains: Sequence[Sequence[Op]],
    dtype: str,
    channels: int,
    planes: int,
    images: int = 0,
    plane_map: Sequence[int] | None = None,
    rects: int = 0,
) -> ModuleOp:
    """The module for a composed pipeline on an input of the given element type and channels.

    - one chain, no rect list: one read ... write;
    - `Crop([r0, ..., rn])`: one chain per rect, chain i writing plane i (fkl-batch-horizontal merges them);
      `rects` more than the list's length: the kernel of that capacity (jit.signature.batch_capacity),
      whose chains past the list repeat its first rect;
    - a list of `images` inputs: one chain per image reading "src<i>", writing plane i (same);
    - `plane_map` (divergent): chain k writes the planes z with plane_map[z] == k (fkl-batch-divergent);
      with a list of `images`, every chain reads their pointer table (plane z reads image z).
    """
    module = ModuleOp([])
    b = Builder(InsertPoint.at_end(module.body.block))
    source_type = fkl.ImageType(dtype, channels, planes)
    if plane_map is not None:
        table = [f"src{i}" for i in range(images)]
        read_type = fkl.ImageType(dtype, channels, images) if images else source_type
        for k, chain in enumerate(chains):
            owned = [z for z, owner in enumerate(plane_map) if owner == k]
            _lower_one(b, chain, read_type, table or "src", owned, None)
        return module
    (chain,) = chains
    if images:
        for i in range(images):
            _lower_one(b, chain, source_type, f"src{i}", [i], None)
        return module
    crop_list = next((op for op in chain if isinstance(op, Crop) and op.batched), None)
    if crop_list is not None:
        given = len(crop_list.rects)
        for i in range(max(rects, given)):
            _lower_one(b, chain, source_type, "src", [i], i if i < given else 0)
        return module
    _lower_one(b, chain, source_type, "src", None, None)
    return module


class _GraphLowering:
    def __init__(self, ops: Sequence[Op], sources: Sequence[fkl.ImageType], tables: int, rects: int):
        self.module = ModuleOp([])
        self.b = Builder(InsertPoint.at_end(self.module.body.block))
        self.sources = sources
        self.tables = tables
        self.rects = rects
        self.planes = range(sources[0].planes.data)  # the batch's: per-image values lower a row for each
        # a descriptor used twice (one Cast object in two branches) has one set of values: its first index
        self.origin: dict[int, int] = {}
        for index, op in enumerate(graph_descriptors(ops)):
            self.origin.setdefault(id(op), index)

    def mark(self, op: Op, value: SSAValue) -> SSAValue:
        """The op `op` lowered to, marked when its values are runtime values (a graph's Crop: its rect too).
        Only those: a mark is an attribute, which keeps fkl-cse from merging two descriptors' ops whose values
        the plan takes at run time (equal now, they may differ in the next pipeline of the structure)."""
        if (op.RUNTIME_VALUES or isinstance(op, Crop)) and isinstance(value.owner, Operation):
            value.owner.attributes[ORIGIN] = IntAttr(self.origin[id(op)])
        return value

    def run(self, ops: Sequence[Op], value: SSAValue) -> SSAValue:
        """A graph's run of ops on `value`: each branch a join takes lowered first (its own read), so that the IR
        stays in SSA order."""
        for op in ops:
            if isinstance(op, Joining):
                operands = [self.branch(branch) for branch in op.branches()]
                value = self.mark(op, op.lower_join(self.b, value, operands))
            elif isinstance(op, Crop) and op.batched and self.rects:
                value = self.mark(op, op.lower_capacity(self.b, value, self.rects))
            else:
                value = self.mark(op, op.lower_plane(self.b, value, self.planes))
        return value

    def source(self, i: int) -> str | list[str]:
        """Argument i's buffer: one image, or a list call's pointer table."""
        return input_names(i, self.tables) if self.tables else input_name(i)

    def branch(self, branch: Input) -> SSAValue:
        read = fkl.ReadOp(self.source(branch.index), self.sources[branch.index])
        read.location = branch.ir_location()
        self.b.insert(read)
        return self.run(branch.ops, read.result)


def lower_graph(ops: Sequence[Op], sources: Sequence[fkl.ImageType], tables: int = 0, rects: int = 0) -> ModuleOp:
    """The module of a composed DAG (SPEC §8) on call arguments of the types `sources`: the chain reads argument
    0 ("src"), each fkl.Input(i, ...) branch argument i ("in<i>"); with `tables`, a list call, each reads a table
    of that many images ("src0", ... / "in<i>_0", ...); with `rects`, each Crop list crops that many planes (the
    rest repeat its first rect: the capacity of jit.signature.batch_capacity); MidWrite / MidSplit and the final
    write make outputs 0, 1, ... ("out<k>") in chain order. Every op a descriptor lowers to carries its index among
    graph_descriptors(ops) (`fkl.origin`), for runtime_values."""
    lowering = _GraphLowering(ops, sources, tables, rects)
    read, *middle, write = ops
    assert isinstance(read, Read) and isinstance(write, Write)
    value = read.lower_read(lowering.b, sources[0], lowering.source(0))
    outputs = 0
    run: list[Op] = []
    for op in middle:
        if not isinstance(op, MidWrite):
            run.append(op)
            continue
        value = op.lower_mid(lowering.b, lowering.run(run, value), output_name(outputs))
        run, outputs = [], outputs + 1
    write.lower_write(lowering.b, lowering.run(run, value), None, output_name(outputs))
    return lowering.module


def lower_chain(ops: Sequence[Op], dtype: str, channels: int, planes: int) -> ModuleOp:
    """The module for one chain (rect lists expand to one chain per rect)."""
    return lower_pipeline([ops], dtype, channels, planes)


def run_passes(module: ModuleOp, passes: Sequence[ModulePass] = DEFAULT_PASSES) -> ModuleOp:
    """Run `passes` and verify the result once (each pass reports its own errors, naming the op)."""
    ctx = make_context()
    for p in passes:
        p.apply(ctx, module)
    module.verify()
    return module


def run_passes_located(module: ModuleOp) -> ModuleOp:
    """run_passes on a composed pipeline's module: an error becomes a ValueError at the user's line (the
    descriptor's location the op carries), in the IR's words."""
    from xdsl.utils.exceptions import VerifyException

    from fklir.diagnostics import OpError, first_invalid_op, located_message

    try:
        return run_passes(module)
    except OpError as e:
        raise ValueError(located_message(e.op, str(e))) from None
    except VerifyException as e:
        failure = first_invalid_op(module)
        raise ValueError(located_message(*failure) if failure else str(e)) from None


def runtime_values(module: ModuleOp) -> tuple[RecipeStep, ...]:
    """The recipe of the slots that a pipeline of the same structure fills from its own descriptors
    (Op.RUNTIME_VALUES), without building IR: (slot, descriptor index in the chain, op name, op
    word, element type and channels of the op's input, slot count) each. The descriptors' marks
    (`fkl.origin`, set by lowering) are taken off every op, so that no printed IR or kernel key shows them."""
    recipe: list[RecipeStep] = []
    for kernel in kernels_of(module):
        counts = {name: count for name, _, count in kernel.params.slots}
        for op in kernel.body.walk():
            origin = op.attributes.get(ORIGIN)
            if not isinstance(origin, IntAttr):
                continue
            for slot, rule, chain_type in _runtime_slots(op):
                recipe.append(
                    (slot, origin.data, op.name, rule, chain_type.dtype, chain_type.channels.data, counts[slot])
                )
    for op in module.walk():
        op.attributes.pop(ORIGIN, None)
    return tuple(recipe)


def _runtime_slots(op: Operation) -> list[tuple[str, str, fkl.ImageType]]:
    """(slot, rule, the chain type its values are checked against) of each hoisted value of a runtime-value
    descriptor's op: the rule names how the descriptor's values fill it (the descriptor's runtime_slot)."""
    in_type = op.operands[0].type if op.operands else None
    if not isinstance(in_type, fkl.ImageType):
        return []
    if isinstance(op, fkl.BinaryValueOp) and op.slot is not None:
        return [(op.slot.data, op.name.removeprefix("fkl."), in_type)]
    if isinstance(op, fkl.BlendOp) and op.slot is not None:
        return [(op.slot.data, "alpha", in_type)]
    if isinstance(op, fkl.CropOp) and op.slot is not None:  # a graph's (a chain's rects: Pipeline._values)
        return [(op.slot.data, "rects", in_type)]
    if isinstance(op, fkl.WarpOp) and op.slot is not None and op.size_slot is not None:
        return [(op.slot.data, "warp_matrix", in_type), (op.size_slot.data, "size", in_type)]
    if isinstance(op, fkl.SaturateOp | fkl.BorderOp | fkl.AddLastOp | fkl.VectorReorderRTOp) and op.slot is not None:
        return [(op.slot.data, "values", in_type)]
    if isinstance(op, fkl.MxVFloat3Op) and op.slot is not None:
        return [(op.slot.data, "matrix", in_type)]
    if isinstance(op, fkl.StaticLoopOp) and op.slot is not None:
        return [(op.slot.data, op.body.data, in_type)]
    if isinstance(op, fkl.UserOpBase) and op.slot is not None:
        return [(op.slot.data, "params", in_type)]
    if isinstance(op, fkl.ReadSetOp) and op.slot is not None and op.size_slot is not None:
        return [(op.slot.data, "values", in_type), (op.size_slot.data, "size", in_type)]
    if isinstance(op, fkl.ResizeOp) and op.slot is not None:
        out_type = op.result.type  # the background is in the result's element type
        assert isinstance(out_type, fkl.ImageType)
        slots = [(op.slot.data, "size", in_type)]
        if op.background_slot is not None:
            slots.append((op.background_slot.data, "background", out_type))
        return slots
    return []


def print_module(module: ModuleOp) -> str:
    """The module as fklir-opt prints it (a pipeline's `ir()`)."""
    import io

    from xdsl.printer import Printer

    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def kernels_of(module: ModuleOp) -> list[fkl.KernelOp]:
    block: Block = module.body.block
    return [op for op in block.ops if isinstance(op, fkl.KernelOp)]
