"""The executor's images and draws: the backend's image and graphics-program records made from a
scenario's, image files read and written. The executor loads this module on its first image or
draw, so a run of buffers builds no image class and imports no image format."""
from __future__ import annotations

import time

from kernellab import model as m
from kernellab.backends.base import ImageBinding, PipelineCacheMiss
from kernellab.backends.feature_specs import GraphicsProgramSpec, Image, ImageSpec, SamplerSpec
from kernellab.errors import InputError
from kernellab.formats import imagefile
from kernellab.formats.scenario_graphics import attachment_extent
from kernellab.vkregistry import vkformat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import IO, Any

    from kernellab.backends.base import Backend, BindingSlot, ProgramSpec
    from kernellab.logs import Logger


def image_extent(r: m.Image) -> tuple[int, int]:
    """(width, height): Arm writes image dims as [1, width, height, 1]; [width, height] is also read."""
    if len(r.dims) >= 3:
        return imagefile.extent_from_dims(r.dims)
    return r.dims[0], r.dims[1]


def image_spec(r: m.Image, storage: bool, tensor_aliasing: bool) -> ImageSpec:
    """The backend's record of image ``r``: ``storage`` when a shader writes it or binds it as a
    storage image, ``tensor_aliasing`` when a tensor shares its memory."""
    width, height = image_extent(r)
    sampler = SamplerSpec(min_filter=r.min_filter or "NEAREST", mag_filter=r.mag_filter or "NEAREST",
                          mip_filter=r.mip_filter or "NEAREST", address_mode=r.border_address_mode or "CLAMP_EDGE",
                          border_color=r.border_color or "FLOAT_TRANSPARENT_BLACK",
                          custom_border_color=tuple(r.custom_border_color) if r.custom_border_color else None,
                          address_modes=tuple(r.address_modes) if r.address_modes else None,  # type: ignore[arg-type]
                          min_lod=float(r.min_lod or 0.0),
                          max_lod=None if r.max_lod is None else float(r.max_lod),
                          unnormalized_coordinates=r.unnormalized_coordinates, compare_op=r.compare_op or "")
    # Arm's runner: readonly images are sampled, writeonly/image_read are storage, readwrite both;
    # a depth format is created as its colour stand-in
    return ImageSpec(uid=r.uid, format=vkformat.device_format_name(r.format), width=width, height=height,
                     mips=r.mips, sampled=r.shader_access in ("readonly", "readwrite"),
                     # Arm gives a color attachment no storage use; a storage binding still does
                     storage=r.shader_access in ("writeonly", "readwrite", "image_read") and not r.color_attachment
                     or storage, tiling=r.tiling, sampler=sampler, tensor_aliasing=tensor_aliasing,
                     color_attachment=r.color_attachment, image_type=r.image_type, depth=r.depth, samples=r.samples)


def known_format(r: m.Image) -> bool:
    return vkformat.lookup(r.format) is not None


def attachment_format(r: m.Image) -> str:
    """The format a draw's color attachment is created in."""
    return vkformat.device_format_name(r.format)


def graphics_spec(name: str, vertex: ProgramSpec, fragment: ProgramSpec, color_formats: tuple[str, ...],
                  slots: tuple[BindingSlot, ...]) -> GraphicsProgramSpec:
    """The graphics program of a draw: both stages see one push-constant range, the larger."""
    return GraphicsProgramSpec(uid=name, vertex=vertex, fragment=fragment, color_formats=color_formats, slots=slots,
                               push_constants_size=max(vertex.push_constants_size, fragment.push_constants_size))


def fill_image(backend: Backend, r: m.Image, image: Image, log: Logger) -> None:
    """Write the texels of ``r``'s file into ``image`` (mip levels the file lacks are generated)."""
    assert r.src_path is not None
    fmt = vkformat.lookup(r.format)
    assert fmt is not None  # the executor refused an unknown format before allocating
    width, height = image_extent(r)
    # a 3D image's slices follow one another: its texels are those of a 2D image depth times as high
    data = imagefile.load(r.src_path, fmt, width, height * r.depth, r.mips)
    for w in data.warnings:
        log.warning("%s", w)
    backend.write_image(image, data.data, data.mip_levels)


def save_image(backend: Backend, open_output: Callable[[Path], IO[bytes]], r: m.Image, image: Image, path: Path) -> None:
    """Level 0 of ``image`` as DDS, PNG or [1, H, W, C] .npy by the file's extension, as Arm's runner writes it."""
    fmt = vkformat.lookup(r.format)
    assert fmt is not None
    suffix = path.suffix.lower() if path.suffix.lower() in imagefile.EXTENSIONS else ".npy"
    if suffix == ".png":  # checked before the output file is opened, so the error names it
        from kernellab.formats import png
        png.check_dst_format(fmt.name, path)
    with open_output(path) as fh:
        imagefile.write(fh, suffix, fmt, image.spec.width, image.spec.height * image.spec.depth,
                        backend.read_image(image, 0).data)


# --- the executor's images and draws: ``ex`` is the executor (runtime/executor.py, which loads
# this module on its first image or draw, so it is not named here) ---------------------------------
def spec_for(ex: Any, r: m.Image) -> ImageSpec:
    """The backend's record of executor ``ex``'s image ``r``."""
    aliased = ex.ml is not None and r.uid in ex.ml.aliased_images
    return image_spec(r, r.uid in storage_images(ex), aliased)


def load_image(ex: Any, backend: Backend, r: m.Image, image: Image | None = None) -> Image:
    """Image ``r`` created (unless a memory group made it: ``image``) and filled from its source."""
    if not known_format(r):
        raise InputError.at(ex.scenario.file or "", "/resources", f"image \"{r.uid}\": unknown format {r.format}")
    if image is None:
        image = backend.alloc_image(spec_for(ex, r))
    ex.inputs.fill_image(backend, r, image)
    return image


def storage_images(ex: Any) -> set[str]:
    """The uids of the images some dispatch binds as a storage image (found on first use)."""
    if ex._storage_images is None:
        ex._storage_images = set()
        for c in ex.scenario.commands:
            # kinds before classes: a run of images builds no draw or optical-flow class
            if isinstance(c, m.DispatchCompute) or c.kind == "dispatch_fragment" and isinstance(c, m.DispatchFragment):
                storage = {(s.set, s.id) for s in ex._slots(c) if s.descriptor == "storage-image"}
                ex._storage_images |= {b.resource_ref for b in c.bindings if (b.set, b.id) in storage}
            elif c.kind == "dispatch_optical_flow" and isinstance(c, m.DispatchOpticalFlow):
                from kernellab.runtime.optical_flow import sampled

                ex._storage_images |= {b.resource_ref for b in c.bindings
                                       if not sampled(ex.scenario.by_uid[b.resource_ref], b)}
    return ex._storage_images  # type: ignore[no-any-return]


def graphics_key(ex: Any, c: m.DispatchFragment) -> tuple[Any, ...]:
    """What makes a draw's graphics pipeline distinct: name, shaders, slots and attachment formats."""
    formats = []
    for a in c.color_attachment_refs:
        r = ex.scenario.by_uid[a.resource_ref]
        assert isinstance(r, m.Image)
        formats.append(attachment_format(r))
    return ("graphics", c.name, c.vertex_shader_ref, c.fragment_shader_ref, ex._slots(c), tuple(formats))


def create_graphics_program(ex: Any, backend: Backend, c: m.DispatchFragment, modules: Any) -> None:
    """The graphics pipeline of a draw, once per distinct (name, shaders, slots, formats)."""
    key = graphics_key(ex, c)
    if key in ex.programs:
        return
    parts = []
    for uid in (c.vertex_shader_ref, c.fragment_shader_ref):
        shader = ex.scenario.by_uid[uid]
        assert isinstance(shader, m.Shader)
        parts.append(ex.specs.get(uid) or ex._program_spec(backend, shader, (), modules))
    spec = graphics_spec(c.name, parts[0], parts[1], key[-1], key[-2])
    t = time.perf_counter()
    try:
        ex.programs[key] = backend.create_graphics_program(spec)
    except PipelineCacheMiss as exc:
        ex.say("ERROR", str(exc))
        raise
    ex.report.count(f"Create Graphics Pipeline: {c.fragment_shader_ref}", "Pipeline Setup", t)


def dispatch_fragment(ex: Any, backend: Backend, index: int, c: m.DispatchFragment) -> None:
    """A draw recorded on the backend."""
    ex.say("INFO", "Dispatch graphics")
    attachments = [ImageBinding(ex.images[a.resource_ref], a.lod or 0) for a in c.color_attachment_refs]
    backend.draw(ex.programs[graphics_key(ex, c)], attachments, render_extent(ex, c), ex._bound(c),
                 ex.push_data.get(c.push_data_ref, b""), label=f"{index}:dispatch_fragment:{c.name}",
                 barrier=c.implicit_barrier)


def render_extent(ex: Any, c: m.DispatchFragment) -> tuple[int, int]:
    """The draw's [width, height]: render_extent, else its attachments' (the reader checked they agree)."""
    if c.render_extent is not None:
        return c.render_extent[0], c.render_extent[1]
    first = c.color_attachment_refs[0]
    image = ex.scenario.by_uid[first.resource_ref]
    assert isinstance(image, m.Image)
    return attachment_extent(image, first.lod)


def image_barriers(ex: Any, backend: Backend, index: int, c: m.DispatchBarrier) -> None:
    """One layout transition per image barrier of a barrier command."""
    for uid in c.image_barrier_refs:
        ib = ex.scenario.by_uid[uid]
        assert isinstance(ib, m.ImageBarrier)
        rng = ib.subresource_range
        backend.image_barrier(ex.images[ib.image_resource], ib.old_layout.removeprefix("IMAGE_LAYOUT_"),
                              ib.new_layout.removeprefix("IMAGE_LAYOUT_"), rng.base_mip_level,
                              rng.level_count, rng.base_array_layer, rng.layer_count)
