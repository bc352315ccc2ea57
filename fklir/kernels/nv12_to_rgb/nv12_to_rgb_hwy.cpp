// nv12_to_rgb_hwy.cpp — the packed path of nv12_to_rgb.cpp with Google Highway vectors (CPU).
//
// The same integer arithmetic as nv12_color.h, lane by lane, so that its results equal the plain
// version's bit for bit (tests/kernels/test_nv12_to_rgb.py compares them). foreach_target.h compiles
// this file once per CPU target Highway knows, by including it again (so everything outside the
// HWY_NAMESPACE section is guarded: #pragma once, HWY_ONCE), and HWY_DYNAMIC_DISPATCH calls the best
// one the running CPU has. Highway 1.0.3 (Debian 12's libhwy-dev) has no LoadN/StoreN, so each row's
// last pixels, fewer than a vector, go through the scalar nv12::packed_pixels.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "nv12_to_rgb_hwy.cpp"  // this file, found in its folder (an include folder)
#include <hwy/foreach_target.h>                   // must come before highway.h
#include <hwy/highway.h>

#include "fkl/tensor_view.h"
#include "nv12_color.h"

HWY_BEFORE_NAMESPACE();
namespace nv12 {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Pixels [0, x) of one packed row, whole vectors of them, as packed_pixels computes them; returns x.
fkl::i64 PackedVectors(const fkl::u8* y, const fkl::u8* uv, fkl::u8* out, fkl::i64 width, bool bgr,
                       const Coefficients& k) {
#if HWY_TARGET == HWY_SCALAR
    return 0;  // one lane cannot hold a chroma pair: the scalar code does the row
#else
    const hn::ScalableTag<int32_t> d;           // int32 lanes: the fixed-point sums need 31 bits
    const hn::Rebind<uint8_t, decltype(d)> d8;  // as many uint8 lanes
    const fkl::i64 n = hn::Lanes(d);
    const auto zero = hn::Zero(d), center = hn::Set(d, 128), half = hn::Set(d, kHalf);
    const auto y_offset = hn::Set(d, k.y_offset), cy = hn::Set(d, k.cy);
    // per lane of a U, V pair: B's and R's coefficient, then G's two
    const auto cub_cvr = hn::OddEven(hn::Set(d, k.cvr), hn::Set(d, k.cub));
    const auto cug_cvg = hn::OddEven(hn::Set(d, k.cvg), hn::Set(d, k.cug));
    fkl::i64 x = 0;
    for (; x + n <= width; x += n) {
        // luma = cy * max(Y - y_offset, 0) + the rounding term
        const auto y_above = hn::Max(hn::Sub(hn::PromoteTo(d, hn::LoadU(d8, y + x)), y_offset), zero);
        const auto luma = hn::Add(hn::Mul(y_above, cy), half);
        // lanes U0 V0 U1 V1 ... (minus 128); pixel i's pair is lanes i & ~1 and i | 1
        const auto pairs = hn::Sub(hn::PromoteTo(d, hn::LoadU(d8, uv + x)), center);
        const auto blue_red = hn::Mul(pairs, cub_cvr);  // cub U in the U lanes, cvr V in the V lanes
        const auto green = hn::Mul(pairs, cug_cvg);     // cug U, cvg V
        const auto r = hn::Add(luma, hn::DupOdd(blue_red));
        const auto g = hn::Add(luma, hn::Add(hn::DupEven(green), hn::DupOdd(green)));
        const auto b = hn::Add(luma, hn::DupEven(blue_red));
        // >> 20 (arithmetic), then DemoteTo saturates to [0, 255]
        const auto r8 = hn::DemoteTo(d8, hn::ShiftRight<kShift>(r));
        const auto g8 = hn::DemoteTo(d8, hn::ShiftRight<kShift>(g));
        const auto b8 = hn::DemoteTo(d8, hn::ShiftRight<kShift>(b));
        hn::StoreInterleaved3(bgr ? b8 : r8, g8, bgr ? r8 : b8, d8, out + 3 * x);
    }
    return x;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace nv12
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace nv12 {

HWY_EXPORT(PackedVectors);

// PackedVectors of the best target this CPU has (chosen on the first call).
fkl::i64 packed_vectors(const fkl::u8* y, const fkl::u8* uv, fkl::u8* out, fkl::i64 width, bool bgr,
                        const Coefficients& k) {
    return HWY_DYNAMIC_DISPATCH(PackedVectors)(y, uv, out, width, bgr, k);
}

}  // namespace nv12

// nv12_to_rgb_packed of nv12_to_rgb.cpp: whole vectors with Highway, each row's tail in scalar code.
void nv12_to_rgb_packed_hwy(fkl::TensorView out, fkl::TensorView y, fkl::TensorView uv, int uv_row, bool bgr,
                            int y_offset, int cy, int cvr, int cvg, int cug, int cub) {
    const nv12::Coefficients k{y_offset, cy, cvr, cvg, cug, cub};
    const fkl::i64 frames = out.shape[0], height = out.shape[1], width = out.shape[2];
    // small frames are not worth waking the threads for
#pragma omp parallel for collapse(2) if (frames * height * width > 65536)
    for (fkl::i64 b = 0; b < frames; ++b)
        for (fkl::i64 r = 0; r < height; ++r) {
            const fkl::u8* luma = nv12::row_start(y, b, r);
            const fkl::u8* pairs = nv12::row_start(uv, b, uv_row + r / 2);
            fkl::u8* row = out.ptr<fkl::u8>() + (b * height + r) * width * 3;
            const fkl::i64 done = nv12::packed_vectors(luma, pairs, row, width, bgr, k);
            nv12::packed_pixels(luma, pairs, row, done, width, bgr, k);
        }
}
#endif  // HWY_ONCE
