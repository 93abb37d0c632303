"""A device's extension names kept as the driver's records (issue 23 start-up): a name is found
only at a record's start, and iterating gives every name, sorted, as the eager list did."""
from __future__ import annotations

import pickle

from kernellab.native.devices import ExtensionNames


def _records(*names: str, stride: int = 16) -> bytes:
    # each record: the NUL-padded name, then other members (here: the bytes of a version number)
    return b"".join(n.encode().ljust(stride - 4, b"\0") + b"\x01\x00\x00\x00" for n in names)


def test_a_name_is_found_only_at_a_records_start() -> None:
    names = ExtensionNames(_records("VK_B_long", "VK_A", "X_VK_C"), 16)
    assert "VK_A" in names and "VK_B_long" in names and "X_VK_C" in names
    assert "VK_B" not in names  # a prefix of a longer name
    assert "VK_C" not in names  # inside another record's name
    assert "long" not in names and "" not in names and 3 not in names
    assert len(names) == 3 and list(names) == ["VK_A", "VK_B_long", "X_VK_C"]


def test_names_compare_pickle_and_show_as_the_list_they_stand_for() -> None:
    names = ExtensionNames(_records("VK_B", "VK_A"), 16)
    assert names == ExtensionNames(_records("VK_A", "VK_B"), 16) and names == ["VK_A", "VK_B"]
    assert names != ExtensionNames(_records("VK_A"), 16)
    again = pickle.loads(pickle.dumps(names))
    assert again == names and "VK_B" in again and hash(again) == hash(names)
    assert repr(names) == "ExtensionNames(['VK_A', 'VK_B'])" and set(names) == {"VK_A", "VK_B"}


def test_the_vulkan_devices_names_are_the_drivers_list() -> None:
    import pytest

    from kernellab.backends.vulkan import VulkanBackend
    from kernellab.backends.vulkan_device import Instance
    from kernellab.errors import DeviceError
    from kernellab.native import vk as nvk

    try:
        devices = VulkanBackend.devices()
    except DeviceError as exc:
        pytest.skip(str(exc))
    vk = nvk.compute()
    for d in devices:
        names = d.details["extensions"]
        pd = Instance.shared().physical_devices[d.index]
        listed = sorted(e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(pd, None))
        assert isinstance(names, ExtensionNames) and list(names) == listed and len(names) == len(listed) > 0
        assert all(n in names for n in listed) and "VK_NOT_AN_EXTENSION" not in names
