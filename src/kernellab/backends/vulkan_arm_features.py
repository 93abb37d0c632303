"""What a device is opened with for tensors and graphs: the extensions, the feature chain Arm's
runner enables (limited to what the device has), and the queue family that runs data graphs."""
from __future__ import annotations

from typing import Any

from kernellab.backends.vulkan_arm_calls import address, chain
from kernellab.backends.vulkan_arm_decls import EXTENSIONS, const, ctype, ffi, new
from kernellab.native import vk as nvk
from kernellab.records import dataclass

__all__ = ["EXTENSIONS", "DeviceFeatures", "data_graph_queue_family", "device_features", "ml_features"]



def data_graph_queue_family(physical_device: Any) -> int | None:
    """Index of the first queue family with ``VK_QUEUE_DATA_GRAPH_BIT_ARM`` (None if none has it)."""
    vk = nvk.load()
    bit = const("VK_QUEUE_DATA_GRAPH_BIT_ARM")
    for i, props in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(physical_device)):
        if props.queueFlags & bit:
            return i
    return None


@dataclass
class DeviceFeatures:
    """Features for ``vkCreateDevice``: ``VkDeviceCreateInfo(pNext=f.pnext, pEnabledFeatures=f.enabled)``.

    ``keep`` holds the structs the chain points to; keep it until the device exists.
    """

    pnext: Any
    enabled: Any
    keep: list[Any]


def device_features(physical_device: Any, *, tensors: bool = True, data_graph: bool = True,
                    robust_buffer_access: bool = False, then: Any = None,
                    dynamic_rendering: bool = False) -> DeviceFeatures:
    """The feature chain Arm's runner enables for tensors and graphs, limited to what the device has.

    The emulation layer lowers tensors to buffers, so tensor shaders of 8- and 16-bit types need
    ``storageBuffer8BitAccess``/``shaderInt8`` and the 16-bit storage features, and 64-bit
    tensors ``shaderInt64``; pipeline creation fails (``VK_ERROR_UNKNOWN``) without them. Also
    enabled: Vulkan 1.3 ``synchronization2`` (tensor barriers), ``maintenance4``,
    ``pipelineCreationCacheControl``; Vulkan 1.2 ``vulkanMemoryModel``, ``hostQueryReset``.
    ``then`` is a ``vulkan``-package struct (say ``VkPhysicalDeviceCustomBorderColorFeaturesEXT``)
    linked at the end of the chain; ``robust_buffer_access`` sets that core feature too, and
    ``dynamic_rendering`` Vulkan 1.3's (graphics draws).
    """
    vk = nvk.load()
    vf = vk.ffi
    have11, have12, have13 = _core_features(vk)
    have2 = vf.new("VkPhysicalDeviceFeatures2*", {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                                  "pNext": have11})
    vk.lib.vkGetPhysicalDeviceFeatures2(physical_device, have2)
    f11, f12, f13 = _core_features(vk)
    for name in ("synchronization2", "maintenance4", "pipelineCreationCacheControl"):
        setattr(f13, name, getattr(have13, name))
    f13.dynamicRendering = have13.dynamicRendering if dynamic_rendering else 0
    for name in ("storageBuffer8BitAccess", "uniformAndStorageBuffer8BitAccess", "shaderInt8", "shaderFloat16",
                 "vulkanMemoryModel", "vulkanMemoryModelDeviceScope", "hostQueryReset"):
        setattr(f12, name, getattr(have12, name))
    for name in ("storageBuffer16BitAccess", "uniformAndStorageBuffer16BitAccess", "storagePushConstant16"):
        setattr(f11, name, getattr(have11, name))
    enabled = vf.new("VkPhysicalDeviceFeatures*")
    enabled.shaderInt16 = have2.features.shaderInt16
    enabled.shaderInt64 = have2.features.shaderInt64
    enabled.robustBufferAccess = bool(robust_buffer_access)
    arm = ml_features(tensors=tensors, data_graph=data_graph)
    tail = vf.addressof(then) if then is not None and vf.typeof(then).kind == "struct" else then
    if arm:
        f13.pNext = vf.cast("void*", address(arm[0]))
        chain(*arm)
        if tail is not None:
            arm[-1].pNext = ffi().cast(ctype("void*"), address(tail))
    elif tail is not None:
        f13.pNext = vf.cast("void*", tail)
    return DeviceFeatures(vf.cast("void*", f11), enabled, [f11, f12, f13, enabled, *arm, then])


def _core_features(vk: Any) -> tuple[Any, Any, Any]:
    """Zeroed Vulkan 1.1, 1.2 and 1.3 feature structs, chained in that order."""
    vf = vk.ffi
    f13 = vf.new("VkPhysicalDeviceVulkan13Features*",
                 {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES})
    f12 = vf.new("VkPhysicalDeviceVulkan12Features*",
                 {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, "pNext": f13})
    f11 = vf.new("VkPhysicalDeviceVulkan11Features*",
                 {"sType": vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES, "pNext": f12})
    return f11, f12, f13


def ml_features(tensors: bool = True, data_graph: bool = True) -> list[Any]:
    """Feature structs to chain into ``VkDeviceCreateInfo.pNext`` (see :func:`chain`)."""
    out = []
    if tensors:
        out.append(new("VkPhysicalDeviceTensorFeaturesARM", tensorNonPacked=1, shaderTensorAccess=1,
                       shaderStorageTensorArrayDynamicIndexing=1, shaderStorageTensorArrayNonUniformIndexing=1,
                       descriptorBindingStorageTensorUpdateAfterBind=1, tensors=1))
    if data_graph:
        out.append(new("VkPhysicalDeviceDataGraphFeaturesARM", dataGraph=1, dataGraphUpdateAfterBind=1,
                       dataGraphSpecializationConstants=1, dataGraphDescriptorBuffer=0, dataGraphShaderModule=1))
    return out
