// histogram.cpp — per-channel 256-bin histograms of a batch of uint8 images, on the CPU.
//
// The contract of histogram.cuh, without its scratch: images (B, H, W, C) uint8 and out (B, C, 256)
// int32, both C-contiguous; histogram zeroes out, then adds every image's counts.
//
// The images are cut into pieces of whole pixels that the OpenMP threads take in turn (dynamically, so
// that a thread the OS holds back delays no other). A thread counts into a table of its own and adds
// it to out when it moves on to another image and when it is done, so that threads meet on out only
// once per image they worked on.
#include <algorithm>
#include <vector>

#include "fkl/tensor_view.h"

using fkl::i32;
using fkl::i64;
using fkl::u8;

// Pixels per piece: enough work to outweigh adding a thread's table to out.
constexpr i64 kPiecePixels = 16384;

// totals[i] += counts[i], then counts[i] = 0; atomic, as other threads may add to the same image.
static void add_counts(i32* totals, std::vector<i32>& counts) {
    for (size_t i = 0; i < counts.size(); ++i) {
        if (counts[i] == 0) continue;
#pragma omp atomic
        totals[i] += counts[i];
        counts[i] = 0;
    }
}

// out[b, c, v] = the number of pixels of image b whose channel c is v.
template <int C>
void histogram(fkl::TensorView images, fkl::TensorView out) {
    std::fill(out.ptr<i32>(), out.ptr<i32>() + out.shape[0] * C * 256, 0);
    const i64 batch = images.shape[0];
    const i64 pixels = images.shape[1] * images.shape[2];  // of one image
    const i64 pieces = (pixels + kPiecePixels - 1) / kPiecePixels;  // of one image
    const u8* data = images.ptr<u8>();
    i32* totals = out.ptr<i32>();
#pragma omp parallel if (batch * pieces > 1)
    {
        std::vector<i32> counts(C * 256, 0);  // this thread's counts of image `current`: c * 256 + v
        i64 current = -1;
#pragma omp for schedule(dynamic)
        for (i64 piece = 0; piece < batch * pieces; ++piece) {
            const i64 image = piece / pieces;
            if (image != current) {
                if (current >= 0) add_counts(totals + current * C * 256, counts);
                current = image;
            }
            const u8* pixel = data + image * pixels * C;
            const i64 end = std::min((piece % pieces + 1) * kPiecePixels, pixels);
            for (i64 i = piece % pieces * kPiecePixels; i < end; ++i) {
                for (int c = 0; c < C; ++c) counts[c * 256 + pixel[i * C + c]] += 1;
            }
        }
        if (current >= 0) add_counts(totals + current * C * 256, counts);
    }
}
