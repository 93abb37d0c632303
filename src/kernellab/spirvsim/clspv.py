"""OpenCL C kernels compiled for Vulkan by clspv: from a kernel launch (global and local size,
arguments by ordinal) to what :func:`~kernellab.spirvsim.check_dispatch` binds.

clspv describes the interface in ``NonSemantic.ClspvReflection`` instructions: which descriptor
or push-constant bytes carry each argument, the specialization constants of the workgroup size
and of ``__local`` pointer arguments' lengths, and the push constants for built-ins (global
offset, sizes). Image and sampler arguments and the samplers a source defines (``LiteralSampler``)
are read (the proof models them: ``verify/prove/images.py``) but :func:`launch` refuses them: the
checker binds no OpenCL image. Anything else the reflection asks for (pointer push constants...)
is refused by name.
"""
from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import field
from typing import Any

from kernellab import spirv_format
from kernellab.errors import InputError
from kernellab.records import dataclass
from kernellab.spirvsim.dispatch import Binding
from kernellab.spirvsim.module import Unsupported, extinst_name

#: reflection instructions that describe an argument
_ARGUMENTS = {"ArgumentStorageBuffer", "ArgumentUniform", "ArgumentWorkgroup", "ArgumentPodPushConstant",
              "ArgumentPodStorageBuffer", "ArgumentPodUniform", *("ArgumentSampledImage", "ArgumentStorageImage",
                                                                 "ArgumentSampler")}
#: the argument kinds of an image or a sampler (each a descriptor of its own)
IMAGE_ARGUMENTS = ("ArgumentSampledImage", "ArgumentStorageImage", "ArgumentSampler")
#: module-wide push constants clspv adds for built-ins, and what they hold (per dimension)
_BUILTIN_PUSH = {"PushConstantGlobalOffset", "PushConstantEnqueuedLocalSize", "PushConstantGlobalSize",
                 "PushConstantRegionOffset", "PushConstantNumWorkgroups", "PushConstantRegionGroupOffset"}
#: reflection instructions that change nothing the checker needs
_IGNORED = {"Kernel", "SpecConstantWorkDim", "PropertyRequiredWorkgroupSize",
            "SpecConstantGlobalOffset", "PrintfInfo", "PrintfBufferStorageBuffer", "PrintfBufferPointerPushConstant",
            "NormalizedSamplerMaskPushConstant", "WorkgroupVariableSize"}


@dataclass
class Argument:
    ordinal: int
    kind: str  # one of _ARGUMENTS
    set: int = 0
    binding: int = 0
    offset: int = 0  # POD: byte offset in the push constants / buffer
    size: int = 0  # POD: bytes
    spec_id: int = -1  # workgroup: the spec constant holding the element count
    elem_size: int = 0  # workgroup: bytes per element
    #: the parameter's type as its ``ArgumentInfo`` names it (``image2d_t``), "" without one
    type_name: str = ""


@dataclass
class Kernel:
    name: str
    arguments: dict[int, Argument] = field(default_factory=dict)
    workgroup_size_ids: tuple[int, int, int] | None = None
    builtin_push: list[tuple[str, int, int]] = field(default_factory=list)  # (what, offset, size)
    #: the samplers the source defines (``LiteralSampler``): (set, binding, CLK_* mask), module-wide
    literal_samplers: list[tuple[int, int, int]] = field(default_factory=list)


def reflection(spirv: bytes | Sequence[int]) -> dict[str, Kernel]:
    """The kernels clspv's reflection describes, by name."""
    words = spirv_format.words(spirv)
    strings: dict[int, str] = {}
    consts: dict[int, int] = {}
    sets: dict[int, str] = {}
    kernels_by_id: dict[int, Kernel] = {}
    module_push: list[tuple[str, int, int]] = []
    wg_ids: tuple[int, int, int] | None = None
    literal_samplers: list[tuple[int, int, int]] = []
    type_names: dict[int, str] = {}  # ArgumentInfo id -> the parameter's type name
    for pos, count, opcode in spirv_format.instructions(words):
        w = words[pos + 1:pos + count]
        if opcode == 7:  # OpString
            strings[w[0]] = spirv_format.literal_string(w, 1, len(w))[0]
        elif opcode == 43:  # OpConstant (32-bit)
            consts[w[1]] = w[2]
        elif opcode == 11:  # OpExtInstImport
            sets[w[0]] = spirv_format.literal_string(w, 1, len(w))[0]
        elif opcode == 12 and sets.get(w[2], "").startswith("NonSemantic.ClspvReflection"):
            name = extinst_name(sets[w[2]], w[3])
            ops = [consts.get(x, x) for x in w[4:]]
            if name == "Kernel":
                kernels_by_id[w[1]] = Kernel(strings.get(w[5], ""))
            elif name in _ARGUMENTS:
                kernels_by_id[w[4]].arguments[ops[1]] = arg = _argument(name, ops)
                arg.type_name = type_names.get(w[-1], "")
            elif name == "ArgumentInfo":  # Name, TypeName, qualifiers
                type_names[w[1]] = strings.get(w[5], "") if len(w) > 5 else ""
            elif name == "SpecConstantWorkgroupSize":
                wg_ids = (ops[0], ops[1], ops[2])
            elif name in _BUILTIN_PUSH:
                module_push.append((name, ops[0], ops[1]))
            elif name == "LiteralSampler":  # DescriptorSet, Binding, Mask
                literal_samplers.append((ops[0], ops[1], ops[2]))
            elif name not in _IGNORED:
                raise Unsupported(f"clspv reflection {name} (an image, sampler or pointer argument, or another "
                                  "interface) is not supported by the SPIR-V checker")
    out = {}
    for k in kernels_by_id.values():
        k.workgroup_size_ids = wg_ids
        k.builtin_push = module_push
        k.literal_samplers = literal_samplers
        out[k.name] = k
    return out


def _argument(name: str, ops: list[int]) -> Argument:
    """An argument's reflection instruction (``name``) read from its operands (kernel, ordinal, ...)."""
    ordinal = ops[1]
    if name == "ArgumentWorkgroup":
        return Argument(ordinal, name, spec_id=ops[2], elem_size=ops[3])
    if name == "ArgumentPodPushConstant":
        return Argument(ordinal, name, offset=ops[2], size=ops[3])
    if name in ("ArgumentPodStorageBuffer", "ArgumentPodUniform"):
        return Argument(ordinal, name, set=ops[2], binding=ops[3], offset=ops[4], size=ops[5])
    return Argument(ordinal, name, set=ops[2], binding=ops[3])


@dataclass
class Launch:
    """What check_dispatch needs for one OpenCL launch."""

    workgroups: tuple[int, int, int]
    bindings: dict[tuple[int, int], Binding]
    push_constants: bytes
    spec_constants: dict[int, int]
    #: argument ordinal -> buffer uid, for reading results back
    buffers: dict[int, str]


def launch(kernel: Kernel, global_size: Sequence[int], local_size: Sequence[int], arguments: Sequence[Any]) -> Launch:
    """Bind an OpenCL launch. ``arguments`` by ordinal: a :class:`Binding` for a ``__global`` or
    ``__constant`` buffer, an ``int`` byte size for a ``__local`` buffer, ``bytes`` for a scalar
    (its value's bytes, little-endian)."""
    gs = tuple(global_size) + (1,) * (3 - len(global_size))
    ls = tuple(local_size) + (1,) * (3 - len(local_size))
    if any(g % max(1, n) for g, n in zip(gs, ls)):
        raise Unsupported(f"global size {tuple(global_size)} is not a multiple of local size {tuple(local_size)}: "
                          "non-uniform workgroups are not supported by the SPIR-V checker")
    groups = (gs[0] // ls[0], gs[1] // ls[1], gs[2] // ls[2])
    spec: dict[int, int] = {}
    if kernel.workgroup_size_ids is not None:
        spec.update(zip(kernel.workgroup_size_ids, ls))
    push = bytearray()
    bindings: dict[tuple[int, int], Binding] = {}
    buffers: dict[int, str] = {}
    pod_buffers: dict[tuple[int, int], bytearray] = {}

    def put(buf: bytearray, offset: int, data: bytes) -> None:
        if len(buf) < offset + len(data):
            buf.extend(bytes(offset + len(data) - len(buf)))
        buf[offset:offset + len(data)] = data

    images = [f"argument {n} ({a.kind})" for n, a in sorted(kernel.arguments.items()) if a.kind in IMAGE_ARGUMENTS]
    if images or kernel.literal_samplers:
        what = ", ".join(images + (["a sampler the source defines (LiteralSampler)"] if kernel.literal_samplers else []))
        raise Unsupported(f"kernel {kernel.name}: images and samplers ({what}) are not supported by the SPIR-V "
                          "checker")
    for what, offset, size in kernel.builtin_push:
        values = {"PushConstantGlobalOffset": (0, 0, 0), "PushConstantRegionOffset": (0, 0, 0),
                  "PushConstantRegionGroupOffset": (0, 0, 0), "PushConstantEnqueuedLocalSize": ls,
                  "PushConstantGlobalSize": gs, "PushConstantNumWorkgroups": groups}[what]
        put(push, offset, struct.pack("<3I", *values)[:size])
    for ordinal, arg in sorted(kernel.arguments.items()):
        if ordinal >= len(arguments):
            raise InputError(f"kernel {kernel.name}: no value for argument {ordinal}")
        value = arguments[ordinal]
        if arg.kind in ("ArgumentStorageBuffer", "ArgumentUniform"):
            if not isinstance(value, Binding):
                raise InputError(f"kernel {kernel.name}: argument {ordinal} is a buffer")
            bindings[(arg.set, arg.binding)] = value
            buffers[ordinal] = value.uid
        elif arg.kind == "ArgumentWorkgroup":
            if int(value) % arg.elem_size:  # clspv's array is a whole number of its elements
                raise InputError(f"kernel {kernel.name}: __local argument {ordinal} is {int(value)} bytes, not a "
                                 f"multiple of the {arg.elem_size}-byte elements clspv declares it in")
            spec[arg.spec_id] = int(value) // arg.elem_size
        elif arg.kind == "ArgumentPodPushConstant":
            put(push, arg.offset, bytes(value)[:arg.size].ljust(arg.size, b"\0"))
        else:
            put(pod_buffers.setdefault((arg.set, arg.binding), bytearray()), arg.offset,
                bytes(value)[:arg.size].ljust(arg.size, b"\0"))
    for key, data in pod_buffers.items():
        bindings[key] = Binding(f"pod arguments (set {key[0]}, binding {key[1]})", bytes(data))
    return Launch(groups, bindings, bytes(push), spec, buffers)
