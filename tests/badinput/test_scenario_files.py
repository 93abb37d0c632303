"""Files of a scenario as Arm's runner treats them (issue 11, items 3 and 5): a missing file of a
resource no command uses is a warning (an error with --strict); unknown-field warnings are reported
next to the errors of the same object; a file that is not SPIR-V given as a SPIR-V shader is an
input error at its JSON path."""
from __future__ import annotations

import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers.scenarios import vector_add, write
from kernellab.cli import main
from kernellab.errors import InputError
from kernellab.formats.scenario import load_scenario

Doc = dict[str, Any]
STAGES = {"src_stage": ["COMPUTE"], "dst_stage": ["COMPUTE"]}
ACCESS = {"src_access": "ACCESS_MEMORY_WRITE", "dst_access": "ACCESS_MEMORY_READ"}


def _spare_shader(doc: Doc) -> None:
    doc["resources"].append({"shader": {"uid": "spare", "src": "gone.comp", "type": "GLSL"}})


def _spare_buffer(doc: Doc) -> None:
    doc["resources"].append({"buffer": {"uid": "spare", "size": 4, "shader_access": "readonly", "src": "gone.npy"}})


def _and(*steps: Callable[[Doc], None]) -> Callable[[Doc], None]:
    def run(doc: Doc) -> None:
        for step in steps:
            step(doc)
    return run


def _command(item: Doc) -> Callable[[Doc], None]:
    return lambda doc: doc["commands"].append(item)


def _resource(item: Doc) -> Callable[[Doc], None]:
    return lambda doc: doc["resources"].append(item)


def _group(uid: str, group: str) -> Callable[[Doc], None]:
    def run(doc: Doc) -> None:
        for item in doc["resources"]:
            body = next(iter(item.values()))
            if body.get("uid") == uid:
                body["memory_group"] = {"id": group}
    return run


SPARE_SRC = "/resources/5/shader/src"
BUFFER_SRC = "/resources/5/buffer/src"

#: (name, change, pointer of the missing file, whether a command uses the resource)
CASES: list[tuple[str, Callable[[Doc], None], str, bool]] = [
    ("unused-shader", _spare_shader, SPARE_SRC, False),
    ("unused-buffer", _spare_buffer, BUFFER_SRC, False),
    ("unused-raw-data", _resource({"raw_data": {"uid": "spare", "src": "gone.npy"}}), "/resources/5/raw_data/src",
     False),
    ("shader-of-a-later-dispatch", _and(_spare_shader, _command(
        {"dispatch_compute": {"shader_ref": "spare", "rangeND": [1]}})), SPARE_SRC, True),
    ("buffer-bound", _and(_spare_buffer, _command({"dispatch_compute": {
        "shader_ref": "add", "rangeND": [1], "bindings": [{"set": 3, "id": 0, "resource_ref": "spare"}]}})),
     BUFFER_SRC, True),
    ("buffer-push-data", _and(_resource({"raw_data": {"uid": "spare", "src": "gone.npy"}}), _command(
        {"dispatch_compute": {"shader_ref": "add", "push_data_ref": "spare", "rangeND": [1]}})),
     "/resources/5/raw_data/src", True),
    ("buffer-in-a-boundary", _and(_spare_buffer, _command({"mark_boundary": {"resources": ["spare"]}})),
     BUFFER_SRC, True),
    ("buffer-in-a-barrier", _and(_spare_buffer, _resource({"buffer_barrier": {
        "uid": "bb", "buffer_resource": "spare", "size": 4, **ACCESS, **STAGES}})), BUFFER_SRC, True),
    ("buffer-sharing-memory-with-a-bound-one", _and(_spare_buffer, _group("spare", "g"), _group("a", "g")),
     BUFFER_SRC, True),
    ("buffer-sharing-memory-with-an-unused-one", _and(
        _spare_buffer, _group("spare", "g"),
        _resource({"buffer": {"uid": "other", "size": 4, "shader_access": "readonly", "memory_group": {"id": "g"}}})),
     BUFFER_SRC, False),
]


def _scenario(tmp_path: Path, change: Callable[[Doc], None]) -> Path:
    path, doc = vector_add(tmp_path)
    change(doc)
    return write(path, doc)


@pytest.mark.parametrize("name, change, pointer, used", CASES, ids=[c[0] for c in CASES])
def test_missing_file_is_an_error_only_for_a_resource_in_use(tmp_path: Path, name: str,
                                                             change: Callable[[Doc], None], pointer: str,
                                                             used: bool) -> None:
    path = _scenario(tmp_path, change)
    if used:
        with pytest.raises(InputError) as info:
            load_scenario(path)
        errors = [(p.where, p.message) for p in info.value.problems if not p.warning]
        assert [where for where, _ in errors] == [pointer], errors
        assert errors[0][1].startswith("file not found: ") and "no command uses" not in errors[0][1]
        return
    _, warnings = load_scenario(path)
    assert [(w.where, w.message.split(": ")[0]) for w in warnings] == [(pointer, "file not found")]
    assert warnings[0].message.endswith("(no command uses this resource)")
    with pytest.raises(InputError) as info:
        load_scenario(path, strict=True)
    assert [p.where for p in info.value.problems] == [pointer]


def test_a_refused_command_leaves_every_missing_file_an_error(tmp_path: Path) -> None:
    # the refused command may be the one that uses the resource: nothing is excused
    path = _scenario(tmp_path, _and(_spare_shader, _command({"dispatch_compute": {"shader_ref": "spare"}})))
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert {p.where for p in info.value.problems if not p.warning} == {"/commands/1/dispatch_compute", SPARE_SRC}


def test_cli_validate_warns_about_an_unused_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _scenario(tmp_path, _spare_shader)
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert f"{path}: {SPARE_SRC}: warning: file not found: {tmp_path / 'gone.comp'}" in err
    assert main(["validate", "--strict", str(path)]) == 2
    assert f"{path}: {SPARE_SRC}: file not found: " in capsys.readouterr().err


# --- unknown fields next to errors -----------------------------------------------------------------

def test_unknown_field_reported_with_the_error_of_its_object(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    body = doc["resources"][2]["buffer"]
    body["sise"] = body.pop("size")
    dc = doc["commands"][0]["dispatch_compute"]
    dc["rangeND"] = [0]
    dc["bindings"][1]["slot"] = 3
    write(path, doc)
    with pytest.raises(InputError) as info:
        load_scenario(path)
    got = [(p.where, p.message, p.warning) for p in info.value.problems]
    # issue 20: the misspelling is named with the field it stands for
    assert ("/resources/2/buffer", 'missing required field "size" ("sise" is not a field: did you mean "size"?)',
            False) in got
    assert ("/resources/2/buffer/sise", 'unknown field "sise" (did you mean "size"?)', True) in got
    assert ("/commands/0/dispatch_compute/rangeND/0", "expected an integer >= 1, got 0", False) in got
    assert ("/commands/0/dispatch_compute/bindings/1/slot", 'unknown field "slot"', True) in got
    with pytest.raises(InputError) as info:
        load_scenario(path, strict=True)
    assert {p.where for p in info.value.problems if not p.warning} >= {"/resources/2/buffer/sise",
                                                                      "/commands/0/dispatch_compute/bindings/1/slot"}


def test_cli_prints_the_warning_beside_the_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, doc = vector_add(tmp_path)
    body = doc["resources"][2]["buffer"]
    body["sise"] = body.pop("size")
    write(path, doc)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f'{path}: /resources/2/buffer: missing required field "size"' in err
    assert f'{path}: /resources/2/buffer/sise: warning: unknown field "sise"' in err


# --- a SPIR-V shader's src must be SPIR-V -----------------------------------------------------------

def _spirv_shader(tmp_path: Path, name: str, data: bytes | None) -> Path:
    path, doc = vector_add(tmp_path)
    if data is not None:
        (tmp_path / name).write_bytes(data)
    doc["resources"][0]["shader"].update({"src": name, "type": "SPIR-V"})
    return write(path, doc)


HEADER = struct.pack("<5I", 0x07230203, 0x00010300, 0, 8, 0)


@pytest.mark.parametrize("name, data, hint", [
    ("add.comp", None, 'it looks like GLSL source: give the shader "type": "GLSL"'),
    ("k.cl", b"__kernel void k(__global int *a) {}\n", 'it looks like OpenCL C source: give the shader "type": '
                                                         '"OpenCL-C"'),
    ("m.spvasm", b"OpCapability Shader\n", "it looks like SPIR-V assembly: assemble it with spirv-as first"),
    ("short.spv", HEADER[:16], None),
    ("odd.spv", HEADER + b"\x00", None),
    ("magic.spv", b"\x00" * 20, None),
])
def test_non_spirv_file_as_a_spirv_shader_names_its_json_path(tmp_path: Path, name: str, data: bytes | None,
                                                              hint: str | None) -> None:
    path = _spirv_shader(tmp_path, name, data)
    with pytest.raises(InputError) as info:
        load_scenario(path)
    (problem,) = [p for p in info.value.problems if not p.warning]
    assert problem.where == "/resources/0/shader/src"
    assert problem.message.startswith(f"not a SPIR-V binary (bad magic number or length): {tmp_path / name}")
    assert (hint in problem.message) if hint else "looks like" not in problem.message


@pytest.mark.parametrize("header", [HEADER, struct.pack(">5I", 0x07230203, 0x00010300, 0, 8, 0)],
                         ids=["little-endian", "big-endian"])
def test_spirv_module_in_either_byte_order_passes_the_reader(tmp_path: Path, header: bytes) -> None:
    scenario, warnings = load_scenario(_spirv_shader(tmp_path, "m.spv", header))
    assert warnings == [] and scenario.resources[0].src_path == tmp_path / "m.spv"


def test_non_spirv_file_of_an_unused_shader_is_a_warning(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"].append({"shader": {"uid": "spare", "src": "add.comp", "type": "SPIR-V"}})
    write(path, doc)
    _, warnings = load_scenario(path)
    assert [w.where for w in warnings] == [SPARE_SRC] and "not a SPIR-V binary" in warnings[0].message
