"""A kernel's plan as plain records: what the templates (emit_cpp, sampling, emit_flat) print the C++ from.

The analysis (kernel_plan.py) reads the IR once and fills them: each chain's pixel types, its write and read
layouts and the code its ops lower to by their rules (emit_rules, emit_geometry, emit_compute); the
templates arrange that code into entries and loops and never see an op. No IR and no xDSL here.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol

from fklir.backend.emit_flat import FlatShape, GraphFlatShape, PixelFlatShape
from fklir.backend.kernel_layout import KernelLayout


class PixelType(NamedTuple):
    """An element type and a channel count: one pixel as a kernel holds it."""

    dtype: str
    channels: int


class ChainPlan(NamedTuple):
    """One read ... write chain: its pixels, layouts and the code its ops lowered to."""

    source: PixelType  # the read's source pixel
    stage: PixelType  # the pixel the geometry stages produce (what the compute chain starts from)
    out: PixelType  # the written pixel
    write_kind: str  # "packed" | "planar" | "tsplit" | "split_write"
    read_kind: str  # "packed" | "planar" | "none" (ReadSet)
    last_stage: int  # the number of the final stage function (0: the read itself)
    writes_stage: bool  # no compute op: the stage pixel is the written one
    plane_values: bool  # a compute op reads a row of values per plane: compute_pixel takes the plane z
    shares_plane: bool  # a stage shares values among a plane's pixels (its Plane): a GPU block computes it once
    compute_pixel: tuple[str, ...]  # `compute_pixel`'s definition (sampled kernels, pixel-wise flat ones)
    compute_element: tuple[str, ...]  # `compute`'s definition (channel-wise flat kernels), else ()
    compute_fast: tuple[str, ...]  # `compute_fast`'s definition (flat GPU fast path), else ()
    divisors: str | None  # compute_fast's start flag (emit_compute.divisors_checked)
    stages: tuple[str, ...]  # the stage functions, Plane and plane_of (sampled kernels)
    pair_rows: tuple[str, ...]  # pair_origin / pair_row (column-pair sampling), else ()
    cpu_helpers: tuple[str, ...]  # the CPU sampling strategy's own functions

    @property
    def plane_arg(self) -> str:
        """What a call of compute_pixel passes before the pixel: the plane `z` when it takes one."""
        return "z, " if self.plane_values else ""

    @property
    def plane_param(self) -> str:
        """The parameter of a function that calls compute_pixel, for that plane."""
        return "fkl::i32 z, " if self.plane_values else ""


class Sampler(Protocol):
    """How a sampled chain samples its source (sampling.py's strategies): its part of the GPU entry and of the
    CPU loop."""

    def gpu_shared_taps(self, chain: ChainPlan, pixels: int) -> list[str]: ...
    def gpu_sample(self, chain: ChainPlan, pixels: int) -> list[str]: ...
    def cpu_functions(self, chain: ChainPlan) -> list[str]: ...
    def cpu_state(self, chain: ChainPlan) -> list[str]: ...
    def cpu_plane(self, chain: ChainPlan) -> list[str]: ...
    def cpu_row(self, chain: ChainPlan) -> list[str]: ...


class ChainSampling(NamedTuple):
    """A one-chain sampled kernel's sampling: the strategies of the GPU's wide entry and of the CPU loop, and
    which shared-tap samplers its source defines (`sample_taps`, `sample_pair` and its rows)."""

    gpu: Sampler
    cpu: Sampler
    block_taps: bool
    pair_taps: bool


class KernelPlan(NamedTuple):
    """What the templates print one kernel from."""

    name: str  # the fkl.kernel's symbol
    chains: tuple[ChainPlan, ...]
    layout: KernelLayout
    flat: FlatShape | PixelFlatShape | None  # a flat kernel's shape; None: a sampled kernel
    samplings: tuple[ChainSampling, ...]  # a sampled kernel's, one per chain; none for a flat kernel
    user_bodies: tuple[str, ...]  # the user ops' C++ bodies under their #line directives
    include_dirs: tuple[Path, ...]  # the user ops' folders


class BranchPlan(NamedTuple):
    """One read of a DAG kernel (SPEC §8) and the geometry it samples through: namespace b<k> of its C++."""

    stage: PixelType  # the pixel its last stage makes
    last_stage: int  # the number of its last stage function (0: the read itself)
    stages: tuple[str, ...]  # Plane, its stage functions (reading p.h's source or a p.in<i>), plane_of
    shares_plane: bool = False  # its Plane holds values (a resize's scales): a GPU block computes it once


class OutputPlan(NamedTuple):
    """One output of a DAG kernel: `store<k>` writes it."""

    surface: str  # the parameter block's record of its buffer: p.h (output 0) or p.out<k>
    write_kind: str  # "packed" | "planar"
    out: PixelType


class GraphPlan(NamedTuple):
    """What the templates print a DAG kernel from: its branches, its outputs, and `graph_pixel`'s body (each
    branch sampled, each op by its rule, each output stored), in the graph's order; a flat graph's `flat` shape,
    and then the body is `graph_values`' (its arguments' pixels in, its outputs' pixels out)."""

    name: str
    layout: KernelLayout
    branches: tuple[BranchPlan, ...]
    outputs: tuple[OutputPlan, ...]  # by output index
    body: tuple[str, ...]
    user_bodies: tuple[str, ...]
    include_dirs: tuple[Path, ...]
    flat: GraphFlatShape | None = None
