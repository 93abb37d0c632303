"""The proof of one launch: GPUVerify's two-invocation reduction over SPIR-V.

Two arbitrary distinct invocations A and B of the launch are encoded
(:mod:`kernellab.verify.prove.encode`), sharing the launch's arguments and the contents of the
buffers no invocation writes; z3 is then asked, for every pair of their accesses, whether they can
touch the same bytes unordered by a barrier (a race), for every barrier whether one of two
invocations of a work-group can reach it while the other does not (divergence), and for every
access whether it can fall outside its variable or buffer (out-of-bounds). Unsatisfiable for all:
proven for every input. A satisfying model is a counterexample (:class:`Counterexample`).
"""
from __future__ import annotations

import time
from dataclasses import field
from typing import Any

import z3

from kernellab.records import dataclass
from kernellab.spirvsim.module import Inst, Module
from kernellab.verify.prove import barrier_loops, counters, spec
from kernellab.verify.prove import encode as enc
from kernellab.verify.prove import images as images_
from kernellab.verify.prove import sizes as sz

#: seconds one launch's proof may take (z3 time limit plus the encoder's own checks)
DEFAULT_TIMEOUT = 60.0
#: states kept from the encoder's satisfiable queries, tried on the next ones before z3 is asked
MODELS_KEPT = 4
#: megabytes z3 may use
DEFAULT_MEMORY_MB = 4096


@dataclass
class Launch:
    """What the proof assumes of one launch: its sizes, the bytes of each buffer (None: as
    GPUVerify, an argument array without a size has no bound), the bytes the launch fixes (push
    constants: the scalar arguments given a value) and the names of the variables for reports."""

    local_size: tuple[int, int, int]
    num_groups: tuple[int, int, int]
    global_offset: tuple[int, int, int] = (0, 0, 0)
    #: (descriptor set, binding) -> bytes of the bound buffer (None: unbounded)
    buffer_sizes: dict[tuple[int, int], int | None] = field(default_factory=dict)
    #: bytes the launch fixes, of the push-constant block ("push") or a read-only buffer ((set,
    #: binding)): offset -> byte
    fixed: dict[Any, dict[int, int]] = field(default_factory=dict)
    #: (descriptor set, binding) or "push" -> a name the user knows
    names: dict[Any, str] = field(default_factory=dict)
    #: make the work-group size and count symbolic (``--prove-sizes``), within ``size_space``
    symbolic_sizes: bool = False
    #: what the sizes may be when symbolic: the device's limits, what the files fix
    size_space: sz.Space = field(default_factory=sz.Space)
    #: clspv's built-in push constants that hold sizes (what, offset, bytes): tied to the
    #: symbolic sizes (with fixed sizes their bytes are in ``fixed``)
    size_push: list[tuple[str, int, int]] = field(default_factory=list)
    #: added to the global ids a counterexample reports, where the module adds the launch's offset
    #: itself (clspv's ``-global-offset``) and ``global_offset`` is therefore 0
    reported_offset: tuple[int, int, int] = (0, 0, 0)
    #: facts assumed of the uninterpreted functions (z3 formulas over ``kl_uf<N>``: the axioms a
    #: GPUVerify test gives in a Boogie file, :mod:`kernellab.verify.prove.stubs`)
    axioms: list[Any] = field(default_factory=list)
    #: check races between invocations of one work-group only (GPUVerify's ``--only-intra-group``)
    intra_group_only: bool = False
    #: arrays whose accesses are neither checked for races nor logged for ``__read``/``__write``
    #: (GPUVerify's ``--vcgen-opt=/checkArrays:NAMES`` leaves the others out): buffers by
    #: (descriptor set, binding), and all workgroup memory where ``unchecked_local``
    unchecked_buffers: set[tuple[int, int]] = field(default_factory=set)
    unchecked_local: bool = False
    #: (descriptor set, binding) -> the extent of an image (:mod:`kernellab.verify.prove.images`);
    #: ``buffer_sizes`` holds its bytes
    images: dict[tuple[int, int], images_.Extent] = field(default_factory=dict)


@dataclass
class Counterexample:
    kind: str
    message: str
    #: the two invocations: {"global": [..], "local": [..], "group": [..]}
    work_items: list[dict[str, list[int]]]
    inst: list[Inst]
    #: the push-constant block's bytes (offset -> byte) in the model
    push_bytes: dict[int, int]
    #: (set, binding) -> {offset: byte} of the read-only buffers' bytes the invocations read
    buffer_bytes: dict[tuple[int, int], dict[int, int]]
    address_space: str
    resource: str | None
    offset: int | None
    sizes: tuple[tuple[int, int, int], tuple[int, int, int]] | None = None
    #: found where a loop is summarised by invariants: the states may be ones no launch reaches
    abstract: bool = False


@dataclass
class Outcome:
    verdict: str  # proven | defect | unknown
    findings: list[Counterexample] = field(default_factory=list)
    reason: str | None = None
    line: tuple[str, int] | None = None
    seconds: float = 0.0
    queries: int = 0


class _Deadline(Exception):
    pass


def prove(module: Module, launch: Launch, *, timeout: float = DEFAULT_TIMEOUT,
          memory_mb: int = DEFAULT_MEMORY_MB) -> Outcome:
    """Prove the launch free of races, barrier divergence and out-of-bounds accesses, or find
    counterexamples, or say why neither was possible."""
    start = time.monotonic()
    z3.set_param("memory_max_size", memory_mb)
    prover = _Prover(module, launch, start + timeout)
    try:
        out = prover.run()
    except enc.Unmodelled as exc:
        out = Outcome("unknown", reason=exc.reason + (f" ({exc.text})" if exc.text else ""), line=exc.line)
    except _Deadline:
        out = Outcome("unknown", reason=f"solver time limit ({timeout:g} s) reached")
    except z3.Z3Exception as exc:  # z3's memory cap, an exhausted resource: no verdict
        out = Outcome("unknown", reason=f"solver error: {exc}")
    except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
        # a shape of SPIR-V the encoder does not expect: never a verdict from it
        out = Outcome("unknown", reason=f"unsupported construct: the encoder failed ({type(exc).__name__}: {exc})")
    out.seconds = time.monotonic() - start
    out.queries = prover.queries
    return out


class _Prover:
    def __init__(self, module: Module, launch: Launch, deadline: float):
        self.m, self.launch, self.deadline = module, launch, deadline
        self.queries = 0
        self.houdini_hints: dict[tuple[int, int], list[int]] = {}
        #: the launch's sizes as variables (--prove-sizes), once :meth:`sizes` made them
        self.symbolic: sz.Symbolic | None = None
        #: seconds one solver query may take (None: until the deadline)
        self.query_cap: float | None = None
        self.bindings: dict[int, tuple[int, int]] = {}
        for vid in module.variables:
            s, b = module.decorated(vid, "DescriptorSet"), module.decorated(vid, "Binding")
            if s is not None and b is not None:
                self.bindings[vid] = (s[0], b[0])
        #: workgroup variables read and never written (:meth:`group_memory`)
        self.unwritten_local: set[int] = set()
        self.push_var = next((vid for vid, inst in module.variables.items()
                              if module.types[module.type_of[vid]].storage == "PushConstant"), None)

    # --- the launch --------------------------------------------------------------------------

    def ids(self, tag: str, sizes: tuple[list[Any], list[Any]]) -> tuple[enc.Ids, list[Any]]:
        ls, ng = sizes
        local = [z3.BitVec(f"{tag}_local{d}", 32) for d in range(3)]
        group = [z3.BitVec(f"{tag}_group{d}", 32) for d in range(3)]
        off = self.launch.global_offset
        glob = [group[d] * ls[d] + local[d] + off[d] for d in range(3)]
        cons = [z3.ULT(local[d], ls[d]) for d in range(3)] + [z3.ULT(group[d], ng[d]) for d in range(3)]
        if self.symbolic is not None:
            glob, facts = sz.global_ids(tag, group, local, self.symbolic, off)
            cons += facts
        return enc.Ids(local, group, glob, ng, ls), cons

    def sizes(self) -> tuple[tuple[list[Any], list[Any]], list[Any]]:
        la = self.launch
        if not la.symbolic_sizes:
            return ([z3.BitVecVal(x, 32) for x in la.local_size], [z3.BitVecVal(x, 32) for x in la.num_groups]), []
        symbolic = sz.symbolic(self.m, la.size_space, [a + b for a, b in zip(la.global_offset, la.reported_offset)])
        if self.check(symbolic.constraints) is None:
            raise enc.Unmodelled(f"no work-group size and count within the device's limits ({_limits(la.size_space)}) "
                                 "and what the files fix: nothing to prove (--prove-sizes)")
        self.symbolic = symbolic
        return (symbolic.local, symbolic.groups), list(symbolic.constraints)

    def run(self) -> Outcome:
        sizes, size_cons = self.sizes()
        ids_a, cons_a = self.ids("A", sizes)
        ids_b, cons_b = self.ids("B", sizes)
        if self.symbolic is not None:
            size_cons += sz.pair_facts(ids_a, ids_b, self.symbolic)
        shared = {vid for vid, inst in self.m.variables.items()
                  if self.m.types[self.m.type_of[vid]].storage in ("StorageBuffer", "Uniform", "PushConstant")}
        arrays = {vid: z3.Array(f"mem{vid}", z3.BitVecSort(64), z3.BitVecSort(8)) for vid in shared}
        fixed = []
        keys: dict[Any, int | None] = {b: v for v, b in self.bindings.items()}
        keys["push"] = self.push_var
        for key, values in self.launch.fixed.items():
            vid = keys.get(key)
            if vid is not None and vid in arrays:
                fixed += [z3.Select(arrays[vid], off) == byte for off, byte in values.items()]
        if self.symbolic is not None and self.push_var in arrays:
            fixed += sz.push_constraints(arrays[self.push_var], self.launch.size_push, self.symbolic)
        base = size_cons + fixed + list(self.launch.axioms)
        trace_a = self.encode(ids_a, arrays, "A", base + cons_a)
        written = {a.root for a in trace_a.accesses if a.kind != "read" and a.kind != "private"}
        # workgroup memory no invocation writes holds what it held at the start, the same bytes
        # for every read of one work-group (each group has its own): :meth:`group_memory`
        unwritten = {a.root for a in trace_a.accesses if a.kind == "read" and a.storage == "Workgroup"} - written
        if written & set(arrays) or unwritten:
            arrays = {k: v for k, v in arrays.items() if k not in written}
            self.unwritten_local = unwritten
            trace_a = self.encode(ids_a, arrays, "A", base + cons_a)
        trace_b = self.encode(ids_b, arrays, "B", base + cons_b)
        one = self.launch.local_size[0] * self.launch.local_size[1] * self.launch.local_size[2] == 1
        if trace_a.copies and self.symbolic is not None:
            ls = self.symbolic.local
            one = self.check(size_cons + [ls[0] == 1, ls[1] == 1, ls[2] == 1]) is not None
        if trace_a.copies and one:
            # two invocations of one work-group are how a copy in flight is seen to race
            raise enc.Unmodelled("unsupported construct: async copies in work-groups of one work-item")
        self.arrays = arrays
        self.ids_ab = (ids_a, ids_b)
        self.reads = trace_a.reads + trace_b.reads
        both = base + cons_a + cons_b + trace_a.assumes + trace_b.assumes + spec.link_others(trace_a, trace_b)
        distinct = z3.Or(*[ids_a.local[d] != ids_b.local[d] for d in range(3)],
                         *[ids_a.group[d] != ids_b.group[d] for d in range(3)])
        same_group = z3.And(*[ids_a.group[d] == ids_b.group[d] for d in range(3)])
        one_memory = [z3.Implies(same_group, self.group_memory("A")[v] == self.group_memory("B")[v])
                      for v in sorted(self.unwritten_local)]
        both += one_memory
        # the two invocations' summarised barrier loops at the same iterations (GPUVerify's uniformity)
        loop_pairs = barrier_loops.pair_facts(trace_a.loops, trace_b.loops, same_group,
                                              lambda c: self.check(both + [distinct] + c) is not None)
        both += loop_pairs
        steps = counters.distinct_results(trace_a, trace_b, same_group, self.sharing(),
                                          lambda c: self.check(base + cons_a + [c]) is not None)
        found: list[Counterexample] = []
        found += self.out_of_bounds(trace_a, base + cons_a + trace_a.assumes)
        pair = base + cons_a + cons_b + [distinct] + one_memory + loop_pairs + [
            a for a in trace_b.assumes if a.get_id() not in trace_b.after_checks] + spec.link_others(trace_a, trace_b)
        if trace_a.loops and any(spec.mentions_other(r.cond, trace_a) for r in trace_a.asserts):
            # A's own loop invariants only: its other assumptions hold after the places they are made
            known = pair + [s.invariant for s in trace_a.loops if s.invariant is not None]
            pair = pair + enc.uniform_loops(trace_a, trace_b, lambda c: self.check(known + c) is not None)
            pair = pair + spec.same_iteration(trace_a, trace_b, lambda c: self.check(known + c) is not None)
        found += self.assertions(trace_a, base + cons_a, pair)
        found += self.divergence(trace_a, trace_b, both + [f for f, _ in steps] + [distinct, same_group])
        race_cons = both + [distinct] + ([same_group] if self.launch.intra_group_only else [])
        found += self.races(trace_a, trace_b, race_cons, same_group, steps)
        if any(f.abstract for f in found):
            view_a, view_b = _bounded_view(trace_a), _bounded_view(trace_b)
            found = [self.concrete(f, view_a, view_b, base + cons_a, pair,
                                   race_cons + trace_a.bounded_assumes + trace_b.bounded_assumes, same_group, steps)
                     if f.abstract else f for f in found]
        return Outcome("defect" if found else "proven", found)

    def sharing(self) -> dict[str, int]:
        """How many invocations of the launch (at most) share a variable of each storage class."""
        la = self.launch
        group = la.local_size[0] * la.local_size[1] * la.local_size[2]
        return {"Workgroup": group, "StorageBuffer": group * la.num_groups[0] * la.num_groups[1] * la.num_groups[2]}

    def concrete(self, f: Counterexample, ta: enc.Trace, tb: enc.Trace, cons: list[Any], pair: list[Any],
                 race_cons: list[Any], same_group: Any,
                 steps: list[tuple[Any, set[int]]] | None = None) -> Counterexample:
        """A counterexample of the same kind and instructions as ``f`` (found in a loop
        summarised by invariants, perhaps in a state no launch reaches) among the records the
        loops' unrolled iterations made (bounded model checking: exact), or ``f`` if none."""
        only = {i.index for i in f.inst}
        got: list[Counterexample] = []
        # a search that runs long leaves the abstract counterexample (its replay may confirm it)
        # and time for the others: each query gets a third of what is left
        self.query_cap = max(1.0, (self.deadline - time.monotonic()) / 3)
        try:
            if f.kind == "out-of-bounds":
                got = self.out_of_bounds(ta, cons + ta.assumes, only)
            elif f.kind == "assertion":
                got = self.assertions(ta, cons, pair, only)
            elif f.kind == "data-race":
                got = self.races(ta, tb, race_cons, same_group, steps, only)
        except _Deadline:
            got = []
        finally:
            self.query_cap = None
        return next((g for g in got if not g.abstract), f)

    def encode(self, ids: enc.Ids, arrays: dict[int, Any], tag: str, cons: list[Any]) -> enc.Trace:
        solver = z3.Solver()
        solver.add(*cons)
        #: the last states the solver found (each satisfies ``cons``): an unrolled loop's next back
        #: edge is usually taken in the state that took the last one
        models: list[z3.ModelRef] = []

        def may(pred: Any, cap: int | None = None) -> bool:
            """Whether ``pred`` can hold; with ``cap`` (z3 resource units: deterministic, unlike a
            time limit), a query that needs more says it can (for questions where "perhaps" is
            the safe answer: a candidate invariant dropped)."""
            self.tick()
            if z3.is_false(pred):
                return False
            for m in models:  # a state an earlier query found may show this one too, without z3
                if z3.is_true(m.eval(pred, model_completion=True)):
                    return True
            solver.push()
            solver.add(pred)
            solver.set("timeout", self.ms())
            if cap is not None:
                solver.set("rlimit", cap)
            r = solver.check()
            if cap is not None:
                solver.set("rlimit", 0)
            if r == z3.sat:
                models.insert(0, solver.model())
                del models[MODELS_KEPT:]
            solver.pop()
            if r == z3.unknown:
                if cap is not None and time.monotonic() < self.deadline:
                    return True
                raise _Deadline()
            return r == z3.sat

        sizes = {vid: self.var_size(vid) for vid in self.m.variables}
        memory = enc.Memory({**arrays, **self.group_memory(tag)})
        e = enc.Encoder(self.m, ids, memory, tag, sizes, may) if self.symbolic is None else \
            sz.SizedEncoder(self.m, ids, memory, tag, sizes, may, self.symbolic)
        e.specs.unlogged = self.unchecked()
        # Houdini's survivors carry over between encodings (A's first, A's, B's: the same loops and
        # candidates); each encoding checks them again before it uses them (Encoder.houdini)
        e.houdini_hints = self.houdini_hints
        e.image_extents = images_.extents(self.launch.images, self.bindings)
        trace = e.run_entry(None)
        # the assumptions hold on the path that reaches them: they constrain the rest of the check
        return trace

    def unchecked(self) -> set[int]:
        """The variables :attr:`Launch.unchecked_buffers` and :attr:`Launch.unchecked_local` name."""
        la = self.launch
        out = {vid for vid, key in self.bindings.items() if key in la.unchecked_buffers}
        if la.unchecked_local:
            out |= {vid for vid in self.m.variables if self.m.types[self.m.type_of[vid]].storage == "Workgroup"}
        return out

    def group_memory(self, tag: str) -> dict[int, Any]:
        """The contents of the workgroup variables no invocation writes, as invocation ``tag``'s
        work-group has them (equal to the other invocation's where both are in one group)."""
        return {vid: z3.Array(f"{tag}_group_memory{vid}", z3.BitVecSort(64), z3.BitVecSort(8))
                for vid in self.unwritten_local}

    def var_size(self, vid: int) -> int | None:
        t = self.m.types[self.m.type_of[vid]]
        assert t.elem is not None
        if vid in self.bindings:
            return self.launch.buffer_sizes.get(self.bindings[vid])
        if t.elem.kind == "runtime_array" or (t.elem.kind == "struct" and t.elem.members
                                              and t.elem.members[-1].kind == "runtime_array"):
            return None
        return t.elem.size

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise _Deadline()

    def ms(self) -> int:
        return max(1, int((self.deadline - time.monotonic()) * 1000))

    def check(self, cons: list[Any]) -> z3.ModelRef | None:
        self.tick()
        self.queries += 1
        s = z3.Solver()
        s.set("timeout", self.ms() if self.query_cap is None else min(self.ms(), int(self.query_cap * 1000)))
        s.add(*cons)
        r = s.check()
        if r == z3.sat and self.symbolic is not None and self.symbolic.exact:
            # satisfiable without the products group x size (sizes.global_ids): with them now
            s.set("timeout", self.ms())
            s.add(*self.symbolic.exact)
            r = s.check()
        if r == z3.unknown:
            raise _Deadline()
        if r != z3.sat:
            return None
        if self.symbolic is not None and self.symbolic.variables:
            # a counterexample at small sizes: its replay is a launch a simulator runs quickly
            left = self.deadline - time.monotonic()
            return sz.shrink(s.model(), cons + self.symbolic.exact, self.symbolic.variables,
                             time.monotonic() + min(10.0, left / 4))
        return s.model()

    # --- the checks --------------------------------------------------------------------------

    def size_of(self, root: int) -> int | None:
        return self.var_size(root)

    def out_of_bounds(self, trace: enc.Trace, cons: list[Any], only: set[int] | None = None) -> list[Counterexample]:
        """One query per instruction: any of its occurrences (unrolled copies) out of bounds."""
        out: list[Counterexample] = []
        per_dimension = not self.m.object_bounds
        groups: dict[int, list[tuple[enc.AccessRecord, Any]]] = {}
        for a in trace.accesses:
            if only is not None and a.inst.index not in only:
                continue
            size = self.size_of(a.root)
            conds = []
            if size is not None:
                conds.append(z3.Or(a.offset < 0, a.offset + a.size > size))
            if per_dimension:
                conds += [z3.UGE(idx, n) for idx, n in a.steps if n > 0]
            if conds:
                groups.setdefault(a.inst.index, []).append((a, z3.And(a.pred, *a.given, z3.Or(*conds))))
        for items in groups.values():
            model = self.check(cons + [z3.Or(*[c for _, c in items])])
            if model is None:
                continue
            a = next((a for a, c in items if z3.is_true(model.eval(c, model_completion=True))), items[0][0])
            size = self.size_of(a.root)
            out.append(self.example("out-of-bounds", f"{_what(a)} outside its {size} bytes" if size else
                                    f"{_what(a)} past an array's length", model, [a], single=True))
        return out

    def assertions(self, trace: enc.Trace, cons: list[Any], pair: list[Any],
                   only: set[int] | None = None) -> list[Counterexample]:
        """Each annotation's assertion, for invocation A; one that reads the other invocation's
        values (``__other_int``, ``__uniform_*``) with both invocations encoded (``pair``)."""
        out = []
        for r in trace.asserts:
            if only is not None and r.inst.index not in only:
                continue
            two = spec.mentions_other(r.cond, trace)
            before = trace.assumes[:r.assumed] if r.assumed is not None else trace.assumes
            model = self.check((pair if two else cons) + before + list(r.given) + [r.pred, z3.Not(r.cond)])
            if model is not None:
                out.append(self.example("assertion", "an assertion (__assert) can fail", model, [], single=not two,
                                        insts=[r.inst]))
                out[-1].abstract = r.abstract
        return out

    def divergence(self, ta: enc.Trace, tb: enc.Trace, cons: list[Any]) -> list[Counterexample]:
        if [b.key for b in ta.barriers] != [b.key for b in tb.barriers]:
            raise enc.Unmodelled("unsupported construct: the two invocations' barriers could not be paired")
        out = []
        for ba, bb in zip(ta.barriers, tb.barriers):
            # reached by one and not the other, or (an async copy) reached by both with other arguments;
            # after a summarised loop its exit states (both invocations') satisfy its invariants
            differ = [x != y for x, y in zip(ba.values, bb.values)]
            apart = z3.Or(ba.pred != bb.pred, z3.And(ba.pred, bb.pred, z3.Or(*differ))) if differ else ba.pred != bb.pred
            # a barrier in a summarised loop: the two at the same iteration
            at = [x == y for x, y in zip(ba.iteration, bb.iteration)]
            model = self.check(cons + list(ba.given) + list(bb.given) + at + [apart])
            if model is not None:
                out.append(self.example("barrier-divergence", "a barrier reached by one invocation of a "
                                        "work-group and not by another", model, [], insts=[ba.inst]))
                out[-1].abstract = ta.summarized > 0
                break
        return out

    def races(self, ta: enc.Trace, tb: enc.Trace, cons: list[Any], same_group: Any,
              steps: list[tuple[Any, set[int]]] | None = None, only: set[int] | None = None) -> list[Counterexample]:
        """One query per pair of instructions (those of ``only``): any of their occurrences'
        pairs racing (with the counter facts about the values it mentions: :func:`counters.relevant`)."""
        out: list[Counterexample] = []
        groups: dict[tuple[int, int], list[tuple[enc.AccessRecord, enc.AccessRecord, Any]]] = {}
        unchecked = self.unchecked()
        for a in ta.accesses:
            if a.storage not in ("StorageBuffer", "Workgroup", images_.STORAGE) or a.root in unchecked:
                continue
            for b in tb.accesses:
                if b.root != a.root or (a.kind.endswith("read") and b.kind.endswith("read")):
                    continue
                if a.kind.startswith("atomic") and b.kind.startswith("atomic"):
                    continue
                if b.inst.index < a.inst.index:  # A and B are symmetric: (x, y) covers (y, x)
                    continue
                if only is not None and {a.inst.index, b.inst.index} != only:
                    continue
                overlap = z3.And(a.offset < b.offset + b.size, b.offset < a.offset + a.size)
                if a.copy is not None or b.copy is not None:
                    unordered = _copy_unordered(a, b, ta, tb, same_group)
                elif a.storage == "Workgroup":
                    unordered = z3.And(same_group, a.phase_wg == b.phase_wg)
                else:  # an image's phase is in phase_sb too (images.py)
                    unordered = z3.Or(z3.Not(same_group), a.phase_sb == b.phase_sb)
                groups.setdefault((a.inst.index, b.inst.index), []).append(
                    (a, b, z3.And(a.pred, b.pred, *a.given, *b.given, overlap, unordered)))
        for items in groups.values():
            query = z3.Or(*[c for _, _, c in items])
            model = self.check(cons + counters.relevant(steps or [], query) + [query])
            if model is None:
                continue
            a, b, _ = next((x for x in items if z3.is_true(model.eval(x[2], model_completion=True))), items[0])
            kind = "write-write" if "write" in a.kind and "write" in b.kind else "read-write"
            out.append(self.example("data-race", f"{kind} race on {_space(a.storage)} memory", model, [a, b]))
        return out

    # --- counterexamples ---------------------------------------------------------------------

    def example(self, kind: str, message: str, model: z3.ModelRef, accesses: list[enc.AccessRecord],
                single: bool = False, insts: list[Inst] | None = None) -> Counterexample:
        def num(x: Any) -> int:
            return model.eval(x, model_completion=True).as_long()  # type: ignore[no-any-return]

        items = []
        for ids in self.ids_ab[:1] if single else self.ids_ab:
            offset = self.launch.reported_offset
            items.append({"global": [num(x) + o for x, o in zip(ids.global_, offset)], "local": [num(x) for x in ids.local],
                          "group": [num(x) for x in ids.group]})
        push: dict[int, int] = {}
        buffers: dict[tuple[int, int], dict[int, int]] = {}
        for vid, array in self.arrays.items():
            if vid == self.push_var:
                t = self.m.types[self.m.type_of[vid]]
                assert t.elem is not None
                push = {k: num(z3.Select(array, k)) for k in range(t.elem.size)}
        for read_root, offset, size in self.reads:  # the bytes that matter: those the two invocations read
            if read_root in self.bindings and read_root in self.arrays:
                start = num(offset)
                got = buffers.setdefault(self.bindings[read_root], {})
                for k in range(size):
                    got[start + k] = num(z3.Select(self.arrays[read_root], z3.BitVecVal(start + k, 64)))
        root = accesses[0].root if accesses else None
        resource = None
        if root is not None:
            key = self.bindings.get(root)
            resource = self.launch.names.get(key) if key else None
            resource = resource or self.m.names.get(root)
        sizes = None
        if self.launch.symbolic_sizes:
            ls, ng = self.ids_ab[0].local_size, self.ids_ab[0].num_groups
            sizes = ((num(ls[0]), num(ls[1]), num(ls[2])), (num(ng[0]), num(ng[1]), num(ng[2])))
        return Counterexample(kind, message, items, insts or [a.inst for a in accesses], push, buffers,
                              _space(accesses[0].storage) if accesses else "", resource,
                              num(accesses[0].offset) if accesses else None, sizes,
                              abstract=any(a.abstract for a in accesses))


def _bounded_view(t: enc.Trace) -> enc.Trace:
    """The trace's exact records: those outside summarised loops and those of the iterations its
    loops were unrolled before being summarised (with the assumptions made in them)."""
    return enc.Trace(accesses=[a for a in t.accesses + t.bounded if not a.abstract], barriers=t.barriers,
                     asserts=[r for r in t.asserts + t.bounded_asserts if not r.abstract],
                     assumes=t.assumes + t.bounded_assumes, reads=t.reads, summarized=t.summarized,
                     copies=t.copies, others=t.others, loops=t.loops, after_checks=t.after_checks)


def _copy_unordered(a: enc.AccessRecord, b: enc.AccessRecord, ta: enc.Trace, tb: enc.Trace, same_group: Any) -> Any:
    """Whether an element access of an async copy and another access can be unordered: in one
    work-group while the copy is in flight (from its call's barrier interval until the wait that
    waited for it), or, on a storage buffer, in two work-groups. Two invocations' accesses of the
    same copy are the work-group's one copy, not a race."""
    ca = ta.copies[a.copy] if a.copy is not None else None
    cb = tb.copies[b.copy] if b.copy is not None else None
    if ca is not None and cb is not None:
        if ca.key == cb.key:
            in_flight: Any = z3.BoolVal(False)
        else:  # two copies in flight at once
            in_flight = z3.And(z3.UGT(ca.done, cb.waits), z3.UGT(cb.done, ca.waits))
    else:
        c, x = (ca, b) if ca is not None else (cb, a)
        assert c is not None
        started = z3.UGE(x.phase_wg, c.phase_wg) if x.storage == "Workgroup" else z3.UGE(x.phase_sb, c.phase_sb)
        in_flight = z3.And(started, z3.ULT(x.waits, c.done))
    if a.storage == "Workgroup":
        return z3.And(same_group, in_flight)
    return z3.Or(z3.Not(same_group), in_flight)


def _limits(space: sz.Space) -> str:
    lim = space.limits
    count = f", count {lim.max_count}" if lim.max_count is not None else ""
    return f"{lim.source}: size {lim.max_size}, {lim.max_invocations} invocations{count}"


def _space(storage: str) -> str:
    return {"Workgroup": "workgroup", "StorageBuffer": "storage-buffer", "Uniform": "uniform",
            "Function": "private", "Private": "private", "PushConstant": "push-constant",
            images_.STORAGE: "image"}.get(storage, storage)


def _what(a: enc.AccessRecord) -> str:
    verb = "write" if "write" in a.kind else "read"
    return f"a {a.size}-byte {verb} of {_space(a.storage)} memory"
