"""Optical flow (VK_ARM_data_graph_optical_flow) for the Vulkan backend: the part that runs
``dispatch_optical_flow`` through the device it is given.

An optical flow is a data-graph pipeline of one node (``VkDataGraphPipelineSingleNodeCreateInfoARM``,
node type OPTICAL_FLOW) whose connections name the descriptor (set, binding) of each image by its
role: the search (input) and template (reference) images, the flow vectors written, and optionally
hint vectors read and costs written. The images are bound as Arm's runner binds them (a sampled
image as a combined image sampler, a storage image as a storage image; every stage), each
pipeline resource carrying the layout the image is in. The pipeline gets a session with an
optical-flow cache, and each dispatch passes the execution flags and the mean-flow hint in
``VkDataGraphPipelineOpticalFlowDispatchInfoARM``. Drivers without the extension get it from
Arm's ML emulation layer, as tensors and graphs do (docs/ml-extensions.md).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import field
from typing import TYPE_CHECKING, Any

from kernellab.backends.base import PipelineCacheMiss
from kernellab.backends.feature_specs import OpticalFlowSpec
from kernellab.backends.vkcore import CacheFeedback, release_data_graph_program, through_cache
from kernellab.backends.vkimage import image_view
from kernellab.native.vk import checked
from kernellab.records import dataclass

if TYPE_CHECKING:
    from kernellab.backends.base import OpticalFlow
    from kernellab.backends.vulkan_device import VulkanDevice

#: the connection of each role (Arm's scenario names) to the optical-flow node
CONNECTIONS = {"search_image": "INPUT", "template_image": "REFERENCE", "output_image": "FLOW_VECTOR",
               "hint_motion_vectors": "HINT", "output_cost": "COST"}


@dataclass
class OpticalFlowProgram:
    spec: OpticalFlowSpec
    pipeline: Any = None                  # vulkan-package VkPipeline
    layout: Any = None
    set_layouts: list[Any] = field(default_factory=list)
    pool: Any = None
    sets: list[Any] = field(default_factory=list)
    session: Any = None                   # our FFI's VkDataGraphPipelineSessionARM
    #: bytes of session memory bound (Arm's profiling dump reports them as "Session memory [bytes]")
    session_bytes: int = 0
    keep: list[Any] = field(default_factory=list)


class VulkanOpticalFlows:
    """The optical-flow part of the Vulkan backend (:class:`~kernellab.backends.base.OpticalFlowFeature`),
    working through the device it is given."""

    def __init__(self, gpu: VulkanDevice):
        self.gpu = gpu
        self.vk = gpu.vk
        self._programs: list[OpticalFlowProgram] = []

    @property
    def arm(self) -> Any:
        return self.gpu.arm

    def create_optical_flow(self, spec: OpticalFlowSpec) -> OpticalFlowProgram:
        """The data-graph pipeline, descriptor sets and session of one optical flow."""
        from kernellab.backends import vulkan_optical_flow_decls as ofd
        from kernellab.backends.vulkan_arm_calls import address, to_arm, to_vulkan

        program = OpticalFlowProgram(spec)
        self._programs.append(program)
        self._optical_flow_descriptors(program)
        f = ofd.ffi()
        roles = {i.role: i for i in spec.images}
        resource_layouts = [ofd.new("VkDataGraphPipelineResourceInfoImageLayoutARM", layout=i.image.layout)  # type: ignore[attr-defined]
                            for i in spec.images]
        resources = ofd.array("VkDataGraphPipelineResourceInfoARM", [
            {"pNext": lay, "descriptorSet": i.set, "binding": i.binding, "arrayElement": 0}
            for i, lay in zip(spec.images, resource_layouts)])
        connections = ofd.array("VkDataGraphPipelineSingleNodeConnectionARM", [
            {"set": i.set, "binding": i.binding,
             "connection": ofd.const(f"VK_DATA_GRAPH_PIPELINE_NODE_CONNECTION_TYPE_OPTICAL_FLOW_"
                                     f"{CONNECTIONS[i.role]}_ARM")} for i in spec.images])
        flags = 0
        if "hint_motion_vectors" in roles:
            flags |= ofd.const("VK_DATA_GRAPH_OPTICAL_FLOW_CREATE_ENABLE_HINT_BIT_ARM")
        if "output_cost" in roles:
            flags |= ofd.const("VK_DATA_GRAPH_OPTICAL_FLOW_CREATE_ENABLE_COST_BIT_ARM")
        grid = ofd.const(f"VK_DATA_GRAPH_OPTICAL_FLOW_GRID_SIZE_{spec.grid_size.upper()}_BIT_ARM")
        flow_info = ofd.new(
            "VkDataGraphPipelineOpticalFlowCreateInfoARM", width=spec.width, height=spec.height,
            imageFormat=roles["search_image"].image.vk_format,  # type: ignore[attr-defined]
            flowVectorFormat=roles["output_image"].image.vk_format,  # type: ignore[attr-defined]
            costFormat=roles["output_cost"].image.vk_format if "output_cost" in roles else 0,  # type: ignore[attr-defined]
            outputGridSize=grid, hintGridSize=grid, flags=flags,
            performanceLevel=ofd.const(f"VK_DATA_GRAPH_OPTICAL_FLOW_PERFORMANCE_LEVEL_"
                                       f"{spec.performance_level.upper()}_ARM"))
        node = ofd.new("VkDataGraphPipelineSingleNodeCreateInfoARM", pNext=flow_info, connectionCount=len(spec.images),
                       pConnections=connections,
                       nodeType=ofd.const("VK_DATA_GRAPH_PIPELINE_NODE_TYPE_OPTICAL_FLOW_ARM"))
        name = spec.label.split(":", 2)[-1]

        def create(flags: int, feedback: Any) -> Any:
            if feedback is not None:  # Arm's runner chains it here (its pipeline.cpp)
                flow_info.pNext = f.cast("void*", address(self.vk.ffi.addressof(feedback)))
            info = ofd.new("VkDataGraphPipelineCreateInfoARM", pNext=node,
                           layout=to_arm(program.layout, "VkPipelineLayout"), flags=flags,
                           resourceInfoCount=len(spec.images), pResourceInfos=resources)
            out = f.new("VkPipeline*")
            result = self.arm.vkCreateDataGraphPipelinesARM(self.arm.device, f.NULL,
                                                            to_arm(self.gpu.pipeline_cache, "VkPipelineCache"), 1,
                                                            info, f.NULL, out)
            program.keep.append(info)
            if result == self.vk.VK_PIPELINE_COMPILE_REQUIRED:  # a success code: the call did not raise
                raise PipelineCacheMiss(name)
            return out[0]

        program.keep += [resource_layouts, resources, connections, flow_info, node]
        # a data-graph pipeline has no shader stages to report on, only the pipeline
        feedback = CacheFeedback(self.vk, stages=0) if self.gpu.options.fail_on_pipeline_cache_miss else None
        pipeline = through_cache(create, feedback, name, f"vkCreateDataGraphPipelinesARM({spec.label})")
        program.pipeline = to_vulkan(pipeline, "VkPipeline")

        def allocate(size: int, bits: int) -> Any:
            program.session_bytes += size
            memory = self.gpu.host_memory(size, bits, f"optical flow session {spec.label}")
            # the session caches the previous frame's flow for temporal hints: a new session has
            # none, so it starts at zero rather than at whatever the memory held
            memory.array.fill(0)
            return memory.handle

        program.session, _ = self.arm.create_session(
            pipeline, allocate, ofd.const("VK_DATA_GRAPH_PIPELINE_SESSION_CREATE_OPTICAL_FLOW_CACHE_BIT_ARM"))
        return program

    def _optical_flow_descriptors(self, program: OpticalFlowProgram) -> None:
        """Set layouts, pipeline layout and descriptor sets (written once) of an optical flow."""
        vk = self.vk
        images = program.spec.images
        sampled, storage = vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, vk.VK_DESCRIPTOR_TYPE_STORAGE_IMAGE
        n_sets = max(i.set for i in images) + 1
        for s in range(n_sets):
            entries = [vk.VkDescriptorSetLayoutBinding(binding=i.binding, descriptorCount=1,
                                                       descriptorType=sampled if i.sampled else storage,
                                                       stageFlags=vk.VK_SHADER_STAGE_ALL)
                       for i in sorted(images, key=lambda i: i.binding) if i.set == s]
            with checked(f"vkCreateDescriptorSetLayout({program.spec.label})"):
                program.set_layouts.append(vk.vkCreateDescriptorSetLayout(
                    self.gpu.handle, vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(entries),
                                                                    pBindings=entries or None), None))
        with checked(f"vkCreatePipelineLayout({program.spec.label})"):
            program.layout = vk.vkCreatePipelineLayout(self.gpu.handle, vk.VkPipelineLayoutCreateInfo(
                setLayoutCount=n_sets, pSetLayouts=program.set_layouts), None)
        sizes = [vk.VkDescriptorPoolSize(type=t, descriptorCount=len(images))
                 for t in (sampled, storage)]
        with checked("vkCreateDescriptorPool"):
            program.pool = vk.vkCreateDescriptorPool(self.gpu.handle, vk.VkDescriptorPoolCreateInfo(
                maxSets=n_sets, poolSizeCount=len(sizes), pPoolSizes=sizes), None)
        with checked("vkAllocateDescriptorSets"):
            program.sets = list(vk.vkAllocateDescriptorSets(self.gpu.handle, vk.VkDescriptorSetAllocateInfo(
                descriptorPool=program.pool, descriptorSetCount=n_sets, pSetLayouts=program.set_layouts)))
        writes = []
        for i in images:
            image: Any = i.image
            info = vk.VkDescriptorImageInfo(sampler=image.sampler if i.sampled else None,
                                            imageView=image_view(self.gpu, image, i.lod), imageLayout=image.layout)
            writes.append(vk.VkWriteDescriptorSet(dstSet=program.sets[i.set], dstBinding=i.binding, descriptorCount=1,
                                                  descriptorType=sampled if i.sampled else storage,
                                                  pImageInfo=[info]))
        vk.vkUpdateDescriptorSets(self.gpu.handle, len(writes), writes, 0, None)

    def dispatch_optical_flow(self, program: OpticalFlow, execution_flags: Sequence[str] = (),
                              mean_flow_l1_norm_hint: int = 0, label: str = "") -> None:
        """Record one optical flow into the current frame (``execution_flags`` in Arm's names)."""
        from kernellab.backends import vulkan_optical_flow_decls as ofd

        assert isinstance(program, OpticalFlowProgram)
        vk = self.vk
        cmd = self.gpu.begin()
        close_label = self.gpu.label(cmd, label or program.spec.label)
        if self.gpu.timing:
            self.gpu.timestamp(cmd)
        bind_point = ofd.const("VK_PIPELINE_BIND_POINT_DATA_GRAPH_ARM")
        self.gpu.bind_pipeline(cmd, bind_point, program.pipeline, remember=False)
        vk.vkCmdBindDescriptorSets(cmd, bind_point, program.layout, 0, len(program.sets), program.sets, 0, None)
        flags = 0
        for name in execution_flags:
            flags |= ofd.const(f"VK_DATA_GRAPH_OPTICAL_FLOW_EXECUTE_{name.upper()}_BIT_ARM")
        flow = ofd.new("VkDataGraphPipelineOpticalFlowDispatchInfoARM", flags=flags,
                       meanFlowL1NormHint=mean_flow_l1_norm_hint)
        info = ofd.new("VkDataGraphPipelineDispatchInfoARM", pNext=flow)
        self.arm.cmd_dispatch_data_graph(cmd, program.session, info)
        if self.gpu.timing:
            self.gpu.end_timing(cmd, label or program.spec.label)
        close_label()

    def close(self) -> None:
        """Destroy every optical flow's pipeline, session, layouts and pool."""
        for p in self._programs:
            release_data_graph_program(self.vk, self.gpu.handle, self.arm, p)
