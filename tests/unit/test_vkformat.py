from __future__ import annotations

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.vkregistry import vkformat


def test_table_matches_registry():
    pytest.importorskip("vulkan_object", reason="pip vulkan-object (kernellab[ml]) is needed to re-derive the table")
    derived = vkformat.derive_from_registry()
    committed = vkformat._as_rows(vkformat.all_formats())
    assert committed == derived, "src/kernellab/data/vkformats.json is stale: run python -m kernellab.formats.vkformat"


def test_enum_values_match_vulkan_binding():
    vk = pytest.importorskip("vulkan")
    for fmt in vkformat.all_formats():
        if hasattr(vk, fmt.name):
            assert getattr(vk, fmt.name) == fmt.value, fmt.name


@pytest.mark.parametrize("name, dtype, channels, texel, dxgi", [
    ("VK_FORMAT_R8G8B8A8_UNORM", "uint8", 4, 4, 28),
    ("VK_FORMAT_R8G8B8A8_SRGB", "uint8", 4, 4, 29),
    ("VK_FORMAT_B8G8R8A8_UNORM", "uint8", 4, 4, 87),
    ("VK_FORMAT_R16G16_SFLOAT", "float16", 2, 4, 34),
    ("VK_FORMAT_R32_UINT", "uint32", 1, 4, 42),
    ("VK_FORMAT_R8_SNORM", "int8", 1, 1, 63),
    ("VK_FORMAT_R32G32B32_SFLOAT", "float32", 3, 12, 6),
    ("VK_FORMAT_R16G16B16A16_SINT", "int16", 4, 8, 14),
    ("VK_FORMAT_B10G11R11_UFLOAT_PACK32", "uint32", 1, 4, 26),
    ("VK_FORMAT_R64_SINT", "int64", 1, 8, None),
])
def test_known_formats(name, dtype, channels, texel, dxgi):
    f = vkformat.lookup(name)
    assert f is not None
    assert f.dtype == np.dtype(dtype)
    assert (f.channels, f.texel_size, f.dxgi) == (channels, texel, dxgi)
    assert vkformat.by_value(f.value) is f


def test_flags():
    srgb = vkformat.lookup("VK_FORMAT_R8G8B8A8_SRGB")
    assert srgb.srgb and srgb.normalized and not srgb.is_integer
    assert vkformat.lookup("VK_FORMAT_R8_UINT").is_integer
    assert not vkformat.lookup("VK_FORMAT_R8_UINT").normalized
    assert vkformat.lookup("VK_FORMAT_R16_SNORM").normalized
    assert vkformat.lookup("VK_FORMAT_R32_SFLOAT").is_float


def test_arm_element_size_rounds_to_power_of_two():
    assert vkformat.lookup("VK_FORMAT_R8G8B8_UNORM").element_size == 4
    assert vkformat.lookup("VK_FORMAT_R32G32B32_SFLOAT").element_size == 16
    assert vkformat.lookup("VK_FORMAT_R16G16B16A16_SFLOAT").element_size == 8


def test_tensor_formats_and_arm_npy_descr():
    want = {
        "VK_FORMAT_R8_BOOL_ARM": "|b1", "VK_FORMAT_R8_UINT": "|u1", "VK_FORMAT_R8_SINT": "|i1",
        "VK_FORMAT_R16_UINT": "<u2", "VK_FORMAT_R16_SINT": "<i2", "VK_FORMAT_R32_UINT": "<u4",
        "VK_FORMAT_R32_SINT": "<i4", "VK_FORMAT_R64_SINT": "<i8", "VK_FORMAT_R16_SFLOAT": "<f2",
        "VK_FORMAT_R32_SFLOAT": "<f4",
        "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM": "<V2",
        "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM": "<V1",
        "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM": "|u1",
    }
    got = {f.name: f.npy_descr for f in vkformat.tensor_formats()}
    assert got == want
    assert all(f.tensor for f in vkformat.tensor_formats())
    assert not vkformat.lookup("VK_FORMAT_R8G8B8A8_UNORM").tensor
    bf16 = vkformat.lookup("VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM")
    assert bf16.encoding == "BFLOAT16" and bf16.dtype == np.dtype("<u2")
    assert bf16.npy_dtype_ok(np.dtype("V2")) and bf16.npy_dtype_ok(np.dtype("<u2"))
    assert not bf16.npy_dtype_ok(np.dtype("<f4"))
    assert vkformat.lookup("VK_FORMAT_R8_BOOL_ARM").dtype == np.dtype(bool)


def test_every_dxgi_code_maps_back():
    for f in vkformat.image_formats():
        assert vkformat.by_dxgi(f.dxgi) is f


def test_require_errors_name_file_and_place():
    with pytest.raises(InputError) as e:
        vkformat.require("VK_FORMAT_R8G8B8A8_UNORN", "s.json", ["resources", 0, "image", "format"])
    msg = str(e.value)
    assert msg.startswith("s.json: /resources/0/image/format: ")
    assert "did you mean VK_FORMAT_R8G8B8A8_UNORM" in msg
    with pytest.raises(InputError, match="not a tensor format"):
        vkformat.require("VK_FORMAT_R8G8B8A8_UNORM", "s.json", "/resources/1/tensor/format", tensor=True)
    with pytest.raises(InputError, match="must be a string"):
        vkformat.require(7, "s.json", "/x")
    assert vkformat.require("VK_FORMAT_R32_SINT", "s.json", "/x", tensor=True).name == "VK_FORMAT_R32_SINT"
