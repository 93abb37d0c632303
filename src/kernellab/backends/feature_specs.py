"""The records of a backend's optional features, as its ``Capabilities`` declare them: images and
their samplers, graphics programs, kernels' parameters (kernel launches), tensors and memory-group
members, graph segments, optical flows. Only the code that uses a feature imports this module: a
run of buffers and compute builds none of these classes (``base.py`` holds what it needs)."""
from __future__ import annotations

import abc
from dataclasses import field

from kernellab.backends.programs import BindingSlot, ProgramSpec, SpecConstant
from kernellab.opencl_types import ArgType
from kernellab.records import dataclass


@dataclass(frozen=True)
class GraphicsProgramSpec:
    """A graphics pipeline: a vertex and a fragment shader (each a SPIR-V :class:`ProgramSpec`),
    the formats of its color attachments in location order, the descriptors both stages share
    and one push-constant range both see."""

    uid: str
    vertex: ProgramSpec
    fragment: ProgramSpec
    color_formats: tuple[str, ...] = ()
    slots: tuple[BindingSlot, ...] = ()
    push_constants_size: int = 0

    @property
    def spec(self) -> ProgramSpec:
        """The program as the descriptor and push-constant code sees one (name, slots, range)."""
        return ProgramSpec(uid=self.uid, code=b"", language="spirv", slots=self.slots,
                           push_constants_size=self.push_constants_size)


@dataclass(frozen=True)
class SamplerSpec:
    """Sampler settings of a sampled image (Arm's defaults: nearest, clamp to edge, transparent black)."""

    min_filter: str = "NEAREST"
    mag_filter: str = "NEAREST"
    mip_filter: str = "NEAREST"
    address_mode: str = "CLAMP_EDGE"
    border_color: str = "FLOAT_TRANSPARENT_BLACK"
    custom_border_color: tuple[float, ...] | None = None
    #: kernellab's extensions (AmberScript's SAMPLER): per-axis modes (U, V, W) instead of address_mode
    address_modes: tuple[str, str, str] | None = None
    min_lod: float = 0.0
    #: None: the image's last level
    max_lod: float | None = None
    unnormalized_coordinates: bool = False
    #: "" (no comparison) or a VkCompareOp name without its prefix ("LESS_OR_EQUAL")
    compare_op: str = ""


@dataclass(frozen=True)
class ImageSpec:
    """A 2-D image: VkFormat name, extent, mip levels, how shaders use it, its sampler."""

    uid: str
    format: str
    width: int
    height: int
    mips: int = 1
    sampled: bool = False
    storage: bool = False
    tiling: str | None = None  # "LINEAR" | "OPTIMAL" | None (the backend picks)
    sampler: SamplerSpec = SamplerSpec()
    #: a tensor shares its memory (VK_ARM_tensors image aliasing)
    tensor_aliasing: bool = False
    #: a draw renders into it (``color_attachment`` images of ``dispatch_fragment``)
    color_attachment: bool = False
    #: "1D" | "2D" | "3D" (kernellab's extension for AmberScript's IMAGE)
    image_type: str = "2D"
    depth: int = 1
    samples: int = 1


class Image(abc.ABC):
    """A device image created by a backend."""

    spec: ImageSpec


@dataclass(frozen=True)
class KernelArg:
    """One parameter of a kernel taken as source, as the driver reports it (OpenCL's argument info)."""

    index: int
    name: str
    #: "global" | "local" | "constant" | "private" (private = passed by value)
    address_space: str
    type_name: str
    access: str = "none"  # image access qualifier: read_only, write_only, read_write, none
    #: the pointee type for pointers, the value type otherwise
    type: ArgType = field(default_factory=lambda: ArgType("", None))

    @property
    def is_pointer(self) -> bool:
        return self.type_name.endswith("*")

    @property
    def kind(self) -> str:
        """"buffer", "local", "scalar", "image" or "sampler"."""
        base = self.type_name.replace("const", "").strip()
        if base == "sampler_t":
            return "sampler"
        if base.startswith("image") and base.endswith("_t"):  # image2d_t, image1d_buffer_t, ...
            return "image"
        if self.address_space == "local":
            return "local"
        if self.address_space in ("global", "constant") and self.is_pointer:
            return "buffer"
        return "scalar"


@dataclass(frozen=True)
class TensorSpec:
    """A tensor: VkFormat name, dims, tiling and (LINEAR only) explicit byte strides."""

    uid: str
    format: str
    dims: tuple[int, ...]
    tiling: str | None = None          # "LINEAR" | "OPTIMAL"; None = LINEAR
    strides: tuple[int, ...] | None = None
    image_aliasing: bool = False
    #: uid of the image (in the same memory group) whose texels this tensor views; a LINEAR
    #: tensor takes the image's row pitch as its strides
    alias_image: str | None = None


@dataclass(frozen=True)
class BufferSpec:
    """A buffer created as a member of a memory group (or a VGF intermediate)."""

    uid: str
    size: int


@dataclass(frozen=True)
class GraphConstantSpec:
    """A constant tensor of a graph segment: its id, format, shape and data."""
    id: int
    format_value: int
    shape: tuple[int, ...]
    data: bytes
    sparsity_dimension: int | None = None


@dataclass(frozen=True)
class GraphSegmentSpec:
    """One segment of a VGF sequence (or a ``dispatch_data_graph``), ready to become a pipeline."""

    label: str
    kind: str                                  # "graph" | "compute"
    code: bytes                                # SPIR-V
    entry: str
    #: (set, binding, descriptor kind) of every resource the segment binds, sets numbered from 0;
    #: the kind is ``tensor`` or ``storage-buffer`` (a data-graph segment binds tensors only)
    slots: tuple[tuple[int, int, str], ...]
    constants: tuple[GraphConstantSpec, ...] = ()
    dispatch_shape: tuple[int, int, int] = (1, 1, 1)
    push_constants_size: int = 0
    specialization: tuple[SpecConstant, ...] = ()


@dataclass(frozen=True)
class OpticalFlowImage:
    """One image of an optical flow: its role, where it is bound, the level seen (None: all)."""

    role: str
    set: int
    binding: int
    image: Image
    lod: int | None = None
    sampled: bool = True


@dataclass(frozen=True)
class OpticalFlowSpec:
    """One ``dispatch_optical_flow``, ready to become a pipeline (names as in Arm's scenario files)."""

    label: str
    width: int
    height: int
    grid_size: str                     # "1x1" | "2x2" | "4x4" | "8x8"
    performance_level: str             # "unknown" | "slow" | "medium" | "fast"
    images: tuple[OpticalFlowImage, ...]
