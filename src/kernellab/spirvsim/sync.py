"""Vulkan synchronization between the dispatches of one queue, as the specification defines it
("Synchronization and Cache Control" and Appendix B, "Memory Model"), for compute-shader
accesses to buffers and images.

A recorded dependency (a pipeline barrier's memory, buffer, image or tensor barrier, the full
memory barrier after a dispatch, a submission the host waits for) is a :class:`Dependency`.
:class:`Since` walks the dependencies recorded after one dispatch and says, per byte of each
buffer that dispatch touched, which later accesses are ordered after its accesses:

* **execution** (what a write-after-read needs): a chain of dependencies from the compute stage
  to the compute stage. A dependency's execution scope is every earlier command in its source
  stages, whatever resource its memory barrier names; the next one continues the chain when its
  source stages meet the destination stages reached so far.
* **availability** (what a write-after-write needs, Appendix B "Location-Ordered": the first
  write made available, then an execution chain to the second write): a dependency whose first
  access scope holds the write — compute in its source stages, a write in its source access mask,
  the byte in its resource range.
* **visibility** (what a read-after-write needs on top): a dependency that happens after the
  availability (the same dependency, or one the chain from it reaches) whose second access scope
  holds the read — compute in its destination stages, a read in its destination access mask, the
  byte in its range. A visibility operation makes every available value visible, so availability
  by one barrier and visibility by a later one chain.
"""
from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from kernellab.records import dataclass

#: pipeline stages as bits; ALL meets every stage
COMPUTE, GRAPH, GRAPHICS = 1, 2, 4
ALL = COMPUTE | GRAPH | GRAPHICS


@dataclass(frozen=True)
class Dependency:
    """One dependency recorded by command ``at`` (after that command's own work): stage bits on both sides, the compute-shader
    accesses (``"read"``, ``"write"``) in its first and second access scopes, and its resource:
    ``buffer`` None for all memory, else that buffer's or image's uid with the ``offset``/``size``
    of the bytes it covers (None: to the end; an image barrier's subresource range is the bytes of
    its mip levels in the image's packed texels, :func:`kernellab.spirvsim.images.level_offsets`);
    ``memory`` False for a barrier of a resource the checker does not follow (a tensor), an
    execution dependency only. ``name`` is how a finding names it."""

    at: int
    name: str
    src_stages: int
    dst_stages: int
    src_access: frozenset[str]
    dst_access: frozenset[str]
    buffer: str | None = None
    offset: int = 0
    size: int | None = None
    memory: bool = True

    def scope(self, uid: str, start: int, length: int) -> np.ndarray | bool:
        """Which of ``length`` bytes from ``start`` of buffer ``uid`` its access scopes hold (True:
        all, False: none)."""
        if not self.memory:
            return False
        if self.buffer is None:
            return True
        if self.buffer != uid:
            return False
        end = self.offset + self.size if self.size is not None else start + length
        mask = np.zeros(length, bool)
        mask[max(self.offset - start, 0):max(min(end - start, length), 0)] = True
        return mask


def full(at: int, name: str) -> Dependency:
    """A dependency of all stages and all accesses on all memory: the runner's implicit barrier
    after a dispatch, and a submission the host waits for before the next (the fence signal makes
    every device write available, the next vkQueueSubmit makes it visible to the next batch)."""
    both = frozenset(("read", "write"))
    return Dependency(at, name, ALL, ALL, both, both)


class Since:
    """What the dependencies applied so far (in submission order, all after one dispatch)
    guarantee for that dispatch's compute-shader accesses. ``ranges``: per buffer uid, the
    (offset, length) of the bytes followed."""

    def __init__(self, ranges: Mapping[str, tuple[int, int]]):
        #: destination stages the execution chain from the dispatch has reached
        self.reached = 0
        self.ranges = dict(ranges)
        #: per byte, the destination stages reached since the write was made available (0: not)
        self.available = {uid: np.zeros(n, np.uint8) for uid, (_, n) in self.ranges.items()}
        #: per byte, whether the write is visible to compute-shader reads
        self.visible = {uid: np.zeros(n, bool) for uid, (_, n) in self.ranges.items()}
        #: names of the dependencies applied, for what a finding says is missing
        self.seen: list[Dependency] = []

    def apply(self, *group: Dependency) -> None:
        """Apply the dependencies one command records. They take effect together: one
        barrier of a vkCmdPipelineBarrier2 does not chain with another of the same command, nor
        does its availability reach another's visibility."""
        self.seen += group
        reached = self.reached
        for d in group:
            if d.src_stages & COMPUTE or d.src_stages & reached:
                self.reached |= d.dst_stages
        for uid, av in self.available.items():
            start, length = self.ranges[uid]
            prior = av.copy()
            for d in group:
                before = (prior & d.src_stages) != 0  # made available earlier, and chained to this dependency
                scope = d.scope(uid, start, length)
                now = before | (scope if bool(d.src_stages & COMPUTE) and "write" in d.src_access else False)
                if d.dst_stages & COMPUTE and "read" in d.dst_access:
                    self.visible[uid] |= now & scope
                av[now] |= d.dst_stages

    @property
    def executed(self) -> bool:
        """Whether later compute work is ordered after the dispatch (execution dependency)."""
        return bool(self.reached & COMPUTE)

    def written_available(self, uid: str) -> np.ndarray:
        """Per byte: the dispatch's write is available and chained to later compute work."""
        return (self.available[uid] & COMPUTE) != 0
