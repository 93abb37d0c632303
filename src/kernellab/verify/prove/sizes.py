"""``verify --prove --prove-sizes``: the work-group size and the number of work-groups as z3
variables, bounded by the device's limits and by what the files fix.

The work-group size a module reads is a constant of it: GLSL's ``gl_WorkGroupSize`` (a
``LocalSize`` execution mode, or specialization constants with ``local_size_x_id``), clspv's
``WorkgroupSize`` specialization constants (fixed instead by ``reqd_work_group_size``). The
components that are specialization constants are the launch's choice and become variables
(:func:`bind` gives the encoder their values, and those of the specialization-constant
operations computed from them); the components the module fixes stay fixed. The number of
work-groups is read through the ``NumWorkgroups`` built-in (or clspv's built-in push constants),
which :class:`~kernellab.verify.prove.encode.Ids` carries.

A counterexample's sizes are made small (:func:`shrink`) so that its replay is a launch a
simulator runs in seconds.
"""
from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import field
from typing import Any

import z3

from kernellab.records import dataclass
from kernellab.spirvsim.module import Block, Function, Inst, Module, core_grammar, enum_name
from kernellab.verify.prove import encode as enc
from kernellab.verify.prove.encode import Unmodelled

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limits:
    """What a device lets a dispatch be: ``maxComputeWorkGroupSize`` /
    ``CL_DEVICE_MAX_WORK_ITEM_SIZES`` per dimension, ``maxComputeWorkGroupInvocations`` /
    ``CL_DEVICE_MAX_WORK_GROUP_SIZE`` in all, ``maxComputeWorkGroupCount`` per dimension
    (None: OpenCL has no such limit; the global size fits the 32-bit ``size_t`` of clspv's
    modules either way)."""

    max_size: tuple[int, int, int]
    max_invocations: int
    max_count: tuple[int, int, int] | None
    #: where they come from: a device's name, or "defaults"
    source: str = "defaults"


#: without a Vulkan device: the largest limits current drivers report (AMD, NVIDIA, lavapipe),
#: so that a proof holds on each of them
VULKAN_DEFAULTS = Limits((1024, 1024, 1024), 1024, (2**32 - 1, 2**32 - 1, 2**32 - 1))
#: without an OpenCL device: the largest work-group Intel's and PoCL's CPU runtimes take
OPENCL_DEFAULTS = Limits((8192, 8192, 8192), 8192, None)


@dataclass(frozen=True)
class Space:
    """What the sizes of a launch may be with ``--prove-sizes``: the device's ``limits``; the
    launch's number of dimensions ``dims`` (OpenCL's work_dim: the sizes past it are 1); and what
    a file fixes per dimension (None: free), such as GPUVerify's ``--local_size=64 --num_groups=*``
    (``local``), ``--global_size=1024`` (``global_``, the product of the two)."""

    limits: Limits = OPENCL_DEFAULTS
    dims: int = 3
    local: tuple[int | None, int | None, int | None] = (None, None, None)
    groups: tuple[int | None, int | None, int | None] = (None, None, None)
    global_: tuple[int | None, int | None, int | None] = (None, None, None)


@dataclass
class Symbolic:
    """A launch's sizes as z3 terms (BV32 per dimension) and what they must satisfy."""

    local: list[Any]
    groups: list[Any]
    constraints: list[Any] = field(default_factory=list)
    #: the result ids of the module's work-group-size specialization constants, by dimension
    spec_constants: dict[int, int] = field(default_factory=dict)
    #: each invocation's first global id of its work-group as the product it is (group x size):
    #: left out of a query until it is satisfiable without them (:func:`global_ids`)
    exact: list[Any] = field(default_factory=list)
    #: each invocation's (by tag) first global id of its work-group, per dimension
    starts: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def variables(self) -> list[Any]:
        """The terms a counterexample chooses, the counts first (the cheaper to make small)."""
        return [v for v in self.groups + self.local if not z3.is_bv_value(v)]


def symbolic(module: Module, space: Space, global_offset: Sequence[int] = (0, 0, 0)) -> Symbolic:
    """The sizes of a launch of ``module`` within ``space``: each work-group-size component the
    module leaves to a specialization constant, and each count, a variable."""
    fixed, spec = local_size_constants(module)
    local: list[Any] = []
    groups = [z3.BitVec(f"num_groups{d}", 32) for d in range(3)]
    cons: list[Any] = []
    for d in range(3):
        if fixed[d] is not None:
            local.append(z3.BitVecVal(fixed[d], 32))
        else:
            local.append(z3.BitVec(f"local_size{d}", 32))
    lim = space.limits
    for d in range(3):
        ls, ng = local[d], groups[d]
        cons += [z3.UGE(ls, 1), z3.ULE(ls, lim.max_size[d]), z3.UGE(ng, 1)]
        if lim.max_count is not None:
            cons.append(z3.ULE(ng, lim.max_count[d]))
        # every global id (offset included) fits the 32 bits the ids are computed in
        cons.append(z3.BVMulNoOverflow(ls, ng, False))
        if global_offset[d]:
            cons.append(z3.ULE(ls * ng, 2**32 - global_offset[d]))
        if d >= space.dims:
            cons += [ls == 1, ng == 1]
        if space.local[d] is not None:
            cons.append(ls == space.local[d])
        if space.groups[d] is not None:
            cons.append(ng == space.groups[d])
        if space.global_[d] is not None:
            cons.append(ls * ng == space.global_[d])
    if max(lim.max_size) < 2**16 and lim.max_invocations < 2**16:
        # the products of two and of three sizes fit 32 bits: cheaper for z3 than wide ones
        cons += [z3.ULE(local[0] * local[1], lim.max_invocations),
                 z3.ULE(local[0] * local[1] * local[2], lim.max_invocations)]
    else:
        wide = [z3.ZeroExt(64, x) for x in local]
        cons.append(z3.ULE(wide[0] * wide[1] * wide[2], lim.max_invocations))
    return Symbolic(local, groups, cons, spec)


def global_ids(tag: str, group: list[Any], local: list[Any], sizes: Symbolic,
               offset: Sequence[int]) -> tuple[list[Any], list[Any]]:
    """An invocation's global ids (``tag``: A or B) and what holds of them, with the work-group's
    first id a variable of its own. ``group × size`` of two variables is a product z3 can take
    minutes over (the ids of two invocations differ: a race check); the facts the checks need
    (:func:`pair_facts`) are linear, so a query is asked first without the product
    (:attr:`Symbolic.exact`), which can only allow more: unsatisfiable then is unsatisfiable."""
    ids, facts = [], []
    for d in range(3):
        base = z3.BitVec(f"{tag}_group_start{d}", 32)
        sizes.exact.append(base == group[d] * sizes.local[d])
        # (group + 1) x size <= count x size < 2**32
        facts += [z3.BVAddNoOverflow(base, sizes.local[d], False), z3.UGE(base, group[d]),
                  z3.Implies(group[d] == 0, base == 0)]
        ids.append(base + local[d] + offset[d])
        sizes.starts.setdefault(tag, []).append(base)
    return ids, facts


def pair_facts(a: Any, b: Any, sizes: Symbolic) -> list[Any]:
    """Of invocations A's and B's ids (:class:`~kernellab.verify.prove.encode.Ids`, from
    :func:`global_ids`): one work-group's first id is the other's if the groups are the same, at
    least one work-group further if it is further."""
    out = []
    for d in range(3):
        ba, bb = sizes.starts["A"][d], sizes.starts["B"][d]
        ga, gb, ls = a.group[d], b.group[d], sizes.local[d]
        out += [z3.Implies(ga == gb, ba == bb), z3.Implies(z3.ULT(ga, gb), z3.ULE(ba + ls, bb)),
                z3.Implies(z3.ULT(gb, ga), z3.ULE(bb + ls, ba))]
    return out


def local_size_constants(module: Module) -> tuple[list[int | None], dict[int, int]]:
    """Per dimension, the work-group size ``module`` fixes (None where a specialization constant
    gives it), and the result ids of those specialization constants, by dimension."""
    fixed: list[int | None] = list(module.local_size)
    spec: dict[int, int] = {}
    defs = _definitions(module)
    components: list[int] | None = None
    for cid in module.constants:
        builtin = module.decorated(cid, "BuiltIn")
        if builtin is not None and enum_name("BuiltIn", builtin[0]) == "WorkgroupSize":
            inst = defs.get(cid)
            if inst is not None and inst.op == "OpSpecConstantComposite":
                components = list(inst.words[2:5])
            elif inst is not None:
                return fixed, {}  # a plain constant: the module fixes every dimension
    if components is None:
        for inst in module.insts:
            if inst.op == "OpExecutionModeId" and inst.words[0] == module.entry_function and \
                    enum_name("ExecutionMode", inst.words[1]) == "LocalSizeId":
                components = list(inst.words[2:5])
    for d, cid in enumerate(components or []):
        inst = defs.get(cid)
        if inst is not None and inst.op == "OpSpecConstant" and module.decorated(cid, "SpecId") is not None:
            fixed[d] = None
            spec[cid] = d
        elif inst is not None and inst.op not in ("OpConstant", "OpSpecConstant"):
            raise Unmodelled(f"unsupported construct: a work-group size computed by {inst.op} (with --prove-sizes)",
                             inst.line)
    return fixed, spec


def _definitions(module: Module) -> dict[int, Inst]:
    return {inst.words[1]: inst for inst in module.insts
            if inst.typed and (inst.op.startswith("OpConstant") or inst.op.startswith("OpSpecConstant"))}


def bind(encoder: enc.Encoder, module: Module, sizes: Symbolic) -> None:
    """Give ``encoder`` (an :class:`~kernellab.verify.prove.encode.Encoder`) the symbolic values
    of the work-group-size specialization constants and of every constant computed from them
    (composites, ``OpSpecConstantOp``), in the order the module defines them. An array type
    whose length is one of them cannot be laid out: ``unknown`` naming it."""
    if not sizes.spec_constants:
        return
    values = encoder.symbolic
    for cid, d in sizes.spec_constants.items():
        values[cid] = sizes.local[d]
    for inst in module.insts:
        w = inst.words
        if inst.op == "OpSpecConstantComposite" and any(x in values for x in w[2:]):
            values[w[1]] = tuple(encoder.const(x) for x in w[2:])
        elif inst.op == "OpSpecConstantOp" and any(x in values for x in w[3:]):
            spec = core_grammar().instructions.get(w[2])
            name = spec.opname if spec else f"opcode {w[2]}"
            inner = Inst(name, (w[0], w[1], *w[3:]), inst.offset, line=inst.line, typed=True)
            values[w[1]] = encoder.compute({}, inner, module.types[w[0]])
        elif inst.op == "OpTypeArray" and w[2] in values:
            raise Unmodelled("unsupported construct: an array whose length is the work-group size "
                             "(symbolic with --prove-sizes)", inst.line)


class SizedEncoder(enc.Encoder):
    """The encoder of a launch whose sizes are symbolic: the work-group-size constants are
    :func:`bind`'s terms, and a loop whose exit depends on a size and that runs past the
    unrolling limit is ``unknown`` rather than summarised: its invariants would relate the loop
    variable to a symbolic size (``i = id; i += size``: ``(i - id) % size == 0``), a
    non-linear question z3 does not settle in the time limit."""

    def __init__(self, module: Module, ids: enc.Ids, memory: enc.Memory, tag: str,
                 var_size: dict[int, int | None], solver_check: Any, sizes: Symbolic):
        super().__init__(module, ids, memory, tag, var_size, solver_check)
        bind(self, module, sizes)
        self.size_derived = derived_ids(module, set(self.symbolic))

    def summarize_loop(self, fn: Function, head: Block, body: set[int], ordered: list[Block], edges: list[Any],
                       incoming: dict[int, list[Any]], returns: list[Any]) -> None:
        for b in ordered:
            last = b.insts[-1] if b.insts else None
            if last is not None and last.op == "OpBranchConditional" and last.words[0] in self.size_derived \
                    and any(t not in body for t in last.words[1:3]):
                line = next((i.line for blk in [head, *ordered] for i in blk.insts if i.line and i.line[1] > 0),
                            last.line)
                raise Unmodelled(f"unsupported construct: the loop at line {line[1] if line else '?'} runs past "
                                 f"{enc.MAX_UNROLL} iterations with an exit that depends on the work-group size or "
                                 "count (symbolic with --prove-sizes): not unrolled, and its invariants would be "
                                 "non-linear in the size", line, self.m.source_text(line))
        super().summarize_loop(fn, head, body, ordered, edges, incoming, returns)


def derived_ids(module: Module, seeds: set[int]) -> set[int]:
    """The ids whose value may depend on the sizes: ``seeds`` (the symbolic constants), the
    ``WorkgroupSize`` and ``NumWorkgroups`` built-ins, a private variable they initialise (clspv's
    copy of the size), and whatever is computed from them, stored into a variable (the whole
    variable), passed to a function or returned from one, and a phi that joins blocks a branch on
    such a value chose between (clspv's loops exit through a phi of constants). Flow-insensitive;
    it only decides whether a loop is refused or summarised, both sound."""
    out = set(seeds)
    for vid, inst in module.variables.items():
        builtin = module.decorated(vid, "BuiltIn")
        if builtin is not None and enum_name("BuiltIn", builtin[0]) in ("WorkgroupSize", "NumWorkgroups"):
            out.add(vid)
        elif len(inst.words) > 3 and inst.words[3] in out:
            out.add(vid)
    flow = _Flow(module)
    while True:
        before = len(out)
        for inst in flow.insts:
            out |= flow.step(inst, out)
        if len(out) == before:
            return out


class _Flow:
    """One pass of :func:`derived_ids` over a module's instructions."""

    def __init__(self, module: Module):
        self.m = module
        self.insts = [i for fn in module.functions.values() for b in fn.blocks.values() for i in b.insts]
        #: a block's label -> the condition its terminator branches on
        self.branch = {label: b.insts[-1].words[0] for fn in module.functions.values()
                       for label, b in fn.blocks.items()
                       if b.insts and b.insts[-1].op in ("OpBranchConditional", "OpSwitch")}
        #: a pointer -> the variable it points into
        self.base: dict[int, int] = {}
        #: a function -> whether a value it returns depends on the sizes
        self.returns: dict[int, set[int]] = {
            fid: {i.words[0] for b in fn.blocks.values() for i in b.insts if i.op == "OpReturnValue"}
            for fid, fn in module.functions.items()}

    def step(self, inst: Inst, out: set[int]) -> set[int]:
        """The ids ``inst`` makes depend on the sizes, given ``out``."""
        w = inst.words
        if inst.op in ("OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain", "OpCopyObject"):
            self.base[w[1]] = self.base.get(w[2], w[2])
        if inst.op == "OpStore":
            return {self.base.get(w[0], w[0])} if w[1] in out else set()
        if inst.op == "OpFunctionCall":
            callee = self.m.functions.get(w[2])
            if callee is None:
                return set()
            got = {p for p, a in zip(callee.params, w[3:]) if a in out}
            if inst.typed and (got or self.returns[w[2]] & out):
                got.add(w[1])
            return got
        if inst.op == "OpPhi" and any(x in out or self.branch.get(x) in out for x in w[2:]):
            return {w[1]}
        if inst.typed and any(x in out for x in w[2:]):
            return {w[1]}
        return set()


def push_constraints(array: Any, entries: Sequence[tuple[str, int, int]], sizes: Symbolic) -> list[Any]:
    """clspv's built-in push constants that hold sizes (``PushConstantEnqueuedLocalSize``,
    ``PushConstantGlobalSize``, ``PushConstantNumWorkgroups``: what, offset, bytes) equal to the
    symbolic sizes, in the push-constant block's bytes ``array``."""
    out = []
    for what, offset, size in entries:
        values = {"PushConstantEnqueuedLocalSize": sizes.local, "PushConstantNumWorkgroups": sizes.groups,
                  "PushConstantGlobalSize": [ls * ng for ls, ng in zip(sizes.local, sizes.groups)]}.get(what)
        if values is None:
            continue
        for k in range(min(size, 12)):
            byte = z3.Extract(8 * (k % 4) + 7, 8 * (k % 4), values[k // 4])
            out.append(z3.Select(array, z3.BitVecVal(offset + k, 64)) == byte)
    return out


#: at most this many solver calls make one size of a counterexample small
SHRINK_QUERIES = 24


def shrink(model: Any, constraints: list[Any], variables: list[Any], deadline: float,
           solve: Callable[[list[Any], int], Any] | None = None) -> Any:
    """A model of ``constraints`` whose ``variables`` (the sizes) are small, each in turn as small
    as the solver shows it can be within :data:`SHRINK_QUERIES` calls each and ``deadline`` (the
    monotonic clock): bounds 1, 2, 4, ... first, then halving. ``model`` when none is smaller."""
    solve = solve or _solve
    pinned: list[Any] = []
    for v in variables:
        hi = model.eval(v, model_completion=True).as_long()
        lo, bound, queries = 1, 1, 0
        while lo < hi and queries < SHRINK_QUERIES:
            mid = bound if bound < hi else (lo + hi) // 2
            left = int((deadline - time.monotonic()) * 1000)
            if left <= 0:
                return model
            queries += 1
            got = solve(constraints + pinned + [z3.ULE(v, mid)], left)
            if got is False:
                return model  # the solver gave up: keep what is known
            if got is None:
                lo = mid + 1
                bound *= 2
            else:
                model, hi = got, got.eval(v, model_completion=True).as_long()
        pinned.append(z3.ULE(v, hi))
    return model


def _solve(constraints: list[Any], ms: int) -> Any:
    """A model, None (unsatisfiable) or False (unknown)."""
    s = z3.Solver()
    s.set("timeout", ms)
    s.add(*constraints)
    r = s.check()
    return s.model() if r == z3.sat else (None if r == z3.unsat else False)


def device_limits(api: str) -> Limits:
    """The limits of the device kernellab runs ``api``'s launches on (``"vulkan"``: the Vulkan
    device ``kernellab run`` would use; ``"opencl"``: Oclgrind, on which ``verify`` replays a
    kernel-instantiation file's counterexamples), asked once per process; where none opens, the
    documented defaults (:data:`VULKAN_DEFAULTS`, :data:`OPENCL_DEFAULTS`) with a warning."""
    return _device_limits(api)


@functools.cache
def _device_limits(api: str) -> Limits:
    # cached for the process: opening a device costs a driver's start-up, and it does not change
    default = VULKAN_DEFAULTS if api == "vulkan" else OPENCL_DEFAULTS
    try:
        got = _ask_vulkan() if api == "vulkan" else _ask_oclgrind()
    except Exception as exc:  # whatever keeps a device from opening: the stated defaults
        log.warning("no %s device opened (%s): --prove-sizes bounds the sizes by the defaults of "
                    "docs/verify-prove.md", "Vulkan" if api == "vulkan" else "OpenCL",
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return default
    return got


def _ask_vulkan() -> Limits:
    from kernellab.backends.registry import backend_class
    from kernellab.native.devices import choose_device

    cls = backend_class("vulkan")
    info = choose_device(cls.devices(), None)
    with cls(info) as backend:
        lim = backend.limits
    if lim.max_workgroup_size is None or lim.max_workgroup_invocations is None:
        raise RuntimeError(f"{info.name} reports no work-group limits")
    return Limits(lim.max_workgroup_size, lim.max_workgroup_invocations, lim.max_workgroup_count, info.name)


def _ask_oclgrind() -> Limits:
    from kernellab.native import oclgrind

    device = oclgrind.get_platforms()[0].get_devices()[0]
    sizes = [int(x) for x in device.get_info(oclgrind.device_info.MAX_WORK_ITEM_SIZES)][:3]
    sizes += [1] * (3 - len(sizes))
    return Limits((sizes[0], sizes[1], sizes[2]), int(device.get_info(oclgrind.device_info.MAX_WORK_GROUP_SIZE)),
                  None, str(device.get_info(oclgrind.device_info.NAME)))
