"""The checks of a scenario's images, run by :mod:`kernellab.formats.scenario` for each ``image``
resource (a module of their own: a run of buffers loads none of them).

Each problem names the JSON pointer of the value at fault: an image's ``.npy`` header, its format,
its border color, and kernellab's image extensions (``image_type``, ``depth``, ``samples``, the
sampler's fields) where they contradict each other or what Vulkan allows.
"""
from __future__ import annotations

from typing import Any

from kernellab import model as m
from kernellab.vkregistry.vkformat import image_format_problem

Loc = tuple[str | int, ...]


def check_image(ck: Any, loc: Loc, r: m.Image) -> None:
    """An image's ``.npy`` header, format and border color."""
    if r.src_path is not None and r.src_path.suffix.lower() == ".npy":
        ck.npy_header(loc + ("src",), r.src_path)  # found here with its JSON path, not by the loader
    if (why := image_format_problem(r.format)) is not None:
        ck.add(loc + ("format",), why)
    if r.custom_border_color is not None and r.border_color not in ("INT_CUSTOM_EXT", "FLOAT_CUSTOM_EXT"):
        ck.add(loc + ("custom_border_color",),
               "custom_border_color needs border_color INT_CUSTOM_EXT or FLOAT_CUSTOM_EXT")
    if r.border_color in ("INT_CUSTOM_EXT", "FLOAT_CUSTOM_EXT") and r.custom_border_color is None:
        ck.add(loc + ("border_color",), f"border_color {r.border_color} needs custom_border_color")
    _check_image_shape(ck, loc, r)


def _check_image_shape(ck: Any, loc: Loc, r: m.Image) -> None:
    """kernellab's image extensions (image_type, depth, samples, sampler fields) where they
    contradict each other or what Vulkan allows."""
    if r.samples & (r.samples - 1):
        ck.add(loc + ("samples",), f"expected a power of two (1, 2, 4 ... 64), got {r.samples}")
    elif r.samples > 1:
        why = ("it is not 2D" if r.image_type != "2D" else "it has mip levels" if r.mips > 1 else
               "it has a src (its samples cannot be uploaded)" if r.src else
               "it has a dst (its samples cannot be copied out)" if r.dst else "")
        if why:
            ck.add(loc + ("samples",), f"a multisampled image is a 2D storage image of one level: {why}")
    if r.depth > 1 and r.image_type != "3D":
        ck.add(loc + ("depth",), f"depth {r.depth} needs image_type 3D")
    if r.image_type == "1D" and len(r.dims) == 2 and r.dims[1] != 1:
        ck.add(loc + ("dims",), f"a 1D image has height 1, got {r.dims[1]}")
    if r.image_type != "2D" and (r.src.lower().endswith((".png", ".dds")) or len(r.dims) != 2):
        ck.add(loc + ("image_type",), f"a {r.image_type} image takes dims [width, height] and a .npy src")
    if r.address_modes is not None and r.border_address_mode is not None:
        ck.add(loc + ("address_modes",), "give address_modes or border_address_mode, not both")
    for key in ("min_lod", "max_lod"):
        lod = getattr(r, key)
        if lod is not None and not -m.LOD_LIMIT <= lod <= m.LOD_LIMIT:  # also false for nan
            ck.add(loc + (key,), f"{key} {lod} is not a level of detail: expected a finite number from "
                                 f"{-m.LOD_LIMIT:g} to {m.LOD_LIMIT:g} (VK_LOD_CLAMP_NONE)")
            return
    if r.min_lod is not None and r.max_lod is not None and r.max_lod < r.min_lod:
        ck.add(loc + ("max_lod",), f"max_lod {r.max_lod} is below min_lod {r.min_lod}")
