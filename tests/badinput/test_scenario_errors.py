"""Bad scenario files: each case asserts the JSON pointer and the message the user reads."""
from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from helpers.scenarios import kernellab, vector_add, write
from kernellab.errors import InputError
from kernellab.formats.scenario import load_scenario

Doc = dict[str, Any]


def res(doc: Doc, i: int) -> dict[str, Any]:
    (body,) = doc["resources"][i].values()
    return body


def dispatch(doc: Doc) -> dict[str, Any]:
    return doc["commands"][0]["dispatch_compute"]


def _set(path_keys: list[Any], value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node: Any = doc
        for k in path_keys[:-1]:
            node = node[k]
        node[path_keys[-1]] = value
    return mutate


def _del(path_keys: list[Any]) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node: Any = doc
        for k in path_keys[:-1]:
            node = node[k]
        del node[path_keys[-1]]
    return mutate


def _add_resource(item: dict[str, Any]) -> Callable[[Doc], None]:
    return lambda doc: doc["resources"].append(item)


def _add_command(item: dict[str, Any]) -> Callable[[Doc], None]:
    return lambda doc: doc["commands"].append(item)


BUF = ["resources", 2, "buffer"]
SHADER = ["resources", 0, "shader"]
DC = ["commands", 0, "dispatch_compute"]
MEM_BARRIER = {"memory_barrier": {"uid": "mb", "src_access": "ACCESS_COMPUTE_SHADER_WRITE",
                                  "dst_access": "ACCESS_COMPUTE_SHADER_READ", "src_stage": ["COMPUTE"],
                                  "dst_stage": ["COMPUTE"]}}

CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    ("size-string", _set(BUF + ["size"], "40"), "/resources/2/buffer/size", 'expected an integer >= 1, got "40"'),
    ("size-zero", _set(BUF + ["size"], 0), "/resources/2/buffer/size", "expected an integer >= 1, got 0"),
    ("size-negative", _set(BUF + ["size"], -8), "/resources/2/buffer/size", "expected an integer >= 1, got -8"),
    ("size-float", _set(BUF + ["size"], 1.5), "/resources/2/buffer/size", "expected an integer >= 1, got 1.5"),
    ("size-bool", _set(BUF + ["size"], True), "/resources/2/buffer/size", "expected an integer >= 1, got true"),
    ("missing-uid", _del(BUF + ["uid"]), "/resources/2/buffer", 'missing required field "uid"'),
    ("missing-size", _del(BUF + ["size"]), "/resources/2/buffer", 'missing required field "size"'),
    ("missing-access", _del(BUF + ["shader_access"]), "/resources/2/buffer", 'missing required field "shader_access"'),
    ("bad-access", _set(BUF + ["shader_access"], "rw"), "/resources/2/buffer/shader_access",
     'expected one of readonly|writeonly|readwrite, got "rw"'),
    ("empty-uid", _set(BUF + ["uid"], ""), "/resources/2/buffer/uid", "expected a non-empty string"),
    ("uid-number", _set(BUF + ["uid"], 7), "/resources/2/buffer/uid", "expected a string, got 7"),
    ("bad-shader-type", _set(SHADER + ["type"], "HLSL"), "/resources/0/shader/type",
     'expected one of GLSL|SPIR-V|OpenCL-C, got "HLSL"'),
    ("missing-shader-src", _del(SHADER + ["src"]), "/resources/0/shader", 'missing required field "src"'),
    ("shader-file-missing", _set(SHADER + ["src"], "nope.comp"), "/resources/0/shader/src", "file not found:"),
    ("buffer-src-missing", _set(BUF + ["src"], "missing.npy"), "/resources/2/buffer/src", "file not found:"),
    ("buffer-src-size", _set(BUF + ["size"], 404), "/resources/2/buffer/src",
     "holds 400 bytes (float32 [100]) but the buffer size is 404"),
    ("buffer-src-not-npy", _set(BUF + ["src"], "add.comp"), "/resources/2/buffer/src", "not a NumPy .npy file"),
    ("raw-src-missing", _set(["resources", 1, "raw_data", "src"], "gone.npy"), "/resources/1/raw_data/src",
     "file not found:"),
    ("duplicate-uid", _set(["resources", 3, "buffer", "uid"], "a"), "/resources/3/buffer/uid",
     'duplicate uid "a" (first defined at /resources/2/buffer/uid)'),
    ("dangling-shader-ref", _set(DC + ["shader_ref"], "mul"), "/commands/0/dispatch_compute/shader_ref",
     'no resource with uid "mul" (expected a shader)'),
    ("shader-ref-wrong-kind", _set(DC + ["shader_ref"], "a"), "/commands/0/dispatch_compute/shader_ref",
     '"a" is a buffer, expected a shader'),
    ("dangling-push-ref", _set(DC + ["push_data_ref"], "pc"), "/commands/0/dispatch_compute/push_data_ref",
     'no resource with uid "pc" (expected a raw_data)'),
    ("dangling-binding", _set(DC + ["bindings", 1, "resource_ref"], "z"),
     "/commands/0/dispatch_compute/bindings/1/resource_ref", 'no resource with uid "z"'),
    ("binding-to-shader", _set(DC + ["bindings", 1, "resource_ref"], "add"),
     "/commands/0/dispatch_compute/bindings/1/resource_ref", '"add" is a shader, expected a buffer, image or tensor'),
    ("binding-twice", _set(DC + ["bindings", 1, "id"], 0), "/commands/0/dispatch_compute/bindings/1",
     "set 0 binding 0 is already bound by bindings/0"),
    ("range-empty", _set(DC + ["rangeND"], []), "/commands/0/dispatch_compute/rangeND",
     "expected an array of 1 to 3 entries, got 0"),
    ("range-four", _set(DC + ["rangeND"], [1, 1, 1, 1]), "/commands/0/dispatch_compute/rangeND",
     "expected an array of 1 to 3 entries, got 4"),
    ("range-zero", _set(DC + ["rangeND"], [2, 0]), "/commands/0/dispatch_compute/rangeND/1",
     "expected an integer >= 1, got 0"),
    ("range-not-array", _set(DC + ["rangeND"], 4), "/commands/0/dispatch_compute/rangeND",
     "expected an array, got 4"),
    ("push-size-not-4", _set(SHADER + ["push_constants_size"], 6), "/resources/0/shader/push_constants_size",
     "expected a multiple of 4, got 6"),
    ("push-data-too-big", lambda d: _push_too_big(d), "/commands/0/dispatch_compute/push_data_ref",
     'raw_data "count" holds 8 bytes, more than the push_constants_size 4 of shader "add"'),
    ("push-data-no-push", _set(SHADER + ["push_constants_size"], 0), "/commands/0/dispatch_compute/push_data_ref",
     'shader "add" declares push_constants_size 0, so it takes no push data'),
    ("unknown-resource-type", _set(["resources", 2], {"bufer": {"uid": "a"}}), "/resources/2",
     'unknown resource type "bufer" (expected one of image|tensor|buffer|raw_data|graph|shader|'),
    ("unknown-command", _set(["commands", 0], {"dispatch": {}}), "/commands/0", 'unknown command type "dispatch"'),
    ("two-keys", _set(["resources", 2], {"buffer": {}, "image": {}}), "/resources/2",
     "expected an object with exactly one key naming the resource type"),
    ("resource-not-object", _set(["resources", 2], "a"), "/resources/2",
     "expected an object with exactly one key naming the resource type"),
    ("body-not-object", _set(["resources", 2], {"buffer": [1]}), "/resources/2/buffer", "expected an object, got [1]"),
    ("resources-not-array", _set(["resources"], {}), "/resources", "expected an array, got {}"),
    ("missing-commands", _del(["commands"]), "/", 'missing required field "commands"'),
    ("implicit-barrier-string", _set(DC + ["implicit_barrier"], "no"),
     "/commands/0/dispatch_compute/implicit_barrier", 'expected true or false, got "no"'),
    ("binding-set-negative", _set(DC + ["bindings", 0, "set"], -1), "/commands/0/dispatch_compute/bindings/0/set",
     "expected an integer >= 0, got -1"),
    ("binding-lod-string", _set(DC + ["bindings", 0, "lod"], "x"), "/commands/0/dispatch_compute/bindings/0/lod",
     'expected an integer >= 0, got "x"'),
    ("binding-descriptor-type", _set(DC + ["bindings", 0, "descriptor_type"], "VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT"),
     "/commands/0/dispatch_compute/bindings/0/descriptor_type",
     'expected one of VK_DESCRIPTOR_TYPE_AUTO|VK_DESCRIPTOR_TYPE_STORAGE_IMAGE|VK_DESCRIPTOR_TYPE_SAMPLED_IMAGE|'
     'VK_DESCRIPTOR_TYPE_SAMPLER|VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER|VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER|'
     'VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER|VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC|'
     'VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC, got "VK_DESCRIPTOR_TYPE_INPUT_ATTACHMENT"'),
    ("dangling-barrier-ref", _add_command({"dispatch_barrier": {"memory_barrier_refs": ["mb0"]}}),
     "/commands/1/dispatch_barrier/memory_barrier_refs/0", 'no resource with uid "mb0" (expected a memory_barrier)'),
    ("barrier-ref-wrong-kind", _add_command({"dispatch_barrier": {"buffer_barrier_refs": ["a"]}}),
     "/commands/1/dispatch_barrier/buffer_barrier_refs/0", '"a" is a buffer, expected a buffer_barrier'),
    ("buffer-barrier-dangling-buffer", _add_resource({"buffer_barrier": {
        "uid": "bb", "buffer_resource": "q", "size": 4, "src_access": "ACCESS_MEMORY_WRITE",
        "dst_access": "ACCESS_MEMORY_READ", "src_stage": ["COMPUTE"], "dst_stage": ["COMPUTE"]}}),
     "/resources/5/buffer_barrier/buffer_resource", 'no resource with uid "q" (expected a buffer)'),
    ("buffer-barrier-range", _add_resource({"buffer_barrier": {
        "uid": "bb", "buffer_resource": "a", "size": 400, "offset": 4, "src_access": "ACCESS_MEMORY_WRITE",
        "dst_access": "ACCESS_MEMORY_READ", "src_stage": ["COMPUTE"], "dst_stage": ["COMPUTE"]}}),
     "/resources/5/buffer_barrier/size", 'offset 4 + size 400 exceeds the 400 bytes of buffer "a"'),
    ("barrier-bad-access", _add_resource({"memory_barrier": {**MEM_BARRIER["memory_barrier"],
                                                             "src_access": "WRITE"}}),
     "/resources/5/memory_barrier/src_access", 'expected one of ACCESS_MEMORY_WRITE|'),
    ("barrier-empty-stage", _add_resource({"memory_barrier": {**MEM_BARRIER["memory_barrier"], "src_stage": []}}),
     "/resources/5/memory_barrier/src_stage", "expected an array of at least 1 entries, got 0"),
    ("barrier-bad-stage", _add_resource({"memory_barrier": {**MEM_BARRIER["memory_barrier"],
                                                            "dst_stage": ["VERTEX"]}}),
     "/resources/5/memory_barrier/dst_stage/0", 'expected one of GRAPH|COMPUTE|GRAPHICS|ALL, got "VERTEX"'),
    ("image-barrier-layout", _add_resource({"image_barrier": {
        "uid": "ib", "image_resource": "a", "old_layout": "GENERAL", "new_layout": "IMAGE_LAYOUT_GENERAL",
        "src_access": "ACCESS_MEMORY_WRITE", "dst_access": "ACCESS_MEMORY_READ", "src_stage": ["ALL"],
        "dst_stage": ["ALL"]}}), "/resources/5/image_barrier/old_layout",
     'expected one of IMAGE_LAYOUT_TENSOR_ALIASING|IMAGE_LAYOUT_GENERAL|IMAGE_LAYOUT_UNDEFINED, got "GENERAL"'),
    ("mark-boundary-dangling", _add_command({"mark_boundary": {"resources": ["zz"], "frame_id": 0}}),
     "/commands/1/mark_boundary/resources/0", 'no resource with uid "zz" (expected a buffer, image or tensor)'),
    ("frame-id-string", _add_command({"mark_boundary": {"resources": [], "frame_id": "1"}}),
     "/commands/1/mark_boundary/frame_id", 'expected an integer >= 0, got "1"'),
    ("spec-constant-string", _set(SHADER + ["specialization_constants"], [{"id": 0, "value": "8"}]),
     "/resources/0/shader/specialization_constants/0/value", 'expected an integer, a float or a boolean, got "8"'),
    ("spec-constant-duplicate", _set(SHADER + ["specialization_constants"], [{"id": 1, "value": 2},
                                                                             {"id": 1, "value": 3}]),
     "/resources/0/shader/specialization_constants/1/id", "duplicate specialization constant id 1 (also at index 0)"),
    ("include-dir-missing", _set(SHADER + ["include_dirs"], ["inc"]), "/resources/0/shader/include_dirs/0",
     "include directory not found:"),
    ("entry-empty", _set(SHADER + ["entry"], ""), "/resources/0/shader/entry", "expected a non-empty string"),
    ("tensor-format", _add_resource({"tensor": {"uid": "t", "dims": [4], "format": "R32F",
                                                "shader_access": "readonly"}}),
     "/resources/5/tensor/format", 'expected a VkFormat name such as "VK_FORMAT_R32_SFLOAT", got "R32F"'),
    ("tensor-dims-zero", _add_resource({"tensor": {"uid": "t", "dims": [4, 0], "format": "VK_FORMAT_R8_UINT",
                                                   "shader_access": "readonly"}}),
     "/resources/5/tensor/dims/1", "expected an integer >= 1, got 0"),
    ("tensor-alias-target", _add_resource({"tensor": {"uid": "t", "dims": [4], "format": "VK_FORMAT_R8_UINT",
                                                      "shader_access": "readonly",
                                                      "alias_target": {"resource_ref": "a"}}}),
     "/resources/5/tensor/alias_target",
     "The alias_target field is deprecated, please use the memory_group functionality instead"),
    ("image-custom-border", _add_resource({"image": {"uid": "im", "dims": [4, 4], "format": "VK_FORMAT_R8_UNORM",
                                                     "shader_access": "readonly",
                                                     "custom_border_color": [0, 0, 0, 1]}}),
     "/resources/5/image/custom_border_color",
     "custom_border_color needs border_color INT_CUSTOM_EXT or FLOAT_CUSTOM_EXT"),
    ("image-custom-border-len", _add_resource({"image": {"uid": "im", "dims": [4, 4], "format": "VK_FORMAT_R8_UNORM",
                                                         "shader_access": "readonly", "border_color": "FLOAT_CUSTOM_EXT",
                                                         "custom_border_color": [0, 0, 1]}}),
     "/resources/5/image/custom_border_color", "expected an array of exactly 4 entries, got 3"),
    ("graph-substitution-dangling", _add_resource({"graph": {"uid": "g", "src": "add.comp",
                                                             "shader_substitutions": [{"shader_ref": "nope",
                                                                                       "target": "node"}]}}),
     "/resources/5/graph/shader_substitutions/0/shader_ref", 'no resource with uid "nope" (expected a shader)'),
    ("graph-ref-dangling", _add_command({"dispatch_graph": {"graph_ref": "g", "bindings": []}}),
     "/commands/1/dispatch_graph/graph_ref", 'no resource with uid "g" (expected a graph)'),
]


def _push_too_big(doc: Doc) -> None:
    base = Path(doc["_dir"])
    np.save(base / "count2.npy", np.array([1, 2], np.uint32))
    doc["resources"][1]["raw_data"]["src"] = "count2.npy"


@pytest.mark.parametrize("name,mutate,pointer,message", CASES, ids=[c[0] for c in CASES])
def test_bad_scenario(tmp_path: Path, name: str, mutate: Callable[[Doc], None], pointer: str, message: str) -> None:
    path, doc = vector_add(tmp_path)
    doc = copy.deepcopy(doc)
    doc["_dir"] = str(tmp_path)
    mutate(doc)
    del doc["_dir"]
    write(path, doc)
    with pytest.raises(InputError) as info:
        load_scenario(path)
    problems = [p for p in info.value.problems if not p.warning]
    assert any(p.where == pointer and message in p.message for p in problems), \
        f"wanted {pointer}: {message}\ngot:\n" + "\n".join(map(str, problems))
    assert all(p.file == str(path) for p in problems)


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('{\n  "resources": [\n    {"buffer": {"uid": "a",}}\n  ]\n}\n')
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert str(info.value) == f"{path}: line 3, column 28: invalid JSON: Expecting property name enclosed in double quotes"


def test_root_not_object(tmp_path: Path) -> None:
    path = write(tmp_path / "s.json", [1, 2])
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert str(info.value) == f'{path}: /: expected an object with "resources" and "commands", got [1, 2]'


def test_missing_scenario_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_scenario(tmp_path / "none.json")
    assert str(info.value) == f"{tmp_path / 'none.json'}: file not found"


def test_all_errors_reported_at_once(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    res(doc, 2)["size"] = "40"
    res(doc, 3)["shader_access"] = "rw"
    dispatch(doc)["rangeND"] = [0]
    doc["commands"].append({"dispatch_compute": {**dispatch(doc), "rangeND": [1], "shader_ref": "nope"}})
    write(path, doc)
    with pytest.raises(InputError) as info:
        load_scenario(path)
    where = sorted(p.where for p in info.value.problems)
    assert where == ["/commands/0/dispatch_compute/rangeND/0", "/commands/1/dispatch_compute/shader_ref",
                     "/resources/2/buffer/size", "/resources/3/buffer/shader_access"]


def test_unknown_field_is_a_warning_or_strict_error(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    res(doc, 2)["sise"] = 4
    dispatch(doc)["bindings"][0]["slot"] = 1
    write(path, doc)
    _, warnings = load_scenario(path)
    assert [(w.where, w.message) for w in warnings] == [
        ("/resources/2/buffer/sise", 'unknown field "sise"'),
        ("/commands/0/dispatch_compute/bindings/0/slot", 'unknown field "slot"')]
    with pytest.raises(InputError) as info:
        load_scenario(path, strict=True)
    assert [p.where for p in info.value.problems] == ["/resources/2/buffer/sise",
                                                      "/commands/0/dispatch_compute/bindings/0/slot"]


def test_cli_exit_2_no_traceback(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    res(doc, 2)["size"] = "40"
    write(path, doc)
    for cmd in (["validate", path], ["run", path], ["run", "--scenario", path, "--dry-run"]):
        proc = kernellab(*cmd)
        assert proc.returncode == 2, proc.stderr
        assert "Traceback" not in proc.stderr
        assert f'{path}: /resources/2/buffer/size: expected an integer >= 1, got "40"' in proc.stderr
    assert not (tmp_path / "c.npy").exists()


def test_cli_warning_printed_and_strict(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    res(doc, 2)["colour"] = "red"
    write(path, doc)
    ok = kernellab("validate", path)
    assert ok.returncode == 0
    assert f"{path}: /resources/2/buffer/colour: warning: unknown field \"colour\"" in ok.stderr
    strict = kernellab("validate", "--strict", path)
    assert strict.returncode == 2 and "Traceback" not in strict.stderr


def test_cli_bad_flag_values(tmp_path: Path) -> None:
    path, _ = vector_add(tmp_path)
    proc = kernellab("run", path, "--repeat", "0")
    assert proc.returncode == 2 and "--repeat must be >= 1, got 0" in proc.stderr
    proc = kernellab("run", path, "--device", "no-such-gpu", "--dry-run")
    assert proc.returncode == 2 and "--device 'no-such-gpu': no device name contains it" in proc.stderr
    proc = kernellab("run")
    assert proc.returncode == 2 and "no workload file" in proc.stderr


def test_schema_is_json_with_every_kind() -> None:
    proc = kernellab("schema")
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    resource_kinds = {next(iter(o["properties"])) for o in schema["properties"]["resources"]["items"]["oneOf"]}
    assert resource_kinds == {"image", "tensor", "buffer", "raw_data", "graph", "shader", "memory_barrier",
                              "buffer_barrier", "image_barrier", "tensor_barrier", "graph_constant"}
    assert schema["$defs"]["Buffer"]["properties"]["size"]["minimum"] == 1
