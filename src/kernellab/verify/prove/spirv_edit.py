"""A SPIR-V module held as a list of instructions (each a list of words) for the repairs of
:mod:`kernellab.verify.prove.repair`: new ids, the types and definitions the repairs look up, and
types added where they are missing."""
from __future__ import annotations

from kernellab import spirv_format

OP_CAPABILITY, OP_TYPE_INT, OP_TYPE_VECTOR, OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY = 17, 21, 23, 28, 29
OP_TYPE_POINTER, OP_CONSTANT, OP_VARIABLE, OP_LOAD, OP_ACCESS_CHAIN = 32, 43, 59, 61, 65
OP_DECORATE, OP_MEMBER_DECORATE, OP_BITCAST, OP_SELECT = 71, 72, 124, 169
OP_SHIFT_RIGHT_LOGICAL, OP_SHIFT_LEFT_LOGICAL, OP_BITWISE_OR, OP_BITWISE_AND = 194, 196, 197, 199
OP_PHI, OP_LOOP_MERGE, OP_SELECTION_MERGE, OP_LABEL, OP_BRANCH, OP_SWITCH = 245, 246, 247, 248, 249, 251
OP_UNREACHABLE, OP_CONTROL_BARRIER, OP_MEMORY_BARRIER, OP_LINE, OP_NO_LINE = 255, 224, 225, 8, 317
OP_FUNCTION, OP_FUNCTION_END, OP_EXT_INST = 54, 56, 12
#: the instructions that end a block
TERMINATORS = {249, 250, 251, 252, 253, 254, 255, 4416}
#: the type declarations (OpTypeVoid ... OpTypeForwardPointer and the later ones clspv does not write)
TYPE_OPS = set(range(19, 40))


def op(inst: list[int]) -> int:
    return inst[0] & 0xFFFF


def make(opcode: int, *operands: int) -> list[int]:
    return [((len(operands) + 1) << 16) | opcode, *operands]


class Words:
    """A module's header and instructions; the repairs edit ``insts`` in place."""

    def __init__(self, spirv: bytes):
        words = list(spirv_format.words(spirv))
        self.header = words[:spirv_format.HEADER_WORDS]
        self.insts = [words[pos:pos + count] for pos, count, _ in spirv_format.instructions(words)]

    def data(self) -> bytes:
        out = self.header + [w for inst in self.insts for w in inst]
        return b"".join(w.to_bytes(4, "little") for w in out)

    def new_id(self) -> int:
        self.header[3] += 1
        return self.header[3] - 1

    def definitions(self) -> dict[int, list[int]]:
        """Every result id's defining instruction."""
        from kernellab.spirvsim.module import core_grammar

        table = core_grammar().instructions
        out: dict[int, list[int]] = {}
        for inst in self.insts:
            spec = table.get(op(inst))
            if spec is None or not spec.has_result:
                continue
            out[inst[2] if spec.has_type else inst[1]] = inst
        return out

    def result_type(self, rid: int, defs: dict[int, list[int]]) -> int | None:
        """The type of the value ``rid`` (the first operand of a typed instruction)."""
        from kernellab.spirvsim.module import core_grammar

        inst = defs.get(rid)
        if inst is None:
            return None
        spec = core_grammar().instructions.get(op(inst))
        return inst[1] if spec is not None and spec.has_type else None

    def pointer_type(self, storage: int, pointee: int) -> int:
        """The id of ``OpTypePointer storage pointee``, declared after the pointee's own
        declaration where the module has none."""
        for inst in self.insts:
            if op(inst) == OP_TYPE_POINTER and inst[2] == storage and inst[3] == pointee:
                return inst[1]
        where = next(k for k, inst in enumerate(self.insts) if op(inst) in TYPE_OPS and inst[1] == pointee)
        new = self.new_id()
        self.insts.insert(where + 1, make(OP_TYPE_POINTER, new, storage, pointee))
        return new

    def same_type(self, a: int, b: int, defs: dict[int, list[int]]) -> bool:
        """Whether the types ``a`` and ``b`` are one type declared twice, a value of one being a
        value of the other: clspv declares an array once with an ``ArrayStride`` (for memory with
        an explicit layout) and once without; a value has no layout, only memory has. The same
        declaration over the same operands, or over types that are the same in turn, with the
        same decorations but ``ArrayStride``."""
        if a == b:
            return True
        x, y = defs.get(a), defs.get(b)
        if x is None or y is None or op(x) != op(y) or len(x) != len(y) or op(x) not in TYPE_OPS:
            return False
        if self._decorations(a) != self._decorations(b):
            return False
        if op(x) in (OP_TYPE_ARRAY, OP_TYPE_RUNTIME_ARRAY, OP_TYPE_VECTOR):
            return self.same_type(x[2], y[2], defs) and x[3:] == y[3:]
        return x[2:] == y[2:]

    def _decorations(self, target: int) -> list[tuple[int, ...]]:
        """The decorations of ``target`` but ``ArrayStride`` (each its words after the target)."""
        array_stride = 6
        return sorted(tuple(inst[2:]) for inst in self.insts
                      if op(inst) in (OP_DECORATE, OP_MEMBER_DECORATE) and inst[1] == target
                      and inst[2] != array_stride)

    def constant(self, type_id: int, value: int) -> int:
        """The id of ``OpConstant type_id value`` (a 32-bit integer), declared after its type
        where the module has none."""
        for inst in self.insts:
            if op(inst) == OP_CONSTANT and inst[1] == type_id and inst[3:] == [value]:
                return inst[2]
        where = next(k for k, inst in enumerate(self.insts) if op(inst) in TYPE_OPS and inst[1] == type_id)
        new = self.new_id()
        self.insts.insert(where + 1, make(OP_CONSTANT, type_id, new, value))
        return new
