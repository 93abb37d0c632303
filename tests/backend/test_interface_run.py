"""`kernellab run` checks every dispatch against its shader's reflected interface and the device's
limits before anything runs (issue 11 item 4, issue 10 item 3): each mistake is exit 2 with the
JSON path to fix, and nothing is written. On lavapipe (GLSL, OpenCL C through clspv) and PoCL."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab.cli import main

SHADER = """#version 450
layout(local_size_x = 4) in;
layout(constant_id = 3) const uint SCALE = 2;
layout(set = 0, binding = 0) readonly buffer In { uint count; uint a[]; };
layout(set = 1, binding = 0) writeonly buffer Out { uint written; uint c[]; };
layout(set = 0, binding = 1) uniform Params { uvec4 add; } params;
layout(push_constant) uniform Push { uint mul; uint bias; } pc;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < count) { c[i] = a[i] * pc.mul * SCALE + pc.bias + params.add.x; }
    if (i == 0) { written = count; }
}
"""

LOCAL = """__kernel void tile_sum(__global int *out, __local int *tile, __global const int *in) {
  int l = get_local_id(0), g = get_global_id(0);
  tile[l] = in[g];
  barrier(CLK_LOCAL_MEM_FENCE);
  out[g] = tile[l] + tile[(l + 1) % get_local_size(0)];
}
"""


def scenario(tmp_path: Path, *, out_size: int = 68, push_size: int = 8, push_words: int = 2,
             spec: list[dict[str, Any]] | None = None,
             out_set: int = 1, out_id: int = 0, range_nd: list[int] | None = None,
             extra: list[dict[str, Any]] = ()) -> Path:
    (tmp_path / "k.comp").write_text(SHADER)
    np.save(tmp_path / "in.npy", np.array([16, *range(16)], dtype=np.uint32))
    np.save(tmp_path / "params.npy", np.array([7, 0, 0, 0], dtype=np.uint32))
    np.save(tmp_path / "push.npy", np.frombuffer(np.array([3, 1][:push_words], np.uint32).tobytes(), np.uint8))
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [
            {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL", "push_constants_size": push_size,
                        "specialization_constants": spec if spec is not None else [{"id": 3, "value": 5}]}},
            {"buffer": {"uid": "in", "size": 68, "shader_access": "readonly", "src": "in.npy"}},
            {"buffer": {"uid": "params", "size": 16, "shader_access": "readonly", "src": "params.npy"}},
            {"buffer": {"uid": "out", "size": out_size, "shader_access": "writeonly", "dst": "out.npy"}},
            {"raw_data": {"uid": "push", "src": "push.npy"}},
            *extra],
        "commands": [{"dispatch_compute": {
            "shader_ref": "k", "push_data_ref": "push", "rangeND": range_nd or [4],
            "bindings": [{"set": 0, "id": 0, "resource_ref": "in"}, {"set": 0, "id": 1, "resource_ref": "params"},
                         {"set": out_set, "id": out_id, "resource_ref": "out"}]}}]}))
    return path


def run(path: Path, out: Path, capsys: pytest.CaptureFixture[str], *more: str) -> tuple[int, str]:
    # --strict: an unknown specialization id is legal Vulkan (ignored; Arm runs it), so a warning without it
    status = main(["run", str(path), "--output", str(out), "--strict", *more])
    return status, capsys.readouterr().err


def test_a_matching_scenario_runs_with_its_uniform_block_bound_as_a_uniform_buffer(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, err = run(scenario(tmp_path), tmp_path / "o", capsys)
    assert status == 0, err
    got = np.load(tmp_path / "o" / "out.npy").view(np.uint32)
    assert got.tolist() == [16] + [a * 3 * 5 + 1 + 7 for a in range(16)]


@pytest.mark.parametrize("change, where, words", [
    ({"out_set": 2}, "/commands/0/dispatch_compute/bindings",
     "uses set 1 binding 0 'Out' (storage buffer), and nothing is bound there; bound but unused by the shader: "
     "set 2 binding 0 ('out')"),
    ({"out_size": 2}, "/resources/3/buffer/size", "buffer 'out' is 2 bytes; set 1 binding 0 'Out' (storage buffer) "
                                                  "needs at least 4"),
    ({"push_size": 4, "push_words": 1}, "/resources/0/shader/push_constants_size",
     "declares a push-constant block of 8 bytes; the range given is 4"),
    ({"spec": [{"id": 3, "value": 5}, {"id": 9, "value": 1}]}, "/resources/0/shader/specialization_constants/1/id",
     "shader 'k' has no specialization constant with id 9 (it has: 3)"),
])
def test_each_interface_mismatch_is_exit_2_with_its_json_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], where: str, words: str) -> None:
    status, err = run(scenario(tmp_path, **change), tmp_path / "o", capsys)
    assert status == 2
    assert f"s.json: {where}: " in err and words in err, err
    assert "Traceback" not in err and not (tmp_path / "o" / "out.npy").exists()


@pytest.mark.parametrize("change, where, limit", [
    ({"out_set": 40}, "/commands/0/dispatch_compute/bindings/2/set", "maxBoundDescriptorSets"),
    ({"out_id": 2**32 - 1}, "/commands/0/dispatch_compute/bindings/2/id", "maxPerSetDescriptors"),
    ({"range_nd": [4294967295]}, "/commands/0/dispatch_compute/rangeND/0", "maxComputeWorkGroupCount[0]"),
    # past every device's limit (lavapipe 16384, an H200 32768)
    ({"extra": [{"image": {"uid": "tall", "dims": [1, 4, 1 << 20, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                           "shader_access": "writeonly"}}]}, "/resources/5/image/dims/2", "maxImageDimension2D"),
    ({"push_size": 4096}, "/resources/0/shader/push_constants_size", "maxPushConstantsSize"),
])
def test_issue_10_probes_are_refused_against_the_device_limits(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], where: str, limit: str) -> None:
    status, err = run(scenario(tmp_path, **change), tmp_path / "o", capsys)
    assert status == 2, err
    assert f"s.json: {where}: " in err and f"({limit}" in err, err
    assert "Traceback" not in err and not (tmp_path / "o" / "out.npy").exists()


def test_an_unknown_specialization_id_is_a_warning_without_strict(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    path = scenario(tmp_path, spec=[{"id": 3, "value": 5}, {"id": 9, "value": 1}])
    assert main(["run", str(path), "--output", str(tmp_path / "o")]) == 0
    err = caplog.text
    assert "/resources/0/shader/specialization_constants/1/id: warning: shader 'k' has no specialization " \
           "constant with id 9 (it has: 3)" in err
    assert (tmp_path / "o" / "out.npy").is_file()


def test_a_large_workgroup_size_set_by_specialization_is_refused(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario(tmp_path)
    (tmp_path / "k.comp").write_text(SHADER.replace("local_size_x = 4", "local_size_x_id = 0"))
    doc = json.loads(path.read_text())
    doc["resources"][0]["shader"]["specialization_constants"].append({"id": 0, "value": 5000})
    path.write_text(json.dumps(doc))
    status, err = run(path, tmp_path / "o", capsys)
    assert status == 2
    assert "/resources/0/shader/specialization_constants: shader 'k' runs workgroups of 5000x1x1" in err
    assert "(maxComputeWorkGroupSize[0])" in err and "(maxComputeWorkGroupInvocations)" in err


def opencl_scenario(tmp_path: Path, spec: list[dict[str, Any]], entry: str = "tile_sum") -> Path:
    (tmp_path / "k.cl").write_text(LOCAL)
    np.save(tmp_path / "in.npy", np.arange(16, dtype=np.int32))
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [
            {"shader": {"uid": "k", "src": "k.cl", "type": "OpenCL-C", "entry": entry,
                        "specialization_constants": spec}},
            {"buffer": {"uid": "out", "size": 64, "shader_access": "writeonly", "dst": "out.npy"}},
            {"buffer": {"uid": "in", "size": 64, "shader_access": "readonly", "src": "in.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [4],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "out"},
                                                        {"set": 0, "id": 1, "resource_ref": "in"}]}}]}))
    return path


@pytest.mark.parametrize("backend", ["vulkan", "opencl"])
def test_a_missing_local_size_is_exit_2_not_a_crash(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    backend: str) -> None:
    path = opencl_scenario(tmp_path, [{"id": 0, "value": 4}])
    status, err = run(path, tmp_path / "o", capsys, "--backend", backend)
    assert status == 2, err
    assert ("s.json: /resources/0/shader/specialization_constants: kernel 'tile_sum' of shader 'k': __local "
            "argument 1 (tile) takes its element count from specialization constant 3, which is not set") in err
    given = opencl_scenario(tmp_path, [{"id": 0, "value": 4}, {"id": 3, "value": 4}])
    status, err = run(given, tmp_path / "o", capsys, "--backend", backend)
    assert status == 0, err
    a = np.arange(16).reshape(4, 4)
    assert np.load(tmp_path / "o" / "out.npy").view(np.int32).tolist() == (a + np.roll(a, -1, axis=1)).ravel().tolist()


@pytest.mark.parametrize("backend", ["vulkan", "opencl"])
def test_an_entry_the_source_does_not_define_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      backend: str) -> None:
    path = opencl_scenario(tmp_path, [{"id": 0, "value": 4}, {"id": 3, "value": 4}], entry="tile_sun")
    status, err = run(path, tmp_path / "o", capsys, "--backend", backend)
    assert status == 2, err
    assert "s.json: /resources/0/shader/entry: " in err and "'tile_sun'" in err and "tile_sum" in err, err
