// fkl/core.h — the foundation of the fklir op library.
//
// Every header in fkl/ compiles unchanged with three compilers:
//   g++   -std=c++17 -O3 -fopenmp        (CPU target)
//   nvcc  -std=c++17 -cubin -arch=sm_90  (GPU target, host + device passes)
//   NVRTC --std=c++17 -arch=sm_90        (GPU target, runtime compilation)
// NVRTC has no include path, so under __CUDACC_RTC__ nothing here includes a system header:
// the fixed-width types are spelled with builtin types, and the few math functions used
// (rintf, rint) are CUDA builtins there.
//
// This file holds: the FKL_HD qualifier, the element typedefs, Rect, the f16/bf16 storage
// types with exact bit-level conversions, and Limits<T>.
#pragma once

#if !defined(__CUDACC_RTC__)
#include <cmath>
#include <cstdint>
#include <cstring>
#endif

// FKL_HD marks a function usable from host and device code.
#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define FKL_HD __host__ __device__ inline
#else
#define FKL_HD inline
#endif

// FKL_DEVICE_CODE is defined while the compiler generates device code (nvcc's device pass, or NVRTC).
#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
#define FKL_DEVICE_CODE 1
#endif

namespace fkl {

// ---------------------------------------------------------------------------------------------
// Element types
// ---------------------------------------------------------------------------------------------
#if defined(__CUDACC_RTC__)
typedef unsigned char u8;
typedef signed char i8;
typedef unsigned short u16;
typedef short i16;
typedef int i32;
typedef unsigned int u32;
typedef long long i64;
typedef unsigned long long u64;
#else
typedef std::uint8_t u8;
typedef std::int8_t i8;
typedef std::uint16_t u16;
typedef std::int16_t i16;
typedef std::int32_t i32;
typedef std::uint32_t u32;
typedef std::int64_t i64;
typedef std::uint64_t u64;
#endif
typedef float f32;
typedef double f64;

static_assert(sizeof(u8) == 1 && sizeof(i8) == 1, "8-bit types");
static_assert(sizeof(u16) == 2 && sizeof(i16) == 2, "16-bit types");
static_assert(sizeof(u32) == 4 && sizeof(i32) == 4, "32-bit types");
static_assert(sizeof(u64) == 8 && sizeof(i64) == 8, "64-bit types");
static_assert(sizeof(f32) == 4 && sizeof(f64) == 8, "IEEE binary32 / binary64");

// A rectangle in pixels: top-left corner (x, y), width w, height h.
struct Rect {
    i32 x, y, w, h;
};

// ---------------------------------------------------------------------------------------------
// Bit casts between floats and unsigned integers of the same width
// ---------------------------------------------------------------------------------------------
// Device code has intrinsics for this; host code uses memcpy (the defined way in C++17).

FKL_HD u32 bits_of(f32 x) {
#if defined(FKL_DEVICE_CODE)
    return __float_as_uint(x);
#else
    u32 b;
    std::memcpy(&b, &x, sizeof b);
    return b;
#endif
}

FKL_HD f32 f32_from_bits(u32 b) {
#if defined(FKL_DEVICE_CODE)
    return __uint_as_float(b);
#else
    f32 x;
    std::memcpy(&x, &b, sizeof x);
    return x;
#endif
}

FKL_HD u64 bits_of(f64 x) {
#if defined(FKL_DEVICE_CODE)
    return (u64)__double_as_longlong(x);
#else
    u64 b;
    std::memcpy(&b, &x, sizeof b);
    return b;
#endif
}

FKL_HD f64 f64_from_bits(u64 b) {
#if defined(FKL_DEVICE_CODE)
    return __longlong_as_double((long long)b);
#else
    f64 x;
    std::memcpy(&x, &b, sizeof x);
    return x;
#endif
}

// ---------------------------------------------------------------------------------------------
// Half precision storage types
// ---------------------------------------------------------------------------------------------
// f16 is IEEE binary16 (1 sign, 5 exponent, 10 mantissa bits); bf16 is the top half of a
// binary32 (1 sign, 8 exponent, 7 mantissa bits). Both are storage only: arithmetic converts
// to f32, computes, and rounds back. The conversions are plain bit manipulation, so they give
// the same bits on the CPU, under nvcc and under NVRTC without cuda_fp16.h.

struct f16 {
    u16 bits;
};

struct bf16 {
    u16 bits;
};

// f16 -> f32 is exact: every binary16 value is a binary32 value. The GPU converts with its cvt
// instruction (the bit manipulation below costs a few dozen instructions an element, which made
// flat f16 chains compute-bound) and gives a NaN the bit path's result, so that its payload stays
// the CPU's. A select, not a branch: a branch around each conversion made the compiler bracket
// every one with a reconvergence barrier, and flat f16 chains compute-bound again.
FKL_HD f32 to_f32(f16 h) {
#if defined(__CUDA_ARCH__)
    f32 x;
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h.bits));
    // sign | 0x7f800000 | payload << 13: the sign-extended bits shifted left by 13 put the sign in
    // bit 31 and the payload in place; the OR fills the exponent (and the copies of the sign)
    const u32 nan = ((u32)(i32)(i16)h.bits << 13) | 0x7f800000u;
    return x == x ? x : f32_from_bits(nan);
#else
    const u32 sign = (u32)(h.bits & 0x8000u) << 16;
    const u32 exponent = (h.bits >> 10) & 0x1fu;
    const u32 mantissa = h.bits & 0x3ffu;
    if (exponent == 0x1fu) {  // Inf or NaN: keep the payload
        return f32_from_bits(sign | 0x7f800000u | (mantissa << 13));
    }
    if (exponent != 0) {  // normal: rebias the exponent from 15 to 127
        return f32_from_bits(sign | ((exponent + 112u) << 23) | (mantissa << 13));
    }
    // zero or subnormal: value = mantissa * 2^-24, exact in f32
    const f32 magnitude = (f32)mantissa * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
#endif
}

// f32 -> f16, round to nearest, ties to even; overflow gives Inf, NaN stays NaN (quiet). The GPU's
// cvt.rn rounds the same way; a NaN again takes the bit path's result, through a select.
FKL_HD f16 f16_from_f32(f32 x) {
#if defined(__CUDA_ARCH__)
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    // sign | 0x7e00 | top payload bits: a NaN's bits shifted arithmetically by 16 put its sign in
    // bit 15 above exponent ones in bits 9-14 (0x7e00, the quiet bit included); shifted by 13,
    // its top 9 payload bits in bits 0-8
    const u32 b = bits_of(x);
    const u16 nan = (u16)(((b >> 13) & 0x1ffu) | ((u32)((i32)b >> 16) & ~0x1ffu));
    return f16{x == x ? h : nan};
#else
    const u32 b = bits_of(x);
    const u16 sign = (u16)((b >> 16) & 0x8000u);
    const u32 magnitude = b & 0x7fffffffu;
    if (magnitude > 0x7f800000u) {  // NaN: set the quiet bit, keep the top payload bits
        return f16{(u16)(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
    }
    if (magnitude >= 0x477ff000u) {  // >= 65520 (halfway past the largest f16, 65504) and Inf
        return f16{(u16)(sign | 0x7c00u)};
    }
    if (magnitude >= 0x38800000u) {  // >= 2^-14: a normal f16
        // Drop 13 mantissa bits rounding half to even: add just under half an ulp, plus one
        // when the kept part is odd. A carry out of the mantissa correctly bumps the exponent.
        const u32 kept_is_odd = (magnitude >> 13) & 1u;
        const u32 rounded = magnitude + 0xfffu + kept_is_odd;
        return f16{(u16)(sign | ((rounded - (112u << 23)) >> 13))};
    }
    if (magnitude <= 0x33000000u) {  // <= 2^-25: rounds to zero (2^-25 itself is a tie to even 0)
        return f16{sign};
    }
    // Subnormal f16: the result is round(x / 2^-24), an integer in [1, 1024] (1024 is the
    // smallest normal and encodes correctly). x = m * 2^(e - 150) with the implicit bit in m.
    const u32 exponent = magnitude >> 23;              // 103 .. 112 here
    const u32 m = (magnitude & 0x7fffffu) | 0x800000u;  // 24-bit significand
    const u32 shift = 126u - exponent;                  // 14 .. 23
    const u32 quotient = m >> shift;
    const u32 remainder = m & ((1u << shift) - 1u);
    const u32 half = 1u << (shift - 1u);
    const bool round_up = remainder > half || (remainder == half && (quotient & 1u));
    return f16{(u16)(sign | (quotient + (round_up ? 1u : 0u)))};
#endif
}

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
// The f16 conversions' fast path (the flat kernels' compute_fast): cvt alone, which gives every number
// the exact conversion's result; `fast` clears on a NaN, whose bits only the exact conversions give as
// the CPU does, and the caller then recomputes the group with them.
__device__ inline f32 f32_of_f16_fast(f16 h, bool& fast) {
    f32 x;
    asm("cvt.f32.f16 %0, %1;" : "=f"(x) : "h"(h.bits));
    fast = fast & (x == x);
    return x;
}

__device__ inline f16 f16_of_f32_fast(f32 x, bool& fast) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    fast = fast & (x == x);
    return f16{h};
}

// x rounded to f16 and widened back: what the next op's to_f32 reads of an f16 result (rounding keeps a
// number a number, so one test covers both conversions)
__device__ inline f32 round_f16_fast(f32 x, bool& fast) {
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
    f32 r;
    asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(h));
    fast = fast & (x == x);
    return r;
}
#endif

// bf16 -> f32 is exact: bf16 is the top 16 bits of an f32.
FKL_HD f32 to_f32(bf16 h) {
    return f32_from_bits((u32)h.bits << 16);
}

// f32 -> bf16, round to nearest, ties to even; overflow gives Inf, NaN stays NaN (quiet).
FKL_HD bf16 bf16_from_f32(f32 x) {
    const u32 b = bits_of(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return bf16{(u16)((b >> 16) | 0x0040u)};
    }
    // Same rounding trick as f16: add just under half an ulp, plus one when the kept part is odd.
    const u32 kept_is_odd = (b >> 16) & 1u;
    return bf16{(u16)((b + 0x7fffu + kept_is_odd) >> 16)};
}

// f64 -> f32 rounding to ODD: truncate toward zero, then set the last bit if anything was lost.
// Rounding a value twice (f64 -> f32 -> f16) can land on a false tie; rounding first to odd
// with at least two spare bits (f32 has 24 bits, f16 needs 11, bf16 8) makes the second,
// round-to-nearest-even step give exactly the once-rounded result.
FKL_HD f32 f32_round_to_odd(f64 x) {
    const f32 nearest = (f32)x;
    if (x != x || (f64)nearest == x) {  // NaN or exact
        return nearest;
    }
    u32 b = bits_of(nearest);
    // Test the sign of x, not of nearest: a tiny negative x rounds to -0.0, which is not < 0.
    const bool rounded_away_from_zero = (x < 0) ? ((f64)nearest < x) : ((f64)nearest > x);
    if (rounded_away_from_zero) {
        b -= 1u;  // one ulp toward zero (also turns an overflowed Inf into the largest f32)
    }
    return f32_from_bits(b | 1u);
}

// f64 -> f16 / bf16 with a single rounding (round to nearest, ties to even).
FKL_HD f16 f16_from_f64(f64 x) {
    return f16_from_f32(f32_round_to_odd(x));
}

FKL_HD bf16 bf16_from_f64(f64 x) {
    return bf16_from_f32(f32_round_to_odd(x));
}

// ---------------------------------------------------------------------------------------------
// Numeric limits
// ---------------------------------------------------------------------------------------------
// Limits<T>::lowest() / highest(): the finite range of each element type. For f16 and bf16 the
// bounds are returned as f32 (the type their arithmetic happens in).

template <typename T>
struct Limits;

template <>
struct Limits<bool> {
    static FKL_HD bool lowest() { return false; }
    static FKL_HD bool highest() { return true; }
};

template <>
struct Limits<u8> {
    static FKL_HD u8 lowest() { return 0; }
    static FKL_HD u8 highest() { return 255; }
};

template <>
struct Limits<i8> {
    static FKL_HD i8 lowest() { return -128; }
    static FKL_HD i8 highest() { return 127; }
};

template <>
struct Limits<u16> {
    static FKL_HD u16 lowest() { return 0; }
    static FKL_HD u16 highest() { return 65535; }
};

template <>
struct Limits<i16> {
    static FKL_HD i16 lowest() { return -32768; }
    static FKL_HD i16 highest() { return 32767; }
};

template <>
struct Limits<u32> {
    static FKL_HD u32 lowest() { return 0u; }
    static FKL_HD u32 highest() { return 4294967295u; }
};

template <>
struct Limits<i32> {
    static FKL_HD i32 lowest() { return -2147483647 - 1; }
    static FKL_HD i32 highest() { return 2147483647; }
};

template <>
struct Limits<f16> {
    static FKL_HD f32 lowest() { return -65504.0f; }
    static FKL_HD f32 highest() { return 65504.0f; }
};

template <>
struct Limits<bf16> {  // largest finite bf16: bits 0x7f7f = (2 - 2^-7) * 2^127
    static FKL_HD f32 lowest() { return -3.38953139e38f; }
    static FKL_HD f32 highest() { return 3.38953139e38f; }
};

template <>
struct Limits<f32> {
    static FKL_HD f32 lowest() { return -3.40282347e38f; }
    static FKL_HD f32 highest() { return 3.40282347e38f; }
};

template <>
struct Limits<f64> {
    static FKL_HD f64 lowest() { return -1.7976931348623157e308; }
    static FKL_HD f64 highest() { return 1.7976931348623157e308; }
};

}  // namespace fkl
