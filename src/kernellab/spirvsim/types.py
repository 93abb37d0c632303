"""SPIR-V types as the interpreter sees them: kinds, NumPy dtypes and byte layouts.

Buffers use the explicit layout of their ``Offset``/``ArrayStride`` decorations; workgroup,
function and private memory have no layout in SPIR-V, so they get a packed natural one (only the
interpreter ever addresses them).
"""
from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import field
from typing import overload

import numpy as np

from kernellab.records import dataclass

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
    #: (byte offset, scalar type) of every scalar inside a value of this type, in component order;
    #: an array's are computed when asked (:class:`Leaves`): ``shared uint big[1 << 28]`` is one type
    leaves: Sequence[tuple[int, Type]] = field(default_factory=list)
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


#: composites with more scalars than this keep their leaves as a :class:`Leaves`, not a list
_LIST_LEAVES = 4096
#: the most scalars one value may hold (a whole-array load or store, a null constant): a value
#: is one NumPy array per scalar, so a module could ask for millions of them; 64 KiB of
#: workgroup memory in bytes is at most 65,536 scalars
MAX_VALUE_SCALARS = 1 << 17


class Leaves(Sequence[tuple[int, "Type"]]):
    """The leaves of parts laid one after another, each part ``count`` copies of ``inner`` leaves
    ``stride`` bytes apart from ``offset`` on: a sequence whose items exist only when read, so a
    type's size in memory does not grow with its element count."""

    def __init__(self, parts: Sequence[tuple[int, int, int, Sequence[tuple[int, Type]]]]):
        self.parts = [p for p in parts if p[2] and len(p[3])]  # (offset, stride, count, inner)
        self.ends: list[int] = []
        total = 0
        for _, _, count, inner in self.parts:
            total += count * len(inner)
            self.ends.append(total)

    def __len__(self) -> int:
        return self.ends[-1] if self.ends else 0

    @overload
    def __getitem__(self, i: int) -> tuple[int, Type]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[tuple[int, Type]]: ...

    def __getitem__(self, i: int | slice) -> tuple[int, Type] | Sequence[tuple[int, Type]]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        k = bisect.bisect_right(self.ends, i)
        offset, stride, _, inner = self.parts[k]
        q, r = divmod(i - (self.ends[k - 1] if k else 0), len(inner))
        off, scalar = inner[r]
        return offset + q * stride + off, scalar

    def __iter__(self) -> Iterator[tuple[int, Type]]:
        for offset, stride, count, inner in self.parts:
            for q in range(count):
                for off, scalar in inner:
                    yield offset + q * stride + off, scalar


def _leaves(parts: Sequence[tuple[int, int, int, Sequence[tuple[int, Type]]]]) -> Sequence[tuple[int, Type]]:
    lazy = Leaves(parts)
    return list(lazy) if len(lazy) <= _LIST_LEAVES else lazy


def scalar_sizes(t: Type) -> set[int]:
    """The byte sizes of the scalars inside ``t`` (without listing its leaves)."""
    if t.scalar:
        return {t.nbytes}
    if t.kind == "pointer":  # a device address held in memory (the pointee is not inside)
        return {8}
    if t.kind == "struct":
        return set().union(*(scalar_sizes(m) for m in t.members)) if t.members else set()
    return scalar_sizes(t.elem) if t.elem is not None else set()


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
        t.leaves = _leaves([(0, t.stride, t.count, t.elem.leaves)])
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
                align = max(scalar_sizes(m), default=1)
                largest = max(largest, align)
                pos = (pos + align - 1) // align * align
                offsets.append(pos)
                pos += m.size
            t.offsets = tuple(offsets)
            end = (pos + largest - 1) // largest * largest
        for m, o in zip(t.members, t.offsets):
            end = max(end, o + m.size)
        t.size = end
        t.leaves = _leaves([(o, 0, 1, m.leaves) for m, o in zip(t.members, t.offsets)])
