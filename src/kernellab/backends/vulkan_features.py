"""The shader features kernellab turns on when it opens a Vulkan device, read from the device
without opening it. Kept apart from :mod:`kernellab.backends.vulkan_supported` (the whole record of
what a device offers: features, properties, version, extensions, read for AmberScript's
requirements) so that device creation reads only what it enables."""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any


class ShaderFeatures:
    """The :data:`SHADER_FEATURES` a device has (member name -> bool) and its Vulkan version
    (major, minor): what opening a device asks, not the whole record ``vulkan_supported`` reads
    (a plain class: a run builds no dataclass for it)."""

    __slots__ = ("features", "version")

    def __init__(self, features: dict[str, bool], version: tuple[int, int]):
        self.features, self.version = features, version


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


def enable_shader_features(vk: Any, have: ShaderFeatures, features: Any, chain: Any, *,
                           vulkan13: bool = True) -> tuple[Any, list[Any]]:
    """Turn on in ``features`` (a VkPhysicalDeviceFeatures) and in Vulkan 1.1-1.3 feature structs
    put before ``chain`` the :data:`SHADER_FEATURES` the device (``have``) has; the new chain head
    and what to keep alive until the device exists. ``vulkan13``: False where the chain already
    holds a struct the 1.3 one may not sit beside (VkPhysicalDeviceDynamicRenderingFeatures)."""
    for name in SHADER_FEATURES["VkPhysicalDeviceFeatures"]:
        if have.features.get(name):
            setattr(features, name, True)
    keep = [chain]
    for type_name, names in SHADER_FEATURES.items():
        minimum = _MIN_VERSION.get(type_name)
        if minimum is None or have.version < minimum or (type_name.endswith("13Features") and not vulkan13):
            continue
        on = {n: True for n in names if have.features.get(n)}
        if on:
            chain = getattr(vk, type_name)(pNext=chain, **on)
            keep.append(chain)
    return chain, keep


def shader_features_of(vk: Any, physical: Any, api: int | None = None) -> ShaderFeatures:
    """The :data:`SHADER_FEATURES` physical device ``physical`` has and its version, asked through
    ``vk`` (the binding the device is opened with: the compute path's own binding declares these
    structs, so opening a device loads no other); ``api``: its ``apiVersion`` where the caller
    read its properties already."""
    if api is None:
        api = int(vk.vkGetPhysicalDeviceProperties(physical).apiVersion)
    have = ShaderFeatures({}, ((api >> 22) & 0x7F, (api >> 12) & 0x3FF))
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
