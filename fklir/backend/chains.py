"""The chains of one `fkl.kernel`: each read ... write run of ops, its geometry (what the read samples
through) apart from its compute ops. The kernel's plan (kernel_plan.py) and the emitters read them."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation

from fklir.backend.typed_ir import image_of
from fklir.dialects import fkl


@dataclass(frozen=True)
class Chain:
    """One read ... write chain of a kernel, with the geometry its read samples through."""

    read: fkl.ReadOp
    geometry: list[Operation]
    compute: list[Operation]
    write: Operation

    @property
    def stage_type(self) -> fkl.ImageType:
        """The pixel the geometry stages produce (what the compute chain starts from)."""
        return image_of(self.geometry[-1].results[0].type if self.geometry else self.read.source_type)

    @property
    def out_type(self) -> fkl.ImageType:
        return image_of(self.write.operands[0].type)

    @property
    def plane_values(self) -> bool:
        """Whether a compute op takes a row of values per plane (`per_plane`): compute_pixel then takes the
        plane z."""
        return any(fkl.is_per_plane(op) for op in self.compute)

    @property
    def write_kind(self) -> str:
        return WRITE_KIND[type(self.write)]

    @property
    def read_kind(self) -> str:
        if self.geometry and isinstance(self.geometry[0], fkl.ReadSetOp):
            return "none"
        return image_of(self.read.source_type).layout.data


WRITE_KIND: dict[type[Operation], str] = {
    fkl.WriteOp: "packed",
    fkl.SplitOp: "planar",
    fkl.TSplitOp: "tsplit",
    fkl.SplitWriteOp: "split_write",
}


def kernel_chains(kernel: fkl.KernelOp) -> list[Chain]:
    """The kernel's chains in order (several in a divergent kernel), as fkl.kernel gives them (its verifier
    checks them): each split into its read's geometry (its sample region, then any geometry ops right after
    the read) and its compute ops."""
    chains: list[Chain] = []
    for ops in kernel.chains():
        read, *middle, write = ops
        assert isinstance(read, fkl.ReadOp)
        leading = 0
        while leading < len(middle) and isinstance(middle[leading], fkl.GEOMETRY_OPS):
            leading += 1
        if any(isinstance(op, fkl.GEOMETRY_OPS) for op in middle[leading:]):
            raise ValueError("geometry ops must come right after the read (run fkl-validate-chain)")
        chains.append(Chain(read, read.geometry + middle[:leading], middle[leading:], write))
    return chains
