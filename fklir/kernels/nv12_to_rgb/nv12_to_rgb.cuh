// nv12_to_rgb.cuh — NV12 frames to RGB on the GPU.
//
// The tensors are nv12_to_rgb.cpp's: out (B, H, W, 3) uint8 (packed) or (B, 3, H, W) float32 (planar),
// C-contiguous; y and uv (B, rows, W) uint8 rows with any frame and row strides, output row r reading
// Y row r and UV row uv_row + r / 2 (uv_row = H for a single-buffer frame passed as both).
#include "fkl/tensor_view.h"
#include "nv12_color.h"

using fkl::i64;
using fkl::u8;
using nv12::row_start;

// ----- packed ------------------------------------------------------------------------------------------
//
// A thread converts a run of kSamples chroma samples side by side on one chroma row: 2 kSamples pixels
// of two rows. Its luma rows, its UV pairs and each output row's 6 kSamples bytes are then a few wide
// vectors, so that its loads are few and all issued before it computes. A warp is 32 such runs of one
// chroma row; it stages each output row in shared memory so that its stores are consecutive vectors (a
// thread's own would leave gaps between the warp's lanes). Blocks are kPackedWarps warps on consecutive
// chroma rows; grid (W / (64 kSamples), H / (2 kPackedWarps), B).
//
// The vector is 16 bytes where every address of the warp's rows is a multiple of 16, else 8 bytes where
// they are multiples of 8 (a width of 8 mod 16). Other rows (a 4-byte path would raise every thread's
// register count) take the byte path, its stores staged by the warp too; the end of a row that is not a
// whole run is converted byte by byte by its thread: the same arithmetic, one pixel at a time.
constexpr int kPackedWarps = 4;

// Vectors of Word, addressed as bytes (the indices are constants once unrolled, so the bytes stay in
// registers)
template <class Word, int kWords>
union Bytes {
    Word word[kWords];
    u8 byte[sizeof(Word) * kWords];
};

// Byte by byte: `samples` chroma samples' pixels of one row
__device__ void packed_bytes(u8* out, const u8* luma, const u8* pairs, int samples, const nv12::Coefficients& k,
                             bool bgr) {
    for (int s = 0; s < samples; ++s) {
        const nv12::Chroma c = nv12::chroma_terms(k, pairs[2 * s], pairs[2 * s + 1]);
        nv12::store_packed(out + 6 * s, nv12::pixel_rgb(k, luma[2 * s], c), bgr);
        nv12::store_packed(out + 6 * s + 3, nv12::pixel_rgb(k, luma[2 * s + 1], c), bgr);
    }
}

// This thread's run in Words when `whole` (its run lies inside the row); the warp's lanes all call it,
// the whole ones being a prefix of the warp. Each output row goes through the warp's `stage` (32 runs of
// output bytes).
template <int kSamples, class Word>
__device__ void packed_vectors(u8* const (&rows)[2], const u8* const (&luma)[2], const u8* pairs, bool whole,
                               bool bgr, const nv12::Coefficients& k, Word* stage) {
    constexpr int kBytes = 2 * kSamples;             // a run's luma bytes per row, and its UV bytes
    constexpr int kIn = kBytes / int(sizeof(Word));  // Words per run of luma or UV
    constexpr int kOut = 3 * kIn;                    // Words per output row of a run
    const int lane = threadIdx.x;
    const int words = kOut * __popc(__ballot_sync(~0u, whole));  // the warp's Words per row
    Bytes<Word, kIn> in[3];  // the UV pairs, then the two luma rows
    nv12::Chroma c[kSamples];
    if (whole) {
        const u8* const from[3] = {pairs, luma[0], luma[1]};
#pragma unroll
        for (int i = 0; i < 3; ++i) {
#pragma unroll
            for (int w = 0; w < kIn; ++w) in[i].word[w] = __ldg(reinterpret_cast<const Word*>(from[i]) + w);
        }
#pragma unroll
        for (int s = 0; s < kSamples; ++s) {
            const nv12::Chroma t = nv12::chroma_terms(k, in[0].byte[2 * s], in[0].byte[2 * s + 1]);
            c[s] = bgr ? nv12::Chroma{t.b, t.g, t.r} : t;  // so that the pixels store R, G, B in place
        }
    }
#pragma unroll
    for (int dr = 0; dr < 2; ++dr) {
        Bytes<Word, kOut> pixels;
        if (whole) {
#pragma unroll
            for (int x = 0; x < kBytes; ++x)
                nv12::store_packed(pixels.byte + 3 * x, nv12::pixel_rgb(k, in[1 + dr].byte[x], c[x / 2]), false);
#pragma unroll
            for (int w = 0; w < kOut; ++w) stage[kOut * lane + w] = pixels.word[w];
        }
        __syncwarp();
        Word* const first = reinterpret_cast<Word*>(rows[dr] - 3 * kBytes * lane);  // lane 0's
#pragma unroll
        for (int w = 0; w < kOut; ++w)
            if (lane + 32 * w < words) first[lane + 32 * w] = stage[lane + 32 * w];
        __syncwarp();  // the stage is read before the next row overwrites it
    }
}

// This thread's run byte by byte, for a warp whose rows take no vectors: the warp's stores staged as in
// packed_vectors (a lane's own byte stores would be 6 kSamples bytes from the next lane's, which makes
// every store instruction touch 32 separate segments); `stage`: 32 runs of output bytes.
template <int kSamples>
__device__ void packed_bytes_staged(u8* const (&rows)[2], const u8* const (&luma)[2], const u8* pairs, int x0,
                                    i64 width, bool bgr, const nv12::Coefficients& k, u8* stage) {
    constexpr int kBytes = 2 * kSamples;
    const int lane = threadIdx.x;
    const i64 warp_x0 = x0 - kBytes * lane;
    const int bytes = 3 * int(width - warp_x0 < 32 * kBytes ? width - warp_x0 : 32 * kBytes);  // the warp's per row
    const int samples = x0 >= width ? 0 : int(width - x0 < kBytes ? width - x0 : kBytes) / 2;
    for (int dr = 0; dr < 2; ++dr) {
        packed_bytes(stage + 3 * kBytes * lane, luma[dr], pairs, samples, k, bgr);
        __syncwarp();
        u8* const first = rows[dr] - 3 * kBytes * lane;  // lane 0's
        for (int i = lane; i < bytes; i += 32) first[i] = stage[i];
        __syncwarp();  // the stage is read before the next row overwrites it
    }
}

// The packed conversion of this thread's run (see above), in blocks of 32 x kPackedWarps threads;
// `stage` holds 32 runs of output rows (32 x 6 kSamples bytes, 16-byte aligned).
template <int kSamples>
__device__ void packed_run(const fkl::TensorView& out, const fkl::TensorView& y, const fkl::TensorView& uv, int uv_row,
                           bool bgr, const nv12::Coefficients& k, uint4* stage) {
    constexpr int kBytes = 2 * kSamples;
    const i64 height = out.shape[1], width = out.shape[2], b = blockIdx.z;
    const int cr = blockIdx.y * blockDim.y + threadIdx.y;
    if (2 * cr >= height) return;  // the whole warp: its lanes share the chroma row
    const int x0 = (blockIdx.x * blockDim.x + threadIdx.x) * kBytes;  // this run's first pixel
    const u8* const pairs = row_start(uv, b, uv_row + cr) + x0;
    const u8* const luma[2] = {row_start(y, b, 2 * cr) + x0, row_start(y, b, 2 * cr + 1) + x0};
    u8* const top = out.ptr<u8>() + ((b * height + 2 * cr) * width + x0) * 3;
    u8* const rows[2] = {top, top + 3 * width};
    // a lane's addresses are lane 0's plus multiples of a run's bytes, which no vector exceeds, so every
    // lane of the warp takes the same branch
    const auto bits = [](const void* p) { return reinterpret_cast<unsigned long long>(p); };
    const unsigned long long any = bits(pairs) | bits(luma[0]) | bits(luma[1]) | bits(rows[0]) | bits(rows[1]);
    const bool whole = x0 + kBytes <= width;  // the whole runs are a prefix of the warp
    const int vector = kBytes % 16 == 0 && any % 16 == 0 ? 16 : any % 8 == 0 ? 8 : 0;  // bytes
    if constexpr (kBytes % 16 == 0) {
        if (vector == 16) packed_vectors<kSamples>(rows, luma, pairs, whole, bgr, k, stage);
    }
    if (vector == 8) packed_vectors<kSamples>(rows, luma, pairs, whole, bgr, k, reinterpret_cast<uint2*>(stage));
    if (!vector) return packed_bytes_staged<kSamples>(rows, luma, pairs, x0, width, bgr, k, reinterpret_cast<u8*>(stage));
    if (whole || x0 >= width) return;
    const int samples = int(width - x0 < kBytes ? width - x0 : kBytes) / 2;
    for (int dr = 0; dr < 2; ++dr) packed_bytes(rows[dr], luma[dr], pairs, samples, k, bgr);
}

constexpr int kPackedSamples = 8;  // a run: 16 pixels, so 16-byte vectors (__init__.py's RUN)

// out[b, r, x] = (R, G, B) or (B, G, R) of Y[b, r, x] and its chroma pair. Blocks of 32 x kPackedWarps.
__global__ void __launch_bounds__(32 * kPackedWarps)
    nv12_to_rgb_packed(fkl::TensorView out, fkl::TensorView y, fkl::TensorView uv, int uv_row, bool bgr,
                       int y_offset, int cy, int cvr, int cvg, int cug, int cub) {
    __shared__ uint4 stage[kPackedWarps][32 * 6 * kPackedSamples / 16];
    packed_run<kPackedSamples>(out, y, uv, uv_row, bgr, {y_offset, cy, cvr, cvg, cug, cub}, stage[threadIdx.y]);
}

// ----- planar ------------------------------------------------------------------------------------------
//
// One thread per chroma sample: its (U, V) pair and the 2x2 pixels that share it, so that the pair is
// read and its terms computed once; a warp covers 64 consecutive pixels of two rows, so its loads are
// runs of consecutive bytes (coalesced). Grid (W / 2, H / 2, B) samples in blocks of 64 x 2 threads.

// This thread's chroma sample: column cx (pixels 2cx, 2cx + 1), row cr (rows 2cr, 2cr + 1) of frame b.
struct Sample {
    i64 cx, cr, b;
};

__device__ inline Sample this_sample() {
    return {i64(blockIdx.x) * blockDim.x + threadIdx.x, i64(blockIdx.y) * blockDim.y + threadIdx.y, i64(blockIdx.z)};
}

// out[b, c, r, x] = channel c of the packed result (c = 0 is B when bgr) times scale (1 or 1/255);
// each row's two pixels are one float2 store per plane (a warp's: 256 consecutive bytes).
__global__ void nv12_to_rgb_planar(fkl::TensorView out, fkl::TensorView y, fkl::TensorView uv, int uv_row,
                                   bool bgr, int y_offset, int cy, int cvr, int cvg, int cug, int cub,
                                   float scale) {
    const i64 height = out.shape[2], width = out.shape[3], plane = height * width;
    const Sample s = this_sample();
    if (2 * s.cx >= width || 2 * s.cr >= height) return;
    const nv12::Coefficients k{y_offset, cy, cvr, cvg, cug, cub};
    const u8* pair = row_start(uv, s.b, uv_row + s.cr) + 2 * s.cx;
    const nv12::Chroma c = nv12::chroma_terms(k, pair[0], pair[1]);
    float* frame = out.ptr<float>() + s.b * 3 * plane;
    float2* red = reinterpret_cast<float2*>(frame + (bgr ? 2 : 0) * plane);
    float2* green = reinterpret_cast<float2*>(frame + plane);
    float2* blue = reinterpret_cast<float2*>(frame + (bgr ? 0 : 2) * plane);
    for (int dr = 0; dr < 2; ++dr) {
        const i64 r = 2 * s.cr + dr;
        const u8* luma = row_start(y, s.b, r) + 2 * s.cx;
        const nv12::Rgb left = nv12::pixel_rgb(k, luma[0], c);
        const nv12::Rgb right = nv12::pixel_rgb(k, luma[1], c);
        const i64 at = (r * width) / 2 + s.cx;  // this row's pixel pair, in float2s (W is even)
        red[at] = make_float2(left.r * scale, right.r * scale);
        green[at] = make_float2(left.g * scale, right.g * scale);
        blue[at] = make_float2(left.b * scale, right.b * scale);
    }
}
