"""Bad ``dispatch_fragment`` scenarios: each case asserts the JSON pointer and the message."""
from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers.scenarios import kernellab, write
from kernellab.errors import InputError
from kernellab.formats.scenario import load_scenario

Doc = dict[str, Any]
DRAW = ("commands", 0, "dispatch_fragment")


def _draw(tmp: Path) -> Doc:
    """A valid draw: a vertex and a fragment shader (files exist; nothing is compiled here),
    one sampled input, one 8x4 color attachment."""
    (tmp / "v.vert").write_text("#version 450\nvoid main() { gl_Position = vec4(0.0); }\n")
    (tmp / "f.frag").write_text("#version 450\nlayout(location = 0) out vec4 c;\nvoid main() { c = vec4(1.0); }\n")
    return {"resources": [
        {"shader": {"uid": "vs", "src": "v.vert", "type": "GLSL", "stage": "vertex"}},
        {"shader": {"uid": "fs", "src": "f.frag", "type": "GLSL", "stage": "fragment"}},
        {"image": {"uid": "in", "dims": [1, 8, 4, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "readonly"}},
        {"image": {"uid": "out", "dims": [1, 8, 4, 1], "mips": 2, "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "writeonly", "color_attachment": True, "dst": "out.npy"}}],
        "commands": [{"dispatch_fragment": {"vertex_shader_ref": "vs", "fragment_shader_ref": "fs",
                                            "color_attachment_refs": ["out"],
                                            "bindings": [{"set": 0, "id": 0, "resource_ref": "in"}]}}]}


def _draw_field(name: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        doc["commands"][0]["dispatch_fragment"][name] = value
    return mutate


def _resource_field(i: int, name: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        (body,) = doc["resources"][i].values()
        body[name] = value
    return mutate


def _drop_draw_field(name: str) -> Callable[[Doc], None]:
    return lambda doc: doc["commands"][0]["dispatch_fragment"].pop(name)


def _add(doc_key: str, item: Doc) -> Callable[[Doc], None]:
    return lambda doc: doc[doc_key].append(item)


CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    ("vertex shader of stage compute", _resource_field(0, "stage", "compute"),
     "/commands/0/dispatch_fragment/vertex_shader_ref",
     'dispatch_fragment vertex_shader_ref must reference a vertex shader; "vs" has stage compute'),
    ("fragment ref to the vertex shader", _draw_field("fragment_shader_ref", "vs"),
     "/commands/0/dispatch_fragment/fragment_shader_ref",
     'dispatch_fragment fragment_shader_ref must reference a fragment shader; "vs" has stage vertex'),
    ("unknown stage", _resource_field(1, "stage", "geometry"), "/resources/1/shader/stage",
     'expected one of compute|vertex|fragment, got "geometry"'),
    ("OpenCL C vertex shader", _resource_field(0, "type", "OpenCL-C"), "/resources/0/shader/stage",
     "an OpenCL-C shader is a compute kernel; stage vertex needs GLSL or SPIR-V"),
    ("attachment not made for it", _resource_field(3, "color_attachment", False),
     "/commands/0/dispatch_fragment/color_attachment_refs/0",
     'image "out" is not a color attachment: give it "color_attachment": true'),
    ("attachment is a buffer", _draw_field("color_attachment_refs", ["buf"]),
     "/commands/0/dispatch_fragment/color_attachment_refs/0", '"buf" is a buffer, expected a color attachment image'),
    ("lod past the mips", _draw_field("color_attachment_refs", [{"resource_ref": "out", "lod": 2}]),
     "/commands/0/dispatch_fragment/color_attachment_refs/0/lod",
     'Color attachment mip level exceeds available mips: lod 2, image "out" has 2'),
    ("render extent other than the attachment's", _draw_field("render_extent", [8, 8]),
     "/commands/0/dispatch_fragment/color_attachment_refs/0",
     'All color attachments must share the same extent: "out" is 8x4, render_extent is 8x8'),
    ("lod extent other than the other attachment's",
     _draw_field("color_attachment_refs", ["out", {"resource_ref": "out2", "lod": 0}]),
     "/commands/0/dispatch_fragment/color_attachment_refs/1",
     'All color attachments must share the same extent: "out2" is 4x2, color_attachment_refs/0 is 8x4'),
    ("neither attachments nor extent", _drop_draw_field("color_attachment_refs"),
     "/commands/0/dispatch_fragment", "dispatch_fragment requires color_attachment_refs or render_extent"),
    ("empty attachment list", _draw_field("color_attachment_refs", []),
     "/commands/0/dispatch_fragment/color_attachment_refs", "expected an array of at least 1 entries, got 0"),
    ("attachment entry of another type", _draw_field("color_attachment_refs", [3]),
     "/commands/0/dispatch_fragment/color_attachment_refs/0", "expected an object, got 3"),
    ("render extent of one number", _draw_field("render_extent", [8]),
     "/commands/0/dispatch_fragment/render_extent", "expected an array of exactly 2 entries, got 1"),
    ("attachment read in the same draw", _draw_field("bindings", [{"set": 0, "id": 0, "resource_ref": "out"}]),
     "/commands/0/dispatch_fragment/bindings/0/resource_ref",
     'image "out" is color attachment 0 of this draw; the level rendered into cannot be bound in it too'),
    ("bindings missing", _drop_draw_field("bindings"), "/commands/0/dispatch_fragment",
     'missing required field "bindings"'),
    ("compute dispatch of a fragment shader",
     _add("commands", {"dispatch_compute": {"shader_ref": "fs", "rangeND": [1]}}),
     "/commands/1/dispatch_compute/shader_ref",
     'shader "fs" has stage fragment; dispatch_compute runs compute shaders'),
]


@pytest.mark.parametrize("name,mutate,pointer,message", CASES, ids=[c[0] for c in CASES])
def test_bad_draw(tmp_path: Path, name: str, mutate: Callable[[Doc], None], pointer: str, message: str) -> None:
    doc = copy.deepcopy(_draw(tmp_path))
    doc["resources"] += [
        {"buffer": {"uid": "buf", "size": 16, "shader_access": "readonly"}},
        {"image": {"uid": "out2", "dims": [1, 4, 2, 1], "format": "VK_FORMAT_R8G8B8A8_UNORM",
                   "shader_access": "writeonly", "color_attachment": True}}]
    mutate(doc)
    with pytest.raises(InputError) as info:
        load_scenario(write(tmp_path / "s.json", doc))
    found = [(p.where, p.message) for p in info.value.problems]
    assert any(pt == pointer and message in msg for pt, msg in found), found


def test_the_valid_draw_loads(tmp_path: Path) -> None:
    scenario, warnings = load_scenario(write(tmp_path / "s.json", _draw(tmp_path)))
    assert not warnings
    (draw,) = scenario.commands
    assert [a.resource_ref for a in draw.color_attachment_refs] == ["out"]  # type: ignore[attr-defined]


def test_cli_exit_2_names_file_and_path(tmp_path: Path) -> None:
    doc = _draw(tmp_path)
    doc["resources"][0]["shader"]["stage"] = "compute"
    proc = kernellab("validate", write(tmp_path / "s.json", doc))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{tmp_path / 's.json'}: /commands/0/dispatch_fragment/vertex_shader_ref: dispatch_fragment " \
           "vertex_shader_ref must reference a vertex shader" in proc.stderr
