"""Rules of SPIR-V that clspv's ``-O0`` module breaks where what it means is plain, repaired
before the engine reads it (docs/verify-prove.md, "OpenCL C front end").

spirv-val refuses these modules, and the engine reads only modules spirv-val takes (its typing
is what the engine's memory model stands on). Two breaks have one meaning and a valid spelling:

- a 64-bit atomic without the ``Int64Atomics`` capability (clspv declares none for
  ``atom_add`` on a ``long``): the capability is added; it changes no instruction;
- an ``OpPhi`` of pointers whose result is a pointer to an array's element type and one of
  whose incoming values is a pointer to the whole array (``p = c ? mine1 : mine2`` with
  ``local float4 mine1[N]``, where C's array decays to a pointer to its first element): that
  incoming value becomes an ``OpAccessChain`` to element 0 in the predecessor block, the same
  address with the phi's type.

Every other break stays refused with spirv-val's message (:func:`kernellab.verify.prove.opencl.compile_source`).
"""
from __future__ import annotations

from kernellab import spirv_format

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
    words = list(spirv_format.words(spirv))
    insts = [words[pos:pos + count] for pos, count, _ in spirv_format.instructions(words)]
    header = words[:5]
    changed = _add_int64_atomics(insts) | _phis_of_arrays(insts, header)
    if not changed:
        return None
    out = header + [w for inst in insts for w in inst]
    return b"".join(w.to_bytes(4, "little") for w in out)


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
