"""`kernellab verify` binds a buffer's descriptor range and a dynamic descriptor's offset as
`kernellab run` does: the shader sees the buffer from the offset, its bounds are the range's,
and dispatches touching disjoint ranges of one buffer do not race; arrays of buffers are
refused by name."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kernellab import tools
from kernellab.cli import main

pytestmark = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

SHADER = ("#version 450\nlayout(local_size_x = 16) in;\n"
          "layout(std430, set = 0, binding = 0) buffer Data { uint data[]; };\n"
          "void main() { data[gl_GlobalInvocationID.x + SHIFT] = 7u; }\n")


def _scenario(folder: Path, shift: int, bindings: list[dict[str, Any]], barrier: bool = False) -> Path:
    folder.mkdir(parents=True)
    (folder / "k.comp").write_text(SHADER.replace("SHIFT", f"{shift}u"))
    res = [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
           {"buffer": {"uid": "data", "size": 256, "shader_access": "readwrite"}}]
    commands = [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [b],
                                      "implicit_barrier": barrier}} for b in bindings]
    path = folder / "s.json"
    path.write_text(json.dumps({"resources": res, "commands": commands}))
    return path


def _verify(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    status = main(["verify", str(path), "--json"])
    out = capsys.readouterr()
    return status, json.loads(out.out) if out.out.strip() else {"err": out.err}


def _binding(offset: int, size: int, dynamic: int | None = None) -> dict[str, Any]:
    b: dict[str, Any] = {"set": 0, "id": 0, "resource_ref": "data", "buffer_range": [offset, size]}
    if dynamic is not None:
        b.update(descriptor_type="VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC", dynamic_offset=dynamic)
    return b


@pytest.mark.parametrize("dynamic", [None, 64])
def test_bounds_are_the_descriptor_range(dynamic: int | None, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    # 16 uints = 64 bytes of a 256-byte buffer: one past the range is out of bounds, though in the buffer
    status, doc = _verify(_scenario(tmp_path / "planted", 1, [_binding(64, 64, dynamic)]), capsys)
    assert status == 1 and [f["kind"] for f in doc["findings"]] == ["out-of-bounds"]
    status, doc = _verify(_scenario(tmp_path / "clean", 0, [_binding(64, 64, dynamic)]), capsys)
    assert status == 0 and doc["findings"] == []


@pytest.mark.parametrize("dynamic", [None, 64])
def test_the_shader_sees_the_buffer_from_the_offset(dynamic: int | None, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    # two dispatches with no barrier: writing bytes 0-63 and 128-191 (64 + the dynamic 64, or 128) is
    # no hazard; the same range twice is one
    second = _binding(64, 64, dynamic) if dynamic is not None else _binding(128, 64)
    status, doc = _verify(_scenario(tmp_path / "clean", 0, [_binding(0, 64), second]), capsys)
    assert status == 0 and doc["findings"] == []
    status, doc = _verify(_scenario(tmp_path / "planted", 0, [_binding(0, 64), _binding(0, 64)]), capsys)
    assert status == 1 and [(f["kind"], f["race"]["scope"]) for f in doc["findings"]] == \
        [("data-race", "inter-dispatch")]


def test_an_array_of_buffers_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = {"set": 0, "id": 0, "resource_ref": "data", "array_element": 1}
    status, doc = _verify(_scenario(tmp_path / "s", 0, [b]), capsys)
    assert status == 2 and "bindings/0" in doc["err"] and "an array of buffers" in doc["err"]
