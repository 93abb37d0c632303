"""AmberScript's data types and their layout in memory (std430, or std140 on request).

A buffer's element is a list of components, each at a byte offset with a NumPy dtype; values
written in ``DATA``, ``FILL`` and ``EXPECT`` fill the components in order, element after element,
skipping padding. The rules are Amber's (docs/amber_script.md, "Buffers"): a vec3 (and a matrix
column of three rows) takes the room of a vec4; in std140 every matrix column takes a vec4's. A
packed format's element is one unsigned word (``..._PACK32``: a uint32) whose bit fields hold
its components, and its values are those words (Amber's src/format.cc).
"""
from __future__ import annotations

import re

from kernellab.records import dataclass

SCALARS = {"int8": "int8", "uint8": "uint8", "int16": "int16", "uint16": "uint16", "int32": "int32",
           "uint32": "uint32", "int64": "int64", "uint64": "uint64", "float16": "float16", "float": "float32",
           "double": "float64"}
#: the numeric kinds of VkFormat component names (``R32G32B32A32_SFLOAT``): a normalized, scaled
#: or sRGB component is stored as the integer it is made of, and DATA and EXPECT give that integer
#: (Amber's Type::IsUnsignedInt / IsSignedInt: ``R8G8B8A8_UNORM`` data is ``255 0 0 255``)
FORMAT_KINDS = {"SFLOAT": "float", "UINT": "uint", "SINT": "int", "UNORM": "uint", "USCALED": "uint",
                "SRGB": "uint", "SNORM": "int", "SSCALED": "int"}

_VEC = re.compile(r"^vec([234])<(\w+)>$")
_MAT = re.compile(r"^mat([234])x([234])<(\w+)>$")
_FORMAT = re.compile(r"^((?:[RGBAD]\d+)+)_([A-Z]+)$")
#: a packed VkFormat (``A2B10G10R10_UNORM_PACK32``, ``E5B9G9R9_UFLOAT_PACK32``): its components
#: are bit fields of one 8-, 16- or 32-bit word
_PACKED = re.compile(r"^((?:[RGBAE]\d+)+)_(UNORM|SNORM|USCALED|SSCALED|UINT|SINT|SRGB|UFLOAT)_PACK(8|16|32)$")


class TypeError_(ValueError):
    """A type name AmberScript does not have (or kernellab does not lay out yet)."""


@dataclass(frozen=True)
class Element:
    """One element of a buffer: components (byte offset, dtype) and its size with padding."""

    name: str
    components: tuple[tuple[int, str], ...]
    size: int

    @property
    def is_float(self) -> bool:
        return all(d.startswith("float") for _, d in self.components)


def _dtype_size(dtype: str) -> int:
    return int(re.sub(r"\D", "", dtype)) // 8


def _columns(name: str, dtype: str, cols: int, rows: int, std140: bool, stride: int | None = None) -> Element:
    size = _dtype_size(dtype)
    if stride is None:
        stride = (4 if rows == 3 or (std140 and cols > 1) else rows) * size
    comps = tuple((c * stride + r * size, dtype) for c in range(cols) for r in range(rows))
    return Element(name, comps, cols * stride)


def element(name: str, std140: bool = False, matrix_stride: int | None = None) -> Element:
    """The layout of a ``DATA_TYPE`` or ``FORMAT`` name; raises :class:`TypeError_`. A matrix's
    columns are ``matrix_stride`` bytes apart where given (a STRUCT member's ``MATRIX_STRIDE``,
    SPIR-V's MatrixStride), else as the layout places them."""
    m = _MAT.match(name)
    if matrix_stride is not None:
        if not (m and m.group(3) in SCALARS):
            raise TypeError_("MATRIX_STRIDE only valid on matrix members")
        size, rows = _dtype_size(SCALARS[m.group(3)]), int(m.group(2))
        if matrix_stride < rows * size or matrix_stride % size:
            raise TypeError_(f"MATRIX_STRIDE {matrix_stride} of {name}: a column is {rows * size} bytes of "
                             f"{size}-byte components")
        return _columns(name, SCALARS[m.group(3)], int(m.group(1)), rows, std140, matrix_stride)
    if name in SCALARS:
        return _columns(name, SCALARS[name], 1, 1, std140)
    m = _VEC.match(name)
    if m and m.group(2) in SCALARS:
        return _columns(name, SCALARS[m.group(2)], 1, int(m.group(1)), std140)
    m = _MAT.match(name)
    if m and m.group(3) in SCALARS:
        return _columns(name, SCALARS[m.group(3)], int(m.group(1)), int(m.group(2)), std140)
    m = _PACKED.match(name)
    if m:
        # Amber's Format gives a packed format one unsigned segment of the word's size: DATA and
        # EXPECT take each element's whole word, its bit fields already placed
        used = sum(int(b) for b in re.findall(r"\d+", m.group(1)))
        if used != int(m.group(3)):
            raise TypeError_(f"format {name}: its components take {used} bits, not the {m.group(3)} of its word")
        return Element(name, ((0, f"uint{m.group(3)}"),), int(m.group(3)) // 8)
    m = _FORMAT.match(name)
    if m and m.group(2) in FORMAT_KINDS:
        bits = [int(b) for b in re.findall(r"\d+", m.group(1))]
        kind = FORMAT_KINDS[m.group(2)]
        offset, comps = 0, []
        for b in bits:
            dtype = f"{kind}{b}"
            if dtype not in SCALARS.values():
                raise TypeError_(f"format {name}: {b}-bit {m.group(2)} components are not supported")
            comps.append((offset, dtype))
            offset += b // 8
        return Element(name, tuple(comps), offset)
    raise TypeError_(f"unknown data type {name!r} (expected int8..uint64, float16, float, double, "
                     "vecN<T>, matCxR<T> or a format such as R32G32B32A32_SFLOAT or R8G8B8A8_UNORM)")


_FORMAT_OF_DTYPE = {"float": "SFLOAT", "uint": "UINT", "int": "SINT"}


def vk_format(elem: Element) -> str:
    """The VkFormat of a buffer's elements, for a texel buffer's view: the FORMAT it was declared
    with, else the one its components make (``vec4<float>``: ``VK_FORMAT_R32G32B32A32_SFLOAT``);
    raises :class:`TypeError_` for an element no format describes (a matrix, padding)."""
    if _FORMAT.match(elem.name) or _PACKED.match(elem.name):
        return "VK_FORMAT_" + elem.name
    dtypes = [d for _, d in elem.components]
    if len(dtypes) > 4 or len(set(dtypes)) != 1 or elem.size != len(dtypes) * _dtype_size(dtypes[0]):
        raise TypeError_(f"{elem.name} is not a texel format (at most 4 components of one type, no padding)")
    bits = _dtype_size(dtypes[0]) * 8
    numeric = _FORMAT_OF_DTYPE[re.sub(r"\d", "", dtypes[0])]
    return "VK_FORMAT_" + "".join(f"{c}{bits}" for c in "RGBA"[:len(dtypes)]) + f"_{numeric}"
