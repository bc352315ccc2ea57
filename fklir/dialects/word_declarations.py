"""The ops that take one word from a list (Flip, Rotate, Deinterlace, VectorReduce, ColorConversion), each one
record: its whole declaration.

The dialect makes each record's IRDL class (`fkl.FlipOp`, a WordOp, in fkl/ops_word.py) with its category
and type rule, and the frontend its descriptor (`fkl.Flip`) with its field, parameter, default and output
sizes; both check the word against `choices` in one wording (value_rules.one_of). This module imports nothing
of xDSL (a fresh process that composes a known chain does not load the dialect).
"""

from typing import NamedTuple

from fklir.dialects.color_codes import COLOR_CODES
from fklir.dialects.constants import DEINTERLACE_MODES, FLIP_MODES, REDUCTIONS, ROTATIONS


class WordDeclaration(NamedTuple):
    """`name` is the descriptor's name (the IR class is `<name>Op`), `ir_name` the op's, `doc` both's docstring.

    `word` names the word: the descriptor's field and the errors' word; `parameter` the descriptor's argument
    where it differs. `choices` are the words the IR takes; `spelling` names the frontend/values.py function
    that reads what a user may write instead (cv2's constants), "" for the words alone. `geometry`: the op folds
    into the read (its C++ a stage of emit_geometry.STAGE), else it computes per pixel (a PIXEL rule).
    `result` is its type rule: "same", "float32" or "one_channel" (the element type or the channels it
    makes), or "colour" (the code's channels, fklir/dialects/color_codes.py); `bool_verb`, where a bool chain
    is refused, says what the op does to it. A geometry op keeps the size, but for the words in `transposing`,
    whose output is (height, width). `default`: the word when the descriptor is given none."""

    name: str
    ir_name: str
    doc: str
    word: str
    choices: tuple[str, ...]
    geometry: bool
    result: str = "same"
    bool_verb: str = ""
    spelling: str = ""
    default: str | None = None
    parameter: str = ""
    transposing: tuple[str, ...] = ()


WORD_DECLARATIONS = (
    WordDeclaration(
        "Flip",
        "fkl.flip",
        'Flip: cv2.flip(x, flipCode): "vertical" (0) reverses the rows, "horizontal" (1) the columns, "both" '
        "(-1) both; same size and type, folded into the read. `fkl.flip %x, horizontal : !fkl.image<?x?x3xui8>`",
        "mode",
        FLIP_MODES,
        geometry=True,
        spelling="flip_mode",
        default="horizontal",
    ),
    WordDeclaration(
        "Rotate",
        "fkl.rotate",
        'Rotate: cv2.rotate(x, code): "clockwise_90" (cv2.ROTATE_90_CLOCKWISE), "turn_180" (cv2.ROTATE_180) or '
        '"counterclockwise_90" (cv2.ROTATE_90_COUNTERCLOCKWISE); a quarter turn swaps width and height; same '
        "type, folded into the read. `fkl.rotate %x, clockwise_90 : !fkl.image<?x?x3xui8>`",
        "code",
        ROTATIONS,
        geometry=True,
        spelling="rotation",
        transposing=("clockwise_90", "counterclockwise_90"),
    ),
    WordDeclaration(
        "Deinterlace",
        "fkl.deinterlace",
        'Deinterlace: "blend": row y > 0 -> (row y + row y-1) / 2, row 0 copied; "linear": odd rows -> (row '
        "above + row below) / 2 (the last odd row copies the row above), even rows copied. Output float32, same "
        "size. `fkl.deinterlace %x, blend : !fkl.image<?x?x3xui8> -> !fkl.image<?x?x3xf32>`",
        "mode",
        DEINTERLACE_MODES,
        geometry=True,
        result="float32",
        bool_verb="averages rows",
        default="blend",
    ),
    WordDeclaration(
        "VectorReduce",
        "fkl.vector_reduce",
        'VectorReduce: left fold over the channels with "Add", "Mul", "Max" or "Min" (in any case), each step in '
        "the chain type -> 1 channel. `fkl.vector_reduce %x, add : !fkl.image<?x?x3xf32> -> "
        "!fkl.image<?x?x1xf32>`",
        "reduction",
        REDUCTIONS,
        geometry=False,
        result="one_channel",
        bool_verb="reduces",
        spelling="reduction",
        parameter="op",
    ),
    WordDeclaration(
        "ColorConversion",
        "fkl.color_conversion",
        'ColorConversion: cv2.cvtColor(code) on each pixel: "RGB2GRAY", "COLOR_RGB2GRAY" or cv2.COLOR_RGB2GRAY; '
        "the element type is kept. Gray: (9798 R + 19235 G + 3735 B + 16384) >> 15 on integers, 0.299 R + "
        "0.587 G + 0.114 B on floats; an added alpha is 255 (ui8), 65535 (ui16), 1.0 (floats), the largest "
        "value (other integers). `fkl.color_conversion %x, RGB2GRAY : !fkl.image<?x?x3xui8> -> "
        "!fkl.image<?x?x1xui8>`",
        "code",
        tuple(COLOR_CODES),
        geometry=False,
        result="colour",
        bool_verb="computes gray",
        spelling="color_code",
    ),
)
