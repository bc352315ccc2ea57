"""TensorMatcher and the symbols it binds: a jit kernel's arguments checked in Python before launch.

    N, C = SymbolicSize("N"), SymbolicSize("C")
    T = SymbolicDType("T", ("float32", "float16"))
    TensorMatcher((N, C)).with_dtype(T).with_device(SymbolicDevice())

A symbol binds on its first use (in argument order, dimension order) and every later use must agree;
every error names the argument, the dimension and the symbol, and who bound it:
`x: dim 1 is 5, but C = 3 (bound by out)`. A tensor must be C-contiguous unless with_strides() says
otherwise. Matching is memoised per signature (every tensor's dtype, shape, strides and device), so a call
like an earlier one checks nothing again; scalars are checked and converted on every call, their values
being the call's own.
"""

from __future__ import annotations

import copy
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from fklir import dtypes
from fklir.jit import tensors
from fklir.jit.template_args import dtype_name
from fklir.jit.tensors import Tensor
from fklir.runtime.params import slot_value

ANY = -1  # a dimension or stride that may be anything
MEMO_LIMIT = 4096  # signatures remembered per kernel, so that a caller of ever-new shapes cannot grow it forever


class SymbolicSize:
    """A dimension (or stride) bound by its first use: every other use must have the same extent."""

    def __init__(self, name: str) -> None:
        self.name = _identifier(name, "SymbolicSize")

    def __repr__(self) -> str:
        return f"SymbolicSize({self.name!r})"


class SymbolicDType:
    """An element type bound by its first use, one of `allowed` (any fklir dtype when None)."""

    def __init__(self, name: str, allowed: Sequence[object] | None = None) -> None:
        self.name = _identifier(name, "SymbolicDType")
        self.allowed = None if allowed is None else tuple(_dtype(value, f"SymbolicDType {name!r}") for value in allowed)

    def __repr__(self) -> str:
        return f"SymbolicDType({self.name!r}, {self.allowed!r})"


class SymbolicDevice:
    """A device bound by its first use ("cpu" or a CUDA ordinal), passed to template and grid as `name`."""

    def __init__(self, name: str = "device") -> None:
        self.name = _identifier(name, "SymbolicDevice")

    def __repr__(self) -> str:
        return f"SymbolicDevice({self.name!r})"


Symbol = SymbolicSize | SymbolicDType | SymbolicDevice
Extent = int | SymbolicSize  # ANY: no constraint
DeviceSpec = str | int | SymbolicDevice | None  # "cpu", "cuda" (any CUDA device), an ordinal; None: any


def _identifier(name: object, what: str) -> str:
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"{what}: the name must be a Python identifier (template and grid take it), got {name!r}")
    return name


def _dtype(value: object, what: str) -> str:
    name = dtype_name(value)
    if name is None:
        raise TypeError(f"{what}: {value!r} is not an element type; supported: {', '.join(dtypes.NAMES)}")
    return name


def _extents(values: object, what: str) -> tuple[Extent, ...]:
    if not isinstance(values, tuple | list):
        raise TypeError(f"{what}: expected a tuple of ints, -1 or SymbolicSize, got {values!r}")
    for value in values:
        if isinstance(value, SymbolicSize) or (type(value) is int and value >= ANY):
            continue
        raise TypeError(f"{what}: expected ints >= 0, -1 (any) or SymbolicSize, got {value!r}")
    return tuple(values)


def _device_text(device: int | None) -> str:
    return "cpu" if device is None else f"cuda:{device}"


def _shown(extents: Sequence[Extent]) -> str:
    names = [
        "?" if value == ANY else value.name if isinstance(value, SymbolicSize) else str(value) for value in extents
    ]
    return f"({', '.join(names)})"


# name -> (value, the argument that bound it)
Bindings = dict[str, tuple[object, str]]


def _bind(
    bindings: Bindings,
    name: str,
    value: object,
    mismatch: str,
    what: str,
    show: Callable[[Any], str] = str,
    error: type[Exception] = ValueError,
) -> None:
    """Bind symbol `name` to `value` for argument `what`, or check it against its binding; `mismatch`
    starts the error, e.g. "x: dim 1 is 5"."""
    bound = bindings.setdefault(name, (value, what))
    if bound[0] != value:
        raise error(f"{mismatch}, but {name} = {show(bound[0])} (bound by {bound[1]})")


class TensorMatcher:
    """What one tensor argument must be: rank and extents, element type, device and strides."""

    def __init__(self, shape: Sequence[Extent]) -> None:
        self.shape = _extents(shape, "TensorMatcher")
        self.dtype: str | SymbolicDType | None = None
        self.device: DeviceSpec = None
        self.strides: tuple[Extent, ...] | None = None  # None: C-contiguous

    def _with(self, **fields: Any) -> TensorMatcher:
        changed = copy.copy(self)
        changed.__dict__.update(fields)
        return changed

    def with_dtype(self, dtype: object) -> TensorMatcher:
        """The element type: a name ("float32"), numpy or torch dtype, or a SymbolicDType."""
        return self._with(dtype=dtype if isinstance(dtype, SymbolicDType) else _dtype(dtype, "with_dtype"))

    def with_device(self, device: DeviceSpec) -> TensorMatcher:
        """ "cpu", "cuda" (any CUDA device), "cuda:N" or N (that device), or a SymbolicDevice."""
        if isinstance(device, str) and device.startswith("cuda:") and device[5:].isdigit():
            device = int(device[5:])
        valid = isinstance(device, SymbolicDevice) or device in ("cpu", "cuda")
        if not valid and not (type(device) is int and device >= 0):
            raise ValueError(
                f"with_device: expected 'cpu', 'cuda', 'cuda:N', N >= 0 or a SymbolicDevice, got {device!r}"
            )
        return self._with(device=device)

    def with_strides(self, strides: Sequence[Extent]) -> TensorMatcher:
        """The strides in elements, one per dimension: ints, -1 (any) or SymbolicSize."""
        checked = _extents(strides, "with_strides")
        if len(checked) != len(self.shape):
            raise ValueError(
                f"with_strides: {len(checked)} strides for the {len(self.shape)} dims {_shown(self.shape)}"
            )
        return self._with(strides=checked)

    def __repr__(self) -> str:
        return (
            f"TensorMatcher({_shown(self.shape)}, dtype={self.dtype!r}, device={self.device!r}, "
            f"strides={None if self.strides is None else _shown(self.strides)})"
        )

    def symbols(self) -> list[Symbol]:
        found: list[Symbol] = [
            value for value in (*self.shape, *(self.strides or ())) if isinstance(value, SymbolicSize)
        ]
        found += [value for value in (self.dtype, self.device) if isinstance(value, SymbolicDType | SymbolicDevice)]
        return found

    def check(self, tensor: Tensor, what: str, bindings: Bindings) -> None:
        """Raise, naming `what`, unless `tensor` matches; binds the symbols it uses first."""
        if len(tensor.shape) != len(self.shape):
            raise ValueError(
                f"{what}: expected {len(self.shape)} dims {_shown(self.shape)}, got {len(tensor.shape)} "
                f"(shape {tensor.shape})"
            )
        self._check_dtype(tensor.dtype, what, bindings)
        self._check_device(tensor.device, what, bindings)
        for index, (extent, expected) in enumerate(zip(tensor.shape, self.shape, strict=True)):
            _check_extent(extent, expected, what, f"dim {index}", bindings)
        if self.strides is None:
            if tensor.strides != tensors.contiguous_strides(tensor.shape) and not _trivially_contiguous(tensor):
                raise ValueError(
                    f"{what}: not contiguous (shape {tensor.shape}, strides {tensor.strides} in elements); pass a "
                    "contiguous array or declare the strides with with_strides(...)"
                )
            return
        for index, (stride, expected) in enumerate(zip(tensor.strides, self.strides, strict=True)):
            _check_extent(stride, expected, what, f"stride of dim {index}", bindings)

    def _check_dtype(self, dtype: str, what: str, bindings: Bindings) -> None:
        if self.dtype is None:
            return
        if isinstance(self.dtype, str):
            if dtype != self.dtype:
                raise TypeError(f"{what}: dtype is {dtype}, but must be {self.dtype}")
            return
        symbol = self.dtype
        if symbol.allowed is not None and dtype not in symbol.allowed:
            raise TypeError(f"{what}: dtype {dtype} is not one of {symbol.name}'s ({', '.join(symbol.allowed)})")
        _bind(bindings, symbol.name, dtype, f"{what}: dtype is {dtype}", what, error=TypeError)

    def _check_device(self, device: int | None, what: str, bindings: Bindings) -> None:
        spec = self.device
        shown = _device_text(device)
        if isinstance(spec, SymbolicDevice):
            _bind(bindings, spec.name, device, f"{what}: on {shown}", what, _device_text)
        elif spec == "cpu" and device is not None:
            raise TypeError(f"{what}: on {shown}, but must be on cpu")
        elif spec == "cuda" and device is None:
            raise TypeError(f"{what}: on cpu, but must be on a CUDA device")
        elif type(spec) is int and device != spec:
            raise (TypeError if device is None else ValueError)(f"{what}: on {shown}, but must be on cuda:{spec}")


def _device_value(device: object) -> object:
    """A device as template and grid receive it: "cpu" or the CUDA ordinal."""
    return "cpu" if device is None else device


def _trivially_contiguous(tensor: Tensor) -> bool:
    """numpy's rule: extents of 1 may have any stride, and an empty array is contiguous."""
    if 0 in tensor.shape:
        return True
    expected = tensors.contiguous_strides(tensor.shape)
    return all(extent == 1 or a == b for extent, a, b in zip(tensor.shape, tensor.strides, expected, strict=True))


def _check_extent(value: int, expected: Extent, what: str, where: str, bindings: Bindings) -> None:
    if isinstance(expected, SymbolicSize):
        _bind(bindings, expected.name, value, f"{what}: {where} is {value}", what)
    elif expected != ANY and value != expected:
        raise ValueError(f"{what}: {where} is {value}, but must be {expected}")


@dataclass(frozen=True, eq=False)
class Match:
    """What a signature bound: the symbols' values and the device every tensor is on (None: the CPU)."""

    symbols: dict[str, object]
    device: int | None

    @property
    def target(self) -> str:
        return "cpu" if self.device is None else "gpu"


ScalarConverter = Callable[[object, str], Any]


def scalar_converter(dtype: object, what: str) -> tuple[str, ScalarConverter]:
    """(dtype name, converter) of a scalar argument: the converter checks a value (kind and range) and
    returns it as the ctypes value the kernel's parameter takes."""
    record = dtypes.BY_NAME[_dtype(dtype, what)]

    def convert(value: object, name: str) -> Any:
        if record.kind == "bool":
            if not isinstance(value, bool | np.bool_):
                raise TypeError(f"{name}: expected a bool, got {type(value).__qualname__} {value!r}")
        elif isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name}: expected a number for {record.name}, got {type(value).__qualname__} {value!r}")
        elif record.integer_range is not None:
            if not isinstance(value, numbers.Integral):
                raise TypeError(f"{name}: expected an integer for {record.name}, got {value!r}")
            lo, hi = record.integer_range
            if not lo <= int(value) <= hi:
                raise ValueError(f"{name}: {value} is out of range for {record.name} [{lo}, {hi}]")
        elif abs(float(value)) > record.hi and abs(float(value)) != float("inf"):
            raise ValueError(f"{name}: {value} is out of range for {record.name} (largest finite {record.hi:g})")
        return record.ctype(slot_value(record.slot_kind, value))  # pyright: ignore[reportArgumentType]

    return record.name, convert


class Arguments:
    """A kernel's declared arguments; bind() matches one call's values against them."""

    def __init__(self, kernel: str, args: Sequence[tuple[str, object]]) -> None:
        self.kernel = kernel
        self.names: tuple[str, ...] = tuple(name for name, _spec in args)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"{kernel}: argument names must differ, got {', '.join(self.names)}")
        self.matchers: dict[int, TensorMatcher] = {}
        self.scalars: dict[int, tuple[str, ScalarConverter]] = {}
        for index, (name, spec) in enumerate(args):
            if isinstance(spec, TensorMatcher):
                self.matchers[index] = spec
            else:
                self.scalars[index] = scalar_converter(spec, f"{kernel}: argument {name!r}")
        if not self.matchers:
            raise ValueError(f"{kernel}: a kernel needs a tensor argument (its device chooses the target)")
        self.symbols = self._symbol_names()
        self._memo: dict[tuple[object, ...], Match] = {}
        self.matches = 0  # full matches (signatures not seen before): tests count them

    def _symbol_names(self) -> dict[str, type]:
        kinds: dict[str, type] = {}
        for matcher in self.matchers.values():
            for symbol in matcher.symbols():
                if kinds.setdefault(symbol.name, type(symbol)) is not type(symbol):
                    kinds_named = f"a {kinds[symbol.name].__name__} and a {type(symbol).__name__}"
                    raise ValueError(f"{self.kernel}: {symbol.name} names both {kinds_named}")
        return kinds

    def bind(self, values: Sequence[object]) -> tuple[Match, list[Tensor | Any]]:
        """(match, each argument as the kernel takes it: a Tensor or a ctypes scalar) of one call."""
        if len(values) != len(self.names):
            raise TypeError(
                f"{self.kernel}: expected {len(self.names)} arguments ({', '.join(self.names)}), got {len(values)}"
            )
        converted: list[Tensor | Any] = []
        for index, value in enumerate(values):
            scalar = self.scalars.get(index)
            converted.append(
                tensors.describe(value, self.names[index]) if scalar is None else scalar[1](value, self.names[index])
            )
        key = tuple(argument.signature for argument in converted if isinstance(argument, Tensor))
        match = self._memo.get(key)
        if match is None:
            match = self._match(converted)
            if len(self._memo) >= MEMO_LIMIT:
                self._memo.clear()
            self._memo[key] = match
        return match, converted

    def _match(self, converted: Sequence[Tensor | Any]) -> Match:
        self.matches += 1
        placed = [(self.names[index], converted[index]) for index in self.matchers]
        first_name, first = placed[0]
        for name, tensor in placed[1:]:
            if tensor.device == first.device:
                continue
            if (tensor.device is None) != (first.device is None):
                raise TypeError(
                    f"{name}: on {_device_text(tensor.device)}, but {first_name} is on {_device_text(first.device)}; "
                    "CPU and GPU tensors cannot be mixed in one call"
                )
            raise ValueError(
                f"{name}: on {_device_text(tensor.device)}, but {first_name} is on {_device_text(first.device)}; "
                "a kernel runs on one device"
            )
        bindings: Bindings = {}
        for index, matcher in self.matchers.items():
            matcher.check(converted[index], self.names[index], bindings)
        symbols = {
            name: _device_value(value) if self.symbols[name] is SymbolicDevice else value
            for name, (value, _by) in bindings.items()
        }
        return Match(symbols, first.device)
