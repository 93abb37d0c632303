"""Graph segments (VK_ARM_data_graph) for the Vulkan backend.

A VGF model sequence is a list of segments; each becomes a :class:`GraphSegmentProgram`: a
data-graph pipeline (SPIR-V graph module, its constants, a session whose memory the driver
asks for) or a compute pipeline (a VGF compute module or the scenario's substitute for a
placeholder), with the descriptor sets the VGF lays out, written once with the tensors bound to
them. Descriptor set layouts use ``VK_SHADER_STAGE_ALL``, as Arm's runner does.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from kernellab.backends.base import SpecConstant, UnsupportedError
from kernellab.backends.vkcore import checked
from kernellab.backends.vulkan_tensor import VulkanTensor


@dataclass(frozen=True)
class GraphConstantSpec:
    id: int
    format_value: int
    shape: tuple[int, ...]
    data: bytes
    sparsity_dimension: int | None = None


@dataclass(frozen=True)
class GraphSegmentSpec:
    """One segment of a VGF sequence, ready to become a pipeline."""

    label: str
    kind: str                                  # "graph" | "compute"
    code: bytes                                # SPIR-V
    entry: str
    #: (set, binding) of every tensor the segment binds, sets numbered from 0
    slots: tuple[tuple[int, int], ...]
    constants: tuple[GraphConstantSpec, ...] = ()
    dispatch_shape: tuple[int, int, int] = (1, 1, 1)
    push_constants_size: int = 0
    specialization: tuple[SpecConstant, ...] = ()


@dataclass
class GraphSegmentProgram:
    spec: GraphSegmentSpec
    pipeline: Any                    # vulkan-package VkPipeline
    layout: Any
    set_layouts: list[Any]
    sets: list[Any]
    pool: Any
    module: Any
    session: Any = None
    session_memories: list[Any] = field(default_factory=list)
    keep: list[Any] = field(default_factory=list)


class VulkanGraphSupport:
    """Mixed into VulkanBackend after :class:`VulkanTensorSupport`."""

    vk: Any
    ffi: Any
    handle: Any
    pipeline_cache: Any
    arm: Any
    _begin: Callable[[], Any]
    _timing: bool
    _timestamp: Callable[[Any], None]
    _labels: list[str]

    def create_graph_segment(self, spec: GraphSegmentSpec, tensors: dict[tuple[int, int], VulkanTensor]
                             ) -> GraphSegmentProgram:
        from kernellab.backends import vulkan_arm as va

        vk = self.vk
        tensor_type = va.const("VK_DESCRIPTOR_TYPE_TENSOR_ARM")
        by_set: dict[int, list[int]] = {}
        for s, b in spec.slots:
            by_set.setdefault(s, []).append(b)
        n_sets = max(by_set) + 1 if by_set else 0
        programs: list[GraphSegmentProgram] = self.__dict__.setdefault("_graph_programs", [])
        set_layouts = []
        for s in range(n_sets):
            entries = [vk.VkDescriptorSetLayoutBinding(binding=b, descriptorType=tensor_type, descriptorCount=1,
                                                       stageFlags=vk.VK_SHADER_STAGE_ALL)
                       for b in sorted(by_set.get(s, []))]
            with checked(f"vkCreateDescriptorSetLayout({spec.label})"):
                set_layouts.append(vk.vkCreateDescriptorSetLayout(self.handle, vk.VkDescriptorSetLayoutCreateInfo(
                    bindingCount=len(entries), pBindings=entries or None), None))
        ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                         size=spec.push_constants_size)] if spec.push_constants_size else []
        with checked(f"vkCreatePipelineLayout({spec.label})"):
            layout = vk.vkCreatePipelineLayout(self.handle, vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=n_sets, pSetLayouts=set_layouts or None, pushConstantRangeCount=len(ranges),
                pPushConstantRanges=ranges or None), None)
        with checked(f"vkCreateShaderModule({spec.label})"):
            module = vk.vkCreateShaderModule(self.handle, vk.VkShaderModuleCreateInfo(
                codeSize=len(spec.code), pCode=spec.code), None)
        pool_size = vk.VkDescriptorPoolSize(type=tensor_type, descriptorCount=max(len(spec.slots), 1))
        with checked("vkCreateDescriptorPool"):
            pool = vk.vkCreateDescriptorPool(self.handle, vk.VkDescriptorPoolCreateInfo(
                maxSets=max(n_sets, 1), poolSizeCount=1, pPoolSizes=[pool_size]), None)
        program = GraphSegmentProgram(spec, None, layout, set_layouts, [], pool, module)
        programs.append(program)
        if spec.kind == "graph":
            resources = []
            for s, b in spec.slots:
                t = tensors[(s, b)]
                resources.append(va.GraphTensor(s, b, t.fmt.value, list(t.spec.dims) or [1],
                                                tiling=va.const("VK_TENSOR_TILING_OPTIMAL_ARM" if not t.linear
                                                                else "VK_TENSOR_TILING_LINEAR_ARM"),
                                                strides=list(t.spec.strides) if t.spec.strides else None))
            constants = [va.GraphConstant(c.id, c.format_value, list(c.shape), c.data, c.sparsity_dimension)
                         for c in spec.constants]
            pipe, keep = self.arm.create_data_graph_pipeline(layout, module, spec.entry, resources, constants)
            program.keep += keep
            program.pipeline = va.to_vulkan(pipe, "VkPipeline")
            memories: list[Any] = []

            def allocate(size: int, bits: int) -> Any:
                mem = self.host_memory(size, bits, f"graph session {spec.label}")  # type: ignore[attr-defined]
                memories.append(mem)
                return mem.handle

            program.session, _ = self.arm.create_session(pipe, allocate)
            program.session_memories = memories
        else:
            keep: list[Any] = []
            spec_info = None
            if spec.specialization:
                data = b"".join(c.encode() for c in spec.specialization)
                entries_ = [vk.VkSpecializationMapEntry(constantID=c.id, offset=4 * i, size=4)
                            for i, c in enumerate(spec.specialization)]
                pdata = self.ffi.new("char[]", data)
                keep += [pdata, entries_]
                spec_info = vk.VkSpecializationInfo(mapEntryCount=len(entries_), pMapEntries=entries_,
                                                    dataSize=len(data), pData=pdata)
            # bound to a name first: a nested temporary would free its pName before the call
            stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                       pName=spec.entry, pSpecializationInfo=spec_info)
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=layout, basePipelineIndex=-1)
            with checked(f"vkCreateComputePipelines({spec.label}, entry {spec.entry!r})"):
                program.pipeline = vk.vkCreateComputePipelines(self.handle, self.pipeline_cache, 1, [info], None)[0]
        if n_sets:
            with checked("vkAllocateDescriptorSets"):
                program.sets = list(vk.vkAllocateDescriptorSets(self.handle, vk.VkDescriptorSetAllocateInfo(
                    descriptorPool=pool, descriptorSetCount=n_sets, pSetLayouts=set_layouts)))
            writes, keep_w = [], []
            for s, b in spec.slots:
                w, k = self.tensor_descriptor_write(program.sets[s], b, tensors[(s, b)])  # type: ignore[attr-defined]
                writes.append(w)
                keep_w += k
            vk.vkUpdateDescriptorSets(self.handle, len(writes), writes, 0, None)
            del keep_w
        return program

    def dispatch_graph_segment(self, program: GraphSegmentProgram, push_data: bytes = b"", label: str = "") -> None:
        """Record one segment into the current frame, then a barrier so the next segment sees its writes."""
        from kernellab.backends import vulkan_arm as va

        vk = self.vk
        cmd = self._begin()
        if self._timing:
            self._timestamp(cmd)
        graph = program.spec.kind == "graph"
        bind_point = va.const("VK_PIPELINE_BIND_POINT_DATA_GRAPH_ARM") if graph else vk.VK_PIPELINE_BIND_POINT_COMPUTE
        vk.vkCmdBindPipeline(cmd, bind_point, program.pipeline)
        self._bound_pipeline = None  # the compute binding cache no longer holds
        if program.sets:
            vk.vkCmdBindDescriptorSets(cmd, bind_point, program.layout, 0, len(program.sets), program.sets, 0, None)
        if graph:
            self.arm.cmd_dispatch_data_graph(cmd, program.session)
        else:
            if push_data:
                if len(push_data) > program.spec.push_constants_size:
                    raise UnsupportedError(f"{program.spec.label}: {len(push_data)} bytes of push constants, the "
                                           f"segment declares {program.spec.push_constants_size}")
                pdata = self.ffi.new("char[]", push_data)
                vk.vkCmdPushConstants(cmd, program.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, len(push_data), pdata)
            vk.vkCmdDispatch(cmd, *program.spec.dispatch_shape)
        self.memory_barrier2(cmd)
        if self._timing:
            self._timestamp(cmd)
            self._labels.append(label or program.spec.label)

    def memory_barrier2(self, cmd: Any) -> None:
        """A full memory dependency between whatever came before and after (graph and compute)."""
        vk = self.vk
        barrier = vk.VkMemoryBarrier2(srcStageMask=vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                      srcAccessMask=vk.VK_ACCESS_2_MEMORY_WRITE_BIT,
                                      dstStageMask=vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                      dstAccessMask=vk.VK_ACCESS_2_MEMORY_READ_BIT | vk.VK_ACCESS_2_MEMORY_WRITE_BIT)
        vk.vkCmdPipelineBarrier2(cmd, vk.VkDependencyInfo(memoryBarrierCount=1, pMemoryBarriers=[barrier]))

    def _destroy_graph_programs(self) -> None:
        vk = self.vk
        for p in self.__dict__.get("_graph_programs", []):
            if p.session is not None:
                self.arm.destroy_session(p.session)
            if p.pipeline is not None:
                vk.vkDestroyPipeline(self.handle, p.pipeline, None)
            vk.vkDestroyPipelineLayout(self.handle, p.layout, None)
            for sl in p.set_layouts:
                vk.vkDestroyDescriptorSetLayout(self.handle, sl, None)
            vk.vkDestroyDescriptorPool(self.handle, p.pool, None)
            vk.vkDestroyShaderModule(self.handle, p.module, None)
        self.__dict__.pop("_graph_programs", None)


__all__ = ["GraphConstantSpec", "GraphSegmentSpec", "GraphSegmentProgram", "VulkanGraphSupport", "Sequence"]
