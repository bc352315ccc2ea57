// fkl/planes.h — CPU only: the packed pixels of a flat group as planes and back, so that the
// pixel-wise flat loops read and write each channel at unit stride, which g++ vectorises. Without
// SSSE3's byte shuffle, g++ cannot deinterleave 3- and 4-byte pixels itself.
#pragma once

#include "core.h"

#if !defined(__CUDACC_RTC__)
#if !defined(__CUDACC__)
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fkl {

// planes[c][i] = in[i * C + c] for the N pixels of `in`.
template <int C, int N, typename T>
inline void to_planes(const T* __restrict__ in, T (&planes)[C][N]) {
#if defined(__SSE2__)
    if constexpr (sizeof(T) == 1 && C == 3 && N == 16) {
        // Four rounds of one byte interleave: after them, byte k of plane c is byte 3k + c.
        __m128i t0 = _mm_loadu_si128((const __m128i*)in);
        __m128i t1 = _mm_loadu_si128((const __m128i*)(in + 16));
        __m128i t2 = _mm_loadu_si128((const __m128i*)(in + 32));
        for (int round = 0; round < 4; ++round) {
            const __m128i u0 = _mm_unpacklo_epi8(t0, _mm_unpackhi_epi64(t1, t1));
            const __m128i u1 = _mm_unpacklo_epi8(_mm_unpackhi_epi64(t0, t0), t2);
            const __m128i u2 = _mm_unpacklo_epi8(t1, _mm_unpackhi_epi64(t2, t2));
            t0 = u0;
            t1 = u1;
            t2 = u2;
        }
        _mm_storeu_si128((__m128i*)planes[0], t0);
        _mm_storeu_si128((__m128i*)planes[1], t1);
        _mm_storeu_si128((__m128i*)planes[2], t2);
        return;
    }
    if constexpr (sizeof(T) == 1 && C == 4 && N == 16) {
        // Even and odd bytes apart (channels 0 and 2, 1 and 3), then apart once more.
        const __m128i low = _mm_set1_epi16(0x00ff);
        const auto even = [low](__m128i a, __m128i b) {
            return _mm_packus_epi16(_mm_and_si128(a, low), _mm_and_si128(b, low));
        };
        const auto odd = [](__m128i a, __m128i b) {
            return _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
        };
        const __m128i v0 = _mm_loadu_si128((const __m128i*)in);
        const __m128i v1 = _mm_loadu_si128((const __m128i*)(in + 16));
        const __m128i v2 = _mm_loadu_si128((const __m128i*)(in + 32));
        const __m128i v3 = _mm_loadu_si128((const __m128i*)(in + 48));
        const __m128i even01 = even(v0, v1), odd01 = odd(v0, v1);
        const __m128i even23 = even(v2, v3), odd23 = odd(v2, v3);
        _mm_storeu_si128((__m128i*)planes[0], even(even01, even23));
        _mm_storeu_si128((__m128i*)planes[1], even(odd01, odd23));
        _mm_storeu_si128((__m128i*)planes[2], odd(even01, even23));
        _mm_storeu_si128((__m128i*)planes[3], odd(odd01, odd23));
        return;
    }
#endif
    for (int i = 0; i < N; ++i)
        for (int c = 0; c < C; ++c) planes[c][i] = in[i * C + c];
}

// out[i * C + c] = planes[c][i]: to_planes undone.
template <int C, int N, typename T>
inline void from_planes(const T (&planes)[C][N], T* __restrict__ out) {
#if defined(__SSE2__)
    if constexpr (sizeof(T) == 1 && C == 3 && N == 16) {
        // The rounds of to_planes undone, each by splitting even and odd bytes.
        const __m128i low = _mm_set1_epi16(0x00ff);
        __m128i u0 = _mm_loadu_si128((const __m128i*)planes[0]);
        __m128i u1 = _mm_loadu_si128((const __m128i*)planes[1]);
        __m128i u2 = _mm_loadu_si128((const __m128i*)planes[2]);
        for (int round = 0; round < 4; ++round) {
            const __m128i t0 = _mm_packus_epi16(_mm_and_si128(u0, low), _mm_and_si128(u1, low));
            const __m128i t1 = _mm_packus_epi16(_mm_and_si128(u2, low), _mm_srli_epi16(u0, 8));
            const __m128i t2 = _mm_packus_epi16(_mm_srli_epi16(u1, 8), _mm_srli_epi16(u2, 8));
            u0 = t0;
            u1 = t1;
            u2 = t2;
        }
        _mm_storeu_si128((__m128i*)out, u0);
        _mm_storeu_si128((__m128i*)(out + 16), u1);
        _mm_storeu_si128((__m128i*)(out + 32), u2);
        return;
    }
    if constexpr (sizeof(T) == 1 && C == 4 && N == 16) {
        // Bytes of planes 0 and 1 paired, of 2 and 3 paired, then the pairs paired.
        const __m128i p0 = _mm_loadu_si128((const __m128i*)planes[0]);
        const __m128i p1 = _mm_loadu_si128((const __m128i*)planes[1]);
        const __m128i p2 = _mm_loadu_si128((const __m128i*)planes[2]);
        const __m128i p3 = _mm_loadu_si128((const __m128i*)planes[3]);
        const __m128i low01 = _mm_unpacklo_epi8(p0, p1), high01 = _mm_unpackhi_epi8(p0, p1);
        const __m128i low23 = _mm_unpacklo_epi8(p2, p3), high23 = _mm_unpackhi_epi8(p2, p3);
        _mm_storeu_si128((__m128i*)out, _mm_unpacklo_epi16(low01, low23));
        _mm_storeu_si128((__m128i*)(out + 16), _mm_unpackhi_epi16(low01, low23));
        _mm_storeu_si128((__m128i*)(out + 32), _mm_unpacklo_epi16(high01, high23));
        _mm_storeu_si128((__m128i*)(out + 48), _mm_unpackhi_epi16(high01, high23));
        return;
    }
#endif
    for (int i = 0; i < N; ++i)
        for (int c = 0; c < C; ++c) out[i * C + c] = planes[c][i];
}

}  // namespace fkl
#endif
#endif
