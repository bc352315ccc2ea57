// histogram.cuh — per-channel 256-bin histograms of a batch of uint8 images, on the GPU, in one kernel.
//
// images (B, H, W, C) uint8 and out (B, C, 256) int32, both C-contiguous (the TensorMatchers of
// __init__.py check it); scratch: uint32, at least B * (C * 256 + 1) of them, all zero before a launch,
// which leaves them zero again (__init__.py keeps one per stream, so that launches sharing it run in turn).
//
// A block counts its share of one image in shared memory, one 256-bin histogram per channel, so that
// the many additions to one bin meet in on-chip memory; then it adds each non-zero bin to the image's
// accumulator in scratch with one global atomic and takes a ticket. The image's last block (its ticket
// says every other block has added its counts) moves the accumulator to out and zeroes it, and resets the
// ticket: out is written whole, so no kernel has to clear it first. Threads read 16 bytes at a time,
// consecutive threads consecutive 16 bytes, so that a warp's loads are coalesced.
#include "fkl/tensor_view.h"

using fkl::i32;
using fkl::i64;
using fkl::u32;
using fkl::u8;

// Words of 16 bytes a thread loads at once (__init__.py's BYTES_PER_BLOCK gives each thread one round).
constexpr int kWords = 4;

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

// bins += this block's share of the image's `bytes` bytes at `pixels`: a head up to the first 16-byte
// aligned address, whole 16-byte words, and a tail after the last whole word. Block 0 counts the head
// and the tail byte by byte. Each thread loads Words words before counting them, so that their loads
// are in flight together.
template <int C, int Words>
__device__ void count_share(u32* bins, const u8* pixels, i64 bytes) {
    const i64 misaligned = i64(reinterpret_cast<unsigned long long>(pixels) % 16);
    const i64 head = misaligned == 0 ? 0 : (16 - misaligned < bytes ? 16 - misaligned : bytes);
    const i64 words = (bytes - head) / 16;
    const i64 tail = head + 16 * words;
    if (blockIdx.x == 0) {
        for (i64 i = threadIdx.x; i < head; i += blockDim.x) count_byte<C>(bins, i, pixels[i]);
        for (i64 i = tail + threadIdx.x; i < bytes; i += blockDim.x) count_byte<C>(bins, i, pixels[i]);
    }
    const uint4* vectors = reinterpret_cast<const uint4*>(pixels + head);
    const i64 stride = i64(gridDim.x) * blockDim.x;
    for (i64 w = i64(blockIdx.x) * blockDim.x + threadIdx.x; w < words; w += Words * stride) {
        uint4 loaded[Words];
#pragma unroll
        for (int j = 0; j < Words; ++j) {
            if (w + j * stride < words) loaded[j] = vectors[w + j * stride];
        }
#pragma unroll
        for (int j = 0; j < Words; ++j) {
            const i64 word = w + j * stride;
            if (word < words) count_word<C>(bins, int((head + 16 * word) % C), loaded[j]);
        }
    }
}

// out[b, c, v] = the number of pixels of image b whose channel c is v. Grid: x splits an image into
// blocks, y walks the images; a block of any size works. Copies > 1 gives each warp (modulo Copies) a
// sub-histogram of its own, so that warps counting equal values do not all wait on one shared address
// (benchmarks/histogram_variants.py times it and other Words against the shipped kernel).
template <int C, int Words = kWords, int Copies = 1>
__device__ void count_images(const fkl::TensorView& images, const fkl::TensorView& out, const fkl::TensorView& scratch) {
    // This block's counts: copy k's channel c's value v at (k * C + c) * 256 + v (32 bits hold any count:
    // an image has at most 2^31 - 1 pixels, which __init__.py checks).
    __shared__ u32 bins[Copies * C * 256];
    __shared__ bool last;  // this block is the last of its image to add its counts
    const i64 batch = images.shape[0];
    const i64 bytes = images.shape[1] * images.shape[2] * C;  // of one image
    u32* tickets = scratch.ptr<u32>() + batch * C * 256;
    for (i64 image = blockIdx.y; image < batch; image += gridDim.y) {
        for (int i = threadIdx.x; i < Copies * C * 256; i += blockDim.x) bins[i] = 0;
        __syncthreads();
        count_share<C, Words>(bins + threadIdx.x / 32 % Copies * C * 256, images.ptr<u8>() + image * bytes, bytes);
        __syncthreads();

        u32* sums = scratch.ptr<u32>() + image * C * 256;
        for (int i = threadIdx.x; i < C * 256; i += blockDim.x) {
            u32 count = 0;
#pragma unroll
            for (int k = 0; k < Copies; ++k) count += bins[k * C * 256 + i];
            if (count != 0) atomicAdd(sums + i, count);
        }
        // This block's additions are visible device-wide before its ticket is.
        __threadfence();
        __syncthreads();
        if (threadIdx.x == 0) last = atomicAdd(tickets + image, 1u) == gridDim.x - 1;
        __syncthreads();
        if (last) {
            __threadfence();  // every block's additions are seen before the sums are read
            i32* counts = out.ptr<i32>() + image * C * 256;
            for (int i = threadIdx.x; i < C * 256; i += blockDim.x) counts[i] = i32(atomicExch(sums + i, 0u));
            if (threadIdx.x == 0) tickets[image] = 0;
        }
        // bins and `last` are read by every thread before the next image writes them.
        __syncthreads();
    }
}

template <int C>
__global__ void histogram(fkl::TensorView images, fkl::TensorView out, fkl::TensorView scratch) {
    count_images<C>(images, out, scratch);
}
