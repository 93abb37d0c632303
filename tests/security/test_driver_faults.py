"""A driver killed by a signal gives one line naming the launch (issue 18): on a CPU device an
OpenCL kernel is native code in kernellab's process, and one writing far out of bounds ends it
with SIGSEGV. The ``kernellab`` program runs such work in a forked child (native/launch_guard.py)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

#: work-item 0 writes in bounds; the others 2**40 bytes away, far past anything mapped
WILD = "__kernel void k(__global int *out) { out[get_global_id(0) * (1L << 38)] = 1; }\n"
FINE = "__kernel void k(__global int *out) { out[get_global_id(0)] = 1; }\n"


def kernellab(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KERNELLAB_NO_CACHE": "1"}
    return subprocess.run([sys.executable, "-m", "kernellab", *argv], capture_output=True, text=True, timeout=120,
                          env=env)


def _instantiations(tmp_path: Path, source: str) -> Path:
    (tmp_path / "k.cl").write_text(source)
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [4], "local_size": [4],
                                 "entry_point": "k", "kernel_arguments": [{"type": "array", "size": 16}]}]))
    return path


def _errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kernellab: error:")]


def test_a_kernel_writing_out_of_bounds_gives_one_line_naming_its_launch(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    path = _instantiations(tmp_path, WILD)
    proc = kernellab("run", str(path), "--output", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stderr  # not -11: the process did not die silently
    (line,) = _errors(proc.stderr)
    assert line.startswith(f"kernellab: error: launch 0 (k) of {path} ended the process with SIGSEGV")
    assert not any(p.is_file() for p in (tmp_path / "out").rglob("*"))  # nothing staged is left


def test_a_scenario_dispatch_on_opencl_is_named(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    (tmp_path / "k.cl").write_text(WILD)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "wild", "src": "k.cl", "type": "OpenCL-C", "entry": "k",
                                  "specialization_constants": [{"id": 0, "value": 4}]}},
                      {"buffer": {"uid": "b", "size": 16, "shader_access": "readwrite", "dst": "b.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "wild", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "b"}]}}]}))
    proc = kernellab("run", str(path), "--backend", "opencl", "--output", str(tmp_path / "out"))
    assert proc.returncode == 1, proc.stderr
    (line,) = _errors(proc.stderr)
    assert "the dispatch of" in line and "(kernel k)" in line and "SIGSEGV" in line
    assert not (tmp_path / "out" / "b.npy").exists()


def test_a_supervised_run_keeps_its_outputs_and_statuses(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    path = _instantiations(tmp_path, FINE)
    proc = kernellab("run", str(path), "--output", str(tmp_path / "out"))
    assert proc.returncode == 0 and (tmp_path / "out" / "arg0.bin").stat().st_size == 16, proc.stderr
    assert proc.stderr.count("ran 1 launch") == 1  # printed once: by the child only
    bad = tmp_path / "bad.json"
    bad.write_text("[{}]")
    assert kernellab("run", str(bad), "--format", "kernel-instantiation").returncode == 2


GUARDED = """
import os, signal, sys
from kernellab.native import launch_guard
status = launch_guard.supervised()
if status is not None:
    print("parent", status)
    sys.exit(status)
launch_guard.naming("launch 3 (k) of x.json")
os.kill(os.getpid(), getattr(signal, sys.argv[1]))
"""


@pytest.mark.parametrize("name", ["SIGSEGV", "SIGABRT"])
def test_a_fault_in_the_child_is_one_line(name: str) -> None:
    proc = subprocess.run([sys.executable, "-c", GUARDED, name], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stdout) == (1, "parent 1\n")
    assert proc.stderr.startswith(f"kernellab: error: launch 3 (k) of x.json ended the process with {name}:")


def test_another_signal_ends_the_parent_the_same_way() -> None:
    proc = subprocess.run([sys.executable, "-c", GUARDED, "SIGTERM"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGTERM and proc.stderr == ""


@pytest.mark.parametrize("command", ["partition-sweep", "schedule"])
def test_a_pyschedcl_kernel_writing_out_of_bounds_is_named_by_schedule_and_partition_sweep(
        tmp_path: Path, command: str) -> None:
    """The commands that run PySchedCL specs run their kernels natively too (issue 18, point 4)."""
    pytest.importorskip("pyopencl")
    example = Path(__file__).parents[2] / "examples" / "pyschedcl"
    (tmp_path / "Scale.json").write_text((example / "Scale.json").read_text())
    (tmp_path / "Scale.cl").write_text("__kernel void Scale(__global const float *x, __global float *y, float k, int n)"
                                       " { y[get_global_id(0) * (1L << 38)] = k * x[0]; }\n")
    (tmp_path / "one.task").write_text("Scale.json 0 1024 k=3\n")
    out = tmp_path / "out"
    argv = (["partition-sweep", str(tmp_path / "Scale.json"), "--partitions", "0", "--json", str(out / "sweep.json")]
            if command == "partition-sweep" else ["schedule", str(tmp_path / "one.task"), "--output", str(out)])
    out.mkdir()
    proc = kernellab(*argv)
    assert proc.returncode == 1, proc.stderr  # not -11: the process did not die silently
    (line,) = _errors(proc.stderr)
    assert line.startswith(f"kernellab: error: the cpu part of kernel Scale of {tmp_path / 'Scale.json'} "
                           "or one before it ended the process with SIGSEGV"), line
    assert not any(p.is_file() for p in out.rglob("*"))  # nothing staged is left
