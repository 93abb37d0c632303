"""Tensors (VK_ARM_tensors) for the Vulkan backend: creation, memory (own or shared with other
resources), uploads and read-back, descriptors, tensor barriers.

Tensor memory is host-visible and stays mapped, like buffer memory, so a LINEAR tensor's `.npy`
data moves with one copy (file -> mapping). The elements of a LINEAR tensor sit at the offsets
its strides give (packed row-major when it has none, the image's row pitch when it aliases an
image), so a strided NumPy view over the mapping reads and writes them. An OPTIMAL tensor's
layout belongs to the driver: its data goes through a LINEAR staging tensor and
``vkCmdCopyTensorARM``.

Memory shared by several resources (a ``memory_group``, or a VGF's intermediates of one alias
group) is a :class:`DeviceMemory` the resources are bound into at their offsets.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from kernellab.backends.base import UnsupportedError
from kernellab.backends.feature_specs import TensorSpec
from kernellab.backends.vulkan_transfers import DeviceMemory
from kernellab.records import dataclass
from kernellab.vkregistry import vkformat

#: scenario access names -> VK_ACCESS_2_* (values; the data-graph bits come from the registry)
ACCESS_BITS = {
    "ACCESS_MEMORY_WRITE": 0x10000, "ACCESS_MEMORY_READ": 0x8000,
    "ACCESS_COMPUTE_SHADER_WRITE": 0x40, "ACCESS_COMPUTE_SHADER_READ": 0x20,
    "ACCESS_GRAPH_WRITE": "VK_ACCESS_2_DATA_GRAPH_WRITE_BIT_ARM",
    "ACCESS_GRAPH_READ": "VK_ACCESS_2_DATA_GRAPH_READ_BIT_ARM",
}
#: scenario stage names -> VK_PIPELINE_STAGE_2_*
STAGE_BITS = {"COMPUTE": 0x800, "ALL": 0x10000, "GRAPHICS": 0x8000,
              "GRAPH": "VK_PIPELINE_STAGE_2_DATA_GRAPH_BIT_ARM"}


def access_mask(names: Sequence[str]) -> int:
    return _mask(ACCESS_BITS, names)


def stage_mask(names: Sequence[str]) -> int:
    return _mask(STAGE_BITS, names)


def _mask(table: dict[str, Any], names: Sequence[str]) -> int:
    from kernellab.backends import vulkan_arm as va

    out = 0
    for n in names:
        v = table[n]
        out |= va.const(v) if isinstance(v, str) else v
    return out


@dataclass
class VulkanTensor:
    spec: TensorSpec
    handle: Any                       # VkTensorARM (vulkan_arm's FFI)
    fmt: vkformat.VkFormatInfo
    size: int                         # bytes the tensor's memory requirements ask for
    alignment: int
    memory_type_bits: int
    keep: list[Any]
    memory: DeviceMemory | None = None
    offset: int = 0
    owns_memory: bool = False
    view: Any = None

    @property
    def linear(self) -> bool:
        return self.spec.tiling != "OPTIMAL"

    def byte_strides(self) -> tuple[int, ...]:
        if self.spec.strides:
            return self.spec.strides
        item = self.fmt.texel_size
        out = []
        for d in reversed(self.spec.dims):
            out.append(item)
            item *= int(d)
        return tuple(reversed(out))

    def elements(self) -> np.ndarray:
        """A writable NumPy view of the elements in the mapped memory (LINEAR tensors only)."""
        assert self.memory is not None and self.linear
        return _strided(self.memory.array, self.offset, np.dtype(self.fmt.dtype),
                        tuple(int(d) for d in self.spec.dims), self.byte_strides())


def _strided(mem: np.ndarray, offset: int, dtype: np.dtype, dims: tuple[int, ...],
             strides: tuple[int, ...]) -> np.ndarray:
    extent = (sum((d - 1) * s for d, s in zip(dims, strides)) + dtype.itemsize) if dims else dtype.itemsize
    if offset % dtype.itemsize == 0 and all(s % dtype.itemsize == 0 for s in strides):
        typed = mem[offset:offset + extent].view(dtype)
        return np.lib.stride_tricks.as_strided(typed, shape=dims, strides=strides, writeable=True)
    raise UnsupportedError(f"tensor strides {list(strides)} at offset {offset} are not multiples of its "
                           f"{dtype.itemsize}-byte elements")
