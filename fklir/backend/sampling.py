"""How a one-chain sampled kernel samples its source: a strategy object, chosen once per chain by the plan
(kernel_plan.choose_sampling), that prints its own part of the GPU entry and of the CPU loop.

- PixelTaps: every pixel computes its own taps through `sample` (the GPU's narrow entry always does);
- BlockTaps: a final linear resize's taps computed once per block column and row (has_block_taps);
- PairTaps: crops of a packed integer image resized linearly: a column's two taps read as one pair
  from the two source rows of its output row (has_pair_taps);

and on the CPU only:

- RowSpans: a row straight from a source row, a border's pixels either side (has_row_spans);
- WarpRows: a final warp's rows through fkl::WarpRows (has_warp_rows);
- NearestColumns: a final nearest resize's source columns once per plane (has_nearest_columns).

A GPU strategy prints the block's shared taps (`gpu_shared_taps`) and its samples (`gpu_sample`); a CPU one
its functions, a thread's state, what it computes per plane and its loop over a row. They read the chain's
plan (plan.ChainPlan), never the IR: the helpers a strategy's ops lower to come in the plan's `cpu_helpers`.
"""

from __future__ import annotations

from fklir.backend.cpp_types import CPP_TYPE
from fklir.backend.plan import ChainPlan

PIXEL_BLOCK_X = 32  # sampled kernels: threads along x per block (fklir.runtime.launch.PIXEL_BLOCK)
PIXEL_BLOCK_Y = 8  # and along y


class PixelTaps:
    """Each pixel computes its own taps (`sample`)."""

    # ---- GPU ----

    def gpu_shared_taps(self, chain: ChainPlan, pixels: int) -> list[str]:
        """What the block's threads compute for all of them after the Plane (nothing here)."""
        return []

    def gpu_sample(self, chain: ChainPlan, pixels: int) -> list[str]:
        """Each thread's `pixels` samples into out[k]."""
        return [
            "#pragma unroll",
            f"    for (int k = 0; k < {pixels}; ++k) {{",
            f"        const fkl::i32 x = x0 + k * {PIXEL_BLOCK_X};",
            "        if (x < p.h.dst_w) sample(p, q, x, y, blockIdx.z, out[k]);",
            "    }",
        ]

    # ---- CPU ----

    def cpu_functions(self, chain: ChainPlan) -> list[str]:
        """Functions of its own that only the CPU loop calls, after the plan's cpu_helpers (so the GPU's
        source stays as it is)."""
        return []

    def cpu_state(self, chain: ChainPlan) -> list[str]:
        """A CPU thread's per-plane state: the Plane and what its rows share along x."""
        return ["    Plane q;"]

    def cpu_plane(self, chain: ChainPlan) -> list[str]:
        """What a CPU thread computes when its rows reach a new plane z (see cpu_state)."""
        return ["                q = plane_of(p, z);"]

    def cpu_row(self, chain: ChainPlan) -> list[str]:
        """The CPU's loop over the pixels of row y of plane z, given the plane's state (cpu_plane)."""
        return _row_loop(chain, [], "sample(p, q, x, y, z, out);")


class BlockTaps(PixelTaps):
    """A final linear resize's taps of the block's columns and rows, computed once (has_block_taps)."""

    def gpu_shared_taps(self, chain: ChainPlan, pixels: int) -> list[str]:
        k = chain.last_stage
        tap_x = f"stage{k}_tap_x(p, q, x < p.h.dst_w ? x : p.h.dst_w - 1, blockIdx.z)"
        return _shared_taps(chain, pixels, "fkl::LinearTap", tap_x, [])

    def gpu_sample(self, chain: ChainPlan, pixels: int) -> list[str]:
        return [
            "    const fkl::LinearTap ty = block_ty[threadIdx.y];",
            "#pragma unroll",
            f"    for (int k = 0; k < {pixels}; ++k)",
            f"        if (x0 + k * {PIXEL_BLOCK_X} < p.h.dst_w)",
            f"            sample_taps(p, q, block_tx[threadIdx.x + k * {PIXEL_BLOCK_X}], ty, blockIdx.z, out[k]);",
        ]

    def cpu_state(self, chain: ChainPlan) -> list[str]:
        return [*super().cpu_state(chain), "    std::vector<fkl::LinearTap> tx((size_t)p.h.dst_w);"]

    def cpu_plane(self, chain: ChainPlan) -> list[str]:
        k = chain.last_stage
        return [
            *super().cpu_plane(chain),
            f"                for (fkl::i32 x = 0; x < p.h.dst_w; ++x) tx[x] = stage{k}_tap_x(p, q, x, z);",
        ]

    def cpu_row(self, chain: ChainPlan) -> list[str]:
        head = [f"            const fkl::LinearTap ty = stage{chain.last_stage}_tap_y(p, q, y, z);"]
        return _row_loop(chain, head, "sample_taps(p, q, tx[x], ty, z, out);")


class PairTaps(PixelTaps):
    """A column's two taps as one pair read from its output row's two source rows (has_pair_taps)."""

    def gpu_shared_taps(self, chain: ChainPlan, pixels: int) -> list[str]:
        k, channels = chain.last_stage, chain.source.channels
        tap_x = f"stage{k}_tap_x(p, q, x < p.h.dst_w ? x : p.h.dst_w - 1, blockIdx.z)"
        tap_x = f"fkl::pair_tap({tap_x}, origin.x, p.h.src_w, {channels})"
        origin = ["        const fkl::Rect origin = pair_origin(p, blockIdx.z);"]
        return _shared_taps(chain, pixels, "fkl::PairTap", tap_x, origin)

    def gpu_sample(self, chain: ChainPlan, pixels: int) -> list[str]:
        t_src = CPP_TYPE[chain.source.dtype]
        plane = "blockIdx.z, " if chain.plane_values else ""
        tx = f"block_tx[threadIdx.x + k * {PIXEL_BLOCK_X}]"
        return [
            "    const fkl::LinearTap ty = block_ty[threadIdx.y];",
            "    const fkl::Rect origin = pair_origin(p, blockIdx.z);",
            f"    const {t_src}* row0 = pair_row(p, ty.i0 + origin.y, blockIdx.z);",
            f"    const {t_src}* row1 = pair_row(p, ty.i1 + origin.y, blockIdx.z);",
            "#pragma unroll",
            f"    for (int k = 0; k < {pixels}; ++k)",
            f"        if (x0 + k * {PIXEL_BLOCK_X} < p.h.dst_w)",
            f"            sample_pair(p, {plane}row0, row1, {tx}, ty.w1, out[k]);",
        ]

    def cpu_state(self, chain: ChainPlan) -> list[str]:
        t_src, channels = CPP_TYPE[chain.source.dtype], chain.source.channels
        return [
            *super().cpu_state(chain),
            f"    fkl::ResizeRows<{t_src}, {channels}> resize(p.h.dst_w);",
            f"    std::vector<fkl::f32> line((size_t)p.h.dst_w * {channels});",
            "    fkl::Rect origin = {0, 0, 0, 0};",
        ]

    def cpu_plane(self, chain: ChainPlan) -> list[str]:
        k = chain.last_stage
        return [
            *super().cpu_plane(chain),
            "                origin = pair_origin(p, z);",
            "                for (fkl::i32 x = 0; x < p.h.dst_w; ++x)",
            f"                    resize.set_column(x, stage{k}_tap_x(p, q, x, z), origin.x);",
        ]

    def cpu_row(self, chain: ChainPlan) -> list[str]:
        head = [
            f"            const fkl::LinearTap ty = stage{chain.last_stage}_tap_y(p, q, y, z);",
            "            resize.blend(pair_row(p, ty.i0 + origin.y, z), pair_row(p, ty.i1 + origin.y, z), ty.w1,",
            "                         line.data());",
        ]
        in_channels = chain.stage.channels
        return _row_loop(chain, head, f"compute_pixel(p, {chain.plane_arg}&line[(size_t)x * {in_channels}], out);")


class NearestColumns(PixelTaps):
    """CPU: a final nearest resize's source columns, once per plane (has_nearest_columns; the plan's
    cpu_helpers hold `nearest_column` and `nearest_row`)."""

    def cpu_state(self, chain: ChainPlan) -> list[str]:
        return [*super().cpu_state(chain), "    std::vector<fkl::u32> columns((size_t)p.h.dst_w);"]

    def cpu_plane(self, chain: ChainPlan) -> list[str]:
        return [
            *super().cpu_plane(chain),
            "                for (fkl::i32 x = 0; x < p.h.dst_w; ++x)",
            "                    columns[x] = nearest_column(p, q, x, z);",
        ]

    def cpu_row(self, chain: ChainPlan) -> list[str]:
        t_src = CPP_TYPE[chain.source.dtype]
        head = [f"            const {t_src}* src = nearest_row(p, q, y, z);"]
        return _row_loop(chain, head, f"compute_pixel(p, {chain.plane_arg}src + columns[x], out);")


class RowSpans(PixelTaps):
    """CPU: row y of plane z through its row span (has_row_spans; the plan's cpu_helpers hold `row_span` and
    `span_row`): the run straight from the source row, the pixels either side of it (a border's) through
    `sample`."""

    def cpu_row(self, chain: ChainPlan) -> list[str]:
        t_out, channels = CPP_TYPE[chain.out.dtype], chain.out.channels
        t_src = CPP_TYPE[chain.source.dtype]
        in_channels = chain.stage.channels
        return [
            "            const fkl::Span s = row_span(p, y, z);",
            "            const auto edge = [&](fkl::i32 x) {",
            f"                {t_out} out[{channels}];",
            "                sample(p, q, x, y, z, out);",
            "                store(p, x, y, z, out);",
            "            };",
            "            for (fkl::i32 x = 0; x < s.lo; ++x) edge(x);",
            "            if (s.lo < s.hi) {",
            f"                const {t_src}* src = span_row(p, s, z);",
            "                for (fkl::i32 x = s.lo; x < s.hi; ++x) {",
            f"                    {t_out} out[{channels}];",
            f"                    compute_pixel(p, {chain.plane_arg}src + (fkl::i64)(x + s.dx) * {in_channels}, out);",
            "                    store(p, x, y, z, out);",
            "                }",
            "            }",
            "            for (fkl::i32 x = s.hi; x < p.h.dst_w; ++x) edge(x);",
        ]


class WarpRows(PixelTaps):
    """CPU: row y of plane z through fkl::WarpRows (has_warp_rows): runs of pixels whose taps lie inside the
    source blended together, runs of pixels whose taps all read the constant 0 outside it as zeros, the
    others through `sample`; a run of a packed write through compute_run (the plan's cpu_helpers hold
    `WarpRows`, `warp_row` and `warp_blend`)."""

    def cpu_functions(self, chain: ChainPlan) -> list[str]:
        return [] if _blends_into_output(chain) else _compute_run(chain)

    def cpu_state(self, chain: ChainPlan) -> list[str]:
        return [*super().cpu_state(chain), "    WarpRows rows(p.h.dst_w);"]

    def cpu_row(self, chain: ChainPlan) -> list[str]:
        t_out, channels = CPP_TYPE[chain.out.dtype], chain.out.channels
        in_channels = chain.stage.channels
        out_row = f"({t_out}*)p.h.dst + z * p.h.dst_plane_stride + y * p.h.dst_pitch"
        direct = _blends_into_output(chain)
        to = out_row if direct else "rows.line.data()"
        if direct:
            write_run = ["                x = end;"]
        elif chain.write_kind == "packed":
            line = f"&rows.line[(size_t)x * {in_channels}]"
            run_out = f"{out_row} + (fkl::i64)x * {channels}"
            write_run = [
                f"                compute_run(p, {chain.plane_arg}{line}, {run_out}, end - x);",
                "                x = end;",
            ]
        else:
            write_run = [
                "                for (; x < end; ++x) {",
                f"                    {t_out} out[{channels}];",
                f"                    compute_pixel(p, {chain.plane_arg}&rows.line[(size_t)x * {in_channels}], out);",
                "                    store(p, x, y, z, out);",
                "                }",
            ]
        return [
            "            warp_row(p, rows, y, z);",
            "            for (fkl::i32 x = 0; x < p.h.dst_w;) {",
            "                const fkl::i32 end = rows.run_end(x, p.h.dst_w);",
            "                const fkl::u8 kind = rows.kind[(size_t)x];",
            "                if (kind == fkl::WarpEdge) {",
            "                    for (; x < end; ++x) {",
            f"                        {t_out} out[{channels}];",
            "                        sample(p, q, x, y, z, out);",
            "                        store(p, x, y, z, out);",
            "                    }",
            "                    continue;",
            "                }",
            "                if (kind == fkl::WarpInside) {",
            f"                    warp_blend(p, rows, x, end, z, {to});",
            "                } else {",
            f"                    rows.zero(x, end, {to});",
            "                }",
            *write_run,
            "            }",
        ]


def _blends_into_output(chain: ChainPlan) -> bool:
    """A packed float32 output that is the warp's own pixel takes the blend directly: no copy of `line`."""
    return chain.writes_stage and chain.write_kind == "packed" and chain.out.dtype == "float32"


def _shared_taps(chain: ChainPlan, pixels: int, tx_type: str, tap_x: str, origin: list[str]) -> list[str]:
    """The block's taps of its columns (`tap_x` each, into block_tx) and rows (block_ty)."""
    k = chain.last_stage
    return [
        f"    __shared__ {tx_type} block_tx[{PIXEL_BLOCK_X * pixels}];",
        f"    __shared__ fkl::LinearTap block_ty[{PIXEL_BLOCK_Y}];",
        "    if (threadIdx.y == 0) {",
        *origin,
        "#pragma unroll",
        f"        for (int k = 0; k < {pixels}; ++k) {{",
        f"            const fkl::i32 x = x0 + k * {PIXEL_BLOCK_X};",
        f"            block_tx[threadIdx.x + k * {PIXEL_BLOCK_X}] = {tap_x};",
        "        }",
        "    }",
        "    if (threadIdx.x == 0)",
        f"        block_ty[threadIdx.y] = stage{k}_tap_y(p, q, y < p.h.dst_h ? y : p.h.dst_h - 1, blockIdx.z);",
        "    __syncthreads();",
    ]


def _row_loop(chain: ChainPlan, head: list[str], sample: str) -> list[str]:
    """A CPU row: `head`, then each pixel through `sample` into out and stored."""
    t_out, channels = CPP_TYPE[chain.out.dtype], chain.out.channels
    return [
        *head,
        "            for (fkl::i32 x = 0; x < p.h.dst_w; ++x) {",
        f"                {t_out} out[{channels}];",
        f"                {sample}",
        "                store(p, x, y, z, out);",
        "            }",
    ]


def _compute_run(chain: ChainPlan) -> list[str]:
    """`compute_run`: the compute chain of n pixels, their stage values in `in`, written to `out`, a run
    of a packed output row; the pointers are __restrict, so that the compiler vectorises the loop (an
    output byte could otherwise alias the values and the parameters)."""
    if chain.write_kind != "packed":
        return []
    t_in, t_out = CPP_TYPE[chain.stage.dtype], CPP_TYPE[chain.out.dtype]
    in_channels, channels = chain.stage.channels, chain.out.channels
    return [
        f"static void compute_run(const Params& p, {chain.plane_param}const {t_in}* __restrict in,"
        f" {t_out}* __restrict out,",
        "                        fkl::i32 n) {",
        "    for (fkl::i32 j = 0; j < n; ++j)",
        f"        compute_pixel(p, {chain.plane_arg}in + (size_t)j * {in_channels}, out + (size_t)j * {channels});",
        "}",
    ]
