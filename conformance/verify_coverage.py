"""How much of real compute shaders the SPIR-V checker checks: ``kernellab verify`` over every
compute-only AmberScript file of Amber (``tests/cases``) and the Vulkan CTS
(``external/vulkancts/data/vulkan/amber``) — the selection of ``amber_corpus.py`` — and over
scenario folders captured from Arm's scenario-runner suite, each pipeline classified as checked
(verified / defects / warnings), refused by the checker (counted by construct), refused before
the checker (the AmberScript reader or the scenario loader), time limit or internal error.

    .venv/bin/python conformance/verify_coverage.py --amber /work/ext/amber \\
        --cts /work/ext/vk-gl-cts --arm /tmp/arm-scenarios --out /tmp/verify-coverage

``--arm`` names a folder of scenario folders (each with one scenario JSON that has a
``dispatch_compute``); CONFORMANCE.md says how they are captured from Arm's suite. One
``kernellab verify --json`` process per file, ``--jobs`` (at most 2) at once, each stopped after
``--timeout`` seconds; with ``--vulkan``, so that OpenCL C shaders (Amber's OPENCL-C) are checked as
Vulkan runs them (clspv), by the SPIR-V checker.
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conformance.amber_corpus import compute_only, corpus_files, folder_of  # noqa: E402
from conformance.common import DEFAULT_KERNELLAB, md_table, write_atomic  # noqa: E402

_PIPELINE = re.compile(r"^\s*PIPELINE\s+compute\b", re.MULTILINE)
#: the checker's refusals say "... is not supported by the SPIR-V checker"; the reader's name the statement
#: (a few name what a scenario cannot give instead: "... not supported: a scenario binds ...")
_CHECKER_REFUSAL = re.compile(r"by the SPIR-V checker|not supported: a scenario")
_CONSTRUCT = (
    ("binding", re.compile(r"(an array of buffers)|(bound twice with different ranges)")),
    ("image", re.compile(r"image \S+: (?:a )?(multisampled image|3D image with mip levels|format \w+)"
                         r"|(sampled image without its sampler)|(texel buffers)")),
    ("capability", re.compile(r"\bOpCapability (\w+)")),
    ("extended instruction", re.compile(r"\b(GLSL\.std\.450 \w+)")),
    ("type", re.compile(r"\b(OpType\w+)")),
    ("storage class", re.compile(r"\bstorage class (\w+)|\b(\w+) variable")),
    ("instruction", re.compile(r"\b(Op\w+)")),
)

KINDS = ("verified", "defects", "warnings", "refused-checker", "refused-reader", "timeout", "internal-error")


@dataclass
class Outcome:
    kind: str
    detail: str
    seconds: float
    pipelines: int
    findings: list[dict[str, object]]
    #: an AmberScript file's EXPECTs against the checker's simulated buffers (verify's "reference")
    reference: dict[str, object] | None = None


def pipelines_in(path: Path) -> int:
    """The compute pipelines a file declares: AmberScript's PIPELINE statements, or a scenario's
    distinct dispatched shaders."""
    text = path.read_text(errors="replace")
    if path.suffix == ".amber":
        return max(1, len(_PIPELINE.findall(text)))
    try:
        doc = json.loads(text)
    except ValueError:
        return 1
    shaders = {c["dispatch_compute"].get("shader_ref") for c in doc.get("commands", [])
               if isinstance(c, dict) and isinstance(c.get("dispatch_compute"), dict)}
    return max(1, len(shaders))


def construct_of(message: str) -> str:
    """The refused construct's category and name, e.g. ``capability Int64Atomics``."""
    text = message.splitlines()[0] if message else ""
    text = re.sub(r"^.*?: (line \d+(, column \d+)?|word \d+): ", "", text)
    for category, rx in _CONSTRUCT:
        m = rx.search(text)
        if m is not None:
            return f"{category} {next(g for g in m.groups() if g)}"
    return "other: " + re.sub(r"'[^']*'|\"[^\"]*\"|/\S+", "…", text)[:90]


def classify(rc: int | None, stdout: str, stderr: str, seconds: float, pipelines: int) -> Outcome:
    if rc is None:
        return Outcome("timeout", "", seconds, pipelines, [])
    try:
        doc = json.loads(stdout) if stdout.strip() else None
    except ValueError:
        doc = None
    if isinstance(doc, dict) and "verdict" in doc:
        findings = [f for f in doc.get("findings", []) if isinstance(f, dict)]
        verdict = str(doc["verdict"])
        if verdict == "verified":
            kind = "warnings" if findings else "verified"
        elif verdict in ("defects", "defect", "failed"):
            kind = "defects"
        else:
            kind = "defects" if rc == 1 else "internal-error"
        reference = doc.get("reference") if isinstance(doc.get("reference"), dict) else None
        return Outcome(kind, verdict, seconds, pipelines, findings, reference)
    lines = stderr.strip().splitlines() or [""]
    # a tool's failure ends with its repro line: the first line says what failed
    message = lines[0] if lines[-1].startswith("repro:") else lines[-1]
    if "Traceback" in stderr or "attach it to a bug report" in stderr or rc not in (0, 1, 2):
        return Outcome("internal-error", message, seconds, pipelines, [])
    if _CHECKER_REFUSAL.search(message):
        return Outcome("refused-checker", message, seconds, pipelines, [])
    return Outcome("refused-reader", message, seconds, pipelines, [])


def verify_one(path: Path, kernellab: Path, timeout: int) -> Outcome:
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([str(kernellab), "verify", "--vulkan", "--json", str(path)], capture_output=True, text=True,
                              timeout=timeout, cwd=path.parent)
    except subprocess.TimeoutExpired:
        return classify(None, "", "", time.perf_counter() - t0, pipelines_in(path))
    return classify(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - t0, pipelines_in(path))


def arm_scenarios(root: Path) -> list[Path]:
    """One scenario JSON with a dispatch_compute per captured folder."""
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        origin = folder / ".origin"  # arm-capture-wrapper.sh names the scenario the test ran
        named = [folder / origin.read_text().split()[0]] if origin.is_file() and origin.read_text().strip() else []
        for f in named or sorted(folder.glob("*.json")):
            if "dispatch_compute" in f.read_text(errors="replace"):
                found.append(f)
                break
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def report(outcomes: dict[Path, tuple[str, Outcome]]) -> str:
    per: dict[str, Counter[str]] = defaultdict(Counter)
    refusals: Counter[str] = Counter()
    reader: Counter[str] = Counter()
    for corpus, o in outcomes.values():
        per[corpus][o.kind] += o.pipelines
        per[corpus]["files"] += 1
        if o.kind == "refused-checker":
            refusals[construct_of(o.detail)] += o.pipelines
        if o.kind == "refused-reader":
            reader[re.sub(r"'[^']*'|/\S+", "…", re.sub(r"^.*?: line \d+(, column \d+)?: ", "", o.detail))[:100]] \
                += o.pipelines
    rows = []
    for corpus, c in sorted(per.items()):
        total = sum(c[k] for k in KINDS)
        checked = c["verified"] + c["defects"] + c["warnings"]
        beyond_reader = total - c["refused-reader"]
        rows.append([corpus, c["files"], total, *(c[k] for k in KINDS),
                     f"{100 * checked / total:.0f}%" if total else "-",
                     f"{100 * checked / beyond_reader:.0f}%" if beyond_reader else "-"])
    table = md_table(["corpus", "files", "pipelines", *KINDS, "checked", "checked of those read"], rows)
    per_pipe = [o.seconds / o.pipelines for _, o in outcomes.values() if o.kind in ("verified", "defects", "warnings")]
    total_s = sum(o.seconds for _, o in outcomes.values())
    timing = (f"time per checked pipeline (wall, one process per file, start-up included): median "
              f"{statistics.median(per_pipe) if per_pipe else 0:.2f} s, p95 {percentile(per_pipe, 0.95):.2f} s; "
              f"total {total_s:.0f} s of process time over {len(outcomes)} files")
    findings = [[str(p), o.kind, "; ".join(f"{f.get('kind')}: {str(f.get('message', ''))[:80]}"
                                           for f in o.findings[:2])]
                for p, (_, o) in sorted(outcomes.items()) if o.kind in ("defects", "warnings")]
    errors = [[str(p), o.kind, o.detail[:140]] for p, (_, o) in sorted(outcomes.items())
              if o.kind in ("internal-error", "timeout")]
    parts = [table, timing, md_table(["refused by the checker: construct", "pipelines"], refusals.most_common()),
             md_table(["refused before the checker", "pipelines"], reader.most_common()), reference_summary(outcomes)]
    if findings:
        parts.append(md_table(["file", "verdict", "first findings"], findings))
    if errors:
        parts.append(md_table(["file", "verdict", "detail"], errors))
    return "\n\n".join(parts)


def reference_summary(outcomes: dict[Path, tuple[str, Outcome]]) -> str:
    """The checked AmberScript files' EXPECTs on the checker's simulation (a second device):
    how many files hold them all, and each file where one does not, with its first failure."""
    refs = {p: o.reference for p, (_, o) in outcomes.items() if o.reference is not None}
    holding = sum(1 for r in refs.values() if r.get("hold") == r.get("expects"))
    expects = sum(int(r.get("expects", 0)) for r in refs.values())  # type: ignore[call-overload]
    held = sum(int(r.get("hold", 0)) for r in refs.values())  # type: ignore[call-overload]
    line = (f"reference (the EXPECTs on the checker's simulated buffers): {holding} of {len(refs)} files hold "
            f"every EXPECT ({held} of {expects} EXPECTs)")
    failing = [[str(p), f"{r.get('hold')}/{r.get('expects')}",
                str((r.get("failures") or [""])[0]).splitlines()[0][:120]]  # type: ignore[index]
               for p, r in sorted(refs.items()) if r.get("hold") != r.get("expects")]
    return line + ("\n\n" + md_table(["file", "EXPECTs held", "first failing EXPECT"], failing) if failing else "")


def reread(results: Path) -> dict[Path, tuple[str, Outcome]]:
    """A results.json's outcomes, the refusals classified again from their message."""
    outcomes = {}
    for r in json.loads(results.read_text()):
        kind = r["kind"]
        if kind.startswith("refused-"):
            kind = "refused-checker" if _CHECKER_REFUSAL.search(r["detail"]) else "refused-reader"
            kind = "internal-error" if "attach it to a bug report" in r["detail"] else kind
        outcomes[Path(r["file"])] = (r["corpus"], Outcome(kind, r["detail"], r["seconds"], r["pipelines"],
                                                          r["findings"], r.get("reference")))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--amber", type=Path, help="a clone of google/amber")
    p.add_argument("--cts", type=Path, help="a clone of KhronosGroup/VK-GL-CTS")
    p.add_argument("--arm", type=Path, help="a folder of scenario folders captured from Arm's suite")
    p.add_argument("--out", type=Path, required=True, help="folder for results.json and table.md")
    p.add_argument("--kernellab", type=Path, default=DEFAULT_KERNELLAB)
    p.add_argument("--jobs", type=int, default=2, choices=(1, 2))
    p.add_argument("--timeout", type=int, default=120, help="seconds per file")
    p.add_argument("--only", help="only files whose path contains this")
    p.add_argument("--from", dest="again", type=Path, help="tabulate a results.json again instead of running")
    args = p.parse_args(argv)
    if args.again is not None:
        print(report(reread(args.again)))
        return 0
    amber = args.amber.resolve() if args.amber else None
    cts = args.cts.resolve() if args.cts else None
    work: list[tuple[Path, str]] = []
    for f in corpus_files(amber, cts):
        if compute_only(f):
            work.append((f, folder_of(f, amber, cts).split("/")[0]))
    if args.arm is not None:
        work += [(f, "arm-scenario-runner") for f in arm_scenarios(args.arm.resolve())]
    if args.only:
        work = [(f, c) for f, c in work if args.only in str(f)]
    t0 = time.perf_counter()
    with ThreadPoolExecutor(args.jobs) as pool:
        done = list(pool.map(lambda w: verify_one(w[0], args.kernellab, args.timeout), work))
    wall = time.perf_counter() - t0
    outcomes = {f: (c, o) for (f, c), o in zip(work, done)}
    text = report(outcomes) + f"\n\nwall time {wall:.0f} s with --jobs {args.jobs}\n"
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "results.json", json.dumps(
        [{"file": str(f), "corpus": c, "kind": o.kind, "detail": o.detail, "seconds": round(o.seconds, 3),
          "pipelines": o.pipelines, "findings": o.findings, "reference": o.reference}
         for f, (c, o) in outcomes.items()], indent=1))
    write_atomic(args.out / "table.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
