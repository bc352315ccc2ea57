"""The C++ spelling of fkl element types and parameter slots, and the lines every GPU entry starts with,
shared by the emitter modules (templates and rules alike: no IR here)."""

from __future__ import annotations

from fklir import dtypes

# A GPU entry lets the next kernel of its stream start at once and waits for the previous one only
# before it touches global memory, so that its blocks' set-up (plane, taps) overlaps the previous
# kernel's tail when the launcher asks for programmatic dependent launch (fkl/kernel.h).
LET_NEXT_START = "    fkl::let_next_kernel_start();"
WAIT_FOR_PREVIOUS = "    fkl::wait_for_previous_kernel();"

CPP_TYPE: dict[str, str] = {record.name: record.cpp for record in dtypes.DTYPES}
ELEMENT_SIZE: dict[str, int] = {record.name: record.size for record in dtypes.DTYPES}
SLOT_CPP_TYPE: dict[str, str] = {record.slot_kind: record.cpp for record in dtypes.DTYPES} | {"rect": "fkl::Rect"}
