"""One OpenCL C scenario on both backends: OpenCL (PoCL, the source as is) and Vulkan (lavapipe,
the kernel compiled by clspv) give the same bytes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats.scenario import load_scenario
from kernellab.runtime.executor import RunOptions, execute

# by-value arguments around the buffers, a __local tile and a 2-D launch: every part of the mapping
KERNEL = """\
__kernel void stencil(int bias, __global int *out, __local int *tile, __global const int *in, int width,
                      __constant int *weights) {
  int x = get_global_id(0), y = get_global_id(1);
  int lx = get_local_id(0), ly = get_local_id(1), lw = get_local_size(0);
  tile[ly * lw + lx] = in[y * width + x];
  barrier(CLK_LOCAL_MEM_FENCE);
  int right = tile[ly * lw + (lx + 1) % lw];
  out[y * width + x] = tile[ly * lw + lx] * weights[0] + right * weights[1] + bias;
}
"""


def write_scenario(tmp_path: Path) -> Path:
    (tmp_path / "stencil.cl").write_text(KERNEL)
    np.save(tmp_path / "in.npy", np.arange(32 * 8, dtype=np.int32))
    np.save(tmp_path / "weights.npy", np.array([3, -2], dtype=np.int32))
    np.save(tmp_path / "push.npy", np.frombuffer(np.array([5, 32], np.int32).tobytes(), np.uint8))
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [
            {"shader": {"uid": "stencil", "src": "stencil.cl", "type": "OpenCL-C", "entry": "stencil",
                        "push_constants_size": 8,
                        "specialization_constants": [{"id": 0, "value": 8}, {"id": 1, "value": 2},
                                                     {"id": 3, "value": 16}]}},
            {"buffer": {"uid": "out", "size": 1024, "shader_access": "writeonly", "dst": "out.npy"}},
            {"buffer": {"uid": "in", "size": 1024, "shader_access": "readonly", "src": "in.npy"}},
            {"buffer": {"uid": "w", "size": 8, "shader_access": "readonly", "src": "weights.npy"}},
            {"raw_data": {"uid": "push", "src": "push.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "stencil", "push_data_ref": "push", "rangeND": [4, 4],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "out"},
                                                        {"set": 0, "id": 1, "resource_ref": "in"},
                                                        {"set": 0, "id": 2, "resource_ref": "w"}]}}]}))
    return path


def run_on(path: Path, out: Path, backend: str) -> np.ndarray:
    scenario, _ = load_scenario(path, out)
    execute(scenario, RunOptions(backend=backend))
    return np.load(out / "out.npy").view(np.int32)


def test_same_outputs_on_opencl_and_vulkan(tmp_path: Path) -> None:
    path = write_scenario(tmp_path)
    on_opencl = run_on(path, tmp_path / "cl", "opencl")
    on_vulkan = run_on(path, tmp_path / "vk", "vulkan")
    grid = np.arange(32 * 8, dtype=np.int32).reshape(8, 32)
    right = np.roll(grid.reshape(8, 4, 8), -1, axis=2).reshape(8, 32)
    expected = grid * 3 - 2 * right + 5
    np.testing.assert_array_equal(on_opencl.reshape(8, 32), expected)
    np.testing.assert_array_equal(on_vulkan, on_opencl)


def test_glsl_shader_on_opencl_backend_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n")
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"resources": [{"shader": {"uid": "g", "src": "k.comp", "type": "GLSL"}}],
                                "commands": [{"dispatch_compute": {"shader_ref": "g", "rangeND": [1]}}]}))
    scenario, _ = load_scenario(path)
    with pytest.raises(InputError) as info:
        execute(scenario, RunOptions(backend="opencl"))
    assert "OpenCL backend runs OpenCL-C shaders only" in str(info.value)
    assert info.value.problems[0].where == "/resources/0"


def test_cli_backend_flag(tmp_path: Path) -> None:
    from kernellab.cli import main
    path = write_scenario(tmp_path)
    assert main(["run", str(path), "--backend", "opencl", "--device", "Portable", "--output", str(tmp_path / "a")]) == 0
    assert main(["run", str(path), "--output", str(tmp_path / "b")]) == 0
    assert np.load(tmp_path / "a" / "out.npy").tobytes() == np.load(tmp_path / "b" / "out.npy").tobytes()


def test_struct_argument_on_both_backends(tmp_path: Path) -> None:
    from kernellab.convert.gpuverify_scenario import import_instantiations
    (tmp_path / "s.cl").write_text("typedef struct { int a; float b; } pair;\n"
                                   "__kernel void k(__global float *o, pair p, int c) "
                                   "{ o[get_global_id(0)] = p.a + p.b + c; }\n")
    k = tmp_path / "k.json"
    k.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "s.cl", "global_size": [4], "local_size": [4],
                              "entry_point": "k", "kernel_arguments": [
                                  {"type": "array", "size": 16}, {"type": "scalar", "value": "0x3F80000000000002"},
                                  {"type": "scalar", "value": "0x10"}]}]))
    scenario = import_instantiations(k, tmp_path / "imp")
    results = []
    for backend in ("opencl", "vulkan"):
        s, _ = load_scenario(scenario)
        execute(s, RunOptions(backend=backend))
        results.append(np.load(tmp_path / "imp" / "arg0.npy").view(np.float32).tolist())
    assert results == [[19.0] * 4, [19.0] * 4]
