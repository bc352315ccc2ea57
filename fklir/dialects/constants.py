"""The words the fkl ops accept, and the warp matrix inversion: what the frontend checks a descriptor's
arguments against before any IR exists. It imports nothing of xDSL, so composing a known chain does not
load the dialect; the ops take their accepted words from here too, so the two always agree."""

from __future__ import annotations

import math

REDUCTIONS = ("add", "mul", "max", "min")
INTERPOLATIONS = ("linear", "nearest")
ASPECT_RATIOS = ("ignore", "preserve", "preserve_left", "preserve_even")
BORDER_MODES = ("constant", "replicate", "reflect", "reflect101", "wrap")
WARP_KINDS = {"affine": 6, "perspective": 9}  # kind -> the matrix's number count
DEINTERLACE_MODES = ("blend", "linear")
FLIP_MODES = ("vertical", "horizontal", "both")  # cv2.flip's flipCode 0, 1 (> 0), -1 (< 0)
ROTATIONS = ("clockwise_90", "turn_180", "counterclockwise_90")  # cv2.ROTATE_90_CLOCKWISE, _180, _90_COUNTERCLOCKWISE
# The slot of a divergent kernel's parameter block that maps each output plane to its chain.
PLANE_MAP_SLOT = "planemap"
# A DAG's joins (SPEC §8: fkl.join's kinds; the C++ struct fkl::<Name> of the op headers computes each).
JOIN_KINDS = {
    "add": "Add",
    "sub": "Sub",
    "mul": "Mul",
    "div": "Div",
    "max": "Max",
    "min": "Min",
    "absdiff": "AbsDiff",
    "equal": "Equal",
}


# A DAG's buffers by name: call argument i is read as "src" (i = 0, the kernel header's source) or "in<i>", and
# output k is written to "out<k>" (k = 0: the header's destination), so that the frontend, the backend and the
# runtime agree on which buffer is which without a table.
def input_name(i: int) -> str:
    return "src" if i == 0 else f"in{i}"


def input_names(i: int, count: int) -> list[str]:
    """The pointer table of call argument i when it is a list of `count` images: one name per image."""
    return [f"src{b}" if i == 0 else f"in{i}_{b}" for b in range(count)]


def output_name(k: int) -> str:
    return f"out{k}"


def input_index(name: str) -> int:
    """The call argument a read of `name` takes: i for "in<i>" (or an image "in<i>_<b>" of its list), else 0
    (a chain's one input)."""
    index = name[2:].partition("_")[0]
    return int(index) if name.startswith("in") and index.isdigit() else 0


def output_index(name: str) -> int:
    """The output a write to `name` makes: k for "out<k>", else 0 (a chain's one output)."""
    return int(name[3:]) if name.startswith("out") and name[3:].isdigit() else 0


def invert_warp_matrix(values: tuple[float, ...]) -> list[float]:
    """The destination -> source map of a source -> destination 2x3 / 3x3 matrix, in double
    (cv2's convention: the adjugate over the determinant). ValueError when it is singular."""
    if len(values) == 6:
        m00, m01, m02, m10, m11, m12 = values
        det = m00 * m11 - m01 * m10
        if det == 0.0 or not math.isfinite(det):
            raise ValueError(f"matrix {list(values)} is singular")
        d = 1.0 / det
        a00, a01, a10, a11 = m11 * d, -m01 * d, -m10 * d, m00 * d
        return [a00, a01, -a00 * m02 - a01 * m12, a10, a11, -a10 * m02 - a11 * m12]
    m = [values[0:3], values[3:6], values[6:9]]
    cof = [
        m[1][1] * m[2][2] - m[1][2] * m[2][1],
        m[0][2] * m[2][1] - m[0][1] * m[2][2],
        m[0][1] * m[1][2] - m[0][2] * m[1][1],
        m[1][2] * m[2][0] - m[1][0] * m[2][2],
        m[0][0] * m[2][2] - m[0][2] * m[2][0],
        m[0][2] * m[1][0] - m[0][0] * m[1][2],
        m[1][0] * m[2][1] - m[1][1] * m[2][0],
        m[0][1] * m[2][0] - m[0][0] * m[2][1],
        m[0][0] * m[1][1] - m[0][1] * m[1][0],
    ]
    det = m[0][0] * cof[0] + m[0][1] * cof[3] + m[0][2] * cof[6]
    if det == 0.0 or not math.isfinite(det):
        raise ValueError(f"matrix {list(values)} is singular")
    d = 1.0 / det
    return [c * d for c in cof]
