// fkl/join.h — the ops that join two images of a DAG (SPEC §8) beyond arith.h's Add ... Min, Equal and
// math.h's AbsDiff, which fkl.join calls on two elements of the chain type: Blend and Composite.
//
// Both mix in f64 and round once to the chain type T: a float type by its conversion (to nearest),
// an integer type as SaturateCast does (NaN -> 0, clamped, to nearest with ties to even).
#pragma once

#include "core.h"
#include "cast.h"

namespace fkl {

namespace detail {

// A mix's f64 value as T: integers saturated (to nearest, ties to even), floats converted.
template <typename T>
FKL_HD T mixed_as(f64 v) { return SaturateCast<T>::exec(v); }
template <>
FKL_HD f16 mixed_as<f16>(f64 v) { return Cast<f16>::exec(v); }
template <>
FKL_HD bf16 mixed_as<bf16>(f64 v) { return Cast<bf16>::exec(v); }
template <>
FKL_HD f32 mixed_as<f32>(f64 v) { return (f32)v; }
template <>
FKL_HD f64 mixed_as<f64>(f64 v) { return v; }

}  // namespace detail

// Composite's weight m of a mask element: mask / 255 for a uint8 mask, 0 or 1 for bool, the value for floats.
FKL_HD f64 mask_weight(u8 m) { return (f64)m / 255.0; }
FKL_HD f64 mask_weight(bool m) { return m ? 1.0 : 0.0; }
FKL_HD f64 mask_weight(f16 m) { return (f64)to_f32(m); }
FKL_HD f64 mask_weight(bf16 m) { return (f64)to_f32(m); }
FKL_HD f64 mask_weight(f32 m) { return (f64)m; }
FKL_HD f64 mask_weight(f64 m) { return m; }

// a * alpha + b * (1 - alpha)
struct Blend {
    template <typename T>
    static FKL_HD T exec(T a, T b, f64 alpha) {
        return detail::mixed_as<T>(detail::to_f64(a) * alpha + detail::to_f64(b) * (1.0 - alpha));
    }
};

// a * m + b * (1 - m), m = mask_weight(mask) (cvcuda.composite: the foreground a over the background b)
struct Composite {
    template <typename T, typename M>
    static FKL_HD T exec(T a, T b, M mask) {
        const f64 m = mask_weight(mask);
        return detail::mixed_as<T>(detail::to_f64(a) * m + detail::to_f64(b) * (1.0 - m));
    }
    // The same for unsigned 8- and 16-bit images through a uint8 mask, in integers: round((a m + b (255 - m)) /
    // 255) = (2 n + 255) / 510. n / 255 is never a half and the f64 formula is within 1e-10 of it, 1/510 away
    // from a half at least, so both round alike; no f64 division per pixel.
    static FKL_HD u8 exec(u8 a, u8 b, u8 mask) { return (u8)unsigned_mix(a, b, mask); }
    static FKL_HD u16 exec(u16 a, u16 b, u8 mask) { return (u16)unsigned_mix(a, b, mask); }

private:
    static FKL_HD u32 unsigned_mix(u32 a, u32 b, u32 m) { return (2u * (a * m + b * (255u - m)) + 255u) / 510u; }
};

}  // namespace fkl
