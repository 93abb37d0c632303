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
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kernellab.errors import InputError, KernellabError, Problem, ToolError, json_pointer
from kernellab.records import dataclass
from kernellab.verify.model import Finding, Launch, VerifyResult, checked_kinds, ordered

if TYPE_CHECKING:  # loaded when needed: a kernel-instantiation verify starts without the scenario model
    from kernellab import model as m
    from kernellab.verify.oclgrind_log import Message


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
#: a harness event (the JSON of one of its marker lines)
Event = dict[str, Any]


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
    from kernellab.verify import oclgrind_log
    _, events = oclgrind_log.parse_stream(log)
    return next((e.get("file") for e in events if e["event"] == "timeout"), None)


def verify(path: str | Path, *, fmt: str = "kernel-instantiation", index: int | None = None, seed: int = 0,
           check: Sequence[str] = (), timeout: float | None = 1800) -> VerifyResult:
    """Run ``path`` on Oclgrind and return its grouped findings (see :func:`verify_many`)."""
    return verify_many([path], formats=[fmt], index=index, seed=seed, check=check, timeout=timeout)[0]


def verify_many(paths: Sequence[str | Path], *, formats: Sequence[str] | None = None, index: int | None = None,
                seed: int = 0, check: Sequence[str] = (), jobs: int = 1, timeout: float | None = 1800,
                loaded: Mapping[int, m.Scenario] | None = None) -> list[VerifyResult]:
    """Every launch of every file in this process (or ``jobs`` child processes), one result per file.

    ``check`` names kinds that count as defects besides data races, barrier divergence and
    out-of-bounds (``all`` for every kind); Oclgrind's uninitialized-value tracker runs only when
    ``uninitialized`` is among them. Bad input in any file raises :class:`InputError` with every
    file's problems; a harness that crashes raises :class:`ToolError` with a repro command.
    ``timeout`` limits each launch run in a child (``jobs`` > 1): one past it is stopped and
    reported as not finished (:attr:`VerifyResult.unfinished`); with ``jobs=1`` the launches run in
    this process without a limit (see :func:`ending_process_on_timeout`). ``loaded``: scenarios
    already loaded, by their place in ``paths`` (the others are loaded here)."""
    try:
        checked = checked_kinds(check)
    except ValueError as exc:
        from kernellab.errors import UsageError
        raise UsageError(f"--check: {exc}") from exc
    uninitialized = "uninitialized-read" in checked
    files = [Path(p) for p in paths]
    formats = list(formats) if formats else ["kernel-instantiation"] * len(files)
    with tempfile.TemporaryDirectory(prefix="kernellab-verify-") as tmp:
        scenarios: dict[int, _Exported] = {}
        targets: list[Path] = []
        for n, (path, fmt) in enumerate(zip(files, formats)):
            if fmt == "scenario":
                scenarios[n] = _export_scenario(path, Path(tmp) / str(n), (loaded or {}).get(n))
                targets.append(scenarios[n].exported)
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


def _launch(event: Event) -> Launch:
    """The result's record of a harness ``begin`` event."""
    return Launch(event.get("index"), event.get("kernel"), enqueued_at=event.get("enqueued_at"),
                  filled=list(event.get("filled", [])), uniform=event.get("uniform"))


def _results(files: list[Path], logs: list[tuple[str, Share]], scenarios: dict[int, _Exported],
             checked: frozenset[str]) -> list[VerifyResult]:
    """One result per file from the harnesses' logs; every file's bad input raised together."""
    tally = _Tally(files, scenarios, checked)
    for text, share in logs:
        tally.read(text, share)
    if tally.problems:
        raise InputError(tally.problems)
    for n, result in enumerate(tally.results):
        _finish(result, tally.found[n], scenarios.get(n), logs[0][0])
    return tally.results


class _Tally:
    """What the harness logs say so far: each file's launches and findings, and bad input."""

    def __init__(self, files: list[Path], scenarios: dict[int, _Exported], checked: frozenset[str]) -> None:
        self.files = files
        self.scenarios = scenarios
        self.results = [VerifyResult(f, [], checked=checked) for f in files]
        self.found: list[list[Finding]] = [[] for _ in files]
        self.problems: list[Problem] = []

    def read(self, text: str, share: Share) -> None:
        """One harness's log: its launches first (the message parser reads them), then its
        findings, then what happened to each launch."""
        from kernellab.verify import oclgrind_log
        messages, events = oclgrind_log.parse_stream(text)
        harness_ids = _harness_ids(share)
        for e in events:
            e["file"] = harness_ids.get(e.get("file", -1), -1)
            self._began(e)
        for f in oclgrind_log.summarize(messages):
            self.found[f.file].append(f)
        for e in events:
            self._ended(e)
        self._count(messages)

    def _began(self, event: Event) -> None:
        """A harness failure, a file's bad input, or a launch begun."""
        if event["event"] == "failure":
            raise KernellabError(event["message"])
        if event["event"] == "input-error":
            self.problems += [Problem(p["file"], p["where"], p["message"]) for p in event["problems"]]
        elif event["event"] == "begin":
            if event["file"] in self.scenarios:
                self.scenarios[event["file"]].name_in_scenario(event)
            self.results[event["file"]].launches.append(_launch(event))

    def _ended(self, event: Event) -> None:
        """A launch's printed text, its stop at the time limit, or its error from the OpenCL API."""
        if event["event"] == "output":
            self._printed(event)
        elif event["event"] == "timeout":
            _unfinished(self.results[event["file"]], event, str(self.files[event["file"]]))
        elif event["event"] == "launch-error":
            self._failed(event)

    def _printed(self, event: Event) -> None:
        """The kernel's printf text, on its launch."""
        for launch in self.results[event["file"]].launches:
            if launch.index == event["index"]:
                launch.output = event["text"]

    def _failed(self, event: Event) -> None:
        """A launch the OpenCL API refused: not run, and an api-error finding unless Oclgrind
        reported one already."""
        launches, found = self.results[event["file"]].launches, self.found[event["file"]]
        for launch in launches:
            if launch.index == event["index"]:
                launch.ran, launch.error = False, event["message"]
        if any(f.kind == "api-error" and f.instantiation == event["index"] for f in found):
            return
        kernel = next((l.kernel for l in launches if l.index == event["index"]), None)
        found.append(Finding("api-error", event["message"], kernel, event["index"], file=event["file"]))

    def _count(self, messages: list[Message]) -> None:
        """Oclgrind's messages per file before grouping, and whether it stopped reporting."""
        for message in messages:
            if message.launch is None:
                continue
            result = self.results[message.launch.get("file", 0)]
            if "suppressing further errors" in message.header:
                result.truncated = True
            else:
                result.raw_messages += 1


def _finish(result: VerifyResult, found: list[Finding], scenario: _Exported | None, log: str) -> None:
    """A file's launches in order and its findings graded (a defect when their kind is checked),
    each at its scenario command when the file is a scenario; ``log``: the first harness's, shown
    when the file launched nothing."""
    if not result.launches:
        raise ToolError(f"verifying {result.file}: the Oclgrind harness launched nothing\n{log[-2000:]}")
    result.launches.sort(key=lambda l: l.index or 0)
    for f in found:
        f.severity = "defect" if f.kind in result.checked else "warning"
        if scenario is not None:
            scenario.place(f)
    result.findings = ordered(found)  # grouped by summarize: a launch is in one share


def _unfinished(result: VerifyResult, event: Event, file: str) -> None:
    """A launch stopped at its time limit: not finished, with the reason, whether or not it began."""
    reason = overrun_message(file, event.get("index"), event.get("kernel", "?"), event.get("seconds", 0))
    launch = next((l for l in result.launches if l.index == event.get("index")), None)
    if launch is None:  # stopped while building
        launch = Launch(event.get("index"), event.get("kernel"))
        result.launches.append(launch)
    launch.ran, launch.error, launch.unfinished = False, reason, True


def _harness_ids(share: Share) -> dict[int, int]:
    """The harness numbers each unit it runs (0, 1, ...); map those numbers to our file numbers."""
    return {k: number for k, (_, number) in enumerate(share)}


@dataclass
class _Exported:
    """A scenario's OpenCL C dispatches exported as kernel instantiations, and what maps the
    findings back to the scenario: its kernel files, buffer uids and dispatch commands."""

    exported: Path
    #: exported kernel file name -> the scenario's shader file
    sources: dict[str, str]
    #: per dispatch: binding number (set 0) -> the buffer's uid
    bindings: list[dict[int, str]]
    #: per dispatch: its JSON pointer in the scenario
    pointers: list[str]

    def place(self, finding: Finding) -> None:
        """The finding's scenario command, after its detail."""
        if finding.instantiation is not None and finding.instantiation < len(self.pointers):
            command = f"scenario command {self.pointers[finding.instantiation]}"
            finding.detail = (finding.detail + "; " if finding.detail else "") + command

    def name_in_scenario(self, launch: Event) -> None:
        """The exported launch's files and buffers as the scenario names them (before its
        messages are parsed: the parser reads them from the launch)."""
        launch["kernel_file"] = self.sources.get(Path(str(launch.get("kernel_file", ""))).name,
                                                 launch.get("kernel_file"))
        launch["filled"] = []
        index = launch.get("index")
        bound = self.bindings[index] if index is not None and index < len(self.bindings) else {}
        for binding, info in enumerate(launch.get("buffer_info", [])):
            if binding in bound:
                info["resource"] = bound[binding]


def _export_scenario(path: Path, into: Path, scenario: m.Scenario | None) -> _Exported:
    """A scenario's OpenCL C dispatches as kernel instantiations (each with its buffers' contents
    at that dispatch); ``scenario``: the file already loaded (None: loaded here)."""
    from kernellab import model as m
    from kernellab.convert import gpuverify_scenario as conv
    if scenario is None:
        from kernellab.formats.scenario import load_scenario
        scenario, _ = load_scenario(path)
    sources = {f"{r.uid}.cl": str(r.src_path) for r in scenario.resources if isinstance(r, m.Shader)}
    dispatches = [(ci, c) for ci, c in enumerate(scenario.commands) if isinstance(c, m.DispatchCompute)]
    exported = conv.export_scenario(path, into, scenario=scenario)
    return _Exported(exported, sources, [{b.id: b.resource_ref for b in c.bindings if b.set == 0} for _, c in dispatches],
                     [json_pointer(["commands", ci]) for ci, _ in dispatches])
