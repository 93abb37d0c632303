"""Readers facing extreme values: a huge argument position, a NUL byte in a file name."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab.errors import InputError
from kernellab.formats import gpuverify
from kernellab.formats.pyschedcl.spec import load_spec
from test_pyschedcl_helpers import GOOD, problems, spec_file


def test_huge_argument_position_lists_the_first_missing_ones(tmp_path: Path):
    var = [{"pos": 10 ** 12, "type": "int", "value": 1}]
    with pytest.raises(InputError) as info:
        load_spec(spec_file(tmp_path, varArguments=var))
    message = problems(info.value)["/"]
    assert message.startswith("kernel argument positions 3, 4, 5, ")
    assert message.count(",") == 20 and ", ..." in message
    assert message.endswith("not described by any buffer or argument (positions must be 0..N-1)")


def test_few_missing_positions_are_all_named(tmp_path: Path):
    var = [{"pos": 5, "type": "int", "value": 1}]
    with pytest.raises(InputError) as info:
        load_spec(spec_file(tmp_path, varArguments=var))
    assert problems(info.value)["/"] == ("kernel argument positions 3, 4 are not described by any buffer or "
                                         "argument (positions must be 0..N-1)")
    assert GOOD["varArguments"][0]["pos"] == 3


def test_nul_in_kernel_file_is_bad_input(tmp_path: Path):
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k\u0000.cl", "entry_point": "k",
                                 "global_size": [4]}]))
    with pytest.raises(InputError) as info:
        gpuverify.load(path)
    [problem] = [p for p in info.value.problems if p.where == "/0/kernel_file"]
    assert "is not a usable file name" in problem.message
