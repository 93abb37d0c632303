"""Release/acquire state of the SPIR-V checker (kernellab.spirvsim.release): heads of release
sequences, synchronisation slots, scopes. The GLSL cases are in
tests/backend/test_verify_vulkan_subgroups.py (message passing)."""
from __future__ import annotations

import numpy as np

from kernellab.spirvsim.memory import GLOBAL, Region
from kernellab.spirvsim.release import SCOPE_DEVICE, SCOPE_WORKGROUP, SLOTS, Sync

RELEASE_BUFFER = 0x4 | 0x40
ACQUIRE_BUFFER = 0x2 | 0x40


def sync(lanes: int = 8, group: int = 4) -> Sync:
    return Sync(np.arange(lanes, dtype=np.int64), group, 4)


def region() -> Region:
    return Region.make("flags", "StorageBuffer", GLOBAL, 1, 64)


def test_acquire_of_a_release_orders_what_came_before_it() -> None:
    s, r = sync(), region()
    s.atomic(r, np.array([1]), np.array([0]), RELEASE_BUFFER, SCOPE_DEVICE, reads=False, writes=True, rmw=False)
    s.atomic(r, np.array([6]), np.array([0]), ACQUIRE_BUFFER, SCOPE_DEVICE, reads=True, writes=False, rmw=False)
    # lane 1's accesses at count 0 (before its release) are ordered before lane 6's, on buffers only
    assert s.ordered(np.array([6]), np.array([1]), np.array([0]), 1).tolist() == [True]
    assert s.ordered(np.array([6]), np.array([1]), np.array([1]), 1).tolist() == [False]  # after the release
    assert s.ordered(np.array([6]), np.array([1]), np.array([0]), 0).tolist() == [False]  # workgroup memory
    assert s.ordered(np.array([5]), np.array([1]), np.array([0]), 1).tolist() == [False]  # another reader


def test_relaxed_sides_and_narrow_scopes_do_not_synchronise() -> None:
    s, r = sync(), region()
    s.atomic(r, np.array([1]), np.array([0]), 0, SCOPE_DEVICE, reads=False, writes=True, rmw=False)
    s.atomic(r, np.array([6]), np.array([0]), ACQUIRE_BUFFER, SCOPE_DEVICE, reads=True, writes=False, rmw=False)
    assert not s.ordered(np.array([6]), np.array([1]), np.array([0]), 1).any()
    # a Workgroup-scope release read by an invocation of another workgroup (lanes 0-3 and 4-7)
    s.atomic(r, np.array([1]), np.array([1]), RELEASE_BUFFER, SCOPE_WORKGROUP, reads=False, writes=True, rmw=False)
    s.atomic(r, np.array([6, 2]), np.array([1, 1]), ACQUIRE_BUFFER, SCOPE_WORKGROUP, reads=True, writes=False,
             rmw=False)
    assert s.ordered(np.array([6, 2]), np.array([1, 1]), np.array([0, 0]), 1).tolist() == [False, True]


def test_fences_and_release_sequences() -> None:
    s, r = sync(), region()
    s.fence_op(np.array([1]), 0x8 | 0x40, SCOPE_DEVICE)  # memoryBarrierBuffer(): a release (and acquire) fence
    s.atomic(r, np.array([1]), np.array([0]), 0, SCOPE_DEVICE, reads=False, writes=True, rmw=False)
    # a relaxed read-modify-write by lane 3 continues lane 1's sequence
    s.atomic(r, np.array([3]), np.array([0]), 0, SCOPE_DEVICE, reads=True, writes=True, rmw=True)
    s.atomic(r, np.array([6]), np.array([0]), 0, SCOPE_DEVICE, reads=True, writes=False, rmw=False)
    assert not s.ordered(np.array([6]), np.array([1]), np.array([0]), 1).any()  # no acquire fence yet
    s.fence_op(np.array([6]), 0x8 | 0x40, SCOPE_DEVICE)
    assert s.ordered(np.array([6]), np.array([1]), np.array([0]), 1).tolist() == [True]


def test_slots_keep_the_latest_synchronisations() -> None:
    s = sync(lanes=16, group=16)
    for writer in range(SLOTS + 2):
        s._add(np.array([15]), np.array([writer]), np.array([1], np.int32), np.array([0x40], np.int32))
    kept = [s.ordered(np.array([15]), np.array([w]), np.array([0]), 1)[0] for w in range(SLOTS + 2)]
    assert kept == [False, False] + [True] * SLOTS  # the oldest forgotten: a possible false alarm, never a miss
    s._add(np.array([15]), np.array([5]), np.array([3], np.int32), np.array([0x40], np.int32))
    assert s.ordered(np.array([15]), np.array([5]), np.array([2]), 1)[0]

