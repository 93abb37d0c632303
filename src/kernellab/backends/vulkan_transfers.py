"""Transfers and memory a Vulkan device's compute path over mapped buffers never needs: staged
copies for buffers in device-only memory, one-shot command buffers run outside the frame (image
uploads and clears, tensor copies), and shared host-visible allocations several resources are
bound into (memory groups, tensors, graph and optical-flow sessions). The device (the ``device``
of each function: backends/vulkan_device.py's ``VulkanDevice``, whose methods of the same names
call these) loads this module on first use, so a run of mapped buffers reads none of it."""
from __future__ import annotations

from collections.abc import Callable

from kernellab.errors import DeviceError
from kernellab.native import vk as nvk
from kernellab.native.vk import checked
from kernellab.records import Value

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    import numpy as np


class DeviceMemory(Value):
    """One VkDeviceMemory, mapped for its whole life; several resources may be bound into it. (A
    plain value class: a run on a discrete GPU stages its buffers through this module, and a
    dataclass would load :mod:`dataclasses` into its start-up, issue 23.)"""

    __slots__ = ("array", "handle", "mapping", "size", "type_index")
    #: what repr and equality read: not the array, the mapping's bytes seen as NumPy's
    _fields = ("handle", "size", "mapping", "type_index")
    __hash__ = None  # type: ignore[assignment]  # mutable, as a dataclass with eq is

    def __init__(self, handle: Any, size: int, mapping: Any, array: np.ndarray, type_index: int = 0):
        self.handle = handle
        self.size = size
        self.mapping = mapping
        self.array = array
        #: the memory type it was allocated from
        self.type_index = type_index


def staging(device: Any, size: int, readback: bool = False) -> Any:
    """A host-visible buffer for a transfer, not kept: the caller frees it (``free_buffer``);
    ``readback``: the device copies into it and the CPU reads it (host-cached memory)."""
    memory = device.memory
    return device._make_buffer(size, "staging", memory.readback if readback else memory.upload)


def upload(device: Any, buf: Any, data: memoryview, offset: int) -> None:
    """Write ``data`` into ``buf`` at ``offset`` through a staging buffer and a copy, now."""
    if not data.nbytes:
        return
    temp = staging(device, data.nbytes)
    try:
        temp.view[:] = data.cast("B")
        copy_now(device, temp, 0, buf, offset, data.nbytes)
    finally:
        device.free_buffer(temp)


def read_back(device: Any, buf: Any) -> memoryview:
    """``buf``'s bytes, copied by the device into host-cached memory and then out of it."""
    out = bytearray(buf.size)
    if buf.size:
        temp = staging(device, buf.size, readback=True)
        try:
            copy_now(device, buf, 0, temp, 0, buf.size)
            out[:] = temp.view
        finally:
            device.free_buffer(temp)
    return memoryview(out)


def fill_zero(device: Any, buf: Any) -> None:
    """Clear ``buf`` on the device, now (its memory need not be mapped)."""
    vk = device.vk
    whole = buf.size - buf.size % 4  # a fill writes whole 4-byte words

    def record(cmd: Any) -> None:
        transfer_barrier(device, cmd, before=True)
        vk.vkCmdFillBuffer(cmd, buf.handle, 0, whole, 0)
        transfer_barrier(device, cmd, before=False)

    if whole:
        one_shot(device, record)
    upload(device, buf, memoryview(bytes(buf.size - whole)), whole)


def copy_now(device: Any, src: Any, src_offset: int, dst: Any, dst_offset: int,
             size: int) -> None:
    """Copy ``size`` bytes from ``src`` to ``dst`` on the device, now."""
    vk = device.vk

    def record(cmd: Any) -> None:
        transfer_barrier(device, cmd, before=True)
        vk.vkCmdCopyBuffer(cmd, src.handle, dst.handle, 1,
                           [vk.VkBufferCopy(srcOffset=src_offset, dstOffset=dst_offset, size=size)])
        transfer_barrier(device, cmd, before=False)

    one_shot(device, record)


def transfer_barrier(device: Any, cmd: Any, before: bool) -> None:
    """Order a transfer after the work submitted before it, and what follows (shaders, host
    reads) after the transfer."""
    vk = device.vk
    all_access = vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT
    transfer = vk.VK_ACCESS_TRANSFER_READ_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT
    src_access, dst_access = (all_access, transfer) if before else (vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                                                    all_access | vk.VK_ACCESS_HOST_READ_BIT)
    src_stage, dst_stage = (vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT)
    if not before:
        src_stage, dst_stage = vk.VK_PIPELINE_STAGE_TRANSFER_BIT, (vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT |
                                                                   vk.VK_PIPELINE_STAGE_HOST_BIT)
    vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1,
                            [vk.VkMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access)],
                            0, None, 0, None)


def one_shot(device: Any, record: Callable[[Any], None]) -> None:
    """Record and run a command buffer now, outside the current frame, and wait for it."""
    vk = device.vk
    with checked("vkAllocateCommandBuffers"):
        cmd = vk.vkAllocateCommandBuffers(device.handle, vk.VkCommandBufferAllocateInfo(
            commandPool=device.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
    fence = None
    try:
        begin = vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        vk.vkBeginCommandBuffer(cmd, begin)
        record(cmd)
        vk.vkEndCommandBuffer(cmd)
        with checked("vkCreateFence"):
            fence = vk.vkCreateFence(device.handle, vk.VkFenceCreateInfo(), None)
        with checked("vkQueueSubmit"):
            vk.vkQueueSubmit(device.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cmd])], fence)
        with checked("vkWaitForFences"):
            vk.vkWaitForFences(device.handle, 1, [fence], vk.VK_TRUE, 0xFFFFFFFFFFFFFFFF)
    finally:
        if fence is not None:
            nvk.release("vkDestroyFence", vk.vkDestroyFence, device.handle, fence, None)
        nvk.release("vkFreeCommandBuffers", vk.vkFreeCommandBuffers, device.handle, device.command_pool, 1, [cmd])


# --- shared memory ---------------------------------------------------------------------------
def host_memory(device: Any, size: int, type_bits: int, what: str) -> DeviceMemory:
    """Host-visible coherent memory of a type in ``type_bits``, mapped (device-local
    preferred), several resources may be bound into; freed when the device closes unless
    :func:`free_memory` frees it first."""
    import numpy as np

    vk = device.vk
    mp = vk.vkGetPhysicalDeviceMemoryProperties(device.physical)
    want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
    candidates = [i for i in range(mp.memoryTypeCount)
                  if type_bits & (1 << i) and mp.memoryTypes[i].propertyFlags & want == want]
    if not candidates:
        raise DeviceError(f"{what}: no host-visible coherent memory type fits (memoryTypeBits {type_bits:#x})")
    local = [i for i in candidates if mp.memoryTypes[i].propertyFlags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT]
    index = (local or candidates)[0]
    with checked(f"vkAllocateMemory({what}, {size} bytes)"):
        handle = vk.vkAllocateMemory(device.handle, vk.VkMemoryAllocateInfo(allocationSize=size,
                                                                            memoryTypeIndex=index), None)
    with checked("vkMapMemory"):
        mapping = vk.vkMapMemory(device.handle, handle, 0, size, 0)
    mem = DeviceMemory(handle, size, mapping, np.frombuffer(mapping, np.uint8, count=size), index)
    device._memories.append(mem)
    return mem


def free_memory(device: Any, mem: DeviceMemory) -> None:
    """Free memory of :func:`host_memory` now (whatever was bound into it is gone already)."""
    unmap_and_free(device, mem)
    device._memories.remove(mem)


def unmap_and_free(device: Any, mem: DeviceMemory) -> None:
    import numpy as np

    mem.array = np.empty(0, np.uint8)
    mem.mapping = None
    nvk.release("vkUnmapMemory", device.vk.vkUnmapMemory, device.handle, mem.handle)
    nvk.release("vkFreeMemory", device.vk.vkFreeMemory, device.handle, mem.handle, None)

