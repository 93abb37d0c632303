"""Bad input through the commands: exit status 2, the file and place named, no traceback."""
from __future__ import annotations

import json

from kernellab.cli import main
from test_pyschedcl_helpers import spec_file


def run(argv, capsys):
    rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, err


def test_partition_sweep_bad_spec(tmp_path, capsys):
    path = spec_file(tmp_path, globalWorkSize="[__import__('os').getcwd()]")
    rc, err = run(["partition-sweep", str(path), "--set", "dataset=64"], capsys)
    assert rc == 2
    assert f"{path}: /globalWorkSize: expression" in err and "call of '__import__' is not allowed" in err


def test_partition_sweep_bad_flags(tmp_path, capsys):
    path = spec_file(tmp_path)
    rc, err = run(["partition-sweep", str(path), "--set", "dataset"], capsys)
    assert rc == 2 and "NAME=VALUE" in err
    rc, err = run(["partition-sweep", str(path), "--set", "dataset=64", "--partitions", "3-12"], capsys)
    assert rc == 2 and "outside 0..10" in err
    rc, err = run(["partition-sweep", str(path), "--set", "dataset=64", "--devices", "nosuchdevice"], capsys)
    assert rc == 2 and "no OpenCL device name contains 'nosuchdevice'" in err


def test_partition_sweep_unresolved_variable(tmp_path, capsys):
    path = spec_file(tmp_path)
    rc, err = run(["partition-sweep", str(path)], capsys)
    assert rc == 2 and "/inputBuffers/0/size" in err and "--set dataset=N" in err


def test_kernel_signature_checked_against_the_spec(tmp_path, capsys):
    path = spec_file(tmp_path)
    (tmp_path / "k.cl").write_text("__kernel void VectorAdd(__global float* a, int b, __global float* c, int n) {}")
    rc, err = run(["partition-sweep", str(path), "--set", "dataset=64", "--repeats", "1", "--warmup", "0"], capsys)
    assert rc == 2
    assert f"{path}: /inputBuffers/1: argument 1 (int b) of VectorAdd is not a __global pointer" in err


def test_kernel_name_missing_from_source(tmp_path, capsys):
    path = spec_file(tmp_path)
    (tmp_path / "k.cl").write_text("__kernel void other(__global float* a) {}")
    rc, err = run(["partition-sweep", str(path), "--set", "dataset=64", "--repeats", "1"], capsys)
    assert rc == 2 and f"{path}: /name: k.cl defines no kernel named 'VectorAdd'" in err


def test_schedule_bad_graph(tmp_path, capsys):
    spec_file(tmp_path)
    g = tmp_path / "dag.graph"
    g.write_text('0 spec.json {"dataset": 64}\n---\n0 2 -> 1 0\n')
    rc, err = run(["schedule", str(g)], capsys)
    assert rc == 2 and f"{g}: line 3: task '1' is not defined" in err


def test_schedule_bad_timings(tmp_path, capsys):
    spec_file(tmp_path)
    t = tmp_path / "set.task"
    t.write_text("spec.json 10 64\n")
    bad = tmp_path / "sweep.json"
    bad.write_text(json.dumps({"kind": "kernellab.partition-sweep"}))
    rc, err = run(["schedule", str(t), "--timings", str(bad)], capsys)
    assert rc == 2 and str(bad) in err


def test_sizes_beyond_the_device_refused_before_allocating(tmp_path, capsys):
    path = spec_file(tmp_path, localWorkSize="[2**20]", varArguments=[{"pos": 3, "type": "int", "value": "1"}])
    (tmp_path / "k.cl").write_text("__kernel void VectorAdd(__global const float* a, __global const float* b, "
                                   "__global float* c, int n) {}")
    rc, err = run(["partition-sweep", str(path), "--set", "dataset=2**50", "--repeats", "1"], capsys)
    assert rc == 2
    assert f"{path}: /inputBuffers/0/size: 1125899906842624 float elements" in err and "exceed the largest" in err
    assert f"{path}: /localWorkSize: a workgroup of 1048576 work-items" in err
