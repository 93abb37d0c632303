"""What a verify finds, whichever checker ran: kinds, severities, findings, launches and the
verdict, and their JSON (made here and nowhere else).

Oclgrind's log parser (:mod:`kernellab.verify.oclgrind_log`) and the SPIR-V checker's adapter
(:mod:`kernellab.verify.vulkan`) both produce these records; :mod:`kernellab.verify.report`
words them for a person. A location, a work-item and an example are JSON-shaped mappings
(``TypedDict``), since they are written out as they are.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import field
from pathlib import Path
from typing import Any, Literal, TypedDict

from kernellab.records import dataclass

#: finding kinds, in report order; the first three are defects in GPUVerify's sense, the rest are
#: reported as warnings unless ``--check`` names them
KINDS = {
    "data-race": "two work-items access the same address without synchronization, at least one writing "
                 "(an async copy in flight counts as an access by the work-group)",
    "barrier-divergence": "not every work-item of a work-group reached the same barrier, async copy or "
                          "wait_group_events, or they passed it different arguments",
    "out-of-bounds": "an access outside its buffer, __local allocation or private array (null pointers included)",
    "subgroup-inactive-read": "a subgroup operation (shuffle, broadcast, quad, rotate) read the value of an "
                              "invocation that is not active in the subgroup: the result is undefined",
    "subgroup-nonuniform": "an operand of a subgroup operation that must be dynamically uniform in the subgroup "
                           "differs between its active invocations",
    "uninitialized-read": "a value read before anything was written there was used",
    "array-index": "an index past an inner dimension of a multi-dimensional array, the access possibly staying "
                   "inside the array (GPUVerify checks the whole array's bounds; an index past the first "
                   "dimension leaves the array and is out-of-bounds)",
    "barrier-flags": "work-items reached the same barrier with different memory-fence flags",
    "api-error": "an OpenCL API call the launch made failed (bad sizes, arguments, ...)",
    "misaligned-access": "a load or store through a pointer not aligned to its type",
    "write-to-read-only": "a store to a buffer created with CL_MEM_READ_ONLY",
    "read-from-write-only": "a load from a buffer created with CL_MEM_WRITE_ONLY",
    "mapped-buffer-access": "the kernel touched a buffer that was mapped on the host",
    "unwaited-event": "a work-item finished without waiting for its async copies (wait_group_events)",
    "invalid-wait-event": "wait_group_events was given an event that is not an async copy's",
    "other": "any other problem Oclgrind reports (e.g. an unsupported builtin)",
    "assertion": "a GPUVerify annotation (__assert, __invariant, a called function's __requires) that can fail "
                 "(verify --prove)",
}

#: what GPUVerify calls a defect: these decide the verdict whatever ``--check`` says
DEFECT_KINDS = ("data-race", "barrier-divergence", "out-of-bounds")
#: short names ``--check`` also accepts
CHECK_ALIASES = {"uninitialized": "uninitialized-read", "misaligned": "misaligned-access", "api": "api-error"}

#: which checker produced a result: Oclgrind, or kernellab's SPIR-V checker (docs/verify-vulkan.md)
Checker = Literal["oclgrind", "spirv", "proof"]
#: a launch's verdict from verify --prove (docs/verify-prove.md): proven for every input; a defect a
#: replayed launch confirmed; a possible defect the replay did not reproduce; unknown, with a reason
ProofVerdict = Literal["proven", "defect", "possible", "unknown"]


def checked_kinds(names: Iterable[str]) -> frozenset[str]:
    """The kinds that count as defects: GPUVerify's three plus every kind ``names`` lists
    (``all`` = every kind). Unknown names raise ValueError naming them."""
    out = set(DEFECT_KINDS)
    unknown = []
    for name in names:
        name = name.strip()
        if not name:
            continue
        if name == "all":
            out.update(KINDS)
        elif CHECK_ALIASES.get(name, name) in KINDS:
            out.add(CHECK_ALIASES.get(name, name))
        else:
            unknown.append(name)
    if unknown:
        raise ValueError(f"unknown check {', '.join(map(repr, unknown))}; known: all, "
                         + ", ".join(sorted(set(KINDS) | set(CHECK_ALIASES))))
    return frozenset(out)


class Location(TypedDict):
    """A place in a source file: 1-based line and column."""

    file: str
    line: int
    column: int


#: a work-item (an invocation) by its ids: ``global``, ``local`` and ``group``, each three numbers
#: (only ``group`` when the checker names the work-group alone)
WorkItem = dict[str, list[int]]
#: one occurrence of a finding: its ``work_items`` and ``address`` (and, from the SPIR-V checker,
#: the element ``index`` and, for a hazard, the two ``commands`` and their ``accesses``)
Example = dict[str, Any]

_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")


@dataclass
class Access:
    """One side of a finding: who made it and where."""

    work_item: WorkItem
    location: Location | None
    source_line: str | None
    instruction: str | None = None
    #: what the access is when it is not the user's own load or store (an async copy's, another command's)
    what: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"work_item": self.work_item, "location": self.location, "source_line": self.source_line,
                **({"what": self.what} if self.what else {})}


@dataclass
class Finding:
    kind: str
    message: str
    kernel: str | None
    instantiation: int | None
    address_space: str | None = None
    address: str | None = None
    accesses: list[Access] = field(default_factory=list)
    race: dict[str, str] | None = None
    #: for grouped findings
    count: int = 1
    examples: list[Example] = field(default_factory=list)
    detail: str = ""
    #: "defect" (counts for the verdict) or "warning"; set by the caller's --check choice
    severity: str = "defect"
    #: in the user's terms: the buffer (argument or scenario uid), the element, the variable
    resource: str | None = None
    index: int | None = None
    variable: str | None = None
    #: where the user wrote the line (a capture's host program), when not the kernel file itself
    source: dict[str, Any] | None = None
    #: which file of a multi-file call the launch came from
    file: int = 0
    #: bytes per element of ``resource``/``variable`` (how ``index`` was computed)
    element_size: int | None = None

    @property
    def location(self) -> Location | None:
        return next((a.location for a in self.accesses if a.location), None)

    @property
    def source_line(self) -> str | None:
        return next((a.source_line for a in self.accesses if a.location), None)

    def key(self, race: dict[str, str] | None = None) -> tuple[Any, ...]:
        """What makes two findings the same defect: kind, kernel, launch, space and source places
        (``race``: this finding's key with other race details)."""
        places = tuple((a.location["line"] * 100000 + a.location["column"]) if a.location else 0
                       for a in self.accesses)
        if self.kind == "data-race":
            places = tuple(sorted(places))  # A-vs-B and B-vs-A are one race
        details = tuple(sorted((race or self.race or {}).items()))
        headline = _NUMBERS.sub("#", self.message)
        return (self.file, self.kind, self.kernel, self.instantiation, self.address_space, places, details, headline,
                self.resource, self.variable)

    def to_json(self) -> dict[str, Any]:
        location = self.location
        out: dict[str, Any] = {
            "kind": self.kind,
            "severity": self.severity,
            "kernel": self.kernel,
            "instantiation": self.instantiation,
            "work_items": [e["work_items"] for e in self.examples] or [[a.work_item for a in self.accesses]],
            "address_space": self.address_space,
            "address": self.address,
            "resource": self.resource,
            "index": self.index,
            "variable": self.variable,
            "location": location,
            "source_line": self.source_line,
            "source": self.source or (dict(location, text=self.source_line) if location else None),
            "message": self.message,
            "count": self.count,
        }
        if self.race:
            out["race"] = self.race
        if len(self.accesses) > 1:
            out["accesses"] = [a.to_json() for a in self.accesses]
        if self.examples:
            out["examples"] = self.examples
        if self.detail:
            out["detail"] = self.detail
        return out


def ordered(findings: list[Finding]) -> list[Finding]:
    """In report order: file, launch, kind, source place."""
    order = list(KINDS)
    return sorted(findings, key=lambda f: (f.file, f.instantiation or 0, order.index(f.kind),
                                           f.location["line"] if f.location else 0,
                                           f.location["column"] if f.location else 0, f.message))


@dataclass
class Launch:
    """One launch (an instantiation run on Oclgrind, or a scenario's dispatch in the SPIR-V checker)."""

    index: int | None
    kernel: str | None
    #: False when it did not run (a launch error, a time limit): nothing in it was checked
    ran: bool = True
    #: where the host program enqueued it (a capture's ``file:line``)
    enqueued_at: str | None = None
    #: notes: the arguments filled from the seed, and how the kernel was built
    filled: list[str] = field(default_factory=list)
    #: the kernel's printf output
    output: str | None = None
    #: why it did not run
    error: str | None = None
    #: stopped at the time limit
    unfinished: bool = False
    #: run with uniform work-groups (Oclgrind; None: not said)
    uniform: bool | None = None
    #: the scenario command it is, its invocations and the seconds it took (the SPIR-V checker)
    command: int | None = None
    invocations: int | None = None
    seconds: float | None = None
    #: how the verdict was reached: a run of the launch, or a proof for every input (verify --prove)
    method: Literal["launch", "proof"] = "launch"
    #: the proof's verdict and, for ``unknown`` or ``possible``, why
    proof: ProofVerdict | None = None
    reason: str | None = None
    #: the subgroup size it was checked with, when ``--subgroup-size all`` checked several
    subgroup_size: int | None = None

    def to_json(self, verdict: str) -> dict[str, Any]:
        return {"instantiation": self.index, "kernel": self.kernel, "verdict": verdict, "ran": self.ran,
                "enqueued_at": self.enqueued_at, "filled": self.filled, "output": self.output,
                "method": self.method,
                **({"error": self.error} if self.error is not None else {}),
                **({"proof": self.proof, "reason": self.reason, "seconds": self.seconds}
                   if self.proof is not None else {})}


@dataclass
class VerifyResult:
    """The verdict on one file: its launches and their findings, in report order."""

    file: Path
    findings: list[Finding]
    launches: list[Launch] = field(default_factory=list)
    #: Oclgrind stopped reporting after OCLGRIND_MAX_ERRORS messages
    truncated: bool = False
    #: the checker's reports before grouping
    raw_messages: int = 0
    #: the kinds that count as defects (GPUVerify's three plus --check)
    checked: frozenset[str] = frozenset()
    checker: Checker = "oclgrind"

    @property
    def defects(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "defect"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity != "defect"]

    @property
    def unfinished(self) -> list[Launch]:
        """Launches stopped at the time limit: nothing after their stop was checked."""
        return [l for l in self.launches if l.unfinished]

    @property
    def verdict(self) -> str:
        if self.defects:
            return "defects"
        if self.unfinished:
            return "not finished"
        proofs = {l.proof for l in self.launches}
        return "possible" if "possible" in proofs else "unknown" if "unknown" in proofs else "verified"

    @property
    def exit_status(self) -> int:
        """0 verified (or proven), 1 defects (a possible one too) or not finished, 3 a proof that
        reached no verdict (``unknown``); 2, bad input, is the command's."""
        verdict = self.verdict
        return 0 if verdict == "verified" else 3 if verdict == "unknown" else 1

    def launch_verdict(self, index: int | None) -> str:
        if any(f.instantiation == index for f in self.defects):
            return "defects"
        if any(l.index == index for l in self.unfinished):
            return "not finished"
        proof = next((l.proof for l in self.launches if l.index == index and l.proof), None)
        return proof if proof in ("possible", "unknown") else "verified"

    def to_json(self) -> dict[str, Any]:
        out = {"verdict": self.verdict, "file": str(self.file), "checked": sorted(self.checked),
               "launches": [l.to_json(self.launch_verdict(l.index)) for l in self.launches],
               "findings": [f.to_json() for f in self.findings],
               "reports": self.raw_messages, "truncated": self.truncated}
        if self.checker != "oclgrind":  # Oclgrind's documents have never named it: their shape stays as it was
            out["checker"] = self.checker
        return out
