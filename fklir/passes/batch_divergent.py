"""`fkl-batch-divergent`: chains that fill different planes of one output become one kernel.

`fkl.compose_divergent(plane_map, chain1, chain2, ...)` lowers to one chain per branch, each
writing the planes it owns (`fkl.write %v, "dst" planes [0, 2]`). This pass puts all chains that
write one destination with plane lists into a single `fkl.kernel`: the launch has exactly as many
z-planes as the output has (FKL's executor launches the sum of the chains' planes and writes out
of bounds, upstream issue #250), and plane z runs the chain `planemap[z]`. The plane map is a
parameter slot (`planemap: i32 x P`), so changing it reuses the binary; the writes lose their
plane lists. Every plane 0..P-1 must be written exactly once, and all chains read one source
(plane z of it, or its only plane).

Run after `fkl-batch-horizontal` (chains that differ only in rects or sources merge there
instead) and before `fkl-outline-kernels`. No options.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import DenseArrayBase, DictionaryAttr, ModuleOp, i64
from xdsl.ir import Block, Operation, Region
from xdsl.passes import ModulePass

from fklir.diagnostics import OpError
from fklir.dialects import fkl


def _plane_map(chains: list[list[Operation]]) -> list[int]:
    owner: dict[int, int] = {}
    for index, chain in enumerate(chains):
        write = chain[-1]
        assert isinstance(write, fkl.WRITE_OPS)
        for plane in write.plane_list or []:
            if plane in owner:
                raise OpError(write, f"'{write.name}' plane {plane} of \"{write.dest.data}\" is written twice")
            owner[plane] = index
    planes = len(owner)
    if sorted(owner) != list(range(planes)):
        write = chains[0][-1]
        assert isinstance(write, fkl.WRITE_OPS)
        raise OpError(write, f"'{write.name}' planes of \"{write.dest.data}\" leave gaps: {sorted(owner)}")
    return [owner[z] for z in range(planes)]


def _kernel_name(block: Block) -> str:
    taken = {op.sym_name.data for op in block.ops if isinstance(op, fkl.KernelOp)}
    index = 0
    while f"k{index}" in taken:
        index += 1
    return f"k{index}"


@dataclass(frozen=True)
class DivergentBatchingPass(ModulePass):
    name = "fkl-batch-divergent"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        block = op.body.block
        groups: dict[str, list[list[Operation]]] = defaultdict(list)
        for chain in fkl.chains_in(block):
            write = chain[-1]
            if isinstance(write, fkl.WRITE_OPS) and write.plane_list is not None:
                groups[write.dest.data].append(chain)
        for chains in groups.values():
            sources = {tuple(c[0].sources) for c in chains}  # pyright: ignore[reportAttributeAccessIssue]
            if len(sources) > 1:
                read = chains[1][0]
                raise OpError(
                    read, f"'{read.name}' divergent chains of one output must read one source, got {sorted(sources)}"
                )
            plane_map = _plane_map(chains)
            anchor = chains[-1][-1].next_op
            body = Block()
            for chain in chains:
                for chain_op in chain:
                    chain_op.detach()
                    body.add_op(chain_op)
                write = chain[-1]
                del write.properties["planes"]
            kernel = fkl.KernelOp(
                _kernel_name(block),
                Region(body),
                fkl.ParamsType([(fkl.PLANE_MAP_SLOT, "i32", len(plane_map))]),
                DictionaryAttr({fkl.PLANE_MAP_SLOT: DenseArrayBase.from_list(i64, plane_map)}),
            )
            if anchor is None:
                block.add_op(kernel)
            else:
                block.insert_op_before(kernel, anchor)
