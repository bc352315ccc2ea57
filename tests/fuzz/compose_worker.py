"""The compose() fuzz child: runs one case per request on the CPU target and judges it here.

The reply is (verdict, detail): "ok", "rejected" (ValueError/TypeError, the accepted refusal), or a
failure class: "wrong", "wrote outside out=", "raised", "accepted what the reference rejects",
"rejected a valid case", "accepted an unsupported dtype", "accepted a size past the index type".
"""

from __future__ import annotations

import resource
import traceback

import numpy as np

import fklir as fkl
from fklir.jit.signature import input_signature
from fklir.limits import I32_MAX
from tests.fuzz.child import serve
from tests.fuzz.compose_cases import Case
from tests.runtime.catalogue_support import Source, reference
from tests.unit.property_chains import assert_same

GUARD_ROWS = 2
ADDRESS_SPACE = 6 << 30
ELEMENT_TYPES = ("bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "float16", "float32", "float64")


def _guarded_out(like: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, bytes]:
    """A buffer of `like`'s rows plus GUARD_ROWS random rows either side, its middle, and its bytes."""
    shape = (like.shape[0] + 2 * GUARD_ROWS, *like.shape[1:])
    buffer = np.frombuffer(rng.bytes(int(np.prod(shape)) * like.itemsize), like.dtype).reshape(shape).copy()
    return buffer, buffer[GUARD_ROWS : GUARD_ROWS + like.shape[0]], buffer.tobytes()


def _guards_kept(buffer: np.ndarray, before: bytes, rows: int) -> bool:
    row = buffer[0].nbytes
    after = buffer.tobytes()
    head, tail = GUARD_ROWS * row, (GUARD_ROWS + rows) * row
    return after[:head] == before[:head] and after[tail:] == before[tail:]


def run_case(case: Case) -> tuple[str, str]:
    x = case.input()
    try:
        pipe = fkl.compose(*case.ops, target="cpu")
        y = pipe(x)
    except (ValueError, TypeError) as e:
        if not case.twists and case.layout in ("contiguous", "list"):
            return "rejected a valid case", f"{type(e).__name__}: {e}"
        return "rejected", f"{type(e).__name__}: {e}"
    except Exception as e:  # every other exception breaks the contract
        return "raised", f"{type(e).__name__}: {e}\n{traceback.format_exc()[-1500:]}"
    if max(y.shape, default=0) > I32_MAX:
        return "accepted a size past the index type", f"an output of shape {y.shape}"
    if case.x.dtype.newbyteorder("=").name not in ELEMENT_TYPES:
        return "accepted an unsupported dtype", f"{case.x.dtype} gave {y.dtype}{list(y.shape)}"
    try:
        expected = reference(case.ops, _source(case.native))
    except Exception as e:  # the reference's refusal (of anything SPEC allows, a reference bug)
        return "accepted what the reference rejects", f"reference: {type(e).__name__}: {e}; got {y.shape}"
    try:
        if [n for n in y.shape if n != 1] != [n for n in expected.shape if n != 1]:
            raise AssertionError(f"shape {y.shape}, expected {expected.shape} (up to axes of length 1)")
        assert_same(y.reshape(expected.shape), expected, "pipe(x)")
    except AssertionError as e:
        return "wrong", str(e)[-1500:]
    if case.out_guard and y.ndim >= 1 and y.shape[0] > 0:
        return _check_out(pipe, x, y, case)
    return "ok", ""


def _source(x: np.ndarray) -> Source:
    """The input as compose() reads its shape; a batch of no images is typed as one plane, as
    compose() compiles it (an image type has at least one plane)."""
    sig, width, height = input_signature(x.shape, str(x.dtype))
    return Source(x, sig.dtype, sig.channels, max(sig.planes, 1), width, height)


def _check_out(pipe: fkl.Pipeline, x: np.ndarray | list[np.ndarray], y: np.ndarray, case: Case) -> tuple[str, str]:
    buffer, view, before = _guarded_out(y, np.random.default_rng(len(case.name)))
    try:
        pipe(x, out=view)
    except (ValueError, TypeError) as e:
        return "rejected", f"out=: {type(e).__name__}: {e}"
    except Exception as e:  # every other exception breaks the contract
        return "raised", f"out=: {type(e).__name__}: {e}"
    if not _guards_kept(buffer, before, y.shape[0]):
        return "wrote outside out=", f"out= view of rows {GUARD_ROWS}..{GUARD_ROWS + y.shape[0]} of {buffer.shape}"
    try:
        assert_same(view, y, "pipe(x, out=view) vs pipe(x)")
    except AssertionError as e:
        return "wrong", f"out=: {str(e)[-1500:]}"
    return "ok", ""


if __name__ == "__main__":
    # an output that slips past the size checks fails with MemoryError here, not by filling the machine
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    serve(run_case)
