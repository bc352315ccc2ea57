// fkl/color.h — ColorConversion: cv2.cvtColor on one pixel, for every element type.
//
// The channel-swap and alpha codes are reorders plus an opaque alpha; the gray codes are
//   integers: (9798 R + 19235 G + 3735 B + 16384) >> 15   (cv2's fixed point: equal to
//             cv2.cvtColor on all 2^24 uint8 colours; computed in i64, then wrapped to T)
//   floats:   0.299 R + 0.587 G + 0.114 B   (in f64, left to right, rounded once to T)
#pragma once

#include "core.h"
#include "cast.h"

namespace fkl {

// The alpha that the ...2RGBA / ...2BGRA codes append: 255 for u8, 65535 for u16, the largest
// value for the other integer types, 1 for floats, true for bool.
template <typename T>
struct OpaqueAlpha {
    static FKL_HD T value() { return Limits<T>::highest(); }
};
template <>
struct OpaqueAlpha<f32> {
    static FKL_HD f32 value() { return 1.0f; }
};
template <>
struct OpaqueAlpha<f64> {
    static FKL_HD f64 value() { return 1.0; }
};
template <>
struct OpaqueAlpha<f16> {
    static FKL_HD f16 value() { return f16{0x3c00u}; }
};
template <>
struct OpaqueAlpha<bf16> {
    static FKL_HD bf16 value() { return bf16{0x3f80u}; }
};

// gray(r, g, b): see the top of this file.
struct Gray {
    template <typename T>
    static FKL_HD T exec(T r, T g, T b) {
        static_assert(T(1) / T(2) == T(0), "integer template: floats have their own overloads");
        const i64 acc = 9798 * (i64)r + 19235 * (i64)g + 3735 * (i64)b + 16384;
        return (T)(u32)(u64)(acc >> 15);  // 8/16-bit results are always in range; wider ones wrap
    }
    static FKL_HD f64 weighted(f64 r, f64 g, f64 b) { return 0.299 * r + 0.587 * g + 0.114 * b; }
    static FKL_HD f64 exec(f64 r, f64 g, f64 b) { return weighted(r, g, b); }
    static FKL_HD f32 exec(f32 r, f32 g, f32 b) { return (f32)weighted(r, g, b); }
    static FKL_HD f16 exec(f16 r, f16 g, f16 b) {
        return f16_from_f64(weighted(to_f32(r), to_f32(g), to_f32(b)));
    }
    static FKL_HD bf16 exec(bf16 r, bf16 g, bf16 b) {
        return bf16_from_f64(weighted(to_f32(r), to_f32(g), to_f32(b)));
    }
};

// color_conversion(v): the reorder codes take channel Order[k] into output channel k, then an
// opaque alpha when AddAlpha; the gray codes read R at RedIndex, G at 1 and B at 2 - RedIndex.
struct ColorConversion {
    template <bool AddAlpha, int... Order, typename T>
    static FKL_HD void reorder(const T* in, T* out) {
        const int order[] = {Order...};
        const int n = (int)sizeof...(Order);
        for (int k = 0; k < n; ++k) {
            out[k] = in[order[k]];
        }
        if (AddAlpha) {
            out[n] = OpaqueAlpha<T>::value();
        }
    }

    template <int RedIndex, typename T>
    static FKL_HD void gray(const T* in, T out[1]) {
        out[0] = Gray::exec(in[RedIndex], in[1], in[2 - RedIndex]);
    }
};

}  // namespace fkl
