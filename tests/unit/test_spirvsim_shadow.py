"""Shadow memory on its own: which access pairs conflict, within a workgroup phase and across
workgroups, and which do not."""
from __future__ import annotations

import numpy as np

from kernellab.spirvsim.shadow import ATOMIC_READ, ATOMIC_WRITE, EPOCHS, READ, WRITE, Shadow

GS = 4  # invocations per workgroup in these tests


def access(sh: Shadow, lanes: list[int], addrs: list[int], cls: int, epoch: int = 0, inst: int = 1, w: int = 4):
    lanes_a = np.asarray(lanes, np.int64)
    addr = np.asarray(addrs, np.int64)[:, None] + np.arange(w)
    keys = (lanes_a // GS) * EPOCHS + epoch
    return sh.access(addr, lanes_a, keys, cls, inst)


def test_write_then_read_by_another_invocation_conflicts():
    sh = Shadow(64, GS, across_groups=False)
    assert access(sh, [0], [0], WRITE, inst=7) is None
    hit = access(sh, [1], [0], READ, inst=9)
    assert hit is not None and hit.hit.tolist() == [True]
    assert hit.partner.tolist() == [0] and hit.partner_inst.tolist() == [7] and not hit.across[0]


def test_same_invocation_and_reads_only_do_not_conflict():
    sh = Shadow(64, GS, across_groups=False)
    assert access(sh, [0], [0], WRITE) is None
    assert access(sh, [0], [0], READ) is None
    assert access(sh, [1, 2, 3], [8, 8, 8], READ) is None
    assert access(sh, [0, 1], [8, 8], READ) is None


def test_barrier_epoch_orders_accesses():
    sh = Shadow(64, GS, across_groups=False)
    access(sh, [0], [0], WRITE, epoch=0)
    assert access(sh, [1], [0], READ, epoch=1) is None
    assert access(sh, [2], [0], WRITE, epoch=1) is not None  # conflicts with the epoch-1 read


def test_one_instruction_writing_a_byte_from_two_invocations_conflicts():
    sh = Shadow(64, GS, across_groups=False)
    hit = access(sh, [0, 1, 2], [0, 4, 0], WRITE)
    assert hit is not None and hit.hit.sum() == 1


def test_partial_overlap_is_found_per_byte():
    sh = Shadow(64, GS, across_groups=False)
    access(sh, [0], [0], WRITE, w=4)
    hit = access(sh, [1], [3], READ, w=2)  # bytes 3..4 overlap byte 3
    assert hit is not None and hit.byte.tolist() == [3]


def test_atomics_conflict_only_with_plain_accesses():
    sh = Shadow(64, GS, across_groups=False)
    assert access(sh, [0, 1, 2], [0, 0, 0], ATOMIC_WRITE) is None
    assert access(sh, [3], [0], ATOMIC_READ) is None
    assert access(sh, [1], [0], READ) is not None  # plain read vs atomic write
    sh2 = Shadow(64, GS, across_groups=False)
    access(sh2, [0], [0], ATOMIC_READ)
    assert access(sh2, [1], [0], READ) is None  # two reads
    assert access(sh2, [2], [0], WRITE) is not None


def test_a_third_invocation_still_finds_a_partner():
    sh = Shadow(64, GS, across_groups=False)
    access(sh, [0], [0], READ)
    access(sh, [1], [0], READ)
    hit = access(sh, [0], [0], WRITE)  # the first reader writes: the other reader is the partner
    assert hit is not None and hit.partner.tolist() == [1]


def test_across_workgroups_no_epoch_orders():
    sh = Shadow(64, GS, across_groups=True)
    access(sh, [0], [0], WRITE, epoch=0)
    hit = access(sh, [GS], [0], READ, epoch=5)  # another workgroup, any phase
    assert hit is not None and hit.across.tolist() == [True] and hit.partner.tolist() == [0]


def test_across_workgroups_reads_and_atomics_are_fine():
    sh = Shadow(64, GS, across_groups=True)
    assert access(sh, [0, GS, 2 * GS], [0, 0, 0], READ) is None
    assert access(sh, [1, GS + 1], [8, 8], ATOMIC_WRITE) is None
    assert access(sh, [3], [8], ATOMIC_WRITE) is None


def test_across_workgroups_record_survives_a_later_phase():
    sh = Shadow(64, GS, across_groups=True)
    access(sh, [0, GS], [0, 0], READ, epoch=0)  # workgroups 0 and 1 read
    access(sh, [1], [0], READ, epoch=1)  # workgroup 0 reads again after its barrier
    hit = access(sh, [2], [0], WRITE, epoch=1)
    assert hit is not None and hit.across[0] and hit.partner[0] // GS == 1
