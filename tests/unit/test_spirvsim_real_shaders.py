"""Constructs the Vulkan CTS's compute shaders use that the checker first refused or failed on
(conformance/verify_coverage.py): the neutral execution modes and half-precision Determinant /
MatrixInverse, each with a planted defect beside its clean twin."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from kernellab import tools
from kernellab.spirvsim import Binding, Unsupported, check_dispatch, glsl_to_spirv

UNIFORM_CF = """#version 450
#extension GL_EXT_subgroup_uniform_control_flow : require
layout(local_size_x = 32) in;
layout(std430, binding = 0) buffer B { uint data[]; };
void main() [[subgroup_uniform_control_flow]] {
  uint i = gl_LocalInvocationID.x;
  data[INDEX] = i;
}
"""


def _kinds(spv: bytes, size: int = 128) -> list[str]:
    r = check_dispatch(spv, "main", (1, 1, 1), bindings={(0, 0): Binding("data", bytes(size))})
    return sorted({f.kind for f in r.findings})


@pytest.mark.parametrize("index, kinds", [("i", []), ("i / 2u", ["data-race"])])
def test_subgroup_uniform_control_flow_is_checked(index, kinds):
    spv = glsl_to_spirv(UNIFORM_CF.replace("INDEX", index), debug="-g0")
    assert _kinds(spv) == kinds


def _with_mode(mode: str, capability: str) -> bytes:
    """The clean shader above with a float-controls execution mode added."""
    dis, asm = tools.find("spirv-dis"), tools.find("spirv-as")
    if dis is None or asm is None:
        pytest.skip("needs spirv-dis and spirv-as")
    spv = glsl_to_spirv(UNIFORM_CF.replace("INDEX", "i").replace("[[subgroup_uniform_control_flow]]", ""),
                        debug="-g0")
    env = {**os.environ, **dis.env}
    lines = subprocess.run([str(dis.path), "-", "--raw-id"], input=spv, capture_output=True, check=True,
                           env=env).stdout.decode().splitlines()
    out = []
    for line in lines:
        out.append(line)
        if line.startswith("OpCapability Shader"):
            out += [f"OpCapability {capability}", 'OpExtension "SPV_KHR_float_controls"']
        if "OpExecutionMode" in line and "LocalSize" in line:
            out.append(line.split("LocalSize")[0] + mode)
    return subprocess.run([str(asm.path), "-", "-o", "-", "--target-env", "vulkan1.2"], input="\n".join(out).encode(),
                          capture_output=True, check=True, env=env).stdout


def test_float_controls_that_numpy_keeps_are_accepted():
    assert _kinds(_with_mode("DenormPreserve 32", "DenormPreserve")) == []
    assert _kinds(_with_mode("SignedZeroInfNanPreserve 32", "SignedZeroInfNanPreserve")) == []


def test_flush_to_zero_is_refused():
    with pytest.raises(Unsupported, match="DenormFlushToZero"):
        _kinds(_with_mode("DenormFlushToZero 32", "DenormFlushToZero"))


HALF_MAT = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 4) in;
layout(std430, binding = 0) buffer B { float16_t outv[]; };
void main() {
  uint i = gl_LocalInvocationID.x;
  f16mat3 m = f16mat3(float16_t(2.0), float16_t(1.0), float16_t(0.0),
                      float16_t(0.0), float16_t(3.0), float16_t(0.0),
                      float16_t(1.0), float16_t(0.0), float16_t(float(i) + 1.0));
  outv[INDEX] = determinant(m) + inverse(m)[0][0];
}
"""


@pytest.mark.parametrize("index, kinds", [("i", []), ("i + 1u", ["out-of-bounds"])])
def test_half_precision_determinant_and_inverse(index, kinds):
    spv = glsl_to_spirv(HALF_MAT.replace("INDEX", index), debug="-g0")
    r = check_dispatch(spv, "main", (1, 1, 1), bindings={(0, 0): Binding("out", bytes(8))})
    assert sorted({f.kind for f in r.findings}) == kinds
    if not kinds:
        got = np.frombuffer(r.buffers["out"], np.float16)
        for i in range(4):
            m = np.array([[2, 1, 0], [0, 3, 0], [1, 0, i + 1]], np.float32).T  # GLSL is column-major
            want = np.linalg.det(m) + np.linalg.inv(m)[0, 0]
            assert got[i] == pytest.approx(want, rel=1e-2)


REQUIRED = """#version 450
#extension GL_KHR_shader_subgroup_basic : require
layout(local_size_x = 8) in;
layout(std430, set = 0, binding = 0) buffer B { uint data[]; };
void main() {
  if (gl_SubgroupID == 0u) data[gl_SubgroupInvocationID] = 1u;
}
"""


@pytest.mark.parametrize("required, kinds", [(4, set()), (None, {"out-of-bounds"})])
def test_verify_runs_a_pipeline_with_its_required_subgroup_size(tmp_path, capsys, required, kinds):
    """A buffer of 4 uints written by subgroup 0's lanes: in bounds with the required size 4,
    out of bounds with lavapipe's 8 (the size verify uses when the pipeline requires none)."""
    import json

    from kernellab.cli import main
    (tmp_path / "k.comp").write_text(REQUIRED)
    shader: dict[str, object] = {"uid": "k", "src": "k.comp", "type": "GLSL"}
    if required is not None:
        shader["subgroup"] = {"required_size": required}
    (tmp_path / "s.json").write_text(json.dumps({"resources": [
        {"shader": shader}, {"buffer": {"uid": "data", "size": 16, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "data"}]}}]}))
    main(["verify", str(tmp_path / "s.json"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert {f["kind"] for f in doc["findings"]} == kinds


@pytest.mark.parametrize("index, kinds", [("i", set()), ("i / 2u", {"data-race"})])
def test_verify_checks_a_spirv_1_6_module(tmp_path, capsys, index, kinds):
    """Arm's scenarios ship SPIR-V 1.6 (glslc for Vulkan 1.3): validated for vulkan1.3, then checked."""
    import json

    from kernellab.cli import main
    spv = glsl_to_spirv(UNIFORM_CF.replace("INDEX", index).replace("[[subgroup_uniform_control_flow]]", ""),
                        target_env="vulkan1.3", debug="-g0")
    assert spv[5] == 6  # the module's minor version
    (tmp_path / "k.spv").write_bytes(spv)
    (tmp_path / "s.json").write_text(json.dumps({"resources": [
        {"shader": {"uid": "k", "src": "k.spv", "type": "SPIR-V"}},
        {"buffer": {"uid": "data", "size": 128, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "data"}]}}]}))
    main(["verify", str(tmp_path / "s.json"), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert {f["kind"] for f in doc["findings"]} == kinds
