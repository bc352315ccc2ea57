"""`fkl.op`: declare a C++ element op that fuses like a built-in (SPEC §6.1, docs/custom-ops.md).

    Gamma = fkl.op("Gamma", body=GAMMA_CPP, params={"gamma": "float32"}, inputs=("float32",), out="same",
                   reference=lambda x, gamma: np.power(x, gamma, dtype=np.float32))
    pipe = fkl.compose(fkl.TensorRead(), fkl.Resize(64, 64), Gamma(gamma=2.2), fkl.TensorWrite())

fkl.op checks the declaration, hashes the body with every file it includes (fklir.includes), registers
the declaration under that hash (fkl.DECLARATIONS, which the backend and the interpreter read) and
returns a descriptor class. An instance checks its params at once; the op's type rule checks the input
element type at compose, like any op's.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from fklir import dtypes
from fklir.dialects.user_declarations import IDENTIFIER, UserDeclaration, declare_user_op
from fklir.frontend.ops import Op, _user_location  # pyright: ignore[reportPrivateUsage]
from fklir.frontend.values import channel_count, dtype_name, number
from fklir.includes import closure_hash

if TYPE_CHECKING:  # the IR is the cold path's: composing a known chain with a user op loads no xDSL
    from xdsl.builder import Builder
    from xdsl.ir import SSAValue


@dataclass(frozen=True)
class UserOpSpec:
    """What a user op's IR holds besides its values (all of it goes into the pipeline's description)."""

    name: str
    digest: str
    params: tuple[tuple[str, str], ...]  # (name, dtype name), in declaration order
    inputs: tuple[str, ...]
    out: str | None  # None: the input's element type
    channels: int | None  # pixel form: None keeps the input's channels
    pixel: bool


class UserOpDescriptor(Op):
    """Base of the classes fkl.op returns: `Gamma(gamma=2.2)` holds the values of the declared params."""

    spec: UserOpSpec
    values: tuple[float, ...]

    SPEC: ClassVar[UserOpSpec]
    RUNTIME_VALUES: ClassVar[bool] = True

    def __init__(self, **params: object):
        spec = type(self).SPEC
        declared = dict(spec.params)
        if unknown := [name for name in params if name not in declared]:
            known = ", ".join(declared) or "none"
            raise TypeError(f"{spec.name}: unknown param {unknown[0]!r}; its params are {known}")
        if missing := [name for name in declared if name not in params]:
            raise TypeError(f"{spec.name}: missing param {missing[0]!r}")
        values = tuple(_param_value(spec.name, name, params[name], dtype) for name, dtype in spec.params)
        object.__setattr__(self, "spec", spec)
        object.__setattr__(self, "values", values)
        object.__setattr__(self, "location", _user_location())

    def lower(self, b: Builder, x: SSAValue) -> SSAValue:
        from fklir.dialects import fkl

        spec = self.spec
        ir_op = fkl.UserPixelOp if spec.pixel else fkl.UserOp
        op = ir_op(
            x,
            spec.name,
            spec.digest,
            [(name, fkl.element_type(dtype)) for name, dtype in spec.params],
            [fkl.element_type(dtype) for dtype in spec.inputs],
            None if spec.out is None else fkl.element_type(spec.out),
            spec.channels,
            self.values or None,
        )
        return self._place(b, op)

    def structure(self) -> tuple[object, ...]:
        return (type(self).__qualname__, self.spec)  # the params' values are values

    def runtime_slot(self, op_name: str, rule: str, dtype: str, channels: int, count: int) -> tuple[float, ...]:
        """The params in declaration order (each checked against its declared type at __init__)."""
        return self.values


def _param_value(op: str, name: str, value: object, dtype: str) -> float:
    """One param value, which must be a number its declared element type holds exactly (floats: in range)."""
    v = number(f"{op}: param {name!r}", value, "its value")
    record = dtypes.BY_NAME[dtype]
    if (limits := record.integer_range) is not None:
        if not (math.isfinite(v) and v == int(v) and limits[0] <= v <= limits[1]):
            raise ValueError(f"{op}: param {name!r} is {dtype}, which cannot hold {value!r}")
    elif math.isfinite(v) and abs(v) > record.hi:
        raise ValueError(f"{op}: param {name!r} is {dtype}, whose range ({record.hi:.6g}) {value!r} exceeds")
    return v


def _identifier(op: str, what: str, name: object) -> str:
    if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
        raise ValueError(f"fkl.op {op}: {what} must be a C++ identifier, got {name!r}")
    return name


def _body(name: str, body: str | None, body_file: str | Path | None, caller: Path) -> tuple[str, str, int, Path]:
    """(text, the file compiler messages name, its first line there, the folder its includes start in)."""
    if (body is None) == (body_file is None):
        raise ValueError(f"fkl.op {name}: give exactly one of body= (C++ text) or body_file= (a path)")
    if body_file is not None:
        path = Path(body_file)
        if not path.is_file():  # a relative path not found from the working folder: from the script's
            path = caller.parent / path
        path = path.resolve()
        if not path.is_file():
            raise ValueError(f"fkl.op {name}: body_file {str(body_file)!r} is not a file")
        return path.read_text(), str(path), 1, path.parent
    if not isinstance(body, str) or not body.strip():
        raise ValueError(f"fkl.op {name}: body must be C++ source text")
    source, first_line = _where_written(body, caller)
    return body, source or f"<fkl.op {name}>", first_line, caller.parent


def _where_written(body: str, caller: Path) -> tuple[str | None, int]:
    """The declaring script and the line an inline body starts on there, when the script holds the text
    verbatim (a triple-quoted string), so that compiler messages point into the script."""
    try:
        script = caller.read_text()
    except (OSError, UnicodeDecodeError):
        return None, 1
    at = script.find(body)
    if at < 0:
        return None, 1
    return str(caller), script.count("\n", 0, at) + 1


def _caller_file() -> Path:
    frame = sys._getframe(2)  # pyright: ignore[reportPrivateUsage]  (the caller of fkl.op)
    return Path(frame.f_code.co_filename).resolve()


def op(
    name: str,
    body: str | None = None,
    *,
    body_file: str | Path | None = None,
    params: Mapping[str, object] | None = None,
    inputs: Sequence[object] = ("float32",),
    out: object = "same",
    reference: Callable[..., Any] | None = None,
    pixel: bool = False,
    channels: int | None = None,
) -> type[UserOpDescriptor]:
    """Declare a user op from C++ (SPEC §6.1): a struct `name` with `static FKL_HD Out exec(In x, P...)`
    (per channel value) or, with pixel=True, `template <int C, int M> static FKL_HD void exec(const In* x,
    Out* out, P...)` (per pixel, `channels` = M outputs). `params`: name -> element type (runtime values,
    never recompiled); `inputs`: the element types it accepts; `out`: its result type or "same";
    `reference`: numpy of the same, for the reference interpreter. Returns the op's descriptor class."""
    name = _identifier(name, "its name", name)
    text, source, first_line, folder = _body(name, body, body_file, _caller_file())
    declared = tuple((_identifier(name, "a param name", p), dtype_name(name, t)) for p, t in (params or {}).items())
    if isinstance(inputs, str) or not inputs:
        raise ValueError(f"fkl.op {name}: inputs must be a non-empty sequence of element types, got {inputs!r}")
    accepted = tuple(dict.fromkeys(dtype_name(name, t) for t in inputs))
    result = None if isinstance(out, str) and out == "same" else dtype_name(name, out)
    if channels is not None and not pixel:
        raise ValueError(f"fkl.op {name}: channels= is for the pixel form (pixel=True)")
    count = None if channels is None else channel_count(f"fkl.op {name}", channels)
    if reference is not None and not callable(reference):
        raise TypeError(f"fkl.op {name}: reference must be callable, got {reference!r}")
    digest = closure_hash(text, folder, (folder,))
    declare_user_op(UserDeclaration(name, digest, text, source, first_line, (str(folder),), reference))
    spec = UserOpSpec(name, digest, declared, accepted, result, count, pixel)
    doc = f"User op {name} (fkl.op): params {', '.join(p for p, _ in declared) or 'none'}."
    namespace = {"SPEC": spec, "__doc__": doc, "__module__": __name__, "__qualname__": name}
    return type(name, (UserOpDescriptor,), namespace)
