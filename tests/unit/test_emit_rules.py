"""The emitter's rules: every op that can sit in a kernel body has one, the flat path's condition agrees with
the dialect's channel-wise category, each struct a rule names exists in the op headers, and a lookup
finds the nearest rule of the op's class hierarchy or names the op that has none."""

from __future__ import annotations

import re

import pytest
from xdsl.ir import Operation
from xdsl.utils.test_value import create_ssa_value

from fklir.backend.build import INCLUDE_DIR
from fklir.backend.chains import WRITE_KIND
from fklir.backend.emit_geometry import SHARED, STAGE
from fklir.backend.emit_rules import ELEMENT, JOIN, PIXEL, OpRules, enumerator, struct, word_struct
from fklir.dialects import fkl

# Ops of the dialect that no rule emits: the kernel itself, the read (stage0 of every chain) and the
# terminator of the read's sample region.
STRUCTURAL = {fkl.KernelOp, fkl.ReadOp, fkl.YieldOp}
OPS = [op for op in fkl.FKL.operations if op not in STRUCTURAL]
HEADERS = "\n".join(path.read_text() for path in sorted(INCLUDE_DIR.glob("fkl/*.h")))


def _has_rule(op: type[Operation]) -> bool:
    return any(rules.find(op) is not None for rules in (PIXEL, STAGE, JOIN)) or op in WRITE_KIND


@pytest.mark.parametrize("op", OPS, ids=lambda op: op.name)
def test_every_op_of_a_kernel_body_has_an_emission_rule(op: type[Operation]) -> None:
    assert _has_rule(op), f"{op.__name__} has no emission rule: add one to fklir/backend/emit_rules.py"


def test_each_op_has_the_rule_of_its_category() -> None:
    for op in OPS:
        assert (PIXEL.find(op) is not None) == issubclass(op, fkl.COMPUTE_OPS), op.name
        assert (STAGE.find(op) is not None) == issubclass(op, fkl.GEOMETRY_OPS), op.name
        assert (op in WRITE_KIND) == issubclass(op, fkl.WRITE_OPS), op.name
        assert (JOIN.find(op) is not None) == issubclass(op, fkl.JOIN_OPS), op.name


def test_element_rules_are_exactly_the_channelwise_ops() -> None:
    """emit_compute.is_channelwise asks for element rules: the flat path takes what the dialect calls
    channel-wise."""
    with_element = {op for op in fkl.FKL.operations if ELEMENT.find(op) is not None}
    channelwise = {op for op in fkl.FKL.operations if issubclass(op, fkl.CHANNELWISE_OPS)}
    assert with_element == channelwise
    assert fkl.AddOp in with_element and fkl.SaturateCastOp in with_element
    assert fkl.VectorReduceOp not in with_element


# A user op's struct is the user's own C++ (fkl.op), not one of the op headers'.
@pytest.mark.parametrize(
    "op", [op for op in OPS if issubclass(op, fkl.COMPUTE_OPS) and op not in fkl.USER_OPS], ids=lambda op: op.name
)
def test_a_compute_ops_struct_is_in_the_op_headers(op: type[Operation]) -> None:
    name = struct(op).removeprefix("fkl::")
    assert re.search(rf"\bstruct {name}\b", HEADERS), f"no struct {name} for {op.name} in {INCLUDE_DIR}"


@pytest.mark.parametrize("word", sorted({*fkl.LOOP_BODIES, *fkl.REDUCTIONS}))
def test_a_loop_body_or_reduction_names_its_binary_ops_struct(word: str) -> None:
    expected = word.capitalize()
    assert word_struct(word) == f"fkl::{expected}"
    assert re.search(rf"\bstruct {expected} \{{", HEADERS)


@pytest.mark.parametrize(
    ("enum", "words"),
    [
        ("BorderMode", fkl.BORDER_MODES),
        ("AspectRatio", fkl.ASPECT_RATIOS),
        ("DeinterlaceMode", fkl.DEINTERLACE_MODES),
        ("FlipMode", fkl.FLIP_MODES),
        ("Rotation", fkl.ROTATIONS),
    ],
)
def test_each_word_of_an_option_names_an_enumerator_of_the_headers(enum: str, words: tuple[str, ...]) -> None:
    declared = re.search(rf"enum class {enum} {{([^}}]*)}};", HEADERS)
    assert declared, f"no enum class {enum} in {INCLUDE_DIR}"
    enumerators = [name.strip() for name in declared.group(1).split(",")]
    assert {enumerator(enum, word) for word in words} == {f"fkl::{enum}::{name}" for name in enumerators}
    assert enumerator("AspectRatio", "preserve_left") == "fkl::AspectRatio::PreserveLeft"


def test_only_resize_shares_values_per_plane() -> None:
    assert [op for op in fkl.FKL.operations if SHARED.find(op) is not None] == [fkl.ResizeOp]


def test_a_lookup_takes_the_nearest_rule_of_the_class_hierarchy() -> None:
    rules = OpRules[[str], str]("test emission")

    @rules.register(fkl.BinaryValueOp)
    def family(op: Operation, src: str) -> str:
        return f"family {op.name} {src}"

    @rules.register(fkl.DivOp)
    def own(op: Operation, src: str) -> str:
        return f"own {op.name} {src}"

    x = create_ssa_value(fkl.ImageType.unknown())
    assert rules.find(fkl.AddOp) is family and rules.find(fkl.MinOp) is family
    assert rules.find(fkl.DivOp) is own
    assert rules.emit(fkl.SubOp(x, [2.0]), "v0") == "family fkl.sub v0"
    assert rules.emit(fkl.DivOp(x, [2.0]), "v3") == "own fkl.div v3"
    assert rules.find(fkl.CastOp) is None
    with pytest.raises(ValueError, match=r"no test emission for 'fkl.cast'"):
        rules.emit(fkl.CastOp(x, "float32"), "v0")
    with pytest.raises(ValueError, match="DivOp already has a test emission rule"):
        rules.register(fkl.DivOp)(own)


def test_an_op_without_an_element_rule_is_named() -> None:
    x = create_ssa_value(fkl.ImageType.unknown())
    with pytest.raises(ValueError, match=r"no element-wise C\+\+ emission for 'fkl.vector_and'"):
        ELEMENT.emit(fkl.VectorAndOp(x), "v0", "c")
