"""Tensors, memory groups and graphs: Arm's runner and ``kernellab run`` on the same files write
byte-identical ``dst`` files, equal to NumPy's result.

Only scenarios both runners accept are here (Arm 0.11 rejects ``alias_target`` and reads
``shader_substitutions`` on the command only; see docs/ml-extensions.md).
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from helpers.scenarios import kernellab
from kernellab.testing.arm_runner import ArmRunner


def _run_both(folder: Path, arm_runner: ArmRunner, icd: Path, outputs: list[str]) -> dict[str, bytes]:
    arm_runner.run(folder / "scenario.json", output=folder / "arm", icd=icd)
    proc = kernellab("run", "--scenario", folder / "scenario.json", "--output", folder / "kernellab")
    assert proc.returncode == 0, proc.stderr
    files = {}
    for name in outputs:
        ref, got = (folder / "arm" / name).read_bytes(), (folder / "kernellab" / name).read_bytes()
        assert ref == got, f"{name}: Arm's and kernellab's files differ"
        files[name] = ref
    return files


def _write(folder: Path, resources: list, commands: list) -> None:
    (folder / "scenario.json").write_text(json.dumps({"resources": resources, "commands": commands}, indent=1))


ADD = """#version 450
#extension GL_ARM_tensors : require
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0) uniform tensorARM<int32_t, 2> a;
layout(set = 0, binding = 1) uniform tensorARM<int32_t, 2> b;
layout(set = 0, binding = 2) uniform tensorARM<int32_t, 2> c;
void main() {
    uint i = gl_GlobalInvocationID.y, j = gl_GlobalInvocationID.x;
    int32_t x, y;
    tensorReadARM(a, uint[](i, j), x);
    tensorReadARM(b, uint[](i, j), y);
    tensorWriteARM(c, uint[](i, j), x * 3 - y);
}
"""


def test_tensor_shader_outputs_match_arm(tmp_path: Path, arm_runner: ArmRunner, icd: Path) -> None:
    rng = np.random.default_rng(7)
    a = rng.integers(-1000, 1000, (6, 9), dtype=np.int32)
    b = rng.integers(-1000, 1000, (6, 9), dtype=np.int32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    (tmp_path / "add.comp").write_text(ADD)
    t = {"dims": [6, 9], "format": "VK_FORMAT_R32_SINT"}
    _write(tmp_path, [
        {"shader": {"uid": "add", "src": "add.comp", "type": "GLSL"}},
        {"tensor": {"uid": "a", **t, "shader_access": "readonly", "src": "a.npy"}},
        {"tensor": {"uid": "b", **t, "shader_access": "readonly", "src": "b.npy", "dst": "b_out.npy"}},
        {"tensor": {"uid": "c", **t, "shader_access": "writeonly", "dst": "c.npy"}}],
        [{"dispatch_compute": {"shader_ref": "add", "rangeND": [9, 6], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "a"}, {"set": 0, "id": 1, "resource_ref": "b"},
            {"set": 0, "id": 2, "resource_ref": "c"}]}}])
    _run_both(tmp_path, arm_runner, icd, ["c.npy", "b_out.npy"])
    np.testing.assert_array_equal(np.load(tmp_path / "kernellab" / "c.npy"), a * 3 - b)


STORE = """#version 450
layout(local_size_x = 1, local_size_y = 1) in;
layout(set = 0, binding = 0, rgba8ui) uniform writeonly uimage2D img;
void main() {
    uvec2 p = gl_GlobalInvocationID.xy;
    imageStore(img, ivec2(p), uvec4(p.y * 40u + p.x * 8u) + uvec4(0u, 1u, 2u, 3u));
}
"""


def test_memory_group_tensor_views_image_like_arm(tmp_path: Path, arm_runner: ArmRunner, icd: Path) -> None:
    w, h = 5, 3
    (tmp_path / "k.comp").write_text(STORE)
    _write(tmp_path, [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"image": {"uid": "img", "dims": [1, w, h, 1], "format": "VK_FORMAT_R8G8B8A8_UINT", "tiling": "LINEAR",
                   "shader_access": "writeonly", "memory_group": {"id": "m"}}},
        {"tensor": {"uid": "t", "dims": [1, h, w, 4], "format": "VK_FORMAT_R8_UINT", "tiling": "LINEAR",
                    "shader_access": "readonly", "memory_group": {"id": "m"}, "dst": "t.npy"}},
        {"image_barrier": {"uid": "to_tensor", "image_resource": "img", "old_layout": "general",
                           "new_layout": "tensor_aliasing", "src_access": "compute_shader_write",
                           "dst_access": "memory_read", "src_stage": ["compute"], "dst_stage": ["compute"]}}],
        [{"dispatch_compute": {"shader_ref": "k", "rangeND": [w, h],
                               "bindings": [{"set": 0, "id": 0, "resource_ref": "img"}]}},
         {"dispatch_barrier": {"image_barrier_refs": ["to_tensor"], "memory_barrier_refs": [],
                               "buffer_barrier_refs": [], "tensor_barrier_refs": []}}])
    _run_both(tmp_path, arm_runner, icd, ["t.npy"])
    want = np.array([[[y * 40 + x * 8 + c for c in range(4)] for x in range(w)] for y in range(h)], np.uint8)
    np.testing.assert_array_equal(np.load(tmp_path / "kernellab" / "t.npy")[0], want)


def test_graph_with_substituted_shader_matches_arm(tmp_path: Path, arm_runner: ArmRunner, icd: Path) -> None:
    pytest.importorskip("vgfpy")
    from helpers.vgf_models import (
        IN_SHAPE,
        OUT_SHAPE,
        POST_SHADER,
        build_conv_vgf,
        conv_reference,
    )
    from kernellab.formats import vgf

    g = vgf.read(build_conv_vgf(tmp_path, "conv_post", with_placeholder=True))
    (placeholder,) = g.placeholders()
    x = (np.arange(20, dtype=np.float32).reshape(IN_SHAPE) - 7) / 3
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "push.npy", np.array([0.5], np.float32))
    (tmp_path / "post.comp").write_text(POST_SHADER)
    _write(tmp_path, [
        {"shader": {"uid": "post", "src": "post.comp", "type": "GLSL", "push_constants_size": 4}},
        {"raw_data": {"uid": "push", "src": "push.npy"}},
        {"graph": {"uid": "g", "src": "conv_post.vgf", "specialization_constants_map": [
            {"shader_target": placeholder.name, "specialization_constants": [{"id": 0, "value": 3.0}]}]}},
        {"tensor": {"uid": "x", "dims": list(IN_SHAPE), "format": "VK_FORMAT_R32_SFLOAT", "shader_access": "readonly",
                    "src": "x.npy"}},
        {"tensor": {"uid": "y", "dims": list(OUT_SHAPE), "format": "VK_FORMAT_R32_SFLOAT",
                    "shader_access": "writeonly", "dst": "y.npy"}}],
        [{"dispatch_vgf": {"graph_ref": "g", "bindings": [
            {"set": 0, "id": g.inputs[0].binding, "resource_ref": "x"},
            {"set": 0, "id": g.outputs[0].binding, "resource_ref": "y"}],
            "shader_substitutions": [{"shader_ref": "post", "target": placeholder.name}],
            "push_constants": [{"push_data_ref": "push", "shader_target": placeholder.name}]}}])
    _run_both(tmp_path, arm_runner, icd, ["y.npy"])
    np.testing.assert_allclose(np.load(tmp_path / "kernellab" / "y.npy"), conv_reference(x) * 3 + 0.5, atol=1e-5)


def test_spirv_graph_module_matches_arm(tmp_path: Path, arm_runner: ArmRunner, icd: Path) -> None:
    pytest.importorskip("vgfpy")
    from helpers.vgf_models import data_graph_scenario

    doc, want = data_graph_scenario(tmp_path, "dispatch_data_graph")
    (tmp_path / "scenario.json").write_text(json.dumps(doc))
    _run_both(tmp_path, arm_runner, icd, ["o.npy"])
    np.testing.assert_array_equal(np.load(tmp_path / "kernellab" / "o.npy"), want)
