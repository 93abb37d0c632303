"""What a Vulkan device supports, by the names AmberScript requires them with: core features
(``shaderFloat64``), features of the Vulkan 1.1-1.3 structs under their extension struct's name
(``Storage16BitFeatures.storageBuffer16BitAccess``), boolean properties
(``FloatControlsProperties.shaderDenormPreserveFloat16``), and device and instance extensions."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kernellab.native import vk as nvk


@dataclass
class Supported:
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


def _fields(vf: object, struct: object, type_name: str) -> dict[str, bool]:
    out = {}
    for name, _ in vf.typeof(type_name).fields:  # type: ignore[attr-defined]
        if name in ("sType", "pNext"):
            continue
        value = getattr(struct, name)
        if isinstance(value, int):
            out[name] = bool(value)
    return out


def supported(index: int) -> Supported:
    """The features, boolean properties and extensions of Vulkan device ``index``."""
    if index in _CACHE:
        return _CACHE[index]
    from kernellab.backends.vulkan_device import Instance

    vk = nvk.load()
    vf = vk.ffi
    pd = Instance.shared().physical_devices[index]
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
    api = p2.properties.apiVersion
    out.version = ((api >> 22) & 0x7F, (api >> 12) & 0x3FF)
    out.extensions = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    try:
        out.instance_extensions = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
    except vk.VkError:
        pass
    _CACHE[index] = out
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


#: the shader features enabled at device creation wherever the device has them: a module that
#: declares their capabilities (Int16, StorageBuffer8BitAccess...) may be run only on a device
#: with them enabled; none of them changes how a module without them runs
SHADER_FEATURES: dict[str, tuple[str, ...]] = {
    "VkPhysicalDeviceFeatures": (
        "shaderFloat64", "shaderInt64", "shaderInt16", "shaderStorageImageExtendedFormats",
        "shaderStorageImageReadWithoutFormat", "shaderStorageImageWriteWithoutFormat",
        "shaderImageGatherExtended", "shaderUniformBufferArrayDynamicIndexing",
        "shaderSampledImageArrayDynamicIndexing", "shaderStorageBufferArrayDynamicIndexing",
        "shaderStorageImageArrayDynamicIndexing"),
    "VkPhysicalDeviceVulkan11Features": (
        "storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess", "storagePushConstant16",
        "variablePointersStorageBuffer", "variablePointers"),
    "VkPhysicalDeviceVulkan12Features": (
        "storageBuffer8BitAccess", "uniformAndStorageBuffer8BitAccess", "storagePushConstant8",
        "shaderBufferInt64Atomics", "shaderSharedInt64Atomics", "shaderFloat16", "shaderInt8",
        "scalarBlockLayout", "uniformBufferStandardLayout", "shaderSubgroupExtendedTypes",
        "vulkanMemoryModel", "vulkanMemoryModelDeviceScope", "subgroupBroadcastDynamicId"),
    "VkPhysicalDeviceVulkan13Features": (
        "subgroupSizeControl", "computeFullSubgroups", "shaderIntegerDotProduct",
        "shaderDemoteToHelperInvocation", "shaderTerminateInvocation", "shaderZeroInitializeWorkgroupMemory"),
}
_MIN_VERSION = {"VkPhysicalDeviceVulkan11Features": (1, 2), "VkPhysicalDeviceVulkan12Features": (1, 2),
                "VkPhysicalDeviceVulkan13Features": (1, 3)}


def enable_shader_features(vk: Any, index: int, features: Any, chain: Any, *, vulkan13: bool = True) -> tuple[Any, list[Any]]:
    """Turn on in ``features`` (a VkPhysicalDeviceFeatures) and in Vulkan 1.1-1.3 feature structs
    put before ``chain`` the :data:`SHADER_FEATURES` device ``index`` has; the new chain head and
    what to keep alive until the device exists. ``vulkan13``: False where the chain already
    holds a struct the 1.3 one may not sit beside (VkPhysicalDeviceDynamicRenderingFeatures)."""
    have = supported(index)
    for name in SHADER_FEATURES["VkPhysicalDeviceFeatures"]:
        if have.feature(name):
            setattr(features, name, True)
    keep = [chain]
    for type_name, names in SHADER_FEATURES.items():
        minimum = _MIN_VERSION.get(type_name)
        if minimum is None or have.version < minimum or (type_name.endswith("13Features") and not vulkan13):
            continue
        on = {n: True for n in names if have.feature(n)}
        if on:
            chain = getattr(vk, type_name)(pNext=chain, **on)
            keep.append(chain)
    return chain, keep
