"""OpenCL images and samplers in the proof (docs/verify-prove.md, "Images and samplers").

clspv compiles an ``image2d_t`` argument to a ``UniformConstant`` image variable (a sampled image
for ``read_only``, a storage image for ``write_only`` and ``read_write``), a ``sampler_t``
argument or a sampler the source defines (clspv's ``LiteralSampler``) to a sampler variable, and
the built-ins to ``OpSampledImage`` + ``OpImageSampleExplicitLod`` (a read through a sampler),
``OpImageFetch`` (a sampler-less read of a ``read_only`` image), ``OpImageRead`` (of a
``read_write`` one), ``OpImageWrite`` and ``OpImageQuerySize[Lod]`` (``get_image_width``...).

What the proof takes of them:

- **contents** are unconstrained, as a buffer's: every read gives any value (a float's value is
  not modelled anyway), and a read through a sampler gives any value whatever the coordinates:
  the sampler's addressing mode defines what an out-of-range read returns (a clamped texel, the
  border colour; ``CLK_ADDRESS_NONE`` and a sampler-less read leave the value undefined, OpenCL C
  "Image Read and Write Functions"), so no read is an out-of-bounds finding.
- **extent** (a kernel-instantiation launch's, :class:`Extent`): its global size in the image's
  dimensions, the image a kernel-instantiation launch creates (``runtime/instantiation.py``: an
  RGBA float image of the global size), so that the replay of a counterexample runs on the image
  the proof assumed. A texel is 16 bytes.
- **writes** are accesses of the image object at their texel: two invocations writing one texel
  race (across work-groups always, within one unless a barrier with ``CLK_IMAGE_MEM_FENCE``
  semantics, SPIR-V's ``ImageMemory``, separates them); a write outside the extent is undefined
  behaviour (OpenCL C "Built-in Image Write Functions": the coordinates must be within the
  image) and is an out-of-bounds finding.
- **reads of a ``read_write`` image** (``OpImageRead``) are accesses of their texel too (a read and
  another invocation's write of the texel race), within the extent (outside it no texel is read:
  an undefined value). A ``read_only`` image is never written in the launch (its type cannot be:
  clspv gives it a sampled-image type, which ``OpImageWrite`` does not take), so its reads are not
  recorded. Each image argument is its own object, as each buffer is.

A scenario's images (:func:`scenario_image`) have the extent of the view the dispatch binds and
texels of their format's size, and a sampler-less read outside one is an out-of-bounds finding (as
the dynamic SPIR-V checker reports it: Vulkan leaves it undefined without robustness). One image
bound twice in a dispatch is refused (:func:`shared_image`).

Anything else on images (gathers, depth comparisons, image atomics, ``get_image_channel_*``,
mip levels other than 0, an image whose extent the launch does not give) is ``unknown`` naming
the instruction.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import z3

from kernellab.records import dataclass
from kernellab.spirvsim.module import Inst, Module

#: the env key of the invocation's image barrier phase (a tuple: carried out of called functions)
PHASE = ("phase", "Image")
#: SPIR-V's ImageMemory memory-semantics bit (OpenCL C's CLK_IMAGE_MEM_FENCE)
IMAGE_MEMORY = 0x800
#: bytes of a texel in the image a launch creates (RGBA, 32-bit float channels)
TEXEL_BYTES = 16
#: the storage class the proof gives image accesses (:class:`~kernellab.verify.prove.encode.AccessRecord`)
STORAGE = "Image"

#: the instructions besides ``OpImage*`` that :func:`step` looks at
HOOKED = frozenset({"OpLoad", "OpControlBarrier", "OpSampledImage"})
_HANDLE_KINDS = ("image", "sampler", "sampled_image")
_SAMPLE_OPS = ("OpImageSampleExplicitLod", "OpImageSampleImplicitLod")


@dataclass(frozen=True)
class Extent:
    """What a launch gives of one image: its coordinates (``dims``), its extent (None: the launch's
    global size in those dimensions, an OpenCL kernel-instantiation launch's image), the bytes of a
    texel, and whether a read outside it is an out-of-bounds finding (Vulkan, as the dynamic
    checker has it) or only an undefined value (OpenCL)."""

    dims: int
    size: tuple[int, int, int] | None = None
    texel_bytes: int = TEXEL_BYTES
    bounded_reads: bool = False

    def bytes(self, global_size: tuple[int, ...]) -> int:
        """The image's bytes (texels x texel bytes) at the launch's ``global_size``."""
        extent = self.size or tuple(global_size) + (1, 1, 1)
        total = self.texel_bytes
        for d in range(self.dims):
            total *= extent[d]
        return total


@dataclass(frozen=True)
class Handle:
    """An image or sampler variable's object, as an ``OpLoad`` of it gives (``sampler`` set for an
    ``OpSampledImage``)."""

    root: int
    sampler: int | None = None

    def eq(self, other: Any) -> bool:  # encode._ite compares values so
        return self == other


def image_dims(module: Module, vid: int) -> int | None:
    """The coordinates of the image variable ``vid`` (1, 2, 3), None where it is no image."""
    t = module.types[module.type_of[vid]]
    if t.elem is None or t.elem.kind != "image":
        return None
    it = module.image_types.get(t.elem.id)
    return it.coords if it is not None else None


def variable_at(module: Module, binding: tuple[int, int]) -> int | None:
    """The variable at (descriptor set, binding)."""
    for vid in module.variables:
        s, b = module.decorated(vid, "DescriptorSet"), module.decorated(vid, "Binding")
        if s is not None and b is not None and (s[0], b[0]) == binding:
            return vid
    return None


def step(enc: Any, env: dict[Any, Any], pred: Any, inst: Inst) -> bool:
    """Encode ``inst`` if it is about images or samplers (True); False leaves it to the encoder.
    A barrier is both: it starts a new image phase where it orders image memory, then the
    encoder does the rest."""
    op, w = inst.op, inst.words
    if op == "OpControlBarrier":
        _barrier(enc, env, pred, inst)
        return False
    if op == "OpLoad":
        t = enc.m.types.get(w[0])
        if t is None or t.kind not in _HANDLE_KINDS:
            return False
        p = enc.value(env, w[2])
        if getattr(p, "storage", None) != "UniformConstant":
            raise enc.unmodelled(inst, f"a {t.kind} that is not a kernel argument or a sampler the source defines")
        env[w[1]] = Handle(p.root)
        return True
    if not op.startswith(("OpImage", "OpSampledImage")):
        return False
    if op == "OpSampledImage":
        image, sampler = _handle(enc, env, inst, w[2]), _handle(enc, env, inst, w[3])
        env[w[1]] = Handle(image.root, sampler.root)
    elif op == "OpImage":  # the image of a sampled image
        env[w[1]] = Handle(_handle(enc, env, inst, w[2]).root)
    elif op in _SAMPLE_OPS or op == "OpImageFetch":
        # a read-only image (a sampled-image type): never written in the launch, so no race; out
        # of range it returns what the sampler's addressing mode says (or an undefined value)
        image = _handle(enc, env, inst, w[2])
        _lod_zero(enc, env, inst, 4)
        if op == "OpImageFetch" and _image(enc, inst, image.root).bounded_reads:  # Vulkan: out of range a finding
            offset, _ = _texel(enc, env, inst, image.root, enc.value(env, w[3]))
            _record(enc, env, pred, image.root, offset, "read", inst)
        env[w[1]] = enc.fresh(enc.m.types[w[0]], "texel")
    elif op == "OpImageRead":
        image = _handle(enc, env, inst, w[2])
        _no_operands(enc, inst, 4)
        offset, inside = _texel(enc, env, inst, image.root, enc.value(env, w[3]))
        bounded = _image(enc, inst, image.root).bounded_reads
        _record(enc, env, pred if bounded else z3.And(pred, inside), image.root, offset, "read", inst)
        env[w[1]] = enc.fresh(enc.m.types[w[0]], "texel")
    elif op == "OpImageWrite":
        image = _handle(enc, env, inst, w[0])
        _no_operands(enc, inst, 3)
        offset, _ = _texel(enc, env, inst, image.root, enc.value(env, w[1]))
        _record(enc, env, pred, image.root, offset, "write", inst)
    elif op in ("OpImageQuerySize", "OpImageQuerySizeLod"):
        image = _handle(enc, env, inst, w[2])
        if op == "OpImageQuerySizeLod":
            _lod_zero(enc, env, inst, 3, operand=True)
        t = enc.m.types[w[0]]
        extent = _extent(enc, inst, image.root)
        width = t.elem.width if t.kind == "vector" and t.elem is not None else t.width
        values = [z3.ZeroExt(width - 32, e) if width > 32 else z3.Extract(width - 1, 0, e) if width < 32 else e
                  for e in extent]
        env[w[1]] = tuple(values[:t.count]) if t.kind == "vector" else values[0]
    else:
        raise enc.unmodelled(inst, f"{op} (an image operation the proof does not model)")
    return True


def _handle(enc: Any, env: dict[Any, Any], inst: Inst, vid: int) -> Handle:
    h = enc.value(env, vid)
    if not isinstance(h, Handle):
        raise enc.unmodelled(inst, f"{inst.op} of an image or sampler chosen at run time")
    return h


def _no_operands(enc: Any, inst: Inst, at: int) -> None:
    """Image operands past ``at`` (none for OpenCL's sampler-less reads and writes)."""
    if len(inst.words) > at and inst.words[at] & ~0x3C00:  # NonPrivateTexel, VolatileTexel, Sign/ZeroExtend
        raise enc.unmodelled(inst, f"{inst.op} with image operands")


def _lod_zero(enc: Any, env: dict[Any, Any], inst: Inst, at: int, operand: bool = False) -> None:
    """The read is of mip level 0 (the only level a launch's image has): an explicit ``Lod`` 0,
    or no operand that chooses a level."""
    w = inst.words
    if operand:
        lod = enc.value(env, w[at])
    elif len(w) <= at or w[at] == 0:
        return
    elif w[at] == 0x2 and len(w) == at + 2:  # Lod alone
        lod = enc.value(env, w[at + 1])
    else:
        raise enc.unmodelled(inst, f"{inst.op} with image operands other than Lod")
    if not (z3.is_bv_value(lod) and lod.as_long() == 0):
        raise enc.unmodelled(inst, f"{inst.op} of a mip level other than 0")


def _image(enc: Any, inst: Inst, root: int) -> Extent:
    ext: Extent | None = enc.image_extents.get(root)
    if ext is None:
        raise enc.unmodelled(inst, "an image whose extent the launch does not give (one has it: an OpenCL "
                                   "image1d_t, image2d_t or image3d_t argument of a launch of as many dimensions, "
                                   "or a scenario's image or texel buffer of one sample)")
    return ext


def _extent(enc: Any, inst: Inst, root: int) -> list[Any]:
    """The image's width, height, depth (BV32; 1 past its dimensions)."""
    ext = _image(enc, inst, root)
    if ext.size is not None:
        return [z3.BitVecVal(ext.size[d] if d < ext.dims else 1, 32) for d in range(3)]
    ids = enc.ids
    return [z3.simplify(ids.num_groups[d] * ids.local_size[d]) if d < ext.dims else z3.BitVecVal(1, 32)
            for d in range(3)]


def _texel(enc: Any, env: dict[Any, Any], inst: Inst, root: int, coord: Any) -> tuple[Any, Any]:
    """The byte offset of the texel at ``coord`` in the image (texels row after row, then slice
    after slice), or one past the image where ``coord`` is outside it; and whether it is inside."""
    extent = _extent(enc, inst, root)
    if not all(z3.is_bv_value(e) for e in extent):
        raise enc.unmodelled(inst, f"{inst.op} with symbolic sizes (--prove-sizes): the image's extent, the "
                                   "global size, would be symbolic")
    parts = list(coord) if isinstance(coord, tuple) else [coord]
    ext = _image(enc, inst, root)
    dims, unit = ext.dims, ext.texel_bytes
    if len(parts) < dims or any(p.size() != 32 for p in parts[:dims]):
        raise enc.unmodelled(inst, f"{inst.op} with coordinates that are not {dims} 32-bit integers")
    inside = z3.And(*[z3.And(p >= 0, p < e) for p, e in zip(parts[:dims], extent)])  # signed: OpenCL's int
    linear = z3.BitVecVal(0, 64)
    scale = 1
    for p, e in zip(parts[:dims], extent):
        linear = linear + z3.ZeroExt(32, p) * scale
        scale *= e.as_long()
    # outside the image a write touches no texel: its offset is past the image, each invocation's
    # apart from the other's, so that it is an out-of-bounds finding and races with nothing
    outside = scale * unit + (0 if enc.tag == "A" else unit)
    return z3.simplify(z3.If(inside, linear * unit, z3.BitVecVal(outside, 64))), inside


def _record(enc: Any, env: dict[Any, Any], pred: Any, root: int, offset: Any, kind: str, inst: Inst) -> None:
    size = enc.image_extents[root].texel_bytes
    enc.record(env, pred, replace(enc.var_pointer(root), storage=STORAGE, offset=offset), size, kind, inst)
    enc.trace.accesses[-1].phase_sb = env.get(PHASE, z3.BitVecVal(0, 16))  # image accesses' own phase


def _barrier(enc: Any, env: dict[Any, Any], pred: Any, inst: Inst) -> None:
    sem = enc.value(env, inst.words[2])
    if not z3.is_bv_value(sem):
        return  # the encoder refuses it
    if (sem.as_long() | enc.pending_semantics) & IMAGE_MEMORY:
        phase = env.get(PHASE, z3.BitVecVal(0, 16))
        env[PHASE] = z3.simplify(z3.If(pred, phase + 1, phase))


def extents(images: dict[tuple[int, int], Extent], bindings: dict[int, tuple[int, int]]) -> dict[int, Extent]:
    """variable id -> the extent of each image the launch gives one (``images``, by binding)."""
    return {vid: images[key] for vid, key in bindings.items() if key in images}


def scenario_image(module: Module, key: tuple[int, int], binding: Any) -> Extent | None:
    """The extent of a scenario's image or texel buffer (a :class:`kernellab.spirvsim.ImageBinding`)
    bound at ``key``: its view's level (a texel buffer: one row of ``width`` texels), texels of its
    format's size; None for a multisampled image or a format without a texel size."""
    from kernellab.spirvsim.images import level_extent
    from kernellab.vkregistry import vkformat

    vid = variable_at(module, key)
    dims = image_dims(module, vid) if vid is not None else None
    fmt = vkformat.lookup(binding.format)
    if dims is None or fmt is None or not fmt.texel_size or binding.samples != 1:
        return None
    if binding.texel_buffer:
        size = (binding.width, 1, 1)
    else:
        size = level_extent(binding.width, binding.height, binding.depth, binding.base_level)
    return Extent(dims, size, fmt.texel_size, bounded_reads=True)


def is_image(binding: Any) -> bool:
    """Whether a scenario's binding (as the dynamic checker binds it) is an image or texel buffer."""
    from kernellab.spirvsim import ImageBinding
    return isinstance(binding, ImageBinding)


def shared_image(bound: dict[tuple[int, int], Any]) -> str | None:
    """Why a dispatch's images cannot be proven apart: one resource bound at two bindings (Vulkan
    allows it; the proof takes each binding as its own object), or None."""
    seen: dict[str, tuple[int, int]] = {}
    for key, b in sorted(bound.items()):
        if is_image(b):
            if b.uid in seen:
                return f"image {b.uid} bound twice (set {seen[b.uid][0]} binding {seen[b.uid][1]}, set {key[0]} " \
                       f"binding {key[1]}): one image seen through two bindings is not modelled"
            seen[b.uid] = key
    return None


def bind_scenario_image(launch: Any, module: Module, key: tuple[int, int], binding: Any) -> None:
    """Give the engine's ``launch`` the image a scenario binds at ``key`` (none: its accesses that
    need an extent are unknown)."""
    launch.names[key] = binding.uid
    ext = scenario_image(module, key, binding)
    if ext is not None:
        launch.images[key] = ext
        launch.buffer_sizes[key] = ext.bytes((1, 1, 1))
