"""``kernellab verify --prove`` of a kernel whose buffers hold structs with pointer members (issue 22,
GPUVerify's ``test_part_load_store``): the clean kernel proven, its racy twin a defect whose
counterexample the dynamic verify (Oclgrind, which runs the source with real pointers) confirms."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernellab import tools
from kernellab.cli import main

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")
pytestmark = pytest.mark.skipif(tools.find("clang") is None, reason="needs clang (scripts/setup.sh test)")

KERNEL = """struct a { __global int *p; int i; };
__kernel void k(__global int *p, __global struct a *q) {
  q[get_global_id(0)].i = 42;
  q[%s].p = p + get_global_id(0);
}
"""


def prove(tmp: Path, index: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    (tmp / "k.cl").write_text(KERNEL % index)
    doc = [{"language": "OpenCL", "kernel_file": "k.cl", "entry_point": "k", "global_size": [64],
            "local_size": [16], "kernel_arguments": [{"type": "array", "size": 256},
                                                     {"type": "array", "size": 1024}]}]
    (tmp / "k.json").write_text(json.dumps(doc))
    capsys.readouterr()
    status = main(["verify", "--prove", "--json", str(tmp / "k.json")])
    return status, json.loads(capsys.readouterr().out)


def test_pointer_members_stored_by_each_item_are_proven(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, doc = prove(tmp_path, "get_global_id(0)", capsys)
    assert status == 0 and doc["launches"][0]["proof"] == "proven", doc


def test_a_race_on_a_pointer_member_is_replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # two items store different pointers into one member (Oclgrind lets writes of one value pass)
    status, doc = prove(tmp_path, "get_global_id(0) / 2", capsys)
    assert status == 1 and doc["launches"][0]["proof"] == "defect", doc
    race = next(f for f in doc["findings"] if f["kind"] == "data-race")
    assert race["severity"] == "defect" and "confirmed by a replayed launch" in race["detail"]
    a, b = race["examples"][0]["work_items"]
    assert a["global"][0] // 2 == b["global"][0] // 2
    assert race["examples"][0]["address"] == 16 * (a["global"][0] // 2)  # the member of a 16-byte struct
