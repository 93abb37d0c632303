"""``verify``: run launches on Oclgrind and collect their findings, one verdict per launch.

All the launches of one call run in one process, each on its own Oclgrind context: this process
when one job is asked for (Oclgrind reads its settings when a context is made, and its log goes to
file descriptor 2, which is pointed at a temporary file meanwhile), or ``--jobs`` child processes
(``python -m kernellab.verify.harness``), each running its share of the launches.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Sequence

from kernellab.errors import InputError, KernellabError, Problem, ToolError


@dataclass
class VerifyResult:
    file: Path
    findings: list[Any]  # kernellab.verify.findings.Finding
    #: harness events: one "begin" per launch, with the arguments it filled from the seed
    launches: list[dict[str, Any]] = field(default_factory=list)
    #: Oclgrind stopped reporting after OCLGRIND_MAX_ERRORS messages
    truncated: bool = False
    raw_messages: int = 0
    #: the kinds that count as defects (GPUVerify's three plus --check)
    checked: frozenset[str] = frozenset()

    @property
    def defects(self) -> list[Any]:
        return [f for f in self.findings if f.severity == "defect"]

    @property
    def warnings(self) -> list[Any]:
        return [f for f in self.findings if f.severity != "defect"]

    @property
    def verdict(self) -> str:
        return "defects" if self.defects else "verified"

    @property
    def exit_status(self) -> int:
        return 1 if self.defects else 0

    def launch_verdict(self, index: int | None) -> str:
        return "defects" if any(f.instantiation == index for f in self.defects) else "verified"

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "file": str(self.file),
                "checked": sorted(self.checked),
                "launches": [{"instantiation": l.get("index"), "kernel": l.get("kernel"),
                              "verdict": self.launch_verdict(l.get("index")), "ran": l.get("ran", True),
                              "enqueued_at": l.get("enqueued_at"), "filled": l.get("filled", []),
                              "output": l.get("output")}
                             for l in self.launches],
                "findings": [f.to_json() for f in self.findings],
                "reports": self.raw_messages, "truncated": self.truncated}


def _units(path: Path, index: int | None) -> list[tuple[str, int | None]]:
    """The launches of a kernel-instantiation file, one unit each, so jobs can share a file."""
    if index is not None:
        return [(str(path), index)]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return [(str(path), None)]  # the harness reports the problem with its place
    return [(str(path), n) for n in range(len(data))] if isinstance(data, list) and data else [(str(path), None)]


def _run_here(units: Sequence[tuple[str, int | None]], seed: int, uninitialized: bool) -> str:
    from kernellab.verify import harness
    sys.stderr.flush()
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        try:
            with harness.oclgrind_environment(uninitialized):
                harness.run_launches(units, seed)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        return log.read().decode(errors="replace")


def _run_children(shares: list[list[tuple[str, int | None]]], seed: int, uninitialized: bool,
                  timeout: float | None) -> list[str]:
    import subprocess  # only for --jobs: one job runs in this process
    env = dict(os.environ)
    # the jobs already use the cores; Oclgrind's own threads would only contend
    env.setdefault("OCLGRIND_NUM_THREADS", "1")
    procs = []
    for share in shares:
        argv = [sys.executable, "-m", "kernellab.verify.harness", "--units", json.dumps(share), "--seed", str(seed)]
        if uninitialized:
            argv.append("--uninitialized")
        procs.append((argv, subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE, env=env)))
    logs = []
    for argv, proc in procs:
        try:
            _, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise ToolError(f"verifying on Oclgrind took longer than {timeout} s; repro: {' '.join(argv)}") from None
        if proc.returncode != 0:
            raise ToolError(f"the Oclgrind harness exited with status {proc.returncode}; repro: {' '.join(argv)}\n"
                            f"{err.decode(errors='replace')[-2000:]}")
        logs.append(err.decode(errors="replace"))
    return logs


def verify(path: str | Path, *, fmt: str = "kernel-instantiation", index: int | None = None, seed: int = 0,
           check: Sequence[str] = (), timeout: float | None = 1800) -> VerifyResult:
    """Run ``path`` on Oclgrind and return its grouped findings (see :func:`verify_many`)."""
    return verify_many([path], formats=[fmt], index=index, seed=seed, check=check, timeout=timeout)[0]


def verify_many(paths: Sequence[str | Path], *, formats: Sequence[str] | None = None, index: int | None = None,
                seed: int = 0, check: Sequence[str] = (), jobs: int = 1,
                timeout: float | None = 1800) -> list[VerifyResult]:
    """Every launch of every file in this process (or ``jobs`` child processes), one result per file.

    ``check`` names kinds that count as defects besides data races, barrier divergence and
    out-of-bounds (``all`` for every kind); Oclgrind's uninitialized-value tracker runs only when
    ``uninitialized`` is among them. Bad input in any file raises :class:`InputError` with every
    file's problems; a harness that crashes raises :class:`ToolError` with a repro command."""
    from kernellab.verify import findings as fnd
    try:
        checked = fnd.checked_kinds(check)
    except ValueError as exc:
        from kernellab.errors import UsageError
        raise UsageError(f"--check: {exc}") from exc
    uninitialized = "uninitialized-read" in checked
    files = [Path(p) for p in paths]
    formats = list(formats) if formats else ["kernel-instantiation"] * len(files)
    with tempfile.TemporaryDirectory(prefix="kernellab-verify-") as tmp:
        scenarios: dict[int, Any] = {}
        targets: list[Path] = []
        for n, (path, fmt) in enumerate(zip(files, formats)):
            if fmt == "scenario":
                scenarios[n] = _export_scenario(path, Path(tmp) / str(n))
                targets.append(scenarios[n]["exported"])
            else:
                targets.append(path)
        units = [(u, n) for n, t in enumerate(targets) for u in _units(t, index)]
        jobs = max(1, min(jobs, len(units)))
        if jobs == 1:
            logs = [_run_here([u for u, _ in units], seed, uninitialized)]
            shares = [units]
        else:
            shares = [units[k::jobs] for k in range(jobs)]
            logs = _run_children([[u for u, _ in s] for s in shares], seed, uninitialized, timeout)
        return _results(files, logs, shares, scenarios, checked)


def _results(files: list[Path], logs: list[str], shares: list[list[tuple[tuple[str, int | None], int]]],
             scenarios: dict[int, Any], checked: frozenset[str]) -> list[VerifyResult]:
    from kernellab.verify import findings as fnd
    results = [VerifyResult(f, [], checked=checked) for f in files]
    found: list[list[Any]] = [[] for _ in files]
    problems: list[Problem] = []
    for text, share in zip(logs, shares):
        messages, events = fnd.parse_stream(text)
        harness_ids = _harness_ids(share)
        for e in events:
            e["file"] = harness_ids.get(e.get("file", -1), -1)
            if e["event"] == "failure" and e["file"] == -1:
                raise KernellabError(e["message"])
            if e["event"] == "input-error":
                problems += [Problem(p["file"], p["where"], p["message"]) for p in e["problems"]]
            elif e["event"] == "failure":
                raise KernellabError(e["message"])
            elif e["event"] == "begin":
                if e["file"] in scenarios:
                    _scenario_terms(e, scenarios[e["file"]])
                results[e["file"]].launches.append(e)
        for f in fnd.summarize(messages):
            found[f.file].append(f)
        for e in events:
            if e["event"] == "output":  # the kernel's printf text
                for l in results[e["file"]].launches:
                    if l.get("index") == e["index"]:
                        l["output"] = e["text"]
            if e["event"] == "launch-error":
                r = results[e["file"]]
                for l in r.launches:
                    if l.get("index") == e["index"]:
                        l["ran"], l["error"] = False, e["message"]
                if not any(f.kind == "api-error" and f.instantiation == e["index"] for f in found[e["file"]]):
                    kernel = next((l["kernel"] for l in r.launches if l["index"] == e["index"]), None)
                    found[e["file"]].append(fnd.Finding("api-error", e["message"], kernel, e["index"],
                                                        file=e["file"]))
        for m in messages:
            if m.launch is not None:
                if "suppressing further errors" in m.header:
                    results[m.launch.get("file", 0)].truncated = True
                else:
                    results[m.launch.get("file", 0)].raw_messages += 1
    if problems:
        raise InputError(problems)
    for n, r in enumerate(results):
        if not r.launches:
            raise ToolError(f"verifying {r.file}: the Oclgrind harness launched nothing\n{logs[0][-2000:]}")
        r.launches.sort(key=lambda l: l.get("index") or 0)
        for f in found[n]:
            f.severity = "defect" if f.kind in checked else "warning"
            if n in scenarios and f.instantiation is not None:
                pointers = scenarios[n]["pointers"]
                if f.instantiation < len(pointers):
                    f.detail = (f.detail + "; " if f.detail else "") + f"scenario command {pointers[f.instantiation]}"
        r.findings = fnd.ordered(found[n])  # grouped by summarize: a launch is in one share
    return results


def _harness_ids(share: list[tuple[tuple[str, int | None], int]]) -> dict[int, int]:
    """The harness numbers each unit it runs (0, 1, ...); map those numbers to our file numbers."""
    return {k: number for k, (_, number) in enumerate(share)}


def _export_scenario(path: Path, into: Path) -> dict[str, Any]:
    """A scenario's OpenCL C dispatches as kernel instantiations (each with its buffers' contents
    at that dispatch); findings are mapped back to the scenario's kernel files, buffer uids and
    dispatch commands."""
    from kernellab.convert import gpuverify_scenario as conv
    from kernellab.formats.scenario import load_scenario
    from kernellab.model import DispatchCompute
    scenario, _ = load_scenario(path)
    sources = {f"{r.uid}.cl": str(r.src_path) for r in scenario.resources if getattr(r, "kind", "") == "shader"}
    bindings = [{b.id: b.resource_ref for b in c.bindings if b.set == 0}
                for c in scenario.commands if isinstance(c, DispatchCompute)]
    exported = conv.export_scenario(path, into)
    return {"exported": exported, "sources": sources, "bindings": bindings, "pointers": conv.dispatch_pointers(path)}


def _scenario_terms(launch: dict[str, Any], scenario: dict[str, Any]) -> None:
    """The exported launch's files and buffers as the scenario names them."""
    launch["kernel_file"] = scenario["sources"].get(Path(str(launch.get("kernel_file", ""))).name,
                                                    launch.get("kernel_file"))
    launch["filled"] = []
    index = launch.get("index")
    bound = scenario["bindings"][index] if index is not None and index < len(scenario["bindings"]) else {}
    for binding, info in enumerate(launch.get("buffer_info", [])):
        if binding in bound:
            info["resource"] = bound[binding]
