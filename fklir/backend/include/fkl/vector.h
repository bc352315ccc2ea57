// fkl/vector.h — ops on the channels of one pixel: VectorAnd, VectorReduce, Discard, AddLast,
// VectorReorder, VectorReorderRT, MxVFloat3.
//
// A pixel is a small array `T v[C]` (C = 1..4). Every loop runs over a compile-time channel
// count, so the compilers unroll it and keep the pixel in registers; no channel index that
// differs between threads ever reaches memory.
#pragma once

#include "core.h"

namespace fkl {

// vector_and(v) = v[0] && v[1] && ... && v[C-1]   (bool channels -> one bool)
struct VectorAnd {
    template <int C>
    static FKL_HD bool exec(const bool v[C]) {
        bool all = v[0];
        for (int c = 1; c < C; ++c) {
            all = all && v[c];
        }
        return all;
    }
};

// vector_reduce(v) = Op(...Op(Op(v[0], v[1]), v[2])..., v[C-1])   (left fold, each step in T)
template <typename Op>
struct VectorReduce {
    template <int C, typename T>
    static FKL_HD T exec(const T v[C]) {
        T acc = v[0];
        for (int c = 1; c < C; ++c) {
            acc = Op::exec(acc, v[c]);
        }
        return acc;
    }
};

// discard(v) = (v[0], ..., v[N-1])   (keep the first N channels)
struct Discard {
    template <int N, typename T>
    static FKL_HD void exec(const T* in, T out[N]) {
        for (int c = 0; c < N; ++c) {
            out[c] = in[c];
        }
    }
};

// add_last(v, x) = (v[0], ..., v[C-1], x)
struct AddLast {
    template <int C, typename T>
    static FKL_HD void exec(const T in[C], T x, T out[C + 1]) {
        for (int c = 0; c < C; ++c) {
            out[c] = in[c];
        }
        out[C] = x;
    }
};

// vector_reorder(v) = (v[I0], v[I1], ...)   (compile-time indices; repeats allowed)
template <int... I>
struct VectorReorder {
    template <typename T>
    static FKL_HD void exec(const T* in, T* out) {
        const int order[] = {I...};
        for (int k = 0; k < (int)sizeof...(I); ++k) {
            out[k] = in[order[k]];
        }
    }
};

// vector_reorder_rt(v, idx) = (v[idx[0]], ..., v[idx[N-1]])   (indices from the parameter block)
// The index is the same in every thread but unknown at compile time; picking through a chain of
// selects keeps the pixel in registers instead of spilling it to indexable local memory.
struct VectorReorderRT {
    template <int C, typename T>
    static FKL_HD T pick(const T in[C], i32 index) {
        T chosen = in[0];
        for (int c = 1; c < C; ++c) {
            chosen = (index == c) ? in[c] : chosen;
        }
        return chosen;
    }

    template <int C, int N, typename T>
    static FKL_HD void exec(const T in[C], const i32 idx[N], T out[N]) {
        for (int k = 0; k < N; ++k) {
            out[k] = pick<C>(in, idx[k]);
        }
    }
};

// mxv_float3(M, v)[r] = M[r][0] * v[0] + M[r][1] * v[1] + M[r][2] * v[2]   (M row-major 3x3)
// Each row is summed left to right in f64 (exact products of two f32) and rounded once to f32.
struct MxVFloat3 {
    static FKL_HD void exec(const f32 m[9], const f32 in[3], f32 out[3]) {
        for (int r = 0; r < 3; ++r) {
            const f64 a = (f64)m[3 * r] * (f64)in[0];
            const f64 b = (f64)m[3 * r + 1] * (f64)in[1];
            const f64 c = (f64)m[3 * r + 2] * (f64)in[2];
            out[r] = (f32)((a + b) + c);
        }
    }
};

}  // namespace fkl
