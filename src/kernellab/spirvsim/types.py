"""SPIR-V types as the interpreter sees them: kinds, NumPy dtypes and byte layouts.

Buffers use the explicit layout of their ``Offset``/``ArrayStride`` decorations; workgroup,
function and private memory have no layout in SPIR-V, so they get a packed natural one (only the
interpreter ever addresses them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}
_SINT = {8: np.int8, 16: np.int16, 32: np.int32, 64: np.int64}
_FLOAT = {16: np.float16, 32: np.float32, 64: np.float64}


@dataclass(eq=False)
class Type:
    """One SPIR-V type. ``kind`` is void, bool, int, float, vector, array, runtime_array, struct,
    pointer or function."""

    id: int
    kind: str
    width: int = 0  # bits, for int and float
    signed: bool = False
    elem: Type | None = None  # vector/array component, pointer pointee
    count: int = 0  # vector components, array length
    members: tuple[Type, ...] = ()
    offsets: tuple[int, ...] = ()  # struct member byte offsets
    stride: int = 0  # array stride in bytes
    storage: str = ""  # pointer storage class
    name: str = ""
    #: (byte offset, scalar type) of every scalar inside a value of this type, in component order
    leaves: list[tuple[int, Type]] = field(default_factory=list)
    size: int = 0  # bytes a value occupies (0 for runtime arrays)

    @property
    def scalar(self) -> bool:
        return self.kind in ("int", "float", "bool")

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of a scalar's lane array; integers are kept unsigned (SPIR-V integer
        instructions choose signedness per instruction, not per value)."""
        if self.kind == "int":
            return np.dtype(_UINT[self.width])
        if self.kind == "float":
            return np.dtype(_FLOAT[self.width])
        if self.kind == "bool":
            return np.dtype(np.bool_)
        raise TypeError(f"{self.kind} has no dtype")

    @property
    def sdtype(self) -> np.dtype:
        """The signed view of an integer scalar."""
        return np.dtype(_SINT[self.width])

    @property
    def nbytes(self) -> int:
        """Bytes one scalar occupies in memory (booleans are not storable in buffers; 4 elsewhere)."""
        return 4 if self.kind == "bool" else self.width // 8

    def describe(self) -> str:
        if self.kind in ("int", "float"):
            return f"{'u' if self.kind == 'int' and not self.signed else ''}{self.kind}{self.width}"
        if self.kind in ("vector", "array"):
            return f"{self.kind}<{self.elem.describe() if self.elem else '?'} x {self.count}>"
        return self.kind


def uint_dtype(width: int) -> np.dtype:
    return np.dtype(_UINT[width])


def sint_dtype(width: int) -> np.dtype:
    return np.dtype(_SINT[width])


def finish_layout(t: Type) -> None:
    """Compute ``size`` and ``leaves`` of a composite whose parts are already finished."""
    if t.scalar:
        t.size = t.nbytes
        t.leaves = [(0, t)]
    elif t.kind == "vector":
        assert t.elem is not None
        step = t.elem.nbytes
        t.size = step * t.count
        t.leaves = [(i * step, t.elem) for i in range(t.count)]
    elif t.kind == "array":
        assert t.elem is not None
        if not t.stride:
            t.stride = t.elem.size
        t.size = t.stride * t.count
        t.leaves = [(i * t.stride + o, s) for i in range(t.count) for o, s in t.elem.leaves]
    elif t.kind == "runtime_array":
        assert t.elem is not None
        if not t.stride:
            t.stride = t.elem.size
        t.size = 0
        t.leaves = []
    elif t.kind == "struct":
        end = 0
        if not t.offsets:
            # natural layout: every scalar aligned to its size, the size a multiple of the largest
            # (so arrays of the struct keep every scalar aligned too)
            offsets, pos, largest = [], 0, 1
            for m in t.members:
                align = max((s.nbytes for _, s in m.leaves), default=1)
                largest = max(largest, align)
                pos = (pos + align - 1) // align * align
                offsets.append(pos)
                pos += m.size
            t.offsets = tuple(offsets)
            end = (pos + largest - 1) // largest * largest
        for m, o in zip(t.members, t.offsets):
            end = max(end, o + m.size)
        t.size = end
        t.leaves = [(o + lo, s) for m, o in zip(t.members, t.offsets) for lo, s in m.leaves]
