"""`fkl.compose(*ops, target=...)` and `fkl.compose_divergent(plane_map, *chains)`: lazy pipelines,
compiled per input signature on first use.

Cold path (once per element type / channels / planes / list length / device): descriptors → fkl IR
→ default passes → C++ → compiled kernel (memory or disk cache) → launch plan with its values
packed. Warm path: check the input, compute the output size from the descriptors, allocate the
output, fill the parameter header, launch. The warm path touches no xDSL object.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from xdsl.dialects.builtin import ModuleOp
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from fklir.diagnostics import OpError, first_invalid_op, located_message
from fklir.frontend import ops as fops
from fklir.runtime.launch import CpuLaunch, Extent, GpuLaunch, LaunchPlan

TARGETS = ("gpu", "cpu")


@dataclass(frozen=True)
class Signature:
    """What the compiled kernel depends on (sizes are not part of it)."""

    dtype: str
    channels: int
    planes: int
    batched: bool  # the input has a leading plane dimension
    images: int = 0  # > 0: a list of this many same-size images (one plane each)


def input_signature(shape: tuple[int, ...], dtype: str) -> tuple[Signature, int, int]:
    """(signature, width, height) of an input shape: (H, W), (H, W, C) with C in 2..4, (B, H, W[, C])."""
    if len(shape) == 2:
        return Signature(dtype, 1, 1, False), shape[1], shape[0]
    if len(shape) == 3 and 2 <= shape[2] <= 4:
        return Signature(dtype, shape[2], 1, False), shape[1], shape[0]
    if len(shape) == 3:
        return Signature(dtype, 1, shape[0], True), shape[2], shape[1]
    if len(shape) == 4 and 1 <= shape[3] <= 4:
        return Signature(dtype, shape[3], shape[0], True), shape[2], shape[1]
    raise ValueError(
        f"TensorRead: cannot read an input of shape {shape}; expected (H, W), (H, W, C) with C in 2..4, "
        "(B, H, W) or (B, H, W, C)"
    )


def _check_structure(ops: Sequence[fops.Op], where: str = "compose") -> None:
    if not ops or not isinstance(ops[0], fops.TensorRead):
        raise ValueError(f"{where}: a chain starts with TensorRead()")
    if not isinstance(ops[-1], fops.WRITE_DESCRIPTORS):
        raise ValueError(f"{where}: a chain ends with TensorWrite() or TensorSplit()")
    after_read = True
    for op in ops[1:-1]:
        if not isinstance(op, fops.Op):
            raise TypeError(f"{where}: {op!r} is not an fklir op")
        if isinstance(op, (fops.TensorRead, *fops.WRITE_DESCRIPTORS)):
            raise ValueError(f"{where}: {op.op_name} may only start or end the chain")
        if isinstance(op, fops.Geometry) and not after_read:
            raise ValueError(
                f"{where}: {op.op_name} must come right after TensorRead or another geometry op "
                "(geometry folds into the read)"
            )
        after_read = after_read and isinstance(op, fops.Geometry)
    if sum(1 for op in ops if isinstance(op, fops.Crop) and op.batched) > 1:
        raise ValueError(f"{where}: only one Crop([rects]) per chain")


def _geometry(chain: Sequence[fops.Op]) -> list[fops.Geometry]:
    return [op for op in chain if isinstance(op, fops.Geometry)]


def _out_sizes(geometry: Sequence[fops.Geometry], sizes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    for op in geometry:
        sizes = op.out_sizes(sizes)
    return sizes


class Pipeline:
    """A composed chain. Call it on an image (or a list of same-size images); `ir()` and
    `source_for()` show what it compiles to."""

    def __init__(self, ops: Sequence[fops.Op], target: str = "gpu"):
        if target not in TARGETS:
            raise ValueError(f"compose: target must be 'gpu' or 'cpu', got {target!r}")
        _check_structure(ops)
        self.chains: tuple[tuple[fops.Op, ...], ...] = (tuple(ops),)
        self.plane_map: tuple[int, ...] | None = None
        self.target = target
        self.planar = isinstance(ops[-1], fops.TensorSplit)
        self.crop_batched = any(isinstance(op, fops.Crop) and op.batched for op in ops)
        self._plans: dict[tuple[Signature, int], LaunchPlan] = {}
        self._last_signature: Signature | None = None

    @property
    def ops(self) -> tuple[fops.Op, ...]:
        return self.chains[0]

    # ---- cold path ------------------------------------------------------------------------------

    def _module(self, sig: Signature) -> ModuleOp:
        from fklir.frontend.lowering import lower_pipeline, run_passes

        module = lower_pipeline(self.chains, sig.dtype, sig.channels, sig.planes, sig.images, self.plane_map)
        try:
            return run_passes(module)
        except OpError as e:
            raise ValueError(located_message(e.op, str(e))) from None
        except VerifyException as e:
            failure = first_invalid_op(module)
            raise ValueError(located_message(*failure) if failure else str(e)) from None

    def _plan(self, sig: Signature, device: int) -> LaunchPlan:
        if (plan := self._plans.get((sig, device))) is not None:
            return plan
        from fklir.backend.build import build_kernel
        from fklir.frontend.lowering import kernels_of

        (kernel,) = kernels_of(self._module(sig))
        built = build_kernel(kernel, self.target, device)
        launch_type = CpuLaunch if self.target == "cpu" else GpuLaunch
        plan = launch_type(built.entry, built.layout, built.values)
        self._plans[(sig, device)] = plan
        return plan

    def _signature_for(self, dtype: str | None, shape: Sequence[int] | None) -> Signature:
        if dtype is None and shape is None:
            if self._last_signature is None:
                raise ValueError("call the pipeline once, or pass dtype and shape, e.g. ir('uint8', (1080, 1920, 3))")
            return self._last_signature
        if dtype is None or shape is None:
            raise ValueError("give both dtype and shape")
        return input_signature(tuple(shape), dtype)[0]

    def ir(self, dtype: str | None = None, shape: Sequence[int] | None = None) -> str:
        """The fkl IR after the default passes, as text (for the last call's input, or the given one)."""
        return _print(self._module(self._signature_for(dtype, shape)))

    def source_for(self, dtype: str, shape: Sequence[int]) -> str:
        """The C++ that this pipeline compiles for an input of `dtype` and `shape`."""
        from fklir.backend.emit_cpp import emit_kernel
        from fklir.frontend.lowering import kernels_of

        (kernel,) = kernels_of(self._module(self._signature_for(dtype, shape)))
        return emit_kernel(kernel).source

    # ---- warm path ------------------------------------------------------------------------------

    def _extent(self, sig: Signature, width: int, height: int, out_channels: int) -> Extent:
        in_planes = sig.images or sig.planes
        sizes = _out_sizes(_geometry(self.chains[0]), [(width, height)] * in_planes)
        if len(set(sizes)) > 1:
            raise ValueError(
                f"Crop: the rects give planes of different sizes {sorted(set(sizes))}; put a Resize after the Crop"
            )
        (dst_w, dst_h) = sizes[0]
        return Extent(width, height, in_planes, sig.channels, dst_w, dst_h, len(sizes), out_channels)

    def _out_shape(self, sig: Signature, e: Extent) -> tuple[int, ...]:
        batched = sig.batched or self.crop_batched or sig.images > 0 or self.plane_map is not None
        if self.planar:
            core: tuple[int, ...] = (e.channels_out, e.dst_h, e.dst_w)
        else:
            core = (e.dst_h, e.dst_w) + ((e.channels_out,) if e.channels_out > 1 else ())
        return ((e.dst_planes,) if batched else ()) + core

    def __call__(self, x: object, out: object = None, stream: object = None) -> Any:
        if self.target == "cpu":
            return self._call_cpu(x, out, stream)
        return self._call_gpu(x, out, stream)

    def _call_cpu(self, x: object, out: object, stream: object) -> np.ndarray[Any, Any]:
        from fklir.runtime.interop import describe_host_array

        if stream is not None:
            raise ValueError("the CPU target has no streams: call without stream=")
        sources = [describe_host_array(a, f"TensorRead input {i}") for i, a in enumerate(_as_list(x))]
        sig, width, height = self._input(x, [(s.shape, s.dtype_name) for s in sources])
        plan = self._plan(sig, 0)
        e = self._extent(sig, width, height, plan.layout.out_channels)
        shape = self._out_shape(sig, e)
        dtype = plan.layout.out_dtype
        if out is None:
            result: np.ndarray[Any, Any] = np.empty(shape, dtype=np.dtype(dtype))
        else:
            dst = describe_host_array(out, "out")
            if dst.shape != shape or dst.dtype_name != dtype or not dst.writeable:
                raise ValueError(
                    f"out: expected a writeable {dtype} array of shape {shape}, got {dst.dtype_name} {dst.shape}"
                )
            result = out  # pyright: ignore[reportAssignmentType]
        if result.size:
            plan.set_sources([s.ptr for s in sources])
            plan.run(sources[0].ptr, result.ctypes.data, e)  # pyright: ignore[reportCallIssue]
        return result

    def _input(self, x: object, described: list[tuple[tuple[int, ...], str]]) -> tuple[Signature, int, int]:
        """Signature and size of the input (one array, or a list of same-size images)."""
        shape, dtype = described[0]
        for i, (other_shape, other_dtype) in enumerate(described[1:], start=1):
            if (other_shape, other_dtype) != (shape, dtype):
                raise ValueError(
                    f"TensorRead: list input {i} is {other_dtype} {other_shape}, input 0 is {dtype} {shape}; "
                    "a batch of images must share one shape and dtype"
                )
        sig, width, height = input_signature(shape, dtype)
        if isinstance(x, list | tuple):
            if sig.batched:
                raise ValueError("TensorRead: a list input holds single images (H, W[, C]), not batches")
            if self.plane_map is not None or self.crop_batched:
                raise ValueError(
                    "TensorRead: a list of images cannot be combined with Crop([rects]) or divergent chains"
                )
            sig = Signature(sig.dtype, sig.channels, 1, False, len(described))
        self._last_signature = sig
        return sig, width, height

    def _call_gpu(self, x: object, out: object, stream: object) -> Any:
        from fklir.backend import cuda_driver
        from fklir.runtime.interop import describe_gpu_array, empty_like_framework

        sources = [describe_gpu_array(a, f"TensorRead input {i}") for i, a in enumerate(_as_list(x))]
        src = sources[0]
        if any(s.device != src.device for s in sources):
            raise ValueError(f"TensorRead: list inputs are on devices {[s.device for s in sources]}; use one device")
        sig, width, height = self._input(x, [(s.shape, s.dtype_name) for s in sources])
        cuda_driver.ensure_context(src.device)
        plan = self._plan(sig, src.device)
        e = self._extent(sig, width, height, plan.layout.out_channels)
        shape = self._out_shape(sig, e)
        dtype = plan.layout.out_dtype
        if out is None:
            result, dst_ptr = empty_like_framework(src.framework, shape, dtype, src.device, src.obj)
        else:
            dst = describe_gpu_array(out, "out")
            if dst.shape != shape or dst.dtype_name != dtype or dst.device != src.device:
                raise ValueError(
                    f"out: expected a {dtype} array of shape {shape} on device {src.device}, "
                    f"got {dst.dtype_name} {dst.shape} on device {dst.device}"
                )
            result, dst_ptr = out, dst.ptr
        handle, owned = _launch_stream(src, stream)
        if e.dst_w * e.dst_h * e.dst_planes:
            plan.set_sources([s.ptr for s in sources])
            plan.run(src.ptr, dst_ptr, e, handle)  # pyright: ignore[reportCallIssue]
        if owned:
            cuda_driver.synchronize(handle)
        return result


class DivergentPipeline(Pipeline):
    """Several chains in one kernel: output plane z is produced by chain plane_map[z]."""

    def __init__(self, plane_map: Sequence[int], chains: Sequence[Sequence[fops.Op] | Pipeline], target: str):
        if target not in TARGETS:
            raise ValueError(f"compose_divergent: target must be 'gpu' or 'cpu', got {target!r}")
        op_chains = [tuple(c.ops) if isinstance(c, Pipeline) else tuple(c) for c in chains]
        if not op_chains:
            raise ValueError("compose_divergent: give at least one chain")
        for chain in op_chains:
            _check_structure(chain, "compose_divergent")
            if any(isinstance(op, fops.Crop) and op.batched for op in chain):
                raise ValueError("compose_divergent: a chain takes one rect per Crop, not a list")
        _check_plane_map(plane_map, len(op_chains))
        if len({type(c[-1]) for c in op_chains}) > 1:
            raise ValueError("compose_divergent: all chains must end with the same write (TensorWrite or TensorSplit)")
        super().__init__(op_chains[0], target)
        self.chains = tuple(op_chains)
        self.plane_map = tuple(int(k) - 1 for k in plane_map)

    def _extent(self, sig: Signature, width: int, height: int, out_channels: int) -> Extent:
        planes = len(self.plane_map or ())
        if sig.planes not in (1, planes):
            raise ValueError(
                f"compose_divergent: the input has {sig.planes} planes; "
                f"give one image or one per output plane ({planes})"
            )
        sizes = {tuple(_out_sizes(_geometry(chain), [(width, height)])[0]) for chain in self.chains}
        if len(sizes) > 1:
            raise ValueError(f"compose_divergent: the chains produce different sizes {sorted(sizes)}; all must match")
        ((dst_w, dst_h),) = sizes
        return Extent(width, height, sig.planes, sig.channels, dst_w, dst_h, planes, out_channels)


def _check_plane_map(plane_map: Sequence[int], chains: int) -> None:
    if not plane_map:
        raise ValueError("compose_divergent: plane_map is empty")
    for z, k in enumerate(plane_map):
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= chains:
            raise ValueError(f"compose_divergent: plane_map[{z}] = {k!r}; chains are numbered 1..{chains}")
    unused = sorted(set(range(1, chains + 1)) - {int(k) for k in plane_map})
    if unused:
        raise ValueError(f"compose_divergent: chain(s) {unused} are not used by plane_map")


def _as_list(x: object) -> list[object]:
    if isinstance(x, list | tuple):
        if not x:
            raise ValueError("TensorRead: the input list is empty")
        return list(x)
    return [x]


def _launch_stream(src: Any, stream: object) -> tuple[int, bool]:
    """(stream handle, whether we must synchronize before returning).

    A caller's stream is used as is. Without one we launch where the input's producer queued its
    work (torch/CuPy current stream, or the stream the array advertises) so that we never race it,
    else on fklir's internal stream; then we synchronize.
    """
    from fklir.backend import cuda_driver
    from fklir.runtime.interop import stream_handle

    if stream is not None:
        return stream_handle(stream), False
    if src.framework == "torch":
        import torch  # pyright: ignore[reportMissingImports]

        return int(torch.cuda.current_stream(src.device).cuda_stream), True
    if src.framework == "cupy":
        import cupy  # pyright: ignore[reportMissingImports]

        return int(cupy.cuda.get_current_stream().ptr), True
    if src.stream:
        return int(src.stream), True
    return cuda_driver.internal_stream(src.device), True


def _print(module: ModuleOp) -> str:
    import io

    out = io.StringIO()
    Printer(stream=out).print_op(module)
    return out.getvalue() + "\n"


def compose(*ops: fops.Op, target: str = "gpu") -> Pipeline:
    """One fused kernel for the chain `ops` (TensorRead() ... TensorWrite())."""
    return Pipeline(ops, target)


def compose_divergent(
    plane_map: Sequence[int], *chains: Sequence[fops.Op] | Pipeline, target: str = "gpu"
) -> DivergentPipeline:
    """One kernel whose output plane z runs chain plane_map[z] (1-based); all chains write one tensor.

    The input is one image (every plane reads it) or a batch with one image per output plane.
    """
    return DivergentPipeline(plane_map, chains, target)
