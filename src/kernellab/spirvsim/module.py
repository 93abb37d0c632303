"""A SPIR-V module read into what the interpreter needs: types with layouts, constants (with the
launch's specialization applied), global variables, decorations, functions split into blocks in
structured order, and the source line of every instruction.

Anything outside the supported compute subset is refused here or when the instruction is
prepared for execution, always naming the instruction (:class:`Unsupported`).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from typing import Any

import numpy as np

from kernellab import spirv_format
from kernellab.errors import InputError, Problem
from kernellab.listing import grammar
from kernellab.records import dataclass
from kernellab.spirvsim import matrix, subgroup
from kernellab.spirvsim.images import ImageType, image_type
from kernellab.spirvsim.pointers import ADDRESS_TYPE
from kernellab.spirvsim.types import MAX_VALUE_SCALARS, Type, finish_layout

#: capabilities whose instructions the interpreter implements (or that change nothing it models)
SUPPORTED_CAPABILITIES = frozenset({
    "Shader", "Matrix", "Int8", "Int16", "Int64", "Float16", "Float64", "Int64Atomics",
    "StorageBuffer8BitAccess", "UniformAndStorageBuffer8BitAccess", "StoragePushConstant8",
    "StorageBuffer16BitAccess", "UniformAndStorageBuffer16BitAccess", "StoragePushConstant16",
    "StorageUniformBufferBlock16", "StorageUniform16", "VulkanMemoryModel", "VulkanMemoryModelDeviceScope",
    "AtomicFloat32AddEXT", "AtomicFloat64AddEXT", "AtomicFloat32MinMaxEXT", "AtomicFloat64MinMaxEXT",
    "DenormPreserve", "DenormFlushToZero", "SignedZeroInfNanPreserve", "RoundingModeRTE", "RoundingModeRTZ",
    # pointers chosen by OpPhi/OpSelect are modelled when they point into one variable; a choice
    # between variables, pointers held in memory and pointer comparisons are refused where met
    "VariablePointers", "VariablePointersStorageBuffer", "PhysicalStorageBufferAddresses",
    # images: storage images, combined image samplers and their queries (spirvsim.images)
    "ImageQuery", "StorageImageReadWithoutFormat", "StorageImageWriteWithoutFormat", "StorageImageExtendedFormats",
    "Image1D", "Sampled1D", "ImageBuffer", "SampledBuffer",
    # multisampled 2D storage images: each sample its own texel (spirvsim.images)
    "StorageImageMultisample",
}) | subgroup.CAPABILITIES

#: storage classes of variables the interpreter models
SUPPORTED_STORAGE = frozenset({"StorageBuffer", "Uniform", "PushConstant", "Workgroup", "Function",
                               "Private", "Input", "UniformConstant", "Image", "PhysicalStorageBuffer"})

#: built-in inputs of a compute shader the interpreter provides
SUPPORTED_BUILTINS = frozenset({"GlobalInvocationId", "LocalInvocationId", "WorkgroupId", "NumWorkgroups",
                                "LocalInvocationIndex", "WorkgroupSize"}) | subgroup.BUILTINS

#: execution modes that promise no more than the interpreter already does: structured
#: reconvergence at every merge (SubgroupUniformControlFlowKHR), and NumPy's IEEE arithmetic,
#: which keeps denormals, signed zeros, infinities and NaNs and rounds to nearest even
#: (DenormFlushToZero and RoundingModeRTZ would not be modelled: refused)
_NEUTRAL_MODES = frozenset({"SubgroupUniformControlFlowKHR", "DenormPreserve", "SignedZeroInfNanPreserve",
                            "RoundingModeRTE"})


class Unsupported(InputError):
    """The shader uses something the interpreter does not model; it is refused, not checked."""


@functools.lru_cache(maxsize=1)
def core_grammar() -> grammar.InstructionSet:
    return grammar.core()


@functools.cache
def enum_name(kind: str, value: int) -> str:
    e = core_grammar().operand_kinds[kind].enumerants.get(value)
    return e.name if e else f"{kind}({value})"


@functools.cache
def extinst_name(set_name: str, number: int) -> str:
    g = grammar.extended(set_name)
    spec = g.instructions.get(number) if g else None
    return spec.opname if spec else f"{set_name}#{number}"


@dataclass(slots=True)
class Inst:
    """One instruction: its name, operand words (after the opcode word) and where it is."""

    op: str
    words: tuple[int, ...]
    offset: int  # word offset in the module, for messages
    index: int = 0  # position in Module.insts
    line: tuple[str, int] | None = None  # (source file, line) from OpLine or DebugLine
    typed: bool = False  # has a result type and a result id

    def string(self, start: int) -> tuple[str, int]:
        """The literal string starting at operand word ``start`` and the index after it."""
        return spirv_format.literal_string(self.words, start, len(self.words))


@dataclass
class Block:
    label: int
    insts: list[Inst]  # phis first, terminator last
    order: int = 0  # position in structured order (the scheduler runs the lowest first)


@dataclass
class Function:
    id: int
    result_type: int
    params: list[int]
    blocks: dict[int, Block]
    entry: int
    #: blocks in structured order (index = Block.order)
    ordered: list[Block] = field(default_factory=list)
    variables: list[Inst] = field(default_factory=list)


@dataclass
class Module:
    file: str
    insts: list[Inst]
    types: dict[int, Type]
    type_of: dict[int, int]
    constants: dict[int, Any]  # id -> NumPy 0-d array or tuple of them
    names: dict[int, str]
    decorations: dict[int, list[tuple[str, tuple[int, ...]]]]
    member_decorations: dict[tuple[int, int], list[tuple[str, tuple[int, ...]]]]
    variables: dict[int, Inst]  # global OpVariables
    functions: dict[int, Function]
    ext_sets: dict[int, str]
    entry_function: int
    entry_name: str
    interface: list[int]
    local_size: tuple[int, int, int]
    sources: dict[str, list[str]]  # file -> source lines (from OpSource / DebugSource)
    #: OpTypeImage id -> its operands
    image_types: dict[int, ImageType] = field(default_factory=dict)

    def fail(self, inst: Inst | None, message: str) -> Unsupported:
        where = f"word {inst.offset}" if inst is not None else ""
        return Unsupported([Problem(self.file, where, message)])

    def decorated(self, id_: int, name: str) -> tuple[int, ...] | None:
        for n, args in self.decorations.get(id_, ()):
            if n == name:
                return args
        return None

    @property
    def object_bounds(self) -> bool:
        """Whether a sized array's bound is its whole variable rather than each index's dimension:
        for OpenCL C compiled by clspv (it imports NonSemantic.ClspvReflection), since C bounds an
        access by the object it falls in (``L[0][15]`` of ``int L[10][10]`` is element 15 of L, as
        GPUVerify and Oclgrind check it); GLSL and SPIR-V bound every index by its array."""
        return any(name.startswith("NonSemantic.ClspvReflection") for name in self.ext_sets.values())

    def source_text(self, line: tuple[str, int] | None) -> str | None:
        if line is None:
            return None
        text = self.sources.get(line[0])
        if text and 0 < line[1] <= len(text):
            return text[line[1] - 1].strip()
        return None


def _scalar_value(t: Type, words: Sequence[int]) -> np.ndarray:
    raw = 0
    for i, w in enumerate(words):
        raw |= w << (32 * i)
    if t.kind == "bool":
        return np.asarray(bool(raw))
    nbytes = t.width // 8
    raw &= (1 << t.width) - 1
    return np.frombuffer(raw.to_bytes(8, "little")[:nbytes], dtype=t.dtype).reshape(())


def _zero(t: Type) -> Any:
    if t.scalar:
        return np.zeros((), t.dtype)
    if t.kind in ("vector", "array", "matrix"):
        assert t.elem is not None
        return tuple(_zero(t.elem) for _ in range(t.count))
    if t.kind == "struct":
        return tuple(_zero(m) for m in t.members)
    raise InputError(f"no value of type {t.kind}")


zero_value = _zero


def load(spirv: bytes | Sequence[int] | np.ndarray, entry_point: str, *, file: str = "<spirv>",
         spec_constants: Mapping[int, int | float | bool] | None = None,
         eval_spec_op: Any = None) -> Module:
    """Read a module for running ``entry_point`` (a GLCompute entry point).

    ``spec_constants`` maps SpecId to the value the launch gives it; ``eval_spec_op(module, inst)``
    evaluates an ``OpSpecConstantOp`` (the interpreter's own instruction semantics).
    """
    words = spirv_format.words(spirv, file)
    opcodes = core_grammar().instructions
    insts: list[Inst] = []
    for pos, count, opcode in spirv_format.instructions(words, file):
        spec = opcodes.get(opcode)
        op = spec.opname if spec else f"Op#{opcode}"
        typed = bool(spec and spec.has_type and spec.has_result)
        insts.append(Inst(op, tuple(words[pos + 1:pos + count]), pos, len(insts), None, typed))
    return _Reader(insts, file, dict(spec_constants or {}), eval_spec_op).read(entry_point)


class _Reader:
    def __init__(self, insts: list[Inst], file: str, spec: dict[int, Any], eval_spec_op: Any):
        self.insts, self.file, self.spec, self.eval_spec_op = insts, file, spec, eval_spec_op
        #: DebugSource result id -> its file name, for the DebugLines that name it
        self.debug_sources: dict[int, str] = {}
        self.m = Module(file, insts, {}, {}, {}, {}, {}, {}, {}, {}, {}, 0, "", [], (1, 1, 1), {})
        # where the reading stands: the module's strings and modes so far, the entry point once
        # seen, the source line the next instruction comes from, the function and block it is in
        self.strings: dict[int, str] = {}
        self.modes: list[Inst] = []
        self.entry: Inst | None = None
        self.current_line: tuple[str, int] | None = None
        self.fn: Function | None = None
        self.block: list[Inst] | None = None
        self.label = 0
        self.wanted_entry = ""

    def fail(self, inst: Inst | None, message: str) -> Unsupported:
        return self.m.fail(inst, message)

    def read(self, entry_point: str) -> Module:
        self.wanted_entry = entry_point
        for inst in self.insts:
            self._instruction(inst)
        if self.entry is None:
            raise InputError.at(self.file, "", f"no GLCompute entry point named {entry_point!r}")
        self._modes(self.modes)
        for f in self.m.functions.values():
            _order_blocks(f)
        return self.m

    def _instruction(self, inst: Inst) -> None:
        op = inst.op
        declare = _DECLARATIONS.get(op)
        if declare is not None:
            declare(self, inst)
        elif op.startswith("OpType"):
            self._type(inst)
        elif op.startswith("OpConstant") or op.startswith("OpSpecConstant") or op == "OpUndef" and self.fn is None:
            self._constant(inst)
        elif op == "OpVariable" and self.fn is None:
            self.m.type_of[inst.words[1]] = inst.words[0]
            self.m.variables[inst.words[1]] = inst
        elif op == "OpExtInst" and self.m.ext_sets.get(inst.words[2], "").startswith("NonSemantic."):
            line = self._nonsemantic(inst, self.strings)
            if line is not None:
                self.current_line = line
        elif op in _OUTSIDE_BLOCKS and self.block is None:
            pass
        elif self.fn is not None and self.block is not None:
            self._in_block(inst, self.fn, self.block)
        elif op not in _IGNORED:
            raise self.fail(inst, f"{op} is not supported by the SPIR-V checker")

    def _in_block(self, inst: Inst, fn: Function, block: list[Inst]) -> None:
        op, w = inst.op, inst.words
        inst.line = self.current_line
        if op == "OpVariable":
            fn.variables.append(inst)
            self.m.type_of[w[1]] = w[0]
            return
        block.append(inst)
        if inst.typed:
            self.m.type_of[w[1]] = w[0]
        if op in _TERMINATORS:
            fn.blocks[self.label] = Block(self.label, block)
            self.block, self.current_line = None, None

    # ---- one method per declaration, in _DECLARATIONS -------------------------------------------

    def _capability(self, inst: Inst) -> None:
        name = enum_name("Capability", inst.words[0])
        if name not in SUPPORTED_CAPABILITIES:
            raise self.fail(inst, f"OpCapability {name} is not supported by the SPIR-V checker")

    def _ext_inst_import(self, inst: Inst) -> None:
        name, _ = inst.string(1)
        if name != "GLSL.std.450" and not name.startswith("NonSemantic."):
            raise self.fail(inst, f"OpExtInstImport \"{name}\": only GLSL.std.450 and non-semantic "
                                  "instruction sets are supported")
        self.m.ext_sets[inst.words[0]] = name

    def _entry_point(self, inst: Inst) -> None:
        w = inst.words
        name, after = inst.string(2)
        if name == self.wanted_entry and enum_name("ExecutionModel", w[0]) == "GLCompute":
            self.entry = inst
            self.m.entry_function, self.m.entry_name, self.m.interface = w[1], name, list(w[after:])

    def _execution_mode(self, inst: Inst) -> None:
        self.modes.append(inst)

    def _string(self, inst: Inst) -> None:
        self.strings[inst.words[0]] = inst.string(1)[0]

    def _source(self, inst: Inst) -> None:
        w = inst.words
        if len(w) >= 4:
            self._add_source(self.strings.get(w[2], ""), inst.string(3)[0])

    def _source_continued(self, inst: Inst) -> None:
        pass  # continuation text is rare from glslang; lines past it show no text

    def _name(self, inst: Inst) -> None:
        self.m.names[inst.words[0]] = inst.string(1)[0]

    def _decorate(self, inst: Inst) -> None:
        w = inst.words
        self.m.decorations.setdefault(w[0], []).append((enum_name("Decoration", w[1]), w[2:]))

    def _member_decorate(self, inst: Inst) -> None:
        w = inst.words
        self.m.member_decorations.setdefault((w[0], w[1]), []).append((enum_name("Decoration", w[2]), w[3:]))

    def _line(self, inst: Inst) -> None:
        self.current_line = (self.strings.get(inst.words[0], ""), inst.words[1])

    def _no_line(self, inst: Inst) -> None:
        self.current_line = None

    def _function(self, inst: Inst) -> None:
        w = inst.words
        self.fn = Function(w[1], w[0], [], {}, 0)
        self.m.type_of[w[1]] = w[0]

    def _function_parameter(self, inst: Inst) -> None:
        assert self.fn is not None
        self.fn.params.append(inst.words[1])
        self.m.type_of[inst.words[1]] = inst.words[0]

    def _label(self, inst: Inst) -> None:
        assert self.fn is not None
        self.label, self.block, self.current_line = inst.words[0], [], None
        if not self.fn.blocks:
            self.fn.entry = self.label

    def _function_end(self, inst: Inst) -> None:
        assert self.fn is not None
        self.m.functions[self.fn.id] = self.fn
        self.fn = None

    def _add_source(self, file: str, text: str) -> None:
        if text:
            self.m.sources[file] = text.split("\n")

    def _nonsemantic(self, inst: Inst, strings: dict[int, str]) -> tuple[str, int] | None:
        w = inst.words
        name = extinst_name(self.m.ext_sets[w[2]], w[3])
        if name == "DebugSource":
            file = strings.get(w[4], "")
            if len(w) > 5:
                self._add_source(file, strings.get(w[5], ""))
            self.debug_sources[w[1]] = file
        elif name == "DebugLine":
            file = self.debug_sources.get(w[4], "")
            line = self.m.constants.get(w[5])
            return (file, int(line)) if line is not None else None
        elif name == "DebugNoLine":
            return None
        return None

    def _type(self, inst: Inst) -> None:
        m, w, op = self.m, inst.words, inst.op
        tid = w[0]
        make = _TYPES.get(op)
        if make is None:
            raise self.fail(inst, f"{op} is not supported by the SPIR-V checker")
        t = make(self, inst)
        t.name = m.names.get(tid, "")
        if t.kind == "matrix":
            matrix.finish(t)
        elif t.kind not in ("void", "pointer", "function", "image", "sampled_image", "sampler"):
            finish_layout(t)
        m.types[tid] = t

    # ---- one method per type declaration, in _TYPES -----------------------------------------

    def _float_type(self, inst: Inst) -> Type:
        w = inst.words
        if len(w) > 2:
            raise self.fail(inst, "OpTypeFloat with a floating-point encoding is not supported")
        return Type(w[0], "float", width=w[1])

    def _array_type(self, inst: Inst) -> Type:
        m, w = self.m, inst.words
        length = m.constants.get(w[2])
        if length is None or isinstance(length, tuple):
            raise self.fail(inst, "OpTypeArray whose length is not a constant")
        stride = (m.decorated(w[0], "ArrayStride") or (0,))[0]
        return Type(w[0], "array", elem=m.types[w[1]], count=int(length), stride=stride)

    def _runtime_array_type(self, inst: Inst) -> Type:
        m, w = self.m, inst.words
        stride = (m.decorated(w[0], "ArrayStride") or (0,))[0]
        return Type(w[0], "runtime_array", elem=m.types[w[1]], stride=stride)

    def _struct_type(self, inst: Inst) -> Type:
        m, w = self.m, inst.words
        tid = w[0]
        members = tuple(self._member_layout(tid, k, m.types[x]) for k, x in enumerate(w[1:]))
        offsets: list[int | None] = []
        for k in range(len(members)):
            off = next((a[0] for n, a in m.member_decorations.get((tid, k), ()) if n == "Offset"), None)
            offsets.append(off)
        if any(o is None for o in offsets) and any(o is not None for o in offsets):
            raise self.fail(inst, "OpTypeStruct with Offset decorations on only some members")
        return Type(tid, "struct", members=members, offsets=tuple(o for o in offsets if o is not None))

    def _forward_pointer_type(self, inst: Inst) -> Type:
        storage = enum_name("StorageClass", inst.words[1])
        if storage != "PhysicalStorageBuffer":
            raise self.fail(inst, f"OpTypeForwardPointer to storage class {storage} is not supported")
        return Type(inst.words[0], "pointer", storage=storage, size=8, leaves=[(0, ADDRESS_TYPE)])

    def _pointer_type(self, inst: Inst) -> Type:
        m, w = self.m, inst.words
        storage = enum_name("StorageClass", w[1])
        if storage not in SUPPORTED_STORAGE:
            raise self.fail(inst, f"OpTypePointer to storage class {storage} is not supported")
        forward = m.types.get(w[0])  # declared by OpTypeForwardPointer (a buffer_reference block)
        t = forward if forward is not None else Type(w[0], "pointer", storage=storage)
        t.elem = m.types.get(w[2])
        if storage == "PhysicalStorageBuffer":  # a device address in memory: 8 bytes
            t.size, t.leaves = 8, [(0, ADDRESS_TYPE)]
        if t.elem is None:
            raise self.fail(inst, "OpTypePointer to a forward-declared type is not supported")
        ptr_stride = m.decorated(w[0], "ArrayStride")
        t.stride = ptr_stride[0] if ptr_stride else 0
        return t

    def _member_layout(self, struct: int, k: int, t: Type) -> Type:
        """A struct member's type with its ``MatrixStride``/``RowMajor`` layout when it holds matrices."""
        if not matrix.contains_matrix(t):
            return t
        decorations = dict(self.m.member_decorations.get((struct, k), ()))
        stride = decorations.get("MatrixStride")
        if stride is None:
            return t
        return matrix.lay_out(t, stride[0], "RowMajor" in decorations)

    def _image_type(self, inst: Inst) -> Type:
        w = inst.words
        it = image_type(w, enum_name("ImageFormat", w[7]))
        if isinstance(it, str):
            raise self.fail(inst, it)
        self.m.image_types[w[0]] = it
        return Type(w[0], "image", elem=self.m.types[w[1]])

    def _constant(self, inst: Inst) -> None:
        m, w, op = self.m, inst.words, inst.op
        t = m.types[w[0]]
        rid = w[1]
        m.type_of[rid] = w[0]
        spec_id = m.decorated(rid, "SpecId")
        if op in ("OpConstant", "OpSpecConstant"):
            if op == "OpSpecConstant" and spec_id is not None and spec_id[0] in self.spec:
                v = np.asarray(self.spec[spec_id[0]])
                if t.kind == "int":
                    v = np.asarray(int(v) & ((1 << t.width) - 1)).astype(t.dtype)
                else:
                    v = v.astype(t.dtype)
                m.constants[rid] = v.reshape(())
            else:
                m.constants[rid] = _scalar_value(t, w[2:])
        elif op in ("OpConstantTrue", "OpConstantFalse", "OpSpecConstantTrue", "OpSpecConstantFalse"):
            value = op.endswith("True")
            if op.startswith("OpSpec") and spec_id is not None and spec_id[0] in self.spec:
                value = bool(self.spec[spec_id[0]])
            m.constants[rid] = np.asarray(value)
        elif op in ("OpConstantComposite", "OpSpecConstantComposite"):
            m.constants[rid] = tuple(m.constants[x] for x in w[2:])
        elif op == "OpConstantNull" or op == "OpUndef":
            if len(t.leaves) > MAX_VALUE_SCALARS:
                raise self.fail(inst, f"a {op} of {len(t.leaves)} scalars is past the checker's limit of "
                                      f"{MAX_VALUE_SCALARS}")
            m.constants[rid] = _zero(t)
        elif op == "OpSpecConstantOp":
            if self.eval_spec_op is None:
                raise self.fail(inst, "OpSpecConstantOp cannot be evaluated here")
            m.constants[rid] = self.eval_spec_op(m, inst)
        else:
            raise self.fail(inst, f"{op} is not supported by the SPIR-V checker")

    def _modes(self, modes: list[Inst]) -> None:
        m = self.m
        size: tuple[int, int, int] | None = None
        for inst in modes:
            w = inst.words
            if w[0] != m.entry_function:
                continue
            mode = enum_name("ExecutionMode", w[1])
            if mode == "LocalSize":
                size = (w[2], w[3], w[4])
            elif mode == "LocalSizeId":
                size = tuple(int(m.constants[x]) for x in w[2:5])  # type: ignore[assignment]
            elif mode not in _NEUTRAL_MODES:
                raise self.fail(inst, f"OpExecutionMode {mode} is not supported by the SPIR-V checker")
        for cid, value in m.constants.items():
            builtin = m.decorated(cid, "BuiltIn")
            if builtin is not None and enum_name("BuiltIn", builtin[0]) == "WorkgroupSize":
                size = tuple(int(x) for x in value)  # type: ignore[assignment]
        if size is None:
            raise InputError.at(self.file, "", f"entry point {m.entry_name!r} declares no workgroup size")
        m.local_size = size


#: module-level declarations, wherever they stand: opcode -> the reader's method for it
_DECLARATIONS: dict[str, Callable[[_Reader, Inst], None]] = {
    "OpCapability": _Reader._capability,
    "OpExtInstImport": _Reader._ext_inst_import,
    "OpEntryPoint": _Reader._entry_point,
    "OpExecutionMode": _Reader._execution_mode,
    "OpExecutionModeId": _Reader._execution_mode,
    "OpString": _Reader._string,
    "OpSource": _Reader._source,
    "OpSourceContinued": _Reader._source_continued,
    "OpName": _Reader._name,
    "OpDecorate": _Reader._decorate,
    "OpDecorateId": _Reader._decorate,
    "OpMemberDecorate": _Reader._member_decorate,
    "OpLine": _Reader._line,
    "OpNoLine": _Reader._no_line,
    "OpFunction": _Reader._function,
    "OpFunctionParameter": _Reader._function_parameter,
    "OpLabel": _Reader._label,
    "OpFunctionEnd": _Reader._function_end,
}
#: type declarations: opcode -> the reader's method making the type (its name and layout come after)
_TYPES: dict[str, Callable[[_Reader, Inst], Type]] = {
    "OpTypeVoid": lambda r, inst: Type(inst.words[0], "void"),
    "OpTypeBool": lambda r, inst: Type(inst.words[0], "bool"),
    "OpTypeInt": lambda r, inst: Type(inst.words[0], "int", width=inst.words[1], signed=bool(inst.words[2])),
    "OpTypeFloat": _Reader._float_type,
    "OpTypeVector": lambda r, inst: Type(inst.words[0], "vector", elem=r.m.types[inst.words[1]], count=inst.words[2]),
    "OpTypeMatrix": lambda r, inst: Type(inst.words[0], "matrix", elem=r.m.types[inst.words[1]], count=inst.words[2]),
    "OpTypeArray": _Reader._array_type,
    "OpTypeRuntimeArray": _Reader._runtime_array_type,
    "OpTypeStruct": _Reader._struct_type,
    "OpTypeForwardPointer": _Reader._forward_pointer_type,
    "OpTypePointer": _Reader._pointer_type,
    "OpTypeFunction": lambda r, inst: Type(inst.words[0], "function"),
    "OpTypeImage": _Reader._image_type,
    "OpTypeSampledImage": lambda r, inst: Type(inst.words[0], "sampled_image", elem=r.m.types[inst.words[1]]),
    "OpTypeSampler": lambda r, inst: Type(inst.words[0], "sampler"),
}
#: instructions skipped outside a block (inside one they are kept: the block order reads the merges)
_OUTSIDE_BLOCKS = frozenset({"OpMemoryModel", "OpExtension", "OpModuleProcessed", "OpSelectionMerge", "OpLoopMerge",
                             "OpNop"})
#: instructions with no effect on running the shader (names, layout), skipped outside a block
_IGNORED = frozenset({"OpMemoryModel", "OpExtension", "OpModuleProcessed", "OpNop", "OpMemberName",
                      "OpSourceExtension", "OpDecorateString", "OpMemberDecorateString"})
_TERMINATORS = frozenset({"OpBranch", "OpBranchConditional", "OpSwitch", "OpReturn", "OpReturnValue", "OpKill",
                          "OpUnreachable", "OpTerminateInvocation"})


def successors(block: Block) -> list[int]:
    """The labels a block's terminator may branch to (the switch's default first)."""
    term = block.insts[-1]
    w = term.words
    if term.op == "OpBranch":
        return [w[0]]
    if term.op == "OpBranchConditional":
        return [w[1], w[2]]
    if term.op == "OpSwitch":
        return [w[1]] + [w[k] for k in range(3, len(w), 2)]
    return []


def _order_blocks(fn: Function) -> None:
    """Number the blocks so that every construct's blocks come before its merge block and a
    loop's body before its continue target: a depth-first reverse post-order that visits a
    header's merge block first and its continue target next (they then come last).

    The lockstep scheduler always runs the waiting block with the lowest number, so lanes that
    left a construct early wait at its merge block until the others arrive: reconvergence at
    the points structured control flow names.
    """
    succ: dict[int, list[int]] = {}
    for b in fn.blocks.values():
        targets = successors(b)
        first: list[int] = []
        for inst in b.insts[:-1]:
            if inst.op == "OpLoopMerge":
                first = [inst.words[0], inst.words[1]]
            elif inst.op == "OpSelectionMerge":
                first = [inst.words[0]]
        succ[b.label] = first + [t for t in reversed(targets) if t not in first]
    post: list[int] = []
    seen: set[int] = set()
    stack: list[tuple[int, int]] = [(fn.entry, 0)]
    seen.add(fn.entry)
    while stack:
        node, k = stack[-1]
        nexts = succ.get(node, [])
        if k < len(nexts):
            stack[-1] = (node, k + 1)
            n = nexts[k]
            if n not in seen and n in fn.blocks:
                seen.add(n)
                stack.append((n, 0))
        else:
            stack.pop()
            post.append(node)
    order = list(reversed(post))
    fn.ordered = [fn.blocks[x] for x in order]
    for i, b in enumerate(fn.ordered):
        b.order = i
