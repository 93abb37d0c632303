"""Shadow memory: per unit of memory, who accessed it since the last barrier that orders it, to
find races. A unit is a byte, or the smallest scalar the module accesses in that storage class
(every access then covers whole units: see ``dispatch._granule``).

Every access is one of four classes: plain read, plain write, atomic read, atomic write (atomic
read-modify-writes count as atomic writes). Two accesses conflict when at least one writes and
not both are atomic. Per unit and class the shadow keeps:

* **within a workgroup**: the first invocation that accessed the byte in the current
  synchronisation phase (its workgroup and barrier epoch, packed in one ``key``) and one other
  invocation of that phase; an access conflicts with a recorded one of the same key by another
  invocation — nothing between them ordered the two;
* **across workgroups** (storage buffers only): the first invocation ever, and one invocation of
  another workgroup; nothing orders the workgroups of one dispatch, so any recorded access of a
  different workgroup conflicts, whatever the epochs.

Keeping two invocations per unit is enough to name a conflicting partner for every access that
has one: if a unit was touched in one phase by three invocations, any later access differs from
at least one of the two kept. When another workgroup overwrites a unit's within-workgroup
record (of one class), that workgroup's access conflicts with every access of the other classes the
lost record could have conflicted with, and the cross-workgroup record of the unit holds it:
the unit is reported either way.

**Subgroup phases.** When a shader orders accesses with Subgroup-scope barriers and a workgroup
holds several subgroups, each record also keeps its invocation's subgroup phase: two accesses of
one workgroup phase are ordered when both invocations are in one subgroup and their subgroup
phases differ. A new access then replaces a record it follows in that order (same subgroup,
later phase, or the same invocation), and of three mutually unordered records the one whose
subgroup and phase another kept record shares is dropped: every later access that conflicts
with a dropped record conflicts with a kept one (it is unordered with the record of the same
subgroup phase, or is that record's invocation and then unordered with the other).

**Release/acquire.** The two-record argument needs "differs from the invocation", which an
access ordered through atomics (:mod:`kernellab.spirvsim.release`) does not give: it may follow
both kept records and not a dropped one. So where a record of a class was dropped (``crowded``),
that order no longer clears a conflict with the class's records: a false alarm at worst.

All of it is NumPy: one access of ``n`` invocations costs a few fancy-indexing passes, no sort.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from kernellab.records import dataclass

READ, WRITE, ATOMIC_READ, ATOMIC_WRITE = 0, 1, 2, 3
CLASS_NAMES = ("read", "write", "atomic read", "atomic write")

#: the classes each class conflicts with
CONFLICTS: dict[int, tuple[int, ...]] = {
    READ: (WRITE, ATOMIC_WRITE),
    WRITE: (WRITE, READ, ATOMIC_WRITE, ATOMIC_READ),
    ATOMIC_READ: (WRITE,),
    ATOMIC_WRITE: (WRITE, READ),
}

#: a workgroup's key is group * EPOCHS + epoch
EPOCHS = np.int64(1 << 32)


@dataclass
class HappensBefore:
    """Release/acquire order for one instruction's ``n`` accesses: each one's release count, and
    ``ordered(rows, partner, partner_count)``: whether the recorded access of global invocation
    ``partner`` at ``partner_count`` happens before access ``rows`` (:mod:`kernellab.spirvsim.release`)."""

    count: np.ndarray
    ordered: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


@dataclass
class Conflicts:
    """Per access (one invocation's access of ``w`` bytes): whether it conflicts, and with whom."""

    hit: np.ndarray  # bool (n,)
    partner: np.ndarray  # int64 (n,) global invocation number
    partner_inst: np.ndarray  # int32 (n,)
    partner_class: np.ndarray  # int8 (n,)
    across: np.ndarray  # bool (n,): the partner is in another workgroup
    byte: np.ndarray  # int64 (n,): the first conflicting byte address


class Shadow:
    def __init__(self, nbytes: int, group_size: int, across_groups: bool):
        self.n = nbytes
        self.group_size = group_size
        self.across = across_groups
        #: per class, allocated on the class's first access: (first, key, inst, other, other inst)
        #: and across workgroups (first, inst, other of another workgroup, its inst)
        self.cls: list[tuple[np.ndarray, ...] | None] = [None] * 4
        self.gcls: list[tuple[np.ndarray, ...] | None] = [None] * 4
        #: per class, the subgroup phase of ``first`` and of ``other`` (only with subgroup phases)
        self.sep: list[tuple[np.ndarray, np.ndarray] | None] = [None] * 4
        #: per class, the release count of each record (only when atomics synchronise)
        self.times: list[tuple[np.ndarray, ...] | None] = [None] * 4
        #: per class, the units where a record of an invocation was dropped (only when atomics
        #: synchronise): there an access ordered after every kept record may still race with the
        #: dropped one, so release/acquire order does not clear a conflict
        self.crowded: list[np.ndarray | None] = [None] * 4
        self._tag = np.zeros(nbytes, np.int64)

    @property
    def nbytes(self) -> int:
        """Bytes the shadow takes when every access class is in use."""
        return self.bytes_for(self.n, self.across)

    @staticmethod
    def bytes_for(units: int, across_groups: bool) -> int:
        """Bytes a shadow of ``units`` units takes when every access class is in use: what a
        caller checks against its limit before it makes one. (Subgroup phases and release
        counts, kept only for shaders that use them, add up to 24 bytes per unit and class.)"""
        per_class = 4 + 8 + 4 + 4 + 4 + (16 if across_groups else 0)
        return units * (8 + 4 * per_class)

    def _arrays(self, c: int) -> tuple[np.ndarray, ...]:
        a = self.cls[c]
        if a is None:
            n = self.n
            a = self.cls[c] = (np.full(n, -1, np.int32), np.full(n, -1, np.int64), np.zeros(n, np.int32),
                               np.full(n, -1, np.int32), np.zeros(n, np.int32))
            if self.across:
                self.gcls[c] = (np.full(n, -1, np.int32), np.zeros(n, np.int32), np.full(n, -1, np.int32),
                                np.zeros(n, np.int32))
        return a

    def _seps(self, c: int) -> tuple[np.ndarray, np.ndarray]:
        p = self.sep[c]
        if p is None:
            p = self.sep[c] = (np.zeros(self.n, np.int32), np.zeros(self.n, np.int32))
        return p

    def _times(self, c: int) -> tuple[np.ndarray, ...]:
        """Per class, the release count of first, other and the two across-workgroup records."""
        t = self.times[c]
        if t is None:
            t = self.times[c] = tuple(np.zeros(self.n, np.int32) for _ in range(4))
        return t

    def _subgroup(self, lane: np.ndarray, size: int) -> np.ndarray:
        """A number per subgroup of the dispatch, for global invocation numbers ``lane``."""
        gs = self.group_size
        return (lane // gs) * gs + (lane % gs) // size

    def access(self, addr: np.ndarray, lanes: np.ndarray, keys: np.ndarray, cls: int, inst: int,
               same_value: np.ndarray | None = None, value_key: np.ndarray | None = None,
               sub: tuple[int, np.ndarray] | None = None, hb: HappensBefore | None = None) -> Conflicts | None:
        """Check then record one instruction's accesses.

        ``addr`` is (n, w) unit addresses, ``lanes`` (n,) global invocation numbers and ``keys``
        (n,) their workgroup/epoch keys. For writes, ``same_value`` (n,) marks those that store
        what memory already holds, which do not conflict with earlier writes, and ``value_key``
        (n,) is equal for equal values, so writes of one instruction storing the same value at
        one address do not conflict either (benign races). ``sub``: the subgroup size and (n,)
        each invocation's subgroup phase, when Subgroup-scope barriers order accesses. ``hb``:
        each access's release count and what orders a recorded access before it, when atomics
        synchronise invocations (:mod:`kernellab.spirvsim.release`).
        Returns the conflicts, or None when there are none.
        """
        n, w = addr.shape
        flat = addr.reshape(-1)
        lane = np.repeat(lanes, w)
        key = np.repeat(keys, w)
        group = lane // self.group_size
        gs = self.group_size
        hit = np.zeros(flat.shape, bool)
        partner = np.full(flat.shape, -1, np.int64)
        pinst = np.zeros(flat.shape, np.int32)
        pcls = np.zeros(flat.shape, np.int8)
        across = np.zeros(flat.shape, bool)

        times = self._times if hb is not None else None
        rowid = np.repeat(np.arange(n), w) if hb is not None else None

        def note(mask: np.ndarray, who: np.ndarray, what: np.ndarray, c: int, far: bool, when: int = -1) -> None:
            new = mask & ~hit
            if times is not None and hb is not None and rowid is not None and when >= 0 and new.any():
                at = np.nonzero(new)[0]
                t = times(c)[when][flat[at]]
                ordered = hb.ordered(rowid[at], who[at], t)
                crowded = self.crowded[c]
                if crowded is not None:
                    ordered &= ~crowded[flat[at]]
                new[at[ordered]] = False
            if new.any():
                hit[new] = True
                partner[new] = who[new]
                pinst[new] = what[new]
                pcls[new] = c
                across[new] = far

        benign = np.repeat(same_value, w) if same_value is not None else None
        subs = None
        if sub is not None:
            size = sub[0]
            sep = np.repeat(sub[1], w)
            mine = self._subgroup(lane, size)
            subs = (size, sep, mine)
        for c in CONFLICTS[cls]:
            arrays = self.cls[c]
            if arrays is None:
                continue
            first, first_key, first_inst, other, other_inst = arrays
            live = ~benign if benign is not None and c == WRITE else True
            g = self.gcls[c]
            if g is not None:
                gf = g[0][flat]
                note(live & (gf >= 0) & (gf // gs != group), gf, g[1][flat], c, True, 2)
                go = g[2][flat]
                note(live & (go >= 0) & (go // gs != group), go, g[3][flat], c, True, 3)
            f = first[flat]
            same_phase = first_key[flat] == key
            o = other[flat]
            f_phase = o_phase = same_phase
            if subs is not None:  # a subgroup barrier between two invocations of one subgroup orders them
                size, sep, mine = subs
                fsep, osep = self._seps(c)
                f_phase = same_phase & ~((self._subgroup(f, size) == mine) & (fsep[flat] != sep))
                o_phase = same_phase & ~((self._subgroup(o, size) == mine) & (osep[flat] != sep))
            note(live & f_phase & (f >= 0) & (f != lane), f, first_inst[flat], c, False, 0)
            note(live & o_phase & (o >= 0) & (o != lane), o, other_inst[flat], c, False, 1)

        # the instruction's own accesses: several invocations writing one byte at once
        tag = self._tag
        idx = np.arange(flat.size, dtype=np.int64)
        tag[flat] = idx
        winner = tag[flat]
        dup = winner != idx
        if cls == WRITE and dup.any():
            wl = lane[winner]
            clash = dup & (wl != lane)
            if value_key is not None:
                vk = np.repeat(value_key, w)
                clash &= vk[winner] != vk
            note(clash, wl, np.full(flat.shape, inst, np.int32), WRITE, False)
            across[clash & (wl // gs != group)] = True

        before = self._kept(cls, flat) if hb is not None else None
        if subs is None:
            self._record(flat, lane, key, group, cls, inst, dup)
        else:
            self._record_phased(flat, lane, key, group, cls, inst, dup, subs)
        if hb is not None and before is not None:
            self._record_times(flat, lane, cls, inst, np.repeat(hb.count, w))
            self._note_dropped(flat, lane, key, cls, before)

        if not hit.any():
            return None
        hit2 = hit.reshape(n, w)
        first_hit = hit2.argmax(axis=1)
        rows = np.arange(n)
        pick = rows * w + first_hit
        return Conflicts(np.asarray(hit2.any(axis=1)), partner[pick], pinst[pick], pcls[pick], across[pick], flat[pick])

    def _kept(self, cls: int, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The invocations of the records of class ``cls`` at units ``flat``, (m, 4): first,
        other, and the two across workgroups (-1: none), and the within-workgroup records' key."""
        first, first_key, _, other, _ = self._arrays(cls)
        g = self.gcls[cls]
        none = np.full(flat.shape, -1, np.int64)
        cols = [first[flat], other[flat], g[0][flat] if g is not None else none, g[2][flat] if g is not None else none]
        return np.stack(cols, axis=1).astype(np.int64), first_key[flat]

    def _note_dropped(self, flat: np.ndarray, lane: np.ndarray, key: np.ndarray, cls: int,
                      before: tuple[np.ndarray, np.ndarray]) -> None:
        """Mark the units where this instruction dropped an invocation's record of class ``cls``:
        an access of it that no kept record holds, or a record it replaced other than by a later
        barrier phase of the record's own workgroup (the barrier orders that one)."""
        old, old_key = before
        new, _ = self._kept(cls, flat)
        lost = ~(new == lane[:, None]).any(axis=1)
        phase_over = (old_key // EPOCHS == key // EPOCHS) & (old_key != key)
        for k in range(4):
            o = old[:, k]
            gone = (o >= 0) & ~(new == o[:, None]).any(axis=1)
            if k < 2:
                gone &= ~phase_over
            lost |= gone
        if lost.any():
            crowded = self.crowded[cls]
            if crowded is None:
                crowded = self.crowded[cls] = np.zeros(self.n, bool)
            crowded[flat[lost]] = True

    def _record_times(self, flat: np.ndarray, lane: np.ndarray, cls: int, inst: int, count: np.ndarray) -> None:
        """The release count of each record of an invocation accessing its unit again: its latest
        access (a record keeps its first instruction; ordered after the latest access, an access
        is ordered after the earlier ones of that invocation)."""
        first, _, _, other, _ = self._arrays(cls)
        records = [first, other]
        g = self.gcls[cls]
        if g is not None:
            records += [g[0], g[2]]
        for who, t in zip(records, self._times(cls)):
            mine = who[flat] == lane
            t[flat[mine]] = count[mine]

    def _record(self, flat: np.ndarray, lane: np.ndarray, key: np.ndarray, group: np.ndarray, cls: int, inst: int,
                dup: np.ndarray) -> None:
        first, first_key, first_inst, other, other_inst = self._arrays(cls)
        u = ~dup
        ua, ul, uk = flat[u], lane[u], key[u]
        f = first[ua]
        stale = (f < 0) | (first_key[ua] != uk)
        sa = ua[stale]
        first[sa] = ul[stale]
        first_key[sa] = uk[stale]
        first_inst[sa] = inst
        other[sa] = -1
        keep = ~stale & (f != ul)
        other[ua[keep]] = ul[keep]
        other_inst[ua[keep]] = inst
        if dup.any():
            da, dl = flat[dup], lane[dup]
            second = (first[da] != dl) & (first_key[da] == key[dup])
            other[da[second]] = dl[second]
            other_inst[da[second]] = inst
        self._record_across(flat, lane, group, cls, inst, ua, ul)

    def _record_phased(self, flat: np.ndarray, lane: np.ndarray, key: np.ndarray, group: np.ndarray, cls: int,
                       inst: int, dup: np.ndarray, subs: tuple[int, np.ndarray, np.ndarray]) -> None:
        """:meth:`_record` with subgroup phases (see the module's doc)."""
        size, sep, mine = subs
        first, first_key, first_inst, other, other_inst = self._arrays(cls)
        fsep, osep = self._seps(cls)
        u = ~dup
        ua, ul, uk, us, um = flat[u], lane[u], key[u], sep[u], mine[u]
        f, o = first[ua], other[ua]
        fs, os_ = fsep[ua], osep[ua]
        f_sub, o_sub = self._subgroup(f, size), self._subgroup(o, size)
        stale = (f < 0) | (first_key[ua] != uk)
        f_before = ~stale & ((f == ul) | ((f_sub == um) & (fs != us)))
        o_live = ~stale & (o >= 0)
        o_before = o_live & ((o == ul) | ((o_sub == um) & (os_ != us)))
        # a new first: the phase is new, or the new access follows the old first
        new_first = stale | f_before
        drop_other = stale | (f_before & o_before)
        # otherwise the new access takes `other`'s place unless it shares a kept record's subgroup
        # phase while the two kept records differ (then it is the one to drop)
        rest = ~new_first
        kept_differ = (f_sub != o_sub) | (fs != os_)
        like_kept = (f_sub == um) | (o_sub == um)
        new_other = rest & (~o_live | o_before | ~(like_kept & kept_differ))
        a = ua[new_first]
        first[a], first_key[a], first_inst[a], fsep[a] = ul[new_first], uk[new_first], inst, us[new_first]
        other[ua[drop_other]] = -1
        b = ua[new_other]
        other[b], other_inst[b], osep[b] = ul[new_other], inst, us[new_other]
        if dup.any():
            da, dl = flat[dup], lane[dup]
            second = (first[da] != dl) & (first_key[da] == key[dup])
            other[da[second]] = dl[second]
            other_inst[da[second]] = inst
            osep[da[second]] = sep[dup][second]
        self._record_across(flat, lane, group, cls, inst, ua, ul)

    def _record_across(self, flat: np.ndarray, lane: np.ndarray, group: np.ndarray, cls: int, inst: int,
                       ua: np.ndarray, ul: np.ndarray) -> None:
        gs = self.group_size
        g = self.gcls[cls]
        if g is not None:
            gfirst, gfirst_inst, gother, gother_inst = g
            empty = gfirst[ua] < 0
            gfirst[ua[empty]] = ul[empty]
            gfirst_inst[ua[empty]] = inst
            # every lane of this instruction counts: the winner may be of another workgroup
            far = (gfirst[flat] // gs != group) & (gother[flat] < 0)
            gother[flat[far]] = lane[far]
            gother_inst[flat[far]] = inst
