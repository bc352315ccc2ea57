"""Reference semantics of ColorConversion(code) -- OpenCV cvtColor meaning (SPEC §3).

Channel swaps, alpha add/drop and gray replication are exact reorders.  The gray codes use:

- float chains: 0.299 R + 0.587 G + 0.114 B, computed in float64 and rounded to the chain type
  (cv2 computes in float32 with float32 coefficients; the two differ by at most a few ulps);
- 8- and 16-bit chains: the fixed point (9798 R + 19235 G + 3735 B + 16384) >> 15, equal to
  cv2.cvtColor on all 2**24 uint8 colours and on uint16.  The reference applies the same formula to
  every integer type (arithmetic shift, i.e. floor, for signed ones) and wraps to the type;
  the weights sum to 2**15, so 8/16-bit results always stay in range.

Added alpha is the type's "opaque" value: 255 for uint8, 65535 for uint16, 1.0 for float types;
the other integer types (not in cvtColor) use their largest value, bool uses True.
"""

from __future__ import annotations

from typing import Final

import numpy as np

from fklir.dialects.color_codes import COLOR_CODES
from fklir.interpreters.semantics import Image, dtype_info, round_to_dtype, wrap_to_dtype

__all__ = ["alpha_value", "color_conversion"]


# Fixed-point gray weights (scale 2**15) and the float ones, in R, G, B order.
_GRAY_FIXED: Final = (9798, 19235, 3735)
_GRAY_SHIFT: Final = 15
_GRAY_FLOAT: Final = (0.299, 0.587, 0.114)


def alpha_value(dtype: str) -> float | int | bool:
    """The opaque alpha that RGB2RGBA-like codes append for a chain type."""
    info = dtype_info(dtype, "ColorConversion")
    if dtype == "bool":
        return True
    if info.is_float:
        return 1.0
    return int(info.hi)


def _normalise_code(code: str) -> str:
    name = code.upper()
    return name.removeprefix("COLOR_")


def _gray(img: Image, red_index: int) -> Image:
    red = img.data[..., red_index]
    green = img.data[..., 1]
    blue = img.data[..., 2 - red_index]
    if img.info.is_float:
        w_r, w_g, w_b = _GRAY_FLOAT
        gray = w_r * red.astype(np.float64) + w_g * green.astype(np.float64) + w_b * blue.astype(np.float64)
        return Image(round_to_dtype(gray[..., None], img.dtype), img.dtype)
    if img.dtype == "bool":
        raise ValueError("ColorConversion: gray conversion of a bool chain")
    w_r, w_g, w_b = _GRAY_FIXED
    acc = w_r * red.astype(np.int64) + w_g * green.astype(np.int64) + w_b * blue.astype(np.int64)
    gray_int = (acc + (1 << (_GRAY_SHIFT - 1))) >> _GRAY_SHIFT
    return Image(wrap_to_dtype(gray_int[..., None], img.dtype), img.dtype)


def color_conversion(img: Image, code: str) -> Image:
    """ColorConversion(code) with cv2.cvtColor meaning; the element type is kept."""
    name = _normalise_code(code)
    spec = COLOR_CODES.get(name)
    if spec is None:
        raise ValueError(f"ColorConversion: unsupported code {code!r}; expected one of {sorted(COLOR_CODES)}")
    if img.channels != spec.in_channels:
        raise ValueError(
            f"ColorConversion({name}): needs {spec.in_channels} input channels, the chain has {img.channels}"
        )
    if spec.red_index is not None:
        return _gray(img, spec.red_index)
    out = img.data[..., list(spec.order)]
    if spec.add_alpha:
        alpha = np.full((*out.shape[:3], 1), alpha_value(img.dtype), dtype=img.data.dtype)
        out = np.concatenate([out, alpha], axis=3)
    return Image(np.ascontiguousarray(out), img.dtype)
