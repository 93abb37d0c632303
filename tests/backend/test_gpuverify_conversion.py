"""import/export between kernel-instantiation files and scenarios: round trips give identical outputs.

The scenarios run on the default backend (Vulkan on lavapipe, the kernel compiled by clspv), the
kernel-instantiation files on PoCL, so these also check that one OpenCL C kernel gives the same
bytes on both backends.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab.backends.opencl_abi import default_local_size as choose_local_size
from kernellab.backends.opencl_abi import pack_push_constants, unpack_push_constants
from kernellab.cli import main
from kernellab.convert.gpuverify_scenario import export_scenario, import_instantiations
from kernellab.errors import InputError

KERNEL = """\
__kernel void blend(int bias, __global int *out, __local int *tile, __global const int *in, int n) {
  int i = get_global_id(0), l = get_local_id(0);
  tile[l] = in[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i < n) out[i] = tile[(l + 1) % get_local_size(0)] * 3 + bias;
}
"""


def _npy_bytes(path: Path) -> bytes:
    return np.load(path).tobytes()


def test_run_import_run_round_trip(tmp_path: Path) -> None:
    (tmp_path / "mix.cl").write_text(KERNEL)
    np.arange(64, dtype=np.int32).tofile(tmp_path / "in.bin")
    first = {"language": "OpenCL", "kernel_file": "mix.cl", "global_size": [64], "local_size": [16],
             "entry_point": "blend", "kernel_arguments": [
                 {"type": "scalar", "value": "0x7"},
                 {"type": "array", "size": 256, "address_space": "global", "flags": ["CL_MEM_WRITE_ONLY"]},
                 {"type": "array", "size": 64, "address_space": "local"},
                 {"type": "array", "size": 256, "address_space": "global", "flags": ["CL_MEM_READ_ONLY"],
                  "data": "in.bin"},
                 {"type": "scalar", "value": "0x3C"}]}
    # a second launch with everything unconstrained and no local size: seeded on both sides
    second = {"language": "OpenCL", "kernel_file": "mix.cl", "global_size": [32], "entry_point": "blend",
              "kernel_arguments": [{"type": "scalar"}, {"type": "array", "size": 128},
                                   {"type": "array", "size": 128, "address_space": "local"},
                                   {"type": "array", "size": 128}, {"type": "scalar", "value": "0x20"}]}
    k = tmp_path / "k.json"
    k.write_text(json.dumps([first, second]))
    assert main(["run", str(k), "--output", str(tmp_path / "direct")]) == 0
    scenario = import_instantiations(k, tmp_path / "imported", seed=0)
    assert main(["run", str(scenario)]) == 0
    for rel in ("arg1", "arg3", "1/arg1", "1/arg3"):
        direct = (tmp_path / "direct" / f"{rel}.bin").read_bytes()
        assert _npy_bytes(tmp_path / "imported" / f"{rel}.npy") == direct, rel
    out = np.frombuffer((tmp_path / "direct" / "arg1.bin").read_bytes(), np.int32)
    expected = np.roll(np.arange(64).reshape(4, 16), -1, axis=1).ravel() * 3 + 7
    expected[60:] = out[60:]  # i >= n is left as the buffer was
    np.testing.assert_array_equal(out, expected)
    doc = json.loads(scenario.read_text())
    shaders = [r["shader"] for r in doc["resources"] if "shader" in r]
    assert shaders[0]["specialization_constants"] == [{"id": 0, "value": 16}, {"id": 3, "value": 16}]
    assert shaders[0]["push_constants_size"] == 8


@pytest.mark.parametrize("device", ["Portable", "Oclgrind"])
def test_import_releases_each_buffer_once(tmp_path: Path, device: str, caplog: pytest.LogCaptureFixture,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20: each launch's arrays were released by the import and again when the backend
    closed, a "clReleaseMemObject failed: CL_INVALID_VALUE" warning per buffer."""
    (tmp_path / "mix.cl").write_text(KERNEL)
    launch = {"language": "OpenCL", "kernel_file": "mix.cl", "global_size": [32], "local_size": [16],
              "entry_point": "blend", "kernel_arguments": [
                  {"type": "scalar", "value": "0x7"}, {"type": "array", "size": 128},
                  {"type": "array", "size": 64, "address_space": "local"},
                  {"type": "array", "size": 128}, {"type": "scalar", "value": "0x20"}]}
    (tmp_path / "k.json").write_text(json.dumps([launch, launch]))
    with caplog.at_level("WARNING"):
        assert main(["import", str(tmp_path / "k.json"), "-o", str(tmp_path / "out"), "--device", device]) == 0
    assert not [r.getMessage() for r in caplog.records if "clReleaseMemObject" in r.getMessage()]
    assert "clReleaseMemObject" not in capsys.readouterr().err


def test_export_then_run_matches_scenario(tmp_path: Path) -> None:
    (tmp_path / "mix.cl").write_text(KERNEL)
    np.save(tmp_path / "in.npy", np.arange(64, dtype=np.int32))
    np.save(tmp_path / "push.npy", np.frombuffer(np.array([5, 64], np.int32).tobytes(), np.uint8))
    scenario = {
        "resources": [
            {"shader": {"uid": "mix", "src": "mix.cl", "type": "OpenCL-C", "entry": "blend", "push_constants_size": 8,
                        "specialization_constants": [{"id": 0, "value": 8}, {"id": 3, "value": 8}]}},
            {"buffer": {"uid": "a", "size": 256, "shader_access": "readonly", "src": "in.npy"}},
            {"buffer": {"uid": "b", "size": 256, "shader_access": "readwrite"}},
            {"buffer": {"uid": "c", "size": 256, "shader_access": "readwrite", "dst": "c.npy"}},
            {"raw_data": {"uid": "push", "src": "push.npy"}}],
        "commands": [
            {"dispatch_compute": {"shader_ref": "mix", "push_data_ref": "push", "rangeND": [8],
                                  "bindings": [{"set": 0, "id": 0, "resource_ref": "b"},
                                               {"set": 0, "id": 1, "resource_ref": "a"}]}},
            {"dispatch_compute": {"shader_ref": "mix", "push_data_ref": "push", "rangeND": [8],
                                  "bindings": [{"set": 0, "id": 0, "resource_ref": "c"},
                                               {"set": 0, "id": 1, "resource_ref": "b"}]}}]}
    s = tmp_path / "s.json"
    s.write_text(json.dumps(scenario))
    assert main(["run", str(s)]) == 0
    exported = export_scenario(s, tmp_path / "exp")
    insts = json.loads(exported.read_text())
    assert [i["global_size"] for i in insts] == [[64], [64]] and insts[0]["local_size"] == [8]
    # the second launch's input is the first launch's output, recorded at its launch
    second_in = np.fromfile(tmp_path / "exp" / insts[1]["kernel_arguments"][3]["data"], np.int32)
    np.testing.assert_array_equal(second_in, np.roll(np.arange(64).reshape(8, 8), -1, axis=1).ravel() * 3 + 5)
    assert main(["run", str(exported), "--output", str(tmp_path / "replay")]) == 0
    assert (tmp_path / "replay" / "1" / "arg1.bin").read_bytes() == _npy_bytes(tmp_path / "c.npy")


def test_a_global_offset_is_imported_and_exported(tmp_path: Path) -> None:
    # issue 19: a scenario dispatch carries the offset (kernellab's extension, run on OpenCL)
    (tmp_path / "ids.cl").write_text("__kernel void ids(__global int *o) { o[get_global_id(0)] = "
                                     "get_global_id(0) * 10 + 1; }\n")
    k = tmp_path / "k.json"
    k.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "ids.cl", "global_size": [8], "local_size": [4],
                              "global_offset": [4], "entry_point": "ids",
                              "kernel_arguments": [{"type": "array", "size": 64}]}]))
    assert main(["run", str(k), "--output", str(tmp_path / "direct")]) == 0
    direct = np.fromfile(tmp_path / "direct" / "arg0.bin", np.int32)
    assert direct[4:12].tolist() == [41, 51, 61, 71, 81, 91, 101, 111]
    scenario = import_instantiations(k, tmp_path / "imported")
    dispatch = json.loads(scenario.read_text())["commands"][0]["dispatch_compute"]
    assert dispatch["global_offset"] == [4] and dispatch["rangeND"] == [2]
    assert main(["run", str(scenario), "--backend", "opencl", "--device", "Portable"]) == 0
    assert _npy_bytes(tmp_path / "imported" / "arg0.npy") == direct.tobytes()
    exported = export_scenario(scenario, tmp_path / "exp")
    [inst] = json.loads(exported.read_text())
    assert inst["global_offset"] == [4] and inst["global_size"] == [8] and inst["local_size"] == [4]


def test_export_rejects_glsl_dispatch(tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n")
    s = tmp_path / "s.json"
    s.write_text(json.dumps({"resources": [{"shader": {"uid": "g", "src": "k.comp", "type": "GLSL"}}],
                             "commands": [{"dispatch_compute": {"shader_ref": "g", "rangeND": [1]}}]}))
    with pytest.raises(InputError) as info:
        export_scenario(s, tmp_path / "out")
    [p] = info.value.problems
    assert p.where == "/commands/0" and "only OpenCL C dispatches" in p.message


def test_push_constant_packing() -> None:
    from kernellab.backends.opencl import ArgType, KernelArg
    args = [KernelArg(0, "c", "private", "char", type=ArgType("char", "i1")),
            KernelArg(1, "p", "global", "float*", type=ArgType("float", "f4")),
            KernelArg(2, "v", "private", "float4", type=ArgType("float4", "f4", 4)),
            KernelArg(3, "n", "private", "int", type=ArgType("int", "i4"))]
    values = {0: b"\x05", 2: np.arange(4, dtype=np.float32).tobytes(), 3: np.int32(9).tobytes()}
    packed = pack_push_constants(args, values)
    assert len(packed) == 36 and packed[0] == 5 and packed[16:32] == values[2] and packed[32:] == values[3]
    assert unpack_push_constants(args, packed) == values


def test_choose_local_size() -> None:
    assert choose_local_size((1000,)) == (50,)
    assert choose_local_size((64, 64)) == (64, 1)
    assert choose_local_size((7,)) == (7,)
