"""Issue 11, item 4: ``break: 0`` outputs written by both parts, and ``break: 1`` outputs smaller than
the NDRange, on one device (PoCL, two queues) as on two (PoCL + Oclgrind).

Before the fix, both parts of a one-device run wrote one shared ``break: 0`` buffer: a vector add
whose output had ``break: 0`` came back with its first half overwritten by the CPU part's results
(exit 0). Each part now writes a copy of its own, merged as on two devices, and a clash is refused."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.runtime.host_data import fill_inputs
from kernellab.runtime.partition import Session, choose_targets, execute
from test_pyschedcl_helpers import VECADD, problems, write_spec

# each part writes its own elements of a whole (break: 0) buffer, found from offset_percent
SHIFTED = """
__kernel void shifted(__global const float* a, __global float* out, __global int* flag, int first) {
    int i = get_global_id(0);
    out[first + i] = a[i] * 2.0f;
    flag[0] = 7;  /* both parts write the same value: no clash */
}
"""
# one element per workgroup of 16: an output with a sixteenth of the NDRange's elements
GROUPSUM = """
__kernel void groupsum(__global const int* a, __global int* sums) {
    int i = get_global_id(0);
    if (get_local_id(0) == 0) {
        int s = 0;
        for (int k = 0; k < 16; ++k) s += a[i + k];
        sums[get_group_id(0)] = s;
    }
}
"""
# one element per 4 work-items, no workgroup size: only some splits are whole
QUARTER = """
__kernel void quarter(__global const int* a, __global int* q) {
    int i = get_global_id(0);
    if (i % 4 == 0) q[i / 4] = a[i] + a[i + 1] + a[i + 2] + a[i + 3];
}
"""


@pytest.fixture(scope="module", params=["pocl", "pocl,oclgrind"], ids=["one-device", "two-devices"])
def session(request):
    cpu, gpu = choose_targets(request.param)
    with Session(cpu, gpu) as s:
        assert s.shared_context == (request.param == "pocl")
        yield s


def vecadd_break0_output(tmp_path):
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]", "localWorkSize": "[16]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "float"},
                             {"break": 1, "pos": 1, "size": "dataset", "type": "float"}],
            "outputBuffers": [{"break": 0, "pos": 2, "size": "dataset", "type": "float"}],
            "varArguments": [{"pos": 3, "type": "int", "value": "partition_round(dataset, size_percent)"}]}
    return write_spec(tmp_path, "VectorAdd", VECADD, spec)


def test_break0_output_written_at_the_same_places_is_refused(tmp_path, session):
    kernel = load_spec(vecadd_break0_output(tmp_path)).resolve({"dataset": 256})
    host = fill_inputs(kernel, seed=5)
    for p in (0, 10):  # unsplit: nothing to merge, the right sums
        assert np.array_equal(execute(session, kernel, host, p).outputs[2], host[0] + host[1])
    with pytest.raises(InputError) as info:
        execute(session, kernel, host, 5)
    found = problems(info.value)
    assert "both parts wrote different values to element 0" in found["/outputBuffers/0/break"]
    assert "--split offset" in found["/outputBuffers/0/break"]


def test_break0_output_offset_split_is_merged(tmp_path, session):
    spec = vecadd_break0_output(tmp_path)
    spec.write_text(spec.read_text().replace("partition_round(dataset, size_percent)", "dataset"))
    kernel = load_spec(spec).resolve({"dataset": 256})
    host = fill_inputs(kernel, seed=6)
    for p in range(11):
        assert np.array_equal(execute(session, kernel, host, p, "offset").outputs[2], host[0] + host[1]), f"P={p}"


def test_break0_outputs_written_at_different_places_are_merged(tmp_path, session):
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]", "localWorkSize": "[8]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "float"}],
            "outputBuffers": [{"break": 0, "pos": 1, "size": "dataset", "type": "float"},
                              {"break": 0, "pos": 2, "size": "1", "type": "int"}],
            "varArguments": [{"pos": 3, "type": "int", "value": "partition_round(dataset, offset_percent)"}]}
    kernel = load_spec(write_spec(tmp_path, "shifted", SHIFTED, spec)).resolve({"dataset": 200})
    host = fill_inputs(kernel, seed=7)
    for p in range(11):
        r = execute(session, kernel, host, p)
        assert np.array_equal(r.outputs[1], host[0] * 2), f"P={p}"
        assert r.outputs[2].tolist() == [7], f"P={p}"


def test_break1_output_smaller_than_ndrange_splits_in_proportion(tmp_path, session):
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]", "localWorkSize": "[16]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "int"}],
            "outputBuffers": [{"break": 1, "pos": 1, "size": "dataset / 16", "type": "int"}]}
    kernel = load_spec(write_spec(tmp_path, "groupsum", GROUPSUM, spec)).resolve({"dataset": 320})
    host = fill_inputs(kernel, seed=8)
    expected = host[0].reshape(20, 16).sum(axis=1)
    for p in range(11):
        r = execute(session, kernel, host, p)
        assert np.array_equal(r.outputs[1], expected), f"P={p}"
        assert sum(t.count for t in r.parts) == 320


def quarter_spec(tmp_path):
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]",
            "inputBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "int"}],
            "outputBuffers": [{"break": 1, "pos": 1, "size": "dataset / 4", "type": "int"}]}
    return write_spec(tmp_path, "quarter", QUARTER, spec)


def test_break1_output_split_off_its_elements_is_refused(tmp_path, session):
    kernel = load_spec(quarter_spec(tmp_path)).resolve({"dataset": 64})
    host = fill_inputs(kernel, seed=9)
    expected = host[0].reshape(16, 4).sum(axis=1)
    for p in (0, 5, 10):  # splits after 0, 32 and 64 work-items: 0, 8 and 16 elements
        assert np.array_equal(execute(session, kernel, host, p).outputs[1], expected), f"P={p}"
    with pytest.raises(InputError) as info:
        execute(session, kernel, host, 3)  # after 19 work-items: 4.75 elements
    message = problems(info.value)["/outputBuffers/0/size"]
    assert "16 elements (dataset / 4)" in message and "4.75 elements" in message


def test_cli_refusal_is_exit_2_without_opencl_error(tmp_path):
    path = quarter_spec(tmp_path)
    run = subprocess.run([sys.executable, "-m", "kernellab", "run", str(path), "--set", "dataset=64",
                          "--partition", "3", "--devices", "pocl", "--output", str(tmp_path / "out")],
                         capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    assert "/outputBuffers/0/size" in run.stderr and "4.75 elements" in run.stderr
    assert "Traceback" not in run.stderr and "CL_" not in run.stderr
