// nv12_to_rgb.cpp — NV12 frames to RGB on the CPU, in plain C++ (nv12_to_rgb_hwy.cpp is the packed
// path's Highway twin).
//
// out: (B, H, W, 3) uint8 (packed) or (B, 3, H, W) float32 (planar), C-contiguous. y and uv: (B, rows, W)
// uint8 rows with any frame and row strides; output row r reads Y row r and UV row uv_row + r / 2, whose
// bytes are (U, V) pairs, one pair for two pixels. A single-buffer frame (cv2's (H * 3 / 2, W) layout)
// is passed as both, its UV rows starting at uv_row = H. OpenMP shares the batch's rows out.
#include "fkl/tensor_view.h"
#include "nv12_color.h"

using fkl::i64;
using fkl::u8;
using nv12::row_start;

// out[b, r, x] = (R, G, B) or (B, G, R) of Y[b, r, x] and its chroma pair.
void nv12_to_rgb_packed(fkl::TensorView out, fkl::TensorView y, fkl::TensorView uv, int uv_row, bool bgr,
                        int y_offset, int cy, int cvr, int cvg, int cug, int cub) {
    const nv12::Coefficients k{y_offset, cy, cvr, cvg, cug, cub};
    const i64 frames = out.shape[0], height = out.shape[1], width = out.shape[2];
    // small frames are not worth waking the threads for
#pragma omp parallel for collapse(2) if (frames * height * width > 65536)
    for (i64 b = 0; b < frames; ++b)
        for (i64 r = 0; r < height; ++r) {
            u8* row = out.ptr<u8>() + (b * height + r) * width * 3;
            nv12::packed_pixels(row_start(y, b, r), row_start(uv, b, uv_row + r / 2), row, 0, width, bgr, k);
        }
}

// out[b, c, r, x] = channel c of the packed result (c = 0 is B when bgr) times scale (1 or 1/255).
void nv12_to_rgb_planar(fkl::TensorView out, fkl::TensorView y, fkl::TensorView uv, int uv_row, bool bgr,
                        int y_offset, int cy, int cvr, int cvg, int cug, int cub, float scale) {
    const nv12::Coefficients k{y_offset, cy, cvr, cvg, cug, cub};
    const i64 frames = out.shape[0], height = out.shape[2], width = out.shape[3], plane = height * width;
#pragma omp parallel for collapse(2) if (frames * plane > 65536)
    for (i64 b = 0; b < frames; ++b)
        for (i64 r = 0; r < height; ++r) {
            const u8* luma = row_start(y, b, r);
            const u8* pairs = row_start(uv, b, uv_row + r / 2);
            float* first = out.ptr<float>() + b * 3 * plane + r * width;  // channel 0 of this row
            float* red = first + (bgr ? 2 : 0) * plane;
            float* green = first + plane;
            float* blue = first + (bgr ? 0 : 2) * plane;
            for (i64 x = 0; x < width; ++x) {
                const u8* pair = pairs + (x & ~i64(1));
                const nv12::Rgb rgb = nv12::pixel_rgb(k, luma[x], nv12::chroma_terms(k, pair[0], pair[1]));
                red[x] = rgb.r * scale;
                green[x] = rgb.g * scale;
                blue[x] = rgb.b * scale;
            }
        }
}
