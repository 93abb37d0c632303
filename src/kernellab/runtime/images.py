"""The executor's images and draws: the backend's image and graphics-program records made from a
scenario's, image files read and written. The executor loads this module on its first image or
draw, so a run of buffers builds no image class and imports no image format."""
from __future__ import annotations

from kernellab import model as m
from kernellab.backends.feature_specs import GraphicsProgramSpec, Image, ImageSpec, SamplerSpec
from kernellab.formats import imagefile
from kernellab.vkregistry import vkformat

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import IO

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
