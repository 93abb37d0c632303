"""What a compute shader's entry point expects from the outside: its interface, read from SPIR-V.

Descriptors (set, binding, descriptor type, count, the minimum byte size of a buffer block), the
push-constant block's size, the specialization-constant ids and the workgroup size. The run and
``validate`` compare a dispatch against it (``runtime/interface.py``) so a binding on the wrong
set, a buffer smaller than its block or a short push-constant range is an input error instead of
a silently wrong result.

Only what the entry point statically reaches counts (its call tree): a module may declare
descriptors other entry points use.
"""
from __future__ import annotations

from kernellab.errors import InputError
from kernellab.spirv_format import Descriptor, Interface

#: the records reflection fills live in spirv_format.py, so that a run whose interface is cached
#: reads them without loading this module (issue 23); importable from here as before
__all__ = ["Descriptor", "Interface", "reflect"]

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)

if TYPE_CHECKING:  # the decoder and its grammar load when a module is reflected, not with the classes
    from kernellab.listing.spirv import Instruction, Module


def _decorations(module: Module) -> tuple[dict[int, dict[str, list]], dict[tuple[int, int], dict[str, list]]]:
    deco: dict[int, dict[str, list]] = {}
    member: dict[tuple[int, int], dict[str, list]] = {}
    for inst in module.instructions:
        if inst.opname == "OpDecorate":
            target, name = int(inst.operands[0].value), str(inst.operands[1].value)
            deco.setdefault(target, {})[name] = [o.value for o in inst.operands[2:]]
        elif inst.opname == "OpMemberDecorate":
            key = (int(inst.operands[0].value), int(inst.operands[1].value))
            member.setdefault(key, {})[str(inst.operands[2].value)] = [o.value for o in inst.operands[3:]]
    return deco, member


class _Layout:
    """Byte sizes of types laid out with explicit Offset/ArrayStride/MatrixStride decorations."""

    def __init__(self, module: Module, member: dict[tuple[int, int], dict[str, list]],
                 deco: dict[int, dict[str, list]]):
        self.m, self.member, self.deco = module, member, deco

    def constant(self, id_: int) -> int | None:
        inst = self.m.defs.get(id_)
        if inst is not None and inst.opname in ("OpConstant", "OpSpecConstant") and inst.operands:
            value = inst.operands[0].value
            return int(value) if isinstance(value, int) else None
        return None

    def size(self, type_id: int) -> int:
        """Bytes of a type; a runtime array counts as empty."""
        inst = self.m.defs[type_id]
        op = inst.opname
        if op in ("OpTypeInt", "OpTypeFloat"):
            return int(inst.operands[0].value) // 8
        if op == "OpTypeBool":
            return 4
        if op == "OpTypeVector":
            return self.size(int(inst.operands[0].value)) * int(inst.operands[1].value)
        if op == "OpTypeMatrix":
            return self.size(int(inst.operands[0].value)) * int(inst.operands[1].value)
        if op == "OpTypeArray":
            length = self.constant(int(inst.operands[1].value)) or 0
            stride = self.deco.get(type_id, {}).get("ArrayStride", [0])[0] or self.size(int(inst.operands[0].value))
            return int(stride) * length
        if op == "OpTypeRuntimeArray":
            return 0
        if op == "OpTypeStruct":
            return self.struct_size(type_id)
        if op == "OpTypePointer":
            return 8
        return 0

    def natural_size(self, type_id: int) -> int:
        """Bytes of a type with no layout decorations (workgroup memory): struct members packed
        one after another; decorations, where a module gives them, still count."""
        inst = self.m.defs[type_id]
        if inst.opname == "OpTypeArray" and "ArrayStride" not in self.deco.get(type_id, {}):
            return (self.constant(int(inst.operands[1].value)) or 0) * self.natural_size(int(inst.operands[0].value))
        if inst.opname == "OpTypeStruct" and not any(
                "Offset" in self.member.get((type_id, i), {}) for i in range(len(inst.operands))):
            return sum(self.natural_size(int(member.value)) for member in inst.operands)
        return self.size(type_id)

    def struct_size(self, struct_id: int) -> int:
        inst = self.m.defs[struct_id]
        end = 0
        for index, member in enumerate(inst.operands):
            offset = int(self.member.get((struct_id, index), {}).get("Offset", [0])[0])
            mtype = int(member.value)
            size = self.size(mtype)
            matrix = self.member.get((struct_id, index), {}).get("MatrixStride")
            if matrix and self.m.defs[mtype].opname == "OpTypeMatrix":
                size = int(matrix[0]) * int(self.m.defs[mtype].operands[1].value)
            end = max(end, offset + size)
        return end

    def scalar_codes(self, type_id: int) -> set[str]:
        """NumPy type codes of the scalars a type is made of ("?" for what is no number)."""
        inst = self.m.defs[type_id]
        op = inst.opname
        if op == "OpTypeFloat":
            return {f"f{int(inst.operands[0].value) // 8}"}
        if op == "OpTypeInt":
            signed = len(inst.operands) > 1 and int(inst.operands[1].value)
            return {f"{'i' if signed else 'u'}{int(inst.operands[0].value) // 8}"}
        if op in ("OpTypeVector", "OpTypeMatrix", "OpTypeArray", "OpTypeRuntimeArray"):
            return self.scalar_codes(int(inst.operands[0].value))
        if op == "OpTypeStruct":
            return set().union(*(self.scalar_codes(int(member.value)) for member in inst.operands))
        return {"?"}

    def runtime_stride(self, struct_id: int) -> int:
        inst = self.m.defs[struct_id]
        if not inst.operands:
            return 0
        last = self.m.defs[int(inst.operands[-1].value)]
        if last.opname != "OpTypeRuntimeArray":
            return 0
        stride = self.deco.get(last.result or 0, {}).get("ArrayStride", [0])[0]
        return int(stride) or self.size(int(last.operands[0].value))


def _reachable(module: Module, entry_fn: int) -> set[int]:
    """Ids referenced by the functions the entry point reaches."""
    bodies: dict[int, list[Instruction]] = {}
    current: int | None = None
    for inst in module.instructions:
        if inst.opname == "OpFunction":
            current = inst.result
            bodies[current or 0] = []
        elif inst.opname == "OpFunctionEnd":
            current = None
        elif current is not None:
            bodies[current].append(inst)
    used: set[int] = set()
    todo, seen = [entry_fn], set()
    while todo:
        fn = todo.pop()
        if fn in seen:
            continue
        seen.add(fn)
        for inst in bodies.get(fn, []):
            ids = inst.ids()
            used.update(ids)
            if inst.opname == "OpFunctionCall":
                todo.append(int(inst.operands[0].value))
    return used


def _descriptor_type(module: Module, pointee: int, storage: str,
                     deco: dict[int, dict[str, list]]) -> tuple[str, int, int]:
    """(type, count, element type id) of a descriptor variable's pointee."""
    count = 1
    inst = module.defs[pointee]
    if inst.opname in ("OpTypeArray", "OpTypeRuntimeArray"):
        if inst.opname == "OpTypeArray":
            length = module.defs.get(int(inst.operands[1].value))
            count = int(length.operands[0].value) if length is not None and length.operands else 1
        else:
            count = 0
        pointee = int(inst.operands[0].value)
        inst = module.defs[pointee]
    op = inst.opname
    if storage == "StorageBuffer" or (storage == "Uniform" and "BufferBlock" in deco.get(pointee, {})):
        return "STORAGE_BUFFER", count, pointee
    if storage == "Uniform":
        return "UNIFORM_BUFFER", count, pointee
    if op == "OpTypeImage":
        dim = str(inst.operands[1].value)
        sampled = int(inst.operands[5].value)
        if dim == "Buffer":
            return ("STORAGE_TEXEL_BUFFER" if sampled == 2 else "UNIFORM_TEXEL_BUFFER"), count, pointee
        return ("STORAGE_IMAGE" if sampled == 2 else "SAMPLED_IMAGE"), count, pointee
    if op == "OpTypeSampledImage":
        return "COMBINED_IMAGE_SAMPLER", count, pointee
    if op == "OpTypeSampler":
        return "SAMPLER", count, pointee
    if op == "OpTypeAccelerationStructureKHR":
        return "ACCELERATION_STRUCTURE_KHR", count, pointee
    if op == "OpTypeTensorARM":
        return "TENSOR_ARM", count, pointee
    return op.removeprefix("OpType").upper(), count, pointee


def reflect(spirv: bytes, entry: str = "main", file: str = "", *, module: Module | None = None) -> Interface:
    """The interface of compute entry point ``entry`` of a SPIR-V module; ``module`` is ``spirv``
    decoded already, when the caller has it (a module is decoded once per run)."""
    if module is None:
        from kernellab.listing.spirv import decode

        module = decode(spirv, file)
    entry_fn = None
    for inst in module.instructions:
        if inst.opname == "OpEntryPoint" and inst.operands[2].value == entry:
            entry_fn = int(inst.operands[1].value)
            break
    if entry_fn is None:
        names = [str(i.operands[2].value) for i in module.instructions if i.opname == "OpEntryPoint"]
        raise InputError(f"the module has no entry point {entry!r} (it has: {', '.join(names) or 'none'})", file=file)
    deco, member = _decorations(module)
    layout = _Layout(module, member, deco)
    used = _reachable(module, entry_fn)
    interface = Interface(entry)
    spec_ids = set()
    for inst in module.instructions:
        if inst.opname == "OpExecutionMode" and int(inst.operands[0].value) == entry_fn \
                and inst.operands[1].value == "LocalSize":
            interface.local_size = tuple(int(o.value) for o in inst.operands[2:5])  # type: ignore[assignment]
        if inst.opname.startswith("OpSpecConstant") and inst.result in deco and "SpecId" in deco[inst.result]:
            spec_ids.add(int(deco[inst.result]["SpecId"][0]))
        if inst.opname != "OpVariable" or inst.result not in used:
            continue
        ptr = module.types.get(inst.type or 0)
        storage = str(inst.operands[0].value)
        if ptr is None or not ptr.args:
            continue
        pointee = ptr.args[0]
        if storage == "Workgroup":
            interface.workgroup_memory += layout.natural_size(pointee)
            continue
        if storage == "PushConstant":
            interface.push_constant_size = max(interface.push_constant_size, layout.size(pointee))
            continue
        info = deco.get(inst.result or 0, {})
        if "DescriptorSet" not in info or "Binding" not in info:
            continue
        kind, count, element = _descriptor_type(module, pointee, storage, deco)
        min_size = stride = 0
        scalars: set[str] = set()
        if kind in ("STORAGE_BUFFER", "UNIFORM_BUFFER") and module.defs[element].opname == "OpTypeStruct":
            min_size, stride = layout.struct_size(element), layout.runtime_stride(element)
            scalars = layout.scalar_codes(element)
        writes = "NonWritable" not in info and not all(
            "NonWritable" in member.get((element, i), {}) for i in range(len(module.defs[element].operands) or 1))
        name = module.names.get(inst.result or 0) or module.names.get(element, "")
        d = Descriptor(int(info["DescriptorSet"][0]), int(info["Binding"][0]), kind, name, count, min_size, stride,
                       writes, scalars.pop() if len(scalars) == 1 and "?" not in scalars else "")
        interface.descriptors[(d.set, d.binding)] = d
    interface.spec_ids = frozenset(spec_ids)
    return interface
