"""GPUVerify's annotations in the proof: what each call the annotation header makes means
(docs/verify-prove.md, "Annotations"). :class:`Specs` is the encoder's helper: it turns an
annotation call into assertions, assumptions and values of one invocation's trace, keeps the
access-log predicates (``__read``, ``__write_offset_bytes``, ...), the values another invocation
has (``__other_int``) and the postconditions of the functions being run (``__ensures``).

Every value an annotation gives that the encoding cannot pin down is a fresh term: an assertion
over it can only fail more often, an assumption over it constrains less. So a false annotation
never lets a defect be proven.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import field
from typing import Any

import z3

from kernellab.records import dataclass
from kernellab.verify.prove import terms

#: the log annotations: which accesses they see, and what they give
_LOGS = {"__kl_read": ("read", "has"), "__kl_write": ("write", "has"), "__kl_read_offset": ("read", "offset"),
         "__kl_write_offset": ("write", "offset"), "__kl_ptr_offset": ("", "pointer")}
#: single-operand instructions between a log annotation's probe load and the call
_CONVERSIONS = ("OpBitcast", "OpSConvert", "OpUConvert", "OpConvertFToS", "OpConvertFToU", "OpCopyObject")


@dataclass
class Frame:
    """A function being run (inlined): its postconditions, checked where it returns."""

    fn: Any
    args: list[Any]
    pred: Any
    #: ``__ensures`` met: (path predicate, condition, instruction, unpredicated)
    ensures: list[tuple[Any, Any, Any, bool]] = field(default_factory=list)
    #: the placeholders ``__return_val_*()`` gave
    returns: list[Any] = field(default_factory=list)
    #: the checked-for-every-argument run of the function (GPUVerify checks a contract modularly)
    modular: bool = False
    #: the first access record of the modular run; before it, the logs are any state
    floor: int = 0
    #: the ``__other_*`` records the postconditions' expressions made
    others: list[OtherRecord] = field(default_factory=list)
    entry: dict[tuple[str, int], tuple[Any, Any]] = field(default_factory=dict)


@dataclass
class LoopMark:
    """A loop summarised by invariants, while its arbitrary iteration is encoded: the logs read
    in it are settled when it ends (an earlier iteration's accesses are those of the whole body)."""

    start: int  # its first access record
    fresh: int  # the encoder's fresh-value counter when it started
    calls: int  # and its call counter
    logs: int  # and this helper's own counter
    invariant: Any
    #: GPUVerify's lock-step reading: whether this invocation is at the iteration the other one's
    #: ``__other_*`` pair with (None: not the outermost summarised loop)
    here: Any = None
    #: logs read in the iteration: (kind, root, storage, (wg, sb) phases, access index, has, offset, assume index)
    deferred: list[tuple[Any, ...]] = field(default_factory=list)
    #: ``__atomic_has_taken_value`` read in the iteration: (root, index, value, access index, taken, assume index)
    taken: list[tuple[Any, ...]] = field(default_factory=list)


@dataclass
class OtherRecord:
    """A value of this invocation that the other one's ``__other_*`` at the same place sees."""

    key: tuple[Any, ...]
    value: Any
    fresh: Any


class Specs:
    """The annotation calls of one invocation's encoding (``enc``: the
    :class:`~kernellab.verify.prove.encode.Encoder`)."""

    def __init__(self, enc: Any, assert_record: Any):
        self.enc, self.assert_record = enc, assert_record
        self._modular_next = False
        #: how many __other_* records there were at the last statement-like annotation
        self.mark = 0
        self.frames: list[Frame] = []
        self.defs: dict[int, Any] | None = None
        self.count = itertools.count()
        #: log variables -> (kind, root): re-evaluated where a postcondition is checked
        self.log_vars: dict[int, tuple[str, int, str]] = {}
        self._cache: dict[tuple[Any, ...], tuple[Any, Any, int, Any]] = {}
        self.loops: list[LoopMark] = []
        #: variables whose accesses are not logged (:attr:`engine.Launch.unchecked_buffers`): no log
        self.unlogged: set[int] = set()
        #: ghost arrays ``__array_snapshot`` wrote: read from this invocation's snapshot, kept
        #: across barriers, written by nothing else (:meth:`snapshot`)
        self.snapshots: set[int] = set()

    # --- calls -------------------------------------------------------------------------------

    def annotate(self, env: dict[Any, Any], pred: Any, inst: Any, name: str, args: list[Any], rtype: Any) -> Any:
        """The call ``name(args)`` at ``inst``: its effect on the trace, and the value it gives."""
        enc, trace = self.enc, self.enc.trace
        frame = self.frames[-1] if self.frames else None
        inner = len(self.frames) > 1
        if name in _LOGS:
            return self.log(env, inst, name, rtype)
        if name.startswith("__kl_noovfl"):
            return self.noovfl(env, pred, inst, name, args)
        if name in ("__kl_taken", "__kl_snapshot"):
            return (self.taken if name == "__kl_taken" else self.snapshot)(env, pred, inst, name, args, rtype)
        arg = self.scalar(env, inst, name, args[0])
        if name == "__kl_other":
            fresh = enc.fresh(rtype, "other")
            n = sum(1 for r in trace.others if r.key[:2] == (enc.key, inst.index))
            trace.others.append(OtherRecord((enc.key, inst.index, n), arg, fresh))
            return fresh
        # in a summarised loop, enabled only at the iteration the other invocation's __other_* see
        here = [m.here for m in self.loops if m.here is not None]
        if name == "__kl_enabled":
            return z3.If(z3.And(pred, *here), z3.BitVecVal(1, 32), z3.BitVecVal(0, 32))
        if name == "__kl_dominator":
            # GPUVerify's: whether the block's immediate dominator is reached, which every path
            # here passes: true where this place is reached, and any value where it is not
            return z3.If(z3.And(pred, *here), z3.BitVecVal(1, 32), enc.fresh(rtype, "undef"))
        if name in ("__kl_return", "__kl_return4"):
            if frame is None or not inner:
                raise enc.unmodelled(inst, f"{_SOURCE[name]} outside a called function")
            value = enc.fresh(rtype, "retval")
            frame.returns.append(value)
            return value
        cond = arg if z3.is_bool(arg) else arg != 0
        # the __other_* records made since the last statement-like annotation belong to this one
        mine = trace.others[self.mark:] if self.mark <= len(trace.others) else []
        self.mark = len(trace.others)
        if name in ("__kl_ensures", "__kl_ensures_all"):
            if frame is None or not inner:
                raise enc.unmodelled(inst, f"{_SOURCE[name]} in a kernel (a postcondition of the launch)")
            frame.ensures.append((pred, cond, inst, name == "__kl_ensures_all"))
            frame.others += mine
            return None
        if name == "__kl_assert":
            self.check(pred, cond, inst)
        elif name in ("__kl_requires", "__kl_requires_fn", "__kl_requires_all"):
            # the kernel's preconditions are the launch's assumptions; a called function's
            # (``_fn``: the header's pass found it in one, inlined or not; GLSL's: one not inlined)
            # are checked where it is called (for every invocation, reached or not, when global),
            # then assumed; in the run that checks a contract for every argument, only assumed
            callee = name != "__kl_requires" or inner
            if callee and not (frame is not None and frame.modular):
                self.check(z3.BoolVal(True) if name == "__kl_requires_all" else pred, cond, inst)
                self.assume_checked(z3.Implies(pred, cond))
            else:
                trace.assumes.append(z3.Implies(pred, cond))
        elif name == "__kl_assume":
            trace.assumes.append(z3.Implies(pred, cond))
        else:
            raise enc.unmodelled(inst, f"the annotation {name}")
        return None

    def noovfl(self, env: dict[Any, Any], pred: Any, inst: Any, name: str, args: list[Any]) -> Any:
        """``__add_noovfl_*(x, y)``: the sum, assumed not to overflow; ``__add_noovfl(a, ...)``:
        whether the unsigned sum of its operands fits."""
        vals = [self.scalar(env, inst, name, a) for a in args]
        vals = [v if z3.is_bv(v) else z3.If(v, z3.BitVecVal(1, 32), z3.BitVecVal(0, 32)) for v in vals]
        width = vals[0].size()
        if name == "__kl_noovfl_signed":
            wide = sum((z3.SignExt(2, v) for v in vals[1:]), z3.SignExt(2, vals[0]))
            fits = z3.And(wide >= -(1 << (width - 1)), wide < (1 << (width - 1)))
        else:
            wide = sum((z3.ZeroExt(8, v) for v in vals[1:]), z3.ZeroExt(8, vals[0]))
            fits = z3.ULT(wide, 1 << width)
        if name == "__kl_noovfl_pred":
            return z3.If(fits, z3.BitVecVal(1, 32), z3.BitVecVal(0, 32))
        self.enc.trace.assumes.append(z3.Implies(pred, fits))
        return z3.Extract(width - 1, 0, wide)

    def taken(self, env: dict[Any, Any], pred: Any, inst: Any, name: str, args: list[Any], rtype: Any) -> Any:
        """``__atomic_has_taken_value(p, index, value)``: whether the atomic at element ``index`` of
        the array ``p`` points into has returned ``value`` to some invocation (GPUVerify's map
        ``_USED_`` of its refined atomic abstraction). A fresh truth value that each of this
        invocation's reached atomics there returning ``value`` makes true (what the others were
        given is not known: any value), so an assertion of it holds only where this invocation's
        own atomics show it, and an assumption of it constrains nothing else."""
        enc, trace = self.enc, self.enc.trace
        # the header passes the array last: a log read in ``value`` (``__write_offset_bytes``) is
        # then made before the array's probe load, where the same log read elsewhere on the line is
        pointer, _ = self.probe(env, inst, name, 2)
        if hasattr(pointer, "options"):
            raise enc.unmodelled(inst, "__atomic_has_taken_value of a pointer chosen at run time between arrays")
        value = self.scalar(env, inst, name, args[0])
        index = self.scalar(env, inst, name, args[1])
        taken = z3.Bool(f"{enc.tag}_taken{pointer.root}_{next(self.count)}")
        options = taken_options(trace.accesses, pointer.root, index, value)
        if enc.abstract == 1 and self.loops:  # an earlier iteration's atomics too: settled where it ends
            self.loops[-1].taken.append((pointer.root, index, value, len(trace.accesses), taken, len(trace.assumes)))
        trace.assumes.append(z3.Implies(z3.Or(*options), taken) if options else z3.BoolVal(True))
        return z3.If(taken, z3.BitVecVal(1, rtype.width), z3.BitVecVal(0, rtype.width))

    def snapshot(self, env: dict[Any, Any], pred: Any, inst: Any, name: str, args: list[Any], rtype: Any) -> Any:
        """``__array_snapshot(dst, src)``: GPUVerify's ghost copy (``dst := src`` of the whole
        arrays, no access of either). ``dst`` becomes, for this invocation, the contents of
        ``src`` as it sees them here (its own writes exact, other bytes any value); its later reads
        see that copy, across barriers, as GPUVerify's ghost is written by nothing else. A
        ``dst`` the kernel writes itself (before or after) is not modelled."""
        enc, trace = self.enc, self.enc.trace
        src, _ = self.probe(env, inst, name, 0)
        dst, _ = self.probe(env, inst, name, 1)
        if hasattr(src, "options") or hasattr(dst, "options"):
            raise enc.unmodelled(inst, "__array_snapshot of a pointer chosen at run time between arrays")
        if any(a.root == dst.root and a.kind != "read" for a in trace.accesses + trace.bounded):
            raise enc.unmodelled(inst, "__array_snapshot into an array the kernel writes itself")
        view = self.contents(env, src.root)
        if not z3.is_true(pred):
            view = z3.If(pred, view, self.contents(env, dst.root))
        self.snapshots.add(dst.root)
        enc.stored.add(dst.root)  # a loop that snapshots havocs the copy
        env[("mem", dst.root)] = dataclasses.replace(enc.fresh_memory(), initial=view)
        return None

    def contents(self, env: dict[Any, Any], root: int) -> Any:
        """A variable's contents as this invocation sees them, as one array term."""
        array = None if root in self.snapshots else self.enc.memory.read_only.get(root)
        if array is not None:
            return array
        mem = env.get(("mem", root))
        return mem.as_array() if mem is not None else self.enc.fresh_memory().initial

    def check(self, pred: Any, cond: Any, inst: Any) -> None:
        """An assertion, checked under the assumptions made before it only."""
        t = self.enc.trace
        t.asserts.append(self.assert_record(pred, cond, inst, self.enc.abstract > 0, len(t.assumes)))

    def assume_checked(self, cond: Any) -> None:
        """An assumption that repeats the assertion just made: it holds after that point (the
        other invocation's, which may be made before the point, is left out of pair checks)."""
        t = self.enc.trace
        t.assumes.append(cond)
        t.after_checks.add(cond.get_id())

    def scalar(self, env: dict[Any, Any], inst: Any, name: str, arg: Any) -> Any:
        if hasattr(arg, "root"):  # glslang passes a function's argument through a variable
            if arg.storage not in ("Function", "Private"):
                raise self.enc.unmodelled(inst, f"the annotation {name} given a pointer to {arg.storage} memory")
            return self.enc.bytes_value(self.enc.private_memory(env, arg.root).load, arg.offset, arg.pointee, inst)
        if isinstance(arg, tuple):
            raise self.enc.unmodelled(inst, f"the annotation {name} given a vector or struct")
        return arg

    # --- access logs -------------------------------------------------------------------------

    def log(self, env: dict[Any, Any], inst: Any, name: str, rtype: Any) -> Any:
        """``__read(p)`` and the like. GPUVerify logs, for each array, one access the invocation
        made since the last barrier, chosen at random (or none): ``__read(p)`` says whether one is
        logged, ``__read_offset_bytes(p)`` its byte offset. As an assertion must hold for every
        choice, the log is a pair of fresh terms (has, offset) with ``has`` implying that the
        offset is one of a reached access of that kind in the current barrier interval."""
        pointer, _ = self.probe(env, inst, name)
        # a pointer chosen at run time between arrays: the log of the one it points into
        choices = pointer.options if hasattr(pointer, "options") else ((z3.BoolVal(True), pointer),)
        values = [(c, self.log_value(env, name, q, rtype)) for c, q in choices]
        out = values[-1][1]
        for c, v in reversed(values[:-1]):
            out = z3.If(c, v, out)
        return out

    def log_value(self, env: dict[Any, Any], name: str, pointer: Any, rtype: Any) -> Any:
        kind, what = _LOGS[name]
        if what == "pointer":
            return z3.Extract(rtype.width - 1, 0, pointer.offset)
        has, off = self.log_state(env, kind, pointer.root, pointer.storage)
        if what == "has":
            return z3.If(has, z3.BitVecVal(1, rtype.width), z3.BitVecVal(0, rtype.width))
        return z3.Extract(rtype.width - 1, 0, off) if rtype.width < 64 else off

    def probe(self, env: dict[Any, Any], inst: Any, name: str, arg: int = 0) -> tuple[Any, Any]:
        """The pointer a log annotation names (or the choice between arrays it is) as its argument
        ``arg``: the header passes ``(int)(p)[0]``, a load the engine takes back (it is no access
        of the kernel's)."""
        enc = self.enc
        if self.defs is None:
            self.defs = {i.words[1]: i for f in enc.m.functions.values() for b in f.blocks.values()
                         for i in b.insts if i.typed}
        vid = inst.words[3 + arg]
        for _ in range(8):
            d = self.defs.get(vid)
            if d is None:
                break
            if d.op == "OpLoad":
                pointer = enc.value(env, d.words[2])
                options = pointer.options if hasattr(pointer, "options") else ((None, pointer),)
                if not all(hasattr(q, "root") for _, q in options):
                    break
                accesses = enc.trace.accesses
                for _ in options:  # the probe's read of each array it may point into
                    for k in range(len(accesses) - 1, -1, -1):
                        if accesses[k].inst is d:
                            del accesses[k]
                            break
                return pointer, d
            if d.op not in _CONVERSIONS:
                break
            vid = d.words[2]
        raise enc.unmodelled(inst, f"the annotation {_SOURCE.get(name, name)} on an expression that is not an array")

    def log_state(self, env: dict[Any, Any], kind: str, root: int, storage: str) -> tuple[Any, Any]:
        enc, trace = self.enc, self.enc.trace
        if root in self.unlogged:
            return z3.BoolVal(False), z3.BitVec(f"{enc.tag}_log_{kind}{root}_off{next(self.count)}", 64)
        key = (kind, root, len(trace.accesses), len(trace.barriers), len(self.frames))
        got = self._cache.get(key)
        if got is not None:
            has, off, index, cons = got
            if index < len(trace.assumes) and trace.assumes[index] is cons:
                return has, off
        n = next(self.count)
        has = z3.Bool(f"{enc.tag}_log_{kind}{root}_has{n}")
        off = z3.BitVec(f"{enc.tag}_log_{kind}{root}_off{n}", 64)
        cons = self.log_constraint(env, kind, root, storage, has, off)
        if enc.abstract == 1 and self.loops:  # settled where the loop's iteration ends
            self.loops[-1].deferred.append((kind, root, storage, enc.phase(env), len(trace.accesses), has, off,
                                            len(trace.assumes)))
        trace.assumes.append(cons)
        self._cache[key] = (has, off, len(trace.assumes) - 1, cons)
        self.log_vars[has.get_id()] = (kind, root, storage)
        self.log_vars[off.get_id()] = (kind, root, storage)
        return has, off

    def log_constraint(self, env: dict[Any, Any], kind: str, root: int, storage: str, has: Any, off: Any) -> Any:
        enc = self.enc
        if enc.abstract > 0:
            # in a loop summarised by invariants the earlier iterations' accesses are not in the
            # trace: the log may hold anything (where the loop is the only one summarised, its
            # end settles it: :meth:`loop_end`)
            return z3.BoolVal(True)
        frame = next((f for f in reversed(self.frames) if f.modular), None)
        floor = frame.floor if frame is not None else 0
        options = self.log_options(enc.trace.accesses[floor:], kind, root, enc.phase(env), off)
        if frame is not None:  # before the contract's run: any log its preconditions allow
            e_has, e_off = frame.entry.setdefault((kind, root), (
                z3.Bool(f"{enc.tag}_entry_{kind}{root}_has{next(self.count)}"),
                z3.BitVec(f"{enc.tag}_entry_{kind}{root}_off{next(self.count)}", 64)))
            options.append(z3.And(e_has, off == e_off))
        return z3.Implies(has, z3.Or(*options)) if options else z3.Not(has)

    @staticmethod
    def log_options(records: list[Any], kind: str, root: int, phase: tuple[Any, Any], off: Any,
                    rename: list[tuple[Any, Any]] | None = None) -> list[Any]:
        """For each reached ``kind`` access of ``root`` in ``records`` in the current barrier
        interval: it is the one logged (its terms renamed by ``rename``, if given)."""
        wg, sb = phase
        out = []
        for r in records:
            if r.root != root or r.kind != kind:
                continue
            same = r.phase_wg == wg if r.storage == "Workgroup" else r.phase_sb == sb
            option = terms.conj([r.pred, same, off == r.offset])
            out.append(z3.substitute(option, *rename) if rename else option)
        return out

    def loop_start(self, invariant: Any) -> LoopMark:
        mark = LoopMark(len(self.enc.trace.accesses), next(self.enc.fresh_count), self.enc.calls, next(self.count),
                        invariant)
        if self.enc.abstract == 1 and self.enc.trace.loops:
            # GPUVerify runs the two invocations through a loop in lock-step, one that has left it
            # disabled: the other's __enabled() here is whether it is at the same iteration
            # (:func:`same_iteration`); this invocation's own checks have it at its own
            summary = self.enc.trace.loops[-1]
            mark.here = summary.here = z3.Bool(f"{self.enc.tag}_here{next(self.count)}")
            self.assume_checked(mark.here)
        self.loops.append(mark)
        return mark

    def loop_end(self, mark: LoopMark) -> None:
        """The logs read in the summarised iteration: one logged access is one made before the
        loop, one of this iteration before the read, or one of an earlier iteration — the body's
        accesses with every value the iteration made renamed (another arbitrary iteration that
        satisfies the loop's invariants)."""
        self.loops.pop()
        enc, t = self.enc, self.enc.trace
        if not mark.deferred and not mark.taken:
            return
        body = t.accesses[mark.start:]
        rename = self.renaming(mark, body)
        earlier = z3.substitute(mark.invariant, *rename) if rename else mark.invariant
        for root, index, value, at_access, taken, at in mark.taken:
            options = taken_options(t.accesses[:at_access], root, index, value)
            again = taken_options(body, root, index, value)
            if again:  # one earlier iteration, the same one the logs below may have logged from
                again = [z3.substitute(x, *rename) if rename else x for x in again]
                options.append(z3.And(earlier, z3.Or(*again)))
            t.assumes[at] = z3.Implies(z3.Or(*options), taken) if options else z3.BoolVal(True)
        frame = next((f for f in reversed(self.frames) if f.modular), None)
        floor = frame.floor if frame is not None else 0
        for kind, root, _storage, phase, index, has, off, at in mark.deferred:
            if at >= len(t.assumes) or not z3.is_true(t.assumes[at]):
                continue
            options = self.log_options(t.accesses[floor:index], kind, root, phase, off)
            again = self.log_options(body, kind, root, phase, off, rename)
            if again:
                options.append(z3.And(earlier, z3.Or(*again)))
            if frame is not None:
                e_has, e_off = frame.entry.setdefault((kind, root), (
                    z3.Bool(f"{enc.tag}_entry_{kind}{root}_has{next(self.count)}"),
                    z3.BitVec(f"{enc.tag}_entry_{kind}{root}_off{next(self.count)}", 64)))
                options.append(z3.And(e_has, off == e_off))
            t.assumes[at] = z3.Implies(has, z3.Or(*options)) if options else z3.Not(has)

    def renaming(self, mark: LoopMark, body: list[Any]) -> list[tuple[Any, Any]]:
        """Fresh copies of the values the summarised iteration made (loop variables, loads,
        private memory, ...), found by the numbers in their names."""
        import re
        tag = re.escape(self.enc.tag)
        made = re.compile(rf"^{tag}_(?:(?:v|ld|f|undef|atomic|bits|other|retval|contract_arg|loop\d+_\d+_|"
                          rf"loopmem\d+_)(\d+)|fn\d+_(\d+)|(?:log|entry)_\w+?_(?:has|off)(\d+))$")
        def since(x: Any) -> bool:
            if not (z3.is_const(x) and x.decl().kind() == z3.Z3_OP_UNINTERPRETED):
                return False
            m = made.match(x.decl().name())
            return m is not None and bool((m.group(1) and int(m.group(1)) > mark.fresh)
                                          or (m.group(2) and int(m.group(2)) > mark.calls)
                                          or (m.group(3) and int(m.group(3)) > mark.logs))

        n = next(self.count)
        roots = [mark.invariant] + [x for r in body for x in (r.pred, r.offset)] + [
            r.result for r in body if z3.is_expr(r.result)]
        return [(x, z3.Const(f"{x.decl().name()}_earlier{n}", x.sort())) for x in subterms(roots, since)]

    # --- functions ---------------------------------------------------------------------------

    def enter(self, fn: Any, args: list[Any], pred: Any) -> Frame:
        frame = Frame(fn, args, pred, modular=self._modular_next, floor=len(self.enc.trace.accesses))
        self._modular_next = False
        self.frames.append(frame)
        return frame

    def leave(self, frame: Frame, env: dict[Any, Any], returns: list[tuple[Any, dict[Any, Any], Any]],
              value: Any, out: dict[Any, Any]) -> None:
        """A function returns: its postconditions are checked there, with the value it returns and
        the access logs as they are then (GPUVerify checks them for every argument its
        preconditions allow: a second run of the function with fresh arguments does that)."""
        self.frames.pop()
        if not frame.ensures:
            return
        enc = self.enc
        ret_pred = z3.Or(*[p for p, _, _ in returns]) if returns else z3.BoolVal(False)
        pairs: list[tuple[Any, Any]] = []
        for placeholder in frame.returns:
            if value is None:
                raise enc.unmodelled(frame.ensures[0][2], "__return_val_* in a function that returns nothing")
            pairs += _pairs(placeholder, value)
        for r in frame.others:  # what the other invocation sees of a postcondition
            refreshed = self.at_return(out, r.value)
            r.value = z3.substitute(refreshed, *pairs) if pairs else refreshed
        for pred, cond, inst, every in frame.ensures:
            refreshed = self.at_return(out, cond)
            done = z3.substitute(refreshed, *pairs) if pairs else refreshed
            self.check(z3.BoolVal(True) if every else z3.And(pred, ret_pred), done, inst)
            self.assume_checked(z3.Implies(z3.And(pred, ret_pred), done))
        if not frame.modular and not any(f.modular for f in self.frames):
            self.modular_run(frame, env)

    def at_return(self, out: dict[Any, Any], cond: Any) -> Any:
        """``cond`` with its access-log terms read again where the function returns."""
        found = {x.get_id(): x for x in subterms([cond], lambda x: x.get_id() in self.log_vars)}
        pairs = []
        done: dict[tuple[str, int], tuple[Any, Any]] = {}
        for x in found.values():
            kind, root, storage = self.log_vars[x.get_id()]
            if (kind, root) not in done:
                done[(kind, root)] = self.log_state(out, kind, root, storage)
            has, off = done[(kind, root)]
            pairs.append((x, has if z3.is_bool(x) else off))
        return z3.substitute(cond, *pairs) if pairs else cond

    def modular_run(self, frame: Frame, env: dict[Any, Any]) -> None:
        """The function once more, its scalar arguments fresh, its preconditions assumed and its
        postconditions checked; its accesses are not the launch's and are taken back."""
        enc, t = self.enc, self.enc.trace
        fresh_args = [a if hasattr(a, "root") or a is None else _fresh_like(enc, a) for a in frame.args]
        saved = (len(t.accesses), len(t.barriers), len(t.reads), len(t.bounded))
        self._modular_next = True
        enc.run_function(frame.fn, env, fresh_args, frame.pred)
        del t.accesses[saved[0]:], t.barriers[saved[1]:], t.reads[saved[2]:], t.bounded[saved[3]:]


def link_others(ta: Any, tb: Any) -> list[Any]:
    """``__other_*`` of each invocation is the other's value at the same place (same unrolled
    iteration, same call): where the two traces have no matching place, it stays any value."""
    by_key = {r.key: r for r in tb.others}
    out = []
    for r in ta.others:
        o = by_key.get(r.key)
        if o is not None and o.value.sort() == r.fresh.sort():
            out += [r.fresh == o.value, o.fresh == r.value]
    return out


def same_iteration(ta: Any, tb: Any, check: Any) -> list[Any]:
    """Where the two invocations summarise one loop at the same place (GPUVerify runs them
    through it in lock-step, the one that left it disabled): when B is at A's iteration, each loop
    variable has moved as far from its entry value in both (``i = gid; i++``: ``i`` of the two
    differ by their ``gid``), found as Houdini finds invariants (0 on entry; kept by one iteration
    of each where both go on); when the two go on together from such states, B is at A's
    iteration wherever A is (``here``). ``check(constraints)`` says whether they can hold
    together. For ``__other_*`` only, never for races."""
    by_key = {s.key: s for s in tb.loops}
    out: list[Any] = []
    for la in ta.loops:
        lb = by_key.get(la.key)
        if lb is None or la.here is None or lb.here is None:
            continue
        both = z3.And(la.entry_pred, lb.entry_pred)
        rids = [r for r in la.havoc if r in lb.havoc and z3.is_bv(la.havoc[r])
                and la.havoc[r].sort() == lb.havoc[r].sort()]

        while rids:
            same = [_moved(la, lb, r, la.havoc[r], lb.havoc[r]) for r in rids]
            keep = [r for r in rids if not any(
                r in na and r in nb and check([both, *same, pa, pb, z3.Not(_moved(la, lb, r, na[r], nb[r]))])
                for pa, na in la.back for pb, nb in lb.back)]
            if len(keep) == len(rids):
                break
            rids = keep
        same = [_moved(la, lb, r, la.havoc[r], lb.havoc[r]) for r in rids]
        go_a = z3.Or(*[p for p, _ in la.back]) if la.back else z3.BoolVal(False)
        go_b = z3.Or(*[p for p, _ in lb.back]) if lb.back else z3.BoolVal(False)
        if same:
            out.append(z3.Implies(z3.And(both, lb.here), z3.And(*same)))
        if not check([both, *same, go_a != go_b]):
            out.append(z3.Implies(both, lb.here))  # in lock-step: B is wherever A is
    return out


def _moved(la: Any, lb: Any, r: int, a: Any, b: Any) -> Any:
    """Loop variable ``r`` is as far from its entry value in A (``a``) as in B (``b``)."""
    return a - la.entry[r] == b - lb.entry[r]


def mentions_other(cond: Any, trace: Any) -> bool:
    wanted = {r.fresh.get_id() for r in trace.others}
    return bool(wanted) and any(True for _ in subterms([cond], lambda x: x.get_id() in wanted))


def subterms(roots: list[Any], pick: Any) -> Any:
    """The distinct subterms of ``roots`` that ``pick`` accepts (each once)."""
    stack, seen = list(roots), set()
    while stack:
        x = stack.pop()
        if x.get_id() in seen:
            continue
        seen.add(x.get_id())
        if pick(x):
            yield x
        stack.extend(x.children())


def _pairs(placeholder: Any, value: Any) -> list[tuple[Any, Any]]:
    if isinstance(placeholder, tuple):
        return [p for a, b in zip(placeholder, value) for p in _pairs(a, b)]
    if isinstance(value, tuple) or value.sort() != placeholder.sort():
        return []
    return [(placeholder, value)]


def _fresh_like(enc: Any, v: Any) -> Any:
    if isinstance(v, tuple):
        return tuple(_fresh_like(enc, x) for x in v)
    n = next(enc.fresh_count)
    return z3.Const(f"{enc.tag}_contract_arg{n}", v.sort())


#: the source annotation each call stands for (for reasons)
_SOURCE = {"__kl_return": "__return_val_int", "__kl_return4": "__return_val_int4", "__kl_ensures": "__ensures",
           "__kl_ensures_all": "__global_ensures", "__kl_read": "__read", "__kl_write": "__write",
           "__kl_read_offset": "__read_offset_bytes", "__kl_write_offset": "__write_offset_bytes",
           "__kl_ptr_offset": "__ptr_offset_bytes"}


def taken_options(records: list[Any], root: int, index: Any, value: Any) -> list[Any]:
    """GPUVerify's ``__atomic_has_taken_value(counter, index, value)`` (its map ``_USED_``): the
    atomic at element ``index`` of the variable ``root`` returned ``value`` to some invocation.
    For the invocation that ``records`` are of, each reached atomic modification there whose
    result is ``value`` makes it true; what other invocations were given is not known here."""
    out = []
    for r in records:
        if r.root != root or r.kind != "atomic-write" or not z3.is_bv(r.result):
            continue
        width = r.result.size()
        at = z3.ZeroExt(64 - index.size(), index) if index.size() < 64 else z3.Extract(63, 0, index)
        v = value if value.size() == width else (z3.ZeroExt(width - value.size(), value) if value.size() < width
                                                  else z3.Extract(width - 1, 0, value))
        out.append(z3.And(r.pred, r.offset == at * r.size, r.result == v))
    return out
