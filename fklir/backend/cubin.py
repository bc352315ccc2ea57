"""The kernels a cubin exports, read from its ELF symbol table, and C++ demangling (for nvcc's templates).

NVRTC names the instantiation of a template kernel itself (name expressions); nvcc has no such API, so
fkl.jit instantiates the template explicitly and finds it among the cubin's entry points by demangling
their names. Reading the cubin's own symbol table needs no GPU and no tool besides the C++ runtime
(libstdc++'s __cxa_demangle, which every g++ installation has; cu++filt ships only with some toolkits).
"""

from __future__ import annotations

import ctypes
import functools
import re
import struct
from typing import Any

_ELF_MAGIC = b"\x7fELF"
_SHT_SYMTAB = 2
_STT_FUNC = 2
_STB_GLOBAL = 1
_STO_CUDA_ENTRY = 0x10  # st_other bit of a __global__ function (a kernel, not a device function)


def entry_names(cubin: bytes) -> list[str]:
    """The (mangled) names of the kernels a cubin exports; ValueError when it is not a 64-bit ELF file."""
    if cubin[:4] != _ELF_MAGIC or cubin[4] != 2 or cubin[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file (a cubin)")
    (section_offset,) = struct.unpack_from("<Q", cubin, 0x28)
    entry_size, count = struct.unpack_from("<HH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, section_offset + i * entry_size) for i in range(count)]
    names: list[str] = []
    for _name, kind, _flags, _address, offset, size, link, _info, _align, _entsize in sections:
        if kind != _SHT_SYMTAB:
            continue
        strings = sections[link][4]
        for start in range(offset, offset + size, 24):
            name_offset, info, other = struct.unpack_from("<IBB", cubin, start)
            if info & 0xF == _STT_FUNC and info >> 4 == _STB_GLOBAL and other & _STO_CUDA_ENTRY:
                begin = strings + name_offset
                names.append(cubin[begin : cubin.index(b"\0", begin)].decode())
    return names


@functools.cache
def _demangler() -> Any:
    try:
        function = ctypes.CDLL("libstdc++.so.6").__cxa_demangle
    except (OSError, AttributeError):
        return None
    function.restype = ctypes.c_void_p
    function.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
    return function


_free = ctypes.CDLL(None).free
_free.argtypes = [ctypes.c_void_p]


def demangle(name: str) -> str | None:
    """The C++ spelling of a mangled name, e.g. "void scale_rows<float, 256>(fkl::TensorView, float)";
    None when it is not a mangled name (an extern "C" kernel) or no demangler is available."""
    demangler = _demangler()
    if demangler is None or not name.startswith("_Z"):
        return None
    status = ctypes.c_int()
    text = demangler(name.encode(), None, None, ctypes.byref(status))
    if not text:
        return None
    try:
        return ctypes.string_at(text).decode() if status.value == 0 else None
    finally:
        _free(text)


# An integer template argument as the demangler writes it: with a suffix for unsigned or long types.
_INTEGER_SUFFIX = re.compile(r"\b(-?\d+)(?:ull|ul|ll|u|l)\b")


def _normal(template_args: str) -> str:
    return _INTEGER_SUFFIX.sub(r"\1", template_args.replace(" ", ""))


def _split(demangled: str) -> tuple[str, str]:
    """(qualified name, template arguments: "" for a plain function) of a demangled kernel
    "void name<args>(params)"."""
    head = demangled.removeprefix("void ")
    opening = min(index for index in (head.find("<"), head.find("("), len(head)) if index >= 0)
    if not head.startswith("<", opening):
        return head[:opening], ""
    depth = 0
    for index in range(opening, len(head)):
        depth += {"<": 1, ">": -1}.get(head[index], 0)
        if depth == 0:
            return head[:opening], head[opening + 1 : index]
    return head[:opening], head[opening + 1 :]


def find_instance(cubin: bytes, name: str, template_args: str) -> tuple[str | None, list[str]]:
    """(mangled name of the kernel `name<template_args>` ("" for a plain function) in the cubin, or None;
    the demangled names of the kernels called `name` there, for an error message). A template instantiated
    once is found by its name alone, so that spellings of an argument that the demangler writes otherwise
    ("256" and "256u") still agree."""
    instances: list[tuple[str, str, str]] = []
    for mangled in entry_names(cubin):
        demangled = demangle(mangled) or mangled  # an extern "C" kernel's name is its own
        qualified, arguments = _split(demangled)
        if qualified == name.removeprefix("::"):
            instances.append((mangled, demangled, arguments))
    shown = [demangled for _mangled, demangled, _arguments in instances]
    if len(instances) == 1:
        return instances[0][0], shown
    wanted = _normal(template_args)
    exact = [mangled for mangled, _demangled, arguments in instances if _normal(arguments) == wanted]
    return (exact[0] if len(exact) == 1 else None), shown
