"""Depth/stencil image formats (issue 11, item 3), as Arm's own ``test_dds.py::test_image_passthrough_d32_type``
uses them: a readonly ``VK_FORMAT_D32_SFLOAT_S8_UINT`` image read from a DDS of 8-byte texels
(DXGI_FORMAT_D32_FLOAT_S8X24_UINT), sampled with ``texelFetch`` and stored into an R32_SFLOAT image.
Arm's runner creates the image as D32_SFLOAT and drops the stencil ("Ignoring stencil data");
kernellab does the same with R32_SFLOAT in its place. Both runners' ``dst`` files must be identical."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.scenarios import kernellab
from kernellab.formats import dds, imagefile
from kernellab.testing.arm_runner import ArmRunner
from kernellab.vkregistry import vkformat

PASSTHROUGH = """#version 430
layout(local_size_x = 1, local_size_y = 1, local_size_z = 1) in;
layout(binding = 0) uniform sampler2D depth;
layout(set = 0, binding = 1, r32f) uniform writeonly image2D out1;
void main() {
    ivec2 coord = ivec2(gl_GlobalInvocationID.xy);
    imageStore(out1, coord, texelFetch(depth, coord, 0));
}
"""
W, H = 16, 8


def _scenario(folder: Path, fmt: str, src: str, out: str = "output.dds") -> Path:
    (folder / "k.comp").write_text(PASSTHROUGH)
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "depth", "shader_access": "readonly", "dims": [1, W, H, 1], "format": fmt, "src": src}},
        {"image": {"uid": "out", "shader_access": "writeonly", "dims": [1, W, H, 1], "format": "VK_FORMAT_R32_SFLOAT",
                   "dst": out}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [W, H, 1], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "depth"}, {"set": 0, "id": 1, "resource_ref": "out"}]}}]}
    path = folder / "scenario.json"
    path.write_text(json.dumps(doc, indent=1))
    return path


def _depth() -> np.ndarray:
    return np.resize(np.array([0.25, 0.5, 0.75, 1.0], np.float32), H * W)


def _d32s8_dds(path: Path, stencil: int) -> None:
    texels = np.zeros((H * W, 2), np.uint32)
    texels[:, 0] = _depth().view(np.uint32)
    texels[:, 1] = stencil
    dds.save(path, vkformat.lookup("VK_FORMAT_D32_SFLOAT_S8_UINT"), W, H, [texels.tobytes()])


def _run_both(folder: Path, path: Path, arm_runner: ArmRunner, icd: Path) -> tuple[bytes, str]:
    arm_runner.run(path, output=folder / "arm", icd=icd)
    proc = kernellab("run", "--scenario", path, "--output", folder / "kernellab")
    assert proc.returncode == 0, proc.stderr
    ref, got = (folder / "arm" / "output.dds").read_bytes(), (folder / "kernellab" / "output.dds").read_bytes()
    assert ref == got, "Arm's and kernellab's output.dds differ"
    return got, proc.stderr


@pytest.mark.parametrize("stencil", [0, 7])
def test_d32_sfloat_s8_uint_dds_like_arm(tmp_path: Path, arm_runner: ArmRunner, icd: Path, stencil: int) -> None:
    _d32s8_dds(tmp_path / "depth.dds", stencil)
    got, stderr = _run_both(tmp_path, _scenario(tmp_path, "VK_FORMAT_D32_SFLOAT_S8_UINT", "depth.dds"),
                            arm_runner, icd)
    out = imagefile.load(tmp_path / "kernellab" / "output.dds", vkformat.lookup("VK_FORMAT_R32_SFLOAT"), W, H)
    assert np.array_equal(np.frombuffer(out.data, np.float32), _depth())
    assert ("ignoring stencil data" in stderr) == bool(stencil)


@pytest.mark.parametrize("file_format", ["VK_FORMAT_R32_SFLOAT", "VK_FORMAT_R32_UINT"])
def test_d32_sfloat_dds_like_arm(tmp_path: Path, arm_runner: ArmRunner, icd: Path, file_format: str) -> None:
    # Arm 0.11 does not know DXGI_FORMAT_D32_FLOAT (40: "Unknown DXGI format"; its newer sources
    # map it, and so does kernellab), so the file here is another 4-byte format
    dds.save(tmp_path / "depth.dds", vkformat.lookup(file_format), W, H, [_depth().tobytes()])
    _run_both(tmp_path, _scenario(tmp_path, "VK_FORMAT_D32_SFLOAT", "depth.dds"), arm_runner, icd)
    out = imagefile.load(tmp_path / "kernellab" / "output.dds", vkformat.lookup("VK_FORMAT_R32_SFLOAT"), W, H)
    assert np.array_equal(np.frombuffer(out.data, np.float32), _depth())


def test_24_bit_depth_is_refused_with_the_reason(tmp_path: Path) -> None:
    texels = np.zeros(H * W, np.uint32)
    dds.save(tmp_path / "depth.dds", vkformat.lookup("VK_FORMAT_D24_UNORM_S8_UINT"), W, H, [texels.tobytes()])
    proc = kernellab("run", "--scenario", _scenario(tmp_path, "VK_FORMAT_D24_UNORM_S8_UINT", "depth.dds"),
                     "--output", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert "24-bit depth" in proc.stderr and "Traceback" not in proc.stderr
