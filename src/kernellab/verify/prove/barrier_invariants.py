"""GPUVerify's unary barrier invariants in the proof (docs/verify-prove.md, "Barrier invariants").

``__barrier_invariant_N(e, i1, ..., iN); barrier(...);`` says: ``e`` holds, for every invocation
of the work-group, where they all meet at the barrier, and so, after it, ``e`` may be assumed of
the invocation whose local id (dimension 0) is ``ik``, for each ``k`` (GPUVerify's
``UnaryBarrierInvariantDescriptor``: the instantiation guarded by ``0 <= ik < local size``). The
source pass (:func:`kernellab.verify.prove.annotations.barrier_invariant_edits`) writes a check of
``e`` before the barrier and, after it, ``e`` evaluated once per instantiation with the local id
replaced, between two markers. This module gives those markers their meaning.

Why the assumption is sound: each invocation checks ``e`` in its own view of memory, where the
bytes it wrote are exact and the others any value; the reads of the check are accesses like any
other, so where no race is reported no other invocation writes those bytes in that barrier
interval, and nothing is written between the check and the barrier (refused otherwise): ``e``
holds of the state at the barrier. After it, the instantiated expression reads that state as
one fresh array per workgroup variable (:attr:`Region.arrays`), the array this invocation's own
later reads of bytes it did not write see. The assumption is made only where:

- the barrier orders workgroup memory (else there is no one state at the barrier);
- the expression reads workgroup memory or memory no invocation writes (global memory that
  other work-groups may write is not one state at one work-group's barrier);
- its value depends on nothing of this invocation but the instantiated id (its other local ids,
  its group and the launch's arguments are those of the instantiated invocation too): z3 shows
  that the value is the same for any other values of this invocation's own state;
- it is put in :attr:`Encoder.given`, which the checks of what comes after it assume and those of
  what came before do not: a false instantiation (the checks failing, a race before the barrier)
  cannot hide the finding that makes it false.

Where one of these fails the instantiation is not assumed (the check stays): that only makes the
proof weaker, never wrong.

A binary invariant (``__barrier_invariant_binary_N(e, i1, j1, ...)``, ``e`` reading
``__other_int``) is checked between ``__kl_bi_pair`` and ``__kl_bi_check`` over the state the two
invocations of the proof make at the barrier (:meth:`BarrierInvariants.pair_load`); its
instantiations give the other id too (``__kl_bi_other``), distinct from the first.
"""
from __future__ import annotations

import re
from dataclasses import field
from typing import Any

import z3

from kernellab.records import dataclass
from kernellab.verify.prove.spec import OtherRecord, subterms

#: the markers the source pass writes (``annotations.ANNOTATION_HEADER``)
NAMES = ("__kl_bi_check", "__kl_bi_inst", "__kl_bi_assume", "__kl_bi_other", "__kl_bi_pair")
_BYTES = (z3.BitVecSort(64), z3.BitVecSort(8))
#: values the encoder makes fresh that stand for any value (not for a state of this invocation)
_ANY_VALUE = re.compile(r"_(?:ld|f|v|undef|bits|call|atomic)(\d+)$")


@dataclass
class Region:
    """An instantiated barrier invariant being evaluated after its barrier."""

    value: Any  # the instantiation: the local id it names, as this invocation computes it
    symbol: Any  # the local id the expression is evaluated with
    pred: Any
    fresh: int  # the encoder's fresh-value counter where it started
    others: int  # and the count of ``__other_*`` records
    #: workgroup variable -> the symbol its contents at the barrier are read as
    arrays: dict[int, Any] = field(default_factory=dict)
    #: workgroup variable -> its memory log at the barrier (this invocation's view)
    mems: dict[int, Any] = field(default_factory=dict)
    #: a binary invariant's: the other local id's symbol and value
    other: tuple[Any, Any] | None = None
    #: why it cannot be assumed (None: it can)
    refused: str | None = None
    #: it read this invocation's ghost copy (``__array_snapshot``), instantiated with its own id
    ghost: bool = False


class BarrierInvariants:
    """The barrier-invariant markers of one invocation's encoding (``enc``: the
    :class:`~kernellab.verify.prove.encode.Encoder`)."""

    def __init__(self, enc: Any):
        self.enc = enc
        self.region: Region | None = None
        #: while a binary invariant is checked: workgroup variable -> the pair's view of it
        self.pair: dict[int, Any] | None = None
        self.pair_inst: Any = None
        self._ordered: dict[tuple[int, int, int], tuple[bool, Any]] = {}
        #: the workgroup barrier phase of the last check, and the first access record of its checks
        self.checked_phase: Any = None
        self.checked_at = 0
        #: why instantiations were not assumed (for tests and reports)
        self.refused: list[str] = []

    def call(self, env: dict[Any, Any], pred: Any, inst: Any, name: str, arg: Any, check: Any) -> Any:
        if name == "__kl_bi_check":
            phase = self.enc.phase(env)[0]
            if self.checked_phase is None or not phase.eq(self.checked_phase):
                self.checked_phase, self.checked_at = phase, len(self.enc.trace.accesses)
            self.pair = None
            check(pred, arg if z3.is_bool(arg) else arg != 0, inst)
            return None
        if name == "__kl_bi_pair":
            self.pair, self.pair_inst = {}, inst
            return None
        if name == "__kl_bi_inst":
            return self.begin(env, pred, inst, arg)
        if name == "__kl_bi_other":
            region = self.region
            if region is None or region.other is not None or not z3.is_bv(arg) or arg.size() != 32:
                raise self.enc.unmodelled(inst, "a binary barrier invariant's instantiation out of its place")
            region.other = (z3.BitVec(f"{self.enc.tag}_bi_u{next(self.enc.fresh_count)}", 32), arg)
            return region.other[0]
        self.end(arg if z3.is_bool(arg) else arg != 0)
        return None

    def begin(self, env: dict[Any, Any], pred: Any, inst: Any, value: Any) -> Any:
        enc = self.enc
        if self.region is not None:
            raise enc.unmodelled(inst, "a barrier invariant inside another one's instantiation")
        if not z3.is_bv(value) or value.size() != 32:
            raise enc.unmodelled(inst, "a barrier invariant instantiated with a value that is not an int")
        n = next(enc.fresh_count)
        region = Region(value, z3.BitVec(f"{enc.tag}_bi_t{n}", 32), pred, n, len(enc.trace.others))
        self.region = region
        if self.checked_phase is None or not self.ordered(pred, enc.phase(env)[0]):
            region.refused = "its barrier does not order workgroup memory"
        elif any(r.kind not in ("read", "private") for r in enc.trace.accesses[self.checked_at:]):
            region.refused = "a write between its check and its barrier"
        for root in enc.m.variables:
            if enc.m.types[enc.m.type_of[root]].storage != "Workgroup" or root in enc.specs.snapshots:
                continue
            mem = env.get(("mem", root))
            if mem is None:  # no write of it yet: its later reads see these contents too
                mem = enc.fresh_memory()
                env[("mem", root)] = mem
            if not z3.is_const(mem.initial):
                region.refused = "workgroup memory merged from paths after its barrier"
            region.arrays[root] = z3.Array(f"{enc.tag}_bi_s{n}_{root}", *_BYTES)
            region.mems[root] = mem
        return region.symbol

    def ordered(self, pred: Any, phase: Any) -> bool:
        """Whether the barrier just passed ordered workgroup memory (its phase is past the checks')."""
        key = (pred.get_id(), phase.get_id(), self.checked_phase.get_id())
        if key not in self._ordered:  # the terms kept with the answer: their ids are not reused
            same = z3.simplify(phase == self.checked_phase)
            ordered = z3.is_false(same) or not self.enc.may(z3.And(pred, same))
            self._ordered[key] = (ordered, (pred, phase, self.checked_phase))
        return self._ordered[key][0]

    def active(self) -> bool:
        """Whether a load now is one of an instantiation or of a binary invariant's check."""
        return self.region is not None or self.pair is not None

    def load(self, env: dict[Any, Any], p: Any, inst: Any, t: Any) -> Any:
        """A read of the instantiated expression: the state at the barrier, no access of the kernel's."""
        enc, region = self.enc, self.region
        if region is None:
            return self.pair_load(env, p, inst, t)
        if p.root in enc.specs.snapshots:
            return self.ghost_load(env, region, p, inst, t)
        array = region.arrays.get(p.root) if p.storage == "Workgroup" else enc.memory.read_only.get(p.root)
        if array is None:
            region.refused = f"it reads {p.storage} memory that invocations write"
            return enc.fresh(t, "ld")
        return enc.bytes_value(lambda o: z3.Select(array, o), p.offset, t, inst)

    def ghost_load(self, env: dict[Any, Any], region: Region, p: Any, inst: Any, t: Any) -> Any:
        """A read of a ghost copy (``__array_snapshot``): each invocation has its own, so the
        instantiation may read it only where it is this invocation's own id (what the check before
        the barrier showed of its own copy then holds after it: nothing else writes the copy)."""
        enc = self.enc
        if not region.ghost:
            if enc.may(z3.And(region.pred, region.value != enc.ids.local[0])):
                region.refused = "it reads a ghost array (__array_snapshot) for another invocation than its own"
                return enc.fresh(t, "ld")
            region.ghost = True
        return enc.bytes_value(env[("mem", p.root)].load, p.offset, t, inst)

    def pair_load(self, env: dict[Any, Any], p: Any, inst: Any, t: Any) -> Any:
        """A read of a binary invariant's check: the state at the barrier as the two invocations
        make it, the bytes either wrote in this barrier interval and any value elsewhere (a third
        invocation's write of those bytes in the interval races with theirs: reported). The other
        invocation's writes are its view of the same variable at the same place (an ``__other_*``
        record); no access of the kernel's."""
        enc, pair = self.enc, self.pair
        assert pair is not None
        if p.storage != "Workgroup":
            array = enc.memory.read_only.get(p.root)
            if array is None:  # any value: the check can only fail more often
                return enc.fresh(t, "ld")
            return enc.bytes_value(lambda o: z3.Select(array, o), p.offset, t, inst)
        view = pair.get(p.root)
        if view is None:
            mem = env.get(("mem", p.root))
            own = tuple(mem.writes[mem.phase_start:]) if mem is not None else ()
            n = next(enc.fresh_count)
            other = z3.Array(f"{enc.tag}_bi_o{n}", *_BYTES)
            mine = _overlay(z3.Array(f"{enc.tag}_bi_f{n}", *_BYTES), own)
            enc.trace.others.append(OtherRecord((enc.key, self.pair_inst.index, "bi", p.root), mine, other))
            view = pair[p.root] = _overlay(other, own)
        return enc.bytes_value(lambda o: z3.Select(view, o), p.offset, t, inst)

    def end(self, cond: Any) -> None:
        enc, region = self.enc, self.region
        self.region = None
        if region is None:
            return
        cond = z3.simplify(cond)  # the choices the code left with a constant condition go
        if len(enc.trace.others) != region.others:
            region.refused = "it uses __other_* (a binary barrier invariant's)"
        # instantiated with this invocation's own id (its ghost copy read), it is about this
        # invocation alone: what its check showed, of the state at the barrier
        if region.refused is None and not region.ghost and not self.own_state_free(region, cond):
            region.refused = "its value depends on this invocation's own state, not only on its local id"
        if region.refused is not None:
            self.refused.append(region.refused)
            return
        size = enc.ids.local_size[0]
        guard = [region.pred, z3.ULT(region.value, size)]
        # the state at the barrier: for a unary invariant the fresh contents this invocation's later
        # reads of bytes it did not write see (its own bytes there are then any value, which is
        # sound and keeps the checks after it fast: 60 instantiations over its writes made
        # GPUVerify's test_all_unary_high ten times slower); for a binary one, which relates this
        # invocation's bytes to another's, its own writes made in them too
        binary = region.other is not None
        pairs = [(region.symbol, region.value)] + [
            (region.arrays[r], _overlay(m.initial, m.writes) if binary else m.initial) for r, m in region.mems.items()]
        if region.other is not None:  # two distinct invocations of the work-group
            symbol, value = region.other
            guard += [z3.ULT(value, size), value != region.value]
            pairs.append((symbol, value))
        enc.given.append(z3.Implies(z3.And(*guard), z3.substitute(cond, *pairs)))

    def own_state_free(self, region: Region, cond: Any) -> bool:
        """Whether ``cond`` is the same for any other values of this invocation's state than its
        group, its local ids in dimensions 1 and 2, the launch's values, the state at the barrier
        and the values the expression itself made fresh (where the region is reached)."""
        enc = self.enc
        allowed = {region.symbol.get_id()} | {a.get_id() for a in region.arrays.values()}
        if region.other is not None:
            allowed.add(region.other[0].get_id())
        allowed |= {a.get_id() for a in enc.memory.read_only.values()}
        allowed |= {x.get_id() for x in enc.ids.group + enc.ids.local[1:] + enc.ids.num_groups + enc.ids.local_size
                    if z3.is_expr(x)}
        tag = enc.tag + "_"

        def own(x: Any) -> bool:
            if not (z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED) or x.get_id() in allowed:
                return False
            name = x.decl().name()
            made = _ANY_VALUE.search(name)
            if name.startswith(tag) and made is not None and int(made.group(1)) > region.fresh:
                return False  # any value, made by the expression itself
            return name.startswith(tag)  # another invocation's or the launch's symbols are not its own

        mine = list(subterms([cond, region.pred], own))
        if not mine:
            return True
        renamed = [(x, z3.Const(f"{x.decl().name()}_bi_other", x.sort())) for x in mine]
        other_pred = z3.substitute(region.pred, *renamed)
        other_cond = z3.substitute(cond, *renamed)
        return not enc.may(z3.And(region.pred, other_pred, cond != other_cond))


def _overlay(initial: Any, writes: Any) -> Any:
    """The array ``initial`` with the predicated byte writes of a memory log made."""
    array = initial
    for offset, _, byte, pred in writes:
        stored = z3.Store(array, offset, byte)
        array = stored if z3.is_true(pred) else z3.If(pred, stored, array)
    return array
