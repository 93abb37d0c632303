"""GPUVerify's real-world benchmarks through ``kernellab verify --prove``.

mc-imperial/GPUVerifyBenchmarks holds the OpenCL and CUDA kernels of GPUVerify's evaluations, each
file headed for GPUVerify's tester ``gvtester.py`` as the test suite is: ``//pass`` and a line of
options (``//--local_size=[64] --num_groups=[128]``, or ``--global_size``). ``gvtester.py`` runs the
files its ``--kernel-regex`` matches (by default ``kernel.cl``/``kernel.cu``; the PolyBench
directories hold ``kernelN.cl``): a file whose name starts with ``_`` is left out of the
evaluation and is counted apart here, as are the CUDA kernels (kernellab proves OpenCL C).

Each OpenCL kernel file becomes a kernel-instantiation file at the set's root (``*.kl-prove.json``:
one launch per kernel of the file, at the header's sizes, every argument unconstrained, as
GPUVerify reads them), proven by ``kernellab verify --prove --json`` in its own process; the
prove path replays each counterexample on the dynamic ``verify`` (Oclgrind) and calls it a
``defect`` only when the replay shows a finding of the same kind (else ``possible``).

    KERNELLAB_TOOL_TIMEOUT=20 python conformance/gpuverify_benchmarks.py --jobs 2 --timeout 10 \\
        --log /tmp/bench.jsonl --json /tmp/bench.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make ``conformance`` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from conformance import common  # noqa: E402
from conformance.gpuverify_prove import _logged, _reason_class, sizes  # noqa: E402
from conformance.gpuverify_suite import option_values, read_test  # noqa: E402

DEFAULT_SUITE = Path("/work/ext/gpuverify-benchmarks")
#: the folders of the benchmark set and the suite each belongs to
SUITES = {"AMD_SDK": "AMD SDK 2.6", "parboil": "Parboil 2.5", "rodinia_2.4": "Rodinia 2.4", "shoc": "SHOC",
          "polybench": "PolyBench/PPCG", "CUDA50": "CUDA", "CUDA20": "CUDA", "C++AMP": "CUDA",
          "gpgpu-sim_ispass2009": "CUDA"}
#: what gvtester.py runs: its default ``kernel.cl``, and PolyBench's numbered ``kernelN.cl``
_EVALUATED = re.compile(r"^kernel\d*\.(cl|cu)$")
INSTANTIATION = ".kl-prove.json"


@dataclass
class Benchmark:
    """One kernel file of the set: its id (path in the set), suite, and whether it is proven here."""
    id: str
    path: Path
    suite: str
    status: str  # "run", "cuda", "disabled" (a ``_`` file gvtester does not run)
    options: list[str]
    root: Path


def find_benchmarks(root: Path) -> list[Benchmark]:
    """Every ``.cl`` and ``.cu`` file of the set, in path order, with what is done with it."""
    out = []
    for path in sorted(p for p in root.rglob("*") if p.suffix in (".cl", ".cu") and p.is_file()):
        rel = path.relative_to(root)
        suite = SUITES.get(rel.parts[0], rel.parts[0])
        if path.suffix == ".cu":
            status = "cuda"
        elif _EVALUATED.match(path.name):
            status = "run"
        else:
            status = "disabled"
        options: list[str] = []
        if status == "run":
            try:
                options = read_test(path, root).options
            except ValueError:  # no gvtester header: no sizes, reported as a manifest error
                pass
        out.append(Benchmark(str(rel), path, suite, status, options, root))
    return out


def sample(benchmarks: list[Benchmark], every: int) -> list[Benchmark]:
    """Every ``every``-th benchmark to run of each suite, in path order (the first of each kept)."""
    seen: Counter[str] = Counter()
    out = []
    for b in benchmarks:
        if b.status != "run":
            continue
        if seen[b.suite] % every == 0:
            out.append(b)
        seen[b.suite] += 1
    return out


def _argument(p: common.Param) -> dict[str, Any]:
    """A kernel argument as GPUVerify reads one without ``--kernel-args``: unconstrained."""
    if p.kind in ("buffer", "local"):
        return {"type": "array", "address_space": p.address_space if p.kind == "buffer" else "local"}
    return {"type": p.kind}


def preprocessed(path: Path) -> str:
    """The kernel file after the C preprocessor: several benchmarks pick their kernel out of a
    shared header with ``#define``/``#include`` (AMD SDK's ``BoxFilter``). The raw text where
    ``cpp`` fails (the signature is then read as written)."""
    text = path.read_text(errors="replace")
    try:
        p = subprocess.run(["cpp", "-P", "-w", "-x", "c", "-D__OPENCL_C_VERSION__=120", "-", "-o", "-"],
                           input=text, capture_output=True, text=True, timeout=30, cwd=path.parent)
    except (OSError, subprocess.TimeoutExpired):
        return text
    return p.stdout if p.returncode == 0 and p.stdout.strip() else text


def instantiation(b: Benchmark) -> list[dict[str, Any]]:
    """The kernel-instantiation document for a benchmark: a launch per kernel of its file.

    Raises KeyError/ValueError when the header has no usable sizes or the source no kernel."""
    local, groups = sizes(option_values(b.options))
    glob = [l * g for l, g in zip(local, groups)]
    source = preprocessed(b.path)
    names = common.kernel_names(source)
    if not names:
        raise ValueError("no kernel in the source")
    docs = []
    for name in names:
        _, params = common.kernel_params(source, name)
        docs.append({"language": "OpenCL", "kernel_file": b.id, "entry_point": name,
                     "global_size": glob, "local_size": list(local),
                     "kernel_arguments": [_argument(p) for p in params]})
    return docs


def prove(b: Benchmark, timeout: float, kernellab: Path) -> dict[str, Any]:
    """``verify --prove`` on one benchmark in a child process under a watchdog."""
    start = time.monotonic()
    try:
        doc = instantiation(b)
    except (KeyError, ValueError) as exc:
        return {"error": f"manifest: {exc}", "wall": 0.0}
    # at the set's root: a kernel's ``#include "../common.h"`` must stay inside the workload's folder
    target = b.root / (re.sub(r"[^A-Za-z0-9_.-]", "__", b.id) + INSTANTIATION)
    common.write_json(target, doc)
    cmd = [str(kernellab), "verify", "--prove", "--timeout", str(timeout), "--json", str(target)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout * len(doc) * 3 + 240,
                           env=os.environ)
    except subprocess.TimeoutExpired:
        return {"error": "watchdog time limit", "wall": round(time.monotonic() - start, 3)}
    r = digest(p.returncode, p.stdout, p.stderr)
    r["wall"] = round(time.monotonic() - start, 3)
    return r


def digest(status: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The launches' verdicts of ``verify --prove --json`` output (or why there are none)."""
    try:
        doc = json.loads(stdout)
    except ValueError:
        if "spirv-val" in stderr:  # the tool's repro line names the step that failed
            return {"error": f"exit {status}: compile: clspv's SPIR-V fails spirv-val"}
        if "clspv_child" in stderr:
            return {"error": f"exit {status}: compile: clspv fails at -O0"}
        last = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {status}, no output"
        return {"error": f"exit {status}: {last[:200]}"}
    launches = []
    for la in doc.get("launches", []):
        launches.append({"kernel": la.get("entry_point") or la.get("kernel"), "verdict": la.get("proof"),
                         "reason": la.get("reason"), "seconds": la.get("seconds")})
    findings = [{"kind": f.get("kind"), "kernel": f.get("kernel"), "severity": f.get("severity"),
                 "detail": f.get("detail"), "location": f.get("location"), "message": f.get("message")}
                for f in doc.get("findings", [])]
    return {"status": status, "launches": launches, "findings": findings}


def outcome(r: dict[str, Any]) -> str:
    """One benchmark's verdict: the worst of its launches (defect > possible > unknown > proven)."""
    if "error" in r:
        return "error"
    verdicts = {la["verdict"] for la in r["launches"]}
    for v in ("defect", "possible", "unknown", "proven"):
        if v in verdicts:
            return v
    return "error"


def run_all(benchmarks: list[Benchmark], a: argparse.Namespace) -> list[dict[str, Any]]:
    """Every benchmark's result, ``a.jobs`` at a time; each appended to ``a.log`` as it ends."""
    done = _logged(a.log)

    def one(b: Benchmark) -> dict[str, Any]:
        if b.id in done:
            return done[b.id]
        r = prove(b, a.timeout, a.kernellab)
        if a.log:
            with a.log.open("a") as fh:
                fh.write(json.dumps({"path": b.id, "result": r}) + "\n")
        return r

    with ThreadPoolExecutor(max(1, a.jobs)) as pool:
        return list(pool.map(one, benchmarks))


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def report(benchmarks: list[Benchmark], ran: list[Benchmark], results: list[dict[str, Any]]) -> str:
    """The markdown tables: per suite, the kernels found, run and their verdicts; reasons; times."""
    lines = []
    found = Counter((b.suite, b.status) for b in benchmarks)
    by_suite: dict[str, Counter[str]] = {}
    for b, r in zip(ran, results):
        by_suite.setdefault(b.suite, Counter())[outcome(r)] += 1
    suites = sorted({b.suite for b in benchmarks})
    rows = []
    for s in suites:
        c = by_suite.get(s, Counter())
        rows.append([s, found[(s, "run")] or "—", found[(s, "disabled")], found[(s, "cuda")], sum(c.values()),
                     c["proven"], c["defect"], c["possible"], c["unknown"], c["error"]])
    lines.append(common.md_table(["suite", "evaluated files", "`_` files (not run by gvtester)", "CUDA",
                                  "run (sample)", "proven", "defect (replay confirmed)", "possible",
                                  "unknown", "error"], rows))
    why: Counter[str] = Counter()
    for r in results:
        if "error" in r:
            why["error: " + _reason_class(r["error"])] += 1
        for la in r.get("launches", []):
            if la["verdict"] in ("unknown", "possible"):
                why[f"{la['verdict']}: " + _reason_class(la.get("reason") or "")] += 1
    lines.append("")
    lines.append(common.md_table(["unknown / possible / error reason (per launch; errors per file)", "count"],
                                 why.most_common()))
    seconds = [la["seconds"] for r in results for la in r.get("launches", []) if la.get("seconds") is not None]
    walls = [r["wall"] for r in results if r.get("wall")]
    lines.append("")
    lines.append(f"proof time per kernel (engine): median {statistics.median(seconds) if seconds else 0:.2f} s, "
                 f"p95 {_percentile(seconds, 0.95):.2f} s over {len(seconds)} launches; wall per file "
                 f"(compile, proof, replay): median {statistics.median(walls) if walls else 0:.2f} s, "
                 f"p95 {_percentile(walls, 0.95):.2f} s over {len(walls)} files")
    for b, r in zip(ran, results):
        if outcome(r) in ("defect", "possible"):
            for f in r["findings"]:
                lines.append(f"- {b.id} [{outcome(r)}] {f['kind']} {f.get('kernel')}: {f.get('location')} "
                             f"{(f.get('detail') or '')[:160]}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", type=Path, default=DEFAULT_SUITE)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds per launch's proof")
    ap.add_argument("--every", type=int, default=1, help="run every N-th evaluated kernel of each suite")
    ap.add_argument("--only", help="benchmarks whose path contains this")
    ap.add_argument("--kernellab", type=Path, default=common.DEFAULT_KERNELLAB)
    ap.add_argument("--json", type=Path, help="write every benchmark's result here")
    ap.add_argument("--log", type=Path, help="append each result to this JSON-lines file as it ends; "
                                             "benchmarks already in it are not run again (a resumed run)")
    a = ap.parse_args(argv)
    benchmarks = find_benchmarks(a.suite)
    ran = sample(benchmarks, max(1, a.every))
    if a.only:
        ran = [b for b in ran if a.only in b.id]
    results = run_all(ran, a)
    print(report(benchmarks, ran, results))
    if a.json:
        common.write_json(a.json, [{"id": b.id, "suite": b.suite, "options": b.options, "outcome": outcome(r), **r}
                                   for b, r in zip(ran, results)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
