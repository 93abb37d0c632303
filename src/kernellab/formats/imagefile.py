"""An image resource's ``src`` and ``dst`` files: DDS or ``.npy``, chosen by extension.

Dimensions follow Arm's Scenario Runner: an image's ``dims`` are ``[1, width, height, 1]``
(``dims[1]`` is the width, ``dims[2]`` the height); a ``.npy`` image is shaped
``[1, height, width, channels]`` with the format's dtype; a DDS file's header carries width and
height. Texel data is always rows of tightly packed texels, mip levels one after another.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import IO

import numpy as np

from kernellab.errors import InputError, Problem
from kernellab.formats import dds, npy_arm
from kernellab.records import dataclass
from kernellab.vkregistry.vkformat import VkFormatInfo

EXTENSIONS = (".dds", ".npy", ".png")


@dataclass
class ImageData:
    """Texel data loaded for an image: packed mip levels ready for a staging buffer."""

    data: bytes | memoryview
    mip_levels: int
    file_format: VkFormatInfo | None = None   # the format the file declares (DDS only)
    warnings: tuple[Problem, ...] = ()


def extent_from_dims(dims: Sequence[int]) -> tuple[int, int]:
    """(width, height) of an image from its scenario ``dims`` (Arm: ``[1, W, H, 1]``)."""
    if len(dims) < 3:
        raise ValueError(f"image dims {list(dims)} need at least 3 entries [1, width, height, ...]")
    return int(dims[1]), int(dims[2])


def _ext(path: str | os.PathLike[str]) -> str:
    return Path(path).suffix.lower()


def check_extension(path: str | os.PathLike[str], file: str | os.PathLike[str], where: str | Sequence[str | int]) -> None:
    """Raise an :class:`InputError` at ``file``/``where`` unless ``path`` ends in .dds, .npy or .png."""
    if _ext(path) not in EXTENSIONS:
        raise InputError.at(file, where, f"image file {str(path)!r} must end in .dds, .npy or .png")


def load(path: str | os.PathLike[str], fmt: VkFormatInfo, width: int, height: int, mips: int = 1) -> ImageData:
    """Read an image ``src`` and check it against the resource (Arm's checks, and the dtype).

    A DDS file may hold fewer mip levels than the image (the rest are generated) or more (the
    extra are ignored). Raises :class:`InputError` naming ``path``.
    """
    ext = _ext(path)
    if fmt.aspect is not None:
        return _load_depth_stencil(path, fmt, width, height)
    if ext == ".dds":
        return _load_dds(path, fmt, width, height, mips)
    if ext == ".npy":
        return ImageData(load_npy(path, fmt, width, height).data.cast("B"), 1)
    if ext == ".png":
        from kernellab.formats import png
        return ImageData(*png.load_image(path, fmt, width, height))
    raise InputError("image file must end in .dds, .npy or .png", file=path)


def _load_dds(path: str | os.PathLike[str], fmt: VkFormatInfo, width: int, height: int, mips: int) -> ImageData:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read DDS file: {exc.strerror}", file=path) from None
    hdr = dds.parse_header(raw, path)
    dds.parse(raw, path)  # checks the data size
    if (hdr.width, hdr.height) != (width, height):
        raise InputError.at(path, "byte 12 (dwHeight/dwWidth)",
                            f"DDS image is {hdr.width}x{hdr.height} (width x height) but the "
                            f"image resource is {width}x{height}")
    if hdr.format.file_texel_size != fmt.file_texel_size:
        raise InputError.at(path, "byte 128 (dxgiFormat)",
                            f"DDS format {hdr.format.name} has {hdr.format.file_texel_size}-byte texels, "
                            f"the image resource's {fmt.name} has {fmt.file_texel_size}")
    warnings: list[Problem] = []
    if hdr.format.name != fmt.name:
        warnings.append(Problem(str(path), "byte 128 (dxgiFormat)",
                                f"DDS format is {hdr.format.name}; its bytes are used as {fmt.name}",
                                warning=True))
    levels = min(hdr.mip_levels, mips)
    size = dds.chain_size(hdr.format, width, height, levels)
    data = memoryview(raw)[hdr.data_offset:hdr.data_offset + size]
    return ImageData(data, levels, hdr.format, tuple(warnings))


def _load_depth_stencil(path: str | os.PathLike[str], fmt: VkFormatInfo, width: int, height: int) -> ImageData:
    """A depth/stencil image's ``src``, as the texels of its colour stand-in (see
    :func:`vkformat.device_format`). As Arm's runner does for D32_SFLOAT_S8_UINT, a DDS of
    8-byte depth/stencil texels keeps the 4 depth bytes and drops the stencil, with a warning when
    some stencil byte is not zero; a ``.npy`` holds the stand-in's values ``[1, H, W, 1]``."""
    from kernellab.vkregistry.vkformat import device_format

    try:
        device = device_format(fmt)
    except ValueError as exc:
        raise InputError(str(exc), file=path) from None
    if _ext(path) == ".npy":
        return ImageData(load_npy(path, device, width, height).data.cast("B"), 1)
    if _ext(path) != ".dds":
        raise InputError("image file must end in .dds or .npy", file=path)
    loaded = _load_dds(path, fmt, width, height, 1)
    file_fmt = loaded.file_format or fmt
    texels = np.frombuffer(loaded.data, np.uint8).reshape(height * width, file_fmt.file_texel_size)
    warnings = list(loaded.warnings)
    if file_fmt.file_texel_size != device.texel_size:
        if texels[:, device.texel_size:].any():
            warnings.append(Problem(str(path), "texel data", f"{fmt.name}: ignoring stencil data (kernellab, like "
                                                             f"Arm's runner, holds the depth only, as {device.name})",
                                    warning=True))
        texels = texels[:, :device.texel_size]
    return ImageData(np.ascontiguousarray(texels).reshape(-1).data, 1, file_fmt, tuple(warnings))


def load_npy(path: str | os.PathLike[str], fmt: VkFormatInfo, width: int, height: int) -> np.ndarray:
    """A ``.npy`` image shaped ``[1, height, width, channels]``, returned as a contiguous array."""
    from kernellab.formats import npy

    try:
        # our header parser first: NumPy's lets a damaged header escape as tokenize.TokenError
        npy.read_header(path)
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read .npy image: {exc}", file=path) from None
    want = (1, height, width, fmt.channels)
    if arr.shape != want:
        raise InputError(f"image .npy is shaped {list(arr.shape)}; a {width}x{height} {fmt.name} "
                         f"image needs [1, height, width, channels] = {list(want)}", file=path)
    if not _dtype_ok(fmt, arr.dtype):
        raise InputError(f"image .npy has dtype {arr.dtype.str}; {fmt.name} needs {fmt.npy_descr} "
                         f"({fmt.dtype.name})", file=path)
    return np.ascontiguousarray(arr)


def _dtype_ok(fmt: VkFormatInfo, dtype: np.dtype) -> bool:
    # Same width and the same family; signed/unsigned of one width are bit-identical raw data
    # and Arm's runner accepts them, float versus integer is almost surely a mistake.
    if dtype.itemsize != fmt.dtype.itemsize or dtype.byteorder == ">":
        return False
    return (dtype.kind == "f") == (fmt.dtype.kind == "f") or dtype.kind == "V"


def save(path: str | os.PathLike[str], fmt: VkFormatInfo, width: int, height: int,
         level0: bytes | memoryview | np.ndarray) -> None:
    """Write an image ``dst`` (mip level 0, as Arm's runner does) as DDS or ``.npy`` by extension."""
    from kernellab.outputs import atomic_open

    if _ext(path) not in EXTENSIONS:
        raise ValueError(f"image dst {str(path)!r} must end in .dds, .npy or .png")
    with atomic_open(path) as fh:
        write(fh, _ext(path), fmt, width, height, level0)


def write(fh: IO[bytes], ext: str, fmt: VkFormatInfo, width: int, height: int,
          level0: bytes | memoryview | np.ndarray) -> None:
    """Write mip level 0 to an open file as DDS (``ext`` ".dds") or Arm-style ``.npy``; a
    depth/stencil image holds, and so writes, its colour stand-in's texels."""
    if fmt.aspect is not None:
        from kernellab.vkregistry.vkformat import device_format

        fmt = device_format(fmt)
    if ext.lower() == ".dds":
        dds.write(fh, fmt, width, height, [level0])
    elif ext.lower() == ".npy":
        npy_arm.write(fh, level0, (1, height, width, fmt.channels), image_npy_descr(fmt))
    elif ext.lower() == ".png":
        from kernellab.formats import png
        png.write(fh, fmt.name, width, height, level0)
    else:
        raise ValueError(f"image file type {ext!r}: expected .dds or .npy")


def image_npy_descr(fmt: VkFormatInfo) -> str:
    return npy_arm.descr_of(fmt.dtype)
