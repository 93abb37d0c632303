"""Partitioned runs of PySchedCL specs on PoCL (two queues), and on PoCL + Oclgrind (two devices).

Every partition P = 0..10 must give the same outputs as the unpartitioned run and as numpy."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.runtime.host_data import fill_inputs
from kernellab.runtime.partition import Session, choose_targets, execute, run_spec
from test_pyschedcl_helpers import MATMUL, MATVEC, SCALE4, TRANSPOSE, vecadd_spec, write_spec


@pytest.fixture(scope="module")
def pocl_session():
    cpu, gpu = choose_targets("pocl")
    with Session(cpu, gpu) as session:
        yield session


def run_all(session, path: Path, variables: dict, split: str = "subbuffer", partitions=range(11)):
    kernel = load_spec(path).resolve(variables)
    host = fill_inputs(kernel, seed=3)
    results = {p: execute(session, kernel, host, p, split) for p in partitions}
    return kernel, host, results


def test_default_devices_are_pocl_two_queues(pocl_session):
    assert pocl_session.shared_context
    assert "two queues" in pocl_session.description
    cpu, gpu = choose_targets()
    assert "oclgrind" not in cpu.info.name.lower() and "oclgrind" not in gpu.info.name.lower()


@pytest.mark.parametrize("local", [True, False])
def test_vector_add_every_partition(tmp_path, pocl_session, local):
    # 1000 is neither a multiple of 10 nor of the 16-item workgroup: splits are rounded
    kernel, host, results = run_all(pocl_session, vecadd_spec(tmp_path, local), {"dataset": 1008 if local else 1000})
    expected = host[0] + host[1]
    for p, r in results.items():
        assert np.array_equal(r.outputs[2], expected), f"P={p}"
        if local:
            assert r.split % 16 == 0
        counts = {t.role: t.count for t in r.parts}
        assert sum(counts.values()) == kernel.global_size[0]
        assert counts.get("gpu", 0) == r.split
        assert all(t.kernel_ns > 0 for t in r.parts)
    assert [len(r.parts) for p, r in sorted(results.items())] == [1] + [2] * 9 + [1]
    assert results[5].split == (512 if local else 500)
    if not local:
        # PoCL aligns sub-buffers to 128 bytes: only the split after 800 floats (3200 bytes) is;
        # the other splits go through device-side copies, with the same results
        assert {p for p, r in results.items() if r.subbuffers} == {8}
        assert results[8].subbuffers == {0, 1, 2}


def test_matrix_multiply_2d_split_rows(tmp_path, pocl_session):
    spec = {"workDimension": 2, "globalWorkSize": "[m, n]", "localWorkSize": "[4, 4]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "m*p", "type": "float"},
                             {"break": 0, "pos": 1, "size": "p*n", "type": "float"}],
            "outputBuffers": [{"break": 1, "pos": 2, "size": "m*n", "type": "float"}],
            "varArguments": [{"pos": 3, "type": "int", "value": "p"}, {"pos": 4, "type": "int", "value": "n"}]}
    path = write_spec(tmp_path, "matmul", MATMUL, spec)
    kernel, host, results = run_all(pocl_session, path, {"m": 36, "n": 8, "p": 12})
    a = host[0].reshape(36, 12).astype(np.float64)
    b = host[1].reshape(12, 8).astype(np.float64)
    expected = (a @ b).reshape(-1)
    for p, r in results.items():
        assert np.allclose(r.outputs[2], expected, rtol=1e-5), f"P={p}"
        assert np.array_equal(r.outputs[2], results[10].outputs[2]), f"P={p} differs from P=10"
        assert r.split % 4 == 0


def test_break0_input_every_partition(tmp_path, pocl_session):
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset*cols", "type": "float"},
                             {"break": 0, "pos": 1, "size": "cols", "type": "float"}],
            "outputBuffers": [{"break": 1, "pos": 4, "size": "dataset", "type": "float"}],
            "varArguments": [{"pos": 2, "type": "uint", "value": "cols"},
                             {"pos": 3, "type": "uint", "value": "partition_round(dataset, size_percent)"}]}
    path = write_spec(tmp_path, "matvec", MATVEC.replace("__global float* y, uint n, uint rows",
                                                          "uint n, uint rows, __global float* y"), spec)
    kernel, host, results = run_all(pocl_session, path, {"dataset": 77, "cols": 9})
    expected = host[0].reshape(77, 9).astype(np.float64) @ host[1].astype(np.float64)
    for p, r in results.items():
        assert np.allclose(r.outputs[4], expected, rtol=1e-5), f"P={p}"
        assert np.array_equal(r.outputs[4], results[0].outputs[4]), f"P={p}"


def test_io_vector_buffer_and_local_argument(tmp_path, pocl_session):
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]", "localWorkSize": 8,
            "ioBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "int4"}],
            "varArguments": [{"pos": 1, "type": "int", "value": "3"}],
            "localArguments": [{"pos": 2, "type": "int4", "size": "8"}]}
    path = write_spec(tmp_path, "scale4", SCALE4, spec)
    kernel, host, results = run_all(pocl_session, path, {"dataset": 40})
    expected = host[0].reshape(40, 4) * 3 + np.array([1, 2, 3, 4], dtype=np.int32)
    for p, r in results.items():
        assert np.array_equal(r.outputs[0].reshape(40, 4), expected), f"P={p}"


def test_offset_mode_break0_output(tmp_path, pocl_session):
    spec = {"workDimension": 1, "globalWorkSize": "[n]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "n*n", "type": "int"}],
            "outputBuffers": [{"break": 0, "pos": 1, "size": "n*n", "type": "int"}],
            "varArguments": [{"pos": 2, "type": "int", "value": "n"}]}
    path = write_spec(tmp_path, "transpose", TRANSPOSE, spec)
    kernel, host, results = run_all(pocl_session, path, {"n": 24}, split="offset")
    expected = host[0].reshape(24, 24).T.reshape(-1)
    for p, r in results.items():
        assert np.array_equal(r.outputs[1], expected), f"P={p}"


def test_two_devices_pocl_and_oclgrind(tmp_path):
    """Different platforms: separate contexts, per-part buffers, and the break: 0 merge."""
    cpu, gpu = choose_targets("pocl,oclgrind")
    assert "oclgrind" in gpu.info.name.lower()
    spec = {"workDimension": 1, "globalWorkSize": "[n]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "n*n", "type": "int"}],
            "outputBuffers": [{"break": 0, "pos": 1, "size": "n*n", "type": "int"}],
            "varArguments": [{"pos": 2, "type": "int", "value": "n"}]}
    tpath = write_spec(tmp_path, "transpose", TRANSPOSE, spec)
    vpath = vecadd_spec(tmp_path)
    with Session(cpu, gpu) as session:
        assert not session.shared_context
        kernel, host, results = run_all(session, tpath, {"n": 12}, split="offset", partitions=(0, 4, 10))
        for p, r in results.items():
            assert np.array_equal(r.outputs[1], host[0].reshape(12, 12).T.reshape(-1)), f"P={p}"
        assert {t.device for t in results[4].parts} == {cpu.info.name, gpu.info.name}
        kernel, host, results = run_all(session, vpath, {"dataset": 64}, partitions=(3, 7))
        for p, r in results.items():
            assert np.array_equal(r.outputs[2], host[0] + host[1]), f"P={p}"
        # offset mode: whole-size buffers, each part's rows written and read back at their offset
        spec = json.loads(vpath.read_text())
        spec["varArguments"][0]["value"] = "dataset"  # ids are absolute: the bound is the whole size
        vpath.write_text(json.dumps(spec))
        kernel, host, results = run_all(session, vpath, {"dataset": 48}, split="offset", partitions=(2, 5))
        for p, r in results.items():
            assert np.array_equal(r.outputs[2], host[0] + host[1]), f"P={p}"
            assert len(r.parts) == 2


def test_run_spec_writes_typed_outputs(tmp_path):
    path = vecadd_spec(tmp_path)
    a = np.arange(64, dtype=np.float32)
    np.save(tmp_path / "a.npy", a)
    out = tmp_path / "out"
    assert run_spec(path, out, variables={"dataset": 64}, partition=5, inputs={0: tmp_path / "a.npy"}, seed=1,
                    quiet=True) == 0
    c = np.load(out / "arg2.npy")
    assert c.dtype == np.float32 and c.shape == (64,)
    kernel = load_spec(path).resolve({"dataset": 64})
    b = fill_inputs(kernel, seed=1)[1]
    assert np.array_equal(c, a + b)
    assert sorted(p.name for p in out.iterdir()) == ["arg2.npy"]


def test_run_from_cli_namespace(tmp_path):
    """What ``kernellab run SPEC.json`` hands over once it has detected a kernel spec: its command
    line as typed options (the runtime takes no argparse namespace)."""
    import argparse

    from kernellab.commands.options import add_spec_arguments
    from kernellab.commands.run_extras import format_options
    from kernellab.runtime.runners import FormatRunOptions, run_format

    parser = argparse.ArgumentParser()
    parser.add_argument("--output", type=Path)
    parser.add_argument("--profiling-dump-path", type=Path)
    add_spec_arguments(parser)
    path = vecadd_spec(tmp_path)
    b = np.full(48, 2.0, dtype=np.float32)
    np.save(tmp_path / "b.npy", b)
    args = parser.parse_args(["--set", "dataset=48", "--partition", "4", "--devices", "cpu", "--seed", "9",
                              "--input", f"1={tmp_path / 'b.npy'}", "--output", str(tmp_path / "o"),
                              "--profiling-dump-path", str(tmp_path / "profile.json")])
    options = format_options(args)
    assert isinstance(options, FormatRunOptions) and options.variables == {"dataset": 48}
    assert run_format("pyschedcl", path, options) == 0
    profile = json.loads((tmp_path / "profile.json").read_text())
    assert profile["partition"] == 4 and [p["role"] for p in profile["parts"]] == ["gpu", "cpu"]
    assert sum(p["items"] for p in profile["parts"]) == 48
    assert all(c["end_ns"] >= c["start_ns"] for p in profile["parts"] for c in p["commands"])
    assert "kernel" in {c["command"] for c in profile["parts"][1]["commands"]}
    a = fill_inputs(load_spec(path).resolve({"dataset": 48}), seed=9)[0]
    assert np.array_equal(np.load(tmp_path / "o" / "arg2.npy"), a + b)
