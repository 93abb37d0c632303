"""Vulkan structures both pipeline kinds (compute, graph segments) are created with."""
from __future__ import annotations

from typing import Any
from collections.abc import Sequence

from kernellab.native import vk as nvk


def specialization_info(constants: Sequence[Any]) -> tuple[Any, list[Any]]:
    """A VkSpecializationInfo for SpecConstants (4 bytes each, in order), or None; plus the cffi
    objects that must outlive the pipeline-creation call (the binding keeps no references)."""
    if not constants:
        return None, []
    vk = nvk.load()
    data = b"".join(c.encode() for c in constants)
    entries = [vk.VkSpecializationMapEntry(constantID=c.id, offset=4 * i, size=4) for i, c in enumerate(constants)]
    pdata = vk.ffi.new("char[]", data)
    # dataSize given explicitly: the binding would otherwise count elements, not bytes
    info = vk.VkSpecializationInfo(mapEntryCount=len(entries), pMapEntries=entries, dataSize=len(data), pData=pdata)
    return info, [pdata, entries]
