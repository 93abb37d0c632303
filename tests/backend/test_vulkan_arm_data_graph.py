"""A VGF conv2d graph (built from TOSA by Arm's model converter) run through VK_ARM_data_graph on lavapipe.

Shows every step a ``dispatch_graph`` takes with the generated declarations: VGF decode, tensors
for the sequence's inputs and outputs, the graph pipeline with its constants, a session and its
memory, descriptor sets at the data-graph bind point, the dispatch, and the check against NumPy.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernellab.formats import vgf

vk = pytest.importorskip("vulkan")
pytest.importorskip("vgfpy", reason="pip ai-ml-sdk-vgf-library (kernellab[ml]) decodes VGF files")
from kernellab.backends import vulkan_arm as va

os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")

WEIGHTS = np.array([[[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.5, 0.5, 0.5]]],
                   np.float32).reshape(2, 3, 3, 1)
BIAS = np.array([0.25, -1.0], np.float32)


def conv_tosa() -> str:
    def dense(a: np.ndarray) -> str:
        return np.array2string(a, separator=", ", floatmode="fixed", threshold=10_000).replace("\n", "")
    return f"""
module {{
  func.func @main(%arg0: tensor<1x5x4x1xf32>) -> tensor<1x3x2x2xf32> {{
    %w = "tosa.const"() <{{values = dense<{dense(WEIGHTS)}> : tensor<2x3x3x1xf32>}}> : () -> tensor<2x3x3x1xf32>
    %b = "tosa.const"() <{{values = dense<{dense(BIAS)}> : tensor<2xf32>}}> : () -> tensor<2xf32>
    %zp = "tosa.const"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>
    %0 = tosa.conv2d %arg0, %w, %b, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>,
           pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}}
         : (tensor<1x5x4x1xf32>, tensor<2x3x3x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x2x2xf32>
    return %0 : tensor<1x3x2x2xf32>
  }}
}}
"""


def conv_reference(x: np.ndarray) -> np.ndarray:
    n, h, w, _ = x.shape
    out = np.zeros((n, h - 2, w - 2, 2), np.float32)
    for oc in range(2):
        for y in range(h - 2):
            for xx in range(w - 2):
                out[0, y, xx, oc] = np.sum(x[0, y:y + 3, xx:xx + 3, :] * WEIGHTS[oc]) + BIAS[oc]
    return out


@pytest.fixture(scope="module")
def conv_vgf(tmp_path_factory) -> vgf.VgfFile:
    folder = tmp_path_factory.mktemp("vgf")
    (folder / "conv.mlir").write_text(conv_tosa())
    exe = shutil.which("model-converter") or str(Path(sys.executable).parent / "model-converter")
    subprocess.run([exe, "-i", str(folder / "conv.mlir"), "-o", str(folder / "conv.vgf")], check=True,
                   capture_output=True)
    return vgf.read(folder / "conv.vgf")


def test_conv_graph_runs_on_lavapipe(conv_vgf):
    g = conv_vgf
    assert len(g.segments) == 1 and g.segments[0].kind == "graph"
    seg = g.segments[0]
    module_info = g.modules[seg.module]
    spirv = g.module_spirv(seg.module)
    x = (np.arange(20, dtype=np.float32).reshape(1, 5, 4, 1) - 7) / 3
    want = conv_reference(x)

    inst, _ = va.create_instance()
    pd = next(p for p in vk.vkEnumeratePhysicalDevices(inst)
              if "llvmpipe" in vk.vkGetPhysicalDeviceProperties(p).deviceName)
    family = va.data_graph_queue_family(pd)
    assert family is not None, "the emulation layer offers no queue family with VK_QUEUE_DATA_GRAPH_BIT_ARM"
    feats = va.ml_features()
    qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family, queueCount=1, pQueuePriorities=[1.0])
    dev = vk.vkCreateDevice(pd, vk.VkDeviceCreateInfo(pNext=va.chain(*feats), pQueueCreateInfos=[qinfo],
                                                      ppEnabledExtensionNames=list(va.EXTENSIONS)), None)
    arm = va.ArmDevice(dev)
    keep: list = []
    try:
        props = vk.vkGetPhysicalDeviceMemoryProperties(pd)
        host = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT

        def memory_for(size: int, bits: int):
            index = next(i for i in range(props.memoryTypeCount)
                         if bits & (1 << i) and props.memoryTypes[i].propertyFlags & host == host)
            return vk.vkAllocateMemory(dev, vk.VkMemoryAllocateInfo(allocationSize=size, memoryTypeIndex=index), None)

        usage = va.const("VK_TENSOR_USAGE_DATA_GRAPH_BIT_ARM")
        linear = va.const("VK_TENSOR_TILING_LINEAR_ARM")
        # one tensor per descriptor binding of the segment (its sequence input and output)
        bound = {}
        for ds in seg.descriptor_sets:
            for b in ds.bindings:
                res = g.resources[b.resource]
                fmt_value = res.format_value
                t, k = arm.create_tensor(fmt_value, res.shape, usage, tiling=linear)
                keep += k
                size, _, bits = arm.tensor_memory_requirements(t)
                mem = memory_for(size, bits)
                arm.bind_tensor_memory(t, mem)
                bound[(ds.set, b.binding)] = (res, t, mem, size, arm.create_tensor_view(t, fmt_value))
        (in_set, in_binding), = [(s, b) for (s, b), v in bound.items() if v[0].category == "input"]
        (out_set, out_binding), = [(s, b) for (s, b), v in bound.items() if v[0].category == "output"]
        _, _, in_mem, in_size, _ = bound[(in_set, in_binding)]
        mapped = vk.vkMapMemory(dev, in_mem, 0, in_size, 0)
        np.frombuffer(mapped, np.float32, count=x.size)[:] = x.reshape(-1)
        del mapped
        vk.vkUnmapMemory(dev, in_mem)

        tensor_type = va.const("VK_DESCRIPTOR_TYPE_TENSOR_ARM")
        set_layouts = []
        for ds in seg.descriptor_sets:
            bindings = [vk.VkDescriptorSetLayoutBinding(binding=b.binding, descriptorType=tensor_type, descriptorCount=1,
                                                        stageFlags=vk.VK_SHADER_STAGE_ALL) for b in ds.bindings]
            set_layouts.append(vk.vkCreateDescriptorSetLayout(dev, vk.VkDescriptorSetLayoutCreateInfo(
                pBindings=bindings), None))
        layout = vk.vkCreatePipelineLayout(dev, vk.VkPipelineLayoutCreateInfo(pSetLayouts=set_layouts), None)
        shader = vk.vkCreateShaderModule(dev, vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv), None)

        resources = [va.GraphTensor(s, b, res.format_value, res.shape, tiling=linear)
                     for (s, b), (res, *_rest) in bound.items()]
        constants = []
        for graph_id, const_index in seg.constant_bindings:
            c = g.constants[const_index]
            res = g.resources[c.resource]
            constants.append(va.GraphConstant(graph_id, res.format_value, res.shape, g.constant_data(const_index),
                                              c.sparsity_dimension))
        pipeline, k = arm.create_data_graph_pipeline(layout, shader, module_info.entry_point, resources, constants)
        keep += k
        session, session_memories = arm.create_session(pipeline, memory_for)

        pool = vk.vkCreateDescriptorPool(dev, vk.VkDescriptorPoolCreateInfo(
            maxSets=len(set_layouts), pPoolSizes=[vk.VkDescriptorPoolSize(type=tensor_type, descriptorCount=len(bound))]),
            None)
        sets = vk.vkAllocateDescriptorSets(dev, vk.VkDescriptorSetAllocateInfo(descriptorPool=pool,
                                                                              pSetLayouts=set_layouts))
        writes = []
        for (s, b), (_, _, _, _, view) in bound.items():
            pnext, k = va.tensor_descriptor_write([view])
            keep += k
            writes.append(vk.VkWriteDescriptorSet(pNext=pnext, dstSet=sets[s], dstBinding=b, descriptorCount=1,
                                                  descriptorType=tensor_type))
        vk.vkUpdateDescriptorSets(dev, len(writes), writes, 0, None)

        bind_point = va.const("VK_PIPELINE_BIND_POINT_DATA_GRAPH_ARM")
        cpool = vk.vkCreateCommandPool(dev, vk.VkCommandPoolCreateInfo(queueFamilyIndex=family), None)
        cmd = vk.vkAllocateCommandBuffers(dev, vk.VkCommandBufferAllocateInfo(
            commandPool=cpool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        vk.vkBeginCommandBuffer(cmd, vk.VkCommandBufferBeginInfo())
        vk.vkCmdBindPipeline(cmd, bind_point, va.to_vulkan(pipeline, "VkPipeline"))
        vk.vkCmdBindDescriptorSets(cmd, bind_point, layout, 0, len(sets), sets, 0, None)
        arm.cmd_dispatch_data_graph(cmd, session)
        vk.vkEndCommandBuffer(cmd)
        queue = vk.vkGetDeviceQueue(dev, family, 0)
        vk.vkQueueSubmit(queue, 1, [vk.VkSubmitInfo(pCommandBuffers=[cmd])], None)
        vk.vkQueueWaitIdle(queue)

        res, _, out_mem, out_size, _ = bound[(out_set, out_binding)]
        mapped = vk.vkMapMemory(dev, out_mem, 0, out_size, 0)
        got = np.frombuffer(mapped, np.float32, count=want.size).copy().reshape(res.shape)
        del mapped
        vk.vkUnmapMemory(dev, out_mem)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)

        vk.vkDestroyCommandPool(dev, cpool, None)
        vk.vkDestroyDescriptorPool(dev, pool, None)
        arm.destroy_session(session)
        for mem in session_memories:
            vk.vkFreeMemory(dev, mem, None)
        vk.vkDestroyPipeline(dev, va.to_vulkan(pipeline, "VkPipeline"), None)
        vk.vkDestroyShaderModule(dev, shader, None)
        vk.vkDestroyPipelineLayout(dev, layout, None)
        for sl in set_layouts:
            vk.vkDestroyDescriptorSetLayout(dev, sl, None)
        for _, t, mem, _, view in bound.values():
            arm.destroy_tensor_view(view)
            arm.destroy_tensor(t)
            vk.vkFreeMemory(dev, mem, None)
    finally:
        vk.vkDestroyDevice(dev, None)
        vk.vkDestroyInstance(inst, None)
