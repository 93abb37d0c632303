"""What a Vulkan physical device offers (features, properties, version, extensions), read
without opening it, and the shader features kernellab turns on when it opens one. Kept apart from
:mod:`kernellab.backends.vulkan_supported` (which finds devices by index through the shared
instance) so that device creation can use it."""
from __future__ import annotations

from dataclasses import field

from kernellab.native import vk as nvk
from kernellab.records import dataclass

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


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


def enable_shader_features(vk: Any, have: Supported, features: Any, chain: Any, *,
                           vulkan13: bool = True) -> tuple[Any, list[Any]]:
    """Turn on in ``features`` (a VkPhysicalDeviceFeatures) and in Vulkan 1.1-1.3 feature structs
    put before ``chain`` the :data:`SHADER_FEATURES` the device (``have``) has; the new chain head
    and what to keep alive until the device exists. ``vulkan13``: False where the chain already
    holds a struct the 1.3 one may not sit beside (VkPhysicalDeviceDynamicRenderingFeatures)."""
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


def shader_features_of(vk: Any, physical: Any) -> Supported:
    """The :data:`SHADER_FEATURES` physical device ``physical`` has and its version, asked through
    ``vk`` (the binding the device is opened with: the compute path's own binding declares these
    structs, so opening a device loads no other)."""
    api = vk.vkGetPhysicalDeviceProperties(physical).apiVersion
    have = Supported(version=((api >> 22) & 0x7F, (api >> 12) & 0x3FF))
    structs = []
    chain = None
    for type_name, minimum in _MIN_VERSION.items():
        if have.version >= minimum:
            chain = getattr(vk, type_name)(pNext=chain)
            structs.append((type_name, chain))
    f2 = vk.VkPhysicalDeviceFeatures2(pNext=chain)
    vk.vkGetPhysicalDeviceFeatures2(physical, f2)
    have.features = {n: bool(getattr(f2.features, n)) for n in SHADER_FEATURES["VkPhysicalDeviceFeatures"]}
    for type_name, struct in structs:
        have.features.update({n: bool(getattr(struct, n)) for n in SHADER_FEATURES[type_name]})
    return have
