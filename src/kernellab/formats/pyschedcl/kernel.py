"""A checked kernel spec (numbers or parsed expressions) and its resolution for given variables."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from kernellab import expressions
from kernellab.errors import InputError, Problem, Problems, UsageError
from kernellab.expressions import Expr, ExpressionError
from kernellab.formats.pyschedcl.elements import ElementType
from kernellab.records import dataclass

#: variables the runner sets itself; ``--set`` may not override them
RESERVED_VARIABLES = ("partition", "size_percent", "offset_percent")


# --- the checked spec ------------------------------------------------------------------------


@dataclass(frozen=True)
class Sym:
    """A field value that is either a number or a parsed expression, with where it came from."""

    raw: Any
    expr: Expr | None
    where: str

    @property
    def text(self) -> str:
        return self.raw if isinstance(self.raw, str) else json.dumps(self.raw)

    @property
    def names(self) -> frozenset[str]:
        return self.expr.names if self.expr is not None else frozenset()

    def value(self, variables: Mapping[str, Any]) -> Any:
        if self.expr is not None:
            return self.expr.evaluate(variables)
        if isinstance(self.raw, list):
            return [expressions.evaluate(r, variables) for r in self.raw]
        return self.raw


@dataclass(frozen=True)
class BufferSpec:
    kind: str  # "input" | "output" | "io"
    pos: int
    size: Sym
    type: ElementType
    breakable: bool
    where: str

    @property
    def read_by_kernel(self) -> bool:
        return self.kind in ("input", "io")

    @property
    def written_by_kernel(self) -> bool:
        return self.kind in ("output", "io")


@dataclass(frozen=True)
class VarArgument:
    pos: int
    type: ElementType
    value: Sym
    where: str

    @property
    def partition_sensitive(self) -> bool:
        return bool(self.value.names & {"size_percent", "offset_percent", "partition"})


@dataclass(frozen=True)
class LocalArgument:
    pos: int
    type: ElementType
    size: Sym
    where: str


@dataclass
class KernelSpec:
    file: str
    name: str
    src: Path
    work_dimension: int
    global_work_size: Sym
    local_work_size: Sym | None
    partition: int | None
    buffers: list[BufferSpec]
    var_args: list[VarArgument]
    local_args: list[LocalArgument]
    id: str | None = None
    macros: dict[str, Sym] = field(default_factory=dict)
    #: defaults for variables from the spec's own ``symbolicVariables`` (PySchedCL DAG specs)
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def arg_count(self) -> int:
        return len(self.buffers) + len(self.var_args) + len(self.local_args)

    def buffer(self, pos: int) -> BufferSpec | None:
        return next((b for b in self.buffers if b.pos == pos), None)

    def variables_used(self) -> set[str]:
        names: set[str] = set()
        syms = [self.global_work_size, *(b.size for b in self.buffers), *(a.value for a in self.var_args),
                *(a.size for a in self.local_args), *self.macros.values()]
        if self.local_work_size is not None:
            syms.append(self.local_work_size)
        for s in syms:
            names |= s.names
        return names - set(RESERVED_VARIABLES)

    def resolve(self, variables: Mapping[str, Any] | None = None, partition: int | None = None) -> ResolvedKernel:
        """Evaluate every size for ``variables``; all problems at once, each with its pointer."""
        return _resolve(self, dict(variables or {}), partition)


@dataclass(frozen=True)
class ResolvedBuffer:
    spec: BufferSpec
    count: int  # elements

    @property
    def nbytes(self) -> int:
        return self.count * self.spec.type.itemsize

    @property
    def pos(self) -> int:
        return self.spec.pos

    def elements_per_item(self, first_dim: int) -> int:
        return self.count // first_dim

    def elements_before(self, items: int, first_dim: int) -> int:
        """Elements of this buffer that belong to the first ``items`` work-items of dimension 0 (its
        share in proportion; exact once :meth:`ResolvedKernel.check_splittable` accepted the split)."""
        return self.count * items // first_dim


@dataclass(frozen=True)
class ResolvedKernel:
    """A spec with numbers in place of expressions (partition-sensitive arguments stay symbolic)."""

    spec: KernelSpec
    variables: dict[str, Any]
    partition: int
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    buffers: tuple[ResolvedBuffer, ...]
    local_bytes: dict[int, int]
    build_options: str

    @property
    def granularity(self) -> int:
        """The split of the first dimension must fall on a multiple of this many work-items."""
        return self.local_size[0] if self.local_size else 1

    def check_splittable(self, partition: int | None = None) -> None:
        """A split gives each part of a ``break: 1`` buffer its share in proportion to its work-items
        of dimension 0, which must be a whole number of elements: always so when the buffer holds a
        multiple of ``globalWorkSize[0]`` elements, else only at some split points (one element per
        workgroup splits on workgroup boundaries). ``partition`` None checks every split 1..9."""
        g0 = self.global_size[0]
        splits = sorted({self.split_point(p) for p in ((partition,) if partition is not None else range(1, 10))})
        splits = [s for s in splits if 0 < s < g0]
        problems = []
        for b in self.buffers:
            bad = next((s for s in splits if b.spec.breakable and b.count * s % g0), None)
            if bad is None:
                continue
            share = Fraction(b.count * bad, g0)
            problems.append(Problem(self.spec.file, b.spec.size.where,
                                    "a buffer with break: 1 is split with dimension 0 of the NDRange, in "
                                    "proportion, so "
                                    f"its {b.count} elements ({b.spec.size.text}) must be a multiple of "
                                    f"globalWorkSize[0] = {g0} or divide whole at the split: a split after {bad} of "
                                    f"{g0} work-items would give the first part {float(share):g} elements; run it with "
                                    "partition 0 or 10, or give it break: 0"))
        if problems:
            raise InputError(problems)

    def split_point(self, partition: int | None = None) -> int:
        """Work-items of dimension 0 that go to the GPU-class part for partition P (0..10):
        P/10 of them, rounded to the nearest multiple of the local size."""
        p = self.partition if partition is None else partition
        g = self.granularity
        groups = self.global_size[0] // g
        return int(math.floor(Fraction(groups * p, 10) + Fraction(1, 2))) * g

    def arg_values(self, start: int, count: int) -> dict[int, np.ndarray]:
        """Values of the scalar arguments for the part covering work-items [start, start+count) of
        dimension 0; ``size_percent``/``offset_percent`` are that part's exact percentages."""
        total = self.global_size[0]
        ctx = dict(self.variables)
        ctx["partition"] = self.partition
        ctx["size_percent"] = Fraction(100 * count, total)
        ctx["offset_percent"] = Fraction(100 * start, total)
        out: dict[int, np.ndarray] = {}
        problems: list[Problem] = []
        for arg in self.spec.var_args:
            try:
                value = arg.value.value(ctx)
                out[arg.pos] = scalar_value(value, arg.type, arg.value.text)
            except ExpressionError as exc:
                problems.append(exc.problem(self.spec.file, arg.value.where))
        if problems:
            raise InputError(problems)
        return out


def scalar_value(value: Any, etype: ElementType, text: str) -> np.ndarray:
    """``value`` converted to the argument's OpenCL type, refusing what does not fit."""
    if isinstance(value, list):
        if etype.width == 1 or len(value) != etype.width:
            want = etype.width if etype.width > 1 else "a single"
            raise ExpressionError(text, 0, f"a {etype.name} argument needs {want}"
                                           f" value{'s' if etype.width > 1 else ''}, got a list of {len(value)}")
        items = value
    else:
        items = [value] * etype.width
    dt = etype.dtype
    converted: list[int | float] = []
    for v in items:
        if dt.kind in "iu":
            if isinstance(v, list):
                raise ExpressionError(text, 0, f"nested lists are not {etype.name} values")
            iv = expressions.as_int(v, text, f"a {etype.name} argument")
            info = np.iinfo(dt)
            if not info.min <= iv <= info.max:
                raise ExpressionError(text, 0, f"{iv} does not fit in {etype.scalar} ({info.min}..{info.max})")
            converted.append(iv)
        else:
            if isinstance(v, list):
                raise ExpressionError(text, 0, f"nested lists are not {etype.name} values")
            fv = float(v)
            if not math.isfinite(float(dt.type(fv))) and math.isfinite(fv):
                raise ExpressionError(text, 0, f"{fv} overflows {etype.scalar}")
            converted.append(fv)
    arr = np.array(converted, dtype=dt)
    return arr if etype.width > 1 else arr.reshape(())


# --- resolution ------------------------------------------------------------------------------


class _Resolver(Problems):
    """Evaluates a spec's expressions for one set of variables; every problem is kept."""

    def __init__(self, spec: KernelSpec, ctx: dict[str, Any]):
        super().__init__(spec.file)
        self.spec = spec
        self.ctx = ctx

    def value(self, sym: Sym) -> Any:
        try:
            return sym.value(self.ctx)
        except ExpressionError as exc:
            self.problems.append(exc.problem(self.file, sym.where))
            return None

    def integer(self, value: Any, sym: Sym, what: str) -> int | None:
        """``value`` (of ``sym``) as an integer, or None (problem recorded)."""
        try:
            return expressions.as_int(value, sym.text, what)
        except ExpressionError as exc:
            self.problems.append(exc.problem(self.file, sym.where))
            return None

    def dims(self, value: Any, sym: Sym, what: str) -> tuple[int, ...] | None:
        n = self.spec.work_dimension
        if not isinstance(value, list):
            value = [value]
        if len(value) != n:
            self.add(sym.where, f"{what} has {len(value)} entr{'y' if len(value) == 1 else 'ies'} "
                                f"({sym.text} = {value}) but workDimension is {n}")
            return None
        out = []
        for v in value:
            iv = self.integer(v, sym, what)
            if iv is None:
                return None
            if iv < 1:
                self.add(sym.where, f"{what} entries must be >= 1, got {iv} ({sym.text} = {value})")
                return None
            if iv >= 2 ** 63:
                self.add(sym.where, f"{what} entries must be below 2**63 (an OpenCL size_t), got {iv}")
                return None
            out.append(iv)
        return tuple(out)

    def work_sizes(self) -> tuple[tuple[int, ...] | None, tuple[int, ...] | None]:
        """(global size, local size or None)."""
        spec = self.spec
        gws_v = self.value(spec.global_work_size)
        gws = self.dims(gws_v, spec.global_work_size, "globalWorkSize") if gws_v is not None else None
        lws = None
        if spec.local_work_size is not None:
            lws_v = self.value(spec.local_work_size)
            if lws_v is not None:
                if not isinstance(lws_v, list) and spec.work_dimension > 1:
                    lws_v = [lws_v] * spec.work_dimension  # PySchedCL: one number means every dimension
                lws = self.dims(lws_v, spec.local_work_size, "localWorkSize")
            if gws and lws:
                for i, (g, size) in enumerate(zip(gws, lws)):
                    if g % size:
                        self.add(spec.local_work_size.where,
                                 f"globalWorkSize[{i}] = {g} is not a multiple of localWorkSize[{i}] = {size}")
        return gws, lws

    def count(self, size: Sym, what: str, too_few: str) -> int | None:
        """A size expression's value as an element count >= 1, or None (problem recorded)."""
        v = self.value(size)
        n = self.integer(v, size, what) if v is not None else None
        if n is None:
            return None
        if n < 1:
            self.add(size.where, too_few.format(n=n, text=size.text))
            return None
        return n

    def buffers(self) -> list[ResolvedBuffer]:
        buffers = []
        for b in self.spec.buffers:
            n = self.count(b.size, "a buffer size", "a buffer needs at least 1 element, got {n} ({text})")
            if n is None:
                continue
            if n * b.type.itemsize >= 2 ** 63:
                self.add(b.size.where, f"{n} elements ({b.size.text}) is beyond any device")
                continue
            buffers.append(ResolvedBuffer(b, n))
        return buffers

    def local_bytes(self) -> dict[int, int]:
        local_bytes = {}
        for a in self.spec.local_args:
            n = self.count(a.size, "a local argument size", "a local argument needs at least 1 element, got {n}")
            if n is not None:
                local_bytes[a.pos] = n * a.type.itemsize
        return local_bytes

    def build_options(self) -> str:
        """``-DNAME=value`` for each of the spec's macros."""
        options = []
        for k, s in self.spec.macros.items():
            v = self.value(s)
            if v is None:
                continue
            if isinstance(v, list):
                self.add(s.where, "a macro value must be a number, got a list")
                continue
            if isinstance(v, Fraction):
                v = float(v) if v.denominator != 1 else int(v)
            options.append(f"-D{k}={v}")
        return " ".join(options)


def _resolve(spec: KernelSpec, variables: dict[str, Any], partition: int | None) -> ResolvedKernel:
    for name in RESERVED_VARIABLES:
        if name in variables:
            raise UsageError(f"--set {name}=...: {name} is set by kernellab itself"
                             + (" (use --partition)" if name == "partition" else ""))
    if partition is not None and not 0 <= partition <= 10:
        raise UsageError(f"--partition must be in 0..10, got {partition}")
    p = partition if partition is not None else (spec.partition if spec.partition is not None else 10)
    r = _Resolver(spec, {**spec.defaults, **variables, "partition": p, "size_percent": 100, "offset_percent": 0})
    gws, lws = r.work_sizes()
    buffers = r.buffers()
    local_bytes = r.local_bytes()
    options = r.build_options()
    resolved = None
    if gws is not None and not r.problems:
        resolved = ResolvedKernel(spec, {**spec.defaults, **variables}, p, gws, lws, tuple(buffers), local_bytes,
                                  options)
        # the scalar arguments are checked now, for the whole NDRange, so a bad one fails early
        try:
            resolved.arg_values(0, gws[0])
        except InputError as exc:
            r.extend(exc.problems)
    r.raise_if_any()
    assert resolved is not None
    return resolved


# --- variables from the command line ---------------------------------------------------------


def parse_assignment(text: str) -> tuple[str, int | float]:
    """``dataset=4096`` -> ("dataset", 4096); the value may be a constant expression (``2**20``)."""
    if "=" not in text:
        raise UsageError(f"--set {text!r}: expected NAME=VALUE")
    name, value = text.split("=", 1)
    name = name.strip()
    if not name.isidentifier():
        raise UsageError(f"--set {text!r}: {name!r} is not a variable name")
    if name in RESERVED_VARIABLES:
        raise UsageError(f"--set {text!r}: {name} is set by kernellab itself"
                         + (" (use --partition)" if name == "partition" else ""))
    try:
        v = expressions.evaluate(value.strip(), {})
    except ExpressionError as exc:
        raise UsageError(f"--set {text!r}: {exc.describe()}") from None
    if isinstance(v, list):
        raise UsageError(f"--set {text!r}: the value must be a number")
    if isinstance(v, Fraction):
        v = int(v) if v.denominator == 1 else float(v)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return name, v


def parse_assignments(items: Sequence[str] | None) -> dict[str, int | float]:
    out: dict[str, int | float] = {}
    for item in items or ():
        k, v = parse_assignment(item)
        out[k] = v
    return out
