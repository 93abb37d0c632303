"""VkFormat facts kernellab needs on the host: texel layout, NumPy dtype, DXGI code, tensor use.

The table lives in ``kernellab/data/vkformats.json``; it is derived from the official Vulkan
registry (pip ``vulkan-object``, which carries ``vk.xml``) by :func:`derive_from_registry`, so
names, enum values, component order, bit widths and numeric kinds are never typed by hand.
Regenerate it after a registry update with ``python -m kernellab.vkregistry.vkformat``.

Only DXGI codes come from outside the registry (DXGI is Microsoft's enum, used by DDS files):
:data:`DXGI_FORMATS` lists the uncompressed ones a DDS file can carry for these formats.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from pathlib import Path

from kernellab.errors import InputError
from kernellab.records import dataclass
from kernellab.vkregistry import tables

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:  # NumPy only for the formats' dtypes: a run of buffers starts without it
    from typing import Any

    import numpy as np


#: DXGI_FORMAT values (dxgiformat.h) for the uncompressed formats a Vulkan format maps onto.
DXGI_FORMATS: dict[str, int] = {
    "DXGI_FORMAT_R32G32B32A32_FLOAT": 2, "DXGI_FORMAT_R32G32B32A32_UINT": 3,
    "DXGI_FORMAT_R32G32B32A32_SINT": 4, "DXGI_FORMAT_R32G32B32_FLOAT": 6,
    "DXGI_FORMAT_R32G32B32_UINT": 7, "DXGI_FORMAT_R32G32B32_SINT": 8,
    "DXGI_FORMAT_R16G16B16A16_FLOAT": 10, "DXGI_FORMAT_R16G16B16A16_UNORM": 11,
    "DXGI_FORMAT_R16G16B16A16_UINT": 12, "DXGI_FORMAT_R16G16B16A16_SNORM": 13,
    "DXGI_FORMAT_R16G16B16A16_SINT": 14, "DXGI_FORMAT_R32G32_FLOAT": 16,
    "DXGI_FORMAT_R32G32_UINT": 17, "DXGI_FORMAT_R32G32_SINT": 18,
    "DXGI_FORMAT_R11G11B10_FLOAT": 26, "DXGI_FORMAT_R8G8B8A8_UNORM": 28,
    "DXGI_FORMAT_R8G8B8A8_UNORM_SRGB": 29, "DXGI_FORMAT_R8G8B8A8_UINT": 30,
    "DXGI_FORMAT_R8G8B8A8_SNORM": 31, "DXGI_FORMAT_R8G8B8A8_SINT": 32,
    "DXGI_FORMAT_R16G16_FLOAT": 34, "DXGI_FORMAT_R16G16_UNORM": 35,
    "DXGI_FORMAT_R16G16_UINT": 36, "DXGI_FORMAT_R16G16_SNORM": 37,
    "DXGI_FORMAT_R16G16_SINT": 38, "DXGI_FORMAT_R32_FLOAT": 41,
    "DXGI_FORMAT_R32_UINT": 42, "DXGI_FORMAT_R32_SINT": 43,
    "DXGI_FORMAT_R8G8_UNORM": 49, "DXGI_FORMAT_R8G8_UINT": 50,
    "DXGI_FORMAT_R8G8_SNORM": 51, "DXGI_FORMAT_R8G8_SINT": 52,
    "DXGI_FORMAT_R16_FLOAT": 54, "DXGI_FORMAT_R16_UNORM": 56,
    "DXGI_FORMAT_R16_UINT": 57, "DXGI_FORMAT_R16_SNORM": 58,
    "DXGI_FORMAT_R16_SINT": 59, "DXGI_FORMAT_R8_UNORM": 61,
    "DXGI_FORMAT_R8_UINT": 62, "DXGI_FORMAT_R8_SNORM": 63,
    "DXGI_FORMAT_R8_SINT": 64, "DXGI_FORMAT_A8_UNORM": 65,
    "DXGI_FORMAT_B8G8R8A8_UNORM": 87, "DXGI_FORMAT_B8G8R8A8_UNORM_SRGB": 91,
    # depth/stencil: the three Arm's runner maps (src/dds_reader.cpp)
    "DXGI_FORMAT_D32_FLOAT_S8X24_UINT": 20, "DXGI_FORMAT_D32_FLOAT": 40, "DXGI_FORMAT_D24_UNORM_S8_UINT": 45,
}
#: The depth/stencil formats Arm's runner reads from DDS, by DXGI name (Vulkan name -> DXGI name).
_DEPTH_DXGI = {"VK_FORMAT_D32_SFLOAT_S8_UINT": "DXGI_FORMAT_D32_FLOAT_S8X24_UINT",
               "VK_FORMAT_D32_SFLOAT": "DXGI_FORMAT_D32_FLOAT",
               "VK_FORMAT_D24_UNORM_S8_UINT": "DXGI_FORMAT_D24_UNORM_S8_UINT"}
DXGI_NAMES: dict[int, str] = {v: k for k, v in DXGI_FORMATS.items()}

#: The tensor formats the scenario spec lists, plus the ARM BF16/FP8 encodings (VK_ARM_tensors).
TENSOR_FORMAT_NAMES: tuple[str, ...] = (
    "VK_FORMAT_R8_BOOL_ARM", "VK_FORMAT_R8_UINT", "VK_FORMAT_R8_SINT", "VK_FORMAT_R16_UINT",
    "VK_FORMAT_R16_SINT", "VK_FORMAT_R32_UINT", "VK_FORMAT_R32_SINT", "VK_FORMAT_R64_SINT",
    "VK_FORMAT_R16_SFLOAT", "VK_FORMAT_R32_SFLOAT",
    "VK_FORMAT_R16_SFLOAT_FPENCODING_BFLOAT16_ARM", "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E4M3_ARM",
    "VK_FORMAT_R8_SFLOAT_FPENCODING_FLOAT8E5M2_ARM",
)
#: Encodings NumPy has no type for: held as raw unsigned integers of the same width.
SPECIAL_ENCODINGS = ("BFLOAT16", "FLOAT8E4M3", "FLOAT8E5M2")

_NUMERIC_KINDS = {"UNORM": "u", "UINT": "u", "SRGB": "u", "SNORM": "i", "SINT": "i",
                  "SFLOAT": "f", "UFLOAT": "u", "BOOL": "b"}


@dataclass(frozen=True)
class VkFormatInfo:
    """One VkFormat as the host sees it.

    ``channels`` counts the values NumPy holds per texel: the components of a plain format, or 1
    for a packed format (``B10G11R11_UFLOAT_PACK32`` is one uint32 per texel).
    """

    name: str
    value: int
    components: str          # component letters in memory order: "R", "RG", "BGRA", ...
    bits: int                # bits per stored value (a packed format: the whole word)
    numeric: str             # UNORM SNORM UINT SINT SFLOAT UFLOAT SRGB BOOL (alpha of SRGB is UNORM)
    encoding: str | None     # BFLOAT16 / FLOAT8E4M3 / FLOAT8E5M2 for the ARM float encodings
    texel_size: int          # bytes per texel (the registry's block size)
    packed: bool
    dxgi: int | None         # the DXGI_FORMAT a DDS file uses for it, None if DDS has none
    #: "depth", "stencil" or "depth_stencil" for a depth/stencil format (components D and S)
    aspect: str | None = None
    #: the colour format with the same bits as the depth (else stencil) component, which kernellab
    #: creates in its place (Arm's runner turns D32_SFLOAT_S8_UINT into D32_SFLOAT and drops the
    #: stencil); None when no colour format has those bits (24-bit depth)
    stand_in: str | None = None

    @property
    def channels(self) -> int:
        return 1 if self.packed else len(self.components)

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of one stored value (raw unsigned ints for BF16/FP8, bool for BOOL)."""
        import numpy as np

        if self.encoding is not None:
            return np.dtype(f"<u{self.bits // 8}")
        if self.numeric == "BOOL":
            return np.dtype(np.bool_)
        if self.packed:
            return np.dtype(f"<u{self.texel_size}")
        return np.dtype(f"<{_NUMERIC_KINDS[self.numeric]}{self.bits // 8}")

    @property
    def normalized(self) -> bool:
        return self.numeric in ("UNORM", "SNORM", "SRGB")

    @property
    def srgb(self) -> bool:
        return self.numeric == "SRGB"

    @property
    def is_float(self) -> bool:
        return self.numeric in ("SFLOAT", "UFLOAT")

    @property
    def is_integer(self) -> bool:
        """Read by shaders as integers (``uimage``/``iimage``): UINT and SINT."""
        return self.numeric in ("UINT", "SINT")

    @property
    def element_size(self) -> int:
        """Bytes per texel as Arm's runner counts them (block size rounded up to a power of 2)."""
        size = self.texel_size
        return size if size & (size - 1) == 0 else 1 << size.bit_length()

    @property
    def tensor(self) -> bool:
        """Usable as a tensor format (the spec's list and the ARM BF16/FP8 encodings)."""
        return self.name in TENSOR_FORMAT_NAMES

    @property
    def npy_descr(self) -> str:
        """The ``descr`` Arm's runner writes in a tensor ``.npy`` of this format.

        Arm's writer puts ``|`` before 1-byte types and ``<`` before wider ones, and writes the
        ARM encodings as raw bytes: BF16 ``<V2``, FP8 E4M3 ``<V1``, FP8 E5M2 ``|u1``.
        """
        if self.encoding == "BFLOAT16":
            return "<V2"
        if self.encoding == "FLOAT8E4M3":
            return "<V1"
        if self.encoding == "FLOAT8E5M2":
            return "|u1"
        dt = self.dtype
        return f"{'|' if dt.itemsize < 2 else '<'}{dt.kind}{dt.itemsize}"

    def npy_dtype_ok(self, dtype: np.dtype) -> bool:
        """Whether a source ``.npy`` of ``dtype`` holds this format's values bit for bit."""
        import numpy as np

        dtype = np.dtype(dtype)
        if dtype.itemsize != self.dtype.itemsize or dtype.byteorder == ">":
            return False
        if self.encoding is not None:
            return dtype.kind in ("V", "u", "i")
        return dtype.kind == self.dtype.kind

    @property
    def file_texel_size(self) -> int:
        """Bytes per texel in a DDS or ``.npy`` file: the block size, except that a combined
        depth/stencil texel is stored at Arm's element size (D32_SFLOAT_S8_UINT: 8 bytes, the
        DXGI_FORMAT_D32_FLOAT_S8X24_UINT layout)."""
        return self.element_size if self.aspect == "depth_stencil" else self.texel_size

    def shape_of_image(self, height: int, width: int) -> tuple[int, int, int]:
        return (height, width, self.channels)


# --------------------------------------------------------------------------------------------
# the table


_TABLE = "vkformats.json"


@functools.lru_cache(maxsize=1)
def _table() -> dict[str, VkFormatInfo]:
    rows = tables.read(_TABLE, "formats")
    return {row["name"]: VkFormatInfo(**row) for row in rows}


def all_formats() -> list[VkFormatInfo]:
    return list(_table().values())


def lookup(name: str) -> VkFormatInfo | None:
    """The format called ``name`` (``VK_FORMAT_R8G8B8A8_UNORM``), or None if kernellab lacks it."""
    return _table().get(name)


@functools.lru_cache(maxsize=1)
def _by_value() -> dict[int, VkFormatInfo]:
    return {f.value: f for f in _table().values()}


@functools.lru_cache(maxsize=1)
def _by_dxgi() -> dict[int, VkFormatInfo]:
    return {f.dxgi: f for f in _table().values() if f.dxgi is not None}


def by_value(value: int) -> VkFormatInfo | None:
    return _by_value().get(value)


def by_dxgi(code: int) -> VkFormatInfo | None:
    return _by_dxgi().get(code)


def image_formats() -> list[VkFormatInfo]:
    """Colour formats an image resource can use with a DDS file (those with a DXGI code); the
    depth/stencil formats with a DXGI code are read through their colour stand-in instead."""
    return [f for f in _table().values() if f.dxgi is not None and f.aspect is None]


def device_format(fmt: VkFormatInfo) -> VkFormatInfo:
    """The format kernellab creates an image of ``fmt`` with: ``fmt`` itself, or for a depth/stencil
    format its colour stand-in (same bits; a compute shader samples depth as the red channel).
    Raises :class:`ValueError` for a depth format no colour format can hold."""
    if fmt.aspect is None:
        return fmt
    stand_in = lookup(fmt.stand_in) if fmt.stand_in else None
    if stand_in is None:
        raise ValueError(f"{fmt.name}: no colour format has the bits of its {fmt.bits}-bit depth, so kernellab "
                         "cannot hold it (use VK_FORMAT_D32_SFLOAT, VK_FORMAT_D16_UNORM or "
                         "VK_FORMAT_D32_SFLOAT_S8_UINT)")
    return stand_in


def image_format_problem(name: str) -> str | None:
    """Why an image cannot have the format called ``name`` (a depth format without a colour
    stand-in), or None; checked when a scenario is read, before any image is created."""
    fmt = lookup(name)
    if fmt is None or fmt.aspect is None:
        return None
    try:
        device_format(fmt)
    except ValueError as exc:
        return str(exc)
    return None


def device_format_name(name: str) -> str:
    """:func:`device_format` by name; a name kernellab lacks, or a depth format it cannot hold,
    comes back unchanged (whoever creates the image then says why it cannot)."""
    fmt = lookup(name)
    try:
        return device_format(fmt).name if fmt is not None else name
    except ValueError:
        return name


def tensor_formats() -> list[VkFormatInfo]:
    return [_table()[n] for n in TENSOR_FORMAT_NAMES]


def require(name: object, file: str | Path, where: str | Sequence[str | int], *,
            tensor: bool = False) -> VkFormatInfo:
    """The format called ``name``, or an :class:`InputError` at ``file``/``where`` saying why not."""
    if not isinstance(name, str):
        raise InputError.at(file, where, f"format must be a string naming a VkFormat, not {name!r}")
    fmt = lookup(name)
    if fmt is None:
        hint = _closest(name, (f.name for f in (tensor_formats() if tensor else all_formats())))
        raise InputError.at(file, where, f"unknown or unsupported VkFormat {name!r}"
                            + (f" (did you mean {hint}?)" if hint else ""))
    if tensor and not fmt.tensor:
        raise InputError.at(file, where, f"{name} is not a tensor format; tensors use one of: "
                            + ", ".join(TENSOR_FORMAT_NAMES))
    return fmt


def _closest(name: str, candidates: Iterable[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(name.upper(), list(candidates), n=1, cutoff=0.75)
    return found[0] if found else None


# --------------------------------------------------------------------------------------------
# derivation from the Vulkan registry


def _dxgi_for(name: str, numeric: str, components: str, bits: int, packed: bool) -> int | None:
    if name == "VK_FORMAT_B10G11R11_UFLOAT_PACK32":
        return DXGI_FORMATS["DXGI_FORMAT_R11G11B10_FLOAT"]
    if packed:
        return None
    body = "".join(f"{c}{bits}" for c in components)
    kind = {"SFLOAT": "FLOAT", "SRGB": "UNORM_SRGB"}.get(numeric, numeric)
    return DXGI_FORMATS.get(f"DXGI_FORMAT_{body}_{kind}")


def derive_from_registry() -> list[dict[str, Any]]:
    """The table rows, computed from ``vk.xml`` via pip ``vulkan-object``.

    Kept: uncompressed single-plane colour formats whose components share one numeric kind
    (alpha of sRGB formats is UNORM) and one width of 8/16/32/64 bits, the ARM tensor formats,
    and ``B10G11R11_UFLOAT_PACK32`` (a DDS format Arm's runner supports).
    """
    # an optional dependency, needed only to regenerate the table
    from vulkan_object import get_vulkan_object

    vk = get_vulkan_object()
    values = {f.name: f.value for f in vk.enums["VkFormat"].fields}
    rows: list[dict[str, Any]] = []
    for name, fmt in vk.formats.items():
        if fmt.compressed or fmt.planes or fmt.chroma or fmt.texelsPerBlock != 1:
            continue
        comps = fmt.components
        letters = "".join(c.type for c in comps)
        if letters and not set(letters) - set("DS"):
            rows.append(_depth_stencil_row(name, values[name], comps, fmt))
            continue
        if not letters or set(letters) - set("RGBA"):
            continue
        encoding = next((e for e in SPECIAL_ENCODINGS if f"FPENCODING_{e}_" in name), None)
        numerics = [c.numericFormat for c in comps]
        numeric = numerics[0]
        if numeric == "SRGB":
            if any(n not in ("SRGB", "UNORM") for n in numerics) or any(
                    n != "SRGB" for c, n in zip(comps, numerics) if c.type != "A"):
                continue
        elif len(set(numerics)) != 1:
            continue
        packed = fmt.packed is not None
        if packed:
            if name != "VK_FORMAT_B10G11R11_UFLOAT_PACK32":
                continue
            bits = int(fmt.packed)
        else:
            widths = {int(c.bits) for c in comps}
            if len(widths) != 1 or next(iter(widths)) not in (8, 16, 32, 64):
                continue
            bits = next(iter(widths))
        if numeric not in _NUMERIC_KINDS:
            continue  # USCALED/SSCALED: not used by compute scenarios
        rows.append({
            "name": name, "value": values[name], "components": letters, "bits": bits,
            "numeric": numeric, "encoding": encoding, "texel_size": int(fmt.blockSize),
            "packed": packed, "dxgi": None if encoding else _dxgi_for(name, numeric, letters, bits, packed),
            "aspect": None, "stand_in": None,
        })
    colour = {r["name"] for r in rows}
    for r in rows:
        if r.get("stand_in") and r["stand_in"] not in colour:
            r["stand_in"] = None
    rows.sort(key=lambda r: r["value"])
    return rows


def _depth_stencil_row(name: str, value: int, comps: Any, fmt: Any) -> dict[str, Any]:
    """A depth/stencil format: described by its depth component (else its stencil one), with the
    colour format of the same bits and kind as its stand-in."""
    letters = "".join(c.type for c in comps)
    main = comps[0]
    bits = int(main.bits)
    aspect = {"D": "depth", "S": "stencil"}.get(letters, "depth_stencil")
    return {"name": name, "value": value, "components": letters, "bits": bits, "numeric": main.numericFormat,
            "encoding": None, "texel_size": int(fmt.blockSize), "packed": fmt.packed is not None,
            "dxgi": DXGI_FORMATS[_DEPTH_DXGI[name]] if name in _DEPTH_DXGI else None, "aspect": aspect,
            "stand_in": f"VK_FORMAT_R{bits}_{main.numericFormat}"}


def regenerate(path: Path | None = None) -> Path:
    path = tables.write(path or tables.data_path(_TABLE), "kernellab.vkregistry.vkformat", "formats",
                        derive_from_registry())
    _table.cache_clear()
    _by_value.cache_clear()
    _by_dxgi.cache_clear()
    return path


def _as_rows(formats: Iterable[VkFormatInfo]) -> list[dict[str, Any]]:
    return [asdict(f) for f in formats]


if __name__ == "__main__":
    tables.regenerate_main("kernellab.vkregistry.vkformat", __doc__, regenerate)
