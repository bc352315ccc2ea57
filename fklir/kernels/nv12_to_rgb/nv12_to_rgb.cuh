// nv12_to_rgb.cuh — NV12 frames to RGB on the GPU.
//
// The tensors are nv12_to_rgb.cpp's: out (B, H, W, 3) uint8 (packed) or (B, 3, H, W) float32 (planar),
// C-contiguous; y and uv (B, rows, W) uint8 rows with any frame and row strides, output row r reading
// Y row r and UV row uv_row + r / 2 (uv_row = H for a single-buffer frame passed as both).
//
// One thread per chroma sample: its (U, V) pair and the 2x2 pixels that share it, so that the pair is
// read and its terms computed once; a warp covers 64 consecutive pixels of two rows, so its loads are
// runs of consecutive bytes (coalesced). Grid (W / 2, H / 2, B) samples in blocks of 64 x 2 threads.
#include "fkl/tensor_view.h"
#include "nv12_color.h"

using fkl::i64;
using fkl::u8;
using nv12::row_start;

// This thread's chroma sample: column cx (pixels 2cx, 2cx + 1), row cr (rows 2cr, 2cr + 1) of frame b.
struct Sample {
    i64 cx, cr, b;
};

__device__ inline Sample this_sample() {
    return {i64(blockIdx.x) * blockDim.x + threadIdx.x, i64(blockIdx.y) * blockDim.y + threadIdx.y, i64(blockIdx.z)};
}

// A packed block's tile: 64 chroma samples (128 pixels) by 2 (4 rows), staged in shared memory so
// that the block writes each output row's 384 bytes as whole 4-byte words (a pixel's 3 bytes, written
// straight, would make a warp's stores 3-byte strided).
constexpr int kTileSamples = 64;
constexpr int kTileSampleRows = 2;
constexpr int kTileRowBytes = 2 * kTileSamples * 3;

// rows x bytes of `tile` to `out` (rows `pitch` bytes apart), in Words: bytes and the addresses are
// multiples of sizeof(Word).
template <class Word>
__device__ void copy_out(const u8 (*tile)[kTileRowBytes], u8* out, i64 pitch, int rows, int bytes) {
    const int words = bytes / int(sizeof(Word));
    const int thread = threadIdx.y * blockDim.x + threadIdx.x, threads = blockDim.x * blockDim.y;
    for (int i = thread; i < rows * words; i += threads) {
        const int row = i / words, word = i % words;
        reinterpret_cast<Word*>(out + row * pitch)[word] = reinterpret_cast<const Word*>(tile[row])[word];
    }
}

// out[b, r, x] = (R, G, B) or (B, G, R) of Y[b, r, x] and its chroma pair. Blocks of 64 x 2 threads.
__global__ void nv12_to_rgb_packed(fkl::TensorView out, fkl::TensorView y, fkl::TensorView uv, int uv_row,
                                   bool bgr, int y_offset, int cy, int cvr, int cvg, int cug, int cub) {
    __shared__ __align__(16) u8 tile[2 * kTileSampleRows][kTileRowBytes];
    const i64 height = out.shape[1], width = out.shape[2];
    const Sample s = this_sample();
    if (2 * s.cx < width && 2 * s.cr < height) {
        const nv12::Coefficients k{y_offset, cy, cvr, cvg, cug, cub};
        const u8* pair = row_start(uv, s.b, uv_row + s.cr) + 2 * s.cx;
        const nv12::Chroma c = nv12::chroma_terms(k, pair[0], pair[1]);
        for (int dr = 0; dr < 2; ++dr) {
            const u8* luma = row_start(y, s.b, 2 * s.cr + dr) + 2 * s.cx;
            u8* pixel = tile[2 * threadIdx.y + dr] + 6 * threadIdx.x;
            nv12::store_packed(pixel, nv12::pixel_rgb(k, luma[0], c), bgr);
            nv12::store_packed(pixel + 3, nv12::pixel_rgb(k, luma[1], c), bgr);
        }
    }
    __syncthreads();
    const i64 x0 = 2 * i64(blockIdx.x) * kTileSamples, r0 = 2 * i64(blockIdx.y) * kTileSampleRows;
    const int columns = width - x0 < 2 * kTileSamples ? int(width - x0) : 2 * kTileSamples;  // the row's last tile
    const int rows = height - r0 < 2 * kTileSampleRows ? int(height - r0) : 2 * kTileSampleRows;
    u8* first = out.ptr<u8>() + ((s.b * height + r0) * width + x0) * 3;
    // W % 4 == 0: every row and tile starts on a word, and a tile row's 3 * columns bytes are whole words
    if (width % 4 == 0 && reinterpret_cast<unsigned long long>(out.data) % 4 == 0)
        copy_out<fkl::u32>(tile, first, 3 * width, rows, 3 * columns);
    else
        copy_out<u8>(tile, first, 3 * width, rows, 3 * columns);
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
