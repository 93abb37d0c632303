"""The loads that only an assertion or an invariant reads (GPUVerify's ``__assert``,
``__invariant`` and their global forms, a barrier invariant's check): like GPUVerify, whose
invariants and assertions are no accesses of the kernel's, the proof records no access for them
(no race, no bounds check, no log entry); their values are what any load gives.

A load is one of them when its value reaches a ``__kl_assert`` call and nothing else the kernel
does: it flows only through operations without effects (arithmetic, comparisons, selects,
conversions, composites, phis, address arithmetic, other loads of the same kind, ``__other_*``)
into the assertion. A value that also reaches a store, a branch, a call of another function, an
atomic or a return is the kernel's own: its load stays an access, as does one clspv shares between
the assertion and the kernel's code."""
from __future__ import annotations

from collections.abc import Callable

from kernellab.spirvsim.module import Inst, Module

#: the annotations a value may reach without being the kernel's (the assertion itself)
_SINKS = frozenset({"__kl_assert"})
#: annotations that pass their argument's value on into their result
_PASSING = frozenset({"__kl_other"})
#: operations without effects whose result carries their operands' values
_PURE = frozenset({
    "OpIAdd", "OpISub", "OpIMul", "OpSDiv", "OpUDiv", "OpSRem", "OpSMod", "OpUMod", "OpSNegate",
    "OpFAdd", "OpFSub", "OpFMul", "OpFDiv", "OpFRem", "OpFMod", "OpFNegate",
    "OpIEqual", "OpINotEqual", "OpSLessThan", "OpSLessThanEqual", "OpSGreaterThan", "OpSGreaterThanEqual",
    "OpULessThan", "OpULessThanEqual", "OpUGreaterThan", "OpUGreaterThanEqual",
    "OpFOrdEqual", "OpFOrdNotEqual", "OpFOrdLessThan", "OpFOrdLessThanEqual", "OpFOrdGreaterThan",
    "OpFOrdGreaterThanEqual", "OpFUnordEqual", "OpFUnordNotEqual", "OpFUnordLessThan", "OpFUnordLessThanEqual",
    "OpFUnordGreaterThan", "OpFUnordGreaterThanEqual",
    "OpLogicalAnd", "OpLogicalOr", "OpLogicalNot", "OpLogicalEqual", "OpLogicalNotEqual", "OpSelect",
    "OpBitwiseAnd", "OpBitwiseOr", "OpBitwiseXor", "OpNot", "OpShiftLeftLogical", "OpShiftRightLogical",
    "OpShiftRightArithmetic", "OpUConvert", "OpSConvert", "OpFConvert", "OpConvertFToU", "OpConvertFToS",
    "OpConvertSToF", "OpConvertUToF", "OpBitcast", "OpCompositeConstruct", "OpCompositeExtract",
    "OpCompositeInsert", "OpVectorShuffle", "OpCopyObject", "OpPhi", "OpExtInst",
    "OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain", "OpInBoundsPtrAccessChain", "OpLoad",
})
#: the operand words after the result id that are literals, not ids, by operation
_LITERALS_FROM = {"OpCompositeExtract": 3, "OpCompositeInsert": 4, "OpVectorShuffle": 4, "OpLoad": 3}


def annotation_loads(module: Module, annotation_name: Callable[[int], str | None]) -> frozenset[int]:
    """The result ids of the loads whose values only assertions read. ``annotation_name(fid)``
    names the annotation a function is (None for another function)."""
    users: list[Inst] = [i for f in module.functions.values() for b in f.blocks.values() for i in b.insts]
    real: set[int] = set()  # values the kernel itself uses
    spec: set[int] = set()  # values an assertion reads
    carried: dict[int, list[int]] = {}  # result -> the operand values it carries
    for inst in users:
        w = inst.words
        kind = _kind(inst, annotation_name)
        if kind == "pure":
            carried[w[1]] = _operands(inst)
        elif kind == "sink":
            spec.update(w[3:])
        else:  # its operands (literals too: more values the kernel's, never fewer) are the kernel's
            real.update(w[2:] if inst.typed else w)
    real = _closure(real, carried)
    spec = _closure(spec, carried)
    return frozenset(i.words[1] for i in users if i.op == "OpLoad" and i.words[1] in spec and i.words[1] not in real)


def _kind(inst: Inst, annotation_name: Callable[[int], str | None]) -> str:
    if inst.op == "OpFunctionCall":
        name = annotation_name(inst.words[2])
        if name in _SINKS and inst.words[3:]:
            return "sink"
        return "pure" if name in _PASSING and inst.typed else "effect"
    return "pure" if inst.op in _PURE and inst.typed else "effect"


def _operands(inst: Inst) -> list[int]:
    w = inst.words
    if inst.op == "OpFunctionCall":
        return list(w[3:])
    if inst.op == "OpExtInst":
        return list(w[4:])
    return list(w[2:_LITERALS_FROM.get(inst.op, len(w))])


def _closure(values: set[int], carried: dict[int, list[int]]) -> set[int]:
    """``values`` and every value an effect-free result among them carries, transitively."""
    out, todo = set(values), list(values)
    while todo:
        for operand in carried.get(todo.pop(), ()):
            if operand not in out:
                out.add(operand)
                todo.append(operand)
    return out
