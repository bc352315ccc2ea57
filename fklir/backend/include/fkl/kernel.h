// fkl/kernel.h — what every generated kernel shares: the whole op library (fkl.h, plus the
// channel ops of color.h and vector.h, join.h's DAG joins, and planes.h for the CPU's pixel-wise flat loops), the fixed
// head of its parameter block and the small sampling helpers that geometry stages call. The emitter (fklir/backend/emit_cpp.py)
// writes the rest: one function per geometry stage, the compute chain, the write, the entry point.
#pragma once
#include "fkl/fkl.h"
#include "fkl/color.h"
#include "fkl/vector.h"
#include "fkl/planes.h"
#include "fkl/join.h"

namespace fkl {

// Where to read and write and how large each side is. Strides and pitches count ELEMENTS.
// Mirrored field for field by fklir.runtime.params.KernelHeader (ctypes): keep them in sync.
struct KernelHeader {
    const void* src;       // first element of the first source plane
    i64 src_plane_stride;  // elements from one source plane to the next
    i64 src_pitch;         // elements from one source row to the next
    i32 src_w;             // source width in pixels
    i32 src_h;             // source height in pixels
    void* dst;             // first element of the first output plane
    i64 dst_plane_stride;  // elements from one output plane to the next
    i64 dst_pitch;         // elements from one output row to the next
    i32 dst_w;             // output width in pixels
    i32 dst_h;             // output height in pixels
    i32 dst_planes;        // output planes (the launch's z extent)
    i32 aligned;           // 1 when src and dst allow 16-byte vector access (flat kernels)
    i64 n;                 // flat kernels: number of elements to produce
};

// A DAG kernel's further buffers (SPEC §8): call argument i >= 1 is Params::in<i> and output k >= 1
// Params::out<k> (argument 0 and output 0 are the header's). The fields are named as the header's, so that a
// branch's stages read p.in1.src_pitch where a chain's read p.h.src_pitch; every output has the header's size.
struct InputSurface {
    const void* src;
    i64 src_plane_stride;
    i64 src_pitch;
    i32 src_w;
    i32 src_h;
};

struct OutputSurface {
    void* dst;
    i64 dst_plane_stride;
    i64 dst_pitch;
};

// The size of the image a geometry stage produces.
struct Size {
    i32 w;
    i32 h;
};

// Bilinear blend: a b on the upper row, c d on the lower; wx, wy the weights of b/d and c/d.
FKL_HD f32 bilinear(f32 a, f32 b, f32 c, f32 d, f32 wx, f32 wy) {
    const f32 top = a * (1.0f - wx) + b * wx;
    const f32 bottom = c * (1.0f - wx) + d * wx;
    return top * (1.0f - wy) + bottom * wy;
}

#if defined(__CUDACC__)
// Programmatic dependent launch (compute capability 9.0 and newer; nothing on older devices). A kernel
// lets the next kernel of its stream start its blocks at once, so that their set-up overlaps this
// kernel's last blocks; before its first access to global memory it waits until the kernel before it
// has finished and its writes are visible. Without the launch attribute both are no-ops.
__device__ inline void let_next_kernel_start() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ inline void wait_for_previous_kernel() {
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}
#endif

// v[i] of a small parameter array, chosen with selects on the GPU: every v[k] is read at a
// warp-uniform address (a runtime i would make a warp read the parameter block at divergent
// addresses). With a compile-time i it folds to v[i]. The CPU indexes: g++ ignores `#pragma unroll`,
// and the loop it keeps stops the loops around it from vectorising.
// Row z of a per-plane parameter table: rows of N values, plane z reading row z (fkl.per_image). A
// plane's threads share z, so the row is read at warp-uniform addresses as any small array is.
template <int N, typename T, int M>
FKL_HD auto row(const T (&table)[M], int z) -> const T (&)[N] {
    return *reinterpret_cast<const T(*)[N]>(table + z * N);
}

template <typename T, int N>
FKL_HD T pick(const T (&v)[N], int i) {
#if defined(FKL_DEVICE_CODE)
    T r = v[0];
#pragma unroll
    for (int k = 1; k < N; ++k) r = (i == k) ? v[k] : r;
    return r;
#else
    return v[i];
#endif
}

}  // namespace fkl
