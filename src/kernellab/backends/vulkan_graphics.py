"""Graphics pipelines for the Vulkan backend: ``dispatch_fragment`` as Arm's runner draws it.

A pipeline is a vertex and a fragment shader with no vertex input, a triangle list, no culling,
one sample, no blending, and viewport and scissor set per draw; it renders with dynamic rendering
(Vulkan 1.3, no render pass) into color attachments of the formats it was made for. A draw is
three vertices (the vertex shader places them, a full-screen triangle in Arm's tests) into one
mip level of each attachment. Attachments stay in ``VK_IMAGE_LAYOUT_GENERAL`` like every image
of the backend (vulkan_image.py), so a draw needs no layout transition.

Where Arm's runner leaves things open, a draw here is deterministic: attachments are loaded
(``LOAD``, Arm says ``DONT_CARE``), so texels the triangle does not cover keep what they held;
and a barrier before the draw makes earlier commands' writes visible to its shaders and
attachments.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kernellab.backends.base import Buffer, ImageBinding, Program, UnsupportedError
from kernellab.backends.feature_specs import GraphicsProgramSpec
from kernellab.backends.vkcore import CacheFeedback, VulkanProgram, specialization_info, through_cache
from kernellab.backends.vkimage import VulkanImage, image_view
from kernellab.native.vk import checked
from kernellab.vkregistry import vkformat

if TYPE_CHECKING:
    from kernellab.backends.vulkan_device import VulkanDevice


class VulkanGraphics:
    """The graphics part of the Vulkan backend (:class:`~kernellab.backends.base.GraphicsFeature`):
    pipelines and draws through the device it is given, whose descriptor sets and program
    binding the compute dispatches share."""

    def __init__(self, gpu: VulkanDevice):
        self.gpu = gpu
        self.vk = gpu.vk

    @property
    def _graphics_stages(self) -> int:
        return int(self.vk.VK_SHADER_STAGE_VERTEX_BIT | self.vk.VK_SHADER_STAGE_FRAGMENT_BIT)

    # --- pipelines -----------------------------------------------------------------------------
    def create_graphics_pipeline(self, spec: GraphicsProgramSpec) -> VulkanProgram:
        vk = self.vk
        for part in (spec.vertex, spec.fragment):
            if part.language != "spirv":
                raise UnsupportedError(f"program {part.uid!r}: the Vulkan backend runs SPIR-V, got {part.language}")
        formats = []
        for name in spec.color_formats:
            fmt = vkformat.lookup(name)
            if fmt is None:
                raise UnsupportedError(f"program {spec.uid!r}: unknown color attachment format {name}")
            formats.append(fmt.value)
        modules: list[Any] = []
        layout = None
        try:
            for part in (spec.vertex, spec.fragment):
                with checked(f"vkCreateShaderModule({part.uid})"):
                    modules.append(vk.vkCreateShaderModule(self.gpu.handle, vk.VkShaderModuleCreateInfo(
                        codeSize=len(part.code), pCode=part.code), None))
            set_layouts, layout, set_bindings = self.gpu.pipeline_layout(spec.spec, self._graphics_stages)
            pipeline = self._graphics_pipeline(spec, modules, layout, formats)
        except BaseException:
            from kernellab.native.vk import release

            for module in modules:
                release("vkDestroyShaderModule", vk.vkDestroyShaderModule, self.gpu.handle, module, None)
            if layout is not None:
                release("vkDestroyPipelineLayout", vk.vkDestroyPipelineLayout, self.gpu.handle, layout, None)
            raise
        program = VulkanProgram(spec.spec, modules[0], set_layouts, layout, pipeline, set_bindings,
                                fragment_module=modules[1])
        self.gpu.add_program(program)
        return program

    def _graphics_pipeline(self, spec: GraphicsProgramSpec, modules: Sequence[Any], layout: Any,
                           formats: Sequence[int]) -> Any:
        """The pipeline state Arm's runner creates (its src/pipeline.cpp, graphicsPipelineCommon)."""
        vk = self.vk
        keep: list[Any] = []
        stages = []
        for part, module, bit in ((spec.vertex, modules[0], vk.VK_SHADER_STAGE_VERTEX_BIT),
                                  (spec.fragment, modules[1], vk.VK_SHADER_STAGE_FRAGMENT_BIT)):
            info, k = specialization_info(part.specialization)
            keep += k
            stages.append(vk.VkPipelineShaderStageCreateInfo(stage=bit, module=module, pName=part.entry,
                                                             pSpecializationInfo=info))
        blend = [vk.VkPipelineColorBlendAttachmentState(
            blendEnable=False, colorWriteMask=vk.VK_COLOR_COMPONENT_R_BIT | vk.VK_COLOR_COMPONENT_G_BIT
            | vk.VK_COLOR_COMPONENT_B_BIT | vk.VK_COLOR_COMPONENT_A_BIT) for _ in formats]
        dynamic = [vk.VK_DYNAMIC_STATE_VIEWPORT, vk.VK_DYNAMIC_STATE_SCISSOR]

        def create(flags: int, feedback_info: Any) -> Any:
            rendering = vk.VkPipelineRenderingCreateInfo(pNext=feedback_info, colorAttachmentCount=len(formats),
                                                         pColorAttachmentFormats=list(formats) or None)
            info = vk.VkGraphicsPipelineCreateInfo(
                pNext=rendering, flags=flags, stageCount=len(stages), pStages=stages,
                pVertexInputState=vk.VkPipelineVertexInputStateCreateInfo(),
                pInputAssemblyState=vk.VkPipelineInputAssemblyStateCreateInfo(
                    topology=vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST, primitiveRestartEnable=False),
                pViewportState=vk.VkPipelineViewportStateCreateInfo(viewportCount=1, scissorCount=1),
                pRasterizationState=vk.VkPipelineRasterizationStateCreateInfo(
                    polygonMode=vk.VK_POLYGON_MODE_FILL, cullMode=vk.VK_CULL_MODE_NONE,
                    frontFace=vk.VK_FRONT_FACE_CLOCKWISE, lineWidth=1.0),
                pMultisampleState=vk.VkPipelineMultisampleStateCreateInfo(
                    rasterizationSamples=vk.VK_SAMPLE_COUNT_1_BIT),
                pColorBlendState=vk.VkPipelineColorBlendStateCreateInfo(
                    logicOpEnable=False, logicOp=vk.VK_LOGIC_OP_COPY, attachmentCount=len(blend),
                    pAttachments=blend or None),
                pDynamicState=vk.VkPipelineDynamicStateCreateInfo(dynamicStateCount=len(dynamic),
                                                                  pDynamicStates=dynamic),
                layout=layout, basePipelineIndex=-1)
            return vk.vkCreateGraphicsPipelines(self.gpu.handle, self.gpu.pipeline_cache, 1, [info], None)[0]

        feedback = CacheFeedback(vk, len(stages)) if self.gpu.options.fail_on_pipeline_cache_miss else None
        pipeline = through_cache(create, feedback, spec.uid,
                                 f"vkCreateGraphicsPipelines({spec.uid}: {spec.vertex.uid} + {spec.fragment.uid})")
        del keep
        return pipeline

    # --- drawing -------------------------------------------------------------------------------
    def record_draw(self, program: Program, attachments: Sequence[ImageBinding], extent: tuple[int, int],
              bindings: Mapping[tuple[int, int], Buffer | ImageBinding], push_data: bytes, label: str,
              barrier: bool) -> None:
        assert isinstance(program, VulkanProgram) and program.fragment_module is not None
        vk = self.vk
        views = []
        for a in attachments:
            image = a.image
            assert isinstance(image, VulkanImage)
            if not image.spec.color_attachment:
                raise UnsupportedError(f"image {image.spec.uid!r} was not created as a color attachment")
            if image.layout != vk.VK_IMAGE_LAYOUT_GENERAL:
                raise UnsupportedError(f"image {image.spec.uid!r}: a draw renders into images in the GENERAL "
                                       f"layout; an image barrier left it in layout {image.layout}")
            views.append(image_view(self.gpu, image, a.lod or 0))
        sets = self.gpu.descriptor_sets(program, bindings)
        cmd = self.gpu.begin()
        close_label = self.gpu.label(cmd, label)
        timing = self.gpu.timing
        if timing:
            self.gpu.timestamp(cmd)
        self._memory_barrier(cmd, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, self._draw_stages,
                             vk.VK_ACCESS_MEMORY_WRITE_BIT, self._draw_access)
        self.gpu.bind_program(cmd, program, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self._graphics_stages, sets, push_data,
                              self.gpu.dynamic_offsets(program, bindings))
        width, height = extent
        area = vk.VkRect2D(offset=vk.VkOffset2D(x=0, y=0), extent=vk.VkExtent2D(width=width, height=height))
        infos = [vk.VkRenderingAttachmentInfo(imageView=view, imageLayout=vk.VK_IMAGE_LAYOUT_GENERAL,
                                              resolveMode=0, loadOp=vk.VK_ATTACHMENT_LOAD_OP_LOAD,
                                              storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE) for view in views]
        vk.vkCmdBeginRendering(cmd, vk.VkRenderingInfo(renderArea=area, layerCount=1,
                                                       colorAttachmentCount=len(infos),
                                                       pColorAttachments=infos or None))
        vk.vkCmdSetViewport(cmd, 0, 1, [vk.VkViewport(x=0.0, y=0.0, width=float(width), height=float(height),
                                                      minDepth=0.0, maxDepth=1.0)])
        vk.vkCmdSetScissor(cmd, 0, 1, [area])
        vk.vkCmdDraw(cmd, 3, 1, 0, 0)
        vk.vkCmdEndRendering(cmd)
        if barrier:
            self._memory_barrier(cmd, self._draw_stages, vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, self._draw_access,
                                 vk.VK_ACCESS_MEMORY_READ_BIT | vk.VK_ACCESS_MEMORY_WRITE_BIT)
        if timing:
            self.gpu.end_timing(cmd, label)
        close_label()

    @property
    def _draw_stages(self) -> int:
        vk = self.vk
        return int(vk.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT | vk.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT
                   | vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT)

    @property
    def _draw_access(self) -> int:
        vk = self.vk
        return int(vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT
                   | vk.VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT)

    def _memory_barrier(self, cmd: Any, src_stage: int, dst_stage: int, src_access: int, dst_access: int) -> None:
        vk = self.vk
        vk.vkCmdPipelineBarrier(cmd, src_stage, dst_stage, 0, 1,
                                [vk.VkMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access)],
                                0, None, 0, None)


__all__ = ["VulkanGraphics"]
