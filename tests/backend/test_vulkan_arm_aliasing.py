"""A tensor aliasing an image's memory (VK_ARM_tensors image aliasing) on lavapipe.

An RGBA8 image with LINEAR tiling and a rank-3 R8_UINT tensor ``[H, W, 4]`` share one allocation;
the tensor's strides follow the image's row pitch, as Arm's runner sets them. A tensor shader
writes through the tensor; the bytes are then read in the image's layout, which proves the two
views agree.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

vk = pytest.importorskip("vulkan")
from kernellab.backends import vulkan_arm as va

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

SHADER = """#version 450
#extension GL_ARM_tensors : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0) uniform tensorARM<uint8_t, 3> pixels;
void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y;
    for (uint c = 0; c < 4; ++c) {
        tensorWriteARM(pixels, uint[](y, x, c), uint8_t(y * 40 + x * 8 + c));
    }
}
"""


def test_tensor_writes_land_in_the_aliased_image(tmp_path: Path):
    src = tmp_path / "alias.comp"
    src.write_text(SHADER)
    va.arm_glslc().run(["--input", src, "--output", tmp_path / "alias.spv"], what="compiling")
    spirv = (tmp_path / "alias.spv").read_bytes()
    w, h = 5, 3
    want = np.array([[[y * 40 + x * 8 + c for c in range(4)] for x in range(w)] for y in range(h)], np.uint8)

    inst, _ = va.create_instance()
    pd = next(p for p in vk.vkEnumeratePhysicalDevices(inst)
              if "llvmpipe" in vk.vkGetPhysicalDeviceProperties(p).deviceName)
    qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=0, queueCount=1, pQueuePriorities=[1.0])
    # the custom-border-color struct stands for whatever features the backend adds after ours
    border = vk.VkPhysicalDeviceCustomBorderColorFeaturesEXT(customBorderColors=True)
    feats = va.device_features(pd, then=border)
    dev = vk.vkCreateDevice(pd, vk.VkDeviceCreateInfo(pNext=feats.pnext, pEnabledFeatures=feats.enabled,
                                                      pQueueCreateInfos=[qinfo],
                                                      ppEnabledExtensionNames=[*va.EXTENSIONS,
                                                                               "VK_EXT_custom_border_color"]), None)
    arm = va.ArmDevice(dev)
    keep: list = []
    try:
        image = vk.vkCreateImage(dev, vk.VkImageCreateInfo(
            imageType=vk.VK_IMAGE_TYPE_2D, format=vk.VK_FORMAT_R8G8B8A8_UINT,
            extent=vk.VkExtent3D(width=w, height=h, depth=1), mipLevels=1, arrayLayers=1,
            samples=vk.VK_SAMPLE_COUNT_1_BIT, tiling=vk.VK_IMAGE_TILING_LINEAR,
            usage=vk.VK_IMAGE_USAGE_STORAGE_BIT | va.const("VK_IMAGE_USAGE_TENSOR_ALIASING_BIT_ARM"),
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED), None)
        layout = vk.vkGetImageSubresourceLayout(dev, image, vk.VkImageSubresource(
            aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, arrayLayer=0))
        row_pitch = int(layout.rowPitch)
        tensor, k = arm.create_tensor(
            va.const("VK_FORMAT_R8_UINT"), [h, w, 4],
            va.const("VK_TENSOR_USAGE_SHADER_BIT_ARM") | va.const("VK_TENSOR_USAGE_IMAGE_ALIASING_BIT_ARM"),
            tiling=va.const("VK_TENSOR_TILING_LINEAR_ARM"), strides=[row_pitch, 4, 1])
        keep += k
        image_req = vk.vkGetImageMemoryRequirements(dev, image)
        t_size, _, t_bits = arm.tensor_memory_requirements(tensor)
        bits = image_req.memoryTypeBits & t_bits
        props = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        index = next(i for i in range(props.memoryTypeCount)
                     if bits & (1 << i) and props.memoryTypes[i].propertyFlags & host == host)
        size = max(int(image_req.size), t_size)
        mem = vk.vkAllocateMemory(dev, vk.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=index), None)
        vk.vkBindImageMemory(dev, image, mem, 0)
        arm.bind_tensor_memory(tensor, mem, 0)
        view = arm.create_tensor_view(tensor, va.const("VK_FORMAT_R8_UINT"))

        tensor_type = va.const("VK_DESCRIPTOR_TYPE_TENSOR_ARM")
        set_layout = vk.vkCreateDescriptorSetLayout(dev, vk.VkDescriptorSetLayoutCreateInfo(pBindings=[
            vk.VkDescriptorSetLayoutBinding(binding=0, descriptorType=tensor_type, descriptorCount=1,
                                            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)]), None)
        pool = vk.vkCreateDescriptorPool(dev, vk.VkDescriptorPoolCreateInfo(
            maxSets=1, pPoolSizes=[vk.VkDescriptorPoolSize(type=tensor_type, descriptorCount=1)]), None)
        dset = vk.vkAllocateDescriptorSets(dev, vk.VkDescriptorSetAllocateInfo(descriptorPool=pool,
                                                                              pSetLayouts=[set_layout]))[0]
        pnext, k = va.tensor_descriptor_write([view])
        keep += k
        vk.vkUpdateDescriptorSets(dev, 1, [vk.VkWriteDescriptorSet(pNext=pnext, dstSet=dset, dstBinding=0,
                                                                   descriptorCount=1, descriptorType=tensor_type)], 0, None)
        module = vk.vkCreateShaderModule(dev, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None)
        playout = vk.vkCreatePipelineLayout(dev, vk.VkPipelineLayoutCreateInfo(pSetLayouts=[set_layout]), None)
        # the stage struct must outlive the call: a nested temporary would free its pName string
        stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName="main")
        pipeline = vk.vkCreateComputePipelines(dev, None, 1, [vk.VkComputePipelineCreateInfo(stage=stage, layout=playout)],
                                               None)[0]
        cpool = vk.vkCreateCommandPool(dev, vk.VkCommandPoolCreateInfo(queueFamilyIndex=0), None)
        cmd = vk.vkAllocateCommandBuffers(dev, vk.VkCommandBufferAllocateInfo(
            commandPool=cpool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo())
        # the image enters the tensor-aliasing layout before the tensor touches its memory
        to_alias = vk.VkImageMemoryBarrier2(
            srcStageMask=vk.VK_PIPELINE_STAGE_2_TOP_OF_PIPE_BIT, srcAccessMask=0,
            dstStageMask=vk.VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT, dstAccessMask=vk.VK_ACCESS_2_SHADER_WRITE_BIT,
            oldLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED, newLayout=va.const("VK_IMAGE_LAYOUT_TENSOR_ALIASING_ARM"),
            srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            image=image, subresourceRange=vk.VkImageSubresourceRange(
                aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1, baseArrayLayer=0, layerCount=1))
        vk.vkCmdPipelineBarrier2(cmd, vk.VkDependencyInfo(pImageMemoryBarriers=[to_alias]))
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
        vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, playout, 0, 1, [dset], 0, None)
        vk.vkCmdDispatch(cmd, w, h, 1)
        pnext, k = va.tensor_dependency_info([(tensor, vk.VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                               vk.VK_ACCESS_2_SHADER_WRITE_BIT, vk.VK_PIPELINE_STAGE_2_HOST_BIT,
                                               vk.VK_ACCESS_2_HOST_READ_BIT)])
        keep += k
        vk.vkCmdPipelineBarrier2(cmd, vk.VkDependencyInfo(pNext=pnext))
        vk.vkEndCommandBuffer(cmd)
        queue = vk.vkGetDeviceQueue(dev, 0, 0)
        vk.vkQueueSubmit(queue, 1, [vk.VkSubmitInfo(pCommandBuffers=[cmd])], None)
        vk.vkQueueWaitIdle(queue)

        mapped = vk.vkMapMemory(dev, mem, 0, size, 0)
        raw = np.frombuffer(mapped, np.uint8, count=int(layout.offset) + row_pitch * h).copy()
        del mapped
        vk.vkUnmapMemory(dev, mem)
        rows = raw[int(layout.offset):].reshape(h, row_pitch)[:, : w * 4].reshape(h, w, 4)
        np.testing.assert_array_equal(rows, want)

        vk.vkDestroyCommandPool(dev, cpool, None)
        vk.vkDestroyPipeline(dev, pipeline, None)
        vk.vkDestroyPipelineLayout(dev, playout, None)
        vk.vkDestroyShaderModule(dev, module, None)
        vk.vkDestroyDescriptorPool(dev, pool, None)
        vk.vkDestroyDescriptorSetLayout(dev, set_layout, None)
        arm.destroy_tensor_view(view)
        arm.destroy_tensor(tensor)
        vk.vkDestroyImage(dev, image, None)
        vk.vkFreeMemory(dev, mem, None)
    finally:
        vk.vkDestroyDevice(dev, None)
        vk.vkDestroyInstance(inst, None)
