"""`kernellab verify` on arrays of buffers (one descriptor binding bound element by element,
AmberScript's ``BIND BUFFER_ARRAY``): each element its own buffer, the access chain's index
picking it per invocation; an index past the bound elements is out of bounds."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kernellab import tools
from kernellab.cli import main
from kernellab.errors import InputError

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

SHADER = """#version 450
layout(local_size_x = 4) in;
layout(std430, set = 0, binding = 0) buffer B { uint v[]; } bufs[2];
void main() {
  uint i = gl_GlobalInvocationID.x;
  bufs[WHICH].v[gl_LocalInvocationID.x] = i;
}
"""


def _findings(folder: Path, which: str, groups: int, capsys: pytest.CaptureFixture[str]) -> tuple[int, Any]:
    folder.mkdir()
    (folder / "k.comp").write_text(SHADER.replace("WHICH", which))
    doc = {"resources": [
        {"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
        {"buffer": {"uid": "a", "size": 16, "shader_access": "readwrite"}},
        {"buffer": {"uid": "b", "size": 16, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [groups], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "a"},
            {"set": 0, "id": 0, "array_element": 1, "resource_ref": "b"}]}}]}
    (folder / "s.json").write_text(json.dumps(doc))
    status = main(["verify", str(folder / "s.json"), "--json"])
    out = json.loads(capsys.readouterr().out)
    return status, [(f["kind"], f["resource"]) for f in out["findings"]]


def test_each_element_is_its_own_buffer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Workgroup k writes element k: no two invocations write one word of one buffer."""
    assert _findings(tmp_path / "clean", "gl_WorkGroupID.x", 2, capsys) == (0, [])


def test_planted_race_in_one_element(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Both workgroups write element 1: a race on buffer b, none on a."""
    assert _findings(tmp_path / "race", "1", 2, capsys) == (1, [("data-race", "b")])


def test_an_index_past_the_array_is_out_of_bounds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, found = _findings(tmp_path / "past", "gl_WorkGroupID.x", 3, capsys)
    assert status == 1 and [k for k, _ in found] == ["out-of-bounds"]
    assert "element past its 2 buffers" in found[0][1]


def test_one_buffer_in_two_elements_at_disjoint_ranges(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Amber's ``BIND BUFFER_ARRAY buf2 buf2 ... DESCRIPTOR_OFFSET 0 256``: one buffer, two
    disjoint ranges, each element its own bounds; both land in the buffer's output."""
    from kernellab.spirvsim import Binding, BufferArray, check_dispatch, glsl_to_spirv
    src = tmp_path / "k.comp"
    src.write_text(SHADER.replace("WHICH", "gl_WorkGroupID.x"))
    data = bytes(48)
    arr = BufferArray((Binding("a", data, 0, 16), Binding("a", data, 32, 16)))
    r = check_dispatch(glsl_to_spirv(src), "main", (2, 1, 1), bindings={(0, 0): arr})
    assert r.findings == []
    words = np.frombuffer(r.buffers["a"], np.uint32)
    assert list(words) == [0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 7]
    assert r.footprints["a"].written.sum() == 32 and r.footprints["a"].offset == 0
    overlapping = BufferArray((Binding("a", data, 0, 16), Binding("a", data, 8, 16)))
    with pytest.raises(InputError, match="bound twice"):
        check_dispatch(glsl_to_spirv(src), "main", (2, 1, 1), bindings={(0, 0): overlapping})
