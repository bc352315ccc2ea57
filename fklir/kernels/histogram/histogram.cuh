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
// ticket: out is written whole, so no kernel has to clear it first (a block alone on its image writes its
// counts to out at once). Threads read 16 bytes at a time, consecutive threads consecutive 16 bytes, so
// that a warp's loads are coalesced.
//
// The template arguments are __init__.py's Layout (benchmarks/RESULTS.md has the others timed).
#include "fkl/tensor_view.h"

using fkl::i32;
using fkl::i64;
using fkl::u32;
using fkl::u8;

// Copies of each bin in shared memory, side by side, when striped: lane l of a warp counts into copy
// l % kStripes, so that whatever the values a warp's 32 additions fall in distinct banks (32 copies) or
// few share one (a random image otherwise makes several lanes wait on one bank, and equal values on one
// address). As many copies as fit in 32 KiB for C channels, so that two blocks still fit on a multiprocessor.
template <int C, bool Striped>
constexpr int kStripes = !Striped ? 1 : C == 1 ? 32 : C == 2 ? 16 : 8;

// The bins of this thread: bins[(c * 256 + v) * S] is its copy of channel c's bin v.
template <int C, int S>
__device__ void count_byte(u32* bins, i64 offset, u8 value) {
    atomicAdd(&bins[(int(offset % C) * 256 + value) * S], 1u);
}

// Whether every byte of `word` equals the byte C on (where there is one), four at a time: word k against the
// four bytes from byte 4k + C, and the last word's first 4 - C bytes against its last ones.
template <int C>
__device__ bool uniform(uint4 word) {
    const u32 w[4] = {word.x, word.y, word.z, word.w};
    bool same = true;
#pragma unroll
    for (int k = 0; k < 3; ++k) same &= w[k] == __funnelshift_r(w[k], w[k + 1], 8 * C);
    if constexpr (C < 4) same &= ((w[3] ^ (w[3] >> 8 * C)) & ((1u << 8 * (4 - C)) - 1)) == 0;
    return same;
}

// bins += the 16 bytes of `word`, whose first byte has channel `first_channel`. Runs: a byte equal to the
// next byte of its channel (C bytes on) passes its count on to it, so that a run of equal values (flat
// image regions) is one shared atomic, not one per byte. Otherwise only a word whose every channel holds
// one value is merged (C atomics), for a cheaper test.
template <int C, int S, bool Runs>
__device__ void count_word(u32* bins, int first_channel, uint4 word) {
    const u8* bytes = reinterpret_cast<const u8*>(&word);
    if constexpr (Runs) {
        u32 count[16];
#pragma unroll
        for (int k = 0; k < 16; ++k) count[k] = 1;
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            if (k + C < 16 && bytes[k] == bytes[k + C]) {
                count[k + C] += count[k];
            } else {
                atomicAdd(&bins[((first_channel + k) % C * 256 + bytes[k]) * S], count[k]);
            }
        }
    } else {
        if (uniform<C>(word)) {
#pragma unroll
            for (int k = 0; k < C; ++k) {
                atomicAdd(&bins[((first_channel + k) % C * 256 + bytes[k]) * S], u32((16 - k + C - 1) / C));
            }
            return;
        }
#pragma unroll
        for (int k = 0; k < 16; ++k) atomicAdd(&bins[((first_channel + k) % C * 256 + bytes[k]) * S], 1u);
    }
}

// loaded[j] = vectors[w + j * stride] for each j < Words with w + j * stride < words, the loads issued
// together so that they are in flight at once.
template <int Words>
__device__ void load_words(uint4 (&loaded)[Words], const uint4* vectors, i64 w, i64 stride, i64 words) {
#pragma unroll
    for (int j = 0; j < Words; ++j) {
        if (w + j * stride < words) loaded[j] = vectors[w + j * stride];
    }
}

// Clears the block's bins (C * 256 * S of them), then bins += this block's share of the image's `bytes`
// bytes at `pixels`: a head up to the first 16-byte aligned address, whole 16-byte words, and a tail after
// the last whole word. Block 0 counts the head and the tail byte by byte. Each thread loads Words words
// before counting them; its first round's loads are issued before the bins are cleared, so that clearing
// them takes place while those loads are in flight.
template <int C, int Threads, int Words, int S, bool Runs>
__device__ void count_share(u32* bins, const u8* pixels, i64 bytes) {
    const i64 misaligned = i64(reinterpret_cast<unsigned long long>(pixels) % 16);
    const i64 head = misaligned == 0 ? 0 : (16 - misaligned < bytes ? 16 - misaligned : bytes);
    const i64 words = (bytes - head) / 16;
    const i64 tail = head + 16 * words;
    const uint4* vectors = reinterpret_cast<const uint4*>(pixels + head);
    const i64 stride = i64(gridDim.x) * Threads;
    const i64 first = i64(blockIdx.x) * Threads + threadIdx.x;
    uint4 loaded[Words];
    load_words(loaded, vectors, first, stride, words);
    for (int i = threadIdx.x; i < C * 256 * S; i += Threads) bins[i] = 0;
    __syncthreads();

    u32* column = bins + threadIdx.x % S;  // this lane's copy
    if (blockIdx.x == 0) {
        for (i64 i = threadIdx.x; i < head; i += Threads) count_byte<C, S>(column, i, pixels[i]);
        for (i64 i = tail + threadIdx.x; i < bytes; i += Threads) count_byte<C, S>(column, i, pixels[i]);
    }
    for (i64 w = first; w < words; w += Words * stride) {
        if (w != first) load_words(loaded, vectors, w, stride, words);
#pragma unroll
        for (int j = 0; j < Words; ++j) {
            const i64 word = w + j * stride;
            if (word < words) count_word<C, S, Runs>(column, int((head + 16 * word) % C), loaded[j]);
        }
    }
}

// The most lanes (a power of two, at most Copies, itself a power of two up to 32) that can share the
// summing of each of Bins bins with every one of Threads threads given a bin.
template <int Threads, int Bins, int Copies, int Each = Threads / Bins>
constexpr int kLanesPerBin =
    Each >= Copies ? Copies : Each >= 16 ? 16 : Each >= 8 ? 8 : Each >= 4 ? 4 : Each >= 2 ? 2 : 1;

// out[b, c, v] = the number of pixels of image b whose channel c is v. Grid: x splits an image into
// blocks, y walks the images; blocks of Threads threads (a multiple of 32).
template <int C, int Threads, int Words, bool Striped, bool Runs>
__device__ void count_images(
    const fkl::TensorView& images, const fkl::TensorView& out, const fkl::TensorView& scratch) {
    static_assert(Threads % 32 == 0, "the sums below shuffle within whole warps");
    constexpr int S = kStripes<C, Striped>;
    constexpr int kBins = C * 256 * S;
    // Lanes per bin when this block's bins are summed. A warp takes 32 / G whole bins, which divide C * 256:
    // its lanes run the same rounds, as their shuffles need.
    constexpr int G = kLanesPerBin<Threads, C * 256, S>;
    // This block's counts: bins[(c * 256 + v) * S + s] is copy s of channel c's bin v (32 bits hold any
    // count: an image has at most 2^31 - 1 pixels, which __init__.py checks).
    __shared__ u32 bins[kBins];
    __shared__ bool last;  // this block is the last of its image to add its counts
    const i64 batch = images.shape[0];
    const i64 bytes = images.shape[1] * images.shape[2] * C;  // of one image
    u32* tickets = scratch.ptr<u32>() + batch * C * 256;
    for (i64 image = blockIdx.y; image < batch; image += gridDim.y) {
        count_share<C, Threads, Words, S, Runs>(bins, images.ptr<u8>() + image * bytes, bytes);
        __syncthreads();

        // G consecutive lanes sum one bin's S copies, S / G each, then each other's sums, and the first adds
        // the bin's count to the image's sums, or writes it to out when the block is alone on its image (no
        // atomics, no ticket): few shuffles, and every thread busy while the bins outnumber them. Lane r of a
        // bin reads copies r + G * (j + b / (32 / S)) (mod S), so that a warp's 32 reads of one round fall in
        // distinct banks.
        u32* sums = scratch.ptr<u32>() + image * C * 256;
        i32* counts = out.ptr<i32>() + image * C * 256;
        const bool alone = gridDim.x == 1;
        for (int b = threadIdx.x / G; b < C * 256; b += Threads / G) {
            const int r = threadIdx.x % G;
            u32 count = 0;
#pragma unroll
            for (int j = 0; j < S / G; ++j) count += bins[b * S + (r + G * (j + b / (32 / S))) % S];
#pragma unroll
            for (int lanes = G / 2; lanes > 0; lanes /= 2) count += __shfl_xor_sync(~0u, count, lanes);
            if (r == 0 && alone) counts[b] = i32(count);
            if (r == 0 && !alone && count != 0) atomicAdd(sums + b, count);
        }
        if (alone) {
            __syncthreads();  // bins are read by every thread before the next image clears them
            continue;
        }
        // Thread 0 takes the ticket once every thread has added its bins (the barrier), between fences, which
        // are cumulative: this block's additions are visible device-wide before its ticket is, and the last
        // block sees every block's before its threads (after the barrier) read the sums. One thread's fences,
        // not every thread's.
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            last = atomicAdd(tickets + image, 1u) == gridDim.x - 1;
            if (last) __threadfence();
        }
        __syncthreads();
        if (last) {
            for (int i = threadIdx.x; i < C * 256; i += Threads) counts[i] = i32(atomicExch(sums + i, 0u));
            if (threadIdx.x == 0) tickets[image] = 0;
        }
        // bins and `last` are read by every thread before the next image writes them.
        __syncthreads();
    }
}

// MinBlocks: the blocks a multiprocessor must hold at once, which bounds the registers a thread may use
// (0: ptxas's own choice for Threads).
template <int C, int Threads, int Words, bool Striped, bool Runs, int MinBlocks>
__global__ void __launch_bounds__(Threads, MinBlocks)
    histogram(fkl::TensorView images, fkl::TensorView out, fkl::TensorView scratch) {
    count_images<C, Threads, Words, Striped, Runs>(images, out, scratch);
}
