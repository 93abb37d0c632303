"""Loops with a barrier, summarised by invariants (GPUVerify's barrier intervals in a loop cut).

A loop whose trip count is not a small constant is summarised by one arbitrary iteration
(:meth:`Encoder.summarize_loop`); when its body passes a barrier, that iteration's accesses are
in barrier phases that depend on how many barriers came before it. Each invocation's summary
therefore carries a :class:`Cut`:

- ``n``: the number of the arbitrary iteration (a fresh 64-bit value; nothing is known of it);
- ``head``: the invocation's barrier phases where that iteration starts (fresh values, one per
  memory kind the body's barriers order), at or after those where the loop was entered, and its
  recorded back edges' phases (``back``): the phases where the next iteration starts;
- where the code after the loop goes on from (:meth:`Encoder.exit_state`): a renamed state with
  its own iteration number and phases, at or after every iteration's end, and equal to the
  arbitrary iteration's where that iteration is the last (it takes no back edge).

Phases are barrier counts, as 64-bit values below :data:`PHASE_LIMIT` (a launch passes fewer
barriers than that), so that a sum of a few of them does not wrap and ``<=`` means what it says.

For two invocations :func:`pair_facts` then relates the cuts of one loop (one place, the same
iteration of every enclosing summarised barrier loop) in one work-group, as GPUVerify's
uniformity does: the loop variables equal on entry and kept equal by one iteration of each are
equal at the same iteration (Houdini over the pair); if the back edge is then taken by both or by
neither (lock-step), their phases at the same iteration are equal (no barrier divergence: a
divergent barrier is itself reported), an earlier iteration ends at or before a later one starts,
and the two leave the loop at the same iteration, from equal loop variables and phases. Two
accesses in one barrier interval are then in the same iteration or in the end of one and the start
of the next; without lock-step the phases are left unrelated, which only adds pairs to check.
A barrier in the loop is paired with the other invocation's at the same iteration
(:attr:`BarrierRecord.iteration`) for the divergence check.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any

import z3

from kernellab.records import dataclass

#: width of the barrier-phase counters
PHASE_BITS = 64
#: every phase is a barrier count below this (a launch passes fewer barriers)
PHASE_LIMIT = 1 << 60
#: the memory kinds a barrier orders, as the encoder's environment names their phases
KINDS = ("phase_wg", "phase_sb")


@dataclass
class Cut:
    """The barrier phases of one invocation's summarised loop (see the module's text)."""

    #: iteration numbers of the summarised barrier loops this one is in (outermost first)
    outer: tuple[Any, ...]
    n: Any
    #: memory kind -> the phase where the arbitrary iteration starts (only kinds its barriers order)
    head: dict[str, Any]
    #: memory kind -> the phase where the loop is entered
    entry: dict[str, Any]
    #: the recorded iteration's back edges: (predicate, memory kind -> phase)
    back: list[tuple[Any, dict[str, Any]]] = field(default_factory=list)
    #: the state the code after the loop goes on from: its iteration, phases and loop variables
    exit_n: Any = None
    exit_head: dict[str, Any] = field(default_factory=dict)
    renamed: dict[int, Any] = field(default_factory=dict)


def phase_value(k: int) -> Any:
    return z3.BitVecVal(k, PHASE_BITS)


def open_cut(tag: str, label: int, number: int, outer: tuple[Any, ...], entry_env: dict[Any, Any],
             default: tuple[Any, Any]) -> Cut:
    """A cut for the loop at ``label``: fresh iteration number and head phases."""
    entry = {k: entry_env.get(k, d) for k, d in zip(KINDS, default)}
    head = {k: z3.BitVec(f"{tag}_loop{label}_{k}_{number}", PHASE_BITS) for k in KINDS}
    return Cut(outer, z3.BitVec(f"{tag}_loop{label}_n_{number}", 64), head, entry)


def drop_unchanged(cut: Cut, back_envs: list[dict[Any, Any]], env: dict[Any, Any]) -> None:
    """Phases no iteration changes (a barrier that does not order that memory) stay the entry's."""
    for k in list(cut.head):
        if all(k in e and z3.simplify(e[k]).eq(cut.head[k]) for e in back_envs):
            env[k] = cut.entry[k]
            del cut.head[k]


def _below(x: Any) -> Any:
    return z3.ULT(x, PHASE_LIMIT)


def _back_phase(back: list[tuple[Any, dict[str, Any]]], kind: str) -> Any:
    """The phase where the next iteration starts, on whichever back edge is taken."""
    v = back[-1][1][kind]
    for p, phases in reversed(back[:-1]):
        v = z3.If(p, phases[kind], v)
    return v


def _goes_on(back: list[tuple[Any, Any]]) -> Any:
    return z3.Or(*[p for p, _ in back]) if back else z3.BoolVal(False)


def head_facts(cut: Cut) -> list[Any]:
    """What holds of one invocation's arbitrary iteration: its phases are at or after the loop's
    entry and below the limit."""
    return [z3.And(z3.ULE(cut.entry[k], h), _below(h)) for k, h in cut.head.items()]


def exit_facts(cut: Cut) -> list[Any]:
    """What holds of one invocation's exit state: its phases are at or after the loop's entry and
    every iteration's end; the arbitrary iteration, if it is the last, is the exit state."""
    out = []
    go = _goes_on(cut.back)
    last = [cut.n == cut.exit_n]
    for k, h in cut.head.items():
        x = cut.exit_head[k]
        out += [z3.ULE(cut.entry[k], x), _below(x)]
        if cut.back:
            out.append(z3.Implies(go, z3.ULE(_back_phase(cut.back, k), x)))
        last.append(h == x)
    out.append(z3.Implies(z3.Not(go), z3.And(*last)))
    return out


def pair_facts(loops_a: list[Any], loops_b: list[Any], same_group: Any, sat: Callable[[list[Any]], bool]) -> list[Any]:
    """Facts relating the two invocations' summarised barrier loops (see the module's text).
    ``loops_*``: :attr:`Trace.loops` of each (outer loops before the loops in them);
    ``sat(constraints)``: whether they can hold together with what both invocations assume."""
    by_key = {s.key: s for s in loops_b if getattr(s, "cut", None) is not None}
    facts: list[Any] = []
    for la in loops_a:
        lb = by_key.get(la.key)
        if getattr(la, "cut", None) is not None and lb is not None and len(la.cut.outer) == len(lb.cut.outer):
            facts += _loop_pair(la, lb, same_group, facts, sat)
    return facts


def _loop_pair(la: Any, lb: Any, same_group: Any, known: list[Any], sat: Callable[[list[Any]], bool]) -> list[Any]:
    """The facts of one loop both invocations summarise at one place (``known``: those of the
    loops around it)."""
    ca, cb = la.cut, lb.cut
    ctx = z3.And(same_group, la.entry_pred, lb.entry_pred, *[x == y for x, y in zip(ca.outer, cb.outer)])
    same = z3.And(ctx, ca.n == cb.n)
    facts = list(known)
    rids = [r for r in la.havoc if r in lb.havoc and z3.is_bv(la.havoc[r]) and z3.is_bv(lb.havoc[r])
            and la.havoc[r].sort() == lb.havoc[r].sort()]
    rids = _surviving(rids, lambda r: z3.And(ctx, la.entry[r] != lb.entry[r]), facts, sat)
    while rids:
        keep = _surviving(rids, _step_breaks(la, lb, z3.And(same, *[la.havoc[r] == lb.havoc[r] for r in rids])),
                          facts, sat)
        if len(keep) == len(rids):
            break
        rids = keep
    equal = [la.havoc[r] == lb.havoc[r] for r in rids]
    if equal:
        facts.append(z3.Implies(same, z3.And(*equal)))
    kinds = [k for k in ca.head if k in cb.head]
    if sat(facts + [same, _goes_on(la.back) != _goes_on(lb.back)]) or len(kinds) != len(ca.head) or \
            len(kinds) != len(cb.head) or (kinds and sat(facts + [ctx, z3.Or(*[ca.entry[k] != cb.entry[k]
                                                                              for k in kinds])])):
        return facts[len(known):]  # not in lock-step, or entered at other phases: phases unrelated
    go_a, go_b = _goes_on(ca.back), _goes_on(cb.back)
    for k in kinds:
        ha, hb = ca.head[k], cb.head[k]
        facts.append(z3.Implies(same, ha == hb))
        if ca.back and cb.back:
            facts.append(z3.Implies(z3.And(ctx, z3.ULT(ca.n, cb.n)), z3.And(go_a, z3.ULE(_back_phase(ca.back, k), hb))))
            facts.append(z3.Implies(z3.And(ctx, z3.ULT(cb.n, ca.n)), z3.And(go_b, z3.ULE(_back_phase(cb.back, k), ha))))
    if ca.exit_n is not None and cb.exit_n is not None:
        leave = [ca.exit_n == cb.exit_n] + [ca.exit_head[k] == cb.exit_head[k] for k in kinds]
        leave += [ca.renamed[r] == cb.renamed[r] for r in rids if r in ca.renamed and r in cb.renamed]
        facts.append(z3.Implies(ctx, z3.And(*leave)))
    return facts[len(known):]


def _step_breaks(la: Any, lb: Any, assumed: Any) -> Callable[[int], Any]:
    """Loop variable -> a state where one iteration of each, from ``assumed``, makes it differ."""
    def broken(r: int) -> Any:
        return z3.And(assumed, z3.Or(*[z3.And(pa, pb, na[r] != nb[r]) for pa, na in la.back
                                       for pb, nb in lb.back if r in na and r in nb]))
    return broken


def _surviving(items: list[int], violated: Callable[[int], Any], facts: list[Any],
               sat: Callable[[list[Any]], bool]) -> list[int]:
    """The items ``violated(item)`` cannot make true: one query for a group that all survive."""
    if not items or not sat(facts + [z3.Or(*[violated(r) for r in items])]):
        return list(items)
    if len(items) == 1:
        return []
    mid = len(items) // 2
    return _surviving(items[:mid], violated, facts, sat) + _surviving(items[mid:], violated, facts, sat)
