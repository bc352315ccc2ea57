// fkl/math.h — element-wise math on one element: Abs, Sqrt, Exp, Log, Pow.
//
// Call as fkl::Sqrt::exec(x) or fkl::Pow::exec(x, v) with the chain's element type.
//
// Results are what IEEE math gives in the element type: f32 and f64 compute natively (within 2 ulp
// of the correctly rounded result), f16 and bf16 compute in f32 and round back to nearest even, as
// the arithmetic of arith.h does. Only Abs takes integers (C's wrap-around, see there); the others
// reject integer types at compile time, as the dialect rejects integer chains ("Cast to float first").
#pragma once

#include "core.h"

namespace fkl {

// |x|  (integers wrap like C: abs(INT_MIN) == INT_MIN; unsigned types are unchanged; |-0.0| = +0.0)
struct Abs {
    template <typename T>
    static FKL_HD T exec(T a) {
        static_assert(T(1) / T(2) == T(0), "integer template: floats have their own overloads");
        // Negating in u32 wraps by definition, where a signed negation of the lowest value would be
        // undefined behaviour.
        const bool is_signed = T(-1) < T(0);
        return (is_signed && a < T(0)) ? (T)(0u - (u32)a) : a;
    }
    static FKL_HD f32 exec(f32 a) { return fabsf(a); }
    static FKL_HD f64 exec(f64 a) { return fabs(a); }
    static FKL_HD f16 exec(f16 a) { return f16_from_f32(fabsf(to_f32(a))); }
    static FKL_HD bf16 exec(bf16 a) { return bf16_from_f32(fabsf(to_f32(a))); }
};

// sqrt(x)  (x < 0 -> NaN)
struct Sqrt {
    static FKL_HD f32 exec(f32 a) { return sqrtf(a); }
    static FKL_HD f64 exec(f64 a) { return sqrt(a); }
    static FKL_HD f16 exec(f16 a) { return f16_from_f32(sqrtf(to_f32(a))); }
    static FKL_HD bf16 exec(bf16 a) { return bf16_from_f32(sqrtf(to_f32(a))); }
};

// exp(x)  (overflow -> inf)
struct Exp {
    static FKL_HD f32 exec(f32 a) { return expf(a); }
    static FKL_HD f64 exec(f64 a) { return exp(a); }
    static FKL_HD f16 exec(f16 a) { return f16_from_f32(expf(to_f32(a))); }
    static FKL_HD bf16 exec(bf16 a) { return bf16_from_f32(expf(to_f32(a))); }
};

// log(x)  (log(0) = -inf, x < 0 -> NaN)
struct Log {
    static FKL_HD f32 exec(f32 a) { return logf(a); }
    static FKL_HD f64 exec(f64 a) { return log(a); }
    static FKL_HD f16 exec(f16 a) { return f16_from_f32(logf(to_f32(a))); }
    static FKL_HD bf16 exec(bf16 a) { return bf16_from_f32(logf(to_f32(a))); }
};

// pow(x, v)  (x < 0 with a non-integer v -> NaN)
struct Pow {
    static FKL_HD f32 exec(f32 a, f32 b) {
#if defined(FKL_DEVICE_CODE)
        // CUDA documents powf to 4 ulp, past the 2 ulp of SPEC; its double pow (2 ulp of a double)
        // rounded to float is within 1.
        return (f32)pow((f64)a, (f64)b);
#else
        return powf(a, b);
#endif
    }
    static FKL_HD f64 exec(f64 a, f64 b) { return pow(a, b); }
    static FKL_HD f16 exec(f16 a, f16 b) { return f16_from_f32(exec(to_f32(a), to_f32(b))); }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return bf16_from_f32(exec(to_f32(a), to_f32(b))); }
};

// |x - v|  (integers: the difference in i64, wrapped to the type like C)
struct AbsDiff {
    template <typename T>
    static FKL_HD T exec(T a, T b) {
        static_assert(T(1) / T(2) == T(0), "integer template: floats have their own overloads");
        const i64 d = (i64)a - (i64)b;
        return (T)(u64)(d < 0 ? -d : d);
    }
    static FKL_HD f32 exec(f32 a, f32 b) { return fabsf(a - b); }
    static FKL_HD f64 exec(f64 a, f64 b) { return fabs(a - b); }
    static FKL_HD f16 exec(f16 a, f16 b) { return f16_from_f32(fabsf(to_f32(a) - to_f32(b))); }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return bf16_from_f32(fabsf(to_f32(a) - to_f32(b))); }
};

// x > v ? 1 : 0  (NaN -> 0)
struct Threshold {
    template <typename T>
    static FKL_HD T exec(T a, T b) {
        return a > b ? T(1) : T(0);
    }
    static FKL_HD f16 exec(f16 a, f16 b) { return f16_from_f32(to_f32(a) > to_f32(b) ? 1.0f : 0.0f); }
    static FKL_HD bf16 exec(bf16 a, bf16 b) { return bf16_from_f32(to_f32(a) > to_f32(b) ? 1.0f : 0.0f); }
};

}  // namespace fkl
