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
from kernellab.formats import dds, imagefile, npy_arm, vkformat
from kernellab.testing.arm_runner import lavapipe_icd, require_arm_runner

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
