"""A PySchedCL spec as a scenario in memory, run by the one executor, computes what the
partition runner computes (issue 19 point 1): by-value arguments as push constants, ``__local``
arguments, vector element types and the spec's macros through the options door."""
from __future__ import annotations

import numpy as np
import pytest

from kernellab.backends.base import BackendOptions
from kernellab.backends.opencl import OpenCLBackend
from kernellab.formats.pyschedcl.spec import load_spec
from kernellab.runtime.host_data import fill_inputs
from kernellab.runtime.partition import Session, choose_targets, execute, plan_parts
from kernellab.runtime.spec_scenario import Part, run_split, run_unsplit, split_scenario
from test_pyschedcl_helpers import MATMUL, SCALE4, vecadd_spec, write_spec


@pytest.fixture(scope="module")
def pocl():
    cpu, gpu = choose_targets("pocl")
    timed = BackendOptions(timestamps=True)
    with Session(cpu, gpu) as session, OpenCLBackend.open("Portable Computing Language", timed) as backend:
        yield session, backend


def same_as_partition_runner(pocl, path, variables):
    session, backend = pocl
    kernel = load_spec(path).resolve(variables)
    host = fill_inputs(kernel, seed=5)
    ran = run_unsplit(kernel, host, backend)
    want = execute(session, kernel, host, 10).outputs
    assert sorted(ran) == sorted(b.pos for b in kernel.buffers if b.spec.written_by_kernel)
    for pos, out in ran.items():
        assert out.dtype == want[pos].dtype
        assert np.array_equal(out, want[pos]), pos
        assert out.any()


def test_vector_add_through_the_executor(tmp_path, pocl):
    same_as_partition_runner(pocl, vecadd_spec(tmp_path), {"dataset": 96})


def test_macros_and_a_2d_range_through_the_executor(tmp_path, pocl):
    spec = {"workDimension": 2, "globalWorkSize": "[m, n]", "macros_values": {"SCALE": "m + 1"},
            "inputBuffers": [{"break": 1, "pos": 0, "size": "m*p", "type": "float"},
                             {"break": 0, "pos": 1, "size": "p*n", "type": "float"}],
            "outputBuffers": [{"break": 1, "pos": 2, "size": "m*n", "type": "float"}],
            "varArguments": [{"pos": 3, "type": "int", "value": "p"}, {"pos": 4, "type": "int", "value": "n"}]}
    # without the macro the kernel does not build: the options reach the driver
    source = MATMUL.replace("= acc;", "= acc * SCALE;")
    same_as_partition_runner(pocl, write_spec(tmp_path, "matmul", source, spec), {"m": 10, "n": 6, "p": 5})


def test_local_arguments_and_vector_types_through_the_executor(tmp_path, pocl):
    spec = {"workDimension": 1, "globalWorkSize": "[dataset]", "localWorkSize": 8,
            "ioBuffers": [{"break": 1, "pos": 0, "size": "dataset", "type": "int4"}],
            "varArguments": [{"pos": 1, "type": "int", "value": "3"}],
            "localArguments": [{"pos": 2, "type": "int4", "size": "8"}]}
    same_as_partition_runner(pocl, write_spec(tmp_path, "scale4", SCALE4, spec), {"dataset": 24})


@pytest.mark.parametrize("split", ["subbuffer", "offset"])
@pytest.mark.parametrize("partition", [3, 8])
def test_split_dispatch_on_one_device(tmp_path, pocl, split, partition):
    """One dispatch per part; in subbuffer mode a part binds a range of each buffer where the split
    is aligned for sub-buffers and rows of its own elsewhere."""
    session, backend = pocl
    kernel = load_spec(vecadd_spec(tmp_path)).resolve({"dataset": 640})
    host = fill_inputs(kernel, seed=2)
    parts = [Part(role, start, count) for role, start, count in plan_parts(kernel, partition)]
    # both splits are aligned for sub-buffers: partition 3 takes rows of its own as the unaligned would
    assert parts[1].start * 4 % session.lanes["cpu"].align == 0
    ranged = {0, 1, 2} if partition == 8 else set()
    run = run_split(kernel, host, parts, split, backend, ranged)
    assert sorted(run.kernel_times) == ["cpu", "gpu"]
    if split == "offset" or ranged:
        out = run.outputs[2]
        assert 2 not in run.copies
    else:
        assert 2 not in run.outputs
        out = np.concatenate([a for _, a in run.copies[2]])
    if split == "subbuffer":  # in offset mode the kernel's bound n is the part's size, not its end
        assert np.array_equal(out, host[0] + host[1])
    assert out.any()
    assert np.array_equal(out, execute(session, kernel, host, partition, split).outputs[2])


def test_split_scenario_binds_each_part_its_rows(tmp_path):
    kernel = load_spec(vecadd_spec(tmp_path)).resolve({"dataset": 96})
    shaped = split_scenario(kernel, fill_inputs(kernel), [Part("gpu", 0, 48), Part("cpu", 48, 48)], "subbuffer",
                            {0, 1, 2})
    ranges = [[b.buffer_range for b in c.bindings] for c in shaped.scenario.commands]
    assert ranges == [[(0, 192)] * 3, [(192, 192)] * 3]
    assert [c.global_size for c in shaped.scenario.commands] == [(48,), (48,)]
    assert shaped.pushes == {"push_constants.gpu": (48).to_bytes(4, "little"),
                             "push_constants.cpu": (48).to_bytes(4, "little")}
