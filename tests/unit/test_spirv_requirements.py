"""A SPIR-V module's OpExtension/OpCapability against what a device offers (the registry's table)."""
from __future__ import annotations

import struct

from kernellab.backends.vulkan_supported import Supported, missing_for_spirv
from kernellab.vkregistry import spirv


def module(*instructions: tuple[int, list[int]]) -> bytes:
    words = [0x07230203, 0x00010300, 0, 1, 0]
    for opcode, operands in instructions:
        words += [(len(operands) + 1) << 16 | opcode, *operands]
    return struct.pack(f"<{len(words)}I", *words)


def string(text: str) -> list[int]:
    raw = text.encode() + b"\0" * (4 - len(text) % 4)
    return list(struct.unpack(f"<{len(raw) // 4}I", raw))


UCF = (10, string("SPV_KHR_subgroup_uniform_control_flow"))
INT8 = (17, [39])
SHADER = (17, [1])


def test_the_table_comes_from_the_registry():
    assert spirv.extension_enables("SPV_KHR_subgroup_uniform_control_flow") == [
        {"extension": "VK_KHR_shader_subgroup_uniform_control_flow"}]
    assert spirv.capability(39) == ("Int8", [{"struct": "VkPhysicalDeviceVulkan12Features", "feature": "shaderInt8"}])
    assert spirv.extension_enables("SPV_no_such") is None


def test_an_extension_or_feature_the_device_lacks_is_named_with_what_enables_it():
    bare = Supported(version=(1, 3))
    assert missing_for_spirv(module(SHADER, INT8, UCF), bare) == [
        "SPIR-V capability Int8 (needs VkPhysicalDeviceVulkan12Features.shaderInt8)",
        "SPIR-V extension SPV_KHR_subgroup_uniform_control_flow (needs VK_KHR_shader_subgroup_uniform_control_flow)"]
    able = Supported(features={"shaderInt8": True}, extensions={"VK_KHR_shader_subgroup_uniform_control_flow"})
    assert missing_for_spirv(module(SHADER, INT8, UCF), able) == []


def test_an_extension_promoted_to_core_needs_only_the_version():
    storage16 = (10, string("SPV_KHR_16bit_storage"))
    assert missing_for_spirv(module(storage16), Supported(version=(1, 1))) == []
    assert missing_for_spirv(module(storage16), Supported(version=(1, 0))) == [
        "SPIR-V extension SPV_KHR_16bit_storage (needs VK_VERSION_1_1 or VK_KHR_16bit_storage)"]
