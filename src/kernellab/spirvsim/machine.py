"""The lockstep interpreter: runs a batch of workgroups, one NumPy lane per invocation.

Control flow: each lane waits at a block; the scheduler always runs the waiting block that comes
first in structured order (see :func:`module._order_blocks`) with the mask of the lanes waiting
there. Lanes that leave a construct early therefore wait at its merge block and reconverge there,
as structured control flow defines; a barrier executed with only part of a workgroup's lanes is
barrier divergence.

Values: SSA results are lane arrays (0-d when uniform) or tuples of them for composites; a
result written under a partial mask keeps the other lanes' earlier values (a lane that left a
loop keeps the value of its last iteration).
"""
from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from kernellab.errors import InputError, TimeLimitError
from kernellab.spirvsim import images, matrix, ops, pointers, release, subgroup
from kernellab.spirvsim.findings import Recorder
from kernellab.spirvsim.memory import GLOBAL, GROUP, LANE, Ptr, Region
from kernellab.spirvsim.module import Block, Function, Inst, Module, Unsupported, core_grammar, extinst_name, zero_value
from kernellab.spirvsim.shadow import ATOMIC_READ, ATOMIC_WRITE, CLASS_NAMES, EPOCHS, READ, WRITE, HappensBefore
from kernellab.spirvsim.types import MAX_VALUE_SCALARS, Type

DONE = np.iinfo(np.int32).max

#: memory-semantics bits
SEM_ORDERING = 0x2 | 0x4 | 0x8 | 0x10
SEM_UNIFORM = 0x40
SEM_WORKGROUP = 0x100
SCOPE_SUBGROUP = 3

@functools.cache  # one Type per dtype, made once: a dozen dtypes, asked for on every instruction
def scalar_type(dtype: np.dtype) -> Type:
    """A Type for a lane array's dtype (values carry their scalar type in their dtype)."""
    if dtype == np.bool_:
        return Type(0, "bool")
    if dtype.kind in "ui":
        return Type(0, "int", width=dtype.itemsize * 8)
    return Type(0, "float", width=dtype.itemsize * 8)


def scalar_of(t: Type) -> Type:
    """A scalar type, or a vector's component type."""
    return t.elem if t.kind == "vector" and t.elem is not None else t


def cw(f: Callable[..., Any], *vals: Any) -> Any:
    """Apply ``f`` component by component."""
    if isinstance(vals[0], tuple):
        return tuple(cw(f, *comp) for comp in zip(*vals))
    return f(*vals)


def merge(m: np.ndarray, new: Any, old: Any) -> Any:
    if new is old or isinstance(new, images.Handle) and new == old:  # a descriptor: one value for all lanes
        return new
    if isinstance(new, tuple):
        return tuple(merge(m, a, b) for a, b in zip(new, old))
    if isinstance(new, Ptr):
        if not isinstance(old, Ptr):
            raise Unsupported("a value that is a pointer in some invocations and not in others")
        idx = None if new.index is None or old.index is None else np.where(m, new.index, old.index)
        bad = None
        if new.bad is not None or old.bad is not None:
            bad = np.where(m, new.bad if new.bad is not None else False, old.bad if old.bad is not None else False)
        choice = None
        if new.choice is not None or old.choice is not None or new.region is not old.region:
            (rn, wn), (ro, wo) = new.regions(), old.regions()
            union = list(rn) + [r for r in ro if all(r is not x for x in rn)]
            remap = np.asarray([next(i for i, x in enumerate(union) if x is r) for r in ro])
            choice = (tuple(union), np.where(m, wn, remap[wo]))
        return Ptr(new.region, new.type, np.where(m, new.off, old.off), idx, bad, choice)
    return np.where(m, new, old)


def flatten(v: Any) -> list[np.ndarray]:
    if isinstance(v, tuple):
        return [x for c in v for x in flatten(c)]
    return [v]


def rebuild(t: Type, leaves: list[np.ndarray], pos: int = 0) -> tuple[Any, int]:
    if t.scalar:
        return leaves[pos], pos + 1
    parts = []
    subs = t.members if t.kind == "struct" else (t.elem,) * t.count  # type: ignore[operator]
    for s in subs:
        v, pos = rebuild(s, leaves, pos)  # type: ignore[arg-type]
        parts.append(v)
    return tuple(parts), pos


class Machine:
    """Runs the entry point for one batch of workgroups."""

    def __init__(self, module: Module, globals_: dict[int, Region | tuple[Region, ...]], lanes: int, group_size: int,
                 first_group: int, recorder: Recorder, *, uninitialized: bool, max_steps: int,
                 deadline: float | None = None, subgroup_size: int = subgroup.DEFAULT_SUBGROUP_SIZE,
                 device: pointers.DeviceMemory | None = None):
        self.m = module
        self.L = lanes
        self.gs = group_size
        self.G = lanes // group_size
        self.lane_group = np.repeat(np.arange(self.G), group_size)
        self.lane_global = first_group * group_size + np.arange(lanes, dtype=np.int64)
        self.group_global = first_group + np.arange(self.G, dtype=np.int64)
        self.epoch_wg = np.zeros(self.G, np.int64)
        self.epoch_buf = np.zeros(self.G, np.int64)
        self.pending_wg = np.zeros(self.G, bool)
        self.pending_buf = np.zeros(self.G, bool)
        self.epoch_img = np.zeros(self.G, np.int64)  # image memory's barrier phase (ImageMemory semantics)
        self.pending_img = np.zeros(self.G, bool)
        self.rec = recorder
        self.check_uninit = uninitialized
        self.max_steps = max_steps
        self.deadline = deadline  # time.monotonic() past which the dispatch stops (None: no limit)
        self.steps = 0
        self.values: dict[int, Any] = dict(module.constants)
        for vid, region in globals_.items():
            pointee = module.types[module.type_of[vid]].elem
            if isinstance(region, tuple):  # an array of buffers: the element is chosen per lane
                self.values[vid] = Ptr(region[0], pointee, np.zeros((), np.int64),  # type: ignore[arg-type]
                                       choice=(region, np.zeros((), np.int64)), descriptors=True)
                continue
            self.values[vid] = Ptr(region, pointee, np.zeros((), np.int64))  # type: ignore[arg-type]
        self.fn_regions: dict[int, Region] = {}
        self.all_lanes = np.arange(lanes)
        self.object_bounds = module.object_bounds
        self.device = device  # the buffers reached by device address (PhysicalStorageBuffer)
        self.subgroups = subgroup.Subgroups(self, subgroup.Layout(lanes, group_size, subgroup_size))
        lay = self.subgroups.lay
        #: Subgroup-scope barriers order accesses within each of several subgroups of a workgroup:
        #: each subgroup's phase per memory (workgroup, buffers, images), as the workgroup's epochs
        self.sub_phases = lay.per_group > 1 and subgroup_barriers(module)
        rows = lay.rows if self.sub_phases else 0
        self.sepoch = np.zeros((3, rows), np.int64)
        self.spending = np.zeros((3, rows), bool)
        #: release/acquire through atomics, when the module can synchronise so
        self.sync = release.Sync(self.lane_global, group_size, subgroup_size) if _synchronises(module) else None

    # ---- running ---------------------------------------------------------------------------

    def run_entry(self) -> None:
        fn = self.m.functions[self.m.entry_function]
        # a float division by zero, an overflow or a NaN is the shader's IEEE result, as on the
        # device: NumPy's warnings about them would reach the user as noise
        with np.errstate(all="ignore"):
            self.call(fn, [], np.ones(self.L, bool))

    def call(self, fn: Function, args: list[Any], mask: np.ndarray) -> Any:
        full = bool(mask.all())
        for p, a in zip(fn.params, args):
            self.set(p, a, mask, full)
        for var in fn.variables:
            self._function_variable(var, mask, full)
        pc = np.full(self.L, DONE, np.int32)
        pc[mask] = 0
        pred = np.full(self.L, -1, np.int64)
        ret: Any = None
        ordered = fn.ordered
        order = {b.label: b.order for b in ordered}
        while True:
            b = int(pc.min())
            if b == DONE:
                return ret
            m = pc == b
            ret = self.block(ordered[b], m, pc, pred, order, ret)

    def _function_variable(self, var: Inst, mask: np.ndarray, full: bool) -> None:
        vid = var.words[1]
        t = self.m.types[var.words[0]].elem
        assert t is not None
        if t.kind in ("void", "function") or t.kind == "pointer" and t.storage != "PhysicalStorageBuffer" or (
                t.size == 0 and not t.leaves):
            raise self.m.fail(var, f"a Function variable of type {t.kind} (pointers held in memory) is not supported")
        region = self.fn_regions.get(vid)
        if region is None:
            region = Region.make(self.m.names.get(vid, f"%{vid}"), "Function", LANE, self.L, t.size)
            self.fn_regions[vid] = region
        ptr = Ptr(region, t, np.zeros((), np.int64))
        self.values[vid] = ptr
        if len(var.words) > 3:
            self.store(ptr, self.values[var.words[3]], mask, var)

    def block(self, block: Block, m: np.ndarray, pc: np.ndarray, pred: np.ndarray, order: dict[int, int],
              ret: Any) -> Any:
        full = bool(m.all())
        insts = block.insts
        self.steps += len(insts)
        if self.steps > self.max_steps:
            raise InputError(f"the dispatch ran more than {self.max_steps} instructions per lane batch "
                             "(an endless loop, or past the checker's limit; see docs/verify.md)")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise TimeLimitError("the dispatch ran past its time limit")
        k = 0
        if insts[0].op == "OpPhi":
            k = self._phis(insts, m, pred, full)
        for inst in insts[k:-1]:
            h = HANDLERS.get(inst.op)
            if h is None:
                raise self.m.fail(inst, f"{inst.op} is not supported by the SPIR-V checker")
            h(self, inst, m, full)
        term = insts[-1]
        if term.op == "OpBranch":
            pc[m] = order[term.words[0]]
        else:
            ret = self._terminate(term, m, pc, order, ret)
        pred[m] = block.label
        return ret

    def _phis(self, insts: list[Inst], m: np.ndarray, pred: np.ndarray, full: bool) -> int:
        """Set the block's OpPhi results from the predecessor each lane came from; the number of them."""
        k = 0
        phis = []
        while insts[k].op == "OpPhi":
            w = insts[k].words
            v: Any = None
            for j in range(2, len(w), 2):
                val = self.values.get(w[j])
                if val is None:  # defined on a back edge no lane has taken yet
                    continue
                v = val if v is None else merge(pred == w[j + 1], val, v)
            phis.append((w[1], v))
            k += 1
        # all read before any is set: a phi may read another phi of the block (its value on entry)
        for rid, v in phis:
            self.set(rid, v, m, full)
        return k

    def _terminate(self, term: Inst, m: np.ndarray, pc: np.ndarray, order: dict[int, int], ret: Any) -> Any:
        """Move the lanes ``m`` on past the block's terminator ``term`` (other than OpBranch);
        the function's return value so far."""
        w = term.words
        op = term.op
        if op == "OpBranchConditional":
            c = np.broadcast_to(self.values[w[0]], (self.L,))
            pc[m & c] = order[w[1]]
            pc[m & ~c] = order[w[2]]
        elif op == "OpSwitch":
            self._switch(w, m, pc, order)
        elif op == "OpReturn":
            pc[m] = DONE
        elif op == "OpReturnValue":
            v = self.values[w[0]]
            ret = v if ret is None else merge(m, v, ret)
            pc[m] = DONE
        elif op == "OpUnreachable":
            raise self.m.fail(term, "an invocation reached OpUnreachable (undefined behaviour)")
        else:
            raise self.m.fail(term, f"{op} is not supported by the SPIR-V checker (not a compute instruction)")
        return ret

    def _switch(self, w: tuple[int, ...], m: np.ndarray, pc: np.ndarray, order: dict[int, int]) -> None:
        sel = np.broadcast_to(self.values[w[0]], (self.L,))
        left = m.copy()
        width = sel.dtype.itemsize * 8
        step = 2 if width <= 32 else 3
        j = 2
        while j < len(w):
            lit = w[j] if step == 2 else w[j] | (w[j + 1] << 32)
            target = w[j + step - 1]
            hit = left & (sel == np.asarray(lit).astype(sel.dtype))
            pc[hit] = order[target]
            left &= ~hit
            j += step
        pc[left] = order[w[1]]

    def set(self, rid: int, v: Any, m: np.ndarray, full: bool) -> None:
        if full or rid not in self.values:
            self.values[rid] = v
        else:
            self.values[rid] = merge(m, v, self.values[rid])

    # ---- memory ------------------------------------------------------------------------------

    def _lanes(self, m: np.ndarray, full: bool) -> np.ndarray:
        return self.all_lanes if full else np.nonzero(m)[0]

    def _row(self, region: Region, lanes: np.ndarray) -> np.ndarray | int:
        if region.per == GLOBAL:
            return 0
        if region.per == GROUP:
            return self.lane_group[lanes]
        return lanes

    @staticmethod
    def _memory(region: Region) -> int:
        """Which barrier phase orders the region's accesses: 0 workgroup memory, 1 buffers, 2 images."""
        return 0 if region.per == GROUP else 2 if region.storage == images.STORAGE else 1

    def _keys(self, region: Region, lanes: np.ndarray) -> np.ndarray:
        g = self.lane_group[lanes]
        epoch = self.epoch_wg if region.per == GROUP else self.epoch_img if region.storage == images.STORAGE \
            else self.epoch_buf
        return self.group_global[g] * EPOCHS + epoch[g]

    def _prepare(self, ptr: Ptr, m: np.ndarray, full: bool, rel: int, nbytes: int, inst: Inst, access: str
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """Active lanes that may access ``nbytes`` at ``rel`` past the pointer, their byte addresses
        and element indices; out-of-bounds lanes are reported and left out."""
        lanes = self._lanes(m, full)
        off = np.broadcast_to(ptr.off, (self.L,))[lanes] + rel
        region = ptr.region
        bad = (off < 0) | (off + nbytes > region.size)
        if ptr.bad is not None:
            bad |= np.broadcast_to(ptr.bad, (self.L,))[lanes]
        index = None if ptr.index is None else np.broadcast_to(ptr.index, (self.L,))[lanes]
        if bad.any():
            self.rec.out_of_bounds(region.name, region.label, inst.index, access, self.lane_global[lanes[bad]],
                                   None if index is None else index[bad], off[bad], region.size)
            ok = ~bad
            lanes, off = lanes[ok], off[ok]
            index = None if index is None else index[ok]
        addr = self._row(region, lanes) * region.rowsize + off
        return lanes, np.asarray(addr, np.int64), index

    def _track(self, region: Region, lanes: np.ndarray, addr: np.ndarray, nbytes: int, cls: int, inst: Inst,
               index: np.ndarray | None, written: np.ndarray | None = None) -> None:
        if region.shadow is None and region.init is None and region.read is None:
            return
        span = addr[:, None] + np.arange(nbytes)
        if region.shadow is not None and lanes.size:
            g = region.granule
            if g > 1 and (addr % g).any():
                raise self.m.fail(inst, f"an access to {region.name} not aligned to {g} bytes")
            units = (addr // g)[:, None] + np.arange(max(1, nbytes // g)) if g > 1 else span
            self._check_shadow(region, lanes, addr, units, cls, inst, index, written)
        if self.sync is not None and cls in (ATOMIC_READ, ATOMIC_WRITE) and lanes.size:
            self._synchronise(region, lanes, addr, cls, inst)
        if region.init is not None:
            if cls in (WRITE, ATOMIC_WRITE):
                region.init[span] = True
            elif self.check_uninit:
                uninit = ~region.init[span].all(axis=1)
                if uninit.any():
                    self.rec.uninitialized(region.name, inst.index, self.lane_global[lanes[uninit]],
                                           None if index is None else index[uninit])
        if region.read is not None and region.written is not None:
            who = self.lane_global[lanes][:, None]
            units = span // region.unit
            if cls in (WRITE, ATOMIC_WRITE):
                region.written[span] = True
                if region.written_by is not None and region.written_at is not None:
                    region.written_by[units], region.written_at[units] = who, inst.index
            if cls != WRITE:
                region.read[span] = True
                if region.read_by is not None and region.read_at is not None:
                    region.read_by[units], region.read_at[units] = who, inst.index

    def _check_shadow(self, region: Region, lanes: np.ndarray, addr: np.ndarray, units: np.ndarray, cls: int,
                      inst: Inst, index: np.ndarray | None, written: np.ndarray | None) -> None:
        """Check one access against the region's shadow memory and record it."""
        assert region.shadow is not None
        same, value_key = (None, None) if written is None else _same_value(region, addr, written)
        sub = (self.subgroups.lay.size, self.sepoch[self._memory(region)][self.subgroups.lay.sub[lanes]]) \
            if self.sub_phases else None
        hb = None
        sync = self.sync
        if sync is not None:
            memory = self._memory(region)
            hb = HappensBefore(sync.count[lanes], lambda rows, who, t: sync.ordered(lanes[rows], who, t, memory))
        hits = region.shadow.access(units, self.lane_global[lanes], self._keys(region, lanes), cls, inst.index,
                                    same, value_key, sub, hb)
        if hits is not None:
            h = hits.hit
            self.rec.race(region.name, region.label, inst.index, CLASS_NAMES[cls], self.lane_global[lanes[h]],
                          None if index is None else index[h], hits.partner[h], hits.partner_inst[h],
                          [CLASS_NAMES[c] for c in hits.partner_class[h]], hits.across[h])

    def _synchronise(self, region: Region, lanes: np.ndarray, addr: np.ndarray, cls: int, inst: Inst) -> None:
        """An atomic access's release and acquire sides (:mod:`kernellab.spirvsim.release`)."""
        assert self.sync is not None
        op, w = inst.op, inst.words
        if op == "OpAtomicStore":
            scope, sem = w[1], w[2]
        elif op.startswith("OpAtomic"):
            scope, sem = w[3], w[4]
        else:
            return
        scope_v, sem_v = self.values[scope], self.values[sem]
        if np.ndim(scope_v) or np.ndim(sem_v):  # run-time semantics: relaxed (orders nothing; never misses)
            scope_v, sem_v = 1, 0
        self.sync.atomic(region, lanes, addr // 4, int(sem_v), int(scope_v),
                         reads=op != "OpAtomicStore", writes=cls == ATOMIC_WRITE, rmw=op != "OpAtomicStore")

    def _gather(self, region: Region, addr: np.ndarray, st: Type) -> np.ndarray:
        w = st.nbytes
        dt = np.dtype(np.uint32) if st.kind == "bool" else st.dtype
        if addr.size and not (addr % w).any():
            v = region.data.view(dt)[addr // w]
        else:
            v = region.data[addr[:, None] + np.arange(w)].view(dt).reshape(-1)
        return v != 0 if st.kind == "bool" else v

    def _scatter(self, region: Region, addr: np.ndarray, st: Type, v: np.ndarray) -> None:
        w = st.nbytes
        dt = np.dtype(np.uint32) if st.kind == "bool" else st.dtype
        v = np.asarray(v).astype(dt, copy=False)
        if not (addr % w).any():
            region.data.view(dt)[addr // w] = v
        else:
            raw = np.ascontiguousarray(np.broadcast_to(v, addr.shape)).view(np.uint8).reshape(-1, w)
            region.data[addr[:, None] + np.arange(w)] = raw

    def _each_variable(self, ptr: Ptr, m: np.ndarray) -> list[tuple[Ptr, np.ndarray]]:
        """A per-lane choice of variables as one pointer per variable and the lanes choosing it."""
        assert ptr.choice is not None
        regions, which = ptr.choice
        out = []
        for k, region in enumerate(regions):
            mk = m & (np.broadcast_to(which, (self.L,)) == k)
            if mk.any():
                out.append((Ptr(region, ptr.type, ptr.off, ptr.index, ptr.bad), mk))
        return out

    def _whole_value(self, t: Type, inst: Inst) -> None:
        if len(t.leaves) > MAX_VALUE_SCALARS:
            raise self.m.fail(inst, f"a value of {len(t.leaves)} scalars loaded or stored at once is past the "
                                    f"checker's limit of {MAX_VALUE_SCALARS}")

    def load(self, ptr: Ptr, m: np.ndarray, full: bool, inst: Inst, cls: int = READ) -> Any:
        if ptr.choice is not None:
            result: Any = None
            for one, mk in self._each_variable(ptr, m):
                v = self.load(one, mk, False, inst, cls)
                result = v if result is None else merge(mk, v, result)
            return result if result is not None else zero_value(ptr.type)
        t = ptr.type
        self._whole_value(t, inst)
        leaves = []
        for rel, st in t.leaves:
            lanes, addr, index = self._prepare(ptr, m, full, rel, st.nbytes, inst, "read")
            self._track(ptr.region, lanes, addr, st.nbytes, cls, inst, index)
            v = self._gather(ptr.region, addr, st)
            if lanes.size == self.L:
                leaves.append(v)
            else:
                out = np.zeros(self.L, v.dtype)
                out[lanes] = v
                leaves.append(out)
        if not t.leaves:
            raise self.m.fail(inst, "load of a runtime array as a whole")
        if t.kind == "pointer":  # a device address held in memory
            assert self.device is not None and t.elem is not None
            return self.device.pointer(leaves[0], t.elem)
        return rebuild(t, leaves)[0]

    def store(self, ptr: Ptr, value: Any, m: np.ndarray, inst: Inst, full: bool | None = None,
              cls: int = WRITE) -> None:
        full = bool(m.all()) if full is None else full
        if ptr.choice is not None:
            for one, mk in self._each_variable(ptr, m):
                self.store(one, value, mk, inst, False, cls)
            return
        if isinstance(value, Ptr):  # a device address stored to memory
            if self.device is None or ptr.type.kind != "pointer":
                raise self.m.fail(inst, "a pointer stored to memory (only device addresses are supported)")
            value = self.device.address(value)
        region = ptr.region
        if not region.writable:
            raise self.m.fail(inst, f"store to read-only {region.label} {region.name}")
        self._whole_value(ptr.type, inst)
        for (rel, st), v in zip(ptr.type.leaves, flatten(value)):
            lanes, addr, index = self._prepare(ptr, m, full, rel, st.nbytes, inst, "write")
            v = np.asarray(v)
            if v.ndim:
                v = v[lanes]
            written = None
            if region.shadow is not None and cls == WRITE:
                dt = np.dtype(np.uint32) if st.kind == "bool" else st.dtype
                written = np.ascontiguousarray(np.broadcast_to(v.astype(dt, copy=False), addr.shape)
                                               ).view(np.uint8).reshape(-1, st.nbytes)
            self._track(region, lanes, addr, st.nbytes, cls, inst, index, written)
            self._scatter(region, addr, st, v)

    def access_chain(self, inst: Inst, m: np.ndarray, full: bool, element: bool) -> None:
        w = inst.words
        base: Ptr = self.values[w[2]]
        t = base.type
        off = base.off
        index, bad = base.index, base.bad
        ids = list(w[3:])
        choice = base.choice
        if base.descriptors and ids:
            # the first index picks the buffer of an array of buffers; an index past those bound
            # picks no buffer, and an access through it is out of bounds
            buffers = choice[0]  # type: ignore[index]
            e = self._index(self.values[ids.pop(0)])
            past = len(buffers) - 1  # the last is an empty region: any access through it is reported
            choice = (buffers, np.where((e < 0) | (e >= past), past, e))
            t = t.elem  # type: ignore[assignment]
        elif base.descriptors:
            raise self.m.fail(inst, "a pointer to a whole array of buffers is not supported by the SPIR-V checker")
        if element:
            ptr_type = self.m.types.get(self.m.type_of.get(w[2], -1))
            stride = ptr_type.stride if ptr_type is not None else 0
            if not stride and base.region.storage in ("Workgroup", "Function", "Private"):
                stride = t.size  # no explicit layout: elements follow each other as in an array
            if not stride:
                raise self.m.fail(inst, "OpPtrAccessChain on a pointer type without ArrayStride")
            e = self._index(self.values[ids.pop(0)])
            off = off + e * stride
            index = e if index is None else index + e
        # the element index a finding names: the flattened index of the outermost (nest of) arrays
        in_array, index_done = False, index is not None
        for i in ids:
            v = self.values[i]
            if t.kind == "struct":
                k = int(v)
                off = off + t.offsets[k]
                t = t.members[k]
                index_done = index_done or in_array
                in_array = False
                continue
            e = self._index(v)
            if t.kind == "vector":
                step, count = t.stride or t.elem.nbytes, t.count  # type: ignore[union-attr]
            elif t.kind == "matrix":
                step, count = t.stride, t.count
            elif t.kind in ("array", "runtime_array"):
                step, count = t.stride, t.count
            else:
                raise self.m.fail(inst, f"access chain into a {t.kind}")
            off = off + e * step
            if t.kind in ("vector", "matrix") or t.kind == "array" and not self.object_bounds:
                out = (e < 0) | (e >= count)
                if np.any(out):
                    bad = out if bad is None else (bad | out)
            if t.kind not in ("vector", "matrix") and not index_done:
                index = e if not in_array or index is None else index * count + e
                in_array = True
            t = t.elem  # type: ignore[assignment]
        self.set(w[1], Ptr(base.region, t, np.asarray(off, np.int64), None if index is None else np.asarray(index),
                           bad, choice), m, full)

    @staticmethod
    def _index(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v)
        if v.dtype.kind == "u":
            # values are held unsigned whatever their type's signedness: read the top bit as a sign,
            # so int -1 is index -1 (an unsigned index that large is out of bounds either way)
            return v.astype(v.dtype.str.replace("u", "i")).astype(np.int64)
        return v.astype(np.int64)

    # ---- barriers ----------------------------------------------------------------------------

    def control_barrier(self, inst: Inst, m: np.ndarray, full: bool) -> None:
        w = inst.words
        scope = self.values[w[0]]
        if np.ndim(scope):
            raise self.m.fail(inst, "OpControlBarrier with a non-constant execution scope is not supported")
        if self.sync is not None and np.ndim(self.values[w[1]]) == 0 and np.ndim(self.values[w[2]]) == 0:
            self.sync.fence_op(np.nonzero(m)[0], int(self.values[w[2]]), int(self.values[w[1]]))
        if int(scope) == SCOPE_SUBGROUP and self._subgroup_barrier(inst, m):
            return
        counts = np.bincount(self.lane_group[m], minlength=self.G)
        partial = (counts > 0) & (counts < self.gs)
        sem_value = self.values[w[2]]
        if np.ndim(sem_value):
            # semantics that are not a constant (clspv compiles OpenCL's barrier(flags) so): the
            # invocations of a workgroup must agree on them, as OpenCL requires; a barrier whose
            # flags differ within a workgroup is barrier divergence, and orders only what all ask
            lanes_sem = np.asarray(sem_value, np.int64)[m]
            groups = self.lane_group[m]
            lo = np.full(self.G, np.iinfo(np.int64).max)
            hi = np.full(self.G, -1)
            np.minimum.at(lo, groups, lanes_sem)
            np.maximum.at(hi, groups, lanes_sem)
            partial |= (counts > 0) & (lo != hi)
            common = np.full(self.G, -1, np.int64)
            np.bitwise_and.at(common, groups, lanes_sem)
            self._barrier_done(inst, m, counts, partial, common)
            return
        self._barrier_done(inst, m, counts, partial, np.full(self.G, int(sem_value), np.int64))

    def _barrier_done(self, inst: Inst, m: np.ndarray, counts: np.ndarray, partial: np.ndarray,
                      sem: np.ndarray) -> None:
        if partial.any():
            arrived, missing = [], []
            for g in np.nonzero(partial)[0][:3]:
                lanes = np.arange(g * self.gs, (g + 1) * self.gs)
                arrived.append(int(self.lane_global[lanes[m[lanes]][0]]))
                others = lanes[~m[lanes]] if (~m[lanes]).any() else lanes[m[lanes]][1:]
                missing.append(int(self.lane_global[others[0]]) if others.size else arrived[-1])
            self.rec.divergence(inst.index, arrived, missing, int(partial.sum()))
        done = (counts == self.gs) & ~partial
        ordering = (sem & SEM_ORDERING) != 0
        self.epoch_wg[done & (self.pending_wg | (ordering & ((sem & SEM_WORKGROUP) != 0)))] += 1
        self.epoch_buf[done & (self.pending_buf | (ordering & ((sem & SEM_UNIFORM) != 0)))] += 1
        self.epoch_img[done & (self.pending_img | (ordering & ((sem & images.SEM_IMAGE) != 0)))] += 1
        self.pending_wg[done] = False
        self.pending_buf[done] = False
        self.pending_img[done] = False

    def _subgroup_barrier(self, inst: Inst, m: np.ndarray) -> bool:
        """A Subgroup-scope control barrier: divergence is judged per subgroup. It orders
        accesses like a workgroup barrier when a subgroup is the whole workgroup (returns False:
        go on as one); otherwise (returns True) it starts a new subgroup phase, for the memories
        its semantics (or a subgroup memory barrier before it) name, in each subgroup whose
        invocations all reached it: accesses of one workgroup phase by invocations of one
        subgroup in different subgroup phases are ordered (:mod:`kernellab.spirvsim.shadow`)."""
        lay = self.subgroups.lay
        if lay.per_group == 1:
            return False
        act = lay.active(m)
        arrived = act.sum(axis=1)
        partial = (arrived > 0) & (arrived < lay.valid.sum(axis=1))
        if partial.any():
            rows = np.nonzero(partial)[0][:3]
            came = [int(self.lane_global[lay.table[r, act[r].argmax()]]) for r in rows]
            missing = [int(self.lane_global[lay.table[r, (lay.valid[r] & ~act[r]).argmax()]]) for r in rows]
            self.rec.divergence(inst.index, came, missing, int(partial.sum()))
        if self.sub_phases:
            done = (arrived > 0) & ~partial
            value = self.values[inst.words[2]]
            sem = int(value) if np.ndim(value) == 0 else 0  # run-time semantics: ordering nothing is safe
            ordering = bool(sem & SEM_ORDERING)
            for k, bit in enumerate((SEM_WORKGROUP, SEM_UNIFORM, images.SEM_IMAGE)):
                self.sepoch[k][done & (self.spending[k] | (ordering and bool(sem & bit)))] += 1
                self.spending[k][done] = False
        return True

    def memory_barrier(self, inst: Inst, m: np.ndarray, full: bool) -> None:
        scope = self.values[inst.words[0]]
        value = self.values[inst.words[1]]
        if np.ndim(value):
            raise self.m.fail(inst, "OpMemoryBarrier with non-constant semantics is not supported")
        sem = int(value)
        if self.sync is not None and np.ndim(scope) == 0:
            self.sync.fence_op(np.nonzero(m)[0], sem, int(scope))
        lay = self.subgroups.lay
        if np.ndim(scope) == 0 and int(scope) == SCOPE_SUBGROUP and lay.per_group > 1:
            # subgroupMemoryBarrier*(): the memories it names, for the next subgroup barrier of
            # each subgroup whose invocations all executed it
            if self.sub_phases and sem & SEM_ORDERING:
                act = lay.active(m)
                done = act.any(axis=1) & (act.sum(axis=1) == lay.valid.sum(axis=1))
                for k, bit in enumerate((SEM_WORKGROUP, SEM_UNIFORM, images.SEM_IMAGE)):
                    if sem & bit:
                        self.spending[k] |= done
            return
        if not sem & SEM_ORDERING:
            return
        counts = np.bincount(self.lane_group[m], minlength=self.G)
        done = counts == self.gs
        if sem & SEM_WORKGROUP:
            self.pending_wg |= done
        if sem & SEM_UNIFORM:
            self.pending_buf |= done
        if sem & images.SEM_IMAGE:
            self.pending_img |= done

    # ---- atomics -----------------------------------------------------------------------------

    def atomic(self, inst: Inst, m: np.ndarray, full: bool) -> None:
        op, w = inst.op, inst.words
        if op == "OpAtomicStore":
            ptr: Ptr = self.values[w[0]]
            self.store(ptr, self.values[w[3]], m, inst, full, cls=ATOMIC_WRITE)
            return
        ptr = self.values[w[2]]
        if op == "OpAtomicLoad":
            self.set(w[1], self.load(ptr, m, full, inst, cls=ATOMIC_READ), m, full)
            return
        if ptr.choice is not None:
            for one, mk in self._each_variable(ptr, m):
                self._atomic_update(one, inst, mk, False)
            return
        self._atomic_update(ptr, inst, m, full)

    def _atomic_count(self, op: str, region: Region, addr: np.ndarray, args: list[np.ndarray], st: Type,
                      order: np.ndarray, run_start: np.ndarray) -> np.ndarray:
        """Many lanes adding to one address (a counter): what applying them one after another
        in lane order gives, at once: each lane reads the start value plus the sum of the lanes
        before it (integers wrap at the width, as the device's do)."""
        sign = _COUNTING[op]
        step = args[0].astype(np.uint64) if op in ("OpAtomicIAdd", "OpAtomicISub") else np.ones(addr.size, np.uint64)
        delta = step if sign > 0 else (np.uint64(0) - step)
        sorted_delta = delta[order]
        total = np.cumsum(sorted_delta, dtype=np.uint64)
        before = total - sorted_delta  # the sum of the lanes before, from the first of all addresses
        first = run_start  # per sorted lane, where its address's run starts
        start = self._gather(region, addr[order][first], st).astype(np.uint64)
        old_sorted = (start + before - before[first]).astype(st.dtype)
        last = np.r_[first[1:] != first[:-1], True]
        final = (start[last] + total[last] - before[first][last]).astype(st.dtype)
        self._scatter(region, addr[order][last], st, final)
        result = np.empty(addr.size, st.dtype)
        result[order] = old_sorted
        return result

    def _atomic_update(self, ptr: Ptr, inst: Inst, m: np.ndarray, full: bool) -> None:
        op, w = inst.op, inst.words
        st = ptr.type
        rt = self.m.types[w[0]]
        if not st.scalar or rt.kind != st.kind or rt.width != st.width:
            raise self.m.fail(inst, f"{op} whose result type ({rt.describe()}) is not its pointer's pointee "
                                    f"({st.describe()}): invalid SPIR-V, not checked")
        region = ptr.region
        lanes, addr, index = self._prepare(ptr, m, full, 0, st.nbytes, inst, "atomic write")
        self._track(region, lanes, addr, st.nbytes, ATOMIC_WRITE, inst, index)
        args = [np.broadcast_to(self.values[x], (self.L,))[lanes] for x in w[5 + (op == "OpAtomicCompareExchange"):]]
        f = ATOMIC_OPS.get(op)
        if f is None:
            raise self.m.fail(inst, f"{op} is not supported by the SPIR-V checker")
        result: np.ndarray | None = None
        # lanes updating the same address are applied one after another: round r updates, for
        # every address, the r-th lane (in lane order) that targets it
        order = np.argsort(addr, kind="stable")
        sorted_addr = addr[order]
        starts = np.r_[True, sorted_addr[1:] != sorted_addr[:-1]] if addr.size else np.zeros(0, bool)
        run_start = np.maximum.accumulate(np.where(starts, np.arange(addr.size), 0)) if addr.size else starts
        rank = np.empty(addr.size, np.int64)
        rank[order] = np.arange(addr.size) - run_start
        if op in _COUNTING and st.kind == "int" and addr.size and int(rank.max()) >= 8:
            result = self._atomic_count(op, region, addr, args, st, order, run_start)
        if result is None:
            result = np.zeros(lanes.size, st.dtype)
            for r in range(int(rank.max()) + 1 if addr.size else 0):
                idx = np.nonzero(rank == r)[0]
                old = self._gather(region, addr[idx], st)
                new = f(old, [x[idx] for x in args], st)
                self._scatter(region, addr[idx], st, new)
                result[idx] = old
        out = np.zeros(self.L, st.dtype)
        out[lanes] = result
        self.set(w[1], out, m, full)


#: atomics whose updates of one address add up: applied at once by prefix sums
_COUNTING = {"OpAtomicIAdd": 1, "OpAtomicISub": -1, "OpAtomicIIncrement": 1, "OpAtomicIDecrement": -1}


def _same_value(region: Region, addr: np.ndarray, written: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per write: whether it stores the bytes memory already holds, and a key equal for writes of
    equal bytes. A write-write race of equal values is benign: GPUVerify and Oclgrind (by
    default) do not report it, nor do we."""
    before = region.data[addr[:, None] + np.arange(written.shape[1])]
    padded = np.zeros((written.shape[0], 8), np.uint8)
    padded[:, :written.shape[1]] = written
    return np.asarray((written == before).all(axis=1)), padded.view(np.uint64).reshape(-1)


def _s(v: np.ndarray, st: Type) -> np.ndarray:
    return v.astype(st.sdtype)


ATOMIC_OPS: dict[str, Callable[[np.ndarray, list[np.ndarray], Type], np.ndarray]] = {
    "OpAtomicExchange": lambda o, a, t: a[0],
    "OpAtomicCompareExchange": lambda o, a, t: np.where(o == a[1], a[0], o),
    "OpAtomicIIncrement": lambda o, a, t: o + np.ones((), t.dtype),
    "OpAtomicIDecrement": lambda o, a, t: o - np.ones((), t.dtype),
    "OpAtomicIAdd": lambda o, a, t: o + a[0],
    "OpAtomicISub": lambda o, a, t: o - a[0],
    "OpAtomicSMin": lambda o, a, t: np.minimum(_s(o, t), _s(a[0], t)).astype(t.dtype),
    "OpAtomicSMax": lambda o, a, t: np.maximum(_s(o, t), _s(a[0], t)).astype(t.dtype),
    "OpAtomicUMin": lambda o, a, t: np.minimum(o, a[0]),
    "OpAtomicUMax": lambda o, a, t: np.maximum(o, a[0]),
    "OpAtomicAnd": lambda o, a, t: o & a[0],
    "OpAtomicOr": lambda o, a, t: o | a[0],
    "OpAtomicXor": lambda o, a, t: o ^ a[0],
    "OpAtomicFAddEXT": lambda o, a, t: (o + a[0]).astype(t.dtype),
    "OpAtomicFMinEXT": lambda o, a, t: np.minimum(o, a[0]),
    "OpAtomicFMaxEXT": lambda o, a, t: np.maximum(o, a[0]),
}


# ---- pure instructions (also used for OpSpecConstantOp) ---------------------------------------

def pure(module: Module, op: str, rt: Type, args: list[Any], inst: Inst) -> Any:
    """Evaluate an instruction with no side effects from its operand values."""
    if op in ops.BINARY:
        f2 = ops.BINARY[op]
        ot = scalar_type(np.asarray(flatten(args[0])[0]).dtype)
        rs = scalar_of(rt)
        return cw(lambda a, b: f2(a, b, rs, ot), args[0], args[1])
    if op in ops.UNARY:
        f1 = ops.UNARY[op]
        ot = scalar_type(np.asarray(flatten(args[0])[0]).dtype)
        rs = scalar_of(rt)
        return cw(lambda a: f1(a, rs, ot), args[0])
    if op in ops.TERNARY_BITFIELD:
        return _bitfield(op, rt, args)
    if op in EXTENDED:
        return _extended(op, rt, args)
    f = _PURE.get(op)
    if f is None:
        raise module.fail(inst, f"{op} is not supported by the SPIR-V checker")
    return f(rt, args, inst)


def _bitfield(op: str, rt: Type, args: list[Any]) -> Any:
    rs = scalar_of(rt)
    if isinstance(args[0], tuple):
        return tuple(ops.bitfield(op, [args[0][i], args[1][i] if op == "OpBitFieldInsert" else args[1],
                                       *args[2:]], rs) for i in range(len(args[0])))
    return ops.bitfield(op, args, rs)  # type: ignore[arg-type]


def _extended(op: str, rt: Type, args: list[Any]) -> Any:
    rs = scalar_of(rt.members[0])
    f = EXTENDED[op]
    if not isinstance(args[0], tuple):
        return cw(lambda a, b: f(np.asarray(a), np.asarray(b), rs), args[0], args[1])
    return tuple(zip(*[f(np.asarray(a), np.asarray(b), rs) for a, b in zip(args[0], args[1])]))


def _select(rt: Type, args: list[Any], inst: Inst) -> Any:
    c = args[0]
    if isinstance(args[1], Ptr):
        return merge(np.asarray(c), args[1], args[2])
    if isinstance(args[1], tuple) and not isinstance(c, tuple):
        return tuple(np.where(c, a, b) for a, b in zip(args[1], args[2]))
    return cw(lambda cc, a, b: np.where(cc, a, b), c, args[1], args[2])


def _composite_construct(rt: Type, args: list[Any], inst: Inst) -> Any:
    if rt.kind == "vector":
        return tuple(x for a in args for x in (a if isinstance(a, tuple) else (a,)))
    return tuple(args)


def _composite_extract(rt: Type, args: list[Any], inst: Inst) -> Any:
    v = args[0]
    for k in inst.words[3:]:
        v = v[k]
    return v


def _vector_shuffle(rt: Type, args: list[Any], inst: Inst) -> Any:
    both = tuple(args[0]) + tuple(args[1])
    return tuple(both[k] if k != 0xFFFFFFFF else np.zeros((), rt.elem.dtype) for k in inst.words[4:])  # type: ignore[union-attr]


def _vector_extract_dynamic(rt: Type, args: list[Any], inst: Inst) -> Any:
    idx = np.asarray(args[1])
    out = np.asarray(args[0][0])
    for i, c in enumerate(args[0]):
        out = np.where(idx == i, c, out)
    return out


def _vector_insert_dynamic(rt: Type, args: list[Any], inst: Inst) -> Any:
    idx = np.asarray(args[2])
    return tuple(np.where(idx == i, args[1], c) for i, c in enumerate(args[0]))


def _any(rt: Type, args: list[Any], inst: Inst) -> Any:
    out = np.asarray(False)
    for c in args[0]:
        out = out | c
    return out


def _all(rt: Type, args: list[Any], inst: Inst) -> Any:
    out = np.asarray(True)
    for c in args[0]:
        out = out & c
    return out


def _bitcast(rt: Type, args: list[Any], inst: Inst) -> Any:
    src = scalar_type(np.asarray(flatten(args[0])[0]).dtype)
    src_t = Type(0, "vector", elem=src, count=len(args[0])) if isinstance(args[0], tuple) else src
    return ops.bitcast(args[0], src_t, rt)


#: the pure instructions other than the arithmetic tables of ops: (result type, operand values, instruction)
_PURE: dict[str, Callable[[Type, list[Any], Inst], Any]] = {
    "OpSelect": _select,
    "OpCompositeConstruct": _composite_construct,
    "OpCompositeExtract": _composite_extract,
    "OpCompositeInsert": lambda rt, args, inst: _insert(args[1], list(inst.words[4:]), args[0]),
    "OpVectorShuffle": _vector_shuffle,
    "OpVectorExtractDynamic": _vector_extract_dynamic,
    "OpVectorInsertDynamic": _vector_insert_dynamic,
    "OpVectorTimesScalar": lambda rt, args, inst: tuple(
        (c * args[1]).astype(rt.elem.dtype) for c in args[0]),  # type: ignore[union-attr]
    "OpDot": lambda rt, args, inst: ops.dot(args[0], args[1], rt),
    "OpAny": _any,
    "OpAll": _all,
    "OpBitcast": _bitcast,
    "OpCopyObject": lambda rt, args, inst: args[0],
    "OpCopyLogical": lambda rt, args, inst: args[0],
    "OpUndef": lambda rt, args, inst: zero_value(rt),
    **dict.fromkeys(matrix.OPS, lambda rt, args, inst: matrix.evaluate(inst.op, args, rt)),
}


def _wide(a: np.ndarray, b: np.ndarray, t: Type, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """The low and high halves of a full-width product (Python integers: exact for 64 bits)."""
    bits = t.width
    if bits <= 32:
        wide = np.int64 if signed else np.uint64
        p = np.asarray(a.astype(t.sdtype) if signed else a).astype(wide) * np.asarray(
            b.astype(t.sdtype) if signed else b).astype(wide)
        p = p.astype(np.uint64)
        return (p & np.uint64((1 << bits) - 1)).astype(t.dtype), (p >> np.uint64(bits)).astype(t.dtype)
    mask = (1 << bits) - 1
    av = np.atleast_1d(a.astype(t.sdtype) if signed else a).astype(object)
    bv = np.atleast_1d(b.astype(t.sdtype) if signed else b).astype(object)
    av, bv = np.broadcast_arrays(av, bv)
    prod = [int(x) * int(y) for x, y in zip(av.ravel(), bv.ravel())]
    lo = np.array([p & mask for p in prod], dtype=np.uint64).astype(t.dtype).reshape(av.shape)
    hi = np.array([(p >> bits) & mask for p in prod], dtype=np.uint64).astype(t.dtype).reshape(av.shape)
    return (lo, hi) if np.ndim(a) or np.ndim(b) else (lo.reshape(()), hi.reshape(()))


def _carry(a: np.ndarray, b: np.ndarray, t: Type, sub: bool) -> tuple[np.ndarray, np.ndarray]:
    a, b = a.astype(t.dtype), b.astype(t.dtype)
    if sub:
        return (a - b).astype(t.dtype), (a < b).astype(t.dtype)
    s = (a + b).astype(t.dtype)
    return s, (s < a).astype(t.dtype)


#: instructions returning a struct of two results: (low, high) or (result, carry/borrow)
EXTENDED: dict[str, Callable[[np.ndarray, np.ndarray, Type], tuple[np.ndarray, np.ndarray]]] = {
    "OpUMulExtended": lambda a, b, t: _wide(a, b, t, False),
    "OpSMulExtended": lambda a, b, t: _wide(a, b, t, True),
    "OpIAddCarry": lambda a, b, t: _carry(a, b, t, False),
    "OpISubBorrow": lambda a, b, t: _carry(a, b, t, True),
}


def _insert(v: Any, path: list[int], obj: Any) -> Any:
    if not path:
        return obj
    k = path[0]
    parts = list(v)
    parts[k] = _insert(parts[k], path[1:], obj)
    return tuple(parts)


#: operand positions (in words after result type and id) that are <id>s, for pure instructions
_LITERAL_TAIL = {"OpCompositeExtract": 1, "OpCompositeInsert": 2, "OpVectorShuffle": 2}

PURE_OPS = (set(ops.BINARY) | set(ops.UNARY) | ops.TERNARY_BITFIELD | {
    "OpSelect", "OpCompositeConstruct", "OpCompositeExtract", "OpCompositeInsert", "OpVectorShuffle",
    "OpVectorExtractDynamic", "OpVectorInsertDynamic", "OpVectorTimesScalar", "OpDot", "OpAny", "OpAll",
    "OpBitcast", "OpCopyLogical", "OpUndef"} | set(EXTENDED) | matrix.OPS)


def _pure_handler(mach: Machine, inst: Inst, m: np.ndarray, full: bool) -> None:
    w = inst.words
    n_ids = _LITERAL_TAIL.get(inst.op)
    ids = w[2:2 + n_ids] if n_ids is not None else w[2:]
    args = [mach.values[x] for x in ids]
    mach.set(w[1], pure(mach.m, inst.op, mach.m.types[w[0]], args, inst), m, full)


def eval_spec_op(module: Module, inst: Inst) -> Any:
    """Evaluate OpSpecConstantOp with the interpreter's own instruction semantics."""
    w = inst.words
    spec = core_grammar().instructions.get(w[2])
    if spec is None or spec.opname not in PURE_OPS:
        raise module.fail(inst, f"OpSpecConstantOp {spec.opname if spec else w[2]} is not supported")
    inner = Inst(spec.opname, (w[0], w[1], *w[3:]), inst.offset)
    n_ids = _LITERAL_TAIL.get(spec.opname)
    ids = inner.words[2:2 + n_ids] if n_ids is not None else inner.words[2:]
    return pure(module, spec.opname, module.types[w[0]], [module.constants[x] for x in ids], inner)


def _load(mach: Machine, inst: Inst, m: np.ndarray, full: bool) -> None:
    w = inst.words
    if isinstance(mach.values[w[2]], images.Handle):  # an image variable: the load is its descriptor
        mach.values[w[1]] = mach.values[w[2]]
        return
    mach.set(w[1], mach.load(mach.values[w[2]], m, full, inst), m, full)


def _store(mach: Machine, inst: Inst, m: np.ndarray, full: bool) -> None:
    w = inst.words
    mach.store(mach.values[w[0]], mach.values[w[1]], m, inst, full)


def _copy_memory(mach: Machine, inst: Inst, m: np.ndarray, full: bool) -> None:
    w = inst.words
    src, dst = mach.values[w[1]], mach.values[w[0]]
    mach.store(dst, mach.load(src, m, full, inst), m, inst, full)


def _array_length(mach: Machine, inst: Inst, m: np.ndarray, full: bool) -> None:
    w = inst.words
    ptr: Ptr = mach.values[w[2]]
    if ptr.choice is not None:
        raise mach.m.fail(inst, "OpArrayLength of a pointer chosen among variables is not supported")
    k = w[3]
    member = ptr.type.members[k]
    length = max(0, (ptr.region.size - ptr.type.offsets[k]) // member.stride)
    mach.set(w[1], np.asarray(length, np.uint32), m, full)


def _ext_inst(mach: Machine, inst: Inst, m: np.ndarray, full: bool) -> None:
    w = inst.words
    set_name = mach.m.ext_sets.get(w[2], "")
    if set_name.startswith("NonSemantic."):
        return
    name = extinst_name(set_name, w[3])
    rt = mach.m.types[w[0]]
    args = [mach.values[x] for x in w[4:]]
    if name in ops.GLSL_COMPONENTWISE:
        rs = scalar_of(rt)
        ot = scalar_type(np.asarray(flatten(args[0])[0]).dtype)
        if name in ("FMix", "SmoothStep", "Step") and isinstance(args[0], tuple) is not isinstance(args[-1], tuple):
            raise mach.m.fail(inst, f"GLSL.std.450 {name} with mixed scalar and vector operands")
        v = cw(lambda *a: ops.glsl_componentwise(name, list(a), rs, ot), *args)
    elif name in ops.GLSL_GEOMETRIC:
        v = ops.glsl_geometric(name, args, rt)
    elif name in matrix.GLSL:
        v = matrix.glsl(name, args[0], rt)
    elif name in ("Modf", "Frexp"):
        # the struct-returning forms' semantics, with the second member stored through the pointer
        ptr: Ptr = args[1]
        pair_t = Type(0, "struct", members=(rt, ptr.type))
        v, second = ops.glsl_geometric(name + "Struct", [args[0]], pair_t)
        mach.store(ptr, second, m, inst, full)
    else:
        raise mach.m.fail(inst, f"GLSL.std.450 {name} is not supported by the SPIR-V checker")
    mach.set(w[1], v, m, full)


def _function_call(mach: Machine, inst: Inst, m: np.ndarray, full: bool) -> None:
    w = inst.words
    fn = mach.m.functions[w[2]]
    ret = mach.call(fn, [mach.values[x] for x in w[3:]], m)
    if mach.m.types[w[0]].kind != "void":
        mach.set(w[1], ret, m, full)


def _nothing(mach: Machine, inst: Inst, m: np.ndarray, full: bool) -> None:
    return None


def _access(element: bool) -> Callable[[Machine, Inst, np.ndarray, bool], None]:
    return lambda mach, inst, m, full: mach.access_chain(inst, m, full, element)


TERMINATORS = frozenset({"OpBranch", "OpBranchConditional", "OpSwitch", "OpReturn", "OpReturnValue",
                         "OpUnreachable"})


def _synchronises(module: Module) -> bool:
    insts = [(inst.op, inst.words) for fn in module.functions.values() for b in fn.blocks.values()
             for inst in b.insts]
    return release.uses_release_acquire(module.constants, insts)


def subgroup_barriers(module: Module) -> bool:
    """Whether a Subgroup-scope OpControlBarrier or OpMemoryBarrier may order accesses."""
    for fn in module.functions.values():
        for b in fn.blocks.values():
            for inst in b.insts:
                if inst.op in ("OpControlBarrier", "OpMemoryBarrier"):
                    scope = module.constants.get(inst.words[0])
                    if scope is not None and np.ndim(scope) == 0 and int(scope) == SCOPE_SUBGROUP:
                        return True
    return False


def refuse_unsupported(module: Module) -> None:
    """Refuse the module before running it if any instruction of any function is outside the
    subset, executed or not, so that a verdict never depends on which paths a launch takes."""
    for fn in module.functions.values():
        for block in fn.blocks.values():
            for inst in block.insts:
                op = inst.op
                if op == "OpPhi" or op in TERMINATORS and inst is block.insts[-1]:
                    continue
                if op not in HANDLERS:
                    raise module.fail(inst, f"{op} is not supported by the SPIR-V checker")
                if op == "OpExtInst":
                    set_name = module.ext_sets.get(inst.words[2], "")
                    if set_name.startswith("NonSemantic."):
                        continue
                    name = extinst_name(set_name, inst.words[3])
                    if name not in ops.GLSL_COMPONENTWISE | ops.GLSL_GEOMETRIC | {"Modf", "Frexp"} | matrix.GLSL:
                        raise module.fail(inst, f"GLSL.std.450 {name} is not supported by the SPIR-V checker")


HANDLERS: dict[str, Callable[[Machine, Inst, np.ndarray, bool], None]] = {
    **{op: _pure_handler for op in PURE_OPS},
    "OpCopyObject": _pure_handler,
    "OpLoad": _load,
    "OpStore": _store,
    "OpCopyMemory": _copy_memory,
    "OpAccessChain": _access(False),
    "OpInBoundsAccessChain": _access(False),
    "OpPtrAccessChain": _access(True),
    "OpArrayLength": _array_length,
    "OpExtInst": _ext_inst,
    "OpFunctionCall": _function_call,
    "OpControlBarrier": Machine.control_barrier,
    "OpMemoryBarrier": Machine.memory_barrier,
    "OpSelectionMerge": _nothing,
    "OpLoopMerge": _nothing,
    "OpNop": _nothing,
    **{op: Machine.atomic for op in ATOMIC_OPS},
    "OpAtomicLoad": Machine.atomic,
    "OpAtomicStore": Machine.atomic,
    **{op: lambda mach, inst, m, full: mach.subgroups.execute(inst, m, full) for op in subgroup.OPS},
    "OpConvertUToPtr": pointers.convert,
    "OpConvertPtrToU": pointers.convert,
    **images.HANDLERS,
}
