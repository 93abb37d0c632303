"""Mesa's VK_LAYER_MESA_device_select is kept out of kernellab's instance only where it cannot
change the device list: the user asked nothing of it, pinned one driver manifest, and the
instance found at most one device (issue 23; docs/devices.md). A fake binding records the
environment each vkCreateInstance saw."""
from __future__ import annotations

import os

import pytest

from kernellab.backends import vulkan_device
from kernellab.backends.vulkan_device import DEVICE_SELECT_VARIABLES, Instance, device_select_unasked
from kernellab.native import vk as nvk

LVP = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"


class FakeBinding:
    """The calls Instance makes; each instance it creates finds ``device_count`` devices."""

    class VkError(Exception):
        pass

    class VkErrorIncompatibleDriver(VkError):
        pass

    def __init__(self, device_count: int):
        self.device_count = device_count
        self.created: list[str | None] = []  # NODEVICE_SELECT as each vkCreateInstance saw it
        self.destroyed: list[int] = []

    @staticmethod
    def VK_MAKE_VERSION(major: int, minor: int, patch: int) -> int:  # noqa: N802 - the binding's name
        return (major << 22) | (minor << 12) | patch

    @staticmethod
    def VkApplicationInfo(**members: object) -> dict[str, object]:  # noqa: N802
        return members

    VkInstanceCreateInfo = VkApplicationInfo

    def vkCreateInstance(self, info: object, allocator: object) -> int:  # noqa: N802
        self.created.append(os.environ.get("NODEVICE_SELECT"))
        return len(self.created)

    def vkEnumeratePhysicalDevices(self, handle: int) -> list[str]:  # noqa: N802
        return [f"instance {handle} device {i}" for i in range(self.device_count)]

    def vkDestroyInstance(self, handle: int, allocator: object) -> None:  # noqa: N802
        self.destroyed.append(handle)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*DEVICE_SELECT_VARIABLES, "VK_DRIVER_FILES", "VK_ICD_FILENAMES", "VK_ADD_DRIVER_FILES"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _instance(monkeypatch: pytest.MonkeyPatch, device_count: int) -> tuple[Instance, FakeBinding]:
    fake = FakeBinding(device_count)
    monkeypatch.setattr(nvk, "compute", lambda: fake)
    return Instance(), fake


def test_one_pinned_driver_and_one_device_create_the_instance_without_the_layer(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("VK_ICD_FILENAMES", LVP)
    inst, fake = _instance(clean_env, 1)
    assert fake.created == ["1"] and fake.destroyed == []
    assert inst.without_device_select and inst.physical_devices == ["instance 1 device 0"]
    assert "NODEVICE_SELECT" not in os.environ  # for that call only: no child process inherits it


def test_several_devices_recreate_the_instance_with_the_layer_so_indices_keep_its_order(
        clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("VK_DRIVER_FILES", LVP)
    inst, fake = _instance(clean_env, 2)
    assert fake.created == ["1", None] and fake.destroyed == [1]
    assert not inst.without_device_select
    assert inst.physical_devices == ["instance 2 device 0", "instance 2 device 1"]


@pytest.mark.parametrize("name", DEVICE_SELECT_VARIABLES)
def test_a_variable_the_user_set_keeps_the_instance_as_the_user_has_it(clean_env: pytest.MonkeyPatch,
                                                                       name: str) -> None:
    clean_env.setenv("VK_ICD_FILENAMES", LVP)
    clean_env.setenv(name, "0")
    inst, fake = _instance(clean_env, 1)
    assert fake.created == ["0" if name == "NODEVICE_SELECT" else None]
    assert not inst.without_device_select
    assert os.environ[name] == "0"  # never overridden, never removed


@pytest.mark.parametrize("env", [{}, {"VK_ICD_FILENAMES": f"{LVP}:/other.json"},
                                 {"VK_DRIVER_FILES": "/usr/share/vulkan/icd.d"},
                                 {"VK_ICD_FILENAMES": LVP, "VK_ADD_DRIVER_FILES": "/other.json"}])
def test_without_one_pinned_driver_the_layer_stays(clean_env: pytest.MonkeyPatch, env: dict[str, str]) -> None:
    for name, value in env.items():
        clean_env.setenv(name, value)
    assert not device_select_unasked(os.environ)
    _, fake = _instance(clean_env, 1)
    assert fake.created == [None]


def test_a_failed_create_leaves_the_environment_as_it_was(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("VK_ICD_FILENAMES", LVP)
    fake = FakeBinding(1)

    def fail(info: object, allocator: object) -> int:
        raise FakeBinding.VkErrorIncompatibleDriver()

    fake.vkCreateInstance = fail  # type: ignore[method-assign]
    clean_env.setattr(nvk, "compute", lambda: fake)
    with pytest.raises(vulkan_device.DeviceError, match="VK_ERROR_INCOMPATIBLE_DRIVER"):
        Instance()
    assert "NODEVICE_SELECT" not in os.environ
