"""OpenCL C element types of kernel-spec buffers and arguments (``float``, ``uint``, ``float4``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from kernellab.opencl_types import DEVICE_SIZED, SCALAR_DTYPES, SPELLINGS, scalar_name, split_vector
from kernellab.records import dataclass

#: OpenCL C scalar type (each spelling) -> NumPy dtype; the device-sized ones (``size_t``,
#: ``bool``) are refused, since a spec states its data's sizes
SCALAR_TYPES: dict[str, str] = {spelling: np.dtype("<" + SCALAR_DTYPES[scalar_name(spelling)]).name
                                for spelling in (*SCALAR_DTYPES, *SPELLINGS) if scalar_name(spelling) not in DEVICE_SIZED}
#: the vector widths a spec may name (3-element vectors are padded to 4 in memory: refused)
VECTOR_WIDTHS = (2, 4, 8, 16)


@dataclass(frozen=True)
class ElementType:
    """An OpenCL C element type: scalar ``float`` or vector ``float4``."""

    name: str
    scalar: str
    width: int = 1

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(SCALAR_TYPES[self.scalar])

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize * self.width

    def shape(self, count: int) -> tuple[int, ...]:
        return (count,) if self.width == 1 else (count, self.width)


def parse_type(name: Any) -> ElementType:
    """``"float"``, ``"uint"``, ``"float4"``...; raises ValueError naming the allowed types."""
    if not isinstance(name, str):
        raise ValueError(f"a type must be a string such as \"float\", got {type(name).__name__}")
    text = " ".join(name.split())
    if text in SCALAR_TYPES:
        return ElementType(text, text)
    vector = split_vector(text)
    if vector and vector[0] in SCALAR_TYPES and vector[1] in VECTOR_WIDTHS:
        return ElementType(text, vector[0], vector[1])
    hint = " (its size depends on the device)" if scalar_name(text) in DEVICE_SIZED else ""
    if vector and vector[0] in SCALAR_TYPES and vector[1] == 3:
        hint = " (3-element vectors are not supported: use the 4-element type)"
    raise ValueError(f"unknown type {name!r}{hint}; use one of {', '.join(sorted(set(SCALAR_TYPES) - {'unsigned'}))}"
                     f" or a vector of them ({'/'.join(map(str, VECTOR_WIDTHS))} elements, e.g. float4)")
