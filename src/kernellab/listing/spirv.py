"""Decoding a SPIR-V binary module into instructions with typed operands, driven by the grammar.

The decoder follows the grammar's operand layouts: ids, literals (strings, context-dependent
numbers sized by the result type, switch literals sized by the selector), enumerants with their
parameters, bit masks with each set bit's parameters, and the operands of extended instructions
(from that set's own grammar) and of ``OpSpecConstantOp`` (from the opcode it names).
"""
from __future__ import annotations

import struct
from dataclasses import field
from pathlib import Path

from kernellab import spirv_format
from kernellab.errors import InputError
from kernellab.listing import grammar
from kernellab.listing.grammar import InstructionSet, InstructionSpec, OperandKind, OperandSpec
from kernellab.records import dataclass

#: operand kinds that hold an <id>
ID_KINDS = frozenset({"IdResultType", "IdResult", "IdRef", "IdMemorySemantics", "IdScope"})


@dataclass(slots=True)
class Operand:
    """One decoded operand.

    ``role`` is ``"id"`` (an <id> reference), ``"literal"`` (a number), ``"string"``,
    ``"enum"`` (a named value; ``value`` is the name, masks join names with ``|``),
    ``"extinst"`` (the instruction number of an ``OpExtInst``; ``value`` its name) or
    ``"opcode"`` (the operation of ``OpSpecConstantOp``; ``value`` its name without ``Op``).
    """

    kind: str
    role: str
    value: int | float | str
    #: the unsigned word value for literals and enumerants (for exact comparisons and hex output)
    raw: int = 0
    #: a float literal's width in bits (0 for everything else)
    float_width: int = 0
    signed: bool = False


@dataclass(slots=True)
class Instruction:
    opcode: int
    opname: str
    #: word offset of the instruction in the module (the header is words 0..4)
    offset: int
    result: int | None
    type: int | None
    operands: list[Operand]
    #: for OpExtInst: the set's import name and the instruction name (``GLSL.std.450``, ``Sqrt``)
    ext_set: str = ""
    ext_op: str = ""

    def ids(self) -> list[int]:
        """Every <id> this instruction reads (its result and result type excluded)."""
        return [o.value for o in self.operands if o.role == "id"]  # type: ignore[misc]


@dataclass
class TypeInfo:
    op: str  # OpTypeInt, OpTypeFloat, OpTypeVector, ...
    width: int = 0
    signed: bool = False
    args: tuple[int, ...] = ()
    storage: str = ""


@dataclass
class Module:
    version: tuple[int, int]
    generator: int
    bound: int
    instructions: list[Instruction]
    names: dict[int, str] = field(default_factory=dict)
    member_names: dict[tuple[int, int], str] = field(default_factory=dict)
    types: dict[int, TypeInfo] = field(default_factory=dict)
    #: result id -> the id of its type
    type_of: dict[int, int] = field(default_factory=dict)
    #: result id -> the instruction defining it
    defs: dict[int, Instruction] = field(default_factory=dict)
    ext_sets: dict[int, str] = field(default_factory=dict)
    strings: dict[int, str] = field(default_factory=dict)
    capabilities: list[str] = field(default_factory=list)

    @property
    def version_string(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


class _Reader:
    """Operand decoding over one instruction's words."""

    __slots__ = ("words", "pos", "end", "file", "offset", "opname")

    def __init__(self, words: tuple[int, ...], pos: int, end: int, file: str, offset: int, opname: str):
        self.words, self.pos, self.end, self.file, self.offset, self.opname = words, pos, end, file, offset, opname

    def more(self) -> bool:
        return self.pos < self.end

    def word(self) -> int:
        if self.pos >= self.end:
            raise InputError.at(self.file, f"word {self.offset}",
                                f"{self.opname}: instruction is too short for its operands")
        w = self.words[self.pos]
        self.pos += 1
        return w

    def string(self) -> str:
        text, after = spirv_format.literal_string(self.words, self.pos, self.end)
        if after == self.pos or (self.words[after - 1] >> 24) != 0:
            raise InputError.at(self.file, f"word {self.offset}",
                                f"{self.opname}: instruction is too short for its operands")
        self.pos = after
        return text


def _literal(w: int, kind: str) -> Operand:
    """A one-word literal: a 32-bit float for ``LiteralFloat``, else the unsigned word."""
    if kind == "LiteralFloat":
        return Operand(kind, "literal", struct.unpack("<f", w.to_bytes(4, "little"))[0], w, float_width=32)
    return Operand(kind, "literal", w, w)


def _number(r: _Reader, t: TypeInfo | None, kind: str) -> Operand:
    """A literal sized and typed by ``t`` (a scalar type); 32-bit unsigned when unknown."""
    width = t.width if t and t.op in ("OpTypeInt", "OpTypeFloat") else 32
    nwords = max(1, (width + 31) // 32)
    raw = 0
    for i in range(nwords):
        raw |= r.word() << (32 * i)
    if t is not None and t.op == "OpTypeFloat":
        if width == 16:
            value: int | float = struct.unpack("<e", (raw & 0xFFFF).to_bytes(2, "little"))[0]
        elif width == 64:
            value = struct.unpack("<d", raw.to_bytes(8, "little"))[0]
        else:
            value = struct.unpack("<f", (raw & 0xFFFFFFFF).to_bytes(4, "little"))[0]
        return Operand(kind, "literal", value, raw, float_width=width)
    signed = bool(t and t.signed)
    value = raw
    if signed:
        value = raw & ((1 << width) - 1)
        if value >> (width - 1):
            value -= 1 << width
    return Operand(kind, "literal", value, raw, signed=signed)


class Decoder:
    def __init__(self, data: bytes, file: str = "", directory: str | None = None):
        self.data = data
        self.file = file
        self.core = grammar.core(directory)
        self.directory = directory
        self.ext_sets: dict[int, InstructionSet | None] = {}
        self.module: Module

    def fail(self, where: str, message: str) -> InputError:
        return InputError.at(self.file, where, message)

    def decode(self) -> Module:
        words = spirv_format.words(self.data, self.file)
        version = ((words[1] >> 16) & 0xFF, (words[1] >> 8) & 0xFF)
        m = Module(version, words[2], words[3], [])
        self.module = m
        core = self.core.instructions
        append = m.instructions.append
        for pos, count, opcode in spirv_format.instructions(words, self.file):
            spec = core.get(opcode)
            if spec is None:
                raise self.fail(f"word {pos}", f"unknown opcode {opcode} (not in SPIR-V grammar {self.core.version})")
            inst = self._instruction(words, pos, count, spec)
            self._record(inst)
            append(inst)
        return m

    def _instruction(self, words: tuple[int, ...], pos: int, count: int, spec: InstructionSpec) -> Instruction:
        layout = spec.id_layout
        if layout is not None:
            has_type, has_result, fixed, star = layout
            k, end = pos + 1, pos + count
            need = k + has_type + has_result + fixed
            # anything past the fixed <id>s is optional: decode fast only when nothing is there
            if need <= end and (star or need == end):
                rtype = words[k] if has_type else None
                k += has_type
                result = words[k] if has_result else None
                k += has_result
                return Instruction(spec.opcode, spec.opname, pos, result, rtype,
                                   [Operand("IdRef", "id", w) for w in words[k:end]])
        r = _Reader(words, pos + 1, pos + count, self.file, pos, spec.opname)
        inst = Instruction(spec.opcode, spec.opname, pos, None, None, [])
        self._operands(r, inst, spec.operands, self.core)
        if r.more():
            raise self.fail(f"word {pos}", f"{spec.opname}: {r.end - r.pos} words left over after its operands")
        return inst

    def _operands(self, r: _Reader, inst: Instruction, specs: tuple[OperandSpec, ...], gset: InstructionSet) -> None:
        for spec in specs:
            if spec.quantifier == "*":
                while r.more():
                    self._operand(r, inst, spec.kind, gset)
            elif spec.quantifier == "?":
                if r.more():
                    self._operand(r, inst, spec.kind, gset)
            else:
                self._operand(r, inst, spec.kind, gset)

    def _operand(self, r: _Reader, inst: Instruction, kind: str, gset: InstructionSet) -> None:
        ops = inst.operands
        if kind == "IdResultType":
            inst.type = r.word()
        elif kind == "IdResult":
            inst.result = r.word()
        elif kind in ID_KINDS:
            ops.append(Operand(kind, "id", r.word()))
        elif kind == "LiteralString":
            ops.append(Operand(kind, "string", r.string()))
        elif kind == "LiteralContextDependentNumber":
            # OpConstant/OpSpecConstant: the result type gives the width and format
            ops.append(_number(r, self.module.types.get(inst.type or 0), kind))
        elif kind == "LiteralExtInstInteger":
            self._extinst(r, inst)
        elif kind == "LiteralSpecConstantOpInteger":
            self._spec_constant_op(r, inst, kind)
        elif kind == "PairLiteralIntegerIdRef" and inst.opname == "OpSwitch":
            self._switch_case(r, inst)
        elif kind.startswith("Literal"):
            ops.append(_literal(r.word(), kind))
        else:
            self._grammar_operand(r, inst, kind, gset)

    def _spec_constant_op(self, r: _Reader, inst: Instruction, kind: str) -> None:
        code = r.word()
        target = self.core.instructions.get(code)
        if target is None:
            raise self.fail(f"word {inst.offset}", f"OpSpecConstantOp names unknown opcode {code}")
        inst.operands.append(Operand(kind, "opcode", target.opname[2:], code))
        rest = tuple(o for o in target.operands if o.kind not in ("IdResultType", "IdResult"))
        self._operands(r, inst, rest, self.core)

    def _switch_case(self, r: _Reader, inst: Instruction) -> None:
        # the case literal is as wide as the selector's type
        m = self.module
        sel = int(inst.operands[0].value) if inst.operands else 0
        inst.operands.append(_number(r, m.types.get(m.type_of.get(sel, 0)), "LiteralInteger"))
        inst.operands.append(Operand("IdRef", "id", r.word()))

    def _grammar_operand(self, r: _Reader, inst: Instruction, kind: str, gset: InstructionSet) -> None:
        """An operand of a kind the grammar defines: a composite of other kinds, a value enum or a bit mask."""
        k = gset.operand_kinds.get(kind) or self.core.operand_kinds.get(kind)
        if k is None:
            raise self.fail(f"word {inst.offset}", f"{inst.opname}: operand kind {kind} is not in the grammar")
        if k.category == "Composite":
            for base in k.bases:
                self._operand(r, inst, base, gset)
            return
        w = r.word()
        if k.category == "ValueEnum":
            e = k.enumerants.get(w)
            inst.operands.append(Operand(kind, "enum", e.name if e else str(w), w))
            if e and e.parameters:
                self._operands(r, inst, e.parameters, gset)
        else:
            self._bit_enum(r, inst, kind, k, w, gset)

    def _bit_enum(self, r: _Reader, inst: Instruction, kind: str, k: OperandKind, w: int, gset: InstructionSet) -> None:
        """A mask: the names of the set bits, then each set bit's parameters in bit order."""
        if w == 0:
            zero = k.enumerants.get(0)
            inst.operands.append(Operand(kind, "enum", zero.name if zero else "None", 0))
            return
        names: list[str] = []
        params: list[OperandSpec] = []
        rest = w
        for bit in range(32):
            e = k.enumerants.get(1 << bit) if w & (1 << bit) else None
            if e is not None:
                names.append(e.name)
                rest &= ~(1 << bit)
                params.extend(e.parameters)
        if rest:
            names.append(f"0x{rest:x}")
        inst.operands.append(Operand(kind, "enum", "|".join(names), w))
        self._operands(r, inst, tuple(params), gset)

    def _extinst(self, r: _Reader, inst: Instruction) -> None:
        set_id = int(inst.operands[-1].value) if inst.operands else 0
        name = self.module.ext_sets.get(set_id, "")
        if set_id not in self.ext_sets:
            self.ext_sets[set_id] = grammar.extended(name, self.directory) if name else None
        gset = self.ext_sets[set_id]
        number = r.word()
        spec = gset.instructions.get(number) if gset else None
        inst.ext_set = name
        if spec is None or gset is None:
            inst.ext_op = str(number)
            inst.operands.append(Operand("LiteralExtInstInteger", "extinst", str(number), number))
            while r.more():
                inst.operands.append(Operand("IdRef", "id", r.word()))
            return
        inst.ext_op = spec.opname
        inst.operands.append(Operand("LiteralExtInstInteger", "extinst", spec.opname, number))
        self._operands(r, inst, spec.operands, gset)

    def _record(self, inst: Instruction) -> None:
        m = self.module
        if inst.result is not None:
            m.defs[inst.result] = inst
            if inst.type is not None:
                m.type_of[inst.result] = inst.type
        op = inst.opname
        ops = inst.operands
        if op == "OpName":
            m.names[int(ops[0].value)] = str(ops[1].value)
        elif op == "OpMemberName":
            m.member_names[(int(ops[0].value), int(ops[1].value))] = str(ops[2].value)
        elif op == "OpExtInstImport" and inst.result is not None:
            m.ext_sets[inst.result] = str(ops[0].value)
        elif op == "OpString" and inst.result is not None:
            m.strings[inst.result] = str(ops[0].value)
        elif op == "OpCapability":
            m.capabilities.append(str(ops[0].value))
        elif op.startswith("OpType") and inst.result is not None:
            t = TypeInfo(op)
            if op in ("OpTypeInt", "OpTypeFloat"):
                t.width = int(ops[0].value)
                if op == "OpTypeInt":
                    t.signed = bool(ops[1].value)
                if not 1 <= t.width <= 128:
                    raise self.fail(f"word {inst.offset}", f"{op} has width {t.width}: not a number type")
            elif op == "OpTypePointer":
                t.storage = str(ops[0].value)
                t.args = (int(ops[1].value),)
            else:
                t.args = tuple(int(o.value) for o in ops if o.role in ("id", "literal") and isinstance(o.value, int))
                if op in ("OpTypeVector", "OpTypeMatrix"):
                    t.width = int(ops[1].value)
            m.types[inst.result] = t


def decode(data: bytes, file: str | Path = "", directory: str | None = None) -> Module:
    """Decode a SPIR-V binary; malformed input raises :class:`InputError` naming the word offset."""
    return Decoder(data, str(file), directory).decode()
