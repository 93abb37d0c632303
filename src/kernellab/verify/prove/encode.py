"""One invocation of a compute shader as formulas over bit-vectors (z3): the SPIR-V of a
:class:`~kernellab.spirvsim.module.Module` executed symbolically, every block under its path
predicate, every value a term of the invocation's ids, the launch's arguments and buffer contents.

What the encoding yields is a :class:`Trace`: the invocation's memory accesses (root variable,
byte offset, size, read/write/atomic, predicate, barrier phases), its barriers (predicate) and
its assertions. :mod:`kernellab.verify.prove.engine` builds two traces, for two distinct
invocations, and asks z3 whether they can race, diverge or leave a buffer.

Soundness rules: integers are bit-vectors of their SPIR-V width (wrap-around is modelled);
a value the encoding cannot compute exactly (floating point, a load of memory some invocation
writes) is a fresh unconstrained term, which only widens what the proof covers; an instruction
it does not model raises :class:`Unmodelled` naming it and its source line, never skipped.
Loops are unrolled while the back edge may still be taken; a loop still running after
:data:`MAX_UNROLL` iterations raises :class:`Unmodelled` ("invariant not found").
"""
from __future__ import annotations

import itertools
from dataclasses import field, replace
from typing import Any

import z3

from kernellab.records import dataclass
from kernellab.spirvsim.module import Block, Function, Inst, Module, enum_name, extinst_name, successors
from kernellab.spirvsim.types import Type
from kernellab.verify.prove import annotation_reads, barrier_loops, counters, images, loop_facts, terms
from kernellab.verify.prove import barrier_invariants as barrier_invariants_
from kernellab.verify.prove import contracts as contracts_
from kernellab.verify.prove import copies as copies_
from kernellab.verify.prove.annotations import MAGIC, NAMES, unsupported_name
from kernellab.verify.prove.atomic_casts import MAGIC as CAST_MAGIC
from kernellab.verify.prove.copies import ASYNC_MAGIC
from kernellab.verify.prove.spec import OtherRecord, Specs, mentions_other, subterms
from kernellab.verify.prove.stubs import FRESH, REFUSED, STUB_MAGIC, uf_name

#: iterations a loop is unrolled before the encoder gives up on it
MAX_UNROLL = 32
#: iterations a loop is unrolled when an inner loop had to be summarised in it (each unrolled copy
#: pays the inner loop's invariant inference: 32 copies run past the time limit)
MAX_UNROLL_NESTED = 4
#: iterations a loop is unrolled in all, over every time it is met (an inner loop of up to 31
#: iterations in each of 31 iterations of an outer one: 961 unrolled copies, past the time limit),
#: before it is summarised wherever it is met next
MAX_UNROLL_TOTAL = 128
#: byte writes of shared memory an invocation's log keeps since the barrier before the last: past
#: that, its reads are fresh values (each read walks the log in Python: an unrolled loop's writes
#: made the encoding quadratic)
SHARED_LOG_MAX = 32
#: z3 resource units each query about a costly candidate invariant may use (about 0.3 s here; a
#: resource limit, unlike a time limit, gives the same invariant on a loaded machine):
#: :meth:`Encoder.costly_candidates`
COSTLY_QUERY_RLIMIT = 400_000
#: SPIR-V memory-semantics bits (the dynamic checker's rules: docs/verify-vulkan.md)
UNIFORM_MEMORY = 0x40
WORKGROUP_MEMORY = 0x100
#: storage classes whose memory two invocations share
SHARED = ("StorageBuffer", "Uniform", "Workgroup", "PushConstant")
#: functions the engine reads as GPUVerify-style annotations (docs/verify-prove.md)


#: ops that build, take apart or copy values without computing: :meth:`Encoder.composite`
_COMPOSITE_OPS = ("OpCompositeExtract", "OpCompositeConstruct", "OpCompositeInsert", "OpVectorShuffle",
                  "OpCopyObject", "OpUndef")


class Unmodelled(Exception):
    """Something the encoding does not model: the proof's verdict is ``unknown``."""

    def __init__(self, reason: str, line: tuple[str, int] | None = None, text: str | None = None):
        super().__init__(reason)
        self.reason, self.line, self.text = reason, line, text


@dataclass
class Pointer:
    root: int  # the variable's id
    storage: str
    offset: Any  # BV64 byte offset from the variable's start
    pointee: Type
    #: (index, length) of every sized-array step, for per-dimension bounds
    steps: list[tuple[Any, int]] = field(default_factory=list)


@dataclass(frozen=True)
class PointerChoice:
    """A pointer chosen at run time between variables (``p = c ? a : b``): each option under the
    condition that picks it; an access through it is an access of each option under its own."""

    options: tuple[tuple[Any, Pointer], ...]


@dataclass
class AccessRecord:
    root: int
    storage: str
    offset: Any
    size: int
    kind: str  # read | write | atomic-read | atomic-write
    pred: Any
    phase_wg: Any
    phase_sb: Any
    inst: Inst
    steps: list[tuple[Any, int]]
    #: made in a loop summarised by invariants (its state over-approximated)
    abstract: bool = False
    #: the invocation's count of wait_group_events done before it
    waits: Any = None
    #: the async copy (index in :attr:`Trace.copies`) this access is an element of
    copy: int | None = None
    #: what holds on the path from where a summarised loop ended (:attr:`Encoder.given`)
    given: tuple[Any, ...] = ()
    #: an atomic's returned value, and what it adds when it is a counter step (``atomic_inc``, an
    #: add of a constant): :mod:`kernellab.verify.prove.counters`
    result: Any = None
    step: int | None = None


@dataclass
class BarrierRecord:
    pred: Any
    inst: Inst
    key: tuple[int, ...]
    #: values every invocation of the work-group must pass alike (an async copy's arguments)
    values: list[Any] = field(default_factory=list)
    given: tuple[Any, ...] = ()
    #: the iteration numbers of the summarised barrier loops it is in: paired with the other
    #: invocation's at the same iterations (:mod:`kernellab.verify.prove.barrier_loops`)
    iteration: tuple[Any, ...] = ()


#: an async copy not yet waited for: its wait count is past any
IN_FLIGHT = 0xFFFF


@dataclass
class CopyRecord:
    """An async copy (:mod:`kernellab.verify.prove.copies`): in flight from the barrier interval
    of its call (``phase_wg``/``phase_sb``, ``waits`` waits done before it) until ``done``, the
    invocation's count of ``wait_group_events`` after the one that waited for ``event``
    (:data:`IN_FLIGHT` while none has)."""

    key: tuple[int, ...]
    event: Any
    phase_wg: Any
    phase_sb: Any
    waits: Any
    done: Any
    pending: Any
    begin: BarrierRecord


@dataclass
class AssertRecord:
    pred: Any
    cond: Any
    inst: Inst
    abstract: bool = False
    #: how many of the trace's assumptions precede it (those after it do not hold where it is checked)
    assumed: int | None = None
    given: tuple[Any, ...] = ()


@dataclass
class Ids:
    """An invocation's built-in ids (BV32 each, three dimensions)."""

    local: list[Any]
    group: list[Any]
    global_: list[Any]
    num_groups: list[Any]
    local_size: list[Any]


@dataclass
class Trace:
    accesses: list[AccessRecord] = field(default_factory=list)
    barriers: list[BarrierRecord] = field(default_factory=list)
    asserts: list[AssertRecord] = field(default_factory=list)
    assumes: list[Any] = field(default_factory=list)
    #: loads of shared read-only memory: (root, offset, size) -> term, for the counterexample
    reads: list[tuple[int, Any, int]] = field(default_factory=list)
    unrolled: int = 0
    #: loops summarised by invariants (their exits over-approximated too)
    summarized: int = 0
    copies: list[CopyRecord] = field(default_factory=list)
    #: the values ``__other_*`` annotations take from the other invocation
    others: list[OtherRecord] = field(default_factory=list)
    #: the loops summarised by invariants, for the two-invocation invariants (:func:`uniform_loops`)
    loops: list[LoopSummary] = field(default_factory=list)
    #: ids of assumptions that repeat a checked assertion (a called function's precondition)
    after_checks: set[int] = field(default_factory=set)
    #: what the iterations a loop was unrolled before it had to be summarised recorded (exact:
    #: bounded model checking), searched for a concrete counterexample where the summary's are
    #: abstract (:meth:`Encoder.unrolled_records`); their assumptions hold on their paths only
    bounded: list[AccessRecord] = field(default_factory=list)
    bounded_asserts: list[AssertRecord] = field(default_factory=list)
    bounded_assumes: list[Any] = field(default_factory=list)


@dataclass
class LoopSummary:
    """A summarised loop as the two-invocation invariants need it: where it is (``key``), its
    havocked loop variables, their values on entry, and the back edges of one iteration that
    assumes the kept invariants (predicate, the variables' next values)."""

    key: tuple[int, ...]
    havoc: dict[int, Any]
    entry: dict[int, Any]
    entry_pred: Any
    back: list[tuple[Any, dict[int, Any]]]
    #: the kept one-invocation invariants (assumed where the loop is entered)
    invariant: Any = None
    #: whether this invocation is at the iteration the other's ``__other_*`` pair it with
    #: (:func:`spec.same_iteration`): true for the invocation whose assertions are checked
    here: Any = None
    #: a loop with a barrier: its iteration and phases (:class:`barrier_loops.Cut`)
    cut: Any = None


@dataclass
class Edge:
    pred: Any
    env: dict[Any, Any]
    phis: dict[int, Any]


@dataclass(frozen=True)
class PrivateMemory:
    """An invocation's private (Function/Private) variable as a log of predicated byte writes over
    its unknown initial contents. Kept in Python, not as a z3 array: a load at a constant offset
    picks the writes at that offset, so z3 sees bit-vectors only. Two paths' memories merge by
    joining their logs after the part they share (each write carries its own path predicate, and
    the paths into a block exclude each other)."""

    initial: Any  # z3 Array(BV64, BV8)
    writes: tuple[tuple[Any, int | None, Any, Any], ...]  # (offset, constant offset, byte, predicate)
    #: shared memory's log: the writes before this index were made before the last barrier
    phase_start: int = 0

    def store(self, pred: Any, pairs: list[tuple[Any, Any]]) -> PrivateMemory:
        new = tuple((o, o.as_long() if z3.is_bv_value(o) else None, b, pred) for o, b in pairs)
        return PrivateMemory(self.initial, self.writes + new, self.phase_start)

    def load(self, offset: Any) -> Any:
        k = offset.as_long() if z3.is_bv_value(offset) else None
        out = None
        start = 0
        for n in range(len(self.writes) - 1, -1, -1):  # the newest write that surely hit is where to start
            o, ko, b, p = self.writes[n]
            if k is not None and ko == k and z3.is_true(p):
                start, out = n + 1, b
                break
        if out is None:
            out = z3.Select(self.initial, offset)
        if k is None:
            return _choice_chain(self.writes[start:], offset, out)
        for o, ko, b, p in self.writes[start:]:
            if ko is not None:
                if ko != k:
                    continue
                out = b if z3.is_true(p) else z3.If(p, b, out)
            else:
                out = z3.If(z3.And(p, o == offset), b, out)
        return out

    def as_array(self) -> Any:
        """The contents as one z3 array term."""
        arr = self.initial
        for o, _, b, p in self.writes:
            stored = z3.Store(arr, o, b)
            arr = stored if z3.is_true(p) else z3.If(p, stored, arr)
        return arr

    def merge(self, other: PrivateMemory, cond: Any) -> PrivateMemory:
        """This memory where ``cond`` holds, ``other`` elsewhere."""
        if other is self:
            return self
        a, b = self.writes, other.writes
        n = 0
        while n < min(len(a), len(b)) and a[n] is b[n]:
            n += 1
        if not self.initial.eq(other.initial) or self.phase_start != other.phase_start or self.phase_start > n:
            # one path started afresh (a summarised loop, a barrier): no shared part to join after
            # (and the writes before the last barrier are no longer told apart: the next drops them)
            return PrivateMemory(z3.If(cond, self.as_array(), other.as_array()), ())
        return PrivateMemory(self.initial, a + b[n:], self.phase_start)


@dataclass
class Memory:
    """What the encoder knows of shared memory: the variables no invocation writes (read from
    byte arrays both invocations share) and the bytes fixed by the launch."""

    read_only: dict[int, Any]  # root id -> z3 Array(BV64, BV8)


class Encoder:
    def __init__(self, module: Module, ids: Ids, memory: Memory, tag: str, var_size: dict[int, int | None],
                 solver_check: Any):
        self.m, self.ids, self.memory, self.tag = module, ids, memory, tag
        self.var_size = var_size
        self.trace = Trace()
        self.fresh_count = itertools.count()
        self.solver_check = solver_check  # (pred) -> may it be true?
        self.pending_semantics = 0
        self.key: tuple[int, ...] = ()
        self.calls = 0
        self.depth = 0
        #: the private variables stored to (a loop's dry run collects those it writes)
        self.stored: set[int] = set()
        #: > 0 inside a loop summarised by invariants: its accesses' states are over-approximated
        self.abstract = 0
        #: the values known where the current loop starts (loop-invariant bounds for candidates)
        self._outer: dict[Any, Any] = {}
        #: iterations each loop (by header) was unrolled in all, over every time it was met
        self.unrolled_total: dict[int, int] = {}
        #: headers of loops found to run past :data:`MAX_UNROLL` iterations, or past
        #: :data:`MAX_UNROLL_TOTAL` over the times they were met
        self.long_loops: set[int] = set()
        #: (loop header, number of candidates) -> the indexes of those that survived Houdini there
        self.houdini_hints: dict[tuple[int, int], list[int]] = {}
        #: the async copy whose element access is being encoded
        self.copy_open: int | None = None
        #: > 0 while a loop is summarised (its dry runs included): async copies are refused there
        self.summarizing = 0
        #: what holds from the end of each summarised loop on (its exit state satisfies its invariants
        #: and its exit condition): assumed by the checks of what comes after it only, so that a loop
        #: that never ends does not make the checks of its own iterations vacuous
        self.given: list[Any] = []
        self.specs = Specs(self, self._assert_record)
        self.barrier_invariants = barrier_invariants_.BarrierInvariants(self)
        self.contracts = contracts_.Contracts(self)
        #: constants whose value the launch leaves open (the work-group size with --prove-sizes,
        #: :func:`kernellab.verify.prove.sizes.bind`): result id -> z3 value
        self.symbolic: dict[int, Any] = {}
        #: where (:meth:`positions`) a read of shared memory gave any value because the log of
        #: this invocation's writes was too long: the records after it are not exact, so they
        #: are not kept for the search of a concrete counterexample (:meth:`unrolled_records`)
        self.inexact: list[tuple[int, int, int, int]] = []
        #: image variable -> the extent the launch gives it (images.py)
        self.image_extents: dict[int, images.Extent] = {}
        #: the iteration numbers of the summarised barrier loops being encoded (outermost first)
        self.iteration: tuple[Any, ...] = ()
        #: the loads whose values only assertions read (annotation_reads.py), found at the first load
        self._assertion_loads: frozenset[int] | None = None

    def positions(self) -> tuple[int, int, int, int]:
        t = self.trace
        return len(t.accesses), len(t.asserts), len(t.bounded), len(t.bounded_asserts)

    def _assert_record(self, pred: Any, cond: Any, inst: Inst, abstract: bool = False,
                       assumed: int | None = None) -> AssertRecord:
        return AssertRecord(pred, cond, inst, abstract, assumed, tuple(self.given))

    def may(self, pred: Any, cap: int | None = None) -> bool:
        """Whether ``pred`` can hold on this path (with what the summarised loops before it give);
        with ``cap`` (z3 resource units), a query that needs more is answered "it can"."""
        pred = terms.conj([pred, *self.given]) if self.given else pred
        return bool(self.solver_check(pred) if cap is None else self.solver_check(pred, cap))

    # --- values ------------------------------------------------------------------------------

    def fresh(self, t: Type, what: str = "v") -> Any:
        n = next(self.fresh_count)
        if t.kind == "bool":
            return z3.Bool(f"{self.tag}_{what}{n}")
        if t.kind in ("int", "float"):
            return z3.BitVec(f"{self.tag}_{what}{n}", t.width)
        if t.kind in ("vector", "array"):
            assert t.elem is not None
            return tuple(self.fresh(t.elem, what) for _ in range(t.count))
        if t.kind == "struct":
            return tuple(self.fresh(x, what) for x in t.members)
        raise self.unmodelled(None, f"a value of type {t.describe()}")

    def unmodelled(self, inst: Inst | None, what: str) -> Unmodelled:
        line = inst.line if inst is not None else None
        return Unmodelled(f"unsupported construct: {what}", line, self.m.source_text(line))

    def const(self, cid: int) -> Any:
        if cid in self.symbolic:
            return self.symbolic[cid]
        t = self.m.types[self.m.type_of[cid]]
        return self._const_value(t, self.m.constants[cid])

    def _const_value(self, t: Type, v: Any) -> Any:
        if t.kind == "bool":
            return z3.BoolVal(bool(v))
        if t.kind == "int":
            return z3.BitVecVal(int(v) & ((1 << t.width) - 1), t.width)
        if t.kind == "float":
            raw = int(v.view(f"u{t.width // 8}"))
            return z3.BitVecVal(raw, t.width)
        if t.kind in ("vector", "array"):
            assert t.elem is not None
            return tuple(self._const_value(t.elem, x) for x in v)
        if t.kind == "struct":
            return tuple(self._const_value(mt, x) for mt, x in zip(t.members, v))
        raise Unmodelled(f"unsupported construct: a constant of type {t.describe()}")

    def value(self, env: dict[Any, Any], vid: int) -> Any:
        if vid in env:
            return env[vid]
        if vid in self.m.constants:
            return self.const(vid)
        if vid in self.m.variables:
            return self.var_pointer(vid)
        raise Unmodelled(f"unsupported construct: value %{vid} used before it is defined")

    def var_pointer(self, vid: int) -> Pointer:
        t = self.m.types[self.m.type_of[vid]]
        assert t.elem is not None
        return Pointer(vid, t.storage, z3.BitVecVal(0, 64), t.elem)

    # --- memory ------------------------------------------------------------------------------

    def phase(self, env: dict[Any, Any]) -> tuple[Any, Any]:
        return env.get("phase_wg", barrier_loops.phase_value(0)), env.get("phase_sb", barrier_loops.phase_value(0))

    def record(self, env: dict[Any, Any], pred: Any, p: Pointer, size: int, kind: str, inst: Inst) -> None:
        if kind != "read" and p.root in self.specs.snapshots:
            raise self.unmodelled(inst, "a write to an array __array_snapshot wrote (a ghost array)")
        wg, sb = self.phase(env)
        self.trace.accesses.append(AccessRecord(p.root, p.storage, p.offset, size, kind, pred, wg, sb, inst,
                                                list(p.steps), self.abstract > 0, _waits(env), self.copy_open,
                                                tuple(self.given)))

    def load(self, env: dict[Any, Any], pred: Any, p: Pointer, inst: Inst, t: Type) -> Any:
        if p.storage == "Input":
            return self.builtin(p, inst, t)
        if p.storage in ("Function", "Private"):
            return self.private_load(env, p, t, inst)
        if self.barrier_invariants.active():  # the state at a barrier, not an access
            return self.barrier_invariants.load(env, p, inst, t)
        if not self.assertion_load(inst):  # an assertion's read is no access (annotation_reads.py)
            self.record(env, pred, p, max(t.size, 1), "read", inst)
        array = None if p.root in self.specs.snapshots else self.memory.read_only.get(p.root)
        if array is None:
            own = env.get(("mem", p.root))
            if own is None or len(own.writes) > SHARED_LOG_MAX:
                if own is not None:  # what follows is no longer exact where no race is
                    self.inexact.append(self.positions())
                return self.fresh(t, "ld")
            # what this invocation wrote since the last barrier that orders this memory: another
            # invocation's write to those bytes in between would race with that write (reported),
            # so where no race is the value is this invocation's; bytes it did not write are any
            # value (the same for two reads: a write between them races with the reads)
            return self.bytes_value(own.load, p.offset, t, inst)
        value = self.bytes_value(lambda o: z3.Select(array, o), p.offset, t, inst)
        self.trace.reads.append((p.root, p.offset, t.size))
        return value

    def bytes_value(self, byte_at: Any, offset: Any, t: Type, inst: Inst) -> Any:
        """A value of type ``t`` from the bytes ``byte_at(offset)`` gives (little-endian)."""
        if t.kind in ("int", "float"):
            parts = [byte_at(z3.simplify(offset + k)) for k in range(t.width // 8)]
            return parts[0] if len(parts) == 1 else z3.Concat(*reversed(parts))
        if t.kind == "bool":
            return byte_at(z3.simplify(offset)) != 0
        if t.kind in ("vector", "array"):
            assert t.elem is not None
            stride = t.stride or t.elem.size
            return tuple(self.bytes_value(byte_at, offset + k * stride, t.elem, inst) for k in range(t.count))
        if t.kind == "struct":
            return tuple(self.bytes_value(byte_at, offset + o, mt, inst) for mt, o in zip(t.members, t.offsets))
        raise self.unmodelled(inst, f"a load of {t.describe()}")

    def value_bytes(self, offset: Any, t: Type, v: Any, inst: Inst) -> list[tuple[Any, Any]]:
        """The (offset, byte) pairs a store of ``v`` writes."""
        if t.kind in ("int", "float"):
            return [(z3.simplify(offset + k), z3.Extract(8 * k + 7, 8 * k, v)) for k in range(t.width // 8)]
        if t.kind == "bool":
            return [(z3.simplify(offset), z3.If(v, z3.BitVecVal(1, 8), z3.BitVecVal(0, 8)))]
        out: list[tuple[Any, Any]] = []
        if t.kind in ("vector", "array"):
            assert t.elem is not None
            stride = t.stride or t.elem.size
            for k in range(t.count):
                out += self.value_bytes(offset + k * stride, t.elem, v[k], inst)
            return out
        if t.kind == "struct":
            for mt, o, x in zip(t.members, t.offsets, v):
                out += self.value_bytes(offset + o, mt, x, inst)
            return out
        raise self.unmodelled(inst, f"a store of {t.describe()}")

    def private_memory(self, env: dict[Any, Any], root: int) -> PrivateMemory:
        key = ("mem", root)
        if key not in env:  # a module-scope Private variable, first touched here
            inst = self.m.variables[root]
            mem = PrivateMemory(z3.Array(f"{self.tag}_priv{root}", z3.BitVecSort(64), z3.BitVecSort(8)), ())
            if len(inst.words) > 3:  # its initializer
                t = self.m.types[self.m.type_of[root]]
                assert t.elem is not None
                mem = mem.store(z3.BoolVal(True), self.value_bytes(z3.BitVecVal(0, 64), t.elem,
                                                                   self.value(env, inst.words[3]), inst))
            env[key] = mem
        mem = env[key]
        assert isinstance(mem, PrivateMemory)
        return mem

    def private_load(self, env: dict[Any, Any], p: Pointer, t: Type, inst: Inst) -> Any:
        self.bounds_private(env, p, t, inst)
        return self.bytes_value(self.private_memory(env, p.root).load, p.offset, t, inst)

    def bounds_private(self, env: dict[Any, Any], p: Pointer, t: Type, inst: Inst) -> None:
        self.record(env, env["pred"], p, max(t.size, 1), "private", inst)

    def private_store(self, env: dict[Any, Any], pred: Any, p: Pointer, v: Any, t: Type, inst: Inst) -> None:
        self.bounds_private(env, p, t, inst)
        mem = self.private_memory(env, p.root)
        env[("mem", p.root)] = mem.store(pred, self.value_bytes(p.offset, t, v, inst))
        self.stored.add(p.root)

    def builtin(self, p: Pointer, inst: Inst, t: Type) -> Any:
        deco = self.m.decorated(p.root, "BuiltIn")
        if deco is None:
            raise self.unmodelled(inst, "a load of an Input variable that is not a built-in")
        name = enum_name("BuiltIn", deco[0])
        ids = self.ids
        vectors = {"GlobalInvocationId": ids.global_, "LocalInvocationId": ids.local, "WorkgroupId": ids.group,
                   "NumWorkgroups": ids.num_groups, "WorkgroupSize": ids.local_size}
        if name == "LocalInvocationIndex":
            ls = ids.local_size
            whole: Any = ids.local[0] + ls[0] * (ids.local[1] + ls[1] * ids.local[2])
            vector: list[Any] = [whole]
        elif name in vectors:
            vector = vectors[name]
        else:
            raise self.unmodelled(inst, f"the built-in {name}")
        whole_size = 4 * len(vector) if len(vector) > 1 else 4
        if t.kind == "vector" and t.size == whole_size:
            return tuple(vector)
        if t.kind == "int" and t.width == 32:
            k = _const_int(p.offset)
            if k is None:
                # a component chosen at run time: select it
                out = vector[-1]
                for i in reversed(range(len(vector) - 1)):
                    out = z3.If(p.offset == 4 * i, vector[i], out)
                return out
            return vector[k // 4]
        raise self.unmodelled(inst, f"a load of {t.describe()} from the built-in {name}")

    # --- pointers ----------------------------------------------------------------------------

    def access_chain(self, env: dict[Any, Any], inst: Inst, first_is_element: bool) -> Pointer | PointerChoice:
        base = self.value(env, inst.words[2])
        if isinstance(base, PointerChoice):
            return PointerChoice(tuple((c, self._chain(env, inst, p, first_is_element)) for c, p in base.options))
        return self._chain(env, inst, base, first_is_element)

    def _chain(self, env: dict[Any, Any], inst: Inst, base: Any, first_is_element: bool) -> Pointer:
        w = inst.words
        if not isinstance(base, Pointer):
            raise self.unmodelled(inst, "an access chain whose base is not a variable's pointer")
        t = base.pointee
        offset = base.offset
        steps = list(base.steps)
        indexes = list(w[3:])
        if first_is_element:
            rt = self.m.types[self.m.type_of[w[2]]]
            stride = rt.stride or t.size
            if not stride:
                raise self.unmodelled(inst, f"{inst.op} on a pointer with no array stride")
            offset = offset + _sext64(self.value(env, indexes[0])) * stride
            indexes = indexes[1:]
        for ix in indexes:
            if t.kind == "struct":
                k = _const_int(self.value(env, ix))
                if k is None:
                    raise self.unmodelled(inst, "a struct member chosen at run time")
                offset = offset + t.offsets[k] if t.offsets else offset
                t = t.members[k]
            elif t.kind in ("array", "runtime_array", "vector"):
                assert t.elem is not None
                idx = self.value(env, ix)
                stride = t.stride or t.elem.size
                offset = offset + _sext64(idx) * stride
                if t.kind != "runtime_array":
                    steps.append((idx, t.count))
                t = t.elem
            else:
                raise self.unmodelled(inst, f"an access chain into {t.describe()}")
        rt = self.m.types[w[0]]
        assert rt.elem is not None
        return Pointer(base.root, base.storage, z3.simplify(offset), rt.elem, steps)

    # --- execution ---------------------------------------------------------------------------

    def run_entry(self, assumptions: Any) -> Trace:
        fn = self.m.functions[self.m.entry_function]
        env: dict[Any, Any] = {"pred": z3.BoolVal(True)}
        self.run_function(fn, env, [], z3.BoolVal(True))
        return self.trace

    def run_function(self, fn: Function, env: dict[Any, Any], args: list[Any], pred: Any) -> tuple[Any, dict]:
        self.calls += 1
        if self.calls > 10000:
            raise Unmodelled("unsupported construct: too many function calls (recursion?)")
        local = dict(env)
        for pid, a in zip(fn.params, args):
            local[pid] = a
        for v in fn.variables:
            t = self.m.types[self.m.type_of[v.words[1]]]
            assert t.elem is not None
            local[v.words[1]] = Pointer(v.words[1], "Function", z3.BitVecVal(0, 64), t.elem)
            mem = PrivateMemory(z3.Array(f"{self.tag}_fn{v.words[1]}_{self.calls}", z3.BitVecSort(64),
                                         z3.BitVecSort(8)), ())
            if len(v.words) > 3:
                mem = mem.store(z3.BoolVal(True), self.value_bytes(z3.BitVecVal(0, 64), t.elem,
                                                                   self.value(local, v.words[3]), v))
            local[("mem", v.words[1])] = mem
        incoming: dict[int, list[Edge]] = {fn.entry: [Edge(pred, local, {})]}
        returns: list[tuple[Any, dict[Any, Any], Any]] = []
        self.depth += 1
        frame = self.specs.enter(fn, args, pred)
        self.run_region(fn, fn.ordered, incoming, returns, set(fn.blocks))
        self.depth -= 1
        if not returns:
            self.specs.leave(frame, env, returns, None, env)
            return None, env
        out = _merge_envs([(p, e) for p, e, _ in returns])
        value = None
        if returns[0][2] is not None:
            value = returns[-1][2]
            for p, _, v in reversed(returns[:-1]):
                value = _ite(p, v, value)
        self.specs.leave(frame, env, returns, value, out)
        # the caller keeps its own values; memory and phases come back from the callee
        result = dict(env)
        for k, v in out.items():
            if isinstance(k, tuple) or k in _SYNC_KEYS:
                result[k] = v
        return value, result

    def run_region(self, fn: Function, blocks: list[Block], incoming: dict[int, list[Edge]],
                   returns: list[tuple[Any, dict[Any, Any], Any]], members: set[int],
                   header: int | None = None) -> None:
        """Run ``blocks`` (structured order) once; edges to blocks outside ``members`` (and back to
        ``header``) stay in ``incoming`` for the caller."""
        done: set[int] = set()
        for b in blocks:
            if b.label in done or b.label not in members:
                continue
            edges = incoming.pop(b.label, [])
            if not edges:
                continue
            merge = next((i for i in b.insts if i.op == "OpLoopMerge"), None)
            if merge is not None and b.label != header:
                body = _loop_blocks(fn, b.label, merge.words[0])
                done |= body
                self.run_loop(fn, b, merge, edges, incoming, returns, body)
                continue
            self.run_block(fn, b, edges, incoming, returns)

    def run_loop(self, fn: Function, head: Block, merge: Inst, edges: list[Edge], incoming: dict[int, list[Edge]],
                 returns: list[tuple[Any, dict[Any, Any], Any]], body: set[int]) -> None:
        """Unroll the loop while its back edge may be taken; past :data:`MAX_UNROLL` iterations,
        summarise it with inferred invariants (:meth:`summarize_loop`)."""
        ordered = [b for b in fn.ordered if b.label in body]
        current = edges
        key = self.key
        saved = self.snapshot(incoming, returns)
        exits_before = {label: len(es) for label, es in incoming.items()}
        summarized = self.trace.summarized
        limit = MAX_UNROLL
        for k in range(MAX_UNROLL + 1):
            if k >= limit or (k == 0 and head.label in self.long_loops):
                # a loop once found to run past the limit (an inner loop met again in the next
                # iteration of an outer one) is summarised at once: as sound, far cheaper
                if k == MAX_UNROLL:
                    self.long_loops.add(head.label)
                kept = self.unrolled_records(saved)
                reads = self.trace.reads[saved[6]:]  # the bytes a counterexample among them read
                self.restore(saved, incoming, returns)
                self.trace.reads += reads
                self.trace.bounded += kept[0]
                self.trace.bounded_asserts += kept[1]
                self.trace.bounded_assumes += kept[2]
                self.key = key
                self.summarize_loop(fn, head, body, ordered, edges, incoming, returns)
                return
            self.key = key + (head.label, k)
            inner: dict[int, list[Edge]] = {head.label: current}
            self.run_region(fn, ordered, inner, returns, body, header=head.label)
            back = inner.pop(head.label, [])
            for label, es in inner.items():
                incoming.setdefault(label, []).extend(es)
            self.trace.unrolled = max(self.trace.unrolled, k + 1)
            back = [e for e in back if self.may(e.pred)]
            if not back:
                self.unrolled_total[head.label] = self.unrolled_total.get(head.label, 0) + k + 1
                if self.unrolled_total[head.label] > MAX_UNROLL_TOTAL:
                    self.long_loops.add(head.label)
                self.leave_together(merge.words[0], edges, incoming, exits_before, len(returns) == saved[1])
                break
            if self.trace.summarized > summarized and limit == MAX_UNROLL:
                # each unrolled copy pays the inner loops' inference; a barrier's the most (its phases)
                limit = 1 if self._has_barrier(fn, body, set()) else MAX_UNROLL_NESTED
            current = back
        self.key = key

    def leave_together(self, merge: int, entry: list[Edge], incoming: dict[int, list[Edge]],
                       before: dict[int, int], no_returns: bool) -> None:
        """A loop unrolled to its end whose every exit goes to its merge block: the exits of its
        iterations become one edge reached wherever the loop was entered (every path that enters
        leaves by one of them, under the constraints the back edge was found untakeable with), its
        values chosen by the exit taken. Without it the merge block's predicate is the disjunction
        of every iteration's exit, and an outer loop's predicates grow with each inner iteration
        (an inner loop of 31 iterations in each of 31 outer ones: 130 ms per solver query)."""
        new = {label: es[before.get(label, 0):] for label, es in incoming.items() if len(es) > before.get(label, 0)}
        if not no_returns or set(new) != {merge} or len(new[merge]) < 2:
            return
        exits = new[merge]
        env = _merge_envs([(e.pred, e.env) for e in exits])
        phis: dict[int, Any] = {}
        for rid in exits[-1].phis:
            vals = [(e.pred, e.phis[rid]) for e in exits if rid in e.phis]
            if len(vals) != len(exits):
                return
            v = vals[-1][1]
            for p, x in reversed(vals[:-1]):
                v = _ite(p, x, v)
            phis[rid] = v
        incoming[merge] = incoming[merge][:before.get(merge, 0)] + [Edge(_join([e.pred for e in entry]), env, phis)]

    def snapshot(self, incoming: dict[int, list[Edge]], returns: list[Any]) -> tuple[Any, ...]:
        t = self.trace
        return ({k: list(v) for k, v in incoming.items()}, len(returns), len(t.accesses), len(t.barriers),
                len(t.asserts), len(t.assumes), len(t.reads), len(t.others), len(self.given), len(t.loops),
                [(c.done, c.pending) for c in t.copies], (len(t.bounded), len(t.bounded_asserts),
                                                          len(t.bounded_assumes)))

    def restore(self, saved: tuple[Any, ...], incoming: dict[int, list[Edge]], returns: list[Any]) -> None:
        inc, nret, na, nb, nas, nam, nr, no, ng, nl, copies, (nba, nbs, nbm) = saved
        del self.given[ng:]
        incoming.clear()
        incoming.update(inc)
        del returns[nret:]
        t = self.trace
        del t.accesses[na:], t.barriers[nb:], t.asserts[nas:], t.assumes[nam:], t.reads[nr:], t.others[no:]
        del t.bounded[nba:], t.bounded_asserts[nbs:], t.bounded_assumes[nbm:]
        self.inexact = [p for p in self.inexact if p <= (na, nas, nba, nbs)]
        del t.loops[nl:], t.copies[len(copies):]
        for c, (done, pending) in zip(t.copies, copies):
            c.done, c.pending = done, pending
        self.copy_open = None

    def unrolled_records(self, saved: tuple[Any, ...]) -> tuple[list[AccessRecord], list[AssertRecord], list[Any]]:
        """What the unrolled iterations since ``saved`` recorded (accesses, assertions and
        assumptions, theirs and their inner loops' unrolled ones), before the loop is summarised
        instead: each iteration's records are exact, so a counterexample among them is one a
        launch reaches. An assertion's preceding assumptions of these iterations go with it."""
        t = self.trace
        na, nas, nam = saved[2], saved[4], saved[5]
        nba, nbs, nbm = saved[11]
        # up to the first read that was not exact (each list is in the order the records were made)
        ends = next((p for p in self.inexact if p >= (na, nas, nba, nbs)), None) or self.positions()
        asserts = []
        for r in t.bounded_asserts[nbs:ends[3]] + t.asserts[nas:ends[1]]:
            if mentions_other(r.cond, t):  # the other's values there are not linked
                continue
            if r.assumed is not None and r.assumed > nam:
                r = replace(r, assumed=nam, given=r.given + tuple(t.assumes[nam:r.assumed]))
            asserts.append(r)
        return (t.bounded[nba:ends[2]] + t.accesses[na:ends[0]], asserts,
                t.bounded_assumes[nbm:] + t.assumes[nam:])

    def summarize_loop(self, fn: Function, head: Block, body: set[int], ordered: list[Block], edges: list[Edge],
                       incoming: dict[int, list[Edge]], returns: list[tuple[Any, dict[Any, Any], Any]]) -> None:
        """The loop as one arbitrary iteration (Houdini, as GPUVerify infers invariants): its
        header's values replaced by fresh ones constrained by the candidate invariants that hold
        on entry and that an iteration preserves. Every state the loop reaches satisfies them, so
        the accesses of the arbitrary iteration cover every real one; counterexamples found in it
        are marked as such (:attr:`AccessRecord.abstract`)."""
        self.summarizing += 1
        try:
            self._summarize_loop(fn, head, body, ordered, edges, incoming, returns)
        finally:
            self.summarizing -= 1

    def _summarize_loop(self, fn: Function, head: Block, body: set[int], ordered: list[Block], edges: list[Edge],
                        incoming: dict[int, list[Edge]], returns: list[tuple[Any, dict[Any, Any], Any]]) -> None:
        entry_pred = _join([e.pred for e in edges])
        entry_env = _merge_envs([(e.pred, e.env) for e in edges])
        cut = None
        if self._has_barrier(fn, body, set()):
            cut = barrier_loops.open_cut(self.tag, head.label, next(self.fresh_count), self.iteration, entry_env,
                                         self.phase({}))
        outer_iteration = self.iteration
        try:
            if cut is not None:
                self.iteration = outer_iteration + (cut.n,)
            self._summarize_body(fn, head, body, ordered, edges, incoming, returns, entry_pred, entry_env, cut)
        finally:
            self.iteration = outer_iteration

    def _summarize_body(self, fn: Function, head: Block, body: set[int], ordered: list[Block], edges: list[Edge],
                        incoming: dict[int, list[Edge]], returns: list[tuple[Any, dict[Any, Any], Any]],
                        entry_pred: Any, entry_env: dict[Any, Any], cut: barrier_loops.Cut | None) -> None:
        where = f"the loop at line {_line(head, self.m)}"
        self._outer = entry_env
        phis = [i for i in head.insts if i.op == "OpPhi"]
        entry_vals: dict[int, Any] = {}
        for inst in phis:
            rid = inst.words[1]
            vals = [(e.pred, e.phis[rid]) for e in edges if rid in e.phis]
            v = vals[-1][1]
            for p, x in reversed(vals[:-1]):
                v = _ite(p, x, v)
            entry_vals[rid] = v
        havoc: dict[int, Any] = {}
        for rid, v in entry_vals.items():
            if isinstance(v, PointerChoice) or v is None or not _havocable(v):
                raise Unmodelled(f"invariant not found: {where} carries a pointer chosen between variables",
                                 _first_line(head), None)
            # a vector or a pointer's offset: any value (no candidate invariant is made for them)
            havoc[rid] = _havoc_like(v, f"{self.tag}_loop{head.label}_{rid}_{next(self.fresh_count)}")
        # a dry iteration finds the private memory the loop writes; it is havocked too
        env_h = dict(entry_env)
        if cut is not None:  # its barriers' phases: where the arbitrary iteration starts
            env_h.update(cut.head)
        base_phis = dict(havoc)
        stored, self.stored = self.stored, set()
        first = self.iterate(fn, head, ordered, body, env_h, entry_pred, base_phis, incoming, returns)
        if cut is not None:
            barrier_loops.drop_unchanged(cut, [e.env for e in first], env_h)
        for rid, v in havoc.items():  # a pointer the loop carries must stay in its variable
            if isinstance(v, Pointer) and any(not isinstance(e.phis.get(rid, v), Pointer) or e.phis[rid].root != v.root
                                              for e in first):
                raise Unmodelled(f"invariant not found: {where} moves a pointer to another variable",
                                 _first_line(head), None)
        written, self.stored = self.stored, stored | self.stored
        memory: dict[int, Any] = {}
        for root in written:
            initial = z3.Array(f"{self.tag}_loopmem{head.label}_{next(self.fresh_count)}", z3.BitVecSort(64),
                               z3.BitVecSort(8))
            memory[root] = initial
            env_h[("mem", root)] = PrivateMemory(initial, ())
        # candidate invariants over the havocked values
        candidates = self.candidates(phis, havoc, entry_vals, first, body, fn)
        candidates += loop_facts.kept_bytes(self.tag, memory, entry_env, [e.env for e in first])
        candidates += loop_facts.equal_bytes(self.tag, memory, entry_env, [e.env for e in first])
        candidates += loop_facts.moving_words(self.tag, memory, entry_env, [e.env for e in first],
                                              [(havoc[r], entry_vals[r]) for r in havoc if z3.is_bv(havoc[r])])
        candidates += loop_facts.distinct_variables(havoc)
        scalar = [r for r in havoc if z3.is_expr(havoc[r])]
        subst_entry = [(havoc[r], entry_vals[r]) for r in scalar] + loop_facts.memory_pairs(memory, entry_env)
        # what the launch assumes before the loop (the kernel's __requires) holds on entry
        assumed = list(self.trace.assumes)

        def step(kept: list[Any]) -> tuple[list[Edge], Any]:
            back = self.iterate(fn, head, ordered, body, env_h, z3.And(entry_pred, *kept), base_phis,
                                incoming, returns)
            return back, _broken_on([(e.pred, [(havoc[r], e.phis[r]) for r in scalar if r in e.phis]
                                      + loop_facts.memory_pairs(memory, e.env)) for e in back])

        def on_entry(c: Any) -> Any:
            return z3.And(entry_pred, *assumed, z3.Not(z3.substitute(c, *subst_entry)))

        cheap, costly = loop_facts.split_costly(candidates)
        candidates, back = self.houdini(head.label, cheap, on_entry, step)
        if costly:
            candidates, back = self.costly_candidates(head.label, candidates, costly, on_entry, step, back)
        reached = z3.And(entry_pred, *self.given) if self.given else entry_pred
        invariant = z3.Implies(reached, z3.And(*candidates)) if candidates else z3.BoolVal(True)
        self.trace.loops.append(LoopSummary(self.key + (head.label,), havoc, entry_vals, reached,
                                            [(e.pred, {r: e.phis[r] for r in havoc if r in e.phis}) for e in back],
                                            invariant, cut=cut))
        self.trace.assumes.append(invariant)
        self.abstract += 1
        self.trace.summarized += 1
        mark = self.specs.loop_start(invariant)  # the access logs see an earlier iteration
        nret = len(returns)
        try:
            inner: dict[int, list[Edge]] = {head.label: [Edge(entry_pred, env_h, dict(base_phis))]}
            self.run_region(fn, ordered, inner, returns, body, header=head.label)
        finally:
            self.abstract -= 1
        self.specs.loop_end(mark)
        del returns[nret:]  # the summarised iteration's own exits: those of exit_state stand for them
        if cut is not None:
            cut.back = [(e.pred, {k: e.env[k] for k in cut.head}) for e in inner.get(head.label, [])]
            self.trace.assumes += barrier_loops.head_facts(cut)
        self.exit_state(fn, head, ordered, body, entry_env, entry_pred, reached, havoc, written, candidates, incoming, returns,
                        memory, cut)

    def exit_state(self, fn: Function, head: Block, ordered: list[Block], body: set[int], entry_env: dict[Any, Any],
                   entry_pred: Any, reached: Any, havoc: dict[int, Any], written: set[int], candidates: list[Any],
                   incoming: dict[int, list[Edge]], returns: list[tuple[Any, dict[Any, Any], Any]],
                   memory: dict[int, Any] | None = None, cut: barrier_loops.Cut | None = None) -> None:
        """Where a summarised loop goes on (GPUVerify's loop cut: havoc, assume the invariants and
        the exit): the exits of one more iteration run from a renamed state (fresh loop variables
        and private memory, every value it makes fresh too) that satisfies the invariants. Its
        exits stand for the loop's, so the code after the loop is reached under the loop's entry
        predicate (two invocations that enter it together leave it together, whatever their exit
        states); that the renamed state satisfies the invariants and leaves the loop is added to
        :attr:`given`, assumed by the checks of what comes after only. Nothing this iteration
        records is kept: the summarised iteration covers its accesses."""
        renamed = {r: _havoc_like(h, f"{self.tag}_loop{head.label}_{r}_{next(self.fresh_count)}")
                   for r, h in havoc.items()}
        env_x = dict(entry_env)
        pairs = []
        for root in written:
            initial = z3.Array(f"{self.tag}_loopmem{head.label}_{next(self.fresh_count)}", z3.BitVecSort(64),
                               z3.BitVecSort(8))
            env_x[("mem", root)] = PrivateMemory(initial, ())
            if memory and root in memory:  # the memory invariants hold of the renamed memory too
                pairs.append((memory[root], initial))
        pairs += [pair for r in havoc for pair in _paired(havoc[r], renamed[r])]
        if cut is not None:  # its own iteration and phases, at or after every iteration's end
            number = next(self.fresh_count)
            cut.exit_n = z3.BitVec(f"{self.tag}_loop{head.label}_exit_n_{number}", 64)
            cut.exit_head = {k: z3.BitVec(f"{self.tag}_loop{head.label}_exit_{k}_{number}", barrier_loops.PHASE_BITS)
                             for k in cut.head}
            cut.renamed = renamed
            env_x.update(cut.exit_head)
            self.trace.assumes += barrier_loops.exit_facts(cut)
        inv = z3.substitute(z3.And(*candidates), *pairs) if candidates and pairs else z3.And(*candidates)
        saved = self.snapshot(incoming, returns)
        nret = len(returns)
        inner: dict[int, list[Edge]] = {head.label: [Edge(entry_pred, env_x, dict(renamed))]}
        path = _exit_path(fn, head.label, body)
        self.abstract += 1
        try:
            self.run_region(fn, [b for b in ordered if b.label in path], inner, returns, path, header=head.label)
        finally:
            self.abstract -= 1
            left = returns[nret:]
            self.restore(saved, incoming, returns)
        for label in list(inner):  # back edges, and edges to blocks from which the loop is not left
            if label in body:
                del inner[label]
        exits = [e.pred for es in inner.values() for e in es] + [p for p, _, _ in left]
        self.given.append(z3.Implies(reached, z3.And(inv, z3.Or(*exits)) if exits else z3.BoolVal(False)))
        for label, es in inner.items():
            incoming.setdefault(label, []).extend(es)
        returns.extend(left)

    def houdini(self, label: int, candidates: list[Any], on_entry: Any, step: Any) -> tuple[list[Any], list[Edge]]:
        """The candidates that hold on entry (``on_entry(c)``: a state violating ``c`` there) and
        that one iteration assuming them all keeps (``step(kept)``: the back edges and, for a
        candidate, a state of them violating it): GPUVerify's Houdini. A loop met again (an inner
        loop in each iteration of an outer one, and in each of the outer one's inference rounds)
        first tries the candidates that survived last time: when they hold on entry and are kept
        by one iteration they are an invariant too (perhaps weaker than all that would survive),
        found in one round instead of several, each of which ran the inner loops' inference."""
        key = (label, len(candidates))
        hint = self.houdini_hints.get(key)
        if hint is not None:
            kept = [candidates[k] for k in hint]
            if not kept or not self.may(z3.Or(*[on_entry(c) for c in kept])):
                back, broken = step(kept)
                if not kept or not self.may(z3.Or(*[broken(c) for c in kept])):
                    return kept, back
        index = {c.get_id(): k for k, c in enumerate(candidates)}
        kept = self._surviving(candidates, on_entry)
        while True:
            back, broken = step(kept)
            keep = self._surviving(kept, broken)
            if len(keep) == len(kept):
                break
            kept = keep
        self.houdini_hints[key] = [index[c.get_id()] for c in kept]
        return kept, back

    def costly_candidates(self, label: int, kept: list[Any], costly: list[Any], on_entry: Any, step: Any,
                          back: list[Edge]) -> tuple[list[Any], list[Edge]]:
        """Candidates whose queries z3 may take seconds over (:func:`loop_facts.split_costly`),
        after Houdini settled the others (``kept``): each is kept where, within
        :data:`COSTLY_QUERY_RLIMIT` z3 resource units a query, it holds on entry and one
        iteration assuming it and ``kept`` preserves it, so that together they are an invariant;
        one that needs more is dropped (a weaker invariant, never a wrong one)."""
        key = (label, -len(costly))
        hint = self.houdini_hints.get(key)
        if hint == []:  # none held where the loop was met before: none is tried again
            return kept, back
        if hint:  # those that held where the loop was met before, if they hold here too
            extra = [costly[k] for k in hint]
            again, broken = step(kept + extra)
            if not self.may(z3.Or(*[on_entry(c) for c in extra]), COSTLY_QUERY_RLIMIT) and \
                    not self.may(z3.Or(*[broken(c) for c in extra]), COSTLY_QUERY_RLIMIT):
                return kept + extra, again
        chosen = []
        for k, c in enumerate(costly):
            if self.may(on_entry(c), COSTLY_QUERY_RLIMIT):
                continue
            _, broken = step(kept + [c])
            if not self.may(broken(c), COSTLY_QUERY_RLIMIT):
                chosen.append(k)
        self.houdini_hints[key] = chosen
        if not chosen:
            return kept, back
        extra = [costly[k] for k in chosen]
        back, _ = step(kept + extra)  # each is kept by an iteration assuming kept and itself: all are
        return kept + extra, back

    def _surviving(self, candidates: list[Any], violated: Any) -> list[Any]:
        """The candidates ``violated(c)`` cannot make true: one query for a group that all
        survive, the group halved where one may not (Houdini's step, in fewer queries)."""
        if not candidates:
            return []
        if not self.may(z3.Or(*[violated(c) for c in candidates])):
            return list(candidates)
        if len(candidates) == 1:
            return []
        mid = len(candidates) // 2
        return self._surviving(candidates[:mid], violated) + self._surviving(candidates[mid:], violated)

    def iterate(self, fn: Function, head: Block, ordered: list[Block], body: set[int], env: dict[Any, Any],
                pred: Any, phis: dict[int, Any], incoming: dict[int, list[Edge]],
                returns: list[tuple[Any, dict[Any, Any], Any]]) -> list[Edge]:
        """A dry run of one iteration from ``env``: its back edges (nothing is recorded)."""
        saved = self.snapshot(incoming, returns)
        inner: dict[int, list[Edge]] = {head.label: [Edge(pred, dict(env), dict(phis))]}
        try:
            self.run_region(fn, ordered, inner, returns, body, header=head.label)
        finally:
            self.restore(saved, incoming, returns)
        return inner.get(head.label, [])

    def candidates(self, phis: list[Inst], havoc: dict[int, Any], entry: dict[int, Any], back: list[Edge],
                   body: set[int], fn: Function) -> list[Any]:
        """GPUVerify-style templates: each integer loop variable against its start (signed and
        unsigned, both ways), against every loop-invariant bound it is compared with, and its
        distance from the start a multiple of its step."""
        out: list[Any] = []
        loop_vars = [havoc[r] for r in havoc if z3.is_expr(havoc[r])]
        defined = {i.words[1] for label in body for i in fn.blocks[label].insts if i.typed}
        for rid, v in havoc.items():
            if not z3.is_bv(v):
                continue
            v0 = entry[rid]
            out += [z3.ULE(v0, v), z3.ULE(v, v0), v0 <= v, v <= v0]
            for step in self._loop_steps(rid, v, back, body, fn, defined, loop_vars):
                if z3.is_bv_value(step) and step.as_long() in (0, 1):
                    continue
                if z3.is_bv_value(step) and step.as_long() >> (step.size() - 1):  # a negative step: v counts down
                    out.append(z3.URem(v0 - v, z3.simplify(-step)) == 0)
                else:
                    out.append(z3.Implies(step != 0, z3.URem(v - v0, step) == 0))
        return out + self._bound_templates(havoc, body, fn, defined)

    def _loop_steps(self, rid: int, v: Any, back: list[Edge], body: set[int], fn: Function, defined: set[int],
                    loop_vars: list[Any]) -> list[Any]:
        """What one iteration adds to loop variable ``rid``: the back edges' value less the
        variable's, and the terms the body adds to or subtracts from it (the back edge's value may
        be a choice clspv's loop form makes); only terms no loop variable changes."""
        steps = []
        for e in back:
            nxt = e.phis.get(rid)
            if nxt is None or not z3.is_bv(nxt):
                continue
            step = z3.simplify(nxt - v)
            if not _mentions(step, loop_vars):
                steps.append(step)
        for b in (fn.blocks[label] for label in body):
            for inst in b.insts:
                if inst.op not in ("OpIAdd", "OpISub") or rid not in inst.words[2:4]:
                    continue
                other = inst.words[3] if inst.words[2] == rid else inst.words[2]
                step = self._invariant_value(other, defined)
                if step is None:  # computed in the body, perhaps the same every iteration
                    step = next((e.env[other] for e in back if other in e.env), None)
                if step is not None and z3.is_bv(step) and step.size() == v.size() \
                        and not _mentions(step, loop_vars):
                    steps.append(step)
        return steps

    def _bound_templates(self, havoc: dict[int, Any], body: set[int], fn: Function, defined: set[int]) -> list[Any]:
        """Comparisons of a loop variable with a loop-invariant term, wherever the body makes
        them: the variable below and above that bound, signed and unsigned."""
        out: list[Any] = []
        for b in (fn.blocks[label] for label in body):
            for inst in b.insts:
                if inst.op not in _COMPARISONS:
                    continue
                for rid, v in havoc.items():
                    a_, b_ = inst.words[2], inst.words[3]
                    if not z3.is_bv(v) or rid not in (a_, b_) or (b_ if a_ == rid else a_) in havoc:
                        continue
                    bound = self._invariant_value(b_ if a_ == rid else a_, defined)
                    if bound is None or not z3.is_bv(bound) or bound.size() != v.size():
                        continue
                    out += [z3.ULE(v, bound), v <= bound, z3.UGE(v, bound), v >= bound]
        return out

    def _invariant_value(self, vid: int, defined: set[int]) -> Any:
        """A value the loop does not change: a constant or one computed before the loop."""
        if vid in self.m.constants:
            return self.const(vid)
        if vid in defined:
            return None
        v = self._outer.get(vid)
        return v if v is not None and not isinstance(v, (Pointer, PointerChoice, tuple, PrivateMemory)) else None

    def _has_barrier(self, fn: Function, labels: set[int], seen: set[int]) -> bool:
        for label in labels:
            for inst in fn.blocks[label].insts:
                if inst.op == "OpControlBarrier":
                    return True
                if inst.op == "OpFunctionCall" and inst.words[2] not in seen:
                    callee = self.m.functions.get(inst.words[2])
                    seen.add(inst.words[2])
                    if callee is not None and self._has_barrier(callee, set(callee.blocks), seen):
                        return True
        return False

    def run_block(self, fn: Function, b: Block, edges: list[Edge], incoming: dict[int, list[Edge]],
                  returns: list[tuple[Any, dict[Any, Any], Any]]) -> None:
        pred = _join([e.pred for e in edges])
        env = _merge_envs([(e.pred, e.env) for e in edges])
        env["pred"] = pred
        self.pending_semantics = 0  # a memory barrier adds its bits to a control barrier of its own block
        for inst in b.insts:
            op = inst.op
            if op == "OpPhi":
                rid = inst.words[1]
                vals = [(e.pred, e.phis[rid]) for e in edges if rid in e.phis]
                if len(vals) != len(edges):
                    raise self.unmodelled(inst, "an OpPhi without a value for every incoming edge")
                v = vals[-1][1]
                for p, x in reversed(vals[:-1]):
                    v = _ite(p, x, v)
                env[rid] = v
                continue
            if op in ("OpLoopMerge", "OpSelectionMerge", "OpLine", "OpNoLine", "OpNop"):
                continue
            if op == "OpBranch":
                self.edge(fn, b, inst.words[0], pred, env, incoming)
            elif op == "OpBranchConditional":
                c = self.value(env, inst.words[0])
                t_, f_ = inst.words[1], inst.words[2]
                if t_ == f_:
                    self.edge(fn, b, t_, pred, env, incoming)
                else:
                    self.edge(fn, b, t_, z3.simplify(terms.conj([pred, c])), env, incoming)
                    self.edge(fn, b, f_, z3.simplify(terms.conj([pred, z3.Not(c)])), env, incoming)
            elif op == "OpSwitch":
                sel = self.value(env, inst.words[0])
                others: list[Any] = []
                w = inst.words
                targets: dict[int, list[Any]] = {}
                for k in range(2, len(w), 2):
                    lit = z3.BitVecVal(w[k], sel.size())
                    targets.setdefault(w[k + 1], []).append(sel == lit)
                    others.append(sel == lit)
                targets.setdefault(w[1], []).append(z3.Not(z3.Or(*others)) if others else z3.BoolVal(True))
                for target, conds in targets.items():
                    self.edge(fn, b, target, z3.simplify(z3.And(pred, z3.Or(*conds))), env, incoming)
            elif op == "OpReturn":
                returns.append((pred, env, None))
            elif op == "OpReturnValue":
                returns.append((pred, env, self.value(env, inst.words[0])))
            elif op == "OpUnreachable":
                pass
            else:
                self.step(env, pred, inst)

    def edge(self, fn: Function, src: Block, target: int, pred: Any, env: dict[Any, Any],
             incoming: dict[int, list[Edge]]) -> None:
        if z3.is_false(pred):
            return
        phis: dict[int, Any] = {}
        for inst in fn.blocks[target].insts:
            if inst.op != "OpPhi":
                break
            w = inst.words
            for k in range(2, len(w), 2):
                if w[k + 1] == src.label:
                    phis[w[1]] = self.value(env, w[k])
        incoming.setdefault(target, []).append(Edge(pred, dict(env), phis))

    def step(self, env: dict[Any, Any], pred: Any, inst: Inst) -> None:
        op, w = inst.op, inst.words
        if op in images.HOOKED or op.startswith("OpImage"):
            if images.step(self, env, pred, inst):
                return
        if op in ("OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain", "OpInBoundsPtrAccessChain"):
            env[w[1]] = self.access_chain(env, inst, "Ptr" in op)
        elif op == "OpLoad":
            self.load_inst(env, pred, inst)
        elif op == "OpStore":
            self.store_inst(env, pred, inst)
        elif op == "OpControlBarrier":
            self.barrier(env, pred, inst)
        elif op == "OpMemoryBarrier":
            self.memory_barrier(env, inst)
        elif op.startswith("OpAtomic"):
            self.atomic(env, pred, inst)
        elif op == "OpFunctionCall":
            self.call(env, pred, inst)
        elif op == "OpExtInst":
            env[w[1]] = self.ext_inst(env, inst)
        elif not inst.typed:
            raise self.unmodelled(inst, op)
        else:
            env[w[1]] = self.compute(env, inst, self.m.types[w[0]])

    def load_inst(self, env: dict[Any, Any], pred: Any, inst: Inst) -> None:
        w = inst.words
        p = self.value(env, w[2])
        if isinstance(p, PointerChoice):  # each variable read under the condition that picks it
            t = self.m.types[w[0]]
            values = [(c, self.load(env, z3.And(pred, c), q, inst, t)) for c, q in p.options]
            out = values[-1][1]
            for c, v in reversed(values[:-1]):
                out = _ite(c, v, out)
            env[w[1]] = out
            return
        if not isinstance(p, Pointer):
            raise self.unmodelled(inst, "a load through a pointer the engine does not follow")
        env[w[1]] = self.load(env, pred, p, inst, self.m.types[w[0]])

    def store_inst(self, env: dict[Any, Any], pred: Any, inst: Inst) -> None:
        w = inst.words
        target = self.value(env, w[0])
        options = target.options if isinstance(target, PointerChoice) else ((z3.BoolVal(True), target),)
        for c, p in options:
            self._store(env, pred if z3.is_true(c) else z3.And(pred, c), inst, p)

    def _store(self, env: dict[Any, Any], pred: Any, inst: Inst, p: Any) -> None:
        w = inst.words
        if not isinstance(p, Pointer):
            raise self.unmodelled(inst, "a store through a pointer the engine does not follow")
        v = self.value(env, w[1])
        if p.storage in ("Function", "Private"):
            self.private_store(env, pred, p, v, p.pointee, inst)
        elif p.storage in ("StorageBuffer", "Workgroup"):
            self.record(env, pred, p, max(p.pointee.size, 1), "write", inst)
            self.shared_store(env, pred, p, v, inst)
        else:
            raise self.unmodelled(inst, f"a store to {p.storage} memory")

    def shared_store(self, env: dict[Any, Any], pred: Any, p: Pointer, v: Any, inst: Inst) -> None:
        """Log a write to shared memory for this invocation's own later reads (:meth:`load`)."""
        if p.root in self.memory.read_only:
            return
        key = ("mem", p.root)
        mem = env.get(key)
        if not isinstance(mem, PrivateMemory):
            mem = self.fresh_memory()
        try:
            pairs = self.value_bytes(p.offset, p.pointee, v, inst)
        except Unmodelled:  # a value with no byte layout here: forget what this invocation wrote
            env[key] = self.fresh_memory()
        else:
            env[key] = mem.store(pred, pairs)
        self.stored.add(p.root)

    def fresh_memory(self) -> PrivateMemory:
        # named as the other values made here, so that a loop's renaming (spec.renaming) finds it
        return PrivateMemory(z3.Array(f"{self.tag}_v{next(self.fresh_count)}", z3.BitVecSort(64),
                                      z3.BitVecSort(8)), ())

    def forget_shared(self, env: dict[Any, Any], sem: int) -> None:
        """A barrier that orders a memory ends this invocation's knowledge of the writes it made
        before the previous one: another invocation may have written those bytes between the two
        barriers without racing. Its writes since the previous barrier stay: another's write to
        those bytes before this barrier races with them, and one after it with this invocation's
        read."""
        for key in list(env):
            if not (isinstance(key, tuple) and key[0] == "mem"):
                continue
            storage = self.m.types[self.m.type_of[key[1]]].storage
            if key[1] in self.specs.snapshots:
                continue  # a ghost copy: nothing else writes it
            if (storage == "Workgroup" and sem & WORKGROUP_MEMORY) or \
                    (storage == "StorageBuffer" and sem & UNIFORM_MEMORY):
                mem = env[key]
                kept = mem.writes[mem.phase_start:]
                env[key] = PrivateMemory(self.fresh_memory().initial, kept, len(kept))

    def memory_barrier(self, env: dict[Any, Any], inst: Inst) -> None:
        k = _const_int(self.value(env, inst.words[1]))
        if k is None:
            raise self.unmodelled(inst, "a memory barrier whose semantics are not a constant")
        self.pending_semantics |= k

    def call(self, env: dict[Any, Any], pred: Any, inst: Inst) -> None:
        """A call: an annotation (docs/verify-prove.md, "Annotations"), or a function run inline."""
        m, w = self.m, inst.words
        callee = m.functions.get(w[2])
        name = self.annotation_name(w[2]) or m.names.get(w[2], "")
        args = [self.value(env, a) for a in w[3:]]
        if name in NAMES:
            value = self.annotation(env, pred, inst, name, args)
            if inst.typed:
                env[w[1]] = value if value is not None else self.fresh(m.types[w[0]])
            return
        if callee is None or not callee.blocks:
            raise self.unmodelled(inst, f"a call of {name or 'a function without a body'}")
        cast = self.atomic_cast(env, inst)
        if cast is not None:
            self.atomic(env, pred, inst, cast)
            return
        code = self.async_code(inst)
        if code is not None:
            self.async_op(env, pred, inst, code, args)
            return
        direct = self.marker_number(inst)
        if direct is not None:  # a stub clspv inlined (one taking a pointer): its arguments are gone
            raise self.unmodelled(inst, "a pointer passed to or returned by a function without a body"
                                  if direct % 4 == REFUSED else "a function without a body, inlined by clspv")
        number = self.stub_number(callee)
        if number is not None:
            self.stub_call(env, inst, number, args)
            return
        value, out = self.run_function(callee, env, args, pred)
        env.update({k: v for k, v in out.items() if isinstance(k, tuple) or k in _SYNC_KEYS})
        if w[0] in m.types and m.types[w[0]].kind != "void":
            env[w[1]] = value

    def async_code(self, inst: Inst) -> int | None:
        """The code of a call of the async-copy marker ``__kl_async`` (:mod:`kernellab.verify.prove.copies`)."""
        marker = self.m.functions.get(inst.words[2])
        if marker is None or len(marker.blocks) != 1 or len(marker.params) != 2 or len(inst.words) != 5:
            return None
        if not any(i.op == "OpIAdd" and i.words[3] in self.m.constants
                   and int(self.m.constants[i.words[3]]) == ASYNC_MAGIC
                   for i in next(iter(marker.blocks.values())).insts):
            return None
        code = self.m.constants.get(inst.words[3])
        if code is None:
            raise self.unmodelled(inst, "an async-copy marker with a code that is not a constant")
        return int(code)

    def async_op(self, env: dict[Any, Any], pred: Any, inst: Inst, code: int, args: list[Any]) -> None:
        """One step of an async copy or wait (:mod:`kernellab.verify.prove.copies`)."""
        t = self.m.types[inst.words[0]]
        env[inst.words[1]] = self.fresh(t, "async")
        if self.summarizing or self.abstract:
            raise self.unmodelled(inst, "an async copy or wait_group_events in a loop summarised by invariants")
        copies = self.trace.copies
        key = self.key + (inst.index,)
        value = args[1]
        if code == copies_.BEGIN:
            if self.copy_open is not None:
                raise self.unmodelled(inst, "an async copy inside another")
            number = len(copies)
            # a copy's event: the one it was given (it joins that one's copies), else a number of its own
            event = z3.If(value == 0, z3.BitVecVal(0x10000 + number, value.size()), value)
            wg, sb = self.phase(env)
            begin = BarrierRecord(pred, inst, key, [value], tuple(self.given))
            self.trace.barriers.append(begin)  # reached by the whole work-group, with the same arguments
            copies.append(CopyRecord(key, event, wg, sb, _waits(env), z3.BitVecVal(IN_FLIGHT, 16), z3.BoolVal(False),
                                     begin))
            self.copy_open = number
            env[inst.words[1]] = event
        elif code == copies_.END:
            self.copy_open = None
        elif code == copies_.COUNT:
            if self.copy_open is None:
                raise self.unmodelled(inst, "an async copy's count outside the copy")
            copies[self.copy_open].begin.values.append(value)
        elif code == copies_.WAIT_EVENT:
            for c in copies:
                c.pending = z3.Or(c.pending, z3.And(pred, c.event == value))
            # the work-group's wait: every work-item names the same events
            self.trace.barriers.append(BarrierRecord(pred, inst, key, [value], tuple(self.given)))
        elif code == copies_.WAIT_DONE:
            waits = _waits(env)
            after = z3.simplify(z3.If(pred, waits + 1, waits))
            env["waits"] = after
            for c in copies:
                c.done = z3.If(z3.And(c.pending, c.done == IN_FLIGHT), after, c.done)
                c.pending = z3.BoolVal(False)
            self.trace.barriers.append(BarrierRecord(pred, inst, key, given=tuple(self.given)))
        elif code != copies_.ANY_INDEX:  # ANY_INDEX: the element, any value (the fresh one above)
            raise self.unmodelled(inst, f"an async-copy marker of code {code}")

    def stub_number(self, fn: Function) -> int | None:
        """The number a stand-in for a function without a body passes to the stub marker
        (:mod:`kernellab.verify.prove.stubs`), or None for any other function."""
        for b in fn.blocks.values():
            for inst in b.insts:
                number = self.marker_number(inst)
                if number is not None:
                    return number
        return None

    def marker_number(self, inst: Inst) -> int | None:
        """The constant ``inst`` passes if it is a call of the stub marker ``__kl_stub``."""
        if inst.op != "OpFunctionCall" or len(inst.words) != 4:
            return None
        marker = self.m.functions.get(inst.words[2])
        if marker is None or len(marker.blocks) != 1 or len(marker.params) != 1:
            return None
        if any(i.op == "OpIAdd" and i.words[3] in self.m.constants and int(self.m.constants[i.words[3]]) == STUB_MAGIC
               for i in next(iter(marker.blocks.values())).insts):
            k = self.m.constants.get(inst.words[3])
            return int(k) if k is not None else -1
        return None

    def stub_call(self, env: dict[Any, Any], inst: Inst, number: int, args: list[Any]) -> None:
        """A call of a function the source declares without a body: a GPUVerify uninterpreted
        function is a z3 function of the arguments (both invocations share it), any other a fresh
        value; a pointer argument could be written through, so it is refused."""
        if number % 4 == REFUSED or any(isinstance(a, (Pointer, PointerChoice, PrivateMemory)) for a in args):
            raise self.unmodelled(inst, "a pointer passed to or returned by a function without a body")
        t = self.m.types.get(inst.words[0])
        if t is None or t.kind == "void":
            return
        if number % 4 == FRESH:
            env[inst.words[1]] = self.fresh(t, "call")
            return
        flat = [_as_bv(x) for a in args for x in (a if isinstance(a, tuple) else (a,))]

        def apply(part: Type, tag: str) -> Any:
            if part.kind == "bool":
                return _uf(uf_name(number // 4) + tag, flat, z3.BitVecSort(1)) == 1
            if part.kind in ("int", "float"):
                return _uf(uf_name(number // 4) + tag, flat, z3.BitVecSort(part.width))
            raise self.unmodelled(inst, f"an uninterpreted function returning {part.describe()}")
        if t.kind == "vector":
            assert t.elem is not None
            env[inst.words[1]] = tuple(apply(t.elem, f"_{k}") for k in range(t.count))
        else:
            env[inst.words[1]] = apply(t, "")

    def assertion_load(self, inst: Inst) -> bool:
        """Whether ``inst`` is a load whose value only assertions read."""
        if inst.op != "OpLoad":
            return False
        if self._assertion_loads is None:
            self._assertion_loads = annotation_reads.annotation_loads(self.m, self.annotation_name)
        return inst.words[1] in self._assertion_loads

    def annotation_name(self, fid: int) -> str | None:
        """The annotation a function is: by its name (GLSL), or the constant its body adds (clspv
        keeps no names)."""
        name = self.m.names.get(fid, "")
        name = name.split("(")[0]
        if name in NAMES:
            return name
        fn = self.m.functions.get(fid)
        if fn is None or len(fn.blocks) != 1 or not 1 <= len(fn.params) <= 4:
            return None
        for inst in next(iter(fn.blocks.values())).insts:
            if inst.op == "OpIAdd" and inst.words[3] in self.m.constants:
                got = MAGIC.get(int(self.m.constants[inst.words[3]]))
                if got:
                    return got
        return None

    def annotation(self, env: dict[Any, Any], pred: Any, inst: Inst, name: str, args: list[Any]) -> Any:
        if not args:
            raise self.unmodelled(inst, f"the annotation {name} without an argument")
        if name.startswith("__kl_unsupported"):
            number = _const_int(args[0])
            raise self.unmodelled(inst, f"the GPUVerify annotation {unsupported_name(number if number is not None else -1)}")
        rtype = self.m.types[inst.words[0]] if inst.typed else None
        if name == "__kl_instance":  # a unary barrier invariant's instantiation less this invocation's id
            if z3.is_bv(args[0]) and self.may(z3.And(pred, args[0] != 0)):
                raise self.unmodelled(inst, "a barrier invariant instantiated for other invocations than the one "
                                            "reaching it (__barrier_invariant_1(e, i) with i not the local id)")
            return args[0]
        if name in contracts_.NAMES:
            return self.contracts.call(env, pred, inst, name, args)
        if name in barrier_invariants_.NAMES:
            arg = self.specs.scalar(env, inst, name, args[0])
            return self.barrier_invariants.call(env, pred, inst, name, arg, self.specs.check)
        return self.specs.annotate(env, pred, inst, name, args, rtype)

    def barrier(self, env: dict[Any, Any], pred: Any, inst: Inst) -> None:
        scope = _const_int(self.value(env, inst.words[0]))
        sem = _const_int(self.value(env, inst.words[2]))
        if scope is None or sem is None:
            raise self.unmodelled(inst, "a barrier whose scope or semantics are not constants")
        if enum_name("Scope", scope) not in ("Workgroup", "Subgroup", "Device", "CrossDevice"):
            raise self.unmodelled(inst, f"a barrier of scope {enum_name('Scope', scope)}")
        if enum_name("Scope", scope) == "Subgroup":
            raise self.unmodelled(inst, "a subgroup barrier")
        sem |= self.pending_semantics
        self.pending_semantics = 0
        wg, sb = self.phase(env)
        one = barrier_loops.phase_value(1)
        if sem & WORKGROUP_MEMORY:
            env["phase_wg"] = z3.simplify(z3.If(pred, wg + one, wg))
        if sem & UNIFORM_MEMORY:
            env["phase_sb"] = z3.simplify(z3.If(pred, sb + one, sb))
        self.forget_shared(env, sem)
        self.trace.barriers.append(BarrierRecord(pred, inst, self.key + (inst.index,), given=tuple(self.given),
                                                 iteration=self.iteration))

    def atomic(self, env: dict[Any, Any], pred: Any, inst: Inst, cast: tuple[str, Pointer] | None = None) -> None:
        """An atomic instruction, or (``cast``: its opcode and pointer) the marker call of an atomic
        through a cast pointer (:meth:`atomic_cast`), never a counter step."""
        op, w = cast[0] if cast else inst.op, inst.words
        target = cast[1] if cast else self.value(env, w[0] if op == "OpAtomicStore" else w[2])
        options = target.options if isinstance(target, PointerChoice) else ((z3.BoolVal(True), target),)
        result = self.fresh(self.m.types[w[0]], "atomic") if inst.typed else None
        step = None if cast else counters.step(op, self.value(env, w[5]) if op in ("OpAtomicIAdd", "OpAtomicISub")
                                               else None)
        for c, p in options:
            if not isinstance(p, Pointer):
                raise self.unmodelled(inst, f"{op} through a pointer the engine does not follow")
            if p.storage not in ("StorageBuffer", "Workgroup"):
                raise self.unmodelled(inst, f"{op} on {p.storage} memory")
            kind = "atomic-read" if op == "OpAtomicLoad" else "atomic-write"
            where = pred if z3.is_true(c) else z3.And(pred, c)
            self.record(env, where, p, max(p.pointee.size, 1), kind, inst)
            self.trace.accesses[-1].result, self.trace.accesses[-1].step = result, step
            if kind == "atomic-write":  # other invocations' atomics change it too: any value from here on
                self.shared_store(env, where, p, self.fresh(p.pointee, "atomic"), inst)
        if result is not None:
            env[w[1]] = result

    def atomic_cast(self, env: dict[Any, Any], inst: Inst) -> tuple[str, Pointer] | None:
        """For a call of the marker of an atomic through a cast pointer
        (:mod:`kernellab.verify.prove.atomic_casts`: the memory object, the access chain's indexes,
        the atomic's opcode): the opcode and the pointer, the indexes walked as an access chain
        walks them over the object's own type, read as the call's result type; else None."""
        marker = self.m.functions.get(inst.words[2])
        if marker is None or len(marker.blocks) != 1 or not any(
                i.op == "OpIAdd" and i.words[3] in self.m.constants and int(self.m.constants[i.words[3]]) == CAST_MAGIC
                for i in next(iter(marker.blocks.values())).insts):
            return None
        w = inst.words
        opcode = self.m.constants.get(w[-1])
        base = self.value(env, w[3])
        result = self.m.types[w[0]]
        pointer_type = next((tid for tid, t in self.m.types.items() if t.kind == "pointer" and t.elem is result
                             and isinstance(base, Pointer) and t.storage == base.storage), None)
        if opcode is None or pointer_type is None or not isinstance(base, Pointer):
            raise self.unmodelled(inst, "an atomic through a cast pointer the engine does not follow")
        # the indexes walked as the access chain `pointer_type` = base[indexes...] would walk them
        chain = Inst("OpAccessChain", (pointer_type, w[1], w[3], *w[4:-1]), inst.offset, inst.index, inst.line, True)
        from kernellab.spirvsim.module import core_grammar
        spec = core_grammar().instructions.get(int(opcode))
        return (spec.opname if spec else "OpAtomicIAdd"), self._chain(env, chain, base, False)

    def ext_inst(self, env: dict[Any, Any], inst: Inst) -> Any:
        w = inst.words
        t = self.m.types[w[0]]
        set_name = self.m.ext_sets.get(w[2], "")
        if set_name.startswith("NonSemantic."):
            return None
        name = extinst_name(set_name, w[3])
        args = [self.value(env, a) for a in w[4:]]
        if t.kind == "vector":
            return tuple(self._ext_scalar(inst, name, [a[k] for a in args], t.elem) for k in range(t.count))
        return self._ext_scalar(inst, name, args, t)

    def _ext_scalar(self, inst: Inst, name: str, args: list[Any], t: Type | None) -> Any:
        assert t is not None
        if t.kind == "float":
            return self.fresh(t, "f")
        ops = {"UMin": lambda a, b: z3.If(z3.ULT(a, b), a, b), "UMax": lambda a, b: z3.If(z3.UGT(a, b), a, b),
               "SMin": lambda a, b: z3.If(a < b, a, b), "SMax": lambda a, b: z3.If(a > b, a, b)}
        if name in ops:
            return ops[name](*args)
        if name == "SAbs":
            return z3.If(args[0] < 0, -args[0], args[0])
        if name == "UClamp":
            return ops["UMin"](ops["UMax"](args[0], args[1]), args[2])
        if name == "SClamp":
            return ops["SMin"](ops["SMax"](args[0], args[1]), args[2])
        if t.kind == "int" and name in ("FindUMsb", "FindSMsb", "FindILsb"):
            return self.fresh(t, "bits")
        raise self.unmodelled(inst, f"the extended instruction {name}")

    def compute(self, env: dict[Any, Any], inst: Inst, t: Type) -> Any:
        op, w = inst.op, inst.words
        if op in _COMPOSITE_OPS:
            return self.composite(env, inst, t)
        if op == "OpSelect":
            return self.select(env, inst)
        if op in ("OpVectorExtractDynamic", "OpVectorInsertDynamic", "OpAll", "OpAny"):
            return self.vector_op(env, inst, t)
        if op in _WIDE_OPS:
            return self.wide_op(env, inst, t)
        args = [self.value(env, a) for a in w[2:]]
        if any(isinstance(a, (Pointer, PointerChoice)) for a in args):
            raise self.unmodelled(inst, f"{op} on a pointer")
        if op == "OpBitcast" and (t.kind == "vector" or isinstance(args[0], tuple)):
            return self.reinterpret(inst, args[0], t)
        if t.kind == "vector":
            return tuple(self.scalar_op(inst, [a[k] if isinstance(a, tuple) else a for a in args], t.elem)
                         for k in range(t.count))
        return self.scalar_op(inst, args, t)

    def reinterpret(self, inst: Inst, value: Any, t: Type) -> Any:
        """An OpBitcast that makes or takes a vector (:mod:`kernellab.verify.prove.bits`)."""
        from kernellab.verify.prove import bits

        elem = t.elem if t.kind == "vector" and t.elem is not None else t
        out = bits.reinterpret(value, t.kind, elem.width, t.count if t.kind == "vector" else 1)
        if out is None:
            raise self.unmodelled(inst, "an OpBitcast between values of different shapes")
        return out

    def composite(self, env: dict[Any, Any], inst: Inst, t: Type) -> Any:
        """The ops of :data:`_COMPOSITE_OPS`: vectors and structs as tuples of their parts."""
        op, w = inst.op, inst.words
        if op == "OpCompositeExtract":
            v = self.value(env, w[2])
            for k in w[3:]:
                v = v[k]
            return v
        if op == "OpCompositeConstruct":
            parts = [self.value(env, a) for a in w[2:]]
            if t.kind == "vector":
                flat: list[Any] = []
                for p in parts:
                    flat.extend(p if isinstance(p, tuple) else [p])
                return tuple(flat)
            return tuple(parts)
        if op == "OpCompositeInsert":
            part, whole = self.value(env, w[2]), self.value(env, w[3])  # Object, then Composite
            return _insert(part, whole, list(w[4:]))
        if op == "OpVectorShuffle":
            a, b = self.value(env, w[2]), self.value(env, w[3])
            both = list(a) + list(b)
            return tuple(both[k] if k != 0xFFFFFFFF else self.fresh(t.elem) for k in w[4:])  # type: ignore[arg-type]
        if op == "OpCopyObject":
            return self.value(env, w[2])
        return self.fresh(t, "undef")  # OpUndef

    def select(self, env: dict[Any, Any], inst: Inst) -> Any:
        c, a, b = (self.value(env, x) for x in inst.words[2:5])
        if isinstance(c, tuple):
            return tuple(_ite(ci, ai, bi) for ci, ai, bi in zip(c, a, b))
        if isinstance(a, tuple):
            return tuple(_ite(c, ai, bi) for ai, bi in zip(a, b))
        return _ite(c, a, b)

    def wide_op(self, env: dict[Any, Any], inst: Inst, t: Type) -> Any:
        """OpIAddCarry, OpISubBorrow, OpUMulExtended, OpSMulExtended: a struct of the low half and
        the carry, borrow or high half, component by component for vectors."""
        a, b = (self.value(env, x) for x in inst.words[2:4])
        if isinstance(a, tuple):
            parts = [_WIDE_OPS[inst.op](x, y) for x, y in zip(a, b)]
            return (tuple(p[0] for p in parts), tuple(p[1] for p in parts))
        if not (z3.is_bv(a) and z3.is_bv(b)) or t.kind != "struct":
            raise self.unmodelled(inst, f"{inst.op} on values of this shape")
        return _WIDE_OPS[inst.op](a, b)

    def vector_op(self, env: dict[Any, Any], inst: Inst, t: Type) -> Any:
        """A vector's component chosen at run time (read or written), and OpAll/OpAny."""
        op, w = inst.op, inst.words
        if op == "OpVectorExtractDynamic":
            vec, idx = self.value(env, w[2]), self.value(env, w[3])
            out = self.fresh(t, "undef")  # an index past the vector: undefined
            for k in reversed(range(len(vec))):
                out = z3.If(idx == k, vec[k], out)
            return out
        if op == "OpVectorInsertDynamic":
            vec, comp, idx = self.value(env, w[2]), self.value(env, w[3]), self.value(env, w[4])
            return tuple(z3.If(idx == k, comp, x) for k, x in enumerate(vec))
        parts = list(self.value(env, w[2]))
        return z3.And(*parts) if op == "OpAll" else z3.Or(*parts)

    def scalar_op(self, inst: Inst, a: list[Any], t: Type | None) -> Any:
        assert t is not None
        op = inst.op
        if op in _FLOAT_OPS or (op.startswith("OpF") and op not in ("OpFunctionCall",)):
            return self.fresh(t, "f")
        if op in ("OpConvertFToU", "OpConvertFToS", "OpConvertUToF", "OpConvertSToF", "OpFConvert",
                  "OpIsNan", "OpIsInf", "OpQuantizeToF16"):
            return self.fresh(t, "f")
        if op == "OpBitcast":
            x = a[0]
            if isinstance(x, tuple) or not z3.is_bv(x) or x.size() != t.width:
                raise self.unmodelled(inst, "an OpBitcast between values of different shapes")
            return x
        if op in ("OpUConvert", "OpSConvert"):
            x = a[0]
            if t.width == x.size():
                return x
            if t.width < x.size():
                return z3.Extract(t.width - 1, 0, x)
            ext = z3.ZeroExt if op == "OpUConvert" else z3.SignExt
            return ext(t.width - x.size(), x)
        fn = _INT_OPS.get(op)
        if fn is None:
            raise self.unmodelled(inst, op)
        out = fn(*a)
        # SPIR-V leaves a division by zero and a shift by the width or more undefined: any value
        if op in _DIVISIONS:
            out = z3.If(a[1] == 0, self.fresh(t, "undef"), out)
        elif op in _SHIFTS:
            out = z3.If(z3.UGE(_fit(a[1], a[0].size()), a[0].size()), self.fresh(t, "undef"), out)
        return out


_COMPARISONS = frozenset({"OpULessThan", "OpULessThanEqual", "OpUGreaterThan", "OpUGreaterThanEqual",
                          "OpSLessThan", "OpSLessThanEqual", "OpSGreaterThan", "OpSGreaterThanEqual",
                          "OpIEqual", "OpINotEqual"})


def _choice_chain(writes: tuple[tuple[Any, int | None, Any, Any], ...], offset: Any, initial: Any) -> Any:
    """The byte at a run-time ``offset`` of a log of byte writes over ``initial``: a chain of
    choices, newest write first, built through z3's C API (libclc's ``pown`` copies a table into
    a private array: 500 byte writes for each of 300 byte loads, 30 s through z3's Python layer;
    an array term of them all was slower still for the solver)."""
    ctx = offset.ctx
    ref, c_ast, out = ctx.ref(), offset.as_ast(), initial
    for o, _, b, p in writes:  # each term wrapped at once: the wrapper holds z3's reference to it
        cond = z3.BoolRef(z3.Z3_mk_eq(ref, o.as_ast(), c_ast), ctx)
        if not z3.is_true(p):
            cond = z3.BoolRef(z3.Z3_mk_and(ref, 2, (z3.Ast * 2)(p.as_ast(), cond.as_ast())), ctx)
        out = z3.BitVecRef(z3.Z3_mk_ite(ref, cond.as_ast(), b.as_ast(), out.as_ast()), ctx)
    return out


def _mentions(e: Any, names: list[Any]) -> bool:
    """Whether ``e`` contains one of the constants ``names``."""
    wanted = {n.get_id() for n in names}
    return any(True for _ in subterms([e], lambda x: x.get_id() in wanted))


#: the environment's synchronisation counters, which a call's return carries back
_SYNC_KEYS = ("phase_wg", "phase_sb", "waits")


def _waits(env: dict[Any, Any]) -> Any:
    return env.get("waits", z3.BitVecVal(0, 16))


def _as_bv(v: Any) -> Any:
    return z3.If(v, z3.BitVecVal(1, 1), z3.BitVecVal(0, 1)) if z3.is_bool(v) else v


def _uf(name: str, args: list[Any], result: Any) -> Any:
    """``name`` applied to ``args``: a z3 function of them (a constant without arguments)."""
    if not args:
        return z3.Const(name, result)
    return z3.Function(name, *[a.sort() for a in args], result)(*args)


def _truth(v: Any) -> Any:
    if z3.is_bool(v):
        return v
    return v != 0


def _insert(comp: Any, obj: Any, path: list[int]) -> Any:
    if not path:
        return comp
    items = list(obj)
    items[path[0]] = _insert(comp, items[path[0]], path[1:])
    return tuple(items)


def _fit(b: Any, width: int) -> Any:
    if b.size() == width:
        return b
    return z3.ZeroExt(width - b.size(), b) if b.size() < width else z3.Extract(width - 1, 0, b)


_INT_OPS: dict[str, Any] = {
    "OpIAdd": lambda a, b: a + b, "OpISub": lambda a, b: a - b, "OpIMul": lambda a, b: a * b,
    "OpUDiv": z3.UDiv, "OpSDiv": lambda a, b: a / b, "OpUMod": z3.URem, "OpSRem": z3.SRem,
    "OpSMod": lambda a, b: a % b,  # z3's bvsmod: the sign of the divisor, as OpSMod
    "OpShiftLeftLogical": lambda a, b: a << _fit(b, a.size()),
    "OpShiftRightLogical": lambda a, b: z3.LShR(a, _fit(b, a.size())),
    "OpShiftRightArithmetic": lambda a, b: a >> _fit(b, a.size()),
    "OpBitwiseAnd": lambda a, b: a & b, "OpBitwiseOr": lambda a, b: a | b, "OpBitwiseXor": lambda a, b: a ^ b,
    "OpNot": lambda a: ~a, "OpSNegate": lambda a: -a,
    "OpIEqual": lambda a, b: a == b, "OpINotEqual": lambda a, b: a != b,
    "OpULessThan": z3.ULT, "OpULessThanEqual": z3.ULE, "OpUGreaterThan": z3.UGT, "OpUGreaterThanEqual": z3.UGE,
    "OpSLessThan": lambda a, b: a < b, "OpSLessThanEqual": lambda a, b: a <= b,
    "OpSGreaterThan": lambda a, b: a > b, "OpSGreaterThanEqual": lambda a, b: a >= b,
    "OpLogicalAnd": z3.And, "OpLogicalOr": z3.Or, "OpLogicalNot": z3.Not,
    "OpLogicalEqual": lambda a, b: a == b, "OpLogicalNotEqual": lambda a, b: a != b,
}
def _mul_extended(extend: Any) -> Any:
    def op(a: Any, b: Any) -> tuple[Any, Any]:
        w = a.size()
        full = extend(w, a) * extend(w, b)
        return z3.Extract(w - 1, 0, full), z3.Extract(2 * w - 1, w, full)
    return op


def _flag(c: Any, like: Any) -> Any:
    return z3.If(c, z3.BitVecVal(1, like.size()), z3.BitVecVal(0, like.size()))


#: the ops whose result is a struct of two integers: (low half, carry / borrow / high half)
_WIDE_OPS: dict[str, Any] = {
    "OpIAddCarry": lambda a, b: (a + b, _flag(z3.ULT(a + b, a), a)),
    "OpISubBorrow": lambda a, b: (a - b, _flag(z3.ULT(a, b), a)),
    "OpUMulExtended": _mul_extended(z3.ZeroExt),
    "OpSMulExtended": _mul_extended(z3.SignExt),
}
_DIVISIONS = frozenset({"OpUDiv", "OpSDiv", "OpUMod", "OpSRem", "OpSMod"})
_SHIFTS = frozenset({"OpShiftLeftLogical", "OpShiftRightLogical", "OpShiftRightArithmetic"})
_FLOAT_OPS = frozenset({"OpDot", "OpVectorTimesScalar", "OpMatrixTimesVector", "OpOrdered", "OpUnordered"})


def _ite(c: Any, a: Any, b: Any) -> Any:
    if isinstance(a, PrivateMemory) and isinstance(b, PrivateMemory):
        return a.merge(b, c)
    if isinstance(a, tuple):
        return tuple(_ite(c, x, y) for x, y in zip(a, b))
    if isinstance(a, (Pointer, PointerChoice)) or isinstance(b, (Pointer, PointerChoice)):
        if a is b or b is None:
            return a
        if a is None:
            return b
        return _choose(c, a, b)
    if a is None or b is None:
        return a if b is None else b
    if a.eq(b):
        return a
    return z3.If(c, a, b)


def _havocable(v: Any) -> bool:
    if isinstance(v, tuple):
        return all(_havocable(x) for x in v)
    return isinstance(v, Pointer) or z3.is_expr(v)


def _havoc_like(v: Any, name: str) -> Any:
    """A fresh value of ``v``'s shape: a vector's components, a pointer's offset any value."""
    if isinstance(v, tuple):
        return tuple(_havoc_like(x, f"{name}_{k}") for k, x in enumerate(v))
    if isinstance(v, Pointer):
        return Pointer(v.root, v.storage, z3.BitVec(name, 64), v.pointee, [])
    return z3.Const(name, v.sort())


def _paired(a: Any, b: Any) -> list[tuple[Any, Any]]:
    """The z3 terms of two values of one shape (:func:`_havoc_like`), side by side."""
    if isinstance(a, tuple):
        return [p for x, y in zip(a, b) for p in _paired(x, y)]
    if isinstance(a, Pointer):
        return [(a.offset, b.offset)]
    return [(a, b)]


def _join(preds: list[Any]) -> Any:
    """The predicate of a block reached by edges of ``preds``: their disjunction, with the
    conjuncts they all share taken out (``p and c`` or ``p and not c`` is ``p``). Without it the
    join of an ``if`` in a loop doubles the predicate at each unrolled iteration."""
    if len(preds) == 1:
        return preds[0]
    # terms are shared (hash-consed): equal ids are equal terms, a set lookup instead of eq() pairs;
    # the conjuncts stay z3's handles (kept alive by ``preds``), not Python terms (terms.py)
    parts = [terms.conjunct_handles(p) for p in preds]
    shared = set.intersection(*[{i for i, _ in ps} for ps in parts])
    common = [h for i, h in parts[0] if i in shared]
    if not common:
        return z3.simplify(z3.Or(*preds))
    ctx = preds[0].ctx
    rest = [terms.conjunction([h for i, h in ps if i not in shared], ctx) for ps in parts]
    either = z3.simplify(z3.Or(*rest))
    return terms.conjunction(common if z3.is_true(either) else common + [either.as_ast()], ctx)


def _broken_on(edges: list[tuple[Any, list[tuple[Any, Any]]]]) -> Any:
    """``c`` -> whether one of the back ``edges`` (predicate, loop variables' new values) can
    leave candidate ``c`` false."""
    return lambda c: z3.Or(*[z3.And(p, z3.Not(z3.substitute(c, *pairs))) for p, pairs in edges])


def _pointer_options(p: Any) -> tuple[tuple[Any, Pointer], ...]:
    if isinstance(p, PointerChoice):
        return p.options
    if isinstance(p, Pointer):
        return ((z3.BoolVal(True), p),)
    raise Unmodelled("unsupported construct: a pointer chosen between a pointer and another value")


def _choose(c: Any, a: Any, b: Any) -> Pointer | PointerChoice:
    """``c ? a : b`` of pointers: one pointer where both are into one variable (its offset
    chosen), else a :class:`PointerChoice` of the variables."""
    by_root: dict[int, tuple[Any, Pointer]] = {}
    for cond, p in [(z3.And(c, x), p) for x, p in _pointer_options(a)] + \
                   [(z3.And(z3.Not(c), x), p) for x, p in _pointer_options(b)]:
        cond = z3.simplify(cond)
        if p.root in by_root:
            old_cond, old = by_root[p.root]
            by_root[p.root] = (z3.simplify(z3.Or(cond, old_cond)), _same_root(cond, p, old))
        else:
            by_root[p.root] = (cond, p)
    if len(by_root) == 1:
        return next(iter(by_root.values()))[1]
    return PointerChoice(tuple(by_root.values()))


def _same_root(c: Any, a: Pointer, b: Pointer) -> Pointer:
    if a is b:
        return a
    steps = [(z3.If(c, ia, ib), n) for (ia, n), (ib, m) in zip(a.steps, b.steps) if n == m] \
        if len(a.steps) == len(b.steps) and all(n == m for (_, n), (_, m) in zip(a.steps, b.steps)) else []
    return Pointer(a.root, a.storage, z3.If(c, a.offset, b.offset), a.pointee, steps)


def _merge_envs(items: list[tuple[Any, dict[Any, Any]]]) -> dict[Any, Any]:
    if len(items) == 1:
        return dict(items[0][1])
    base = dict(items[-1][1])
    keys = set().union(*(e.keys() for _, e in items))
    for k in keys:
        if k == "pred":
            continue
        vals = [(p, e.get(k)) for p, e in items]
        present = [(p, v) for p, v in vals if v is not None]
        if not present:
            continue
        v = present[-1][1]
        for p, x in reversed(present[:-1]):
            if x is v:
                continue
            v = _ite(p, x, v)
        base[k] = v
    return base


def _loop_blocks(fn: Function, header: int, merge: int) -> set[int]:
    """The loop's blocks: those reachable from its header without passing its merge block."""
    out, stack = {header}, [header]
    while stack:
        for t in successors(fn.blocks[stack.pop()]):
            if t != merge and t not in out and t in fn.blocks:
                out.add(t)
                stack.append(t)
    return out


def _exit_path(fn: Function, header: int, body: set[int]) -> set[int]:
    """The loop's blocks from which it can be left (a branch out of the body, a return) without
    coming back to its header: all an exit state's iteration needs to run (the usual loop leaves
    from its header's condition, and the rest of its body, inner loops included, is skipped)."""
    leaving = {label for label in body if fn.blocks[label].insts[-1].op not in ("OpBranch", "OpBranchConditional",
                                                                                "OpSwitch", "OpUnreachable")
               or any(t not in body for t in successors(fn.blocks[label]))}
    preds: dict[int, list[int]] = {}
    for label in body:
        for t in successors(fn.blocks[label]):
            if t in body and t != header:
                preds.setdefault(t, []).append(label)
    out, stack = set(leaving), list(leaving)
    while stack:
        for p in preds.get(stack.pop(), []):
            if p not in out:
                out.add(p)
                stack.append(p)
    return out | {header}


def _const_int(v: Any) -> int | None:
    if isinstance(v, int):
        return v
    v = z3.simplify(v)
    return v.as_long() if z3.is_bv_value(v) else None


def _sext64(v: Any) -> Any:
    return z3.SignExt(64 - v.size(), v) if v.size() < 64 else v


def _first_line(b: Block) -> tuple[str, int] | None:
    return next((i.line for i in b.insts if i.line), None)


def _line(b: Block, m: Module) -> str:
    line = _first_line(b)
    return str(line[1]) if line else "?"


def uniform_loops(ta: Trace, tb: Trace, check: Any) -> list[Any]:
    """Two-invocation invariants of the loops both invocations summarise at the same place: a loop
    variable equal in both (GPUVerify's uniformity), found as Houdini finds the others — equal on
    entry where both enter, and kept equal by one iteration of each from equal values, with the
    back edge taken by both or by neither (the loop runs in lock-step, so "the same iteration" of
    the two is defined). ``check(constraints)`` says whether they can hold together. What comes
    back relates the two invocations at the same iteration: it is for ``__other_*`` (the other's
    value at the same place), not for races, which pair every iteration of one with every
    iteration of the other."""
    by_key = {s.key: s for s in tb.loops}
    out: list[Any] = []
    for la in ta.loops:
        lb = by_key.get(la.key)
        if lb is None or set(la.havoc) != set(lb.havoc):
            continue
        both = z3.And(la.entry_pred, lb.entry_pred)
        rids = [r for r in la.havoc if z3.is_bv(la.havoc[r]) and la.havoc[r].sort() == lb.havoc[r].sort()]
        rids = [r for r in rids if not check([both, la.entry[r] != lb.entry[r]])]
        while rids:
            equal = [la.havoc[r] == lb.havoc[r] for r in rids]
            go_a = z3.Or(*[p for p, _ in la.back]) if la.back else z3.BoolVal(False)
            go_b = z3.Or(*[p for p, _ in lb.back]) if lb.back else z3.BoolVal(False)
            if check([both, *equal, go_a != go_b]):
                rids = []  # not in lock-step: nothing is "the same iteration"
                break
            keep = []
            for r in rids:
                broken = False
                for pa, na in la.back:
                    for pb, nb in lb.back:
                        if r in na and r in nb and check([both, *equal, pa, pb, na[r] != nb[r]]):
                            broken = True
                if not broken:
                    keep.append(r)
            if len(keep) == len(rids):
                break
            rids = keep
        out += [z3.Implies(both, la.havoc[r] == lb.havoc[r]) for r in rids]
    return out
