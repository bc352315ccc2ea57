// histogram.cuh — per-channel 256-bin histograms of a batch of uint8 images, on the GPU.
//
// out (B, C, 256) int32 and images (B, H, W, C) uint8, both C-contiguous (the TensorMatchers of
// __init__.py check it). histogram_clear zeroes out, then histogram adds every image's counts.
//
// A block counts its share of one image in shared memory, one 256-bin histogram per channel, so that
// the many additions to one bin meet in on-chip memory; at the end it adds each non-zero bin to out
// with one global atomic. Its threads read 16 bytes at a time, consecutive threads consecutive
// 16 bytes, so that a warp's loads are coalesced.
#include "fkl/tensor_view.h"

using fkl::i32;
using fkl::i64;
using fkl::u32;
using fkl::u8;

// Words of 16 bytes a thread loads at once (__init__.py's BYTES_PER_BLOCK gives each thread one round).
constexpr int kWords = 4;

// out[i] = 0: one thread per count.
__global__ void histogram_clear(fkl::TensorView out) {
    const i64 count = out.shape[0] * out.shape[1] * out.shape[2];
    const i64 i = i64(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < count) out.ptr<i32>()[i] = 0;
}

// bins[c * 256 + v] += 1 for one byte: its channel c is its offset in the image modulo C (the pixels
// are C interleaved bytes).
template <int C>
__device__ void count_byte(u32* bins, i64 offset, u8 value) {
    atomicAdd(&bins[int(offset % C) * 256 + value], 1u);
}

// bins += the 16 bytes of `word`, whose first byte has channel `first_channel`. A byte equal to the
// next byte of its channel (C bytes on) passes its count on to it, so that a run of equal values
// (flat image regions) is one shared atomic, not one per byte.
template <int C>
__device__ void count_word(u32* bins, int first_channel, uint4 word) {
    const u8* bytes = reinterpret_cast<const u8*>(&word);
    u32 count[16];
#pragma unroll
    for (int k = 0; k < 16; ++k) count[k] = 1;
#pragma unroll
    for (int k = 0; k < 16; ++k) {
        if (k + C < 16 && bytes[k] == bytes[k + C]) {
            count[k + C] += count[k];
        } else {
            atomicAdd(&bins[(first_channel + k) % C * 256 + bytes[k]], count[k]);
        }
    }
}

// out[b, c, v] += the number of pixels of image b whose channel c is v. Grid: x splits an image into
// blocks, y walks the images; a block of any size works.
template <int C>
__global__ void histogram(fkl::TensorView images, fkl::TensorView out) {
    // This block's counts: channel c's value v at c * 256 + v, as in out (32 bits hold any count: an
    // image has at most 2^31 - 1 pixels, which __init__.py checks).
    __shared__ u32 bins[C * 256];
    const i64 bytes = images.shape[1] * images.shape[2] * C;  // of one image
    for (i64 image = blockIdx.y; image < images.shape[0]; image += gridDim.y) {
        for (int i = threadIdx.x; i < C * 256; i += blockDim.x) bins[i] = 0;
        __syncthreads();

        // The image's bytes: a head up to the first 16-byte aligned address, whole 16-byte words, and
        // a tail after the last whole word. Block 0 counts the head and the tail byte by byte.
        const u8* pixels = images.ptr<u8>() + image * bytes;
        const i64 misaligned = i64(reinterpret_cast<unsigned long long>(pixels) % 16);
        const i64 head = misaligned == 0 ? 0 : (16 - misaligned < bytes ? 16 - misaligned : bytes);
        const i64 words = (bytes - head) / 16;
        const i64 tail = head + 16 * words;
        if (blockIdx.x == 0) {
            for (i64 i = threadIdx.x; i < head; i += blockDim.x) count_byte<C>(bins, i, pixels[i]);
            for (i64 i = tail + threadIdx.x; i < bytes; i += blockDim.x) count_byte<C>(bins, i, pixels[i]);
        }
        // Each thread loads kWords words before counting them, so that their loads are in flight together.
        const uint4* vectors = reinterpret_cast<const uint4*>(pixels + head);
        const i64 stride = i64(gridDim.x) * blockDim.x;
        for (i64 w = i64(blockIdx.x) * blockDim.x + threadIdx.x; w < words; w += kWords * stride) {
            uint4 loaded[kWords];
#pragma unroll
            for (int j = 0; j < kWords; ++j) {
                if (w + j * stride < words) loaded[j] = vectors[w + j * stride];
            }
#pragma unroll
            for (int j = 0; j < kWords; ++j) {
                const i64 word = w + j * stride;
                if (word < words) count_word<C>(bins, int((head + 16 * word) % C), loaded[j]);
            }
        }
        __syncthreads();

        i32* counts = out.ptr<i32>() + image * C * 256;
        for (int i = threadIdx.x; i < C * 256; i += blockDim.x) {
            if (bins[i] != 0) atomicAdd(counts + i, i32(bins[i]));
        }
        __syncthreads();  // every thread has read bins before the next image clears them
    }
}
