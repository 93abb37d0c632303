"""What a Vulkan device supports, by the names AmberScript requires them with: core features
(``shaderFloat64``), features of the Vulkan 1.1-1.3 structs under their extension struct's name
(``Storage16BitFeatures.storageBuffer16BitAccess``), boolean properties
(``FloatControlsProperties.shaderDenormPreserveFloat16``), and device and instance extensions."""
from __future__ import annotations

from dataclasses import dataclass, field

from kernellab.native import vk as nvk


@dataclass
class Supported:
    features: dict[str, bool] = field(default_factory=dict)
    extensions: set[str] = field(default_factory=set)
    instance_extensions: set[str] = field(default_factory=set)

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
    for type_name, stype in (("VkPhysicalDeviceVulkan12Properties",
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
    out.extensions = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    try:
        out.instance_extensions = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
    except vk.VkError:
        pass
    _CACHE[index] = out
    return out
