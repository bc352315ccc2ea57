"""The word ops' IRDL classes (`fkl.flip %x, horizontal : T`), one per record of
fklir/dialects/word_declarations.py (each record is the op's whole declaration): its category trait (Geometry
or PixelWise) and its type rule come from the record."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from xdsl.irdl import traits_def
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from fklir.dialects.color_codes import COLOR_CODES
from fklir.dialects.fkl.abstract_ops import WordOp, fkl_op
from fklir.dialects.fkl.checks import check_not_bool
from fklir.dialects.fkl.traits import Geometry, PixelWise
from fklir.dialects.fkl.types import ImageType, reshaped
from fklir.dialects.word_declarations import WORD_DECLARATIONS, WordDeclaration


def _same(op: WordOp, in_type: ImageType) -> ImageType:
    return in_type


def _float32(op: WordOp, in_type: ImageType) -> ImageType:
    check_not_bool(op, in_type, op.BOOL_VERB)
    return reshaped(in_type, element="float32")


def _one_channel(op: WordOp, in_type: ImageType) -> ImageType:
    check_not_bool(op, in_type, op.BOOL_VERB)
    return reshaped(in_type, channels=1)


def _colour(op: WordOp, in_type: ImageType) -> ImageType:
    code, channels = COLOR_CODES[op.word.data], in_type.channels.data
    if channels != code.in_channels:
        raise VerifyException(f"'{op.name}' {op.word.data} needs {code.in_channels} channels, the chain has {channels}")
    if code.red_index is not None:
        check_not_bool(op, in_type, op.BOOL_VERB)
    return reshaped(in_type, channels=code.out_channels)


# A record's `result`: its type rule.
RESULT_RULES: dict[str, Callable[[WordOp, ImageType], ImageType]] = {
    "same": _same,
    "float32": _float32,
    "one_channel": _one_channel,
    "colour": _colour,
}


def _word_class(declared: WordDeclaration) -> type[WordOp]:
    rule = RESULT_RULES[declared.result]

    def result_for(self: WordOp, in_type: ImageType) -> ImageType:
        return rule(self, in_type)

    namespace = {
        "__module__": __name__,
        "__qualname__": f"{declared.name}Op",
        "__doc__": declared.doc,
        # IRDL takes a class's unannotated attributes for op fields: the constants are ClassVars
        "__annotations__": {"CHOICES": ClassVar[tuple[str, ...]], "WHAT": ClassVar[str], "BOOL_VERB": ClassVar[str]},
        "name": declared.ir_name,
        "traits": traits_def(Geometry() if declared.geometry else PixelWise(), Pure()),
        "CHOICES": declared.choices,
        "WHAT": declared.word,
        "BOOL_VERB": declared.bool_verb,
        "result_for": result_for,
    }
    return fkl_op(type(f"{declared.name}Op", (WordOp,), namespace))


FlipOp, RotateOp, DeinterlaceOp, VectorReduceOp, ColorConversionOp = (
    _word_class(declared) for declared in WORD_DECLARATIONS
)
