// fkl/geometry.h — sampling helpers: resize taps (OpenCV conventions), the preserve-aspect-ratio
// content box, border indices (BorderReader), warp coordinates (Warping) and Deinterlace.
//
// The index helpers work on one axis; a 2-D sample calls them once for x and once for y.
#pragma once

#include "core.h"

#if !defined(__CUDACC_RTC__)
#if !defined(__CUDACC__)
#include <type_traits>
#include <utility>  // index_sequence: WarpRows' shuffle masks
#include <vector>  // the CPU's column taps and blended rows (ResizeRows, the emitted run_rows)
#endif
#endif

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

// The source step per destination pixel of a resize, as cv2.resize computes it: a double,
// 1.0 / (dst_len / src_len) (which can differ from src_len / dst_len in the last bit). Two f64
// divisions: a kernel computes it once per plane (the emitted `plane_of`), not per pixel.
FKL_HD f64 resize_scale(i32 src_len, i32 dst_len) {
    return 1.0 / ((f64)dst_len / (f64)src_len);
}

// INTER_LINEAR (half-pixel centres): s = (d + 0.5) * scale - 0.5, i0 = floor(s), w1 = s - i0;
// clamped to the image at both ends. The coordinate stays in f64 and only the weight is rounded to
// f32: an f32 coordinate (cv2's own C++ path) is off by up to half an ulp of the source size, which
// on 0..255 data moves results past SPEC's tolerance for sizes in the thousands (cv2 with IPP, its
// default build, keeps the coordinate exact too). Kernels call this once per block column and row,
// or per pixel only where the taps cannot be shared. w1 is always in [0, 1): a weight that rounds
// to 1 moves the tap on, so that a blend's left tap never has weight 0.
FKL_HD LinearTap linear_tap(i32 d, f64 scale, i32 src_len) {
    const f64 s = ((f64)d + 0.5) * scale - 0.5;
    LinearTap tap;
    tap.i0 = floor_to_i32(s);
    tap.w1 = (f32)(s - (f64)tap.i0);
    if (tap.w1 == 1.0f) {
        tap.i0 += 1;
        tap.w1 = 0.0f;
    }
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

// A linear tap along a packed row as a column pair: its left pixel's offset in the row (in elements) and
// the weight of the pixel right of it, which is always the next pixel, so that a kernel reads both at
// one fixed distance. A clamped tap (i0 == i1, w1 == 0) takes its right neighbour with weight 0, or, at
// the image's last column, its left neighbour with weight 1: for finite taps (integer images) both
// blend to exactly pixel i0 (fmaf(a, 1, b * 0) == a, fmaf(l, 0, a * 1) == a). `origin` is where the
// resized image starts in the row (a crop's x); the image must be at least 2 pixels wide.
struct PairTap {
    u32 offset;
    f32 w1;
};

FKL_HD PairTap pair_tap(LinearTap t, i32 origin, i32 image_w, i32 channels) {
    i32 left = t.i0 + origin;
    f32 w1 = t.w1;
    if (t.i1 == t.i0 && left + 1 >= image_w) {
        left -= 1;
        w1 = 1.0f;
    }
    return {(u32)left * (u32)channels, w1};
}

// A tap as f32 for linear_blend and Warping::blend_narrow: the plain conversion (one I2FP for a byte already in a register;
// Cast<f32>'s magic-number add takes two instructions, which the resize kernels feel).
template <typename T>
FKL_HD f32 tap_f32(T x) { return (f32)x; }
FKL_HD f32 tap_f32(f16 x) { return to_f32(x); }
FKL_HD f32 tap_f32(bf16 x) { return to_f32(x); }

// One step of an INTER_LINEAR blend: u (1 - w) + v w, as one fmaf of the first product onto the
// rounded second (the kernels are otherwise built without FMA contraction), so that every compiler
// gives the same bits as the reference interpreter.
FKL_HD f32 linear_step(f32 u, f32 v, f32 w) {
    return fmaf(u, 1.0f - w, v * w);
}

// linear_step where the taps may be inf or NaN (float images): a tap of weight exactly 0
// contributes nothing, as SPEC's edge inputs ask, so that inf * 0 does not make a pixel NaN. The
// left tap's weight 1 - w is never 0 (linear_tap keeps w below 1). Taps of integer images are
// finite, and there linear_step(u, v, 0) == u already: their kernels skip the test.
FKL_HD f32 linear_step_nonfinite(f32 u, f32 v, f32 w) {
    return w == 0.0f ? u : linear_step(u, v, w);
}

// The INTER_LINEAR blend of four taps (a b on the upper row, c d on the lower; wx, wy the weights
// of b/d and c/d), in f32 and in OpenCV's order: along x first, r0 = a (1 - wx) + b wx and
// r1 = c (1 - wx) + d wx, then along y, r0 (1 - wy) + r1 wy. `Nonfinite` selects
// linear_step_nonfinite (float images) over linear_step (integer images).
template <bool Nonfinite = false>
FKL_HD f32 linear_blend(f32 a, f32 b, f32 c, f32 d, f32 wx, f32 wy) {
    if (Nonfinite) {
        return linear_step_nonfinite(linear_step_nonfinite(a, b, wx), linear_step_nonfinite(c, d, wx), wy);
    }
    return linear_step(linear_step(a, b, wx), linear_step(c, d, wx), wy);
}

// INTER_NEAREST: i = min(floor(d * scale), src_len - 1) in double with scale = resize_scale(...),
// exactly as cv2.resize (plain floor(d * src_len / dst_len) differs on sizes such as 300 -> 224).
FKL_HD i32 nearest_index(i32 d, f64 scale, i32 src_len) {
    const i32 i = floor_to_i32((f64)d * scale);
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

// Whether the CPU may take index i as it is (inside [0, n)) before a border mode's division: most
// pixels of an image are inside, and positive_mod's integer division costs more than the test on a
// CPU. The GPU keeps its path without the branch (false there folds the test away).
FKL_HD bool inside_on_cpu(i32 i, i32 n) {
#if defined(FKL_DEVICE_CODE)
    (void)i;
    (void)n;
    return false;
#else
    return (u32)i < (u32)n;
#endif
}

// BORDER_REFLECT "fedcba|abcdef|fedcba" (numpy 'symmetric'): the edge pixel repeats. The
// pattern is periodic with period 2n: abcdef fedcba abcdef ...
FKL_HD i32 border_reflect(i32 i, i32 n) {
    if (inside_on_cpu(i, n)) {
        return i;
    }
    const i32 m = positive_mod(i, 2 * n);
    return m < n ? m : 2 * n - 1 - m;
}

// BORDER_REFLECT_101 "fedcb|abcdef|edcba" (numpy 'reflect'): the edge pixel does not repeat.
// Periodic with period 2n - 2: abcdef edcb abcdef ...; a single pixel (n == 1) is all there is.
FKL_HD i32 border_reflect101(i32 i, i32 n) {
    if (inside_on_cpu(i, n)) {
        return i;
    }
    if (n == 1) {
        return 0;
    }
    const i32 m = positive_mod(i, 2 * n - 2);
    return m < n ? m : 2 * n - 2 - m;
}

// BORDER_WRAP "cdef|abcdef|abcd" (numpy 'wrap'): periodic with period n.
FKL_HD i32 border_wrap(i32 i, i32 n) {
    if (inside_on_cpu(i, n)) {
        return i;
    }
    return positive_mod(i, n);
}

// The five BorderReader modes.
enum class BorderMode { Constant, Replicate, Reflect, Reflect101, Wrap };

// border_reader<M>::index(i, n): the source index of coordinate i (ANY distance outside) along an
// axis of n pixels; -1 in Constant mode means "outside: read the constant".
template <BorderMode M>
struct BorderReader;

template <>
struct BorderReader<BorderMode::Constant> {
    static FKL_HD i32 index(i32 i, i32 n) { return border_constant(i, n); }
};
template <>
struct BorderReader<BorderMode::Replicate> {
    static FKL_HD i32 index(i32 i, i32 n) { return border_replicate(i, n); }
};
template <>
struct BorderReader<BorderMode::Reflect> {
    static FKL_HD i32 index(i32 i, i32 n) { return border_reflect(i, n); }
};
template <>
struct BorderReader<BorderMode::Reflect101> {
    static FKL_HD i32 index(i32 i, i32 n) { return border_reflect101(i, n); }
};
template <>
struct BorderReader<BorderMode::Wrap> {
    static FKL_HD i32 index(i32 i, i32 n) { return border_wrap(i, n); }
};

// ---------------------------------------------------------------------------------------------
// Resize with a preserved aspect ratio
// ---------------------------------------------------------------------------------------------

enum class AspectRatio { Ignore, Preserve, PreserveLeft, PreserveEven };

// Where the scaled source lands in a (dst_w, dst_h) output: the content is the source scaled by
// min(dst_w / src_w, dst_h / src_h) (double), its sizes rounded half away from zero (then down to
// even for PreserveEven), centred with integer division (odd leftover right/bottom), or at
// x = 0 for PreserveLeft. Ignore fills the whole output. The rest of the output is background.
FKL_HD Rect resize_content_box(i32 src_w, i32 src_h, i32 dst_w, i32 dst_h, AspectRatio mode) {
    Rect box = {0, 0, dst_w, dst_h};
    if (mode == AspectRatio::Ignore) {
        return box;
    }
    const f64 sx = (f64)dst_w / (f64)src_w;
    const f64 sy = (f64)dst_h / (f64)src_h;
    const f64 scale = sx < sy ? sx : sy;
    const i32 w = (i32)floor((f64)src_w * scale + 0.5);  // sizes are positive: half away = half up
    const i32 h = (i32)floor((f64)src_h * scale + 0.5);
    box.w = w < dst_w ? w : dst_w;
    box.h = h < dst_h ? h : dst_h;
    if (mode == AspectRatio::PreserveEven) {
        box.w -= box.w % 2;
        box.h -= box.h % 2;
    }
    box.x = mode == AspectRatio::PreserveLeft ? 0 : (dst_w - box.w) / 2;
    box.y = (dst_h - box.h) / 2;
    return box;
}

FKL_HD bool box_contains(const Rect& box, i32 x, i32 y) {
    return x >= box.x && y >= box.y && x < box.x + box.w && y < box.y + box.h;
}

// ---------------------------------------------------------------------------------------------
// Warping: cv2.warpAffine / cv2.warpPerspective, the exact bilinear blend (SPEC §3, OpenCV 5.1)
// ---------------------------------------------------------------------------------------------

// Where a destination pixel samples the source: the top-left tap (ix, iy) and the weights of the
// right / lower taps; finite is false when the perspective divide leaves the reals.
struct WarpSample {
    i32 ix;
    i32 iy;
    f64 fx;
    f64 fy;
    bool finite;
};

struct Warping {
    // Coordinates beyond this are far outside any image; clamping keeps floor() inside i32.
    static FKL_HD f64 clamp_coordinate(f64 v) {
        const f64 limit = 1073741824.0;  // 2^30
        return v < -limit ? -limit : (v > limit ? limit : v);
    }

    static FKL_HD bool is_finite(f64 v) { return (bits_of(v) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull; }

    static FKL_HD WarpSample sample_at(f64 sx, f64 sy) {
        WarpSample s;
        s.finite = is_finite(sx) && is_finite(sy);
        if (!s.finite) {
            sx = 0.0;
            sy = 0.0;
        }
        sx = clamp_coordinate(sx);
        sy = clamp_coordinate(sy);
        s.ix = floor_to_i32(sx);
        s.iy = floor_to_i32(sy);
        s.fx = sx - (f64)s.ix;  // exact, but for a tiny negative sx (then 1)
        s.fy = sy - (f64)s.iy;
        return s;
    }

    // One row of the dst -> src map m (f64, row-major) at (x, y): m0 x + (m1 y + m2), each operation
    // rounded on its own (no FMA: the reference interpreter computes the same bits in numpy).
    static FKL_HD f64 row_term(const f64* m, i32 y) { return (f64)y * m[1] + m[2]; }
    static FKL_HD f64 along_row(const f64* m, i32 x, f64 row) { return m[0] * (f64)x + row; }

    // warp_affine: m is the 2x3 destination -> source map.
    static FKL_HD WarpSample affine(const f64 m[6], i32 x, i32 y) {
        return sample_at(along_row(m, x, row_term(m, y)), along_row(m + 3, x, row_term(m + 3, y)));
    }

    // warp_perspective: m is the 3x3 destination -> source map; (X * (1 / W), Y * (1 / W)): one f64
    // division a pixel instead of two (a division is a long instruction sequence on the GPU). W = 0
    // gives an infinite or NaN coordinate, as X / W would.
    static FKL_HD WarpSample perspective(const f64 m[9], i32 x, i32 y) {
        const f64 inv_w = 1.0 / along_row(m + 6, x, row_term(m + 6, y));
        return sample_at(along_row(m, x, row_term(m, y)) * inv_w, along_row(m + 3, x, row_term(m + 3, y)) * inv_w);
    }

    // u (1 - w) + v w in f64, a tap of weight exactly 0 contributing nothing: inf * 0 would make
    // NaN of a pixel that only inf taps reach (SPEC's edge inputs). The weighted sum, not cv2's
    // u + w (v - u), so that inf and a finite tap blend to inf. w is 1 when a coordinate just below
    // an integer loses its fraction in f64.
    static FKL_HD f64 step(f64 u, f64 v, f64 w) {
        if (w == 0.0) {
            return u;
        }
        if (w == 1.0) {
            return v;
        }
        return u * (1.0 - w) + v * w;
    }

    // The bilinear blend of the four taps (p00 p01 on the upper row), in f64, rounded once to f32:
    // along x on both rows, then along y.
    static FKL_HD f32 blend(f64 p00, f64 p01, f64 p10, f64 p11, f64 fx, f64 fy) {
        return (f32)step(step(p00, p01, fx), step(p10, p11, fx), fy);
    }

    // The blend of unsigned 8- and 16-bit taps: SPEC's weights (1 - fx)(1 - fy), fx (1 - fy), (1 - fx) fy,
    // fx fy as f32 products of the f32-rounded fx, fy, and the weighted sum in f32, left to right. Taps
    // and weights are non-negative, so the result is within a few f32 ulps of the f64 formula (no
    // cancellation), and a vector of f32 holds twice the lanes of one of f64.
    static FKL_HD f32 blend_narrow(f32 p00, f32 p01, f32 p10, f32 p11, f32 ax, f32 ay) {
        const f32 bx = 1.0f - ax, by = 1.0f - ay;
        return ((p00 * (bx * by) + p01 * (ax * by)) + p10 * (bx * ay)) + p11 * (ax * ay);
    }

    // blend for finite taps (an integer source): there a weight of 0 or 1 gives u or v exactly without
    // step's branches, so the result is blend's bit for bit.
    static FKL_HD f32 blend_finite(f64 p00, f64 p01, f64 p10, f64 p11, f64 fx, f64 fy) {
        const f64 upper = p00 * (1.0 - fx) + p01 * fx;
        const f64 lower = p10 * (1.0 - fx) + p11 * fx;
        return (f32)(upper * (1.0 - fy) + lower * fy);
    }
};

// ---------------------------------------------------------------------------------------------
// Deinterlace
// ---------------------------------------------------------------------------------------------

// blend: row y > 0 -> (row y + row y-1) / 2, row 0 copied. linear: odd rows -> (row above + row
// below) / 2 (the last odd row copies the row above), even rows copied. Output f32; the mean is
// taken in f64 and rounded once.
enum class DeinterlaceMode { Blend, Linear };

struct Deinterlace {
    // The rows that output row y averages (equal when it copies one row).
    static FKL_HD void rows(DeinterlaceMode mode, i32 y, i32 height, i32& first, i32& second) {
        first = y;
        second = y;
        if (mode == DeinterlaceMode::Blend) {
            if (y > 0) {
                second = y - 1;
            }
            return;
        }
        if (y % 2 == 1) {
            first = y - 1;
            second = y + 1 < height ? y + 1 : y - 1;
        }
    }

    static FKL_HD f32 mean(f64 a, f64 b) { return (f32)((a + b) / 2.0); }
};

// ---------------------------------------------------------------------------------------------
// Flip and Rotate: cv2.flip and cv2.rotate, as the source pixel of each output pixel
// ---------------------------------------------------------------------------------------------

enum class FlipMode { Vertical, Horizontal, Both };

// cv2.flip: x -> w - 1 - x where the columns are reversed (horizontal, both), y -> h - 1 - y where the rows are.
struct Flip {
    static FKL_HD i32 source_x(FlipMode mode, i32 x, i32 w) { return mode == FlipMode::Vertical ? x : w - 1 - x; }
    static FKL_HD i32 source_y(FlipMode mode, i32 y, i32 h) { return mode == FlipMode::Horizontal ? y : h - 1 - y; }
};

enum class Rotation { Clockwise90, Turn180, Counterclockwise90 };

// cv2.rotate of a w x h source: clockwise (x, y) <- (y, h - 1 - x), a half turn (x, y) <- (w - 1 - x, h - 1 - y),
// counterclockwise (x, y) <- (w - 1 - y, x); a quarter turn swaps the width and the height.
struct Rotate {
    static FKL_HD i32 width(Rotation r, i32 w, i32 h) { return r == Rotation::Turn180 ? w : h; }
    static FKL_HD i32 height(Rotation r, i32 w, i32 h) { return r == Rotation::Turn180 ? h : w; }

    static FKL_HD i32 source_x(Rotation r, i32 x, i32 y, i32 w) {
        return r == Rotation::Clockwise90 ? y : (r == Rotation::Turn180 ? w - 1 - x : w - 1 - y);
    }

    static FKL_HD i32 source_y(Rotation r, i32 x, i32 y, i32 h) {
        return r == Rotation::Clockwise90 ? h - 1 - x : (r == Rotation::Turn180 ? h - 1 - y : x);
    }
};

#if !defined(__CUDACC__) && !defined(__CUDACC_RTC__)
// ---------------------------------------------------------------------------------------------
// The CPU's row spans (the emitted row_span): crops and borders map a run of an output row to
// consecutive pixels of one source row, so a CPU loop reads them straight from the row.
// ---------------------------------------------------------------------------------------------

// Output pixels x in [lo, hi) are pixels x + dx of source row sy; always 0 <= lo <= hi <= the row's width.
struct Span {
    i32 lo, hi, dx, sy;
};

// s narrowed to the pixels that fall inside [0, n) of a row of n pixels, and to none when row sy is
// outside (a constant border's -1).
FKL_HD Span inside_span(Span s, i32 n) {
    const i32 lo = s.lo > -s.dx ? s.lo : -s.dx;
    const i32 hi = s.hi < n - s.dx ? s.hi : n - s.dx;
    if (s.sy < 0 || hi <= lo) {
        s.hi = s.lo;
        return s;
    }
    s.lo = lo;
    s.hi = hi;
    return s;
}

// ---------------------------------------------------------------------------------------------
// The CPU's final linear resize of a packed integer image, in OpenCV's two passes
// ---------------------------------------------------------------------------------------------

// linear_blend is a blend along x of each of the two source rows, then one along y; so a CPU thread
// blends each source row it needs along x once, for every output column (kept while the next output
// row still needs it: an upscale reads each source row for several output rows), and then each output
// row is a blend along y of two such rows, a loop over contiguous floats that the compiler vectorises.
// The same operations in the same order as the per-pixel blend: the same bits. T is an integer type
// (finite taps: linear_step, no test for weight 0), C the channels of a pixel. A source row's columns
// are first converted to f32 in one contiguous pass, so that the blend along x reads 4-byte elements,
// which the compiler gathers in vectors (bytes it reads one at a time).
template <typename T, int C>
struct ResizeRows {
    std::vector<u32> left, right;  // element x * C + k: its two taps' offsets in a source row
    std::vector<f32> weight;       // and the right tap's weight
    std::vector<f32> wide;         // a source row as f32, elements [first, last] of it
    u32 first = 0xffffffffu, last = 0;
    std::vector<f32> rows[2];      // two source rows blended along x
    const T* held[2] = {nullptr, nullptr};  // the source row that each of `rows` holds

    explicit ResizeRows(i32 dst_w)
        : left((size_t)dst_w * C), right((size_t)dst_w * C), weight((size_t)dst_w * C) {
        rows[0].resize(left.size());
        rows[1].resize(left.size());
    }

    // Output column x reads the taps t of a source that starts `origin` pixels into its rows; a plane
    // sets its columns in order, from x = 0.
    void set_column(i32 x, LinearTap t, i32 origin) {
        if (x == 0) {
            first = 0xffffffffu;
            last = 0;
        }
        for (int k = 0; k < C; ++k) {
            left[(size_t)x * C + k] = (u32)(t.i0 + origin) * C + k;
            right[(size_t)x * C + k] = (u32)(t.i1 + origin) * C + k;
            weight[(size_t)x * C + k] = t.w1;
        }
        const u32 lo = (u32)(t.i0 + origin) * C, hi = (u32)(t.i1 + origin) * C + C - 1;
        first = lo < first ? lo : first;
        last = hi > last ? hi : last;
        if (wide.size() <= last) {
            wide.resize((size_t)last + 1);
        }
        held[0] = held[1] = nullptr;  // rows blended with other columns
    }

    // Row y of the output: source rows r0 and r1 (its taps along y) blended with weight wy, into out.
    void blend(const T* r0, const T* r1, f32 wy, f32* out) {
        const int keep = held[0] == r1 ? 0 : 1;  // r1's slot, if it is held: r0 must not evict it
        const f32* a = rows[along_x(r0, keep)].data();
        const f32* b = rows[along_x(r1, held[0] == r0 ? 0 : 1)].data();
        const size_t n = weight.size();
        for (size_t j = 0; j < n; ++j) {
            out[j] = linear_step(a[j], b[j], wy);
        }
    }

  private:
    // __restrict: the arrays are distinct, which the compiler must know to convert and gather in vectors.
    static void widen(f32* __restrict w, const T* __restrict row, size_t first, size_t last) {
        for (size_t i = first; i <= last; ++i) {
            w[i] = (f32)row[i];
        }
    }

    static void along_x(f32* __restrict out, const f32* __restrict w, const u32* __restrict l,
                        const u32* __restrict r, const f32* __restrict wx, size_t n) {
        for (size_t j = 0; j < n; ++j) {
            out[j] = linear_step(w[l[j]], w[r[j]], wx[j]);
        }
    }

    // The slot that holds `row` blended along x, blending it into the slot other than `keep` if needed.
    int along_x(const T* row, int keep) {
        for (int s = 0; s < 2; ++s) {
            if (held[s] == row) {
                return s;
            }
        }
        const int s = 1 - keep;
        widen(wide.data(), row, first, last);
        along_x(rows[s].data(), wide.data(), left.data(), right.data(), weight.data(), weight.size());
        held[s] = row;
        return s;
    }
};

// ---------------------------------------------------------------------------------------------
// The CPU's warp rows: a warp's output row sampled in loops over arrays, which the compiler vectorises
// ---------------------------------------------------------------------------------------------

// Warping's per-pixel sample, a row at a time: from the row's terms, the source coordinates of each pixel
// (the same operations as Warping::affine / perspective, not kept) and its kind: Inside (its four taps lie
// inside the source; then the offset of its top-left tap and its weights, sample_at's, whose clamp and
// non-finite cases only concern the other pixels), Outside (all four outside a source read as constant
// 0: the blend of four zeros is +0), or Edge (the rest: a border's, partly outside, non-finite), which
// takes the per-pixel stage. Inside pixels are blended into `line` (f32, C per pixel) in runs without
// bounds checks. T is the source's element type, C its channels, Finite whether its taps are finite
// (unsigned 8- and 16-bit types: Warping::blend_narrow, other integer types: Warping::blend_finite, else
// Warping::blend's zero-weight rule).
// The tests are written as masks and selects of bits: g++ does not if-convert a branch on a float
// comparison (it may trap), and a loop with a branch does not vectorise.
#if defined(__AVX512F__)
// WarpRows' vectors of taps (GCC vector types: the compiler picks the instructions).
typedef u8 Bytes64 __attribute__((vector_size(64)));
typedef u64 Words8 __attribute__((vector_size(64)));
typedef i32 Ints16 __attribute__((vector_size(64)));
typedef f32 Floats16 __attribute__((vector_size(64)));
typedef i32 Ints8 __attribute__((vector_size(32)));
typedef i64 Longs8 __attribute__((vector_size(64)));
typedef f32 Floats8 __attribute__((vector_size(32)));
typedef f64 Doubles8 __attribute__((vector_size(64)));
#endif

enum WarpPixel : u8 { WarpEdge = 0, WarpInside = 1, WarpOutside = 2 };

template <typename T, int C, bool Finite>
struct WarpRows {
    // Unsigned 8- and 16-bit taps blend in f32 (Warping::blend_narrow), the others in f64.
    static constexpr bool kNarrow = Finite && sizeof(T) <= 2 && (T)(-1) > (T)0;
    using Weight = typename std::conditional<kNarrow, f32, f64>::type;

    std::vector<u8> kind;        // each pixel's WarpPixel
    std::vector<u32> offset;     // Inside: the top-left tap's element offset in the source plane
    std::vector<Weight> fx, fy;  // and the weights of the right and lower taps
    std::vector<f32> line;       // the blended pixels
    f64 along_x[3] = {0.0, 0.0, 0.0};  // the map's x column (M0, M3, M6): the coordinates' step along x
    f64 row[3] = {0.0, 0.0, 1.0};      // the row terms y * M1 + M2 of X, Y (and W)
    bool projective = false;
    f64 down[2] = {0.0, 0.0};  // the source step (x, y) from a pixel to the one below it (affine)
    i64 ahead = 0;             // from a top-left tap to the lower row of the pixel below's taps

    explicit WarpRows(i32 dst_w)
        : kind((size_t)dst_w), offset((size_t)dst_w), fx((size_t)dst_w), fy((size_t)dst_w),
          line((size_t)dst_w * C) {}

    // Row y of the map: locate computes each pixel's coordinates from these as Warping::affine /
    // perspective do, in the same operations.
    void affine(const f64 m[6], i32 y, i32 x0, i32 x1) {
        (void)x0;
        (void)x1;
        down[0] = m[1];
        down[1] = m[4];
        along_x[0] = m[0];
        along_x[1] = m[3];
        row[0] = Warping::row_term(m, y);
        row[1] = Warping::row_term(m + 3, y);
        projective = false;
    }

    void perspective(const f64 m[9], i32 y, i32 x0, i32 x1) {
        affine(m, y, x0, x1);  // the affine part's down: a prefetch's guess
        along_x[2] = m[6];
        row[2] = Warping::row_term(m + 6, y);
        projective = true;
    }

    // Pixels [x0, x1): their kinds in a src_w x src_h source of `pitch` elements a row (Outside only
    // when `zero_outside`: no border before the warp), and the Inside pixels' tap offsets and weights.
    // Inside, the coordinates are finite and non-negative: floor is the truncation, the weight
    // s - floor(s) is exact and below 1, and no clamp applies. floor(s) < n - 1 is s < n - 1 and
    // floor(s) >= n is s >= n (NaN fails every comparison: an Edge pixel). The last source row's pixels
    // whose wide read (kRead elements from the lower left tap) would pass the end of the image are Edge
    // pixels.
    void locate(i32 x0, i32 x1, i32 src_w, i32 src_h, u32 pitch, bool zero_outside) {
        const f64 right = (f64)(src_w - 1), bottom = (f64)(src_h - 1);
        const f64 width = (f64)src_w, height = (f64)src_h;
        const u32 outside = zero_outside ? 2u : 0u;
        const i32 row_end = src_w * C - kRead;  // the last lower left tap whose wide read fits the last row
        const f64 dx = fabs(down[0]) < kFar ? down[0] : 0.0, dy = fabs(down[1]) < kFar ? down[1] : 0.0;
        ahead = ((i64)nearbyint(dy) + 1) * (i64)pitch + (i64)nearbyint(dx) * C;
        if (projective) {
            locate_runs<true>(x0, x1, src_h, pitch, right, bottom, width, height, outside, row_end);
        } else {
            locate_runs<false>(x0, x1, src_h, pitch, right, bottom, width, height, outside, row_end);
        }
    }

    // The end of the run of pixels from x on that are of x's kind, at most x1.
    i32 run_end(i32 x, i32 x1) const {
        const u8 first = kind[(size_t)x];
        const u64 eight = first * 0x0101010101010101ull;  // eight pixels of that kind
        while (x + 8 <= x1 && word_at(kind.data() + x) == eight) {
            x += 8;
        }
        while (x < x1 && kind[(size_t)x] == first) {
            ++x;
        }
        return x;
    }

    // Pixels [lo, hi), all Outside: the blend of four zero taps, into `to` (pixel x at to + x C: `line`, or
    // an output row of C f32 a pixel when the chain after the warp is the identity).
    void zero(i32 lo, i32 hi, f32* to) {
        for (size_t j = (size_t)lo * C; j < (size_t)hi * C; ++j) {
            to[j] = 0.0f;
        }
    }

    // Pixels [lo, hi), all Inside, blended into `to` (as zero's) from the source plane `src`: their taps gathered
    // into arrays of a group of pixels, then blended in a loop over those arrays. A pixel of narrow taps
    // (2 C of them in 8 bytes) reads its two taps of a row as one 8-byte word, which the compiler
    // gathers in vectors; wider ones are read one element at a time.
    void blend(const T* __restrict src, u32 pitch, i32 lo, i32 hi, f32* to) {
#if defined(__AVX512VBMI__)
        if constexpr (kNarrow && sizeof(T) == 1 && kWide) {
            lo = blend_bytes(src, pitch, lo, hi, to);
        }
#endif
#if defined(__AVX512F__)
        if constexpr (std::is_same<T, f32>::value) {
            lo = blend_floats(src, pitch, lo, hi, to);
        }
#endif
        for (i32 x0 = lo; x0 < hi; x0 += kGroup) {
            const i32 n = hi - x0 < kGroup ? hi - x0 : kGroup;
            Tap a[C][kGroup], b[C][kGroup], c[C][kGroup], d[C][kGroup];
            const u32* __restrict off = offset.data() + x0;
            prefetch_below(src, off, n);
            if (kWide) {
                u64 upper[kGroup], lower[kGroup];
                for (i32 j = 0; j < n; ++j) {
                    upper[j] = word_at(src + off[j]);
                    lower[j] = word_at(src + off[j] + pitch);
                }
                for (i32 j = 0; j < n; ++j) {
                    for (int k = 0; k < C; ++k) {
                        a[k][j] = element(upper[j], k);
                        b[k][j] = element(upper[j], C + k);
                        c[k][j] = element(lower[j], k);
                        d[k][j] = element(lower[j], C + k);
                    }
                }
            } else {
                for (int k = 0; k < C; ++k) {  // a loop per channel: the compiler gathers 4-byte elements
                    for (i32 j = 0; j < n; ++j) {
                        a[k][j] = src[off[j] + k];
                        b[k][j] = src[off[j] + C + k];
                        c[k][j] = src[off[j] + pitch + k];
                        d[k][j] = src[off[j] + pitch + C + k];
                    }
                }
            }
            const Weight* __restrict wx = fx.data() + x0;
            const Weight* __restrict wy = fy.data() + x0;
            f32* __restrict out = to + (size_t)x0 * C;
            for (i32 j = 0; j < n; ++j) {
                for (int k = 0; k < C; ++k) {
                    if (kNarrow) {
                        out[j * C + k] = Warping::blend_narrow((f32)a[k][j], (f32)b[k][j], (f32)c[k][j], (f32)d[k][j],
                                                               (f32)wx[j], (f32)wy[j]);
                    } else {
                        out[j * C + k] = blend4((f64)a[k][j], (f64)b[k][j], (f64)c[k][j], (f64)d[k][j], (f64)wx[j],
                                                (f64)wy[j]);
                    }
                }
            }
        }
    }

  private:
    // The next output row reads the source rows below the taps of these n pixels: each pixel's lower row
    // there is its first use (the upper one this row's lower), which a prefetch starts now. An address
    // outside the image is harmless: a prefetch does not fault (hence integer arithmetic).
    void prefetch_below(const T* src, const u32* off, i32 n) const {
        for (i32 j = 0; j < n; j += kPrefetchEvery) {
            __builtin_prefetch((const void*)((uintptr_t)(src + off[j]) + (uintptr_t)(ahead * (i64)sizeof(T))));
        }
    }

#if defined(__AVX512VBMI__)
    // blend for byte taps, 16 pixels at a time in vectors of f32: each channel of each tap is one byte
    // shuffle out of the pixels' 8-byte words, widened and converted; the C channel vectors are then
    // interleaved into `to` by two-source shuffles. The same operations as Warping::blend_narrow, lane by
    // lane. Returns where the pixels it left (fewer than 16) begin.
    i32 blend_bytes(const T* __restrict src, u32 pitch, i32 lo, i32 hi, f32* to) {
        const u32* __restrict off = offset.data();
        const f32* __restrict wx = (const f32*)fx.data();
        const f32* __restrict wy = (const f32*)fy.data();
        f32* __restrict out = to;
        for (; lo + 16 <= hi; lo += 16) {
            prefetch_below(src, off + lo, 16);
            const Bytes64 upper0 = words_at(src, off + lo), upper1 = words_at(src, off + lo + 8);
            const Bytes64 lower0 = words_at(src + pitch, off + lo), lower1 = words_at(src + pitch, off + lo + 8);
            Floats16 ax, ay;
            __builtin_memcpy(&ax, wx + lo, 64);
            __builtin_memcpy(&ay, wy + lo, 64);
            const Floats16 bx = 1.0f - ax, by = 1.0f - ay;
            const Floats16 w00 = bx * by, w01 = ax * by, w10 = bx * ay, w11 = ax * ay;
            Floats16 r[C];
            channels<0>(r, upper0, upper1, lower0, lower1, w00, w01, w10, w11);
            store_interleaved<Floats16, Ints16, 16, 0>(out + (size_t)lo * C, r);
        }
        return lo;
    }

    // The 8-byte words at base + off[0..7], as one vector.
    static Bytes64 words_at(const T* base, const u32* off) {
        const Words8 w = {word_at(base + off[0]), word_at(base + off[1]), word_at(base + off[2]), word_at(base + off[3]),
                          word_at(base + off[4]), word_at(base + off[5]), word_at(base + off[6]), word_at(base + off[7])};
        return (Bytes64)w;
    }

    // Byte I of each of the 16 words (words0: pixels 0-7, words1: 8-15) as f32 lanes.
    // (The byte lands in every byte of its lane's i32, and a mask keeps the low one: a conversion of 16
    // bytes to 16 i32 compiled to one extract and insert per byte.)
    template <int I>
    static Floats16 byte_lanes(Bytes64 words0, Bytes64 words1) {
        const Bytes64 picked = __builtin_shuffle(words0, words1, byte_mask<I>(std::make_index_sequence<64>()));
        Ints16 lanes;
        __builtin_memcpy(&lanes, &picked, 64);
        return __builtin_convertvector(lanes & 0xff, Floats16);
    }

    template <int I, size_t... J>
    static constexpr Bytes64 byte_mask(std::index_sequence<J...>) {
        return Bytes64{(u8)(8 * (J / 4) + I)...};
    }

    template <int K>
    static void channels(Floats16* r, Bytes64 upper0, Bytes64 upper1, Bytes64 lower0, Bytes64 lower1, Floats16 w00,
                         Floats16 w01, Floats16 w10, Floats16 w11) {
        if constexpr (K < C) {
            const Floats16 pa = byte_lanes<K>(upper0, upper1), pb = byte_lanes<C + K>(upper0, upper1);
            const Floats16 pc = byte_lanes<K>(lower0, lower1), pd = byte_lanes<C + K>(lower0, lower1);
            r[K] = ((pa * w00 + pb * w01) + pc * w10) + pd * w11;
            channels<K + 1>(r, upper0, upper1, lower0, lower1, w00, w01, w10, w11);
        }
    }

#endif

#if defined(__AVX512F__)
    // blend for f32 taps (Warping::blend's zero-weight rule, in f64), 8 pixels at a time: each channel of
    // each tap loaded per pixel into a vector (cheaper than a gather here), the steps as selects, the
    // channel vectors interleaved into `to`. Returns where the pixels it left (fewer than 8) begin.
    i32 blend_floats(const T* __restrict src, u32 pitch, i32 lo, i32 hi, f32* to) {
        const u32* __restrict off = offset.data();
        const f64* __restrict wxs = (const f64*)fx.data();
        const f64* __restrict wys = (const f64*)fy.data();
        f32* __restrict out = to;
        for (; lo + 8 <= hi; lo += 8) {
            const u32* o = off + lo;
            prefetch_below(src, o, 8);
            Doubles8 wx, wy;
            __builtin_memcpy(&wx, wxs + lo, 64);
            __builtin_memcpy(&wy, wys + lo, 64);
            Floats8 r[C];
            for (int k = 0; k < C; ++k) {
                const Doubles8 a = taps_at(src, o, k), b = taps_at(src, o, C + k);
                const Doubles8 c = taps_at(src + pitch, o, k), d = taps_at(src + pitch, o, C + k);
                r[k] = __builtin_convertvector(step8(step8(a, b, wx), step8(c, d, wx), wy), Floats8);
            }
            store_interleaved<Floats8, Ints8, 8, 0>(out + (size_t)lo * C, r);
        }
        return lo;
    }

    // Element i of the taps at base + off[0..7], as f64 lanes.
    static Doubles8 taps_at(const T* base, const u32* off, int i) {
        const Floats8 v = {base[off[0] + i], base[off[1] + i], base[off[2] + i], base[off[3] + i],
                           base[off[4] + i], base[off[5] + i], base[off[6] + i], base[off[7] + i]};
        return __builtin_convertvector(v, Doubles8);
    }

    // Warping::step lane by lane: a weight of 0 gives u, of 1 gives v, else u (1 - w) + v w.
    static Doubles8 step8(Doubles8 u, Doubles8 v, Doubles8 w) {
        const Doubles8 blended = u * (1.0 - w) + v * w;
        const Doubles8 high = w == 1.0 ? v : blended;
        return w == 0.0 ? u : high;
    }
#endif

#if defined(__AVX512F__)
    // The C channel vectors (N lanes each) interleaved pixel-major into C output vectors: lane i of output
    // O is channel g % C of pixel g / C, g = N O + i. The first two-source shuffle takes channels 0 and
    // 1, each later one channel S, with masks made at compile time.
    template <typename M, int N, int O, size_t... L>
    static constexpr M first_mask(std::index_sequence<L...>) {
        return M{(int)((N * O + L) % C == 0 ? (N * O + L) / C : ((N * O + L) % C == 1 ? N + (N * O + L) / C : 0))...};
    }

    template <typename M, int N, int O, int S, size_t... L>
    static constexpr M take_mask(std::index_sequence<L...>) {
        return M{(int)((N * O + L) % C == S ? N + (N * O + L) / C : L)...};
    }

    template <typename V, typename M, int N, int O, int S>
    static V take_rest(V v, const V* r) {
        if constexpr (S >= C) {
            return v;
        } else {
            return take_rest<V, M, N, O, S + 1>(
                __builtin_shuffle(v, r[S], take_mask<M, N, O, S>(std::make_index_sequence<N>())), r);
        }
    }

    template <typename V, typename M, int N, int O>
    static V interleaved(const V* r) {
        if constexpr (C == 1) {
            return r[0];
        } else {
            return take_rest<V, M, N, O, 2>(__builtin_shuffle(r[0], r[1], first_mask<M, N, O>(std::make_index_sequence<N>())), r);
        }
    }

    template <typename V, typename M, int N, int O>
    static void store_interleaved(f32* out, const V* r) {
        if constexpr (O < C) {
            const V v = interleaved<V, M, N, O>(r);
            __builtin_memcpy(out + N * O, &v, sizeof(V));
            store_interleaved<V, M, N, O + 1>(out, r);
        }
    }
#endif

    // A row's pixels come in runs: Outside (or beyond the source and Edge), Edge, Inside, Edge, Outside.
    // Where the row's W stays positive, the runs' ends follow from the map in real arithmetic; each
    // bound is moved two pixels towards the Edge runs, and the Inside and Outside runs still test their
    // pixels (a pixel that fails is an Edge pixel, which the per-pixel stage computes exactly), so the
    // estimate decides only which test a pixel takes. The test of the Inside run is the cheaper: it
    // leaves out the Outside comparisons.
    template <bool Projective>
    void locate_runs(i32 x0, i32 x1, i32 src_h, u32 pitch, f64 right, f64 bottom, f64 width, f64 height, u32 outside,
                     i32 row_end) {
        const f64 a = along_x[0], b = row[0], c = along_x[1], d = row[1];
        const f64 e = Projective ? along_x[2] : 0.0, f = Projective ? row[2] : 1.0;  // W = e x + f
        const f64 first = (f64)x0, last = (f64)(x1 - 1);
        const f64 w0 = e * first + f, w1 = e * last + f;
        // W not positive on the whole row, NaN or far coefficients: every pixel takes the full test.
        if (!(w0 > 0.0 && w1 > 0.0 && fabs(a) < kFar && fabs(b) < kFar && fabs(c) < kFar && fabs(d) < kFar &&
              fabs(e) < kFar && fabs(f) < kFar)) {
            classify<Projective, true>(x0, x1, src_h, pitch, right, bottom, width, height, outside, row_end);
            return;
        }
        // With W > 0: X / W >= k is X - k W >= 0, a half-line of x.
        f64 in_lo = first, in_hi = last, near_lo = first, near_hi = last;
        keep_half(a, b, 0.0, e, f, in_lo, in_hi);
        keep_half(-a, -b, -right, e, f, in_lo, in_hi);
        keep_half(c, d, 0.0, e, f, in_lo, in_hi);
        keep_half(-c, -d, -bottom, e, f, in_lo, in_hi);
        keep_half(a, b, -1.0, e, f, near_lo, near_hi);
        keep_half(-a, -b, -width, e, f, near_lo, near_hi);
        keep_half(c, d, -1.0, e, f, near_lo, near_hi);
        keep_half(-c, -d, -height, e, f, near_lo, near_hi);
        i32 near_begin = clamp_to(floor(near_lo) - 2.0, x0, x1), near_end = clamp_to(ceil(near_hi) + 3.0, x0, x1);
        if (near_lo > near_hi) {
            near_begin = near_end = x0;
        }
        i32 in_begin = clamp_to(ceil(in_lo) + 2.0, near_begin, near_end);
        i32 in_end = clamp_to(floor(in_hi) - 1.0, in_begin, near_end);
        if (in_lo > in_hi) {
            in_begin = in_end = near_begin;
        }
        beyond<Projective>(x0, near_begin, width, height, outside);
        classify<Projective, true>(near_begin, in_begin, src_h, pitch, right, bottom, width, height, outside, row_end);
        classify<Projective, false>(in_begin, in_end, src_h, pitch, right, bottom, width, height, outside, row_end);
        classify<Projective, true>(in_end, near_end, src_h, pitch, right, bottom, width, height, outside, row_end);
        beyond<Projective>(near_end, x1, width, height, outside);
    }

    // Narrows [lo, hi] to the x where (s x + t) - k (e x + f) >= 0, in real arithmetic.
    static void keep_half(f64 s, f64 t, f64 k, f64 e, f64 f, f64& lo, f64& hi) {
        const f64 slope = s - k * e, at0 = t - k * f;
        if (slope == 0.0) {
            if (at0 < 0.0) {
                lo = 1.0;
                hi = 0.0;
            }
            return;
        }
        const f64 root = -at0 / slope;
        if (slope > 0.0) {
            lo = root > lo ? root : lo;
        } else {
            hi = root < hi ? root : hi;
        }
    }

    static i32 clamp_to(f64 v, i32 lo, i32 hi) {
        return v < (f64)lo ? lo : (v > (f64)hi ? hi : (i32)v);
    }

    // Pixels [x0, x1) expected beyond the source: Outside where they are (with zero_outside), else Edge.
    template <bool Projective>
    void beyond(i32 x0, i32 x1, f64 width, f64 height, u32 outside) {
        u8* __restrict k = kind.data();
        if (outside == 0u) {
            for (i32 x = x0; x < x1; ++x) {
                k[x] = WarpEdge;
            }
            return;
        }
        const RowMap map = row_map();
        if (Projective) {
            // Without the division: here W > 0 (locate_runs), and X / W beyond a bound widened by kSure is
            // beyond it after the rounding of X * (1 / W) too (a few ulps); a pixel nearer is an Edge pixel.
            const f64 low = -1.0 - kSure, right_of = width * (1.0 + kSure), below = height * (1.0 + kSure);
            for (i32 x = x0; x < x1; ++x) {
                const f64 w = map.m6 * (f64)x + map.rw;
                const f64 px = map.m0 * (f64)x + map.rx, py = map.m3 * (f64)x + map.ry;
                const u32 out = (u32)(px < low * w) | (u32)(py < low * w) | (u32)(px >= right_of * w) |
                                (u32)(py >= below * w);
                k[x] = (u8)((0u - out) & outside);
            }
            return;
        }
        for (i32 x = x0; x < x1; ++x) {
            f64 px, py;
            map.template at<false>(x, px, py);
            const u32 out = (u32)(px < -1.0) | (u32)(py < -1.0) | (u32)(px >= width) | (u32)(py >= height);
            k[x] = (u8)((0u - out) & outside);
        }
    }

    // The map along a row, copied out of the object so that the loops' byte stores cannot alias it.
    struct RowMap {
        f64 m0, m3, m6, rx, ry, rw;

        // Pixel x's source coordinates, as Warping::affine / perspective compute them.
        template <bool Projective>
        void at(i32 x, f64& px, f64& py) const {
            px = m0 * (f64)x + rx;
            py = m3 * (f64)x + ry;
            if (Projective) {
                const f64 inv_w = 1.0 / (m6 * (f64)x + rw);
                px = px * inv_w;
                py = py * inv_w;
            }
        }
    };

    RowMap row_map() const { return RowMap{along_x[0], along_x[1], along_x[2], row[0], row[1], row[2]}; }

    // Pixels [x0, x1): Inside (and their offsets and weights) where they are, else Outside where they are
    // and TestOutside (with zero_outside: `outside` is 2), else Edge.
    template <bool Projective, bool TestOutside>
    void classify(i32 x0, i32 x1, i32 src_h, u32 pitch, f64 right, f64 bottom, f64 width, f64 height, u32 outside,
                  i32 row_end) {
        u8* __restrict k = kind.data();
        u32* __restrict off = offset.data();
        Weight* __restrict wx = fx.data();
        Weight* __restrict wy = fy.data();
        const RowMap map = row_map();
        for (i32 x = x0; x < x1; ++x) {
            f64 px, py;
            map.template at<Projective>(x, px, py);
            const u32 in = (u32)(px >= 0.0) & (u32)(py >= 0.0) & (u32)(px < right) & (u32)(py < bottom);
            const u64 keep = 0ull - (u64)in;
            const f64 cx = f64_from_bits(bits_of(px) & keep);  // 0 elsewhere: a defined conversion
            const f64 cy = f64_from_bits(bits_of(py) & keep);
            const i32 ix = (i32)cx, iy = (i32)cy;
            const u32 ok = in & ((u32)(iy + 2 < src_h) | (u32)(ix * C <= row_end));
            if (TestOutside) {
                const u32 out = (u32)(px < -1.0) | (u32)(py < -1.0) | (u32)(px >= width) | (u32)(py >= height);
                k[x] = (u8)(ok | ((0u - out) & outside));  // Inside and Outside exclude each other
            } else {
                k[x] = (u8)ok;
            }
            off[x] = (u32)iy * pitch + (u32)ix * (u32)C;
            wx[x] = (Weight)(cx - (f64)ix);
            wy[x] = (Weight)(cy - (f64)iy);
        }
    }

    static constexpr i32 kGroup = 64;  // pixels gathered, then blended, at a time
    static constexpr i32 kPrefetchEvery = 2;  // pixels per prefetch
    static constexpr f64 kSure = 1e-9;  // beyond's margin: far above the rounding errors of a coordinate
    static constexpr f64 kFar = 1048576.0;    // a step beyond this (or NaN) is not prefetched: kept in i64
    // A row's two taps in one 8-byte word: integer elements of 1 or 2 bytes, 2 C of them in 8 bytes.
    static constexpr bool kWide = Finite && sizeof(T) <= 2 && 2 * C * (int)sizeof(T) <= 8;
    static constexpr i32 kRead = kWide ? 8 / (i32)sizeof(T) : 2 * C;  // elements a row's taps read
    // A tap as gathered: an integer converts to f64 from i32 in vectors (a byte or u16 does not).
    using Tap = typename std::conditional<Finite && sizeof(T) < 4, i32, T>::type;
    typedef u64 UnalignedWord __attribute__((aligned(1), may_alias));

    template <typename E>
    static u64 word_at(const E* p) { return *(const UnalignedWord*)p; }

    // Element i of a little-endian word of T's, as a tap (the conversion to T keeps a signed one's sign).
    static Tap element(u64 word, int i) {
        return (Tap)(T)(word >> (8 * (int)sizeof(T) * i));
    }

    // Warping::step as selects: a weight of 0 gives u, of 1 gives v (inf * 0 would be NaN).
    static f64 step(f64 u, f64 v, f64 w) {
        const u64 zero = 0ull - (u64)(w == 0.0), one = 0ull - (u64)(w == 1.0);
        const u64 r = bits_of(u * (1.0 - w) + v * w);
        return f64_from_bits((((r & ~one) | (bits_of(v) & one)) & ~zero) | (bits_of(u) & zero));
    }

    static f32 blend4(f64 a, f64 b, f64 c, f64 d, f64 wx, f64 wy) {
        if (Finite) {
            return Warping::blend_finite(a, b, c, d, wx, wy);
        }
        return (f32)step(step(a, b, wx), step(c, d, wx), wy);
    }
};
#endif

}  // namespace fkl
