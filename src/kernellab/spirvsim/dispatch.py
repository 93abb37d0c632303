"""Checking one ``vkCmdDispatch``: the entry point of the SPIR-V checker.

:func:`check_dispatch` takes what a dispatch binds — the compiled SPIR-V words and entry point,
the workgroup counts, specialization constants, push-constant bytes and the descriptors
(set, binding) -> :class:`Binding` — runs every invocation in the interpreter, batch of
workgroups by batch, and returns the findings, the buffers' contents afterwards and which bytes
of each buffer the dispatch read and wrote (what a check of hazards between dispatches needs).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import field
from typing import Any

import numpy as np

from kernellab.errors import InputError
from kernellab.records import dataclass
from kernellab.spirvsim import images
from kernellab.spirvsim.findings import Finding, Recorder, verdict
from kernellab.spirvsim.machine import Machine, eval_spec_op, flatten, refuse_unsupported, subgroup_barriers
from kernellab.spirvsim.memory import GLOBAL, GROUP, LANE, MAX_BATCH_MEMORY, Region, accessor_bytes, check_memory
from kernellab.spirvsim.module import SUPPORTED_BUILTINS, Module, enum_name, load
from kernellab.spirvsim.pointers import DeviceMemory
from kernellab.spirvsim.shadow import Shadow
from kernellab.spirvsim.subgroup import DEFAULT_SUBGROUP_SIZE, Layout
from kernellab.spirvsim.types import Type, scalar_sizes

#: invocations run together in one batch (whole workgroups); bounds the NumPy arrays' length
DEFAULT_BATCH_INVOCATIONS = 16384
#: instructions one batch may execute before the run is stopped as endless (per lane batch)
DEFAULT_MAX_STEPS = 2_000_000
#: the documented limit of invocations x instructions for one dispatch (about a minute of checking)
DEFAULT_MAX_WORK = 4_000_000_000
#: the documented limit on shadow memory for the writable buffers of one dispatch
MAX_SHADOW_BYTES = 1 << 30


class BindingError(InputError):
    """A refusal of what the dispatch binds: at ``binding`` (set, binding, array element), or
    wherever it binds the buffer ``resource`` (a buffer bound twice: the later binding is the
    one refused), so that the caller names the binding in its own file (a scenario's JSON
    pointer, a script's ``BIND`` line) rather than the whole dispatch."""

    def __init__(self, message: str, binding: tuple[int, int, int] | None = None, resource: str | None = None):
        super().__init__(message)
        self.binding, self.resource = binding, resource


@dataclass
class Binding:
    """A buffer bound to a descriptor: the resource's uid, its bytes and the bound range."""

    uid: str
    data: bytes | bytearray | np.ndarray
    offset: int = 0
    range: int | None = None  # None: to the end of the buffer (VK_WHOLE_SIZE)


@dataclass
class BufferArray:
    """An array of buffers bound to one descriptor binding (``BIND BUFFER_ARRAY``): element k is
    ``elements[k]``, each its own buffer with its own bounds and shadow memory."""

    elements: tuple[Binding, ...]


@dataclass
class Footprint:
    """Bytes of a buffer's bound range the dispatch read and wrote (offsets from the range start)
    and, per ``unit`` bytes, the invocation (global number) and instruction (index in the
    module) that last read and wrote them (-1: none; None: not kept)."""

    uid: str
    offset: int
    read: np.ndarray
    written: np.ndarray
    unit: int = 1
    read_by: np.ndarray | None = None
    read_at: np.ndarray | None = None
    written_by: np.ndarray | None = None
    written_at: np.ndarray | None = None
    #: what the bytes are: a buffer's ("storage-buffer") or an image's texels ("image")
    storage: str = "storage-buffer"

    def accessor(self, byte: int, write: bool) -> tuple[int, int] | None:
        """(invocation, instruction) that last wrote (``write``) or read the byte at ``byte``
        past the range start, if kept."""
        by, at = (self.written_by, self.written_at) if write else (self.read_by, self.read_at)
        if by is None or at is None or not 0 <= byte // self.unit < by.size:
            return None
        lane, inst = int(by[byte // self.unit]), int(at[byte // self.unit])
        return (lane, inst) if lane >= 0 else None


@dataclass
class DispatchResult:
    findings: list[Finding]
    #: uid -> the whole buffer after the dispatch
    buffers: dict[str, bytes]
    footprints: dict[str, Footprint]
    invocations: int
    seconds: float
    local_size: tuple[int, int, int]
    verdict: str = "verified"
    stats: dict[str, Any] = field(default_factory=dict)
    #: (invocation, instruction) -> the invocation's ids and the instruction's place, as a
    #: finding's access names them (for hazards between dispatches)
    describe: Callable[[int, int], dict[str, Any]] | None = None


def check_dispatch(spirv: bytes | Sequence[int] | np.ndarray | Module, entry_point: str, workgroups: Sequence[int], *,
                   bindings: Mapping[tuple[int, int], Any] | None = None, push_constants: bytes = b"",
                   spec_constants: Mapping[int, int | float | bool] | None = None, checks: Collection[str] = (),
                   file: str = "<spirv>", batch_invocations: int = DEFAULT_BATCH_INVOCATIONS,
                   max_steps: int = DEFAULT_MAX_STEPS, max_work: int = DEFAULT_MAX_WORK,
                   timeout: float | None = None, subgroup_size: int = DEFAULT_SUBGROUP_SIZE,
                   addressable: Sequence[tuple[int, Binding]] = ()) -> DispatchResult:
    """Run one dispatch of ``entry_point`` with shadow memory and report its defects.

    ``workgroups`` is (x, y, z) counts; ``checks`` holds the ``--check`` kinds (``uninitialized``
    turns on the uninitialized-read tracker and makes its findings defects; ``all`` all kinds).
    Raises :class:`~kernellab.spirvsim.module.Unsupported` for a shader outside the supported
    subset and :class:`InputError` for a missing binding or a dispatch past the limits;
    :class:`~kernellab.errors.TimeLimitError` past ``timeout`` seconds (None: no limit).
    ``subgroup_size`` is the device's subgroup size (a power of two up to 128); ``addressable``
    the buffers a shader may reach by device address (``PhysicalStorageBuffer``), each with its
    base address (:func:`~kernellab.spirvsim.pointers.address_of`), whole buffers.
    ``spirv`` may be the module already read by :func:`~kernellab.spirvsim.module.load` for
    ``entry_point`` with these ``spec_constants`` (a caller checking several dispatches of one
    shader reads it once): it is run as it is.
    """
    started = time.perf_counter()
    deadline = time.monotonic() + timeout if timeout else None
    wg = tuple(int(x) for x in workgroups) + (1,) * (3 - len(workgroups))
    if len(wg) != 3 or min(wg) < 1:
        raise InputError(f"workgroup counts must be three positive numbers, not {tuple(workgroups)}")
    module = spirv if isinstance(spirv, Module) else load(spirv, entry_point, file=file, spec_constants=spec_constants,
                                                          eval_spec_op=eval_spec_op)
    refuse_unsupported(module)
    ls = module.local_size
    gs = ls[0] * ls[1] * ls[2]
    ngroups = wg[0] * wg[1] * wg[2]
    geometry = _Geometry(ls, wg)
    recorder = Recorder(lambda i: _where(module, i), geometry.who)
    uninitialized = bool({"uninitialized", "uninitialized-read", "all"} & set(checks))

    per_group = check_memory(*_variable_sizes(module), gs)
    batch_invocations = min(batch_invocations, max(1, MAX_BATCH_MEMORY // max(1, per_group)) * gs)
    buffers, owners = _bind_buffers(module, dict(bindings or {}), gs, ngroups * gs)
    device = _device_memory(module, addressable, owners, gs, ngroups * gs)
    if device is not None:
        bindings = dict(bindings or {})
        bindings.update({(-1, k): b for k, (_, b) in enumerate(addressable)})  # their original bytes
    handles, image_owners = images.bind(module, dict(bindings or {}), gs, ngroups * gs)
    both = {k[0] for k in owners} & {k[0] for k in image_owners}
    if both:  # a buffer bound as a texel buffer and as a storage or uniform buffer: one memory, two regions
        raise BindingError(f"buffer {min(both)} is bound twice with different ranges (as a texel buffer and a buffer); "
                           "overlapping bindings of one buffer are not supported by the SPIR-V checker", resource=min(both))
    owners.update(image_owners)
    shadow_bytes = sum(r.shadow.nbytes for r in owners.values() if r.shadow is not None)
    if shadow_bytes > MAX_SHADOW_BYTES:
        raise InputError(f"the writable buffers need {shadow_bytes >> 20} MiB of shadow memory, past the checker's "
                         f"limit of {MAX_SHADOW_BYTES >> 20} MiB (see docs/verify.md)")
    per_batch = max(1, batch_invocations // gs)
    steps = work = 0
    for first in range(0, ngroups, per_batch):
        count = min(per_batch, ngroups - first)
        regions = dict(buffers)
        regions.update(_batch_regions(module, count, gs, first, geometry, push_constants, subgroup_size))
        mach = Machine(module, regions, count * gs, gs, first, recorder, uninitialized=uninitialized,
                       max_steps=max_steps, deadline=deadline, subgroup_size=subgroup_size, device=device)
        mach.values.update(handles)
        mach.run_entry()
        steps += mach.steps
        work += mach.steps * count * gs
        if work > max_work and first + count < ngroups:
            raise InputError(f"the dispatch of {ngroups * gs} invocations needs more than {max_work} invocation-"
                             f"instructions (the checker's limit; {first + count} of {ngroups} workgroups ran): "
                             "check it with fewer workgroups (see docs/verify.md)")
    findings = recorder.findings()
    texel_buffers = {b.uid for b in (bindings or {}).values()
                     if isinstance(b, images.ImageBinding) and b.texel_buffer}
    out: dict[str, bytes] = {}
    footprints: dict[str, Footprint] = {}
    for (uid, offset, _), region in owners.items():
        # disjoint ranges of one buffer (elements of an array of buffers) land in one output
        new = bytearray(out[uid] if uid in out else _bytes_of(dict(bindings or {}), uid))
        new[offset:offset + region.size] = region.data[:region.size].tobytes()
        out[uid] = bytes(new)
        if region.read is not None and region.written is not None:
            units = -(-region.size // region.unit)
            read_by, read_at, written_by, written_at = (
                None if a is None else a[:units].copy()
                for a in (region.read_by, region.read_at, region.written_by, region.written_at))
            fp = Footprint(uid, offset, region.read[:region.size].copy(), region.written[:region.size].copy(),
                           region.unit, read_by=read_by, read_at=read_at, written_by=written_by, written_at=written_at,
                           storage="image" if region.storage == images.STORAGE and uid not in texel_buffers
                           else "storage-buffer")
            footprints[uid] = _joined(footprints[uid], fp) if uid in footprints else fp

    def describe(lane: int, inst: int) -> dict[str, Any]:
        return {"invocation": geometry.who(lane), **_where(module, inst)}
    return DispatchResult(findings, out, footprints, ngroups * gs, time.perf_counter() - started, ls,
                          verdict(findings, checks),
                          {"block_instructions": steps, "subgroups": uses_subgroups(module)}, describe)


class _Geometry:
    def __init__(self, local: tuple[int, int, int], groups: tuple[int, int, int]):
        self.local, self.groups = local, groups
        self.gs = local[0] * local[1] * local[2]

    def ids(self, lanes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(global, local, workgroup) ids, each (n, 3), of global invocation numbers."""
        g, i = lanes // self.gs, lanes % self.gs
        lx, ly, _ = self.local
        wx, wy, _ = self.groups
        local = np.stack([i % lx, (i // lx) % ly, i // (lx * ly)], axis=1)
        group = np.stack([g % wx, (g // wx) % wy, g // (wx * wy)], axis=1)
        return group * np.asarray(self.local) + local, local, group

    def who(self, lane: int) -> dict[str, list[int]]:
        glob, loc, grp = self.ids(np.asarray([lane]))
        return {"global": glob[0].tolist(), "local": loc[0].tolist(), "workgroup": grp[0].tolist()}


def _where(module: Module, index: int) -> dict[str, Any]:
    inst = module.insts[index]
    out: dict[str, Any] = {"instruction": inst.op, "word": inst.offset}
    if inst.line is not None:
        out["location"] = {"file": inst.line[0], "line": inst.line[1]}
        text = module.source_text(inst.line)
        if text is not None:
            out["source_line"] = text
    return out


def _joined(a: Footprint, b: Footprint) -> Footprint:
    """One footprint of two disjoint ranges of one buffer (bound as two elements of an array of
    buffers), over the bytes from the first range's start to the last one's end."""
    lo, hi = min(a.offset, b.offset), max(a.offset + a.read.size, b.offset + b.read.size)
    unit = a.unit
    units = -(-(hi - lo) // unit)
    out = Footprint(a.uid, lo, np.zeros(hi - lo, bool), np.zeros(hi - lo, bool), unit, storage=a.storage)
    for name in ("read_by", "read_at", "written_by", "written_at"):
        if getattr(a, name) is not None and getattr(b, name) is not None:
            setattr(out, name, np.full(units, -1, getattr(a, name).dtype))
    for fp in (a, b):
        start = fp.offset - lo
        out.read[start:start + fp.read.size] |= fp.read
        out.written[start:start + fp.written.size] |= fp.written
        for name in ("read_by", "read_at", "written_by", "written_at"):
            mine, theirs = getattr(out, name), getattr(fp, name)
            if mine is not None:
                first = start // unit
                mine[first:first + theirs.size] = np.where(theirs >= 0, theirs, mine[first:first + theirs.size])
    return out


def _bytes_of(bindings: dict[tuple[int, int], Any], uid: str) -> bytes:
    for b in (e for v in bindings.values() for e in (v.elements if isinstance(v, BufferArray) else (v,))):
        if b.uid == uid:
            return b.data.tobytes() if isinstance(b.data, np.ndarray) else bytes(b.data)
    return b""


def _bind_buffers(module: Module, bindings: dict[tuple[int, int], Binding | BufferArray], gs: int,
                  invocations: int) -> tuple[dict[int, Region | tuple[Region, ...]], dict[tuple[str, int, int], Region]]:
    regions: dict[int, Region | tuple[Region, ...]] = {}
    owners: dict[tuple[str, int, int], Region] = {}
    tracked = 0
    for vid, var in module.variables.items():
        ptr_t = module.types[var.words[0]]
        storage = ptr_t.storage
        if storage not in ("StorageBuffer", "Uniform"):
            continue
        if not _used(module, vid):
            continue
        ds, bd = module.decorated(vid, "DescriptorSet"), module.decorated(vid, "Binding")
        if ds is None or bd is None:
            raise module.fail(var, f"buffer variable %{vid} has no DescriptorSet/Binding decoration")
        key = (ds[0], bd[0])
        b = bindings.get(key)
        if b is None:
            raise InputError(f"the shader uses descriptor set {key[0]} binding {key[1]} but the dispatch binds "
                             "nothing there")
        pointee = ptr_t.elem
        assert pointee is not None
        if pointee.kind in ("array", "runtime_array") and isinstance(b, Binding):
            b = BufferArray((b,))  # one buffer bound to an array of them: its element 0
        if isinstance(b, BufferArray) and pointee.kind == "struct":
            raise BindingError(f"the shader uses descriptor set {key[0]} binding {key[1]} as one buffer but the "
                               f"dispatch binds an array of {len(b.elements)} buffers there", (*key, 0))
        if isinstance(b, BufferArray):
            pointee = pointee.elem
            assert pointee is not None
        if pointee.kind != "struct":
            raise module.fail(var, "a buffer variable whose type is not a block")
        writable = _writable(module, vid, storage, pointee)
        elements = b.elements if isinstance(b, BufferArray) else (b,)
        bound = []
        for element, e in enumerate(elements):
            data = e.data.tobytes() if isinstance(e.data, np.ndarray) else bytes(e.data)
            size = (len(data) - e.offset) if e.range is None else e.range
            if e.offset < 0 or size < 0 or e.offset + size > len(data):
                raise BindingError(f"binding {key}: range {e.offset}+{size} lies outside buffer {e.uid} of "
                                   f"{len(data)} bytes", (*key, element))
            region = owners.get((e.uid, e.offset, size))
            if region is None:
                tracked = _own(module, owners, e, data, size, (writable, storage), invocations, tracked)
                region = owners[(e.uid, e.offset, size)]
            if writable and region.shadow is None:
                region.writable = True
                region.granule = _granule(module, storage, "PhysicalStorageBuffer")
                region.shadow = Shadow(region.data.size // region.granule, gs, across_groups=True)
            bound.append(region)
        if isinstance(b, BufferArray):  # an element past the array: no buffer, no byte in bounds
            bound.append(Region.make(f"set {key[0]} binding {key[1]} element past its {len(elements)} buffers",
                                     "StorageBuffer", GLOBAL, 1, 0, writable=True))
        regions[vid] = bound[0] if not isinstance(b, BufferArray) else tuple(bound)
    return regions, owners


def _writable(module: Module, vid: int, storage: str, block_type: Any) -> bool:
    """Whether the shader may write a buffer variable's block."""
    block = module.decorated(block_type.id, "Block") is not None
    writable = storage == "StorageBuffer" or not block  # Uniform + BufferBlock is a storage buffer
    if writable and all(any(n == "NonWritable" for n, _ in module.member_decorations.get((block_type.id, k), ()))
                        for k in range(len(block_type.members))):
        return False
    return writable and module.decorated(vid, "NonWritable") is None


def _own(module: Module, owners: dict[tuple[str, int, int], Region], b: Binding, data: bytes, size: int,
         how: tuple[bool, str], invocations: int, tracked: int) -> int:
    """Make the region of a buffer's bound range (``how``: writable, storage class); the bytes
    the access records of all buffers so far take."""
    writable, storage = how
    unit = _granule(module, "StorageBuffer", "Uniform", "PhysicalStorageBuffer")
    # disjoint ranges of one buffer are two regions (they share no byte, so no race or bound
    # between them is lost); overlapping ones would be one memory through two regions
    if any(k[0] == b.uid and (k[1] < b.offset + size and b.offset < k[1] + k[2] or (k[1] - b.offset) % unit)
           for k in owners):
        raise BindingError(f"buffer {b.uid} is bound twice with different ranges; overlapping bindings of "
                           "one buffer are not supported by the SPIR-V checker", resource=b.uid)
    label = "StorageBuffer" if writable or storage == "StorageBuffer" else "Uniform"
    # who accessed a buffer is kept per unit of the smallest scalar any buffer access uses
    who = np.int32 if invocations < 2 ** 31 else np.int64
    tracked += accessor_bytes(size, unit, who)
    if tracked > MAX_SHADOW_BYTES:  # refused before allocating: a buffer's records are many times its size
        raise InputError(f"the buffers need {tracked >> 20} MiB to record their accesses, past the checker's "
                         f"limit of {MAX_SHADOW_BYTES >> 20} MiB (see docs/verify.md)")
    region = Region.make(b.uid, label, GLOBAL, 1, size, data[b.offset:b.offset + size], writable=writable)
    region.track_accessors(unit, who)
    owners[(b.uid, b.offset, size)] = region
    return tracked


def _device_memory(module: Module, addressable: Sequence[tuple[int, Binding]],
                   owners: dict[tuple[str, int, int], Region], gs: int, invocations: int) -> DeviceMemory | None:
    """The buffers reachable by device address, sharing the regions (and shadow memory) of the
    same buffers bound to descriptors; None when the module uses no device address."""
    if not any(t.kind == "pointer" and t.storage == "PhysicalStorageBuffer" for t in module.types.values()):
        return None
    out = []
    unit = _granule(module, "StorageBuffer", "Uniform", "PhysicalStorageBuffer")
    for base, b in addressable:
        data = b.data.tobytes() if isinstance(b.data, np.ndarray) else bytes(b.data)
        key = (b.uid, 0, len(data))
        region = owners.get(key)
        if region is None:
            if any(k[0] == b.uid for k in owners):
                raise InputError(f"buffer {b.uid} is bound to a descriptor in part and reached by device address: "
                                 "overlapping views of one buffer are not supported by the SPIR-V checker")
            region = Region.make(b.uid, "PhysicalStorageBuffer", GLOBAL, 1, len(data), data)
            region.track_accessors(unit, np.int32 if invocations < 2 ** 31 else np.int64)
            owners[key] = region
        if region.shadow is None:
            region.writable = True
            region.granule = _granule(module, "StorageBuffer", "PhysicalStorageBuffer")
            region.shadow = Shadow(region.data.size // region.granule, gs, across_groups=True)
        out.append((base, region))
    return DeviceMemory(out)


def uses_subgroups(module: Module) -> bool:
    """Whether the result may depend on the subgroup size: a subgroup instruction or built-in, or
    a Subgroup-scope barrier (what it orders depends on which invocations share a subgroup)."""
    if any(inst.op.startswith("OpGroupNonUniform") for fn in module.functions.values()
           for b in fn.blocks.values() for inst in b.insts) or subgroup_barriers(module):
        return True
    for vid in module.variables:
        bi = module.decorated(vid, "BuiltIn")
        if bi and enum_name("BuiltIn", bi[0]).startswith(("Subgroup", "NumSubgroups")) and _used(module, vid):
            return True
    return False


def _used(module: Module, vid: int) -> bool:
    """Whether any function instruction names the variable (glslang declares unused ones too)."""
    cache = getattr(module, "_used_ids", None)
    if cache is None:
        cache = set()
        for fn in module.functions.values():
            for b in fn.blocks.values():
                for inst in b.insts:
                    cache.update(inst.words)
        module._used_ids = cache  # type: ignore[attr-defined]
    return vid in cache


def _variable_sizes(module: Module) -> tuple[list[tuple[str, int]], int]:
    """The workgroup variables (name, bytes), and the private and function bytes of one invocation."""
    workgroup: list[tuple[str, int]] = []
    per_invocation = 0
    variables = list(module.variables.items()) + [(v.words[1], v) for f in module.functions.values()
                                                   for v in f.variables]
    for vid, var in variables:
        ptr_t = module.types[var.words[0]]
        size = ptr_t.elem.size if ptr_t.elem is not None else 0
        if ptr_t.storage == "Workgroup":
            workgroup.append((module.names.get(vid) or f"%{vid}", size))
        elif ptr_t.storage in ("Private", "Function"):
            per_invocation += size
    return workgroup, per_invocation


def _granule(module: Module, *storage: str) -> int:
    """The shadow unit of storage classes: their smallest accessed scalar. Scalars sit at offsets
    that are multiples of their size (Vulkan's layout rules; our natural layout), so every access
    covers whole units."""
    sizes = [size for t in module.types.values() if t.kind == "pointer" and t.storage in storage and t.elem
             for size in scalar_sizes(t.elem)]
    return min(sizes, default=1)


def _constant_bytes(t: Type, value: Any) -> bytes:
    """A constant's bytes in the layout of ``t``."""
    out = bytearray(t.size)
    for (off, st), v in zip(t.leaves, flatten(value)):
        dt = np.dtype(np.uint32) if st.kind == "bool" else st.dtype
        raw = np.asarray(v).astype(dt).tobytes()
        out[off:off + len(raw)] = raw
    return bytes(out)


def _batch_regions(module: Module, count: int, gs: int, first: int, geometry: _Geometry,
                   push_constants: bytes, subgroup_size: int = DEFAULT_SUBGROUP_SIZE) -> dict[int, Region]:
    regions: dict[int, Region] = {}
    lanes = count * gs
    glob, loc, grp = geometry.ids(first * gs + np.arange(lanes, dtype=np.int64))
    builtins = {
        "GlobalInvocationId": glob, "LocalInvocationId": loc, "WorkgroupId": grp,
        "NumWorkgroups": np.broadcast_to(np.asarray(geometry.groups), (lanes, 3)),
        "LocalInvocationIndex": (np.arange(lanes) % gs)[:, None],
        "WorkgroupSize": np.broadcast_to(np.asarray(geometry.local), (lanes, 3)),
    }
    sub = Layout(lanes, gs, subgroup_size)
    builtins.update({
        "SubgroupSize": np.full((lanes, 1), subgroup_size), "SubgroupLocalInvocationId": sub.inv[:, None],
        "SubgroupId": sub.local_sub[:, None], "NumSubgroups": np.full((lanes, 1), sub.per_group)})
    asked = {enum_name("BuiltIn", (module.decorated(v, "BuiltIn") or (0,))[0]) for v in module.variables}
    if any(name.endswith("Mask") for name in asked):  # (lanes, 128) bits each: only when declared
        builtins.update(sub.masks())
    for vid, var in module.variables.items():
        ptr_t = module.types[var.words[0]]
        t = ptr_t.elem
        assert t is not None
        storage = ptr_t.storage
        name = module.names.get(vid) or f"%{vid}"
        if storage == "Workgroup":
            if t.size == 0:
                continue
            r = Region.make(name, storage, GROUP, count, t.size)
            r.granule = _granule(module, storage)
            r.shadow = Shadow(r.data.size // r.granule, gs, across_groups=False)
            r.init = np.zeros(r.data.size, bool)
            if len(var.words) > 3:  # zero-initialized workgroup memory (VK_KHR_zero_initialize_workgroup_memory)
                init = _constant_bytes(t, module.constants[var.words[3]])
                r.data.reshape(count, r.rowsize)[:, :len(init)] = np.frombuffer(init, np.uint8)
                r.init[:] = True
            regions[vid] = r
        elif storage == "PushConstant":
            regions[vid] = Region.make("push constants", storage, GLOBAL, 1, len(push_constants), push_constants,
                                       writable=False)
        elif storage == "Private":
            r = Region.make(name, storage, LANE, lanes, t.size)
            if len(var.words) > 3:
                init = _constant_bytes(t, module.constants[var.words[3]])
                r.data.reshape(lanes, r.rowsize)[:, :len(init)] = np.frombuffer(init, np.uint8)
            regions[vid] = r
        elif storage == "Input":
            bi = module.decorated(vid, "BuiltIn")
            bname = enum_name("BuiltIn", bi[0]) if bi else "(not a built-in)"
            if bname not in SUPPORTED_BUILTINS:
                if _used(module, vid):
                    raise module.fail(var, f"input variable {name} ({bname}) is not supported by the SPIR-V checker")
                continue
            values = np.ascontiguousarray(builtins[bname], dtype=np.uint32)
            if t.kind != "vector" and t.kind != "int":
                raise module.fail(var, f"built-in {bname} of an unexpected type")
            if t.kind == "int":
                values = np.ascontiguousarray(values[:, :1])
            r = Region.make(name, storage, LANE, lanes, t.size, writable=False)
            r.data.reshape(lanes, r.rowsize)[:, :t.size] = values.view(np.uint8).reshape(lanes, -1)
            regions[vid] = r
        elif storage not in ("StorageBuffer", "Uniform", "UniformConstant"):
            raise module.fail(var, f"variables in storage class {storage} are not supported")
    return regions
