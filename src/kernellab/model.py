"""The typed model of a compute workload: resources and commands.

These classes mirror the Scenario Runner JSON spec (../shared/specs/scenario-json.rst) field by
field. Each field's type is declared once with the helpers below, which give both the exact error
message a user reads (``expected an integer >= 1, got "40"``) and the JSON Schema editors use.
Paths are kept as written; :mod:`kernellab.formats.scenario` resolves them.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, PrivateAttr
from pydantic_core import PydanticCustomError


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(message: str) -> PydanticCustomError:
    return PydanticCustomError("kernellab", "{message}", {"message": message})


#: the widths of the Vulkan/OpenCL struct fields a value ends up in: a number past them is refused
#: here, with its JSON path, instead of overflowing in a driver struct
U32 = 2**32 - 1
I64 = 2**63 - 1
U64 = 2**64 - 1


def _int_check(lo: int | None, hi: int | None):
    # a bound that is only the width of the struct field is named when a value passes it, not in
    # every message about a wrong type or a small value
    width = hi in (U32, I64, U64)

    def bounds(with_hi: bool) -> str:
        hi_shown = hi if with_hi or not width else None
        return (f" >= {lo}" if lo is not None else "") + (
            f" and <= {hi_shown}" if hi_shown is not None and lo is not None
            else f" <= {hi_shown}" if hi_shown is not None else "")

    def check(v: Any) -> Any:
        if isinstance(v, bool) or not isinstance(v, int) or (lo is not None and v < lo):
            raise _fail(f"expected an integer{bounds(False)}, got {_show(v)}")
        if hi is not None and v > hi:
            raise _fail(f"expected an integer{bounds(True)}, got {_show(v)}")
        return v
    return check


def Int(lo: int | None = None, hi: int | None = None, default: Any = ..., description: str = "") -> Any:
    """An integer field with bounds; ``Int(1)`` is a positive integer."""
    bounds = {k: v for k, v in (("minimum", lo), ("maximum", hi)) if v is not None}
    return Annotated[int, BeforeValidator(_int_check(lo, hi)),
                     Field(default, description=description or None, json_schema_extra=bounds or None)]


def _str_check(nonempty: bool):
    def check(v: Any) -> Any:
        if not isinstance(v, str):
            raise _fail(f"expected a string, got {_show(v)}")
        if nonempty and not v:
            raise _fail("expected a non-empty string")
        return v
    return check


def Str(default: Any = ..., nonempty: bool = False, description: str = "") -> Any:
    return Annotated[str, BeforeValidator(_str_check(nonempty)),
                     Field(default, min_length=1 if nonempty else None, description=description or None)]


def _bool_check(v: Any) -> Any:
    if not isinstance(v, bool):
        raise _fail(f"expected true or false, got {_show(v)}")
    return v


def Bool(default: Any = ..., description: str = "") -> Any:
    return Annotated[bool, BeforeValidator(_bool_check), Field(default, description=description or None)]


def _enum_check(values: tuple[str, ...], aliases: dict[str, str]):
    def check(v: Any) -> Any:
        if isinstance(v, str) and v in aliases:
            return aliases[v]
        if v not in values or not isinstance(v, str):
            raise _fail(f"expected one of {'|'.join(values)}, got {_show(v)}")
        return v
    return check


def Enum(*values: str, default: Any = ..., description: str = "", aliases: dict[str, str] | None = None) -> Any:
    """A string from ``values``; ``aliases`` are other accepted spellings, normalized on reading."""
    accepted = values + tuple(aliases or ())
    return Annotated[Literal[accepted], BeforeValidator(_enum_check(values, aliases or {})),  # type: ignore[valid-type]
                     Field(default, description=description or None)]


def _list_check(min_len: int | None, max_len: int | None):
    def check(v: Any) -> Any:
        if not isinstance(v, list):
            raise _fail(f"expected an array, got {_show(v)}")
        if min_len is not None and len(v) < min_len or max_len is not None and len(v) > max_len:
            if min_len == max_len:
                want = f"exactly {min_len}"
            elif max_len is None:
                want = f"at least {min_len}"
            else:
                want = f"{min_len} to {max_len}"
            raise _fail(f"expected an array of {want} entries, got {len(v)}")
        return v
    return check


def List(item: Any, default: Any = ..., min_len: int | None = None, max_len: int | None = None,
         description: str = "") -> Any:
    return Annotated[list[item], BeforeValidator(_list_check(min_len, max_len)),  # type: ignore[valid-type]
                     Field(default, min_length=min_len, max_length=max_len, description=description or None)]


def _number_check(v: Any) -> Any:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _fail(f"expected a number, got {_show(v)}")
    return v


Number = Annotated[Union[int, float], BeforeValidator(_number_check)]


def _scalar_check(v: Any) -> Any:
    if not isinstance(v, (int, float, bool)):
        raise _fail(f"expected an integer, a float or a boolean, got {_show(v)}")
    if isinstance(v, int) and not isinstance(v, bool) and not -(2**31) <= v <= U32:
        # a specialization constant is 32 bits wide: int32 or uint32
        raise _fail(f"expected a 32-bit integer (>= -2147483648 and <= 4294967295), got {_show(v)}")
    return v


class Node(BaseModel):
    """Base of every JSON object in a scenario: unknown fields are kept (and warned about)."""

    # defer_build: validators are built on first use, so a run pays only for the kinds its file has
    model_config = ConfigDict(extra="allow", strict=True, json_schema_extra={"additionalProperties": False},
                              populate_by_name=True, defer_build=True)


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
#: tensor formats of the spec, with the NumPy dtype of their .npy files
TENSOR_FORMATS = {
    "VK_FORMAT_R8_BOOL_ARM": "bool", "VK_FORMAT_R8_UINT": "uint8", "VK_FORMAT_R8_SINT": "int8",
    "VK_FORMAT_R16_UINT": "uint16", "VK_FORMAT_R16_SINT": "int16", "VK_FORMAT_R32_UINT": "uint32",
    "VK_FORMAT_R32_SINT": "int32", "VK_FORMAT_R64_SINT": "int64", "VK_FORMAT_R16_SFLOAT": "float16",
    "VK_FORMAT_R32_SFLOAT": "float32",
}


def _format_check(v: Any) -> Any:
    if not isinstance(v, str):
        raise _fail(f"expected a VkFormat name such as \"VK_FORMAT_R32_SFLOAT\", got {_show(v)}")
    if not v.startswith("VK_FORMAT_") or v == "VK_FORMAT_":
        raise _fail(f"expected a VkFormat name such as \"VK_FORMAT_R32_SFLOAT\", got {_show(v)}")
    return v


VkFormat = Annotated[str, BeforeValidator(_format_check), Field(pattern=r"^VK_FORMAT_\w+$")]


class MemoryGroup(Node):
    """Arm 0.11's aliasing form: resources with the same ``id`` share one allocation."""

    id: Str(nonempty=True)
    offset: Int(0, U64, default=0)


class Resource(Node):
    kind: ClassVar[str]
    uid: Str(nonempty=True, description="globally unique identifier for the resource")


class DataResource(Resource):
    """A resource that holds data a shader reads or writes (buffer, image, tensor)."""

    src: Str(default="", description="file to initialize the resource from")
    dst: Str(default="", description="file to write the contents to after the commands ran")
    memory_group: MemoryGroup | None = None
    _src_path: Path | None = PrivateAttr(default=None)
    _dst_path: Path | None = PrivateAttr(default=None)

    @property
    def src_path(self) -> Path | None:
        return self._src_path

    @property
    def dst_path(self) -> Path | None:
        return self._dst_path


class Buffer(DataResource):
    kind: ClassVar[str] = "buffer"
    size: Int(1, U64, description="total size of the buffer in bytes")
    shader_access: Enum("readonly", "writeonly", "readwrite")


class AliasTarget(Node):
    resource_ref: Str(default="")
    mip_level: Int(0, 0, default=0, description="only 0 is supported")
    array_layer: Int(0, 0, default=0, description="only 0 is supported")


class Tensor(DataResource):
    kind: ClassVar[str] = "tensor"
    dims: List(Int(1, I64), min_len=1)
    format: VkFormat
    shader_access: Enum("readonly", "writeonly", "readwrite")
    alias_target: AliasTarget | None = None
    tiling: Enum("OPTIMAL", "LINEAR", default=None)


class Image(DataResource):
    kind: ClassVar[str] = "image"
    format: VkFormat
    dims: List(Int(1, U32), min_len=2, max_len=4, description="[1, width, height, 1] as Arm writes it, or [width, height]")
    shader_access: Enum("readonly", "writeonly", "readwrite", "image_read")
    mips: Int(1, U32, default=1)
    min_filter: Enum("NEAREST", "LINEAR", default=None)
    mag_filter: Enum("NEAREST", "LINEAR", default=None)
    mip_filter: Enum("NEAREST", "LINEAR", default=None)
    border_address_mode: Enum("CLAMP_EDGE", "CLAMP_BORDER", "REPEAT", "MIRRORED_REPEAT", default=None)
    border_color: Enum("FLOAT_TRANSPARENT_BLACK", "FLOAT_OPAQUE_BLACK", "FLOAT_OPAQUE_WHITE",
                       "INT_TRANSPARENT_BLACK", "INT_OPAQUE_BLACK", "INT_OPAQUE_WHITE", "INT_CUSTOM_EXT",
                       "FLOAT_CUSTOM_EXT", default=None)
    custom_border_color: List(Number, default=None, min_len=4, max_len=4)
    tiling: Enum("OPTIMAL", "LINEAR", default=None)


class RawData(Resource):
    kind: ClassVar[str] = "raw_data"
    src: Str(nonempty=True, description="NumPy file holding the bytes")
    _src_path: Path | None = PrivateAttr(default=None)

    @property
    def src_path(self) -> Path | None:
        return self._src_path


class SpecializationConstant(Node):
    id: Int(0, U32)
    value: Annotated[Union[bool, int, float], BeforeValidator(_scalar_check)]


class Shader(Resource):
    kind: ClassVar[str] = "shader"
    src: Str(nonempty=True, description="shader source file (GLSL, SPIR-V binary or OpenCL C)")
    entry: Str(default="main", nonempty=True)
    type: Enum(*SHADER_TYPES)
    stage: Enum("compute", default="compute", description="pipeline stage; kernellab runs compute shaders")
    build_options: Str(default="")
    include_dirs: List(Str(), default=[])
    push_constants_size: Int(0, U32, default=0, description="bytes of push constants; a multiple of 4")
    specialization_constants: List(SpecializationConstant, default=[])
    _src_path: Path | None = PrivateAttr(default=None)
    _include_paths: tuple[Path, ...] = PrivateAttr(default=())

    @property
    def src_path(self) -> Path | None:
        return self._src_path

    @property
    def include_paths(self) -> tuple[Path, ...]:
        return self._include_paths


class SpecializationConstantMap(Node):
    specialization_constants: List(SpecializationConstant)
    shader_target: Str(nonempty=True)


class ShaderSubstitution(Node):
    shader_ref: Str(nonempty=True)
    target: Str(nonempty=True)


class Graph(Resource):
    kind: ClassVar[str] = "graph"
    src: Str(nonempty=True, description="VGF file")
    specialization_constants_map: List(SpecializationConstantMap, default=[])
    shader_substitutions: List(ShaderSubstitution, default=[])
    push_constants_size: Int(0, U32, default=0)
    _src_path: Path | None = PrivateAttr(default=None)

    @property
    def src_path(self) -> Path | None:
        return self._src_path


class BarrierBase(Resource):
    src_access: Enum(*ACCESS, aliases=ACCESS_ALIASES)
    dst_access: Enum(*ACCESS, aliases=ACCESS_ALIASES)
    # optional in Arm's runner, where they default to ALL
    src_stage: List(Enum(*STAGES, aliases=STAGE_ALIASES), default=["ALL"], min_len=1)
    dst_stage: List(Enum(*STAGES, aliases=STAGE_ALIASES), default=["ALL"], min_len=1)


class MemoryBarrier(BarrierBase):
    kind: ClassVar[str] = "memory_barrier"


class BufferBarrier(BarrierBase):
    kind: ClassVar[str] = "buffer_barrier"
    buffer_resource: Str(nonempty=True)
    size: Int(1, U64)
    offset: Int(0, U64, default=0)


class SubresourceRange(Node):
    base_mip_level: Int(0, U32, default=0)
    level_count: Int(1, U32, default=1)
    base_array_layer: Int(0, U32, default=0)
    layer_count: Int(1, U32, default=1)


class ImageBarrier(BarrierBase):
    kind: ClassVar[str] = "image_barrier"
    old_layout: Enum(*LAYOUTS, aliases=LAYOUT_ALIASES)
    new_layout: Enum(*LAYOUTS, aliases=LAYOUT_ALIASES)
    image_resource: Str(nonempty=True)
    subresource_range: SubresourceRange = Field(default_factory=SubresourceRange)


class TensorBarrier(BarrierBase):
    kind: ClassVar[str] = "tensor_barrier"
    tensor_resource: Str(nonempty=True)


class Binding(Node):
    set: Int(0, U32)
    id: Int(0, U32)
    resource_ref: Str(nonempty=True)
    lod: Int(0, U32, default=None, description="mip level to bind; absent: the whole chain (sampled) or level 0 (storage)")
    descriptor_type: Enum("VK_DESCRIPTOR_TYPE_AUTO", "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE",
                          default="VK_DESCRIPTOR_TYPE_AUTO")


class Command(Node):
    kind: ClassVar[str]


class DispatchCompute(Command):
    kind: ClassVar[str] = "dispatch_compute"
    shader_ref: Str(nonempty=True)
    push_data_ref: Str(default="")
    rangeND: List(Int(1, U32), min_len=1, max_len=3, description="workgroup counts per dimension")
    bindings: List(Binding, default=[])
    implicit_barrier: Bool(default=True)

    @property
    def workgroups(self) -> tuple[int, int, int]:
        r = list(self.rangeND) + [1] * (3 - len(self.rangeND))
        return (r[0], r[1], r[2])


class PushConstantMap(Node):
    push_data_ref: Str(nonempty=True)
    shader_target: Str(nonempty=True)


class DispatchGraph(Command):
    kind: ClassVar[str] = "dispatch_graph"
    graph_ref: Str(nonempty=True)
    push_constants: List(PushConstantMap, default=[])
    # Arm's runner 0.11 reads the substitutions here; the spec puts them on the graph resource
    shader_substitutions: List(ShaderSubstitution, default=[])
    bindings: List(Binding, default=[])
    implicit_barrier: Bool(default=True)


class DispatchDataGraph(Command):
    """Arm 0.11's ``dispatch_data_graph`` (also ``dispatch_spirv_graph``): a graph SPIR-V module
    from a ``shader`` resource, its tensors bound at (set, id)."""

    kind: ClassVar[str] = "dispatch_data_graph"
    graph_ref: Str(nonempty=True, description="a shader resource holding a SPIR-V graph module")
    bindings: List(Binding, default=[])
    graph_constants: List(Str(), default=[], description="graph_constant resources (not run by kernellab)")
    implicit_barrier: Bool(default=True)


class DispatchBarrier(Command):
    kind: ClassVar[str] = "dispatch_barrier"
    image_barrier_refs: List(Str(), default=[])
    tensor_barrier_refs: List(Str(), default=[])
    memory_barrier_refs: List(Str(), default=[])
    buffer_barrier_refs: List(Str(), default=[])


class MarkBoundary(Command):
    kind: ClassVar[str] = "mark_boundary"
    resources: List(Str(), default=[])
    frame_id: Int(0, U64, default=None)


RESOURCE_KINDS: dict[str, type[Resource]] = {c.kind: c for c in (
    Image, Tensor, Buffer, RawData, Graph, Shader, MemoryBarrier, BufferBarrier, ImageBarrier, TensorBarrier)}
COMMAND_KINDS: dict[str, type[Command]] = {c.kind: c for c in (
    DispatchCompute, DispatchGraph, DispatchDataGraph, DispatchBarrier, MarkBoundary)}
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
