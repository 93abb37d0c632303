"""AmberScript's ``STRUCT``: a buffer element made of named members, laid out by GLSL's std430
(default) or std140 rules, which Amber's own layout follows (src/format.cc): each member at its
``OFFSET`` or the next multiple of its alignment, the struct as long as its ``STRIDE`` or its end
rounded up to its alignment; a struct member is laid out the same way and its values come in
member order. Alignment: a scalar its size, a 2-vector twice that, a 3- or 4-vector four times, a
matrix its column's, a struct its largest member's; std140 rounds a matrix column's and a
struct's up to 16 bytes. A 3-vector is 12 bytes long, so a scalar after it takes its fourth
component's room. A matrix member's ``MATRIX_STRIDE`` puts its columns that many bytes apart
(SPIR-V's MatrixStride; Amber parses it but leaves its layout to the default, a TODO in its
format.cc), its alignment unchanged.
"""
from __future__ import annotations

import re
from dataclasses import field

from kernellab.formats.amber.types import SCALARS, Element, TypeError_, element
from kernellab.records import dataclass

_VEC = re.compile(r"^vec([234])<(\w+)>$")
_MAT = re.compile(r"^mat([234])x([234])<(\w+)>$")


@dataclass
class Member:
    type: str
    name: str
    line: int
    column: int
    #: OFFSET in bytes, or None: the next offset its alignment allows
    offset: int | None = None
    #: MATRIX_STRIDE in bytes (a matrix member's columns that far apart), or None: the layout's
    matrix_stride: int | None = None


@dataclass
class Struct:
    name: str
    line: int
    #: STRIDE in bytes, or None: the members' end rounded up to the struct's alignment
    stride: int | None = None
    members: list[Member] = field(default_factory=list)


def _round(value: int, to: int) -> int:
    return -(-value // to) * to if to else value


def alignment(type_name: str, std140: bool, structs: dict[str, Struct]) -> int:
    """The base alignment of a member of type ``type_name``."""
    if type_name in structs:
        align = max((alignment(m.type, std140, structs) for m in structs[type_name].members), default=1)
        return _round(align, 16) if std140 else align
    m = _VEC.match(type_name)
    if m and m.group(2) in SCALARS:
        size = int(re.sub(r"\D", "", SCALARS[m.group(2)])) // 8
        return size * (2 if m.group(1) == "2" else 4)
    m = _MAT.match(type_name)
    if m and m.group(3) in SCALARS:
        size = int(re.sub(r"\D", "", SCALARS[m.group(3)])) // 8
        column = size * (2 if m.group(2) == "2" else 4)
        return _round(column, 16) if std140 else column
    return max((int(re.sub(r"\D", "", d)) // 8 for _, d in element(type_name).components), default=1)


def struct_element(name: str, std140: bool, structs: dict[str, Struct]) -> Element:
    """The layout of an element of STRUCT ``name``; :class:`TypeError_` names what does not fit
    (an OFFSET before the previous member's end, a STRIDE shorter than the members)."""
    s = structs[name]
    components: list[tuple[int, str]] = []
    end = 0
    for m in s.members:
        member = struct_element(m.type, std140, structs) if m.type in structs \
            else element(m.type, std140, m.matrix_stride)
        start = _round(end, alignment(m.type, std140, structs)) if m.offset is None else m.offset
        if start < end:
            raise TypeError_(f"STRUCT {name}: member {m.name} at OFFSET {start} overlaps the one before it "
                             f"(which ends at byte {end})")
        components += [(start + offset, dtype) for offset, dtype in member.components]
        # a scalar may follow a vec3 in its fourth component's room (GLSL; Amber's packable padding)
        extent = max(o + int(re.sub(r"\D", "", d)) // 8 for o, d in member.components) if _VEC.match(m.type) \
            else member.size
        end = start + extent
    size = _round(end, alignment(name, std140, structs)) if s.stride is None else s.stride
    if size < end:
        raise TypeError_(f"STRUCT {name}: STRIDE {s.stride} is shorter than its members ({end} bytes)")
    return Element(name, tuple(components), size)
