"""The plan of a DAG kernel (SPEC §8): one `fkl.kernel` whose reads' branches join and whose values fork
into several writes. Each read becomes a branch (its stage functions, reading the header's source for call
argument 0 and `p.in<i>` for argument i), the ops between become `graph_pixel`'s statements by their rules
(emit_rules: PIXEL for an op of one image, JOIN for the joins), each write an output (`p.h` for output 0,
`p.out<k>` for output k). Every pixel of every output is computed by one thread from the pixels at its place
in each branch: the values between stay in registers.

A graph whose reads fold no geometry, whose inputs and outputs are all packed single images and whose ops take
no per-plane values is flat (emit_flat.GraphFlatShape): every input and output is one run of pixels of one
size, and `graph_values` computes a pixel from its inputs' pixels, which the GPU kernel moves in 16-byte
vectors through shared memory as a flat chain's kernel does."""

from __future__ import annotations

from collections.abc import Mapping

from xdsl.ir import Operation, SSAValue

from fklir.backend.chains import WRITE_KIND
from fklir.backend.cpp_types import CPP_TYPE
from fklir.backend.emit_cpp import USER_BODIES_LINE
from fklir.backend.emit_flat import graph_flat_shape
from fklir.backend.emit_geometry import emit_stages, shares_plane
from fklir.backend.emit_rules import JOIN, PIXEL, is_float_division, title
from fklir.backend.emit_user import emit_user_bodies, user_declarations, user_include_dirs
from fklir.backend.kernel_layout import PIXELS_PER_THREAD, KernelLayout
from fklir.backend.plan import BranchPlan, GraphPlan, OutputPlan
from fklir.backend.typed_ir import image_of, pixel_of, slot_of
from fklir.dialects import fkl
from fklir.dialects.constants import input_index, output_index

# the writes a DAG's outputs may take: a pixel per thread, whole pixels
_GRAPH_WRITES = ("packed", "planar")


class _Analysis:
    """One pass over the kernel's ops in order: the SSA value of each op named v<n>."""

    def __init__(self, kernel: fkl.KernelOp):
        self.kernel = kernel
        self.counts = {name: count for name, _, count in kernel.params.slots}
        self.names: dict[SSAValue, str] = {}
        self.branches: list[BranchPlan] = []
        self.reads: list[fkl.ReadOp] = []
        self.inputs: dict[int, fkl.ImageType] = {}
        self.outputs: dict[int, tuple[OutputPlan, fkl.ImageType]] = {}
        self.body: list[str] = []  # graph_pixel's: sampled branches, stores at (x, y, z)
        self.flat_body: list[str] = []  # graph_values': pixels in its arguments a<i>, results in r<k>
        self.flat = True  # no geometry, no lists, packed reads and writes, no per-plane values

    def declare(self, value: SSAValue) -> str:
        name = self.names[value] = f"v{len(self.names)}"
        t = image_of(value.type)
        self.body.append(f"{CPP_TYPE[t.dtype]} {name}[{t.channels.data}];")
        return name

    def both(self, *lines: str) -> None:
        self.body += lines
        self.flat_body += lines

    def read(self, op: fkl.ReadOp) -> None:
        index = input_index(op.sources[0])
        tables = {len(read.sources) for read in self.reads} | {len(op.sources)}
        if len(tables) > 1:
            raise ValueError(f"'{op.name}': a graph's reads are all single images or all lists of one length")
        self.reads.append(op)
        source = image_of(op.source_type)
        if self.inputs.setdefault(index, source) != source:
            raise ValueError(f"call argument {index} is read as {self.inputs[index]} and as {source}")
        k, geometry = len(self.branches), op.geometry
        surface = "p.h" if index == 0 else f"p.in{index}"
        stages = emit_stages(op, geometry, self.counts, surface)
        self.branches.append(
            BranchPlan(pixel_of(image_of(op.result.type)), len(geometry), tuple(stages), shares_plane(geometry))
        )
        self.flat = self.flat and not geometry and len(op.sources) == 1 and source.layout.data == "packed"
        self.body.append(f"// branch {k}: {op.name} of call argument {index}")
        name = self.declare(op.result)
        self.body.append(f"b{k}::stage{len(geometry)}(p, q{k}, x, y, z, {name});")
        self.flat_body.append(f"const {CPP_TYPE[source.dtype]}* {name} = a{index};  // {op.name} of argument {index}")

    def write(self, op: fkl.WriteOp | fkl.SplitOp | fkl.TSplitOp | fkl.SplitWriteOp) -> None:
        kind = WRITE_KIND[type(op)]
        if kind not in _GRAPH_WRITES:
            raise ValueError(f"'{op.name}': a graph's outputs are packed or planar writes")
        k = output_index(op.dest.data)
        if k in self.outputs:
            raise ValueError(f"'{op.name}': output {k} is written twice")
        out = image_of(op.input.type)
        self.outputs[k] = (OutputPlan("p.h" if k == 0 else f"p.out{k}", kind, pixel_of(out)), out)
        self.flat = self.flat and kind == "packed"
        value = self.names[op.input]
        self.body.append(f"store{k}(p, x, y, z, {value});")
        self.flat_body.append(f"for (int c = 0; c < {out.channels.data}; ++c) r{k}[c] = {value}[c];  // output {k}")

    def compute(self, op: Operation) -> None:
        operands = [self.names[v] for v in op.operands]
        self.flat = self.flat and not fkl.is_per_plane(op)  # a run of pixels does not know its plane
        self.both(f"// {title(op)}")
        name = self.declare(op.results[0])
        self.flat_body.append(self.body[-1])
        if op.has_trait(fkl.Join):
            self.both(*JOIN.emit(op, operands, name))
        else:
            self.both(*PIXEL.emit(op, operands[0], name))

    def run(self) -> None:
        for op in self.kernel.body.block.ops:
            if isinstance(op, fkl.ReadOp):
                self.read(op)
            elif isinstance(op, fkl.WriteOp | fkl.SplitOp | fkl.TSplitOp | fkl.SplitWriteOp):
                self.write(op)
            elif isinstance(op, fkl.GEOMETRY_OPS):
                raise ValueError(f"'{op.name}' must fold into its read (run fkl-backward-fusion)")
            else:
                self.compute(op)


def _numbered(found: Mapping[int, object], what: str, first: int) -> None:
    if sorted(found) != list(range(first, first + len(found))):
        raise ValueError(f"a graph's {what} must be numbered {first}, {first + 1}, ... without gaps: {sorted(found)}")


def plan_graph(kernel: fkl.KernelOp) -> GraphPlan:
    """The plan of one hoisted, typed DAG kernel (`kernel.is_graph()`)."""
    analysis = _Analysis(kernel)
    analysis.run()
    _numbered(analysis.inputs, "call arguments", 0)
    _numbered(analysis.outputs, "outputs", 0)
    inputs = analysis.inputs
    outputs = [analysis.outputs[k] for k in range(len(analysis.outputs))]
    source, (first, first_type) = inputs[0], outputs[0]
    flat = None
    if analysis.flat:
        pixels = tuple((inputs[i].dtype, inputs[i].channels.data) for i in range(len(inputs)))
        flat = graph_flat_shape(pixels, tuple((o.out.dtype, o.out.channels) for o, _ in outputs))
    layout = KernelLayout(
        mode="sampled" if flat is None else "flat",
        elements_per_thread=1 if flat is None else flat.per_thread,
        slots=tuple(kernel.params.slots),
        in_dtype=source.dtype,
        in_channels=source.channels.data,
        in_planes=source.planes.data,
        out_dtype=first.out.dtype,
        out_channels=first.out.channels,
        out_planes=first_type.planes.data,
        write=first.write_kind,
        read=source.layout.data,
        src_table=len(analysis.reads[0].sources) if len(analysis.reads[0].sources) > 1 else 0,
        # float32 divisions by values: their reciprocals follow the slots (kernel_plan.float_divisor_slots)
        reciprocals=tuple(slot_of(op) for op in kernel.body.block.ops if is_float_division(op)),
        flat_block=0 if flat is None else flat.threads,
        pixels_per_thread=PIXELS_PER_THREAD if flat is None else 1,
        inputs=tuple((t.dtype, t.channels.data, t.layout.data) for t in (inputs[i] for i in range(1, len(inputs)))),
        outputs=tuple((o.out.dtype, o.out.channels, o.write_kind) for o, _ in outputs[1:]),
    )
    declarations = user_declarations(kernel)
    return GraphPlan(
        kernel.sym_name.data,
        layout,
        tuple(analysis.branches),
        tuple(o for o, _ in outputs),
        tuple(analysis.body if flat is None else analysis.flat_body),
        tuple(emit_user_bodies(declarations, USER_BODIES_LINE)),
        user_include_dirs(declarations),
        flat,
    )
