"""The readable form of a verify result, whichever checker ran: one paragraph per defect,
pointing at source lines, then the verdict in words naming the checker (from the result's
``checker``)."""
from __future__ import annotations

from kernellab.textsafe import escape
from kernellab.verify.harness import MAX_REPORTS
from kernellab.verify.model import Checker, Finding, Location, VerifyResult, WorkItem

#: each checker as the verdict names it, and its reports (the raw messages before grouping)
_CHECKERS: dict[Checker, tuple[str, str]] = {
    "oclgrind": ("Oclgrind", "Oclgrind reports"),
    "spirv": ("the SPIR-V checker", "reports of the SPIR-V checker"),
    "proof": ("the prover (verify --prove)", "counterexamples"),
}


def _where(loc: Location | None) -> str:
    if not loc:
        return "(no source location)"
    return f"{loc['file']}:{loc['line']}:{loc['column']}"


def _item(w: WorkItem) -> str:
    if "global" in w:
        return f"global {tuple(w['global'])} local {tuple(w['local'])} group {tuple(w['group'])}"
    if "group" in w:
        return f"work-group {tuple(w['group'])}"
    return "(unknown work-item)"


def _title(f: Finding) -> str:
    parts = [f.kind if f.severity == "defect" else f"warning: {f.kind}"]
    if f.race:
        parts.append(f"({f.race['type']}, {f.race.get('scope', '?')})")
    if f.variable and f.index is not None:
        parts.append(f"on {f.resource or f.variable}[{f.index}]" if f.resource else
                     f"on {f.address_space or ''} {f.variable}[{f.index}]".replace("  ", " "))
    elif f.address_space:
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
            lines.append(f"  {lead} {_where(a.location)}" + (f" ({a.what})" if a.what else ""))
            if a.source_line:
                lines.append(f"      {a.source_line}")
    if f.source:
        lines.append(f"  written at {f.source['file']}:{f.source['line']}")
    lines.append(f"  {f.message}" + (f" ({f.detail})" if f.detail else ""))
    for ex in f.examples:
        items = " vs ".join(_item(w) for w in ex["work_items"] if w)
        if items:
            # a proof's counterexample with sizes of its own (verify --prove --prove-sizes)
            at = (f" with local size {tuple(ex['local_size'])} and {tuple(ex['num_groups'])} work-groups"
                  if "local_size" in ex and "num_groups" in ex else "")
            lines.append(f"  e.g. {items}{at}")
    if f.count > len(f.examples) and f.examples:
        lines.append(f"  ... and {f.count - len(f.examples)} more like it")
    return "\n".join(lines)


def render(result: VerifyResult) -> str:
    """The report as a person reads it; names, paths, source lines and printf output come from
    the workload, so control and direction characters are escaped (kernellab.textsafe)."""
    return escape(_render(result))


def _render(result: VerifyResult) -> str:
    out = _launch_notes(result)
    enqueued = {l.index: l.enqueued_at for l in result.launches}
    for f in result.findings:
        out.append(render_finding(f, enqueued.get(f.instantiation)))
        out.append("")
    for l in result.launches:
        if not l.ran:
            out.append(f"note: launch {l.index} ({l.kernel}) did not run, so nothing in it was checked: {l.error}")
    if len(result.launches) > 1:
        for l in result.launches:
            out.append(f"launch {l.index} ({l.kernel}): {result.launch_verdict(l.index)}")
    out += _verdict(result)
    return "\n".join(out)


def _launch_notes(result: VerifyResult) -> list[str]:
    """What verify filled in for the launches, then each launch's printf output."""
    out = [f"note: {note}" for launch in result.launches for note in launch.filled]
    for launch in result.launches:
        if launch.output:
            out.append(f"printf output of launch {launch.index} ({launch.kernel}):")
            out += [f"  | {line}" for line in launch.output.rstrip("\n").split("\n")]
    return out


def _by_kind(findings: list[Finding]) -> str:
    """``2 data-race, 1 out-of-bounds``: how many findings of each kind, in order of first appearance."""
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    return ", ".join(f"{c} {k}" for k, c in counts.items())


def _verdict(result: VerifyResult) -> list[str]:
    """The closing line (not finished, verified, or the defects), and the truncation warning."""
    checker, reports = _CHECKERS[result.checker]
    n = len(result.launches)
    warned = ""
    if result.warnings:
        warned = f"; {len(result.warnings)} warning{'s' if len(result.warnings) != 1 else ''} (" + \
            _by_kind(result.warnings) + "; --check KIND makes them defects)"
    if not result.defects and result.unfinished:
        return [f"{result.file}: not finished — {len(result.unfinished)} of {n} launch{'es' if n != 1 else ''} "
                f"stopped at the time limit; {checker} found no defect in what ran{warned}"]
    out = [f"launch {l.index} ({l.kernel}): {l.proof} — {l.reason}" for l in result.launches
           if l.proof in ("unknown", "possible")]
    if not result.defects and result.checker == "proof":
        verdict = {"verified": "proven — no data race, barrier divergence, out-of-bounds access or failing "
                               "assertion for any input", "possible": "possible defects (not reproduced by a launch)",
                   "unknown": "unknown — not proven"}[result.verdict]
        return [*out, f"{result.file}: {verdict} in {n} launch{'es' if n != 1 else ''}{warned}"]
    if not result.defects:
        return [*out, f"{result.file}: verified — {checker} found no data race, barrier divergence or "
                      f"out-of-bounds access in {n} launch{'es' if n != 1 else ''}{warned}"]
    out.append(f"{result.file}: {len(result.defects)} defect{'s' if len(result.defects) != 1 else ''} "
               f"({_by_kind(result.defects)}) from {result.raw_messages} {reports}{warned}")
    if result.truncated:
        out.append(f"warning: Oclgrind stopped reporting after {MAX_REPORTS} reports in a launch; counts are lower "
                   "bounds and further findings of that launch may be hidden")
    return out
