// Exercises fkl/memory.h: pitched packed images, planar images, and 16-byte vector copies.
// The per-thread bodies are FKL_HD, so the CPU main below and the CUDA kernels run the same code.
//
// CPU protocol (all binary, little endian), argv: width height src_pitch dst_pitch words
//   stdin:  height * src_pitch bytes   packed u8x3 image (row pitch src_pitch elements)
//           words * 16 bytes           the buffer for the 16-byte copies
//   stdout: 3 * height * width bytes   the image split to planar (TensorSplit layout)
//           height * dst_pitch bytes   the planar image packed again (row pitch dst_pitch; the
//                                      padding keeps the value 0xEE)
//           4 * words * 16 bytes       the buffer copied by vec16_reverse for u8, f16, f32, f64
#include "fkl/fkl.h"

using fkl::i32;
using fkl::i64;
using fkl::u8;

// Thread body: read pixel (x, y) of a packed image and write it to a planar one.
FKL_HD void split_pixel(fkl::PackedImage<u8, 3> src, fkl::PlanarOutput<u8, 3> dst, i32 x, i32 y) {
    u8 px[3];
    src.load(x, y, px);
    dst.store(x, y, px);
}

// Thread body: read pixel (x, y) of a planar image and write it to a packed one.
FKL_HD void pack_pixel(fkl::PlanarImage<u8, 3> src, fkl::PackedOutput<u8, 3> dst, i32 x, i32 y) {
    u8 px[3];
    src.load(x, y, px);
    dst.store(x, y, px);
}

// Thread body: one 16-byte load, reverse the elements, one 16-byte store. Reversing makes the
// element order inside a vector visible to the test.
template <typename T>
FKL_HD void vec16_reverse(const T* src, T* dst, i64 word) {
    const fkl::Vec16<T> in = fkl::load16(src + word * fkl::Vec16<T>::N);
    fkl::Vec16<T> out;
    for (int j = 0; j < fkl::Vec16<T>::N; ++j) {
        out.v[j] = in.v[fkl::Vec16<T>::N - 1 - j];
    }
    fkl::store16(dst + word * fkl::Vec16<T>::N, out);
}

#if defined(__CUDACC__)

extern "C" __global__ void split_kernel(const u8* src, i32 width, i32 height, i64 pitch, u8* dst) {
    const i32 x = (i32)(blockIdx.x * blockDim.x + threadIdx.x);
    const i32 y = (i32)blockIdx.y;
    if (x >= width) {
        return;
    }
    split_pixel(fkl::PackedImage<u8, 3>{src, width, height, pitch}, fkl::PlanarOutput<u8, 3>{dst, width, height},
                x, y);
}

extern "C" __global__ void pack_kernel(const u8* src, i32 width, i32 height, u8* dst, i64 pitch) {
    const i32 x = (i32)(blockIdx.x * blockDim.x + threadIdx.x);
    const i32 y = (i32)blockIdx.y;
    if (x >= width) {
        return;
    }
    pack_pixel(fkl::PlanarImage<u8, 3>{src, width, height}, fkl::PackedOutput<u8, 3>{dst, width, height, pitch}, x,
               y);
}

extern "C" __global__ void vec16_reverse_u8(const fkl::u8* src, fkl::u8* dst, i64 words) {
    const i64 word = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (word < words) {
        vec16_reverse<fkl::u8>(src, dst, word);
    }
}

extern "C" __global__ void vec16_reverse_f16(const fkl::f16* src, fkl::f16* dst, i64 words) {
    const i64 word = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (word < words) {
        vec16_reverse<fkl::f16>(src, dst, word);
    }
}

extern "C" __global__ void vec16_reverse_f32(const fkl::f32* src, fkl::f32* dst, i64 words) {
    const i64 word = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (word < words) {
        vec16_reverse<fkl::f32>(src, dst, word);
    }
}

extern "C" __global__ void vec16_reverse_f64(const fkl::f64* src, fkl::f64* dst, i64 words) {
    const i64 word = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (word < words) {
        vec16_reverse<fkl::f64>(src, dst, word);
    }
}

#else  // CPU

#include <cstdio>
#include <cstdlib>
#include <vector>

template <typename T>
static void reverse_words(const std::vector<u8>& bytes, i64 words) {
    std::vector<T> src(bytes.size() / sizeof(T));
    std::vector<T> dst(src.size());
    std::memcpy(src.data(), bytes.data(), bytes.size());
    for (i64 w = 0; w < words; ++w) {
        vec16_reverse<T>(src.data(), dst.data(), w);
    }
    std::fwrite(dst.data(), 1, bytes.size(), stdout);
}

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s width height src_pitch dst_pitch words\n", argv[0]);
        return 2;
    }
    const i32 width = std::atoi(argv[1]);
    const i32 height = std::atoi(argv[2]);
    const i64 src_pitch = std::atoll(argv[3]);
    const i64 dst_pitch = std::atoll(argv[4]);
    const i64 words = std::atoll(argv[5]);

    std::vector<u8> packed((size_t)(height * src_pitch));
    std::vector<u8> vec_bytes((size_t)(words * 16));
    if (std::fread(packed.data(), 1, packed.size(), stdin) != packed.size() ||
        std::fread(vec_bytes.data(), 1, vec_bytes.size(), stdin) != vec_bytes.size()) {
        std::fprintf(stderr, "short input\n");
        return 2;
    }

    std::vector<u8> planar((size_t)(3 * height * width));
    const fkl::PackedImage<u8, 3> src{packed.data(), width, height, src_pitch};
    const fkl::PlanarOutput<u8, 3> split{planar.data(), width, height};
    for (i32 y = 0; y < height; ++y) {
        for (i32 x = 0; x < width; ++x) {
            split_pixel(src, split, x, y);
        }
    }
    std::fwrite(planar.data(), 1, planar.size(), stdout);

    std::vector<u8> repacked((size_t)(height * dst_pitch), 0xEE);
    const fkl::PlanarImage<u8, 3> planar_in{planar.data(), width, height};
    const fkl::PackedOutput<u8, 3> pack{repacked.data(), width, height, dst_pitch};
    for (i32 y = 0; y < height; ++y) {
        for (i32 x = 0; x < width; ++x) {
            pack_pixel(planar_in, pack, x, y);
        }
    }
    std::fwrite(repacked.data(), 1, repacked.size(), stdout);

    reverse_words<fkl::u8>(vec_bytes, words);
    reverse_words<fkl::f16>(vec_bytes, words);
    reverse_words<fkl::f32>(vec_bytes, words);
    reverse_words<fkl::f64>(vec_bytes, words);
    return 0;
}

#endif
