"""Oclgrind's diagnostics as structured findings, grouped so one defect is reported once.

Oclgrind writes one message per defective access: a header line, then lines indented with a tab.
:func:`parse_stream` splits the harness's stderr into launches (by its marker lines) and messages,
:func:`classify` turns each message into a :class:`Finding`, and :func:`group` merges the
findings that differ only by work-item or address (count + a few examples).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

from kernellab.verify.harness import MARK

#: finding kinds, in report order; the first five are the issue's, the rest Oclgrind's other checks
KINDS = {
    "data-race": "two work-items access the same address without synchronization, at least one writing",
    "barrier-divergence": "not every work-item of a work-group reached the same barrier",
    "out-of-bounds": "an access outside its buffer, __local allocation or private array",
    "uninitialized-read": "a value read before anything was written there was used",
    "api-error": "an OpenCL API call the launch made failed (bad sizes, arguments, ...)",
    "misaligned-access": "a load or store through a pointer not aligned to its type",
    "write-to-read-only": "a store to a buffer created with CL_MEM_READ_ONLY",
    "read-from-write-only": "a load from a buffer created with CL_MEM_WRITE_ONLY",
    "mapped-buffer-access": "the kernel touched a buffer that was mapped on the host",
    "async-copy-divergence": "work-items of a group disagreed on an async_work_group_copy",
    "unwaited-event": "a work-item finished without waiting for its async copies (wait_group_events)",
    "invalid-wait-event": "wait_group_events was given an event that is not an async copy's",
    "other": "any other defect Oclgrind reports",
}

_API_FUNCTIONS_IGNORED = re.compile(r"^clGet\w*Info$")  # the harness's own queries, not the launch's

_ENTITY = re.compile(r"Global\((\d+),(\d+),(\d+)\)\s+Local\((\d+),(\d+),(\d+)\)\s+Group\((\d+),(\d+),(\d+)\)")
_GROUP_ONLY = re.compile(r"Group\((\d+),(\d+),(\d+)\)")
_LOCATION = re.compile(r"At line (\d+) \(column (\d+)\) of (.+):$")
_ADDRESS = re.compile(r"(?:at|to|from) (global|local|private|constant) memory address (0x[0-9a-fA-F]+)")


@dataclass
class Message:
    """One Oclgrind message: its header and its (de-indented) body lines."""

    header: str
    lines: list[str]
    #: the instantiation it happened in (None outside any launch)
    launch: dict[str, Any] | None = None


@dataclass
class Access:
    work_item: dict[str, list[int]]
    location: dict[str, Any] | None
    source_line: str | None
    instruction: str | None = None


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
    examples: list[dict[str, Any]] = field(default_factory=list)
    detail: str = ""

    @property
    def location(self) -> dict[str, Any] | None:
        return self.accesses[0].location if self.accesses else None

    @property
    def source_line(self) -> str | None:
        return self.accesses[0].source_line if self.accesses else None

    def key(self) -> tuple:
        """What makes two findings the same defect: kind, kernel, launch, space and source places."""
        places = tuple((a.location or {}).get("line", 0) * 100000 + (a.location or {}).get("column", 0)
                       for a in self.accesses)
        if self.kind == "data-race":
            places = tuple(sorted(places))  # A-vs-B and B-vs-A are one race
        race = tuple(sorted(self.race.items())) if self.race else ()
        headline = re.sub(r"0x[0-9a-fA-F]+|\d+", "#", self.message)
        return (self.kind, self.kernel, self.instantiation, self.address_space, places, race, headline)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "kernel": self.kernel,
            "instantiation": self.instantiation,
            "work_items": [e["work_items"] for e in self.examples] or [[a.work_item for a in self.accesses]],
            "address_space": self.address_space,
            "address": self.address,
            "location": self.location,
            "source_line": self.source_line,
            "message": self.message,
            "count": self.count,
        }
        if self.race:
            out["race"] = self.race
        if len(self.accesses) > 1:
            out["accesses"] = [{"work_item": a.work_item, "location": a.location, "source_line": a.source_line}
                               for a in self.accesses]
        if self.examples:
            out["examples"] = self.examples
        if self.detail:
            out["detail"] = self.detail
        return out


def parse_stream(text: str) -> tuple[list[Message], list[dict[str, Any]]]:
    """Split the harness's stderr into Oclgrind messages and harness events (in order)."""
    messages: list[Message] = []
    events: list[dict[str, Any]] = []
    launch: dict[str, Any] | None = None
    current: Message | None = None
    for raw in text.splitlines():
        if raw.startswith(MARK + " "):
            current = None
            _, event, payload = raw.split(" ", 2)
            data = json.loads(payload)
            data["event"] = event
            events.append(data)
            if event == "begin":
                launch = data
            elif event == "end":
                launch = None
            continue
        if raw.startswith("\t") or (raw.startswith(" ") and current is not None):
            if current is not None:
                current.lines.append(raw[1:] if raw.startswith("\t") else raw)
            continue
        if not raw.strip():
            continue
        current = Message(raw.strip(), [], launch)
        messages.append(current)
    return messages, events


def _entity(text: str) -> dict[str, list[int]] | None:
    m = _ENTITY.search(text)
    if m:
        v = [int(x) for x in m.groups()]
        return {"global": v[0:3], "local": v[3:6], "group": v[6:9]}
    m = _GROUP_ONLY.search(text)
    if m:
        return {"group": [int(x) for x in m.groups()]}
    return None


def _locations(lines: list[str], kernel_file: str | None) -> list[tuple[dict[str, Any] | None, str | None, str | None]]:
    """Every (location, source line, instruction) in a message body, in order."""
    found = []
    for i, line in enumerate(lines):
        m = _LOCATION.search(line.strip())
        if m:
            name = m.group(3)
            # Oclgrind names the program's source "input.cl"; the user knows it as the kernel file
            file = kernel_file if kernel_file and name in ("input.cl", "") else name
            src = lines[i + 1].strip() if i + 1 < len(lines) else None
            instr = lines[i - 1].strip() if i > 0 else None
            found.append(({"file": file, "line": int(m.group(1)), "column": int(m.group(2))}, src, instr))
    return found


def _field(lines: list[str], name: str) -> str | None:
    for line in lines:
        s = line.strip()
        if s.startswith(name):
            return s[len(name):].strip()
    return None


def _kind(header: str) -> tuple[str, dict[str, str] | None]:
    h = header
    if "data race at" in h:
        return "data-race", {"type": "write-write" if h.startswith("Write-write") else "read-write"}
    if h.startswith("Work-group divergence detected (barrier)"):
        return "barrier-divergence", None
    if h.startswith("Work-group divergence detected (async copy)"):
        return "async-copy-divergence", None
    if re.match(r"Invalid (read|write) of size", h) or h.startswith("Index ("):
        return "out-of-bounds", None
    if h.startswith("Uninitialized") or h.startswith("Controlflow depends on uninitialized") or \
            h.startswith("Instruction depends on an uninitialized"):
        return "uninitialized-read", None
    if h.startswith("Invalid write to read-only buffer"):
        return "write-to-read-only", None
    if h.startswith("Invalid read from write-only buffer"):
        return "read-from-write-only", None
    if "mapped" in h and h.startswith("Invalid"):
        return "mapped-buffer-access", None
    if "not aligned" in h or h.startswith("Unaligned address"):
        return "misaligned-access", None
    if h.startswith("Work-item finished without waiting for events"):
        return "unwaited-event", None
    if h.startswith("Invalid wait event"):
        return "invalid-wait-event", None
    if h.startswith("Oclgrind - OpenCL runtime error detected"):
        return "api-error", None
    return "other", None


def _buffer_argument(address: str, space: str | None, launch: dict[str, Any] | None) -> dict[str, int] | None:
    """Oclgrind addresses are (buffer number << 48) | offset; global buffers were created in
    argument order, so the number names the argument."""
    value = int(address, 16)
    buffer, offset = value >> 48, value & ((1 << 48) - 1)
    out = {"buffer": buffer, "offset": offset}
    if space in ("global", "constant") and launch and 1 <= buffer <= len(launch.get("buffers", [])):
        out["argument"] = launch["buffers"][buffer - 1]
    return out


def classify(msg: Message) -> Finding | None:
    """The finding a message reports, or None for messages that are not about the launch."""
    kind, race = _kind(msg.header)
    lines = msg.lines
    launch = msg.launch
    kernel_file = launch.get("kernel_file") if launch else None
    index = launch.get("index") if launch else None
    if kind == "api-error":
        function = _field(lines, "Function:") or "?"
        if _API_FUNCTIONS_IGNORED.match(function):
            return None
        error = _field(lines, "Error:") or "?"
        extra = [l.strip() for l in lines if l.strip() and not l.strip().startswith(("Function:", "Error:"))]
        return Finding("api-error", f"{function} failed with {error}" + (f": {'; '.join(extra)}" if extra else ""),
                       launch.get("kernel") if launch else None, index)
    if kind == "other" and not any(l.strip().startswith("Kernel:") for l in lines):
        return None  # a line some other part of the process printed (e.g. the compiler)
    kernel = _field(lines, "Kernel:") or (launch.get("kernel") if launch else None)
    space = address = None
    m = _ADDRESS.search(msg.header)
    if m:
        space, address = m.group(1), m.group(2)
    places = _locations(lines, kernel_file)
    entities: list[dict[str, list[int]] | None] = []
    if kind == "data-race":
        entities = [_entity(_field(lines, "First entity:") or ""), _entity(_field(lines, "Second entity:") or "")]
    elif kind in ("barrier-divergence", "async-copy-divergence"):
        group_id = re.search(r"\((\d+),(\d+),(\d+)\)", _field(lines, "Work-group:") or "")
        entities = [_entity(_field(lines, "Work-item:") or "")
                    or ({"group": [int(x) for x in group_id.groups()]} if group_id else None)]
    else:
        entities = [_entity(_field(lines, "Entity:") or "")]
    accesses = []
    for i, ent in enumerate(entities):
        loc, src, instr = places[i] if i < len(places) else (None, None, None)
        accesses.append(Access(ent or {}, loc, src, instr))
    if kind == "barrier-divergence" and places and len(accesses) == 1 and accesses[0].location is None:
        accesses[0] = Access(accesses[0].work_item, *places[0])
    if race is not None and len(entities) == 2:
        g1 = (entities[0] or {}).get("group")
        g2 = (entities[1] or {}).get("group")
        race["scope"] = "intra-group" if g1 is not None and g1 == g2 else "inter-group"
    detail = ""
    if kind == "barrier-divergence":
        detail = next((l.strip() for l in lines if l.strip().startswith("Only ")), "")
    finding = Finding(kind, msg.header, kernel, index, space, address, accesses, race, detail=detail)
    if address is not None:
        arg = _buffer_argument(address, space, launch)
        if arg and "argument" in arg:
            finding.detail = (finding.detail + " " if finding.detail else "") + \
                f"argument {arg['argument']}, byte offset {arg['offset']}"
    return finding


MAX_EXAMPLES = 3


def _example_key(example: dict[str, Any]) -> tuple:
    return tuple(tuple(w.get("group", []) + w.get("local", [])) for w in example["work_items"]), example["address"] or ""


def group(findings: Iterable[Finding]) -> list[Finding]:
    """Merge findings that are the same defect, with a count and the first few examples in
    work-item order (Oclgrind runs work-groups on several threads, so its order varies)."""
    merged: dict[tuple, Finding] = {}
    every: dict[tuple, list[dict[str, Any]]] = {}
    for f in findings:
        k = f.key()
        example = {"work_items": [a.work_item for a in f.accesses], "address": f.address}
        every.setdefault(k, []).append(example)
        if k in merged:
            merged[k].count += 1
            if _example_key(example) < _example_key(merged[k].examples[0]):
                f.count = merged[k].count
                f.examples = [example]
                merged[k] = f
        else:
            f.examples = [example]
            merged[k] = f
    for k, f in merged.items():
        f.examples = sorted(every[k], key=_example_key)[:MAX_EXAMPLES]
    order = list(KINDS)
    return sorted(merged.values(), key=lambda f: (f.instantiation or 0, order.index(f.kind),
                                                   (f.location or {}).get("line", 0),
                                                   (f.location or {}).get("column", 0), f.message))
