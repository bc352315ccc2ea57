"""`fkl.compose(*ops, target=...)`: a lazy pipeline, compiled per input signature on first use.

Cold path (once per element type / channel count / plane count): descriptors → fkl IR → default
passes → C++ → compiled kernel (memory or disk cache) → launch plan with its values packed.
Warm path: check the input, compute the output size from the descriptors, allocate the output,
fill the parameter header, launch. The warm path touches no xDSL object.
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
from fklir.runtime.launch import CpuLaunch, Extent, GpuLaunch

TARGETS = ("gpu", "cpu")


@dataclass(frozen=True)
class Signature:
    """What the compiled kernel depends on (sizes are not part of it)."""

    dtype: str
    channels: int
    planes: int
    batched: bool  # the input has a leading plane dimension


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


def _check_structure(ops: Sequence[fops.Op]) -> None:
    if not ops or not isinstance(ops[0], fops.TensorRead):
        raise ValueError("compose: a chain starts with TensorRead()")
    if not isinstance(ops[-1], fops.WRITE_DESCRIPTORS):
        raise ValueError("compose: a chain ends with TensorWrite() or TensorSplit()")
    after_read = True
    for op in ops[1:-1]:
        if not isinstance(op, fops.Op):
            raise TypeError(f"compose: {op!r} is not an fklir op")
        if isinstance(op, (fops.TensorRead, *fops.WRITE_DESCRIPTORS)):
            raise ValueError(f"compose: {op.op_name} may only start or end the chain")
        if isinstance(op, fops.Geometry) and not after_read:
            raise ValueError(
                f"compose: {op.op_name} must come right after TensorRead or another geometry op "
                "(geometry folds into the read)"
            )
        after_read = after_read and isinstance(op, fops.Geometry)


class Pipeline:
    """A composed chain. Call it on an image; `ir()` and `source_for()` show what it compiles to."""

    def __init__(self, ops: Sequence[fops.Op], target: str = "gpu"):
        if target not in TARGETS:
            raise ValueError(f"compose: target must be 'gpu' or 'cpu', got {target!r}")
        _check_structure(ops)
        self.ops = tuple(ops)
        self.target = target
        self.geometry = tuple(op for op in self.ops if isinstance(op, fops.Geometry))
        self.planar = isinstance(self.ops[-1], fops.TensorSplit)
        self.crop_batched = any(isinstance(op, fops.Crop) and op.batched for op in self.ops)
        self._plans: dict[tuple[Signature, int], Any] = {}
        self._last_signature: Signature | None = None

    # ---- cold path ------------------------------------------------------------------------------

    def _module(self, sig: Signature) -> ModuleOp:
        from fklir.frontend.lowering import lower_chain, run_passes

        module = lower_chain(self.ops, sig.dtype, sig.channels, sig.planes)
        try:
            return run_passes(module)
        except OpError as e:
            raise ValueError(located_message(e.op, str(e))) from None
        except VerifyException as e:
            failure = first_invalid_op(module)
            raise ValueError(located_message(*failure) if failure else str(e)) from None

    def _plan(self, sig: Signature, device: int) -> Any:
        if (plan := self._plans.get((sig, device))) is not None:
            return plan
        from fklir.backend.build import build_kernel
        from fklir.frontend.lowering import kernels_of

        (kernel,) = kernels_of(self._module(sig))
        built = build_kernel(kernel, self.target, device)
        layout = built.layout
        launch_type = CpuLaunch if self.target == "cpu" else GpuLaunch
        plan = launch_type(
            built.entry, layout.mode, layout.elements_per_thread, layout.write, layout.slots, built.values
        )
        plan.layout = layout  # pyright: ignore[reportAttributeAccessIssue]
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
        module = self._module(self._signature_for(dtype, shape))
        return _print(module)

    def source_for(self, dtype: str, shape: Sequence[int]) -> str:
        """The C++ that this pipeline compiles for an input of `dtype` and `shape`."""
        from fklir.backend.emit_cpp import emit_kernel
        from fklir.frontend.lowering import kernels_of

        (kernel,) = kernels_of(self._module(self._signature_for(dtype, shape)))
        return emit_kernel(kernel).source

    # ---- warm path ------------------------------------------------------------------------------

    def _extent(self, sig: Signature, width: int, height: int, out_channels: int) -> Extent:
        sizes = [(width, height)] * sig.planes
        for op in self.geometry:
            sizes = op.out_sizes(sizes)
        if len(set(sizes)) > 1:
            raise ValueError(
                f"Crop: the rects give planes of different sizes {sorted(set(sizes))}; put a Resize after the Crop"
            )
        (dst_w, dst_h) = sizes[0]
        return Extent(width, height, sig.planes, sig.channels, dst_w, dst_h, len(sizes), out_channels)

    def _out_shape(self, sig: Signature, e: Extent) -> tuple[int, ...]:
        batched = sig.batched or self.crop_batched
        if self.planar:
            core: tuple[int, ...] = (e.channels_out, e.dst_h, e.dst_w)
        else:
            core = (e.dst_h, e.dst_w) + ((e.channels_out,) if e.channels_out > 1 else ())
        return ((e.dst_planes,) if batched else ()) + core

    def __call__(self, x: object, out: object = None, stream: object = None) -> Any:
        if isinstance(x, list | tuple):
            raise TypeError("pipe([x0, x1, ...]): batches of separate images are not supported yet; stack them")
        if self.target == "cpu":
            return self._call_cpu(x, out, stream)
        return self._call_gpu(x, out, stream)

    def _call_cpu(self, x: object, out: object, stream: object) -> np.ndarray[Any, Any]:
        from fklir.runtime.interop import describe_host_array

        if stream is not None:
            raise ValueError("the CPU target has no streams: call without stream=")
        src = describe_host_array(x, "TensorRead input")
        sig, width, height = input_signature(src.shape, src.dtype_name)
        self._last_signature = sig
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
            plan.run(src.ptr, result.ctypes.data, e)
        return result

    def _call_gpu(self, x: object, out: object, stream: object) -> Any:
        from fklir.backend import cuda_driver
        from fklir.runtime.interop import describe_gpu_array, empty_like_framework

        src = describe_gpu_array(x, "TensorRead input")
        sig, width, height = input_signature(src.shape, src.dtype_name)
        self._last_signature = sig
        cuda_driver.ensure_context(src.device)
        plan = self._plan(sig, src.device)
        e = self._extent(sig, width, height, plan.layout.out_channels)
        shape = self._out_shape(sig, e)
        dtype = plan.layout.out_dtype
        if out is None:
            result, dst_ptr = empty_like_framework(src.framework, shape, dtype, src.device, x)
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
            plan.run(src.ptr, dst_ptr, e, handle)
        if owned:
            cuda_driver.synchronize(handle)
        return result


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
