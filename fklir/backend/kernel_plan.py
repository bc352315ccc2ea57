"""The plan of one `fkl.kernel`: the one analysis of its IR that the templates print from (plan.py's records).
Its chains, the kernel's mode (flat: one run of elements, emit_flat; else sampled), each sampled chain's sampling
strategies (sampling.py), the code each chain's ops lower to by their rules (emit_compute, emit_geometry,
emit_user) and the binary interface the host launches it with (KernelLayout: parameter block fields, launch
geometry), each chosen once. `emit_kernel` is the two together: plan, then print (emit_cpp.render)."""

from __future__ import annotations

from fklir.backend.chains import Chain, kernel_chains
from fklir.backend.emit_compute import (
    divisors_checked,
    emit_compute_element,
    emit_compute_fast,
    emit_compute_pixel,
    is_channelwise,
)
from fklir.backend.emit_cpp import USER_BODIES_LINE, EmittedKernel, render, render_graph
from fklir.backend.emit_flat import FlatShape, PixelFlatShape, flat_shape, pixel_flat_shape
from fklir.backend.emit_geometry import (
    emit_nearest_columns,
    emit_pair_rows,
    emit_row_span,
    emit_stages,
    emit_warp_rows,
    has_block_taps,
    has_nearest_columns,
    has_pair_taps,
    has_row_spans,
    has_warp_rows,
    shares_plane,
)
from fklir.backend.emit_rules import is_float_division
from fklir.backend.emit_user import emit_user_bodies, user_declarations, user_include_dirs
from fklir.backend.graph_plan import plan_graph
from fklir.backend.kernel_layout import PIXELS_PER_THREAD, KernelLayout
from fklir.backend.plan import ChainPlan, ChainSampling, KernelPlan, Sampler
from fklir.backend.sampling import BlockTaps, NearestColumns, PairTaps, PixelTaps, RowSpans, WarpRows
from fklir.backend.typed_ir import image_of, pixel_of, slot_of
from fklir.dialects import fkl


def plan_kernel(kernel: fkl.KernelOp) -> KernelPlan:
    """The plan of one hoisted, typed `fkl.kernel`."""
    chains = kernel_chains(kernel)
    first = chains[0]
    divergent = len(chains) > 1
    if divergent:
        _check_divergent(chains)
    flat = _flat_shape(first, len(first.read.sources) > 1) if _is_flat(chains) else None
    samplings = () if flat is not None else tuple(choose_sampling(chain) for chain in chains)
    layout = _layout(kernel, chains, flat, samplings)
    counts = {name: count for name, _, count in layout.slots}
    plans = tuple(_chain_plan(chain, flat, s, counts) for chain, s in zip(chains, samplings or [None], strict=False))
    declarations = user_declarations(kernel)
    return KernelPlan(
        kernel.sym_name.data,
        plans,
        layout,
        flat,
        samplings,
        tuple(emit_user_bodies(declarations, USER_BODIES_LINE)),
        user_include_dirs(declarations),
    )


def emit_kernel(kernel: fkl.KernelOp) -> EmittedKernel:
    """The C++ translation unit and host layout of one hoisted, typed `fkl.kernel`: its plan, printed (a DAG
    kernel's by graph_plan and render_graph)."""
    if kernel.is_graph():
        return render_graph(plan_graph(kernel))
    return render(plan_kernel(kernel))


def layout_of(kernel: fkl.KernelOp) -> KernelLayout:
    """The binary interface of one hoisted, typed `fkl.kernel` (its plan's layout): its parameter block's
    fields (the C++ `Params` that emit_kernel prints and the ctypes struct of runtime/params.py are both made
    from it), its mode and what sets its launch geometry. No C++ is emitted to learn it."""
    if kernel.is_graph():
        return plan_graph(kernel).layout
    return plan_kernel(kernel).layout


def choose_sampling(chain: Chain) -> ChainSampling:
    """The sampling strategies of a sampled chain, each predicate of emit_geometry asked once."""
    block = has_block_taps(chain.geometry)
    pair = has_pair_taps(chain.read, chain.geometry)
    gpu: Sampler = PairTaps() if pair else BlockTaps() if block else PixelTaps()
    if has_row_spans(chain.read, chain.geometry):
        cpu: Sampler = RowSpans()
    elif has_warp_rows(chain.read, chain.geometry):
        cpu = WarpRows()
    elif has_nearest_columns(chain.read, chain.geometry):
        cpu = NearestColumns()
    else:
        cpu = gpu
    return ChainSampling(gpu, cpu, block, pair)


def _cpu_helpers(chain: Chain, cpu: Sampler, counts: dict[str, int]) -> list[str]:
    """The functions a CPU strategy's loop calls that the chain's geometry ops lower to."""
    if isinstance(cpu, RowSpans):
        return emit_row_span(chain.read, chain.geometry, counts)
    if isinstance(cpu, WarpRows):
        return emit_warp_rows(chain.read, chain.geometry)
    if isinstance(cpu, NearestColumns):
        return emit_nearest_columns(chain.read, chain.geometry, counts)
    return []


def _chain_plan(
    chain: Chain, flat: FlatShape | PixelFlatShape | None, sampling: ChainSampling | None, counts: dict[str, int]
) -> ChainPlan:
    """The chain's record: its pixels and layouts, and the code of its ops that the kernel's mode prints."""
    stage, out = chain.stage_type, chain.out_type
    per_element = isinstance(flat, FlatShape)
    compute_pixel = () if per_element else emit_compute_pixel(chain.compute, *pixel_of(stage), *pixel_of(out))
    source = image_of(chain.read.source_type)
    return ChainPlan(
        source=pixel_of(source),
        stage=pixel_of(stage),
        out=pixel_of(out),
        write_kind=chain.write_kind,
        read_kind=chain.read_kind,
        last_stage=len(chain.geometry),
        writes_stage=not chain.compute and stage == out,
        plane_values=chain.plane_values,
        shares_plane=shares_plane(chain.geometry),
        compute_pixel=tuple(compute_pixel),
        compute_element=tuple(emit_compute_element(chain.compute, source.dtype, out.dtype)) if per_element else (),
        compute_fast=tuple(emit_compute_fast(chain.compute, source.dtype, out.dtype)) if per_element else (),
        divisors=divisors_checked(chain.compute) if per_element else None,
        stages=tuple(emit_stages(chain.read, chain.geometry, counts)) if sampling is not None else (),
        pair_rows=tuple(emit_pair_rows(chain.read, chain.geometry, counts)) if sampling and sampling.pair_taps else (),
        cpu_helpers=tuple(_cpu_helpers(chain, sampling.cpu, counts)) if sampling is not None else (),
    )


def _layout(
    kernel: fkl.KernelOp,
    chains: list[Chain],
    flat: FlatShape | PixelFlatShape | None,
    samplings: tuple[ChainSampling, ...],
) -> KernelLayout:
    first = chains[0]
    in_type = image_of(first.read.source_type)
    out_type = first.out_type
    slots = kernel.params.slots
    counts = {name: count for name, _, count in slots}
    divergent = len(chains) > 1
    return KernelLayout(
        mode="sampled" if flat is None else "flat",
        elements_per_thread=1 if flat is None else flat.per_thread,
        slots=tuple(slots),
        in_dtype=in_type.dtype,
        in_channels=in_type.channels.data,
        in_planes=in_type.planes.data,
        out_dtype=out_type.dtype,
        out_channels=out_type.channels.data,
        out_planes=counts[fkl.PLANE_MAP_SLOT] if divergent else out_type.planes.data,
        write=first.write_kind,
        src_table=len(first.read.sources) if len(first.read.sources) > 1 else 0,
        read=first.read_kind,
        dst_table=out_type.channels.data if first.write_kind == "split_write" else 0,
        reciprocals=float_divisor_slots(chains),
        flat_block=0 if flat is None else flat.threads,
        pixels_per_thread=PIXELS_PER_THREAD if flat is None else 1,
        # a column pair needs two source columns: narrower sources launch the narrow entry
        wide_min_src_w=2 if not divergent and samplings and samplings[0].pair_taps else 1,
    )


def float_divisor_slots(chains: list[Chain]) -> tuple[str, ...]:
    """Slots that divide a float32 chain: the host also packs their reciprocals (`<slot>_rcp`), so
    a GPU division is a product and one FMA correction (fkl::Div), never a per-element reciprocal."""
    return tuple(slot_of(op) for chain in chains for op in chain.compute if is_float_division(op))


def _check_divergent(chains: list[Chain]) -> None:
    out_types = {(c.out_type.dtype, c.out_type.channels.data) for c in chains}
    if len(out_types) > 1:
        raise ValueError(f"divergent chains must all produce one output type, got {sorted(out_types)}")
    if len({c.write_kind for c in chains}) > 1 or len({tuple(c.read.sources) for c in chains}) > 1:
        raise ValueError("divergent chains must share one write layout and one source (an image or a pointer table)")


def _is_flat(chains: list[Chain]) -> bool:
    """A single chain of a packed read (one image or a list), no geometry and a packed write: its ops
    then see each pixel on its own, so the image is one run of pixels (emit_flat). Not when an op takes
    values per plane: a run of elements does not know its plane."""
    if len(chains) > 1:
        return False
    (chain,) = chains
    packed = chain.read_kind == "packed" and chain.write_kind == "packed"
    return packed and not chain.geometry and not chain.plane_values


def _flat_shape(chain: Chain, table: bool) -> FlatShape | PixelFlatShape:
    """Channel-wise ops run per element (FlatShape); ops that mix or change channels per pixel."""
    in_type, out_type = image_of(chain.read.source_type), chain.out_type
    if is_channelwise(chain.compute):
        return flat_shape(in_type.dtype, out_type.dtype, in_type.channels.data, table=table)
    return pixel_flat_shape(in_type.dtype, in_type.channels.data, out_type.dtype, out_type.channels.data, table)
