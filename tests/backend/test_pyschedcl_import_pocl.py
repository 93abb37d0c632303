"""``kernellab import SPEC.json``: the scenario it writes computes what running the spec computes.

The scenario is executed through the OpenCL backend's scenario interface (bindings = argument
positions, push constants = packed scalars, specialization constants 0-2 = workgroup size,
3.. = local argument element counts), the same calls the executor makes."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab import model as m
from kernellab.backends.base import ProgramSpec, SpecConstant
from kernellab.backends.opencl import OpenCLBackend
from kernellab.convert.pyschedcl_scenario import import_spec
from kernellab.formats import npy
from kernellab.formats.scenario import load_scenario
from kernellab.runtime.executor import driver_options
from kernellab.runtime.partition import run_spec
from test_pyschedcl_helpers import MATMUL, MATVEC, SCALE4, vecadd_spec, write_spec


def run_scenario_on_opencl(path: Path) -> dict[str, np.ndarray]:
    scenario, _ = load_scenario(path, None)
    backend = OpenCLBackend.open("Portable Computing Language")
    with backend:
        buffers = {}
        for r in scenario.resources:
            if isinstance(r, m.Buffer):
                buffers[r.uid] = backend.alloc_buffer(r.size, r.uid)
                if r.src_path is not None:
                    backend.write_buffer(buffers[r.uid], npy.load_bytes(r.src_path))
        raw = {r.uid: bytes(npy.load_bytes(r.src_path)) for r in scenario.resources if isinstance(r, m.RawData)}
        for c in scenario.commands:
            assert isinstance(c, m.DispatchCompute)
            shader = scenario.by_uid[c.shader_ref]
            spec = ProgramSpec(uid=shader.uid, code=shader.src_path.read_bytes(), language="opencl-c", entry=shader.entry,
                               specialization=tuple(SpecConstant(s.id, s.value) for s in shader.specialization_constants),
                               push_constants_size=shader.push_constants_size,
                               options=driver_options(scenario, shader))
            program = backend.create_program(spec)
            backend.dispatch(program, c.rangeND, {(b.set, b.id): buffers[b.resource_ref] for b in c.bindings},
                             raw.get(c.push_data_ref, b""))
        backend.submit()
        return {r.uid: backend.read_buffer(buffers[r.uid]).copy() for r in scenario.resources
                if isinstance(r, m.Buffer) and r.dst}


def test_import_vector_add_matches_run(tmp_path):
    path = vecadd_spec(tmp_path)
    scenario = import_spec(path, tmp_path / "imported", variables={"dataset": 96}, seed=4)
    doc = json.loads(scenario.read_text())
    kinds = [next(iter(r)) for r in doc["resources"]]
    assert kinds == ["shader", "buffer", "buffer", "buffer", "raw_data"]
    assert doc["resources"][0]["shader"]["type"] == "OpenCL-C"
    assert doc["commands"][0]["dispatch_compute"]["rangeND"] == [6]
    outputs = run_scenario_on_opencl(scenario)
    run_spec(path, tmp_path / "ran", variables={"dataset": 96}, seed=4, partition=5, quiet=True)
    expected = np.load(tmp_path / "ran" / "arg2.npy")
    assert np.array_equal(outputs["arg2"].view(np.float32), expected)
    a = np.load(tmp_path / "imported" / "arg0.npy")
    b = np.load(tmp_path / "imported" / "arg1.npy")
    assert np.array_equal(expected, a + b)


def test_import_2d_and_local_arguments(tmp_path):
    spec = {"workDimension": 2, "globalWorkSize": "[m, n]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "m*p", "type": "float"},
                             {"break": 0, "pos": 1, "size": "p*n", "type": "float"}],
            "outputBuffers": [{"break": 1, "pos": 2, "size": "m*n", "type": "float"}],
            "varArguments": [{"pos": 3, "type": "int", "value": "p"}, {"pos": 4, "type": "int", "value": "n"}]}
    path = write_spec(tmp_path, "matmul", MATMUL, spec)
    variables = {"m": 10, "n": 6, "p": 5}
    out = run_scenario_on_opencl(import_spec(path, tmp_path / "imp", variables=variables))
    run_spec(path, tmp_path / "ran", variables=variables, partition=3, quiet=True)
    assert np.array_equal(out["arg2"].view(np.float32), np.load(tmp_path / "ran" / "arg2.npy"))

    spec = {"workDimension": 1, "globalWorkSize": "[dataset]", "localWorkSize": 8,
            "ioBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "int4"}],
            "varArguments": [{"pos": 1, "type": "int", "value": "3"}],
            "localArguments": [{"pos": 2, "type": "int4", "size": "8"}]}
    path = write_spec(tmp_path, "scale4", SCALE4, spec)
    scenario = import_spec(path, tmp_path / "imp4", variables={"dataset": 24})
    shader = json.loads(scenario.read_text())["resources"][0]["shader"]
    assert shader["specialization_constants"] == [{"id": 0, "value": 8}, {"id": 3, "value": 8}]
    out = run_scenario_on_opencl(scenario)
    run_spec(path, tmp_path / "ran4", variables={"dataset": 24}, partition=6, quiet=True)
    assert np.array_equal(out["arg0"].view(np.int32).reshape(24, 4), np.load(tmp_path / "ran4" / "arg0.npy"))


def test_import_binds_buffers_in_parameter_order(tmp_path):
    """Scalars between buffers: binding B is the B-th buffer argument, not argument B."""
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset*cols", "type": "float"},
                             {"break": 0, "pos": 1, "size": "cols", "type": "float"}],
            "outputBuffers": [{"break": 1, "pos": 4, "size": "dataset", "type": "float"}],
            "varArguments": [{"pos": 2, "type": "uint", "value": "cols"},
                             {"pos": 3, "type": "uint", "value": "partition_round(dataset, size_percent)"}]}
    path = write_spec(tmp_path, "matvec", MATVEC.replace("__global float* y, uint n, uint rows",
                                                          "uint n, uint rows, __global float* y"), spec)
    variables = {"dataset": 30, "cols": 7}
    scenario = import_spec(path, tmp_path / "imp", variables=variables)
    bindings = json.loads(scenario.read_text())["commands"][0]["dispatch_compute"]["bindings"]
    assert [(b["id"], b["resource_ref"]) for b in bindings] == [(0, "arg0"), (1, "arg1"), (2, "arg4")]
    out = run_scenario_on_opencl(scenario)
    run_spec(path, tmp_path / "ran", variables=variables, partition=5, quiet=True)
    assert np.array_equal(out["arg4"].view(np.float32), np.load(tmp_path / "ran" / "arg4.npy"))


@pytest.mark.parametrize("backend", [[], ["--backend", "opencl", "--device", "Portable Computing Language"]],
                         ids=["default", "opencl-pocl"])
def test_kernellab_run_of_the_imported_scenario(tmp_path, backend):
    """The whole path a user takes: import, then ``kernellab run scenario.json``."""
    from kernellab.cli import main

    path = vecadd_spec(tmp_path)
    scenario = import_spec(path, tmp_path / "imported", variables={"dataset": 160}, seed=11)
    assert main(["run", str(scenario), *backend]) == 0
    out = np.load(tmp_path / "imported" / "arg2.out.npy")
    assert out.dtype == np.int8 and out.shape == (640,)  # Arm's runner writes buffers as raw bytes
    run_spec(path, tmp_path / "ran", variables={"dataset": 160}, seed=11, partition=7, quiet=True)
    assert np.array_equal(out.view(np.float32), np.load(tmp_path / "ran" / "arg2.npy"))
