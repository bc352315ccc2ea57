"""fkl.jit.kernel: a whole user kernel (CUDA and/or C++ source), checked by TensorMatchers, compiled per
instance on first use and launched on the tensors' device.

    scale_rows = fkl.jit.kernel(
        "scale_rows",
        cuda="csrc/scale_rows.cuh",                    # a __global__ template
        cpu="csrc/scale_rows.cpp",                     # a function template
        args=[("out", TensorMatcher((N, C)).with_dtype(T).with_device(D)),
              ("x", TensorMatcher((N, C)).with_dtype(T).with_device(D)),
              ("alpha", "float32")],
        template=lambda T: cpp_args(T, 256),           # scale_rows<float, 256>
        grid=lambda N, C: ((N, 1, 1), (256, 1, 1)),    # (grid, block) of a GPU launch
    )
    scale_rows(y, x, 2.0)                              # stream= on the GPU, as for pipelines

`cuda` and `cpu` are source text (anything with a newline or a brace) or a path: a relative path is
relative to the folder of the Python file that calls kernel() (the current folder in an interactive
session), so that a package finds the sources next to it wherever it is installed. Quoted includes resolve
in the source's folder, then fklir's include folder (`fkl/tensor_view.h`, `fkl/core.h`).

The template and grid callables take the symbols of the matchers by parameter name (SymbolicDevice's
value is "cpu" or the CUDA ordinal). Each signature (the tensors' dtypes, shapes, strides and device) is
matched once; its instance (template arguments, grid) is built once, and its arguments are laid out once
(call_plan.py): a repeated call reads each tensor's pointer and signature from the array's own accessors,
writes them and the scalars, and launches. The sources are read when an
instance is built, so a kernel made after an edit (the module or notebook cell run again) sees it and
compiles once; nothing needs clearing.
"""

from __future__ import annotations

import inspect
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fklir import dtypes
from fklir.jit import instance as instances
from fklir.jit.call_plan import CallPlan, CpuLaunch, GpuLaunch
from fklir.jit.highway import LINK_FLAGS, require_highway
from fklir.jit.matcher import MEMO_LIMIT, Arguments, Match
from fklir.jit.template_args import cpp_args, cpp_type
from fklir.jit.tensors import Tensor, TensorView, read_key

_CPP_NAME = re.compile(r"(::)?[A-Za-z_]\w*(::[A-Za-z_]\w*)*")

Dims = tuple[int, int, int]


def kernel(
    name: str,
    cuda: str | Path | None = None,
    cpu: str | Path | None = None,
    args: Sequence[tuple[str, object]] = (),
    template: Callable[..., Any] | None = None,
    grid: Callable[..., Any] | None = None,
    link_flags: Sequence[str] = (),
    highway: bool = False,
) -> Kernel:
    """A jit kernel (see the module docstring). `args`: (name, TensorMatcher) for a tensor, (name, dtype)
    for a scalar. `template` returns the template arguments (a string such as cpp_args' or a tuple of
    values for it); None: `name` is not a template. `grid` returns ((gx, gy, gz), (bx, by, bz)), required
    for the GPU. `link_flags` follow the CPU source on g++'s command line. `highway`: the CPU source uses
    Google Highway (fklir/jit/highway.py): linked with -lhwy, and without Highway a CPU call raises a
    RuntimeError naming Debian's libhwy-dev."""
    caller = sys._getframe(1).f_globals.get("__file__")  # pyright: ignore[reportPrivateUsage]
    origin = Path(caller).resolve() if isinstance(caller, str) else None
    return Kernel(name, cuda, cpu, args, template, grid, link_flags, origin, highway)


class _Source:
    """A `cuda=` or `cpu=` source as given: text, or a path read when an instance is built."""

    def __init__(self, spec: str | Path, kernel: str, kind: str, origin: Path | None) -> None:
        self.text = ""  # the source text, when not read from `path`
        self.path: Path | None = None
        folder = Path.cwd() if origin is None else origin.parent
        if isinstance(spec, str) and ("\n" in spec or "{" in spec):
            self.text, self.folder = spec, folder
            self.shown = f"{origin or '<interactive>'}: {kernel} {kind} source"
            return
        if not isinstance(spec, str | Path):
            raise TypeError(f"{kernel}: {kind}= must be source text or a path, got {type(spec).__qualname__}")
        path = Path(spec).expanduser()
        self.path = path if path.is_absolute() else folder / path
        if not self.path.is_file():
            raise FileNotFoundError(f"{kernel}: {kind} source {self.path} does not exist")
        self.folder, self.shown = self.path.parent, str(self.path)

    def read(self) -> instances.Source:
        text = self.path.read_text() if self.path is not None else self.text
        return instances.Source(text, self.folder, self.shown)


def _takes_symbols(function: Callable[..., Any] | None, what: str, kernel: str, symbols: Sequence[str]) -> list[str]:
    """The parameter names of `function`, each the name of a symbol; TypeError naming one that is not."""
    if function is None:
        return []
    if not callable(function):
        raise TypeError(f"{kernel}: {what}= must be callable, got {type(function).__qualname__}")
    names = list(inspect.signature(function).parameters)
    for name in names:
        if name not in symbols:
            raise TypeError(
                f"{kernel}: {what} takes a parameter {name!r}, which no argument binds "
                f"(symbols: {', '.join(symbols) or 'none'})"
            )
    return names


def _dims(value: object, what: str) -> Dims:
    if type(value) is int:
        value = (value,)
    if not isinstance(value, tuple | list) or not 1 <= len(value) <= 3:
        raise TypeError(f"{what}: expected up to 3 extents, got {value!r}")
    if not all(type(extent) is int and extent >= 0 for extent in value):
        raise TypeError(f"{what}: extents must be ints >= 0, got {value!r}")
    padded = (*value, 1, 1)
    return padded[0], padded[1], padded[2]


class Kernel:
    """A jit kernel; call it with its arguments (and stream= on the GPU)."""

    def __init__(
        self,
        name: str,
        cuda: str | Path | None,
        cpu: str | Path | None,
        args: Sequence[tuple[str, object]],
        template: Callable[..., Any] | None,
        grid: Callable[..., Any] | None,
        link_flags: Sequence[str],
        origin: Path | None,
        highway: bool = False,
    ) -> None:
        """`origin`: the Python file that declares the kernel (None: an interactive session)."""
        if not isinstance(name, str) or not _CPP_NAME.fullmatch(name):
            raise ValueError(f"fkl.jit.kernel: the name must be a C++ (qualified) name, got {name!r}")
        if cuda is None and cpu is None:
            raise ValueError(f"{name}: give a cuda= or cpu= source (or both)")
        self.name = name
        self.arguments = Arguments(name, args)
        self._sources = {
            target: None if spec is None else _Source(spec, name, kind, origin)
            for target, kind, spec in (("gpu", "cuda", cuda), ("cpu", "cpu", cpu))
        }
        symbols = list(self.arguments.symbols)
        self._template = template
        self._template_parameters = _takes_symbols(template, "template", name, symbols)
        self._grid = grid
        self._grid_parameters = _takes_symbols(grid, "grid", name, symbols)
        self.highway = highway
        self.link_flags = (*link_flags, *LINK_FLAGS) if highway else tuple(link_flags)
        self._instances: dict[Match, CpuLaunch | GpuLaunch] = {}
        self._lock = threading.Lock()
        self._tensor_indices = tuple(self.arguments.matchers)
        # a call's key (each tensor's type and read_key) -> its plan: a repeated call reads its tensors once
        self._plans: dict[tuple[object, ...], CallPlan] = {}

    def __repr__(self) -> str:
        return f"<fkl.jit kernel {self.name}({', '.join(self.arguments.names)})>"

    def __call__(self, *values: object, stream: object = None) -> None:
        read = self._read(values)
        if read is not None and (plan := self._plans.get(read[0])) is not None:
            plan.run(read[1], values, stream)
            return
        self._first_call(values, stream)

    def plan_of(self, values: Sequence[object]) -> CallPlan | None:
        """The prepared call that a call on `values` takes (arrays like them were called on), else None."""
        read = self._read(values)
        return None if read is None else self._plans.get(read[0])

    def _read(self, values: Sequence[object]) -> tuple[tuple[object, ...], list[int]] | None:
        """(key, pointers) of a call's tensors from their own accessors (tensors.read_key); None when one has
        no key (an array type not described yet, or without a key reader) or the count is wrong."""
        if len(values) != len(self.arguments.names):
            return None
        key: list[object] = []
        pointers: list[int] = []
        for index in self._tensor_indices:
            value = values[index]
            if (read := read_key(value)) is None:
                return None
            pointers.append(read[0])
            key += (type(value), read[1])
        return tuple(key), pointers

    def _first_call(self, values: Sequence[object], stream: object) -> None:
        """A call of a new key (or of arrays without one): matched in full, its plan made and remembered."""
        match, converted = self.arguments.bind(values)
        launch = self._instances.get(match)
        if launch is None:
            launch = self._instantiate(match)
        plan = CallPlan(launch, self.arguments, converted)
        if (read := self._read(values)) is not None:
            if len(self._plans) >= MEMO_LIMIT:
                self._plans.clear()
            self._plans[read[0]] = plan
        described = [argument for argument in converted if isinstance(argument, Tensor)]
        plan.run([tensor.ptr for tensor in described], values, stream, described[0])

    def _instantiate(self, match: Match) -> CpuLaunch | GpuLaunch:
        with self._lock:  # two threads meeting a new signature build its instance once
            if (launch := self._instances.get(match)) is not None:
                return launch
            source = self._sources[match.target]
            if source is None:
                where, kind = ("the CPU", "cpu") if match.device is None else ("a CUDA device", "cuda")
                raise TypeError(f"{self.name}: the tensors are on {where}, but the kernel has no {kind}= source")
            if self.highway and match.target == "cpu":
                require_highway(self.name)
            wanted = instances.Instance(self.name, self._template_args(match), self._parameters(), match.target)
            entry = instances.load(source.read(), wanted, match.device, self.link_flags)
            launch = CpuLaunch(entry, self._ctypes()) if match.device is None else self._gpu_launch(entry, match)
            self._instances[match] = launch
            return launch

    def _symbols(self, names: Sequence[str], match: Match) -> dict[str, object]:
        return {name: match.symbols[name] for name in names}

    def _template_args(self, match: Match) -> str | None:
        if self._template is None:
            return None
        result = self._template(**self._symbols(self._template_parameters, match))
        if isinstance(result, tuple | list):
            return cpp_args(*result)
        if not isinstance(result, str):
            raise TypeError(f"{self.name}: template must return a string (cpp_args) or a tuple, got {result!r}")
        return result

    def _gpu_launch(self, entry: Any, match: Match) -> GpuLaunch:
        if self._grid is None:
            raise TypeError(f"{self.name}: a GPU launch needs grid= (a callable returning (grid, block))")
        shape = self._grid(**self._symbols(self._grid_parameters, match))
        if not isinstance(shape, tuple | list) or len(shape) != 2:
            raise TypeError(f"{self.name}: grid must return ((gx, gy, gz), (bx, by, bz)), got {shape!r}")
        grid = _dims(shape[0], f"{self.name}: grid")
        block = _dims(shape[1], f"{self.name}: block")
        assert match.device is not None
        return GpuLaunch(entry, grid, block, match.device)

    def _scalar_dtypes(self) -> dict[int, str]:
        return {index: dtype for index, (dtype, _convert) in self.arguments.scalars.items()}

    def _parameters(self) -> tuple[str, ...]:
        scalars = self._scalar_dtypes()
        return tuple(
            cpp_type(scalars[index]) if index in scalars else instances.TENSOR_PARAMETER
            for index in range(len(self.arguments.names))
        )

    def _ctypes(self) -> list[Any]:
        scalars = self._scalar_dtypes()
        return [
            dtypes.BY_NAME[scalars[index]].ctype if index in scalars else TensorView
            for index in range(len(self.arguments.names))
        ]
