"""GPUVerify's refined atomic abstraction, kept to what is sound: the value an atomic returns is
any value, except that two invocations stepping the same counter get different values.

An atomic read-modify-write returns the value its location held just before it, and the atomics
of one location are totally ordered (its modification order). If every modification of a
variable during the launch adds a constant of one sign (``atomic_inc``, ``atomic_add(p, 4)``,
``atomic_dec``), and the magnitudes of all of them together stay below ``2**width``, then between
two such atomics on one location the location moved by a nonzero amount that cannot wrap back to
where it was: they returned different values. ``A[atomic_inc(&count)] = x`` then writes a slot of
its own in each invocation (GPUVerify's ``atomics/refined_atomic_abstraction`` tests; Bardsley and
Donaldson, "Warps and atomics: beyond barrier synchronization in the verification of GPU
kernels", NFM 2014).

What the conditions rest on, each checked here, else the variable's atomics return any value:

- every atomic that modifies the variable is such a step, of one size, at an offset that is a
  multiple of that size (a misaligned one would change two counters' bytes);
- the location cannot wrap around to a value it returned: where each invocation makes each
  recorded step at most once, the count is at most the launch's invocations (of one work-group,
  for ``__local`` memory, which each group has its own of) times the records, checked against
  ``2**width``; a step in a loop summarised by invariants (its record stands for any number of
  iterations) is taken, as GPUVerify takes every counter, under the assumption that the launch
  steps the counter fewer than ``2**width`` times (GPUVerify: "technically unsound due to machine
  integers, but unlikely in practice");
- a plain write of the variable is ordered before every step by a barrier: in ``__local`` memory,
  every plain write in a barrier interval (a constant phase) before the first step's; a storage
  buffer has no plain write at all (other work-groups' writes are ordered by nothing).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import z3

from kernellab.verify.prove.spec import subterms

#: atomics that add a fixed amount: the amount
_FIXED = {"OpAtomicIIncrement": 1, "OpAtomicIDecrement": -1}


def step(op: str, value: Any) -> int | None:
    """What the atomic ``op`` adds to its location when that is a nonzero constant (``value``: the
    operand of an add or a subtract), else None."""
    if op in _FIXED:
        return _FIXED[op]
    if op not in ("OpAtomicIAdd", "OpAtomicISub") or value is None or not z3.is_bv(value):
        return None
    value = z3.simplify(value)
    if not z3.is_bv_value(value):
        return None
    k = value.as_signed_long()
    return (k if op == "OpAtomicIAdd" else -k) or None


def counter_roots(trace: Any, invocations: dict[str, int], may: Callable[[Any], bool]) -> set[int]:
    """The variables of ``trace`` whose every modification is a counter step (see the module's
    conditions). ``invocations``: how many invocations share a variable of each storage class;
    ``may(c)``: whether ``c`` can hold for the invocation the trace encodes."""
    mods: dict[int, list[Any]] = {}
    for a in trace.accesses:
        if a.storage in ("StorageBuffer", "Workgroup") and a.kind in ("write", "atomic-write"):
            mods.setdefault(a.root, []).append(a)
    out = set()
    for root, records in mods.items():
        steps = [a for a in records if a.kind == "atomic-write"]
        plain = [a for a in records if a.kind == "write"]
        if not steps or any(a.step is None or not z3.is_bv(a.result) for a in steps):
            continue
        sizes = {a.size for a in steps}
        if len(sizes) != 1 or len({a.step > 0 for a in steps}) != 1:
            continue
        size = sizes.pop()
        # a step in a summarised loop is made any number of times: GPUVerify's assumption that
        # the launch steps a counter fewer than 2**width times (docs: "Known gaps")
        looped = any(a.abstract for a in steps)
        if not looped and invocations[steps[0].storage] * sum(abs(a.step) for a in steps) >= 1 << (8 * size):
            continue  # the counter could wrap around to a value it returned before
        if plain and not _ordered_before(plain, steps):
            continue
        misaligned = [z3.And(a.pred, z3.URem(a.offset, size) != 0) for a in steps
                      if not z3.is_false(z3.simplify(z3.URem(a.offset, size) != 0))]
        if misaligned and may(z3.Or(*misaligned)):
            continue
        out.add(root)
    return out


def _ordered_before(plain: list[Any], steps: list[Any]) -> bool:
    """Whether every plain write is in an earlier ``__local`` barrier interval than every step."""
    if steps[0].storage != "Workgroup":
        return False
    phases = [z3.simplify(a.phase_wg) for a in plain + steps]
    if not all(z3.is_bv_value(p) for p in phases):
        return False
    return max(p.as_long() for p in phases[:len(plain)]) < min(p.as_long() for p in phases[len(plain):])


def distinct_results(ta: Any, tb: Any, same_group: Any, invocations: dict[str, int],
                     may: Callable[[Any], bool]) -> list[tuple[Any, set[int]]]:
    """For two traces of distinct invocations: the counter steps of one location that both reach
    (in one work-group, for ``__local`` memory) return different values. Each fact comes with
    the z3 ids of the two values it is about (:func:`relevant`)."""
    roots = counter_roots(ta, invocations, may)
    if not roots:
        return []
    theirs: dict[int, list[Any]] = {}
    for b in tb.accesses:
        if b.root in roots and b.kind == "atomic-write" and z3.is_bv(b.result):
            theirs.setdefault(b.root, []).append(b)
    out = []
    for a in ta.accesses:
        if a.root not in roots or a.kind != "atomic-write":
            continue
        for b in theirs.get(a.root, []):
            if b.result.sort() != a.result.sort():
                continue
            both = [a.pred, b.pred, a.offset == b.offset] + ([same_group] if a.storage == "Workgroup" else [])
            out.append((z3.Implies(z3.And(*both), a.result != b.result), {a.result.get_id(), b.result.get_id()}))
    return out


def relevant(facts: list[tuple[Any, set[int]]], query: Any) -> list[Any]:
    """The facts about values ``query`` mentions (each fact only removes models, so leaving the
    others out of a query can only let it find more)."""
    if not facts:
        return []
    wanted = set().union(*(ids for _, ids in facts))
    mentioned = {x.get_id() for x in subterms([query], lambda x: x.get_id() in wanted)}
    return [f for f, ids in facts if ids & mentioned]

