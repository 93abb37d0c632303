"""Arm's Scenario Runner writes image and tensor dst files byte-identical to kernellab's writers.

Runs Arm's runner (pip ai-ml-sdk-scenario-runner, with the emulation layers) on lavapipe over a
rectangular image copy (so width and height cannot be swapped unnoticed: dims ``[1, W, H, 1]``,
``.npy`` source ``[1, H, W, C]``) and tensor copies, then compares its files with
``dds.encode``/``npy_arm.write`` of the expected data.
"""
from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from kernellab import tools
from kernellab.formats import dds, imagefile, npy_arm
from kernellab.testing.arm_runner import lavapipe_icd, require_arm_runner
from kernellab.vkregistry import vkformat

va = pytest.importorskip("kernellab.backends.vulkan_arm")

IMAGE_SHADER = """#version 450
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0, {q}) uniform readonly image2D src_img;
layout(set = 0, binding = 1, {q}) uniform writeonly image2D dst_img;
void main() {{
    ivec2 p = ivec2(gl_GlobalInvocationID.xy);
    imageStore(dst_img, p, imageLoad(src_img, p) * {scale});
}}
"""

TENSOR_SHADER = """#version 450
#extension GL_ARM_tensors : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0) uniform tensorARM<{t}, 2> src_t;
layout(set = 0, binding = 1) uniform tensorARM<{t}, 2> dst_t;
void main() {{
    uint coords[2] = uint[](gl_GlobalInvocationID.y, gl_GlobalInvocationID.x);
    {t} v;
    tensorReadARM(src_t, coords, v);
    tensorWriteARM(dst_t, coords, {t}(v + {t}(3)));
}}
"""


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    icd = lavapipe_icd()
    if icd is None:
        pytest.fail("lavapipe is not installed: apt-get install mesa-vulkan-drivers libvulkan1")
    return require_arm_runner(tmp_path_factory.mktemp("layers")), icd


def run_arm(arm, folder: Path, resources: list, commands: list) -> Path:
    runner, icd = arm
    (folder / "s.json").write_text(json.dumps({"resources": resources, "commands": commands}))
    runner.run(folder / "s.json", output=folder / "out", icd=icd)
    return folder / "out"


@pytest.mark.parametrize("name, qualifier, scale", [("VK_FORMAT_R8G8B8A8_UNORM", "rgba8", "1.0"),
                                                    ("VK_FORMAT_R32_SFLOAT", "r32f", "2.0")])
def test_image_dst_dds_matches(arm, tmp_path, name, qualifier, scale):
    fmt = vkformat.lookup(name)
    w, h = 5, 3
    rng = np.random.default_rng(1)
    if fmt.is_float:
        src = rng.standard_normal((1, h, w, fmt.channels)).astype(fmt.dtype)
        want = src[0] * np.float32(scale)
    else:
        src = rng.integers(0, 256, (1, h, w, fmt.channels), dtype=np.uint8)
        want = src[0]
    np.save(tmp_path / "img.npy", src)
    glsl = tmp_path / "copy.comp"
    glsl.write_text(IMAGE_SHADER.format(q=qualifier, scale=scale))
    tools.require("glslangValidator").run(["-V", glsl, "-o", tmp_path / "copy.spv"], what="compiling")
    dims = [1, w, h, 1]
    out = run_arm(arm, tmp_path, [
        {"shader": {"uid": "s", "src": "copy.spv", "type": "SPIR-V", "entry": "main"}},
        {"image": {"uid": "a", "format": name, "dims": dims, "shader_access": "readonly", "src": "img.npy"}},
        {"image": {"uid": "b", "format": name, "dims": dims, "shader_access": "writeonly", "dst": "out.dds"}},
    ], [{"dispatch_compute": {"shader_ref": "s", "rangeND": [w, h], "bindings": [
        {"set": 0, "id": 0, "resource_ref": "a", "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE"},
        {"set": 0, "id": 1, "resource_ref": "b"}]}}])
    assert imagefile.extent_from_dims(dims) == (w, h)
    # our reader accepts the source the same way Arm's does
    assert bytes(imagefile.load(tmp_path / "img.npy", fmt, w, h).data) == src.tobytes()
    assert (out / "out.dds").read_bytes() == dds.encode(fmt, w, h, [want])


@pytest.mark.parametrize("name, glsl_type", [("VK_FORMAT_R32_SINT", "int32_t"), ("VK_FORMAT_R16_UINT", "uint16_t"),
                                             ("VK_FORMAT_R8_SINT", "int8_t"), ("VK_FORMAT_R16_SFLOAT", "float16_t"),
                                             ("VK_FORMAT_R32_SFLOAT", "float")])
def test_tensor_dst_npy_matches(arm, tmp_path, name, glsl_type):
    fmt = vkformat.lookup(name)
    src = (np.arange(6).reshape(2, 3) * 3 - 4).astype(fmt.dtype)
    np.save(tmp_path / "t.npy", src)
    glsl = tmp_path / "t.comp"
    glsl.write_text(TENSOR_SHADER.format(t=glsl_type))
    va.arm_glslc().run(["--input", glsl, "--output", tmp_path / "t.spv"], what="compiling")
    out = run_arm(arm, tmp_path, [
        {"shader": {"uid": "s", "src": "t.spv", "type": "SPIR-V", "entry": "main"}},
        {"tensor": {"uid": "a", "format": name, "dims": [2, 3], "shader_access": "readonly", "src": "t.npy"}},
        {"tensor": {"uid": "b", "format": name, "dims": [2, 3], "shader_access": "writeonly", "dst": "t_out.npy"}},
    ], [{"dispatch_compute": {"shader_ref": "s", "rangeND": [3, 2], "bindings": [
        {"set": 0, "id": 0, "resource_ref": "a"}, {"set": 0, "id": 1, "resource_ref": "b"}]}}])
    want = (src + fmt.dtype.type(3)).astype(fmt.dtype)
    buf = io.BytesIO()
    npy_arm.write(buf, want, (2, 3), fmt.npy_descr)
    assert (out / "t_out.npy").read_bytes() == buf.getvalue()


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


def test_graph_command_names_of_arm_0_11(arm, tmp_path):
    """What Arm's runner 0.11 accepts, for kernellab's aliases (docs/ml-extensions.md):
    ``dispatch_graph`` and ``dispatch_vgf`` run a VGF ``graph`` resource; ``dispatch_data_graph``
    and ``dispatch_spirv_graph`` run a graph SPIR-V module from a ``shader`` resource."""
    import shutil
    import subprocess
    import sys

    from kernellab.formats import vgf

    (tmp_path / "add.mlir").write_text(ADD_TOSA)
    exe = shutil.which("model-converter") or str(Path(sys.executable).parent / "model-converter")
    subprocess.run([exe, "-i", str(tmp_path / "add.mlir"), "-o", str(tmp_path / "add.vgf")], check=True,
                   capture_output=True)
    g = vgf.read(tmp_path / "add.vgf")
    (tmp_path / "graph.spv").write_bytes(g.module_spirv(0))
    a, b = np.arange(4, dtype=np.float32).reshape(1, 4), np.full((1, 4), 0.5, np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    want = io.BytesIO()
    npy_arm.write(want, a + np.array([1, 2, 3, 4], np.float32) + b, (1, 4), "<f4")

    def tensors(dst: str) -> list:
        t = {"format": "VK_FORMAT_R32_SFLOAT", "dims": [1, 4]}
        return [{"tensor": {"uid": "a", **t, "shader_access": "readonly", "src": "a.npy"}},
                {"tensor": {"uid": "b", **t, "shader_access": "readonly", "src": "b.npy"}},
                {"tensor": {"uid": "o", **t, "shader_access": "writeonly", "dst": dst}}]

    bindings = [{"set": 0, "id": i, "resource_ref": r} for i, r in enumerate("abo")]
    graph = {"graph": {"uid": "g", "src": "add.vgf"}}
    shader = {"shader": {"uid": "g", "src": "graph.spv", "type": "SPIR-V", "entry": g.modules[0].entry_point}}
    for command, resource in [("dispatch_graph", graph), ("dispatch_vgf", graph),
                              ("dispatch_data_graph", shader), ("dispatch_spirv_graph", shader)]:
        folder = tmp_path / command
        folder.mkdir()
        for f in ("add.vgf", "graph.spv", "a.npy", "b.npy"):
            shutil.copy(tmp_path / f, folder / f)
        out = run_arm(arm, folder, [resource, *tensors("o.npy")],
                      [{command: {"graph_ref": "g", "bindings": bindings}}])
        assert (out / "o.npy").read_bytes() == want.getvalue(), command
