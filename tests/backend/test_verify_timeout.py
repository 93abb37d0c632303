"""`kernellab verify --timeout`: a launch that never ends stops verify (one job) or is reported as
not finished while the other launches' verdicts still print (--jobs), with no process left behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernellab.verify.run import verify_many

#: Oclgrind cannot prove the loop ends: the exit depends on a buffer's contents (seeded, not 12345)
SPIN = ("__kernel void spin(__global int *x) {\n"
        "  while (1) { if (x[0] == 12345) break; }\n"
        "}\n")
CLEAN = "__kernel void k(__global int *out) { out[get_global_id(0)] = 1; }\n"
ARRAY = [{"type": "array", "size": 16}]


def launch(kernel_file: str, entry: str) -> dict[str, object]:
    return {"language": "OpenCL", "kernel_file": kernel_file, "global_size": [4], "local_size": [4],
            "entry_point": entry, "kernel_arguments": ARRAY}


def write(tmp_path: Path, name: str, entries: list[str]) -> Path:
    (tmp_path / "spin.cl").write_text(SPIN)
    (tmp_path / "k.cl").write_text(CLEAN)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps([launch(f"{e}.cl" if e == "spin" else "k.cl", e) for e in entries]))
    return path


def kernellab_verify(*argv: str, tmpdir: Path | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    start = time.monotonic()
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **({"TMPDIR": str(tmpdir)} if tmpdir else {})}
    proc = subprocess.run([sys.executable, "-m", "kernellab", "verify", *argv], capture_output=True, text=True,
                          timeout=120, env=env)
    return proc, time.monotonic() - start


def leftovers(tmp_path: Path) -> list[str]:
    """Processes still running with our files on their command line (verify's harness children)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if str(tmp_path) in cmdline:
            found.append(f"{pid}: {cmdline}")
    return found


def test_one_job_stops_at_the_limit(tmp_path: Path) -> None:
    path = write(tmp_path, "K", ["k", "spin"])
    staging = tmp_path / "tmp"
    staging.mkdir()
    proc, took = kernellab_verify(str(path), "--timeout", "1", tmpdir=staging)
    assert proc.returncode == 1, proc.stderr
    assert took < 30
    assert (f"kernellab verify: error: launch 1 (spin) of {path} ran longer than the 1 s limit and was stopped; "
            "if it only needs longer, raise the limit with --timeout SECONDS (0 for none)") in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not leftovers(tmp_path)
    assert not list(staging.iterdir())  # verify's staging folder went with it


def test_jobs_report_the_launch_as_not_finished(tmp_path: Path) -> None:
    # shares: [spin 0, k 2] and [k 1]: the launch after the stopped one runs in a new harness
    path = write(tmp_path, "K", ["spin", "k", "k"])
    proc, took = kernellab_verify(str(path), "--timeout", "1", "--jobs", "2")
    assert proc.returncode == 1, proc.stderr
    assert took < 30
    assert f"launch 0 (spin) of {path} ran longer than the 1 s limit and was stopped" in proc.stderr
    assert "launch 0 (spin): not finished" in proc.stdout
    assert "launch 1 (k): verified" in proc.stdout and "launch 2 (k): verified" in proc.stdout
    assert f"{path}: not finished — 1 of 3 launches stopped at the time limit" in proc.stdout
    assert not leftovers(tmp_path)


def test_jobs_json_names_the_reason(tmp_path: Path) -> None:
    spin, clean = write(tmp_path, "S", ["spin"]), write(tmp_path, "C", ["k"])
    proc, _ = kernellab_verify(str(spin), str(clean), "--timeout", "1", "--jobs", "2", "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["verdict"] == "not finished"
    stopped, verified = doc["files"]
    assert stopped["verdict"] == "not finished" and verified["verdict"] == "verified"
    assert stopped["launches"][0]["verdict"] == "not finished" and not stopped["launches"][0]["ran"]
    assert "ran longer than the 1 s limit" in stopped["launches"][0]["error"]


def test_library_jobs_limit_per_launch(tmp_path: Path) -> None:
    spin, clean = write(tmp_path, "S", ["spin"]), write(tmp_path, "C", ["k"])
    stopped, verified = verify_many([spin, clean], jobs=2, timeout=1)
    assert stopped.exit_status == 1 and [l.kernel for l in stopped.unfinished] == ["spin"]
    assert verified.verdict == "verified"
    assert not leftovers(tmp_path)


@pytest.mark.parametrize("value", ["-1", "soon"])
def test_bad_timeout_is_a_usage_error(tmp_path: Path, value: str) -> None:
    proc, _ = kernellab_verify(str(write(tmp_path, "C", ["k"])), "--timeout", value)
    assert proc.returncode == 2
    assert f"--timeout: expected a number of seconds (0 for no limit), got {value!r}" in proc.stderr


SPIN_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint x[]; };
void main() { uint i = 0u; while (x[0] != 12345u) { i++; x[1] = i; } }
"""


def test_a_shader_that_never_ends_is_stopped_in_the_spirv_checker(tmp_path: Path) -> None:
    (tmp_path / "spin.comp").write_text(SPIN_GLSL)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "s", "src": "spin.comp", "type": "GLSL", "entry": "main"}},
                      {"buffer": {"uid": "b", "size": 16, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "s", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "b"}]}}]}))
    proc, seconds = kernellab_verify(str(path), "--timeout", "1")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert (f"launch 0 (s (main)) of {path} ran longer than the 1 s limit and was stopped; if it only needs "
            "longer, raise the limit with --timeout SECONDS (0 for none)") in proc.stderr
    assert seconds < 30
