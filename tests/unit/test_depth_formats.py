"""Depth/stencil formats (issue 11, item 3): derived from vk.xml, read as Arm's runner reads them."""
from __future__ import annotations

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats import dds, imagefile
from kernellab.vkregistry import vkformat


@pytest.mark.parametrize("name, aspect, stand_in, dxgi", [
    ("VK_FORMAT_D32_SFLOAT_S8_UINT", "depth_stencil", "VK_FORMAT_R32_SFLOAT", 20),
    ("VK_FORMAT_D32_SFLOAT", "depth", "VK_FORMAT_R32_SFLOAT", 40),
    ("VK_FORMAT_D16_UNORM", "depth", "VK_FORMAT_R16_UNORM", None),
    ("VK_FORMAT_S8_UINT", "stencil", "VK_FORMAT_R8_UINT", None),
    ("VK_FORMAT_D24_UNORM_S8_UINT", "depth_stencil", None, 45),
    ("VK_FORMAT_X8_D24_UNORM_PACK32", "depth", None, None),
])
def test_depth_stencil_rows(name, aspect, stand_in, dxgi):
    fmt = vkformat.lookup(name)
    assert fmt is not None and (fmt.aspect, fmt.stand_in, fmt.dxgi) == (aspect, stand_in, dxgi)
    assert (vkformat.image_format_problem(name) is None) == (stand_in is not None)
    assert vkformat.device_format_name(name) == (stand_in or name)


def test_d32s8_file_texels_are_8_bytes():
    fmt = vkformat.lookup("VK_FORMAT_D32_SFLOAT_S8_UINT")
    assert fmt.texel_size == 5 and fmt.file_texel_size == 8  # vk.xml's block size; DXGI's 64-bit texel
    assert vkformat.by_dxgi(20) is fmt


@pytest.mark.parametrize("stencil", [0, 3])
def test_d32s8_dds_keeps_depth_and_drops_stencil(tmp_path, stencil):
    fmt = vkformat.lookup("VK_FORMAT_D32_SFLOAT_S8_UINT")
    depth = np.linspace(0, 1, 12, dtype=np.float32)
    texels = np.zeros((12, 2), np.uint32)
    texels[:, 0] = depth.view(np.uint32)
    texels[5, 1] = stencil
    dds.save(tmp_path / "d.dds", fmt, 4, 3, [texels.tobytes()])
    got = imagefile.load(tmp_path / "d.dds", fmt, 4, 3)
    assert np.array_equal(np.frombuffer(got.data, np.float32), depth)
    assert any("ignoring stencil data" in w.message for w in got.warnings) == bool(stencil)


def test_depth_npy_is_the_stand_in(tmp_path):
    fmt = vkformat.lookup("VK_FORMAT_D16_UNORM")
    a = np.arange(6, dtype=np.uint16).reshape(1, 2, 3, 1)
    np.save(tmp_path / "d.npy", a)
    assert bytes(imagefile.load(tmp_path / "d.npy", fmt, 3, 2).data) == a.tobytes()


def test_24_bit_depth_is_refused(tmp_path):
    fmt = vkformat.lookup("VK_FORMAT_D24_UNORM_S8_UINT")
    dds.save(tmp_path / "d.dds", fmt, 2, 2, [bytes(16)])
    with pytest.raises(InputError, match="24-bit depth"):
        imagefile.load(tmp_path / "d.dds", fmt, 2, 2)
