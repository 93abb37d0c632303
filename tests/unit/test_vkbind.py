"""kernellab's small Vulkan binding (issue 23): its declarations are regenerated from vk.xml
byte for byte, and it keeps the ``vulkan`` package's calling convention on a real device."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.native import vkbind, vkbind_table
from kernellab.vkregistry import binding


def test_regenerating_from_the_registry_gives_the_committed_files(tmp_path: Path) -> None:
    pytest.importorskip("vulkan_object")
    pytest.importorskip("cffi")
    for written in binding.generate(tmp_path):
        committed = binding.native_dir() / written.name
        assert written.read_text() == committed.read_text(), f"{committed} is stale: run {binding._GENERATOR}"


def test_the_table_holds_what_the_compute_path_names() -> None:
    # values from vk.xml, not typed in: a wrong table fails here
    assert vkbind.constant("VK_BUFFER_USAGE_STORAGE_BUFFER_BIT") == 0x20
    assert vkbind.constant("VK_QUEUE_FAMILY_IGNORED") == 0xFFFFFFFF
    assert vkbind_table.STYPES["VkBufferCreateInfo"] == 12
    assert vkbind.results()[-4] == "VK_ERROR_DEVICE_LOST"
    entry = vkbind.command_entry("vkAllocateCommandBuffers")
    assert entry is not None
    params, returns_result, output = entry
    assert params[-1] == "pCommandBuffers" and returns_result
    assert output == ("array", "pAllocateInfo->commandBufferCount")
    assert vkbind.command_entry("vkEnumeratePhysicalDevices")[2] == ("list", "pPhysicalDeviceCount")
    assert vkbind.command_entry("vkCmdDispatch")[2] is None
    assert vkbind.command_entry("vkDestroyInstance") == (["instance", "pAllocator"], False, None)
    assert vkbind.command_entry("vkCreateInstance")[2] == ("one", None)
    # a name is its whole line's first field, never a prefix of a longer one
    assert vkbind.constant("VK_TRUE") == 1 and vkbind.constant("VK_TR") is None
    assert vkbind.command_entry("vkCreate") is None and vkbind.command_entry("vkCreateImage") is None


def test_structures_fill_stype_counts_and_strings() -> None:
    from kernellab.native import vkbind as vk

    q = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=2, pQueuePriorities=[1.0, 0.5])
    assert q.sType == 2  # VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO
    assert q.queueCount == 2 and q.pQueuePriorities[1] == 0.5
    info = vk.VkInstanceCreateInfo(ppEnabledExtensionNames=["VK_EXT_debug_utils"])
    assert info.enabledExtensionCount == 1
    assert vk.ffi.string(info.ppEnabledExtensionNames[0]) == b"VK_EXT_debug_utils"
    app = vk.VkApplicationInfo(pApplicationName="kernellab", apiVersion=vk.VK_MAKE_VERSION(1, 3, 0))
    assert vk.ffi.string(vk.VkInstanceCreateInfo(pApplicationInfo=app).pApplicationInfo.pApplicationName) == b"kernellab"
    with pytest.raises(AttributeError, match="does not declare VkImageCreateInfo"):
        vk.VkImageCreateInfo  # noqa: B018 - images are the vulkan package's


def test_errors_carry_their_code_and_the_package_s_class_names() -> None:
    from kernellab.native import vk as nvk
    from kernellab.native import vkbind as vk

    assert issubclass(vk.VkErrorIncompatibleDriver, vk.VkError) and vk.VkErrorIncompatibleDriver.code == -9
    assert issubclass(vk.VkTimeout, vk.VkException)
    assert nvk.code_name(vk.VkErrorDeviceLost()) == "VK_ERROR_DEVICE_LOST"
    # one class a code, whether named or raised (made on first use, issue 23)
    with pytest.raises(vk.VkErrorOutOfHostMemory) as raised:
        vk._raise(-1)
    assert raised.value.code == -1 and type(raised.value) is vk.exception_class(-1)
    assert vk.exception_class(-123456) is vk.VkError


@pytest.fixture
def vk():
    from kernellab.native import vk as nvk

    try:
        return nvk.compute()
    except Exception as exc:  # noqa: BLE001 - no loader: nothing to call
        pytest.skip(f"no Vulkan loader: {exc}")


def test_a_device_is_opened_and_a_buffer_mapped_through_the_binding(vk) -> None:
    inst = vk.vkCreateInstance(vk.VkInstanceCreateInfo(), None)
    physical = vk.vkEnumeratePhysicalDevices(inst)
    if not physical:
        pytest.skip("no Vulkan device")
    props = vk.vkGetPhysicalDeviceProperties(physical[0])
    assert isinstance(props.deviceName, str) and props.limits.maxComputeWorkGroupSize[0] >= 128
    families = vk.vkGetPhysicalDeviceQueueFamilyProperties(physical[0])
    family = next(i for i, f in enumerate(families) if f.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
    device = vk.vkCreateDevice(physical[0], vk.VkDeviceCreateInfo(pQueueCreateInfos=[vk.VkDeviceQueueCreateInfo(
        queueFamilyIndex=family, pQueuePriorities=[1.0])]), None)
    buf = vk.vkCreateBuffer(device, vk.VkBufferCreateInfo(size=64, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT), None)
    req = vk.vkGetBufferMemoryRequirements(device, buf)
    mp = vk.vkGetPhysicalDeviceMemoryProperties(physical[0])
    host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
    index = next(i for i in range(mp.memoryTypeCount)
                 if req.memoryTypeBits & (1 << i) and mp.memoryTypes[i].propertyFlags & host)
    memory = vk.vkAllocateMemory(device, vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index), None)
    vk.vkBindBufferMemory(device, buf, memory, 0)
    mapping = vk.vkMapMemory(device, memory, 0, 64, 0)
    mapping[0:4] = b"\x01\x02\x03\x04"
    assert bytes(mapping[0:4]) == b"\x01\x02\x03\x04"
    pools = vk.vkAllocateCommandBuffers(device, vk.VkCommandBufferAllocateInfo(
        commandPool=vk.vkCreateCommandPool(device, vk.VkCommandPoolCreateInfo(queueFamilyIndex=family), None),
        level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=2))
    assert len(pools) == 2
    with pytest.raises(vk.VkError) as err:  # a size no memory holds: the result becomes its class
        vk.vkAllocateMemory(device, vk.VkMemoryAllocateInfo(allocationSize=1 << 62, memoryTypeIndex=index), None)
    assert err.value.code < 0
    vk.vkUnmapMemory(device, memory)
    vk.vkDestroyBuffer(device, buf, None)
    vk.vkFreeMemory(device, memory, None)
    vk.vkDestroyDevice(device, None)
    vk.vkDestroyInstance(inst, None)


def test_a_plain_device_enables_no_instance_extension_it_was_not_asked_for(vk) -> None:
    from kernellab.backends.vulkan_device import Instance

    if not Instance.shared().physical_devices:
        pytest.skip("no Vulkan device")
    assert Instance.shared().extensions == ()
    # --enable-gpu-debug-markers gets an instance of its own with VK_EXT_debug_utils (where the loader has it)
    assert Instance.with_debug_utils() is not Instance.shared()
    assert set(Instance.with_debug_utils().extensions) <= {"VK_EXT_debug_utils"}
