"""Issue 12: verdicts with GPUVerify's meaning, async copies in flight (wait_group_events completing
a copy for the whole group, as OpenCL C has it; a copy never racing with itself; different events;
colliding copies), static arrays indexed past their first dimension, printf output kept out of
``--json``, non-uniform work-groups, findings in the user's terms, many launches per call."""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from kernellab.commands import verify as verify_cmd
from kernellab.verify import verify
from kernellab.verify.run import verify_many

GLOBAL = {"type": "array", "size": 256, "address_space": "global"}
LOCAL = {"type": "array", "size": 64, "address_space": "local"}


def write(tmp_path: Path, name: str, source: str, args: list[dict[str, Any]], global_size: list[int],
          local_size: list[int]) -> Path:
    (tmp_path / f"{name}.cl").write_text(source)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": f"{name}.cl", "global_size": global_size,
                                 "local_size": local_size, "entry_point": "k", "kernel_arguments": args}]))
    return path


UNINIT_LOCAL = """\
__kernel void k(__global int *out) {
  __local int t[8];
  int l = get_local_id(0);
  barrier(CLK_LOCAL_MEM_FENCE);
  out[get_global_id(0)] = t[l];
}
"""


def test_uninitialized_local_read_is_a_warning_unless_checked(tmp_path: Path) -> None:
    path = write(tmp_path, "u", UNINIT_LOCAL, [GLOBAL], [16], [8])
    default = verify(path)
    assert default.verdict == "verified" and default.exit_status == 0
    assert default.findings == []  # the slow tracker did not even run
    checked = verify(path, check=["uninitialized"])
    assert checked.verdict == "defects" and checked.exit_status == 1
    [f] = [f for f in checked.findings if f.kind == "uninitialized-read"]
    assert f.severity == "defect" and f.location["line"] == 5


def test_warning_kinds_reported_with_severity(tmp_path: Path) -> None:
    src = "__kernel void k(__global int *out) {\n  out[get_global_id(0)] = 1;\n}\n"
    path = write(tmp_path, "ro", src, [{**GLOBAL, "flags": ["CL_MEM_READ_ONLY"]}], [16], [8])
    result = verify(path)
    assert result.verdict == "verified"
    [f] = result.findings
    assert f.kind == "write-to-read-only" and f.severity == "warning"
    assert f.to_json()["severity"] == "warning"
    assert verify(path, check=["write-to-read-only"]).verdict == "defects"


def test_unknown_check_is_a_usage_error(tmp_path: Path) -> None:
    from kernellab.errors import UsageError
    path = write(tmp_path, "ro", "__kernel void k(__global int *o) { o[0] = 1; }\n", [GLOBAL], [1], [1])
    with pytest.raises(UsageError, match="unknown check 'races'"):
        verify(path, check=["races"])


COPY_HEAD = """\
__kernel void k(__global int *p, __global int *q) {
  __local int buf[8];
  int l = get_local_id(0);
  event_t e = async_work_group_copy(buf, p + get_group_id(0) * 8, 8, 0);
"""

# name -> (body after the copy, expected kind, line of the user's access or divergent call)
ASYNC_SHAPES: dict[str, tuple[str, str, int]] = {
    "read-destination-in-flight": (
        "  q[get_global_id(0)] = buf[l];\n"
        "  wait_group_events(1, &e);\n}\n", "data-race", 5),
    "write-source-in-flight": (
        "  p[get_global_id(0)] = 7;\n"
        "  wait_group_events(1, &e);\n}\n", "data-race", 5),
    "read-after-barrier-before-wait": (
        "  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);\n"
        "  q[get_global_id(0)] = buf[l];\n"
        "  wait_group_events(1, &e);\n}\n", "data-race", 6),
    "write-source-after-barrier-before-wait": (
        "  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);\n"
        "  p[get_global_id(0)] = 7;\n"
        "  wait_group_events(1, &e);\n}\n", "data-race", 6),
    "wait-reached-by-part": (
        "  if (l < 3) wait_group_events(1, &e);\n}\n", "barrier-divergence", 5),
}


@pytest.mark.parametrize("shape", list(ASYNC_SHAPES))
def test_async_copy_defect_shapes(tmp_path: Path, shape: str) -> None:
    body, kind, line = ASYNC_SHAPES[shape]
    source = COPY_HEAD + body
    result = verify(write(tmp_path, shape, source, [GLOBAL, GLOBAL], [16], [8]))
    assert result.verdict == "defects"
    found = [f for f in result.findings if f.kind == kind and f.severity == "defect"]
    assert found, [f.to_json() for f in result.findings]
    f = found[0]
    lines = {a.location["line"] for a in f.accesses if a.location}
    assert line in lines
    if kind == "data-race":
        # the race names the copy's call site (line 4) as one side and the user's access as the other
        copy = [a for a in f.accesses if a.what]
        assert copy and copy[0].location["line"] == 4 and "async_work_group_copy at line 4" in copy[0].what
        assert copy[0].source_line.startswith("event_t e = async_work_group_copy(")


def test_async_copy_reached_by_part_of_the_group(tmp_path: Path) -> None:
    source = ("__kernel void k(__global int *p) {\n"
              "  __local int buf[8];\n"
              "  if (get_local_id(0) < 5) {\n"
              "    event_t e = async_work_group_copy(buf, p, 8, 0);\n"
              "    wait_group_events(1, &e);\n"
              "  }\n}\n")
    result = verify(write(tmp_path, "part", source, [GLOBAL], [16], [8]))
    div = [f for f in result.findings if f.kind == "barrier-divergence"]
    assert div and div[0].location["line"] == 4 and "async" in div[0].detail


def test_clean_async_copy_verifies(tmp_path: Path) -> None:
    source = COPY_HEAD + ("  wait_group_events(1, &e);\n"
                          "  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);\n"
                          "  q[get_global_id(0)] = buf[(l + 1) % 8] + p[get_global_id(0)];\n}\n")
    result = verify(write(tmp_path, "clean", source, [GLOBAL, GLOBAL], [16], [8]))
    assert result.verdict == "verified", [f.to_json() for f in result.findings]


def test_non_uniform_work_groups_run_on_oclgrind(tmp_path: Path) -> None:
    src = "__kernel void k(__global int *out) {\n  out[get_global_id(0)] = get_local_size(0);\n}\n"
    clean = verify(write(tmp_path, "nu", src, [{"type": "array", "size": 80}], [20], [8]))
    assert clean.verdict == "verified" and clean.launches[0].uniform is False
    # the last, partial group (4 work-items) writes past a 16-element buffer: found, so it ran
    short = verify(write(tmp_path, "nu2", src, [{"type": "array", "size": 64}], [20], [8]))
    oob = [f for f in short.findings if f.kind == "out-of-bounds"]
    assert oob and oob[0].index == 16


def test_findings_in_the_users_terms(tmp_path: Path) -> None:
    src = ("__kernel void k(__global int *out, __global const int *in) {\n"
           "  __local int tile[8];\n"
           "  int l = get_local_id(0);\n"
           "  tile[l] = in[get_global_id(0) + 1];\n"
           "  out[get_global_id(0)] = tile[(l + 1) % 8];\n}\n")
    result = verify(write(tmp_path, "terms", src, [{"type": "array", "size": 64}, {"type": "array", "size": 64}],
                          [16], [8]))
    oob = next(f.to_json() for f in result.findings if f.kind == "out-of-bounds")
    assert oob["resource"] == "argument 1 (in)" and oob["index"] == 16 and oob["variable"] == "in"
    assert oob["source"]["line"] == 4 and oob["source"]["text"] == "tile[l] = in[get_global_id(0) + 1];"
    race = next(f.to_json() for f in result.findings if f.kind == "data-race")
    assert race["variable"] == "tile" and race["address_space"] == "local" and 0 <= race["index"] < 8
    assert set(race) >= {"resource", "index", "variable", "source", "work_items"}
    # examples are distinct sets of work-items
    shown = [json.dumps(sorted(json.dumps(w, sort_keys=True) for w in ex["work_items"])) for ex in race["examples"]]
    assert len(shown) == len(set(shown))


def test_many_files_one_call_and_jobs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    racy = write(tmp_path, "racy", "__kernel void k(__global int *o) {\n  o[0] = get_global_id(0);\n}\n",
                 [GLOBAL], [16], [8])
    clean = write(tmp_path, "clean", "__kernel void k(__global int *o) {\n  o[get_global_id(0)] = 1;\n}\n",
                  [GLOBAL], [16], [8])
    one = verify_many([racy, clean, racy])
    assert [r.verdict for r in one] == ["defects", "verified", "defects"]
    two = verify_many([racy, clean, racy], jobs=2)
    assert [r.verdict for r in two] == ["defects", "verified", "defects"]
    assert [[f.kind for f in r.findings] for r in one] == [[f.kind for f in r.findings] for r in two]
    ns = argparse.Namespace(file=[racy, clean], json=True, index=None, seed=0, format=None, check=[], jobs=1)
    assert verify_cmd.run(ns) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [f["verdict"] for f in doc["files"]] == ["defects", "verified"]
    assert doc["files"][0]["launches"][0]["verdict"] == "defects"


def test_capture_findings_point_at_the_python_file(tmp_path: Path) -> None:
    from kernellab.commands import capture as capture_cmd
    prog = tmp_path / "prog.py"
    kernel = ("__kernel void shift(__global int *a, __local int *t) {\n"
              "  int l = get_local_id(0); t[l] = a[get_global_id(0)];\n"
              "  a[get_global_id(0)] = t[(l + 1) % get_local_size(0)]; }")
    host = ["import numpy as np, pyopencl as cl",
            "platform = [p for p in cl.get_platforms() if 'Portable' in p.name][0]",
            "ctx = cl.Context(platform.get_devices()); q = cl.CommandQueue(ctx)",
            f"prg = cl.Program(ctx, '''\n{kernel}''').build()",
            "a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=np.arange(32, dtype=np.int32))",
            "prg.shift(q, (32,), (8,), a, cl.LocalMemory(32))", "q.finish()"]
    prog.write_text("\n".join(host) + "\n")
    assert capture_cmd.run(argparse.Namespace(output=tmp_path / "cap", program=[str(prog)])) == 0
    result = verify(tmp_path / "cap" / "capture.json")
    race = next(f.to_json() for f in result.findings if f.kind == "data-race")
    assert race["source"]["file"] == str(prog)
    assert race["source"]["line"] in (6, 7)
    assert race["variable"] == "t"


def summary(result: Any) -> list[tuple[str, str, str | None]]:
    return sorted({(f.kind, f.severity, f.variable) for f in result.findings}, key=str)


PRINTF = """\
__kernel void k(__global int *out) {
  out[get_global_id(0)] = 1;
  if (get_global_id(0) == 2) printf("hello from %d\\n", (int)get_global_id(0));
}
"""


@pytest.mark.parametrize("jobs", [1, 2])
def test_printf_stays_out_of_json(tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: int) -> None:
    path = write(tmp_path, "p", PRINTF, [GLOBAL], [4], [4])
    other = write(tmp_path, "q", "__kernel void k(__global int *o) { o[get_global_id(0)] = 2; }\n", [GLOBAL], [4], [4])
    ns = argparse.Namespace(file=[path, other], json=True, index=None, seed=0, format=None, check=[], jobs=jobs)
    assert verify_cmd.run(ns) == 0
    doc = json.loads(capsys.readouterr().out)  # nothing but the document on stdout
    assert doc["files"][0]["launches"][0]["output"] == "hello from 2\n"
    assert doc["files"][1]["launches"][0]["output"] is None
    ns.json = False
    assert verify_cmd.run(ns) == 0
    text = capsys.readouterr().out
    assert "printf output of launch 0 (k):\n  | hello from 2\n" in text


SELF_RACE = """\
__kernel void k(__global int *data, __local int *scratch) {
  event_t e = async_work_group_copy(scratch, data, 4, 0);
  barrier(CLK_GLOBAL_MEM_FENCE);
  data[3 - get_local_id(0)] = get_local_id(0) + 10;
  wait_group_events(1, &e);
}
"""


def test_a_copy_never_races_with_itself(tmp_path: Path) -> None:
    # the copy is still in flight when its source is written: that write races with the copy; the
    # copy's own writes to scratch (its modelled writers, then Oclgrind's copy at the wait) read the
    # changed source, which used to be reported as the copy racing with itself
    result = verify(write(tmp_path, "self", SELF_RACE, [GLOBAL, LOCAL], [4], [4]))
    assert result.verdict == "defects"
    assert {f.kind for f in result.findings} == {"data-race"}
    assert {f.variable for f in result.findings} == {"data"}
    for f in result.findings:
        copy = [a for a in f.accesses if a.what]
        assert len(copy) == 1 and any(a.location and a.location["line"] == 4 for a in f.accesses)




def test_wait_completes_the_copy_for_the_whole_group(tmp_path: Path) -> None:
    # OpenCL C: the wait returns when the work-group's copy is complete; no barrier is needed to
    # read what other work-items' share of the copy wrote, or to overwrite the source
    body = ("  wait_group_events(1, &e);\n"
            "  q[get_global_id(0)] = buf[(l + 1) % 8];\n"
            "  p[get_group_id(0) * 8 + (l + 3) % 8] = l;\n}\n")
    result = verify(write(tmp_path, "waited", COPY_HEAD + body, [GLOBAL, GLOBAL], [16], [8]))
    assert result.verdict == "verified", [f.to_json() for f in result.findings]


def test_unwaited_copy_races_with_writes_to_its_source(tmp_path: Path) -> None:
    body = "  p[get_group_id(0) * 8 + (l + 3) % 8] = l;\n}\n"
    result = verify(write(tmp_path, "unwaited", COPY_HEAD + body, [GLOBAL, GLOBAL], [16], [8]))
    assert ("data-race", "defect", "p") in summary(result)
    assert ("unwaited-event", "warning", None) in summary(result)


def test_a_copy_given_different_events_is_barrier_divergence(tmp_path: Path) -> None:
    src = ("__kernel void k(__global int *p, __global int *q) {\n"
           "  __local int a[8], b[8], c[8];\n"
           "  event_t ea = async_work_group_copy(a, p, 8, 0);\n"
           "  event_t eb = async_work_group_copy(b, q, 8, 0);\n"
           "  event_t *chosen = get_local_id(0) < 3 ? &ea : &eb;\n"
           "  event_t e = async_work_group_copy(c, p + 8, 8, *chosen);\n"
           "  wait_group_events(1, &ea); wait_group_events(1, &eb);\n}\n")
    result = verify(write(tmp_path, "events", src, [GLOBAL, GLOBAL], [8], [8]))
    [div] = [f for f in result.findings if f.kind == "barrier-divergence"]
    assert div.severity == "defect" and div.location["line"] == 6
    assert "async_work_group_copy at line 6: work-items passed it different events" in div.detail
    # the same event everywhere: no finding at all
    same = src.replace("get_local_id(0) < 3 ? &ea : &eb", "&eb")
    assert verify(write(tmp_path, "same", same, [GLOBAL, GLOBAL], [8], [8])).findings == []


def test_two_copies_colliding_on_one_destination_race(tmp_path: Path) -> None:
    src = ("__kernel void k(__global int *p, __global int *q) {\n"
           "  __local int a[8], b[8];\n"
           "  a[get_local_id(0)] = 1; b[get_local_id(0)] = 2;\n"
           "  barrier(CLK_LOCAL_MEM_FENCE);\n"
           "  event_t e = async_work_group_copy(p, a, 8, 0);\n"
           "  async_work_group_copy(p, b, 8, e);\n"
           "  wait_group_events(1, &e);\n}\n")
    result = verify(write(tmp_path, "collide", src, [GLOBAL, GLOBAL], [8], [8]))
    [race] = [f for f in result.findings if f.kind == "data-race"]
    assert race.race["type"] == "write-write" and race.variable == "p"
    assert sorted(a.location["line"] for a in race.accesses) == [5, 6]


STATIC = """\
struct S { int a; char b[2]; };
__kernel void k(__global char *out) {
  volatile struct S s = {-1, {42, 7}};
  int i = get_global_id(0);
  out[i] = s.b[i];
}
"""

INNER = """\
__kernel void k(__global int *out) {
  __local int L[4][8];
  int i = get_local_id(0);
  L[0][i] = i;
  barrier(CLK_LOCAL_MEM_FENCE);
  out[i] = L[0][(i + 1) % 32];
}
"""


def test_static_array_index_past_its_first_dimension_is_out_of_bounds(tmp_path: Path) -> None:
    # s.b[2] and s.b[3] stay inside the struct (Oclgrind reports no invalid access) but leave b
    result = verify(write(tmp_path, "member", STATIC, [{"type": "array", "size": 4}], [4], [4]))
    assert result.verdict == "defects"
    [oob] = result.findings
    assert (oob.kind, oob.severity, oob.variable, oob.location["line"]) == ("out-of-bounds", "defect", "b", 5)
    assert "past the first dimension of b" in oob.detail


def test_static_array_index_past_an_inner_dimension_is_a_warning(tmp_path: Path) -> None:
    # L[0][8..31] is past the inner dimension but inside L (GPUVerify checks the flattened index)
    result = verify(write(tmp_path, "inner", INNER, [{"type": "array", "size": 128}], [32], [32]))
    assert result.verdict == "verified"
    assert {(f.kind, f.severity, f.variable) for f in result.findings} == {("array-index", "warning", "L")}
    assert "inner dimension of L" in result.findings[0].detail
