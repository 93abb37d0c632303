"""The readable form of a verify result: one paragraph per defect, pointing at source lines."""
from __future__ import annotations

from kernellab.verify.findings import Finding
from kernellab.verify.run import VerifyResult


def _where(loc: dict | None) -> str:
    if not loc:
        return "(no source location)"
    return f"{loc['file']}:{loc['line']}:{loc['column']}"


def _item(w: dict) -> str:
    if "global" in w:
        return f"global {tuple(w['global'])} local {tuple(w['local'])} group {tuple(w['group'])}"
    if "group" in w:
        return f"work-group {tuple(w['group'])}"
    return "(unknown work-item)"


def _title(f: Finding) -> str:
    parts = [f.kind]
    if f.race:
        parts.append(f"({f.race['type']}, {f.race.get('scope', '?')})")
    if f.address_space:
        parts.append(f"on {f.address_space} memory")
    if f.kernel:
        parts.append(f"in kernel {f.kernel}")
    if f.instantiation:
        parts.append(f"(instantiation {f.instantiation})")
    times = f" — {f.count} reports" if f.count > 1 else ""
    return " ".join(parts) + times


def render_finding(f: Finding, enqueued_at: str | None = None) -> str:
    lines = [_title(f)]
    if enqueued_at:
        lines.append(f"  launch enqueued at {enqueued_at}")
    if f.accesses and any(a.location for a in f.accesses):
        for n, a in enumerate(f.accesses):
            if a.location is None:
                continue
            lead = "at" if n == 0 else "and"
            lines.append(f"  {lead} {_where(a.location)}")
            if a.source_line:
                lines.append(f"      {a.source_line}")
    lines.append(f"  {f.message}" + (f" ({f.detail})" if f.detail else ""))
    for ex in f.examples:
        items = " vs ".join(_item(w) for w in ex["work_items"] if w)
        if items:
            lines.append(f"  e.g. {items}")
    if f.count > len(f.examples) and f.examples:
        lines.append(f"  ... and {f.count - len(f.examples)} more like it")
    return "\n".join(lines)


def render(result: VerifyResult) -> str:
    out = []
    for launch in result.launches:
        for note in launch.get("filled", []):
            out.append(f"note: {note}")
    if not result.findings:
        out.append(f"{result.file}: verified — Oclgrind found no data race, barrier divergence, out-of-bounds "
                   "access, uninitialized read or API error in "
                   f"{len(result.launches)} launch{'es' if len(result.launches) != 1 else ''}")
        return "\n".join(out)
    counts: dict[str, int] = {}
    for f in result.findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    enqueued = {l.get("index"): l.get("enqueued_at") for l in result.launches}
    for f in result.findings:
        out.append(render_finding(f, enqueued.get(f.instantiation)))
        out.append("")
    summary = ", ".join(f"{n} {k}" for k, n in counts.items())
    out.append(f"{result.file}: {len(result.findings)} defect{'s' if len(result.findings) != 1 else ''} "
               f"({summary}) from {result.raw_messages} Oclgrind reports")
    if result.truncated:
        out.append("warning: Oclgrind stopped reporting after 10000 errors; counts are lower bounds")
    return "\n".join(out)
