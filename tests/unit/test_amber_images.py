"""AmberScript's IMAGE, SAMPLER, image BINDs and pixel probes read without a device: shapes,
scenario images, and bad input named by file, line and column."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats import png
from kernellab.formats.amber.materialize import write_scenarios
from kernellab.formats.amber.parse import parse_amber
from kernellab.suite.amber import checks_of
from kernellab.suite.compare import check_all

SHADER = """SHADER compute s GLSL
#version 450
void main() {}
END
"""


def error_of(text: str, path: Path = Path("t.amber")) -> str:
    with pytest.raises(InputError) as info:
        parse_amber(text, path)
    return str(info.value)


def test_image_shape_format_and_values():
    script = parse_amber(SHADER + "IMAGE a DATA_TYPE int32 DIM_3D WIDTH 2 HEIGHT 1 DEPTH 2 SERIES_FROM 1 INC_BY 1\n"
                         "IMAGE b FORMAT R8G8B8A8_UNORM SAMPLES 4 DIM_2D WIDTH 4 HEIGHT 4\n", Path("t.amber"))
    a, b = script.buffers["a"], script.buffers["b"]
    assert a.image is not None and (a.image.dims, a.image.width, a.image.height, a.image.depth) == ("DIM_3D", 2, 1, 2)
    assert a.image.format == "VK_FORMAT_R32_SINT" and a.values == [1, 2, 3, 4]
    assert b.image is not None and b.image.samples == 4 and b.values == [0] * 64


@pytest.mark.parametrize("line, where, words", [
    ("IMAGE a FORMAT R8G8B8A8_UNORM WIDTH 2 HEIGHT 2", "line 5, column 1", "needs DIM_1D, DIM_2D or DIM_3D"),
    ("IMAGE a FORMAT R8G8B8A8_UNORM DIM_2D WIDTH 2", "line 5, column 1", "a DIM_2D image needs HEIGHT"),
    ("IMAGE a FORMAT R8G8B8A8_UNORM DIM_1D WIDTH 2 HEIGHT 3", "line 5, column 1", "a DIM_1D image has no HEIGHT"),
    ("IMAGE a FORMAT R8G8B8A8_UNORM DIM_2D WIDTH 2 HEIGHT 2 SAMPLES 3", "line 5, column 63", "SAMPLES 3"),
    ("IMAGE a FORMAT R9_UNORM DIM_2D WIDTH 2 HEIGHT 2", "line 5, column 16", "unknown image format 'R9_UNORM'"),
    ("IMAGE a DATA_TYPE mat2x2<float> DIM_2D WIDTH 2 HEIGHT 2", "line 5, column 19", "not a texel type"),
    ("IMAGE a FORMAT R32_UINT DIM_2D WIDTH 2 HEIGHT 2 SAMPLES 4 FILL 1", "line 5, column 1",
     "a multisampled image cannot be given data"),
    ("IMAGE a FORMAT R32_UINT DIM_2D WIDTH 2 HEIGHT 2 MIP_LEVELS 3", "line 5, column 1", "MIP_LEVELS 3"),
    ("IMAGE a FORMAT R32_UINT DIM_2D WIDTH 1 HEIGHT 1 DATA 1 2 3 END", "line 5, column 49", "DATA holds 3 values"),
    ("SAMPLER s MIN_LOD 2 MAX_LOD 1", "line 5, column 1", "MAX_LOD 1 is below MIN_LOD 2"),
    ("SAMPLER s ADDRESS_MODE_U wrap", "line 5, column 26", "expected repeat or mirrored_repeat"),
    ("SAMPLER s COMPARE maybe", "line 5, column 19", "expected on or off"),
])
def test_bad_image_or_sampler_names_line_and_column(line, where, words):
    message = error_of(SHADER + line + "\n")
    assert f"t.amber: {where}: " in message and words in message


IMG = SHADER + "IMAGE img FORMAT R8G8B8A8_UNORM DIM_2D WIDTH 4 HEIGHT 2 FILL 0\nBUFFER buf DATA_TYPE uint32 SIZE 1 FILL 0\n" \
    "SAMPLER smp\n"


@pytest.mark.parametrize("bind, where, words", [
    ("BIND BUFFER img AS combined_image_sampler DESCRIPTOR_SET 0 BINDING 0", "line 10, column 22",
     "combined_image_sampler needs SAMPLER"),
    ("BIND BUFFER img AS storage_image SAMPLER smp BINDING 0", "line 10, column 22", "SAMPLER goes with"),
    ("BIND BUFFER buf AS storage_image BINDING 0", "line 10, column 15", "is a BUFFER, not an IMAGE"),
    ("BIND BUFFER img AS storage DESCRIPTOR_SET 0 BINDING 0", "line 10, column 15",
     "'img' is an IMAGE: bind it as storage_image"),
    ("BIND BUFFER img AS sampled_image BINDING 0 BASE_MIP_LEVEL 1", "line 10, column 61", "BASE_MIP_LEVEL 1"),
    ("BIND SAMPLER nope BINDING 1", "line 10, column 16", "no sampler 'nope'"),
    ("BIND SAMPLER smp DESCRIPTOR_SET 0", "line 10, column 16", "BIND SAMPLER needs BINDING"),
])
def test_bad_image_bind_names_line_and_column(bind, where, words):
    message = error_of(IMG + f"PIPELINE compute p\n  ATTACH s\n  {bind}\nEND\n")
    assert f"t.amber: {where}: " in message and words in message


@pytest.mark.parametrize("bind, where, words", [
    ("BIND BUFFER img AS uniform_texel_buffer BINDING 0", "line 10, column 15", "is an IMAGE"),
    ("BIND BUFFER v3 AS storage_texel_buffer BINDING 0", "line 10, column 15", "has no texel format"),
    ("BIND BUFFER buf AS storage_texel_buffer DESCRIPTOR_SET 1", "line 10, column 22", "needs BINDING"),
    ("BIND BUFFER buf AS storage_texel_buffer BINDING 0 BASE_MIP_LEVEL 0", "line 10, column 53",
     "expected DESCRIPTOR_SET or BINDING"),
])
def test_bad_texel_buffer_bind_names_line_and_column(bind, where, words):
    text = IMG.replace("SAMPLER smp\n", "BUFFER v3 DATA_TYPE vec3<float> SIZE 2 FILL 0\n")
    message = error_of(text + f"PIPELINE compute p\n  ATTACH s\n  {bind}\nEND\n")
    assert f"t.amber: {where}: " in message and words in message


def test_texel_buffers_become_bindings_with_their_format(tmp_path):
    text = SHADER + """BUFFER f FORMAT R16G16_SINT DATA 1 2 END
BUFFER d DATA_TYPE vec4<float> SIZE 2 FILL 0
PIPELINE compute p
  ATTACH s
  BIND BUFFER f AS uniform_texel_buffer DESCRIPTOR_SET 0 BINDING 0
  BIND BUFFER d AS storage_texel_buffer DESCRIPTOR_SET 0 BINDING 1
END
RUN p 1 1 1
"""
    script = parse_amber(text, tmp_path / "t.amber")
    scenario = json.loads(write_scenarios(script, tmp_path, lambda s, e: b"")[0].scenario.read_text())
    bindings = scenario["commands"][0]["dispatch_compute"]["bindings"]
    assert [(b["descriptor_type"], b["texel_format"]) for b in bindings] == [
        ("VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER", "VK_FORMAT_R16G16_SINT"),
        ("VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER", "VK_FORMAT_R32G32B32A32_SFLOAT")]


@pytest.mark.parametrize("probe, where, words", [
    ("EXPECT img IDX 3 0 SIZE 2 1 EQ_RGBA 0 0 0 0", "line 8, column 1", "lie outside image 'img' (4x2)"),
    ("EXPECT img IDX 0 0 EQ_RGBA 0 0 0 256", "line 8, column 34", "expected a value from 0 to 255"),
    ("EXPECT img IDX 0 0 EQ_RGB 0 0", "line 8, column 31", "expected a value from 0 to 255"),
    ("EXPECT buf IDX 0 0 EQ_RGB 0 0 0", "line 8, column 8", "is a BUFFER, not an IMAGE"),
    ("EXPECT img IDX 0 0 TOLERANCE 1 2 EQ_RGB 0 0 0", "line 8, column 1", "TOLERANCE of a pixel probe takes 1 or 4"),
])
def test_bad_pixel_probe_names_line_and_column(probe, where, words):
    message = error_of(IMG + probe + "\n")
    assert f"t.amber: {where}: " in message and words in message


def test_pixel_probe_checks_every_texel_of_the_rectangle():
    script = parse_amber(IMG + "EXPECT img IDX 1 0 SIZE 2 2 EQ_RGBA 255 0 0 128\n", Path("t.amber"))
    checks = checks_of(script, [c for c in script.commands])
    texels = np.zeros((2, 4, 4), np.uint8)
    texels[:, 1:3] = (255, 0, 0, 128)
    assert check_all(checks, {"img": texels.tobytes()}).ok
    texels[1, 2] = (255, 0, 0, 129)  # one step of 1/255 is beyond Amber's 0.002
    result = check_all(checks, {"img": texels.tobytes()})
    assert not result.ok and result.outputs[0].failed == 1
    assert result.outputs[0].first[0].index == (2, 1)


def test_images_and_samplers_become_scenario_images(tmp_path):
    text = SHADER + """IMAGE img DATA_TYPE float DIM_3D WIDTH 2 HEIGHT 2 DEPTH 2 FILL 1.5
IMAGE ms FORMAT R32_UINT DIM_2D WIDTH 2 HEIGHT 2 SAMPLES 4
SAMPLER smp MAG_FILTER linear ADDRESS_MODE_U clamp_to_border COMPARE on COMPARE_OP less
PIPELINE compute p
  ATTACH s
  BIND BUFFER img AS combined_image_sampler SAMPLER smp DESCRIPTOR_SET 0 BINDING 0
  BIND BUFFER ms AS storage_image DESCRIPTOR_SET 0 BINDING 1
  BIND SAMPLER smp DESCRIPTOR_SET 1 BINDING 0
END
RUN p 1 1 1
"""
    script = parse_amber(text, tmp_path / "t.amber")
    scenario = json.loads(write_scenarios(script, tmp_path, lambda s, e: b"")[0].scenario.read_text())
    img, ms, holder = (r["image"] for r in scenario["resources"] if "image" in r)
    assert (img["image_type"], img["dims"], img["depth"], img["shader_access"]) == ("3D", [2, 2], 2, "readonly")
    assert (img["mag_filter"], img["address_modes"], img["compare_op"]) == ("LINEAR", ["CLAMP_BORDER", "REPEAT",
                                                                                      "REPEAT"], "LESS")
    assert np.load(tmp_path / img["src"]).shape == (1, 4, 2, 1)
    assert ms["samples"] == 4 and "src" not in ms and "dst" not in ms and ms["shader_access"] == "image_read"
    assert holder["uid"] == "sampler.smp"
    bindings = scenario["commands"][0]["dispatch_compute"]["bindings"]
    assert [b["descriptor_type"] for b in bindings] == ["VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER",
                                                        "VK_DESCRIPTOR_TYPE_STORAGE_IMAGE", "VK_DESCRIPTOR_TYPE_SAMPLER"]


def _png_script(name: str) -> str:
    return SHADER + f"IMAGE img FORMAT R8G8B8A8_UNORM DIM_2D WIDTH 2 HEIGHT 1 FILE PNG {name}\n"


def test_png_image_is_read_beside_the_script(tmp_path):
    (tmp_path / "a.png").write_bytes(png.encode(bytes(range(8)), 2, 1))
    script = parse_amber(_png_script("a.png"), tmp_path / "t.amber")
    assert script.buffers["img"].values == list(range(8))


def test_bad_png_files_name_the_script_line_and_the_png(tmp_path):
    good = png.encode(bytes(range(8)), 2, 1)
    (tmp_path / "corrupt.png").write_bytes(good[:-20] + b"\0" * 20)
    (tmp_path / "wide.png").write_bytes(png.encode(bytes(16), 4, 1))
    os.mkfifo(tmp_path / "fifo.png")
    (tmp_path / "link.png").symlink_to("/etc/hostname")
    outside = tmp_path.parent / "outside.png"
    outside.write_bytes(good)
    cases = {"corrupt.png": "corrupt.png", "wide.png": "PNG image is 4x1", "fifo.png": "is not a regular file",
             "link.png": "lies outside the script's folder", "../outside.png": "lies outside the script's folder",
             "missing.png": "cannot read", "a\0b.png": "NUL"}
    for name, words in cases.items():
        message = error_of(_png_script(name), tmp_path / "t.amber")
        assert "t.amber: line 5, column 66: " in message and words in message, (name, message)
    message = error_of(SHADER + "IMAGE img FORMAT R32_UINT DIM_2D WIDTH 2 HEIGHT 1 FILE PNG wide.png\n",
                       tmp_path / "t.amber")
    assert "line 5, column 60" in message and "must be a 2D R8G8B8A8 image" in message


def _scenario_with_image(tmp_path: Path, **fields: object) -> Path:
    from helpers.scenarios import vector_add, write

    path, doc = vector_add(tmp_path)
    doc["resources"].append({"image": {"uid": "im", "dims": [4, 4], "format": "VK_FORMAT_R32_UINT",
                                       "shader_access": "image_read", **fields}})
    write(path, doc)
    return path


@pytest.mark.parametrize("fields, pointer, words", [
    ({"samples": 3}, "/image/samples", "expected a power of two"),
    ({"samples": 128}, "/image/samples", "<= 64"),
    ({"samples": 4, "mips": 2}, "/image/samples", "it has mip levels"),
    ({"samples": 4, "image_type": "3D"}, "/image/samples", "it is not 2D"),
    ({"samples": 4, "dst": "o.npy"}, "/image/samples", "it has a dst"),
    ({"depth": 2}, "/image/depth", "depth 2 needs image_type 3D"),
    ({"image_type": "1D"}, "/image/dims", "a 1D image has height 1"),
    ({"image_type": "3D", "dims": [1, 4, 4, 1]}, "/image/image_type", "takes dims [width, height]"),
    ({"address_modes": ["REPEAT", "REPEAT", "REPEAT"], "border_address_mode": "REPEAT"}, "/image/address_modes",
     "not both"),
    ({"address_modes": ["REPEAT", "REPEAT"]}, "/image/address_modes", "exactly 3 entries"),
    ({"min_lod": 2, "max_lod": 1}, "/image/max_lod", "below min_lod"),
    ({"compare_op": "SOMETIMES"}, "/image/compare_op", "expected one of"),
    ({"image_type": "4D"}, "/image/image_type", "expected one of"),
])
def test_scenario_reader_refuses_image_extensions_that_contradict(tmp_path, fields, pointer, words):
    from kernellab.formats.scenario import load_scenario

    with pytest.raises(InputError) as info:
        load_scenario(_scenario_with_image(tmp_path, **fields))
    message = str(info.value)
    assert pointer in message and words in message, message


def test_scenario_reader_takes_image_extensions(tmp_path):
    from kernellab import model as m
    from kernellab.formats.scenario import load_scenario

    scenario, _ = load_scenario(_scenario_with_image(tmp_path, image_type="3D", depth=2, address_modes=[
        "CLAMP_EDGE", "REPEAT", "MIRROR_CLAMP_EDGE"], min_lod=0.5, max_lod=2, compare_op="LESS",
        unnormalized_coordinates=True))
    im = scenario.by_uid["im"]
    assert isinstance(im, m.Image)
    assert (im.image_type, im.depth, im.samples, im.address_modes) == ("3D", 2, 1, ["CLAMP_EDGE", "REPEAT",
                                                                                     "MIRROR_CLAMP_EDGE"])
    assert (im.min_lod, im.max_lod, im.compare_op, im.unnormalized_coordinates) == (0.5, 2, "LESS", True)


def test_a_pixel_probe_survives_the_sidecar():
    from kernellab.suite.expectations import PixelProbe, parse_checks

    script = parse_amber(IMG + "EXPECT img IDX 1 0 SIZE 2 2 TOLERANCE 1 2 3 4% EQ_RGBA 255 0 0 128\n", Path("t.amber"))
    (probe,) = checks_of(script, list(script.commands))
    assert isinstance(probe, PixelProbe)
    assert probe.tolerances == ((1.0, False), (2.0, False), (3.0, False), (4.0, True))
    assert parse_checks([probe.to_json()], "t.json") == [probe]


def test_image_file_binary_and_text_fill_the_texels(tmp_path):
    (tmp_path / "t.bin").write_bytes(np.array([1.5, -2.0, 3.0], np.float32).tobytes())
    (tmp_path / "t.txt").write_text("7 8\n9\n")
    script = parse_amber(SHADER + "IMAGE a DATA_TYPE float DIM_1D WIDTH 4 FILE BINARY t.bin\n"
                                  "IMAGE b DATA_TYPE int32 DIM_1D WIDTH 3 FILE TEXT t.txt\n", tmp_path / "t.amber")
    assert script.buffers["a"].values == [1.5, -2.0, 3.0, 0]
    assert script.buffers["b"].values == [7, 8, 9]
    (tmp_path / "t.txt").write_text("7 8\n9 oops\n10\n")
    message = error_of(SHADER + "IMAGE b DATA_TYPE int32 DIM_1D WIDTH 4 FILE TEXT t.txt\n", tmp_path / "t.amber")
    assert "t.txt: line 2, column 3: expected an integer (int32), got 'oops'" in message


@pytest.mark.parametrize("binding, pointer, words", [
    ({"descriptor_type": "VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER"}, "/bindings/0/texel_format", "needs texel_format"),
    ({"texel_format": "VK_FORMAT_R32_SFLOAT"}, "/bindings/0/texel_format", "goes with a texel buffer"),
    ({"descriptor_type": "VK_DESCRIPTOR_TYPE_SAMPLER"}, "/bindings/0/descriptor_type", "binds an image, not a buffer"),
    ({"descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER", "texel_format": "VK_FORMAT_R32_SFLOAT",
      "resource_ref": "im"}, "/bindings/0/descriptor_type", "binds a buffer, not a image"),
    ({"texel_format": "VK_FORMAT_NOPE", "descriptor_type": "VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER"},
     "/bindings/0/texel_format", "VK_FORMAT_NOPE"),
])
def test_scenario_reader_checks_texel_buffer_bindings(tmp_path, binding, pointer, words):
    from helpers.scenarios import write
    from kernellab.formats.scenario import load_scenario

    path = _scenario_with_image(tmp_path)
    doc = json.loads(path.read_text())
    doc["commands"][0]["dispatch_compute"]["bindings"][0].update(binding)
    write(path, doc)
    with pytest.raises(InputError) as info:
        load_scenario(path)
    assert pointer in str(info.value) and words in str(info.value), str(info.value)


def test_a_multisampled_image_needs_the_feature_and_the_sample_count():
    from kernellab.backends.vulkan_supported import Supported
    from kernellab.suite.amber import missing_for_images

    script = parse_amber(SHADER + "IMAGE ms FORMAT R32_UINT DIM_2D WIDTH 2 HEIGHT 2 SAMPLES 8\n"
                                  "IMAGE one FORMAT R32_UINT DIM_2D WIDTH 2 HEIGHT 2\n", Path("t.amber"))
    lavapipe = Supported(features={"shaderStorageImageMultisample": True}, limits={"storageImageSampleCounts": 0b101})
    assert missing_for_images(script, lavapipe) == [
        "storage images of 8 samples (storageImageSampleCounts: 1, 4) (IMAGE ms, line 5)"]
    assert missing_for_images(script, Supported(limits={"storageImageSampleCounts": 0xFF})) == [
        "shaderStorageImageMultisample (IMAGE ms, line 5)"]
    assert missing_for_images(script, Supported(features={"shaderStorageImageMultisample": True},
                                                limits={"storageImageSampleCounts": 0b1111})) == []


def test_a_sampler_as_opencl_bits_and_where_clspv_reads_them():
    from kernellab.formats.amber.clspv_layout import sampler_masks
    from kernellab.formats.amber.images import opencl_sampler_bits
    from kernellab.formats.amber.script import KernelArgument, Pipeline, Sampler

    # CLK_NORMALIZED_COORDS_TRUE | CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST, and unnormalized,
    # CLK_ADDRESS_REPEAT | CLK_FILTER_LINEAR
    assert opencl_sampler_bits(Sampler("a", 1, address_modes=("CLAMP_EDGE", "REPEAT", "REPEAT"))) == 0x13
    assert opencl_sampler_bits(Sampler("b", 1, mag_filter="LINEAR", normalized=False)) == 0x26
    layout = {0: KernelArgument("ArgumentSampledImage"), 1: KernelArgument("ArgumentSampler", 0, 1,
                                                                           sampler_mask_offset=8)}
    pipe = Pipeline("p", 3, entry="k")
    assert sampler_masks(pipe, b"\1\2", layout, {1: 0x26}, lambda line, msg: InputError([])) == \
        b"\1\2" + bytes(6) + b"\x26\0\0\0"
    with pytest.raises(InputError):
        sampler_masks(pipe, b"", layout, {}, lambda line, msg: InputError.at("t.amber", f"line {line}", msg))


def test_a_literal_sampler_s_bits_make_its_sampler():
    from kernellab.formats.amber.images import literal_sampler, opencl_sampler_bits

    s = literal_sampler(0x12)  # CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST, unnormalized
    assert (s.address_modes, s.mag_filter, s.normalized, s.max_lod) == (("CLAMP_EDGE",) * 3, "NEAREST", False, 0.0)
    for bits in (0x13, 0x17, 0x19, 0x25):
        assert opencl_sampler_bits(literal_sampler(bits)) == bits
    assert literal_sampler(0x10).address_modes[0] == "CLAMP_EDGE"  # CLK_ADDRESS_NONE
