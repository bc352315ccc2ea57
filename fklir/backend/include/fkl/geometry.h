// fkl/geometry.h — sampling helpers: resize taps (OpenCV conventions) and border indices.
//
// All helpers work on one axis; a 2-D sample calls them once for x and once for y.
#pragma once

#include "core.h"

namespace fkl {

// floor for values well inside the i32 range (OpenCV's cvFloor): truncate, then step down
// when truncation went up (negative non-integers).
FKL_HD i32 floor_to_i32(f64 x) {
    const i32 t = (i32)x;
    return t - (((f64)t > x) ? 1 : 0);
}

FKL_HD i32 floor_to_i32(f32 x) {
    const i32 t = (i32)x;
    return t - (((f32)t > x) ? 1 : 0);
}

// ---------------------------------------------------------------------------------------------
// Resize
// ---------------------------------------------------------------------------------------------

// Two taps of a linear interpolation: value = (1 - w1) * src[i0] + w1 * src[i1].
// Both indices are always inside [0, src_len), also when w1 == 0.
struct LinearTap {
    i32 i0;
    i32 i1;
    f32 w1;
};

// INTER_LINEAR (half-pixel centres): s = (d + 0.5) * src_len / dst_len - 0.5, i0 = floor(s),
// w1 = s - i0; clamped to the image at both ends.
// Computed exactly as cv2.resize does: the scale is a double, 1.0 / (dst_len / src_len)
// (which can differ from src_len / dst_len in the last bit), the coordinate is rounded to
// float, and the weight is taken in float.
FKL_HD LinearTap linear_tap(i32 d, i32 src_len, i32 dst_len) {
    const f64 scale = 1.0 / ((f64)dst_len / (f64)src_len);
    const f32 s = (f32)(((f64)d + 0.5) * scale - 0.5);
    LinearTap tap;
    tap.i0 = floor_to_i32(s);
    tap.w1 = s - (f32)tap.i0;
    if (tap.i0 < 0) {  // left of the first pixel centre: all weight on pixel 0
        tap.i0 = 0;
        tap.w1 = 0.0f;
    }
    if (tap.i0 >= src_len - 1) {  // at or right of the last pixel centre: all weight on it
        tap.i0 = src_len - 1;
        tap.i1 = src_len - 1;
        tap.w1 = 0.0f;
        return tap;
    }
    tap.i1 = tap.i0 + 1;
    return tap;
}

// INTER_NEAREST: i = min(floor(d * (1.0 / (dst_len / src_len))), src_len - 1), in double,
// exactly as cv2.resize (plain floor(d * src_len / dst_len) differs on sizes such as 300 -> 224).
FKL_HD i32 nearest_index(i32 d, i32 src_len, i32 dst_len) {
    const f64 inv_scale = 1.0 / ((f64)dst_len / (f64)src_len);
    const i32 i = floor_to_i32((f64)d * inv_scale);
    return i < src_len - 1 ? i : src_len - 1;
}

// ---------------------------------------------------------------------------------------------
// Borders: map any index i (however far outside [0, n)) to an index inside, n >= 1.
// Names follow OpenCV; the numpy.pad mode with the same result is given for each.
// ---------------------------------------------------------------------------------------------

// i mod p in [0, p), also for negative i (C's % truncates toward zero).
FKL_HD i32 positive_mod(i32 i, i32 p) {
    const i32 r = i % p;
    return r < 0 ? r + p : r;
}

// True when i is inside [0, n). BORDER_CONSTANT: the caller reads its constant when false.
FKL_HD bool is_inside(i32 i, i32 n) {
    return i >= 0 && i < n;
}

// BORDER_CONSTANT as an index: i inside [0, n), or -1 meaning "use the constant".
FKL_HD i32 border_constant(i32 i, i32 n) {
    return is_inside(i, n) ? i : -1;
}

// BORDER_REPLICATE "aaaaaa|abcdef|ffffff" (numpy 'edge'): clamp to [0, n - 1].
FKL_HD i32 border_replicate(i32 i, i32 n) {
    return i < 0 ? 0 : (i >= n ? n - 1 : i);
}

// BORDER_REFLECT "fedcba|abcdef|fedcba" (numpy 'symmetric'): the edge pixel repeats. The
// pattern is periodic with period 2n: abcdef fedcba abcdef ...
FKL_HD i32 border_reflect(i32 i, i32 n) {
    const i32 m = positive_mod(i, 2 * n);
    return m < n ? m : 2 * n - 1 - m;
}

// BORDER_REFLECT_101 "fedcb|abcdef|edcba" (numpy 'reflect'): the edge pixel does not repeat.
// Periodic with period 2n - 2: abcdef edcb abcdef ...; a single pixel (n == 1) is all there is.
FKL_HD i32 border_reflect101(i32 i, i32 n) {
    if (n == 1) {
        return 0;
    }
    const i32 m = positive_mod(i, 2 * n - 2);
    return m < n ? m : 2 * n - 2 - m;
}

// BORDER_WRAP "cdef|abcdef|abcd" (numpy 'wrap'): periodic with period n.
FKL_HD i32 border_wrap(i32 i, i32 n) {
    return positive_mod(i, n);
}

}  // namespace fkl
