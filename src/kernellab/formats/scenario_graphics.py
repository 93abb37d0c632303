"""The checks of a ``dispatch_fragment`` command (Arm 0.11's graphics draw) that need the file's
resources: each shader of the right stage, each color attachment an image made for it, one
render extent shared by every attachment, bindings a draw can take.

Arm's runner throws at run time for most of these (its src/scenario.cpp, ``createFragmentPipeline``);
here they are input errors with the JSON path, found with every other problem of the file.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kernellab import model as m
from kernellab.errors import Problems

if TYPE_CHECKING:
    Loc = tuple[str | int, ...]


def attachment_extent(image: m.Image, lod: int | None) -> tuple[int, int]:
    """(width, height) of the mip level ``lod`` of ``image`` renders into (Arm halves each side
    per level, never below 1)."""
    width, height = (image.dims[1], image.dims[2]) if len(image.dims) >= 3 else (image.dims[0], image.dims[1])
    level = lod or 0
    return max(1, width >> level), max(1, height >> level)


def check_dispatch_fragment(ck: Problems, loc: Loc, c: m.DispatchFragment, by_uid: dict[str, Any],
                            ref: Callable[..., m.Resource | None], check_push_size: Callable[..., None]) -> None:
    """Every problem of ``c`` (at ``loc``) added to ``ck``; ``ref`` resolves a uid (reporting a
    missing or wrong-kind one), ``check_push_size`` checks push data against a shader."""
    _check_stages(ck, loc, c, by_uid, ref, check_push_size)
    attached = _check_attachments(ck, loc, c, by_uid, ref)
    if not c.color_attachment_refs and c.render_extent is None:
        ck.add(loc, "dispatch_fragment requires color_attachment_refs or render_extent")
    _check_bindings(ck, loc, c, by_uid, ref, attached)


def _check_stages(ck: Problems, loc: Loc, c: m.DispatchFragment, by_uid: dict[str, Any],
                  ref: Callable[..., m.Resource | None], check_push_size: Callable[..., None]) -> None:
    """The vertex and fragment shaders, and the push data sized for them."""
    shaders = []
    for field, stage in (("vertex_shader_ref", "vertex"), ("fragment_shader_ref", "fragment")):
        shader = ref(ck, by_uid, loc + (field,), getattr(c, field), ("shader",), "shader")
        if isinstance(shader, m.Shader):
            shaders.append(shader)
            if shader.stage != stage:
                ck.add(loc + (field,), f"dispatch_fragment {field} must reference a {stage} shader; "
                                       f"\"{shader.uid}\" has stage {shader.stage}")
    if c.push_data_ref:
        raw = ref(ck, by_uid, loc + ("push_data_ref",), c.push_data_ref, ("raw_data",), "raw_data")
        if shaders:
            # one range serves both stages: Arm sizes it by the larger of the two shaders'
            check_push_size(ck, loc + ("push_data_ref",), raw, max(shaders, key=lambda s: s.push_constants_size))


def _check_attachments(ck: Problems, loc: Loc, c: m.DispatchFragment, by_uid: dict[str, Any],
                       ref: Callable[..., m.Resource | None]) -> dict[tuple[str, int], int]:
    """The color attachments, one extent for all; (uid, level) -> index of the attachment rendering into it."""
    attached: dict[tuple[str, int], int] = {}
    extent = tuple(c.render_extent) if c.render_extent is not None else None
    first: tuple[str | int, ...] | None = ("render_extent",) if extent is not None else None
    for j, a in enumerate(c.color_attachment_refs):
        at = loc + ("color_attachment_refs", j)
        image = ref(ck, by_uid, at, a.resource_ref, ("image",), "color attachment image")
        if not isinstance(image, m.Image):
            continue
        key = (a.resource_ref, a.lod or 0)
        if key in attached:
            ck.add(at, f"level {key[1]} of image \"{a.resource_ref}\" is already color attachment {attached[key]}")
            continue
        attached[key] = j
        if not image.color_attachment:
            ck.add(at, f"image \"{image.uid}\" is not a color attachment: give it \"color_attachment\": true")
        if a.lod is not None and a.lod >= image.mips:
            ck.add(at + ("lod",), f"Color attachment mip level exceeds available mips: lod {a.lod}, image "
                                  f"\"{image.uid}\" has {image.mips}")
            continue
        size = attachment_extent(image, a.lod)
        if extent is None:
            extent, first = size, ("color_attachment_refs", j)
        elif size != extent:
            assert first is not None
            ck.add(at, f"All color attachments must share the same extent: \"{image.uid}\" is "
                       f"{size[0]}x{size[1]}, {'/'.join(map(str, first))} is {extent[0]}x{extent[1]}")
    return attached


def _check_bindings(ck: Problems, loc: Loc, c: m.DispatchFragment, by_uid: dict[str, Any],
                    ref: Callable[..., m.Resource | None], attached: dict[tuple[str, int], int]) -> None:
    """The draw's bindings: each slot once, and no level it renders into."""
    slots: dict[tuple[int, int], int] = {}
    for j, b in enumerate(c.bindings):
        at = loc + ("bindings", j)
        ref(ck, by_uid, at + ("resource_ref",), b.resource_ref, ("buffer", "image"), "buffer or image")
        # a binding without lod sees every level of a sampled image
        clash = [k for (uid, level), k in attached.items()
                 if uid == b.resource_ref and (b.lod is None or b.lod == level)]
        if clash:
            ck.add(at + ("resource_ref",), f"image \"{b.resource_ref}\" is color attachment {clash[0]} of this "
                                           "draw; the level rendered into cannot be bound in it too")
        if (b.set, b.id) in slots:
            ck.add(at, f"set {b.set} binding {b.id} is already bound by bindings/{slots[(b.set, b.id)]}")
        slots.setdefault((b.set, b.id), j)
