// fkl/cast.h — element type conversions: Cast, SaturateCast, Saturate, SaturateFloat.
//
// Call as fkl::Cast<fkl::u8>::exec(x) / fkl::SaturateCast<fkl::u8>::exec(x); the source type
// is deduced from x.
#pragma once

#include "core.h"

namespace fkl {

namespace detail {

// Any element value as f64. Exact for every element type (all integers have at most 32 bits).
template <typename T>
FKL_HD f64 to_f64(T x) { return (f64)x; }
FKL_HD f64 to_f64(f16 x) { return (f64)to_f32(x); }
FKL_HD f64 to_f64(bf16 x) { return (f64)to_f32(x); }

// Round to the nearest integer, ties to even. rintf/rint round in the current rounding mode,
// which is round-to-nearest-even by default on the CPU and always on the GPU (cvt.rni).
FKL_HD f32 round_half_even(f32 x) { return rintf(x); }
FKL_HD f64 round_half_even(f64 x) { return rint(x); }

// The core of every integer SaturateCast: NaN -> 0, clamp to [lo, hi], round half to even.
// lo and hi must be integers exactly representable in F, so the result converts to the target
// type without overflow.
template <typename F>
FKL_HD F clamp_and_round(F x, F lo, F hi) {
    if (x != x) {
        return F(0);
    }
    if (x <= lo) {
        return lo;
    }
    if (x >= hi) {
        return hi;
    }
    return round_half_even(x);
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Cast<To>: the C conversion (float -> integer truncates toward zero; out of range is
// unspecified). f16 / bf16 convert through f32 (or, from f64, with one single rounding).
// ---------------------------------------------------------------------------------------------

// To = bool, an integer type, f32 or f64.
template <typename To>
struct Cast {
    template <typename From>
    static FKL_HD To exec(From x) { return (To)x; }
    static FKL_HD To exec(f16 x) { return (To)to_f32(x); }
    static FKL_HD To exec(bf16 x) { return (To)to_f32(x); }
};

// 8- and 16-bit integers to f32 exactly: on the GPU, by placing the integer in the mantissa of
// 1.5 * 2^23 and subtracting it again (full-rate float ops instead of the quarter-rate convert).
template <>
struct Cast<f32> {
    template <typename From>
    static FKL_HD f32 exec(From x) {
#if defined(FKL_DEVICE_CODE)
        if (sizeof(From) <= 2 && From(1) / From(2) == From(0)) {
            // Unsigned values fill only the low 16 bits, so OR places them (one LOP3 with the byte
            // extract); signed ones need the carry of an addition.
            const bool is_signed = From(-1) < From(0);
            const u32 bits = is_signed ? 0x4B400000u + (u32)(i32)x : 0x4B400000u | (u32)x;
            return f32_from_bits(bits) - 12582912.0f;
        }
#endif
        return (f32)x;
    }
    static FKL_HD f32 exec(f16 x) { return to_f32(x); }
    static FKL_HD f32 exec(bf16 x) { return to_f32(x); }
};

// 8- and 16-bit integers to f64 exactly, the same way with 2^52 + 2^51: one f64 addition instead
// of the GPU's slow integer-to-double convert (Warping and Deinterlace blend their taps in f64).
template <>
struct Cast<f64> {
    template <typename From>
    static FKL_HD f64 exec(From x) {
#if defined(FKL_DEVICE_CODE)
        if (sizeof(From) <= 2 && From(1) / From(2) == From(0)) {
            return f64_from_bits(0x4338000000000000ull + (u64)(i64)x) - 6755399441055744.0;
        }
#endif
        return (f64)x;
    }
    static FKL_HD f64 exec(f16 x) { return (f64)to_f32(x); }
    static FKL_HD f64 exec(bf16 x) { return (f64)to_f32(x); }
};

template <>
struct Cast<f16> {
    // Integers go through f64, which holds them exactly, so they are rounded once.
    template <typename From>
    static FKL_HD f16 exec(From x) { return f16_from_f64((f64)x); }
    static FKL_HD f16 exec(f32 x) { return f16_from_f32(x); }
    static FKL_HD f16 exec(f16 x) { return x; }
    static FKL_HD f16 exec(bf16 x) { return f16_from_f32(to_f32(x)); }
};

template <>
struct Cast<bf16> {
    template <typename From>
    static FKL_HD bf16 exec(From x) { return bf16_from_f64((f64)x); }
    static FKL_HD bf16 exec(f32 x) { return bf16_from_f32(x); }
    static FKL_HD bf16 exec(f16 x) { return bf16_from_f32(to_f32(x)); }
    static FKL_HD bf16 exec(bf16 x) { return x; }
};

// ---------------------------------------------------------------------------------------------
// SaturateCast<To>: clamp to To's range, then round half to even (0.5 -> 0, 1.5 -> 2,
// 2.5 -> 2, -2.5 -> -2). Integer targets: NaN -> 0. Float targets: clamp to the finite range
// (+-Inf -> +-largest finite), NaN stays NaN. bool target: [0, 1] like an integer (x > 0.5 for floats).
// ---------------------------------------------------------------------------------------------

// To = an integer type (u8 i8 u16 i16 i32 u32).
template <typename To>
struct SaturateCast {
    // Every source value is exact in f64, and so are all integer bounds.
    template <typename From>
    static FKL_HD To exec(From x) {
        const f64 lo = (f64)Limits<To>::lowest();
        const f64 hi = (f64)Limits<To>::highest();
        return (To)detail::clamp_and_round(detail::to_f64(x), lo, hi);
    }
    // The hot path (f32 -> u8 and friends): 8- and 16-bit bounds are exact in f32, so clamp and
    // round there (one cvt.rni on the GPU). 32-bit bounds are not (2^31 - 1 rounds up to 2^31
    // in f32), so those go through f64.
    static FKL_HD To exec(f32 x) {
        if (sizeof(To) <= 2) {
            const f32 lo = (f32)Limits<To>::lowest();
            const f32 hi = (f32)Limits<To>::highest();
#if defined(FKL_DEVICE_CODE)
            // Same result without the GPU's quarter-rate round and convert units: clamp, then add
            // 1.5 * 2^23, where the float spacing is 1, so the addition itself rounds half to even;
            // the low 16 bits of the sum are the rounded value (two's complement), which the
            // narrowing conversion keeps. fmaxf maps NaN to lo, which is the answer when lo is 0.
            const f32 clamped = fminf(fmaxf(x, lo), hi);
            const To rounded = (To)bits_of(clamped + 12582912.0f);
            if (lo < 0.0f && x != x) return To(0);
            return rounded;
#elif defined(__AVX512BW__)
            // The same addition on the CPU, then the clamp on the sum's bits: they order like the values
            // (negative sums below every bound), so the clamp is integer max and min and the narrowing
            // conversion keeps the low bits, which AVX-512 packs without a word shuffle. A NaN is tested on
            // x, which AVX-512 folds into the addition as a zeroing mask; 0x4B400000 is 0's sum.
            const i32 bottom = (i32)bits_of(lo + 12582912.0f);
            const i32 top = (i32)bits_of(hi + 12582912.0f);
            const i32 sum = (i32)bits_of(x + 12582912.0f);
            const i32 above = sum > bottom ? sum : bottom;
            const i32 clamped = above < top ? above : top;
            return (To)(x == x ? clamped : (i32)0x4B400000);
#else
            // The same addition on the CPU, before the clamp: the sum is then computed on every path,
            // so g++ may if-convert the comparisons (a float addition that only some paths make could
            // trap, which keeps the branches) and the loops around it vectorise. Rounding is monotonic
            // and lo + 1.5 * 2^23, hi + 1.5 * 2^23 are exact, with a spacing of 1 between them, so the
            // clamped sum is x clamped and rounded. A NaN fails the first comparison and becomes lo.
            const f32 shifted = x + 12582912.0f;
            const f32 above = shifted > lo + 12582912.0f ? shifted : lo + 12582912.0f;
            const f32 clamped = above < hi + 12582912.0f ? above : hi + 12582912.0f;
            const To rounded = (To)bits_of(clamped);
            return lo < 0.0f && x != x ? To(0) : rounded;
#endif
        }
        return exec<f64>((f64)x);
    }
    static FKL_HD To exec(f16 x) { return exec(to_f32(x)); }
    static FKL_HD To exec(bf16 x) { return exec(to_f32(x)); }
};

template <>
struct SaturateCast<bool> {
    // Clamp to [0, 1], then round half to even: an integer is true from 1 up, a float above 0.5
    // (0.5 rounds to 0; NaN compares false, so it gives 0 as SPEC asks).
    template <typename From>
    static FKL_HD bool exec(From x) { return x >= From(1); }
    static FKL_HD bool exec(bool x) { return x; }
    static FKL_HD bool exec(f32 x) { return x > 0.5f; }
    static FKL_HD bool exec(f64 x) { return x > 0.5; }
    static FKL_HD bool exec(f16 x) { return to_f32(x) > 0.5f; }
    static FKL_HD bool exec(bf16 x) { return to_f32(x) > 0.5f; }
};

template <>
struct SaturateCast<f64> {
    template <typename From>
    static FKL_HD f64 exec(From x) {
        const f64 v = detail::to_f64(x);
        const f64 hi = Limits<f64>::highest();
        if (v > hi) {
            return hi;
        }
        if (v < -hi) {
            return -hi;
        }
        return v;  // NaN falls through both tests
    }
};

template <>
struct SaturateCast<f32> {
    template <typename From>
    static FKL_HD f32 exec(From x) {
        // Clamping in f64 before rounding to f32 keeps values between the largest f32 and
        // Inf from rounding up to Inf.
        const f64 v = detail::to_f64(x);
        const f64 hi = (f64)Limits<f32>::highest();
        if (v > hi) {
            return (f32)hi;
        }
        if (v < -hi) {
            return (f32)-hi;
        }
        return (f32)v;
    }
    static FKL_HD f32 exec(f32 x) {
        const f32 hi = Limits<f32>::highest();
        return x > hi ? hi : (x < -hi ? -hi : x);
    }
};

template <>
struct SaturateCast<f16> {
    template <typename From>
    static FKL_HD f16 exec(From x) {
        const f64 v = detail::to_f64(x);
        const f64 hi = (f64)Limits<f16>::highest();
        return f16_from_f64(v > hi ? hi : (v < -hi ? -hi : v));
    }
    static FKL_HD f16 exec(f32 x) {
        const f32 hi = Limits<f16>::highest();
        return f16_from_f32(x > hi ? hi : (x < -hi ? -hi : x));
    }
    static FKL_HD f16 exec(f16 x) { return exec(to_f32(x)); }
    static FKL_HD f16 exec(bf16 x) { return exec(to_f32(x)); }
};

template <>
struct SaturateCast<bf16> {
    template <typename From>
    static FKL_HD bf16 exec(From x) {
        const f64 v = detail::to_f64(x);
        const f64 hi = (f64)Limits<bf16>::highest();
        return bf16_from_f64(v > hi ? hi : (v < -hi ? -hi : v));
    }
    static FKL_HD bf16 exec(f32 x) {
        const f32 hi = Limits<bf16>::highest();
        return bf16_from_f32(x > hi ? hi : (x < -hi ? -hi : x));
    }
    static FKL_HD bf16 exec(f16 x) { return exec(to_f32(x)); }
    static FKL_HD bf16 exec(bf16 x) { return exec(to_f32(x)); }
};

// ---------------------------------------------------------------------------------------------
// Clamps that keep the type
// ---------------------------------------------------------------------------------------------

// saturate(x, lo, hi) = x < lo ? lo : (x > hi ? hi : x)  (NaN passes through)
struct Saturate {
    template <typename T>
    static FKL_HD T exec(T x, T lo, T hi) { return x < lo ? lo : (x > hi ? hi : x); }
    static FKL_HD f16 exec(f16 x, f16 lo, f16 hi) {
        const f32 v = to_f32(x);
        return v < to_f32(lo) ? lo : (v > to_f32(hi) ? hi : x);
    }
    static FKL_HD bf16 exec(bf16 x, bf16 lo, bf16 hi) {
        const f32 v = to_f32(x);
        return v < to_f32(lo) ? lo : (v > to_f32(hi) ? hi : x);
    }
};

// saturate_float(x) = x < 0 ? 0 : (x > 1 ? 1 : x)  (NaN passes through)
struct SaturateFloat {
    template <typename T>
    static FKL_HD T exec(T x) { return x < T(0) ? T(0) : (x > T(1) ? T(1) : x); }
    static FKL_HD f16 exec(f16 x) {
        const f32 v = to_f32(x);
        return v < 0.0f ? f16{0x0000u} : (v > 1.0f ? f16{0x3c00u} : x);
    }
    static FKL_HD bf16 exec(bf16 x) {
        const f32 v = to_f32(x);
        return v < 0.0f ? bf16{0x0000u} : (v > 1.0f ? bf16{0x3f80u} : x);
    }
};

}  // namespace fkl
