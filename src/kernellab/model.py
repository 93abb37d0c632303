"""The typed model of a compute workload: resources and commands.

These classes mirror the Scenario Runner JSON spec (../shared/specs/scenario-json.rst) field by
field. Each field is declared once with the helpers of :mod:`kernellab.modelkit`, which give both
the exact error message a user reads (``expected an integer >= 1, got "40"``) and the JSON Schema
editors use. Paths are kept as written; :mod:`kernellab.formats.scenario` resolves them.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from kernellab.modelkit import I64, U32, U64, Bool, Enum, Field, Int, List, Nested, Node, Number, Scalar, Str, VkFormat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any, ClassVar

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


class MemoryGroup(Node):
    """Arm 0.11's aliasing form: resources with the same ``id`` share one allocation."""

    id = Str(nonempty=True)
    offset = Int(0, U64, default=0)


class Resource(Node):
    kind: ClassVar[str]
    uid = Str(nonempty=True, description="globally unique identifier for the resource")


class DataResource(Resource):
    """A resource that holds data a shader reads or writes (buffer, image, tensor)."""

    src = Str(default="", description="file to initialize the resource from")
    dst = Str(default="", description="file to write the contents to after the commands ran")
    memory_group = Nested(MemoryGroup, default=None)
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


class AliasTarget(Node):
    resource_ref = Str(default="")
    mip_level = Int(0, 0, default=0, description="only 0 is supported")
    array_layer = Int(0, 0, default=0, description="only 0 is supported")


class Tensor(DataResource):
    kind: ClassVar[str] = "tensor"
    dims = List(Int(1, I64), min_len=1)
    format = VkFormat
    shader_access = Enum("readonly", "writeonly", "readwrite")
    alias_target = Nested(AliasTarget, default=None)
    tiling = Enum("OPTIMAL", "LINEAR", default=None)


#: the widest sampler minLod/maxLod kernellab takes: VK_LOD_CLAMP_NONE (1000.0), Vulkan's "no clamp"
LOD_LIMIT = 1000.0


def _optional_number(description: str) -> Any:
    """A number field that may be absent (None)."""
    return Field(Number, None, description)


def _optional_format(description: str) -> Any:
    """A VkFormat field that may be absent (None)."""
    return Field(VkFormat, None, description)


class Image(DataResource):
    kind: ClassVar[str] = "image"
    format = VkFormat
    dims = List(Int(1, U32), min_len=2, max_len=4,
                description="[1, width, height, 1] as Arm writes it, or [width, height]")
    shader_access = Enum("readonly", "writeonly", "readwrite", "image_read")
    mips = Int(1, U32, default=1)
    min_filter = Enum("NEAREST", "LINEAR", default=None)
    mag_filter = Enum("NEAREST", "LINEAR", default=None)
    mip_filter = Enum("NEAREST", "LINEAR", default=None)
    border_address_mode = Enum("CLAMP_EDGE", "CLAMP_BORDER", "REPEAT", "MIRRORED_REPEAT", default=None)
    border_color = Enum("FLOAT_TRANSPARENT_BLACK", "FLOAT_OPAQUE_BLACK", "FLOAT_OPAQUE_WHITE",
                        "INT_TRANSPARENT_BLACK", "INT_OPAQUE_BLACK", "INT_OPAQUE_WHITE", "INT_CUSTOM_EXT",
                        "FLOAT_CUSTOM_EXT", default=None)
    custom_border_color = List(Number, default=None, min_len=4, max_len=4)
    tiling = Enum("OPTIMAL", "LINEAR", default=None)
    color_attachment = Bool(default=False, description="dispatch_fragment may render into it")
    # kernellab's extensions (AmberScript's IMAGE and SAMPLER, docs/amber.md); Arm's images are 2-D
    image_type = Enum("2D", "1D", "3D", default="2D",
                      description="kernellab's extension: the VkImageType and view type (1D: height 1)")
    depth = Int(1, U32, default=1, description="kernellab's extension: the depth of a 3D image")
    samples = Int(1, 64, default=1,
                  description="kernellab's extension: samples per texel (1, 2, 4 ... 64); a multisampled image "
                              "is a 2D storage image of one level without src or dst")
    address_modes = List(Enum("CLAMP_EDGE", "CLAMP_BORDER", "REPEAT", "MIRRORED_REPEAT", "MIRROR_CLAMP_EDGE"),
                         default=None, min_len=3, max_len=3,
                         description="kernellab's extension: the sampler's address modes U, V, W "
                                     "(instead of border_address_mode)")
    min_lod = _optional_number("kernellab's extension: the sampler's minLod (default 0)")
    max_lod = _optional_number("kernellab's extension: the sampler's maxLod (default: the last level)")
    unnormalized_coordinates = Bool(default=False, description="kernellab's extension: the sampler's "
                                                               "unnormalizedCoordinates")
    compare_op = Enum("NEVER", "LESS", "EQUAL", "LESS_OR_EQUAL", "GREATER", "NOT_EQUAL", "GREATER_OR_EQUAL",
                      "ALWAYS", default=None,
                      description="kernellab's extension: the sampler compares (compareEnable) with this op")


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


class SubgroupSize(Node):
    """kernellab's extension (AmberScript's ``SUBGROUP`` of a compute pipeline): how the device
    sizes the pipeline's subgroups (VK_EXT_subgroup_size_control, core in Vulkan 1.3)."""

    required_size = Int(1, U32, default=None,
                        description="the subgroup size the pipeline must run with (a power of two)")
    required_size_bound = Enum("min", "max", default=None,
                               description="instead of required_size: the device's minSubgroupSize or "
                                           "maxSubgroupSize, read when the pipeline is made")
    full_subgroups = Bool(default=False, description="every subgroup fully populated (computeFullSubgroups)")
    varying_size = Bool(default=False, description="the subgroup size may vary (ALLOW_VARYING_SUBGROUP_SIZE)")


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
    subgroup = Nested(SubgroupSize, default=None,
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


class SpecializationConstantMap(Node):
    specialization_constants = List(SpecializationConstant)
    shader_target = Str(nonempty=True)


class ShaderSubstitution(Node):
    shader_ref = Str(nonempty=True)
    target = Str(nonempty=True)


class Graph(Resource):
    kind: ClassVar[str] = "graph"
    src = Str(nonempty=True, description="VGF file")
    specialization_constants_map = List(SpecializationConstantMap, default=[])
    shader_substitutions = List(ShaderSubstitution, default=[])
    push_constants_size = Int(0, U32, default=0)
    model_locations: ClassVar[tuple[str, ...]] = ("src_path",)
    _src_path: Path | None = None

    @property
    def src_path(self) -> Path | None:
        return self._src_path


class GraphConstant(Resource):
    """Arm 0.11's ``graph_constant``: a constant tensor (weights) a ``dispatch_spirv_graph``'s graph
    module reads; the n-th entry of the command's ``graph_constants`` has graph constant id n."""

    kind: ClassVar[str] = "graph_constant"
    dims = List(Int(1, I64), min_len=1, max_len=6)
    format = VkFormat
    src = Str(nonempty=True, description="NumPy file holding the values, shaped by dims")
    model_locations: ClassVar[tuple[str, ...]] = ("src_path",)
    _src_path: Path | None = None

    @property
    def src_path(self) -> Path | None:
        return self._src_path


class BarrierBase(Resource):
    src_access = Enum(*ACCESS, aliases=ACCESS_ALIASES)
    dst_access = Enum(*ACCESS, aliases=ACCESS_ALIASES)
    # optional in Arm's runner, where they default to ALL
    src_stage = List(Enum(*STAGES, aliases=STAGE_ALIASES), default=["ALL"], min_len=1)
    dst_stage = List(Enum(*STAGES, aliases=STAGE_ALIASES), default=["ALL"], min_len=1)


class MemoryBarrier(BarrierBase):
    kind: ClassVar[str] = "memory_barrier"


class BufferBarrier(BarrierBase):
    kind: ClassVar[str] = "buffer_barrier"
    buffer_resource = Str(nonempty=True)
    size = Int(1, U64)
    offset = Int(0, U64, default=0)


class SubresourceRange(Node):
    base_mip_level = Int(0, U32, default=0)
    level_count = Int(1, U32, default=1)
    base_array_layer = Int(0, U32, default=0)
    layer_count = Int(1, U32, default=1)


class ImageBarrier(BarrierBase):
    kind: ClassVar[str] = "image_barrier"
    old_layout = Enum(*LAYOUTS, aliases=LAYOUT_ALIASES)
    new_layout = Enum(*LAYOUTS, aliases=LAYOUT_ALIASES)
    image_resource = Str(nonempty=True)
    subresource_range = Nested(SubresourceRange, default_factory=SubresourceRange)


class TensorBarrier(BarrierBase):
    kind: ClassVar[str] = "tensor_barrier"
    tensor_resource = Str(nonempty=True)


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


class ColorAttachment(Node):
    """An image ``dispatch_fragment`` renders into: ``color_attachment_refs`` entries are its uid
    or this object."""

    resource_ref = Str(nonempty=True)
    lod = Int(0, U32, default=None, description="mip level rendered into (absent: level 0)")


class DispatchFragment(Command):
    """Arm 0.11's graphics draw: one triangle list of three vertices, no vertex input, drawn with
    a vertex and a fragment shader into the color attachments (dynamic rendering, viewport and
    scissor the render extent)."""

    kind: ClassVar[str] = "dispatch_fragment"
    vertex_shader_ref = Str(nonempty=True, description="a shader of stage vertex")
    fragment_shader_ref = Str(nonempty=True, description="a shader of stage fragment")
    debug_name = Str(default="", description="the pipeline's name (default: fragment_shader_ref)")
    bindings = List(Binding)
    color_attachment_refs = List(Nested(ColorAttachment, shorthand="resource_ref"), default=[], min_len=1,
                                 description="images (color_attachment: true) rendered into, in location order")
    render_extent = List(Int(1, U32), default=None, min_len=2, max_len=2,
                         description="[width, height] rendered; default: the attachments' extent")
    push_data_ref = Str(default="")
    implicit_barrier = Bool(default=True)

    @property
    def name(self) -> str:
        return self.debug_name or self.fragment_shader_ref


class PushConstantMap(Node):
    push_data_ref = Str(nonempty=True)
    shader_target = Str(nonempty=True)


class DispatchGraph(Command):
    kind: ClassVar[str] = "dispatch_graph"
    graph_ref = Str(nonempty=True)
    push_constants = List(PushConstantMap, default=[])
    # Arm's runner 0.11 reads the substitutions here; the spec puts them on the graph resource
    shader_substitutions = List(ShaderSubstitution, default=[])
    bindings = List(Binding, default=[])
    implicit_barrier = Bool(default=True)


class DispatchDataGraph(Command):
    """Arm 0.11's ``dispatch_data_graph`` (also ``dispatch_spirv_graph``): a graph SPIR-V module
    from a ``shader`` resource, its tensors bound at (set, id)."""

    kind: ClassVar[str] = "dispatch_data_graph"
    graph_ref = Str(nonempty=True, description="a shader resource holding a SPIR-V graph module")
    bindings = List(Binding, default=[])
    graph_constants = List(Str(), default=[],
                           description="graph_constant resources, graph constant ids 0, 1, ... in this order")
    implicit_barrier = Bool(default=True)


#: Arm 0.11's names of VK_ARM_data_graph_optical_flow's enums, as its scenario files write them
OPTICAL_FLOW_GRID_SIZES = ("1x1", "2x2", "4x4", "8x8")
OPTICAL_FLOW_PERFORMANCE_LEVELS = ("unknown", "slow", "medium", "fast")
OPTICAL_FLOW_EXECUTION_FLAGS = ("disable_temporal_hints", "input_unchanged", "reference_unchanged",
                                "input_is_previous_reference", "reference_is_previous_input")


class OpticalFlowBindings(Node):
    """The images of ``dispatch_optical_flow``, each a binding by its role."""

    search_image = Nested(Binding, description="the current frame (VK_..._OPTICAL_FLOW_INPUT_ARM)")
    template_image = Nested(Binding, description="the reference frame (VK_..._OPTICAL_FLOW_REFERENCE_ARM)")
    output_image = Nested(Binding, description="the flow vectors written, one per grid cell")
    hint_motion_vectors = Nested(Binding, default=None, description="flow vectors to start the search from")
    output_cost = Nested(Binding, default=None, description="the matching cost of each flow vector")

    ROLES: ClassVar[tuple[str, ...]] = ("search_image", "template_image", "output_image", "hint_motion_vectors",
                                        "output_cost")

    def roles(self) -> list[tuple[str, Binding]]:
        """(role, binding) of the images given, in Arm's order."""
        return [(role, getattr(self, role)) for role in self.ROLES if getattr(self, role) is not None]

    def __iter__(self) -> Iterator[Binding]:
        return iter([b for _, b in self.roles()])


class DispatchOpticalFlow(Command):
    """Arm 0.11's optical flow (VK_ARM_data_graph_optical_flow): motion vectors from the search
    image to the template image, one per grid cell, computed by a data-graph pipeline."""

    kind: ClassVar[str] = "dispatch_optical_flow"
    width = Int(1, U32, description="width of the search image at the level bound")
    height = Int(1, U32, description="height of the search image at the level bound")
    grid_size = Enum(*OPTICAL_FLOW_GRID_SIZES, description="input pixels per output flow vector")
    performance_level = Enum(*OPTICAL_FLOW_PERFORMANCE_LEVELS, default="medium")
    execution_flags = List(Enum(*OPTICAL_FLOW_EXECUTION_FLAGS), default=[])
    mean_flow_l1_norm_hint = Int(0, U32, default=0, description="0, or below max(width, height)")
    bindings = Nested(OpticalFlowBindings)
    implicit_barrier = Bool(default=True)


class DispatchBarrier(Command):
    kind: ClassVar[str] = "dispatch_barrier"
    image_barrier_refs = List(Str(), default=[])
    tensor_barrier_refs = List(Str(), default=[])
    memory_barrier_refs = List(Str(), default=[])
    buffer_barrier_refs = List(Str(), default=[])


class MarkBoundary(Command):
    kind: ClassVar[str] = "mark_boundary"
    resources = List(Str(), default=[])
    frame_id = Int(0, U64, default=None)


RESOURCE_KINDS: dict[str, type[Resource]] = {c.kind: c for c in (
    Image, Tensor, Buffer, RawData, Graph, Shader, MemoryBarrier, BufferBarrier, ImageBarrier, TensorBarrier,
    GraphConstant)}
COMMAND_KINDS: dict[str, type[Command]] = {c.kind: c for c in (
    DispatchCompute, DispatchGraph, DispatchDataGraph, DispatchBarrier, MarkBoundary, DispatchFragment, DispatchOpticalFlow)}
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
