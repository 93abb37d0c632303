"""Tensors (VK_ARM_tensors) for the Vulkan backend: creation, memory (own or shared with other
resources), uploads and read-back, descriptors, tensor barriers.

Tensor memory is host-visible and stays mapped, like buffer memory, so a LINEAR tensor's `.npy`
data moves with one copy (file -> mapping). The elements of a LINEAR tensor sit at the offsets
its strides give (packed row-major when it has none, the image's row pitch when it aliases an
image), so a strided NumPy view over the mapping reads and writes them. An OPTIMAL tensor's
layout belongs to the driver: its data goes through a LINEAR staging tensor and
``vkCmdCopyTensorARM``.

Memory shared by several resources (a ``memory_group``, or a tensor's ``alias_target``) is a
:class:`DeviceMemory` the resources are bound into at their offsets.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from kernellab.backends.base import ImageSpec, UnsupportedError
from kernellab.backends.vkcore import checked
from kernellab.errors import DeviceError
from kernellab.formats import vkformat

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


@dataclass(frozen=True)
class TensorSpec:
    """A tensor: VkFormat name, dims, tiling and (LINEAR only) explicit byte strides."""

    uid: str
    format: str
    dims: tuple[int, ...]
    tiling: str | None = None          # "LINEAR" | "OPTIMAL"; None = LINEAR
    strides: tuple[int, ...] | None = None
    image_aliasing: bool = False
    #: uid of the image (in the same memory group) whose texels this tensor views; a LINEAR
    #: tensor takes the image's row pitch as its strides
    alias_image: str | None = None


@dataclass(frozen=True)
class BufferSpec:
    uid: str
    size: int


class AlignmentError(UnsupportedError):
    """A memory-group offset the device cannot bind a resource at."""

    def __init__(self, index: int, offset: int, alignment: int, uid: str):
        self.index, self.offset, self.alignment, self.uid = index, offset, alignment, uid
        super().__init__(f"offset {offset} is not a multiple of the {alignment}-byte alignment this device "
                         f"requires for \"{uid}\"")


@dataclass
class DeviceMemory:
    """One VkDeviceMemory, mapped for its whole life; several resources may be bound into it."""

    handle: Any
    size: int
    mapping: Any
    array: np.ndarray = field(repr=False)


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


class VulkanTensorSupport:
    """Mixed into VulkanBackend; relies on its ``vk``, ``ffi``, ``handle``, ``physical``,
    ``_begin()`` and ``_one_shot()``, and on ``tensors_enabled`` (the device was created with
    VK_ARM_tensors)."""

    vk: Any
    ffi: Any
    handle: Any
    physical: Any
    tensors_enabled: bool
    _begin: Callable[[], Any]
    _one_shot: Callable[[Callable[[Any], None]], None]

    # --- plumbing ------------------------------------------------------------------------------
    @property
    def arm(self) -> Any:
        dev = getattr(self, "_arm_device", None)
        if dev is None:
            if not getattr(self, "tensors_enabled", False):
                raise UnsupportedError("tensors and graphs need a device opened with VK_ARM_tensors "
                                       "(BackendOptions(ml=True))")
            from kernellab.backends import vulkan_arm as va

            dev = va.ArmDevice(self.handle)
            self._arm_device = dev
        return dev

    def _tensor_state(self) -> tuple[list[VulkanTensor], list[DeviceMemory]]:
        if not hasattr(self, "_tensors"):
            self._tensors: list[VulkanTensor] = []
            self._shared_memories: list[DeviceMemory] = []
        return self._tensors, self._shared_memories

    def host_memory(self, size: int, type_bits: int, what: str) -> DeviceMemory:
        """Host-visible coherent memory of a type in ``type_bits``, mapped (device-local preferred)."""
        vk = self.vk
        mp = vk.vkGetPhysicalDeviceMemoryProperties(self.physical)
        want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        candidates = [i for i in range(mp.memoryTypeCount)
                      if type_bits & (1 << i) and mp.memoryTypes[i].propertyFlags & want == want]
        if not candidates:
            raise DeviceError(f"{what}: no host-visible coherent memory type fits (memoryTypeBits {type_bits:#x})")
        local = [i for i in candidates if mp.memoryTypes[i].propertyFlags & vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT]
        index = (local or candidates)[0]
        with checked(f"vkAllocateMemory({what}, {size} bytes)"):
            handle = vk.vkAllocateMemory(self.handle, vk.VkMemoryAllocateInfo(allocationSize=size,
                                                                              memoryTypeIndex=index), None)
        with checked("vkMapMemory"):
            mapping = vk.vkMapMemory(self.handle, handle, 0, size, 0)
        mem = DeviceMemory(handle, size, mapping, np.frombuffer(mapping, np.uint8, count=size))
        self._tensor_state()[1].append(mem)
        return mem

    # --- tensors -------------------------------------------------------------------------------
    def create_tensor(self, spec: TensorSpec) -> VulkanTensor:
        """A tensor object without memory (bind it with :meth:`bind_tensor`)."""
        from kernellab.backends import vulkan_arm as va

        fmt = vkformat.lookup(spec.format)
        if fmt is None or fmt.channels != 1:
            raise UnsupportedError(f"tensor {spec.uid!r}: {spec.format} is not a tensor format")
        usage = (va.const("VK_TENSOR_USAGE_SHADER_BIT_ARM") | va.const("VK_TENSOR_USAGE_TRANSFER_SRC_BIT_ARM")
                 | va.const("VK_TENSOR_USAGE_TRANSFER_DST_BIT_ARM") | va.const("VK_TENSOR_USAGE_DATA_GRAPH_BIT_ARM"))
        if spec.image_aliasing:
            usage |= va.const("VK_TENSOR_USAGE_IMAGE_ALIASING_BIT_ARM")
        tiling = va.const("VK_TENSOR_TILING_OPTIMAL_ARM" if spec.tiling == "OPTIMAL" else "VK_TENSOR_TILING_LINEAR_ARM")
        handle, keep = self.arm.create_tensor(fmt.value, list(spec.dims) or [1], usage, tiling=tiling,
                                              strides=list(spec.strides) if spec.strides else None)
        size, align, bits = self.arm.tensor_memory_requirements(handle)
        tensor = VulkanTensor(spec, handle, fmt, size, align, bits, keep)
        self._tensor_state()[0].append(tensor)
        return tensor

    def bind_tensor(self, tensor: VulkanTensor, memory: DeviceMemory, offset: int = 0) -> None:
        if offset % tensor.alignment:
            raise UnsupportedError(f"tensor {tensor.spec.uid!r}: memory offset {offset} is not a multiple of "
                                   f"its required alignment {tensor.alignment}")
        self.arm.bind_tensor_memory(tensor.handle, memory.handle, offset)
        tensor.memory, tensor.offset = memory, offset
        tensor.view = self.arm.create_tensor_view(tensor.handle, tensor.fmt.value)

    def alloc_tensor(self, spec: TensorSpec) -> VulkanTensor:
        """A tensor in memory of its own, zero-filled (Arm's runner starts tensors at zero)."""
        tensor = self.create_tensor(spec)
        memory = self.host_memory(max(tensor.size, 1), tensor.memory_type_bits, f"tensor {spec.uid}")
        memory.array.fill(0)
        self.bind_tensor(tensor, memory, 0)
        tensor.owns_memory = True
        return tensor

    def write_tensor(self, tensor: VulkanTensor, data: np.ndarray) -> None:
        """Set the tensor's elements from an array of its dims (any dtype of the element's size)."""
        want = tuple(int(d) for d in tensor.spec.dims)
        values = np.ascontiguousarray(data).reshape(want)
        dtype = np.dtype(tensor.fmt.dtype)
        if values.dtype.itemsize != dtype.itemsize:
            raise ValueError(f"tensor {tensor.spec.uid!r}: {values.dtype} data for {tensor.spec.format}")
        values = values.view(dtype) if values.dtype != dtype else values
        if tensor.linear:
            tensor.elements()[...] = values
            return
        staging = self._staging_tensor(tensor)
        try:
            staging.elements()[...] = values
            self._one_shot(lambda cmd: self._copy_tensor(cmd, staging, tensor))
        finally:
            self._free_tensor(staging)

    def read_tensor(self, tensor: VulkanTensor) -> np.ndarray:
        """The elements as a contiguous array shaped by dims (a copy)."""
        if tensor.linear:
            return np.ascontiguousarray(tensor.elements()).copy()
        staging = self._staging_tensor(tensor)
        try:
            self._one_shot(lambda cmd: self._copy_tensor(cmd, tensor, staging))
            return np.ascontiguousarray(staging.elements()).copy()
        finally:
            self._free_tensor(staging)

    def tensor_view_array(self, tensor: VulkanTensor) -> np.ndarray | None:
        """The mapped elements of a packed LINEAR tensor as flat bytes (files read straight into it)."""
        if not tensor.linear or tensor.spec.strides or tensor.memory is None:
            return None
        n = int(np.prod(tensor.spec.dims, dtype=np.int64)) * tensor.fmt.texel_size
        return tensor.memory.array[tensor.offset:tensor.offset + n]

    def _staging_tensor(self, tensor: VulkanTensor) -> VulkanTensor:
        spec = TensorSpec(f"{tensor.spec.uid}/staging", tensor.spec.format, tensor.spec.dims, "LINEAR")
        return self.alloc_tensor(spec)

    def _copy_tensor(self, cmd: Any, src: VulkanTensor, dst: VulkanTensor) -> None:
        from kernellab.backends import vulkan_arm as va

        info = va.new("VkCopyTensorInfoARM", srcTensor=src.handle, dstTensor=dst.handle, regionCount=0)
        self.arm.vkCmdCopyTensorARM(va.to_arm(cmd, "VkCommandBuffer"), info)
        vk = self.vk
        vk.vkCmdPipelineBarrier(cmd, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0,
                                1, [vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_MEMORY_WRITE_BIT,
                                                       dstAccessMask=vk.VK_ACCESS_MEMORY_READ_BIT
                                                       | vk.VK_ACCESS_MEMORY_WRITE_BIT
                                                       | vk.VK_ACCESS_HOST_READ_BIT)], 0, None, 0, None)

    def _free_tensor(self, tensor: VulkanTensor) -> None:
        tensors, memories = self._tensor_state()
        if tensor.view is not None:
            self.arm.destroy_tensor_view(tensor.view)
        self.arm.destroy_tensor(tensor.handle)
        if tensor.owns_memory and tensor.memory is not None:
            self._free_memory(tensor.memory)
            memories.remove(tensor.memory)
        tensors.remove(tensor)

    def _free_memory(self, mem: DeviceMemory) -> None:
        mem.array = np.empty(0, np.uint8)
        mem.mapping = None
        self.vk.vkUnmapMemory(self.handle, mem.handle)
        self.vk.vkFreeMemory(self.handle, mem.handle, None)

    # --- memory shared by several resources -----------------------------------------------------
    def alloc_group(self, members: Sequence[tuple[BufferSpec | ImageSpec | TensorSpec, int]]) -> list[Any]:
        """Create resources bound into one allocation at their byte offsets (a ``memory_group``).

        Images are created first, so a tensor viewing one (``alias_image``) can take its row pitch;
        the allocation is host-visible, zeroed, and as large as the furthest member end. Raises
        :class:`AlignmentError` (with the member's index) when the device cannot bind at an offset.
        """
        images: dict[str, tuple[Any, Any]] = {}
        unbound: list[tuple[str, Any, int, int, int]] = [None] * len(members)  # type: ignore[list-item]
        order = sorted(range(len(members)), key=lambda i: not isinstance(members[i][0], ImageSpec))
        extra_offset = [0] * len(members)
        try:
            for i in order:
                spec, offset = members[i]
                if isinstance(spec, ImageSpec):
                    handle, req, info = self._create_image_unbound(spec)  # type: ignore[attr-defined]
                    images[spec.uid] = (handle, info)
                    unbound[i] = ("image", (handle, info), int(req.size), int(req.alignment), int(req.memoryTypeBits))
                elif isinstance(spec, TensorSpec):
                    if spec.alias_image is not None and spec.alias_image in images and spec.tiling != "OPTIMAL":
                        strides, base = self._alias_strides(spec, images[spec.alias_image])
                        spec = TensorSpec(spec.uid, spec.format, spec.dims, "LINEAR", strides, True, spec.alias_image)
                        extra_offset[i] = base
                    t = self.create_tensor(spec)
                    unbound[i] = ("tensor", t, t.size, t.alignment, t.memory_type_bits)
                else:
                    handle, req = self._create_buffer_handle(spec.size, spec.uid)  # type: ignore[attr-defined]
                    unbound[i] = ("buffer", handle, int(req.size), int(req.alignment), int(req.memoryTypeBits))
            bits = -1
            end = 1
            for i, (kind, obj, size, align, type_bits) in enumerate(unbound):
                offset = members[i][1] + extra_offset[i]
                if offset % align:
                    uid = members[i][0].uid
                    raise AlignmentError(i, members[i][1], align, uid)
                bits &= type_bits
                end = max(end, offset + size)
            if bits == 0:
                raise UnsupportedError("the resources of a memory group have no memory type in common: "
                                       + ", ".join(m[0].uid for m in members))
        except BaseException:
            for entry in unbound:
                if entry is None:
                    continue
                kind, obj = entry[0], entry[1]
                if kind == "tensor":
                    self._free_tensor(obj)
                elif kind == "image":
                    self.vk.vkDestroyImage(self.handle, obj[0], None)
                else:
                    self.vk.vkDestroyBuffer(self.handle, obj, None)
            raise
        memory = self.host_memory(end, bits, "memory group " + "+".join(m[0].uid for m in members))
        memory.array.fill(0)
        out: list[Any] = []
        for i, (kind, obj, size, _, _) in enumerate(unbound):
            spec, offset = members[i]
            if kind == "tensor":
                self.bind_tensor(obj, memory, offset + extra_offset[i])
                out.append(obj)
            elif kind == "image":
                out.append(self._finish_image(spec, obj[0], obj[1], memory, offset))  # type: ignore[attr-defined]
            else:
                out.append(self._bind_buffer(obj, memory, offset, spec))  # type: ignore[attr-defined]
        return out

    def _alias_strides(self, spec: TensorSpec, image: tuple[Any, Any]) -> tuple[tuple[int, ...], int]:
        """Strides of a LINEAR tensor viewing a LINEAR image, as Arm's runner sets them, and the
        byte offset of the image's texels in its memory."""
        vk = self.vk
        handle, info = image
        layout = vk.vkGetImageSubresourceLayout(self.handle, handle, vk.VkImageSubresource(
            aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, arrayLayer=0))
        fmt = vkformat.lookup(spec.format)
        assert fmt is not None
        element = fmt.texel_size
        channels = int(spec.dims[-1])
        strides = [int(layout.rowPitch), element * channels, element]
        if len(spec.dims) == 4:
            strides.insert(0, int(layout.depthPitch) or int(layout.size))
        return tuple(strides[-len(spec.dims):]), int(layout.offset)

    # --- commands ------------------------------------------------------------------------------
    def tensor_barrier(self, barriers: Sequence[tuple[VulkanTensor, Sequence[str], str, Sequence[str], str]]) -> None:
        """Record tensor memory barriers: (tensor, src stages, src access, dst stages, dst access),
        in the scenario's names (``COMPUTE``, ``ACCESS_COMPUTE_SHADER_WRITE``...)."""
        from kernellab.backends import vulkan_arm as va

        items = [(t.handle, stage_mask(ss), access_mask([sa]), stage_mask(ds), access_mask([da]))
                 for t, ss, sa, ds, da in barriers]
        if not items:
            return
        cmd = self._begin()
        pnext, keep = va.tensor_dependency_info(items)
        self.vk.vkCmdPipelineBarrier2(cmd, self.vk.VkDependencyInfo(pNext=pnext))
        del keep

    def tensor_descriptor_write(self, dset: Any, binding: int, tensor: VulkanTensor) -> tuple[Any, list[Any]]:
        """A ``VkWriteDescriptorSet`` of one tensor, and cdata to keep until the update is done."""
        from kernellab.backends import vulkan_arm as va

        pnext, keep = va.tensor_descriptor_write([tensor.view])
        write = self.vk.VkWriteDescriptorSet(pNext=pnext, dstSet=dset, dstBinding=binding, descriptorCount=1,
                                             descriptorType=va.const("VK_DESCRIPTOR_TYPE_TENSOR_ARM"))
        return write, keep

    def _destroy_tensors(self) -> None:
        if not hasattr(self, "_tensors"):
            return
        tensors, memories = self._tensor_state()
        for t in list(tensors):
            if t.view is not None:
                self.arm.destroy_tensor_view(t.view)
            self.arm.destroy_tensor(t.handle)
        tensors.clear()
        for mem in memories:
            self._free_memory(mem)
        memories.clear()
