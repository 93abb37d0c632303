"""OpenCL C element types of kernel-spec buffers and arguments (``float``, ``uint``, ``float4``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

#: OpenCL C scalar type -> numpy dtype (``size_t`` and ``bool`` are device-dependent: refused)
SCALAR_TYPES: dict[str, str] = {
    "char": "int8", "uchar": "uint8", "unsigned char": "uint8",
    "short": "int16", "ushort": "uint16", "unsigned short": "uint16",
    "int": "int32", "uint": "uint32", "unsigned int": "uint32", "unsigned": "uint32",
    "long": "int64", "ulong": "uint64", "unsigned long": "uint64",
    "half": "float16", "float": "float32", "double": "float64",
}
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
    m = re.fullmatch(r"([a-z]+)(\d+)", text)
    if m and m.group(1) in SCALAR_TYPES and int(m.group(2)) in VECTOR_WIDTHS:
        return ElementType(text, m.group(1), int(m.group(2)))
    hint = " (its size depends on the device)" if text in ("size_t", "bool", "ptrdiff_t") else ""
    if m and m.group(1) in SCALAR_TYPES and m.group(2) == "3":
        hint = " (3-element vectors are not supported: use the 4-element type)"
    raise ValueError(f"unknown type {name!r}{hint}; use one of {', '.join(sorted(set(SCALAR_TYPES) - {'unsigned'}))}"
                     f" or a vector of them ({'/'.join(map(str, VECTOR_WIDTHS))} elements, e.g. float4)")
