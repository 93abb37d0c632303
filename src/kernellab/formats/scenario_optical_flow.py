"""Checks of ``dispatch_optical_flow`` (Arm 0.11, VK_ARM_data_graph_optical_flow), run by
:mod:`kernellab.formats.scenario`.

The rules are Arm's runner's (its optical_flow_utils.cpp and json_reader.cpp), each problem at
the JSON pointer of the value at fault:

- every binding names an image, on a (set, id) of its own, at a ``lod`` the image has;
- ``width`` x ``height`` is the search image's extent at the level bound, and the template
  image has that extent and the search image's format;
- the output (flow vector) image is the search extent divided by the grid size, rounded up; the
  cost and hint images have the output's extent;
- ``mean_flow_l1_norm_hint`` is 0 or below ``max(width, height)``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernellab import model as m
from kernellab.formats.scenario_graphics import attachment_extent

Loc = tuple[str | int, ...]

GRID_CELL = {"1x1": 1, "2x2": 2, "4x4": 4, "8x8": 8}


def check_dispatch_optical_flow(ck: Any, loc: Loc, c: m.DispatchOpticalFlow, by_uid: dict[str, Any],
                                ref: Callable[..., m.Resource | None]) -> None:
    at = loc + ("bindings",)
    extents: dict[str, tuple[int, int]] = {}
    images: dict[str, m.Image] = {}
    slots: dict[tuple[int, int], str] = {}
    for role, b in c.bindings.roles():
        image = ref(ck, by_uid, at + (role, "resource_ref"), b.resource_ref, ("image",), "image")
        if (b.set, b.id) in slots:
            ck.add(at + (role,), f"set {b.set} binding {b.id} is already bound by bindings/{slots[(b.set, b.id)]}")
        slots.setdefault((b.set, b.id), role)
        if not isinstance(image, m.Image):
            continue
        lod = b.lod or 0
        if lod >= image.mips:
            ck.add(at + (role, "lod"), f"lod {lod}, but image \"{image.uid}\" has {image.mips} mip level"
                                       f"{'s' if image.mips > 1 else ''}")
            continue
        images[role] = image
        extents[role] = attachment_extent(image, lod)  # a mip level's extent, as a draw's
    search = extents.get("search_image")
    if search is not None and (c.width, c.height) != search:
        ck.add(loc + ("width",), f"width x height is {c.width}x{c.height}, but the search image "
                                 f"\"{images['search_image'].uid}\" is {_show(search)} at the level bound")
    template = extents.get("template_image")
    if search is not None and template is not None:
        if template != search:
            ck.add(at + ("template_image",), f"the template image \"{images['template_image'].uid}\" is "
                                             f"{_show(template)} at the level bound; the search image is "
                                             f"{_show(search)}")
        elif images["template_image"].format != images["search_image"].format:
            ck.add(at + ("template_image",), f"the template image \"{images['template_image'].uid}\" is "
                                             f"{images['template_image'].format}; the search image is "
                                             f"{images['search_image'].format}")
    output = extents.get("output_image")
    if search is not None and output is not None:
        cell = GRID_CELL[c.grid_size]
        want = (-(-search[0] // cell), -(-search[1] // cell))
        if output != want:
            ck.add(at + ("output_image",), f"the output image \"{images['output_image'].uid}\" is {_show(output)} "
                                           f"at the level bound; grid_size {c.grid_size} over {_show(search)} "
                                           f"needs {_show(want)}")
    for role in ("output_cost", "hint_motion_vectors"):
        got = extents.get(role)
        if output is not None and got is not None and got != output:
            ck.add(at + (role,), f"the {role} image \"{images[role].uid}\" is {_show(got)} at the level bound; "
                                 f"the output image is {_show(output)}")
    if c.mean_flow_l1_norm_hint and c.mean_flow_l1_norm_hint >= max(c.width, c.height):
        ck.add(loc + ("mean_flow_l1_norm_hint",), f"expected 0 or below max(width, height) = "
                                                  f"{max(c.width, c.height)}, got {c.mean_flow_l1_norm_hint}")


def _show(extent: tuple[int, int]) -> str:
    return f"{extent[0]}x{extent[1]}"
