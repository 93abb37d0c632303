"""Oclgrind's diagnostics as structured findings, grouped so one defect is reported once.

Oclgrind writes one message per defective access: a header line, then lines indented with a tab.
:func:`parse_stream` splits the harness's stderr into launches (by its marker lines) and messages,
:func:`classify` turns each message into a :class:`Finding`, and :func:`group` merges the
findings that differ only by work-item or address (count + a few examples); :func:`summarize` does
both for a whole log, classifying each shape of message once (a racy line can print thousands).
The findings are :mod:`kernellab.verify.model`'s, as the SPIR-V checker's are.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernellab.records import dataclass
from kernellab.verify import terms
from kernellab.verify.asynccopy import EVENT_SHIFT, SHADOW_COLUMN
from kernellab.verify.harness import MARK
from kernellab.verify.model import _NUMBERS, Access, Finding, Location, WorkItem, ordered

#: a harness event (a marker line's JSON): a launch's ``begin`` carries what the parser needs to
#: name things in the user's terms (kernel file, buffers, async copies)
Event = dict[str, Any]

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
    #: the ``begin`` event of the instantiation it happened in (None outside any launch)
    launch: Event | None = None


def parse_stream(text: str) -> tuple[list[Message], list[Event]]:
    """Split the harness's stderr into Oclgrind messages and harness events (in order)."""
    messages: list[Message] = []
    events: list[Event] = []
    launch: Event | None = None
    current: Message | None = None
    mark = MARK + " "
    for raw in text.splitlines():
        if raw[:1] == "\t":  # most lines: a message's body
            if current is not None:
                current.lines.append(raw[1:])
            continue
        if raw.startswith(mark):
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
        if raw.startswith(" ") and current is not None:
            current.lines.append(raw)
            continue
        if not raw.strip():
            continue
        current = Message(raw.strip(), [], launch)
        messages.append(current)
    return messages, events


def _entity(text: str) -> WorkItem | None:
    m = _ENTITY.search(text)
    if m:
        v = [int(x) for x in m.groups()]
        return {"global": v[0:3], "local": v[3:6], "group": v[6:9]}
    m = _GROUP_ONLY.search(text)
    if m:
        return {"group": [int(x) for x in m.groups()]}
    return None


#: a place Oclgrind names in a message: (location, source line, instruction)
Place = tuple[Location | None, str | None, str | None]


def _locations(lines: list[str], kernel_file: str | None) -> list[Place]:
    """Every (location, source line, instruction) in a message body, in order."""
    found: list[Place] = []
    for i, line in enumerate(lines):
        m = _LOCATION.search(line.strip())
        if m:
            name = m.group(3)
            # Oclgrind names the program's source "input.cl"; the user knows it as the kernel file.
            # A kernel with includes is built inlined, its #line markers naming each file: Oclgrind
            # gives their base names (a header beside the kernel is found there)
            file = name
            if kernel_file and name in ("input.cl", "", Path(kernel_file).name):
                file = kernel_file
            elif kernel_file and (found_file := _named_file(name, Path(kernel_file))) is not None:
                file = found_file
            src = lines[i + 1].strip() if i + 1 < len(lines) else None
            instr = lines[i - 1].strip() if i > 0 else None
            found.append(({"file": file, "line": int(m.group(1)), "column": int(m.group(2))}, src, instr))
    return found


def _named_file(name: str, kernel_file: Path) -> str | None:
    """The file a location's ``name`` means: a header beside the kernel (Oclgrind gives base
    names), or a path clang made relative to the folder it ran in (an ancestor of the kernel's)."""
    if not name or Path(name).is_absolute():
        return None
    for folder in (kernel_file.parent, *kernel_file.parent.parents, Path.cwd()):
        if (folder / name).is_file():
            return str(folder / name)
    return None


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
        return "barrier-divergence", None
    if re.match(r"Invalid (read|write) of size", h):
        return "out-of-bounds", None
    if h.startswith("Index ("):
        return "array-index", None
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


def _buffer_argument(address: str, space: str | None, launch: Event | None) -> dict[str, int] | None:
    """Oclgrind addresses are (buffer number << 48) | offset; global buffers were created in
    argument order, so the number names the argument."""
    value = int(address, 16)
    buffer, offset = value >> 48, value & ((1 << 48) - 1)
    out = {"buffer": buffer, "offset": offset}
    if space in ("global", "constant") and launch and 1 <= buffer <= len(launch.get("buffers", [])):
        out["argument"] = launch["buffers"][buffer - 1]
    return out


def _user_access(acc: Access, launch: Event | None) -> Access:
    """The access with its source line read from the user's kernel file, and an async copy's
    modelled access (see :mod:`kernellab.verify.asynccopy`) named as the copy at its call."""
    loc = acc.location
    kernel_file = launch.get("kernel_file") if launch else None
    if loc is None:
        if acc.work_item and "global" not in acc.work_item and launch and launch.get("async_copies") is not None:
            acc.what = GROUP_COPY
        return acc
    if kernel_file and loc.get("file") == kernel_file:
        line = loc["line"]
        known = line in (launch or {}).get("async_copies", [])
        if known or loc.get("column", 0) >= SHADOW_COLUMN:
            call = "async_work_group_strided_copy" if "strided_copy" in terms.line_text(kernel_file, line) \
                else "async_work_group_copy"
            at = terms.column_of(kernel_file, line, call)
            if loc.get("column", 0) >= SHADOW_COLUMN or loc.get("column") == at:
                loc["column"] = at or 1
                acc.what = f"{call} at line {line}, in flight" if known else "an async copy in flight"
        text = terms.source_line(kernel_file, loc["line"])
        if text is not None:
            acc.source_line = text
    elif kernel_file and loc.get("file") and Path(loc["file"]).is_file():
        # a header's line: Oclgrind quotes the inlined text at that number, the user's file has it
        acc.source_line = terms.source_line(loc["file"], loc["line"]) or acc.source_line
    return acc


def _user_terms(finding: Finding, launch: Event | None) -> None:
    """``resource``/``index``/``variable``/``source`` for a finding with an address."""
    kernel_file = launch.get("kernel_file") if launch else None
    loc = finding.location
    if loc is not None and launch is not None:
        hosts = [str(launch["enqueued_at"]).rsplit(":", 1)[0]] if launch.get("enqueued_at") else []
        where = terms.user_location(kernel_file, loc.get("line"), hosts)
        if where is not None:
            finding.source = dict(where, text=terms.source_line(where["file"], where["line"]))
    if finding.address is None:
        return
    value = int(finding.address, 16)
    buffer, offset = value >> 48, value & ((1 << 48) - 1)
    if finding.address_space in ("global", "constant") and launch:
        info = launch.get("buffer_info") or []
        if 1 <= buffer <= len(info):
            b = info[buffer - 1]
            finding.resource = b.get("resource") or f"argument {b['argument']} ({b['name']})"
            finding.variable = b.get("name")
            size = b.get("element_size") or 1
            finding.index = offset // size
            finding.element_size = size
    elif finding.address_space == "local":
        names = terms.local_variables(kernel_file)
        user = [a for a in finding.accesses if a.location and not a.what] or finding.accesses
        for a in user:
            if a.location:
                name = terms.variable_at(kernel_file, a.location["line"], a.location.get("column"), names)
                if name:
                    finding.variable = name
                    if buffer:  # buffer 0: an address outside every allocation (null, or wrapped below 0)
                        finding.element_size = names[name] or 1
                        finding.index = offset // finding.element_size
                    break


def _fence_only(lines: list[str], places: list[tuple[Any, Any, Any]]) -> bool:
    """A "divergence" that is the same barrier, reached by every work-item with the same events,
    but with other fence flags: not divergence in GPUVerify's sense."""
    settings = [l.strip() for l in lines if l.strip().startswith("fence=")]
    return (len(places) == 2 and places[0][0] == places[1][0] and len(settings) == 2
            and settings[0].split(",")[1:] == settings[1].split(",")[1:]
            and not any(l.strip().startswith("events[") for l in lines))


#: what names the copy Oclgrind itself performs when the group reaches wait_group_events
GROUP_COPY = "async copy (performed by the work-group at wait_group_events)"


def _copy_with_itself(accesses: list[Access]) -> bool:
    """Both sides of a race are one async copy of one work-group: two of its modelled writers (same
    call line), or a modelled writer and the copy Oclgrind performs at the wait. They disagree only when the copy's
    source changed while it was in flight, and that write is reported as its own race with the copy."""
    if len(accesses) != 2 or not all(a.what for a in accesses):
        return False
    if accesses[0].work_item.get("group") != accesses[1].work_item.get("group"):
        return False  # one copy per work-group: copies of two groups racing is a defect
    if any(a.what == GROUP_COPY for a in accesses):
        return True
    lines = {a.location["line"] if a.location else None for a in accesses}
    return len(lines) == 1


def _static_index(header: str, location: Location | None) -> tuple[str, str, str | None]:
    """Kind, detail and array of ``Index (i) exceeds static array size (n)``: Oclgrind checks each
    index of an access into a declared array against its dimension. GPUVerify's meaning: an access
    outside the declared array is out-of-bounds, one past an inner dimension that stays inside the
    array (its flattened index in bounds) is not. An index past the first dimension always leaves
    the array; Oclgrind also says ``Invalid read/write`` only when it leaves the whole allocation,
    which an array inside a struct or another array does not."""
    m = re.match(r"Index \((-?\d+)\) exceeds static array size \((\d+)\)", header)
    if not m or not location:
        return "array-index", "", None
    found = terms.static_index_leaves_array(location.get("file"), location.get("line"), int(m.group(1)),
                                             int(m.group(2)))
    if found is None:
        return "array-index", "no declared array on the line has that dimension: where the access lands is unknown", None
    name, leaves = found
    if leaves:
        return "out-of-bounds", f"index {m.group(1)} past the first dimension of {name}: outside the declared array", name
    return "array-index", f"index {m.group(1)} past an inner dimension of {name} (GPUVerify checks the whole array)", name


def _event_bits_differ(lines: list[str]) -> bool:
    """The barrier before an async copy carries the copy's event argument in its fence flags (see
    :data:`kernellab.verify.asynccopy.EVENT_SHIFT`): flags that differ there mean different events."""
    fences = [int(m.group(1), 16) for m in (re.match(r"fence=0x([0-9a-fA-F]+)", l.strip()) for l in lines) if m]
    return len(fences) == 2 and (fences[0] >> EVENT_SHIFT) != (fences[1] >> EVENT_SHIFT)


def classify(msg: Message) -> Finding | None:
    """The finding a message reports, or None for messages that are not about the launch."""
    kind, race = _kind(msg.header)
    lines = msg.lines
    launch = msg.launch
    kernel_file = launch.get("kernel_file") if launch else None
    index = launch.get("index") if launch else None
    number = launch.get("file", 0) if launch else 0
    if kind == "api-error":
        return _api_error(lines, launch, index, number)
    if kind == "other" and not any(l.strip().startswith("Kernel:") for l in lines) \
            and not msg.header.startswith("OCLGRIND FATAL ERROR"):
        return None  # a line some other part of the process printed (e.g. the compiler)
    kernel = _field(lines, "Kernel:") or (launch.get("kernel") if launch else None)
    space = address = None
    m = _ADDRESS.search(msg.header)
    if m:
        space, address = m.group(1), m.group(2)
    places: list[tuple[Any, Any, Any]] = []
    if kind == "data-race":
        accesses, race = _race_accesses(lines, kernel_file, race)
    else:
        places = _locations(lines, kernel_file)
        accesses = [_access(kind, lines, places)]
    accesses = [_user_access(a, launch) for a in accesses]
    if kind == "data-race" and _copy_with_itself(accesses):
        return None
    detail = ""
    if kind == "barrier-divergence":
        kind, detail = _divergence(msg, places, accesses)
    variable = None
    if kind == "array-index":
        kind, detail, variable = _static_index(msg.header, accesses[0].location)
    finding = Finding(kind, msg.header, kernel, index, space, address, accesses, race, detail=detail, file=number,
                      variable=variable)
    if address is not None:
        arg = _buffer_argument(address, space, launch)
        if arg and "argument" in arg:
            finding.detail = (finding.detail + " " if finding.detail else "") + \
                f"argument {arg['argument']}, byte offset {arg['offset']}"
    _user_terms(finding, launch)
    return finding


def _api_error(lines: list[str], launch: Event | None, index: Any, number: Any) -> Finding | None:
    """An OpenCL call that failed; None for the calls whose failures are expected."""
    function = _field(lines, "Function:") or "?"
    if _API_FUNCTIONS_IGNORED.match(function):
        return None
    error = _field(lines, "Error:") or "?"
    extra = [l.strip() for l in lines if l.strip() and not l.strip().startswith(("Function:", "Error:"))]
    return Finding("api-error", f"{function} failed with {error}" + (f": {'; '.join(extra)}" if extra else ""),
                   launch.get("kernel") if launch else None, index, file=number)


def _race_accesses(lines: list[str], kernel_file: str | None,
                   race: dict[str, str] | None) -> tuple[list[Access], dict[str, str]]:
    """The two sides of a data race, and the race with its scope (within a work-group or across)."""
    accesses = []
    second = next((i for i, l in enumerate(lines) if l.strip().startswith("Second entity:")), len(lines))
    for part, name in ((lines[:second], "First entity:"), (lines[second:], "Second entity:")):
        found = _locations(part, kernel_file)
        loc, src, instr = found[0] if found else (None, None, None)
        accesses.append(Access(_entity(_field(part, name) or "") or {}, loc, src, instr))
    g1, g2 = (accesses[0].work_item.get("group"), accesses[1].work_item.get("group"))
    return accesses, dict(race or {}, scope="intra-group" if g1 is not None and g1 == g2 else "inter-group")


def _access(kind: str, lines: list[str], places: list[tuple[Any, Any, Any]]) -> Access:
    """The one access of a finding other than a race: its work-item (or work-group) and first place."""
    if kind == "barrier-divergence":
        group_id = re.search(r"\((\d+),(\d+),(\d+)\)", _field(lines, "Work-group:") or "")
        entity = _entity(_field(lines, "Work-item:") or "") or \
            ({"group": [int(x) for x in group_id.groups()]} if group_id else None)
    else:
        entity = _entity(_field(lines, "Entity:") or "")
    loc, src, instr = places[0] if places else (None, None, None)
    return Access(entity or {}, loc, src, instr)


def _divergence(msg: Message, places: list[tuple[Any, Any, Any]], accesses: list[Access]) -> tuple[str, str]:
    """A barrier divergence's kind and detail: work-items that passed an async copy different events,
    barriers that differ only in their fence flags, or a barrier some work-items did not reach."""
    lines = msg.lines
    kind, detail = "barrier-divergence", ""
    if _fence_only(lines, places):
        if _event_bits_differ(lines):
            detail = f"{(accesses[0].what or 'async copy').replace(', in flight', '')}: work-items passed it different events"
        else:
            kind = "barrier-flags"
            detail = "; ".join(l.strip() for l in lines if l.strip().startswith("fence="))
    if kind == "barrier-divergence" and not detail:
        detail = next((l.strip() for l in lines if l.strip().startswith("Only ")), "")
        if msg.header.startswith("Work-group divergence detected (async copy)"):
            detail = "async copy: " + (detail or "work-items passed it different arguments")
        elif accesses[0].what:
            detail = f"{accesses[0].what.replace(', in flight', '')} not reached by every work-item of the group"
    return kind, detail


_ENTITY_LINES = re.compile(r"^\s*(?:First entity|Second entity|Entity|Work-item):.*$", re.M)
_ENTITIES = re.compile(r"(?:First entity|Second entity|Entity|Work-item):\s*(?:Global\((\d+),(\d+),(\d+)\)\s+"
                       r"Local\((\d+),(\d+),(\d+)\)\s+)?Group\((\d+),(\d+),(\d+)\)")


def _items(body: str) -> list[WorkItem]:
    items = []
    for g in _ENTITIES.findall(body):
        if g[0]:
            items.append({"global": [int(g[0]), int(g[1]), int(g[2])], "local": [int(g[3]), int(g[4]), int(g[5])],
                          "group": [int(g[6]), int(g[7]), int(g[8])]})
        else:
            items.append({"group": [int(g[6]), int(g[7]), int(g[8])]})
    return items


def _scope(items: list[WorkItem]) -> str:
    g1, g2 = (items + [{}, {}])[0].get("group"), (items + [{}, {}])[1].get("group")
    return "intra-group" if g1 is not None and g1 == g2 else "inter-group"


def _like(proto: Finding, msg: Message, body: str) -> Finding:
    """A finding of the same shape as ``proto`` with ``msg``'s own work-items and address."""
    items = _items(body)
    accesses = [Access(item or a.work_item, a.location, a.source_line, a.instruction, a.what)
                for item, a in zip(items + [{}] * len(proto.accesses), proto.accesses)]
    f = Finding(proto.kind, msg.header, proto.kernel, proto.instantiation, proto.address_space, proto.address,
                accesses, dict(proto.race) if proto.race else None, detail=proto.detail, severity=proto.severity,
                resource=proto.resource, index=proto.index, variable=proto.variable, source=proto.source,
                file=proto.file, element_size=proto.element_size)
    if f.race is not None:
        f.race["scope"] = _scope([a.work_item for a in accesses])
    m = _ADDRESS.search(msg.header)
    if m and proto.address:
        f.address = m.group(2)
        delta = int(f.address, 16) - int(proto.address, 16)
        if proto.index is not None and proto.element_size:
            f.index = (int(f.address, 16) & ((1 << 48) - 1)) // proto.element_size
        if delta and "byte offset" in proto.detail:
            f.detail = _OFFSET.sub(lambda d: f"byte offset {int(d.group(1)) + delta}", proto.detail)
    return f


_OFFSET = re.compile(r"byte offset (\d+)")


def summarize(messages: Iterable[Message]) -> list[Finding]:
    """``group`` of every message's :func:`classify`, without a finding object per report: each shape of
    message (same launch, headline and lines but for work-items and address) is classified once,
    and only the example each group shows is made into a finding."""
    protos: dict[tuple, Finding | None] = {}
    groups: dict[tuple, list[tuple[dict[str, Any], Finding, Message | None, str]]] = {}
    keys: dict[tuple, tuple] = {}  # a group's key by shape and race scope: the same for every report
    for m in messages:
        body = "\n".join(m.lines)
        sig = (id(m.launch), _NUMBERS.sub("#", m.header), _ENTITY_LINES.sub("", body))
        if sig not in protos:
            protos[sig] = proto = classify(m)
            if proto is None:
                continue
            example = {"work_items": [a.work_item for a in proto.accesses], "address": proto.address}
            groups.setdefault(proto.key(), []).append((example, proto, None, body))
            continue
        proto = protos[sig]
        if proto is None:
            continue
        items = _items(body) or [a.work_item for a in proto.accesses]
        items = [i or a.work_item for i, a in zip(items + [{}] * len(proto.accesses), proto.accesses)]
        address = _ADDRESS.search(m.header)
        example = {"work_items": items, "address": address.group(2) if address else proto.address}
        scope = _scope(items) if proto.race else None
        key = keys.get((sig, scope))
        if key is None:
            key = keys[(sig, scope)] = proto.key(dict(proto.race, scope=scope or "")) if proto.race else proto.key()
        groups.setdefault(key, []).append((example, proto, m, body))
    out = []
    for entries in groups.values():
        entries.sort(key=lambda e: _example_key(e[0]))  # stable: the first of equals stays first
        best = entries[0]
        rep = best[1] if best[2] is None else _like(best[1], best[2], best[3])
        rep.count = len(entries)
        rep.examples = _distinct(e[0] for e in entries)
        out.append(rep)
    return ordered(_named_copies_only(out))


def _user_side(f: Finding) -> tuple | None:
    """A race with an async copy: (launch, the user's access place); None for other findings."""
    if f.kind != "data-race" or not any(a.what for a in f.accesses):
        return None
    user = [a.location for a in f.accesses if not a.what and a.location]
    return (f.file, f.instantiation, user[0]["line"], user[0]["column"]) if user else None


def _named_copies_only(findings: list[Finding]) -> list[Finding]:
    """Drop a race between a user's access and the copy Oclgrind performs at the wait (no source
    place) when the same access also races with a modelled copy, which names the copy's call."""
    named = {_user_side(f) for f in findings
             if _user_side(f) and not any(a.what == GROUP_COPY for a in f.accesses)}
    return [f for f in findings
            if not (any(a.what == GROUP_COPY for a in f.accesses) and _user_side(f) in named)]


def _distinct(examples: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first :data:`MAX_EXAMPLES` examples with different sets of work-items."""
    seen: set[frozenset] = set()
    unique = []
    for ex in examples:
        items = frozenset(tuple(sorted((name, tuple(v)) for name, v in w.items())) for w in ex["work_items"])
        if items not in seen:
            seen.add(items)
            unique.append(ex)
            if len(unique) == MAX_EXAMPLES:
                break
    return unique


MAX_EXAMPLES = 3


def _example_key(example: dict[str, Any]) -> tuple:
    return tuple(tuple(w.get("group", []) + w.get("local", [])) for w in example["work_items"]), example["address"] or ""


def group(findings: Iterable[Finding]) -> list[Finding]:
    """Merge findings that are the same defect, with a count and the first few examples in
    work-item order (Oclgrind runs work-groups on several threads, so its order varies); an
    example is a set of work-items, never shown twice."""
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
        f.examples = _distinct(sorted(every[k], key=_example_key))
    return ordered(list(merged.values()))
