"""`kernellab verify` on Oclgrind: planted defects of every kind are flagged, clean kernels of the
same shape pass."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from kernellab.commands import verify as verify_cmd
from kernellab.testing.kernels import tiled_matmul_cl
from kernellab.verify import verify

GLOBAL_64 = {"type": "array", "size": 64, "address_space": "global"}
LOCAL_32 = {"type": "array", "size": 32, "address_space": "local"}

# name -> (source, arguments, global size, local size, expected kind, expected line, extra checks)
PLANTED: dict[str, tuple[str, list[dict[str, Any]], list[int], list[int], str, int | None]] = {
    "local-race": (
        "__kernel void k(__global int *out, __local int *t) {\n"
        "  int l = get_local_id(0);\n"
        "  t[l] = l;\n"
        "  out[get_global_id(0)] = t[(l + 1) % get_local_size(0)];\n"
        "}\n", [GLOBAL_64, LOCAL_32], [16], [8], "data-race", 3),
    "inter-group-race": (
        "__kernel void k(__global int *out) {\n"
        "  if (get_local_id(0) == 0) out[0] = get_group_id(0);\n"
        "}\n", [GLOBAL_64], [16], [8], "data-race", 2),
    "barrier-divergence": (
        "__kernel void k(__global int *out, __local int *t) {\n"
        "  int l = get_local_id(0);\n"
        "  t[l] = l;\n"
        "  if (l < 2) barrier(CLK_LOCAL_MEM_FENCE);\n"
        "  out[get_global_id(0)] = t[l];\n"
        "}\n", [GLOBAL_64, LOCAL_32], [16], [8], "barrier-divergence", 4),
    "out-of-bounds": (
        "__kernel void k(__global int *out, __global const int *in) {\n"
        "  int i = get_global_id(0);\n"
        "  out[i] = in[i + 1];\n"
        "}\n", [GLOBAL_64, GLOBAL_64], [16], [8], "out-of-bounds", 3),
    "uninitialized-read": (
        "__kernel void k(__global int *out, __local int *t) {\n"
        "  int l = get_local_id(0);\n"
        "  barrier(CLK_LOCAL_MEM_FENCE);\n"
        "  out[get_global_id(0)] = t[l];\n"
        "}\n", [GLOBAL_64, LOCAL_32], [16], [8], "uninitialized-read", 4),
    "api-error": (
        "__kernel void k(__global int *out) { out[get_global_id(0)] = 1; }\n",
        [{"type": "array", "size": 16384}], [4096], [2048], "api-error", None),
    "misaligned-access": (
        "__kernel void k(__global int *out, __global char *in) {\n"
        "  int i = get_global_id(0);\n"
        "  out[i] = *(__global int *)(in + 4 * i + 1);\n"
        "}\n", [GLOBAL_64, {"type": "array", "size": 80}], [16], [8], "misaligned-access", 3),
    "write-to-read-only": (
        "__kernel void k(__global int *out) {\n"
        "  out[get_global_id(0)] = 1;\n"
        "}\n", [{**GLOBAL_64, "flags": ["CL_MEM_READ_ONLY"]}], [16], [8], "write-to-read-only", 2),
    "read-from-write-only": (
        "__kernel void k(__global int *out, __global int *in) {\n"
        "  out[get_global_id(0)] = in[get_global_id(0)];\n"
        "}\n", [GLOBAL_64, {**GLOBAL_64, "flags": ["CL_MEM_WRITE_ONLY"]}], [16], [8], "read-from-write-only", 2),
    "unwaited-event": (
        "__kernel void k(__global int *out, __global const int *in, __local int *t) {\n"
        "  event_t e = async_work_group_copy(t, in + get_group_id(0) * 8, 8, 0);\n"
        "  out[get_global_id(0)] = 1;\n"
        "}\n", [GLOBAL_64, GLOBAL_64, LOCAL_32], [16], [8], "unwaited-event", None),
}

MATMUL = tiled_matmul_cl(tile=8)

REDUCE = """\
__kernel void reduce(__global const float *in, __global float *partial, __local float *scratch) {
  int l = get_local_id(0);
  scratch[l] = in[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (l < s) scratch[l] += scratch[l + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (l == 0) partial[get_group_id(0)] = scratch[0];
}
"""

MATMUL_ARGS = [{"type": "array", "size": 4096}, {"type": "array", "size": 4096}, {"type": "array", "size": 4096},
               {"type": "scalar", "value": "0x20"}]
REDUCE_ARGS = [{"type": "array", "size": 1024}, {"type": "array", "size": 16},
               {"type": "array", "size": 256, "address_space": "local"}]


def write(tmp_path: Path, name: str, source: str, args: list[dict[str, Any]], global_size: list[int],
          local_size: list[int], entry: str = "k") -> Path:
    (tmp_path / f"{name}.cl").write_text(source)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": f"{name}.cl", "global_size": global_size,
                                 "local_size": local_size, "entry_point": entry, "kernel_arguments": args}]))
    return path


@pytest.mark.parametrize("name", list(PLANTED))
def test_planted_defect_is_flagged(tmp_path: Path, name: str) -> None:
    source, args, g, l, kind, line = PLANTED[name]
    path = write(tmp_path, name, source, args, g, l)
    result = verify(path, check=["all"])  # issue 12: kinds beyond GPUVerify's three are defects only when checked
    assert result.verdict == "defects" and result.exit_status == 1
    kinds = {f.kind for f in result.findings}
    assert kind in kinds, f"{name}: expected {kind}, got {kinds}"
    finding = next(f for f in result.findings if f.kind == kind)
    assert finding.kernel == "k"
    if line is not None:
        loc = finding.to_json()["location"]
        assert loc["file"] == str(tmp_path / f"{name}.cl") and loc["line"] == line
        assert finding.to_json()["source_line"] == source.splitlines()[line - 1].strip()


def test_race_classification(tmp_path: Path) -> None:
    intra = verify(write(tmp_path, "a", *PLANTED["local-race"][:4]))
    race = next(f for f in intra.findings if f.kind == "data-race")
    assert race.race == {"type": "read-write", "scope": "intra-group"} and race.address_space == "local"
    inter = verify(write(tmp_path, "b", *PLANTED["inter-group-race"][:4]))
    race = next(f for f in inter.findings if f.kind == "data-race")
    assert race.race == {"type": "write-write", "scope": "inter-group"} and race.address_space == "global"
    groups = {tuple(w["group"]) for w in race.to_json()["work_items"][0]}
    assert len(groups) == 2


def test_out_of_bounds_names_argument_and_offset(tmp_path: Path) -> None:
    result = verify(write(tmp_path, "oob", *PLANTED["out-of-bounds"][:4]))
    oob = next(f for f in result.findings if f.kind == "out-of-bounds")
    assert oob.detail == "argument 1, byte offset 64"
    assert oob.to_json()["work_items"] == [[{"global": [15, 0, 0], "local": [7, 0, 0], "group": [1, 0, 0]}]]


def test_clean_tiled_matmul_verifies(tmp_path: Path) -> None:
    result = verify(write(tmp_path, "matmul", MATMUL, MATMUL_ARGS, [32, 32], [8, 8], "matmul"))
    assert result.verdict == "verified", [f.to_json() for f in result.findings]
    assert result.exit_status == 0


def test_clean_reduction_verifies(tmp_path: Path) -> None:
    result = verify(write(tmp_path, "reduce", REDUCE, REDUCE_ARGS, [256], [64], "reduce"))
    assert result.verdict == "verified", [f.to_json() for f in result.findings]


def test_matmul_without_second_barrier_races(tmp_path: Path) -> None:
    racy = MATMUL.replace("      acc += As[ly][k] * Bs[k][lx];\n    barrier(CLK_LOCAL_MEM_FENCE);\n",
                          "      acc += As[ly][k] * Bs[k][lx];\n")
    assert racy != MATMUL
    result = verify(write(tmp_path, "matmul", racy, MATMUL_ARGS, [32, 32], [8, 8], "matmul"))
    races = [f for f in result.findings if f.kind == "data-race"]
    assert races and all(f.address_space == "local" and f.race["scope"] == "intra-group" for f in races)


def test_reduction_without_loop_barrier_races(tmp_path: Path) -> None:
    racy = REDUCE.replace("    if (l < s) scratch[l] += scratch[l + s];\n    barrier(CLK_LOCAL_MEM_FENCE);\n",
                          "    if (l < s) scratch[l] += scratch[l + s];\n")
    assert racy != REDUCE
    result = verify(write(tmp_path, "reduce", racy, REDUCE_ARGS, [256], [64], "reduce"))
    assert any(f.kind == "data-race" and f.location["line"] == 6 for f in result.findings)


def _cli(path: Path, *, as_json: bool, check: list[str] | None = None) -> int:
    ns = argparse.Namespace(file=[path], json=as_json, index=None, seed=0, format=None, check=check or ["all"], jobs=1)
    return verify_cmd.run(ns)


def test_cli_json_and_grouping(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "div", *PLANTED["write-to-read-only"][:4])
    assert _cli(path, as_json=True) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["verdict"] == "defects"
    [finding] = doc["findings"]
    assert finding["kind"] == "write-to-read-only" and finding["count"] == 16
    assert len(finding["examples"]) == 3
    assert set(finding) >= {"kind", "kernel", "work_items", "address_space", "address", "location", "source_line",
                            "message"}
    assert _cli(path, as_json=False) == 1
    text = capsys.readouterr().out
    assert text.count("Invalid write to read-only buffer") == 1
    assert "16 reports" in text and "and 13 more like it" in text
    assert f"{tmp_path / 'div.cl'}:2:" in text and "out[get_global_id(0)] = 1;" in text


def test_cli_verified_exit_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "reduce", REDUCE, REDUCE_ARGS, [256], [64], "reduce")
    assert _cli(path, as_json=False) == 0
    assert "verified" in capsys.readouterr().out


def _scenario(tmp_path: Path, source: str) -> Path:
    import numpy as np
    (tmp_path / "k.cl").write_text(source)
    np.save(tmp_path / "in.npy", np.arange(64, dtype=np.float32))
    np.save(tmp_path / "push.npy", np.frombuffer(np.float32(2).tobytes() + np.uint32(64).tobytes(), np.uint8))
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [
            {"shader": {"uid": "k", "src": "k.cl", "type": "OpenCL-C", "entry": "scale", "push_constants_size": 8,
                        "specialization_constants": [{"id": 0, "value": 16}, {"id": 3, "value": 16}]}},
            {"buffer": {"uid": "out", "size": 256, "shader_access": "writeonly"}},
            {"buffer": {"uid": "in", "size": 256, "shader_access": "readonly", "src": "in.npy"}},
            {"raw_data": {"uid": "push", "src": "push.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "push_data_ref": "push", "rangeND": [4],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "out"},
                                                        {"set": 0, "id": 1, "resource_ref": "in"}]}}]}))
    return path


SCENARIO_KERNEL = """\
__kernel void scale(float s, __global float *out, __local float *tile, __global const float *in, uint n) {
  uint i = get_global_id(0);
  tile[get_local_id(0)] = in[i];
  barrier(CLK_LOCAL_MEM_FENCE);
  if (i < n) out[i] = tile[(get_local_id(0) + 1) % get_local_size(0)] * s;
}
"""


def test_scenario_clean_and_racy(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    clean = verify(_scenario(tmp_path / "a", SCENARIO_KERNEL), fmt="scenario")
    assert clean.verdict == "verified"
    racy_src = SCENARIO_KERNEL.replace("  barrier(CLK_LOCAL_MEM_FENCE);\n", "")
    racy = verify(_scenario(tmp_path / "b", racy_src), fmt="scenario")
    race = next(f for f in racy.findings if f.kind == "data-race")
    # findings point at the scenario's own kernel file and dispatch command
    assert race.location["file"] == str((tmp_path / "b" / "k.cl").resolve())
    assert "scenario command /commands/0" in race.detail


def test_user_oclgrind_settings_do_not_hide_defects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # OCLGRIND_LOG would send the diagnostics to a file, OCLGRIND_QUICK skip work-groups
    monkeypatch.setenv("OCLGRIND_LOG", str(tmp_path / "elsewhere.log"))
    monkeypatch.setenv("OCLGRIND_QUICK", "1")
    result = verify(write(tmp_path, "oob", *PLANTED["out-of-bounds"][:4]))
    assert any(f.kind == "out-of-bounds" for f in result.findings)
    assert not (tmp_path / "elsewhere.log").exists()


def test_verify_a_capture_points_at_the_host_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernellab.commands import capture as capture_cmd
    prog = tmp_path / "racy.py"
    prog.write_text(
        "import numpy as np, pyopencl as cl\n"
        "platform = [p for p in cl.get_platforms() if 'Portable' in p.name][0]\n"
        "ctx = cl.Context(platform.get_devices()); q = cl.CommandQueue(ctx)\n"
        "prg = cl.Program(ctx, '''__kernel void shift(__global int *a, __local int *t) {\n"
        "  int l = get_local_id(0); t[l] = a[get_global_id(0)];\n"
        "  a[get_global_id(0)] = t[(l + 1) % get_local_size(0)]; }''').build()\n"
        "a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR,\n"
        "              hostbuf=np.arange(32, dtype=np.int32))\n"
        "prg.shift(q, (32,), (8,), a, cl.LocalMemory(32))\n"
        "q.finish()\n")
    assert capture_cmd.run(argparse.Namespace(output=tmp_path / "cap", program=[str(prog)])) == 0
    capsys.readouterr()
    path = tmp_path / "cap" / "capture.json"
    result = verify(path)
    race = next(f for f in result.findings if f.kind == "data-race")
    assert race.address_space == "local" and race.race["scope"] == "intra-group"
    assert result.to_json()["launches"][0]["enqueued_at"] == f"{prog}:9"
    assert _cli(path, as_json=False) == 1
    assert f"launch enqueued at {prog}:9" in capsys.readouterr().out


def test_a_scenario_is_loaded_once(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from kernellab.cli import main
    from kernellab.formats import scenario as scenario_format
    real, loads = scenario_format.load_scenario, []

    def counting(*args: Any, **kwargs: Any) -> Any:
        loads.append(args)
        return real(*args, **kwargs)
    monkeypatch.setattr(scenario_format, "load_scenario", counting)
    # the routing, the export to instantiations and the mapping back share one load
    monkeypatch.setattr("kernellab.convert.gpuverify_scenario.load_scenario", counting)
    assert main(["verify", str(_scenario(tmp_path, SCENARIO_KERNEL))]) == 0
    assert "verified — Oclgrind found no" in capsys.readouterr().out
    assert len(loads) == 1
