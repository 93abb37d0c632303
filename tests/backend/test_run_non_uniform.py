"""`kernellab run` of a kernel-instantiation file with work-groups of unequal size (OpenCL C 2.0):
run on Oclgrind, refused with the device's OpenCL C version on PoCL (OpenCL C 1.2)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.runtime.instantiation import run_instantiations

KERNEL = """\
__kernel void ids(__global int *out) {
  size_t i = get_global_id(0);
  out[i] = (int)(get_local_size(0) * 1000 + get_local_id(0));
}
"""


def _file(tmp_path: Path) -> Path:
    (tmp_path / "k.cl").write_text(KERNEL)
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [20], "local_size": [8],
                                 "entry_point": "ids", "kernel_arguments": [{"type": "array", "size": 96}]}]))
    return path


def test_oclgrind_runs_a_smaller_last_group(tmp_path: Path) -> None:
    run_instantiations(_file(tmp_path), tmp_path / "out", device="Oclgrind", report=lambda _: None)
    got = np.fromfile(tmp_path / "out" / "arg0.bin", np.int32)
    want = [8000 + i for i in range(8)] * 2 + [4000 + i for i in range(4)]
    assert got[:20].tolist() == want


def test_pocl_refuses_with_its_opencl_c_version(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        run_instantiations(_file(tmp_path), tmp_path / "out", device="Portable", report=lambda _: None)
    [problem] = info.value.problems
    assert problem.where == "/0/local_size/0"
    assert "8 does not divide global_size[0] = 20" in problem.message
    assert "need OpenCL C 2.0" in problem.message and "OpenCL C 1.2" in problem.message
    assert not (tmp_path / "out").exists()
