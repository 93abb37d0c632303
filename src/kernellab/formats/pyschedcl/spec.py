"""Reading a kernel spec file: every field checked, every problem reported with its JSON pointer."""
from __future__ import annotations

import itertools
import json
import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kernellab import expressions
from kernellab.errors import InputError, Problem, Problems, json_pointer
from kernellab.expressions import ExpressionError
from kernellab.formats.paths import path_problem
from kernellab.formats.pyschedcl.elements import ElementType, parse_type
from kernellab.formats.pyschedcl.kernel import (
    RESERVED_VARIABLES,
    BufferSpec,
    KernelSpec,
    LocalArgument,
    Sym,
    VarArgument,
)

log = logging.getLogger("kernellab.pyschedcl")

#: how many missing argument positions a problem lists
_MISSING_SHOWN = 20

#: keys PySchedCL writes into specs that kernellab reads but does not need, or ignores on purpose
_TOLERATED_KEYS = {"symbolicVariables", "depends", "task", "ecos", "localChunk", "globalWorkOffset"}
_KNOWN_KEYS = {"name", "src", "workDimension", "partition", "globalWorkSize", "localWorkSize", "inputBuffers",
               "outputBuffers", "ioBuffers", "varArguments", "localArguments", "id", "macros_values"}
BUFFER_KINDS = (("inputBuffers", "input"), ("outputBuffers", "output"), ("ioBuffers", "io"))


def _sym(c: Problems, raw: Any, where: list[str | int], *, allow_list: bool = False) -> Sym | None:
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


def _int_field(c: Problems, obj: Mapping[str, Any], key: str, where: list[str | int], *,
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


def _type_field(c: Problems, obj: Mapping[str, Any], where: list[str | int]) -> ElementType | None:
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
        from kernellab.formats.jsonfile import MAX_JSON_BYTES, decode_json, read_text_input
        # the readers' caps: a regular file, 16 MiB, 64 levels deep, integers of 40 digits
        data = decode_json(read_text_input(path, "a kernel spec (JSON)", MAX_JSON_BYTES), file, "not valid JSON")
    return spec_from_data(data, file, path.parent)


def spec_from_data(data: Any, file: str, base_dir: Path, root: Sequence[str | int] = ()) -> KernelSpec:
    """Check a parsed spec object (``root``: its place in the file, for a spec inside a DAG);
    raises :class:`InputError` with every problem."""
    root = list(root)
    if not isinstance(data, dict):
        raise InputError([Problem(file, json_pointer(root),
                                  f"a kernel spec must be a JSON object, got {type(data).__name__}")])
    for key in data:
        if key not in _KNOWN_KEYS and key not in _TOLERATED_KEYS:
            log.warning("%s: %s: unknown field ignored", file, json_pointer([*root, key]))
    r = _SpecReader(data, file, base_dir, root)
    name = r.name()
    src_path = r.src()
    wd = _int_field(r, data, "workDimension", root, lo=1, hi=3)
    partition = _int_field(r, data, "partition", root, lo=0, hi=10, required=False)
    gws, lws = r.work_sizes()
    buffers, var_args, local_args = r.buffers(), r.var_arguments(), r.local_arguments()
    r.check_positions()
    macros = r.macros()
    ident = r.ident()
    defaults = r.defaults()
    r.raise_if_any()
    assert name is not None and wd is not None and gws is not None
    return KernelSpec(file=file, name=name, src=src_path, work_dimension=wd, global_work_size=gws,
                      local_work_size=lws, partition=partition, buffers=sorted(buffers, key=lambda b: b.pos),
                      var_args=sorted(var_args, key=lambda a: a.pos),
                      local_args=sorted(local_args, key=lambda a: a.pos),
                      id=ident, macros=macros, defaults=defaults)


class _SpecReader(Problems):
    """The fields of one spec object, each checked on its own; every problem is kept."""

    def __init__(self, data: dict[str, Any], file: str, base_dir: Path, root: list[str | int]):
        super().__init__(file)
        self.data = data
        self.base_dir = base_dir
        self.root = root
        #: argument position -> the JSON pointer of the entry that describes it
        self.positions: dict[int, str] = {}

    def name(self) -> str | None:
        name = self.data.get("name")
        if name is None:
            self.add(self.root, "missing required field 'name'")
        elif not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            self.add([*self.root, "name"], f"the kernel name must be a C identifier, got {json.dumps(name)}")
            return None
        return name

    def src(self) -> Path:
        root, base_dir = self.root, self.base_dir
        src = self.data.get("src")
        if src is None:
            self.add(root, "missing required field 'src'")
            return base_dir
        if not isinstance(src, str) or not src:
            self.add([*root, "src"], f"expected the path of the OpenCL C file, got {json.dumps(src)}")
            return base_dir
        if (why := path_problem(src)) is not None:
            self.add([*root, "src"], why)
            return base_dir
        src_path = (base_dir / src) if not Path(src).is_absolute() else Path(src)
        if not src_path.is_file() and not Path(src).is_absolute():
            # PySchedCL keeps specs in info/ and their kernels in a sibling kernel_src/
            alt = base_dir.parent / "kernel_src" / src
            if alt.is_file():
                src_path = alt
        if not src_path.is_file():
            self.add([*root, "src"], f"kernel source {src!r} not found (looked for {src_path}"
                                     + (f" and {base_dir.parent / 'kernel_src' / src}"
                                        if not Path(src).is_absolute() else "")
                                     + ")")
        return src_path

    def work_sizes(self) -> tuple[Sym | None, Sym | None]:
        """(globalWorkSize, localWorkSize); an absent local size is None."""
        root, data = self.root, self.data
        gws = None
        if "globalWorkSize" not in data:
            self.add(root, "missing required field 'globalWorkSize'")
        else:
            gws = _sym(self, data["globalWorkSize"], [*root, "globalWorkSize"], allow_list=True)
        lws = None
        if data.get("localWorkSize") not in (None, [], ""):
            lws = _sym(self, data["localWorkSize"], [*root, "localWorkSize"], allow_list=True)
        return gws, lws

    def _claim(self, pos: int | None, where: list[str | int]) -> None:
        if pos is None:
            return
        if pos in self.positions:
            self.add([*where, "pos"], f"argument position {pos} is already used by {self.positions[pos]}")
        else:
            self.positions[pos] = json_pointer(where)

    def _items(self, key: str) -> list[tuple[list[str | int], Any]]:
        value = self.data.get(key, [])
        if value is None:
            return []
        if not isinstance(value, list):
            self.add([*self.root, key], f"expected a list, got {type(value).__name__}")
            return []
        out = []
        for i, item in enumerate(value):
            where = [*self.root, key, i]
            if not isinstance(item, dict):
                self.add(where, f"expected an object, got {type(item).__name__}")
                continue
            out.append((where, item))
        return out

    def _argument(self, where: list[str | int], item: dict[str, Any], key: str, *, allow_list: bool = False,
                  breakable: bool = False) -> tuple[int | None, ElementType | None, Sym | None]:
        """An argument entry's position (claimed), type and ``key`` (its size or value)."""
        pos = _int_field(self, item, "pos", where, lo=0)
        self._claim(pos, where)
        etype = _type_field(self, item, where)
        if breakable:  # a buffer: its break flag, between its type and its size as always listed
            brk = item.get("break", 0)
            if brk not in (0, 1) or isinstance(brk, bool):
                self.add([*where, "break"], "must be 0 (given whole to every device) or 1 (split with the NDRange), "
                                            f"got {json.dumps(brk)}")
        value = None
        if key not in item:
            self.add(where, f"missing required field {key!r}")
        else:
            value = _sym(self, item[key], [*where, key], allow_list=allow_list)
        return pos, etype, value

    def buffers(self) -> list[BufferSpec]:
        out = []
        for key, kind in BUFFER_KINDS:
            for where, item in self._items(key):
                pos, etype, size = self._argument(where, item, "size", breakable=True)
                brk = item.get("break", 0)
                if pos is not None and etype is not None and size is not None and brk in (0, 1):
                    out.append(BufferSpec(kind, pos, size, etype, brk == 1, json_pointer(where)))
        return out

    def var_arguments(self) -> list[VarArgument]:
        out = []
        for where, item in self._items("varArguments"):
            pos, etype, value = self._argument(where, item, "value", allow_list=True)
            if pos is not None and etype is not None and value is not None:
                out.append(VarArgument(pos, etype, value, json_pointer(where)))
        return out

    def local_arguments(self) -> list[LocalArgument]:
        out = []
        for where, item in self._items("localArguments"):
            pos, etype, size = self._argument(where, item, "size")
            if pos is not None and etype is not None and size is not None:
                out.append(LocalArgument(pos, etype, size, json_pointer(where)))
        return out

    def check_positions(self) -> None:
        if not self.positions:
            return
        top = max(self.positions)
        count = top + 1 - len(self.positions)
        if count:
            # the first few only: a position of 10**12 must not make a list of them all
            missing = list(itertools.islice((p for p in range(top + 1) if p not in self.positions), _MISSING_SHOWN))
            shown = ", ".join(map(str, missing)) + (", ..." if count > len(missing) else "")
            self.add([*self.root], f"kernel argument position{'s' if count > 1 else ''} "
                                   f"{shown} {'are' if count > 1 else 'is'} not "
                                   "described by any buffer or argument (positions must be 0..N-1)")

    def macros(self) -> dict[str, Sym]:
        macros: dict[str, Sym] = {}
        mv = self.data.get("macros_values")
        if mv is None:
            return macros
        if not isinstance(mv, dict):
            self.add([*self.root, "macros_values"], f"expected an object of MACRO: expression, got {type(mv).__name__}")
            return macros
        for k, v in mv.items():
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                self.add([*self.root, "macros_values", k], "a macro name must be a C identifier")
                continue
            s = _sym(self, v, [*self.root, "macros_values", k])
            if s is not None:
                macros[k] = s
        return macros

    def ident(self) -> str | None:
        ident = self.data.get("id")
        if ident is not None and (isinstance(ident, bool) or not isinstance(ident, (str, int))):
            self.add([*self.root, "id"], f"expected a string, got {json.dumps(ident)}")
            return None
        return str(ident) if ident is not None else None

    def defaults(self) -> dict[str, Any]:
        """Variables the spec's own ``symbolicVariables`` give (PySchedCL DAG specs)."""
        sv = self.data.get("symbolicVariables")
        if not isinstance(sv, dict):
            return {}
        return {k: v for k, v in sv.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and k not in RESERVED_VARIABLES}


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
