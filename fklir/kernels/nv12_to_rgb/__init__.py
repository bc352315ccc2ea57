"""nv12_to_rgb: NV12 video frames to packed RGB/BGR uint8 or planar float32 (SPEC §6.2), on the CPU or a GPU.

    from fklir.kernels.nv12_to_rgb import nv12_to_rgb

    rgb = nv12_to_rgb(frame)                    # cv2's layout (H * 3 / 2, W) uint8 -> (H, W, 3) uint8
    rgb = nv12_to_rgb(y, uv, order="BGR")       # planes: Y (H, W), interleaved UV (H / 2, W / 2, 2)
    x = nv12_to_rgb(frames, dtype="float32", normalize=True, standard="bt709")  # (B, ...) -> (B, 3, H, W)

A batch is a leading dimension on every input (B, ...); the output has it too. Inputs and outputs may be
numpy arrays or CPU torch tensors (the CPU kernel), or torch, CuPy and DeviceBuffer arrays on a CUDA
device (the GPU kernel, on `stream=` or the input's producer stream); a new output is made in the input's
framework. The Y and UV rows may have any pitch (a decoder's surface); the output is C-contiguous.

The arithmetic is OpenCV's integer fixed point (nv12_color.h): BT.601 limited range equals
cv2.cvtColor(frame, cv2.COLOR_YUV2RGB_NV12) bit for bit, and BT.709 or full range follow the standard's
matrix (see coefficients()). Each chroma sample serves its 2x2 pixels, as in cv2. The float32 output is
the uint8 result, planar, times 1/255 when normalize=True.

On the CPU the packed output uses the Highway version (nv12_to_rgb_hwy.cpp, the same results) when Debian's
libhwy-dev is installed; `highway=False` takes the plain C++ one, `highway=True` requires Highway.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import astuple, dataclass
from typing import Any

import numpy as np

from fklir import jit
from fklir.jit import highway as jit_highway
from fklir.jit import tensors
from fklir.jit.matcher import ANY
from fklir.jit.warm_calls import WarmCalls
from fklir.runtime import interop
from fklir.runtime.device_buffer import DeviceBuffer

__all__ = ["Coefficients", "coefficients", "nv12_to_rgb"]

NAME = "nv12_to_rgb"
STANDARDS = {"bt601": (0.299, 0.114), "bt709": (0.2126, 0.0722)}  # ITU-R's (Kr, Kb)
ORDERS = ("RGB", "BGR")
DTYPES = ("uint8", "float32")  # packed (..., H, W, 3) and planar (..., 3, H, W)
SHIFT = 20  # nv12_color.h's kShift: the coefficients' fractional bits


@dataclass(frozen=True)
class Coefficients:
    """One standard and range in nv12_color.h's fixed point (times 2^20), in its argument order."""

    y_offset: int
    cy: int
    cvr: int
    cvg: int
    cug: int
    cub: int


# OpenCV's YUV420sp -> RGB constants (1.164, 1.596, -0.813, -0.391 and 2.018 times 2^20, color_yuv.simd.hpp):
# BT.601 limited range takes them as they are, so that it equals cv2.cvtColor bit for bit.
OPENCV_BT601 = Coefficients(y_offset=16, cy=1220542, cvr=1673527, cvg=-852492, cug=-409993, cub=2116026)


def coefficients(standard: str, full_range: bool) -> Coefficients:
    """The fixed-point coefficients of ITU-R `standard` ("bt601" or "bt709") and range.

    R = Y' + 2 (1 - Kr) Cr',  G = Y' - 2 Kr (1 - Kr) / Kg Cr' - 2 Kb (1 - Kb) / Kg Cb',  B = Y' + 2 (1 - Kb) Cb'
    with Kg = 1 - Kr - Kb; full range: Y' = Y, Cb' = U - 128, Cr' = V - 128; limited range:
    Y' = (Y - 16) 255 / 219 (a Y below 16 counts as 16, as in OpenCV), Cb' = (U - 128) 255 / 224, likewise Cr'.
    BT.601 limited range is OpenCV's rounding of these (OPENCV_BT601)."""
    if standard not in STANDARDS:
        raise ValueError(f"{NAME}: standard must be one of {', '.join(STANDARDS)}, got {standard!r}")
    if standard == "bt601" and not full_range:
        return OPENCV_BT601
    kr, kb = STANDARDS[standard]
    kg = 1 - kr - kb
    luma_scale, chroma_scale = (1.0, 1.0) if full_range else (255 / 219, 255 / 224)

    def fixed(value: float) -> int:
        return round(value * (1 << SHIFT))

    return Coefficients(
        y_offset=0 if full_range else 16,
        cy=fixed(luma_scale),
        cvr=fixed(2 * (1 - kr) * chroma_scale),
        cvg=fixed(-2 * kr * (1 - kr) / kg * chroma_scale),
        cug=fixed(-2 * kb * (1 - kb) / kg * chroma_scale),
        cub=fixed(2 * (1 - kb) * chroma_scale),
    )


# ----- the kernels ---------------------------------------------------------------------------------------

B, H, W = jit.SymbolicSize("B"), jit.SymbolicSize("H"), jit.SymbolicSize("W")
ROWS = (ANY, ANY, 1)  # a (B, rows, W) byte tensor: any frame and row pitch, a row's bytes adjacent


def _arguments(out: jit.TensorMatcher) -> list[tuple[str, object]]:
    """The sources' parameters after `out` (nv12_to_rgb.cpp describes them)."""
    rows = jit.TensorMatcher((B, ANY, W)).with_dtype("uint8").with_strides(ROWS)
    return [
        ("out", out),
        ("y", rows),
        ("uv", rows),
        ("uv_row", "int32"),
        ("bgr", "bool"),
        *((field, "int32") for field in Coefficients.__dataclass_fields__),
    ]


RUN = 16  # pixels per packed thread and row (nv12_to_rgb.cuh's 2 kPackedSamples)
WARPS = 4  # warps per packed block, one chroma row each (kPackedWarps)


def _packed_grid(B: int, H: int, W: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """One thread per run of RUN pixels on two rows, a warp per 32 runs of a chroma row, blocks of WARPS warps."""
    return ((-(-W // (32 * RUN)), -(-(H // 2) // WARPS), B), (32, WARPS, 1))


def _planar_grid(B: int, H: int, W: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """One thread per chroma sample (2x2 pixels), blocks of 64 x 2."""
    return ((-(-(W // 2) // 64), -(-(H // 2) // 2), B), (64, 2, 1))


PACKED = jit.kernel(
    "nv12_to_rgb_packed",
    cuda="nv12_to_rgb.cuh",
    cpu="nv12_to_rgb.cpp",
    args=_arguments(jit.TensorMatcher((B, H, W, 3)).with_dtype("uint8")),
    grid=_packed_grid,
)
PLANAR = jit.kernel(
    "nv12_to_rgb_planar",
    cuda="nv12_to_rgb.cuh",
    cpu="nv12_to_rgb.cpp",
    args=[*_arguments(jit.TensorMatcher((B, 3, H, W)).with_dtype("float32")), ("scale", "float32")],
    grid=_planar_grid,
)


@functools.cache
def highway_kernel() -> jit.Kernel:
    """The packed kernel's Highway version (CPU only); without Highway its call raises a RuntimeError naming
    Debian's libhwy-dev (fklir/jit/highway.py)."""
    return jit.kernel(
        "nv12_to_rgb_packed_hwy",
        cpu="nv12_to_rgb_hwy.cpp",
        args=_arguments(jit.TensorMatcher((B, H, W, 3)).with_dtype("uint8")),
        highway=True,
    )


# ----- the call ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Frames:
    """A call's input as the kernels take it: (B, rows, W) Y and UV byte rows, UV starting at uv_row."""

    y: Any
    uv: Any
    uv_row: int
    batch: tuple[int, ...]  # () for one frame, (B,) for a batch
    height: int
    width: int
    first: tensors.Tensor  # the Y (or single-buffer) input, described: its framework and device


def _reshaped(x: Any, shape: tuple[int, ...]) -> Any:
    """`x` viewed with `shape`: a DeviceBuffer over the same memory, else the framework's reshape."""
    if isinstance(x, DeviceBuffer):
        return DeviceBuffer.from_ptr(x.ptr, shape, x.dtype_name, stream=x.stream, device=x.device, owner=x)
    return x.reshape(shape)


def _bytes(x: object, what: str, ranks: tuple[int, ...], expected: str) -> tensors.Tensor:
    tensor = tensors.describe(x, what)
    if tensor.dtype != "uint8":
        raise TypeError(f"{NAME}: {what} must be uint8, got {tensor.dtype}")
    if len(tensor.shape) not in ranks:
        raise ValueError(f"{NAME}: {what} must be {expected}, got shape {tensor.shape}")
    return tensor


def _check_size(height: int, width: int) -> None:
    for name, size in (("width", width), ("height", height)):
        if size % 2:
            raise ValueError(
                f"{NAME}: NV12 needs an even width and height (a chroma sample per 2x2 pixels), got {name} {size}"
            )


def _frames(frame: object, uv: object) -> _Frames:
    if uv is None:
        single = _bytes(frame, "frame", (2, 3), "(H * 3 / 2, W) or (B, H * 3 / 2, W), cv2's NV12 layout")
        *batch, rows, width = single.shape
        if rows % 3:
            raise ValueError(f"{NAME}: frame has {rows} rows, not H * 3 / 2 (H rows of Y, H / 2 of UV)")
        height = rows * 2 // 3
        _check_size(height, width)
        frames = frame if batch else _reshaped(frame, (1, rows, width))
        return _Frames(frames, frames, height, tuple(batch), height, width, single)
    y = _bytes(frame, "y", (2, 3), "(H, W) or (B, H, W)")
    *batch, height, width = y.shape
    _check_size(height, width)
    expected = (*batch, height // 2, width // 2, 2)
    pairs = _bytes(uv, "uv", (len(expected),), f"{expected} (H / 2, W / 2, 2) for y of shape {y.shape}")
    if pairs.shape != expected:
        raise ValueError(f"{NAME}: uv must be {expected} (H / 2, W / 2, 2) for y of shape {y.shape}, got {pairs.shape}")
    frames = frame if batch else _reshaped(frame, (1, height, width))
    uv_rows = _reshaped(uv, (batch[0] if batch else 1, height // 2, width))
    return _Frames(frames, uv_rows, 0, tuple(batch), height, width, y)


def _empty(like: Any, tensor: tensors.Tensor, shape: tuple[int, ...], dtype: str) -> Any:
    """A new C-contiguous array in `like`'s framework and on its device."""
    if tensor.framework == "numpy":
        return np.empty(shape, dtype)
    if tensor.framework == "torch":
        return like.new_empty(shape, dtype=getattr(sys.modules["torch"], dtype))
    assert tensor.device is not None  # only numpy and torch arrays live on the host
    return interop.empty_like_framework(tensor.framework, shape, dtype, tensor.device, like)[0]


def _image_shape(frames: _Frames, planar: bool) -> tuple[int, int, int]:
    """One output image's shape: planar (3, H, W) or packed (H, W, 3)."""
    return (3, frames.height, frames.width) if planar else (frames.height, frames.width, 3)


def _output(out: object, frames: _Frames, planar: bool) -> tuple[Any, Any]:
    """(the array the call returns: the caller's `out`, checked, or a new one; that array as (B, ...), which
    the kernel writes)."""
    image = _image_shape(frames, planar)
    shape, dtype = (*frames.batch, *image), DTYPES[planar]
    if out is None:
        out = _empty(frames.y, frames.first, shape, dtype)
    else:
        given = tensors.describe(out, "out")
        if given.shape != shape or given.dtype != dtype:
            raise ValueError(f"{NAME}: out must be {dtype} of shape {shape}, got {given.dtype} of shape {given.shape}")
        if planar and given.device is not None and given.ptr % 8:
            raise ValueError(
                f"{NAME}: a GPU out must start at a multiple of 8 bytes (float2 stores), got {given.ptr:#x}"
            )
    return out, out if frames.batch else _reshaped(out, (1, *image))


def _kernel(planar: bool, use_highway: bool | None, on_cpu: bool) -> jit.Kernel:
    if use_highway and (planar or not on_cpu):
        raise ValueError(f"{NAME}: highway=True is for the CPU's packed uint8 output")
    if planar:
        return PLANAR
    if not on_cpu or use_highway is False or (use_highway is None and not jit_highway.highway_available()):
        return PACKED
    return highway_kernel()


_warm = WarmCalls()


@functools.cache
def _coefficient_values(standard: str, full_range: bool) -> tuple[int, ...]:
    """coefficients() as the kernels' int arguments, once per (standard, range): a call does not rebuild them."""
    return astuple(coefficients(standard, full_range))


def nv12_to_rgb(
    frame: Any,
    uv: Any = None,
    *,
    order: str = "RGB",
    dtype: str = "uint8",
    normalize: bool = False,
    standard: str = "bt601",
    full_range: bool = False,
    highway: bool | None = None,
    out: Any = None,
    stream: object = None,
) -> Any:
    """NV12 frame(s) to RGB (see the module docstring); returns `out` or a new array.

    frame: the Y plane (H, W) with `uv` (H / 2, W / 2, 2), or without `uv` the single buffer (H * 3 / 2, W)
    that cv2 takes (Y rows, then UV rows); (B, ...) for a batch. order: "RGB" or "BGR". dtype: "uint8"
    (packed (..., H, W, 3)) or "float32" (planar (..., 3, H, W)), times 1/255 when `normalize`. standard:
    "bt601" or "bt709"; full_range: Y and UV span 0..255 rather than 16..235 / 16..240. highway: None uses
    Highway on the CPU when installed, False never, True requires it. stream: the GPU stream to launch on.
    Errors: ValueError for odd sizes, shapes that do not agree or unknown options; TypeError for non-uint8
    inputs; RuntimeError naming libhwy-dev for highway=True without Highway."""
    options = (order, dtype, normalize, standard, full_range, highway)
    # (a GPU float32 output must start at a multiple of 8 bytes, as _output checks: the only alignment asked)
    if (warm := _warm.run((frame, uv, out), options, stream, 2, (0, 0, 8) if dtype == "float32" else ())) is not None:
        return warm
    if order not in ORDERS:
        raise ValueError(f"{NAME}: order must be one of {', '.join(ORDERS)}, got {order!r}")
    if dtype not in DTYPES:
        raise ValueError(f"{NAME}: dtype must be uint8 (packed) or float32 (planar), got {dtype!r}")
    planar = dtype == "float32"
    if normalize and not planar:
        raise ValueError(f"{NAME}: normalize=True scales the float32 output; the uint8 output is 0..255")
    k = _coefficient_values(standard, full_range)
    frames = _frames(frame, uv)
    result, written = _output(out, frames, planar)
    launch = _kernel(planar, highway, frames.first.device is None)
    values: list[object] = [written, frames.y, frames.uv, frames.uv_row, order == "BGR", *k]
    if planar:
        values.append(1 / 255 if normalize else 1.0)
    launch(*values, stream=stream)
    first = frames.first
    if first.device is not None:
        made = None
        if out is None:  # a repeated call makes its output as this one did, in the input's framework
            shape = (*frames.batch, *_image_shape(frames, planar))
            make = interop.output_maker(first.framework, frame, shape, DTYPES[planar], first.device)
            made = (2, result, make)
        _warm.remember((frame, uv, out), options, stream, launch, values, made)
    return result
