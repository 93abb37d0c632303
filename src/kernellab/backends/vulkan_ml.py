"""Tensors (VK_ARM_tensors), memory groups and graph segments (VK_ARM_data_graph): two parts of
the Vulkan backend, :class:`VulkanTensors` and :class:`VulkanGraphs`, each given the device
(:class:`~kernellab.backends.vulkan_device.VulkanDevice`) it works through. The backend makes them
on first use, so a buffer-only run imports neither this module nor NumPy (nor the ARM
declarations in :mod:`kernellab.backends.vulkan_arm`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kernellab.backends.base import AlignmentError, Buffer, UnsupportedError
from kernellab.backends.feature_specs import BufferSpec, GraphSegmentSpec, Image, ImageSpec, TensorSpec
from kernellab.backends.vkcore import (
    CacheFeedback,
    create_compute_pipeline,
    release_data_graph_program,
    specialization_info,
    through_cache,
)
from kernellab.backends.vulkan_device import VulkanBuffer
from kernellab.backends.vulkan_graph import GraphSegmentProgram
from kernellab.backends.vulkan_tensor import VulkanTensor
from kernellab.backends.vulkan_transfers import DeviceMemory
from kernellab.native.vk import checked, release
from kernellab.records import dataclass

if TYPE_CHECKING:
    import numpy as np

    from kernellab.backends.base import GraphSegment, Tensor
    from kernellab.backends.vulkan_device import VulkanDevice
    from kernellab.backends.vulkan_image import VulkanImages


def _own(tensor: Tensor | Buffer) -> VulkanTensor:
    """The Vulkan tensor behind a contract's :class:`~kernellab.backends.base.Tensor` (a slot of
    kind ``tensor`` holds one)."""
    assert isinstance(tensor, VulkanTensor), f"not a Vulkan tensor: {tensor!r}"
    return tensor


@dataclass
class _Unbound:
    """A memory-group member created but not yet bound: its object and memory requirements."""

    kind: str  # "buffer" | "image" | "tensor"
    obj: Any
    size: int
    alignment: int
    type_bits: int
    #: where the member's bytes start past its offset (a tensor viewing an image's texels)
    extra_offset: int = 0


class VulkanTensors:
    """The tensor part of the Vulkan backend (:class:`~kernellab.backends.base.TensorFeature`, and
    :class:`~kernellab.backends.base.MemoryGroupFeature`: a group may hold tensors, images and
    buffers), working through the device it is given and, for grouped images, the image part."""

    def __init__(self, gpu: VulkanDevice, images: VulkanImages):
        self.gpu = gpu
        self.vk = gpu.vk
        self.images = images
        self._tensors: list[VulkanTensor] = []

    @property
    def arm(self) -> Any:
        return self.gpu.arm

    # --- tensors -------------------------------------------------------------------------------
    def create_tensor(self, spec: TensorSpec) -> VulkanTensor:
        """A tensor object without memory (bind it with :meth:`bind_tensor`)."""
        from kernellab.backends import vulkan_arm as va
        from kernellab.backends.vulkan_tensor import VulkanTensor
        from kernellab.vkregistry import vkformat

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
        self._tensors.append(tensor)
        return tensor

    def bind_tensor(self, tensor: VulkanTensor, memory: DeviceMemory, offset: int = 0) -> None:
        if offset % tensor.alignment:
            raise UnsupportedError(f"tensor {tensor.spec.uid!r}: memory offset {offset} is not a multiple of "
                                   f"its required alignment {tensor.alignment}")
        self.arm.bind_tensor_memory(tensor.handle, memory.handle, offset)
        tensor.memory, tensor.offset = memory, offset
        tensor.view = self.arm.create_tensor_view(tensor.handle, tensor.fmt.value)

    def alloc_tensor(self, spec: TensorSpec, zero: bool = True) -> VulkanTensor:
        """A tensor in memory of its own, zero-filled (Arm's runner starts tensors at zero) unless
        ``zero`` is False (the caller writes every element next)."""
        tensor = self.create_tensor(spec)
        memory = self.gpu.host_memory(max(tensor.size, 1), tensor.memory_type_bits, f"tensor {spec.uid}")
        if zero or not tensor.linear:
            memory.array.fill(0)
        self.bind_tensor(tensor, memory, 0)
        tensor.owns_memory = True
        return tensor

    def write_tensor(self, tensor: Tensor, data: np.ndarray) -> None:
        """Set the tensor's elements from an array of its dims (any dtype of the element's size)."""
        import numpy as np

        tensor = _own(tensor)
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
            self.gpu.one_shot(lambda cmd: self._copy_tensor(cmd, staging, tensor))
        finally:
            self._free_tensor(staging)

    def read_tensor(self, tensor: Tensor) -> np.ndarray:
        """The elements as a contiguous array shaped by dims (a copy)."""
        import numpy as np

        tensor = _own(tensor)
        if tensor.linear:
            return np.ascontiguousarray(tensor.elements()).copy()
        staging = self._staging_tensor(tensor)
        try:
            self.gpu.one_shot(lambda cmd: self._copy_tensor(cmd, tensor, staging))
            return np.ascontiguousarray(staging.elements()).copy()
        finally:
            self._free_tensor(staging)

    def tensor_view_array(self, tensor: Tensor) -> np.ndarray | None:
        """The mapped elements of a packed LINEAR tensor as flat bytes (files read straight into it)."""
        import numpy as np

        tensor = _own(tensor)
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
        self._destroy_tensor_handles(tensor)
        if tensor.owns_memory and tensor.memory is not None:
            self.gpu.free_memory(tensor.memory)
        self._tensors.remove(tensor)

    def _destroy_tensor_handles(self, tensor: VulkanTensor) -> None:
        uid = tensor.spec.uid
        if tensor.view is not None:
            release(f"vkDestroyTensorViewARM({uid})", self.arm.destroy_tensor_view, tensor.view)
        release(f"vkDestroyTensorARM({uid})", self.arm.destroy_tensor, tensor.handle)

    # --- memory shared by several resources -----------------------------------------------------
    def alloc_group(self, members: Sequence[tuple[BufferSpec | ImageSpec | TensorSpec, int]]
                    ) -> list[Buffer | Image | Tensor]:
        """Create resources bound into one allocation at their byte offsets (a ``memory_group``).

        Images are created first, so a tensor viewing one (``alias_image``) can take its row pitch;
        the allocation is host-visible, zeroed, and as large as the furthest member end. Raises
        :class:`AlignmentError` (with the member's index) when the device cannot bind at an offset.
        """
        unbound: list[_Unbound | None] = [None] * len(members)
        try:
            self._create_unbound(members, unbound)
            bits = -1
            end = 1
            for i, u in enumerate(unbound):
                assert u is not None
                offset = members[i][1] + u.extra_offset
                if offset % u.alignment:
                    raise AlignmentError(i, members[i][1], u.alignment, members[i][0].uid)
                bits &= u.type_bits
                end = max(end, offset + u.size)
            if bits == 0:
                raise UnsupportedError("the resources of a memory group have no memory type in common: "
                                       + ", ".join(m[0].uid for m in members))
        except BaseException:
            for u in unbound:
                if u is not None:
                    self._destroy_unbound(u)
            raise
        memory = self.gpu.host_memory(end, bits, "memory group " + "+".join(m[0].uid for m in members))
        memory.array.fill(0)
        out: list[Buffer | Image | Tensor] = []
        for (spec, offset), u in zip(members, unbound):
            assert u is not None
            if u.kind == "tensor":
                self.bind_tensor(u.obj, memory, offset + u.extra_offset)
                out.append(u.obj)
            elif u.kind == "image":
                assert isinstance(spec, ImageSpec)
                out.append(self.images.finish_image(spec, u.obj[0], u.obj[1], memory, offset))
            else:
                assert isinstance(spec, BufferSpec)
                out.append(self.gpu.bind_buffer(u.obj, memory, offset, spec))
        return out

    def _create_unbound(self, members: Sequence[tuple[BufferSpec | ImageSpec | TensorSpec, int]],
                        unbound: list[_Unbound | None]) -> None:
        """Fill ``unbound`` (by member index) with the members' objects, images first; what is
        created is in the list even when a later member fails, so the caller can destroy it."""
        images: dict[str, tuple[Any, Any]] = {}
        for i in sorted(range(len(members)), key=lambda i: not isinstance(members[i][0], ImageSpec)):
            spec = members[i][0]
            if isinstance(spec, ImageSpec):
                handle, req, info = self.images.create_image_unbound(spec)
                images[spec.uid] = (handle, info)
                unbound[i] = _Unbound("image", (handle, info), int(req.size), int(req.alignment),
                                      int(req.memoryTypeBits))
            elif isinstance(spec, TensorSpec):
                extra = 0
                if spec.alias_image is not None and spec.alias_image in images and spec.tiling != "OPTIMAL":
                    strides, extra = self._alias_strides(spec, images[spec.alias_image])
                    spec = TensorSpec(spec.uid, spec.format, spec.dims, "LINEAR", strides, True, spec.alias_image)
                t = self.create_tensor(spec)
                unbound[i] = _Unbound("tensor", t, t.size, t.alignment, t.memory_type_bits, extra)
            else:
                handle, req = self.gpu.create_buffer_handle(spec.size, spec.uid)
                unbound[i] = _Unbound("buffer", handle, int(req.size), int(req.alignment), int(req.memoryTypeBits))

    def _destroy_unbound(self, u: _Unbound) -> None:
        if u.kind == "tensor":
            self._free_tensor(u.obj)
        elif u.kind == "image":
            release("vkDestroyImage", self.vk.vkDestroyImage, self.gpu.handle, u.obj[0], None)
        else:
            release("vkDestroyBuffer", self.vk.vkDestroyBuffer, self.gpu.handle, u.obj, None)

    def _alias_strides(self, spec: TensorSpec, image: tuple[Any, Any]) -> tuple[tuple[int, ...], int]:
        """Strides of a LINEAR tensor viewing a LINEAR image, as Arm's runner sets them, and the
        byte offset of the image's texels in its memory."""
        from kernellab.vkregistry import vkformat

        vk = self.vk
        handle, _ = image
        layout = vk.vkGetImageSubresourceLayout(self.gpu.handle, handle, vk.VkImageSubresource(
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
    def tensor_barrier(self, barriers: Sequence[tuple[Tensor, Sequence[str], str, Sequence[str], str]]) -> None:
        """Record tensor memory barriers: (tensor, src stages, src access, dst stages, dst access),
        in the scenario's names (``COMPUTE``, ``ACCESS_COMPUTE_SHADER_WRITE``...)."""
        from kernellab.backends import vulkan_arm as va
        from kernellab.backends.vulkan_tensor import access_mask, stage_mask

        items = [(_own(t).handle, stage_mask(ss), access_mask([sa]), stage_mask(ds), access_mask([da]))
                 for t, ss, sa, ds, da in barriers]
        if not items:
            return
        cmd = self.gpu.begin()
        pnext, keep = va.tensor_dependency_info(items)
        self.vk.vkCmdPipelineBarrier2(cmd, self.vk.VkDependencyInfo(pNext=pnext))
        del keep

    def close(self) -> None:
        """Destroy every tensor (the device frees the memory they were bound into)."""
        for t in self._tensors:
            self._destroy_tensor_handles(t)
        self._tensors.clear()


class VulkanGraphs:
    """The graph part of the Vulkan backend (:class:`~kernellab.backends.base.GraphFeature`)."""

    def __init__(self, gpu: VulkanDevice):
        self.gpu = gpu
        self.vk = gpu.vk
        self._programs: list[GraphSegmentProgram] = []

    @property
    def arm(self) -> Any:
        return self.gpu.arm

    def create_graph_segment(self, spec: GraphSegmentSpec, resources: Mapping[tuple[int, int], Tensor | Buffer]
                             ) -> GraphSegmentProgram:
        """A segment's pipeline with its descriptor sets written: ``resources`` maps each slot's
        (set, binding) to a :class:`VulkanTensor` (kind ``tensor``) or a buffer (``storage-buffer``)."""
        from kernellab.backends import vulkan_arm as va
        from kernellab.backends.vulkan_graph import GraphSegmentProgram

        vk = self.vk
        types = {"tensor": va.const("VK_DESCRIPTOR_TYPE_TENSOR_ARM"),
                 "storage-buffer": vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER}
        for s, b, kind in spec.slots:
            if kind not in types or (spec.kind == "graph" and kind != "tensor"):
                raise UnsupportedError(f"{spec.label}: set {s} binding {b} is a {kind}; a "
                                       f"{'data-graph' if spec.kind == 'graph' else 'compute'} segment binds "
                                       f"{'tensors' if spec.kind == 'graph' else 'tensors and storage buffers'}")
        by_set: dict[int, list[tuple[int, str]]] = {}
        for s, b, kind in spec.slots:
            by_set.setdefault(s, []).append((b, kind))
        n_sets = max(by_set) + 1 if by_set else 0
        set_layouts = []
        for s in range(n_sets):
            entries = [vk.VkDescriptorSetLayoutBinding(binding=b, descriptorType=types[kind], descriptorCount=1,
                                                       stageFlags=vk.VK_SHADER_STAGE_ALL)
                       for b, kind in sorted(by_set.get(s, []))]
            with checked(f"vkCreateDescriptorSetLayout({spec.label})"):
                set_layouts.append(vk.vkCreateDescriptorSetLayout(self.gpu.handle, vk.VkDescriptorSetLayoutCreateInfo(
                    bindingCount=len(entries), pBindings=entries or None), None))
        ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                         size=spec.push_constants_size)] if spec.push_constants_size else []
        with checked(f"vkCreatePipelineLayout({spec.label})"):
            layout = vk.vkCreatePipelineLayout(self.gpu.handle, vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=n_sets, pSetLayouts=set_layouts or None, pushConstantRangeCount=len(ranges),
                pPushConstantRanges=ranges or None), None)
        with checked(f"vkCreateShaderModule({spec.label})"):
            module = vk.vkCreateShaderModule(self.gpu.handle, vk.VkShaderModuleCreateInfo(
                codeSize=len(spec.code), pCode=spec.code), None)
        counts: dict[str, int] = {}
        for _, _, kind in spec.slots:
            counts[kind] = counts.get(kind, 0) + 1
        pool_sizes = [vk.VkDescriptorPoolSize(type=types[kind], descriptorCount=n) for kind, n in counts.items()] \
            or [vk.VkDescriptorPoolSize(type=types["tensor"], descriptorCount=1)]
        with checked("vkCreateDescriptorPool"):
            pool = vk.vkCreateDescriptorPool(self.gpu.handle, vk.VkDescriptorPoolCreateInfo(
                maxSets=max(n_sets, 1), poolSizeCount=len(pool_sizes), pPoolSizes=pool_sizes), None)
        program = GraphSegmentProgram(spec, None, layout, set_layouts, [], pool, module)
        self._programs.append(program)
        if spec.kind == "graph":
            graph_tensors = []
            for s, b, _ in spec.slots:
                t = _own(resources[(s, b)])  # a data-graph segment binds tensors only
                graph_tensors.append(va.GraphTensor(s, b, t.fmt.value, list(t.spec.dims) or [1],
                                                    tiling=va.const("VK_TENSOR_TILING_OPTIMAL_ARM" if not t.linear
                                                                    else "VK_TENSOR_TILING_LINEAR_ARM"),
                                                    strides=list(t.spec.strides) if t.spec.strides else None))
            constants = [va.GraphConstant(c.id, c.format_value, list(c.shape), c.data, c.sparsity_dimension)
                         for c in spec.constants]
            def create(flags: int, feedback: Any) -> Any:
                pipe, keep = self.arm.create_data_graph_pipeline(layout, module, spec.entry, graph_tensors, constants,
                                                                 cache=self.gpu.pipeline_cache, flags=flags or 0,
                                                                 feedback=None if feedback is None
                                                                 else self.gpu.ffi.addressof(feedback))
                program.keep.extend(keep)
                return pipe

            # a data-graph pipeline has no shader stages to report on, only the pipeline
            fail_on_miss = self.gpu.options.fail_on_pipeline_cache_miss
            pipe = through_cache(create, CacheFeedback(vk, stages=0) if fail_on_miss else None,
                                 spec.label.split(":", 2)[-1], f"vkCreateDataGraphPipelinesARM({spec.label})")
            program.pipeline = va.to_vulkan(pipe, "VkPipeline")
            memories: list[Any] = []

            def allocate(size: int, bits: int) -> Any:
                mem = self.gpu.host_memory(size, bits, f"graph session {spec.label}")
                memories.append(mem)
                program.session_bytes += size
                return mem.handle

            program.session, _ = self.arm.create_session(pipe, allocate)
            program.session_memories = memories
        else:
            spec_info, keep = specialization_info(spec.specialization)
            # bound to a name first: a nested temporary would free its pName before the call
            stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                       pName=spec.entry, pSpecializationInfo=spec_info)
            program.pipeline = create_compute_pipeline(
                vk, self.gpu.handle, self.gpu.pipeline_cache, stage, layout, spec.label.split(":", 2)[-1],
                f"vkCreateComputePipelines({spec.label}, entry {spec.entry!r})",
                self.gpu.options.fail_on_pipeline_cache_miss)
        if n_sets:
            with checked("vkAllocateDescriptorSets"):
                program.sets = list(vk.vkAllocateDescriptorSets(self.gpu.handle, vk.VkDescriptorSetAllocateInfo(
                    descriptorPool=pool, descriptorSetCount=n_sets, pSetLayouts=set_layouts)))
            writes, keep_w = [], []
            for s, b, kind in spec.slots:
                res = resources[(s, b)]
                if kind == "tensor":
                    w, k = self.gpu.tensor_descriptor_write(program.sets[s], b, _own(res).view)
                    keep_w += k
                else:
                    assert isinstance(res, VulkanBuffer)
                    info = vk.VkDescriptorBufferInfo(buffer=res.handle, offset=0, range=res.size)
                    w = vk.VkWriteDescriptorSet(dstSet=program.sets[s], dstBinding=b, descriptorCount=1,
                                                descriptorType=types[kind], pBufferInfo=[info])
                writes.append(w)
            vk.vkUpdateDescriptorSets(self.gpu.handle, len(writes), writes, 0, None)
            del keep_w
        return program

    def dispatch_graph_segment(self, program: GraphSegment, push_data: bytes = b"", label: str = "") -> None:
        """Record one segment into the current frame, then a barrier so the next segment sees its writes."""
        from kernellab.backends import vulkan_arm as va

        vk = self.vk
        cmd = self.gpu.begin()
        assert isinstance(program, GraphSegmentProgram)
        if self.gpu.timing:
            self.gpu.timestamp(cmd)
        graph = program.spec.kind == "graph"
        bind_point = va.const("VK_PIPELINE_BIND_POINT_DATA_GRAPH_ARM") if graph else vk.VK_PIPELINE_BIND_POINT_COMPUTE
        self.gpu.bind_pipeline(cmd, bind_point, program.pipeline, remember=False)
        if program.sets:
            vk.vkCmdBindDescriptorSets(cmd, bind_point, program.layout, 0, len(program.sets), program.sets, 0, None)
        if graph:
            self.arm.cmd_dispatch_data_graph(cmd, program.session)
        else:
            if push_data:
                if len(push_data) > program.spec.push_constants_size:
                    raise UnsupportedError(f"{program.spec.label}: {len(push_data)} bytes of push constants, the "
                                           f"segment declares {program.spec.push_constants_size}")
                pdata = self.gpu.ffi.new("char[]", push_data)
                vk.vkCmdPushConstants(cmd, program.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push_data), pdata)
            vk.vkCmdDispatch(cmd, *program.spec.dispatch_shape)
        self.memory_barrier2(cmd)
        if self.gpu.timing:
            self.gpu.end_timing(cmd, label or program.spec.label)

    def memory_barrier2(self, cmd: Any) -> None:
        """A full memory dependency between whatever came before and after (graph and compute)."""
        vk = self.vk
        barrier = vk.VkMemoryBarrier2(srcStageMask=vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                      srcAccessMask=vk.VK_ACCESS_2_MEMORY_WRITE_BIT,
                                      dstStageMask=vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                      dstAccessMask=vk.VK_ACCESS_2_MEMORY_READ_BIT | vk.VK_ACCESS_2_MEMORY_WRITE_BIT)
        vk.vkCmdPipelineBarrier2(cmd, vk.VkDependencyInfo(memoryBarrierCount=1, pMemoryBarriers=[barrier]))

    def close(self) -> None:
        """Destroy every segment's pipeline, session, layouts and pool."""
        for p in self._programs:
            release_data_graph_program(self.vk, self.gpu.handle, self.arm, p)
