"""Atomics through a cast pointer (``atomic_add((__local int *)A, B)`` with ``__local short *A``),
which clspv's ``-O0`` module writes through a pointer to the narrower type and which SPIR-V's
logical addressing cannot spell (docs/verify-prove.md, "clspv modules spirv-val refuses").

A C pointer cast keeps the address and reads the memory there as the new type: the atomic is a
32-bit read-modify-write of the 4 bytes at A. clspv uses the ``short`` pointer as it is (an
``OpAtomicIAdd %uint`` through a pointer to ``ushort``, or through an access chain retyped to a
runtime array), which spirv-val refuses; an ``OpBitcast`` of the pointer is refused too
("Instruction may not have a logical pointer operand"). Such an atomic becomes a call of a marker
function (its body adds :data:`MAGIC`, by which the engine knows it; it is never run) given the
pointer's memory object declaration, the access chain's indexes up to it, and the atomic's opcode:
the engine walks the indexes over the declaration's own type, as the access chains would, and makes
the atomic of the call's result type at that byte offset (``Encoder.atomic_cast``). The access
chains left unused are removed. Only between types whose layout is C's (integers, floats, vectors
of 2 or 4, arrays of them: a 3-component vector is 16 bytes in OpenCL C and 12 in SPIR-V's natural
layout), and for atomics with a result (``OpAtomicStore`` through a cast pointer stays refused).
"""
from __future__ import annotations

from kernellab.verify.prove.spirv_edit import (
    OP_ACCESS_CHAIN,
    OP_CONSTANT,
    OP_FUNCTION,
    OP_FUNCTION_END,
    OP_LABEL,
    OP_LINE,
    OP_TYPE_ARRAY,
    OP_TYPE_POINTER,
    OP_TYPE_RUNTIME_ARRAY,
    OP_TYPE_VECTOR,
    OP_VARIABLE,
    Words,
    make,
    op,
)

#: what the marker's body adds to its opcode argument: the engine knows the marker by it
MAGIC = 0x4B4C4341
_IN_BOUNDS_ACCESS_CHAIN, _TYPE_STRUCT, _TYPE_INT, _TYPE_FLOAT, _TYPE_FUNCTION = 66, 30, 21, 22, 33
_FUNCTION_PARAMETER, _FUNCTION_CALL, _RETURN_VALUE, _UNDEF, _IADD = 55, 57, 254, 1, 128
#: OpAtomicLoad ... OpAtomicXor with a result (OpAtomicStore, 228, has none)
_ATOMICS = set(range(227, 243)) - {228}


def rewrite(words: Words) -> bool:
    """Every atomic through a pointer to another type than its own made a marker call; whether any was."""
    defs = words.definitions()
    casts = [(inst, path) for inst in words.insts if op(inst) in _ATOMICS
             for path in [_path(words, defs, inst)] if path is not None]
    if not casts:
        return False
    uint = next(i[1] for i in words.insts if op(i) == _TYPE_INT and i[2:] == [32, 0])
    markers: dict[tuple[int, ...], int] = {}
    dropped: set[int] = set()
    for inst, (base, indexes, chains) in casts:
        pointer_type = words.result_type(base, defs)
        assert pointer_type is not None
        params = (inst[1], pointer_type, *[words.result_type(i, defs) or uint for i in indexes], uint)
        if params not in markers:
            markers[params] = _marker(words, params, uint)
        storage = defs[pointer_type][2]
        words.pointer_type(storage, inst[1])  # the pointer the engine reads the atomic through
        code = words.constant(uint, op(inst))
        inst[:] = make(_FUNCTION_CALL, inst[1], inst[2], markers[params], base, *indexes, code)
        dropped |= set(chains)
    _drop_unused(words, dropped)
    return True


def _plain(defs: dict[int, list[int]], tid: int) -> bool:
    """Whether a value of type ``tid`` is laid out as C lays it out (see the module's docstring)."""
    t = defs.get(tid)
    if t is None:
        return False
    if op(t) in (_TYPE_INT, _TYPE_FLOAT):
        return True
    if op(t) == OP_TYPE_VECTOR:
        return t[3] in (2, 4) and _plain(defs, t[2])
    return op(t) in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY) and _plain(defs, t[2])


def _indexed(defs: dict[int, list[int]], base: int, indexes: list[int]) -> int | None:
    """The type ``indexes`` reach from the type ``base``, as an access chain walks it."""
    t = base
    for ix in indexes:
        d = defs.get(t)
        if d is None:
            return None
        if op(d) in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY, OP_TYPE_VECTOR):
            t = d[2]
        elif op(d) == _TYPE_STRUCT:
            k = defs.get(ix)
            if k is None or op(k) != OP_CONSTANT or not 0 <= k[3] < len(d) - 2:
                return None
            t = d[2 + k[3]]
        else:
            return None
    return t


def _path(words: Words, defs: dict[int, list[int]], atomic: list[int]) -> tuple[int, list[int], list[int]] | None:
    """(memory object declaration, indexes, access chains walked) of an atomic whose pointer points
    to another type than its result's, where both are laid out as C lays them out; else None."""
    pointer_type = defs.get(words.result_type(atomic[3], defs) or -1)
    if pointer_type is None or op(pointer_type) != OP_TYPE_POINTER or pointer_type[3] == atomic[1]:
        return None
    base = atomic[3]
    indexes: list[int] = []
    chains: list[int] = []
    while op(defs.get(base, [0])) in (OP_ACCESS_CHAIN, _IN_BOUNDS_ACCESS_CHAIN):
        chain = defs[base]
        chains.append(base)
        indexes = chain[4:] + indexes
        base = chain[3]
    if op(defs.get(base, [0])) not in (OP_VARIABLE, _FUNCTION_PARAMETER):
        return None
    declared = defs.get(words.result_type(base, defs) or -1)
    if declared is None or op(declared) != OP_TYPE_POINTER:
        return None
    reached = _indexed(defs, declared[3], indexes)
    if reached is None or not (_plain(defs, reached) and _plain(defs, atomic[1])):
        return None
    return base, indexes, chains


def _marker(words: Words, params: tuple[int, ...], uint: int) -> int:
    """A marker function ``params[0] (params[1:])`` whose body adds :data:`MAGIC` to its last
    parameter (the atomic's opcode) and returns an undefined value; declared before the module's
    first function."""
    result, *args = params
    function_type = words.new_id()
    where = next(k for k, i in enumerate(words.insts) if op(i) == OP_FUNCTION)
    # the function type goes with the other types, before the first function
    last_type = max(k for k in range(where) if op(words.insts[k]) == _TYPE_FUNCTION)
    words.insts.insert(last_type + 1, make(_TYPE_FUNCTION, function_type, result, *args))
    magic = words.constant(uint, MAGIC)
    fid, ids = words.new_id(), [words.new_id() for _ in args]
    added, value = words.new_id(), words.new_id()
    body = [make(OP_FUNCTION, result, fid, 0, function_type),
            *[make(_FUNCTION_PARAMETER, t, i) for t, i in zip(args, ids)],
            make(OP_LABEL, words.new_id()),
            make(_IADD, uint, added, ids[-1], magic),
            make(_UNDEF, result, value),
            make(_RETURN_VALUE, value),
            make(OP_FUNCTION_END)]
    where = next(k for k, i in enumerate(words.insts) if op(i) == OP_FUNCTION)
    words.insts[where:where] = body
    return fid


def _drop_unused(words: Words, chains: set[int]) -> None:
    """The access chains of ``chains`` no instruction of a function body uses any more, removed
    (clspv's mistyped ones would stay invalid). Uses are any word but an instruction's own result
    type and id, ``OpLine`` left out: a literal equal to the id keeps the chain (then the module
    stays refused, never wrong)."""
    from kernellab.spirvsim.module import core_grammar

    table = core_grammar().instructions
    while True:
        used: set[int] = set()
        inside = False
        for inst in words.insts:
            inside = (inside or op(inst) == OP_FUNCTION) and op(inst) != OP_FUNCTION_END
            spec = table.get(op(inst))
            if inside and op(inst) != OP_LINE and spec is not None:
                used |= set(inst[1 + spec.has_type + spec.has_result:])
        gone = [inst for inst in words.insts if op(inst) in (OP_ACCESS_CHAIN, _IN_BOUNDS_ACCESS_CHAIN)
                and inst[2] in chains and inst[2] not in used]
        if not gone:
            return
        words.insts = [i for i in words.insts if not any(i is g for g in gone)]
