"""``kernellab verify --prove`` end to end: verdicts, exit statuses, the JSON's ``method``, and
counterexamples replayed by the dynamic verify (Oclgrind for kernel-instantiation files, the
SPIR-V checker for scenarios); the GLSL ports of GPUVerify's tests never proven where they have a
defect."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kernellab import tools
from kernellab.cli import main

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")
sys.path.insert(0, str(Path(__file__).parent))
from test_verify_vulkan_ports import PORTS, port_scenario  # noqa: E402

RACY = """__kernel void k(__global int *A, int n) {
  int i = get_global_id(0);
  if (i < n) A[i] = A[i + 1];
}
"""
UNBOUNDED = """__kernel void k(__global int *A, int n) {
  for (int j = 0; j < n; j++) { A[get_global_id(0)] += j; barrier(CLK_GLOBAL_MEM_FENCE); }
}
"""


def instantiation(tmp: Path, source: str, name: str = "k.json") -> Path:
    (tmp / "k.cl").write_text(source)
    doc = [{"language": "OpenCL", "kernel_file": "k.cl", "entry_point": "k", "global_size": [64],
            "local_size": [16], "kernel_arguments": [{"type": "array", "size": 1024}, {"type": "scalar"}]}]
    (tmp / name).write_text(json.dumps(doc))
    return tmp / name


def prove(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    status = main(["verify", "--prove", "--json", *extra, str(path)])
    return status, json.loads(capsys.readouterr().out)


def test_race_for_some_scalar_is_replayed_and_confirmed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, doc = prove(instantiation(tmp_path, RACY), capsys)
    assert status == 1 and doc["verdict"] == "defects" and doc["checker"] == "proof"
    (launch,) = doc["launches"]
    assert launch["method"] == "proof" and launch["proof"] == "defect"
    race = next(f for f in doc["findings"] if f["kind"] == "data-race")
    assert race["severity"] == "defect"
    example = race["examples"][0]["counterexample"]
    n = int(example["kernel_arguments"][1]["value"], 16)
    assert n >= 2  # the race needs two neighbours inside the guard: the model chose such an n
    # the counterexample is a kernel-instantiation file the dynamic verify confirms on its own
    (tmp_path / "cex.json").write_text(json.dumps([example]))
    capsys.readouterr()
    assert main(["verify", "--json", str(tmp_path / "cex.json")]) == 1
    assert any(f["kind"] == "data-race" for f in json.loads(capsys.readouterr().out)["findings"])


def test_clean_kernel_is_proven(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, doc = prove(instantiation(tmp_path, RACY.replace("A[i + 1]", "A[i] + 1")), capsys)
    assert status == 0 and doc["verdict"] == "verified" and doc["launches"][0]["proof"] == "proven"


def test_unknown_exits_3_with_its_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    unmodelled = "__kernel void k(__global float *A, int n) {\n  __assert(__equal_floats(A[0], A[0]));\n}\n"
    status, doc = prove(instantiation(tmp_path, unmodelled), capsys, "--timeout", "30")
    assert status == 3 and doc["verdict"] == "unknown"
    assert "unsupported construct: the GPUVerify annotation __equal_floats" in doc["launches"][0]["reason"]
    assert "at line 2" in doc["launches"][0]["reason"]


def test_a_barrier_loop_with_a_symbolic_trip_count_is_proven(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    # was "invariant not found" (unknown) until loops with a barrier were summarised
    # (verify/prove/barrier_loops.py): each invocation writes its own element, n is uniform
    status, doc = prove(instantiation(tmp_path, UNBOUNDED), capsys, "--timeout", "30")
    assert status == 0 and doc["launches"][0]["proof"] == "proven", doc


def test_dynamic_verify_json_says_launch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kernellab.verify.model import Launch
    assert Launch(0, "k").to_json("verified")["method"] == "launch"


def test_prove_sizes_needs_prove(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--prove-sizes", str(instantiation(tmp_path, RACY))]) == 2


@pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")
def test_glsl_port_race_confirmed_by_the_spirv_checker(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = port_scenario(tmp_path / "p", PORTS["sourcelocation_tests/races/fail/write_write/normal"])
    status, doc = prove(path, capsys)
    assert status == 1 and doc["launches"][0]["proof"] == "defect"
    assert {f["kind"] for f in doc["findings"] if f["severity"] == "defect"} == {"data-race"}


@pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")
@pytest.mark.parametrize("name", sorted(n for n, p in PORTS.items() if p.kinds)[:12])
def test_glsl_port_with_a_defect_is_never_proven(name: str, tmp_path: Path) -> None:
    from kernellab.verify.prove.files import prove_files
    r = prove_files([port_scenario(tmp_path / "p", PORTS[name])], formats=["scenario"], replay=False,
                    timeout=30)[0]
    assert r.launches[0].proof != "proven"


ANNOTATED_INCLUDED = """#include "helper.h"

__kernel void k(__global int *A, int n) {
  __requires(n == 40);
  int i = get_global_id(0);
  if (i < n) A[i] = A[i + 1];
}
"""


def test_annotated_kernel_with_include_is_replayed_and_lines_are_the_users(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the replay builds without the annotation header (annotations defined away), so a kernel
    # using __requires is confirmed rather than left "possible: not replayed"; and the reported
    # line is the kernel file's own, not shifted by the header past the #include
    (tmp_path / "helper.h").write_text("int helper(int x);\n")
    status, doc = prove(instantiation(tmp_path, ANNOTATED_INCLUDED), capsys)
    assert status == 1 and doc["launches"][0]["proof"] == "defect"
    race = next(f for f in doc["findings"] if f["kind"] == "data-race")
    assert race["severity"] == "defect" and "confirmed by a replayed launch" in race["detail"]
    lines = {(Path(a["location"]["file"]).name, a["location"]["line"]) for a in race["accesses"]}
    assert lines == {("k.cl", 6)}
    assert [a["source_line"] for a in race["accesses"]] == ["if (i < n) A[i] = A[i + 1];"] * 2, race
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".kl-")]  # the copies are gone


@pytest.mark.parametrize("stage", ["compile_kernel", "prove"])
def test_the_time_limit_bounds_the_whole_launch(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                monkeypatch: pytest.MonkeyPatch, stage: str) -> None:
    # time spent outside the solver (clspv, the encoder's unrolling: here a step that runs on)
    # counts against --timeout: the launch is unknown at the limit, naming the step
    import time

    from kernellab.verify.prove import engine, opencl

    module = opencl if stage == "compile_kernel" else engine
    real = getattr(module, stage)

    def slow(*args: Any, **kwargs: Any) -> Any:
        end = time.monotonic() + 20
        while time.monotonic() < end:  # Python work (as the encoder's), not one long system call
            sum(range(1000))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, stage, slow)
    start = time.monotonic()
    status, doc = prove(instantiation(tmp_path, RACY), capsys, "--timeout", "1.5")
    assert time.monotonic() - start < 10
    (launch,) = doc["launches"]
    assert status == 3 and launch["proof"] == "unknown"
    assert launch["reason"].startswith("time limit (1.5 s) reached while "), launch["reason"]
    assert ("clspv" in launch["reason"]) == (stage == "compile_kernel")
    assert launch["seconds"] < 5


def test_replays_past_their_time_are_possible_not_refuted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # a real-world launch replays for minutes on Oclgrind: the replays share one time budget, and
    # a counterexample whose replay did not run (or stopped) is "not replayed", never "not reproduced"
    from kernellab.verify.prove import files

    monkeypatch.setattr(files, "REPLAY_SECONDS", 0.0)
    status, doc = prove(instantiation(tmp_path, RACY), capsys)
    race = next(f for f in doc["findings"] if f["kind"] == "data-race")
    assert race["severity"] == "warning" and "not replayed (no replay finished in the replays' 0 s" in race["detail"]
    assert doc["launches"][0]["proof"] == "possible"


RACE_PAST_64 = """__kernel void k(__global int *A, int n) {
  A[get_group_id(0) * 64 + get_local_id(0)] = get_local_id(0);
}
"""


def test_prove_sizes_race_replayed_at_its_sizes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = instantiation(tmp_path, RACE_PAST_64.replace("64", "16"))  # the launch's local size is 16
    status, doc = prove(path, capsys)
    assert status == 0
    status, doc = prove(path, capsys, "--prove-sizes")
    assert status == 1 and doc["launches"][0]["proof"] == "defect"
    assert "Oclgrind" in doc["launches"][0]["filled"][0]  # the limits are the replaying device's
    race = next(f for f in doc["findings"] if f["kind"] == "data-race")
    assert race["severity"] == "defect" and "confirmed" in race["detail"]
    example = race["examples"][0]
    assert example["local_size"][0] > 16 and example["num_groups"][0] >= 2
    replayed = example["counterexample"]  # in the launch's one dimension
    assert replayed["local_size"] == example["local_size"][:1]
    assert replayed["global_size"] == [example["local_size"][0] * example["num_groups"][0]]


@pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")
def test_prove_sizes_scenario_replayed_with_its_work_group_size(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.comp").write_text(
        "#version 450\nlayout(local_size_x_id = 0) in;\n"
        "layout(std430, binding = 0) buffer B { uint a[]; };\n"
        "void main() { if (gl_WorkGroupSize.x == 48u && gl_WorkGroupID == uvec3(0)) a[0] = gl_LocalInvocationID.x; }\n")
    doc = {"resources": [{"shader": {"uid": "s", "src": "s.comp", "type": "GLSL",
                                     "specialization_constants": [{"id": 0, "value": 64}]}},
                         {"buffer": {"uid": "a", "size": 4096, "shader_access": "readwrite"}}],
           "commands": [{"dispatch_compute": {"shader_ref": "s", "rangeND": [4],
                                              "bindings": [{"set": 0, "id": 0, "resource_ref": "a"}]}}]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    status, out = prove(tmp_path / "s.json", capsys)
    assert status == 0
    status, out = prove(tmp_path / "s.json", capsys, "--prove-sizes")
    assert status == 1 and out["launches"][0]["proof"] == "defect"
    (race,) = out["findings"]
    assert race["kind"] == "data-race" and race["severity"] == "defect"  # the checker ran it at size 48
    assert race["examples"][0]["local_size"] == [48, 1, 1]


@pytest.mark.parametrize("read, proof", [
    ("int x = A[i + 1];", {"defect", "possible"}),  # races with the next work-item's write
    ("int x = A[i];", {"proven"}),                  # its own element: no race
])
def test_an_unused_read_is_proven_from_the_build_that_keeps_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], read: str, proof: set[str]) -> None:
    # clspv deletes a load whose value is unused; the proof of a module that lacks it would be
    # unsound (was unknown): the kernel is built again with every access volatile and proven
    if tools.find("clang") is None:
        pytest.skip("needs clang (scripts/setup.sh test)")
    source = f"__kernel void k(__global int *A, int n) {{\n  int i = get_global_id(0);\n  {read}\n  A[i] = n;\n}}\n"
    status, doc = prove(instantiation(tmp_path, source), capsys)
    (launch,) = doc["launches"]
    assert launch["proof"] in proof, launch
    if "proven" not in proof:
        assert any(f["kind"] == "data-race" and f["accesses"][0]["location"]["line"] in (3, 4)
                   for f in doc["findings"]), doc["findings"]


def test_a_kernel_that_does_not_compile_is_bad_input_named_at_its_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # was exit 1 with the temporary annotated copy's name and the annotation header's warnings
    path = instantiation(tmp_path, "__kernel void k(__global int *A, int n) {\n  A[0] = bogus;\n}\n")
    capsys.readouterr()
    assert main(["verify", "--prove", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /0/kernel_file: k.cl:2:10: error: use of undeclared identifier 'bogus'" in err, err
    assert "kl-prove" not in err and "__kl_" not in err and "warning" not in err and "Traceback" not in err, err


def test_a_build_that_fails_without_an_error_in_the_source_is_unknown(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # clspv crashing on a valid kernel is the proof's shortfall, not the user's: unknown, exit 3
    from kernellab.compile.pipeline import Compiler
    from kernellab.errors import ToolError, ToolFailure

    def crash(self: object) -> None:
        raise ToolError("compiling /tmp/kl-prove-x1y2/k.cl with clspv (pyclspv): clspv (pyclspv) failed (exit -11)",
                        ToolFailure("clspv", ["clspv"], -11, "Stack dump:\n0. Program arguments: clspv"))

    monkeypatch.setattr(Compiler, "vulkan_module", crash)
    status, doc = prove(instantiation(tmp_path, RACY), capsys)
    assert status == 3
    (launch,) = doc["launches"]
    assert launch["proof"] == "unknown" and "clspv could not build the kernel" in launch["reason"], launch
    # named by the user's file, not the annotated copy's temporary folder
    assert "compiling k.cl with clspv" in launch["reason"] and "kl-prove" not in launch["reason"], launch


def test_a_scenario_kernel_that_does_not_compile_is_bad_input_at_its_json_path(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # was the bare "k.cl:3:...: error" with no scenario file or JSON path in front
    (tmp_path / "k.cl").write_text("__kernel void k(__global int *A) {\n  int i = get_global_id(0);\n"
                                   "  A[i] = i +;\n}\n")
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "type": "OpenCL-C", "src": "k.cl", "entry": "k"}},
                      {"buffer": {"uid": "a", "size": 64, "shader_access": "writeonly", "dst": "a.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [16],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "a"}]}}]}))
    capsys.readouterr()
    assert main(["verify", "--prove", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /resources/0/shader/src: k.cl:3:13: error: expected expression" in err, err
    assert "Traceback" not in err and "kl-prove" not in err, err
