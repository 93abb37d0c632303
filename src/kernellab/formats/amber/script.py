"""The parsed form of an AmberScript file's compute subset: what the file declares, in order."""
from __future__ import annotations

from dataclasses import field
from pathlib import Path

from kernellab.compiler_options import Options
from kernellab.formats.amber.types import Element
from kernellab.records import dataclass


@dataclass
class Shader:
    name: str
    #: GLSL | HLSL | SPIRV-ASM | SPIRV-HEX | OPENCL-C
    format: str
    source: str
    line: int
    target_env: str = ""
    #: where the text's first line is: the file holding it (the script, or a FILE beside it) and
    #: its line there (0: no lines, a binary), so a compiler's message names the user's line
    text_file: str = ""
    text_line: int = 0


@dataclass(frozen=True)
class ImageShape:
    """What an ``IMAGE`` (or a ``BUFFER ... FORMAT`` with ``SAMPLES``) adds to a buffer: Amber's
    images are buffers with a shape, bound as images and probed by pixel."""

    #: DIM_1D | DIM_2D | DIM_3D
    dims: str
    width: int
    height: int
    depth: int
    #: the VkFormat (``VK_FORMAT_R8G8B8A8_UNORM``)
    format: str
    mips: int = 1
    samples: int = 1


@dataclass
class Sampler:
    """A ``SAMPLER``: each parameter as Vulkan names it (``NEAREST``, ``CLAMP_EDGE``, ...)."""

    name: str
    line: int
    mag_filter: str = "NEAREST"
    min_filter: str = "NEAREST"
    mip_filter: str = "NEAREST"
    #: U, V, W (Amber's default: repeat)
    address_modes: tuple[str, str, str] = ("REPEAT", "REPEAT", "REPEAT")
    border_color: str = "FLOAT_TRANSPARENT_BLACK"
    min_lod: float = 0.0
    max_lod: float = 1.0
    normalized: bool = True
    #: "" (COMPARE off) or the compare op (``LESS_OR_EQUAL``)
    compare_op: str = ""


@dataclass
class Buffer:
    name: str
    element: Element
    #: every component's value, element after element (len = elements * components)
    values: list[int | float]
    line: int
    #: an IMAGE's shape (None: a plain buffer)
    image: ImageShape | None = None


@dataclass
class Binding:
    buffer: str
    #: storage | uniform | push_constant | ...
    kind: str
    set: int
    binding: int
    line: int
    #: OpenCL C (``KERNEL ARG_NAME``/``ARG_NUMBER``): the kernel argument's name or number
    arg: str | int = ""
    #: ``OFFSET`` of a dynamic descriptor, ``DESCRIPTOR_OFFSET``, ``DESCRIPTOR_RANGE`` (-1: the rest)
    dynamic_offset: int = 0
    descriptor_offset: int = 0
    descriptor_range: int = -1
    #: BIND BUFFER_ARRAY: the buffer's element of the descriptor array
    array_element: int = 0
    #: images: ``combined_image_sampler``'s ``SAMPLER`` and ``BASE_MIP_LEVEL``
    sampler: str = ""
    base_mip: int = 0


@dataclass
class Pipeline:
    name: str
    line: int
    shader: str = ""
    entry: str = "main"
    specializations: list[tuple[int, int | float]] = field(default_factory=list)
    bindings: list[Binding] = field(default_factory=list)
    #: OpenCL C: (argument name, value bytes' element, values, line) of SET KERNEL ARG_NAME ... AS
    kernel_args: list[tuple[str | int, Element, list[int | float], int]] = field(default_factory=list)
    compile_options: str = ""
    #: SUBGROUP: (required size, 0 or "MIN"/"MAX", FULLY_POPULATED, VARYING_SIZE, line); None when not given
    subgroup: tuple[int | str, bool, bool, int] | None = None
    #: SHADER_OPTIMIZATION: the spirv-opt passes, checked against compiler_options' table
    optimizations: Options = field(default_factory=Options)
    #: COMPILE_OPTIONS that move a kernel's arguments (compiler_options.CLSPV_LAYOUT_OPTIONS)
    clspv_layout: Options = field(default_factory=Options)

    def bind_argument(self, binding: Binding) -> None:
        """Bind an OpenCL C kernel argument; a derived pipeline's BIND replaces the argument's binding."""
        self.bindings = [b for b in self.bindings if not (b.kind == "kernel" and b.arg == binding.arg)]
        self.bindings.append(binding)


@dataclass(frozen=True)
class KernelArgument:
    """Where clspv put one argument of a kernel, as its reflection says: ``kind`` is the
    reflection instruction (``ArgumentStorageBuffer``, ``ArgumentPodPushConstant``,
    ``ArgumentPodUniform``...), then the descriptor set and binding, and a by-value argument's
    byte offset and size in its push constants or buffer."""

    kind: str
    set: int = 0
    binding: int = 0
    offset: int = 0
    size: int = 0
    #: a ``sampler_t`` argument: the push-constant offset where the kernel reads its OpenCL
    #: sampler bits (``NormalizedSamplerMaskPushConstant``), -1 when it does not
    sampler_mask_offset: int = -1
    #: ``LiteralSampler`` (a sampler the source defines, not an argument: keyed -1, -2, ... in a
    #: layout): its OpenCL bits; ``set`` and ``binding`` are its descriptor's
    literal_bits: int = 0


@dataclass
class Run:
    pipeline: str
    groups: tuple[int, int, int]
    line: int


@dataclass
class Copy:
    source: str
    target: str
    line: int


@dataclass
class Expect:
    """One EXPECT: a probe (``IDX``) or a comparison with another buffer."""

    buffer: str
    comparator: str
    line: int
    column: int
    text: str
    offset: int = 0
    values: list[int | float] = field(default_factory=list)
    #: (value, percent) of TOLERANCE
    tolerances: list[tuple[float, bool]] = field(default_factory=list)
    other: str = ""
    #: an image probe (``IDX x y SIZE w h EQ_RGB|EQ_RGBA``): (x, y) and (w, h) in pixels
    origin: tuple[int, int] | None = None
    size: tuple[int, int] = (1, 1)


Command = Run | Copy | Expect


@dataclass
class AmberScript:
    path: Path
    shaders: dict[str, Shader] = field(default_factory=dict)
    buffers: dict[str, Buffer] = field(default_factory=dict)
    samplers: dict[str, Sampler] = field(default_factory=dict)
    pipelines: dict[str, Pipeline] = field(default_factory=dict)
    commands: list[Command] = field(default_factory=list)
    #: (name, line) of DEVICE_FEATURE / DEVICE_EXTENSION / INSTANCE_EXTENSION / DEVICE_PROPERTY
    features: list[tuple[str, int]] = field(default_factory=list)
    extensions: list[tuple[str, int]] = field(default_factory=list)
    instance_extensions: list[tuple[str, int]] = field(default_factory=list)
    properties: list[tuple[str, int]] = field(default_factory=list)
    #: lines of DEBUG's THREAD blocks: expectations of a shader debugger
    debugger_threads: list[int] = field(default_factory=list)
