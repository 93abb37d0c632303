"""``verify``: run launches on Oclgrind and collect their findings, one verdict per launch.

All the launches of one call run in one process, each on its own Oclgrind context: this process
when one job is asked for (Oclgrind reads its settings when a context is made, and its log goes to
file descriptor 2, which is pointed at a temporary file meanwhile), or ``--jobs`` child processes
(``python -m kernellab.verify.harness``), each running its share of the launches.

A launch's time limit (``timeout``) is kept by a watchdog thread beside it, since a native
Oclgrind call cannot be interrupted: a harness child past it ends itself with a marker, and the
launch is reported as not finished; in this process it ends the process, so only the command
line arms it (:func:`ending_process_on_timeout`) and through the Python API a launch run here has
no limit.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from collections.abc import Iterator, Sequence

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
    def unfinished(self) -> list[dict[str, Any]]:
        """Launches stopped at the time limit: nothing after their stop was checked."""
        return [l for l in self.launches if l.get("unfinished")]

    @property
    def verdict(self) -> str:
        return "defects" if self.defects else "not finished" if self.unfinished else "verified"

    @property
    def exit_status(self) -> int:
        return 1 if self.defects or self.unfinished else 0

    def launch_verdict(self, index: int | None) -> str:
        if any(f.instantiation == index for f in self.defects):
            return "defects"
        return "not finished" if any(l.get("index") == index for l in self.unfinished) else "verified"

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "file": str(self.file),
                "checked": sorted(self.checked),
                "launches": [{"instantiation": l.get("index"), "kernel": l.get("kernel"),
                              "verdict": self.launch_verdict(l.get("index")), "ran": l.get("ran", True),
                              "enqueued_at": l.get("enqueued_at"), "filled": l.get("filled", []),
                              "output": l.get("output"), **({"error": l["error"]} if "error" in l else {})}
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


#: whether a launch past its limit may end this process (only ``kernellab verify`` itself: see
#: :func:`ending_process_on_timeout`)
_may_exit: list[bool] = []


@contextlib.contextmanager
def ending_process_on_timeout() -> Iterator[None]:
    """Inside, a launch run in this process (``jobs=1``) past ``timeout`` ends the process with
    status 1 after one line on stderr: a native Oclgrind call cannot be interrupted, so this is
    only for the command line, whose process is ours. Outside (the Python API) no limit applies
    to launches run in this process."""
    _may_exit.append(True)
    try:
        yield
    finally:
        _may_exit.pop()


def overrun_message(file: str, index: int | None, kernel: str, seconds: float) -> str:
    launch = f"launch {index} ({kernel})" if index is not None else f"the launch of {kernel}"
    return (f"{launch} of {file} ran longer than the {seconds:g} s limit and was stopped; if it only needs "
            f"longer, raise the limit with --timeout SECONDS (0 for none)")


def _run_here(units: Sequence[tuple[str, int | None]], seed: int, uninitialized: bool, timeout: float | None,
              names: Sequence[str], staged: str) -> str:
    from kernellab.verify import harness
    sys.stderr.flush()
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)

        def expire(overrun: harness.Overrun) -> None:
            # the main thread is inside Oclgrind: report on the real stderr, drop what was staged, end
            text = overrun_message(names[overrun.file_number], overrun.index, overrun.kernel, overrun.seconds)
            os.write(saved, f"kernellab verify: error: {text}\n".encode())
            shutil.rmtree(staged, ignore_errors=True)
            os._exit(1)

        os.dup2(log.fileno(), 2)
        try:
            with harness.oclgrind_environment(uninitialized):
                harness.run_launches(units, seed, timeout if _may_exit else None, expire)
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        return log.read().decode(errors="replace")


Share = list[tuple[tuple[str, int | None], int]]


def _run_children(shares: list[Share], seed: int, uninitialized: bool,
                  timeout: float | None) -> list[tuple[str, Share]]:
    """Each share in a harness process of its own, ``timeout`` per launch (the harness's watchdog
    ends it with a marker; the launches after the one stopped go to a new process). The logs with
    the units each covers."""
    import subprocess  # only for --jobs: one job runs in this process
    from kernellab.verify.harness import TIMEOUT_STATUS
    env = dict(os.environ)
    # the jobs already use the cores; Oclgrind's own threads would only contend
    env.setdefault("OCLGRIND_NUM_THREADS", "1")

    def start(share: Share) -> tuple[Share, list[str], subprocess.Popen[bytes]]:
        argv = [sys.executable, "-m", "kernellab.verify.harness", "--units", json.dumps([u for u, _ in share]),
                "--seed", str(seed), "--timeout", str(timeout or 0)]
        if uninitialized:
            argv.append("--uninitialized")
        # a session of its own: a child past its limit is stopped with everything it started
        return share, argv, subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                             stderr=subprocess.PIPE, env=env, start_new_session=True)

    running = [start(s) for s in shares if s]
    logs: list[tuple[str, Share]] = []
    while running:
        share, argv, proc = running.pop(0)
        # the harness stops a launch itself; this only catches a harness that could not
        backstop = None if timeout is None else timeout * len(share) + 60
        try:
            _, err = proc.communicate(timeout=backstop)
        except subprocess.TimeoutExpired:
            raise ToolError(f"verifying on Oclgrind took longer than {backstop:g} s; repro: {' '.join(argv)}") from None
        finally:
            _kill_group(proc)  # anything the harness left behind
        text = err.decode(errors="replace")
        if proc.returncode == TIMEOUT_STATUS:
            stopped = _stopped_unit(text)
            if stopped is not None:
                logs.append((text, share[:stopped + 1]))
                if share[stopped + 1:]:
                    running.append(start(share[stopped + 1:]))
                continue
        if proc.returncode != 0:
            raise ToolError(f"the Oclgrind harness exited with status {proc.returncode}; repro: {' '.join(argv)}\n"
                            f"{text[-2000:]}")
        logs.append((text, share))
    return logs


def _kill_group(proc: Any) -> None:
    import signal
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # already gone
    proc.wait()


def _stopped_unit(log: str) -> int | None:
    """The harness's number of the launch its watchdog stopped (its ``timeout`` marker)."""
    from kernellab.verify import findings as fnd
    _, events = fnd.parse_stream(log)
    return next((e.get("file") for e in events if e["event"] == "timeout"), None)


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
    file's problems; a harness that crashes raises :class:`ToolError` with a repro command.
    ``timeout`` limits each launch run in a child (``jobs`` > 1): one past it is stopped and
    reported as not finished (:attr:`VerifyResult.unfinished`); with ``jobs=1`` the launches run in
    this process without a limit (see :func:`ending_process_on_timeout`)."""
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
            names = [str(files[n]) if n in scenarios else u[0] for u, n in units]
            logs = [(_run_here([u for u, _ in units], seed, uninitialized, timeout, names, tmp), units)]
        else:
            logs = _run_children([units[k::jobs] for k in range(jobs)], seed, uninitialized, timeout)
        return _results(files, logs, scenarios, checked)


def _results(files: list[Path], logs: list[tuple[str, Share]], scenarios: dict[int, Any],
             checked: frozenset[str]) -> list[VerifyResult]:
    from kernellab.verify import findings as fnd
    results = [VerifyResult(f, [], checked=checked) for f in files]
    found: list[list[Any]] = [[] for _ in files]
    problems: list[Problem] = []
    for text, share in logs:
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
            if e["event"] == "timeout":
                _unfinished(results[e["file"]], e, str(files[e["file"]]))
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
            raise ToolError(f"verifying {r.file}: the Oclgrind harness launched nothing\n{logs[0][0][-2000:]}")
        r.launches.sort(key=lambda l: l.get("index") or 0)
        for f in found[n]:
            f.severity = "defect" if f.kind in checked else "warning"
            if n in scenarios and f.instantiation is not None:
                pointers = scenarios[n]["pointers"]
                if f.instantiation < len(pointers):
                    f.detail = (f.detail + "; " if f.detail else "") + f"scenario command {pointers[f.instantiation]}"
        r.findings = fnd.ordered(found[n])  # grouped by summarize: a launch is in one share
    return results


def _unfinished(result: VerifyResult, event: dict[str, Any], file: str) -> None:
    """A launch stopped at its time limit: not finished, with the reason, whether or not it began."""
    reason = overrun_message(file, event.get("index"), event.get("kernel", "?"), event.get("seconds", 0))
    launch = next((l for l in result.launches if l.get("index") == event.get("index")), None)
    if launch is None:  # stopped while building
        launch = {"event": "begin", "index": event.get("index"), "kernel": event.get("kernel"), "filled": []}
        result.launches.append(launch)
    launch.update(ran=False, error=reason, unfinished=True)


def _harness_ids(share: Share) -> dict[int, int]:
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
