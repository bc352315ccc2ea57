"""The C++ spelling of fkl element types and parameter slots, and the lines every GPU entry starts with,
shared by the emitter modules."""

from __future__ import annotations

from xdsl.ir import Operation

from fklir.dialects import fkl

# A GPU entry lets the next kernel of its stream start at once and waits for the previous one only
# before it touches global memory, so that its blocks' set-up (plane, taps) overlaps the previous
# kernel's tail when the launcher asks for programmatic dependent launch (fkl/kernel.h).
LET_NEXT_START = "    fkl::let_next_kernel_start();"
WAIT_FOR_PREVIOUS = "    fkl::wait_for_previous_kernel();"

CPP_TYPE = {
    "uint8": "fkl::u8",
    "int8": "fkl::i8",
    "uint16": "fkl::u16",
    "int16": "fkl::i16",
    "int32": "fkl::i32",
    "uint32": "fkl::u32",
    "float16": "fkl::f16",
    "bfloat16": "fkl::bf16",
    "float32": "fkl::f32",
    "float64": "fkl::f64",
    "bool": "bool",
}
ELEMENT_SIZE = {
    "uint8": 1,
    "int8": 1,
    "uint16": 2,
    "int16": 2,
    "int32": 4,
    "uint32": 4,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "bool": 1,
}
SLOT_CPP_TYPE = {
    "ui8": "fkl::u8",
    "i8": "fkl::i8",
    "ui16": "fkl::u16",
    "i16": "fkl::i16",
    "i32": "fkl::i32",
    "ui32": "fkl::u32",
    "f16": "fkl::f16",
    "bf16": "fkl::bf16",
    "f32": "fkl::f32",
    "f64": "fkl::f64",
    "i1": "bool",
    "rect": "fkl::Rect",
}


def image_of(t: object) -> fkl.ImageType:
    """A known image type (the emitter runs after fkl-infer-types)."""
    if not (isinstance(t, fkl.ImageType) and t.is_known):
        raise ValueError(f"un-inferred type {t}: run fkl-infer-types first")
    return t


def slot_of(op: Operation, field: str = "value") -> str:
    """The parameter slot that holds one value field of `op` (after fkl-hoist-params)."""
    slot = fkl.field_slot(op, field)
    if slot is None:
        raise ValueError(f"'{op.name}' still has an inline value: run fkl-hoist-params before emission")
    return slot
