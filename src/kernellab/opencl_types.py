"""OpenCL C value types by name: the one parser of ``float4``, ``unsigned int``, a typedef, a struct.

Every reader of an OpenCL C type name takes it from here: the OpenCL backend and capture (argument
bytes), the ``__local`` sizes of verify and of clspv's specialization, and the element types of
PySchedCL kernel specs (:func:`element_type`, which refuses what a spec may not name). Sizes are
those of OpenCL C 1.2 section 6.1 on the 64-bit devices kernellab runs (``size_t`` 8 bytes); a
3-element vector is stored as 4.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

from kernellab.records import dataclass

#: OpenCL C scalar type -> its little-endian NumPy dtype code (kind and bytes)
SCALAR_DTYPES: dict[str, str] = {
    "char": "i1", "uchar": "u1", "short": "i2", "ushort": "u2", "int": "i4", "uint": "u4",
    "long": "i8", "ulong": "u8", "half": "f2", "float": "f4", "double": "f8",
    "bool": "u1", "size_t": "u8", "ptrdiff_t": "i8", "intptr_t": "i8", "uintptr_t": "u8",
}
#: the other spellings of the scalar types, as C writes them
SPELLINGS: dict[str, str] = {"unsigned char": "uchar", "unsigned short": "ushort", "unsigned int": "uint",
                             "unsigned long": "ulong", "unsigned": "uint", "signed char": "char"}
#: scalars whose size depends on the device (a file that states data sizes may not use them)
DEVICE_SIZED = frozenset({"bool", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t"})
#: the element counts of OpenCL C vector types
VECTOR_WIDTHS = (2, 3, 4, 8, 16)
_VECTOR = r"^([a-z]+?)(2|3|4|8|16)$"
_TYPEDEF = r"\btypedef\s+([A-Za-z_][\w\s]*?)\s+([A-Za-z_]\w*)\s*;"


def dtype_size(code: str) -> int:
    """Bytes of one element of a dtype code of :data:`SCALAR_DTYPES` (``"f4"``: 4)."""
    return int(code[1:])


@dataclass(frozen=True)
class ArgType:
    """An OpenCL C value type: element dtype (little-endian NumPy code) and element count."""

    name: str
    dtype: str | None  # None for a struct/union/unknown type
    count: int = 1

    @property
    def size(self) -> int | None:
        if self.dtype is None:
            return None
        stored = 4 if self.count == 3 else self.count
        return dtype_size(self.dtype) * stored

    @property
    def alignment(self) -> int:
        size = self.size
        return size if size else 4

    @property
    def is_float(self) -> bool:
        return self.dtype is not None and self.dtype.startswith("f")

    @property
    def signed(self) -> bool:
        return self.dtype is not None and self.dtype[0] in "if"


def scalar_name(text: str) -> str:
    """The canonical name of a scalar type spelling (``unsigned int``: ``uint``), else ``text``."""
    return SPELLINGS.get(text, text)


def split_vector(text: str) -> tuple[str, int] | None:
    """``("float", 4)`` for ``float4``: a known scalar and a vector width; None otherwise."""
    m = re.match(_VECTOR, text)  # compiled on first use (re's cache): a run of buffers needs none
    if m and m.group(1) in SCALAR_DTYPES and m.group(1) != "bool":
        return m.group(1), int(m.group(2))
    return None


def parse_type(name: str, typedefs: Mapping[str, str] | None = None) -> ArgType:
    """The :class:`ArgType` for an OpenCL C type name (``float4``, ``uint``, a typedef, a struct);
    qualifiers (``const``, ``volatile``) are dropped and typedef chains followed."""
    text = " ".join(name.replace("const", " ").replace("volatile", " ").split())
    for _ in range(8):  # typedef chains
        if typedefs and text in typedefs:
            text = " ".join(typedefs[text].split())
        else:
            break
    text = scalar_name(text)
    if text in SCALAR_DTYPES:
        return ArgType(name, SCALAR_DTYPES[text], 1)
    vector = split_vector(text)
    if vector is not None:
        return ArgType(name, SCALAR_DTYPES[vector[0]], vector[1])
    return ArgType(name, None, 1)


def source_typedefs(source: str) -> dict[str, str]:
    """``typedef float real;`` style aliases in a kernel source (so ``real`` decodes as float)."""
    return {alias: target for target, alias in re.findall(_TYPEDEF, source)}
