"""The plan of one `fkl.kernel`: the one analysis of its IR that the emitters print from. Its chains, the
kernel's mode (flat: one run of elements, emit_flat; else pixel), each pixel chain's sampling strategies
(sampling.py) and the binary interface the host launches it with (KernelLayout: parameter block fields,
launch geometry), each chosen once."""

from __future__ import annotations

from typing import NamedTuple

from fklir.backend.chains import Chain, kernel_chains
from fklir.backend.cpp_types import image_of, slot_of
from fklir.backend.emit_compute import is_channelwise
from fklir.backend.emit_flat import FlatShape, PixelFlatShape, flat_shape, pixel_flat_shape
from fklir.backend.emit_rules import is_float_division
from fklir.backend.kernel_layout import KernelLayout
from fklir.backend.sampling import ChainSampling, choose_sampling
from fklir.dialects import fkl

PIXELS_PER_THREAD = 4  # pixel kernels (GPU): pixels per thread along x, PIXEL_BLOCK_X apart (RESULTS.md)


class KernelPlan(NamedTuple):
    """What the emitters print one kernel from."""

    chains: list[Chain]
    layout: KernelLayout
    flat: FlatShape | PixelFlatShape | None  # a flat kernel's shape; None: a pixel kernel
    samplings: tuple[ChainSampling, ...]  # a pixel kernel's, one per chain; none for a flat kernel


def plan_kernel(kernel: fkl.KernelOp) -> KernelPlan:
    """The plan of one hoisted, typed `fkl.kernel`."""
    chains = kernel_chains(kernel)
    first = chains[0]
    divergent = len(chains) > 1
    if divergent:
        _check_divergent(chains)
    flat = _flat_shape(first, len(first.read.sources) > 1) if _is_flat(chains) else None
    samplings = () if flat is not None else tuple(choose_sampling(chain) for chain in chains)
    return KernelPlan(chains, _layout(kernel, chains, flat, samplings), flat, samplings)


def layout_of(kernel: fkl.KernelOp) -> KernelLayout:
    """The binary interface of one hoisted, typed `fkl.kernel` (its plan's layout): its parameter block's
    fields (the C++ `Params` that emit_kernel prints and the ctypes struct of runtime/params.py are both made
    from it), its mode and what sets its launch geometry. No C++ is emitted to learn it."""
    return plan_kernel(kernel).layout


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
        mode="pixel" if flat is None else "flat",
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
