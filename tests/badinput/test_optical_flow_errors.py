"""Bad ``dispatch_optical_flow`` scenarios: each case asserts the JSON pointer and the message.

Checked when the scenario is read (``kernellab validate`` and ``kernellab run``, exit 2), with
Arm's runner's rules (optical_flow_utils.cpp, json_reader.cpp).
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from helpers.optical_flow import flow_scenario
from helpers.scenarios import kernellab, write
from kernellab.errors import InputError
from kernellab.formats.scenario import load_scenario

Doc = dict[str, Any]
CMD = ["commands", 0, "dispatch_optical_flow"]
AT = "/commands/0/dispatch_optical_flow"


def _set(keys: list[Any], value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node: Any = doc
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return mutate


def _image(index: int, **fields: Any) -> Callable[[Doc], None]:
    return lambda doc: doc["resources"][index]["image"].update(fields)


CASES: list[tuple[str, Callable[[Doc], None], str, str]] = [
    ("lod-beyond-mips", _set(CMD + ["bindings", "search_image", "lod"], 1), f"{AT}/bindings/search_image/lod",
     'lod 1, but image "search" has 1 mip level'),
    ("width-not-the-search-extent", _set(CMD + ["width"], 32), f"{AT}/width",
     'width x height is 32x64, but the search image "search" is 64x64 at the level bound'),
    ("template-extent", _image(1, dims=[1, 32, 64, 1]), f"{AT}/bindings/template_image",
     'the template image "template" is 32x64 at the level bound; the search image is 64x64'),
    ("template-format", _image(1, format="VK_FORMAT_R8G8B8A8_SRGB"), f"{AT}/bindings/template_image",
     'the template image "template" is VK_FORMAT_R8G8B8A8_SRGB; the search image is VK_FORMAT_R8G8B8A8_UNORM'),
    ("output-for-another-grid", _set(CMD + ["grid_size"], "8x8"), f"{AT}/bindings/output_image",
     'the output image "flow" is 16x16 at the level bound; grid_size 8x8 over 64x64 needs 8x8'),
    ("cost-extent", _image(4, dims=[1, 8, 8, 1]), f"{AT}/bindings/output_cost",
     'the output_cost image "cost" is 8x8 at the level bound; the output image is 16x16'),
    ("hint-too-large", _set(CMD + ["mean_flow_l1_norm_hint"], 64), f"{AT}/mean_flow_l1_norm_hint",
     "expected 0 or below max(width, height) = 64, got 64"),
    ("grid-size", _set(CMD + ["grid_size"], "3x3"), f"{AT}/grid_size",
     'expected one of 1x1|2x2|4x4|8x8, got "3x3"'),
    ("execution-flag", _set(CMD + ["execution_flags"], ["input_unchanged", "faster"]), f"{AT}/execution_flags/1",
     'got "faster"'),
    ("missing-output", lambda doc: doc["commands"][0]["dispatch_optical_flow"]["bindings"].pop("output_image"),
     f"{AT}/bindings", 'missing required field "output_image"'),
    ("bound-twice", _set(CMD + ["bindings", "output_cost", "id"], 2), f"{AT}/bindings/output_cost",
     "set 0 binding 2 is already bound by bindings/output_image"),
    ("not-an-image", lambda doc: doc["resources"].append({"buffer": {"uid": "buf", "size": 16, "shader_access": "readonly"}}) or
     _set(CMD + ["bindings", "hint_motion_vectors", "resource_ref"], "buf")(doc),
     f"{AT}/bindings/hint_motion_vectors/resource_ref", '"buf" is a buffer, expected a image'),
]


@pytest.mark.parametrize("name, mutate, pointer, message", CASES, ids=[c[0] for c in CASES])
def test_bad_optical_flow(tmp_path: Path, name: str, mutate: Callable[[Doc], None], pointer: str,
                          message: str) -> None:
    doc = flow_scenario(tmp_path)
    load_scenario(write(tmp_path / "ok.json", copy.deepcopy(doc)))  # the base is valid
    mutate(doc)
    with pytest.raises(InputError) as info:
        load_scenario(write(tmp_path / "s.json", doc))
    found = [(p.where, p.message) for p in info.value.problems if not p.warning]
    assert any(where == pointer and message in text for where, text in found), found


def test_validate_names_file_and_pointer(tmp_path: Path) -> None:
    doc = flow_scenario(tmp_path)
    doc["commands"][0]["dispatch_optical_flow"]["bindings"]["output_image"]["lod"] = 2
    proc = kernellab("validate", write(tmp_path / "s.json", doc))
    assert proc.returncode == 2, proc.stderr
    assert f"s.json: {AT}/bindings/output_image/lod: lod 2, but image \"flow\" has 1 mip level" in proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("command", ["validate", "run"])
def test_damaged_npy_header_of_an_image(tmp_path: Path, command: str) -> None:
    """Fuzzing ``run`` (seed 20261125, optical_flow #205): a hint image whose .npy header is no
    Python literal passed validate (image .npy headers were not read) and escaped NumPy's loader as
    tokenize.TokenError, an internal error. Now its header is read with the other files."""
    doc = flow_scenario(tmp_path)
    hint = tmp_path / "hint.npy"
    data = hint.read_bytes()
    assert b"(1, 16, 16, 2)" in data
    hint.write_bytes(data.replace(b"(1, 16, 16, 2)", b"(1, 16, 1>, 9999"))  # what the fuzzer wrote there
    proc = kernellab(command, write(tmp_path / "s.json", doc), "--output", tmp_path / "out")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    assert f"s.json: /resources/2/image/src: {hint}: not a NumPy .npy file (SyntaxError" in proc.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
