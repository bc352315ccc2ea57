"""Flat kernels: a packed read, no geometry, a packed write, so the image is one run of elements.

Channel-wise chains (FlatShape) run per element, as below; chains whose ops mix or change channels
(PixelFlatShape) run per pixel, see its emitters at the end.

The work unit is a *group* of G elements, G = lcm(16-byte vector of the input, of the output, channels):
whole pixels and whole 16-byte vectors on both sides, so element e of a group has the compile-time
channel e % C and every parameter is read at a fixed offset (no per-element selects).

GPU, staged (the default): block b owns the tile of THREADS * G elements starting at b * THREADS * G.
Its threads copy the tile into shared memory with coalesced 16-byte loads (consecutive lanes,
consecutive vectors), thread t computes group t from there, the results overwrite the tile, and the
block stores it with coalesced 16-byte stores: lanes that loaded their own groups straight from global
memory would be 48 bytes apart, and parameters picked per element would cost a select per element.
GPU, direct (1-byte input and output): thread t loads group t straight from global memory. Such
chains do many operations per byte, and there the barriers of the staged tile cost more than the
strided access does.
Groups of 1-byte inputs (both kinds) run the chain in four rolled rounds over a window of whole 32-bit
words and whole pixels (12 elements for 3 channels): the compilers see one copy of the chain per window,
not one per element of the group, and the group still moves in 16-byte vectors. A direct group of one
vector (16 elements) unrolls its rounds: rolled, each round's window rotation and loop control cost more
instructions than its 4 elements' chain, and the kernel ran short of the copy rate on instructions.
Unaligned pointers and a partial last tile (group, direct) take an element-wise loop, never unrolled.
A chain that divides floats runs fkl::Div's fast path on the whole group and checks its dividends once
(`compute_fast`); a group with one out of range goes through that same element-wise loop with the exact
division, so that the long IEEE division is compiled once per kernel, not once per element: both keep
NVRTC's compile time short without slowing the kernels. A float16 chain of arithmetic runs its conversions
on cvt alone in `compute_fast` the same way, a group that meets a NaN going through the exact loop.
A list input (Params::src_table) runs image z of the list in grid row z, each a flat run of its own,
so a list of same-size images moves at the rate of one flat run rather than as a sampled kernel.

CPU: a loop over groups with restrict pointers, which g++ vectorises (`run_groups`); without SSSE3, a
pixel-wise group goes through planes first (fkl/planes.h): g++ cannot deinterleave 3-byte pixels with SSE2.

Pixel-wise chains (ColorConversion, VectorReorder, AddLast, user pixel ops, ...): the group is the fewest
whole pixels whose inputs and results both fill whole 16-byte vectors (16 pixels for uint8 RGB -> gray),
each pixel through `compute_pixel`. The GPU kernel always stages its tile: the channel counts differ, so
a lane's own group would be read at a stride of its input bytes and written at another.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fklir.backend.cpp_types import CPP_TYPE, ELEMENT_SIZE, LET_NEXT_START, WAIT_FOR_PREVIOUS
from fklir.backend.kernel_layout import CPU_ENTRY

TILE_BYTES = 24 * 1024  # most shared memory per block: 9 blocks fit an H100/H200 SM (228 KiB)
MAX_THREADS = 256
# The CPU target shares a loop among OpenMP threads only from this many output elements (SPEC §5). Below
# it, what sharing can save is small next to what a team costs while another process holds a core: the
# calling thread waits at the team's barrier for a descheduled worker, a scheduler time slice
# (benchmarks/bench_cpu_threads.py, RESULTS.md). The team's size stays OpenMP's choice, so that
# OMP_NUM_THREADS applies.
CPU_PARALLEL_MIN_ELEMENTS = 1 << 16


@dataclass(frozen=True)
class _Types:
    """The element types of a flat kernel's input and output."""

    in_dtype: str
    out_dtype: str

    @property
    def t_in(self) -> str:
        return CPP_TYPE[self.in_dtype]

    @property
    def t_out(self) -> str:
        return CPP_TYPE[self.out_dtype]

    def lanes(self, dtype: str) -> int:
        """Elements of `dtype` in one 16-byte vector."""
        return 16 // ELEMENT_SIZE[dtype]


@dataclass(frozen=True)
class FlatShape(_Types):
    """How a flat kernel cuts the image: one group of `group` elements per thread, `threads` per block."""

    channels: int
    group: int
    threads: int
    staged: bool  # through a shared-memory tile (see the module docstring)
    table: bool = False  # a list input: plane z (grid y) reads Params::src_table[z], n counts one plane

    @property
    def per_thread(self) -> int:
        """Elements per thread (the launcher's grid is elements / per_thread / threads)."""
        return self.group

    def vectors(self, dtype: str) -> int:
        """16-byte vectors of `dtype` in one group."""
        return self.group * ELEMENT_SIZE[dtype] // 16


def flat_shape(in_dtype: str, out_dtype: str, channels: int, table: bool = False) -> FlatShape:
    """Up to MAX_THREADS per block, fewer when the tile would not fit TILE_BYTES (the input and the
    results share the tile in turn)."""
    size = max(ELEMENT_SIZE[in_dtype], ELEMENT_SIZE[out_dtype])
    group = math.lcm(16 // ELEMENT_SIZE[in_dtype], 16 // ELEMENT_SIZE[out_dtype], channels)
    if size == 2 and group * size == 16:
        group *= 2  # one vector of 2-byte elements a thread leaves too few bytes in flight for the copy rate
    threads = _threads(group * size)
    staged = size > 1
    return FlatShape(in_dtype, out_dtype, channels, group, threads, staged, table)


def _threads(group_bytes: int) -> int:
    """Up to MAX_THREADS per block, fewer when a tile of `group_bytes` per thread would not fit TILE_BYTES."""
    threads = MAX_THREADS
    while threads > 32 and threads * group_bytes > TILE_BYTES:
        threads //= 2
    return threads


def emit_flat_gpu(s: FlatShape, divisors: str | None = None) -> list[str]:
    """The `fkl_kernel` entry (inside the emitter's `#if defined(__CUDACC__)`).

    `divisors`: None, or the chain has a compute_fast and this is its `fast` flag's start value: that all its
    divisors lie in fkl::Div's fast range, or true (emit_compute.divisors_checked); the kernel then calls
    compute_fast."""
    vin, vout = s.vectors(s.in_dtype), s.vectors(s.out_dtype)
    tile = s.threads * s.group
    how = (
        "The tile goes through shared memory so that global\n// loads and stores are coalesced 16-byte accesses."
        if s.staged
        else "Each thread loads its group straight from global\n// memory (a 1-byte chain: see emit_flat.py)."
    )
    planes = (
        ["// A list input: grid y is the image; image z comes from the pointer table, its output plane follows."]
        if s.table
        else []
    )
    return [
        f"// Block b owns elements [b * {tile}, (b + 1) * {tile}): {s.threads} groups of {s.group} elements"
        f" ({s.group // s.channels} whole pixels,",
        f"// {vin} input and {vout} output vectors), one per thread. {how}",
        *planes,
        *_flat_gpu_entry(
            s.threads, _staged_body(s, divisors) if s.staged else [*_plane_pointers(s), *_direct_body(s, divisors)]
        ),
    ]


def _flat_gpu_entry(threads: int, body: list[str]) -> list[str]:
    """`fkl_kernel` of `threads` per block around `body`."""
    return [
        f'extern "C" __global__ void __launch_bounds__({threads}) fkl_kernel(const Params p) {{',
        LET_NEXT_START,
        WAIT_FOR_PREVIOUS,  # the whole kernel is memory traffic: no set-up to overlap
        *body,
        "}",
    ]


def _window(s: FlatShape) -> int:
    """Elements per round of a group of 1-byte inputs: whole input words and whole pixels, and for the
    staged kernel, which stores each round's results into the tile, whole 16-byte output vectors too; the
    group itself (one round) when the input is wider."""
    if ELEMENT_SIZE[s.in_dtype] != 1:
        return s.group
    return math.lcm(4, s.channels, s.lanes(s.out_dtype)) if s.staged else math.lcm(4, s.channels)


def _chain(divisors: str | None, value: str, channel: str) -> str:
    """The call of the chain on one element: compute_fast, which clears `fast`, when the chain has one
    (`divisors`), else compute."""
    if divisors is None:
        return f"compute(p, {value}, {channel})"
    return f"compute_fast(p, {value}, {channel}, fast)"


def _staged_group(s: FlatShape, divisors: str | None) -> list[str]:
    """Thread t's group from the tile through the chain, its results back into the tile (inside the
    whole-tile branch, after the barrier that follows the loads).

    1-byte inputs wider than their results (uint8 -> float normalisation: 48 elements a thread) run in
    rounds over a window of whole pixels, as _direct_body does: NVRTC compiles the chain on 12 elements
    instead of 48. Each round stores its results straight into the tile."""
    vin, vout, g = s.vectors(s.in_dtype), s.vectors(s.out_dtype), s.group
    lin, lout = s.lanes(s.in_dtype), s.lanes(s.out_dtype)
    window = _window(s)
    from_window = _chain(divisors, f"fkl::byte_of<{s.t_in}>(w[e / 4], e % 4)", f"e % {s.channels}")
    if window == g:
        return [
            f"        fkl::Vec16<{s.t_in}> in[{vin}];",
            "#pragma unroll",
            f"        for (int k = 0; k < {vin}; ++k) in[k] = fkl::load16((const {s.t_in}*)tile[t * {vin} + k].v);",
            f"        fkl::Vec16<{s.t_out}> out[{vout}];",
            "#pragma unroll",
            f"        for (int e = 0; e < {g}; ++e)"
            f" out[e / {lout}].v[e % {lout}] = {_chain(divisors, f'in[e / {lin}].v[e % {lin}]', f'e % {s.channels}')};",
            "        __syncthreads();  // every input is read before a result overwrites it",
            "#pragma unroll",
            f"        for (int k = 0; k < {vout}; ++k) fkl::store16(({s.t_out}*)tile[t * {vout} + k].v, out[k]);",
        ]
    words, shift, per_round = g // 4, window // 4, window // lout
    return [
        f"        fkl::u32 w[{words}];  // the group's inputs, four to a word; the window is w[0..{shift})",
        *_load_words(f"(const fkl::u32*)tile[t * {vin} + k].v", vin),
        "        __syncthreads();  // every input is read before a result overwrites it",
        "#pragma unroll 1",  # the point: one copy of the chain per window, not per group
        f"        for (int round = 0; round < {g // window}; ++round) {{",
        f"            fkl::Vec16<{s.t_out}> out[{per_round}];",
        "#pragma unroll",
        f"            for (int e = 0; e < {window}; ++e)",
        f"                out[e / {lout}].v[e % {lout}] = {from_window};",
        "#pragma unroll",
        f"            for (int k = 0; k < {per_round}; ++k)",
        f"                fkl::store16(({s.t_out}*)tile[t * {vout} + round * {per_round} + k].v, out[k]);",
        "#pragma unroll",
        f"            for (int k = 0; k < {words - shift}; ++k) w[k] = w[k + {shift}];",
        "        }",
    ]


def _tile(vectors: int) -> list[str]:
    """The block's shared tile: raw 16-byte vectors of 32-bit lanes, inputs then results. Byte lanes would make
    nvcc split each 16-byte copy into its bytes and put them back together, a few dozen instructions a vector."""
    return [f"    __shared__ fkl::Vec16<fkl::u32> tile[{vectors}];  // raw 16-byte vectors: inputs, then results"]


def _load_words(vector: str, vectors: int) -> list[str]:
    """`w[]` = the 16-byte vectors `vector` (an expression of k) as 32-bit words."""
    return [
        "#pragma unroll",
        f"        for (int k = 0; k < {vectors}; ++k) {{",
        f"            const fkl::Vec16<fkl::u32> v = fkl::load16({vector});",
        "#pragma unroll",
        "            for (int j = 0; j < 4; ++j) w[4 * k + j] = v.v[j];",
        "        }",
    ]


def _plane_pointers(s: FlatShape | PixelFlatShape) -> list[str]:
    """`in_base` and `out_base`: the first element of this kernel's (grid y's) source and output."""
    if not s.table:
        return [
            f"    const {s.t_in}* in_base = (const {s.t_in}*)p.h.src;",
            f"    {s.t_out}* out_base = ({s.t_out}*)p.h.dst;",
        ]
    return [
        f"    const {s.t_in}* in_base = (const {s.t_in}*)p.src_table[blockIdx.y];",
        f"    {s.t_out}* out_base = ({s.t_out}*)p.h.dst + blockIdx.y * p.h.dst_plane_stride;",
    ]


def _staged_body(s: FlatShape, divisors: str | None) -> list[str]:
    """The block's tile through shared memory when it is whole and aligned, element by element otherwise.

    With `divisors` (the chain divides floats) a whole tile runs compute_fast, and a thread whose group had
    a dividend out of range rewrites its results in the tile element by element through compute(): its
    inputs are still in global memory, as nothing is stored there before the last barrier. Both rare
    paths share one loop, so that the exact chain is compiled once and NVRTC compiles less."""
    vin, vout, b, g, c = s.vectors(s.in_dtype), s.vectors(s.out_dtype), s.threads, s.group, s.channels
    tile = b * g
    return [
        *_tile(b * max(vin, vout)),
        *_plane_pointers(s),
        f"    const fkl::i64 begin = (fkl::i64)blockIdx.x * {tile};",
        f"    const bool whole = p.h.aligned && begin + {tile} <= p.h.n;  // the same in every thread of the block",
        "    const int t = threadIdx.x;",
        f"    bool fast = {divisors};" if divisors else "    const bool fast = true;  // no float division",
        "    if (whole) {",
        "        const fkl::u32* src = (const fkl::u32*)(in_base + begin);",
        "#pragma unroll",
        f"        for (int k = 0; k < {vin}; ++k) tile[t + k * {b}] = fkl::load16(src + (t + k * {b}) * 4);",
        "        __syncthreads();",
        *_staged_group(s, divisors),
        "    }",
        "    if (!whole || !fast) {  // this block's share of a partial tile or unaligned pointers; or the group",
        f"        const fkl::i64 first = whole ? begin + (fkl::i64)t * {g} : begin + t;",
        f"        const fkl::i64 end = whole ? first + {g} : (begin + {tile} < p.h.n ? begin + {tile} : p.h.n);",
        f"        {s.t_out}* to = whole ? ({s.t_out}*)tile[t * {vout}].v : out_base + first;  // element `first`",
        f"        const int stride = whole ? 1 : {b};",
        f"        const int step = whole ? {1 % c} : {b % c};  // from one element's channel to the next one's",
        f"        int c = (int)(first % {c});",
        "#pragma unroll 1",  # a rare path: unrolling it would multiply the chain NVRTC compiles
        "        for (fkl::i64 e = first; e < end; e += stride) {",
        "            to[e - first] = compute(p, in_base[e], c);",
        f"            c = c + step < {c} ? c + step : c + step - {c};",
        "        }",
        "    }",
        "    if (!whole) return;",
        "    __syncthreads();",
        "    fkl::u32* dst = (fkl::u32*)(out_base + begin);",
        "#pragma unroll",
        f"    for (int k = 0; k < {vout}; ++k) fkl::store16(dst + (t + k * {b}) * 4, tile[t + k * {b}]);",
    ]


# A direct group of at most this many elements (one 16-byte vector) runs its rounds unrolled.
UNROLLED_GROUP = 16


def _direct_body(s: FlatShape, divisors: str | None) -> list[str]:
    """Thread t's group straight from global memory, as 32-bit words that pass through a window of whole
    pixels: four rounds of one compiled copy of the chain, so NVRTC compiles the chain on 12 elements
    instead of 48 (3 channels) and the group still moves in 16-byte vectors. The results enter `r` at the
    top as the inputs leave `w` at the bottom, and are stored after the last round.

    With `divisors` (the chain divides floats) the rounds run compute_fast, and a group with a dividend
    out of range goes element-wise through compute() like a partial group."""
    words, vectors = s.group // 4, s.vectors(s.in_dtype)
    window = _window(s)
    from_window = _chain(divisors, f"fkl::byte_of<{s.t_in}>(w[e / 4], e % 4)", f"e % {s.channels}")
    shift = window // 4  # words that enter and leave the window per round

    def stores(pad: str) -> list[str]:
        return [
            "#pragma unroll",
            f"{pad}for (int k = 0; k < {vectors}; ++k) {{",
            f"{pad}    fkl::Vec16<fkl::u32> v;",
            "#pragma unroll",
            f"{pad}    for (int j = 0; j < 4; ++j) v.v[j] = r[4 * k + j];",
            f"{pad}    fkl::store16((fkl::u32*)dst + 4 * k, v);",
            f"{pad}}}",
            f"{pad}return;",
        ]

    return [
        f"    const fkl::i64 first = ((fkl::i64)blockIdx.x * {s.threads} + threadIdx.x) * {s.group};",
        f"    const {s.t_in}* src = in_base + first;",
        f"    {s.t_out}* dst = out_base + first;",
        f"    const bool whole = p.h.aligned && first + {s.group} <= p.h.n;",
        "    if (first >= p.h.n) return;",
        *([] if divisors is None else [f"    bool fast = {divisors};"]),
        "    if (whole) {",
        f"        fkl::u32 w[{words}];  // the group's elements, four to a word; the window is w[0..{shift})",
        f"        fkl::u32 r[{words}] = {{}};  // the results, entering at the top",
        *_load_words("(const fkl::u32*)src + 4 * k", vectors),
        # the point: one copy of the chain per window, not per group; a group of one vector is small enough
        "#pragma unroll" if s.group <= UNROLLED_GROUP else "#pragma unroll 1",
        f"        for (int round = 0; round < {s.group // window}; ++round) {{",
        f"            {s.t_out} out[{window}];",
        "#pragma unroll",
        f"            for (int e = 0; e < {window}; ++e)",
        f"                out[e] = {from_window};",
        "#pragma unroll",
        f"            for (int k = 0; k < {words - shift}; ++k) {{",
        f"                w[k] = w[k + {shift}];",
        f"                r[k] = r[k + {shift}];",
        "            }",
        "#pragma unroll",
        f"            for (int k = 0; k < {shift}; ++k) r[{words - shift} + k] = fkl::word_of<{s.t_out}>(out + 4 * k);",
        "        }",
        *(stores("        ") if divisors is None else ["        if (fast) {", *stores("            "), "        }"]),
        "    }",
        "    // the last, partial group, unaligned pointers"
        + ("" if divisors is None else " or a dividend outside fkl::Div's fast range"),
        "#pragma unroll 1",  # a rare path: unrolling it only lengthens the compile
        f"    for (int e = 0; first + e < p.h.n && e < {s.group}; ++e) dst[e] = compute(p, src[e], e % {s.channels});",
    ]


def emit_flat_cpu(s: FlatShape) -> list[str]:
    """`run_groups` and the `fkl_run` entry (inside the emitter's `#else`)."""
    g, c = s.group, s.channels
    return [
        f"// Groups [g0, g1) of {g} elements: whole pixels and whole 16-byte vectors, each element's channel",
        "// fixed at compile time. A plain loop over restrict pointers, which g++ vectorises (the GPU kernel",
        "// computes the same values).",
        f"static void run_groups(const Params& q, const {s.t_in}* __restrict__ src, {s.t_out}* __restrict__ dst,",
        "                       fkl::i64 g0, fkl::i64 g1) {",
        "    for (fkl::i64 g = g0; g < g1; ++g) {",
        f"        const fkl::i64 at = g * {g};",
        *(f"        dst[at + {e}] = compute(q, src[at + {e}], {e % c});" for e in range(g)),
        "    }",
        "}",
        *_flat_cpu_entry(
            s,
            [f"const fkl::i64 groups = q.h.n / {g};"],
            f"for (fkl::i64 e = groups * {g}; e < q.h.n; ++e) dst[e] = compute(q, src[e], (int)(e % {c}));",
        ),
    ]


def _flat_cpu_entry(s: FlatShape | PixelFlatShape, count: list[str], tail: str) -> list[str]:
    """`fkl_run`: run_groups over the image, or over each image of a list; `count` defines `groups`,
    `tail` computes what follows the last whole group."""
    return [
        'extern "C" void fkl_run(const Params* p) {',
        "    const Params q = *p;",
        *(
            ["    for (fkl::i32 z = 0; z < q.h.dst_planes; ++z) {  // one image of the list at a time"]
            if s.table
            else []
        ),
        *_flat_cpu_plane(s, count, tail),
        "}",
    ]


def _flat_cpu_plane(s: FlatShape | PixelFlatShape, count: list[str], tail: str) -> list[str]:
    """The CPU loop over one run of elements (the image, or image z of a list)."""
    indent = "    " * (2 if s.table else 1)
    src = "(const {0}*)q.src_table[z]" if s.table else "(const {0}*)q.h.src"
    dst = "({0}*)q.h.dst + z * q.h.dst_plane_stride" if s.table else "({0}*)q.h.dst"
    lines = [
        f"const {s.t_in}* src = {src.format(s.t_in)};",
        f"{s.t_out}* dst = {dst.format(s.t_out)};",
        *count,
        "const fkl::i64 chunk = 4096;",
        f"#pragma omp parallel for schedule(static) if(groups > chunk && q.h.n >= {CPU_PARALLEL_MIN_ELEMENTS})",
        "for (fkl::i64 g = 0; g < groups; g += chunk) {",
        "    run_groups(q, src, dst, g, g + chunk < groups ? g + chunk : groups);",
        "}",
        tail,
    ]
    body = [line if line.startswith("#") else indent + line for line in lines]
    return [*body, "    }"] if s.table else body


@dataclass(frozen=True)
class PixelFlatShape(_Types):
    """How a pixel-wise flat kernel cuts the image: one group of `pixels` whole pixels per thread, whose
    inputs and results both fill whole 16-byte vectors, `threads` per block."""

    in_channels: int
    out_channels: int
    pixels: int
    threads: int
    table: bool = False  # a list input, as FlatShape.table

    @property
    def per_thread(self) -> int:
        """Output elements per thread (the launcher's grid is output elements / per_thread / threads)."""
        return self.pixels * self.out_channels

    @property
    def vectors_in(self) -> int:
        return self.pixels * self.in_channels * ELEMENT_SIZE[self.in_dtype] // 16

    @property
    def vectors_out(self) -> int:
        return self.pixels * self.out_channels * ELEMENT_SIZE[self.out_dtype] // 16


def pixel_flat_shape(
    in_dtype: str, in_channels: int, out_dtype: str, out_channels: int, table: bool = False
) -> PixelFlatShape:
    """The fewest whole pixels whose inputs and results are whole 16-byte vectors (16 for uint8 RGB ->
    gray: 48 bytes in, 16 out), and the threads whose tile fits TILE_BYTES."""
    in_bytes, out_bytes = in_channels * ELEMENT_SIZE[in_dtype], out_channels * ELEMENT_SIZE[out_dtype]
    pixels = math.lcm(16 // math.gcd(16, in_bytes), 16 // math.gcd(16, out_bytes))
    threads = _threads(pixels * max(in_bytes, out_bytes))
    return PixelFlatShape(in_dtype, out_dtype, in_channels, out_channels, pixels, threads, table)


def emit_pixel_flat_gpu(s: PixelFlatShape) -> list[str]:
    """The `fkl_kernel` entry of a pixel-wise flat kernel (inside the emitter's `#if defined(__CUDACC__)`).

    Always staged: lanes that loaded their own groups straight from global memory would be a group's bytes
    apart (48 for uint8 RGB), while the tile's 16-byte shared loads at that stride meet no bank conflict.
    A partial last tile or unaligned pointers take a pixel-by-pixel loop, never unrolled."""
    vin, vout, b, g = s.vectors_in, s.vectors_out, s.threads, s.pixels
    cin, cout, lin, lout = s.in_channels, s.out_channels, s.lanes(s.in_dtype), s.lanes(s.out_dtype)
    tile = b * g
    planes = (
        ["// A list input: grid y is the image; image z comes from the pointer table, its output plane follows."]
        if s.table
        else []
    )
    body = [
        *_tile(b * max(vin, vout)),
        *_plane_pointers(s),
        f"    const fkl::i64 pixels = p.h.n / {cout};",
        f"    const fkl::i64 begin = (fkl::i64)blockIdx.x * {tile};  // the tile's first pixel",
        f"    const bool whole = p.h.aligned && begin + {tile} <= pixels;  // the same in every thread of the block",
        "    const int t = threadIdx.x;",
        "    if (!whole) {  // this block's share of a partial tile or unaligned pointers",
        f"        const fkl::i64 end = begin + {tile} < pixels ? begin + {tile} : pixels;",
        "#pragma unroll 1",  # a rare path: unrolling it would multiply the chain NVRTC compiles
        f"        for (fkl::i64 x = begin + t; x < end; x += {b})",
        f"            compute_pixel(p, in_base + x * {cin}, out_base + x * {cout});",
        "        return;",
        "    }",
        f"    const fkl::u32* src = (const fkl::u32*)(in_base + begin * {cin});",
        "#pragma unroll",
        f"    for (int k = 0; k < {vin}; ++k) tile[t + k * {b}] = fkl::load16(src + (t + k * {b}) * 4);",
        "    __syncthreads();",
        f"    fkl::Vec16<{s.t_in}> in[{vin}];",
        "#pragma unroll",
        f"    for (int k = 0; k < {vin}; ++k) in[k] = fkl::load16((const {s.t_in}*)tile[t * {vin} + k].v);",
        f"    fkl::Vec16<{s.t_out}> out[{vout}];",
        "#pragma unroll",
        f"    for (int i = 0; i < {g}; ++i) {{",
        f"        {s.t_in} px[{cin}];",
        "#pragma unroll",
        f"        for (int c = 0; c < {cin}; ++c) px[c] = in[(i * {cin} + c) / {lin}].v[(i * {cin} + c) % {lin}];",
        f"        {s.t_out} r[{cout}];",
        "        compute_pixel(p, px, r);",
        "#pragma unroll",
        f"        for (int c = 0; c < {cout}; ++c) out[(i * {cout} + c) / {lout}].v[(i * {cout} + c) % {lout}] = r[c];",
        "    }",
        "    __syncthreads();  // every input is read before a result overwrites it",
        "#pragma unroll",
        f"    for (int k = 0; k < {vout}; ++k) fkl::store16(({s.t_out}*)tile[t * {vout} + k].v, out[k]);",
        "    __syncthreads();",
        f"    fkl::u32* dst = (fkl::u32*)(out_base + begin * {cout});",
        "#pragma unroll",
        f"    for (int k = 0; k < {vout}; ++k) fkl::store16(dst + (t + k * {b}) * 4, tile[t + k * {b}]);",
    ]
    return [
        f"// Block b owns pixels [b * {tile}, (b + 1) * {tile}): {b} groups of {g} whole pixels ({vin} input and",
        f"// {vout} output vectors), one per thread. The tile goes through shared memory so that global loads",
        "// and stores are coalesced 16-byte accesses.",
        *planes,
        *_flat_gpu_entry(b, body),
    ]


def emit_pixel_flat_cpu(s: PixelFlatShape) -> list[str]:
    """`run_groups` and the `fkl_run` entry of a pixel-wise flat kernel (inside the emitter's `#else`)."""
    g, cin, cout = s.pixels, s.in_channels, s.out_channels
    planes = [
        "    for (fkl::i64 g = g0; g < g1; ++g) {",
        f"        const fkl::i64 at = g * {g};",
        f"        {s.t_in} in[{cin}][{g}];",
        f"        fkl::to_planes(src + at * {cin}, in);",
        f"        {s.t_out} out[{cout}][{g}];",
        f"        for (int i = 0; i < {g}; ++i) {{",
        f"            {s.t_in} px[{cin}];",
        f"            for (int c = 0; c < {cin}; ++c) px[c] = in[c][i];",
        f"            {s.t_out} r[{cout}];",
        "            compute_pixel(q, px, r);",
        f"            for (int c = 0; c < {cout}; ++c) out[c][i] = r[c];",
        "        }",
        f"        fkl::from_planes(out, dst + at * {cout});",
        "    }",
    ]
    head = [
        f"static void run_groups(const Params& q, const {s.t_in}* __restrict__ src, {s.t_out}* __restrict__ dst,",
        "                       fkl::i64 g0, fkl::i64 g1) {",
    ]
    entry = _flat_cpu_entry(
        s,
        [f"const fkl::i64 pixels = q.h.n / {cout};", f"const fkl::i64 groups = pixels / {g};"],
        f"for (fkl::i64 x = groups * {g}; x < pixels; ++x) compute_pixel(q, src + x * {cin}, dst + x * {cout});",
    )
    if cout > cin:  # g++ vectorises a pixel loop that widens pixels (RGB -> RGBA) poorly even with byte shuffles
        return [
            f"// Groups [g0, g1) of {g} whole pixels: a loop over restrict pointers (the GPU kernel computes the",
            "// same values). Each group goes through planes (fkl/planes.h), so that the loop reads and writes",
            "// each channel at unit stride, which g++ vectorises.",
            *head,
            *planes,
            "}",
            *entry,
        ]
    return [
        f"// Groups [g0, g1) of {g} whole pixels: a loop over restrict pointers (the GPU kernel computes the",
        "// same values). With SSSE3's byte shuffle g++ vectorises the pixel loop itself, interleaved channels",
        "// and all; without it, each group goes through planes (fkl/planes.h), so that the loop reads and",
        "// writes each channel at unit stride.",
        *head,
        "#if defined(__SSSE3__)",
        f"    for (fkl::i64 x = g0 * {g}; x < g1 * {g}; ++x)",
        f"        compute_pixel(q, src + x * {cin}, dst + x * {cout});",
        "#else",
        *planes,
        "#endif",
        "}",
        *entry,
    ]


# ---- DAG kernels (SPEC §8) without geometry: every input and output one run of pixels --------------------


@dataclass(frozen=True)
class GraphFlatShape:
    """How a flat DAG kernel cuts its images (all of one size, packed): one group of `pixels` whole pixels per
    thread, whose every input and output fills whole 16-byte vectors, `threads` per block. `inputs` and
    `outputs` are (dtype, channels) by call argument and by output."""

    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[tuple[str, int], ...]
    pixels: int
    threads: int

    @property
    def per_thread(self) -> int:
        """Elements of output 0 per thread (the launcher's grid is its elements / per_thread / threads)."""
        return self.pixels * self.outputs[0][1]

    def vectors(self, dtype: str, channels: int) -> int:
        """16-byte vectors of a group's pixels of `channels` x `dtype`."""
        return self.pixels * channels * ELEMENT_SIZE[dtype] // 16


def graph_flat_shape(inputs: tuple[tuple[str, int], ...], outputs: tuple[tuple[str, int], ...]) -> GraphFlatShape:
    """The fewest whole pixels whose every input and output are whole 16-byte vectors (16 for uint8 RGB in and
    float32 RGB out), and the threads whose tile (each input's and output's part in turn) fits TILE_BYTES."""
    sizes = [channels * ELEMENT_SIZE[dtype] for dtype, channels in (*inputs, *outputs)]
    pixels = math.lcm(*(16 // math.gcd(16, size) for size in sizes))
    return GraphFlatShape(inputs, outputs, pixels, _threads(pixels * max(sizes)))


def _surface(kind: str, index: int) -> str:
    """The pointer of call argument `index` ("src") or of output `index` ("dst") in the parameter block."""
    if kind == "src":
        return "p.h.src" if index == 0 else f"p.in{index}.src"
    return "p.h.dst" if index == 0 else f"p.out{index}.dst"


def emit_graph_at(s: GraphFlatShape) -> list[str]:
    """`graph_at(p, x)`: the graph on pixel x of the flat run, straight from and to global memory."""
    arguments = [
        f"(const {CPP_TYPE[dtype]}*){_surface('src', i)} + x * {channels}"
        for i, (dtype, channels) in enumerate(s.inputs)
    ]
    arguments += [
        f"({CPP_TYPE[dtype]}*){_surface('dst', k)} + x * {channels}" for k, (dtype, channels) in enumerate(s.outputs)
    ]
    return [
        "// The graph on pixel x of the run (every input and output: packed, one size).",
        "FKL_HD void graph_at(const Params& p, fkl::i64 x) {",
        f"    graph_values(p, {', '.join(arguments)});",
        "}",
    ]


def emit_graph_flat_gpu(s: GraphFlatShape) -> list[str]:
    """The `fkl_kernel` entry of a flat DAG kernel (inside the emitter's `#if defined(__CUDACC__)`): each input's
    part of a block's tile through shared memory in turn (coalesced 16-byte loads), the graph on each pixel of the
    thread's group from registers, then each output's part through the tile (coalesced 16-byte stores). A partial
    last tile or an unaligned pointer takes a pixel-by-pixel loop, never unrolled."""
    b, g = s.threads, s.pixels
    tile = b * g
    vectors = [s.vectors(dtype, channels) for dtype, channels in (*s.inputs, *s.outputs)]
    body = [
        *_tile(b * max(vectors)),
        f"    const fkl::i64 pixels = p.h.n / {s.outputs[0][1]};",
        f"    const fkl::i64 begin = (fkl::i64)blockIdx.x * {tile};  // the tile's first pixel",
        f"    const bool whole = p.h.aligned && begin + {tile} <= pixels;  // the same in every thread of the block",
        "    const int t = threadIdx.x;",
        "    if (!whole) {  // this block's share of a partial tile or unaligned pointers",
        f"        const fkl::i64 end = begin + {tile} < pixels ? begin + {tile} : pixels;",
        "#pragma unroll 1",
        f"        for (fkl::i64 x = begin + t; x < end; x += {b}) graph_at(p, x);",
        "        return;",
        "    }",
    ]
    for i, (dtype, channels) in enumerate(s.inputs):
        t_in, v = CPP_TYPE[dtype], s.vectors(dtype, channels)
        body += [
            f"    // argument {i}: the tile's part, then this thread's group in registers",
            f"    fkl::Vec16<{t_in}> a{i}v[{v}];",
            "    {",
            f"        const {t_in}* first = (const {t_in}*){_surface('src', i)} + begin * {channels};",
            "        const fkl::u32* src = (const fkl::u32*)first;",
            "#pragma unroll",
            f"        for (int k = 0; k < {v}; ++k) tile[t + k * {b}] = fkl::load16(src + (t + k * {b}) * 4);",
            "        __syncthreads();",
            "#pragma unroll",
            f"        for (int k = 0; k < {v}; ++k) a{i}v[k] = fkl::load16((const {t_in}*)tile[t * {v} + k].v);",
            "        __syncthreads();  // read before the next part overwrites the tile",
            "    }",
        ]
    for k, (dtype, channels) in enumerate(s.outputs):
        body.append(f"    fkl::Vec16<{CPP_TYPE[dtype]}> r{k}v[{s.vectors(dtype, channels)}];")
    pixel = []
    for i, (dtype, channels) in enumerate(s.inputs):
        lanes = 16 // ELEMENT_SIZE[dtype]
        pixel += [
            f"        {CPP_TYPE[dtype]} a{i}[{channels}];",
            "#pragma unroll",
            f"        for (int c = 0; c < {channels}; ++c) a{i}[c] = a{i}v[(i * {channels} + c) / {lanes}]"
            f".v[(i * {channels} + c) % {lanes}];",
        ]
    pixel += [f"        {CPP_TYPE[dtype]} r{k}[{channels}];" for k, (dtype, channels) in enumerate(s.outputs)]
    names = [f"a{i}" for i in range(len(s.inputs))] + [f"r{k}" for k in range(len(s.outputs))]
    pixel.append(f"        graph_values(p, {', '.join(names)});")
    for k, (dtype, channels) in enumerate(s.outputs):
        lanes = 16 // ELEMENT_SIZE[dtype]
        pixel += [
            "#pragma unroll",
            f"        for (int c = 0; c < {channels}; ++c) r{k}v[(i * {channels} + c) / {lanes}]"
            f".v[(i * {channels} + c) % {lanes}] = r{k}[c];",
        ]
    body += ["#pragma unroll", f"    for (int i = 0; i < {g}; ++i) {{", *pixel, "    }"]
    for k, (dtype, channels) in enumerate(s.outputs):
        t_out, v = CPP_TYPE[dtype], s.vectors(dtype, channels)
        body += [
            f"    // output {k}: this thread's group into the tile, then the tile's part out",
            *(
                ["    __syncthreads();  // the previous part is stored before this one overwrites the tile"]
                if k
                else []
            ),
            "#pragma unroll",
            f"    for (int k = 0; k < {v}; ++k) fkl::store16(({t_out}*)tile[t * {v} + k].v, r{k}v[k]);",
            "    __syncthreads();",
            "    {",
            f"        fkl::u32* dst = (fkl::u32*)(({t_out}*){_surface('dst', k)} + begin * {channels});",
            "#pragma unroll",
            f"        for (int k = 0; k < {v}; ++k) fkl::store16(dst + (t + k * {b}) * 4, tile[t + k * {b}]);",
            "    }",
        ]
    return [
        f"// Block b owns pixels [b * {tile}, (b + 1) * {tile}): {b} groups of {g} whole pixels, one per thread. Each",
        "// input's and output's part of the tile goes through shared memory in turn, so that global loads and",
        "// stores are coalesced 16-byte accesses.",
        *_flat_gpu_entry(b, body),
    ]


def emit_graph_flat_cpu(s: GraphFlatShape) -> list[str]:
    """The `fkl_run` entry of a flat DAG kernel (inside the emitter's `#else`): chunks of the run of pixels
    shared out among OpenMP threads, each pixel through graph_at."""
    channels = s.outputs[0][1]
    return [
        "static void run_pixels(const Params& q, fkl::i64 x0, fkl::i64 x1) {",
        "    for (fkl::i64 x = x0; x < x1; ++x) graph_at(q, x);",
        "}",
        f'extern "C" void {CPU_ENTRY}(const Params* params) {{',
        "    const Params q = *params;  // a copy: an output store through a byte pointer may alias anything",
        f"    const fkl::i64 pixels = q.h.n / {channels};",
        "    const fkl::i64 chunk = 4096;",
        f"#pragma omp parallel for schedule(static) if(pixels > chunk && q.h.n >= {CPU_PARALLEL_MIN_ELEMENTS})",
        "    for (fkl::i64 g = 0; g < pixels; g += chunk) run_pixels(q, g, g + chunk < pixels ? g + chunk : pixels);",
        "}",
    ]
