"""What C++ each compute op becomes: one emission rule per op class or op family, looked up by class.

The emitters ask a registry, never the op which class it is (cf. xDSL's `@impl(arith.ConstantOp)`):
- ELEMENT: a channel-wise op on one element `src` of channel `c`: the expression, and the comment
  after its statement (the flat path's `compute`, and each channel of a pixel);
- PIXEL: any compute op on a whole pixel, the array `src` into the declared array `dst`; a
  channel-wise op loops its element rule over the channels;
- TITLE: the comment above an op's pixel block (the op's name when it has no rule);
- JOIN: an op that joins a DAG's branches (fkl.join, fkl.blend, fkl.composite), its operands' pixel arrays
  into the declared array `dst`;
- F16_FAST: a float16 op on the GPU's fast conversions (emit_compute.compute_fast): the f32 expression on
  `src` with the op's value converted by fkl::f32_of_f16_fast; a chain takes that path only when each of
  its ops has such a rule.
A lookup walks the op's class hierarchy, so a family's rule (fkl.BinaryValueOp, fkl.CastLikeOp) serves
each member without one of its own; failing that, a rule of a trait the op declares (PIXEL's rule of
fkl.ChannelWise loops any channel-wise op's element rule). The geometry stages are rules of the same
kind (emit_geometry.STAGE).

Op class `fkl.FooOp` is C++ struct `fkl::Foo` of the op headers (include/fkl/*.h), so a family's rule
names each member's struct through `struct()` rather than a table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Concatenate, Generic, ParamSpec, TypeVar

from xdsl.ir import Operation
from xdsl.irdl import IRDLOperation
from xdsl.traits import OpTrait

from fklir.backend.cpp_types import CPP_TYPE
from fklir.backend.typed_ir import image_of, slot_of, values_of
from fklir.dialects import fkl

P = ParamSpec("P")
R = TypeVar("R")
OpT = TypeVar("OpT", bound=Operation)


class OpRules(Generic[P, R]):
    """Emission rules keyed by op class: `rule(op, *args)` for the nearest class of op's hierarchy
    that has one."""

    def __init__(self, what: str):
        self.what = what
        self._rules: dict[type[Operation], Callable[..., R]] = {}
        self._trait_rules: dict[type[OpTrait], Callable[..., R]] = {}

    def register(
        self, *classes: type[OpT]
    ) -> Callable[[Callable[Concatenate[OpT, P], R]], Callable[Concatenate[OpT, P], R]]:
        """Decorator: the rule of each of `classes` (and of their subclasses without a rule of their own)."""

        def add(rule: Callable[Concatenate[OpT, P], R]) -> Callable[Concatenate[OpT, P], R]:
            for cls in classes:
                if cls in self._rules:
                    raise ValueError(f"{cls.__name__} already has a {self.what} rule")
                self._rules[cls] = rule
            return rule

        return add

    def register_trait(self, trait: type[OpTrait]) -> Callable[[Callable[..., R]], Callable[..., R]]:
        """Decorator: the rule of every op that declares `trait` and has no class rule."""

        def add(rule: Callable[..., R]) -> Callable[..., R]:
            if trait in self._trait_rules:
                raise ValueError(f"{trait.__name__} already has a {self.what} rule")
            self._trait_rules[trait] = rule
            return rule

        return add

    def find(self, op_class: type[Operation]) -> Callable[..., R] | None:
        """The rule for `op_class` (its own or its nearest base's, else its trait's), or None."""
        rule = next((self._rules[cls] for cls in op_class.__mro__ if cls in self._rules), None)
        if rule is not None or not issubclass(op_class, IRDLOperation):
            return rule
        return next((r for trait, r in self._trait_rules.items() if op_class.has_trait(trait)), None)

    def emit(self, op: Operation, *args: P.args, **kwargs: P.kwargs) -> R:
        """Apply op's rule; a ValueError names the op when it has none."""
        rule = self.find(type(op))
        if rule is None:
            raise ValueError(f"no {self.what} for '{op.name}'")
        return rule(op, *args, **kwargs)


# (expression, comment) of one element.
ELEMENT = OpRules[[str, str], tuple[str, str]]("element-wise C++ emission")
PIXEL = OpRules[[str, str], list[str]]("C++ emission")
TITLE = OpRules[[], str]("title")
F16_FAST = OpRules[[str, str], tuple[str, str]]("float16 fast-path emission")
# An op that joins a DAG's branches: its operands' pixel arrays into the declared array `dst`.
JOIN = OpRules[[Sequence[str], str], list[str]]("join emission")

_OPS_BY_NAME = {op.name: op for op in fkl.FKL.operations}


def struct(op_class: type[Operation]) -> str:
    """The op header's struct of `op_class`: `fkl::Foo` for `FooOp`."""
    return "fkl::" + op_class.__name__.removesuffix("Op")


def word_struct(word: str) -> str:
    """The struct of the binary op that a loop body or a reduction names ("add" -> fkl::Add)."""
    return struct(_OPS_BY_NAME[f"fkl.{word}"])


def enumerator(enum: str, word: str) -> str:
    """The enumerator of C++ enum `fkl::<enum>` that an IR word names: its CamelCase ("preserve_left" ->
    fkl::AspectRatio::PreserveLeft)."""
    return f"fkl::{enum}::" + "".join(part.capitalize() for part in word.split("_"))


def _channels_in(op: Operation) -> int:
    return image_of(op.operands[0].type).channels.data


def _channels_out(op: Operation) -> int:
    return image_of(op.results[0].type).channels.data


def is_float_division(op: Operation) -> bool:
    """A float32 fkl.div: its divisors come with reciprocals packed by the host, so that a GPU division
    is a product and one FMA correction (fkl::Div), never a per-element reciprocal."""
    return isinstance(op, fkl.DivOp) and image_of(op.results[0].type).dtype == "float32"


def _pick(op: Operation, c: str, slot_suffix: str = "") -> str:
    """Channel c's value of op's slot (one value broadcast, or one per channel; a per-plane op's row of
    plane z)."""
    return f"fkl::pick({values_of(op, slot_suffix)}, {c})"


def fast_division(op: Operation, src: str, c: str) -> str:
    """fkl::Div's fast path on element `src` of a float32 division (for dividends in its range)."""
    return f"fkl::Div::fast({src}, {_pick(op, c)}, {_pick(op, c, '_rcp')})"


# ---------------------------------------------------------------------------------------------
# Channel-wise ops: one element
# ---------------------------------------------------------------------------------------------


@ELEMENT.register(fkl.BinaryValueOp)
def _binary(op: fkl.BinaryValueOp, src: str, c: str) -> tuple[str, str]:
    args = [src, _pick(op, c), *([_pick(op, c, "_rcp")] if is_float_division(op) else [])]
    return f"{struct(type(op))}::exec({', '.join(args)})", f"{op.name}: {op.FORMULA}"


# The ops whose float16 overload is their float32 one on the operands' exact f32 values, rounded back to
# float16 (fkl/arith.h; Max and Min return an operand, which the rounding keeps).
@F16_FAST.register(fkl.AddOp, fkl.SubOp, fkl.MulOp, fkl.MaxOp, fkl.MinOp)
def _binary_f16_fast(op: fkl.BinaryValueOp, src: str, c: str) -> tuple[str, str]:
    return f"{struct(type(op))}::exec({src}, fkl::f32_of_f16_fast({_pick(op, c)}, fast))", f"{op.name}: {op.FORMULA}"


@ELEMENT.register(fkl.CastLikeOp)
def _cast(op: fkl.CastLikeOp, src: str, c: str) -> tuple[str, str]:
    return f"{struct(type(op))}<{CPP_TYPE[image_of(op.result.type).dtype]}>::exec({src})", op.name


@ELEMENT.register(fkl.SaturateOp)
def _saturate(op: fkl.SaturateOp, src: str, c: str) -> tuple[str, str]:
    # The slot holds every channel's lower bound, then every channel's upper bound.
    hi = f"fkl::pick({values_of(op)}, {_channels_in(op)} + {c})"
    return f"fkl::Saturate::exec({src}, {_pick(op, c)}, {hi})", f"{op.name}: clamp to [lo, hi]"


def unary_rule(formula: str) -> Callable[[Operation, str, str], tuple[str, str]]:
    """The element rule of an op without values: `fkl::Foo::exec(x)`, commented with its `formula`."""

    def rule(op: Operation, src: str, c: str) -> tuple[str, str]:
        return f"{struct(type(op))}::exec({src})", f"{op.name}: {formula}"

    return rule


ELEMENT.register(fkl.SaturateFloatOp)(unary_rule("clamp to [0, 1]"))
ELEMENT.register(fkl.IsEvenOp)(unary_rule("x mod 2 == 0"))


@ELEMENT.register(fkl.MathUnaryOp)
def _math_unary(op: fkl.MathUnaryOp, src: str, c: str) -> tuple[str, str]:
    # Every element-wise math op (its family; fkl.MathValueOp ones are BinaryValueOp's) states its
    # formula in its declaration, so that a new one needs no rule of its own.
    return unary_rule(op.FORMULA)(op, src, c)


@ELEMENT.register(fkl.StaticLoopOp)
def _static_loop(op: fkl.StaticLoopOp, src: str, c: str) -> tuple[str, str]:
    body, count = op.body.data, op.count.data
    loop = f"fkl::StaticLoop<{word_struct(body)}, {count}>"
    return f"{loop}::exec({src}, {_pick(op, c)})", f"{op.name}: {body} applied {count} times"


# ---------------------------------------------------------------------------------------------
# Whole pixels
# ---------------------------------------------------------------------------------------------


@PIXEL.register_trait(fkl.ChannelWise)
def _per_channel(op: Operation, src: str, dst: str) -> list[str]:
    expr, _ = ELEMENT.emit(op, f"{src}[c]", "c")
    return [f"for (int c = 0; c < {_channels_in(op)}; ++c) {dst}[c] = {expr};"]


@PIXEL.register(fkl.DivOp)
def _divide_pixel(op: fkl.BinaryValueOp, src: str, dst: str) -> list[str]:
    """A float32 division of a whole pixel with one range check for all its channels: the fast path
    of fkl::Div is a few instructions, fewer than a branch per channel would add. The host
    checked the divisors' range once (`<slot>_fast`)."""
    if not is_float_division(op):
        return _per_channel(op, src, dst)
    slot, channels, divisor = slot_of(op), _channels_in(op), _pick(op, "c")
    fast = fast_division(op, f"{src}[c]", "c")
    return [
        "{",
        f"    bool fast = p.{slot}_fast != 0;",
        f"    for (int c = 0; c < {channels}; ++c) fast = fast & fkl::Div::fast_dividend({src}[c]);",
        "    if (fast) {",
        f"        for (int c = 0; c < {channels}; ++c) {dst}[c] = {fast};",
        "    } else {",
        f"        for (int c = 0; c < {channels}; ++c) {dst}[c] = fkl::Div::exec({src}[c], {divisor});",
        "    }",
        "}",
    ]


@PIXEL.register(fkl.VectorAndOp)
def _vector_and(op: fkl.VectorAndOp, src: str, dst: str) -> list[str]:
    return [f"{dst}[0] = fkl::VectorAnd::exec<{_channels_in(op)}>({src});"]


@PIXEL.register(fkl.VectorReduceOp)
def _vector_reduce(op: fkl.WordOp, src: str, dst: str) -> list[str]:
    return [f"{dst}[0] = fkl::VectorReduce<{word_struct(op.word.data)}>::exec<{_channels_in(op)}>({src});"]


@PIXEL.register(fkl.DiscardOp)
def _discard(op: fkl.DiscardOp, src: str, dst: str) -> list[str]:
    return [f"fkl::Discard::exec<{op.keep.data}>({src}, {dst});"]


@PIXEL.register(fkl.AddLastOp)
def _add_last(op: fkl.AddLastOp, src: str, dst: str) -> list[str]:
    return [f"fkl::AddLast::exec<{_channels_in(op)}>({src}, p.{slot_of(op)}[0], {dst});"]


@PIXEL.register(fkl.VectorReorderOp)
def _vector_reorder(op: fkl.VectorReorderOp, src: str, dst: str) -> list[str]:
    return [f"fkl::VectorReorder<{', '.join(map(str, op.indices))}>::exec({src}, {dst});"]


@PIXEL.register(fkl.VectorReorderRTOp)
def _vector_reorder_rt(op: fkl.VectorReorderRTOp, src: str, dst: str) -> list[str]:
    sizes = f"{_channels_in(op)}, {_channels_out(op)}"
    return [f"fkl::VectorReorderRT::exec<{sizes}>({src}, p.{slot_of(op)}, {dst});"]


@PIXEL.register(fkl.MxVFloat3Op)
def _mxv_float3(op: fkl.MxVFloat3Op, src: str, dst: str) -> list[str]:
    return [f"fkl::MxVFloat3::exec({values_of(op)}, {src}, {dst});"]


@PIXEL.register(fkl.ColorConversionOp)
def _color_conversion(op: fkl.WordOp, src: str, dst: str) -> list[str]:
    code = fkl.COLOR_CODES[op.word.data]
    if code.red_index is not None:
        return [f"fkl::ColorConversion::gray<{code.red_index}>({src}, {dst});"]
    alpha = "true" if code.add_alpha else "false"
    order = ", ".join(map(str, code.order))
    return [f"fkl::ColorConversion::reorder<{alpha}, {order}>({src}, {dst});"]


# ---------------------------------------------------------------------------------------------
# The joins of a DAG's branches (SPEC §8): two pixels of one type, element by element
# ---------------------------------------------------------------------------------------------


@JOIN.register(fkl.JoinOp)
def _join(op: fkl.JoinOp, operands: Sequence[str], dst: str) -> list[str]:
    a, b = operands
    return [f"for (int c = 0; c < {_channels_in(op)}; ++c) {dst}[c] = fkl::{op.struct}::exec({a}[c], {b}[c]);"]


@JOIN.register(fkl.BlendOp)
def _blend(op: fkl.BlendOp, operands: Sequence[str], dst: str) -> list[str]:
    a, b = operands
    return [
        f"for (int c = 0; c < {_channels_in(op)}; ++c) {dst}[c] = fkl::Blend::exec({a}[c], {b}[c], p.{slot_of(op)}[0]);"
    ]


@JOIN.register(fkl.CompositeOp)
def _composite(op: fkl.CompositeOp, operands: Sequence[str], dst: str) -> list[str]:
    a, b, mask = operands
    weight = f"{mask}[0]" if image_of(op.mask.type).channels.data == 1 else f"{mask}[c]"
    return [f"for (int c = 0; c < {_channels_in(op)}; ++c) {dst}[c] = fkl::Composite::exec({a}[c], {b}[c], {weight});"]


@TITLE.register(fkl.JoinOp)
def _join_title(op: fkl.JoinOp) -> str:
    return f"{op.name} {op.kind.data}"


# ---------------------------------------------------------------------------------------------
# Pixel block titles
# ---------------------------------------------------------------------------------------------


def title(op: Operation) -> str:
    """The comment above op's pixel block."""
    rule = TITLE.find(type(op))
    return op.name if rule is None else rule(op)


@TITLE.register(fkl.BinaryValueOp)
def _binary_title(op: fkl.BinaryValueOp) -> str:
    return f"{op.name}: {op.FORMULA}"


@TITLE.register(fkl.VectorReduceOp, fkl.ColorConversionOp)
def _word_title(op: fkl.WordOp) -> str:
    return f"{op.name} {op.word.data}"


@TITLE.register(fkl.DiscardOp)
def _discard_title(op: fkl.DiscardOp) -> str:
    return f"{op.name} keep {op.keep.data}"


@TITLE.register(fkl.StaticLoopOp)
def _static_loop_title(op: fkl.StaticLoopOp) -> str:
    return f"{op.name} {op.body.data} x {op.count.data}"


@TITLE.register(fkl.CastLikeOp)
def _cast_title(op: fkl.CastLikeOp) -> str:
    return f"{op.name} to {fkl.dtype_name(op.to)}"


# ---------------------------------------------------------------------------------------------
# User ops (fkl.op): the user's struct, its params read from the op's f64 slot and cast to their types
# ---------------------------------------------------------------------------------------------


def _user_params(op: fkl.UserOpBase) -> list[str]:
    # fkl::Cast: a C cast from double does not reach the half types, which are structs
    return [f"fkl::Cast<{CPP_TYPE[dtype]}>::exec(p.{slot_of(op)}[{i}])" for i, (_, dtype) in enumerate(op.params)]


@ELEMENT.register(fkl.UserOp)
def _user(op: fkl.UserOp, src: str, c: str) -> tuple[str, str]:
    return f"{op.struct.data}::exec({', '.join([src, *_user_params(op)])})", f"{op.name} {op.struct.data}"


@PIXEL.register(fkl.UserPixelOp)
def _user_pixel(op: fkl.UserPixelOp, src: str, dst: str) -> list[str]:
    sizes = f"{_channels_in(op)}, {_channels_out(op)}"
    return [f"{op.struct.data}::exec<{sizes}>({', '.join([src, dst, *_user_params(op)])});"]


@TITLE.register(fkl.UserOpBase)
def _user_title(op: fkl.UserOpBase) -> str:
    return f"{op.name} {op.struct.data}"
