"""Values of the Vulkan enums kernellab reads from files (the descriptor types of a VGF file).

The table lives in ``kernellab/data/vkenums.json``, derived from the official Vulkan registry
(pip ``vulkan-object``, which carries ``vk.xml``) by :func:`derive_from_registry`; regenerate it
after a registry update with ``python -m kernellab.vkregistry.enums``. Aliases (``..._EXT``
spellings of promoted values) are left out: a value maps back to the registry's own name.
"""
from __future__ import annotations

import functools
from pathlib import Path

from kernellab.vkregistry import tables

#: the enums the table holds
ENUMS: tuple[str, ...] = ("VkDescriptorType",)
_TABLE = "vkenums.json"


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, int]]:
    enums: dict[str, dict[str, int]] = tables.read(_TABLE, "enums")
    return enums


def values(enum: str) -> dict[str, int]:
    """``{field name: value}`` of the enum called ``enum`` (one of :data:`ENUMS`)."""
    return dict(_table()[enum])


def value(enum: str, name: str) -> int:
    """The value of field ``name`` of ``enum`` (``value("VkDescriptorType", "VK_DESCRIPTOR_TYPE_TENSOR_ARM")``)."""
    return _table()[enum][name]


@functools.cache
def names(enum: str) -> dict[int, str]:
    """``{value: field name}`` of ``enum``."""
    return {v: k for k, v in _table()[enum].items()}


def derive_from_registry() -> dict[str, dict[str, int]]:
    """The table, computed from ``vk.xml`` via pip ``vulkan-object``."""
    # an optional dependency, needed only to regenerate the table
    from vulkan_object import get_vulkan_object

    vk = get_vulkan_object()
    return {enum: {f.name: f.value for f in sorted(vk.enums[enum].fields, key=lambda f: f.value)}
            for enum in ENUMS}


def regenerate(path: Path | None = None) -> Path:
    path = tables.write(path or tables.data_path(_TABLE), "kernellab.vkregistry.enums", "enums",
                        derive_from_registry())
    _table.cache_clear()
    names.cache_clear()
    return path


if __name__ == "__main__":
    tables.regenerate_main("kernellab.vkregistry.enums", __doc__, regenerate)
