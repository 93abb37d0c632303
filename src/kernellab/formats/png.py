"""PNG image files as Arm's Scenario Runner uses them: read into, and written from, RGBA8 texels.

Arm's runner (0.11, ``png_reader.cpp``) loads any PNG as ``VK_FORMAT_R8G8B8A8_UNORM`` texels --
grey becomes ``(g, g, g, 255)``, grey+alpha ``(g, g, g, a)``, RGB ``(r, g, b, 255)``, a palette
its colours (alpha from ``tRNS``) -- and checks the file's size against the image's before it
decodes. It writes an image ``dst`` as an 8-bit RGBA PNG (colour type 6) with one IHDR, one IDAT
and an IEND, and only for ``VK_FORMAT_R8G8B8A8_UNORM`` images.

This reader takes bit depth 8 in colour types 0, 2, 3, 4 and 6, not interlaced; every other
variant is refused with an :class:`InputError` naming the file. The IDAT stream is inflated with
a cap of the image's own size, so a small file cannot grow memory beyond what the image needs.
"""
from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING

import numpy as np

from kernellab.errors import InputError, Problem
from kernellab.records import dataclass

if TYPE_CHECKING:
    from kernellab.vkregistry.vkformat import VkFormatInfo

SIGNATURE = b"\x89PNG\r\n\x1a\n"
#: the only format Arm's runner loads a PNG as, and the only one it writes as PNG
FORMAT = "VK_FORMAT_R8G8B8A8_UNORM"

GREY, RGB, PALETTE, GREY_ALPHA, RGBA = 0, 2, 3, 4, 6
CHANNELS = {GREY: 1, RGB: 3, PALETTE: 1, GREY_ALPHA: 2, RGBA: 4}
FILTER_NONE, FILTER_SUB, FILTER_UP, FILTER_AVERAGE, FILTER_PAETH = range(5)


@dataclass(frozen=True)
class PngHeader:
    width: int
    height: int
    bit_depth: int
    color_type: int
    interlace: int


def _chunks(data: bytes, path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes, bytes]]:
    """(offset, type, body) of each chunk after the signature, CRCs checked."""
    pos = len(SIGNATURE)
    while True:
        if pos + 8 > len(data):
            raise InputError.at(path, f"byte {pos}", "PNG file is truncated (no IEND chunk)")
        length, ctype = struct.unpack_from(">I4s", data, pos)
        end = pos + 12 + length
        if end > len(data):
            raise InputError.at(path, f"byte {pos}", f"PNG chunk {ctype!r} is truncated: it declares {length} "
                                                     f"bytes, the file ends {len(data) - pos - 8} bytes later")
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack_from(">I", data, end - 4)
        if zlib.crc32(ctype + body) != crc:
            raise InputError.at(path, f"byte {end - 4}", f"PNG chunk {ctype.decode('latin-1')!r}: CRC mismatch "
                                                          "(the file is corrupt)")
        yield pos, ctype, body
        if ctype == b"IEND":
            return
        pos = end


def read_header(data: bytes, path: str | os.PathLike[str]) -> PngHeader:
    """The IHDR of a PNG file; raises :class:`InputError` unless this reader can decode it."""
    if not data.startswith(SIGNATURE):
        raise InputError.at(path, "byte 0", "not a PNG file (no PNG signature)")
    pos, ctype, body = next(_chunks(data, path))
    if ctype != b"IHDR" or len(body) != 13:
        raise InputError.at(path, f"byte {pos}", "PNG file does not start with a 13-byte IHDR chunk")
    width, height, depth, ctype_, method, filt, interlace = struct.unpack(">IIBBBBB", body)
    hdr = PngHeader(width, height, depth, ctype_, interlace)
    where = f"byte {pos + 8} (IHDR)"
    if width == 0 or height == 0:
        raise InputError.at(path, where, f"PNG has a zero dimension ({width}x{height})")
    if ctype_ not in CHANNELS or method != 0 or filt != 0:
        raise InputError.at(path, where, f"invalid PNG header (colour type {ctype_}, compression {method}, "
                                         f"filter method {filt})")
    if depth != 8:
        raise InputError.at(path, where, f"PNG bit depth {depth} is not supported: kernellab reads 8-bit PNGs "
                                         "(grey, grey+alpha, RGB, RGBA, palette); re-save it with 8 bits per channel")
    if interlace != 0:
        raise InputError.at(path, where, "interlaced (Adam7) PNGs are not supported; re-save it without interlacing")
    return hdr


def decode(data: bytes, path: str | os.PathLike[str], width: int, height: int) -> bytes:
    """The RGBA8 texels (rows top to bottom) of a PNG that must be ``width`` x ``height``."""
    hdr = read_header(data, path)
    if (hdr.width, hdr.height) != (width, height):
        raise InputError.at(path, "byte 16 (IHDR width/height)",
                            f"PNG image is {hdr.width}x{hdr.height} (width x height) but the image resource "
                            f"is {width}x{height}")
    channels = CHANNELS[hdr.color_type]
    stride = width * channels
    want = height * (stride + 1)
    inflater = zlib.decompressobj()
    parts: list[bytes] = []
    got = 0
    palette: bytes | None = None
    trns: bytes | None = None
    seen_idat = False
    for pos, ctype, body in _chunks(data, path):
        if ctype == b"IDAT":
            seen_idat = True
            try:
                # never inflate more than the image holds (+1 to notice a stream that is too long)
                part = inflater.decompress(body, want + 1 - got)
            except zlib.error as exc:
                raise InputError.at(path, f"byte {pos} (IDAT)", f"PNG image data is corrupt: {exc}") from None
            got += len(part)
            parts.append(part)
            if got > want or inflater.unconsumed_tail:
                raise InputError.at(path, f"byte {pos} (IDAT)", f"PNG image data holds more than the {want} bytes "
                                                                f"a {width}x{height} image needs")
        elif ctype == b"PLTE":
            palette = body
        elif ctype == b"tRNS":
            trns = body
        elif ctype not in (b"IHDR", b"IEND") and not ctype[0:1].islower():
            raise InputError.at(path, f"byte {pos}", f"unknown critical PNG chunk {ctype.decode('latin-1')!r}")
    if not seen_idat:
        raise InputError.at(path, "IDAT", "PNG file has no image data (IDAT chunk)")
    if got != want or not inflater.eof:
        raise InputError.at(path, "IDAT", f"PNG image data is truncated: {got} of {want} bytes")
    raw = b"".join(parts)
    pixels = unfilter(raw, path, height, stride, channels)
    return _to_rgba(pixels, path, hdr.color_type, palette, trns).tobytes()


def unfilter(raw: bytes, path: str | os.PathLike[str], height: int, stride: int, bpp: int) -> np.ndarray:
    """Undo the per-row filters (None, Sub, Up, Average, Paeth); returns ``height`` x ``stride`` bytes."""
    rows = np.frombuffer(raw, np.uint8).reshape(height, stride + 1)
    kinds = rows[:, 0]
    if (bad := np.flatnonzero(kinds > FILTER_PAETH)).size:
        y = int(bad[0])
        raise InputError.at(path, f"row {y}", f"PNG row has unknown filter type {int(kinds[y])}")
    if np.isin(kinds, (FILTER_AVERAGE, FILTER_PAETH)).any():
        return _unfilter_diagonals(rows, height, stride, bpp)
    out = np.zeros((height, stride), np.uint8)
    prior = np.zeros(stride, np.uint8)
    for y in range(height):
        kind = int(rows[y, 0])
        line = rows[y, 1:]
        if kind == FILTER_NONE:
            cur = line.copy()
        elif kind == FILTER_SUB:
            # running sum per channel, modulo 256
            cur = np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
        else:  # Up: Average and Paeth rows took the path above
            cur = line + prior
        out[y] = cur
        prior = cur
    return out


def _unfilter_diagonals(rows: np.ndarray, height: int, stride: int, bpp: int) -> np.ndarray:
    """Every filter at once, a pixel's left, upper and upper-left neighbours decoded before it:
    one numpy step per anti-diagonal of pixels (width + height steps, not one per byte, so a
    large Average or Paeth image decodes in seconds). Row ``y`` is stored shifted right by ``y``
    pixels, which makes each anti-diagonal a column; a zero row above and zero pixels to the left
    are the neighbours outside the image."""
    width = stride // bpp
    skew = np.zeros((height + 1, width + height + 1, bpp), np.uint8)
    pixels = rows[:, 1:].reshape(height, width, bpp)
    kinds = rows[:, 0][:, None]
    sub, up, avg, paeth = (kinds == FILTER_SUB), (kinds == FILTER_UP), (kinds == FILTER_AVERAGE), (kinds == FILTER_PAETH)
    for d in range(width + height - 1):
        y0, y1 = max(0, d - width + 1), min(height, d + 1)
        a, b, c = (skew[y0 + 1:y1 + 1, d].astype(np.int16), skew[y0:y1, d].astype(np.int16),
                   skew[y0:y1, d - 1].astype(np.int16))
        p = a + b - c
        pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
        predicted = np.where(sub[y0:y1], a, 0)
        predicted += np.where(up[y0:y1], b, 0)
        predicted += np.where(avg[y0:y1], (a + b) >> 1, 0)
        predicted += np.where(paeth[y0:y1], np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c)), 0)
        ys = np.arange(y0, y1)
        skew[y0 + 1:y1 + 1, d + 1] = (pixels[ys, d - ys] + predicted) & 0xFF
    out = np.empty((height, width, bpp), np.uint8)
    for y in range(height):
        out[y] = skew[y + 1, y + 1:y + 1 + width]
    return out.reshape(height, stride)


def _to_rgba(pixels: np.ndarray, path: str | os.PathLike[str], color_type: int,
             palette: bytes | None, trns: bytes | None) -> np.ndarray:
    height = pixels.shape[0]
    px = pixels.reshape(height, -1, CHANNELS[color_type])
    rgba = np.empty((height, px.shape[1], 4), np.uint8)
    if color_type == PALETTE:
        if palette is None or len(palette) % 3 or not palette:
            raise InputError.at(path, "PLTE", "palette PNG without a valid PLTE chunk")
        entries = len(palette) // 3
        table = np.full((256, 4), 255, np.uint8)
        table[:entries, :3] = np.frombuffer(palette, np.uint8).reshape(-1, 3)
        if trns:
            table[:min(len(trns), entries), 3] = np.frombuffer(trns[:entries], np.uint8)
        if int(px.max(initial=0)) >= entries:
            raise InputError.at(path, "IDAT", f"palette index {int(px.max())} is beyond the {entries} PLTE entries")
        return table[px[..., 0]]
    colour = px[..., :1] if color_type in (GREY, GREY_ALPHA) else px[..., :3]
    rgba[..., :3] = colour
    if color_type in (GREY_ALPHA, RGBA):
        rgba[..., 3] = px[..., -1]
    else:
        rgba[..., 3] = 255
        # tRNS on grey/RGB names one colour (16-bit samples) that is fully transparent
        key_len = 2 if color_type == GREY else 6
        if trns is not None and len(trns) == key_len:
            key = np.frombuffer(trns, ">u2").astype(np.uint16)
            hit = np.all(colour.astype(np.uint16) == key, axis=-1)
            rgba[hit, 3] = 0
    return rgba


def load_image(path: str | os.PathLike[str], fmt: VkFormatInfo, width: int,
               height: int) -> tuple[bytes, int, VkFormatInfo, tuple[Problem, ...]]:
    """A PNG ``src`` for an image of format ``fmt``, as the fields of ``imagefile.ImageData``:
    RGBA8 texels, used as ``fmt`` when its texels are 4 bytes too (with a warning, as for a DDS
    file of another format), else an error."""
    from kernellab.vkregistry import vkformat

    rgba = vkformat.lookup(FORMAT)
    assert rgba is not None
    if fmt.texel_size != rgba.texel_size:
        raise InputError(f"a PNG holds {FORMAT} texels ({rgba.texel_size} bytes); the image resource's {fmt.name} "
                         f"has {fmt.texel_size}-byte texels", file=path)
    warnings: tuple[Problem, ...] = ()
    if fmt.name != FORMAT:
        warnings = (Problem(str(path), "", f"PNG texels are {FORMAT}; their bytes are used as {fmt.name}",
                            warning=True),)
    return load(path, width, height), 1, rgba, warnings


def load(path: str | os.PathLike[str], width: int, height: int) -> bytes:
    """Read a PNG ``src`` as RGBA8 texels, checking its size against the image's first."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read PNG file: {exc.strerror}", file=path) from None
    return decode(data, path, width, height)


# ---- writing ----------------------------------------------------------------------------------

def _chunk(ctype: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + ctype + body + struct.pack(">I", zlib.crc32(ctype + body))


def filter_rows(rgba: np.ndarray) -> bytes:
    """Each row with the filter whose bytes, read as signed, sum to the least magnitude (the first
    such filter on a tie) -- the usual heuristic, and the choice Arm's writer makes."""
    height, stride = rgba.shape
    bpp = 4
    img = rgba.astype(np.int16)
    prior = np.vstack([np.zeros((1, stride), np.int16), img[:-1]])
    left = np.hstack([np.zeros((height, bpp), np.int16), img[:, :-bpp]])
    upper_left = np.hstack([np.zeros((height, bpp), np.int16), prior[:, :-bpp]])
    p = left + prior - upper_left
    pa, pb, pc = np.abs(p - left), np.abs(p - prior), np.abs(p - upper_left)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prior, upper_left))
    candidates = np.stack([img, img - left, img - prior, img - ((left + prior) >> 1), img - paeth])
    candidates = (candidates & 0xFF).astype(np.uint8)
    cost = np.abs(candidates.view(np.int8).astype(np.int32)).sum(axis=2)
    best = np.argmin(cost, axis=0)
    out = np.empty((height, stride + 1), np.uint8)
    out[:, 0] = best
    out[:, 1:] = candidates[best, np.arange(height)]
    return out.tobytes()


def encode(rgba: bytes | memoryview | np.ndarray, width: int, height: int) -> bytes:
    """An 8-bit RGBA PNG (colour type 6, not interlaced) of ``width`` x ``height`` texels."""
    if width < 1 or height < 1:
        raise ValueError(f"image extent must be positive, not {width}x{height}")
    arr = np.frombuffer(bytes(rgba) if not isinstance(rgba, np.ndarray) else rgba.tobytes(), np.uint8)
    if arr.size != width * height * 4:
        raise ValueError(f"{arr.size} bytes of texels for a {width}x{height} RGBA8 PNG (needs {width * height * 4})")
    ihdr = struct.pack(">IIBBBBB", width, height, 8, RGBA, 0, 0, 0)
    idat = zlib.compress(filter_rows(arr.reshape(height, width * 4)), 8)
    return SIGNATURE + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def check_dst_format(format_name: str, path: str | os.PathLike[str] = "") -> None:
    """Arm writes a PNG ``dst`` only from an RGBA8 UNORM image; anything else is an input error."""
    if format_name != FORMAT:
        raise InputError(f"PNG export supports only {FORMAT}, not {format_name}; write this image as .dds "
                         "or .npy", file=path or None)


def write(fh: IO[bytes], format_name: str, width: int, height: int, level0: bytes | memoryview | np.ndarray) -> None:
    check_dst_format(format_name)
    fh.write(encode(level0, width, height))
