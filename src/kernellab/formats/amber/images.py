"""AmberScript's images and samplers (Amber's docs/amber_script.md, "Images", "Samplers"):
``IMAGE``, ``SAMPLER``, ``BIND BUFFER ... AS storage_image|sampled_image|combined_image_sampler``,
``BIND SAMPLER``, and the pixel probes ``EXPECT ... IDX x y SIZE w h EQ_RGB|EQ_RGBA``.

An image is an Amber buffer with a shape (:class:`ImageShape`): its texels are its values, x
fastest, then y, then z, packed as the format lays them out (no std430 padding). The parser's
statement handlers call the ``parse_*`` functions here; they get the parser (``formats.amber.parse``
imports this module, so this one does not import it back) and its ``number`` reader.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from kernellab.errors import InputError
from kernellab.formats.amber import files
from kernellab.formats.amber.files import NumberReader
from kernellab.formats.amber.script import Binding, Buffer, Expect, ImageShape, Pipeline, Sampler
from kernellab.formats.amber.tokens import Token
from kernellab.formats.amber.types import Element, TypeError_, element, vk_format
from kernellab.model import LOD_LIMIT
from kernellab.vkregistry import vkformat
from kernellab.vkregistry.vkformat import VkFormatInfo

IMAGE_BIND_KINDS = ("storage_image", "sampled_image", "combined_image_sampler")
#: the scenario binding's descriptor_type of each image bind kind (and of a BIND SAMPLER)
DESCRIPTOR_TYPES = {"storage_image": "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE",
                    "sampled_image": "VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE",
                    "combined_image_sampler": "VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER",
                    "sampler": "VK_DESCRIPTOR_TYPE_SAMPLER"}
DIMS = {"DIM_1D": "1D", "DIM_2D": "2D", "DIM_3D": "3D"}
SAMPLE_COUNTS = (1, 2, 4, 8, 16, 32, 64)
FILTERS = {"nearest": "NEAREST", "linear": "LINEAR"}
ADDRESS_MODES = {"repeat": "REPEAT", "mirrored_repeat": "MIRRORED_REPEAT", "clamp_to_edge": "CLAMP_EDGE",
                 "clamp_to_border": "CLAMP_BORDER", "mirrored_clamp_to_edge": "MIRROR_CLAMP_EDGE"}
BORDER_COLORS = ("float_transparent_black", "int_transparent_black", "float_opaque_black", "int_opaque_black",
                 "float_opaque_white", "int_opaque_white")
COMPARE_OPS = ("never", "less", "equal", "less_or_equal", "greater", "not_equal", "greater_or_equal", "always")
#: Amber's default tolerance of a pixel probe, in the normalized [0, 1] scale (verifier.cc)
TEXEL_TOLERANCE = 0.002
#: the uid prefix of the 1x1 image that carries a SAMPLER bound on its own (a scenario image
#: carries its sampler; a SAMPLER descriptor takes only that sampler)
SAMPLER_HOLDER = "sampler."


# --- formats -----------------------------------------------------------------------------------

def format_of(name: str) -> VkFormatInfo | None:
    """The VkFormat of an AmberScript ``FORMAT`` name (``R8G8B8A8_UNORM``)."""
    return vkformat.lookup(name if name.startswith("VK_FORMAT_") else "VK_FORMAT_" + name)


def format_of_data_type(elem: Element) -> VkFormatInfo | None:
    """The VkFormat of an image's ``DATA_TYPE`` (``vec4<int32>`` is ``R32G32B32A32_SINT``); None for
    matrices, mixed components and padding."""
    if elem.name.startswith("mat"):
        return None
    try:
        return vkformat.lookup(vk_format(elem))
    except TypeError_:
        return None


def texel_element(fmt: VkFormatInfo) -> Element:
    """A texel as a buffer element: each stored value at its offset (a packed format: one word)."""
    size = fmt.dtype.itemsize
    return Element(fmt.name.removeprefix("VK_FORMAT_"),
                   tuple((i * size, fmt.dtype.name) for i in range(fmt.channels)), fmt.texel_size)


# --- IMAGE -------------------------------------------------------------------------------------

def parse_image(parser: Any, head: Token, w: Any, number: NumberReader) -> None:
    """``IMAGE name FORMAT f|DATA_TYPE t [MIP_LEVELS n] [SAMPLES n] DIM_xD WIDTH w [HEIGHT h [DEPTH
    d]] [initializer]`` (Amber reads the shape words in any order)."""
    src = parser.src
    name = w.take("the image's name")
    if name.text in parser.script.buffers:
        raise src.error(name, f"buffer {name.text!r} is already defined")
    kind = w.keyword("FORMAT", "DATA_TYPE")
    type_token = w.take("a format" if kind.text == "FORMAT" else "a data type")
    fmt = _image_format(src, kind, type_token)
    shape: dict[str, int] = {}
    dims = ""
    mips, samples = 1, 1
    while not w.done and w.peek() not in ("FILL", "SERIES_FROM", "DATA", "FILE"):
        t = w.keyword("MIP_LEVELS", "SAMPLES", "DIM_1D", "DIM_2D", "DIM_3D", "WIDTH", "HEIGHT", "DEPTH",
                      "FILL", "SERIES_FROM", "DATA", "FILE")
        if t.text in DIMS:
            dims = t.text
        elif t.text == "MIP_LEVELS":
            mips = w.integer("the mip level count", 1, 32)
        elif t.text == "SAMPLES":
            samples = w.integer("the sample count", 1, 64)
            if samples not in SAMPLE_COUNTS:
                raise src.error(w.last(), f"SAMPLES {samples}: expected 1, 2, 4, 8, 16, 32 or 64")
        else:
            shape[t.text] = w.integer(f"the {t.text.lower()}", 1, (1 << 32) - 1)
    if not dims:
        raise src.error(head, "IMAGE needs DIM_1D, DIM_2D or DIM_3D")
    width, height, depth = _extent(src, head, dims, shape)
    if mips > max(width, height, depth).bit_length():
        raise src.error(head, f"MIP_LEVELS {mips}: a {width}x{height}x{depth} image has at most "
                              f"{max(width, height, depth).bit_length()}")
    if samples > 1 and (dims != "DIM_2D" or mips > 1):
        raise src.error(head, "a multisampled image (SAMPLES > 1) is DIM_2D with one mip level")
    image = ImageShape(dims, width, height, depth, fmt.name, mips, samples)
    elem = texel_element(fmt)
    values = _initial_values(parser, w, elem, image, number)
    if samples > 1 and any(values):
        raise src.error(head, "a multisampled image cannot be given data (its samples are not uploaded): leave "
                              "out the initializer or FILL 0")
    parser.script.buffers[name.text] = Buffer(name.text, elem, values, head.line, image)


def _image_format(src: Any, kind: Token, type_token: Token) -> VkFormatInfo:
    if kind.text == "FORMAT":
        fmt = format_of(type_token.text)
        if fmt is None:
            raise src.error(type_token, f"unknown image format {type_token.text!r} (a VkFormat without its "
                                        "VK_FORMAT_ prefix, such as R8G8B8A8_UNORM)")
    else:
        try:
            fmt = format_of_data_type(element(type_token.text))
        except TypeError_ as exc:
            raise src.error(type_token, str(exc)) from None
        if fmt is None:
            raise src.error(type_token, f"{type_token.text} is not a texel type (a scalar or vector of one "
                                        "component type)")
    if fmt.aspect is not None or fmt.encoding is not None or fmt.texel_size % fmt.dtype.itemsize:
        raise src.error(type_token, f"{fmt.name} is not a colour format kernellab can hold in an image")
    return fmt


def _extent(src: Any, head: Token, dims: str, shape: dict[str, int]) -> tuple[int, int, int]:
    need = {"DIM_1D": ("WIDTH",), "DIM_2D": ("WIDTH", "HEIGHT"), "DIM_3D": ("WIDTH", "HEIGHT", "DEPTH")}[dims]
    for word in need:
        if word not in shape:
            raise src.error(head, f"a {dims} image needs {word}")
    for word in set(shape) - set(need):
        if shape[word] != 1:
            raise src.error(head, f"a {dims} image has no {word} (got {shape[word]})")
    return shape["WIDTH"], shape.get("HEIGHT", 1), shape.get("DEPTH", 1)


def _initial_values(parser: Any, w: Any, elem: Element, image: ImageShape,
                    number: NumberReader) -> list[int | float]:
    src = parser.src
    count = image.width * image.height * image.depth
    per = len(elem.components)
    parser.reserve(w.last(), count, elem)
    if w.done or w.peek() in ("FILL", "SERIES_FROM"):
        return list(parser.size_initializer(w, elem, count))
    init = w.take("an initializer")
    if init.text == "DATA":
        dtypes = [d for _, d in elem.components]
        values: list[int | float] = []
        for t in parser.data_tokens(init, w):
            values.append(number(src, t, dtypes[len(values) % per]))
        if len(values) > count * per:
            raise src.error(init, f"DATA holds {len(values)} values; the image has {count} texels of {per}")
        return values + [0] * (count * per - len(values))
    how = w.keyword("PNG", "BINARY", "TEXT")
    ref = w.take("a file name")
    w.finish()
    data = files.read_beside(src, ref)
    if how.text == "PNG":
        if not image.format.startswith("VK_FORMAT_R8G8B8A8_") or image.depth != 1:
            raise src.error(ref, f"a PNG holds 8-bit RGBA texels: the image must be a 2D R8G8B8A8 image, not "
                                 f"{image.dims} {image.format.removeprefix('VK_FORMAT_')}")
        return list(files.png_texels(src, ref, data, (image.width, image.height))[2])
    if how.text == "BINARY":
        values = files.values_of_bytes(elem, data[:count * elem.size])
    else:  # values as DATA writes them, each read where the file holds it
        values = files.text_values(src, ref, data, [d for _, d in elem.components], count * per, number)
    return values + [0] * (count * per - len(values))


# --- SAMPLER -----------------------------------------------------------------------------------

def parse_sampler(parser: Any, head: Token, w: Any) -> None:
    """``SAMPLER name`` with MAG_FILTER, MIN_FILTER, ADDRESS_MODE_U/V/W, BORDER_COLOR, MIN_LOD,
    MAX_LOD, NORMALIZED_COORDS|UNNORMALIZED_COORDS, COMPARE on|off, COMPARE_OP (Amber's defaults)."""
    src = parser.src
    name = w.take("the sampler's name")
    if name.text in parser.script.samplers:
        raise src.error(name, f"sampler {name.text!r} is already defined")
    s = Sampler(name.text, head.line)
    modes = list(s.address_modes)
    compare, compare_op = False, "never"
    while not w.done:
        t = w.keyword("MAG_FILTER", "MIN_FILTER", "ADDRESS_MODE_U", "ADDRESS_MODE_V", "ADDRESS_MODE_W",
                      "BORDER_COLOR", "MIN_LOD", "MAX_LOD", "NORMALIZED_COORDS", "UNNORMALIZED_COORDS",
                      "COMPARE", "COMPARE_OP")
        if t.text in ("MAG_FILTER", "MIN_FILTER"):
            value = FILTERS[w.keyword(*FILTERS).text]
            s.mag_filter, s.min_filter = (value, s.min_filter) if t.text == "MAG_FILTER" else (s.mag_filter, value)
        elif t.text.startswith("ADDRESS_MODE_"):
            modes["UVW".index(t.text[-1])] = ADDRESS_MODES[w.keyword(*ADDRESS_MODES).text]
        elif t.text == "BORDER_COLOR":
            s.border_color = w.keyword(*BORDER_COLORS).text.upper()
        elif t.text in ("MIN_LOD", "MAX_LOD"):
            lod_token = w.take("a level of detail")
            lod = _float(src, lod_token)
            if not -LOD_LIMIT <= lod <= LOD_LIMIT:  # also false for nan
                raise src.error(lod_token, f"{t.text} {lod_token.text} is not a level of detail: expected a "
                                           f"finite number from {-LOD_LIMIT:g} to {LOD_LIMIT:g}")
            s.min_lod, s.max_lod = (lod, s.max_lod) if t.text == "MIN_LOD" else (s.min_lod, lod)
        elif t.text in ("NORMALIZED_COORDS", "UNNORMALIZED_COORDS"):
            s.normalized = t.text == "NORMALIZED_COORDS"
        elif t.text == "COMPARE":
            compare = w.keyword("on", "off").text == "on"
        else:
            compare_op = w.keyword(*COMPARE_OPS).text
    s.address_modes = (modes[0], modes[1], modes[2])
    s.compare_op = compare_op.upper() if compare else ""
    if not s.normalized:  # Amber: unnormalized coordinates take LOD 0 only
        s.min_lod = s.max_lod = 0.0
    if s.max_lod < s.min_lod:
        raise src.error(head, f"MAX_LOD {s.max_lod:g} is below MIN_LOD {s.min_lod:g}")
    parser.script.samplers[name.text] = s


def _float(src: Any, t: Token) -> float:
    try:
        return float(t.text)
    except ValueError:
        raise src.error(t, f"expected a number, got {t.text!r}") from None


# --- BIND --------------------------------------------------------------------------------------

def parse_bind_image(parser: Any, head: Token, w: Any, p: Pipeline, buf: Token, kind: Token) -> None:
    """The rest of ``BIND BUFFER img AS storage_image|sampled_image|combined_image_sampler``:
    ``[SAMPLER s]`` (combined), ``DESCRIPTOR_SET n``, ``BINDING n``, ``[BASE_MIP_LEVEL n]``."""
    src = parser.src
    image = parser.script.buffers[buf.text].image
    if image is None:
        raise src.error(buf, f"{buf.text!r} is a BUFFER, not an IMAGE: it cannot be bound as {kind.text}")
    sampler, dset, binding, base_mip = "", 0, -1, 0
    while not w.done:
        t = w.keyword("DESCRIPTOR_SET", "BINDING", "BASE_MIP_LEVEL", "SAMPLER")
        if t.text == "SAMPLER":
            s = w.take("a sampler's name")
            if s.text not in parser.script.samplers:
                raise src.error(s, f"no sampler {s.text!r} is defined")
            sampler = s.text
        elif t.text == "BASE_MIP_LEVEL":
            base_mip = w.integer("the base mip level")
            if base_mip >= image.mips:
                raise src.error(w.last(), f"BASE_MIP_LEVEL {base_mip}: image {buf.text!r} has {image.mips} "
                                          "mip level(s)")
        elif t.text == "DESCRIPTOR_SET":
            dset = w.integer("a descriptor set", 0, (1 << 32) - 1)
        else:
            binding = w.integer("a binding", 0, (1 << 32) - 1)
    if binding < 0:
        raise src.error(kind, f"BIND BUFFER ... AS {kind.text} needs BINDING")
    if (kind.text == "combined_image_sampler") != bool(sampler):
        raise src.error(kind, "combined_image_sampler needs SAMPLER name" if not sampler else
                        f"SAMPLER goes with combined_image_sampler, not {kind.text}")
    if image.samples > 1 and kind.text != "storage_image":
        raise src.error(kind, f"multisampled image {buf.text!r} can be bound only as storage_image")
    _replace(p, Binding(buf.text, kind.text, dset, binding, head.line, sampler=sampler, base_mip=base_mip))


def check_texel_buffer(src: Any, buf: Buffer, ref: Token) -> None:
    """A texel buffer binds a BUFFER whose elements are texels of one format (``ref``: its name in
    the BIND, where an error points)."""
    if buf.image is not None:
        raise src.error(ref, f"{ref.text!r} is an IMAGE: a texel buffer binds a BUFFER")
    fmt = format_of(buf.element.name) if re.match(r"^[RGBA]\d", buf.element.name) else \
        format_of_data_type(buf.element)
    if fmt is None or fmt.texel_size != buf.element.size:
        raise src.error(ref, f"buffer {ref.text!r} ({buf.element.name}) has no texel format: give it a FORMAT "
                             "such as R32G32B32A32_SFLOAT, or a scalar, vec2 or vec4 DATA_TYPE")


def parse_bind_sampler(parser: Any, head: Token, w: Any, p: Pipeline) -> None:
    """``BIND SAMPLER s DESCRIPTOR_SET n BINDING n`` or ``BIND SAMPLER s KERNEL ARG_NAME x|ARG_NUMBER n``."""
    src = parser.src
    s = w.take("a sampler's name")
    if s.text not in parser.script.samplers:
        raise src.error(s, f"no sampler {s.text!r} is defined")
    if w.peek() == "KERNEL":
        arg = w.kernel_argument()
        w.finish()
        p.bind_argument(Binding(s.text, "kernel", 0, -1, head.line, arg, sampler=s.text))
        return
    dset, binding = _set_and_binding(w)
    if binding < 0:
        raise src.error(s, "BIND SAMPLER needs BINDING (or KERNEL ARG_NAME/ARG_NUMBER)")
    _replace(p, Binding(s.text, "sampler", dset, binding, head.line, sampler=s.text))


def _set_and_binding(w: Any) -> tuple[int, int]:
    """``DESCRIPTOR_SET n`` (default 0) and ``BINDING n`` (-1 when missing), in either order."""
    dset, binding = 0, -1
    while not w.done:
        t = w.keyword("DESCRIPTOR_SET", "BINDING")
        if t.text == "DESCRIPTOR_SET":
            dset = w.integer("a descriptor set", 0, (1 << 32) - 1)
        else:
            binding = w.integer("a binding", 0, (1 << 32) - 1)
    return dset, binding


def _replace(p: Pipeline, b: Binding) -> None:
    """A derived pipeline's BIND replaces the binding at the same set and binding."""
    p.bindings = [x for x in p.bindings if x.kind == "kernel" or (x.set, x.binding) != (b.set, b.binding)]
    p.bindings.append(b)


# --- EXPECT ------------------------------------------------------------------------------------

def parse_pixel_probe(parser: Any, head: Token, w: Any, buf: Token, x: int, text: str) -> Expect:
    """The rest of ``EXPECT img IDX x y [SIZE w h] [TOLERANCE t{1,4}] EQ_RGB r g b | EQ_RGBA r g b a``
    (values 0-255)."""
    src = parser.src
    image = parser.script.buffers[buf.text].image
    if image is None:
        raise src.error(buf, f"{buf.text!r} is a BUFFER, not an IMAGE: IDX x y probes pixels of an image "
                             "(give a byte offset for a buffer)")
    if image.samples > 1:
        raise src.error(buf, f"image {buf.text!r} is multisampled: its samples cannot be read back to probe")
    y = w.integer("the y coordinate")
    size = (1, 1)
    if w.peek() == "SIZE":
        w.take("SIZE")
        size = (w.integer("the width in pixels", 1), w.integer("the height in pixels", 1))
    e = Expect(buf.text, "EQ_RGBA", head.line, head.column, text, origin=(x, y), size=size)
    if w.peek() == "TOLERANCE":
        w.take("TOLERANCE")
        while w.peek() not in ("EQ_RGB", "EQ_RGBA") and not w.done:
            t = w.take("a tolerance")
            e.tolerances.append((_float(src, Token(t.text.rstrip("%"), t.line, t.column)), t.text.endswith("%")))
        if len(e.tolerances) not in (1, 4):
            raise src.error(head, "TOLERANCE of a pixel probe takes 1 or 4 values")
    cmp = w.keyword("EQ_RGB", "EQ_RGBA")
    e.comparator = cmp.text
    for _ in range(3 if cmp.text == "EQ_RGB" else 4):
        t = w.take("a value from 0 to 255")
        value = _float(src, t)
        if not 0 <= value <= 255:
            raise src.error(t, f"expected a value from 0 to 255, got {t.text!r}")
        e.values.append(value)
    w.finish()
    if x + size[0] > image.width or y + size[1] > image.height:
        raise src.error(head, f"the probed pixels ({x}, {y}) to ({x + size[0] - 1}, {y + size[1] - 1}) lie outside "
                              f"image {buf.text!r} ({image.width}x{image.height})")
    return e


# --- as scenario resources ---------------------------------------------------------------------

#: the Binding kinds this module turns into scenario bindings
BOUND_KINDS = IMAGE_BIND_KINDS + ("sampler",)


_OPENCL_IMAGE = re.compile(r"\bimage[123]d(_array)?_t\b")


def opencl_descriptor_param(declaration: str) -> bool:
    """Whether an OpenCL C kernel parameter is an image or a sampler (clspv gives each a descriptor)."""
    return bool(_OPENCL_IMAGE.search(declaration) or re.search(r"\bsampler_t\b", declaration))


def _kernel_param(source: str, entry: str, arg: str | int) -> str:
    """The declaration of kernel ``entry``'s parameter ``arg`` (a name or a 0-based number), or ""."""
    m = re.search(r"(?:__)?kernel\s+void\s+" + re.escape(entry) + r"\s*\(([^)]*)\)", source)
    params = [p.strip() for p in m.group(1).split(",")] if m else []
    for i, p in enumerate(params):
        words = re.findall(r"\w+", p)
        if arg == i or (words and arg == words[-1]):
            return p
    return ""


def _kernel_kind(script: Any, p: Pipeline, b: Binding) -> str:
    """The image bind kind of an OpenCL C image or sampler argument (clspv's descriptor types:
    a write_only or read_write image is a storage image, a read_only one a sampled image)."""
    if b.sampler:
        return "sampler"
    decl = _kernel_param(script.shaders[p.shader].source, p.entry, b.arg)
    return "storage_image" if re.search(r"\b(__)?(write_only|read_write)\b", decl) else "sampled_image"


def image_access(script: Any, name: str) -> str:
    """The scenario ``shader_access`` of image ``name``: storage only (``image_read``), sampled
    only (``readonly``) or both (``readwrite``), from how the pipelines bind it."""
    kinds = {_kernel_kind(script, p, b) if b.kind == "kernel" else b.kind
             for p in script.pipelines.values() for b in p.bindings if b.buffer == name}
    storage = "storage_image" in kinds
    sampled = bool(kinds & {"sampled_image", "combined_image_sampler"})
    return "readwrite" if storage and sampled else "image_read" if storage else "readonly"


def _sampler_fields(s: Sampler) -> dict[str, Any]:
    out: dict[str, Any] = {"min_filter": s.min_filter, "mag_filter": s.mag_filter, "mip_filter": s.mip_filter,
                           "address_modes": list(s.address_modes), "border_color": s.border_color,
                           "min_lod": s.min_lod, "max_lod": s.max_lod}
    if not s.normalized:
        out["unnormalized_coordinates"] = True
    if s.compare_op:
        out["compare_op"] = s.compare_op
    return out


def _combined_sampler(script: Any, name: str, error: Callable[[int, str], InputError]) -> Sampler | None:
    """The one sampler image ``name`` is combined with (a scenario image carries one sampler)."""
    used = {(b.sampler, b.line) for p in script.pipelines.values() for b in p.bindings
            if b.buffer == name and b.kind == "combined_image_sampler"}
    names = sorted({s for s, _ in used})
    if len(names) > 1:
        line = max(line for _, line in used)
        raise error(line, f"image {name!r} is combined with samplers {', '.join(names)}: kernellab's images "
                          "carry one sampler each, so combine it with one (or bind the sampler on its own)")
    return script.samplers[names[0]] if names else None


def image_resource(script: Any, name: str, index: int, data: bytes, write: Callable[[str, bytes], None],
                   error: Callable[[int, str], InputError]) -> dict[str, Any]:
    """The scenario ``image`` of IMAGE ``name``: its initial texels as a ``.npy`` src, read back
    into a ``dst`` (a multisampled image has neither: its samples are not copied)."""
    import io

    import numpy as np

    buf: Buffer = script.buffers[name]
    image = buf.image
    assert image is not None
    fmt = vkformat.lookup(image.format)
    assert fmt is not None
    entry: dict[str, Any] = {"uid": name, "format": image.format, "dims": [image.width, image.height],
                             "shader_access": image_access(script, name), "mips": image.mips}
    if image.dims != "DIM_2D":
        entry["image_type"] = DIMS[image.dims]
    if image.depth > 1:
        entry["depth"] = image.depth
    if image.samples > 1:
        entry["samples"] = image.samples
    else:
        texels = np.frombuffer(data, dtype=fmt.dtype).reshape(1, image.height * image.depth, image.width, fmt.channels)
        out = io.BytesIO()
        np.save(out, texels)
        write(f"image{index}.npy", out.getvalue())
        entry.update(src=f"image{index}.npy", dst=f"image{index}.out.npy")
    sampler = _combined_sampler(script, name, error)
    if sampler is not None:
        entry.update(_sampler_fields(sampler))
    return {"image": entry}


#: OpenCL's sampler bits (CL/cl.h: CLK_NORMALIZED_COORDS_TRUE, CLK_ADDRESS_*, CLK_FILTER_*)
_CL_NORMALIZED = 0x1
_CL_ADDRESS = {"CLAMP_EDGE": 0x2, "CLAMP_BORDER": 0x4, "REPEAT": 0x6, "MIRRORED_REPEAT": 0x8}
_CL_FILTER = {"NEAREST": 0x10, "LINEAR": 0x20}


def opencl_sampler_bits(s: Sampler) -> int:
    """A SAMPLER as an OpenCL C ``sampler_t`` value: normalized coordinates, the U address mode
    (OpenCL has one for all axes) and the magnification filter (one filter)."""
    return (_CL_NORMALIZED if s.normalized else 0) | _CL_ADDRESS.get(s.address_modes[0], 0) | _CL_FILTER[s.mag_filter]


def literal_sampler(bits: int) -> Sampler:
    """The SAMPLER an OpenCL C ``sampler_t`` constant's bits describe (CLK_ADDRESS_NONE: clamp
    to edge; an unnormalized sampler reads level 0 only, as Vulkan requires)."""
    address = {bit: mode for mode, bit in _CL_ADDRESS.items()}.get(bits & 0xE, "CLAMP_EDGE")
    filter_ = "LINEAR" if bits & 0x30 == _CL_FILTER["LINEAR"] else "NEAREST"
    normalized = bool(bits & _CL_NORMALIZED)
    return Sampler(f"literal.{bits:#x}", 0, filter_, filter_, "NEAREST", (address,) * 3, min_lod=0.0,
                   max_lod=1.0 if normalized else 0.0, normalized=normalized)


def sampler_holders(script: Any) -> list[dict[str, Any]]:
    """A 1x1 image per SAMPLER bound on its own: a scenario image carries its sampler, and a
    ``VK_DESCRIPTOR_TYPE_SAMPLER`` binding of it takes only that sampler."""
    bound = {b.buffer for p in script.pipelines.values() for b in p.bindings if b.kind == "sampler" or b.sampler}
    return [sampler_holder(script.samplers[name]) for name in script.samplers if name in bound]


#: the suffix of a sampler holder's uid whose sampler has normalized coordinates whatever the
#: SAMPLER says: the one a kernel gets that normalizes its coordinates itself
NORMALIZED_HOLDER = ".normalized"


def sampler_holder(s: Sampler, normalized: bool = False) -> dict[str, Any]:
    """The 1x1 image that carries sampler ``s`` (``normalized``: with normalized coordinates)."""
    fields = _sampler_fields(s)
    if normalized:
        fields.pop("unnormalized_coordinates", None)
    return {"image": {"uid": SAMPLER_HOLDER + s.name + (NORMALIZED_HOLDER if normalized else ""),
                      "format": "VK_FORMAT_R8G8B8A8_UNORM", "dims": [1, 1], "shader_access": "readonly", **fields}}


def binding_entry(script: Any, p: Pipeline, b: Binding, binding: int | None = None) -> dict[str, Any]:
    """The scenario binding of an image or sampler BIND (an OpenCL C argument's: at ``binding``,
    the descriptor clspv gives it)."""
    kind = _kernel_kind(script, p, b) if b.kind == "kernel" else b.kind
    ref = SAMPLER_HOLDER + b.buffer if kind == "sampler" else b.buffer
    entry: dict[str, Any] = {"set": b.set, "id": b.binding if binding is None else binding, "resource_ref": ref,
                             "descriptor_type": DESCRIPTOR_TYPES[kind]}
    if kind == "storage_image" or b.base_mip:
        # a storage descriptor sees one level; a sampled one from BASE_MIP_LEVEL (that level alone)
        entry["lod"] = b.base_mip
    return entry


def is_image_binding(script: Any, b: Binding) -> bool:
    """Whether this module makes ``b``'s scenario binding (an image or a sampler is bound)."""
    if b.kind in BOUND_KINDS or b.sampler:
        return True
    buf = script.buffers.get(b.buffer)
    return buf is not None and buf.image is not None
