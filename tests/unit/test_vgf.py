"""Decoding VGF files: one built field by field with Arm's encoder, one converted from TOSA."""
from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats import vgf

vgfpy = pytest.importorskip("vgfpy", reason="pip ai-ml-sdk-vgf-library (kernellab[ml]) decodes VGF files")

R32F, R8I = 100, 14          # VK_FORMAT_R32_SFLOAT, VK_FORMAT_R8_SINT
TENSOR, STORAGE_IMAGE = 1000460000, 3
COMPUTE_STAGE = 0x20


def encoded_vgf() -> tuple[bytes, np.ndarray, list[int]]:
    enc = vgfpy.CreateEncoder(4242)
    spirv = [0x07230203, 0x00010600, 0, 8, 0]                       # a stand-in module body
    graph = enc.AddModule(vgfpy.ModuleType.Graph, "main_graph", "graph_entry", spirv)
    placeholder = enc.AddModule(vgfpy.ModuleType.Compute, "post_shader", "main")   # no code: a placeholder
    glsl = enc.AddModule(vgfpy.ModuleType.Compute, "pre_shader", "main", vgfpy.ShaderType.Glsl,
                         "#version 450\nvoid main() {}\n")
    inp = enc.AddInputResource(TENSOR, R32F, [1, 8, 8, 3], [], 7)
    mid = enc.AddIntermediateResource(TENSOR, R32F, [1, 8, 8, 4], [])
    out = enc.AddOutputResource(STORAGE_IMAGE, R8I, [1, 8, 8, 4], [256, 32, 4, 1])
    weights_res = enc.AddConstantResource(R32F, [4, 1, 1, 3], [])
    weights = np.arange(12, dtype=np.float32)
    const = enc.AddConstant(weights_res, weights)
    b_in, b_mid, b_mid2, b_out = (enc.AddBindingSlot(0, inp), enc.AddBindingSlot(1, mid),
                                  enc.AddBindingSlot(0, mid), enc.AddBindingSlot(1, out))
    set0 = enc.AddDescriptorSetInfo([b_in, b_mid], 0)
    set1 = enc.AddDescriptorSetInfo([b_mid2, b_out], 1)
    enc.AddSegmentInfo(graph, "graph_segment", [set0], [b_in], [b_mid], [const])
    pc = enc.AddPushConstRange(COMPUTE_STAGE, 0, 16)
    enc.AddSegmentInfo(placeholder, "shader_segment", [set1], [b_mid2], [b_out], [], [8, 8, 1], [pc])
    enc.AddSegmentInfo(glsl, "glsl_segment", [], [], [], [], [1, 1, 1])
    m_in, m_out = enc.AddBindingSlot(0, inp), enc.AddBindingSlot(1, out)
    enc.AddModelSequenceInputsOutputs([m_in], ["image_in"], [m_out], ["image_out"])
    enc.Finish()
    buf = io.BytesIO()
    assert enc.WriteTo(buf)
    return buf.getvalue(), weights, spirv


def test_decode_every_part(tmp_path):
    data, weights, spirv = encoded_vgf()
    path = tmp_path / "g.vgf"
    path.write_bytes(data)
    g = vgf.read(path)
    assert g.vulkan_headers_version == 4242 and g.version[0] == 0
    assert [(m.name, m.kind, m.code, m.entry_point) for m in g.modules] == [
        ("main_graph", "graph", "spirv", "graph_entry"), ("post_shader", "compute", None, "main"),
        ("pre_shader", "compute", "glsl", "main")]
    assert [m.name for m in g.placeholders()] == ["post_shader"]
    assert g.module_spirv(0) == np.array(spirv, np.uint32).tobytes()
    assert g.module_spirv(1) is None
    assert g.module_source(2).startswith("#version 450")

    r = g.resources
    assert [x.category for x in r] == ["input", "intermediate", "output", "constant"]
    assert r[0].format == "VK_FORMAT_R32_SFLOAT" and r[0].shape == (1, 8, 8, 3) and r[0].alias_group == 7
    assert r[0].descriptor_type == "VK_DESCRIPTOR_TYPE_TENSOR_ARM"
    assert r[2].descriptor_type == "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE" and r[2].strides == (256, 32, 4, 1)
    assert r[2].format == "VK_FORMAT_R8_SINT"
    assert r[3].descriptor_type is None and r[3].shape == (4, 1, 1, 3)

    s0, s1, s2 = g.segments
    assert (s0.name, s0.kind, s0.module, s0.constants) == ("graph_segment", "graph", 0, (0,))
    assert s0.descriptor_sets == (vgf.DescriptorSet(0, (vgf.Binding(0, 0), vgf.Binding(1, 1))),)
    assert s0.inputs == (vgf.Binding(0, 0),) and s0.outputs == (vgf.Binding(1, 1),)
    assert s1.dispatch_shape == (8, 8, 1) and s1.push_constant_ranges == (vgf.PushConstantRange(COMPUTE_STAGE, 0, 16),)
    assert s1.descriptor_sets[0].set == 1 and s1.outputs == (vgf.Binding(1, 2),)
    assert s2.module == 2 and s2.descriptor_sets == ()

    assert g.constants == [vgf.Constant(0, 3, 48, None)]
    assert g.constant_data(0) == weights.tobytes()
    assert [(p.name, p.binding, p.resource.index) for p in g.inputs] == [("image_in", 0, 0)]
    assert [(p.name, p.binding, p.resource.index) for p in g.outputs] == [("image_out", 1, 2)]
    summary = g.summary()
    assert summary["modules"][1]["placeholder"] is True
    assert summary["inputs"] == [{"name": "image_in", "binding": 0, "resource": 0}]


def test_not_a_vgf(tmp_path):
    path = tmp_path / "x.vgf"
    path.write_bytes(b"\0" * 200)
    with pytest.raises(InputError) as e:
        vgf.read(path)
    assert e.value.problems[0].file == str(path) and "not a VGF file" in str(e.value)
    path.write_bytes(b"VGF")
    with pytest.raises(InputError, match="shorter than a VGF header"):
        vgf.read(path)
    with pytest.raises(InputError, match="cannot read VGF file"):
        vgf.read(tmp_path / "missing.vgf")


def test_truncated_vgf(tmp_path):
    data, _, _ = encoded_vgf()
    path = tmp_path / "cut.vgf"
    path.write_bytes(data[: len(data) - 40])
    with pytest.raises(InputError) as e:
        vgf.read(path)
    assert e.value.problems[0].file == str(path)


SHADER_ATTRS = {
    "entry_point": "main", "workgroup_sizes": [1, 1, 1],
    "input_0_vkformat": "VK_FORMAT_R32_SFLOAT", "input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_TENSOR_ARM",
    "input_0_binding": 0, "input_0_descriptorset": 0,
    "output_0_vkformat": "VK_FORMAT_R32_SFLOAT", "output_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_TENSOR_ARM",
    "output_0_binding": 1, "output_0_descriptorset": 0,
}

# A 3x3 conv2d with two output channels, then a shader placeholder (a TOSA custom op with no code).
CONV_TOSA = """
module {
  func.func @main(%arg0: tensor<1x4x4x1xf32>) -> tensor<1x2x2x2xf32> {
    %w = "tosa.const"() <{values = dense<[[[[1.0], [0.0], [0.0]], [[0.0], [1.0], [0.0]], [[0.0], [0.0], [1.0]]],
                                          [[[0.5], [0.5], [0.5]], [[0.5], [0.5], [0.5]], [[0.5], [0.5], [0.5]]]]>
         : tensor<2x3x3x1xf32>}> : () -> tensor<2x3x3x1xf32>
    %b = "tosa.const"() <{values = dense<[0.25, -1.0]> : tensor<2xf32>}> : () -> tensor<2xf32>
    %zp = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> tensor<1xf32>
    %0 = tosa.conv2d %arg0, %w, %b, %zp, %zp {acc_type = f32, dilation = array<i64: 1, 1>,
           pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}
         : (tensor<1x4x4x1xf32>, tensor<2x3x3x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x2x2x2xf32>
    %1 = tosa.custom %0 {domain_name = "com.arm.VulkanCustomShader", operator_name = "post_shader",
           implementation_attrs = ATTRS} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
    return %1 : tensor<1x2x2x2xf32>
  }
}
""".replace("ATTRS", json.dumps(json.dumps(SHADER_ATTRS)))


def model_converter() -> Path:
    found = shutil.which("model-converter") or str(Path(sys.executable).parent / "model-converter")
    assert Path(found).is_file(), "Arm's model converter is missing: pip install ai-ml-sdk-model-converter"
    return Path(found)


def build_conv_vgf(tmp_path: Path) -> Path:
    src = tmp_path / "conv.mlir"
    src.write_text(CONV_TOSA)
    out = tmp_path / "conv.vgf"
    subprocess.run([str(model_converter()), "-i", str(src), "-o", str(out)], check=True, capture_output=True)
    return out


def test_decode_model_converter_conv_with_placeholder(tmp_path):
    g = vgf.read(build_conv_vgf(tmp_path))
    assert [(m.kind, m.placeholder) for m in g.modules] == [("graph", False), ("compute", True)]
    graph_seg, shader_seg = g.segments
    assert graph_seg.kind == "graph" and shader_seg.kind == "compute"
    assert g.module_spirv(graph_seg.module)[:4] == b"\x03\x02\x23\x07"   # SPIR-V magic, little-endian
    # the shader segment's placeholder module is what a shader substitution targets
    assert g.placeholders()[0].index == shader_seg.module
    assert [(p.name, p.resource.shape, p.resource.format) for p in g.inputs] == [
        ("input_0", (1, 4, 4, 1), "VK_FORMAT_R32_SFLOAT")]
    assert [(p.name, p.resource.shape, p.resource.category) for p in g.outputs] == [
        ("output_0", (1, 2, 2, 2), "output")]
    weights = np.frombuffer(g.constant_data(0), np.float32)
    assert weights.shape == (18,) and weights[0] == 1.0 and weights[9] == 0.5
    assert g.resources[g.constants[0].resource].shape == (2, 3, 3, 1)


def test_ports_and_binding_checks():
    data, _, _ = encoded_vgf()
    g = vgf.parse(data, "g.vgf")
    inp, out = g.port(0), g.port(1)
    assert inp.name == "image_in" and out.name == "image_out" and g.port(9) is None
    # input: a [1, 8, 8, 3] R32_SFLOAT tensor
    assert g.binding_problem(inp, "tensor", [1, 8, 8, 3], "VK_FORMAT_R32_SFLOAT") is None
    assert g.binding_problem(inp, "tensor", [1, 8, 8, 4], "VK_FORMAT_R32_SFLOAT") == (
        "VGF input 'image_in' (binding 0) has shape [1, 8, 8, 3], the tensor has dims [1, 8, 8, 4]")
    assert g.binding_problem(inp, "tensor", [1, 8, 8, 3], "VK_FORMAT_R16_SFLOAT") == (
        "VGF input 'image_in' (binding 0) has format VK_FORMAT_R32_SFLOAT, the tensor has VK_FORMAT_R16_SFLOAT")
    assert "is a tensor, not a buffer" in g.binding_problem(inp, "buffer", [], "", size=4)
    # output: a storage image [1, 8, 8, 4] (NHWC) of R8_SINT -> scenario dims [1, W, H, 1]
    assert g.binding_problem(out, "image", [1, 8, 8, 1], "VK_FORMAT_R8_SINT") is None
    assert "needs dims [1, 8, 8, 1], not [1, 4, 8, 1]" in g.binding_problem(out, "image", [1, 4, 8, 1], "VK_FORMAT_R8_SINT")
    assert vgf.image_dims((6, 10, 4)) == (1, 10, 6, 1)
