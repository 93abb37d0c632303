"""More candidate invariants for a loop summarised by Houdini (:meth:`Encoder.summarize_loop`):
facts about the memory a loop writes and relations between its variables, which the templates
over single loop variables cannot state.

- **kept bytes**: each byte the loop writes at an offset no iteration changes (``A[gid] = 1``
  in every iteration, ``A[gid] += 1; A[gid] -= 1``) holds, at the loop's head, what it held
  where the loop was entered. The offset must be a term of the launch alone (the invocation's
  ids, the launch's read-only inputs, uninterpreted functions), so that it names the same bytes
  in every iteration and in the state after the loop.
- **equal bytes**: a byte the loop writes in two variables at one such offset is the same in
  both (``A[lid]++; B[lid]++`` from equal values).
- **moving words**: a word the loop writes at such an offset minus a loop variable of its
  width keeps its entry value (``A[lid]++`` beside ``i++``).
- **distinct variables**: two integer loop variables differ (``a != b`` for the rotation
  ``t = a; a = b; b = c; c = t``, which keeps all three apart only together).

A candidate is only a candidate: Houdini keeps it where it holds on entry and one arbitrary
iteration that assumes the kept ones preserves it, as for every other template.
"""
from __future__ import annotations

import itertools
import re
from typing import Any

import z3

from kernellab.verify.prove.spec import subterms

#: byte candidates made for one loop at most (each is a conjunct of every later query)
MAX_KEPT_BYTES = 64
#: words of one variable related to the loop variables at most
MAX_MOVING_WORDS = 8
#: loop variables compared pairwise at most (n * (n - 1) / 2 candidates)
MAX_DISTINCT_VARIABLES = 8


def memory_pairs(memory: dict[int, Any], env: dict[Any, Any]) -> list[tuple[Any, Any]]:
    """The havocked contents of each variable the loop writes (``memory``: root -> array) paired
    with their contents in ``env`` (a fresh array where ``env`` has none: any contents)."""
    out = []
    for root, initial in memory.items():
        m: Any = env.get(("mem", root))
        out.append((initial, m.as_array() if hasattr(m, "as_array") else
                    z3.FreshConst(initial.sort(), "kl_unknown_memory")))
    return out


def kept_bytes(tag: str, memory: dict[int, Any], entry_env: dict[Any, Any], envs: list[dict[Any, Any]]) -> list[Any]:
    """Candidates: each byte written by an iteration (whose environments at its back edges are
    ``envs``, run from the entry state) at an offset of the launch alone keeps its entry value."""
    out = []
    for root, offsets in _written(tag, memory, entry_env, envs).items():
        before: Any = entry_env[("mem", root)]
        out += [z3.Select(memory[root], o) == before.load(o) for o in offsets.values()]
    return out[:MAX_KEPT_BYTES]


def equal_bytes(tag: str, memory: dict[int, Any], entry_env: dict[Any, Any], envs: list[dict[Any, Any]]) -> list[Any]:
    """Candidates: a byte that an iteration writes in two variables at one offset of the launch
    alone is the same in both (``A[lid]++; B[lid]++`` from equal values: GPUVerify's
    ``shared_state_two_arrays`` states ``A[lid] == B[lid]`` as the loop's invariant)."""
    written = _written(tag, memory, entry_env, envs)
    out = []
    for r1, r2 in itertools.combinations(sorted(written), 2):
        if memory[r1].sort() != memory[r2].sort():
            continue
        out += [z3.Select(memory[r1], o) == z3.Select(memory[r2], o) for k, o in written[r1].items()
                if k in written[r2]]
    return out[:MAX_KEPT_BYTES]


def moving_words(tag: str, memory: dict[int, Any], entry_env: dict[Any, Any], envs: list[dict[Any, Any]],
                 variables: list[tuple[Any, Any]]) -> list[Any]:
    """Candidates: a word an iteration writes (bytes ``o`` to ``o + n - 1`` at an offset of the
    launch alone, ``n`` a loop variable's width in bytes) moves with that loop variable: ``word -
    v`` is what it was on entry (``A[lid]++`` beside ``i++``; GPUVerify's
    ``barrier_invariants/ghost_array`` states ``A[lid] == A_ghost[lid] + i``). ``variables``:
    each integer loop variable with its value on entry."""
    out = []
    for root, offsets in _written(tag, memory, entry_env, envs).items():
        before: Any = entry_env[("mem", root)]
        widths = sorted({v.size() for v, _ in variables if v.size() % 8 == 0})
        for width in widths:
            n = width // 8
            starts = [o for o in offsets.values()
                      if all(z3.simplify(o + k).get_id() in offsets for k in range(1, n))]
            for o in starts[:MAX_MOVING_WORDS]:
                now = z3.Concat(*[z3.Select(memory[root], z3.simplify(o + k)) for k in reversed(range(n))])
                then = z3.Concat(*[before.load(z3.simplify(o + k)) for k in reversed(range(n))])
                out += [now - v == then - v0 for v, v0 in variables if v.size() == width]
    return out[:MAX_KEPT_BYTES]


def _written(tag: str, memory: dict[int, Any], entry_env: dict[Any, Any],
             envs: list[dict[Any, Any]]) -> dict[int, dict[int, Any]]:
    """For each variable known on entry: the offsets of the launch alone (by z3 id) at which an
    iteration writes it."""
    launch = _launch_term(tag)
    out: dict[int, dict[int, Any]] = {}
    for root in memory:
        before: Any = entry_env.get(("mem", root))
        if not hasattr(before, "writes"):
            continue  # nothing known of it on entry
        n = len(before.writes)
        offsets: dict[int, Any] = {}
        for env in envs:
            m: Any = env.get(("mem", root))
            if not hasattr(m, "writes") or not m.initial.eq(before.initial) or len(m.writes) < n \
                    or any(x is not y for x, y in zip(m.writes[:n], before.writes)):
                continue
            for o, _, _, _ in m.writes[n:]:
                o = z3.simplify(o)
                if launch(o):
                    offsets.setdefault(o.get_id(), o)
        if offsets:
            out[root] = offsets
    return out


def distinct_variables(havoc: dict[int, Any]) -> list[Any]:
    """Candidates: two integer loop variables of one width differ."""
    scalars = [v for v in havoc.values() if z3.is_bv(v)][:MAX_DISTINCT_VARIABLES]
    return [v != w for v, w in itertools.combinations(scalars, 2) if v.sort() == w.sort()]


def _launch_term(tag: str) -> Any:
    """``term`` -> whether its free constants are all the launch's: the invocation's ids, the
    number of work-groups, read-only memory (of the launch or of the work-group), uninterpreted
    functions."""
    names = re.compile(rf"^(?:{re.escape(tag)}_(?:local|group)\d|num_groups\d|mem\d+|"
                       rf"{re.escape(tag)}_group_memory\d+|kl_uf.*)$")

    def free(x: Any) -> bool:
        return z3.is_app(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED

    return lambda term: all(names.match(x.decl().name()) for x in subterms([term], free))


def split_costly(candidates: list[Any]) -> tuple[list[Any], list[Any]]:
    """The candidates z3 settles quickly, and those it may take seconds over: a remainder by a
    constant that is not a power of two (``(i - i0) % 240 == 0``: z3 bit-blasts a divider; by a
    power of two the remainder is a mask), which Houdini then tries one by one within a time
    limit (:meth:`Encoder.costly_candidates`)."""
    cheap: list[Any] = []
    costly: list[Any] = []
    for c in candidates:
        (costly if _odd_remainder_near(c, 3) else cheap).append(c)
    return cheap, costly


def _odd_remainder_near(x: Any, depth: int) -> bool:
    """Whether ``x`` has such a remainder within ``depth`` levels (the templates put it at the
    top, ``Implies(s != 0, (v - v0) % s == 0)``; below are the loop's values, large terms a
    full walk would visit for every candidate)."""
    if _odd_remainder(x):
        return True
    return depth > 0 and z3.is_app(x) and any(_odd_remainder_near(c, depth - 1) for c in x.children())


def _odd_remainder(x: Any) -> bool:
    if not (z3.is_app(x) and x.decl().kind() in (z3.Z3_OP_BUREM, z3.Z3_OP_BSREM, z3.Z3_OP_BSMOD)):
        return False
    d = x.arg(1)
    return z3.is_bv_value(d) and d.as_long() & (d.as_long() - 1) != 0
