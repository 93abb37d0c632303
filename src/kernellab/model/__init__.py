"""The typed model of a compute workload: resources and commands.

These classes mirror the Scenario Runner JSON spec (../shared/specs/scenario-json.rst) field by
field. Each field is declared once with the helpers of :mod:`kernellab.modelkit`, which give both
the exact error message a user reads (``expected an integer >= 1, got "40"``) and the JSON Schema
editors use. Paths are kept as written; :mod:`kernellab.formats.scenario` resolves them.
"""
from __future__ import annotations

from pathlib import Path

from kernellab.modelkit import U32, U64, Bool, Enum, Field, Int, List, Nested, Node, Scalar, Str, VkFormat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar

    from kernellab.model.barriers import BarrierBase as BarrierBase
    from kernellab.model.barriers import BufferBarrier as BufferBarrier
    from kernellab.model.barriers import DispatchBarrier as DispatchBarrier
    from kernellab.model.barriers import ImageBarrier as ImageBarrier
    from kernellab.model.barriers import MemoryBarrier as MemoryBarrier
    from kernellab.model.barriers import SubresourceRange as SubresourceRange
    from kernellab.model.barriers import TensorBarrier as TensorBarrier
    from kernellab.model.graph import DispatchDataGraph as DispatchDataGraph
    from kernellab.model.graph import DispatchGraph as DispatchGraph
    from kernellab.model.graph import Graph as Graph
    from kernellab.model.graph import GraphConstant as GraphConstant
    from kernellab.model.graph import PushConstantMap as PushConstantMap
    from kernellab.model.graph import ShaderSubstitution as ShaderSubstitution
    from kernellab.model.graph import SpecializationConstantMap as SpecializationConstantMap
    from kernellab.model.graphics import ColorAttachment as ColorAttachment
    from kernellab.model.graphics import DispatchFragment as DispatchFragment
    from kernellab.model.image import Image as Image
    from kernellab.model.optical_flow import OPTICAL_FLOW_EXECUTION_FLAGS as OPTICAL_FLOW_EXECUTION_FLAGS
    from kernellab.model.optical_flow import OPTICAL_FLOW_GRID_SIZES as OPTICAL_FLOW_GRID_SIZES
    from kernellab.model.optical_flow import OPTICAL_FLOW_PERFORMANCE_LEVELS as OPTICAL_FLOW_PERFORMANCE_LEVELS
    from kernellab.model.optical_flow import DispatchOpticalFlow as DispatchOpticalFlow
    from kernellab.model.optical_flow import OpticalFlowBindings as OpticalFlowBindings
    from kernellab.model.optional import MemoryGroup as MemoryGroup
    from kernellab.model.optional import SubgroupSize as SubgroupSize
    from kernellab.model.tensor import AliasTarget as AliasTarget
    from kernellab.model.tensor import Tensor as Tensor

    RESOURCE_KINDS: dict[str, type[Resource]]
    COMMAND_KINDS: dict[str, type[Command]]

ACCESS = ("ACCESS_MEMORY_WRITE", "ACCESS_MEMORY_READ", "ACCESS_GRAPH_WRITE", "ACCESS_GRAPH_READ",
          "ACCESS_COMPUTE_SHADER_WRITE", "ACCESS_COMPUTE_SHADER_READ")
STAGES = ("GRAPH", "COMPUTE", "GRAPHICS", "ALL")
LAYOUTS = ("IMAGE_LAYOUT_TENSOR_ALIASING", "IMAGE_LAYOUT_GENERAL", "IMAGE_LAYOUT_UNDEFINED")
# Arm's runner (0.11) reads these enums in lower case without their prefix ("compute_shader_write",
# "compute", "general"); its own test files are written that way, so both spellings are accepted.
ACCESS_ALIASES = {a.removeprefix("ACCESS_").lower(): a for a in ACCESS}
STAGE_ALIASES = {s.lower(): s for s in STAGES}
LAYOUT_ALIASES = {lay.removeprefix("IMAGE_LAYOUT_").lower(): lay for lay in LAYOUTS}
SHADER_TYPES = ("GLSL", "SPIR-V", "OpenCL-C")
SHADER_STAGES = ("compute", "vertex", "fragment")
#: tensor formats of the spec, with the NumPy dtype of their .npy files
TENSOR_FORMATS = {
    "VK_FORMAT_R8_BOOL_ARM": "bool", "VK_FORMAT_R8_UINT": "uint8", "VK_FORMAT_R8_SINT": "int8",
    "VK_FORMAT_R16_UINT": "uint16", "VK_FORMAT_R16_SINT": "int16", "VK_FORMAT_R32_UINT": "uint32",
    "VK_FORMAT_R32_SINT": "int32", "VK_FORMAT_R64_SINT": "int64", "VK_FORMAT_R16_SFLOAT": "float16",
    "VK_FORMAT_R32_SFLOAT": "float32",
}


class Resource(Node):
    kind: ClassVar[str]
    uid = Str(nonempty=True, description="globally unique identifier for the resource")


class DataResource(Resource):
    """A resource that holds data a shader reads or writes (buffer, image, tensor)."""

    src = Str(default="", description="file to initialize the resource from")
    dst = Str(default="", description="file to write the contents to after the commands ran")
    memory_group = Nested(lambda: declared("MemoryGroup"), default=None)
    model_locations: ClassVar[tuple[str, ...]] = ("src_path", "dst_path")
    _src_path: Path | None = None
    _dst_path: Path | None = None

    @property
    def src_path(self) -> Path | None:
        return self._src_path

    @property
    def dst_path(self) -> Path | None:
        return self._dst_path


class Buffer(DataResource):
    kind: ClassVar[str] = "buffer"
    size = Int(1, U64, description="total size of the buffer in bytes")
    shader_access = Enum("readonly", "writeonly", "readwrite")


#: the widest sampler minLod/maxLod kernellab takes: VK_LOD_CLAMP_NONE (1000.0), Vulkan's "no clamp"
LOD_LIMIT = 1000.0


class RawData(Resource):
    kind: ClassVar[str] = "raw_data"
    src = Str(nonempty=True, description="NumPy file holding the bytes")
    model_locations: ClassVar[tuple[str, ...]] = ("src_path",)
    _src_path: Path | None = None

    @property
    def src_path(self) -> Path | None:
        return self._src_path


class SpecializationConstant(Node):
    id = Int(0, U32)
    value = Scalar


class Shader(Resource):
    kind: ClassVar[str] = "shader"
    src = Str(nonempty=True, description="shader source file (GLSL, SPIR-V binary or OpenCL C)")
    entry = Str(default="main", nonempty=True)
    type = Enum(*SHADER_TYPES)
    stage = Enum(*SHADER_STAGES, default="compute",
                 description="pipeline stage: compute (dispatch_compute), vertex or fragment (dispatch_fragment)")
    build_options = Str(default="")
    include_dirs = List(Str(), default=[])
    push_constants_size = Int(0, U32, default=0, description="bytes of push constants; a multiple of 4")
    specialization_constants = List(SpecializationConstant, default=[])
    subgroup = Nested(lambda: declared("SubgroupSize"), default=None,
                      description="kernellab's extension: the compute pipeline's subgroup sizing (docs/scenario.md)")
    model_locations: ClassVar[tuple[str, ...]] = ("src_path", "include_paths")
    _src_path: Path | None = None
    _include_paths: tuple[Path, ...] = ()

    @property
    def src_path(self) -> Path | None:
        return self._src_path

    @property
    def include_paths(self) -> tuple[Path, ...]:
        return self._include_paths


def _optional_format(description: str) -> Any:
    """A VkFormat field that may be absent (None)."""
    return Field(VkFormat, None, description)


class Binding(Node):
    set = Int(0, U32)
    id = Int(0, U32)
    resource_ref = Str(nonempty=True)
    lod = Int(0, U32, default=None,
              description="mip level to bind; absent: the whole chain (sampled) or level 0 (storage)")
    # SAMPLED_IMAGE, SAMPLER, COMBINED_IMAGE_SAMPLER and the texel buffers are kernellab's extensions
    # (AmberScript's sampled_image, BIND SAMPLER, combined_image_sampler, *_texel_buffer): a SAMPLER
    # binding takes the image's sampler, a texel buffer binding views a buffer as texel_format texels
    descriptor_type = Enum("VK_DESCRIPTOR_TYPE_AUTO", "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE",
                           "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE", "VK_DESCRIPTOR_TYPE_SAMPLER",
                           "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER", "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER",
                           "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER", "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC",
                           "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC", default="VK_DESCRIPTOR_TYPE_AUTO")
    texel_format = _optional_format("kernellab's extension: the VkFormat a texel buffer binding views the buffer as "
                                    "(its VkBufferView's)")
    #: the bytes (offset, size) of the buffer the binding sees, from its offset as byte 0: a part of
    #: a split PySchedCL dispatch (an OpenCL sub-buffer), or a file's descriptor range (the Vulkan
    #: descriptor's offset and range, AmberScript's DESCRIPTOR_OFFSET/DESCRIPTOR_RANGE)
    buffer_range = List(Int(0, U64), default=None, min_len=2, max_len=2,
                        description="kernellab extension: [offset, size] in bytes of the buffer the descriptor "
                                    "sees (VkDescriptorBufferInfo's offset and range); absent: the whole buffer")
    array_element = Int(0, U32, default=0,
                        description="kernellab extension: the element of a descriptor array this binding fills "
                                    "(VkWriteDescriptorSet's dstArrayElement); bindings of one set and binding "
                                    "number fill elements 0, 1, ... of the shader's array of buffers")
    dynamic_offset = Int(0, U32, default=0,
                         description="kernellab extension: a dynamic descriptor's offset, added to the range's "
                                     "when the set is bound (vkCmdBindDescriptorSets' pDynamicOffsets)")


class Command(Node):
    kind: ClassVar[str]


class DispatchCompute(Command):
    kind: ClassVar[str] = "dispatch_compute"
    shader_ref = Str(nonempty=True)
    push_data_ref = Str(default="")
    rangeND = List(Int(1, U32), min_len=1, max_len=3, description="workgroup counts per dimension")
    bindings = List(Binding, default=[])
    implicit_barrier = Bool(default=True)
    global_offset = List(Int(0, U32), default=None, min_len=1, max_len=3,
                         description="kernellab extension, OpenCL backend only: the global id of the first "
                                     "work-item per dimension (clEnqueueNDRangeKernel's global_work_offset)")
    #: in memory only (a kernel-instantiation launch, never read from a file): the work-items per
    #: dimension when they are not whole work-groups; ``rangeND`` then counts the work-groups,
    #: the last of a dimension partial (1s where the driver chooses the work-group size)
    global_size: tuple[int, ...] | None = None

    @property
    def workgroups(self) -> tuple[int, int, int]:
        r = list(self.rangeND) + [1] * (3 - len(self.rangeND))
        return (r[0], r[1], r[2])


class MarkBoundary(Command):
    kind: ClassVar[str] = "mark_boundary"
    resources = List(Str(), default=[])
    frame_id = Int(0, U64, default=None)


#: where each class of the model is declared, for those not declared here: the scenario's images,
#: tensors, graphs, barriers, draws and optical flows, memory groups and subgroup sizings are built
#: on first use, so a run of buffers builds none of their classes (``model.Image`` imports
#: ``model/image.py``)
_DECLARED_IN = {
    "MemoryGroup": "optional", "SubgroupSize": "optional",
    "Image": "image", "Tensor": "tensor", "AliasTarget": "tensor",
    "Graph": "graph", "GraphConstant": "graph", "SpecializationConstantMap": "graph", "ShaderSubstitution": "graph",
    "PushConstantMap": "graph", "DispatchGraph": "graph", "DispatchDataGraph": "graph",
    "BarrierBase": "barriers", "MemoryBarrier": "barriers", "BufferBarrier": "barriers",
    "ImageBarrier": "barriers", "SubresourceRange": "barriers", "TensorBarrier": "barriers",
    "DispatchBarrier": "barriers",
    "DispatchFragment": "graphics", "ColorAttachment": "graphics",
    "OpticalFlowBindings": "optical_flow", "DispatchOpticalFlow": "optical_flow",
    "OPTICAL_FLOW_GRID_SIZES": "optical_flow", "OPTICAL_FLOW_PERFORMANCE_LEVELS": "optical_flow",
    "OPTICAL_FLOW_EXECUTION_FLAGS": "optical_flow",
}
#: resource kind -> the name of its class, in the order messages list them
RESOURCE_CLASSES = {"image": "Image", "tensor": "Tensor", "buffer": "Buffer", "raw_data": "RawData", "graph": "Graph",
                    "shader": "Shader", "memory_barrier": "MemoryBarrier", "buffer_barrier": "BufferBarrier",
                    "image_barrier": "ImageBarrier", "tensor_barrier": "TensorBarrier",
                    "graph_constant": "GraphConstant"}
#: command kind -> the name of its class, in the order messages list them
COMMAND_CLASSES = {"dispatch_compute": "DispatchCompute", "dispatch_graph": "DispatchGraph",
                   "dispatch_data_graph": "DispatchDataGraph", "dispatch_barrier": "DispatchBarrier",
                   "mark_boundary": "MarkBoundary", "dispatch_fragment": "DispatchFragment",
                   "dispatch_optical_flow": "DispatchOpticalFlow"}


def declared(name: str) -> Any:
    """The class (or table) of the model named ``name``, built when first asked for."""
    value = globals().get(name)
    return value if value is not None else __getattr__(name)


def __getattr__(name: str) -> Any:
    # the module's attributes not declared in this file (PEP 562): each loaded on first use
    if name in ("RESOURCE_KINDS", "COMMAND_KINDS"):
        table = RESOURCE_CLASSES if name == "RESOURCE_KINDS" else COMMAND_CLASSES
        value: Any = {kind: declared(cls) for kind, cls in table.items()}
    elif name in _DECLARED_IN:
        import importlib

        value = getattr(importlib.import_module(f"{__name__}.{_DECLARED_IN[name]}"), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


#: newer command names (Arm ML SDK 0.11) accepted as aliases
COMMAND_ALIASES = {"pipeline_barrier": "dispatch_barrier", "frame_boundary": "mark_boundary",
                   "dispatch_vgf": "dispatch_graph", "dispatch_spirv_graph": "dispatch_data_graph"}
#: command names of Arm's runner that kernellab knows but does not run, with the reason
REJECTED_COMMANDS: dict[str, str] = {}


class Scenario:
    """A whole workload: resources by uid, commands in order, and where its files live."""

    def __init__(self, resources: list[Resource], commands: list[Command], file: Path | None = None,
                 output_dir: Path | None = None):
        self.resources = resources
        self.commands = commands
        self.file = file
        self.output_dir = output_dir
        self.by_uid: dict[str, Resource] = {r.uid: r for r in resources}

    def of_kind(self, cls: type[Resource]) -> list[Resource]:
        return [r for r in self.resources if isinstance(r, cls)]

    def __repr__(self) -> str:
        return f"Scenario({self.file}, {len(self.resources)} resources, {len(self.commands)} commands)"
