"""Subgroup operations (``OpGroupNonUniform*``) over the lanes of the lockstep interpreter.

A workgroup's invocations are split into subgroups of ``size`` consecutive local invocation
indices (what Vulkan drivers do for compute shaders; the last subgroup is partial when the
workgroup size is not a multiple). The interpreter runs a block with the mask of every lane
waiting at it (structured reconvergence), so the invocations of a subgroup that execute a
subgroup instruction together are exactly the lanes of that subgroup in the mask: those are the
*active* invocations the SPIR-V specification computes over. Lanes elsewhere (another arm of an
``if``, already out of a loop, returned) are inactive.

Values are gathered into a (subgroups, size) table per instruction; inactive slots hold the
operation's identity, so scans and reductions over a row are the spec's operations over the
active invocations in invocation order (floating-point sums are accumulated in that order, in the
value's precision).

Defects the specification leaves undefined are reported, not guessed: reading an inactive (or
nonexistent) invocation's value through broadcast, shuffle, quad or rotate
(``subgroup-inactive-read``), and an operand that must be dynamically uniform in the subgroup
but is not (``subgroup-nonuniform``: broadcast's ``Id``, quad broadcast's ``Index``, rotate's
``Delta``, inverse ballot's ``Value``). Results of such reads are 0.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: GroupOperation operands
REDUCE, INCLUSIVE, EXCLUSIVE, CLUSTERED = 0, 1, 2, 3
#: the Subgroup scope
SCOPE_SUBGROUP = 3
#: the subgroup size the checker assumes when none is given: what lavapipe reports on an AVX2 host
#: (256-bit vectors of 32-bit lanes); ``verify --subgroup-size`` chooses another
DEFAULT_SUBGROUP_SIZE = 8
#: the sizes ``--subgroup-size all`` checks: every power of two a Vulkan driver reports for
#: compute (lavapipe 4 or 8, Mali 4-16, Intel 8-32, NVIDIA 32, AMD 32-64, Adreno 64-128)
ALL_SUBGROUP_SIZES = (4, 8, 16, 32, 64, 128)


class Layout:
    """Which lane is which invocation of which subgroup, for a batch of ``lanes`` lanes in
    workgroups of ``group_size``."""

    def __init__(self, lanes: int, group_size: int, size: int):
        if size < 1 or size & (size - 1) or size > 128:
            raise ValueError(f"subgroup size {size}: a power of two from 1 to 128")
        self.size = size
        local = np.arange(lanes) % group_size
        per_group = -(-group_size // size)
        self.per_group = per_group
        self.inv = local % size  # SubgroupLocalInvocationId
        self.local_sub = local // size  # SubgroupId
        self.sub = (np.arange(lanes) // group_size) * per_group + self.local_sub  # row of the table
        self.rows = (lanes // group_size) * per_group
        table = np.full((self.rows, size), -1, np.int64)
        table[self.sub, self.inv] = np.arange(lanes)
        self.valid = table >= 0
        self.table = np.where(self.valid, table, 0)

    def active(self, m: np.ndarray) -> np.ndarray:
        return self.valid & m[self.table]

    def grid(self, v: Any, lanes: int) -> np.ndarray:
        return np.broadcast_to(np.asarray(v), (lanes,))[self.table]

    def back(self, rows: np.ndarray) -> np.ndarray:
        """Per lane, its slot of a (rows, size) table."""
        return rows[self.sub, self.inv]

    def masks(self) -> dict[str, np.ndarray]:
        """The subgroup mask built-ins, (lanes, 4) uint32 each."""
        bit = np.arange(128)
        inv = self.inv[:, None]
        inside = bit < self.size
        return {"SubgroupEqMask": _words(bit == inv), "SubgroupGeMask": _words((bit >= inv) & inside),
                "SubgroupGtMask": _words((bit > inv) & inside), "SubgroupLeMask": _words(bit <= inv),
                "SubgroupLtMask": _words(bit < inv)}


def _words(bits: np.ndarray) -> np.ndarray:
    """(n, 128) bools -> (n, 4) uint32 words, bit j of word k being bits[32k + j]."""
    n = bits.shape[0]
    padded = np.zeros((n, 128), bool)
    padded[:, :bits.shape[1]] = bits
    weights = (np.uint64(1) << np.arange(32, dtype=np.uint64))
    return (padded.reshape(n, 4, 32).astype(np.uint64) * weights).sum(axis=2).astype(np.uint32)


def _bits(value: Any, lanes: int) -> np.ndarray:
    """A uvec4 ballot value -> (lanes, 128) bools."""
    ws = np.stack([np.broadcast_to(np.asarray(c).astype(np.uint32), (lanes,)) for c in value], axis=1)
    return ((ws[:, :, None] >> np.arange(32, dtype=np.uint32)) & 1).astype(bool).reshape(lanes, -1)


def _comp(f: Callable[[np.ndarray], np.ndarray], v: Any) -> Any:
    return tuple(_comp(f, c) for c in v) if isinstance(v, tuple) else f(v)


# ---- arithmetic -----------------------------------------------------------------------------

def _identity(name: str, dt: np.dtype) -> Any:
    if name in ("IAdd", "FAdd", "BitwiseOr", "BitwiseXor"):
        return np.zeros((), dt)
    if name in ("IMul", "FMul"):
        return np.ones((), dt)
    if name in ("LogicalAnd",):
        return np.asarray(True)
    if name in ("LogicalOr", "LogicalXor"):
        return np.asarray(False)
    if name == "BitwiseAnd":
        return np.asarray(~np.zeros((), dt))
    if name in ("UMin",):
        return np.asarray(np.iinfo(dt).max, dt)
    if name in ("UMax",):
        return np.zeros((), dt)
    if name == "SMin":
        return np.asarray(np.iinfo(dt).max, dt)
    if name == "SMax":
        return np.asarray(np.iinfo(dt).min, dt)
    if name == "FMin":
        return np.asarray(np.inf, dt)
    if name == "FMax":
        return np.asarray(-np.inf, dt)
    raise KeyError(name)


_UFUNCS: dict[str, np.ufunc] = {
    "IAdd": np.add, "FAdd": np.add, "IMul": np.multiply, "FMul": np.multiply, "SMin": np.minimum,
    "UMin": np.minimum, "FMin": np.fmin, "SMax": np.maximum, "UMax": np.maximum, "FMax": np.fmax,
    "BitwiseAnd": np.bitwise_and, "BitwiseOr": np.bitwise_or, "BitwiseXor": np.bitwise_xor,
    "LogicalAnd": np.logical_and, "LogicalOr": np.logical_or, "LogicalXor": np.logical_xor,
}
#: the arithmetic instructions, by the name after OpGroupNonUniform
ARITHMETIC = frozenset(_UFUNCS)


def scan(name: str, op: int, grid: np.ndarray, active: np.ndarray, cluster: int | None) -> np.ndarray:
    """Reduce or scan each row of ``grid`` over its ``active`` slots; a (rows, size) result."""
    signed = name in ("SMin", "SMax")
    dt = grid.dtype
    x = grid.astype(np.dtype(f"i{dt.itemsize}")) if signed else grid
    ident = _identity(name, x.dtype)
    x = np.where(active, x, ident).astype(x.dtype)
    f = _UFUNCS[name]
    rows, size = x.shape
    if op == CLUSTERED:
        c = int(cluster or size)
        c = min(c, size)
        parts = x.reshape(rows, size // c, c)
        acc = f.accumulate(parts, axis=2, dtype=x.dtype)
        out = np.repeat(acc[:, :, -1:], c, axis=2).reshape(rows, size)
    else:
        acc = f.accumulate(x, axis=1, dtype=x.dtype)
        if op == REDUCE:
            out = np.repeat(acc[:, -1:], size, axis=1)
        elif op == INCLUSIVE:
            out = acc
        else:
            out = np.concatenate([np.full((rows, 1), ident, x.dtype), acc[:, :-1]], axis=1)
    return out.astype(dt) if signed else out


# ---- the handlers -----------------------------------------------------------------------------

class Subgroups:
    """Executes subgroup instructions for a machine (``mach``: values, set, rec, m, L)."""

    def __init__(self, mach: Any, layout: Layout):
        self.mach = mach
        self.lay = layout

    def value(self, vid: int) -> Any:
        return self.mach.values[vid]

    def const(self, vid: int, inst: Any, what: str) -> int:
        v = self.mach.m.constants.get(vid)
        if v is None or np.ndim(v):
            raise self.mach.m.fail(inst, f"{inst.op} whose {what} is not a constant (the specification requires one)")
        return int(v)

    def execute(self, inst: Any, m: np.ndarray, full: bool) -> None:
        w = inst.words
        mach = self.mach
        scope = mach.values.get(w[2])
        if scope is None or np.ndim(scope) or int(scope) != SCOPE_SUBGROUP:
            raise mach.m.fail(inst, f"{inst.op} with an execution scope other than Subgroup is not supported")
        name = inst.op[len("OpGroupNonUniform"):]
        kind = "Arithmetic" if name in ARITHMETIC else name
        handler = _OPERATIONS.get(kind)
        if handler is None:
            raise mach.m.fail(inst, f"{inst.op} is not supported by the SPIR-V checker")
        mach.set(w[1], handler(self, inst, m, self.lay.active(m), name), m, full)

    # ---- one method per group operation, in _OPERATIONS: (instruction, mask, active lanes, name)

    def _elect(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        lay = self.lay
        first = act.argmax(axis=1)
        return (lay.inv == first[lay.sub]) & m

    def _vote(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        lay, L = self.lay, self.mach.L
        v = self.value(inst.words[3])
        if name == "AllEqual":
            eq = np.ones((lay.rows, lay.size), bool)
            first = act.argmax(axis=1)
            for c in (v if isinstance(v, tuple) else (v,)):
                g = lay.grid(c, L)
                ref = g[np.arange(lay.rows), first][:, None]
                same = (g == ref) | (np.isnan(g) & np.isnan(ref)) if g.dtype.kind == "f" else g == ref
                eq &= same | ~act
            return lay.back(np.repeat(eq.all(axis=1, keepdims=True), lay.size, axis=1))
        g = lay.grid(v, L)
        r = (g | ~act).all(axis=1) if name == "All" else (g & act).any(axis=1)
        return r[self.lay.sub]

    def _broadcast(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        w = inst.words
        return self._read(inst, m, act, self.value(w[3]), self._uniform(inst, act, w[4], "Id"))

    def _broadcast_first(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        first = act.argmax(axis=1)
        return self._read(inst, m, act, self.value(inst.words[3]), first[self.lay.sub], check=False)

    def _ballot(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        lay = self.lay
        words = _words(lay.grid(self.value(inst.words[3]), self.mach.L) & act)
        return tuple(words[lay.sub, k] for k in range(4))

    def _inverse_ballot(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        L = self.mach.L
        value = self.value(inst.words[3])
        self._uniform(inst, act, inst.words[3], "Value")
        return _bits(value, L)[np.arange(L), self.lay.inv]

    def _ballot_bit_extract(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        L, w = self.mach.L, inst.words
        idx = np.broadcast_to(np.asarray(self.value(w[4])).astype(np.int64), (L,)) & 127
        return _bits(self.value(w[3]), L)[np.arange(L), idx]

    def _ballot_bit_count(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        lay, w = self.lay, inst.words
        op = w[3]
        bits = _bits(self.value(w[4]), self.mach.L)[:, :lay.size]
        j = np.arange(lay.size)
        keep = {REDUCE: np.ones_like(bits), INCLUSIVE: j <= lay.inv[:, None], EXCLUSIVE: j < lay.inv[:, None]}
        if op not in keep:
            raise self.mach.m.fail(inst, f"OpGroupNonUniformBallotBitCount with group operation {op}")
        return (bits & keep[op]).sum(axis=1).astype(self.mach.m.types[w[0]].dtype)

    def _ballot_find(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        lay = self.lay
        bits = _bits(self.value(inst.words[3]), self.mach.L)[:, :lay.size]
        anyb = bits.any(axis=1)
        pos = bits.argmax(axis=1) if name == "BallotFindLSB" else lay.size - 1 - bits[:, ::-1].argmax(axis=1)
        return np.where(anyb, pos, -1).astype(np.int64).astype(self.mach.m.types[inst.words[0]].dtype)

    def _arithmetic(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        mach, lay, w = self.mach, self.lay, inst.words
        op = w[3]
        cluster = None
        if op == CLUSTERED:
            if len(w) < 6:
                raise mach.m.fail(inst, f"{inst.op} ClusteredReduce without ClusterSize")
            cluster = self.const(w[5], inst, "ClusterSize")
            if cluster < 1 or cluster & (cluster - 1):
                raise mach.m.fail(inst, f"{inst.op} ClusterSize {cluster} is not a power of two")
        elif op not in (REDUCE, INCLUSIVE, EXCLUSIVE):
            raise mach.m.fail(inst, f"{inst.op} with group operation {op} is not supported")
        return _comp(lambda c: lay.back(scan(name, op, lay.grid(c, mach.L), act, cluster)), self.value(w[4]))

    def _shuffle(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        lay, w = self.lay, inst.words
        k = np.broadcast_to(np.asarray(self.value(w[4])).astype(np.int64), (self.mach.L,))
        target = {"Shuffle": k, "ShuffleXor": lay.inv ^ k, "ShuffleUp": lay.inv - k,
                  "ShuffleDown": lay.inv + k}[name]
        return self._read(inst, m, act, self.value(w[3]), target)

    def _quad_broadcast(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        w = inst.words
        idx = self._uniform(inst, act, w[4], "Index", width=4)  # uniform in each quad (as the CTS tests)
        return self._read(inst, m, act, self.value(w[3]), (self.lay.inv & ~3) + idx)

    def _quad_swap(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        w = inst.words
        direction = self.const(w[4], inst, "Direction")
        if direction not in (0, 1, 2):
            raise self.mach.m.fail(inst, f"OpGroupNonUniformQuadSwap direction {direction}")
        return self._read(inst, m, act, self.value(w[3]), self.lay.inv ^ (direction + 1))

    def _rotate(self, inst: Any, m: np.ndarray, act: np.ndarray, name: str) -> Any:
        lay, w = self.lay, inst.words
        delta = self._uniform(inst, act, w[4], "Delta")
        c = self.const(w[5], inst, "ClusterSize") if len(w) > 5 else lay.size
        if c < 1 or c & (c - 1) or c > lay.size:
            raise self.mach.m.fail(inst, f"OpGroupNonUniformRotateKHR ClusterSize {c}")
        target = (lay.inv - lay.inv % c) + (lay.inv + delta) % c
        return self._read(inst, m, act, self.value(w[3]), target)

    def _uniform(self, inst: Any, act: np.ndarray, vid: int, what: str, width: int | None = None) -> np.ndarray:
        """Per lane the operand ``vid`` (its first component); a subgroup (or each ``width``
        invocations of it: a quad) whose active invocations disagree on it (on any component) is
        a ``subgroup-nonuniform`` finding."""
        mach, lay = self.mach, self.lay
        value = mach.values[vid]
        parts = value if isinstance(value, tuple) else (value,)
        width = min(width or lay.size, lay.size)
        table = lay.table.reshape(-1, width)
        act = act.reshape(-1, width)
        first = act.argmax(axis=1)
        unequal = np.zeros(act.shape, bool)
        for c in parts:
            if np.ndim(c):
                g = lay.grid(c, mach.L).reshape(-1, width)
                unequal |= g != g[np.arange(g.shape[0]), first][:, None]
        v = np.broadcast_to(np.asarray(parts[0]), (mach.L,))
        v = v.astype(np.int64) if v.dtype.kind in "ui" else v
        if unequal.any():
            differs = (act & unequal).any(axis=1)
            if differs.any():
                rows = np.nonzero(differs)[0]
                lanes_a = table[rows, first[rows]]
                other = (act & unequal)[rows].argmax(axis=1)
                lanes_b = table[rows, other]
                mach.rec.subgroup("subgroup-nonuniform", inst.index, mach.lane_global[lanes_a],
                                  mach.lane_global[lanes_b],
                                  f"{inst.op[2:]}: its {what} must be dynamically uniform in the "
                                  f"{'quad' if width == 4 else 'subgroup'}, but active invocations of one pass "
                                  "different values")
        return v

    def _read(self, inst: Any, m: np.ndarray, act: np.ndarray, value: Any, target: np.ndarray,
              check: bool = True) -> Any:
        """Per lane, ``value`` of the invocation ``target`` of its subgroup; targets that are not
        an active invocation are reported and read as 0."""
        mach, lay = self.mach, self.lay
        target = np.asarray(target, np.int64)
        inside = (target >= 0) & (target < lay.size)
        t = np.where(inside, target, 0)
        ok = inside & act[lay.sub, t]
        src = lay.table[lay.sub, t]
        bad = m & ~ok
        if check and bad.any():
            lanes = np.nonzero(bad)[0]
            mach.rec.subgroup("subgroup-inactive-read", inst.index, mach.lane_global[lanes],
                              np.where(inside[lanes], mach.lane_global[src[lanes]], -1),
                              f"{inst.op[2:]} reads the value of an invocation that is not active in the subgroup "
                              f"(or outside it, subgroup size {lay.size}): the result is undefined",
                              target[lanes])

        def one(c: Any) -> np.ndarray:
            a = np.broadcast_to(np.asarray(c), (mach.L,))
            return np.where(ok, a[src], np.zeros((), a.dtype))
        return _comp(one, value)


#: the group operations by name (the arithmetic ones under "Arithmetic"): Subgroups' method for each
_OPERATIONS: dict[str, Callable[[Subgroups, Any, np.ndarray, np.ndarray, str], Any]] = {
    "Elect": Subgroups._elect,
    **dict.fromkeys(("All", "Any", "AllEqual"), Subgroups._vote),
    "Broadcast": Subgroups._broadcast,
    "BroadcastFirst": Subgroups._broadcast_first,
    "Ballot": Subgroups._ballot,
    "InverseBallot": Subgroups._inverse_ballot,
    "BallotBitExtract": Subgroups._ballot_bit_extract,
    "BallotBitCount": Subgroups._ballot_bit_count,
    **dict.fromkeys(("BallotFindLSB", "BallotFindMSB"), Subgroups._ballot_find),
    "Arithmetic": Subgroups._arithmetic,
    **dict.fromkeys(("Shuffle", "ShuffleXor", "ShuffleUp", "ShuffleDown"), Subgroups._shuffle),
    "QuadBroadcast": Subgroups._quad_broadcast,
    "QuadSwap": Subgroups._quad_swap,
    "RotateKHR": Subgroups._rotate,
}

def is_subgroup_op(op: str) -> bool:
    return op.startswith("OpGroupNonUniform")


#: the instructions :class:`Subgroups` executes
OPS = frozenset({f"OpGroupNonUniform{n}" for n in (
    "Elect", "All", "Any", "AllEqual", "Broadcast", "BroadcastFirst", "Ballot", "InverseBallot",
    "BallotBitExtract", "BallotBitCount", "BallotFindLSB", "BallotFindMSB", "Shuffle", "ShuffleXor",
    "ShuffleUp", "ShuffleDown", "QuadBroadcast", "QuadSwap", "RotateKHR", *ARITHMETIC)})
#: capabilities of subgroup operations
CAPABILITIES = frozenset({"GroupNonUniform", "GroupNonUniformVote", "GroupNonUniformArithmetic",
                          "GroupNonUniformBallot", "GroupNonUniformShuffle", "GroupNonUniformShuffleRelative",
                          "GroupNonUniformClustered", "GroupNonUniformQuad", "GroupNonUniformRotateKHR"})
#: built-ins of subgroups
BUILTINS = frozenset({"SubgroupSize", "SubgroupLocalInvocationId", "SubgroupId", "NumSubgroups",
                      "SubgroupEqMask", "SubgroupGeMask", "SubgroupGtMask", "SubgroupLeMask", "SubgroupLtMask"})
