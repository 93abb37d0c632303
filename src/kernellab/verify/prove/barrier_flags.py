"""Barriers whose memory semantics are chosen at run time (``barrier(x)`` with ``x`` a variable),
each made a choice between barriers with constant semantics (docs/verify-prove.md, "clspv
modules spirv-val refuses").

clspv computes a barrier's semantics from OpenCL C's flags with shifts, masks and selects;
spirv-val refuses an ``OpControlBarrier`` or ``OpMemoryBarrier`` whose semantics are not a
constant (a rule of the Shader capability), and the engine reads the semantics as a constant.
The values the semantics can take are found from how they are computed (a mask of a value
leaves the subsets of its bits, a select either side, an or/and/shift of two such sets each
pair), and the barrier becomes an ``OpSwitch`` on the semantics with one case per value, each
a barrier with that value as a constant (any other value cannot occur: the default is
unreachable). Every invocation runs the barrier with the semantics it computed, as before.

Invocations of one work-group that compute different flags now reach different barriers, which
the engine reports as barrier divergence: OpenCL C requires the same flags in every work-item
of the work-group ("The values of flags and scope must be the same for all work-items in the
work-group", OpenCL C 3.0, "Synchronization Functions"), and Oclgrind, which replays it, reports
a barrier reached with other flags as divergence too.
"""
from __future__ import annotations

from kernellab.verify.prove.spirv_edit import (
    OP_BITWISE_AND,
    OP_BITWISE_OR,
    OP_CONSTANT,
    OP_CONTROL_BARRIER,
    OP_LABEL,
    OP_LINE,
    OP_LOOP_MERGE,
    OP_MEMORY_BARRIER,
    OP_NO_LINE,
    OP_PHI,
    OP_SELECT,
    OP_SELECTION_MERGE,
    OP_SHIFT_LEFT_LOGICAL,
    OP_SHIFT_RIGHT_LOGICAL,
    OP_SWITCH,
    OP_UNREACHABLE,
    TERMINATORS,
    Words,
    make,
    op,
)

#: the most values a barrier's semantics are enumerated for (clspv's flags give at most 9)
MAX_VALUES = 64
_COPY_OBJECT, _BITWISE_XOR, _IADD, _TYPE_INT = 83, 198, 128, 21
_MASK = 0xFFFFFFFF


def split(words: Words) -> bool:
    """Every barrier whose semantics are computed made a switch over their values; whether any was."""
    changed = False
    for inst in [i for i in words.insts if op(i) in (OP_CONTROL_BARRIER, OP_MEMORY_BARRIER)]:
        changed |= _split_one(words, inst)
    return changed


def _values(defs: dict[int, list[int]], rid: int, seen: frozenset[int] = frozenset()) -> set[int] | None:
    """Every value the 32-bit integer ``rid`` can take, or None where they are not known or too many."""
    d = defs.get(rid)
    if d is None or rid in seen:
        return None
    seen |= {rid}
    o = op(d)
    if o == OP_CONSTANT:
        t = defs.get(d[1])
        return {d[3]} if t is not None and op(t) == _TYPE_INT and t[2] == 32 else None
    if o == _COPY_OBJECT:
        return _values(defs, d[3], seen)
    if o in (OP_SELECT, OP_PHI):
        options = d[4:6] if o == OP_SELECT else d[3::2]
        out: set[int] = set()
        for x in options:
            got = _values(defs, x, seen)
            if got is None:
                return None
            out |= got
        return out if len(out) <= MAX_VALUES else None
    if o == OP_BITWISE_AND:
        a, b = _values(defs, d[3], seen), _values(defs, d[4], seen)
        if a is None and b is None:
            return None
        if a is None or b is None:  # the unknown value's bits kept where the mask has one: any subset
            masks = a if a is not None else b or set()
            if any(bin(mask).count("1") > 6 for mask in masks):
                return None
            return _limited({s for mask in masks for s in _subsets(mask)})
        return _limited({x & y for x in a for y in b})
    binary = {OP_BITWISE_OR: lambda x, y: x | y, _BITWISE_XOR: lambda x, y: x ^ y,
              _IADD: lambda x, y: (x + y) & _MASK,
              OP_SHIFT_LEFT_LOGICAL: lambda x, y: (x << y) & _MASK if y < 32 else None,
              OP_SHIFT_RIGHT_LOGICAL: lambda x, y: x >> y if y < 32 else None}
    if o in binary:
        a, b = _values(defs, d[3], seen), _values(defs, d[4], seen)
        if a is None or b is None or len(a) * len(b) > MAX_VALUES * MAX_VALUES:
            return None
        results = {binary[o](x, y) for x in a for y in b}
        return None if None in results else _limited(results)  # type: ignore[arg-type]
    return None


def _subsets(mask: int) -> list[int]:
    bits = [1 << k for k in range(32) if mask >> k & 1]
    return [sum(b for k, b in enumerate(bits) if n >> k & 1) for n in range(1 << len(bits))]


def _limited(values: set[int]) -> set[int] | None:
    return values if len(values) <= MAX_VALUES else None


def _split_one(words: Words, barrier: list[int]) -> bool:
    defs = words.definitions()
    semantics = barrier[3] if op(barrier) == OP_CONTROL_BARRIER else barrier[2]
    scopes = barrier[1:3] if op(barrier) == OP_CONTROL_BARRIER else barrier[1:2]
    if op(defs.get(semantics, [0])) == OP_CONSTANT or any(op(defs.get(s, [0])) != OP_CONSTANT for s in scopes):
        return False
    values = _values(defs, semantics)
    type_id = words.result_type(semantics, defs)
    if not values or type_id is None:
        return False
    at = next(k for k, i in enumerate(words.insts) if i is barrier)
    start = max(k for k in range(at) if op(words.insts[k]) == OP_LABEL)
    end = next(k for k in range(at, len(words.insts)) if op(words.insts[k]) in TERMINATORS)
    if any(op(words.insts[k]) == OP_LOOP_MERGE for k in range(at, end)):
        return False  # a loop header stays one block (its back edges come to its label)
    label = words.insts[start][1]
    line = next((words.insts[k] for k in range(at - 1, start, -1) if op(words.insts[k]) in (OP_LINE, OP_NO_LINE)),
                None)
    keep_line = [list(line)] if line is not None else []
    merge, default = words.new_id(), words.new_id()
    cases = sorted(values)
    case_labels = [words.new_id() for _ in cases]
    constants = [words.constant(type_id, v) for v in cases]  # inserted before the functions
    at = next(k for k, i in enumerate(words.insts) if i is barrier)
    head = [make(OP_SELECTION_MERGE, merge, 0),
            make(OP_SWITCH, semantics, default, *[w for v, c in zip(cases, case_labels) for w in (v, c)])]
    body: list[list[int]] = []
    for case, constant in zip(case_labels, constants):
        fixed = list(barrier)
        fixed[3 if op(barrier) == OP_CONTROL_BARRIER else 2] = constant
        body += [make(OP_LABEL, case), *[list(x) for x in keep_line], fixed, make(249, merge)]  # OpBranch
    body += [make(OP_LABEL, default), make(OP_UNREACHABLE)]
    body += [make(OP_LABEL, merge), *keep_line]
    words.insts[at:at + 1] = head + body
    # the block's terminator is now the merge block's: its successors' phis name that block
    for inst in words.insts:
        if op(inst) == OP_PHI:
            for k in range(4, len(inst), 2):
                if inst[k] == label:
                    inst[k] = merge
    return True
