"""VGF graphs (built from TOSA by Arm's model converter) run through VK_ARM_data_graph on lavapipe.

``run_vgf`` below is a minimal ``dispatch_graph``: VGF decode, one tensor per resource the
segments bind (sequence inputs/outputs and intermediates), per segment a data-graph pipeline with
its constants and a session, or a compute pipeline whose placeholder module is substituted by a
shader, descriptor sets as the VGF lays them out, the dispatches in order with barriers between,
and the outputs read back. The tests check a conv2d against NumPy, alone and followed by a
substituted shader.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from helpers.vgf_models import build_conv_vgf, conv_reference
from kernellab.formats import vgf
from kernellab.vkregistry import vkformat

vk = pytest.importorskip("vulkan")
pytest.importorskip("vgfpy", reason="pip ai-ml-sdk-vgf-library (kernellab[ml]) decodes VGF files")
from kernellab.backends import vulkan_arm as va

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

# what the scenario substitutes for the placeholder: out = in * 2 + 1 over the [1, 3, 2, 2] tensor
POST_SHADER = """#version 450
#extension GL_ARM_tensors : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) uniform tensorARM<float, 4> src_t;
layout(set = 0, binding = 1) uniform tensorARM<float, 4> dst_t;
void main() {
    for (uint y = 0; y < 3; ++y)
        for (uint x = 0; x < 2; ++x)
            for (uint c = 0; c < 2; ++c) {
                float v;
                tensorReadARM(src_t, uint[](0, y, x, c), v);
                tensorWriteARM(dst_t, uint[](0, y, x, c), v * 2.0 + 1.0);
            }
}
"""


def build_vgf(folder: Path, name: str, with_placeholder: bool) -> vgf.VgfFile:
    return vgf.read(build_conv_vgf(folder, name, with_placeholder))


def run_vgf(g: vgf.VgfFile, inputs: dict[str, np.ndarray], substitutions: dict[str, bytes]) -> dict[str, np.ndarray]:
    inst, _ = va.create_instance()
    pd = next(p for p in vk.vkEnumeratePhysicalDevices(inst)
              if "llvmpipe" in vk.vkGetPhysicalDeviceProperties(p).deviceName)
    family = va.data_graph_queue_family(pd)
    assert family is not None, "the emulation layer offers no queue family with VK_QUEUE_DATA_GRAPH_BIT_ARM"
    feats = va.device_features(pd)
    qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family, queueCount=1, pQueuePriorities=[1.0])
    dev = vk.vkCreateDevice(pd, vk.VkDeviceCreateInfo(pNext=feats.pnext, pEnabledFeatures=feats.enabled,
                                                      pQueueCreateInfos=[qinfo],
                                                      ppEnabledExtensionNames=list(va.EXTENSIONS)), None)
    arm = va.ArmDevice(dev)
    keep: list = []
    cleanup: list = []
    try:
        props = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT

        def memory_for(size: int, bits: int):
            index = next(i for i in range(props.memoryTypeCount)
                         if bits & (1 << i) and props.memoryTypes[i].propertyFlags & host == host)
            mem = vk.vkAllocateMemory(dev, vk.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=index), None)
            cleanup.append(lambda: vk.vkFreeMemory(dev, mem, None))
            return mem

        usage = va.const("VK_TENSOR_USAGE_SHADER_BIT_ARM") | va.const("VK_TENSOR_USAGE_DATA_GRAPH_BIT_ARM")
        linear = va.const("VK_TENSOR_TILING_LINEAR_ARM")
        # one tensor per resource any segment binds: the sequence's inputs and outputs, and intermediates
        tensors = {}
        for seg in g.segments:
            for ds in seg.descriptor_sets:
                for b in ds.bindings:
                    if b.resource in tensors:
                        continue
                    res = g.resources[b.resource]
                    t, k = arm.create_tensor(res.format_value, res.shape, usage, tiling=linear)
                    keep += k
                    size, _, bits = arm.tensor_memory_requirements(t)
                    mem = memory_for(size, bits)
                    arm.bind_tensor_memory(t, mem)
                    view = arm.create_tensor_view(t, res.format_value)
                    cleanup.append(lambda t=t, view=view: (arm.destroy_tensor_view(view), arm.destroy_tensor(t)))
                    tensors[b.resource] = (t, mem, size, view)
        for port in g.inputs:
            _, mem, size, _ = tensors[port.resource.index]
            data = np.ascontiguousarray(inputs[port.name], vkformat.by_value(port.resource.format_value).dtype)
            mapped = vk.vkMapMemory(dev, mem, 0, size, 0)
            np.frombuffer(mapped, np.uint8, count=data.nbytes)[:] = data.view(np.uint8).reshape(-1)
            del mapped
            vk.vkUnmapMemory(dev, mem)

        tensor_type = va.const("VK_DESCRIPTOR_TYPE_TENSOR_ARM")
        pool = vk.vkCreateDescriptorPool(dev, vk.VkDescriptorPoolCreateInfo(
            maxSets=16, pPoolSizes=[vk.VkDescriptorPoolSize(type=tensor_type, descriptorCount=64)]), None)
        cleanup.append(lambda: vk.vkDestroyDescriptorPool(dev, pool, None))
        cpool = vk.vkCreateCommandPool(dev, vk.VkCommandPoolCreateInfo(queueFamilyIndex=family), None)
        cleanup.append(lambda: vk.vkDestroyCommandPool(dev, cpool, None))
        cmd = vk.vkAllocateCommandBuffers(dev, vk.VkCommandBufferAllocateInfo(
            commandPool=cpool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo())
        for seg in g.segments:
            module_info = g.modules[seg.module]
            set_layouts = []
            for ds in sorted(seg.descriptor_sets, key=lambda d: d.set):
                assert ds.set == len(set_layouts), "descriptor sets are numbered from 0 without gaps"
                bindings = [vk.VkDescriptorSetLayoutBinding(binding=b.binding, descriptorType=tensor_type,
                                                            descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_ALL)
                            for b in ds.bindings]
                sl = vk.vkCreateDescriptorSetLayout(dev, vk.VkDescriptorSetLayoutCreateInfo(pBindings=bindings), None)
                cleanup.append(lambda sl=sl: vk.vkDestroyDescriptorSetLayout(dev, sl, None))
                set_layouts.append(sl)
            layout = vk.vkCreatePipelineLayout(dev, vk.VkPipelineLayoutCreateInfo(pSetLayouts=set_layouts), None)
            cleanup.append(lambda layout=layout: vk.vkDestroyPipelineLayout(dev, layout, None))
            code = substitutions.get(module_info.name) if module_info.placeholder else g.module_spirv(seg.module)
            assert code is not None, f"placeholder module {module_info.name} needs a shader substitution"
            shader = vk.vkCreateShaderModule(dev, vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code), None)
            cleanup.append(lambda shader=shader: vk.vkDestroyShaderModule(dev, shader, None))
            if seg.kind == "graph":
                resources = [va.GraphTensor(ds.set, b.binding, g.resources[b.resource].format_value,
                                            g.resources[b.resource].shape, tiling=linear)
                             for ds in seg.descriptor_sets for b in ds.bindings]
                constants = []
                for graph_id, index in seg.constant_bindings:
                    c = g.constants[index]
                    res = g.resources[c.resource]
                    constants.append(va.GraphConstant(graph_id, res.format_value, res.shape, g.constant_data(index),
                                                      c.sparsity_dimension))
                pipeline, k = arm.create_data_graph_pipeline(layout, shader, module_info.entry_point, resources,
                                                             constants)
                keep += k
                session, _ = arm.create_session(pipeline, memory_for)
                cleanup.append(lambda session=session: arm.destroy_session(session))
                vk_pipeline = va.to_vulkan(pipeline, "VkPipeline")
                bind_point = va.const("VK_PIPELINE_BIND_POINT_DATA_GRAPH_ARM")
            else:
                stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=shader,
                                                           pName=module_info.entry_point)
                vk_pipeline = vk.vkCreateComputePipelines(dev, None, 1, [vk.VkComputePipelineCreateInfo(
                    stage=stage, layout=layout)], None)[0]
                bind_point = vk.VK_PIPELINE_BIND_POINT_COMPUTE
            cleanup.append(lambda p=vk_pipeline: vk.vkDestroyPipeline(dev, p, None))
            sets = vk.vkAllocateDescriptorSets(dev, vk.VkDescriptorSetAllocateInfo(descriptorPool=pool,
                                                                                  pSetLayouts=set_layouts))
            writes = []
            for ds in seg.descriptor_sets:
                for b in ds.bindings:
                    pnext, k = va.tensor_descriptor_write([tensors[b.resource][3]])
                    keep += k
                    writes.append(vk.VkWriteDescriptorSet(pNext=pnext, dstSet=sets[ds.set], dstBinding=b.binding,
                                                          descriptorCount=1, descriptorType=tensor_type))
            vk.vkUpdateDescriptorSets(dev, len(writes), writes, 0, None)
            vk.vkCmdBindPipeline(cmd, bind_point, vk_pipeline)
            vk.vkCmdBindDescriptorSets(cmd, bind_point, layout, 0, len(sets), sets, 0, None)
            if seg.kind == "graph":
                arm.cmd_dispatch_data_graph(cmd, session)
            else:
                vk.vkCmdDispatch(cmd, *seg.dispatch_shape)
            # the next segment reads what this one wrote
            barrier = vk.VkMemoryBarrier2(srcStageMask=vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                          srcAccessMask=vk.VK_ACCESS_2_MEMORY_WRITE_BIT,
                                          dstStageMask=vk.VK_PIPELINE_STAGE_2_ALL_COMMANDS_BIT,
                                          dstAccessMask=vk.VK_ACCESS_2_MEMORY_READ_BIT | vk.VK_ACCESS_2_MEMORY_WRITE_BIT)
            vk.vkCmdPipelineBarrier2(cmd, vk.VkDependencyInfo(pMemoryBarriers=[barrier]))
        vk.vkEndCommandBuffer(cmd)
        queue = vk.vkGetDeviceQueue(dev, family, 0)
        vk.vkQueueSubmit(queue, 1, [vk.VkSubmitInfo(pCommandBuffers=[cmd])], None)
        vk.vkQueueWaitIdle(queue)

        outputs = {}
        for port in g.outputs:
            _, mem, size, _ = tensors[port.resource.index]
            dtype = vkformat.by_value(port.resource.format_value).dtype
            mapped = vk.vkMapMemory(dev, mem, 0, size, 0)
            outputs[port.name] = np.frombuffer(mapped, dtype, count=int(np.prod(port.resource.shape))).copy().reshape(
                port.resource.shape)
            del mapped
            vk.vkUnmapMemory(dev, mem)
        return outputs
    finally:
        for fn in reversed(cleanup):
            fn()
        vk.vkDestroyDevice(dev, None)
        vk.vkDestroyInstance(inst, None)


X = (np.arange(20, dtype=np.float32).reshape(1, 5, 4, 1) - 7) / 3


def test_conv_graph_runs_on_lavapipe(tmp_path):
    g = build_vgf(tmp_path, "conv", with_placeholder=False)
    assert [s.kind for s in g.segments] == ["graph"] and not g.placeholders()
    out = run_vgf(g, {"input_0": X}, {})
    np.testing.assert_allclose(out["output_0"], conv_reference(X), rtol=1e-6, atol=1e-6)


def test_conv_then_substituted_shader(tmp_path):
    g = build_vgf(tmp_path, "conv_post", with_placeholder=True)
    assert [s.kind for s in g.segments] == ["graph", "compute"]
    (placeholder,) = g.placeholders()
    assert any(r.category == "intermediate" for r in g.resources)
    src = tmp_path / "post.comp"
    src.write_text(POST_SHADER)
    va.arm_glslc().run(["--input", src, "--output", tmp_path / "post.spv"], what="compiling the substitute")
    out = run_vgf(g, {"input_0": X}, {placeholder.name: (tmp_path / "post.spv").read_bytes()})
    np.testing.assert_allclose(out["output_0"], conv_reference(X) * 2 + 1, rtol=1e-6, atol=1e-6)
