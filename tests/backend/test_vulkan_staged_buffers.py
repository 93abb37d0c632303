"""Buffers in device-only memory (a discrete GPU's layout, forced on lavapipe): data goes in and
comes out through staging buffers and copies, byte-exact."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import raw, vector_add, write
from kernellab.backends.vulkan_device import MemoryTypes, VulkanDevice
from kernellab.cli import main

DL, HV, HC, CACHED = 0x1, 0x2, 0x4, 0x8


class _DiscreteLayout:
    """The device's calls, with one of its host-visible coherent memory types posing as two:
    device-only (0) and host-visible cached (1). Which real type is read from the device's memory
    properties (lavapipe has one type, NVIDIA's first types are device-only and cannot be mapped);
    a device copies between any of its memory."""

    def __init__(self, vk: Any, physical: Any, copies: list[str]) -> None:
        self._vk = vk
        self._copies = copies
        props = vk.vkGetPhysicalDeviceMemoryProperties(physical)
        want = HV | HC
        self._mappable = [i for i in range(props.memoryTypeCount)
                          if props.memoryTypes[i].propertyFlags & want == want]
        self._real: int | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._vk, name)

    def vkGetBufferMemoryRequirements(self, device: Any, buffer: Any) -> Any:
        req = self._vk.vkGetBufferMemoryRequirements(device, buffer)
        fits = [i for i in self._mappable if req.memoryTypeBits & (1 << i)]
        assert fits, f"no host-visible coherent memory type takes a buffer (memoryTypeBits {req.memoryTypeBits:#x})"
        self._real = fits[0]
        req.memoryTypeBits = 0x3
        return req

    def vkAllocateMemory(self, device: Any, info: Any, allocator: Any) -> Any:
        assert self._real is not None, "memory allocated before any buffer's requirements were asked"
        info.memoryTypeIndex = self._real
        return self._vk.vkAllocateMemory(device, info, allocator)

    def vkMapMemory(self, device: Any, memory: Any, *args: Any) -> Any:
        self._copies.append("map")
        return self._vk.vkMapMemory(device, memory, *args)

    def vkCmdCopyBuffer(self, *args: Any) -> None:
        self._copies.append("copy")
        self._vk.vkCmdCopyBuffer(*args)

    def vkCmdFillBuffer(self, *args: Any) -> None:
        self._copies.append("fill")
        self._vk.vkCmdFillBuffer(*args)


@pytest.fixture
def discrete(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real_init = VulkanDevice.__init__

    def init(self: VulkanDevice, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        self.vk = _DiscreteLayout(self.vk, self.physical, calls)

    monkeypatch.setattr(VulkanDevice, "_pick_memory_types",
                        lambda self: MemoryTypes((DL, HV | HC | CACHED), device=0, upload=1, readback=1))
    monkeypatch.setattr(VulkanDevice, "__init__", init)
    return calls


def test_device_only_buffers_move_through_staging_copies(tmp_path: Path, discrete: list[str]) -> None:
    n = 5000
    path, doc = vector_add(tmp_path, n)
    write(path, doc)
    assert main(["run", str(path)]) == 0
    got = raw(tmp_path / "c.npy").view(np.float32)
    assert np.array_equal(got, np.arange(n, dtype=np.float32) + 2.0)
    # a and b go in, c comes out by copies; only staging buffers are mapped
    assert discrete.count("copy") >= 3
    assert discrete.count("map") == discrete.count("copy")


def test_a_staged_buffer_is_written_at_an_offset_cleared_and_read_back(discrete: list[str]) -> None:
    from kernellab.backends.vulkan import VulkanBackend

    backend = VulkanBackend(VulkanBackend.devices()[0])
    try:
        assert not backend.capabilities.mapped_buffers
        buf = backend.alloc_buffer(4099, "x")  # not a multiple of 4: the fill covers the whole buffer
        backend.write_buffer(buf, np.full(4099, 7, np.uint8))
        backend.clear_buffer(buf)
        backend.write_buffer(buf, np.arange(10, dtype=np.uint8), offset=4080)
        want = np.zeros(4099, np.uint8)
        want[4080:4090] = np.arange(10)
        assert bytes(backend.read_buffer_bytes(buf)) == want.tobytes()
        assert np.array_equal(backend.read_buffer(buf), want)
        assert "fill" in discrete
        assert not backend.gpu.full_binding  # copies and fills are in the compute path's small binding
    finally:
        backend.close()
