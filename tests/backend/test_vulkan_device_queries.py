"""Opening a Vulkan device asks each property query once (issue 23: device creation as light as
the work allows): the properties once, one vkGetPhysicalDeviceProperties2 for the 1.1+ property
structures (maintenance 3, subgroup, subgroup size control), the memory properties once; and the
limits read that way are the device's."""
from __future__ import annotations

from collections import Counter

import pytest

from kernellab.backends.base import BackendOptions
from kernellab.backends.vulkan import VulkanBackend
from kernellab.native import vkbind

QUERIES = ("vkGetPhysicalDeviceProperties", "vkGetPhysicalDeviceProperties2", "vkGetPhysicalDeviceMemoryProperties")


def test_opening_a_device_asks_each_property_query_once(monkeypatch: pytest.MonkeyPatch) -> None:
    device = VulkanBackend.devices()[0]
    calls: Counter[str] = Counter()
    for name in QUERIES:
        real = getattr(vkbind, name)

        def counted(*args: object, _real=real, _name=name) -> object:
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(vkbind, name, counted)
    backend = VulkanBackend(device, BackendOptions())
    try:
        assert calls == Counter(dict.fromkeys(QUERIES, 1))
        limits = backend.limits
        assert limits.max_per_set_descriptors and limits.max_allocation_size and limits.memory_heap_size
        assert limits.subgroup_size and limits.subgroup_size_range  # lavapipe is a Vulkan 1.3 device
        low, high = limits.subgroup_size_range
        assert low <= limits.subgroup_size <= high
    finally:
        backend.close()
