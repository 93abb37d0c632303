"""The shader features turned on at Vulkan device creation: those the device has, by version."""
from __future__ import annotations

from types import SimpleNamespace

from kernellab.backends import vulkan_features as vs


class FakeVk:
    """Records the feature structs built, as the ``vulkan`` package's constructors would."""

    def __getattr__(self, type_name):
        return lambda **fields: SimpleNamespace(type=type_name, **fields)


def test_only_features_the_device_has_are_enabled_and_chained():
    have = vs.ShaderFeatures({"shaderInt16": True, "shaderFloat64": False, "shaderInt8": True,
                              "computeFullSubgroups": True}, (1, 3))
    features = SimpleNamespace()
    head, keep = vs.enable_shader_features(FakeVk(), have, features, "tail")
    assert vars(features) == {"shaderInt16": True}
    assert (head.type, head.computeFullSubgroups) == ("VkPhysicalDeviceVulkan13Features", True)
    assert (head.pNext.type, head.pNext.shaderInt8, head.pNext.pNext) == ("VkPhysicalDeviceVulkan12Features",
                                                                           True, "tail")
    assert keep[0] == "tail" and head in keep
    # beside VkPhysicalDeviceDynamicRenderingFeatures the 1.3 struct is left out; a 1.1 device gets none
    head, _ = vs.enable_shader_features(FakeVk(), have, SimpleNamespace(), "tail", vulkan13=False)
    assert head.type == "VkPhysicalDeviceVulkan12Features"
    old = vs.ShaderFeatures(have.features, (1, 1))
    head, _ = vs.enable_shader_features(FakeVk(), old, SimpleNamespace(), "tail")
    assert head == "tail"
