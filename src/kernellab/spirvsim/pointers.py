"""Buffer device addresses (``PhysicalStorageBuffer``, GLSL's ``buffer_reference``).

The checker gives every buffer a dispatch may reach by address a base address of its own, the
buffers :data:`ADDRESS_STEP` apart (:func:`address_of`), so an address past one buffer's end
lies in no buffer rather than in the next. A device address turned into a pointer
(``OpConvertUToPtr``, or a pointer loaded from memory) becomes a per-invocation choice among
those buffers' regions with the offset into the buffer, so its accesses are checked for bounds
and races against that buffer's shadow memory, as accesses through a descriptor are; an address
inside no buffer points into :data:`NOWHERE`, an empty region, and every access through it is an
``out-of-bounds`` finding naming the address.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernellab.spirvsim.memory import GLOBAL, Ptr, Region
from kernellab.spirvsim.types import Type

#: bytes between the base addresses of two buffers: far past any buffer the checker can hold
ADDRESS_STEP = 1 << 40
#: the resource name of accesses through an address that is inside no buffer
NOWHERE = "(no buffer at this device address)"
#: the type pointer values have in memory
ADDRESS_TYPE = Type(0, "int", width=64)
ADDRESS_TYPE.size, ADDRESS_TYPE.leaves = 8, [(0, ADDRESS_TYPE)]


def address_of(number: int) -> int:
    """The base device address of the ``number``-th addressable buffer (from 0)."""
    return (number + 1) * ADDRESS_STEP


class DeviceMemory:
    """The buffers a dispatch reaches by address: (base address, region)."""

    def __init__(self, buffers: Sequence[tuple[int, Region]]):
        self.nowhere = Region.make(NOWHERE, "PhysicalStorageBuffer", GLOBAL, 1, 0, writable=True)
        ordered = sorted(buffers, key=lambda b: b[0])
        self.bases = np.asarray([b for b, _ in ordered], np.uint64)
        self.regions: tuple[Region, ...] = (self.nowhere, *(r for _, r in ordered))
        self.sizes = np.asarray([r.size for _, r in ordered], np.uint64)

    def pointer(self, address: Any, pointee: Type) -> Ptr:
        """Per lane, the buffer an address points into (:data:`NOWHERE` when none) and the offset."""
        a = np.asarray(address).astype(np.uint64)
        k = np.searchsorted(self.bases, a, side="right").astype(np.int64) - 1  # the last base <= a
        kk = np.maximum(k, 0)
        inside = (k >= 0) & (a - self.bases[kk] < self.sizes[kk]) if self.bases.size else np.zeros(a.shape, bool)
        which = np.where(inside, kk + 1, 0)
        off = np.where(inside, (a - self.bases[kk]).astype(np.int64) if self.bases.size else 0,
                       a.astype(np.int64))
        return Ptr(self.regions[0], pointee, np.asarray(off, np.int64), None, None, (self.regions, np.asarray(which)))

    def address(self, ptr: Ptr) -> np.ndarray:
        """The device address of a pointer into an addressable buffer."""
        regions, which = ptr.regions()
        bases = np.asarray([0 if r is self.nowhere else self._base(r) for r in regions], np.uint64)
        return (bases[np.asarray(which)] + np.asarray(ptr.off).astype(np.uint64)).astype(np.uint64)

    def _base(self, region: Region) -> int:
        for r, b in zip(self.regions[1:], self.bases):
            if r is region:
                return int(b)
        raise ValueError(f"{region.name} has no device address")


def convert(mach: Any, inst: Any, m: np.ndarray, full: bool) -> None:
    """OpConvertUToPtr and OpConvertPtrToU (and OpBitcast between them)."""
    w = inst.words
    device: DeviceMemory | None = mach.device
    if device is None:
        raise mach.m.fail(inst, f"{inst.op}: no buffer has a device address in this dispatch")
    rt = mach.m.types[w[0]]
    v = mach.values[w[2]]
    if rt.kind == "pointer":
        if isinstance(v, tuple):  # a uvec2 bitcast to a pointer
            v = np.asarray(v[0]).astype(np.uint64) | (np.asarray(v[1]).astype(np.uint64) << np.uint64(32))
        if rt.storage != "PhysicalStorageBuffer" or rt.elem is None:
            raise mach.m.fail(inst, f"{inst.op} to a {rt.storage} pointer is not supported")
        mach.set(w[1], device.pointer(v, rt.elem), m, full)
        return
    if not isinstance(v, Ptr):
        raise mach.m.fail(inst, f"{inst.op} of a value that is not a pointer")
    address = device.address(v)
    if rt.kind == "vector":
        mach.set(w[1], ((address & np.uint64(0xFFFFFFFF)).astype(np.uint32), (address >> np.uint64(32)).astype(
            np.uint32)), m, full)
    else:
        mach.set(w[1], address.astype(rt.dtype), m, full)
