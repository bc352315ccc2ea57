"""fkl.kernel (one launch: a chain and its parameter block) and the rule of which slot each value
field needs."""

from __future__ import annotations

from xdsl.dialects.builtin import (
    DenseArrayBase,
    DictionaryAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    f64,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region
from xdsl.irdl import IRDLOperation, opt_prop_def, prop_def, region_def, traits_def
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import IsolatedFromAbove, NoTerminator, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from fklir import dtypes
from fklir.diagnostics import OpError
from fklir.dialects.dominance import SSADominance
from fklir.dialects.fkl.abstract_ops import TypeRuleOp, fkl_op
from fklir.dialects.fkl.fields import field_slot, is_per_plane, value_fields
from fklir.dialects.fkl.ops_geometry import CropOp, ReadOp
from fklir.dialects.fkl.ops_write import WRITE_OPS
from fklir.dialects.fkl.syntax import SPECIAL_NUMBERS, fit_int64, format_number
from fklir.dialects.fkl.traits import Geometry, Join
from fklir.dialects.fkl.types import DYNAMIC, PLANE_MAP_SLOT, ParamsType, known

# ---------------------------------------------------------------------------------------------
# Parameter slots: which slot each value field needs
# ---------------------------------------------------------------------------------------------

# slot kind -> the element type whose range its values must lie in (a rect holds int32 x, y, w, h).
_KIND_DTYPE: dict[str, dtypes.DType] = {**dtypes.BY_SLOT_KIND, "rect": dtypes.BY_NAME["int32"]}


def param_slot(op: Operation, field: str) -> tuple[str, int] | None:
    """(kind, count) of the parameter slot that holds value field `field` of `op`, by the op's own rule
    (`TypeRuleOp.slot_for`): the rule by which fkl-hoist-params makes slots and fkl.kernel's verifier
    checks them. None while the types it reads are not inferred.
    """
    if not isinstance(op, TypeRuleOp) or (in_type := known(op.operands[0].type)) is None:
        return None
    slot = op.slot_for(field, in_type, known(op.results[0].type))
    if slot is None or field != op.PER_PLANE_FIELD or not is_per_plane(op):
        return slot
    kind, count = slot
    return kind, count * in_type.planes.data  # one row per plane


def _check_slot_use(kernel: KernelOp, op: Operation, field: str, slot: tuple[str, str, int]) -> None:
    """`op` reads `field` from `slot`: the slot must have the kind the op computes in and at least the
    elements it reads (a wrong kind is C++ that does not compile, a short slot a read past its end)."""
    needed = param_slot(op, field)
    if needed is None:
        return
    (name, kind, count), (want_kind, want_count) = slot, needed
    reads = f"{want_kind} x {'planes' if want_count == DYNAMIC else want_count}"
    if isinstance(op, CropOp):
        fits = count == 1 or (want_count != DYNAMIC and count >= want_count)
        reads = f"{reads} (or rect x 1, shared by every plane)"
    else:
        fits = count >= want_count
    if kind != want_kind or not fits:
        raise OpError(
            op,
            f"'{op.name}' reads param \"{name}\" as {reads}, but slot {name} of @{kernel.sym_name.data} is "
            f"{kind} x {count}",
        )


def _check_slot_values(kernel: KernelOp, slots: dict[str, tuple[str, str, int]]) -> None:
    """The values the host packs: one number per element (4 per rect), in the kind's range (ctypes
    would wrap an out-of-range integer silently)."""
    if kernel.values is None:
        return
    for name, attr in kernel.values.data.items():
        if name not in slots:
            raise VerifyException(f"'fkl.kernel' @{kernel.sym_name.data}: value for unknown slot {name}")
        _, kind, count = slots[name]
        numbers = attr.get_values() if isinstance(attr, DenseArrayBase) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        what = f"'fkl.kernel' @{kernel.sym_name.data}: slot {name} ({kind} x {count})"
        expected = 4 * count if kind == "rect" else count
        if numbers is None or len(numbers) != expected:  # pyright: ignore[reportUnknownArgumentType]
            got = "no number list" if numbers is None else f"{len(numbers)} numbers"  # pyright: ignore[reportUnknownArgumentType]
            raise VerifyException(f"{what} needs {expected} numbers, got {got}")
        if (limits := _KIND_DTYPE[kind].integer_range) is None:
            continue
        lo, hi = limits
        bad = [v for v in numbers if not (lo <= v <= hi and float(v).is_integer())]  # pyright: ignore[reportUnknownVariableType]
        if bad:
            raise VerifyException(f"{what} holds {bad}, not integers in [{lo}, {hi}]")


def _check_plane_map(kernel: KernelOp, slots: dict[str, tuple[str, str, int]]) -> None:
    """A kernel of several chains (a divergent batch) runs chain planemap[z] on plane z: it needs the
    slot, of i32, and values that name its chains."""
    chains = 1 if kernel.is_graph() else sum(isinstance(op, WRITE_OPS) for op in kernel.body.block.ops)
    slot = slots.get(PLANE_MAP_SLOT)
    where = f"'fkl.kernel' @{kernel.sym_name.data}"
    if slot is None:
        if chains > 1:
            raise VerifyException(f"{where} has {chains} chains but no slot {PLANE_MAP_SLOT} (i32 x planes)")
        return
    if slot[1] != "i32":
        raise VerifyException(f"{where}: slot {PLANE_MAP_SLOT} must be i32 (a chain index per plane), got {slot[1]}")
    values = kernel.values.data.get(PLANE_MAP_SLOT) if kernel.values is not None else None
    if not isinstance(values, DenseArrayBase):
        return
    bad = [v for v in values.get_values() if not 0 <= v < max(chains, 1)]  # pyright: ignore[reportUnknownVariableType]
    if bad:
        raise VerifyException(f"{where}: {PLANE_MAP_SLOT} values {bad} name no chain (it has {chains})")


# ---------------------------------------------------------------------------------------------
# Kernel
# ---------------------------------------------------------------------------------------------


def _print_kernel_values(printer: Printer, values: DictionaryAttr) -> None:
    """`{mul1 = [2.0, 2.0, 2.0], crop2 = [30, 12, 60, 40]}`: floats always with a point (or nan, inf,
    ninf), integers without, so the text reads back to the same f64 / i64 arrays (xDSL's own
    dictionary printing writes NaN and large values in hex, which its parser rejects)."""
    entries = []
    for name, attr in values.data.items():
        numbers = attr.get_values() if isinstance(attr, DenseArrayBase) else ()  # pyright: ignore[reportUnknownMemberType]
        is_float = isinstance(attr, DenseArrayBase) and not isinstance(attr.elt_type, IntegerType)
        text = ", ".join(format_number(float(v)) if is_float else str(int(v)) for v in numbers)  # pyright: ignore[reportUnknownArgumentType]
        entries.append(f"{name} = [{text}]")
    printer.print_string("{" + ", ".join(entries) + "}")


def _parse_kernel_values(parser: Parser) -> DictionaryAttr:
    def parse_entry() -> tuple[str, Attribute]:
        name = parser.parse_identifier()
        parser.parse_punctuation("=")
        numbers: list[int | float] = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: _parse_int_or_float(parser)
        )
        if all(isinstance(v, int) for v in numbers):
            return name, DenseArrayBase.from_list(i64, [int(v) for v in numbers])
        return name, DenseArrayBase.from_list(f64, [float(v) for v in numbers])

    entries = parser.parse_comma_separated_list(parser.Delimiter.BRACES, parse_entry)
    return DictionaryAttr(dict(entries))


def _parse_int_or_float(parser: Parser) -> int | float:
    if (word := parser.parse_optional_keyword_in(tuple(SPECIAL_NUMBERS))) is not None:
        return SPECIAL_NUMBERS[word]
    pos = parser.pos
    number = parser.parse_number()
    return number if isinstance(number, float) else fit_int64(parser, KernelOp.name, pos, number)


def chain_from(read: ReadOp) -> list[Operation]:
    """The ops of the chain that starts at `read`, in order: each the single user of the one before (a chain
    ends at an op whose result has no use, or several)."""
    chain: list[Operation] = [read]
    op: Operation = read
    while op.results and len(uses := list(op.results[0].uses)) == 1:
        op = uses[0].operation
        chain.append(op)
    return chain


def chains_in(block: Block) -> list[list[Operation]]:
    """Every chain of `block`, one per fkl.read, in block order: what the passes that work per chain and the
    backend read a kernel as (fkl.kernel's verifier checks that its body is exactly such chains)."""
    return [chain_from(op) for op in block.ops if isinstance(op, ReadOp)]


def graphs_in(block: Block) -> list[list[Operation]]:
    """The connected graphs of `block` (ops joined by the values they pass), each in block order, in the order
    of their first ops: a linear chain is a graph; a DAG (SPEC §8) is one graph of several reads or writes."""
    ops = list(block.ops)
    root = {op: op for op in ops}

    def find(op: Operation) -> Operation:
        while root[op] is not op:
            root[op] = root[root[op]]
            op = root[op]
        return op

    for op in ops:
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation) and owner in root:
                root[find(owner)] = find(op)
    graphs: dict[Operation, list[Operation]] = {}
    for op in ops:
        graphs.setdefault(find(op), []).append(op)
    return list(graphs.values())


def is_dag(ops: list[Operation]) -> bool:
    """Whether a graph's ops join branches or fork a value (SPEC §8), rather than form one straight chain."""
    return any(op.has_trait(Join) or any(len(list(r.uses)) > 1 for r in op.results) for op in ops)


def check_dag_link(op: Operation) -> None:
    """OpError unless `op` of a DAG passes its result on: a value no op uses is never written. A geometry
    op's input has that one use: the geometry folds into its read, which a fork before it would prevent."""
    if op.results and not list(op.results[0].uses):
        raise OpError(op, f"'{op.name}' result is never used: every value of a graph must reach a write")
    if op.has_trait(Geometry) and op.operands and len(list(op.operands[0].uses)) > 1:
        raise OpError(
            op,
            f"'{op.name}' reads a value that other ops use too: geometry folds into its read, so a branch that "
            "needs other geometry reads the input again (fkl.Input)",
        )


def check_chain_link(op: Operation) -> None:
    """OpError unless `op` passes its result on to exactly one op (a write passes nothing on): a chain is a
    straight line from a read to a write."""
    if isinstance(op, WRITE_OPS) or not op.results:
        return
    uses = list(op.results[0].uses)
    if not uses:
        raise OpError(op, f"'{op.name}' result is never written: a chain must end with fkl.write or fkl.split")
    if len(uses) > 1:
        raise OpError(op, f"'{op.name}' result has {len(uses)} users: a chain must be a straight line")


def _check_graph(kernel: KernelOp, ops: list[Operation]) -> None:
    """A DAG kernel's body is one graph: reads, the ops between, writes."""
    where = f"'fkl.kernel' @{kernel.sym_name.data}"
    if len(graphs_in(kernel.body.block)) > 1:
        raise VerifyException(f"{where}: a kernel with a graph (joined or forked values) holds that one graph only")
    if not any(isinstance(op, WRITE_OPS) for op in ops):
        raise VerifyException(f"{where}: its graph writes nothing")
    for op in ops:
        check_dag_link(op)


def _check_chains(kernel: KernelOp) -> None:
    """A kernel's body is read ... write chains, one after the other, each op in one of them (or one DAG)."""
    ops = list(kernel.body.block.ops)
    if is_dag(ops):
        _check_graph(kernel, ops)
        return
    at = 0
    for chain in kernel.chains():
        for op in chain:
            check_chain_link(op)
        if ops[at : at + len(chain)] != chain:
            raise VerifyException(f"'fkl.kernel' @{kernel.sym_name.data}: its chains must follow one another")
        at += len(chain)
    if at != len(ops):
        raise VerifyException(
            f"'fkl.kernel' @{kernel.sym_name.data}: '{ops[at].name}' is in no read ... write chain of the kernel"
        )


@fkl_op
class KernelOp(IRDLOperation):
    """One launch: a read ... write chain and its parameter block.

    `fkl.kernel @k0 params !fkl.params<mul1: f32 x 3> values {mul1 = array<f64: 1.0, 2.0, 3.0>} { ... }`

    `values` holds the slot values; stripping it leaves the structural IR that the cache key hashes.
    """

    name = "fkl.kernel"
    sym_name = prop_def(SymbolNameConstraint())
    params = prop_def(ParamsType)
    values = opt_prop_def(DictionaryAttr)
    body = region_def("single_block")

    traits = traits_def(NoTerminator(), IsolatedFromAbove(), SymbolOpInterface(), SSADominance())

    def __init__(
        self,
        sym_name: str,
        body: Region,
        params: ParamsType | None = None,
        values: DictionaryAttr | None = None,
    ):
        properties: dict[str, Attribute] = {
            "sym_name": StringAttr(sym_name),
            "params": params or ParamsType(),
        }
        if values is not None:
            properties["values"] = values
        super().__init__(properties=properties, regions=[body])

    # Hand-written: the body prints without its entry block and `params` must name an !fkl.params type
    # in this op's own error; a format would need a directive for each part.
    @classmethod
    def parse(cls, parser: Parser) -> KernelOp:
        sym_name = parser.parse_symbol_name()
        parser.parse_keyword("params")
        params = parser.parse_type()
        if not isinstance(params, ParamsType):
            parser.raise_error(f"'fkl.kernel' expects an !fkl.params type, got {params}")
        values = _parse_kernel_values(parser) if parser.parse_optional_keyword("values") else None
        body = parser.parse_region()
        return KernelOp(sym_name.data, body, params, values)

    def print(self, printer: Printer) -> None:
        printer.print_string(" ")
        printer.print_symbol_name(self.sym_name.data)
        printer.print_string(" params ")
        printer.print_attribute(self.params)
        if self.values is not None:
            printer.print_string(" values ")
            _print_kernel_values(printer, self.values)
        printer.print_string(" ")
        printer.print_region(self.body, print_entry_block_args=False)

    def chains(self) -> list[list[Operation]]:
        """The kernel's read ... write chains in order (several in a divergent kernel; see chains_in)."""
        return chains_in(self.body.block)

    def is_graph(self) -> bool:
        """Whether the kernel holds a DAG (joined or forked values, SPEC §8) rather than chains."""
        return is_dag(list(self.body.block.ops))

    def verify_(self) -> None:
        if self.body.block.args:
            raise VerifyException("'fkl.kernel' body takes no block arguments")
        _check_chains(self)
        slots = {slot[0]: slot for slot in self.params.slots}
        for op in self.body.walk():
            for field in value_fields(op):
                name = field_slot(op, field)
                if name is None:
                    continue
                if name not in slots:
                    raise VerifyException(f"'fkl.kernel' @{self.sym_name.data}: '{op.name}' uses unknown slot {name}")
                _check_slot_use(self, op, field, slots[name])
        _check_slot_values(self, slots)
        _check_plane_map(self, slots)
