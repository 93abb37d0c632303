"""VGF graph files (Arm's ML SDK) decoded into a typed summary.

A VGF holds a *model sequence* of *segments*, each running one *module* (a SPIR-V data graph, or
a compute shader, which may be a placeholder without code that a scenario substitutes), a
*model resource table* (every tensor or image the segments touch: category, VkFormat, shape,
strides, descriptor type), the *constants* (weights) and the sequence's named inputs and outputs
with the bindings a ``dispatch_graph`` must supply.

Decoding uses Arm's own decoder through its Python binding ``vgfpy`` (pip
``ai-ml-sdk-vgf-library``, in ``kernellab[ml]``), so the file is read exactly as Arm's runner
reads it; this module turns the decoder's handles into plain dataclasses.
"""
from __future__ import annotations

import os
from dataclasses import asdict, field
from pathlib import Path
from typing import Any

from kernellab.errors import InputError, MissingToolError
from kernellab.records import dataclass
from kernellab.vkregistry import enums, vkformat

VGF_PACKAGE = "ai-ml-sdk-vgf-library"


def _vgfpy() -> Any:
    try:
        import vgfpy
    except ImportError:
        raise MissingToolError(f"reading VGF graph files needs Arm's VGF library: pip install {VGF_PACKAGE} "
                               "(or pip install 'kernellab[ml]')") from None
    return vgfpy


@dataclass(frozen=True)
class Resource:
    """One entry of the model resource table."""

    index: int
    category: str                       # input, output, intermediate, constant
    format: str                         # VkFormat name (VkFormat(<n>) if kernellab does not know it)
    format_value: int
    shape: tuple[int, ...]              # -1 for a dimension left open
    strides: tuple[int, ...]            # empty: packed
    descriptor_type: str | None         # VK_DESCRIPTOR_TYPE_TENSOR_ARM, ...; None for constants
    #: resources of one alias group share memory (Arm's runner binds them all at offset 0)
    alias_group: int | None = None

    @property
    def kind(self) -> str | None:
        """``buffer``, ``tensor`` or ``image`` by the descriptor type (a uniform buffer is bound as a
        storage buffer, as Arm's runner does), None for constants and unknown types."""
        dtype = self.descriptor_type or ""
        if dtype.endswith(("_STORAGE_BUFFER", "_UNIFORM_BUFFER")):
            return "buffer"
        if dtype == "VK_DESCRIPTOR_TYPE_TENSOR_ARM":
            return "tensor"
        if dtype.endswith(("_STORAGE_IMAGE", "_COMBINED_IMAGE_SAMPLER")):
            return "image"
        return None

    @property
    def byte_size(self) -> int:
        """Elements times element size: a buffer resource's size (Arm's runner ignores the sign of
        an open dimension here)."""
        fmt = vkformat.by_value(self.format_value)
        count = 1
        for d in self.shape:
            count *= int(d)
        return abs(count) * (fmt.element_size if fmt is not None else 1)


@dataclass(frozen=True)
class Binding:
    """A binding slot: descriptor ``binding`` number and the resource it holds."""

    binding: int
    resource: int


@dataclass(frozen=True)
class DescriptorSet:
    set: int
    bindings: tuple[Binding, ...]


@dataclass(frozen=True)
class PushConstantRange:
    stage_flags: int
    offset: int
    size: int


@dataclass(frozen=True)
class Module:
    index: int
    name: str
    entry_point: str
    kind: str                           # graph or compute
    code: str | None                    # spirv, glsl or hlsl when the module carries code

    @property
    def placeholder(self) -> bool:
        """A compute module without code: a scenario must substitute a shader for it."""
        return self.code is None


@dataclass(frozen=True)
class Segment:
    index: int
    name: str
    kind: str                           # graph or compute
    module: int
    descriptor_sets: tuple[DescriptorSet, ...]
    inputs: tuple[Binding, ...]
    outputs: tuple[Binding, ...]
    dispatch_shape: tuple[int, int, int]
    push_constant_ranges: tuple[PushConstantRange, ...]
    constants: tuple[int, ...]          # indexes into VgfFile.constants
    constant_bindings: tuple[tuple[int, int], ...]   # (graph constant id, constant index)


@dataclass(frozen=True)
class Constant:
    index: int
    resource: int
    size: int                           # bytes
    sparsity_dimension: int | None


@dataclass(frozen=True)
class Port:
    """A named input or output of the model sequence (what ``dispatch_graph`` binds)."""

    name: str
    binding: int
    resource: Resource


@dataclass
class VgfFile:
    path: str
    version: tuple[int, int, int]
    vulkan_headers_version: int
    modules: list[Module]
    segments: list[Segment]
    resources: list[Resource]
    constants: list[Constant]
    inputs: list[Port]
    outputs: list[Port]
    _data: bytes = field(repr=False, default=b"")
    _sections: dict[str, tuple[int, int]] = field(repr=False, default_factory=dict)

    def placeholders(self) -> list[Module]:
        return [m for m in self.modules if m.placeholder]

    def module(self, name: str) -> Module | None:
        return next((m for m in self.modules if m.name == name), None)

    def module_spirv(self, index: int) -> bytes | None:
        """The SPIR-V words of module ``index`` as bytes, or None if it has none."""
        dec = self._decoder("module")
        code = dec.getSPIRVModuleCode(index) if dec.hasSPIRVCode(index) else None
        return bytes(code) if code is not None else None

    def module_source(self, index: int) -> str | None:
        """GLSL or HLSL source of module ``index``, if it carries source."""
        dec = self._decoder("module")
        if dec.isGLSL(index) and dec.hasGLSLCode(index):
            return str(dec.getGLSLModuleCode(index))
        if dec.isHLSL(index) and dec.hasHLSLCode(index):
            return str(dec.getHLSLModuleCode(index))
        return None

    def constant_data(self, index: int) -> bytes:
        data = self._decoder("constant").getConstant(index)
        return bytes(data) if data is not None else b""

    def _decoder(self, section: str) -> Any:
        vgf = _vgfpy()
        offset, size = self._sections[section]
        view = memoryview(self._data)[offset:]
        make = {"module": vgf.CreateModuleTableDecoder, "constant": vgf.CreateConstantDecoder}[section]
        return make(view, size)

    def port(self, binding: int) -> Port | None:
        """The sequence input or output a ``dispatch_graph`` binding with this ``id`` supplies.

        Arm's runner matches a binding's ``id`` (not its ``set``) against the binding numbers
        of the model sequence's inputs, then outputs; bindings matching neither are ignored.
        """
        return next((p for p in (*self.inputs, *self.outputs) if p.binding == binding), None)

    def binding_problem(self, port: Port, kind: str, shape: tuple[int, ...] | list[int], fmt: str,
                        size: int | None = None) -> str | None:
        """Why a scenario resource cannot fill ``port``, or None if it can (Arm's checks).

        ``kind`` is ``tensor``, ``image`` or ``buffer``; ``shape`` is a tensor's ``dims`` (``[]``
        for rank 0) or an image's ``dims`` (``[1, W, H, 1]``); ``fmt`` a VkFormat name; ``size``
        a buffer's byte size.
        """
        res = port.resource
        where = f"VGF {'output' if port in self.outputs else 'input'} {port.name!r} (binding {port.binding})"
        dtype = res.descriptor_type or ""
        if res.kind == "buffer":
            if kind != "buffer":
                return f"{where} is a buffer, not a {kind}"
            want = res.byte_size
            return None if size == want else f"{where} expects a buffer of {want} bytes, not {size}"
        if dtype == "VK_DESCRIPTOR_TYPE_TENSOR_ARM":
            if kind != "tensor":
                return f"{where} is a tensor, not a{'n' if kind == 'image' else ''} {kind}"
            if tuple(shape) != res.shape:
                return f"{where} has shape {list(res.shape)}, the tensor has dims {list(shape)}"
        elif dtype.endswith(("_STORAGE_IMAGE", "_COMBINED_IMAGE_SAMPLER")):
            if kind != "image":
                return f"{where} is an image, not a {kind}"
            want_dims = image_dims(res.shape)
            if tuple(shape) != want_dims:
                return (f"{where} has shape {list(res.shape)}, so the image needs dims {list(want_dims)}, "
                        f"not {list(shape)}")
        else:
            return f"{where} has descriptor type {dtype or 'none'}, which a scenario resource cannot fill"
        if fmt != res.format:
            return f"{where} has format {res.format}, the {kind} has {fmt}"
        return None

    @staticmethod
    def alias_problem(port: Port) -> str | None:
        """Why a scenario resource cannot fill ``port`` in kernellab, or None: a port in an alias
        group would share memory with the group's intermediates (Arm's runner moves the scenario's
        resource into that memory; kernellab creates resources before it reads the graph)."""
        if port.resource.alias_group is None:
            return None
        return (f"VGF port {port.name!r} is in alias group {port.resource.alias_group}: kernellab's runner aliases "
                "the intermediates of a VGF, not its inputs and outputs")

    def summary(self) -> dict[str, Any]:
        """A JSON-ready description (for ``kernellab`` listings and error messages)."""
        return {
            "version": ".".join(map(str, self.version)),
            "modules": [dict(asdict(m), placeholder=m.placeholder) for m in self.modules],
            "segments": [asdict(s) for s in self.segments],
            "resources": [asdict(r) for r in self.resources],
            "constants": [asdict(c) for c in self.constants],
            "inputs": [{"name": p.name, "binding": p.binding, "resource": p.resource.index} for p in self.inputs],
            "outputs": [{"name": p.name, "binding": p.binding, "resource": p.resource.index} for p in self.outputs],
        }


def image_dims(vgf_shape: tuple[int, ...]) -> tuple[int, int, int, int]:
    """Scenario image ``dims`` ``[1, W, H, 1]`` for a VGF image shape (HWC or NHWC), as Arm's runner maps it."""
    h_index = 0 if len(vgf_shape) == 3 else 1
    return (1, int(vgf_shape[h_index + 1]), int(vgf_shape[h_index]), 1)


def descriptor_type_name(value: int | None) -> str | None:
    if value is None:
        return None
    return enums.names("VkDescriptorType").get(value, f"VkDescriptorType({value})")


def format_name(value: int) -> str:
    fmt = vkformat.by_value(value)
    return fmt.name if fmt is not None else f"VkFormat({value})"


def _ints(view: Any) -> tuple[int, ...]:
    return tuple(int(x) for x in view) if view is not None else ()


def read(path: str | os.PathLike[str]) -> VgfFile:
    """Decode the VGF file at ``path``; :class:`InputError` naming the file if it is not one."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read VGF file: {exc.strerror}", file=str(path)) from None
    return parse(data, path)


def parse(data: bytes, path: str | os.PathLike[str] = "<vgf>") -> VgfFile:
    vgf = _vgfpy()
    name = str(path)
    try:
        return _parse(vgf, data, name)
    except UnicodeDecodeError as exc:
        # Arm's decoder hands names over as they are stored; the binding refuses non-UTF-8 ones
        raise InputError.at(name, "a module, segment or port name",
                            f"the VGF holds a name that is not UTF-8 text ({exc.reason} at byte {exc.start} "
                            "of the name)") from None


def _parse(vgf: Any, data: bytes, name: str) -> VgfFile:
    header, sections, decoders = _decoders(vgf, data, name)
    modules_dec, seq, mrt, consts = (decoders[sec] for sec in ("module", "sequence", "resource", "constant"))
    resources = _resources(vgf, mrt)
    v = header.GetVersion()
    return VgfFile(
        path=name, version=(int(v.major), int(v.minor), int(v.patch)),
        vulkan_headers_version=int(header.GetEncoderVulkanHeadersVersion()),
        modules=_modules(vgf, modules_dec), segments=_segments(vgf, seq), resources=resources,
        constants=_constants(consts),
        inputs=_ports(seq, seq.getModelSequenceInputBindingSlotsHandle(), seq.getModelSequenceInputNamesHandle(),
                      resources, name),
        outputs=_ports(seq, seq.getModelSequenceOutputBindingSlotsHandle(), seq.getModelSequenceOutputNamesHandle(),
                       resources, name),
        _data=bytes(data), _sections=sections)


def _decoders(vgf: Any, data: bytes, name: str) -> tuple[Any, dict[str, tuple[int, int]], dict[str, Any]]:
    """The header, each section's (offset, size) and each section's decoder, or an
    :class:`InputError` at the first damaged part."""
    if len(data) < vgf.HeaderSize():
        raise InputError.at(name, "byte 0 (header)",
                            f"not a VGF file: {len(data)} bytes is shorter than a VGF header")
    header = vgf.CreateHeaderDecoder(data, vgf.HeaderSize(), len(data))
    if header is None or not header.IsValid():
        raise InputError.at(name, "byte 0 (header)", "not a VGF file (bad magic or header)")
    if not header.CheckVersion():
        v = header.GetVersion()
        raise InputError.at(name, "byte 8 (version)",
                            f"VGF format version {v.major}.{v.minor}.{v.patch} is not supported by "
                            f"the installed {VGF_PACKAGE}; upgrade it or regenerate the file")
    sections = {
        "module": (header.GetModuleTableOffset(), header.GetModuleTableSize()),
        "sequence": (header.GetModelSequenceTableOffset(), header.GetModelSequenceTableSize()),
        "resource": (header.GetModelResourceTableOffset(), header.GetModelResourceTableSize()),
        "constant": (header.GetConstantsOffset(), header.GetConstantsSize()),
    }
    for sec, (off, size) in sections.items():
        if off + size > len(data):
            raise InputError.at(name, f"byte {off} ({sec} section)", f"the {sec} section runs past the end of the file")
    view = memoryview(data)
    make = {"module": vgf.CreateModuleTableDecoder, "sequence": vgf.CreateModelSequenceTableDecoder,
            "resource": vgf.CreateModelResourceTableDecoder, "constant": vgf.CreateConstantDecoder}
    decoders = {sec: make[sec](view[off:], size) for sec, (off, size) in sections.items()}
    for sec, dec in decoders.items():
        if dec is None:
            raise InputError.at(name, f"byte {sections[sec][0]} ({sec} section)", f"the {sec} section is damaged")
    return header, sections, decoders


def _module_kinds(vgf: Any) -> dict[Any, str]:
    return {vgf.ModuleType.Graph: "graph", vgf.ModuleType.Compute: "compute"}


def _resources(vgf: Any, mrt: Any) -> list[Resource]:
    categories = {vgf.ResourceCategory.Input: "input", vgf.ResourceCategory.Output: "output",
                  vgf.ResourceCategory.Intermediate: "intermediate", vgf.ResourceCategory.Constant: "constant"}
    resources = []
    for i in range(mrt.size()):
        fmt = int(mrt.getVkFormat(i))
        resources.append(Resource(
            index=i, category=categories[mrt.getCategory(i)], format=format_name(fmt), format_value=fmt,
            shape=_ints(mrt.getTensorShape(i)), strides=_ints(mrt.getTensorStride(i)),
            descriptor_type=descriptor_type_name(mrt.getDescriptorType(i)), alias_group=mrt.getAliasGroupId(i)))
    return resources


def _modules(vgf: Any, modules_dec: Any) -> list[Module]:
    kinds = _module_kinds(vgf)
    modules = []
    for i in range(modules_dec.size()):
        if modules_dec.isSPIRV(i):
            code = "spirv" if modules_dec.hasSPIRVCode(i) else None
        elif modules_dec.isGLSL(i):
            code = "glsl" if modules_dec.hasGLSLCode(i) else None
        elif modules_dec.isHLSL(i):
            code = "hlsl" if modules_dec.hasHLSLCode(i) else None
        else:
            code = None
        modules.append(Module(i, str(modules_dec.getModuleName(i)), str(modules_dec.getModuleEntryPoint(i)),
                              kinds[modules_dec.getModuleType(i)], code))
    return modules


def _slots(seq: Any, handle: Any) -> tuple[Binding, ...]:
    return tuple(Binding(int(seq.getBindingSlotBinding(handle, k)), int(seq.getBindingSlotMrtIndex(handle, k)))
                 for k in range(seq.getBindingsSize(handle)))


def _segments(vgf: Any, seq: Any) -> list[Segment]:
    kinds = _module_kinds(vgf)
    segments = []
    for s in range(seq.modelSequenceTableSize()):
        sets = tuple(DescriptorSet(int(seq.getSegmentDescriptorSetIndex(s, d)),
                                   _slots(seq, seq.getDescriptorBindingSlotsHandle(s, d)))
                     for d in range(seq.getSegmentDescriptorSetInfosSize(s)))
        pc = seq.getSegmentPushConstRange(s)
        ranges = tuple(PushConstantRange(int(seq.getPushConstRangeStageFlags(pc, k)),
                                         int(seq.getPushConstRangeOffset(pc, k)), int(seq.getPushConstRangeSize(pc, k)))
                       for k in range(seq.getPushConstRangesSize(pc)))
        shape = _ints(seq.getSegmentDispatchShape(s)) or (0, 0, 0)
        segments.append(Segment(
            index=s, name=str(seq.getSegmentName(s)), kind=kinds[seq.getSegmentType(s)],
            module=int(seq.getSegmentModuleIndex(s)), descriptor_sets=sets,
            inputs=_slots(seq, seq.getSegmentInputBindingSlotsHandle(s)),
            outputs=_slots(seq, seq.getSegmentOutputBindingSlotsHandle(s)),
            dispatch_shape=(shape + (1, 1, 1))[:3],  # type: ignore[arg-type]
            push_constant_ranges=ranges, constants=_ints(seq.getSegmentConstantIndexes(s)),
            constant_bindings=tuple(_constant_binding(b) for b in seq.getSegmentConstantBindings(s))))
    return segments


def _constants(consts: Any) -> list[Constant]:
    constants = []
    for c in range(consts.size()):
        data_c = consts.getConstant(c)
        sparse = consts.getConstantSparsityDimension(c) if consts.isSparseConstant(c) else None
        constants.append(Constant(c, int(consts.getConstantMrtIndex(c)),
                                  memoryview(data_c).nbytes if data_c is not None else 0,
                                  int(sparse) if sparse is not None else None))
    return constants


def _ports(seq: Any, slot_handle: Any, names_handle: Any, resources: list[Resource], name: str) -> list[Port]:
    out = []
    for k, b in enumerate(_slots(seq, slot_handle)):
        pname = seq.getName(names_handle, k) if k < seq.getNamesSize(names_handle) else f"#{k}"
        if not 0 <= b.resource < len(resources):
            raise InputError.at(name, "model sequence", f"port {pname!r} names resource {b.resource}, "
                                f"but the resource table has {len(resources)}")
        out.append(Port(str(pname), b.binding, resources[b.resource]))
    return out


def _constant_binding(b: Any) -> tuple[int, int]:
    """(graph constant id, constant table index) of a ``vgfpy.GraphConstantBinding``."""
    return int(b.graphConstantId), int(b.constantIndex)
