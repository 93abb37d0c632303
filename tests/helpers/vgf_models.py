"""Small VGF graphs for tests, built from TOSA MLIR text with Arm's model converter (no binaries committed)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

WEIGHTS = np.array([[[1, 0, 0], [0, 1, 0], [0, 0, 1]], [[0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0.5, 0.5, 0.5]]],
                   np.float32).reshape(2, 3, 3, 1)
BIAS = np.array([0.25, -1.0], np.float32)
IN_SHAPE = (1, 5, 4, 1)
OUT_SHAPE = (1, 3, 2, 2)

POST_ATTRS = {
    "entry_point": "main", "workgroup_sizes": [1, 1, 1],
    "input_0_vkformat": "VK_FORMAT_R32_SFLOAT", "input_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_TENSOR_ARM",
    "input_0_binding": 0, "input_0_descriptorset": 0,
    "output_0_vkformat": "VK_FORMAT_R32_SFLOAT", "output_0_vkdescriptortype": "VK_DESCRIPTOR_TYPE_TENSOR_ARM",
    "output_0_binding": 1, "output_0_descriptorset": 0,
}

#: the substitute for the placeholder: out = in * SCALE + offset (a specialization constant and a push constant)
POST_SHADER = """#version 450
#extension GL_ARM_tensors : require
layout(local_size_x = 1) in;
layout(constant_id = 0) const float SCALE = 2.0;
layout(push_constant) uniform Push { float offset; } pc;
layout(set = 0, binding = 0) uniform tensorARM<float, 4> src_t;
layout(set = 0, binding = 1) uniform tensorARM<float, 4> dst_t;
void main() {
    for (uint y = 0; y < 3; ++y)
        for (uint x = 0; x < 2; ++x)
            for (uint c = 0; c < 2; ++c) {
                float v;
                tensorReadARM(src_t, uint[](0, y, x, c), v);
                tensorWriteARM(dst_t, uint[](0, y, x, c), v * SCALE + pc.offset);
            }
}
"""


def conv_tosa(with_placeholder: bool) -> str:
    def dense(a: np.ndarray) -> str:
        return np.array2string(a, separator=", ", floatmode="fixed", threshold=10_000).replace("\n", "")
    post, result = "", "%0"
    if with_placeholder:
        post = (f'    %1 = tosa.custom %0 {{domain_name = "com.arm.VulkanCustomShader", operator_name = "post", '
                f'implementation_attrs = {json.dumps(json.dumps(POST_ATTRS))}}} '
                f': (tensor<1x3x2x2xf32>) -> tensor<1x3x2x2xf32>\n')
        result = "%1"
    return f"""
module {{
  func.func @main(%arg0: tensor<1x5x4x1xf32>) -> tensor<1x3x2x2xf32> {{
    %w = "tosa.const"() <{{values = dense<{dense(WEIGHTS)}> : tensor<2x3x3x1xf32>}}> : () -> tensor<2x3x3x1xf32>
    %b = "tosa.const"() <{{values = dense<{dense(BIAS)}> : tensor<2xf32>}}> : () -> tensor<2xf32>
    %zp = "tosa.const"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>
    %0 = tosa.conv2d %arg0, %w, %b, %zp, %zp {{acc_type = f32, dilation = array<i64: 1, 1>,
           pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}}
         : (tensor<1x5x4x1xf32>, tensor<2x3x3x1xf32>, tensor<2xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x3x2x2xf32>
{post}    return {result} : tensor<1x3x2x2xf32>
  }}
}}
"""


def conv_reference(x: np.ndarray) -> np.ndarray:
    _, h, w, _ = x.shape
    out = np.zeros((1, h - 2, w - 2, 2), np.float32)
    for oc in range(2):
        for y in range(h - 2):
            for xx in range(w - 2):
                out[0, y, xx, oc] = np.sum(x[0, y:y + 3, xx:xx + 3, :] * WEIGHTS[oc]) + BIAS[oc]
    return out


def build_conv_vgf(folder: Path, name: str = "conv", with_placeholder: bool = False) -> Path:
    """Convert the conv model to ``folder/name.vgf`` with Arm's model converter; returns the path."""
    (folder / f"{name}.mlir").write_text(conv_tosa(with_placeholder))
    exe = shutil.which("model-converter") or str(Path(sys.executable).parent / "model-converter")
    subprocess.run([exe, "-i", str(folder / f"{name}.mlir"), "-o", str(folder / f"{name}.vgf")], check=True,
                   capture_output=True)
    return folder / f"{name}.vgf"


#: out = a + [1, 2, 3, 4] + b: a graph whose constant the converter keeps inside the SPIR-V module
ADD_TOSA = """
module {
  func.func @main(%arg0: tensor<1x4xf32>, %arg1: tensor<1x4xf32>) -> tensor<1x4xf32> {
    %0 = "tosa.const"() <{values = dense<[[1.0, 2.0, 3.0, 4.0]]> : tensor<1x4xf32>}> : () -> tensor<1x4xf32>
    %1 = tosa.add %arg0, %0 : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    %2 = tosa.add %1, %arg1 : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
    return %2 : tensor<1x4xf32>
  }
}
"""


def build_add_graph_module(folder: Path) -> tuple[Path, str]:
    """The add graph's SPIR-V graph module as ``folder/graph.spv`` and its entry point."""
    from kernellab.formats import vgf

    (folder / "add.mlir").write_text(ADD_TOSA)
    exe = shutil.which("model-converter") or str(Path(sys.executable).parent / "model-converter")
    subprocess.run([exe, "-i", str(folder / "add.mlir"), "-o", str(folder / "add.vgf")], check=True,
                   capture_output=True)
    g = vgf.read(folder / "add.vgf")
    code = g.module_spirv(0)
    assert code is not None
    (folder / "graph.spv").write_bytes(code)
    return folder / "graph.spv", g.modules[0].entry_point


def data_graph_scenario(folder: Path, command: str = "dispatch_data_graph") -> tuple[dict, np.ndarray]:
    """A scenario running the add graph module with ``command``; returns it and the expected output."""
    _, entry = build_add_graph_module(folder)
    a, b = np.arange(4, dtype=np.float32).reshape(1, 4) - 1.5, np.full((1, 4), 0.25, np.float32)
    np.save(folder / "a.npy", a)
    np.save(folder / "b.npy", b)
    t = {"format": "VK_FORMAT_R32_SFLOAT", "dims": [1, 4]}
    doc = {"resources": [
        {"shader": {"uid": "g", "src": "graph.spv", "type": "SPIR-V", "entry": entry}},
        {"tensor": {"uid": "a", **t, "shader_access": "readonly", "src": "a.npy"}},
        {"tensor": {"uid": "b", **t, "shader_access": "readonly", "src": "b.npy"}},
        {"tensor": {"uid": "o", **t, "shader_access": "writeonly", "dst": "o.npy"}}],
        "commands": [{command: {"graph_ref": "g", "bindings": [
            {"set": 0, "id": i, "resource_ref": r} for i, r in enumerate("abo")]}}]}
    return doc, a + np.array([1, 2, 3, 4], np.float32) + b
