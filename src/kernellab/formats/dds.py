"""DDS image files (DirectDraw Surface with the DX10 header): 2-D, with mip chains.

Layout of a file (all little-endian 32-bit words):

    "DDS " | DDS_HEADER (124 bytes) | DDS_HEADER_DXT10 (20 bytes) | level 0 | level 1 | ...

Each level is ``max(w >> i, 1) x max(h >> i, 1)`` texels, rows tightly packed, texels of the
format's size. :func:`header` with one level produces exactly the bytes Arm's Scenario Runner
writes for an image ``dst`` (flags ``0x100F``, pitch ``width * element size``, depth 1, mip count
1, caps ``0x1000``, DX10 dimension 3, array size 1). With more levels it adds the mip-map count
flag and the complex/mip-map caps, as the DDS programming guide asks.

Arm's runner reads DX10 files only, 2-D only, not cube maps; so does this reader, and it checks
the same required flags. A legacy (non-DX10) header is reported as such.
"""
from __future__ import annotations

import os
import struct
from collections.abc import Callable, Sequence
from dataclasses import field
from pathlib import Path
from typing import IO

import numpy as np

from kernellab.errors import InputError
from kernellab.outputs import atomic_open
from kernellab.records import dataclass
from kernellab.vkregistry import vkformat
from kernellab.vkregistry.vkformat import DXGI_NAMES, VkFormatInfo

MAGIC = 0x20534444             # "DDS "
FOURCC_DX10 = 0x30315844       # "DX10"
HEADER_SIZE = 124
PIXEL_FORMAT_SIZE = 32
DATA_OFFSET = 4 + HEADER_SIZE + 20

DDSD_CAPS, DDSD_HEIGHT, DDSD_WIDTH, DDSD_PITCH = 0x1, 0x2, 0x4, 0x8
DDSD_PIXELFORMAT, DDSD_MIPMAPCOUNT, DDSD_LINEARSIZE, DDSD_DEPTH = 0x1000, 0x20000, 0x80000, 0x800000
DDPF_FOURCC = 0x4
DDSCAPS_COMPLEX, DDSCAPS_TEXTURE, DDSCAPS_MIPMAP = 0x8, 0x1000, 0x400000
DIMENSION_TEXTURE2D = 3
MISC_TEXTURECUBE = 0x4
REQUIRED_FLAGS = DDSD_CAPS | DDSD_HEIGHT | DDSD_WIDTH | DDSD_PIXELFORMAT

# magic, then DDS_HEADER: size flags height width pitch depth mipcount reserved1[11]
# DDS_PIXELFORMAT: size flags fourcc rgbbits rmask gmask bmask amask; caps caps2 caps3 caps4 reserved2
# DDS_HEADER_DXT10: dxgiFormat resourceDimension miscFlag arraySize miscFlags2
_LAYOUT = struct.Struct("<I 7I 11I 8I 5I 5I")
assert _LAYOUT.size == DATA_OFFSET


def mip_extent(width: int, height: int, level: int) -> tuple[int, int]:
    """Width and height of mip ``level`` (each halves, never below 1)."""
    return max(width >> level, 1), max(height >> level, 1)


def max_mip_levels(width: int, height: int) -> int:
    return max(width, height).bit_length()


def level_size(fmt: VkFormatInfo, width: int, height: int, level: int) -> int:
    w, h = mip_extent(width, height, level)
    return w * h * fmt.file_texel_size


def chain_size(fmt: VkFormatInfo, width: int, height: int, levels: int) -> int:
    return sum(level_size(fmt, width, height, i) for i in range(levels))


def _dxgi_of(fmt: VkFormatInfo) -> int:
    if fmt.dxgi is None:
        raise ValueError(f"{fmt.name} has no DDS (DXGI) format; write this image as .npy instead")
    return fmt.dxgi


def header(fmt: VkFormatInfo, width: int, height: int, mip_levels: int = 1) -> bytes:
    """The 148 header bytes of a DX10 DDS file (Arm's exact bytes when ``mip_levels == 1``)."""
    if width < 1 or height < 1:
        raise ValueError(f"image extent must be positive, not {width}x{height}")
    if not 1 <= mip_levels <= max_mip_levels(width, height):
        raise ValueError(f"{mip_levels} mip levels for a {width}x{height} image "
                         f"(at most {max_mip_levels(width, height)})")
    flags = REQUIRED_FLAGS | DDSD_PITCH
    caps = DDSCAPS_TEXTURE
    if mip_levels > 1:
        flags |= DDSD_MIPMAPCOUNT
        caps |= DDSCAPS_COMPLEX | DDSCAPS_MIPMAP
    pitch = width * fmt.element_size
    return _LAYOUT.pack(
        MAGIC,
        HEADER_SIZE, flags, height, width, pitch, 1, mip_levels, *([0] * 11),
        PIXEL_FORMAT_SIZE, DDPF_FOURCC, FOURCC_DX10, 0, 0, 0, 0, 0,
        caps, 0, 0, 0, 0,
        _dxgi_of(fmt), DIMENSION_TEXTURE2D, 0, 1, 0,
    )


@dataclass(frozen=True)
class DdsHeader:
    """What a DDS header says about the image that follows it."""

    format: VkFormatInfo
    width: int
    height: int
    mip_levels: int
    dxgi: int
    data_offset: int = DATA_OFFSET

    def level_offsets(self) -> list[tuple[int, int]]:
        """(offset, size) in the file of each mip level."""
        out, off = [], self.data_offset
        for i in range(self.mip_levels):
            n = level_size(self.format, self.width, self.height, i)
            out.append((off, n))
            off += n
        return out

    @property
    def data_size(self) -> int:
        return chain_size(self.format, self.width, self.height, self.mip_levels)


@dataclass
class DdsImage:
    """A decoded DDS file: one array per mip level, each shaped ``[h, w, channels]``."""

    format: VkFormatInfo
    width: int
    height: int
    levels: list[np.ndarray] = field(default_factory=list)

    @property
    def mip_levels(self) -> int:
        return len(self.levels)

    def tobytes(self) -> bytes:
        """The packed level data as it sits in the file (what a staging buffer receives)."""
        return b"".join(np.ascontiguousarray(lv).tobytes() for lv in self.levels)


def parse_header(data: bytes | memoryview, file: str | os.PathLike[str] = "<dds>") -> DdsHeader:
    """Check and decode the header at the start of ``data``; :class:`InputError` if unusable."""
    file = str(file)
    data = memoryview(data).cast("B")

    def bad(where: str, message: str) -> InputError:
        return InputError.at(file, where, message)

    height, width, mip_count = _legacy_header(data, bad)
    fmt, dxgi = _dx10_header(data, bad)
    if width < 1 or height < 1:
        raise bad("byte 12 (dwHeight/dwWidth)", f"image extent {width}x{height} is empty")
    levels = max(mip_count, 1)
    if levels > max_mip_levels(width, height):
        raise bad("byte 28 (dwMipMapCount)", f"{levels} mip levels for a {width}x{height} image "
                  f"(at most {max_mip_levels(width, height)})")
    return DdsHeader(fmt, width, height, levels, dxgi)


def _legacy_header(data: memoryview, bad: Callable[[str, str], InputError]) -> tuple[int, int, int]:
    """The DDS_HEADER's height, width and mip count, once its sizes, flags and caps say a DX10 texture follows."""
    if data.nbytes < 4 or int.from_bytes(data[:4], "little") != MAGIC:
        raise bad("byte 0 (magic)", "not a DDS file: it does not start with 'DDS '")
    if data.nbytes < 4 + HEADER_SIZE:
        raise bad("byte 4 (header)", f"the file ends inside the DDS header ({data.nbytes} bytes)")
    size, flags, height, width = struct.unpack_from("<4I", data, 4)
    mip_count = struct.unpack_from("<I", data, 28)[0]
    pf_size, pf_flags, fourcc = struct.unpack_from("<3I", data, 76)
    caps = struct.unpack_from("<I", data, 108)[0]
    if size != HEADER_SIZE:
        raise bad("byte 4 (dwSize)", f"DDS header size is {size}, must be {HEADER_SIZE}")
    if flags & REQUIRED_FLAGS != REQUIRED_FLAGS:
        raise bad("byte 8 (dwFlags)", f"DDS header flags 0x{flags:x} lack the required caps, height, "
                  "width and pixel-format flags (0x100f)")
    if pf_size != PIXEL_FORMAT_SIZE:
        raise bad("byte 76 (ddspf.dwSize)", f"DDS pixel format size is {pf_size}, must be 32")
    if not caps & DDSCAPS_TEXTURE:
        raise bad("byte 108 (dwCaps)", "DDS header caps lack DDSCAPS_TEXTURE (0x1000)")
    if not (pf_flags & DDPF_FOURCC and fourcc == FOURCC_DX10):
        raise bad("byte 84 (ddspf.dwFourCC)", "only DDS files with the DX10 header are supported "
                  "(re-save it with a DX10 header, e.g. texconv -dx10)")
    return height, width, mip_count


def _dx10_header(data: memoryview, bad: Callable[[str, str], InputError]) -> tuple[VkFormatInfo, int]:
    """The format of a single 2-D texture, and its DXGI number, from the DX10 header."""
    if data.nbytes < DATA_OFFSET:
        raise bad("byte 128 (DX10 header)", "the file ends inside the DX10 header")
    dxgi, dimension, misc, array_size = struct.unpack_from("<4I", data, 128)
    if dimension != DIMENSION_TEXTURE2D:
        raise bad("byte 132 (resourceDimension)", f"only 2-D DDS textures are supported (dimension {dimension})")
    if misc & MISC_TEXTURECUBE:
        raise bad("byte 136 (miscFlag)", "cube-map DDS textures are not supported")
    if array_size > 1:
        raise bad("byte 140 (arraySize)", f"texture arrays are not supported (array size {array_size})")
    fmt = vkformat.by_dxgi(dxgi)
    if fmt is None:
        name = DXGI_NAMES.get(dxgi, f"DXGI format {dxgi}")
        raise bad("byte 128 (dxgiFormat)", f"{name} is not a supported DDS format (supported: "
                  "uncompressed 8/16/32-bit UNORM, SNORM, UINT, SINT, FLOAT, sRGB, R11G11B10_FLOAT)")
    return fmt, dxgi


def parse(data: bytes | memoryview, file: str | os.PathLike[str] = "<dds>") -> DdsImage:
    """Decode a whole DDS file held in memory (arrays are views of ``data`` where possible)."""
    hdr = parse_header(data, file)
    data = memoryview(data).cast("B")
    need = hdr.data_offset + hdr.data_size
    if data.nbytes < need:
        raise InputError.at(str(file), f"byte {hdr.data_offset} (data)",
                            f"the file holds {data.nbytes - hdr.data_offset} bytes of texel data; "
                            f"{hdr.width}x{hdr.height} {hdr.format.name} with {hdr.mip_levels} "
                            f"mip level(s) needs {hdr.data_size}")
    if hdr.mip_levels == 1 and data.nbytes != need:
        # Arm's runner rejects trailing bytes after a single level too
        raise InputError.at(str(file), f"byte {need}", f"{data.nbytes - need} bytes follow the image "
                            f"data ({hdr.width}x{hdr.height} {hdr.format.name} needs {hdr.data_size})")
    fmt = hdr.format
    levels = []
    for i, (off, n) in enumerate(hdr.level_offsets()):
        w, h = mip_extent(hdr.width, hdr.height, i)
        arr = np.frombuffer(data, dtype=fmt.dtype, count=n // fmt.dtype.itemsize, offset=off)
        levels.append(arr.reshape(h, w, fmt.channels))
    return DdsImage(fmt, hdr.width, hdr.height, levels)


def read(path: str | os.PathLike[str]) -> DdsImage:
    """Read a DDS file; :class:`InputError` naming the file and the byte at fault."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read DDS file: {exc.strerror}", file=path) from None
    return parse(data, path)


def read_header(path: str | os.PathLike[str]) -> DdsHeader:
    try:
        with open(path, "rb") as fh:
            head = fh.read(DATA_OFFSET)
    except OSError as exc:
        raise InputError(f"cannot read DDS file: {exc.strerror}", file=path) from None
    return parse_header(head, path)


def _level_bytes(fmt: VkFormatInfo, width: int, height: int, i: int,
                 level: np.ndarray | bytes | memoryview) -> memoryview:
    if isinstance(level, np.ndarray):
        w, h = mip_extent(width, height, i)
        want = (h, w, fmt.channels)
        if level.shape not in (want, want[:2]) or (level.ndim == 2 and fmt.channels != 1):
            raise ValueError(f"mip level {i} is shaped {level.shape}, expected {want}")
        if level.dtype.itemsize != fmt.dtype.itemsize:
            raise ValueError(f"mip level {i} has dtype {level.dtype}, {fmt.name} stores {fmt.dtype}")
        level = np.ascontiguousarray(level)
    raw = (level.data if isinstance(level, np.ndarray) else memoryview(level)).cast("B")
    if raw.nbytes != level_size(fmt, width, height, i):
        raise ValueError(f"mip level {i} has {raw.nbytes} bytes, "
                         f"{fmt.name} {mip_extent(width, height, i)} needs {level_size(fmt, width, height, i)}")
    return raw


def write(fh: IO[bytes], fmt: VkFormatInfo, width: int, height: int,
          levels: Sequence[np.ndarray | bytes | memoryview]) -> None:
    """Write a DDS file: ``levels[i]`` is mip level ``i`` as raw bytes or a ``[h, w, C]`` array."""
    if not levels:
        raise ValueError("a DDS file needs at least one level")
    raws = [_level_bytes(fmt, width, height, i, lv) for i, lv in enumerate(levels)]
    fh.write(header(fmt, width, height, len(raws)))
    for raw in raws:
        fh.write(raw)


def save(path: str | os.PathLike[str], fmt: VkFormatInfo, width: int, height: int,
         levels: Sequence[np.ndarray | bytes | memoryview]) -> None:
    """Atomically write a DDS file (see :func:`write`)."""
    with atomic_open(path) as fh:
        write(fh, fmt, width, height, levels)


def encode(fmt: VkFormatInfo, width: int, height: int,
           levels: Sequence[np.ndarray | bytes | memoryview]) -> bytes:
    import io

    buf = io.BytesIO()
    write(buf, fmt, width, height, levels)
    return buf.getvalue()
