"""PNG image files (kernellab.formats.png): RGBA8 round trip, each filter type, colour types,
and bad files refused with the file named -- truncated, bad CRC, wrong size, a decompression bomb."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from kernellab.errors import InputError
from kernellab.formats import imagefile, png
from kernellab.vkregistry import vkformat


def _chunk(ctype: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body))


def _png(width: int, height: int, filtered: bytes, color_type: int = 6, depth: int = 8, interlace: int = 0,
         extra: bytes = b"", idat: bytes | None = None) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, interlace)
    return (png.SIGNATURE + _chunk(b"IHDR", ihdr) + extra
            + _chunk(b"IDAT", zlib.compress(filtered) if idat is None else idat) + _chunk(b"IEND", b""))


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def _filter(rows: np.ndarray, kind: int | list[int], bpp: int) -> bytes:
    """Reference encoder for one filter type on every row, or one per row (PNG spec, section 9)."""
    out = bytearray()
    prior = [0] * rows.shape[1]
    kinds = kind if isinstance(kind, list) else [kind] * rows.shape[0]
    for row, kind in zip(rows.tolist(), kinds):
        out.append(kind)
        for i, x in enumerate(row):
            a = row[i - bpp] if i >= bpp else 0
            b = prior[i]
            c = prior[i - bpp] if i >= bpp else 0
            pred = {0: 0, 1: a, 2: b, 3: (a + b) // 2, 4: _paeth(a, b, c)}[kind]
            out.append((x - pred) & 0xFF)
        prior = row
    return bytes(out)


@pytest.fixture
def texels() -> np.ndarray:
    return np.random.default_rng(11).integers(0, 256, (5, 7 * 4), dtype=np.uint8)


def test_round_trip(texels: np.ndarray) -> None:
    data = png.encode(texels, 7, 5)
    assert data.startswith(png.SIGNATURE)
    assert png.decode(data, "a.png", 7, 5) == texels.tobytes()
    hdr = png.read_header(data, "a.png")
    assert (hdr.width, hdr.height, hdr.bit_depth, hdr.color_type, hdr.interlace) == (7, 5, 8, 6, 0)


def test_round_trip_smooth_image_uses_several_filters() -> None:
    y, x = np.mgrid[0:16, 0:16]
    img = np.stack([x * 16, y * 16, (x + y) * 8, np.full_like(x, 255)], axis=-1).astype(np.uint8)
    data = png.encode(img, 16, 16)
    raw = zlib.decompress(data[33 + 8:-12 - 4])
    kinds = {raw[r * (16 * 4 + 1)] for r in range(16)}
    assert len(kinds) > 1 and kinds <= {0, 1, 2, 3, 4}
    assert png.decode(data, "s.png", 16, 16) == img.tobytes()


@pytest.mark.parametrize("kind", range(5))
def test_each_filter_type(texels: np.ndarray, kind: int) -> None:
    data = _png(7, 5, _filter(texels, kind, 4))
    assert png.decode(data, "f.png", 7, 5) == texels.tobytes()


def test_filter_choice_minimises_signed_sum(texels: np.ndarray) -> None:
    raw = png.filter_rows(texels)
    stride = texels.shape[1] + 1
    for y in range(texels.shape[0]):
        costs = []
        for kind in range(5):
            row = _filter(texels[: y + 1], kind, 4)[-(stride - 1):]
            costs.append(sum(abs(b - 256 if b > 127 else b) for b in row))
        assert raw[y * stride] == costs.index(min(costs))


def test_grey_rgb_palette_and_transparency() -> None:
    grey = np.array([[0, 128, 255]], np.uint8)
    assert png.decode(_png(3, 1, _filter(grey, 1, 1), color_type=0), "g.png", 3, 1) == bytes(
        [0, 0, 0, 255, 128, 128, 128, 255, 255, 255, 255, 255])
    ga = np.array([[10, 20, 30, 40]], np.uint8)
    assert png.decode(_png(2, 1, _filter(ga, 0, 2), color_type=4), "ga.png", 2, 1) == bytes(
        [10, 10, 10, 20, 30, 30, 30, 40])
    rgb = np.array([[1, 2, 3, 4, 5, 6]], np.uint8)
    key = _chunk(b"tRNS", struct.pack(">3H", 4, 5, 6))
    assert png.decode(_png(2, 1, _filter(rgb, 4, 3), color_type=2, extra=key), "rgb.png", 2, 1) == bytes(
        [1, 2, 3, 255, 4, 5, 6, 0])
    pal = _chunk(b"PLTE", bytes([9, 8, 7, 6, 5, 4])) + _chunk(b"tRNS", bytes([100]))
    idx = np.array([[1, 0]], np.uint8)
    assert png.decode(_png(2, 1, _filter(idx, 0, 1), color_type=3, extra=pal), "p.png", 2, 1) == bytes(
        [6, 5, 4, 255, 9, 8, 7, 100])


def _error(data: bytes, width: int = 7, height: int = 5) -> str:
    with pytest.raises(InputError) as exc:
        png.decode(data, "bad.png", width, height)
    text = str(exc.value)
    assert "bad.png" in text
    return text


def test_truncated(texels: np.ndarray) -> None:
    data = png.encode(texels, 7, 5)
    assert "truncated" in _error(data[:len(data) - 20])
    assert "truncated" in _error(data[:40])
    short = zlib.compress(_filter(texels, 0, 4)[:-10])
    assert "truncated" in _error(_png(7, 5, b"", idat=short))


def test_bad_crc(texels: np.ndarray) -> None:
    data = bytearray(png.encode(texels, 7, 5))
    data[45] ^= 0xFF  # inside the IDAT body
    assert "CRC" in _error(bytes(data))


def test_wrong_size(texels: np.ndarray) -> None:
    assert "7x5" in _error(png.encode(texels, 7, 5), 5, 7)


def test_not_png_interlaced_16_bit_bad_filter(texels: np.ndarray) -> None:
    assert "signature" in _error(b"not a png")
    assert "interlaced" in _error(_png(7, 5, _filter(texels, 0, 4), interlace=1))
    assert "bit depth 16" in _error(_png(7, 5, _filter(texels, 0, 4), depth=16))
    assert "filter type 7" in _error(_png(7, 5, b"\x07" + _filter(texels, 0, 4)[1:]))


def test_decompression_bomb_is_capped(texels: np.ndarray) -> None:
    # 64 MiB of zeros in a ~64 KiB stream, for a 7x5 image: refused after inflating 145 bytes
    bomb = zlib.compress(bytes(64 << 20), 9)
    assert len(bomb) < 100_000
    assert "more than the 145 bytes" in _error(_png(7, 5, b"", idat=bomb))
    # a huge declared size is refused from the header, before any inflating
    assert "65536x65536" in _error(_png(65536, 65536, b"", idat=bomb))


def test_imagefile_dispatch(tmp_path: Path, texels: np.ndarray) -> None:
    fmt = vkformat.lookup(png.FORMAT)
    assert fmt is not None
    path = tmp_path / "pic.png"
    imagefile.save(path, fmt, 7, 5, texels.tobytes())
    data = imagefile.load(path, fmt, 7, 5)
    assert bytes(data.data) == texels.tobytes() and data.mip_levels == 1 and not data.warnings
    srgb = vkformat.lookup("VK_FORMAT_R8G8B8A8_SRGB")
    assert srgb is not None
    assert imagefile.load(path, srgb, 7, 5).warnings
    with pytest.raises(InputError, match="only VK_FORMAT_R8G8B8A8_UNORM"):
        imagefile.save(tmp_path / "srgb.png", srgb, 7, 5, texels.tobytes())
    r32 = vkformat.lookup("VK_FORMAT_R32G32_SFLOAT")
    assert r32 is not None
    with pytest.raises(InputError, match="pic.png"):
        imagefile.load(path, r32, 7, 5)


@pytest.mark.parametrize("color_type, channels", [(6, 4), (2, 3), (0, 1), (4, 2)])
@pytest.mark.parametrize("width, height", [(1, 1), (7, 5), (3, 40), (50, 2)])
def test_rows_of_mixed_filters_decode_as_the_reference_encoded_them(color_type, channels, width, height) -> None:
    """Average and Paeth rows are decoded a diagonal of pixels at a time: each pixel's left,
    upper and upper-left neighbours, of rows of any filter, are decoded before it."""
    rng = np.random.default_rng(width * height + color_type)
    pixels = rng.integers(0, 256, (height, width * channels), dtype=np.uint8)
    kinds = rng.integers(0, 5, height).tolist()
    data = _png(width, height, _filter(pixels, kinds, channels), color_type)
    rgba = np.frombuffer(png.decode(data, "a.png", width, height), np.uint8).reshape(height, width, 4)
    px = pixels.reshape(height, width, channels)
    assert (rgba[..., :3] == (px[..., :1] if channels < 3 else px[..., :3])).all()
