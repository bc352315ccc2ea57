"""The raw CUstream handle of a caller's stream object (an int, torch, CuPy, cuda.bindings, __cuda_stream__).

Its own module, below device_buffer and interop, so that device_buffer reads streams without importing
interop (which imports device_buffer).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_StreamReader = Callable[[Any], int]
_stream_readers: dict[type, _StreamReader] = {}


def stream_handle(stream: object) -> int:
    """The raw CUstream handle of a stream object.

    int → itself; torch.cuda.Stream → .cuda_stream; CuPy stream → .ptr; objects implementing
    __cuda_stream__ (returning (version, handle)); cuda.bindings CUstream → int(). Else TypeError.
    The reader is chosen once per stream type, so repeated calls cost one dict lookup and one attribute.
    """
    if type(stream) is int:
        if stream < 0:
            raise ValueError(f"stream: a stream handle must be >= 0, got {stream}")
        return stream
    reader = _stream_readers.get(type(stream))
    if reader is None:
        reader = _choose_stream_reader(stream)
        _stream_readers[type(stream)] = reader
    return reader(stream)


def _choose_stream_reader(stream: object) -> _StreamReader:
    module = type(stream).__module__ or ""
    if module.startswith("torch") and hasattr(stream, "cuda_stream"):
        return _read_torch_stream
    if module.startswith("cupy") and hasattr(stream, "ptr"):
        return _read_cupy_stream
    if hasattr(stream, "__cuda_stream__"):
        return _read_stream_protocol
    if module.startswith("cuda") and type(stream).__name__ == "CUstream":
        return _read_cuda_bindings_stream
    if isinstance(stream, int) and not isinstance(stream, bool):
        return _read_int_subclass
    raise TypeError(
        "stream: expected an int handle, a torch.cuda.Stream, a CuPy stream, a cuda.bindings CUstream or an "
        f"object with __cuda_stream__, got {type(stream).__module__}.{type(stream).__qualname__}"
    )


def _read_torch_stream(stream: Any) -> int:
    return int(stream.cuda_stream)


def _read_cupy_stream(stream: Any) -> int:
    return int(stream.ptr)


def _read_cuda_bindings_stream(stream: Any) -> int:
    return int(stream)


def _read_int_subclass(stream: Any) -> int:
    return stream_handle(int(stream))


def _read_stream_protocol(stream: Any) -> int:
    protocol = stream.__cuda_stream__
    value: Any = protocol() if callable(protocol) else protocol
    try:
        _version, handle = value
        return int(handle)
    except (TypeError, ValueError) as error:
        raise TypeError(f"stream: __cuda_stream__ returned {value!r}, expected (version, handle)") from error
