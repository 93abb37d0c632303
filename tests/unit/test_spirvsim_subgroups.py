"""Subgroup operations glslang cannot write (OpGroupNonUniformRotateKHR), assembled from
disassembled glslang output, and the reductions' group operations against NumPy."""
from __future__ import annotations

import os
import subprocess

import numpy as np
import pytest

from kernellab import tools
from kernellab.spirvsim import Binding, check_dispatch, glsl_to_spirv
from kernellab.spirvsim.subgroup import CLUSTERED, EXCLUSIVE, INCLUSIVE, REDUCE, Layout, scan

SHUFFLE = """#version 450
#extension GL_KHR_shader_subgroup_shuffle : require
layout(local_size_x = 16) in;
layout(std430, binding = 0) buffer B { uint data[]; };
layout(std430, binding = 1) buffer O { uint outv[]; };
layout(push_constant) uniform PC { uint delta; } pc;
void main() {
  uint i = gl_GlobalInvocationID.x;
  uint d = DELTA;
  if (i < ACTIVE) outv[i] = subgroupShuffle(data[i], d);
}
"""


def _rotate_module(delta: str, active: int, cluster: bool) -> bytes:
    """The shuffle above with its OpGroupNonUniformShuffle turned into a rotate."""
    dis, asm = tools.find("spirv-dis"), tools.find("spirv-as")
    if dis is None or asm is None:
        pytest.skip("needs spirv-dis and spirv-as")
    spv = glsl_to_spirv(SHUFFLE.replace("DELTA", delta).replace("ACTIVE", str(active)), debug="-g0")
    env = {**os.environ, **dis.env}
    text = subprocess.run([str(dis.path), "-", "--raw-id"], input=spv, capture_output=True, check=True, env=env).stdout
    lines = text.decode().splitlines()
    out = []
    for line in lines:
        if "OpGroupNonUniformShuffle " in line:
            line = line.replace("OpGroupNonUniformShuffle", "OpGroupNonUniformRotateKHR")
            if cluster:
                line += " %cluster4"
        out.append(line)
        if line.startswith("OpCapability Shader"):
            out.append("OpCapability GroupNonUniformRotateKHR")
            out.append('OpExtension "SPV_KHR_subgroup_rotate"')
    source = "\n".join(out)
    if cluster:  # a constant 4 for the ClusterSize operand, after the uint type
        uint = next(l.split(" = ")[0] for l in out if "OpTypeInt 32 0" in l)
        source = source.replace(f"{uint} = OpTypeInt 32 0", f"{uint} = OpTypeInt 32 0\n%cluster4 = OpConstant {uint} 4")
    return subprocess.run([str(asm.path), "-", "-o", "-", "--target-env", "vulkan1.2"], input=source.encode(),
                          capture_output=True, check=True, env=env).stdout


def _run(spv: bytes, delta: int = 0) -> tuple[list[str], np.ndarray]:
    data = np.arange(16, dtype=np.uint32) * 10
    r = check_dispatch(spv, "main", (1, 1, 1), push_constants=np.uint32(delta).tobytes(), subgroup_size=8,
                       bindings={(0, 0): Binding("data", data.tobytes()), (0, 1): Binding("out", bytes(64))})
    return [f.kind for f in r.findings], np.frombuffer(r.buffers["out"], np.uint32)


def test_rotate_over_the_subgroup_and_clusters() -> None:
    kinds, out = _run(_rotate_module("3u", 16, False))
    lane = np.arange(16)
    assert kinds == [] and out.tolist() == ((lane - lane % 8 + (lane + 3) % 8) * 10).tolist()
    kinds, out = _run(_rotate_module("3u", 16, True))
    assert kinds == [] and out.tolist() == ((lane - lane % 4 + (lane + 3) % 4) * 10).tolist()


def test_rotate_defects() -> None:
    # 4 of 8 active: invocations 1..3 rotate onto 4..6, which are inactive
    kinds, _ = _run(_rotate_module("3u", 4, False))
    assert kinds == ["subgroup-inactive-read"]
    # Delta differs between the invocations of a subgroup
    kinds, _ = _run(_rotate_module("gl_SubgroupInvocationID", 16, False))
    assert "subgroup-nonuniform" in kinds
    # a dynamically uniform Delta from the push constants is fine
    kinds, out = _run(_rotate_module("pc.delta", 16, False), delta=5)
    lane = np.arange(16)
    assert kinds == [] and out.tolist() == ((lane - lane % 8 + (lane + 5) % 8) * 10).tolist()


@pytest.mark.parametrize("name", ["IAdd", "UMin", "SMax", "FMul", "BitwiseXor"])
def test_group_operations_match_numpy(name: str) -> None:
    rng = np.random.default_rng(7)
    signed = name == "SMax"
    g = rng.integers(-50, 50, (3, 8)).astype(np.int32).view(np.uint32) if signed else \
        rng.integers(1, 5, (3, 8)).astype(np.float32 if name == "FMul" else np.uint32)
    act = rng.random((3, 8)) < 0.7
    ufunc = {"IAdd": np.add, "UMin": np.minimum, "SMax": np.maximum, "FMul": np.multiply,
             "BitwiseXor": np.bitwise_xor}[name]
    view = g.view(np.int32) if signed else g
    for r in range(3):
        vals = view[r][act[r]]
        got = scan(name, REDUCE, g, act, None)[r]
        got = got.view(np.int32) if signed else got
        assert (got == ufunc.reduce(vals)).all()
        inc = scan(name, INCLUSIVE, g, act, None)[r]
        inc = inc.view(np.int32) if signed else inc
        exc = scan(name, EXCLUSIVE, g, act, None)[r]
        exc = exc.view(np.int32) if signed else exc
        for j in np.nonzero(act[r])[0]:
            before = view[r][:j][act[r][:j]]
            assert inc[j] == ufunc.reduce(np.r_[before, view[r][j]])
            if before.size:
                assert exc[j] == ufunc.reduce(before)
        clustered = scan(name, CLUSTERED, g, act, 4)[r]
        clustered = clustered.view(np.int32) if signed else clustered
        for c in range(2):
            part = view[r][c * 4:(c + 1) * 4][act[r][c * 4:(c + 1) * 4]]
            if part.size:
                assert (clustered[c * 4:(c + 1) * 4] == ufunc.reduce(part)).all()


def test_layout_of_a_partial_last_subgroup() -> None:
    lay = Layout(24, 12, 8)  # two workgroups of 12: subgroups of 8 and 4
    assert lay.per_group == 2 and lay.rows == 4
    assert lay.valid.sum(axis=1).tolist() == [8, 4, 8, 4]
    assert lay.inv[:12].tolist() == list(range(8)) + list(range(4))
    masks = lay.masks()
    assert masks["SubgroupEqMask"][3].tolist() == [8, 0, 0, 0]
    assert masks["SubgroupGeMask"][9].tolist() == [0xFE, 0, 0, 0]  # invocation 1, bits 1..7
    assert masks["SubgroupLtMask"][3].tolist() == [7, 0, 0, 0]


QUAD = """#version 450
#extension GL_KHR_shader_subgroup_quad : require
layout(local_size_x = 16) in;
layout(std430, binding = 0) buffer B { uint data[]; };
layout(std430, binding = 1) buffer O { uint outv[]; };
void main() {
  uint i = gl_GlobalInvocationID.x;
  outv[i] = subgroupQuadBroadcast(data[i], INDEX);
}
"""


@pytest.mark.parametrize("index, uniform", [("(gl_SubgroupInvocationID >> 2) & 3u", True),
                                            ("gl_SubgroupInvocationID & 3u", False)])
def test_quad_broadcast_index_uniform_per_quad(index: str, uniform: bool) -> None:
    # a per-quad Index is fine (Vulkan CTS subgroups.quad.*broadcast_nonconst* relies on it)
    spv = glsl_to_spirv(QUAD.replace("INDEX", index), target_env="vulkan1.2")
    data = np.arange(16, dtype=np.uint32) * 10
    r = check_dispatch(spv, "main", (1, 1, 1), subgroup_size=8,
                       bindings={(0, 0): Binding("data", data.tobytes()), (0, 1): Binding("out", bytes(64))})
    assert [f.kind for f in r.findings] == ([] if uniform else ["subgroup-nonuniform"])
    if uniform:
        lane = np.arange(16) % 8
        expect = (np.arange(16) - lane % 4 + (lane >> 2)) * 10
        assert np.frombuffer(r.buffers["out"], np.uint32).tolist() == expect.tolist()
