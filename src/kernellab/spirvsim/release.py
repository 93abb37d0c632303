"""Release/acquire synchronisation through atomics, as the Vulkan memory model defines it
(SPIR-V's "Memory Semantics", the Vulkan specification's Appendix B "Memory Model":
*synchronizes-with* and *release sequence*).

An atomic write with Release (or AcquireRelease, SequentiallyConsistent) semantics, or an atomic
write after a release fence (``OpMemoryBarrier``/``OpControlBarrier`` with those semantics) in
the same invocation, *heads* a release sequence at its location; read-modify-writes after it
continue the sequence, a plain atomic store by anyone ends it. An atomic read with Acquire
semantics (or a relaxed one followed by an acquire fence) that reads a value of that sequence
synchronises with the head: everything its invocation accessed before the release happens
before everything the reader accesses after the acquire, for the storage classes both name
(``UniformMemory``: buffers, ``WorkgroupMemory``: workgroup memory, ``ImageMemory``: images)
and when each invocation is in the other's memory scope (Device and QueueFamily: all;
Workgroup: one workgroup; Subgroup: one subgroup; Invocation: itself).

The checker follows the interleaving it runs: the value an acquire reads is the one memory holds,
so a reader that runs before the writer (another workgroup of a later batch) reads the old value
and is not synchronised, which is what the memory model says of that execution.

Kept per invocation: ``count``, its release operations so far (every access is recorded in the
shadow memory with the count at the time: a release with count ``B`` covers the accesses with a
count below ``B``), and :data:`SLOTS` synchronisations (the head's invocation, its count, the
storage classes): an access is ordered after a recorded one of invocation ``p`` at count ``t``
when a slot names ``p`` with a count above ``t`` for the access's memory. A reader that
synchronises with more invocations keeps the last :data:`SLOTS` (a forgotten one may give a
false alarm, never a missed race); synchronisation is not transitive here (the same). Where
the shadow memory dropped a record, this order does not clear a conflict (``Shadow.crowded``).
Per atomic location a region keeps the head of its release sequence (``Region.released``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from kernellab.spirvsim.memory import Region

#: synchronisations kept per invocation
SLOTS = 4
SEM_ACQUIRE, SEM_RELEASE, SEM_ACQUIRE_RELEASE, SEM_SEQ_CST = 0x2, 0x4, 0x8, 0x10
RELEASES = SEM_RELEASE | SEM_ACQUIRE_RELEASE | SEM_SEQ_CST
ACQUIRES = SEM_ACQUIRE | SEM_ACQUIRE_RELEASE | SEM_SEQ_CST
#: the storage-class semantics bits, by memory (0 workgroup, 1 buffers, 2 images: Machine._memory)
MEMORY_BITS = (0x100, 0x40, 0x800)
STORAGE = MEMORY_BITS[0] | MEMORY_BITS[1] | MEMORY_BITS[2]
SCOPE_CROSS_DEVICE, SCOPE_DEVICE, SCOPE_WORKGROUP, SCOPE_SUBGROUP, SCOPE_INVOCATION, SCOPE_QUEUE_FAMILY = range(6)


def uses_release_acquire(constants: dict[int, Any], insts: list[tuple[str, tuple[int, ...]]]) -> bool:
    """Whether a module can synchronise through atomics: an atomic instruction, and a release or
    acquire (its own semantics, or a fence's)."""
    atomics = False
    ordering = False
    for op, words in insts:
        sem_words: tuple[int, ...] = ()
        if op == "OpAtomicStore":
            sem_words = (words[2],)
        elif op.startswith("OpAtomic") or op == "OpAtomicFAddEXT":
            sem_words = (words[4], words[5]) if op.startswith("OpAtomicCompareExchange") else (words[4],)
        elif op == "OpMemoryBarrier":
            sem_words = (words[1],)
        elif op == "OpControlBarrier":
            sem_words = (words[2],)
        if op.startswith("OpAtomic"):
            atomics = True
        for w in sem_words:
            value = constants.get(w)
            if value is None or np.ndim(value) or int(value) & (RELEASES | ACQUIRES):
                ordering = True
    return atomics and ordering


class Sync:
    """The release/acquire state of one batch's invocations (``lanes``), whose global numbers
    are ``lane_global`` and workgroup size ``group_size``."""

    def __init__(self, lane_global: np.ndarray, group_size: int, subgroup_size: int):
        lanes = lane_global.size
        self.lane_global = lane_global
        self.gs = group_size
        self.sgs = subgroup_size
        self.count = np.zeros(lanes, np.int32)
        #: the last release fence: its count (0: none), storage classes and scope
        self.fence = np.zeros(lanes, np.int32)
        self.fence_mask = np.zeros(lanes, np.int32)
        self.fence_scope = np.zeros(lanes, np.int32)
        self.slot_lane = np.full((lanes, SLOTS), -1, np.int64)
        self.slot_count = np.zeros((lanes, SLOTS), np.int32)
        self.slot_mask = np.zeros((lanes, SLOTS), np.int32)
        #: a relaxed atomic read's head, waiting for an acquire fence: lane, count, storage classes
        self.pending = np.full((lanes, 3), -1, np.int64)

    # ---- what the shadow memory asks ----------------------------------------------------------

    def ordered(self, lanes: np.ndarray, partner: np.ndarray, partner_count: np.ndarray, memory: int) -> np.ndarray:
        """Per access of batch lane ``lanes[i]``: whether the recorded access of global invocation
        ``partner[i]`` at count ``partner_count[i]`` happens before it through a synchronisation."""
        hit = (self.slot_lane[lanes] == partner[:, None]) & (self.slot_count[lanes] > partner_count[:, None]) \
            & ((self.slot_mask[lanes] & MEMORY_BITS[memory]) != 0)
        return np.asarray(hit.any(axis=1))

    # ---- fences -------------------------------------------------------------------------------

    def fence_op(self, lanes: np.ndarray, sem: int, scope: int) -> None:
        """A memory or control barrier's semantics executed by ``lanes``."""
        if sem & ACQUIRES and sem & STORAGE:
            p = self.pending[lanes]
            got = p[:, 0] >= 0
            if got.any():
                self._add(lanes[got], p[got, 0], p[got, 1].astype(np.int32), (p[got, 2] & sem).astype(np.int32))
            self.pending[lanes] = -1
        if sem & RELEASES and sem & STORAGE:
            self.count[lanes] += 1
            self.fence[lanes] = self.count[lanes]
            self.fence_mask[lanes] = sem & STORAGE
            self.fence_scope[lanes] = scope

    # ---- atomics ------------------------------------------------------------------------------

    def atomic(self, region: Region, lanes: np.ndarray, units: np.ndarray, sem: int, scope: int, *,
               reads: bool, writes: bool, rmw: bool) -> None:
        """An atomic access of ``units`` (one per lane: byte address // 4) by ``lanes``: the
        acquire side first (what the lanes read), then the release side (what they write).
        Lanes updating one unit are applied in lane order (as the machine applies them)."""
        heads = region.released
        if heads is None:  # per 4 bytes: atomics are of aligned 32- or 64-bit scalars
            heads = region.released = np.full((region.data.size // 4 + 1, 4), -1, np.int64)
        if reads:
            h = heads[units]
            ok = (h[:, 0] >= 0) & self._in_scope(lanes, h[:, 0], h[:, 3], scope)
            if ok.any():
                if sem & ACQUIRES:
                    self._add(lanes[ok], h[ok, 0], h[ok, 1].astype(np.int32), (h[ok, 2] & sem).astype(np.int32))
                else:
                    self.pending[lanes[ok]] = h[ok, :3]
        if not writes:
            return
        release = bool(sem & RELEASES and sem & STORAGE)
        if release:
            self.count[lanes] += 1
            new = np.stack([self.lane_global[lanes], self.count[lanes], np.full(lanes.size, sem & STORAGE),
                            np.full(lanes.size, scope)], axis=1)
        else:
            fenced = self.fence[lanes] > 0
            new = np.stack([np.where(fenced, self.lane_global[lanes], -1), self.fence[lanes], self.fence_mask[lanes],
                            self.fence_scope[lanes]], axis=1).astype(np.int64)
            if rmw:  # a read-modify-write continues the release sequence it reads
                new = np.where(fenced[:, None], new, heads[units])
        heads[units] = new

    def _in_scope(self, lanes: np.ndarray, head: np.ndarray, head_scope: np.ndarray, scope: int) -> np.ndarray:
        """Whether each reader and its head's writer are in each other's memory scope."""
        me = self.lane_global[lanes]
        ok = np.ones(lanes.size, bool)
        for s in (head_scope, np.full(lanes.size, scope)):
            ok &= ~((s == SCOPE_WORKGROUP) & (me // self.gs != head // self.gs))
            ok &= ~((s == SCOPE_SUBGROUP) & ((me // self.gs != head // self.gs)
                                             | ((me % self.gs) // self.sgs != (head % self.gs) // self.sgs)))
            ok &= ~((s == SCOPE_INVOCATION) & (me != head))
        return ok

    def _add(self, lanes: np.ndarray, head: np.ndarray, count: np.ndarray, mask: np.ndarray) -> None:
        """Each lane (distinct) synchronises with ``head`` up to ``count``: in the slot that
        already names it, else in place of the oldest (slots shift left; the newest is last)."""
        keep = mask != 0
        lanes, head, count, mask = lanes[keep], head[keep], count[keep], mask[keep]
        if not lanes.size:
            return
        same = self.slot_lane[lanes] == head[:, None]
        known = same.any(axis=1)
        if known.any():
            rows, k = lanes[known], same[known].argmax(axis=1)
            self.slot_count[rows, k] = np.maximum(self.slot_count[rows, k], count[known])
            self.slot_mask[rows, k] |= mask[known]
        rows = lanes[~known]
        for arr, value in ((self.slot_lane, head[~known]), (self.slot_count, count[~known]),
                           (self.slot_mask, mask[~known])):
            arr[rows, :-1] = arr[rows, 1:]
            arr[rows, -1] = value
