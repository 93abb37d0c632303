"""Which memory type each buffer role gets (kernellab.backends.vulkan_device.choose_memory_types)."""
from __future__ import annotations

import pytest

from kernellab.backends.vulkan_device import choose_memory_types
from kernellab.errors import DeviceError

DL, HV, HC, CACHED = 0x1, 0x2, 0x4, 0x8


def test_a_discrete_gpu_reads_results_back_through_host_cached_memory() -> None:
    # an NVIDIA discrete GPU with ReBAR: device-only, system memory (coherent, coherent+cached), BAR
    types = choose_memory_types([0, DL, HV | HC, HV | HC | CACHED, DL | HV | HC])
    assert types.device == 4  # mapped writes are fine into write-combined BAR memory
    assert types.mapped(types.device) and not types.host_cached(types.device)
    assert types.readback == 3
    assert types.upload == 2  # system memory, not the small BAR heap
    assert not types.zero_copy


def test_without_rebar_buffers_live_in_device_only_memory() -> None:
    types = choose_memory_types([DL, HV | HC, HV | HC | CACHED])
    assert types.device == 0 and not types.mapped(0)
    assert (types.upload, types.readback) == (1, 2)


def test_a_cpu_or_integrated_device_keeps_the_zero_copy_mapping() -> None:
    lavapipe = choose_memory_types([DL | HV | HC | CACHED])
    assert lavapipe.zero_copy and lavapipe.device == lavapipe.readback == lavapipe.upload == 0
    uma = choose_memory_types([DL, DL | HV | HC, DL | HV | HC | CACHED])
    assert uma.zero_copy and uma.device == 2


def test_readback_falls_back_to_coherent_memory_without_a_cached_type() -> None:
    types = choose_memory_types([DL, HV | HC])
    assert types.readback == 1 and not types.host_cached(1)


def test_protected_and_lazily_allocated_types_are_never_chosen() -> None:
    types = choose_memory_types([DL | 0x20, DL | 0x10, DL, HV | HC])
    assert types.device == 2


def test_a_device_without_host_visible_memory_is_refused() -> None:
    with pytest.raises(DeviceError, match="host-visible"):
        choose_memory_types([DL])


def test_the_enum_values_a_run_of_buffers_passes_are_the_registrys() -> None:
    """vulkan_device spells out the flags every run passes (a binding's first lookup of a name
    costs start-up); each must be the value the registry gives the name."""
    from kernellab.backends import vulkan_device as vd
    from kernellab.native import vkbind

    names = [n for n in vars(vd) if n.startswith("VK_") and isinstance(getattr(vd, n), int)]
    assert len(names) >= 17
    for name in names:
        assert getattr(vd, name) == vkbind.constant(name), name
    usage = ("VK_BUFFER_USAGE_TRANSFER_SRC_BIT", "VK_BUFFER_USAGE_TRANSFER_DST_BIT",
             "VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT", "VK_BUFFER_USAGE_STORAGE_BUFFER_BIT")
    expected = 0
    for name in usage:
        expected |= vkbind.constant(name) or 0
    assert vd.BUFFER_USAGE == expected
