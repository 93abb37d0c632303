"""A ``BIND BUFFER`` of a storage or uniform buffer as a scenario binding's descriptor fields:
``DESCRIPTOR_OFFSET``/``DESCRIPTOR_RANGE`` become its ``buffer_range``, ``storage_dynamic`` and
``uniform_dynamic`` its dynamic ``descriptor_type`` and ``dynamic_offset`` (docs/scenario.md).

Amber's rule for a range left whole (``-1``, VK_WHOLE_SIZE) on a dynamic descriptor: the range is
what is left of the buffer after both offsets (src/vulkan/buffer_descriptor.cc), since Vulkan
requires offset + dynamic offset + range to fit the buffer.
"""
from __future__ import annotations

from typing import Any

from kernellab.formats.amber.script import Binding
from kernellab.formats.amber.types import Element, TypeError_, vk_format

DYNAMIC_TYPES = {"storage_dynamic": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC",
                 "uniform_dynamic": "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC"}
TEXEL_TYPES = {"uniform_texel_buffer": "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER",
               "storage_texel_buffer": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER"}


def descriptor_fields(b: Binding, buffer_size: int, element: Element) -> dict[str, Any]:
    """The binding's fields beyond set, id and resource (``element``: the buffer's, whose format
    a texel buffer's view takes); raises ValueError (the message names what does not fit) when
    the offsets and range pass the end of the buffer or a texel buffer's elements have no format."""
    fields: dict[str, Any] = {"array_element": b.array_element} if b.array_element else {}
    if b.kind in TEXEL_TYPES:
        try:
            fields.update(descriptor_type=TEXEL_TYPES[b.kind], texel_format=vk_format(element))
        except TypeError_ as exc:
            raise ValueError(f"BIND BUFFER {b.buffer} AS {b.kind}: {exc}") from None
    if b.kind in DYNAMIC_TYPES:
        fields["descriptor_type"] = DYNAMIC_TYPES[b.kind]
        if b.dynamic_offset:
            fields["dynamic_offset"] = b.dynamic_offset
    start = b.descriptor_offset + b.dynamic_offset
    size = b.descriptor_range if b.descriptor_range >= 0 else buffer_size - start
    if size < 1 or start + size > buffer_size:
        seen = f"{size} bytes" if b.descriptor_range >= 0 else "the rest"
        raise ValueError(f"BIND BUFFER {b.buffer}: offset {b.descriptor_offset} + dynamic offset {b.dynamic_offset} "
                         f"and {seen} pass the end of the buffer ({buffer_size} bytes)")
    if b.descriptor_offset or size != buffer_size - start or b.kind in DYNAMIC_TYPES:
        fields["buffer_range"] = [b.descriptor_offset, size]
    return fields
