"""The attack pass on `import` and `export`: a failing import leaves its output folder as it was
(absent, or with its old files unchanged), an over-large BUFFER_ARRAY and a sampler LOD past
Vulkan's range are refused at their line or JSON path, and `export` of an AmberScript file says
to import it first. Each is exit 2 (1 for a folder that cannot hold outputs), one line, no traceback."""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from helpers.scenarios import kernellab as cli
from helpers.scenarios import vector_add, write
from kernellab.errors import InputError
from kernellab.formats.amber.parse import MAX_BUFFER_ARRAY, parse_amber

GOOD = """#!amber
SHADER compute s GLSL
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { uint a[]; };
void main() { a[0] = 1u; }
END
"""
# assembled when the scenarios are written, after the first shader and the buffer: a late failure
BAD_ASM = """SHADER compute bad SPIRV-ASM
OpCapability Shader
%1 = OpNotAnInstruction
END
"""
REST = """BUFFER b DATA_TYPE uint32 SIZE 4 FILL 0
PIPELINE compute p
  ATTACH s
  BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0
END
PIPELINE compute q
  ATTACH bad
  BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0
END
RUN p 1 1 1
EXPECT b IDX 0 EQ 1
"""


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def no_leftovers(parent: Path) -> None:
    assert not [p.name for p in parent.iterdir() if p.name.endswith(".import.tmp")]


def test_amber_import_failing_late_leaves_no_folder(tmp_path: Path) -> None:
    (tmp_path / "t.amber").write_text(GOOD + BAD_ASM + REST)
    proc = cli("import", "t.amber", "-o", "out/sub", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "OpNotAnInstruction" in proc.stderr
    assert not (tmp_path / "out").exists()  # neither the folder nor the parent made for it
    no_leftovers(tmp_path)


def test_amber_import_failing_late_leaves_an_existing_folder_unchanged(tmp_path: Path) -> None:
    good = GOOD + REST.replace("PIPELINE compute q\n  ATTACH bad\n", "PIPELINE compute q\n  ATTACH s\n")
    (tmp_path / "t.amber").write_text(good)
    assert cli("import", "t.amber", "-o", "out", cwd=tmp_path).returncode == 0
    (tmp_path / "out" / "keep.txt").write_text("mine")
    before = snapshot(tmp_path / "out")
    (tmp_path / "t.amber").write_text(GOOD + BAD_ASM + REST.replace("FILL 0", "FILL 9"))
    assert cli("import", "t.amber", "-o", "out", cwd=tmp_path).returncode == 2
    assert snapshot(tmp_path / "out") == before
    no_leftovers(tmp_path)


def test_amber_import_into_an_existing_folder_replaces_its_files_and_keeps_others(tmp_path: Path) -> None:
    """As before staging: an import's files replace their namesakes, other files stay."""
    good = GOOD + REST.replace("PIPELINE compute q\n  ATTACH bad\n", "PIPELINE compute q\n  ATTACH s\n")
    (tmp_path / "t.amber").write_text(good)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    (tmp_path / "out" / "t.json").write_text("old")
    proc = cli("import", "t.amber", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str((tmp_path / "out" / "t.json").resolve())
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"
    assert "resources" in json.loads((tmp_path / "out" / "t.json").read_text())
    no_leftovers(tmp_path)


def test_kernel_instantiation_import_failing_late_leaves_no_folder(tmp_path: Path) -> None:
    pytest.importorskip("pyopencl")
    (tmp_path / "k.cl").write_text("__kernel void k(__global float *o) { o[get_global_id(0)] = 1.0f; }\n")
    (tmp_path / "bad.cl").write_text("__kernel void k(__global float *o) { o[0] = undefined_thing; }\n")
    item = {"language": "OpenCL", "kernel_file": "k.cl", "global_size": [4], "local_size": [4], "entry_point": "k",
            "kernel_arguments": [{"type": "array", "size": 16}]}
    (tmp_path / "k.json").write_text(json.dumps([item, {**item, "kernel_file": "bad.cl"}]))
    proc = cli("import", "k.json", "-o", "out", "--device", "Portable", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "/1/kernel_file" in proc.stderr
    assert not (tmp_path / "out").exists()
    no_leftovers(tmp_path)


def test_kernel_spec_import_that_cannot_place_its_scenario_leaves_the_folder_unchanged(tmp_path: Path) -> None:
    """The scenario was written after the kernel and the inputs: those stayed behind when it failed."""
    from test_pyschedcl_helpers import spec_file

    spec = spec_file(tmp_path)
    (tmp_path / "out" / "scenario.json").mkdir(parents=True)
    (tmp_path / "out" / "keep.txt").write_text("mine")
    before = snapshot(tmp_path / "out")
    proc = cli("import", spec, "--set", "dataset=16", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "scenario.json: cannot replace it with a file: it is a folder" in proc.stderr
    assert snapshot(tmp_path / "out") == before and sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "keep.txt", "scenario.json"]
    no_leftovers(tmp_path)


def test_an_over_large_buffer_array_is_refused_at_its_line_at_once(tmp_path: Path) -> None:
    names = " ".join(["b"] * 300_000)
    text = GOOD + ("BUFFER b DATA_TYPE uint32 SIZE 4 FILL 0\nPIPELINE compute p\n  ATTACH s\n"
                   f"  BIND BUFFER_ARRAY {names} AS storage DESCRIPTOR_SET 0 BINDING 0\nEND\nRUN p 1 1 1\n")
    (tmp_path / "t.amber").write_text(text)
    start = time.monotonic()
    proc = cli("import", "t.amber", "-o", "out", cwd=tmp_path)
    assert time.monotonic() - start < 15
    column = len("  BIND BUFFER_ARRAY ") + 2 * MAX_BUFFER_ARRAY + 1
    assert proc.returncode == 2 and proc.stderr.startswith(
        f"t.amber: line 11, column {column}: a BUFFER_ARRAY of more than {MAX_BUFFER_ARRAY} buffers"), proc.stderr
    assert not (tmp_path / "out").exists()


def test_a_buffer_array_at_the_limit_is_taken(tmp_path: Path) -> None:
    names = " ".join(["b"] * MAX_BUFFER_ARRAY)
    script = parse_amber(GOOD + "BUFFER b DATA_TYPE uint32 SIZE 4 FILL 0\nPIPELINE compute p\n  ATTACH s\n"
                         f"  BIND BUFFER_ARRAY {names} AS storage DESCRIPTOR_SET 0 BINDING 0\nEND\n",
                         tmp_path / "t.amber")
    assert len(script.pipelines["p"].bindings) == MAX_BUFFER_ARRAY


@pytest.mark.parametrize("key, value", [("min_lod", 1e308), ("max_lod", 1e308), ("min_lod", float("inf")),
                                        ("max_lod", float("nan")), ("min_lod", -1e308), ("max_lod", 1000.5)])
def test_a_sampler_lod_out_of_range_is_refused_at_its_json_path(tmp_path: Path, key: str, value: float) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"].append({"image": {"uid": "im", "dims": [4, 4], "format": "VK_FORMAT_R32_UINT",
                                       "shader_access": "image_read", key: value}})
    write(path, doc)  # json writes inf and nan as Infinity and NaN, which the reader takes as numbers
    proc = cli("validate", path, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert f"{path}: /resources/5/image/{key}: {key} " in proc.stderr
    assert "is not a level of detail: expected a finite number from -1000 to 1000" in proc.stderr


def test_a_sampler_lod_at_vk_lod_clamp_none_is_taken(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"].append({"image": {"uid": "im", "dims": [4, 4], "format": "VK_FORMAT_R32_UINT",
                                       "shader_access": "image_read", "min_lod": 0, "max_lod": 1000.0}})
    write(path, doc)
    assert cli("validate", path, cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("word, value", [("MIN_LOD", "1e308"), ("MAX_LOD", "inf"), ("MIN_LOD", "nan")])
def test_an_amber_sampler_lod_out_of_range_is_refused_at_its_word(tmp_path: Path, word: str, value: str) -> None:
    with pytest.raises(InputError) as info:
        parse_amber(GOOD + f"SAMPLER smp {word} {value}\n", tmp_path / "t.amber")
    assert f"t.amber: line 8, column {len('SAMPLER smp ' + word) + 2}: {word} {value} is not a level of detail" \
        in str(info.value)


def test_export_of_an_amber_file_says_to_import_it_first(tmp_path: Path) -> None:
    (tmp_path / "t.amber").write_text(GOOD + REST)
    proc = cli("export", "t.amber", "-o", "out", cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("t.amber: export takes a scenario JSON, and this is an AmberScript file: "
                                  "convert it first with `kernellab import t.amber -o DIR`"), proc.stderr
    assert "invalid JSON" not in proc.stderr and not (tmp_path / "out").exists()
