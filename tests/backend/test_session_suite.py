"""`kernellab test`, `run --check`, `bless` and `--trace` end to end on lavapipe."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.scenarios import vector_add, write

# lavapipe ends any loop after 65535 iterations, so a hang is 4e9 workgroups instead (minutes)
HANG_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
void main() { atomicAdd(v[1], gl_WorkGroupID.x ^ gl_WorkGroupID.y); }
"""


def cli(*args: object, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp", **(env or {})}, timeout=timeout)


def add_case(folder: Path, n: int, offset: float, expected_offset: float | None = None,
             tol: dict | None = None) -> Path:
    """c = a + b with b = offset; the reference says c = a + expected_offset."""
    folder.mkdir(parents=True, exist_ok=True)
    path, _ = vector_add(folder, n)
    np.save(folder / "b.npy", np.full(n, offset, np.float32))
    (folder / "ref").mkdir(exist_ok=True)
    eo = offset if expected_offset is None else expected_offset
    np.save(folder / "ref" / "c.npy", np.arange(n, dtype=np.float32) + np.float32(eo))
    write(folder / "scenario.expect.json", {"outputs": {"c": {"reference": "ref/c.npy", **(tol or {})}}})
    return path


def hang_case(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hang.comp").write_text(HANG_GLSL)
    np.save(folder / "ref.npy", np.zeros(4, np.uint32))
    write(folder / "scenario.json", {
        "resources": [{"shader": {"uid": "hang", "src": "hang.comp", "type": "GLSL"}},
                      {"buffer": {"uid": "v", "size": 16, "shader_access": "readwrite", "dst": "v.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "hang", "rangeND": [65535, 65535],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "v"}]}}]})
    write(folder / "scenario.expect.json", {"outputs": {"v": {"reference": "ref.npy"}}})
    return folder / "scenario.json"


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("suite")
    for i in range(6):
        add_case(root / "ok" / f"case{i}", 16 + i, float(i))
    add_case(root / "bad" / "off_by_one", 20, 1.0, expected_offset=2.0)
    add_case(root / "tolerant" / "close", 20, 1.0, expected_offset=1.0000001, tol={"rtol": 1e-5})
    return root


def ids(proc: subprocess.CompletedProcess[str]) -> dict[str, dict]:
    return {row["id"]: row for row in map(json.loads, proc.stdout.splitlines())}


def test_suite_passes_and_fails_with_a_report(suite: Path, tmp_path: Path) -> None:
    proc = cli("test", suite, "--jobs", 2, "--json", "--junit", tmp_path / "junit.xml", "--trace", tmp_path / "t.json",
               cwd=suite)
    assert proc.returncode == 1, proc.stderr
    rows = ids(proc)
    assert len(rows) == 8
    bad = rows["bad/off_by_one/scenario.json"]
    assert (bad["status"], bad["outcome"], bad["attempts"]) == ("fail", "fail", 2)
    assert "c: 20 of 20 elements differ (exact)" in bad["message"]
    assert "[0] expected 2.0, actual 1.0 (allowed: exact)" in bad["message"]
    assert all(r["outcome"] == "pass" for k, r in rows.items() if k != "bad/off_by_one/scenario.json")
    assert "FAIL bad/off_by_one/scenario.json" in proc.stderr and "FAILED (1 unexpected): 8 workloads" in proc.stderr
    assert (tmp_path / "junit.xml").read_text().count("<testcase") == 8
    trace = json.loads((tmp_path / "t.json").read_text())
    events = trace["traceEvents"]
    workloads = [e for e in events if e.get("cat") == "workload"]
    # issue 20: the re-run workload's both attempts are slices (8 workloads, 9 attempts)
    assert len(workloads) == 9 and all(e["ph"] == "X" and e["dur"] > 0 for e in workloads)
    assert sorted(e["name"] for e in workloads if "off_by_one" in e["name"]) == [
        "bad/off_by_one/scenario.json (attempt 1 of 2)", "bad/off_by_one/scenario.json (attempt 2 of 2)"]
    gpu = [e for e in events if e.get("cat") == "gpu"]
    assert len(gpu) == 9 and all(e["name"] == "dispatch_compute add" and e["dur"] >= 0 for e in gpu)
    assert [a["status"] for a in bad["earlier_attempts"]] == ["fail"]
    assert (tmp_path / "junit.xml").read_text().count("<rerunFailure") == 1


def test_only_the_good_ones_pass_and_exit_zero(suite: Path) -> None:
    proc = cli("test", suite / "ok", suite / "tolerant", "--jobs", 1, cwd=suite)
    assert proc.returncode == 0, proc.stderr
    assert "OK: 7 workloads" in proc.stderr


def test_a_crashing_workload_fails_alone(suite: Path) -> None:
    env = {"KERNELLAB_FAULT_ABORT": "ok/case3"}
    proc = cli("test", suite / "ok", "--jobs", 2, "--json", cwd=suite, env=env)
    assert proc.returncode == 1
    rows = ids(proc)
    crash = rows["ok/case3/scenario.json"]
    assert (crash["status"], crash["outcome"]) == ("crash", "fail")
    assert "the worker died (SIGABRT)" in crash["message"]
    assert sum(r["outcome"] == "pass" for r in rows.values()) == 5
    # listed in a baseline, the crash no longer fails the suite
    baseline = suite.parent / "crash-baseline.csv"
    baseline.write_text("ok/case3/scenario.json,Crash\n")
    proc = cli("test", suite / "ok", "--jobs", 2, "--baseline", baseline, "--json", cwd=suite, env=env)
    assert proc.returncode == 0, proc.stderr
    assert ids(proc)["ok/case3/scenario.json"]["outcome"] == "expected-fail"
    # ...and once fixed, the baseline entry is an unexpected pass
    proc = cli("test", suite / "ok", "--jobs", 2, "--baseline", baseline, "--json", cwd=suite)
    assert proc.returncode == 1
    assert ids(proc)["ok/case3/scenario.json"]["outcome"] == "unexpected-pass"


def test_a_failure_that_passes_on_the_rerun_is_flaky(suite: Path, tmp_path: Path) -> None:
    env = {"KERNELLAB_FAULT_ABORT": "ok/case1", "KERNELLAB_FAULT_ONCE_DIR": str(tmp_path)}
    proc = cli("test", suite / "ok", "--jobs", 2, "--json", cwd=suite, env=env)
    assert proc.returncode == 0, proc.stderr
    row = ids(proc)["ok/case1/scenario.json"]
    assert (row["outcome"], row["attempts"]) == ("flaky", 2) and "failed once (Crash" in row["message"]
    assert "FLAKY ok/case1/scenario.json" in proc.stderr


def test_a_hanging_workload_times_out_alone(suite: Path, tmp_path: Path) -> None:
    root = tmp_path / "s"
    hang_case(root / "hang")
    add_case(root / "fine", 8, 1.0)
    proc = cli("test", root, "--jobs", 1, "--timeout", 3, "--no-rerun", "--json", cwd=root)
    assert proc.returncode == 1
    rows = ids(proc)
    assert rows["hang/scenario.json"]["status"] == "timeout"
    assert "no result after 3 s; the worker was killed and replaced" in rows["hang/scenario.json"]["message"]
    assert rows["fine/scenario.json"]["outcome"] == "pass"


def test_shards_partition_the_suite(suite: Path) -> None:
    full = cli("test", suite, "--list", cwd=suite).stdout.split()
    parts = [cli("test", suite, "--list", "--shard", f"{i}/3", cwd=suite).stdout.split() for i in (1, 2, 3)]
    assert len(full) == 8 and sorted(x for p in parts for x in p) == sorted(full)
    ran = []
    for i in (1, 2, 3):
        proc = cli("test", suite, "--shard", f"{i}/3", "--jobs", 1, "--json", "--no-rerun", cwd=suite)
        ran += list(ids(proc))
    assert sorted(ran) == sorted(full)


def test_bad_input_exits_2(suite: Path, tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    (tmp_path / "x.expect.json").write_text('{"outputs": {"c": {"reference": "c.npy", "rtol": "big"}}}')
    proc = cli("test", tmp_path, cwd=tmp_path)
    assert proc.returncode == 2 and "x.expect.json: /outputs/c/rtol: expected a number >= 0" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert cli("test", suite, "--shard", "4/3", cwd=suite).returncode == 2
    assert cli("test", tmp_path / "missing", cwd=tmp_path).returncode == 2


def test_run_check_bless_and_trace(tmp_path: Path) -> None:
    path = add_case(tmp_path, 32, 1.0)
    proc = cli("run", path, "--check", "--trace", tmp_path / "run-trace.json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "check: 1 output matches scenario.expect.json" in proc.stderr
    events = json.loads((tmp_path / "run-trace.json").read_text())["traceEvents"]
    assert {"setup", "pipeline_creation", "run", "save"} <= {e["name"] for e in events if e.get("cat") == "host"}
    assert any(e.get("cat") == "gpu" for e in events)
    # a wrong reference: exit 1, the mismatch report names index, values and tolerance
    np.save(tmp_path / "ref" / "c.npy", np.arange(32, dtype=np.float32) + np.float32(1.5))
    proc = cli("run", path, "--check", cwd=tmp_path)
    assert proc.returncode == 1
    assert "c: 32 of 32 elements differ (exact)" in proc.stderr
    assert "[0] expected 1.5, actual 1.0 (allowed: exact)" in proc.stderr and "... and 27 more" in proc.stderr
    # bless refuses to overwrite, then with --force rewrites the reference and keeps the tolerance
    proc = cli("bless", path, cwd=tmp_path)
    assert proc.returncode == 2 and "exists: pass --force" in proc.stderr
    doc = json.loads((tmp_path / "scenario.expect.json").read_text())
    doc["outputs"]["c"].update({"dtype": "float32", "atol": 1e-6})
    write(tmp_path / "scenario.expect.json", doc)
    proc = cli("bless", path, "--force", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    ref = np.load(tmp_path / "ref" / "c.npy")
    assert ref.dtype == np.float32 and ref[0] == 1.0
    assert json.loads((tmp_path / "scenario.expect.json").read_text())["outputs"]["c"]["atol"] == 1e-6
    assert cli("run", path, "--check", cwd=tmp_path).returncode == 0


def test_bless_writes_a_new_sidecar(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path, 8)
    proc = cli("bless", path, "--dtype", "c=float32", "--rtol", "1e-6", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads((tmp_path / "scenario.expect.json").read_text())
    assert doc == {"outputs": {"c": {"reference": "scenario.expected/c.npy", "dtype": "float32", "atol": 0.0,
                                     "rtol": 1e-6}}}
    np.testing.assert_array_equal(np.load(tmp_path / "scenario.expected" / "c.npy"),
                                  np.arange(8, dtype=np.float32) + 2)
    assert cli("test", tmp_path, "--jobs", 1, cwd=tmp_path).returncode == 0
    proc = cli("bless", path, cwd=tmp_path)
    assert proc.returncode == 2


def test_ray_gives_the_same_results_as_the_local_pool(suite: Path) -> None:
    pytest.importorskip("ray")
    local = cli("test", suite, "--jobs", 2, "--json", cwd=suite)
    ray = cli("test", suite, "--executor", "ray", "--jobs", 2, "--batch-size", 3, "--json", cwd=suite, timeout=600)
    assert ray.returncode == local.returncode == 1, ray.stderr[-3000:]
    strip = ("duration_s", "worker", "phases_ms")

    def kept(r: dict) -> dict:
        return {f: [kept(a) for a in v] if f == "earlier_attempts" else v for f, v in r.items() if f not in strip}
    same = {k: kept(r) for k, r in ids(local).items()}
    assert {k: kept(r) for k, r in ids(ray).items()} == same
    assert "(ray)" in ray.stderr
