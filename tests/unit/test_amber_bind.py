"""AmberScript's descriptor ranges and dynamic descriptors (DESCRIPTOR_OFFSET, DESCRIPTOR_RANGE,
storage_dynamic, uniform_dynamic) as scenario bindings, and the scenario reader's checks of them."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernellab.errors import InputError
from kernellab.formats.amber.materialize import write_scenarios
from kernellab.formats.amber.parse import parse_amber

SHADER = """SHADER compute s GLSL
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
void main() { v[0] = 1u; }
END
BUFFER b DATA_TYPE uint32 SIZE 128 FILL 0
"""


def bindings_of(bind: str, tmp_path: Path) -> list[dict]:
    script = parse_amber(SHADER + f"PIPELINE compute p\n  ATTACH s\n  {bind}\nEND\nRUN p 1 1 1\n", Path("t.amber"))
    scenario = write_scenarios(script, tmp_path, lambda src, env: b"")[-1].scenario
    from kernellab.formats.scenario import load_scenario

    load_scenario(scenario)  # the scenario reader accepts the fields
    return json.loads(scenario.read_text())["commands"][0]["dispatch_compute"]["bindings"]


@pytest.mark.parametrize("bind, fields", [
    ("BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0", {}),
    ("BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0 DESCRIPTOR_OFFSET 256", {"buffer_range": [256, 256]}),
    ("BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0 DESCRIPTOR_OFFSET 16 DESCRIPTOR_RANGE 32",
     {"buffer_range": [16, 32]}),
    ("BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0 DESCRIPTOR_RANGE -1", {}),
    # a dynamic descriptor's whole range is what the two offsets leave (Amber's rule)
    ("BIND BUFFER b AS storage_dynamic DESCRIPTOR_SET 0 BINDING 0 OFFSET 256",
     {"descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC", "dynamic_offset": 256,
      "buffer_range": [0, 256]}),
    ("BIND BUFFER b AS uniform_dynamic DESCRIPTOR_SET 0 BINDING 0 OFFSET 64 DESCRIPTOR_OFFSET 128 "
     "DESCRIPTOR_RANGE 16", {"descriptor_type": "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC", "dynamic_offset": 64,
                             "buffer_range": [128, 16]}),
])
def test_bind_offsets_and_ranges_become_binding_fields(bind, fields, tmp_path):
    (binding,) = bindings_of(bind, tmp_path)
    assert binding == {"set": 0, "id": 0, "resource_ref": "b", **fields}


@pytest.mark.parametrize("bind, where, words", [
    ("BIND BUFFER b AS storage_dynamic DESCRIPTOR_SET 0 BINDING 0", "line 10, column 20", "needs OFFSET"),
    ("BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0 OFFSET 4", "line 10, column 55",
     "expected DESCRIPTOR_SET or BINDING or DESCRIPTOR_OFFSET"),
    ("BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0 DESCRIPTOR_RANGE 0", "line 10, column 72",
     "an integer >= 1"),
    ("BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0 DESCRIPTOR_OFFSET 512", "line 10",
     "pass the end of the buffer (512 bytes)"),
    ("BIND BUFFER b AS storage_dynamic DESCRIPTOR_SET 0 BINDING 0 OFFSET 256 DESCRIPTOR_RANGE 512", "line 10",
     "pass the end of the buffer"),
])
def test_bad_offsets_name_the_line(bind, where, words, tmp_path):
    with pytest.raises(InputError) as info:
        bindings_of(bind, tmp_path)
    assert f"t.amber: {where}" in str(info.value) and words in str(info.value)


def scenario_with(binding: dict, tmp_path: Path) -> Path:
    (tmp_path / "s.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\n"
                                     "layout(set = 0, binding = 0) buffer B { uint v[]; };\nvoid main() { v[0] = 1u; }\n")
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"buffer": {"uid": "b", "size": 64, "shader_access": "readwrite"}},
                      {"shader": {"uid": "s", "src": "s.comp", "type": "GLSL", "entry": "main"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "s", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "b", **binding}]}}]}))
    return path


@pytest.mark.parametrize("binding, where, words", [
    ({"buffer_range": [32, 64]}, "/commands/0/dispatch_compute/bindings/0/buffer_range",
     "sees bytes 32 to 96 of buffer \"b\", which has 64"),
    ({"dynamic_offset": 16}, "/commands/0/dispatch_compute/bindings/0/dynamic_offset", "needs a dynamic descriptor_type"),
    ({"descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC", "dynamic_offset": 16},
     "/commands/0/dispatch_compute/bindings/0/dynamic_offset", "sees bytes 16 to 80"),
    ({"buffer_range": [8]}, "/commands/0/dispatch_compute/bindings/0/buffer_range", "exactly 2 entries"),
])
def test_the_scenario_reader_checks_ranges_and_dynamic_offsets(binding, where, words, tmp_path):
    from kernellab.formats.scenario import load_scenario

    with pytest.raises(InputError) as info:
        load_scenario(scenario_with(binding, tmp_path))
    assert f"s.json: {where}: " in str(info.value) and words in str(info.value)


def test_a_range_and_dynamic_offset_that_fit_are_read(tmp_path):
    from kernellab.formats.scenario import load_scenario

    scenario, _ = load_scenario(scenario_with({"descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC",
                                               "dynamic_offset": 16, "buffer_range": [16, 32]}, tmp_path))
    binding = scenario.commands[0].bindings[0]
    assert (binding.buffer_range, binding.dynamic_offset) == ([16, 32], 16)


def test_buffer_array_fills_elements_with_their_own_offsets(tmp_path):
    bindings = bindings_of("BIND BUFFER_ARRAY b b AS storage_dynamic DESCRIPTOR_SET 0 BINDING 0 OFFSET 0 256 "
                           "DESCRIPTOR_OFFSET 16 0 DESCRIPTOR_RANGE 4 -1", tmp_path)
    dynamic = {"set": 0, "id": 0, "resource_ref": "b", "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC"}
    assert bindings == [{**dynamic, "buffer_range": [16, 4]},
                        {**dynamic, "array_element": 1, "dynamic_offset": 256, "buffer_range": [0, 256]}]


@pytest.mark.parametrize("bind, where, words", [
    ("BIND BUFFER_ARRAY b b AS storage DESCRIPTOR_SET 0 BINDING 0 DESCRIPTOR_OFFSET 4", "line 10, column 83",
     "DESCRIPTOR_OFFSET's bytes for buffer 2 of 2"),
    ("BIND BUFFER_ARRAY b c AS storage DESCRIPTOR_SET 0 BINDING 0", "line 10, column 23", "no buffer 'c'"),
    ("BIND BUFFER_ARRAY b b AS push_constant", "line 10, column 28", "one buffer"),
])
def test_bad_buffer_arrays_name_the_line(bind, where, words, tmp_path):
    with pytest.raises(InputError) as info:
        bindings_of(bind, tmp_path)
    assert f"t.amber: {where}" in str(info.value) and words in str(info.value)


def test_the_scenario_reader_wants_array_elements_from_zero_without_gaps(tmp_path):
    from kernellab.formats.scenario import load_scenario

    path = scenario_with({}, tmp_path)
    data = json.loads(path.read_text())
    data["commands"][0]["dispatch_compute"]["bindings"].append(
        {"set": 0, "id": 0, "resource_ref": "b", "array_element": 2})
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert "bindings/1/array_element: set 0 binding 0 is an array of buffers: its bindings fill elements 0 to 1, " \
           "got elements 0, 2" in str(info.value)
    data["commands"][0]["dispatch_compute"]["bindings"][1]["array_element"] = 0
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert "bindings/1: set 0 binding 0 is already bound by bindings/0" in str(info.value)


def test_texel_buffers_take_the_buffers_format(tmp_path):
    (binding,) = bindings_of("BIND BUFFER b AS storage_texel_buffer DESCRIPTOR_SET 0 BINDING 0", tmp_path)
    assert binding == {"set": 0, "id": 0, "resource_ref": "b", "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER",
                       "texel_format": "VK_FORMAT_R32_UINT"}


@pytest.mark.parametrize("name, layout, vk", [
    ("R8G8B8A8_UNORM", ((0, "uint8"), (1, "uint8"), (2, "uint8"), (3, "uint8")), "VK_FORMAT_R8G8B8A8_UNORM"),
    ("R8G8_SNORM", ((0, "int8"), (1, "int8")), "VK_FORMAT_R8G8_SNORM"),
    ("B8G8R8A8_SRGB", ((0, "uint8"), (1, "uint8"), (2, "uint8"), (3, "uint8")), "VK_FORMAT_B8G8R8A8_SRGB"),
    ("R16_USCALED", ((0, "uint16"),), "VK_FORMAT_R16_USCALED"),
    ("vec4<float>", ((0, "float32"), (4, "float32"), (8, "float32"), (12, "float32")),
     "VK_FORMAT_R32G32B32A32_SFLOAT"),
    ("vec2<int16>", ((0, "int16"), (2, "int16")), "VK_FORMAT_R16G16_SINT"),
])
def test_formats_store_the_integers_they_are_made_of(name, layout, vk):
    from kernellab.formats.amber.types import element, vk_format

    assert element(name).components == layout
    assert vk_format(element(name)) == vk


def test_a_padded_element_has_no_texel_format():
    from kernellab.formats.amber.types import TypeError_, element, vk_format

    with pytest.raises(TypeError_):
        vk_format(element("vec3<float>"))  # a vec3 takes a vec4's room


@pytest.mark.parametrize("name, dtype, size", [
    ("A2B10G10R10_UNORM_PACK32", "uint32", 4), ("B10G11R11_UFLOAT_PACK32", "uint32", 4),
    ("E5B9G9R9_UFLOAT_PACK32", "uint32", 4), ("A1R5G5B5_UNORM_PACK16", "uint16", 2),
    ("R5G6B5_UNORM_PACK16", "uint16", 2), ("R4G4B4A4_UNORM_PACK16", "uint16", 2), ("R4G4_UNORM_PACK8", "uint8", 1),
])
def test_a_packed_format_is_one_word_per_element(name, dtype, size):
    """As Amber's Format: one unsigned segment of the word's size; DATA gives whole words."""
    from kernellab.formats.amber.types import element, vk_format

    assert element(name).components == ((0, dtype),) and element(name).size == size
    assert vk_format(element(name)) == "VK_FORMAT_" + name
    script = parse_amber(f"BUFFER b FORMAT {name} DATA 1 0x3 END\n", Path("t.amber"))
    assert script.buffers["b"].element.components == ((0, dtype),)


def test_a_packed_format_whose_fields_do_not_fill_its_word_names_the_line():
    with pytest.raises(InputError) as info:
        parse_amber("BUFFER b DATA_TYPE R5G5B5_UNORM_PACK16 SIZE 1 FILL 0\n", Path("t.amber"))
    assert "t.amber: line 1, column 20: " in str(info.value) and "take 15 bits, not the 16" in str(info.value)


def test_texel_format_goes_with_a_texel_descriptor_type(tmp_path):
    from kernellab.formats.scenario import load_scenario

    for binding, words in [({"texel_format": "VK_FORMAT_R32_UINT"}, "bindings/0/texel_format: texel_format goes "
                                                                     "with a texel buffer"),
                           ({"descriptor_type": "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER"},
                            "bindings/0/texel_format: VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER needs "
                            "texel_format")]:
        with pytest.raises(InputError) as info:
            load_scenario(scenario_with(binding, tmp_path))
        assert words in str(info.value)


def test_a_backend_without_buffer_descriptors_refuses_them_at_their_binding(tmp_path):
    """The null backend (as OpenCL) binds buffers whole or as a range only."""
    from kernellab.formats.scenario import load_scenario
    from kernellab.runtime.executor import Executor, RunOptions

    (tmp_path / "k.src").write_text("// the null backend compiles nothing\n")
    binding = {"set": 0, "id": 0, "resource_ref": "b", "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC",
               "dynamic_offset": 16, "buffer_range": [0, 16]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "src": "k.src", "type": "GLSL"}},
                      {"buffer": {"uid": "b", "size": 64, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1], "bindings": [binding]}}]}))
    scenario, _ = load_scenario(path, tmp_path / "out")
    with pytest.raises(InputError) as info:
        Executor(scenario, RunOptions(backend="null")).run()
    assert "/commands/0/dispatch_compute/bindings/0: the null backend binds buffers one to a binding" in \
        str(info.value)


def test_an_empty_buffer_is_written(tmp_path):
    script = parse_amber(SHADER.replace("SIZE 128 FILL 0", "SIZE 0") +
                         "PIPELINE compute p\n  ATTACH s\n  BIND BUFFER b AS storage BINDING 0\nEND\n", Path("t.amber"))
    scenario = write_scenarios(script, tmp_path, lambda src, env: b"")[-1].scenario
    assert json.loads(scenario.read_text())["resources"][0]["buffer"]["size"] == 1


def test_offsets_must_be_multiples_of_the_device_alignment(tmp_path):
    from kernellab.backends.base import BindingSlot, Limits
    from kernellab.formats.scenario import load_scenario
    from kernellab.runtime.limits import check_limits

    path = scenario_with({"descriptor_type": "VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC", "dynamic_offset": 32,
                          "buffer_range": [8, 16]}, tmp_path)
    scenario, _ = load_scenario(path)
    limits = Limits(min_storage_buffer_offset_alignment=4, min_uniform_buffer_offset_alignment=16)
    problems = check_limits(scenario, limits, path, slots={0: [BindingSlot(0, 0, "uniform-buffer-dynamic")]})
    assert [(p.where, p.message) for p in problems] == [
        ("/commands/0/dispatch_compute/bindings/0/buffer_range/0",
         "offset 8 into buffer 'b' is not a multiple of 16 (minUniformBufferOffsetAlignment)")]
    assert not check_limits(scenario, limits, path, slots={0: [BindingSlot(0, 0, "storage-buffer-dynamic")]})
