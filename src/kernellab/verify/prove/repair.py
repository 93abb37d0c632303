"""Rules of SPIR-V that clspv's ``-O0`` module breaks where what it means is plain, repaired
before the engine reads it (docs/verify-prove.md, "OpenCL C front end").

spirv-val refuses these modules, and the engine reads only modules spirv-val takes (its typing
is what the engine's memory model stands on). These breaks have one meaning and a valid spelling:

- a 64-bit atomic without the ``Int64Atomics`` capability (clspv declares none for
  ``atom_add`` on a ``long``): the capability is added; it changes no instruction;
- an ``OpPhi`` of pointers whose result is a pointer to an array's element type and one of
  whose incoming values is a pointer to the whole array (``p = c ? mine1 : mine2`` with
  ``local float4 mine1[N]``, where C's array decays to a pointer to its first element): that
  incoming value becomes an ``OpAccessChain`` to element 0 in the predecessor block, the same
  address with the phi's type;
- an ``OpLoad`` typed as a twin of its pointer's pointee (clspv declares an array type twice,
  once with an ``ArrayStride`` for memory with an explicit layout and once without, and loads a
  private array through a pointer to one as the other): typed as the pointee, the same value
  (a value has no layout);
- a barrier whose semantics are computed at run time (``barrier(x)``, :mod:`.barrier_flags`): a
  switch over the values they can take, each case the barrier with a constant;
- a block that branches to itself without a loop header (``while (true) {}``): the loop header's
  ``OpLoopMerge``, with an unreachable merge block (the loop has no exit), which changes no
  instruction that runs; only where the code no path reaches is nothing but branches (clspv
  leaves the code before such a loop unreachable behind an entry block that returns at once).

Every other break stays refused with spirv-val's message (:func:`kernellab.verify.prove.opencl.compile_source`).
"""
from __future__ import annotations

from kernellab.verify.prove import atomic_casts, barrier_flags
from kernellab.verify.prove.spirv_edit import OP_BRANCH, OP_LABEL, OP_LOAD, OP_TYPE_POINTER, OP_UNREACHABLE, Words, make

_CAPABILITY, _TYPE_INT, _TYPE_ARRAY, _TYPE_POINTER, _CONSTANT, _VARIABLE = 17, 21, 28, 32, 43, 59
_LABEL, _PHI, _ACCESS_CHAIN, _LOOP_MERGE, _SELECTION_MERGE = 248, 245, 65, 246, 247
_INT64_ATOMICS = 12
#: OpAtomicLoad ... OpAtomicXor, OpAtomicFlagTestAndSet/Clear, OpAtomicIIncrement... (result typed)
_ATOMICS = set(range(227, 243)) - {228}  # OpAtomicStore (228) has no result type
_ATOMIC_STORE = 228
#: the instructions that end a block
_TERMINATORS = {249, 250, 251, 252, 253, 254, 255, 4416}


def repaired(spirv: bytes) -> bytes | None:
    """``spirv`` with the breaks above repaired, or None where it has none of them."""
    words = Words(spirv)
    changed = _add_int64_atomics(words.insts) | _phis_of_arrays(words.insts, words.header) | \
        _load_twins(words) | barrier_flags.split(words) | _self_loops(words) | atomic_casts.rewrite(words)
    return words.data() if changed else None


def _op(inst: list[int]) -> int:
    return inst[0] & 0xFFFF


def _add_int64_atomics(insts: list[list[int]]) -> bool:
    ints = {i[1]: i[2] for i in insts if _op(i) == _TYPE_INT}
    types: dict[int, int] = {}  # result id -> result type, for an OpAtomicStore's value
    for i in insts:
        if _op(i) in _ATOMICS or _op(i) == _CONSTANT:
            types[i[2]] = i[1]
    wide = any((_op(i) in _ATOMICS and ints.get(i[1]) == 64)
               or (_op(i) == _ATOMIC_STORE and ints.get(types.get(i[4], -1)) == 64) for i in insts)
    capabilities = [k for k, i in enumerate(insts) if _op(i) == _CAPABILITY]
    if not wide or not capabilities or any(insts[k][1] == _INT64_ATOMICS for k in capabilities):
        return False
    insts.insert(capabilities[-1] + 1, [(2 << 16) | _CAPABILITY, _INT64_ATOMICS])
    return True


def _phis_of_arrays(insts: list[list[int]], header: list[int]) -> bool:
    pointers = {i[1]: (i[2], i[3]) for i in insts if _op(i) == _TYPE_POINTER}  # id -> (storage, pointee)
    arrays = {i[1]: i[2] for i in insts if _op(i) == _TYPE_ARRAY}  # id -> element type
    ints = {i[1] for i in insts if _op(i) == _TYPE_INT and i[2] == 32}
    zero = next((i[2] for i in insts if _op(i) == _CONSTANT and i[1] in ints and i[3] == 0), None)
    variables = {i[2]: i[1] for i in insts if _op(i) == _VARIABLE}  # id -> pointer type
    if zero is None:
        return False
    # (predecessor label, incoming id, wanted type) -> the new id, made once
    made: dict[tuple[int, int, int], int] = {}
    for phi in (i for i in insts if _op(i) == _PHI):
        want = pointers.get(phi[1])
        for k in range(3, len(phi), 2):
            got = pointers.get(variables.get(phi[k], -1))
            if want is None or got is None or got[0] != want[0] or arrays.get(got[1]) != want[1]:
                continue
            key = (phi[k + 1], phi[k], phi[1])
            if key not in made:
                made[key] = header[3]
                header[3] += 1
            phi[k] = made[key]
    if not made:
        return False
    for (label, incoming, want_type), new in made.items():
        start = next(n for n, i in enumerate(insts) if _op(i) == _LABEL and i[1] == label)
        end = next(n for n in range(start, len(insts)) if _op(insts[n]) in _TERMINATORS)
        if end > start and _op(insts[end - 1]) in (_LOOP_MERGE, _SELECTION_MERGE):
            end -= 1  # a merge instruction stays just before its branch
        insts.insert(end, [(5 << 16) | _ACCESS_CHAIN, want_type, new, incoming, zero])
    return True


def _self_loops(words: Words) -> bool:
    """A block ending ``OpBranch`` to itself without a merge instruction made a loop header: its own
    continue target, with a new merge block that is unreachable (the loop has no exit). Only in a
    function whose blocks that no path from its entry reaches hold nothing but branches and line
    information: clspv compiles ``A[i] = 1; while (true) {}`` to an entry block that returns at
    once, the store and the loop left unreachable (the module does not do what the source does),
    and ``while (true) {}`` alone to the same return with only the empty loop unreachable."""
    changed = False
    for first, last in reversed(_functions(words.insts)):  # from the end: the positions found hold
        blocks = _blocks(words.insts, first, last)
        if not blocks:
            continue
        reached = _reachable(words, blocks, words.definitions())
        if any(_op(words.insts[k]) not in _TRIVIAL for label, (a, b) in blocks.items() if label not in reached
               for k in range(a, b + 1)):
            continue
        for label, (_, b) in sorted(blocks.items(), key=lambda x: -x[1][0]):
            inst = words.insts[b]
            if _op(inst) == OP_BRANCH and inst[1] == label and _op(words.insts[b - 1]) not in (_LOOP_MERGE,
                                                                                              _SELECTION_MERGE):
                merge = words.new_id()
                words.insts[b:b + 1] = [make(_LOOP_MERGE, merge, label, 0), inst,
                                        make(OP_LABEL, merge), make(OP_UNREACHABLE)]
                changed = True
    return changed


#: what an unreachable block may hold for :func:`_self_loops` (OpLabel, OpLine, OpNoLine, OpBranch)
_TRIVIAL = {OP_LABEL, 8, 317, OP_BRANCH}


def _functions(insts: list[list[int]]) -> list[tuple[int, int]]:
    """(first, last) instruction positions of every function body."""
    out, start = [], None
    for k, inst in enumerate(insts):
        if _op(inst) == 54:  # OpFunction
            start = k
        elif _op(inst) == 56 and start is not None:  # OpFunctionEnd
            out.append((start, k))
    return out


def _blocks(insts: list[list[int]], first: int, last: int) -> dict[int, tuple[int, int]]:
    """Every block of a function by label: (position of its label, position of its terminator),
    in the function's order (the first is the entry)."""
    out: dict[int, tuple[int, int]] = {}
    label = None
    for k in range(first, last):
        if _op(insts[k]) == OP_LABEL:
            label = (insts[k][1], k)
        elif _op(insts[k]) in _TERMINATORS and label is not None:
            out[label[0]] = (label[1], k)
            label = None
    return out


def _reachable(words: Words, blocks: dict[int, tuple[int, int]], defs: dict[int, list[int]]) -> set[int]:
    """The blocks a path from the entry (the first block) reaches."""
    insts = words.insts
    todo, seen = [next(iter(blocks))], set()
    while todo:
        label = todo.pop()
        if label in seen or label not in blocks:
            continue
        seen.add(label)
        end = insts[blocks[label][1]]
        if _op(end) == OP_BRANCH:
            todo.append(end[1])
        elif _op(end) == 250:  # OpBranchConditional
            todo += end[2:4]
        elif _op(end) == 251:  # OpSwitch: selector, default, then (literal, label) pairs
            selector = defs.get(words.result_type(end[1], defs) or -1, [0, 0, 32])
            step = 1 + (2 if selector[2] > 32 else 1)  # a literal of a 64-bit selector takes two words
            todo += [end[2], *end[3 + step - 1::step]]
    return seen


def _load_twins(words: Words) -> bool:
    """Every ``OpLoad`` typed as a twin of its pointer's pointee (:meth:`Words.same_type`) typed as
    the pointee."""
    defs = words.definitions()
    changed = False
    for load in (i for i in words.insts if _op(i) == OP_LOAD):
        pointer = defs.get(words.result_type(load[3], defs) or -1)
        if pointer is None or _op(pointer) != OP_TYPE_POINTER or pointer[3] == load[1]:
            continue
        if words.same_type(pointer[3], load[1], defs):
            load[1] = pointer[3]
            changed = True
    return changed
