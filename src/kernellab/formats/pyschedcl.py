"""PySchedCL kernel specs: an OpenCL kernel described with symbolic sizes and a partition class.

Reading happens in two steps. :func:`load_spec` checks the file's shape (every field, every
expression parsed with :mod:`kernellab.expressions`) and reports all problems at once with JSON
pointers. :meth:`KernelSpec.resolve` then evaluates the expressions for given variables
(``--set dataset=4096``) into a :class:`ResolvedKernel` with plain integers, again reporting
every problem with its pointer. Task files (``spec partition dataset`` lines) and PySchedCL's
``.graph`` DAG files are read here too (:func:`load_task_file`, :func:`load_graph`).

See ``docs/pyschedcl.md`` for what each field means and the choices made where PySchedCL was
silent.
"""
from __future__ import annotations

import json
import logging
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from kernellab import expressions
from kernellab.errors import InputError, Problem, UsageError, json_pointer
from kernellab.expressions import Expr, ExpressionError

log = logging.getLogger("kernellab.pyschedcl")

#: OpenCL C scalar type -> numpy dtype (``size_t`` and ``bool`` are device-dependent: refused)
SCALAR_TYPES: dict[str, str] = {
    "char": "int8", "uchar": "uint8", "unsigned char": "uint8",
    "short": "int16", "ushort": "uint16", "unsigned short": "uint16",
    "int": "int32", "uint": "uint32", "unsigned int": "uint32", "unsigned": "uint32",
    "long": "int64", "ulong": "uint64", "unsigned long": "uint64",
    "half": "float16", "float": "float32", "double": "float64",
}
VECTOR_WIDTHS = (2, 4, 8, 16)
#: variables the runner sets itself; ``--set`` may not override them
RESERVED_VARIABLES = ("partition", "size_percent", "offset_percent")
#: keys PySchedCL writes into specs that kernellab reads but does not need, or ignores on purpose
_TOLERATED_KEYS = {"symbolicVariables", "depends", "task", "ecos", "localChunk", "globalWorkOffset"}
_KNOWN_KEYS = {"name", "src", "workDimension", "partition", "globalWorkSize", "localWorkSize", "inputBuffers",
               "outputBuffers", "ioBuffers", "varArguments", "localArguments", "id", "macros_values"}
BUFFER_KINDS = (("inputBuffers", "input"), ("outputBuffers", "output"), ("ioBuffers", "io"))


@dataclass(frozen=True)
class ElementType:
    """An OpenCL C element type: scalar ``float`` or vector ``float4``."""

    name: str
    scalar: str
    width: int = 1

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(SCALAR_TYPES[self.scalar])

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize * self.width

    def shape(self, count: int) -> tuple[int, ...]:
        return (count,) if self.width == 1 else (count, self.width)


def parse_type(name: Any) -> ElementType:
    """``"float"``, ``"uint"``, ``"float4"``...; raises ValueError naming the allowed types."""
    if not isinstance(name, str):
        raise ValueError(f"a type must be a string such as \"float\", got {type(name).__name__}")
    text = " ".join(name.split())
    if text in SCALAR_TYPES:
        return ElementType(text, text)
    m = re.fullmatch(r"([a-z]+)(\d+)", text)
    if m and m.group(1) in SCALAR_TYPES and int(m.group(2)) in VECTOR_WIDTHS:
        return ElementType(text, m.group(1), int(m.group(2)))
    hint = " (its size depends on the device)" if text in ("size_t", "bool", "ptrdiff_t") else ""
    if m and m.group(1) in SCALAR_TYPES and m.group(2) == "3":
        hint = " (3-element vectors are not supported: use the 4-element type)"
    raise ValueError(f"unknown type {name!r}{hint}; use one of {', '.join(sorted(set(SCALAR_TYPES) - {'unsigned'}))}"
                     f" or a vector of them ({'/'.join(map(str, VECTOR_WIDTHS))} elements, e.g. float4)")


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

    def resolve(self, variables: Mapping[str, Any] | None = None, partition: int | None = None) -> "ResolvedKernel":
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

    def check_splittable(self) -> None:
        """A split needs every ``break: 1`` buffer to hold a whole number of elements per work-item
        of dimension 0 (an unsplit run does not)."""
        g0 = self.global_size[0]
        problems = [Problem(self.spec.file, b.spec.size.where,
                            f"a buffer with break: 1 is split with dimension 0 of the NDRange, so its {b.count} elements "
                            f"({b.spec.size.text}) must be a multiple of globalWorkSize[0] = {g0}; run it with "
                            "partition 0 or 10, or give it break: 0")
                    for b in self.buffers if b.spec.breakable and b.count % g0]
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
            raise ExpressionError(text, 0, f"a {etype.name} argument needs {etype.width if etype.width > 1 else 'a single'}"
                                           f" value{'s' if etype.width > 1 else ''}, got a list of {len(value)}")
        items = value
    else:
        items = [value] * etype.width
    dt = etype.dtype
    converted = []
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


# --- loading ---------------------------------------------------------------------------------


class _Collector:
    def __init__(self, file: str):
        self.file = file
        self.problems: list[Problem] = []

    def add(self, where: Sequence[str | int] | str, message: str) -> None:
        ptr = where if isinstance(where, str) else json_pointer(where)
        self.problems.append(Problem(self.file, ptr, message))

    def raise_if_any(self) -> None:
        if self.problems:
            raise InputError(self.problems)


def _sym(c: _Collector, raw: Any, where: list[str | int], *, allow_list: bool = False) -> Sym | None:
    ptr = json_pointer(where)
    if isinstance(raw, bool):
        c.add(where, f"expected a number or an expression string, got {json.dumps(raw)}")
        return None
    if isinstance(raw, (int, float)):
        return Sym(raw, None, ptr)
    if isinstance(raw, str):
        try:
            return Sym(raw, expressions.parse(raw), ptr)
        except ExpressionError as exc:
            c.problems.append(exc.problem(c.file, ptr))
            return None
    if allow_list and isinstance(raw, list):
        ok = True
        for i, item in enumerate(raw):
            if _sym(c, item, [*where, i]) is None:
                ok = False
        return Sym(raw, None, ptr) if ok else None
    want = "a number, a list or an expression string" if allow_list else "a number or an expression string"
    c.add(where, f"expected {want}, got {type(raw).__name__}")
    return None


def _int_field(c: _Collector, obj: Mapping[str, Any], key: str, where: list[str | int], *,
               lo: int | None = None, hi: int | None = None, required: bool = True) -> int | None:
    if key not in obj:
        if required:
            c.add(where, f"missing required field {key!r}")
        return None
    v = obj[key]
    if isinstance(v, str) and v.strip().lstrip("-").isdigit():
        v = int(v)  # PySchedCL writes some integers as strings
    if isinstance(v, bool) or not isinstance(v, int):
        c.add([*where, key], f"expected an integer, got {json.dumps(v)}")
        return None
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        c.add([*where, key], f"must be in {rng}, got {v}")
        return None
    return v


def _type_field(c: _Collector, obj: Mapping[str, Any], where: list[str | int]) -> ElementType | None:
    if "type" not in obj:
        c.add(where, "missing required field 'type'")
        return None
    try:
        return parse_type(obj["type"])
    except ValueError as exc:
        c.add([*where, "type"], str(exc))
        return None


def looks_like_spec(data: Any) -> bool:
    """True when a parsed JSON document is a PySchedCL kernel spec (content sniffing for ``run``)."""
    return isinstance(data, dict) and "globalWorkSize" in data and "name" in data and (
        "workDimension" in data or any(k in data for k, _ in BUFFER_KINDS))


def load_spec(path: str | Path, data: Any = None) -> KernelSpec:
    """Read and check a spec file (or an already parsed ``data`` from it)."""
    path = Path(path)
    file = str(path)
    if data is None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read the spec: {exc.strerror or exc}", file) from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError([Problem(file, f"line {exc.lineno}, column {exc.colno}", f"not valid JSON: {exc.msg}")]) from None
    return spec_from_data(data, file, path.parent)


def spec_from_data(data: Any, file: str, base_dir: Path, root: Sequence[str | int] = ()) -> KernelSpec:
    c = _Collector(file)
    root = list(root)
    if not isinstance(data, dict):
        c.add(root, f"a kernel spec must be a JSON object, got {type(data).__name__}")
        c.raise_if_any()
    for key in data:
        if key not in _KNOWN_KEYS and key not in _TOLERATED_KEYS:
            log.warning("%s: %s: unknown field ignored", file, json_pointer([*root, key]))

    name = data.get("name")
    if name is None:
        c.add(root, "missing required field 'name'")
    elif not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        c.add([*root, "name"], f"the kernel name must be a C identifier, got {json.dumps(name)}")

    src_path = base_dir
    src = data.get("src")
    if src is None:
        c.add(root, "missing required field 'src'")
    elif not isinstance(src, str) or not src:
        c.add([*root, "src"], f"expected the path of the OpenCL C file, got {json.dumps(src)}")
    else:
        src_path = (base_dir / src) if not Path(src).is_absolute() else Path(src)
        if not src_path.is_file() and not Path(src).is_absolute():
            # PySchedCL keeps specs in info/ and their kernels in a sibling kernel_src/
            alt = base_dir.parent / "kernel_src" / src
            if alt.is_file():
                src_path = alt
        if not src_path.is_file():
            c.add([*root, "src"], f"kernel source {src!r} not found (looked for {src_path}"
                                  + (f" and {base_dir.parent / 'kernel_src' / src}" if not Path(src).is_absolute() else "")
                                  + ")")

    wd = _int_field(c, data, "workDimension", root, lo=1, hi=3)
    partition = _int_field(c, data, "partition", root, lo=0, hi=10, required=False)

    gws = None
    if "globalWorkSize" not in data:
        c.add(root, "missing required field 'globalWorkSize'")
    else:
        gws = _sym(c, data["globalWorkSize"], [*root, "globalWorkSize"], allow_list=True)
    lws = None
    if data.get("localWorkSize") not in (None, [], ""):
        lws = _sym(c, data["localWorkSize"], [*root, "localWorkSize"], allow_list=True)

    buffers: list[BufferSpec] = []
    var_args: list[VarArgument] = []
    local_args: list[LocalArgument] = []
    positions: dict[int, str] = {}

    def claim(pos: int | None, where: list[str | int]) -> None:
        if pos is None:
            return
        ptr = json_pointer(where)
        if pos in positions:
            c.add([*where, "pos"], f"argument position {pos} is already used by {positions[pos]}")
        else:
            positions[pos] = ptr

    def items(key: str) -> list[tuple[list[str | int], Any]]:
        value = data.get(key, [])
        if value is None:
            return []
        if not isinstance(value, list):
            c.add([*root, key], f"expected a list, got {type(value).__name__}")
            return []
        out = []
        for i, item in enumerate(value):
            where = [*root, key, i]
            if not isinstance(item, dict):
                c.add(where, f"expected an object, got {type(item).__name__}")
                continue
            out.append((where, item))
        return out

    for key, kind in BUFFER_KINDS:
        for where, item in items(key):
            pos = _int_field(c, item, "pos", where, lo=0)
            claim(pos, where)
            etype = _type_field(c, item, where)
            brk = item.get("break", 0)
            if brk not in (0, 1) or isinstance(brk, bool):
                c.add([*where, "break"], f"must be 0 (given whole to every device) or 1 (split with the NDRange), got {json.dumps(brk)}")
            size = None
            if "size" not in item:
                c.add(where, "missing required field 'size'")
            else:
                size = _sym(c, item["size"], [*where, "size"])
            if pos is not None and etype is not None and size is not None and brk in (0, 1):
                buffers.append(BufferSpec(kind, pos, size, etype, brk == 1, json_pointer(where)))

    for where, item in items("varArguments"):
        pos = _int_field(c, item, "pos", where, lo=0)
        claim(pos, where)
        etype = _type_field(c, item, where)
        value = None
        if "value" not in item:
            c.add(where, "missing required field 'value'")
        else:
            value = _sym(c, item["value"], [*where, "value"], allow_list=True)
        if pos is not None and etype is not None and value is not None:
            var_args.append(VarArgument(pos, etype, value, json_pointer(where)))

    for where, item in items("localArguments"):
        pos = _int_field(c, item, "pos", where, lo=0)
        claim(pos, where)
        etype = _type_field(c, item, where)
        size = None
        if "size" not in item:
            c.add(where, "missing required field 'size'")
        else:
            size = _sym(c, item["size"], [*where, "size"])
        if pos is not None and etype is not None and size is not None:
            local_args.append(LocalArgument(pos, etype, size, json_pointer(where)))

    if positions:
        missing = sorted(set(range(max(positions) + 1)) - set(positions))
        if missing:
            c.add([*root], f"kernel argument position{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(map(str, missing))} {'are' if len(missing) > 1 else 'is'} not described by any "
                           "buffer or argument (positions must be 0..N-1)")

    macros: dict[str, Sym] = {}
    mv = data.get("macros_values")
    if mv is not None:
        if not isinstance(mv, dict):
            c.add([*root, "macros_values"], f"expected an object of MACRO: expression, got {type(mv).__name__}")
        else:
            for k, v in mv.items():
                if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                    c.add([*root, "macros_values", k], "a macro name must be a C identifier")
                    continue
                s = _sym(c, v, [*root, "macros_values", k])
                if s is not None:
                    macros[k] = s

    ident = data.get("id")
    if ident is not None and (isinstance(ident, bool) or not isinstance(ident, (str, int))):
        c.add([*root, "id"], f"expected a string, got {json.dumps(ident)}")
        ident = None

    defaults: dict[str, Any] = {}
    sv = data.get("symbolicVariables")
    if isinstance(sv, dict):
        for k, v in sv.items():
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in RESERVED_VARIABLES:
                defaults[k] = v
    c.raise_if_any()
    assert name is not None and wd is not None and gws is not None
    return KernelSpec(file=file, name=name, src=src_path, work_dimension=wd, global_work_size=gws,
                      local_work_size=lws, partition=partition, buffers=sorted(buffers, key=lambda b: b.pos),
                      var_args=sorted(var_args, key=lambda a: a.pos),
                      local_args=sorted(local_args, key=lambda a: a.pos),
                      id=str(ident) if ident is not None else None, macros=macros, defaults=defaults)


def _dims(value: Any, n: int, sym: Sym, c: _Collector, what: str) -> tuple[int, ...] | None:
    if not isinstance(value, list):
        value = [value]
    if len(value) != n:
        c.add(sym.where, f"{what} has {len(value)} entr{'y' if len(value) == 1 else 'ies'} "
                         f"({sym.text} = {value}) but workDimension is {n}")
        return None
    out = []
    for v in value:
        try:
            iv = expressions.as_int(v, sym.text, what)
        except ExpressionError as exc:
            c.problems.append(exc.problem(c.file, sym.where))
            return None
        if iv < 1:
            c.add(sym.where, f"{what} entries must be >= 1, got {iv} ({sym.text} = {value})")
            return None
        if iv >= 2 ** 63:
            c.add(sym.where, f"{what} entries must be below 2**63 (an OpenCL size_t), got {iv}")
            return None
        out.append(iv)
    return tuple(out)


def _resolve(spec: KernelSpec, variables: dict[str, Any], partition: int | None) -> ResolvedKernel:
    for name in RESERVED_VARIABLES:
        if name in variables:
            raise UsageError(f"--set {name}=...: {name} is set by kernellab itself"
                             + (" (use --partition)" if name == "partition" else ""))
    if partition is not None and not 0 <= partition <= 10:
        raise UsageError(f"--partition must be in 0..10, got {partition}")
    p = partition if partition is not None else (spec.partition if spec.partition is not None else 10)
    ctx: dict[str, Any] = {**spec.defaults, **variables, "partition": p, "size_percent": 100, "offset_percent": 0}
    c = _Collector(spec.file)

    def ev(sym: Sym) -> Any:
        try:
            return sym.value(ctx)
        except ExpressionError as exc:
            c.problems.append(exc.problem(c.file, sym.where))
            return None

    gws_v = ev(spec.global_work_size)
    gws = _dims(gws_v, spec.work_dimension, spec.global_work_size, c, "globalWorkSize") if gws_v is not None else None
    lws = None
    if spec.local_work_size is not None:
        lws_v = ev(spec.local_work_size)
        if lws_v is not None:
            if not isinstance(lws_v, list) and spec.work_dimension > 1:
                lws_v = [lws_v] * spec.work_dimension  # PySchedCL: one number means every dimension
            lws = _dims(lws_v, spec.work_dimension, spec.local_work_size, c, "localWorkSize")
        if gws and lws:
            for i, (g, l) in enumerate(zip(gws, lws)):
                if g % l:
                    c.add(spec.local_work_size.where, f"globalWorkSize[{i}] = {g} is not a multiple of localWorkSize[{i}] = {l}")
    def count(size: Any, what: str, too_few: str) -> int | None:
        """A size expression's value as an element count >= 1, or None (problem recorded)."""
        v = ev(size)
        if v is None:
            return None
        try:
            n = expressions.as_int(v, size.text, what)
        except ExpressionError as exc:
            c.problems.append(exc.problem(c.file, size.where))
            return None
        if n < 1:
            c.add(size.where, too_few.format(n=n, text=size.text))
            return None
        return n

    buffers = []
    for b in spec.buffers:
        n = count(b.size, "a buffer size", "a buffer needs at least 1 element, got {n} ({text})")
        if n is None:
            continue
        if n * b.type.itemsize >= 2 ** 63:
            c.add(b.size.where, f"{n} elements ({b.size.text}) is beyond any device")
            continue
        buffers.append(ResolvedBuffer(b, n))
    local_bytes = {}
    for a in spec.local_args:
        n = count(a.size, "a local argument size", "a local argument needs at least 1 element, got {n}")
        if n is not None:
            local_bytes[a.pos] = n * a.type.itemsize
    options = []
    for k, s in spec.macros.items():
        v = ev(s)
        if v is None:
            continue
        if isinstance(v, list):
            c.add(s.where, "a macro value must be a number, got a list")
            continue
        if isinstance(v, Fraction):
            v = float(v) if v.denominator != 1 else int(v)
        options.append(f"-D{k}={v}")
    resolved = None
    if gws is not None and not c.problems:
        resolved = ResolvedKernel(spec, {**spec.defaults, **variables}, p, gws, lws, tuple(buffers), local_bytes,
                                  " ".join(options))
        # the scalar arguments are checked now, for the whole NDRange, so a bad one fails early
        try:
            resolved.arg_values(0, gws[0])
        except InputError as exc:
            c.problems.extend(exc.problems)
    c.raise_if_any()
    assert resolved is not None
    return resolved


# --- task files and DAGs ---------------------------------------------------------------------


@dataclass
class Task:
    """One kernel of a task set or DAG, with its own partition and variables."""

    id: str
    spec: KernelSpec
    partition: int | None
    variables: dict[str, Any]
    where: str  # "line N" in the task or graph file


@dataclass(frozen=True)
class Edge:
    """An output buffer of one task feeds an input buffer of another; positions of -1 mean an
    ordering only (PySchedCL's ``depends`` without a buffer)."""

    src: str
    src_pos: int
    dst: str
    dst_pos: int
    where: str


@dataclass
class TaskGraph:
    file: str
    tasks: dict[str, Task]
    edges: list[Edge]

    def predecessors(self, task_id: str) -> list[str]:
        return sorted({e.src for e in self.edges if e.dst == task_id}, key=list(self.tasks).index)

    def topological_order(self) -> list[str]:
        order: list[str] = []
        indeg = {t: 0 for t in self.tasks}
        for e in {(e.src, e.dst) for e in self.edges}:
            indeg[e[1]] += 1
        ready = [t for t in self.tasks if indeg[t] == 0]
        while ready:
            t = ready.pop(0)
            order.append(t)
            for s, d in sorted({(e.src, e.dst) for e in self.edges if e.src == t}, key=lambda x: list(self.tasks).index(x[1])):
                indeg[d] -= 1
                if indeg[d] == 0:
                    ready.append(d)
        return order


def _find_spec_file(name: str, base: Path) -> Path:
    p = Path(name)
    if p.is_absolute():
        return p
    for candidate in (base / p, base / "info" / p):
        if candidate.is_file():
            return candidate
    return base / p


def _load_task_spec(c: _Collector, name: str, base: Path, where: str, cache: dict[Path, KernelSpec]) -> KernelSpec | None:
    path = _find_spec_file(name, base)
    if path in cache:
        return cache[path]
    if not path.is_file():
        c.add(where, f"spec file {name!r} not found (looked in {base} and {base / 'info'})")
        return None
    try:
        spec = load_spec(path)
    except InputError as exc:
        c.problems.extend(exc.problems)
        return None
    cache[path] = spec
    return spec


def _number_token(tok: str) -> int | float | None:
    try:
        return int(tok)
    except ValueError:
        try:
            return float(tok)
        except ValueError:
            return None


def load_task_file(path: str | Path) -> TaskGraph:
    """A task set: one kernel per line, ``SPEC.json PARTITION DATASET [name=value ...]``, ``#`` comments."""
    path = Path(path)
    file = str(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read the task file: {exc.strerror or exc}", file) from None
    c = _Collector(file)
    cache: dict[Path, KernelSpec] = {}
    tasks: dict[str, Task] = {}
    for n, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        where = f"line {n}"
        toks = line.split()
        if len(toks) < 3:
            c.add(where, f"expected 'SPEC.json PARTITION DATASET [name=value ...]', got {line!r}")
            continue
        part = _number_token(toks[1])
        if not isinstance(part, int) or not 0 <= part <= 10:
            c.add(f"line {n}, column {raw.index(toks[1]) + 1}", f"the partition must be an integer 0..10, got {toks[1]!r}")
            part = None
        variables: dict[str, Any] = {}
        ds = _number_token(toks[2])
        if ds is None:
            c.add(f"line {n}, column {raw.index(toks[2]) + 1}", f"the dataset must be a number, got {toks[2]!r}")
        else:
            variables["dataset"] = ds
        for tok in toks[3:]:
            try:
                k, v = parse_assignment(tok)
                variables[k] = v
            except UsageError as exc:
                c.add(f"line {n}, column {raw.index(tok) + 1}", str(exc))
        spec = _load_task_spec(c, toks[0], path.parent, where, cache)
        if spec is not None and part is not None:
            tid = str(len(tasks))
            tasks[tid] = Task(tid, spec, part, variables, where)
    if not tasks and not c.problems:
        c.add("", "the task file lists no kernels")
    c.raise_if_any()
    return TaskGraph(file, tasks, [])


_EDGE = re.compile(r"^\s*(\S+)\s+(\d+)\s*->\s*(\S+)\s+(\d+)\s*$")


def load_graph(path: str | Path) -> TaskGraph:
    """PySchedCL's ``.graph`` file: task lines ``ID SPEC.json {"dataset": N, "partition": P, ...}``,
    a ``---`` line, edge lines ``SRC SRCPOS -> DST DSTPOS``, and an optional closing ``---``."""
    path = Path(path)
    file = str(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InputError(f"cannot read the graph file: {exc.strerror or exc}", file) from None
    c = _Collector(file)
    cache: dict[Path, KernelSpec] = {}
    tasks: dict[str, Task] = {}
    edges: list[Edge] = []
    declared: dict[str, str] = {}
    section = 0
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"line {n}"
        if line == "---":
            section += 1
            continue
        if section == 0:
            toks = line.split(None, 2)
            if len(toks) < 2:
                c.add(where, f"expected a task line 'ID SPEC.json {{\"dataset\": N, ...}}', got {line!r}")
                continue
            tid, spec_name = toks[0], toks[1]
            if tid in declared:
                c.add(where, f"task id {tid!r} is already defined on {declared[tid]}")
                continue
            declared[tid] = where
            variables: dict[str, Any] = {}
            part: int | None = None
            local_override: int | None = None
            if len(toks) == 3:
                try:
                    obj = json.loads(toks[2])
                except json.JSONDecodeError as exc:
                    c.add(f"line {n}, column {raw.index(toks[2]) + exc.colno}", f"the task's variables are not a JSON object: {exc.msg}")
                    continue
                if not isinstance(obj, dict):
                    c.add(where, f"the task's variables must be a JSON object, got {toks[2]!r}")
                    continue
                for k, v in obj.items():
                    if isinstance(v, bool) or not isinstance(v, (int, float)):
                        c.add(where, f"variable {k!r} must be a number, got {json.dumps(v)}")
                    elif k == "partition":
                        if not isinstance(v, int) or not 0 <= v <= 10:
                            c.add(where, f"partition must be an integer 0..10, got {v}")
                        else:
                            part = v
                    elif k in ("size_percent", "offset_percent"):
                        c.add(where, f"{k} is set by kernellab itself")
                    elif k == "localWorkSize":
                        if not isinstance(v, int) or v < 1:
                            c.add(where, f"localWorkSize must be a positive integer, got {v}")
                        else:
                            local_override = v  # PySchedCL: the same size in every dimension
                    else:
                        variables[k] = v
            spec = _load_task_spec(c, spec_name, path.parent, where, cache)
            if spec is not None:
                if local_override is not None:
                    import dataclasses

                    spec = dataclasses.replace(spec, local_work_size=Sym(local_override, None, "/localWorkSize"))
                tasks[tid] = Task(tid, spec, part, variables, where)
        elif section == 1:
            m = _EDGE.match(line)
            if not m:
                c.add(where, f"expected an edge 'SRC SRCPOS -> DST DSTPOS', got {line!r}")
                continue
            edges.append(Edge(m.group(1), int(m.group(2)), m.group(3), int(m.group(4)), where))
        else:
            c.add(where, "text after the closing '---'")
    return _finish_graph(c, file, tasks, edges, set(declared), "the graph file defines no tasks")


def _finish_graph(c: _Collector, file: str, tasks: dict[str, Task], edges: list[Edge], declared: set[str],
                  empty: str) -> TaskGraph:
    """Check the edges against the tasks' buffers and for cycles; raise every problem found."""
    for e in edges:
        for tid in (e.src, e.dst):
            if tid not in declared:
                c.add(e.where, f"task {tid!r} is not defined" + (" in the task lines" if e.src_pos >= 0 else ""))
        if e.src == e.dst:
            c.add(e.where, "an edge from a task to itself")
        if e.src not in tasks or e.dst not in tasks or e.src_pos < 0:
            continue
        sb = tasks[e.src].spec.buffer(e.src_pos)
        db = tasks[e.dst].spec.buffer(e.dst_pos)
        if sb is None or not sb.written_by_kernel:
            c.add(e.where, f"argument {e.src_pos} of task {e.src} ({tasks[e.src].spec.name}) is not an output or io buffer")
        if db is None or not db.read_by_kernel:
            c.add(e.where, f"argument {e.dst_pos} of task {e.dst} ({tasks[e.dst].spec.name}) is not an input or io buffer")
        if sb is not None and db is not None and sb.type != db.type:
            c.add(e.where, f"type mismatch: task {e.src} argument {e.src_pos} is {sb.type.name}, "
                           f"task {e.dst} argument {e.dst_pos} is {db.type.name}")
    seen: dict[tuple[str, int], Edge] = {}
    for e in edges:
        if e.dst_pos < 0:
            continue
        key = (e.dst, e.dst_pos)
        if key in seen:
            c.add(e.where, f"argument {e.dst_pos} of task {e.dst} already receives data from {seen[key].where}")
        seen[key] = e
    graph = TaskGraph(file, tasks, edges)
    if not c.problems:
        order = graph.topological_order()
        if len(order) != len(tasks):
            stuck = [t for t in tasks if t not in order]
            c.add("", f"the edges form a cycle through task{'s' if len(stuck) > 1 else ''} {', '.join(stuck)}")
    if not tasks and not c.problems:
        c.add("", empty)
    c.raise_if_any()
    return graph


def load_dag_json(path: str | Path, data: Any = None) -> TaskGraph:
    """PySchedCL's expanded DAG: a JSON list of specs, each with an ``id``, its own
    ``partition`` and ``symbolicVariables``, ``depends`` (task ids), and ``"from": {"kernel": ID,
    "pos": P}`` on the input buffers another task's output feeds."""
    path = Path(path)
    file = str(path)
    if data is None:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise InputError(f"cannot read the DAG: {exc.strerror or exc}", file) from None
        except json.JSONDecodeError as exc:
            raise InputError([Problem(file, f"line {exc.lineno}, column {exc.colno}", f"not valid JSON: {exc.msg}")]) from None
    c = _Collector(file)
    if not isinstance(data, list):
        c.add("", f"a DAG must be a JSON list of kernel specs, got {type(data).__name__}")
        c.raise_if_any()
    tasks: dict[str, Task] = {}
    edges: list[Edge] = []
    declared: set[str] = set()
    for i, item in enumerate(data):
        ptr = json_pointer([i])
        if not isinstance(item, dict):
            c.add([i], f"expected a kernel spec object, got {type(item).__name__}")
            continue
        tid = str(item.get("id", i))
        if tid in declared:
            c.add([i, "id"], f"task id {tid!r} is used twice")
            continue
        declared.add(tid)
        try:
            spec = spec_from_data(item, file, path.parent, [i])
        except InputError as exc:
            c.problems.extend(exc.problems)
            continue
        tasks[tid] = Task(tid, spec, spec.partition, {}, ptr)
        fed: set[str] = set()
        for key, _ in BUFFER_KINDS:
            for j, b in enumerate(item.get(key) or []):
                src = b.get("from") if isinstance(b, dict) else None
                if src is None:
                    continue
                where = json_pointer([i, key, j, "from"])
                if not isinstance(src, dict) or "kernel" not in src or "pos" not in src:
                    c.add(where, 'expected {"kernel": ID, "pos": P}')
                    continue
                try:
                    edges.append(Edge(str(src["kernel"]), int(src["pos"]), tid, int(b["pos"]), where))
                    fed.add(str(src["kernel"]))
                except (TypeError, ValueError, KeyError):
                    c.add(where, f"expected integer positions, got {json.dumps(src)}")
        deps = item.get("depends", [])
        deps = [] if deps is None else deps
        if not isinstance(deps, list):
            c.add([i, "depends"], "expected a list of task ids")
            deps = []
        for d in deps:
            if str(d) not in fed:
                edges.append(Edge(str(d), -1, tid, -1, json_pointer([i, "depends"])))
    return _finish_graph(c, file, tasks, edges, declared, "the DAG lists no kernels")


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


# --- conversion to a scenario ----------------------------------------------------------------


def default_local_size(global_size: Sequence[int], limit: int = 64) -> tuple[int, ...]:
    """A workgroup size for a spec without ``localWorkSize``: the largest divisor of dimension 0
    up to ``limit``, 1 in the other dimensions (a scenario's dispatch counts whole workgroups)."""
    first = max(d for d in range(1, min(limit, global_size[0]) + 1) if global_size[0] % d == 0)
    return (first,) + (1,) * (len(global_size) - 1)


def push_constant_bytes(kernel: ResolvedKernel) -> bytes:
    """The by-value arguments packed in argument order, each at its natural alignment, as the
    OpenCL backend unpacks a scenario's push constants; padded to a multiple of 4 bytes."""
    values = kernel.arg_values(0, kernel.global_size[0])
    out = bytearray()
    for pos in sorted(values):
        data = values[pos].tobytes()
        align = len(data)
        out += b"\0" * ((-len(out)) % align)
        out += data
    out += b"\0" * ((-len(out)) % 4)
    return bytes(out)


def import_spec(path: str | Path, output_dir: str | Path, *, variables: Mapping[str, Any] | None = None,
                seed: int = 0, inputs: Mapping[int, str | Path] | None = None, name: str = "scenario.json") -> Path:
    """``kernellab import SPEC.json --set dataset=N -o DIR``: write ``DIR/scenario.json`` (an
    OpenCL-C shader, one buffer per buffer argument with its input data as ``arg<pos>.npy``,
    bound at set 0 in parameter order, the scalars as push constants, the workgroup size and
    local argument sizes as specialization constants, one dispatch) plus the kernel source. Running the scenario on
    one OpenCL device computes what ``kernellab run SPEC.json`` computes; a buffer's ``dst`` is
    ``arg<pos>.out.npy`` (raw bytes, as Arm's runner writes buffers)."""
    from kernellab import model as m
    from kernellab.formats.scenario import write_scenario
    from kernellab.outputs import OutputSet
    from kernellab.runtime.partition import fill_inputs

    spec = load_spec(path)
    kernel = spec.resolve(variables or {}, 10)
    out = Path(output_dir)
    host = fill_inputs(kernel, seed, inputs)
    local = kernel.local_size or default_local_size(kernel.global_size)
    try:
        source = spec.src.read_bytes()
    except OSError as exc:
        raise InputError([Problem(spec.file, "/src", f"cannot read {spec.src}: {exc.strerror or exc}")]) from None
    src_name = spec.src.name
    access = {"input": "readonly", "output": "writeonly", "io": "readwrite"}
    resources: list[Any] = []
    push = push_constant_bytes(kernel)
    spec_consts = [m.SpecializationConstant(id=i, value=int(v)) for i, v in enumerate(local)]
    for n, pos in enumerate(sorted(kernel.local_bytes)):
        arg = next(a for a in spec.local_args if a.pos == pos)
        spec_consts.append(m.SpecializationConstant(id=3 + n, value=kernel.local_bytes[pos] // arg.type.itemsize))
    resources.append(m.Shader(uid=spec.name, src=src_name, entry=spec.name, type="OpenCL-C",
                              build_options=kernel.build_options, push_constants_size=len(push),
                              specialization_constants=spec_consts))
    bindings = []
    # binding B is the B-th buffer argument in parameter order (clspv's layout, which the OpenCL
    # backend follows too), not the argument's position
    for binding, b in enumerate(sorted(kernel.buffers, key=lambda r: r.pos)):
        uid = f"arg{b.pos}"
        fields: dict[str, Any] = {"uid": uid, "size": b.nbytes, "shader_access": access[b.spec.kind]}
        if b.spec.read_by_kernel:
            fields["src"] = f"arg{b.pos}.npy"
        if b.spec.written_by_kernel:
            fields["dst"] = f"arg{b.pos}.out.npy"
        resources.append(m.Buffer(**fields))
        bindings.append(m.Binding(set=0, id=binding, resource_ref=uid))
    if push:
        resources.append(m.RawData(uid="push_constants", src="push_constants.npy"))
    rangeND = [g // l for g, l in zip(kernel.global_size, local)]
    command = m.DispatchCompute(shader_ref=spec.name, push_data_ref="push_constants" if push else "",
                                rangeND=rangeND, bindings=bindings)
    scenario = m.Scenario(resources, [command])
    with OutputSet() as files:
        files.bytes(out / src_name, source)
        for b in kernel.buffers:
            if b.spec.read_by_kernel:
                from kernellab.runtime.partition import output_array
                files.npy(out / f"arg{b.pos}.npy", output_array(b, host[b.pos]))
        if push:
            files.npy(out / "push_constants.npy", np.frombuffer(push, dtype=np.uint8))
        files.commit()
    target = out / name
    write_scenario(scenario, target)
    return target


def validate_spec(path: str | Path, variables: Mapping[str, Any] | None = None) -> str:
    """Check a spec without a device (``kernellab validate SPEC.json [--set ...]``): every field,
    and, when the variables it uses are all given (or it uses none), every size and argument.
    Returns a one-line summary; raises :class:`InputError` with all problems."""
    spec = load_spec(path)
    variables = dict(variables or {})
    needed = sorted(spec.variables_used() - set(variables) - set(spec.defaults))
    summary = (f"{path}: valid kernel spec {spec.name!r} ({spec.arg_count} arguments, "
               f"{len(spec.buffers)} buffers, workDimension {spec.work_dimension})")
    if needed:
        return summary + f"; sizes not checked: set {', '.join(f'--set {n}=N' for n in needed)}"
    kernel = spec.resolve(variables)
    return summary + f"; NDRange {list(kernel.global_size)}" + (
        f", workgroup {list(kernel.local_size)}" if kernel.local_size else "")


def json_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of a kernel spec, for editors; the reader checks more
    (positions 0..N-1, expressions, sizes) than a schema can say."""
    types = sorted(set(SCALAR_TYPES) - {"unsigned"})
    type_pattern = "^(" + "|".join(t.replace(" ", r"\s+") for t in types) + ")(" + "|".join(
        map(str, VECTOR_WIDTHS)) + ")?$"
    expr = {"type": "string", "description": "a symbolic expression: numbers, variables (dataset, size_percent, "
                                             "offset_percent, partition, --set names), + - * / // % **, "
                                             "comparisons, lists, min max ceil floor partition_round"}
    number_or_expr = {"oneOf": [{"type": "number"}, expr]}
    sizes = {"oneOf": [expr, {"type": "integer", "minimum": 1},
                       {"type": "array", "minItems": 1, "maxItems": 3, "items": number_or_expr}]}
    elem_type = {"type": "string", "pattern": type_pattern}
    buffer = {"type": "object", "required": ["pos", "size", "type"], "properties": {
        "pos": {"type": "integer", "minimum": 0}, "size": number_or_expr, "type": elem_type,
        "break": {"enum": [0, 1], "description": "1: split with dimension 0 of the NDRange; 0: whole to every part"},
        "from": {"type": "object", "properties": {"kernel": {}, "pos": {"type": "integer"}}}}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "PySchedCL kernel spec (kernellab)",
        "type": "object",
        "required": ["name", "src", "workDimension", "globalWorkSize"],
        "properties": {
            "name": {"type": "string", "pattern": "^[A-Za-z_][A-Za-z0-9_]*$"},
            "src": {"type": "string", "minLength": 1},
            "workDimension": {"type": "integer", "minimum": 1, "maximum": 3},
            "partition": {"type": "integer", "minimum": 0, "maximum": 10},
            "globalWorkSize": sizes,
            "localWorkSize": sizes,
            "inputBuffers": {"type": "array", "items": buffer},
            "outputBuffers": {"type": "array", "items": buffer},
            "ioBuffers": {"type": "array", "items": buffer},
            "varArguments": {"type": "array", "items": {"type": "object", "required": ["pos", "type", "value"], "properties": {
                "pos": {"type": "integer", "minimum": 0}, "type": elem_type,
                "value": {"oneOf": [{"type": "number"}, expr, {"type": "array", "items": number_or_expr}]}}}},
            "localArguments": {"type": "array", "items": {"type": "object", "required": ["pos", "type", "size"], "properties": {
                "pos": {"type": "integer", "minimum": 0}, "type": elem_type, "size": number_or_expr}}},
            "id": {"type": ["string", "integer"]},
            "macros_values": {"type": "object", "additionalProperties": number_or_expr},
            "symbolicVariables": {"type": "object", "additionalProperties": {"type": "number"}},
        },
    }
