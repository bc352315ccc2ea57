// fkl/memory.h — pixel access: packed and planar images, and 16-byte vector loads/stores.
//
// All pointers point to the element type T, and every pitch counts ELEMENTS (not bytes).
// A pixel has C channels (1..4); in a packed image they are C consecutive elements.
#pragma once

#include "core.h"

namespace fkl {

// A packed (H, W, C) input: pixel (x, y) starts at data[y * pitch + x * C].
template <typename T, int C>
struct PackedImage {
    const T* data;
    i32 width;
    i32 height;
    i64 pitch;  // elements from one row to the next (>= width * C)

    FKL_HD const T* at(i32 x, i32 y) const { return data + (i64)y * pitch + (i64)x * C; }

    FKL_HD void load(i32 x, i32 y, T out[C]) const {
        const T* p = at(x, y);
        for (int c = 0; c < C; ++c) {
            out[c] = p[c];
        }
    }
};

// A packed (H, W, C) output: pixel (x, y) starts at data[y * pitch + x * C].
template <typename T, int C>
struct PackedOutput {
    T* data;
    i32 width;
    i32 height;
    i64 pitch;  // elements from one row to the next (>= width * C)

    FKL_HD T* at(i32 x, i32 y) const { return data + (i64)y * pitch + (i64)x * C; }

    FKL_HD void store(i32 x, i32 y, const T v[C]) const {
        T* p = at(x, y);
        for (int c = 0; c < C; ++c) {
            p[c] = v[c];
        }
    }
};

// A planar (C, H, W) input (TensorPack): channel c of pixel (x, y) is
// data[c * height * width + y * width + x]. The caller offsets data to the plane of its batch item.
template <typename T, int C>
struct PlanarImage {
    const T* data;
    i32 width;
    i32 height;

    FKL_HD void load(i32 x, i32 y, T out[C]) const {
        const i64 plane = (i64)height * width;
        const i64 offset = (i64)y * width + x;
        for (int c = 0; c < C; ++c) {
            out[c] = data[c * plane + offset];
        }
    }
};

// A planar (C, H, W) output (TensorSplit): channel c of pixel (x, y) goes to
// data[c * height * width + y * width + x]. The caller offsets data to the plane of its batch item.
template <typename T, int C>
struct PlanarOutput {
    T* data;
    i32 width;
    i32 height;

    FKL_HD void store(i32 x, i32 y, const T v[C]) const {
        const i64 plane = (i64)height * width;
        const i64 offset = (i64)y * width + x;
        for (int c = 0; c < C; ++c) {
            data[c * plane + offset] = v[c];
        }
    }
};

// ReadSet: the generator that replaces a read; every pixel is the constant `value`.
struct ReadSet {
    template <int C, typename T>
    static FKL_HD void exec(const T value[C], T out[C]) {
        for (int c = 0; c < C; ++c) {
            out[c] = value[c];
        }
    }
};

// ---------------------------------------------------------------------------------------------
// 16-byte vectors for the flat fast path
// ---------------------------------------------------------------------------------------------
// Memory-bound kernels reach the copy rate only with wide accesses: one 16-byte load and one
// 16-byte store per thread instead of N narrow ones. The pointer must be 16-byte aligned.

// N consecutive elements of T filling exactly 16 bytes.
template <typename T>
struct alignas(16) Vec16 {
    static constexpr int N = 16 / sizeof(T);
    T v[N];
};

// One 16-byte transaction on the GPU (the uint4 reinterpret becomes a single LDG.128); memcpy on
// the CPU, which the compiler turns into one vector move.
template <typename T>
FKL_HD Vec16<T> load16(const T* p) {
    Vec16<T> r;
#if defined(FKL_DEVICE_CODE)
    *reinterpret_cast<uint4*>(r.v) = *reinterpret_cast<const uint4*>(p);
#else
    std::memcpy(r.v, p, 16);
#endif
    return r;
}

template <typename T>
FKL_HD void store16(T* p, const Vec16<T>& r) {
#if defined(FKL_DEVICE_CODE)
    *reinterpret_cast<uint4*>(p) = *reinterpret_cast<const uint4*>(r.v);
#else
    std::memcpy(p, r.v, 16);
#endif
}

// Element j (0 = the lowest address) of the little-endian 32-bit word w, for 1-byte element types.
template <typename T>
FKL_HD T byte_of(u32 w, int j) {
    return (T)(u8)(w >> (8 * j));
}

// The little-endian 32-bit word of the four 1-byte elements e[0..3].
template <typename T>
FKL_HD u32 word_of(const T e[4]) {
    return (u32)(u8)e[0] | ((u32)(u8)e[1] << 8) | ((u32)(u8)e[2] << 16) | ((u32)(u8)e[3] << 24);
}

}  // namespace fkl
