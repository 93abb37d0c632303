"""The model's declaration framework: one declaration per field gives the message, the JSON Schema
and the dumped JSON; reading a scenario imports no validation library (issue 11, start-up)."""
from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab import model as m
from kernellab.formats.scenario import json_schema, load_scenario
from kernellab.modelkit import (
    U32,
    Enum,
    Field,
    Int,
    Invalid,
    List,
    Nested,
    Node,
    Number,
    Str,
    VkFormat,
    dump,
    json_schema_defs,
    unknown_fields,
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").rglob("*.json") if '"commands"' in p.read_text())


class Inner(Node):
    """A nested object."""

    id = Str(nonempty=True)
    offset = Int(0, default=0)


class Outer(Node):
    size = Int(1, U32, description="bytes")
    mode = Enum("ON", "OFF", aliases={"on": "ON"}, default="OFF")
    dims = List(Int(1), min_len=1, max_len=3)
    color = List(Number, default=None, min_len=4, max_len=4)
    format = VkFormat
    inner = Nested(Inner, default=None)
    items = List(Inner, default=[])
    _path: str | None = None


def errors(data: object, cls: type[Node] = Outer) -> list[tuple[str, str]]:
    with pytest.raises(Invalid) as info:
        cls.model_validate(data)
    return [(p.where, p.message) for p in info.value.problems("f")]


GOOD = {"size": 4, "dims": [2], "format": "VK_FORMAT_R8_UINT"}


def test_fields_are_declared_once_in_order() -> None:
    assert list(Outer.model_fields) == ["size", "mode", "dims", "color", "format", "inner", "items"]
    assert all(isinstance(f, Field) for f in Outer.model_fields.values())
    assert list(m.Buffer.model_fields)[:4] == ["uid", "src", "dst", "memory_group"]
    assert not hasattr(Outer, "size")  # the declaration is not a value the object could fall back to


def test_values_defaults_aliases_and_extras() -> None:
    o = Outer.model_validate({**GOOD, "mode": "on", "inner": {"id": "g"}, "items": [{"id": "a", "x": 1}], "zz": 2})
    assert (o.size, o.mode, o.dims, o.color, o.inner, o.model_extra) == (4, "ON", [2], None, Inner(id="g"), {"zz": 2})
    assert o.items[0].model_extra == {"x": 1} and o._path is None
    o._path = "here"
    assert o._path == "here" and Outer.model_validate(GOOD)._path is None
    a, b = Outer.model_validate(GOOD), Outer.model_validate(GOOD)
    a.items.append(Inner(id="x"))
    assert b.items == []  # each object has its own default list
    # a scenario travels to worker processes: objects survive pickling and copying, paths included
    for again in (pickle.loads(pickle.dumps(o)), copy.deepcopy(o)):
        assert again == o and again._path == "here" and again.model_extra == {"zz": 2}


def test_every_problem_at_once_with_its_path() -> None:
    assert errors({"size": "40", "dims": [1, 0, 2, 5], "mode": "ONN", "inner": 5, "items": [{}, 3]}) == [
        ("/size", 'expected an integer >= 1, got "40"'),
        ("/mode", 'expected one of ON|OFF, got "ONN"'),
        ("/dims", "expected an array of 1 to 3 entries, got 4"),
        ("/", 'missing required field "format"'),
        ("/inner", "expected an object, got 5"),
        ("/items/0", 'missing required field "id"'),
        ("/items/1", "expected an object, got 3"),
    ]
    assert errors({**GOOD, "size": 2**32, "dims": [0], "color": [1, "a", 2, 3], "format": "R8"}) == [
        ("/size", "expected an integer >= 1 and <= 4294967295, got 4294967296"),
        ("/dims/0", "expected an integer >= 1, got 0"),
        ("/color/1", 'expected a number, got "a"'),
        ("/format", 'expected a VkFormat name such as "VK_FORMAT_R32_SFLOAT", got "R8"'),
    ]
    assert errors([1]) == [("/", "expected an object, got [1]")]
    # null is a value: accepted only where the field is an optional object
    assert errors({**GOOD, "mode": None}) == [("/mode", "expected one of ON|OFF, got null")]
    assert Outer.model_validate({**GOOD, "inner": None}).inner is None


def test_keyword_construction_checks_like_reading() -> None:
    assert m.Buffer(uid="a", size=4, shader_access="readonly", memory_group=m.MemoryGroup(id="g")).memory_group.id == "g"
    with pytest.raises(Invalid, match="size: expected an integer >= 1, got 0"):
        m.Buffer(uid="a", size=0, shader_access="readonly")


def test_unknown_fields_found_in_a_refused_object() -> None:
    data = {"sise": 4, "dims": [1], "inner": {"id": "g", "of": 1}, "items": [{"id": "a", "x": 1}, 5]}
    assert unknown_fields(Outer, data) == [("sise",), ("inner", "of"), ("items", 0, "x")]
    assert unknown_fields(Outer, [1]) == []


def test_dump_leaves_out_defaults_and_none() -> None:
    o = Outer.model_validate({**GOOD, "mode": "OFF", "items": [{"id": "a", "offset": 0}], "zz": None, "yy": 1})
    assert dump(o) == {"size": 4, "dims": [2], "format": "VK_FORMAT_R8_UINT", "items": [{"id": "a"}], "yy": 1}
    barrier = m.ImageBarrier.model_validate({"uid": "b", "src_access": "memory_write", "dst_access": "memory_read",
                                             "old_layout": "general", "new_layout": "general", "image_resource": "i"})
    assert "subresource_range" not in dump(barrier)  # the default object, made by its factory


def test_schema_of_a_class() -> None:
    defs: dict[str, object] = {}
    schema = Outer.json_schema(defs)
    assert schema["required"] == ["size", "dims", "format"] and schema["additionalProperties"] is False
    props = schema["properties"]
    assert props["size"] == {"type": "integer", "minimum": 1, "maximum": U32, "title": "Size", "description": "bytes"}
    assert props["mode"] == {"enum": ["ON", "OFF", "on"], "type": "string", "title": "Mode", "default": "OFF"}
    assert props["inner"] == {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "default": None}
    assert props["items"]["items"] == {"$ref": "#/$defs/Inner"}
    assert props["format"]["pattern"] == "^VK_FORMAT_\\w+$"
    assert defs["Inner"]["description"] == "A nested object."  # type: ignore[index]


def test_scenario_schema_matches_the_model() -> None:
    schema = json_schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    for name, definition in schema["$defs"].items():
        cls = getattr(m, name)
        assert list(definition["properties"]) == list(cls.model_fields), name
        assert definition.get("required", []) == [n for n, f in cls.model_fields.items() if f.required], name
    assert schema["$defs"]["Buffer"]["properties"]["size"]["minimum"] == 1
    assert schema["$defs"]["Shader"]["properties"]["type"]["enum"] == ["GLSL", "SPIR-V", "OpenCL-C"]


@pytest.mark.parametrize("example", EXAMPLES, ids=[str(p.relative_to(ROOT / "examples")) for p in EXAMPLES])
def test_schema_accepts_every_bundled_example_and_the_reader_too(example: Path) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    validator = jsonschema.Draft202012Validator(json_schema())
    doc = json.loads(example.read_text())
    assert [e.message for e in validator.iter_errors(doc)] == []
    load_scenario(example, check_files=False)
    # and the schema is not a rubber stamp: a wrong size is refused by it as by the reader
    bad = json.loads(example.read_text())
    bad["resources"].append({"buffer": {"uid": "zz", "size": "40", "shader_access": "readonly"}})
    assert list(validator.iter_errors(bad))


def test_reading_a_scenario_imports_no_validation_library(tmp_path: Path) -> None:
    code = ("import sys; from kernellab.formats.scenario import load_scenario; "
            f"load_scenario({str(ROOT / 'examples' / 'vector_add' / 'scenario.json')!r}); "
            "print(sorted(n for n in sys.modules if n.split('.')[0] in ('pydantic', 'pydantic_core', 'jsonschema')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_model_object_gets_its_files_when_it_is_made(tmp_path: Path) -> None:
    """Locations (where a resource's files are) are given to the constructor, never set afterwards."""
    shader = m.Shader(uid="s", src="k.cl", type="OpenCL-C", src_path=tmp_path / "k.cl")
    assert shader.src_path == tmp_path / "k.cl" and shader.include_paths == ()
    raw = m.RawData.model_validate({"uid": "r", "src": "r.npy"}, src_path=tmp_path / "r.npy")
    assert raw.src_path == tmp_path / "r.npy"
    moved = raw.located(src_path=None)
    assert moved.src_path is None and raw.src_path == tmp_path / "r.npy" and moved == raw
    with pytest.raises(TypeError, match="RawData has no location dst_path"):
        raw.located(dst_path=tmp_path)


def test_the_scenario_reader_makes_its_resources_at_their_files(tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text("#version 450\nvoid main() {}\n")
    (tmp_path / "inc").mkdir()
    (tmp_path / "s.json").write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL", "include_dirs": ["inc"]}},
                      {"buffer": {"uid": "b", "size": 4, "shader_access": "readwrite", "dst": "b.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "b"}]}}]}))
    scenario, _ = load_scenario(tmp_path / "s.json", tmp_path / "out")
    shader, buffer = scenario.resources
    assert isinstance(shader, m.Shader) and isinstance(buffer, m.Buffer)
    assert shader.src_path == tmp_path / "k.comp" and shader.include_paths == (tmp_path / "inc",)
    assert buffer.src_path is None and buffer.dst_path is not None and buffer.dst_path.name == "b.npy"


def test_a_nested_class_given_as_a_function_is_asked_for_when_an_object_is_given() -> None:
    asked: list[str] = []

    def inner_class() -> type[Node]:
        asked.append("Inner")
        return Inner

    class Lazy(Node):
        size = Int(1)
        inner = Nested(inner_class, default=None)

    # absent or null: no class needed, none asked for (unknown fields are looked for in objects only)
    assert Lazy.model_validate({"size": 1, "inner": None}).inner is None
    assert unknown_fields(Lazy, {"size": 1, "extra": 2}) == [("extra",)]
    assert unknown_fields(Lazy, {"size": 1, "inner": [{"id": "g"}]}) == []  # not an object: refused by the check
    assert asked == []
    with pytest.raises(Invalid) as exc:
        Lazy.model_validate({"size": 1, "inner": {"offset": -1}})
    assert exc.value.errors == [(("inner",), 'missing required field "id"'),
                                (("inner", "offset"), "expected an integer >= 0, got -1")]
    got = Lazy.model_validate({"size": 1, "inner": {"id": "g", "oops": 1}})
    assert isinstance(got.inner, Inner) and got.inner.id == "g"
    assert unknown_fields(Lazy, {"size": 1, "inner": {"id": "g", "oops": 1}}) == [("inner", "oops")]
    assert asked == ["Inner"]  # asked once, then kept
    assert json_schema_defs([Lazy])["Lazy"]["properties"]["inner"] == {
        "anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "default": None}
