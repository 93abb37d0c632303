from __future__ import annotations

import io
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats import dds, npy_arm
from kernellab.vkregistry import vkformat

IMAGE_FORMATS = vkformat.image_formats()

#: The DXGI formats the dds_utils of Arm's pip package (built without experimental formats) writes.
DDS_UTILS_FORMATS = [
    "DXGI_FORMAT_R16_FLOAT", "DXGI_FORMAT_R16G16_FLOAT", "DXGI_FORMAT_R8G8_SINT", "DXGI_FORMAT_R32_FLOAT",
    "DXGI_FORMAT_R16G16B16A16_FLOAT", "DXGI_FORMAT_R11G11B10_FLOAT", "DXGI_FORMAT_R8G8B8A8_SINT",
    "DXGI_FORMAT_R32G32B32A32_FLOAT", "DXGI_FORMAT_R32_UINT", "DXGI_FORMAT_B8G8R8A8_UNORM",
    "DXGI_FORMAT_R8G8B8A8_UNORM", "DXGI_FORMAT_R16_UINT",
]


def random_level(fmt: vkformat.VkFormatInfo, w: int, h: int, rng: np.random.Generator) -> np.ndarray:
    raw = rng.integers(0, 256, size=w * h * fmt.texel_size, dtype=np.uint8)
    return raw.view(fmt.dtype).reshape(h, w, fmt.channels)


def dds_utils() -> Path:
    import scenario_runner

    path = Path(scenario_runner.__file__).parent / "binaries" / "bin" / "dds_utils"
    assert path.is_file(), "Arm's dds_utils is missing: pip install ai-ml-sdk-scenario-runner"
    return path


@pytest.mark.parametrize("fmt", IMAGE_FORMATS, ids=lambda f: f.name)
def test_round_trip_every_format(fmt, tmp_path):
    rng = np.random.default_rng(fmt.value)
    w, h = 7, 5
    levels = [random_level(fmt, *dds.mip_extent(w, h, i), rng) for i in range(dds.max_mip_levels(w, h))]
    path = tmp_path / "img.dds"
    dds.save(path, fmt, w, h, levels)
    assert path.stat().st_size == dds.DATA_OFFSET + dds.chain_size(fmt, w, h, len(levels))
    img = dds.read(path)
    assert img.format is fmt and (img.width, img.height, img.mip_levels) == (w, h, 3)
    for got, want in zip(img.levels, levels):
        assert got.dtype == fmt.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    # a single level, from raw bytes
    one = dds.encode(fmt, w, h, [levels[0].tobytes()])
    again = dds.parse(one, "mem.dds")
    assert again.mip_levels == 1 and again.levels[0].tobytes() == levels[0].tobytes()


def test_mip_extents():
    assert [dds.mip_extent(16, 4, i) for i in range(5)] == [(16, 4), (8, 2), (4, 1), (2, 1), (1, 1)]
    assert dds.max_mip_levels(16, 4) == 5
    assert dds.max_mip_levels(1, 1) == 1
    fmt = vkformat.lookup("VK_FORMAT_R8G8B8A8_UNORM")
    assert dds.chain_size(fmt, 4, 4, 3) == 4 * (16 + 4 + 1)


def test_header_fields_single_and_mipped():
    fmt = vkformat.lookup("VK_FORMAT_R16G16B16A16_SFLOAT")
    hdr = dds.header(fmt, 10, 6)
    words = struct.unpack("<37I", hdr)
    assert hdr[:4] == b"DDS " and len(hdr) == 148
    assert words[1:8] == (124, 0x100F, 6, 10, 80, 1, 1)
    assert words[19:22] == (32, 4, 0x30315844)
    assert words[27] == 0x1000
    assert words[32:37] == (10, 3, 0, 1, 0)
    mipped = struct.unpack("<37I", dds.header(fmt, 10, 6, 3))
    assert mipped[2] == 0x100F | 0x20000 and mipped[7] == 3 and mipped[27] == 0x401008


@pytest.mark.parametrize("dxgi_name", DDS_UTILS_FORMATS)
def test_header_bytes_match_arm_dds_utils(dxgi_name, tmp_path):
    fmt = vkformat.by_dxgi(vkformat.DXGI_FORMATS[dxgi_name])
    out = tmp_path / "arm.dds"
    subprocess.run([str(dds_utils()), "--action", "generate", "--height", "3", "--width", "5",
                    "--element-size", str(fmt.element_size), "--element-dtype", "int", "--format", dxgi_name,
                    "--output", str(out), "--header-only"], check=True, capture_output=True)
    assert out.read_bytes() == dds.header(fmt, 5, 3)


@pytest.mark.parametrize("dxgi_name", ["DXGI_FORMAT_R8G8B8A8_UNORM", "DXGI_FORMAT_R16G16B16A16_FLOAT",
                                       "DXGI_FORMAT_R32_UINT"])
def test_arm_reads_our_file_and_writes_the_same_npy(dxgi_name, tmp_path):
    """Arm's dds_utils converts our DDS to .npy; the result equals our Arm-style .npy byte for byte."""
    fmt = vkformat.by_dxgi(vkformat.DXGI_FORMATS[dxgi_name])
    rng = np.random.default_rng(3)
    w, h = 6, 4
    level = random_level(fmt, w, h, rng)
    ours = tmp_path / "ours.dds"
    dds.save(ours, fmt, w, h, [level])
    arm_npy = tmp_path / "arm.npy"
    item = fmt.dtype.itemsize
    subprocess.run([str(dds_utils()), "--action", "to_npy", "--input", str(ours), "--output", str(arm_npy),
                    "--element-size", str(item)], check=True, capture_output=True)
    buf = io.BytesIO()
    npy_arm.write(buf, level.tobytes(), (1, h, w, fmt.texel_size // item), f"{'|' if item == 1 else '<'}i{item}")
    assert arm_npy.read_bytes() == buf.getvalue()


def test_we_read_arm_generated_file(tmp_path):
    out = tmp_path / "arm.dds"
    subprocess.run([str(dds_utils()), "--action", "generate", "--height", "4", "--width", "3",
                    "--element-size", "8", "--element-dtype", "fp16", "--format",
                    "DXGI_FORMAT_R16G16B16A16_FLOAT", "--output", str(out)], check=True, capture_output=True)
    img = dds.read(out)
    assert img.format.name == "VK_FORMAT_R16G16B16A16_SFLOAT"
    assert (img.width, img.height) == (3, 4) and img.levels[0].shape == (4, 3, 4)
    assert img.levels[0].tobytes() == out.read_bytes()[dds.DATA_OFFSET:]


def _corrupt(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + struct.pack("<I", value) + data[offset + 4:]


@pytest.fixture
def good() -> bytes:
    fmt = vkformat.lookup("VK_FORMAT_R8G8B8A8_UNORM")
    return dds.encode(fmt, 4, 2, [np.zeros((2, 4, 4), np.uint8)])


@pytest.mark.parametrize("offset, value, where, message", [
    (0, 0x12345678, "byte 0 (magic)", "not a DDS file"),
    (4, 100, "byte 4 (dwSize)", "must be 124"),
    (8, 0x1, "byte 8 (dwFlags)", "lack the required"),
    (84, 0x31545844, "byte 84 (ddspf.dwFourCC)", "only DDS files with the DX10 header"),
    (128, 71, "byte 128 (dxgiFormat)", "DXGI format 71 is not a supported DDS format"),
    (132, 4, "byte 132 (resourceDimension)", "only 2-D"),
    (136, 4, "byte 136 (miscFlag)", "cube-map"),
    (140, 6, "byte 140 (arraySize)", "texture arrays"),
    (28, 9, "byte 28 (dwMipMapCount)", "9 mip levels for a 4x2 image"),
])
def test_bad_headers_name_file_and_byte(good, offset, value, where, message):
    with pytest.raises(InputError) as e:
        dds.parse(_corrupt(good, offset, value), "in/pic.dds")
    problem = e.value.problems[0]
    assert problem.file == "in/pic.dds" and problem.where == where
    assert message in problem.message


def test_truncated_and_trailing_data(good):
    with pytest.raises(InputError, match="holds 31 bytes of texel data; 4x2 VK_FORMAT_R8G8B8A8_UNORM"):
        dds.parse(good[:-1], "t.dds")
    with pytest.raises(InputError, match="3 bytes follow the image data"):
        dds.parse(good + b"abc", "t.dds")
    with pytest.raises(InputError, match="ends inside the DDS header"):
        dds.parse(good[:40], "t.dds")


def test_dxgi_format_without_vulkan_match_is_named(good):
    # DXGI_FORMAT_R10G10B10A2_UNORM (24) is a real DXGI format kernellab does not map
    with pytest.raises(InputError, match="DXGI format 24 is not a supported DDS format"):
        dds.parse(_corrupt(good, 128, 24), "t.dds")
    named = _corrupt(good, 128, vkformat.DXGI_FORMATS["DXGI_FORMAT_R8G8B8A8_UNORM_SRGB"])
    assert dds.parse(named, "t.dds").format.name == "VK_FORMAT_R8G8B8A8_SRGB"


def test_write_rejects_wrong_level_data():
    fmt = vkformat.lookup("VK_FORMAT_R32_SFLOAT")
    with pytest.raises(ValueError, match="mip level 0 has 12 bytes"):
        dds.encode(fmt, 2, 2, [b"\0" * 12])
    with pytest.raises(ValueError, match="shaped"):
        dds.encode(fmt, 2, 2, [np.zeros((2, 3, 1), np.float32)])
    with pytest.raises(ValueError, match="no DDS"):
        dds.encode(vkformat.lookup("VK_FORMAT_R64_SINT"), 1, 1, [b"\0" * 8])
    with pytest.raises(ValueError, match="mip levels"):
        dds.header(fmt, 2, 2, 3)


def test_read_missing_file(tmp_path):
    with pytest.raises(InputError, match="cannot read DDS file"):
        dds.read(tmp_path / "nope.dds")
