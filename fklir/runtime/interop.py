"""Recognise the caller's arrays and streams (PyTorch, CuPy, DeviceBuffer, __cuda_array_interface__, DLPack,
numpy).

describe_gpu_array() turns an input into a GpuArray (pointer, shape, element type, device, stream) or raises
an error that names the argument and the problem. torch and CuPy are never imported here: an object can only
be a torch tensor if torch is already in sys.modules, which keeps `import fklir` light. The per-type handler
is its library's adapter (runtime/adapters.py), chosen once per type, so the hot path for a torch tensor is one
dict lookup plus the tensor's own accessors.

The warm path of a pipeline call does not even build a GpuArray: warm_key() gives a hashable key (type,
element type, shape, device, ...) and the pointer of an array that is usable as it is, so that a call on
an input seen before is one dict hit (see GpuExecutor._call_warm); anything unusual falls back to
describe_gpu_array, which also says what is wrong.
"""

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from fklir import dtypes
from fklir.errors import ReadOnlyOutputError
from fklir.runtime.adapters import ACCEPTED_GPU_ARRAYS as ACCEPTED_GPU_ARRAYS
from fklir.runtime.adapters import BY_FRAMEWORK, TORCH, GpuArray, WarmKey, adapter_of, numpy_dtype_name
from fklir.runtime.adapters import is_c_contiguous as is_c_contiguous
from fklir.runtime.array_views import host_view_for, normalize_shape


class HostArray(NamedTuple):
    """What a CPU-target call needs to know about one numpy array."""

    ptr: int
    shape: tuple[int, ...]
    dtype_name: str
    writeable: bool
    obj: object


# ----- GPU arrays ------------------------------------------------------------------------------------


def describe_gpu_array(x: object, what: str, stream: int | None = None) -> GpuArray:
    """Describe a C-contiguous GPU array; `what` names the argument in error messages.

    `stream` is the raw handle of the stream the array will be used on, when the caller knows it: an object
    that offers only DLPack is asked to make its data ready there (otherwise on the legacy default stream,
    which the GpuArray's `stream` then names). The other kinds of array ignore it.
    Non-contiguous → ValueError (with the strides); unsupported element type → TypeError (naming it);
    anything that is not a GPU array → TypeError saying what is accepted.
    """
    return adapter_of(x).gpu_array(x, what, stream)


# ----- the warm path: a key and a pointer per call ---------------------------------------------------


def warm_key(x: object) -> tuple[WarmKey, int] | None:
    """(key, device pointer) of a torch tensor, CuPy array or DeviceBuffer that a kernel can use as it is
    (on a CUDA device, C-contiguous, not freed); None for anything else, which then goes through
    describe_gpu_array.

    Arrays with equal keys describe alike (describe_gpu_array gives the same element type, shape, device,
    framework and read-only flag), so a check made once on a full description holds for every array with
    the same key. A key costs the array's own accessors (no __cuda_array_interface__ dict).
    """
    return adapter_of(x).warm(x)


def warm_list_key(xs: Sequence[object]) -> tuple[WarmKey, list[int]] | None:
    """(key, device pointers) of a list of arrays of one kind that all have the same warm key; None
    when the list is empty or any array has none or differs, which sends the list through describe_gpu_array.

    The key stands for the list's full description as warm_key's does for one array (equal element keys
    and the length), so a list seen before keeps every check made on it then. A list of torch tensors is
    compared with its first tensor field by field and each pointer is read once; other kinds go through
    their adapter per array."""
    if not xs:
        return None
    first = xs[0]
    kind, adapter = type(first), adapter_of(first)
    if adapter is TORCH:
        return TORCH.warm_list(xs)
    seen = adapter.warm(first)
    if seen is None:
        return None
    key, pointer = seen
    pointers = [pointer]
    for x in xs[1:]:
        if type(x) is not kind or (seen := adapter.warm(x)) is None or seen[0] != key:
            return None
        pointers.append(seen[1])
    return (len(pointers), key), pointers


def producer_stream(framework: str, device: int, advertised: int | None) -> int | None:
    """The raw handle of the stream on which an array's producer queues its work, or None when unknown:
    torch's and CuPy's current stream, else the stream the array advertises (CAI v3, DeviceBuffer)."""
    return BY_FRAMEWORK[framework].producer_stream(device, advertised)


def output_maker(framework: str, like: object, shape: tuple[int, ...], dtype_name: str, device: int) -> Any:
    """A callable `make(like) -> (array, pointer)` that allocates one output per call, in `like`'s framework
    (see empty_like_framework), with the framework's objects resolved once."""
    return BY_FRAMEWORK[framework].output_maker(like, shape, dtype_name, device)


# ----- outputs ---------------------------------------------------------------------------------------


def empty_like_framework(
    framework: str, shape: Sequence[int], dtype_name: str, device: int, like: object
) -> tuple[object, int]:
    """A new C-contiguous array in the input's framework on `device`, and its device pointer.

    torch → torch.empty on cuda:<device>; cupy → cupy.empty on that device (CuPy has no bfloat16: such
    outputs come back as a DeviceBuffer); anything else → DeviceBuffer. `like` is the input array; it is
    accepted so that callers need not know which frameworks use it.
    """
    shape = normalize_shape(shape, "output shape")
    if dtype_name not in dtypes.BY_NAME:
        raise TypeError(f"output: unsupported element type {dtype_name!r}; supported: {', '.join(dtypes.NAMES)}")
    return BY_FRAMEWORK[framework].empty(shape, dtype_name, device, like)


# ----- host arrays (CPU target) ----------------------------------------------------------------------


def describe_host_array(x: object, what: str) -> HostArray:
    """Describe a C-contiguous numpy array for the CPU target; errors name `what` like describe_gpu_array."""
    if not isinstance(x, np.ndarray):
        hint = ""
        if hasattr(x, "__cuda_array_interface__") or type(x).__module__.startswith(("torch", "cupy")):
            hint = " (for GPU arrays use target='gpu'; for a CPU torch tensor pass tensor.numpy())"
        raise TypeError(f"{what}: the CPU target takes a numpy array, got {type(x).__qualname__}{hint}")
    dtype_name = numpy_dtype_name(x.dtype, what)
    if not x.flags.c_contiguous:
        raise ValueError(
            f"{what}: numpy array of shape {x.shape} is not C-contiguous (strides {x.strides} in bytes); "
            "pass np.ascontiguousarray(array)"
        )
    view = host_view_for(x, dtype_name)
    assert view is not None  # numpy_dtype_name accepted the dtype
    return HostArray(
        ptr=int(view.ctypes.data),
        shape=tuple(x.shape),
        dtype_name=dtype_name,
        writeable=bool(x.flags.writeable),
        obj=x,
    )


# ----- outputs -------------------------------------------------------------------------------------------


def require_writable(array: GpuArray | HostArray, what: str) -> None:
    """ReadOnlyOutputError, naming `what`, when the array described cannot be written (checked before shape
    and dtype: a read-only array of the right shape is the mistake a shape message would hide)."""
    readonly = array.readonly if isinstance(array, GpuArray) else not array.writeable
    if not readonly:
        return
    raise ReadOnlyOutputError(
        f"{what}: the {array.dtype_name} array of shape {array.shape} is read-only; pass a writable output "
        "(a read-only view, e.g. from np.broadcast_to or a read-only DLPack export, cannot be written)"
    )
