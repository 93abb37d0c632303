"""GLSL ports of GPUVerify's OpenCL test kernels, and scenarios with missing and present barriers
between dispatches, checked through ``kernellab verify S.json`` (issue 14's accuracy table in
CONFORMANCE.md lists them with their verdicts): no false alarm, no missed defect, the right kind.

Sizes are GPUVerify's where they are small, else scaled down (the shape of the access pattern, and
so the verdict, does not depend on them); OpenCL's ``__local`` pointer arguments become ``shared``
arrays, ``__global`` ones the ``data``/``outv``/``g`` buffers, scalar arguments the push constant ``pc.x``.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest

from kernellab import tools
from kernellab.cli import main

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

RACE, DIV, OOB = "data-race", "barrier-divergence", "out-of-bounds"


class Port(NamedTuple):
    gpuverify: str  # the test in GPUVerify's testsuite/OpenCL it ports
    local: tuple[int, int, int]
    groups: tuple[int, int, int]
    decls: str
    body: str
    kinds: frozenset[str]  # the defect kinds expected; empty: verified
    x: int = 0  # the push constant pc.x (a scalar kernel argument)


def _size3(v: Any) -> tuple[int, int, int]:
    return tuple(v) + (1,) * (3 - len(v)) if isinstance(v, tuple) else (v, 1, 1)  # type: ignore[return-value]


def port(gpuverify: str, local: Any, groups: Any, decls: str, body: str, *kinds: str, x: int = 0) -> Port:
    return Port(gpuverify, _size3(local), _size3(groups), decls, body, frozenset(kinds), x)


MULTILOOP = """
int bar(int y) {
  int result = 0;
  for (int j = 0; j < 100; j++) { result += j; }
  for (int k = 0; k < 100; k++) {
    result += k;
    for (int w = 0; w < int(gl_LocalInvocationID.x); w++) {
      result += w;
      if (result > 1000) { return 0; }
    }
  }
  for (int q = 0; q < 100; q++) { result += q; }
  return result;
}
"""
TILED = """
shared int As[8][8];
shared int Bs[8][8];
"""
MATMUL = """
  int row = int(gl_GlobalInvocationID.y), col = int(gl_GlobalInvocationID.x);
  int ly = int(gl_LocalInvocationID.y), lx = int(gl_LocalInvocationID.x);
  int n = 32, acc = 0;
  for (int t = 0; t < n / 8; ++t) {
    As[ly][lx] = data[row * n + t * 8 + lx];
    Bs[ly][lx] = data[(t * 8 + ly) * n + col];
    barrier();
    for (int k = 0; k < 8; ++k) acc += As[ly][k] * Bs[k][lx];
    SECOND
  }
  outv[row * n + col] = acc;"""
REDUCE = """
  sh[lid] = data[gid];
  barrier();
  for (int s = lsize / 2; s > 0; s >>= 1) {
    if (lid < s) sh[lid] += sh[lid + s];
    barrier();
  }
  if (lid == 0) outv[wg] = sh[0];"""

PORTS: dict[str, Port] = {p.gpuverify + ("" if not suffix else f" ({suffix})"): p for suffix, p in [
    ("", port("basicbarrier", 64, 4, "", "int a = 2, b = 3, c = a + b;\n  barrier();")),
    ("", port("barrier_intervals/test1", 16, 16, "shared int p[16];",
              "p[lid] = lid;\n  barrier();\n  p[lid] = lid;\n  barrier();\n  p[lid] = lid;")),
    ("", port("barrier_intervals/test2", 16, 16, "shared int p[16];",
              "p[lid] = lid;\n  if (lid == 0) { barrier(); }\n  p[lid] = lid;\n  barrier();\n  p[lid] = lid;", DIV)),
    ("", port("k-induction/amazingreduction", 64, 1, "shared int p[64];",
              "for (int d = lsize / 2; d > 0; d >>= 1) {\n    barrier();\n"
              "    if (lid < d) { p[lid] += p[lid + d]; }\n  }\n  if (lid == 0) { p[0] = lid; }")),
    ("", port("return_tests/id_dependent_return", 64, 4, "", "if (lid < 25) { return; }")),
    ("", port("return_tests/simple_return", 64, 4, "",
              "if (lid < 25) {\n    while (pc.x + 100 < 102) { return; }\n  }\n  return;")),
    ("", port("return_tests/multiloop_return", 64, 2, MULTILOOP,
              "int x;\n  for (int i = 0; i < 200; i++) { x = bar(i); }")),
    ("", port("misc/fail/miscfail1", 16, 1, "shared int A[32];\nshared int B[32];\nshared int C[32];",
              "C[lid] = C[lid + 1];\n  B[lid] = A[C[lid + 2]];", RACE)),
    ("", port("misc/pass/misc2", 32, 1, "shared int sh2[64];",
              "for (uint j = 1u; j > 0u; j /= 2u) {\n    uint ixj = uint(lid) ^ j;\n"
              "    if (ixj > uint(lid)) {\n      if ((lid & 2) == 0) { sh2[ixj] = sh2[lid]; }\n    }\n"
              "    barrier();\n  }")),
    ("", port("inter_group_and_barrier_flag_tests/fail/missing_global_barrier_flag", 64, 4, "",
              "outv[gid] = gid;\n  barrier();\n  if (lid < lsize - 1) { outv[gid + 1] = gid; }", RACE)),
    ("", port("inter_group_and_barrier_flag_tests/pass/global_barrier", 64, 4, "",
              "outv[gid] = gid;\n  memoryBarrierBuffer();\n  barrier();\n"
              "  if (lid < lsize - 1) { outv[gid + 1] = gid; }")),
    ("", port("inter_group_and_barrier_flag_tests/fail/sync", 64, 4, "",
              "outv[gid] = gid;\n  memoryBarrierBuffer();\n  barrier();\n  outv[gid + 1] = gid;", RACE)),
    ("", port("inter_group_and_barrier_flag_tests/fail/local_id", 64, 4, "", "outv[lid] = wg;", RACE)),
    ("", port("inter_group_and_barrier_flag_tests/pass/local_barrier_flag", 64, 4, "shared int p[64];",
              "p[lid] = lid;\n  barrier();\n  outv[gid] = p[(lid + 1) % lsize];")),
    ("", port("benign_race_tests/fail/writetiddiv64_offbyone", 65, 1, "shared int A[4];",
              "A[pc.x] = lid / 64;", RACE)),
    ("", port("benign_race_tests/pass/writezero", 64, 1, "shared int A[4];", "A[pc.x] = 0;")),
    ("", port("benign_race_tests/pass/writeinloop", 64, 2, "shared int A[4];",
              "for (int i = 0; i < 4; ++i) { A[0] = 5; }\n  barrier();\n  outv[gid] = A[0];")),
    ("", port("noraceduetoreturn", 64, 4, "shared float A[8];\nint bar() {\n"
              "  if (gl_LocalInvocationID.x != 0u) { return 0; }\n  A[4] = 26.8;\n  return 1;\n}",
              "int y = bar();")),
    ("", port("localarrayaccess", 64, 4, "shared int A[65];",
              "A[lid] = 2;\n  barrier();\n  int x = A[lid + 1];\n  outv[gid] = x;")),
    ("", port("shared_int", 64, 4, "shared int a;", "a = lid;", RACE)),
    ("", port("ternarytest", 64, 4, "shared float A[128];", "A[lid == 0 ? 1 : 2 * lid] = 2.4;")),
    ("", port("multidimarrays/test1", 64, 4, "shared int A[10][5];", "int x = A[3][4];\n  outv[gid] = x;")),
    ("", port("array_bounds_tests/simple_array", 8, 8, "shared int L[64];", "L[gid] = 64;")),
    ("", port("array_bounds_tests/simple_array_fail_upper", 8, 8, "shared int L[25];", "L[gid] = 64;", OOB)),
    ("", port("array_bounds_tests/simple_array_fail_lower", 8, 8, "shared int L[64];", "L[0 - gid] = 64;", OOB)),
    ("", port("array_bounds_tests/multi_dim_array_fail_upper", 8, 8, "shared int L[4][8];",
              "L[lid / 2][lid % 2 + 8] = lid;", OOB)),
    ("", port("atomics/counter", 64, 1, "shared int count;\nshared int A[64];",
              "if (lid == 0) { count = 0; }\n  barrier();\n  A[atomicAdd(count, 1)] = lid;")),
    ("", port("atomics/histo", 64, 1, "shared int A[64];\nshared int B[64];",
              "int t = A[lid];\n  atomicAdd(B[t], 1);")),
    ("", port("atomics/atomic_read_race", 64, 1, "shared int A[64];",
              "int x = A[lid];\n  atomicAdd(A[0], 1);\n  outv[gid] = x;", RACE)),
    ("", port("atomics/forloop", 64, 1, "",
              "int v = 1;\n  for (int i = 0; i < pc.x; i++) { v = atomicAdd(data[i], v); }\n  data[gid] = v;",
              RACE, x=4)),
    ("", port("misc/fail/struct_member_race", 64, 4,
              "struct S { int x; int y; };\nlayout(std430, set = 0, binding = 2) buffer G { S g[]; };",
              "g[3].y = gid;", RACE)),
    ("", port("misc/fail/vector_element_race", 64, 4,
              "layout(std430, set = 0, binding = 2) buffer G { vec4 g[]; };", "g[3].y = float(gid);", RACE)),
    ("", port("misc/fail/2d_array_race", (16, 16), (2, 2), "shared int L[17][16];",
              "int ly = int(gl_LocalInvocationID.y), gy = int(gl_GlobalInvocationID.y);\n"
              "  L[ly][lid] = data[gy * 32 + gid];\n  L[ly + 1][lid]++;\n  outv[gy * 32 + gid] = L[ly][lid];", RACE)),
    ("", port("report_global_id/test1", (2, 3, 4), (5, 6, 7), "",
              "uvec3 g3 = gl_GlobalInvocationID;\n"
              "  if (g3 == uvec3(0, 1, 2)) { outv[g3.x] = int(g3.y); }\n"
              "  if (g3 == uvec3(8, 13, 21)) { outv[pc.x] = int(g3.y); }", RACE)),
    ("", port("sourcelocation_tests/races/fail/write_read", 64, 2, "shared int a[64];\nshared int b[64];",
              "a[lid] = lid;\n  b[lid] = a[3];", RACE)),
    ("", port("sourcelocation_tests/races/fail/write_write/normal", 64, 2, "shared int a[64];",
              "a[lid] = lid;\n  if (lid == 0) { a[7] = 0; }", RACE)),
    ("", port("sourcelocation_tests/races/pass/read_read", 64, 2, "shared int p[64];\nshared int q[64];\nshared int r[64];",
              "p[lid] = q[lid];\n  r[lid] = q[lid];")),
    ("", port("sourcelocation_tests/races/pass/no_race", 64, 2, "shared int p[64];\nshared int q[64];\nshared int r[64];",
              "if (lid > 10) { p[lid] = q[lid]; }\n  if (lid <= 10) { r[lid] = p[lid]; }")),
    ("", port("sourcelocation_tests/barrier_divergence/fail", 64, 2, "shared int a[64];",
              "if (lid == 3) { barrier(); }\n  a[lid] = lid;", DIV)),
    ("", port("sourcelocation_tests/barrier_divergence/pass", 64, 2, "shared int a[64];\nshared int b[64];",
              "a[lid] = lid;\n  barrier();\n  b[lid] = lid;")),
    ("", port("test_line_number_problem", 64, 2, "shared int A[64];",
              "int temp = 0;\n  int i = 1;\n  while (i < lsize) {\n    if (i < lid) { temp = A[lid - i]; }\n"
              "    barrier();\n    if (i < lid) { A[lid] = A[lid] + temp; }\n    i = i * 2;\n  }", RACE)),
    ("", port("test_2d_local_index_inference", 128, 2, "shared int A[1024];\nshared int B[1024];",
              "int tidX = lid, tidY = int(gl_LocalInvocationID.y), t = tidY * lsize + lid;\n"
              "  for (int i = 0; i < 10; i++) {\n    A[tidY * lsize + tidX] = B[tidY * lsize + tidX] + 2;\n"
              "    B[t]++;\n  }")),
    ("", port("barrierconditionalkernelparam", 64, 4, "", "if (pc.x == 10) { barrier(); }", x=10)),
    ("", port("test_for_get_group_id", 64, 4, "", "if (wg == 0) { outv[lid] = 42; }")),
    ("", port("basicglobalarray", 64, 16, "", "outv[gid] = lid;")),
    ("", port("get_global_id", 64, 16, "", "data[gid] = data[gid] + 1;")),
    ("", port("derived_from_uniformity_analysis_bug", 64, 4, "",
              "for (int i = lid; i < 100; i++) { }\n  for (int j = 100; j > 0; j--) { }")),
    ("", port("globalarray/pass", 8, 8, "const int A[64] = int[64](" + ", ".join(["0"] * 64) + ");",
              "int a = A[gid];\n  if (a != 0) { outv[0] = gid; }")),
    # the issue's "correct reductions and tiled matrix products", and the same with a planted defect
    ("tree reduction", port("k-induction/amazingreduction", 64, 4, "shared int sh[64];", REDUCE)),
    ("reduction reading past the array", port("k-induction/amazingreduction", 64, 4, "shared int sh[64];",
                                              REDUCE.replace("lsize / 2", "lsize"), OOB)),
    ("reduction with the barrier inside the if", port("k-induction/amazingreduction", 64, 4, "shared int sh[64];",
                                                      REDUCE.replace("sh[lid + s];\n    barrier();",
                                                                     "sh[lid + s];\n    if (lid < s) barrier();"),
                                                      DIV, RACE)),
    ("tiled matmul", port("misc/fail/2d_array_race", (8, 8), (4, 4), TILED, MATMUL.replace("SECOND", "barrier();"))),
    ("tiled matmul without its second barrier", port("misc/fail/2d_array_race", (8, 8), (4, 4), TILED,
                                                     MATMUL.replace("SECOND", ""), RACE)),
]}


def shader(p: Port) -> str:
    return (f"#version 450\nlayout(local_size_x = {p.local[0]}, local_size_y = {p.local[1]}, "
            f"local_size_z = {p.local[2]}) in;\n"
            "layout(std430, set = 0, binding = 0) buffer Data { int data[]; };\n"
            "layout(std430, set = 0, binding = 1) buffer Out { int outv[]; };\n"
            "layout(push_constant) uniform Push { int x; } pc;\n"
            f"{p.decls}\nvoid main() {{\n"
            "  int lid = int(gl_LocalInvocationID.x), gid = int(gl_GlobalInvocationID.x), wg = int(gl_WorkGroupID.x);\n"
            "  int lsize = int(gl_WorkGroupSize.x);\n"
            f"  {p.body}\n}}\n")


def port_scenario(folder: Path, p: Port) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "port.comp").write_text(shader(p))
    np.save(folder / "data.npy", np.arange(2048, dtype=np.int32) % 3)
    np.save(folder / "push.npy", np.frombuffer(np.int32(p.x).tobytes(), np.uint8))
    doc = {"resources": [
        {"shader": {"uid": "port", "src": "port.comp", "type": "GLSL", "push_constants_size": 4}},
        {"buffer": {"uid": "data", "size": 8192, "shader_access": "readwrite", "src": "data.npy"}},
        {"buffer": {"uid": "out", "size": 8192, "shader_access": "readwrite"}},
        {"buffer": {"uid": "g", "size": 4096, "shader_access": "readwrite"}},
        {"raw_data": {"uid": "push", "src": "push.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "port", "rangeND": list(p.groups), "push_data_ref": "push",
                                           "bindings": [{"set": 0, "id": k, "resource_ref": uid}
                                                        for k, uid in enumerate(("data", "out", "g"))]}}]}
    (folder / "s.json").write_text(json.dumps(doc))
    return folder / "s.json"


# scenarios of two dispatches, the second reading what the first wrote (or overwriting what it
# read), with and without what orders them: (commands between, implicit barrier of the first,
# barrier resources, order of the shaders, a hazard on buffer "data" expected)
WRITER = ("#version 450\nlayout(local_size_x = 64) in;\n"
          "layout(std430, set = 0, binding = 0) buffer Data { int data[]; };\n"
          "void main() { data[gl_GlobalInvocationID.x] = int(gl_GlobalInvocationID.x); }\n")
READER = ("#version 450\nlayout(local_size_x = 64) in;\n"
          "layout(std430, set = 0, binding = 0) readonly buffer Data { int data[]; };\n"
          "layout(std430, set = 0, binding = 1) buffer Out { int outv[]; };\n"
          "void main() { outv[gl_GlobalInvocationID.x] = data[gl_GlobalInvocationID.x]; }\n")


def _b(kind: str, src: str = "ACCESS_COMPUTE_SHADER_WRITE", dst: str = "ACCESS_COMPUTE_SHADER_READ",
       **more: Any) -> dict[str, Any]:
    return {kind: {"uid": "b", "src_access": src, "dst_access": dst, "src_stage": ["COMPUTE"],
                   "dst_stage": ["COMPUTE"], **more}}


BARRIER = {"dispatch_barrier": {"memory_barrier_refs": ["b"]}}
BUFFER_BARRIER = {"dispatch_barrier": {"buffer_barrier_refs": ["b"]}}
DISPATCHES: dict[str, tuple[list[dict[str, Any]], bool, list[dict[str, Any]], tuple[str, str], bool]] = {
    "write then read, implicit_barrier true": ([], True, [], ("w", "r"), False),
    "write then read, implicit_barrier false, no barrier": ([], False, [], ("w", "r"), True),
    "write then read, memory barrier write->read": ([BARRIER], False, [_b("memory_barrier")], ("w", "r"), False),
    "write then read, buffer barrier on the buffer": ([BUFFER_BARRIER], False,
                                                      [_b("buffer_barrier", buffer_resource="data", size=4096)],
                                                      ("w", "r"), False),
    "write then read, buffer barrier on another buffer": ([BUFFER_BARRIER], False,
                                                          [_b("buffer_barrier", buffer_resource="out", size=4096)],
                                                          ("w", "r"), True),
    "write then read, buffer barrier on half the buffer": ([BUFFER_BARRIER], False,
                                                           [_b("buffer_barrier", buffer_resource="data", size=512)],
                                                           ("w", "r"), True),
    "write then read, barrier write->write": ([BARRIER], False, [_b("memory_barrier", dst="ACCESS_COMPUTE_SHADER_WRITE")],
                                              ("w", "r"), True),
    "write then read, barrier read->read": ([BARRIER], False, [_b("memory_barrier", src="ACCESS_COMPUTE_SHADER_READ")],
                                            ("w", "r"), True),
    "write then read, memory write->memory read, all stages": (
        [BARRIER], False, [_b("memory_barrier", src="ACCESS_MEMORY_WRITE", dst="ACCESS_MEMORY_READ",
                              src_stage=["ALL"], dst_stage=["ALL"])], ("w", "r"), False),
    "write then read, frame boundary": ([{"mark_boundary": {"resources": []}}], False, [], ("w", "r"), False),
    "write then write, no barrier": ([], False, [], ("w", "w"), True),
    "write then write, barrier write->write": ([BARRIER], False,
                                               [_b("memory_barrier", dst="ACCESS_COMPUTE_SHADER_WRITE")],
                                               ("w", "w"), False),
    "read then write, no barrier": ([], False, [], ("r", "w"), True),
    "read then write, execution dependency only": ([BARRIER], False,
                                                   [_b("memory_barrier", src="ACCESS_COMPUTE_SHADER_READ")],
                                                   ("r", "w"), False),
    "read then read, no barrier": ([], False, [], ("r", "r"), False),
}


def dispatch_scenario(folder: Path, name: str) -> Path:
    middle, implicit, barriers, order, _ = DISPATCHES[name]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "w.comp").write_text(WRITER)
    (folder / "r.comp").write_text(READER)
    bindings = {"w": [{"set": 0, "id": 0, "resource_ref": "data"}],
                "r": [{"set": 0, "id": 0, "resource_ref": "data"}, {"set": 0, "id": 1, "resource_ref": "out"}]}
    first = {"dispatch_compute": {"shader_ref": order[0], "rangeND": [16], "bindings": bindings[order[0]],
                                  "implicit_barrier": implicit}}
    second = {"dispatch_compute": {"shader_ref": order[1], "rangeND": [16], "bindings": bindings[order[1]]}}
    doc = {"resources": [{"shader": {"uid": "w", "src": "w.comp", "type": "GLSL"}},
                         {"shader": {"uid": "r", "src": "r.comp", "type": "GLSL"}},
                         {"buffer": {"uid": "data", "size": 4096, "shader_access": "readwrite"}},
                         {"buffer": {"uid": "out", "size": 4096, "shader_access": "readwrite"}}, *barriers],
           "commands": [first, *middle, second]}
    (folder / "s.json").write_text(json.dumps(doc))
    return folder / "s.json"


def verify(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    status = main(["verify", str(path), "--json"])
    captured = capsys.readouterr()
    assert status in (0, 1), captured.err
    return status, json.loads(captured.out)


def test_at_least_forty_ports_of_distinct_gpuverify_kernels() -> None:
    assert len({p.gpuverify for p in PORTS.values()}) >= 40


@pytest.mark.parametrize("name", sorted(PORTS))
def test_glsl_port(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = PORTS[name]
    status, doc = verify(port_scenario(tmp_path, p), capsys)
    found = {f["kind"] for f in doc["findings"] if f["severity"] == "defect"}
    assert found == set(p.kinds), [f["message"] for f in doc["findings"]]
    assert status == (1 if p.kinds else 0)


@pytest.mark.parametrize("name", sorted(DISPATCHES))
def test_barriers_between_dispatches(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, doc = verify(dispatch_scenario(tmp_path, name), capsys)
    hazards = [f for f in doc["findings"] if (f.get("race") or {}).get("scope") == "inter-dispatch"]
    assert all(f["kind"] == "data-race" for f in doc["findings"]) and len(hazards) == len(doc["findings"])
    # two readers both write "out": that write-after-write is a hazard of its own
    assert bool([f for f in hazards if f["resource"] == "data"]) == DISPATCHES[name][4], doc["findings"]
    assert {f["resource"] for f in hazards if f["resource"] != "data"} <= ({"out"} if DISPATCHES[name][3] == ("r", "r")
                                                                           else set())
    assert status == (1 if hazards else 0)
