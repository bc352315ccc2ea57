"""The op as one declaration: every `@math_op` class reaches every layer with no edit outside its
declaration, its C++ struct, its docs row and its catalogue entry (docs/ARCHITECTURE.md, "How to add
an op"); and each op's category comes from the trait it declares."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fklir as fkl
from fklir.backend.emit_geometry import STAGE
from fklir.backend.emit_rules import ELEMENT, PIXEL
from fklir.dialects import fkl as dialect
from fklir.dialects.word_declarations import WORD_DECLARATIONS, WordDeclaration
from fklir.frontend import ops as fops
from fklir.interpreters.fkl import IMPLS
from tests.op_catalogue import CATALOGUE

ROOT = Path(__file__).resolve().parents[2]
MATH_H = (ROOT / "fklir/backend/include/fkl/math.h").read_text()
OPS_MD = (ROOT / "docs/ops.md").read_text()


@pytest.mark.parametrize("op", dialect.MATH_OPS, ids=lambda op: op.name)
def test_a_math_declaration_reaches_every_layer(op: type[dialect.MathUnaryOp | dialect.MathValueOp]) -> None:
    name = op.__name__.removesuffix("Op")
    assert op in dialect.FKL.operations and getattr(dialect, op.__name__) is op
    assert op.has_trait(dialect.ChannelWise) and issubclass(op, dialect.CHANNELWISE_OPS)
    descriptor = getattr(fkl, name)
    assert name in fkl.__all__ and name in dir(fkl)
    assert descriptor is fops.MATH_DESCRIPTORS[name] and descriptor.IR_OP is op
    assert descriptor.__doc__ == op.__doc__
    assert IMPLS.get(op) is not None, "the reference interpreter runs it"
    assert ELEMENT.find(op) is not None and PIXEL.find(op) is not None, "the emitter writes it"
    assert re.search(rf"^struct {name} \{{", MATH_H, re.M), f"fkl/math.h has no struct {name}"
    assert f"| `{name}(" in OPS_MD, f"docs/ops.md has no row for {name}"
    assert name in {entry.name for entry in CATALOGUE}, "tests/op_catalogue.py has no entry"


@pytest.mark.parametrize("declared", WORD_DECLARATIONS, ids=lambda declared: declared.name)
def test_a_word_declaration_reaches_every_layer(declared: WordDeclaration) -> None:
    """A word op is its record (dialects/word_declarations.py), its numpy semantics, its C++ (a struct and a
    stage or PIXEL rule) and its docs row: the dialect class, its category and type rule, the descriptor, its
    signature and default, and fklir's public name come from the record."""
    import inspect

    op = getattr(dialect, f"{declared.name}Op")
    assert op in dialect.FKL.operations and op.name == declared.ir_name and op.__doc__ == declared.doc
    assert op.has_trait(dialect.Geometry if declared.geometry else dialect.PixelWise)
    assert op.CHOICES == declared.choices and op.WHAT == declared.word
    descriptor = getattr(fkl, declared.name)
    assert declared.name in fkl.__all__ and descriptor is fops.PUBLIC_DESCRIPTORS[declared.name]
    assert descriptor.IR_OP is op and descriptor.__doc__ == declared.doc
    assert issubclass(descriptor, fops.Geometry) == declared.geometry
    (parameter,) = inspect.signature(descriptor).parameters.values()
    assert parameter.name == (declared.parameter or declared.word)
    assert parameter.default == (inspect.Parameter.empty if declared.default is None else declared.default)
    made = descriptor(declared.choices[-1])
    assert descriptor.FIELDS == (declared.word,) and getattr(made, declared.word) == declared.choices[-1]
    assert IMPLS.get(op) is not None, "the reference interpreter runs it"
    rules = STAGE if declared.geometry else PIXEL
    assert rules.find(op) is not None, "the emitter writes it"
    headers = "".join(path.read_text() for path in (ROOT / "fklir/backend/include/fkl").glob("*.h"))
    assert re.search(rf"^struct {declared.name} \{{", headers, re.M), f"no fkl header has struct {declared.name}"
    assert f"`{declared.name}(" in OPS_MD, f"docs/ops.md does not show {declared.name}"


def test_a_word_op_takes_its_type_rule_and_sizes_from_its_record() -> None:
    """The records' type rules on the IR, and a geometry word's output sizes in the frontend (a quarter turn is
    the one transposing word)."""
    from xdsl.ir import Block
    from xdsl.utils.exceptions import VerifyException

    def result(ir_op: type, word: str, dtype: str, channels: int) -> dialect.ImageType:
        image = dialect.ImageType(dtype, channels)
        return ir_op(Block(arg_types=[image]).args[0], word).result_for(image)

    assert result(dialect.FlipOp, "both", "bool", 3) == dialect.ImageType("bool", 3)
    assert result(dialect.DeinterlaceOp, "linear", "uint16", 2) == dialect.ImageType("float32", 2)
    assert result(dialect.VectorReduceOp, "max", "int8", 4) == dialect.ImageType("int8", 1)
    assert result(dialect.ColorConversionOp, "BGR2RGBA", "uint8", 3) == dialect.ImageType("uint8", 4)
    for ir_op, word, channels in [(dialect.DeinterlaceOp, "blend", 3), (dialect.VectorReduceOp, "add", 3)]:
        with pytest.raises(VerifyException, match="on a bool chain"):
            result(ir_op, word, "bool", channels)
    with pytest.raises(VerifyException, match="RGB2GRAY needs 3 channels, the chain has 4"):
        result(dialect.ColorConversionOp, "RGB2GRAY", "uint8", 4)
    sizes = [(33, 17), (5, 8)]
    assert fkl.Rotate("clockwise_90").out_sizes(sizes) == [(17, 33), (8, 5)]
    assert fkl.Rotate(2).out_sizes(sizes) == [(17, 33), (8, 5)]
    assert fkl.Rotate("turn_180").out_sizes(sizes) == sizes and fkl.Flip(-1).out_sizes(sizes) == sizes
    assert fkl.Deinterlace("linear").out_sizes(sizes) == sizes


def test_a_word_descriptor_takes_one_argument() -> None:
    assert fkl.Flip().mode == "horizontal" and fkl.Flip(mode=0).mode == "vertical"
    assert fkl.VectorReduce(op="Max").reduction == "max"
    with pytest.raises(TypeError, match=r"Rotate\(\) missing its argument 'code'"):
        fkl.Rotate()
    with pytest.raises(TypeError, match=r"Flip\(\) takes one argument, mode; got 1, 2"):
        fkl.Flip(1, 2)
    with pytest.raises(TypeError, match=r"Flip\(\) takes one argument, mode; got code=1"):
        fkl.Flip(code=1)


def test_a_value_op_takes_values_and_a_unary_op_none() -> None:
    for op in dialect.MATH_OPS:
        descriptor = fops.MATH_DESCRIPTORS[op.__name__.removesuffix("Op")]
        if issubclass(op, dialect.MathValueOp):
            assert descriptor(2.5).values == (2.5,)  # type: ignore[call-arg]
        else:
            assert descriptor() is not None
            with pytest.raises(TypeError):
                descriptor(2.5)  # type: ignore[call-arg]


def test_categories_are_read_from_traits() -> None:
    traits = (dialect.ChannelWise, dialect.PixelWise, dialect.Geometry, dialect.Join)
    for op in dialect.FKL.operations:
        declared = [t for t in traits if op.has_trait(t)]
        assert len(declared) <= 1, f"{op.name} declares {declared}"
        assert (op in dialect.CHANNELWISE_OPS) == op.has_trait(dialect.ChannelWise)
        assert (op in dialect.PIXEL_OPS) == op.has_trait(dialect.PixelWise)
        assert (op in dialect.GEOMETRY_OPS) == op.has_trait(dialect.Geometry)
        assert (op in dialect.JOIN_OPS) == op.has_trait(dialect.Join)
        in_chain = op in dialect.CHAIN_OPS
        assert in_chain == (bool(declared) or op.has_trait(dialect.Memory)), op.name
    assert dialect.AddOp in dialect.CHANNELWISE_OPS and dialect.ColorConversionOp in dialect.PIXEL_OPS
    assert dialect.CropOp in dialect.GEOMETRY_OPS and dialect.ReadOp not in dialect.GEOMETRY_OPS


def test_a_non_geometry_op_in_a_read_region_is_refused_by_its_trait() -> None:
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(VerifyException, match=r"sample region holds only geometry ops, not 'fkl\.mul'"):
        _read_with_a_mul_in_its_region().verify()


def _read_with_a_mul_in_its_region() -> dialect.ReadOp:
    from xdsl.ir import Block, Region

    image = dialect.ImageType("float32", 3)
    block = Block(arg_types=[image])
    mul = dialect.MulOp(block.args[0], (2.0,), image)
    block.add_ops([mul, dialect.YieldOp(mul.result)])
    return dialect.ReadOp("src", image, sample=Region(block))


def test_every_public_descriptor_is_exported_and_seen_by_type_checkers() -> None:
    """fklir exports each descriptor frontend/ops.py defines (PUBLIC_DESCRIPTORS: no list to keep by hand), and
    its TYPE_CHECKING imports, which static checkers and IDEs read, name each core one (the math ops, derived at
    import, are not visible to them)."""
    import ast

    for name, descriptor in fops.PUBLIC_DESCRIPTORS.items():
        assert name in fkl.__all__ and name in dir(fkl) and getattr(fkl, name) is descriptor
    source = (ROOT / "fklir/__init__.py").read_text()
    (block,) = [
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"
    ]
    typed = {
        alias.asname or alias.name
        for node in ast.walk(block)
        if isinstance(node, ast.ImportFrom) and node.module == "fklir.frontend.ops"
        for alias in node.names
    }
    assert typed <= set(fops.PUBLIC_DESCRIPTORS)
    assert set(fops.PUBLIC_DESCRIPTORS) - typed == set(fops.MATH_DESCRIPTORS)
    with pytest.raises(AttributeError, match="module 'fklir' has no attribute 'Blur'"):
        fkl.Blur  # pyright: ignore[reportAttributeAccessIssue]


@pytest.mark.parametrize(
    ("descriptor", "ir_op", "word"),
    [
        (fkl.Flip, dialect.FlipOp, "sideways"),
        (fkl.Rotate, dialect.RotateOp, "clockwise"),
        (fkl.Deinterlace, dialect.DeinterlaceOp, "bob"),
        (fkl.VectorReduce, dialect.VectorReduceOp, "sum"),
        (fkl.ColorConversion, dialect.ColorConversionOp, "RGB2HSV"),
    ],
)
def test_a_word_check_lives_in_one_place_with_one_wording(descriptor: type, ir_op: type, word: str) -> None:
    """The frontend and the dialect's verifier refuse a word by one rule (value_rules.one_of): the same words,
    the frontend naming its other spellings (cv2's constants) after the list."""
    from xdsl.ir import Block
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(ValueError, match=r"must be one of") as frontend:
        descriptor(word)
    image = dialect.ImageType("uint8", 3)
    with pytest.raises(VerifyException) as verifier:
        ir_op(Block(arg_types=[image]).args[0], word, image).verify()
    said = re.sub(r"^'fkl\.\w+' ", "", str(verifier.value))
    head, tail = said.split(", got ")
    assert str(frontend.value).startswith(f"{descriptor.__name__}: {head}")
    assert str(frontend.value).endswith(f", got {tail}") and tail == repr(word)


ONE_ARGUMENT = [
    # descriptor, its IR class, the field, a value, its structure (less the name), is a runtime value
    (fkl.Discard, dialect.DiscardOp, "keep_n", (2,), (("keep_n", 2),), False),
    (fkl.AddLast, dialect.AddLastOp, "value", (7,), (), True),
    (fkl.VectorReorder, dialect.VectorReorderOp, "indices", (2, 1, 0), (("indices", (2, 1, 0)),), False),
    (fkl.VectorReorderRT, dialect.VectorReorderRTOp, "indices", (2, 1, 0), (3,), True),
    (fkl.MxVFloat3, dialect.MxVFloat3Op, "matrix", ([[1, 2, 3], [4, 5, 6], [7, 8, 9]],), (), True),
]


@pytest.mark.parametrize(("descriptor", "ir_op", "field", "given", "structure", "runtime"), ONE_ARGUMENT)
def test_a_one_argument_descriptor_is_derived_from_its_ir_class(
    descriptor: type, ir_op: type, field: str, given: tuple[object, ...], structure: tuple[object, ...], runtime: bool
) -> None:
    """Discard, AddLast, VectorReorder(RT) and MxVFloat3 are their IRDL class alone: the descriptor is named and
    documented by it, takes its one argument (by name too, unless it is the variadic indices) and lowers to it;
    a runtime value stays out of the plan's structure."""
    import inspect

    from xdsl.builder import Builder
    from xdsl.ir import Block
    from xdsl.rewriter import InsertPoint

    assert descriptor.__name__ == ir_op.__name__.removesuffix("Op") and descriptor.__doc__ == ir_op.__doc__
    assert list(inspect.signature(descriptor).parameters) == [field]
    op = descriptor(*given)
    assert op.structure() == ((descriptor.__name__, *structure) if runtime else op.description())
    assert type(op).RUNTIME_VALUES is runtime and repr(op).startswith(f"{descriptor.__name__}({field}=")
    if field != "indices":
        assert getattr(descriptor(**{field: given[0]}), field) == getattr(op, field)
    block = Block(arg_types=[dialect.ImageType("float32", 3)])
    lowered = op.lower(Builder(InsertPoint.at_end(block)), block.args[0]).owner
    assert type(lowered) is ir_op
    lowered.verify()


@pytest.mark.parametrize(
    ("descriptor", "ir_op", "given", "rule"),
    [
        (fkl.Discard, dialect.DiscardOp, 5, "channel count must be from 1 to 4, got 5"),
        (fkl.VectorReorder, dialect.VectorReorderOp, [0, 1, 2, 3, 0], "takes 1 to 4 channel indices, got 5"),
        (fkl.VectorReorderRT, dialect.VectorReorderRTOp, [0, 7], "channel indices [7] are out of range for "),
    ],
)
def test_a_one_argument_check_lives_in_one_place_with_one_wording(
    descriptor: type, ir_op: type, given: object, rule: str
) -> None:
    """The descriptor and the verifier refuse by one rule of value_rules, in its words."""
    from xdsl.ir import Block
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(ValueError, match=re.escape(rule)) as frontend:
        descriptor(given)
    image = dialect.ImageType("float32", 3)
    with pytest.raises(VerifyException) as verifier:
        ir_op(Block(arg_types=[image]).args[0], given, image).verify()
    assert str(frontend.value).startswith(f"{descriptor.__name__}: {rule}")
    assert str(verifier.value).startswith(f"'{ir_op.name}' {rule}")


def _ir(make: Any) -> Any:
    """`make(x)` on a float32 x 3 image value: the IR op whose verifier a test runs."""
    from xdsl.ir import Block

    return lambda: make(Block(arg_types=[dialect.ImageType("float32", 3)]).args[0]).verify()


@pytest.mark.parametrize(
    ("frontend", "verifier", "rule"),
    [
        (
            lambda: fkl.Resize(0, 4),
            _ir(lambda x: dialect.ResizeOp(x, [0, 4])),
            "size must be [w, h] with positive values, got [0, 4]",
        ),
        (
            lambda: fkl.Warping(np.eye(3), 8, 2**31),
            _ir(lambda x: dialect.WarpOp(x, "perspective", list(np.eye(3).flat), [8, 2**31])),
            "size [8, 2147483648]: h = 2147483648 exceeds the limit 2147483647",
        ),
        (
            lambda: fkl.StaticLoop(fkl.Mul(2.0), 0),
            _ir(lambda x: dialect.StaticLoopOp(x, "mul", [2.0], 0)),
            "applies its op n >= 1 times, got 0",
        ),
        (
            lambda: fkl.Saturate((0, 0), (1, 1, 1)),
            _ir(lambda x: dialect.SaturateOp(x, ((0, 0), (1, 1, 1)))),
            "needs lower and upper bounds of one length (or one value), got [0.0, 0.0] and [1.0, 1.0, 1.0]",
        ),
        (
            lambda: fkl.MxVFloat3([1, 2, 3, 4]),
            _ir(lambda x: dialect.MxVFloat3Op(x, [1, 2, 3, 4])),
            "needs a 3x3 matrix, got 4 numbers",
        ),
        (
            lambda: fkl.Warping([[1, 0, np.inf], [0, 1, 0]], 8, 8),
            _ir(lambda x: dialect.WarpOp(x, "affine", [1, 0, np.inf, 0, 1, 0], [8, 8])),
            "matrix must be finite, got [1.0, 0.0, inf, 0.0, 1.0, 0.0]",
        ),
        (
            lambda: fkl.Blend(fkl.Input(1), float("nan")),
            _ir(lambda x: dialect.BlendOp(x, x, float("nan"))),
            "takes one alpha, a number (not NaN), got [nan]",
        ),
    ],
)
def test_a_value_check_lives_in_one_place_with_one_wording(frontend: Any, verifier: Any, rule: str) -> None:
    """Output sizes, a loop's count, a clamp's bounds, matrices and a blend's alpha: the descriptor and the
    verifier (or the IR op's constructor) refuse by one rule of value_rules, in its words."""
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(ValueError, match=re.escape(rule)):
        frontend()
    with pytest.raises(VerifyException, match=re.escape(rule)):
        verifier()


DECLARED = [
    # descriptor, its IR class, its signature, arguments, the plan's structure of them (less the name)
    (fkl.Resize, dialect.ResizeOp, "(w, h, interp='linear', aspect_ratio='ignore', background=None)",
     (33, 17), ("linear", "ignore")),
    (fkl.Resize, dialect.ResizeOp, "(w, h, interp='linear', aspect_ratio='ignore', background=None)",
     (33, 17, 0, "preserve_even", (1, 2, 3)), ("nearest", "preserve_even")),
    (fkl.BorderReader, dialect.BorderOp, "(mode, value=0.0)", (4, -2.5), ("reflect101",)),
    (fkl.BorderReader, dialect.BorderOp, "(mode, value=0.0)", ("constant", fkl.per_image([[1], [2]])),
     ("constant", "per_image")),
    (fkl.Warping, dialect.WarpOp, "(M, w, h, inverse=False)", ([[2, 0, 1], [0, 3, 2]], 31, 9), ("affine",)),
    (fkl.Warping, dialect.WarpOp, "(M, w, h, inverse=False)", (np.eye(3), 31, 9, True), ("perspective",)),
    (fkl.Saturate, dialect.SaturateOp, "(lo, hi)", ((0, 1, 2), 200), ()),
    (fkl.Saturate, dialect.SaturateOp, "(lo, hi)", (fkl.per_image([[0], [1]]), 200), ("per_image",)),
    (fkl.StaticLoop, dialect.StaticLoopOp, "(op, n)", (fkl.Max((1, 2, 3)), 3), (("Max",), 3)),
]  # fmt: skip


@pytest.mark.parametrize(("descriptor", "ir_op", "signature", "given", "structure"), DECLARED)
def test_a_declared_descriptor_is_its_fields(
    descriptor: type, ir_op: type, signature: str, given: tuple[object, ...], structure: tuple[object, ...]
) -> None:
    """Resize, BorderReader, Warping, Saturate and StaticLoop are their fields (fops.Field, each read by its kind): the
    signature, positional and named arguments alike, a plan's structure without the runtime values (the key of
    those the same for equal values) and a lowering that verifies."""
    import inspect

    from xdsl.builder import Builder
    from xdsl.ir import Block
    from xdsl.rewriter import InsertPoint

    assert str(inspect.signature(descriptor)) == signature
    names = list(inspect.signature(descriptor).parameters)
    op = descriptor(*given)
    by_name = descriptor(**dict(zip(names, given, strict=False)))
    assert op.description() == by_name.description() and op.FIELDS == tuple(f.name for f in descriptor.DECLARED)
    assert op.structure() == (descriptor.__name__, *structure)
    assert op.value_key() == by_name.value_key() and (op.value_key() is None) == (op.per_image() is not None)
    assert repr(op).startswith(f"{descriptor.__name__}({op.FIELDS[0]}=")
    block = Block(arg_types=[dialect.ImageType("uint8", 3)])
    lowered = op.lower_plane(Builder(InsertPoint.at_end(block)), block.args[0], range(2)).owner
    assert type(lowered) is ir_op and (op.per_image() is not None) == (getattr(lowered, "per_plane", None) is not None)
    if op.per_image() is None:  # per-plane rows verify against the planes that type inference gives
        lowered.verify()


def test_a_declared_descriptors_values_are_runtime_values_and_its_words_structure() -> None:
    """A new size, background, matrix or bound changes the value key, never the structure; a new
    interpolation, border mode or warp kind changes the structure."""
    pairs = [
        (fkl.Resize(33, 17), fkl.Resize(64, 8)),
        (fkl.Resize(9, 9, 1, "preserve", 0.0), fkl.Resize(9, 9, 1, "preserve", -0.0)),
        (fkl.BorderReader("constant", 1), fkl.BorderReader("constant", 2)),
        (fkl.Warping([[1, 0, 0], [0, 1, 0]], 5, 5), fkl.Warping([[1, 0, 0], [0, 1, 0]], 5, 5, inverse=True)),
        (fkl.Saturate(0, 1), fkl.Saturate(0, 2)),
        (fkl.StaticLoop(fkl.Add(1), 2), fkl.StaticLoop(fkl.Add(3), 2)),
    ]
    for a, b in pairs:
        assert a.structure() == b.structure() and a.value_key() != b.value_key(), (a, b)
    for a, b in [
        (fkl.Resize(33, 17), fkl.Resize(33, 17, "nearest")),
        (fkl.BorderReader("reflect"), fkl.BorderReader("wrap")),
        (fkl.Warping(np.eye(3)[:2], 5, 5), fkl.Warping(np.eye(3), 5, 5)),
        (fkl.StaticLoop(fkl.Add(1), 2), fkl.StaticLoop(fkl.Add(1), 3)),
        (fkl.StaticLoop(fkl.Add(1), 2), fkl.StaticLoop(fkl.Sub(1), 2)),
    ]:
        assert a.structure() != b.structure(), (a, b)
    assert fkl.BorderReader("reflect", 5).values is None  # only a constant border has a value


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: fkl.Resize(8, 8, background=1.0), ValueError, "Resize: background is used only with a preserve"),
        (lambda: fkl.Resize(8, 8, aspect_ratio="preserve"), ValueError, "needs a background value"),
        (lambda: fkl.Resize(8), TypeError, "Resize.__init__() missing 1 required positional argument: 'h'"),
        (lambda: fkl.Warping([[0, 0, 0], [0, 0, 0]], 8, 8), ValueError, "Warping: "),
        (lambda: fkl.Saturate(fkl.per_image([[0]]), fkl.per_image([[1], [2]])), ValueError, "1 rows of lo and 2"),
        (lambda: fkl.Saturate(2, 1), ValueError, "Saturate: "),
        (lambda: fkl.BorderReader("mirror"), ValueError, "BorderReader: mode must be one of"),
        (lambda: fkl.StaticLoop(fkl.Cast("float32"), 2), TypeError, "StaticLoop: the op must be Add, Sub"),
        (lambda: fkl.StaticLoop(fkl.Add(fkl.per_image([[1], [2]])), 2), ValueError, "StaticLoop: a loop body"),
    ],
)
def test_a_declared_descriptor_refuses_in_its_name(make: Any, error: type[Exception], words: str) -> None:
    """A rule between fields (Declared.check) and Python's own argument errors name the op."""
    with pytest.raises(error, match=re.escape(words)):
        make()


def test_a_subclass_with_a_field_of_its_own_makes_its_own_methods() -> None:
    """The methods a declared class writes on its first instance are its own: a subclass that adds a field,
    made after its base was used, reads, describes and keys that field too."""
    fkl.Warping(np.eye(3), 4, 4)  # the base's methods are made

    class Warped(fkl.Warping):
        tiled = fops.Field(fops._Flag("tiled"), default=False)  # pyright: ignore[reportPrivateUsage]

    op = Warped(np.eye(3), 4, 4, tiled=True)
    assert op.tiled is True and op.FIELDS == ("matrix", "size", "inverse", "tiled")
    assert op.value_key()[-1] is True and op.structure() == (Warped.__qualname__, "perspective")
    assert fkl.Warping(np.eye(3), 4, 4).value_key()[-1] is False  # the base keeps its own
    with pytest.raises(TypeError, match="tiled must be True or False"):
        Warped(np.eye(3), 4, 4, tiled=3)
