"""Images in the SPIR-V checker: storage images, combined image samplers, image queries and image
atomics, over the scenario's image resources.

An image is one :class:`~kernellab.spirvsim.memory.Region` of its texels, every mip level packed
after the one before (level ``l`` is ``max(w >> l, 1) x max(h >> l, 1)``, rows tightly packed):
the bytes the scenario's ``src`` file gives, what a later dispatch reads and what the checker
hands back. Accesses go through the interpreter's own tracking with one unit per texel, so races
are found per texel (two invocations writing one texel, a read and a write of one texel in one
barrier phase), hazards between dispatches per texel byte, and coordinates outside the bound
level's extent are out-of-bounds findings (reads give ``(0, 0, 0, 1)``, writes are dropped: what
``robustImageAccess2`` does; without robustness the access is undefined either way).

Sampling (``texture``/``textureLod``: OpImageSampleExplicitLod) is modelled as the Vulkan
specification defines it ("Texel Coordinate Systems", "Texel Filtering"): normalized
coordinates scaled by the level's extent, the sampler's address mode on each integer texel
coordinate (clamp to edge, repeat, mirrored repeat, clamp to border with its border colour),
nearest or linear filtering by the magnification or minification filter the level of detail
selects, and nearest or linear mip selection. Linear weights are computed exactly in float64;
a device may round them to its ``subTexelPrecisionBits`` (at least 4), so a linear result can
differ from a device's within that precision. Reads through a sampler never race with each
other; they are read accesses of the texels they filter, so a storage write of one of those
texels by another invocation of the dispatch is a race.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

import numpy as np

from kernellab.backends.feature_specs import SamplerSpec as Sampler
from kernellab.errors import InputError
from kernellab.records import dataclass
from kernellab.spirvsim.memory import GLOBAL, MAX_BATCH_MEMORY, Ptr, Region, accessor_bytes
from kernellab.spirvsim.shadow import READ, WRITE, Shadow
from kernellab.spirvsim.types import Type
from kernellab.vkregistry import vkformat

#: the storage class of an image's texels (OpImageTexelPointer's pointers point there)
STORAGE = "Image"
#: image dimensionalities the checker models (the Dim operand of OpTypeImage)
DIMS = {0: "1D", 1: "2D", 2: "3D", 3: "Cube", 4: "Rect", 5: "Buffer", 6: "SubpassData"}
#: memory-semantics bit of image memory (OpControlBarrier / OpMemoryBarrier)
SEM_IMAGE = 0x800

#: image-operand bits (SPIR-V "Image Operands") and how many <id>s each takes
_OPERAND_IDS = {0x1: 1, 0x2: 1, 0x4: 2, 0x8: 1, 0x10: 1, 0x20: 1, 0x40: 1, 0x80: 1, 0x100: 1, 0x200: 1,
                0x400: 0, 0x800: 0, 0x1000: 0, 0x2000: 0, 0x4000: 0, 0x10000: 1}
_OPERAND_NAMES = {0x1: "Bias", 0x2: "Lod", 0x4: "Grad", 0x8: "ConstOffset", 0x10: "Offset", 0x20: "ConstOffsets",
                  0x40: "Sample", 0x80: "MinLod", 0x100: "MakeTexelAvailable", 0x200: "MakeTexelVisible",
                  0x400: "NonPrivateTexel", 0x800: "VolatileTexel", 0x1000: "SignExtend", 0x2000: "ZeroExtend",
                  0x4000: "Nontemporal", 0x10000: "Offsets"}
#: operands that change nothing the checker models (memory-model and signedness hints)
_NEUTRAL = 0x100 | 0x200 | 0x400 | 0x800 | 0x1000 | 0x2000 | 0x4000
_BORDERS = {"FLOAT_TRANSPARENT_BLACK": (0, 0, 0, 0), "INT_TRANSPARENT_BLACK": (0, 0, 0, 0),
            "FLOAT_OPAQUE_BLACK": (0, 0, 0, 1), "INT_OPAQUE_BLACK": (0, 0, 0, 1),
            "FLOAT_OPAQUE_WHITE": (1, 1, 1, 1), "INT_OPAQUE_WHITE": (1, 1, 1, 1)}


@dataclass(frozen=True)
class ImageType:
    """An OpTypeImage's operands."""

    dim: str
    depth: int
    arrayed: bool
    multisampled: bool
    sampled: int  # 1: used with a sampler, 2: a storage image
    format: str  # the SPIR-V image format ("Rgba8", "Unknown", ...)

    @property
    def coords(self) -> int:
        return {"1D": 1, "Buffer": 1, "2D": 2, "3D": 3}.get(self.dim, 2)


def image_type(words: tuple[int, ...], image_format: str) -> ImageType | str:
    """The image type of an OpTypeImage's operand words, or why the checker refuses it."""
    dim = DIMS.get(words[2], f"Dim({words[2]})")
    t = ImageType(dim, words[3], bool(words[4]), bool(words[5]), words[6], image_format)
    if dim not in ("1D", "2D", "3D", "Buffer"):
        return f"OpTypeImage of Dim {dim} is not supported by the SPIR-V checker"
    if t.arrayed:
        return "arrayed images are not supported by the SPIR-V checker (a scenario binds none)"
    if t.multisampled and (dim != "2D" or t.sampled != 2):
        return "multisampled images other than 2D storage images are not supported by the SPIR-V checker"
    if t.sampled not in (1, 2):
        return "OpTypeImage with Sampled 0 (known only at run time) is not supported by the SPIR-V checker"
    return t


@dataclass
class ImageBinding:
    """An image bound to a descriptor: the resource's uid, VkFormat name, extent, mip levels and
    packed texels of every level, and the view: ``base_level`` and ``levels`` (None: to the last).
    A storage image's view is one level."""

    uid: str
    format: str
    width: int
    height: int
    mips: int
    data: bytes | bytearray | np.ndarray
    base_level: int = 0
    levels: int | None = None
    sampler: Sampler = field(default_factory=Sampler)
    depth: int = 1
    #: a texel buffer's view: the byte of ``data`` (the whole buffer) where its texels begin; the
    #: texels are ``width`` of one row and one level
    offset: int = 0
    #: a texel buffer (a buffer's range viewed as texels), not an image: a hazard on it is a
    #: buffer's, ordered by buffer barriers
    texel_buffer: bool = False
    #: samples a texel (a multisampled image: one level, each sample stored as a texel of its own
    #: after the texel's previous samples)
    samples: int = 1


def level_extent(width: int, height: int, depth: int, level: int) -> tuple[int, int, int]:
    return max(width >> level, 1), max(height >> level, 1), max(depth >> level, 1)


def level_offsets(fmt_name: str, width: int, height: int, mips: int, depth: int = 1) -> list[int]:
    """Byte offset of each mip level in the packed texels, and the total size last."""
    fmt = vkformat.lookup(fmt_name)
    size = fmt.texel_size if fmt is not None else 1
    out = [0]
    for level in range(mips):
        w, h, d = level_extent(width, height, depth, level)
        out.append(out[-1] + w * h * d * size)
    return out


def image_bytes(fmt_name: str, width: int, height: int, mips: int, loaded: bytes, loaded_levels: int) -> bytes:
    """An image's packed texels as the runner starts it: the levels its file gives, the rest
    generated from the last given one by a 2x2 box filter (the runner's linear blit; exact for
    even extents), or zeros without a file (the runner clears it)."""
    from kernellab.formats import texels
    offsets = level_offsets(fmt_name, width, height, mips)
    out = bytearray(offsets[-1])
    given = min(loaded_levels, mips)
    out[:offsets[given]] = bytes(loaded[:offsets[given]]).ljust(offsets[given], b"\0")
    fmt = vkformat.lookup(fmt_name)
    if 0 < given < mips and fmt is not None and not fmt.packed:
        w, h, _ = level_extent(width, height, 1, given - 1)
        last = np.frombuffer(bytes(out[offsets[given - 1]:offsets[given]]), fmt.dtype).reshape(h, w, fmt.channels)
        chain = texels.mip_chain(texels.decode(fmt, last), mips - given + 1)
        for k, level in enumerate(chain[1:], start=given):
            out[offsets[k]:offsets[k + 1]] = texels.encode(fmt, level).tobytes()
    return bytes(out)


class BoundImage:
    """One image resource in a dispatch: its format, extent, levels and texel region."""

    def __init__(self, b: ImageBinding, region: Region):
        fmt = vkformat.lookup(b.format)
        if fmt is None or fmt.packed or fmt.encoding is not None or fmt.numeric == "BOOL":
            raise InputError(f"image {b.uid}: format {b.format} is not supported by the SPIR-V checker")
        self.uid, self.fmt, self.region = b.uid, fmt, region
        self.extent = (b.width, b.height, b.depth)
        self.offsets = np.asarray(level_offsets(b.format, b.width, b.height, b.mips, b.depth), np.int64)
        self.mips = b.mips
        self.samples = b.samples

    def level_size(self, level: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        w, h, d = self.extent
        return tuple(np.maximum(np.right_shift(n, level), 1) for n in (w, h, d))  # type: ignore[return-value]

    def texels(self, level: np.ndarray, x: np.ndarray, y: np.ndarray, z: np.ndarray,
               sample: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Byte address and texel index within its level of each (level, x, y, z) and sample,
        and which lie outside the level's extent (or name a level or sample the image lacks)."""
        s = np.zeros((), np.int64) if sample is None else sample
        bad = (level < 0) | (level >= self.mips) | (s < 0) | (s >= self.samples)
        lv = np.clip(level, 0, self.mips - 1)
        w, h, d = self.level_size(lv)
        bad = bad | (x < 0) | (x >= w) | (y < 0) | (y >= h) | (z < 0) | (z >= d)
        index = np.where(bad, 0, (z * h + y) * w + x)
        return self.offsets[lv] + (index * self.samples + np.where(bad, 0, s)) * self.fmt.texel_size, index, bad


@dataclass(frozen=True)
class Handle:
    """An image, sampled image or sampler as a shader value: the bound image, the view's levels
    and, for a sampled image, the sampler. Descriptors are uniform: one handle for all lanes."""

    image: BoundImage
    base_level: int
    levels: int
    sampler: Sampler | None = None
    storage: bool = False


def bind(module: Any, bindings: Mapping[tuple[int, int], Any], group_size: int, invocations: int
         ) -> tuple[dict[int, Handle], dict[tuple[str, int, int], Region]]:
    """Handles of the module's image variables (OpVariable in UniformConstant) and the regions of
    the images they name (keyed as the dispatch keys buffers: uid, 0, size)."""
    handles: dict[int, Handle] = {}
    owners: dict[tuple[str, int, int], Region] = {}
    bound: dict[str, BoundImage] = {}
    used = _used_ids(module)

    def bound_image(b: ImageBinding) -> BoundImage:
        img = bound.get(b.uid)
        if img is None:
            data = b.data.tobytes() if isinstance(b.data, np.ndarray) else bytes(b.data)
            size = level_offsets(b.format, b.width, b.height, b.mips, b.depth)[-1] * b.samples
            if len(data) < b.offset + size:
                raise InputError(f"image {b.uid}: {len(data) - b.offset} bytes of texels for {size} bytes of levels")
            region = Region.make(b.uid, STORAGE, GLOBAL, 1, size, data[b.offset:b.offset + size], writable=False)
            img = bound[b.uid] = BoundImage(b, region)
            fmt = img.fmt
            who = np.int32 if invocations < 2 ** 31 else np.int64
            if accessor_bytes(size, fmt.texel_size, who) > MAX_BATCH_MEMORY:  # refused before allocating
                raise InputError(f"image {b.uid} needs {accessor_bytes(size, fmt.texel_size, who) >> 20} MiB to record "
                                 f"its accesses, past the checker's limit of {MAX_BATCH_MEMORY >> 20} MiB")
            region.granule = fmt.texel_size if region.data.size % fmt.texel_size == 0 else 1
            region.track_accessors(fmt.texel_size, who)
            owners[(b.uid, b.offset, size)] = region
        return img

    for vid, var in module.variables.items():
        ptr_t = module.types[var.words[0]]
        if ptr_t.storage != "UniformConstant" or vid not in used:
            continue
        t = ptr_t.elem
        if t is None or t.kind not in ("image", "sampled_image", "sampler"):
            what = t.kind if t is not None else "?"
            raise module.fail(var, f"a UniformConstant variable of type {what} is not supported by the SPIR-V checker "
                                   "(images, samplers and combined image samplers are; arrays of them are not)")
        ds, bd = module.decorated(vid, "DescriptorSet"), module.decorated(vid, "Binding")
        if ds is None or bd is None:
            raise module.fail(var, f"image variable %{vid} has no DescriptorSet/Binding decoration")
        b = bindings.get((ds[0], bd[0]))
        if b is None:
            raise InputError(f"the shader uses descriptor set {ds[0]} binding {bd[0]} but the dispatch binds "
                             "nothing there")
        if not isinstance(b, ImageBinding):
            raise InputError(f"the shader uses descriptor set {ds[0]} binding {bd[0]} as an image but the dispatch "
                             f"binds buffer {getattr(b, 'uid', '?')} there")
        if t.kind == "sampler":
            # a sampler bound on its own (a SAMPLER descriptor): the binding's image carries it;
            # OpSampledImage pairs it with a sampled image (texture2D)
            handles[vid] = Handle(bound_image(b), 0, 1, b.sampler, False)
            continue
        it = module.image_types[t.elem.id if t.kind == "sampled_image" else t.id]
        storage = t.kind == "image" and it.sampled == 2
        if not 0 <= b.base_level < b.mips:
            raise InputError(f"image {b.uid}: lod {b.base_level} but it has {b.mips} mip levels")
        img = bound_image(b)
        if storage and img.region.shadow is None:
            img.region.writable = True
            img.region.shadow = Shadow(img.region.data.size // img.region.granule, group_size, across_groups=True)
        levels = b.mips - b.base_level if b.levels is None else b.levels
        if storage:
            levels = 1
        # a sampled image without its sampler (texture2D) gets one from OpSampledImage
        handles[vid] = Handle(img, b.base_level, levels, b.sampler if t.kind == "sampled_image" else None, storage)
    return handles, owners


def _used_ids(module: Any) -> set[int]:
    out: set[int] = set()
    for fn in module.functions.values():
        for blk in fn.blocks.values():
            for inst in blk.insts:
                out.update(inst.words)
    return out


# ---- instructions ---------------------------------------------------------------------------------

def _handle(mach: Any, inst: Any, id_: int) -> Handle:
    v = mach.values.get(id_)
    if not isinstance(v, Handle):
        raise mach.m.fail(inst, f"{inst.op} of an image chosen per invocation (or not an image) is not supported by "
                                "the SPIR-V checker")
    return v


def _operands(mach: Any, inst: Any, start: int) -> dict[str, list[int]]:
    """The image operands from word ``start`` (the mask) on: name -> its <id>s. Operands the
    checker does not model are refused by name."""
    w = inst.words
    if len(w) <= start:
        return {}
    mask, pos, out = w[start], start + 1, {}
    for bit in sorted(_OPERAND_IDS):
        if mask & bit:
            n = _OPERAND_IDS[bit]
            out[_OPERAND_NAMES[bit]] = list(w[pos:pos + n])
            pos += n
    unknown = mask & ~sum(_OPERAND_IDS)
    if unknown:
        raise mach.m.fail(inst, f"{inst.op} with image operands {unknown:#x} is not supported by the SPIR-V checker")
    return out


def _components(v: Any, n: int, count: int) -> list[np.ndarray]:
    """The first ``n`` components of a scalar or vector value, each broadcast to ``count`` lanes."""
    parts = list(v) if isinstance(v, tuple) else [v]
    return [np.broadcast_to(np.asarray(p), (count,)) for p in parts[:n]]


def _ints(v: np.ndarray) -> np.ndarray:
    """Integer coordinates (held unsigned by the interpreter) as signed numbers."""
    v = np.asarray(v)
    if v.dtype.kind == "u":
        return v.astype(v.dtype.str.replace("u", "i")).astype(np.int64)
    return v.astype(np.int64)


def _int_coords(mach: Any, h: Handle, id_: int, lanes: np.ndarray, offset: list[np.ndarray] | None = None
                ) -> list[np.ndarray]:
    n = _ncoords(mach, id_)
    # at most x, y, z: clspv passes OpenCL's int4 coordinate of an image3d_t whole (its w unused)
    xyz = [_ints(c)[lanes] for c in _components(mach.values[id_], n, mach.L)][:3]
    if offset:
        xyz = [c + o[lanes] for c, o in zip(xyz, offset)] + xyz[len(offset):]
    return xyz + [np.zeros(lanes.size, np.int64)] * (3 - len(xyz))


def _ncoords(mach: Any, id_: int) -> int:
    v = mach.values[id_]
    return len(v) if isinstance(v, tuple) else 1


def _offset(mach: Any, ops: dict[str, list[int]]) -> list[np.ndarray] | None:
    ids = ops.get("ConstOffset") or ops.get("Offset")
    if not ids:
        return None
    v = mach.values[ids[0]]
    return [np.broadcast_to(_ints(c), (mach.L,)) for c in (v if isinstance(v, tuple) else (v,))]


def _report(mach: Any, inst: Any, h: Handle, lanes: np.ndarray, bad: np.ndarray, level: np.ndarray,
            xyz: list[np.ndarray], access: str, sample: np.ndarray | None = None) -> None:
    w, hh, d = h.image.level_size(np.clip(level[bad], 0, h.image.mips - 1))
    coords = np.stack([c[bad] for c in xyz], axis=1)
    extents = np.stack([w, hh, d], axis=1)
    mach.rec.out_of_bounds(h.image.uid, "image", inst.index, access, mach.lane_global[lanes[bad]], None,
                           h.image.offsets[np.clip(level[bad], 0, h.image.mips - 1)], int(h.image.region.size),
                           texels=(coords, extents, level[bad]),
                           samples=None if sample is None else (sample[bad], h.image.samples))


def _fetch(mach: Any, inst: Any, h: Handle, lanes: np.ndarray, level: np.ndarray, xyz: list[np.ndarray],
           access: str = "read", sample: np.ndarray | None = None) -> np.ndarray:
    """Texels (n, 4) as the shader reads them (RGBA, missing components 0 and alpha 1); those
    outside the level are reported and read as (0, 0, 0, 1)."""
    img = h.image
    addr, index, bad = img.texels(level, xyz[0], xyz[1], xyz[2], sample)
    if bad.any():
        _report(mach, inst, h, lanes, bad, level, xyz, access, sample)
    ok = ~bad
    ts = img.fmt.texel_size
    mach._track(img.region, lanes[ok], addr[ok], ts, READ, inst, index[ok])
    out = np.zeros((lanes.size, 4), np.float64 if not _integer(img) else np.int64)
    out[:, 3] = 1
    raw = img.region.data[addr[ok][:, None] + np.arange(ts)]
    stored = np.ascontiguousarray(raw).view(img.fmt.dtype).reshape(-1, img.fmt.channels)
    out[ok] = _rgba(img, stored, out[ok])
    return out


def _integer(img: BoundImage) -> bool:
    return img.fmt.numeric in ("UINT", "SINT")


def _rgba(img: BoundImage, stored: np.ndarray, base: np.ndarray) -> np.ndarray:
    from kernellab.formats import texels
    values = stored.astype(np.int64) if _integer(img) else texels.decode(img.fmt, stored)
    out = base.copy()
    for k, c in enumerate(img.fmt.components):
        if c in "RGBA":
            out[:, "RGBA".index(c)] = values[:, k]
        elif c == "D":
            out[:, 0] = values[:, k]
    return out


def _result(mach: Any, rt: Type, lanes: np.ndarray, values: np.ndarray) -> Any:
    """A result of type ``rt`` (a vector or scalar) from (n, k) values of the active lanes."""
    st = rt.elem if rt.kind == "vector" and rt.elem is not None else rt
    n = rt.count if rt.kind == "vector" else 1
    comps = []
    for k in range(n):
        col = np.zeros(mach.L, st.dtype)
        v = values[:, k]
        col[lanes] = v.astype(np.int64).astype(st.dtype) if st.kind == "int" else v.astype(st.dtype)
        comps.append(col)
    return tuple(comps) if rt.kind == "vector" else comps[0]


def _sample(mach: Any, ops: dict[str, list[int]], lanes: np.ndarray) -> np.ndarray | None:
    """The ``Sample`` image operand's index per active lane (None: not given, sample 0)."""
    ids = ops.get("Sample")
    return None if not ids else _ints(np.broadcast_to(mach.values[ids[0]], (mach.L,)))[lanes]


def _level(mach: Any, h: Handle, ops: dict[str, list[int]], lanes: np.ndarray) -> np.ndarray:
    lod = ops.get("Lod")
    rel = np.zeros(lanes.size, np.int64) if not lod else _ints(np.broadcast_to(mach.values[lod[0]], (mach.L,)))[lanes]
    # a level past the view's is outside the image as the shader sees it
    return np.where((rel >= 0) & (rel < h.levels), h.base_level + rel, -1)


def image_read(mach: Any, inst: Any, m: np.ndarray, full: bool) -> None:
    """OpImageRead (imageLoad) and OpImageFetch (texelFetch)."""
    w = inst.words
    h = _handle(mach, inst, w[2])
    ops = _operands(mach, inst, 4)
    refused = set(ops) - {"Lod", "ConstOffset", "Offset", "Sample",
                          *(_OPERAND_NAMES[b] for b in _OPERAND_NAMES if b & _NEUTRAL)}
    if refused or (inst.op == "OpImageRead" and "Lod" in ops):
        raise mach.m.fail(inst, f"{inst.op} with image operands {', '.join(sorted(refused or {'Lod'}))} is not "
                                "supported by the SPIR-V checker")
    lanes = mach._lanes(m, full)
    xyz = _int_coords(mach, h, w[3], lanes, _offset(mach, ops))
    values = _fetch(mach, inst, h, lanes, _level(mach, h, ops, lanes), xyz, sample=_sample(mach, ops, lanes))
    mach.set(w[1], _result(mach, mach.m.types[w[0]], lanes, values), m, full)


def image_write(mach: Any, inst: Any, m: np.ndarray, full: bool) -> None:
    """OpImageWrite (imageStore): texels converted to the image's format; writes outside the
    level are reported and dropped."""
    from kernellab.formats import texels
    w = inst.words
    h = _handle(mach, inst, w[0])
    ops = _operands(mach, inst, 3)
    refused = set(ops) - {"Sample", *(_OPERAND_NAMES[b] for b in _OPERAND_NAMES if b & _NEUTRAL)}
    if refused:
        raise mach.m.fail(inst, f"OpImageWrite with image operands {', '.join(sorted(refused))} is not supported by "
                                "the SPIR-V checker")
    img = h.image
    lanes = mach._lanes(m, full)
    xyz = _int_coords(mach, h, w[1], lanes)
    level = np.full(lanes.size, h.base_level, np.int64)
    sample = _sample(mach, ops, lanes)
    addr, index, bad = img.texels(level, xyz[0], xyz[1], xyz[2], sample)
    if bad.any():
        _report(mach, inst, h, lanes, bad, level, xyz, "write", sample)
    ok = ~bad
    lanes, addr, index = lanes[ok], addr[ok], index[ok]
    given = _components(mach.values[w[2]], 4, mach.L)
    rgba = [g[lanes] for g in given] + [None] * (4 - len(given))
    cols = []
    for c in img.fmt.components:
        v = rgba["RGBA".index(c)] if c in "RGBA" else rgba[0]
        cols.append(np.zeros(lanes.size) if v is None else v)
    if _integer(img):
        signed = img.fmt.numeric == "SINT"
        stored = np.stack([(_ints(c) if signed else np.asarray(c).astype(np.int64)) for c in cols], axis=1
                          ).astype(img.fmt.dtype) if cols else np.zeros((lanes.size, 0), img.fmt.dtype)
    else:
        # a normalized code is lavapipe's (float32 product, a tie to even): another device may store the
        # other integer nearest the scaled value (texels.encode), so a UNORM/SNORM byte may differ by one
        stored = texels.encode(img.fmt, np.stack([np.asarray(c, np.float64) for c in cols], axis=1))
    ts = img.fmt.texel_size
    raw = np.ascontiguousarray(stored.astype(img.fmt.dtype)).view(np.uint8).reshape(-1, ts)
    mach._track(img.region, lanes, addr, ts, WRITE, inst, index, raw if ts <= 8 else None)
    img.region.data[addr[:, None] + np.arange(ts)] = raw


def _wrap(i: np.ndarray, size: np.ndarray, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """An integer texel coordinate after the sampler's address mode, and whether it is a border
    texel (clamp to border only)."""
    if mode == "REPEAT":
        return np.mod(i, size), np.zeros(i.shape, bool)
    if mode == "MIRRORED_REPEAT":
        t = np.mod(i, 2 * size) - size
        mirror = np.where(t >= 0, t, -(1 + t))
        return (size - 1) - mirror, np.zeros(i.shape, bool)
    if mode == "CLAMP_BORDER":
        border = (i < 0) | (i >= size)
        return np.clip(i, 0, size - 1), border
    return np.clip(i, 0, size - 1), np.zeros(i.shape, bool)


def _border(s: Sampler) -> tuple[float, ...]:
    if s.border_color.endswith("CUSTOM_EXT"):
        return tuple(s.custom_border_color or (0, 0, 0, 0))
    return _BORDERS.get(s.border_color, (0, 0, 0, 0))


def _filter(mach: Any, inst: Any, h: Handle, lanes: np.ndarray, level: np.ndarray, coords: list[np.ndarray],
            linear: np.ndarray, offset: list[np.ndarray] | None) -> np.ndarray:
    """One level's filtered value (n, 4): nearest texel or the linear blend of its 2^dims
    neighbours, each coordinate through the address mode (Vulkan's "Texel Filtering")."""
    s = h.sampler or Sampler()
    sizes = h.image.level_size(level)
    dims = len(coords)
    lo, frac = [], []
    for k in range(dims):
        u = coords[k] * sizes[k]
        if offset is not None and k < len(offset):
            u = u + offset[k][lanes]
        base = np.where(linear, np.floor(u - 0.5), np.floor(u))
        lo.append(base.astype(np.int64))
        frac.append(np.where(linear, (u - 0.5) - base, 0.0))
    out = np.zeros((lanes.size, 4))
    border = np.asarray(_border(s), np.float64)
    for corner in range(1 << dims):
        weight = np.ones(lanes.size)
        xyz, outside = [], np.zeros(lanes.size, bool)
        for k in range(dims):
            step = (corner >> k) & 1
            if step:
                weight = weight * frac[k]
            else:
                weight = weight * np.where(linear, 1 - frac[k], 1.0)
            i, b = _wrap(lo[k] + step, sizes[k], s.address_mode)
            xyz.append(i)
            outside |= b
        need = (weight > 0) | (corner == 0)
        xyz += [np.zeros(lanes.size, np.int64)] * (3 - dims)
        vals = np.broadcast_to(border, (lanes.size, 4)).copy()
        inside = need & ~outside
        if inside.any():
            vals[inside] = _fetch(mach, inst, h, lanes[inside], level[inside], [c[inside] for c in xyz])
        out += weight[:, None] * vals
    return out


def image_sample(mach: Any, inst: Any, m: np.ndarray, full: bool) -> None:
    """OpImageSampleExplicitLod (textureLod, and texture where glslang makes the level 0)."""
    w = inst.words
    h = _handle(mach, inst, w[2])
    if h.sampler is None:
        raise mach.m.fail(inst, "OpImageSampleExplicitLod of an image without a sampler")
    ops = _operands(mach, inst, 4)
    refused = set(ops) - {"Lod", "ConstOffset", "Offset", *(_OPERAND_NAMES[b] for b in _OPERAND_NAMES if b & _NEUTRAL)}
    if refused or "Lod" not in ops:
        raise mach.m.fail(inst, f"OpImageSampleExplicitLod with image operands {', '.join(sorted(refused)) or 'Grad'} "
                                "is not supported by the SPIR-V checker (an explicit Lod is)")
    s = h.sampler
    lanes = mach._lanes(m, full)
    n = {"1D": 1, "Buffer": 1, "3D": 3}.get(_image_dim(mach, w[2]), 2)
    coords = [np.asarray(c, np.float64)[lanes] for c in _components(mach.values[w[3]], n, mach.L)]
    q = h.levels - 1
    lam = np.clip(np.broadcast_to(np.asarray(mach.values[ops["Lod"][0]], np.float64), (mach.L,))[lanes], 0.0, q)
    linear = np.where(lam <= 0, s.mag_filter == "LINEAR", s.min_filter == "LINEAR")
    offset = _offset(mach, ops)
    if s.mip_filter == "LINEAR":
        d0 = np.floor(lam).astype(np.int64)
        d1 = np.minimum(d0 + 1, q)
        delta = lam - d0
        a = _filter(mach, inst, h, lanes, h.base_level + d0, coords, linear, offset)
        values = a
        if (delta > 0).any():
            sel = delta > 0
            b = _filter(mach, inst, h, lanes[sel], h.base_level + d1[sel], [c[sel] for c in coords], linear[sel],
                        offset)
            values = a.copy()
            values[sel] = (1 - delta[sel, None]) * a[sel] + delta[sel, None] * b
    else:
        d = np.clip(np.ceil(lam + 0.5).astype(np.int64) - 1, 0, q)
        values = _filter(mach, inst, h, lanes, h.base_level + d, coords, linear, offset)
    mach.set(w[1], _result(mach, mach.m.types[w[0]], lanes, values), m, full)


def _image_dim(mach: Any, id_: int) -> str:
    t = mach.m.types[mach.m.type_of[id_]]
    if t.kind == "sampled_image" and t.elem is not None:
        t = t.elem
    it = mach.m.image_types.get(t.id)
    return it.dim if it is not None else "2D"


def image_query(mach: Any, inst: Any, m: np.ndarray, full: bool) -> None:
    """OpImageQuerySize(Lod), OpImageQueryLevels, OpImageQuerySamples (imageSize, textureSize,
    textureQueryLevels, imageSamples) of the bound view."""
    w = inst.words
    h = _handle(mach, inst, w[2])
    rt = mach.m.types[w[0]]
    st = rt.elem if rt.kind == "vector" and rt.elem is not None else rt
    if inst.op == "OpImageQueryLevels":
        mach.set(w[1], np.asarray(h.levels, st.dtype), m, full)
        return
    if inst.op == "OpImageQuerySamples":
        mach.set(w[1], np.asarray(h.image.samples, st.dtype), m, full)
        return
    rel = np.asarray(0) if inst.op == "OpImageQuerySize" else _ints(mach.values[w[3]])
    # a level of detail outside the view is undefined; the checker answers with the clamped level
    level = h.base_level + np.clip(rel, 0, h.levels - 1)
    sizes = h.image.level_size(level)
    n = rt.count if rt.kind == "vector" else 1
    parts = tuple(np.asarray(sizes[k]).astype(st.dtype) for k in range(n))
    mach.set(w[1], parts if rt.kind == "vector" else parts[0], m, full)


def image_handle(mach: Any, inst: Any, m: np.ndarray, full: bool) -> None:
    """OpImage (the image of a sampled image) and OpSampledImage (an image with a sampler)."""
    w = inst.words
    h = _handle(mach, inst, w[2])
    if inst.op == "OpImage":
        mach.values[w[1]] = Handle(h.image, h.base_level, h.levels, None, h.storage)
    else:
        sampler = _handle(mach, inst, w[3]).sampler
        mach.values[w[1]] = Handle(h.image, h.base_level, h.levels, sampler, False)


def texel_pointer(mach: Any, inst: Any, m: np.ndarray, full: bool) -> None:
    """OpImageTexelPointer: a pointer to one texel of a 32-bit single-component storage image,
    for image atomics; coordinates outside the level are out of bounds when it is used."""
    w = inst.words
    h = _handle(mach, inst, w[2])
    pointee = mach.m.types[w[0]].elem
    img = h.image
    if pointee is None or not pointee.scalar or img.fmt.channels != 1 or pointee.nbytes != img.fmt.texel_size:
        raise mach.m.fail(inst, f"OpImageTexelPointer into {img.fmt.name} (image atomics need a single 32- or "
                                "64-bit component format)")
    lanes = mach.all_lanes
    xyz = _int_coords(mach, h, w[3], lanes)
    level = np.full(mach.L, h.base_level, np.int64)
    # the Sample operand: which sample of a multisampled image (0 for any other image)
    sample = _ints(np.broadcast_to(mach.values[w[4]], (mach.L,))) if img.samples > 1 else None
    addr, index, bad = img.texels(level, xyz[0], xyz[1], xyz[2], sample)
    # outside the level, the element a finding names is the texel's row-major index all the same
    width, height, _ = img.level_size(level)
    index = np.where(bad, (xyz[2] * height + xyz[1]) * width + xyz[0], index)
    mach.set(w[1], Ptr(img.region, pointee, np.where(bad, 0, addr), index, bad), m, full)


HANDLERS: dict[str, Callable[[Any, Any, np.ndarray, bool], None]] = {
    "OpImageRead": image_read,
    "OpImageFetch": image_read,
    "OpImageWrite": image_write,
    "OpImageSampleExplicitLod": image_sample,
    "OpImageQuerySize": image_query,
    "OpImageQuerySizeLod": image_query,
    "OpImageQueryLevels": image_query,
    "OpImageQuerySamples": image_query,
    "OpImage": image_handle,
    "OpSampledImage": image_handle,
    "OpImageTexelPointer": texel_pointer,
}
