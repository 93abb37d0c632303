"""The shader features turned on at Vulkan device creation: those the device has, by version."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kernellab.backends import vkcore as vs
from kernellab.native import vkbind

ffi = vkbind.ffi
#: the binding as the device gives it: its ffi (the feature structures are plain memory)
VK = SimpleNamespace(ffi=ffi)


def _as(type_name, pointer):
    return ffi.cast(type_name + " *", pointer)


def test_the_plain_memory_layout_is_the_binding_s_declarations():
    for type_name, (stype, words) in vs._LAYOUT.items():
        assert ffi.sizeof(type_name) == 4 * words, type_name
        if type_name != "VkPhysicalDeviceFeatures":  # members only, no sType or pNext
            assert vkbind_table_stype(type_name) == stype and ffi.offsetof(type_name, "pNext") == 8
    for type_name, names in [*vs.SHADER_FEATURES.items(),
                             ("VkPhysicalDeviceFeatures", ("robustBufferAccess", "fragmentStoresAndAtomics"))]:
        for name in names:
            where = ffi.offsetof(type_name, name) + (16 if type_name == "VkPhysicalDeviceFeatures" else 0)
            assert where == 16 + 4 * vs._WORD[name], name
    assert ffi.offsetof("VkPhysicalDeviceFeatures2", "features") == 16


def vkbind_table_stype(type_name):
    from kernellab.native import vkbind_table

    return vkbind_table.STYPES[type_name]


def test_only_features_the_device_has_are_enabled_and_chained():
    have = vs.ShaderFeatures({"shaderInt16": True, "shaderFloat64": False, "shaderInt8": True,
                              "computeFullSubgroups": True}, (1, 3))
    features = vs.plain_features(ffi)
    tail = vkbind.VkPhysicalDeviceCustomBorderColorFeaturesEXT(customBorderColors=True)
    head, keep = vs.enable_shader_features(VK, have, features, tail)
    enabled = _as("VkPhysicalDeviceFeatures", features)
    assert (enabled.shaderInt16, enabled.shaderFloat64, enabled.robustBufferAccess) == (1, 0, 0)
    assert sum(features) == 1
    vs.set_feature(features, "robustBufferAccess", True)
    vs.set_feature(features, "fragmentStoresAndAtomics", True)
    assert (enabled.robustBufferAccess, enabled.fragmentStoresAndAtomics) == (1, 1)
    v13 = _as("VkPhysicalDeviceVulkan13Features", head)
    assert v13.sType == 53 and v13.computeFullSubgroups == 1 and v13.subgroupSizeControl == 0
    v12 = _as("VkPhysicalDeviceVulkan12Features", v13.pNext)
    assert v12.sType == 51 and v12.shaderInt8 == 1 and v12.shaderFloat16 == 0
    assert v12.pNext == ffi.addressof(tail)
    assert keep[0] is tail and len(keep) == 3  # the tail and both structures live until the device exists
    # beside VkPhysicalDeviceDynamicRenderingFeatures the 1.3 struct is left out; a 1.1 device gets none
    head, _ = vs.enable_shader_features(VK, have, vs.plain_features(ffi), None, vulkan13=False)
    assert _as("VkPhysicalDeviceVulkan12Features", head).sType == 51
    assert _as("VkPhysicalDeviceVulkan12Features", head).pNext == ffi.NULL
    old = vs.ShaderFeatures(have.features, (1, 1))
    head, _ = vs.enable_shader_features(VK, old, vs.plain_features(ffi), tail)
    assert head is tail


def test_the_device_is_asked_for_each_structure_of_its_version():
    seen = []

    def answer(physical, f2):
        f2 = _as("VkPhysicalDeviceFeatures2", f2)
        f2.features.shaderInt16 = 1
        v12 = _as("VkPhysicalDeviceVulkan12Features", f2.pNext)  # the newest first, as built
        seen.append((f2.sType, v12.sType))
        v12.vulkanMemoryModel = 1
        v11 = _as("VkPhysicalDeviceVulkan11Features", v12.pNext)
        assert v11.sType == 49 and v11.pNext == ffi.NULL
        v11.variablePointers = 1

    vk = SimpleNamespace(ffi=ffi, vkGetPhysicalDeviceFeatures2=answer)
    have = vs.shader_features_of(vk, "gpu", api=(1 << 22) | (2 << 12))
    assert seen == [(1000059000, 51)] and have.version == (1, 2)
    assert {n for n, on in have.features.items() if on} == {"shaderInt16", "variablePointers", "vulkanMemoryModel"}
    assert set(have.features) == {n for t, names in vs.SHADER_FEATURES.items() if t != "VkPhysicalDeviceVulkan13Features"
                                  for n in names}


@pytest.mark.parametrize("version", [(1, 1), (1, 3)])
def test_a_device_is_asked_only_for_the_structures_of_its_version(version):
    chains = []

    def answer(physical, f2):
        n, p = 0, _as("VkPhysicalDeviceFeatures2", f2).pNext
        while p != ffi.NULL:
            n, p = n + 1, _as("VkPhysicalDeviceVulkan11Features", p).pNext
        chains.append(n)

    major, minor = version
    vs.shader_features_of(SimpleNamespace(ffi=ffi, vkGetPhysicalDeviceFeatures2=answer), None,
                          api=(major << 22) | (minor << 12))
    assert chains == [0 if version == (1, 1) else 3]
