"""What a Vulkan device supports, by the names AmberScript requires them with: core features
(``shaderFloat64``), features of the Vulkan 1.1-1.3 structs under their extension struct's name
(``Storage16BitFeatures.storageBuffer16BitAccess``), boolean properties
(``FloatControlsProperties.shaderDenormPreserveFloat16``), and device and instance extensions;
and what a SPIR-V module needs that a device lacks."""
from __future__ import annotations

from dataclasses import field

from kernellab.native import vk as nvk
from kernellab.records import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Supported", "missing_for_spirv", "supported"]


@dataclass
class Supported:
    """The features, extensions and properties a Vulkan device has."""
    features: dict[str, bool] = field(default_factory=dict)
    extensions: set[str] = field(default_factory=set)
    instance_extensions: set[str] = field(default_factory=set)
    #: integer properties of the Vulkan 1.1-1.3 property structs (``minSubgroupSize``)
    limits: dict[str, int] = field(default_factory=dict)
    #: the device's Vulkan version (major, minor)
    version: tuple[int, int] = (1, 0)

    def feature(self, name: str) -> bool:
        """``name`` or ``Struct.name``: only the member's name decides (the core struct that
        holds it since Vulkan 1.1-1.3 is asked)."""
        return self.features.get(name.rpartition(".")[2], False)


_CACHE: dict[int, Supported] = {}


def supported(index: int) -> Supported:
    """The features, properties and extensions of Vulkan device ``index``."""
    if index not in _CACHE:
        from kernellab.backends.vulkan_device import Instance

        _CACHE[index] = read_supported(Instance.shared().physical_devices[index])
    return _CACHE[index]


def _fields(vf: object, struct: object, type_name: str) -> dict[str, bool]:
    out = {}
    for name, _ in vf.typeof(type_name).fields:  # type: ignore[attr-defined]
        if name in ("sType", "pNext"):
            continue
        value = getattr(struct, name)
        if isinstance(value, int):
            out[name] = bool(value)
    return out


def read_supported(pd: Any) -> Supported:
    """The features, boolean and integer properties, version and extensions of physical device
    ``pd`` (a handle of either binding: the ``vulkan`` package declares every struct asked)."""
    vk = nvk.load()
    vf = vk.ffi
    pd = nvk.Api(vk, adopt=True).adopt(pd)
    structs = {}
    nxt = vf.NULL
    chain = [("VkPhysicalDeviceVulkan13Features", "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES"),
             ("VkPhysicalDeviceVulkan12Features", "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES"),
             ("VkPhysicalDeviceVulkan11Features", "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES")]
    for type_name, stype in chain:
        structs[type_name] = nxt = vf.new(f"{type_name}*", {"sType": getattr(vk, stype), "pNext": nxt})
    f2 = vf.new("VkPhysicalDeviceFeatures2*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                               "pNext": nxt})
    vk.lib.vkGetPhysicalDeviceFeatures2(pd, f2)
    props = {}
    pnext = vf.NULL
    for type_name, stype in (("VkPhysicalDeviceVulkan13Properties",
                              "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES"),
                             ("VkPhysicalDeviceVulkan12Properties",
                              "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES"),
                             ("VkPhysicalDeviceVulkan11Properties",
                              "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES")):
        props[type_name] = pnext = vf.new(f"{type_name}*", {"sType": getattr(vk, stype), "pNext": pnext})
    p2 = vf.new("VkPhysicalDeviceProperties2*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
                                                 "pNext": pnext})
    vk.lib.vkGetPhysicalDeviceProperties2(pd, p2)
    out = Supported()
    out.features.update(_fields(vf, f2.features, "VkPhysicalDeviceFeatures"))
    for type_name, struct in structs.items():
        out.features.update(_fields(vf, struct, type_name))
    for type_name, struct in props.items():
        for name, value in _fields(vf, struct, type_name).items():
            out.features.setdefault(name, value)
            out.limits.setdefault(name, int(getattr(struct, name)))
    # the core limits an AmberScript file's images need (sample counts are VkSampleCountFlags)
    for name in ("storageImageSampleCounts", "sampledImageColorSampleCounts", "sampledImageIntegerSampleCounts"):
        out.limits.setdefault(name, int(getattr(p2.properties.limits, name)))
    api = p2.properties.apiVersion
    out.version = ((api >> 22) & 0x7F, (api >> 12) & 0x3FF)
    out.extensions = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    try:
        out.instance_extensions = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
    except vk.VkError:
        pass
    return out


def _enabled(way: dict[str, str], have: Supported) -> bool | None:
    """Whether the device offers this way of enabling; None for a property value (not asked)."""
    if "version" in way:
        major, minor = (int(x) for x in way["version"].removeprefix("VK_VERSION_").split("_"))
        return have.version >= (major, minor)
    if "extension" in way:
        return way["extension"] in have.extensions
    if "feature" in way:
        return have.feature(way["feature"])
    return None


def _describe(way: dict[str, str]) -> str:
    if "feature" in way:
        return f"{way.get('struct', '')}.{way['feature']}".lstrip(".")
    return way.get("extension") or way.get("version") or f"{way.get('member')} {way.get('value')}"


def _lacking(what: str, ways: list[dict[str, str]], have: Supported) -> str | None:
    verdicts = [_enabled(w, have) for w in ways]
    if not ways or any(v is not False for v in verdicts):
        return None
    return f"{what} (needs {' or '.join(_describe(w) for w in ways)})"


def missing_for_spirv(module: bytes, have: Supported) -> list[str]:
    """The module's SPIR-V extensions and capabilities the device cannot enable, each with what
    would enable it ("SPIR-V extension SPV_KHR_x (needs VK_KHR_y)"), by the registry's table."""
    from kernellab.spirv_format import instructions, literal_string, words
    from kernellab.vkregistry import spirv

    module_words = words(module)
    out = []
    for start, count, opcode in instructions(module_words):
        if opcode == _OP_EXTENSION:
            name = literal_string(module_words, start + 1, start + count)[0]
            ways = spirv.extension_enables(name)
            lack = _lacking(f"SPIR-V extension {name}", ways, have) if ways is not None else None
        elif opcode == _OP_CAPABILITY:
            known = spirv.capability(module_words[start + 1])
            lack = _lacking(f"SPIR-V capability {known[0]}", known[1], have) if known else None
        else:
            continue
        if lack:
            out.append(lack)
    return out


#: the opcodes of OpExtension and OpCapability (SPIR-V specification, 3.52)
_OP_EXTENSION, _OP_CAPABILITY = 10, 17
