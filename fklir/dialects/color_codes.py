"""The ColorConversion codes fklir implements, with cv2.cvtColor's meaning (SPEC §3).

The one table of them: the dialect takes its accepted words and type rule from it and the reference
interpreter its numpy semantics, so both always agree on which codes exist and what each does. It imports
nothing, so the numpy semantics can use it without loading the dialect (and its record is a named tuple,
which a fresh process defines faster than a dataclass: the frontend reads the codes' names from here).
"""

from typing import Final, NamedTuple


class ColorCode(NamedTuple):
    """One cvtColor code: output channel k is input channel `order[k]` (then an opaque alpha if
    `add_alpha`), or, for the gray codes, the weighted sum with R at `red_index` (B at 2 - R)."""

    in_channels: int
    out_channels: int
    order: tuple[int, ...] = ()
    add_alpha: bool = False
    red_index: int | None = None


COLOR_CODES: Final[dict[str, ColorCode]] = {
    "RGB2BGR": ColorCode(3, 3, (2, 1, 0)),
    "BGR2RGB": ColorCode(3, 3, (2, 1, 0)),
    "RGB2RGBA": ColorCode(3, 4, (0, 1, 2), add_alpha=True),
    "BGR2BGRA": ColorCode(3, 4, (0, 1, 2), add_alpha=True),
    "RGBA2RGB": ColorCode(4, 3, (0, 1, 2)),
    "BGRA2BGR": ColorCode(4, 3, (0, 1, 2)),
    "RGB2BGRA": ColorCode(3, 4, (2, 1, 0), add_alpha=True),
    "BGR2RGBA": ColorCode(3, 4, (2, 1, 0), add_alpha=True),
    "RGBA2BGR": ColorCode(4, 3, (2, 1, 0)),
    "BGRA2RGB": ColorCode(4, 3, (2, 1, 0)),
    "RGBA2BGRA": ColorCode(4, 4, (2, 1, 0, 3)),
    "BGRA2RGBA": ColorCode(4, 4, (2, 1, 0, 3)),
    "RGB2GRAY": ColorCode(3, 1, red_index=0),
    "BGR2GRAY": ColorCode(3, 1, red_index=2),
    "RGBA2GRAY": ColorCode(4, 1, red_index=0),
    "BGRA2GRAY": ColorCode(4, 1, red_index=2),
    "GRAY2RGB": ColorCode(1, 3, (0, 0, 0)),
    "GRAY2BGR": ColorCode(1, 3, (0, 0, 0)),
}
