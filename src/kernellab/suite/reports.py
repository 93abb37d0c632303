"""Suite reports: the summary table, JSON lines, JUnit XML, deqp-runner's results CSV and the Chrome trace."""
from __future__ import annotations

import json
import socket
import time
from typing import IO, Any

from kernellab.suite.runner import SuiteOutcome
from kernellab.textsafe import escape, raw, xml_text

OUTCOME_ORDER = ("pass", "flaky", "skip", "expected-fail", "unexpected-pass", "fail")


def summary(outcome: SuiteOutcome, stream: IO[str], *, executor: str = "", jobs: int | None = None,
            shown_failures: int = 20) -> None:
    from rich.console import Console
    from rich.table import Table

    # rich's colours reach the terminal as they are; every text from a workload is escaped here
    console = Console(file=raw(stream), highlight=False, soft_wrap=True)
    failing = outcome.failed
    for r in failing[:shown_failures]:
        console.print(f"[bold red]{r.outcome.upper()}[/] {_markup(r.id)} ({_markup(r.title)}, attempt {r.attempts})",
                      markup=True)
        if r.message:
            console.print(escape(r.message), markup=False)
    if len(failing) > shown_failures:
        console.print(f"... and {len(failing) - shown_failures} more failures (see --json or --junit)")
    flaky = [r for r in outcome.results if r.outcome == "flaky"]
    for r in flaky:
        console.print(f"[yellow]FLAKY[/] {_markup(r.id)}: {_markup(r.message, multiline=True)}", markup=True)
    table = Table(title=None, show_edge=False)
    table.add_column("outcome")
    table.add_column("workloads", justify="right")
    counts = outcome.counts()
    for name in OUTCOME_ORDER:
        if counts.get(name):
            table.add_row(name, str(counts[name]))
    table.add_row("total", str(len(outcome.results)), style="bold")
    console.print(table)
    n = len(outcome.results)
    per = outcome.wall_s / n * 1e3 if n else 0.0
    from kernellab.suite.wording import plural

    how = f" ({executor}" + (f", {plural(jobs, 'job')}" if jobs else "") + ")" if executor else ""
    if outcome.not_run:
        console.print(f"stopped at the first failure (-x): {plural(outcome.not_run, 'workload')} not run")
    verdict = "[green]OK[/]" if outcome.ok else f"[red]FAILED[/] ({len(failing)} unexpected)"
    console.print(f"{verdict}: {plural(n, 'workload')} in {outcome.wall_s:.2f} s, {per:.1f} ms each{how}",
                  markup=True)


def _markup(text: str, *, multiline: bool = False) -> str:
    """Workload text inside a rich markup string: escaped, and its ``[`` not read as markup."""
    from rich.markup import escape as markup_escape
    return markup_escape(escape(text, multiline=multiline))


def json_lines(outcome: SuiteOutcome, stream: IO[str]) -> None:
    for r in outcome.results:
        stream.write(json.dumps(r.to_json()) + "\n")
    stream.flush()


def junit_xml(outcome: SuiteOutcome, suite_name: str = "kernellab") -> str:
    """JUnit XML as CI systems read it (checked against the Jenkins/Surefire junit-10.xsd in tests)."""
    from xml.etree import ElementTree as ET

    failures = sum(1 for r in outcome.results
                   if r.outcome in ("fail", "unexpected-pass") and r.status in ("fail", "pass"))
    errors = sum(1 for r in outcome.results if r.outcome == "fail" and r.status in ("error", "crash", "timeout"))
    skipped = sum(1 for r in outcome.results if r.outcome in ("expected-fail", "skip"))
    root = ET.Element("testsuites", name=xml_text(suite_name, multiline=False), tests=str(len(outcome.results)),
                      failures=str(failures), errors=str(errors), time=f"{outcome.wall_s:.3f}")
    suite = ET.SubElement(root, "testsuite", name=xml_text(suite_name, multiline=False),
                          tests=str(len(outcome.results)), failures=str(failures), errors=str(errors),
                          skipped=str(skipped), time=f"{outcome.wall_s:.3f}",
                          timestamp=time.strftime("%Y-%m-%dT%H:%M:%S"), hostname=xml_text(socket.gethostname()))
    for r in outcome.results:
        # every text from a workload (ids, titles, messages) through xml_text: XML 1.0 has no way
        # to write most control characters, even as &#...; entities
        folder, _, name = r.id.rpartition("/")
        case = ET.SubElement(suite, "testcase", name=xml_text(name, multiline=False),
                             classname=xml_text(folder.replace("/", ".") or suite_name, multiline=False),
                             time=f"{r.duration_s:.3f}")
        title, message = xml_text(r.title, multiline=False), xml_text(r.message)
        first_line = _first_line(r)
        attempts = [*r.earlier, r]
        if r.outcome == "fail":
            # Surefire's re-run convention: the first run's failure or error, then one rerunFailure
            # or rerunError per re-run
            first = attempts[0]
            tag = "failure" if first.status == "fail" else "error"
            ET.SubElement(case, tag, type=xml_text(first.title, multiline=False),
                          message=_first_line(first)).text = xml_text(first.message)
            for again in attempts[1:]:
                ET.SubElement(case, "rerunFailure" if again.status == "fail" else "rerunError",
                              type=xml_text(again.title, multiline=False),
                              message=_first_line(again)).text = xml_text(again.message)
        elif r.outcome == "unexpected-pass":
            ET.SubElement(case, "failure", type="UnexpectedPass", message=first_line).text = message
        elif r.outcome == "expected-fail":
            skip = ET.SubElement(case, "skipped", type="ExpectedFail", message=f"expected failure ({title})")
            skip.text = message
        elif r.outcome == "skip":
            ET.SubElement(case, "skipped", type="Skip", message=xml_text(r.message, multiline=False))
        elif r.outcome == "flaky":
            # Surefire's convention: the test passed; each failed attempt before is a flakyFailure
            # (outputs differed) or flakyError (an error, crash or timeout) with its own message
            for failed in r.earlier or [r]:
                ET.SubElement(case, "flakyFailure" if failed.status == "fail" or failed is r else "flakyError",
                              type=xml_text(failed.title, multiline=False) if failed is not r else "Flaky",
                              message=_first_line(failed)).text = xml_text(failed.message)
        if r.device:
            ET.SubElement(case, "system-out").text = xml_text(f"device: {r.device}\nworker: {r.worker}\n")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _first_line(r: Any) -> str:
    return xml_text(r.message.splitlines()[0], multiline=False) if r.message else xml_text(r.title, multiline=False)


#: deqp-runner's status words for kernellab's outcomes (a failure keeps its own status: Fail, Crash...)
CSV_STATUS = {"pass": "Pass", "flaky": "Flake", "skip": "Skip", "expected-fail": "ExpectedFail",
              "unexpected-pass": "UnexpectedImprovement(Pass)"}


def results_csv(outcome: SuiteOutcome) -> str:
    """deqp-runner's results.csv: one ``test,Status,seconds`` line per workload, no header."""
    import csv
    import io

    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for r in outcome.results:
        writer.writerow([r.id, CSV_STATUS.get(r.outcome, r.title), f"{r.duration_s:.3f}"])
    return out.getvalue()


def trace_events(outcome: SuiteOutcome) -> list[dict[str, Any]]:
    from kernellab.suite.trace import metadata, workload_events

    every = [(r, n, a) for r in outcome.results for n, a in enumerate([*r.earlier, r], 1)]
    origin = min((p[1] for _, _, a in every for p in a.phases), default=0.0)
    pids: dict[str, int] = {}
    events: list[dict[str, Any]] = []
    for r, n, attempt in every:  # each attempt of a re-run workload is a slice of its own
        worker = attempt.worker or "worker"
        if worker not in pids:
            pids[worker] = len(pids) + 1
            events += metadata(pids[worker], f"{worker} ({attempt.device})" if attempt.device else worker)
        total = len(r.earlier) + 1
        name = r.id if total == 1 else f"{r.id} (attempt {n} of {total})"
        events += workload_events(name, pids[worker], attempt.phases, attempt.gpu, origin,
                                  {"status": attempt.status, "outcome": r.outcome, "attempt": n})
    return events
