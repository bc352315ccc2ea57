// fkl/arith.h — binary arithmetic on one element: Add, Sub, Mul, Div, Max, Min; Equal; IsEven; StaticLoop.
//
// Call as fkl::Add::exec(a, b) with both operands of the chain's element type.
//
// Integers (u8 i8 u16 i16 i32 u32) wrap modulo 2^bits. Signed overflow is undefined behaviour
// in C++, so the integer overloads never compute in a signed type that could overflow: the
// operands' bit patterns go to u32 (every integer element type has at most 32 bits), where
// unsigned arithmetic wraps by definition, and converting back keeps the low bits.
// f32 and f64 compute natively; f16 and bf16 compute in f32 and round back to nearest even.
// bool is not an arithmetic type: the integer templates reject it at compile time.
#pragma once

#include "core.h"

namespace fkl {

// a + b
struct Add {
    template <typename T>
    static FKL_HD T exec(T a, T b) {
        static_assert(T(1) / T(2) == T(0), "integer template: floats have their own overloads");
        return (T)((u32)a + (u32)b);
    }
    static FKL_HD f32 exec(f32 a, f32 b) { return a + b; }
    static FKL_HD f64 exec(f64 a, f64 b) { return a + b; }
    static FKL_HD f16 exec(f16 a, f16 b) { return f16_from_f32(to_f32(a) + to_f32(b)); }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return bf16_from_f32(to_f32(a) + to_f32(b)); }
};

// a - b
struct Sub {
    template <typename T>
    static FKL_HD T exec(T a, T b) {
        static_assert(T(1) / T(2) == T(0), "integer template: floats have their own overloads");
        return (T)((u32)a - (u32)b);
    }
    static FKL_HD f32 exec(f32 a, f32 b) { return a - b; }
    static FKL_HD f64 exec(f64 a, f64 b) { return a - b; }
    static FKL_HD f16 exec(f16 a, f16 b) { return f16_from_f32(to_f32(a) - to_f32(b)); }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return bf16_from_f32(to_f32(a) - to_f32(b)); }
};

// a * b  (the low bits of a product depend only on the low bits of the operands)
struct Mul {
    template <typename T>
    static FKL_HD T exec(T a, T b) {
        static_assert(T(1) / T(2) == T(0), "integer template: floats have their own overloads");
        return (T)((u32)a * (u32)b);
    }
    static FKL_HD f32 exec(f32 a, f32 b) { return a * b; }
    static FKL_HD f64 exec(f64 a, f64 b) { return a * b; }
    static FKL_HD f16 exec(f16 a, f16 b) { return f16_from_f32(to_f32(a) * to_f32(b)); }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return bf16_from_f32(to_f32(a) * to_f32(b)); }
};

// a / b  (integers truncate toward zero; the host rejects b == 0 before launch)
struct Div {
    template <typename T>
    static FKL_HD T exec(T a, T b) {
        static_assert(T(1) / T(2) == T(0), "integer template: floats have their own overloads");
        // For signed types, lowest / -1 overflows (a trap on x86 for i32); a / -1 is -a, which
        // negating in u32 computes with the required wrap-around (-128 / -1 == -128 in i8).
        const bool is_signed = T(-1) < T(0);
        if (is_signed && b == T(-1)) {
            return (T)(0u - (u32)a);
        }
        return (T)(a / b);  // 8/16-bit operands promote to int, where the quotient cannot overflow
    }
    static FKL_HD f32 exec(f32 a, f32 b) { return a / b; }
    // a / b correctly rounded, given rcp_b = 1 / b (correctly rounded, computed by the host): on
    // the GPU one product and one FMA correction (Markstein) when both operands lie in
    // [2^-60, 2^60], where nothing under- or overflows; elsewhere, and on the CPU, a / b.
    static FKL_HD f32 exec(f32 a, f32 b, f32 rcp_b) {
#if defined(FKL_DEVICE_CODE)
        // one condition over both operands: written as two in_range calls, nvcc compiled a second
        // branch, which slowed the memory-bound float chains (RESULTS.md)
        const f32 abs_a = fabsf(a), abs_b = fabsf(b);
        if (abs_a >= 0x1p-60f && abs_a <= 0x1p60f && abs_b >= 0x1p-60f && abs_b <= 0x1p60f) {
            return fast(a, b, rcp_b);
        }
#else
        (void)rcp_b;
#endif
        return a / b;
    }
    // |x| in [2^-60, 2^60], on the GPU (the CPU always divides): the range where fast() is exact; the
    // host checks divisors against the same bounds (fklir.runtime.params.DIV_FAST_LOW/HIGH).
    static FKL_HD bool in_range(f32 x) {
#if defined(FKL_DEVICE_CODE)
        const f32 abs_x = fabsf(x);
        return abs_x >= 0x1p-60f && abs_x <= 0x1p60f;
#else
        (void)x;
        return false;
#endif
    }
    // Whether fast(a, b, rcp_b) is a / b for every divisor b in range: |a| in [2^-60, 2^60], or a = +0
    // (q = +0 or -0 as the sign of b asks, remainder +0; -0 is out: -0 + +0 would round to +0).
    static FKL_HD bool fast_dividend(f32 a) {
#if defined(FKL_DEVICE_CODE)
        return in_range(a) || bits_of(a) == 0u;
#else
        (void)a;
        return false;  // the CPU always divides
#endif
    }
    // q = a * (1 / b), then q + (a - q b) / b with the remainder a - q b exact in one FMA.
    static FKL_HD f32 fast(f32 a, f32 b, f32 rcp_b) {
        const f32 q = a * rcp_b;
        const f32 e = fmaf(-q, b, a);
        return fmaf(e, rcp_b, q);
    }
    static FKL_HD f64 exec(f64 a, f64 b) { return a / b; }
    static FKL_HD f16 exec(f16 a, f16 b) { return f16_from_f32(to_f32(a) / to_f32(b)); }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return bf16_from_f32(to_f32(a) / to_f32(b)); }
};

// max(a, b) = a >= b ? a : b  (so max(NaN, b) = b and max(a, NaN) = NaN)
struct Max {
    template <typename T>
    static FKL_HD T exec(T a, T b) { return a >= b ? a : b; }
    static FKL_HD f16 exec(f16 a, f16 b) { return to_f32(a) >= to_f32(b) ? a : b; }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return to_f32(a) >= to_f32(b) ? a : b; }
};

// min(a, b) = a <= b ? a : b  (so min(NaN, b) = b and min(a, NaN) = NaN)
struct Min {
    template <typename T>
    static FKL_HD T exec(T a, T b) { return a <= b ? a : b; }
    static FKL_HD f16 exec(f16 a, f16 b) { return to_f32(a) <= to_f32(b) ? a : b; }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return to_f32(a) <= to_f32(b) ? a : b; }
};

// equal(a, v) = (a == v): bool per channel (NaN equals nothing); f16 and bf16 compare their f32 values.
struct Equal {
    template <typename T>
    static FKL_HD bool exec(T a, T b) {
        return a == b;
    }
    static FKL_HD bool exec(f16 a, f16 b) { return to_f32(a) == to_f32(b); }
    static FKL_HD bool exec(bf16 a, bf16 b) { return to_f32(a) == to_f32(b); }
};

// is_even(a) = (a mod 2 == 0), for integers; the lowest bit decides, also for negatives.
struct IsEven {
    template <typename T>
    static FKL_HD bool exec(T a) {
        static_assert(T(1) / T(2) == T(0), "IsEven is defined for integer types only");
        return ((u32)a & 1u) == 0u;
    }
};

// static_loop(x, v) = Op(...Op(Op(x, v), v)..., v), the binary Op applied N times (N compile-time)
template <typename Op, int N>
struct StaticLoop {
    template <typename T>
    static FKL_HD T exec(T x, T v) {
        for (int i = 0; i < N; ++i) {
            x = Op::exec(x, v);
        }
        return x;
    }
};

}  // namespace fkl
