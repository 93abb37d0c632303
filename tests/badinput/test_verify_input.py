"""`kernellab verify` on bad input: exit 2, the file and the JSON pointer, no traceback."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab.errors import InputError
from kernellab.verify import verify


def test_bad_field_reported_from_child(tmp_path: Path) -> None:
    (tmp_path / "k.cl").write_text("__kernel void k(__global int *a, int n) { a[0] = n; }\n")
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "global_size": [4], "entry_point": "k",
                                 "kernel_arguments": [{"type": "array"}, {"type": "scalar", "value": "0x1FFFFFFFF"}]}]))
    with pytest.raises(InputError) as info:
        verify(path)
    [p] = info.value.problems
    assert p.file == str(path.resolve()) and p.where == "/0/kernel_arguments/1/value"
    assert "needs 5 bytes but parameter 1 (int n) has 4" in p.message
    assert info.value.exit_status == 2


def test_missing_kernel_file(tmp_path: Path) -> None:
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "gone.cl", "global_size": [4],
                                 "entry_point": "k"}]))
    with pytest.raises(InputError) as info:
        verify(path)
    assert [(p.where, "'gone.cl' not found" in p.message) for p in info.value.problems] == [("/0/kernel_file", True)]
