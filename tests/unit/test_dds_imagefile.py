"""Image src/dst files (DDS and .npy) and the Arm-style .npy writer."""
from __future__ import annotations

import io

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats import dds, imagefile, npy_arm
from kernellab.vkregistry import vkformat

RGBA8 = vkformat.lookup("VK_FORMAT_R8G8B8A8_UNORM")
R32F = vkformat.lookup("VK_FORMAT_R32_SFLOAT")


def test_arm_npy_header_layout():
    h = npy_arm.header((1, 3, 5, 4), "|i1")
    assert h == (b"\x93NUMPY\x01\x00F\x00{'descr': '|i1','fortran_order': False,'shape': (1, 3, 5, 4)}"
                 + b" " * 8 + b"\n")
    assert len(h) % 16 == 0
    one_d = npy_arm.header((7,), "<f4")
    assert one_d.rstrip(b" \n").endswith(b"'shape': (7,)}") and len(one_d) % 16 == 0
    assert b"'shape': ()}" in npy_arm.header((), "<i4")


@pytest.mark.parametrize("shape, dtype", [((4,), "<i4"), ((2, 3), "|u1"), ((1, 2, 2, 4), "<f2"), ((), "<f4"),
                                          ((3, 1), "|b1")])
def test_numpy_reads_arm_npy(shape, dtype):
    arr = (np.arange(int(np.prod(shape))) % 2).astype(dtype).reshape(shape)
    buf = io.BytesIO()
    npy_arm.write(buf, arr, arr.shape, npy_arm.descr_of(arr.dtype))
    back = np.load(io.BytesIO(buf.getvalue()))
    assert back.dtype == arr.dtype and back.shape == arr.shape and np.array_equal(back, arr)


def test_arm_npy_special_descrs_load_as_void():
    buf = io.BytesIO()
    npy_arm.write(buf, b"\x01\x02\x03\x04", (2,), "<V2")
    back = np.load(io.BytesIO(buf.getvalue()))
    assert back.dtype == np.dtype("V2") and back.tobytes() == b"\x01\x02\x03\x04"


def test_arm_npy_size_mismatch():
    with pytest.raises(ValueError, match="needs 8"):
        npy_arm.write(io.BytesIO(), b"\0" * 4, (2,), "<i4")


def test_npy_image_round_trip(tmp_path):
    w, h = 5, 3
    img = np.arange(h * w * 4, dtype=np.uint8).reshape(1, h, w, 4)
    path = tmp_path / "img.npy"
    imagefile.save(path, RGBA8, w, h, img[0].tobytes())
    assert path.read_bytes()[:10] == b"\x93NUMPY\x01\x00F\x00"
    loaded = imagefile.load(path, RGBA8, w, h)
    assert loaded.mip_levels == 1 and bytes(loaded.data) == img.tobytes()


def test_dds_image_load_with_mips(tmp_path):
    w, h = 8, 4
    levels = [np.full((*dds.mip_extent(w, h, i)[::-1], 4), i, np.uint8) for i in range(3)]
    path = tmp_path / "img.dds"
    dds.save(path, RGBA8, w, h, levels)
    all3 = imagefile.load(path, RGBA8, w, h, mips=4)
    assert all3.mip_levels == 3 and bytes(all3.data) == b"".join(lv.tobytes() for lv in levels)
    two = imagefile.load(path, RGBA8, w, h, mips=2)
    assert two.mip_levels == 2 and bytes(two.data) == levels[0].tobytes() + levels[1].tobytes()
    assert two.warnings == ()


def test_dds_image_checks(tmp_path):
    path = tmp_path / "img.dds"
    dds.save(path, RGBA8, 4, 2, [np.zeros((2, 4, 4), np.uint8)])
    with pytest.raises(InputError, match=r"DDS image is 4x2 \(width x height\) but the image resource is 2x4"):
        imagefile.load(path, RGBA8, 2, 4)
    with pytest.raises(InputError, match="has 4-byte texels, the image resource's VK_FORMAT_R16G16B16A16_SFLOAT has 8"):
        imagefile.load(path, vkformat.lookup("VK_FORMAT_R16G16B16A16_SFLOAT"), 4, 2)
    srgb = imagefile.load(path, vkformat.lookup("VK_FORMAT_R8G8B8A8_SRGB"), 4, 2)
    assert srgb.warnings and srgb.warnings[0].warning and "used as VK_FORMAT_R8G8B8A8_SRGB" in srgb.warnings[0].message


def test_npy_image_checks(tmp_path):
    path = tmp_path / "img.npy"
    np.save(path, np.zeros((1, 2, 4, 4), np.uint8))
    with pytest.raises(InputError, match=r"shaped \[1, 2, 4, 4\]; a 2x4 .* needs \[1, height, width, channels\] = \[1, 4, 2, 4\]"):
        imagefile.load(path, RGBA8, 2, 4)
    np.save(path, np.zeros((1, 2, 4, 1), np.int32))
    with pytest.raises(InputError, match="dtype <i4; VK_FORMAT_R32_SFLOAT needs <f4"):
        imagefile.load(path, R32F, 4, 2)
    np.save(path, np.zeros((1, 2, 4, 4), np.int8))  # same bits as uint8: accepted like Arm does
    assert imagefile.load(path, RGBA8, 4, 2).mip_levels == 1
    (tmp_path / "bad.npy").write_bytes(b"nonsense")
    with pytest.raises(InputError, match="cannot read .npy image"):
        imagefile.load(tmp_path / "bad.npy", RGBA8, 4, 2)


def test_extension_checks(tmp_path):
    # issue 11: PNG is read and written as Arm's runner does, so a .bmp is the refused example now
    with pytest.raises(InputError, match="must end in .dds, .npy or .png"):
        imagefile.check_extension("x.bmp", "s.json", ["resources", 0, "image", "dst"])
    imagefile.check_extension("x.DDS", "s.json", "/resources/0/image/dst")
    with pytest.raises(ValueError):
        imagefile.save(tmp_path / "x.bmp", RGBA8, 1, 1, b"\0" * 4)


def test_extent_from_dims():
    assert imagefile.extent_from_dims([1, 640, 480, 1]) == (640, 480)
    with pytest.raises(ValueError):
        imagefile.extent_from_dims([4, 4])
