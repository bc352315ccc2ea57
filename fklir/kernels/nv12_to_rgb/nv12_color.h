// nv12_color.h — the colour arithmetic of nv12_to_rgb, shared by its CUDA, C++ and Highway sources.
//
// Integer fixed point with 20 fractional bits, the way OpenCV's cvtColor converts YUV420sp to RGB, so
// that BT.601 limited range (with OpenCV's own coefficients, which __init__.py passes) equals
// cv2.cvtColor bit for bit; the other standards and ranges pass their coefficients in the same form.
// The largest sum, (255 - 16) * cy + 127 * |cub|, stays below 2^31 for every standard and range.
#pragma once

#include "fkl/tensor_view.h"

namespace nv12 {

constexpr int kShift = 20;                // the coefficients' fractional bits
constexpr int kHalf = 1 << (kShift - 1);  // added before the final shift: round to nearest

// One standard and range, each coefficient times 2^20:
// R = cy (Y - y_offset) + cvr (V - 128),  G = cy (Y - y_offset) + cug (U - 128) + cvg (V - 128),
// B = cy (Y - y_offset) + cub (U - 128)
struct Coefficients {
    int y_offset, cy, cvr, cvg, cug, cub;
};

// The first byte of row `row` of frame `b` of a (B, rows, W) byte tensor
FKL_HD const fkl::u8* row_start(const fkl::TensorView& t, fkl::i64 b, fkl::i64 row) {
    return t.ptr<fkl::u8>() + b * t.strides[0] + row * t.strides[1];
}

// What one chroma sample adds to each channel of its 2x2 pixels, the rounding included.
struct Chroma {
    int r, g, b;
};

// chroma = kHalf + the U and V terms of R, G and B
FKL_HD Chroma chroma_terms(const Coefficients& k, int u, int v) {
    const int cb = u - 128, cr = v - 128;
    return {kHalf + k.cvr * cr, kHalf + k.cug * cb + k.cvg * cr, kHalf + k.cub * cb};
}

// luma = cy * max(Y - y_offset, 0): a Y below the range's black (footroom) is black, as in OpenCV
FKL_HD int luma_term(const Coefficients& k, int y) {
    const int above_black = y - k.y_offset;
    return (above_black > 0 ? above_black : 0) * k.cy;
}

// channel = clamp((luma + chroma) >> 20, 0, 255); >> of a negative int is arithmetic (floor), as OpenCV's
FKL_HD fkl::u8 channel(int luma, int chroma) {
    const int value = (luma + chroma) >> kShift;
    return fkl::u8(value < 0 ? 0 : value > 255 ? 255 : value);
}

// The R, G, B of one pixel: Y's term plus its chroma sample's, shifted and saturated
struct Rgb {
    fkl::u8 r, g, b;
};

FKL_HD Rgb pixel_rgb(const Coefficients& k, int y, const Chroma& c) {
    const int l = luma_term(k, y);
    return {channel(l, c.r), channel(l, c.g), channel(l, c.b)};
}

// pixel[0..2] = R, G, B (B, G, R when bgr)
FKL_HD void store_packed(fkl::u8* pixel, const Rgb& rgb, bool bgr) {
    pixel[0] = bgr ? rgb.b : rgb.r;
    pixel[1] = rgb.g;
    pixel[2] = bgr ? rgb.r : rgb.b;
}

// Pixels [begin, end) of one packed row: out[3x..3x+2] = R, G, B (B, G, R when bgr) of y[x] and the
// chroma pair (U, V) at uv[2 (x / 2)]
FKL_HD void packed_pixels(const fkl::u8* y, const fkl::u8* uv, fkl::u8* out, fkl::i64 begin, fkl::i64 end,
                          bool bgr, const Coefficients& k) {
    for (fkl::i64 x = begin; x < end; ++x) {
        const fkl::u8* pair = uv + (x & ~fkl::i64(1));
        store_packed(out + 3 * x, pixel_rgb(k, y[x], chroma_terms(k, pair[0], pair[1])), bgr);
    }
}

}  // namespace nv12
