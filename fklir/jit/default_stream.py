"""Where a GPU call without `stream=` runs, and whether it waits: `fkl.set_default_stream(mode)`, or the
FKLIR_DEFAULT_STREAM environment variable before the first such call (SPEC §2 "Streams").

- "internal" (the default, the seed's contract): the stream on which the input's producer queues its work
  (torch's or CuPy's current stream, the stream a DeviceBuffer or a CUDA-array-interface array advertises),
  else fklir's internal stream of the device; the call waits for that stream before it returns.
- "current": torch's and CuPy's semantics: the call is queued on the input library's current stream and
  returns at once; a later op of that library on the stream sees the result. An array of a library without
  a current stream (DeviceBuffer, CUDA array interface, DLPack) is handled as under "internal".

Pipelines, `fkl.jit` kernels and the shipped kernels all ask this module (launch_stream, finish).
"""

import os
import threading
from typing import Any

from fklir.runtime import cuda_driver
from fklir.runtime.interop import producer_stream
from fklir.runtime.launch import LAST_DEFAULT_STREAM
from fklir.runtime.streams import stream_handle

MODES = ("internal", "current")
ENVIRONMENT = "FKLIR_DEFAULT_STREAM"
# the input libraries that have a current stream
_CURRENT_STREAM_LIBRARIES = frozenset({"torch", "cupy"})

_mode: list[str] = []  # empty until set or first read from the environment


def set_default_stream(mode: str) -> None:
    """Make calls without `stream=` follow `mode`: "internal" (wait, the default) or "current" (queue on the
    input library's current stream and return at once)."""
    _mode[:] = [_checked(mode, "set_default_stream")]


def default_stream() -> str:
    """The mode now in force: set_default_stream's, else FKLIR_DEFAULT_STREAM's, else "internal"."""
    if not _mode:
        _mode[:] = [_checked(os.environ.get(ENVIRONMENT, "internal"), ENVIRONMENT)]
    return _mode[0]


def _checked(mode: object, what: str) -> str:
    if not isinstance(mode, str) or mode.strip().lower() not in MODES:
        raise ValueError(f'{what}: the default stream is "internal" or "current", got {mode!r}')
    return mode.strip().lower()


def launch_stream(src: Any, stream: object) -> tuple[int, bool]:
    """(stream handle, whether the call must wait for it before returning) for a call whose first array is
    `src` (anything with framework, device and stream fields: interop.GpuArray, tensors.Tensor).

    A caller's stream is used as is, never waited for. Without one: the input's producer's stream (so that
    the call never races it), else fklir's internal stream; waited for unless the default is "current" and
    the input's library has a current stream."""
    if stream is not None:
        return stream_handle(stream), False
    return producer_launch_stream(src.framework, src.device, src.stream)


def producer_launch_stream(framework: str, device: int, advertised: int | None) -> tuple[int, bool]:
    """launch_stream without a caller's stream, for an input known by its framework, device and advertised
    stream (a warm call's)."""
    handle = producer_stream(framework, device, advertised)
    if handle is None:
        return cuda_driver.internal_stream(device), True
    return handle, not (framework in _CURRENT_STREAM_LIBRARIES and default_stream() == "current")


def finish(handle: int, device: int, owned: bool) -> None:
    """Wait for stream `handle` of `device` when the call owns the wait (launch_stream's second value)."""
    if owned:
        with cuda_driver.using_device(device):
            cuda_driver.synchronize(handle)


def per_thread(handle: int) -> int:
    """A key that tells apart the threads using `handle`: a default stream handle (0, 1, 2) may be each
    thread's own stream (CUDA's per-thread default stream); any other handle is one stream for all."""
    return threading.get_ident() if handle <= LAST_DEFAULT_STREAM else 0
