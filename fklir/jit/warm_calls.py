"""A shipped kernel's repeated calls on a caller's stream, by the caller's own arrays.

A shipped kernel's function (fklir.kernels.*) describes its arrays, checks them, makes views of them in
the shapes its kernel takes (a batch axis, a channel axis, rows) and calls the jit kernel, which matches
them. For arrays whose keys (tensors.read_key: equal keys describe alike) and other arguments were seen on
a stream before, every step gives what it gave then but the pointers: WarmCalls remembers the CallPlan that
call took, the kernel's arguments (scalars, and fixed buffers such as a stream's scratch) and which of the
caller's arrays each tensor argument views, and launches it with this call's pointers.

A remembered call is found by the caller's arrays and options; an array without a key (a type never
described, DLPack) or any other call takes the full path.
"""

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from fklir.jit.call_plan import CallPlan, RememberedArguments
from fklir.jit.default_stream import per_thread
from fklir.jit.matcher import MEMO_LIMIT
from fklir.jit.tensors import KEY_READERS, read_key
from fklir.runtime.streams import stream_handle


class _Call(NamedTuple):
    plan: CallPlan
    values: tuple[object, ...]  # the kernel's scalars and fixed tensors as remembered (None for the caller's arrays)
    sources: tuple[int, ...]  # per tensor argument: the caller's array whose pointer it takes, or -1: fixed
    fixed: tuple[int, ...]  # per tensor argument: its pointer where it is fixed (else 0)
    made: int  # the array that the call makes (one the caller did not give), or -1
    make: Callable[[object], tuple[object, int]] | None  # make(first array) -> (new output, its pointer)


class WarmCalls:
    """The calls of one shipped kernel function (see the module docstring)."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[tuple[object, ...], _Call] = {}

    def clear(self) -> None:
        """Forget every call (a fixed buffer that the calls take was replaced)."""
        self._calls.clear()

    def run(
        self,
        arrays: Sequence[object],
        options: tuple[object, ...],
        stream: object,
        output: int,
        align: Sequence[int] = (),
    ) -> object:
        """Launch the remembered call of `arrays` (the caller's; None for one not given) with `options` on
        `stream` and return its output, arrays[output] (made anew where the remembered call made it); None when
        there is none, and the caller makes the full call (and remember()s it). `align`: per array, the byte
        multiple that the full call requires of its pointer (0: none), a check that a key does not make."""
        found = _key(arrays, options, stream)
        if found is None:
            return None
        key, pointers, handle = found
        call = self._calls.get(key)
        if call is None or (
            align and any(multiple and pointer % multiple for pointer, multiple in zip(pointers, align))
        ):
            return None
        result = arrays[output]
        if call.make is not None:
            result, pointers[call.made] = call.make(arrays[0])
        tensor_pointers = [pointers[s] if s >= 0 else f for s, f in zip(call.sources, call.fixed, strict=True)]
        call.plan.run_on(tensor_pointers, call.values, handle)
        return result

    def remember(
        self,
        arrays: Sequence[object],
        options: tuple[object, ...],
        stream: object,
        kernel: Any,
        values: Sequence[object],
        made: tuple[int, object, Callable[[object], tuple[object, int]]] | None = None,
    ) -> None:
        """After a full call of `kernel` (a jit.Kernel) on `values` made for `arrays` and `options` on `stream`:
        remember it. A tensor argument takes the pointer of the caller's array that it views (the same start),
        else (a buffer of the function's own) its pointer as it is. `made`: (index, array, make) when the call
        made arrays[index] (None there), which a repeated call makes with make(arrays[0])."""
        found = _key(arrays, options, stream)
        plan = kernel.plan_of(values)
        if found is None or plan is None:
            return
        key, pointers, _ = found
        if made is not None:
            read = read_key(made[1])
            if read is None:
                return
            pointers[made[0]] = read[0]
        if 0 in pointers or len(set(pointers)) < len([p for p in pointers if p >= 0]):
            return  # an empty array's null pointer, or two arrays at one address: a view is not told apart
        sources, fixed = [], []
        for index in plan.tensor_indices:
            read = read_key(values[index])
            if read is None:
                return
            source = pointers.index(read[0]) if read[0] in pointers else -1
            sources.append(source)
            fixed.append(read[0] if source < 0 else 0)
        if len(self._calls) >= MEMO_LIMIT:
            self._calls.clear()
        index, make = (made[0], made[2]) if made is not None else (-1, None)
        # the caller's arrays are not kept: a call reads only the scalars and the fixed tensors of `values`
        kept = list(values)
        for position, source in zip(plan.tensor_indices, sources, strict=True):
            if source >= 0:
                kept[position] = None
        self._calls[key] = _Call(plan, RememberedArguments(kept), tuple(sources), tuple(fixed), index, make)


def _key(
    arrays: Sequence[object], options: tuple[object, ...], stream: object
) -> tuple[tuple[object, ...], list[int], int] | None:
    """(key, the arrays' pointers (-1 for one not given), stream handle) of a call on a caller's stream, or None."""
    if stream is None:
        return None
    handle = stream_handle(stream)
    key: list[object] = [handle, per_thread(handle), options]
    pointers: list[int] = []
    readers = KEY_READERS
    for array in arrays:
        if array is None:
            key.append(None)
            pointers.append(-1)
            continue
        kind = type(array)
        reader = readers.get(kind)
        if reader is None or (read := reader(array)) is None:
            return None
        key.append(kind)
        key.append(read[1])
        pointers.append(read[0])
    return tuple(key), pointers, handle
