"""-k/--skip selection, -x in the runner, and deqp-runner's results CSV (no device needed)."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from kernellab.suite.discovery import SuiteItem
from kernellab.suite.reports import junit_xml, results_csv
from kernellab.suite.results import TestResult
from kernellab.suite.runner import run_suite
from kernellab.suite.selection import compile_patterns, select


def items(*ids: str) -> list[SuiteItem]:
    return [SuiteItem(i, Path(i), Path(i + ".expect")) for i in ids]


class Serial:
    """Runs items one at a time, as one worker would; ids with "bad" fail."""

    name = "serial"

    def __init__(self) -> None:
        self.ran: list[str] = []

    def run(self, todo: list[SuiteItem], on_result: Callable[[TestResult], None], rerun: bool = False,
            stop: Callable[[], bool] = lambda: False) -> list[TestResult]:
        out = []
        for item in todo:
            if stop():
                break
            self.ran.append(item.id)
            r = TestResult(item.id, "fail" if "bad" in item.id else "pass", duration_s=0.25)
            out.append(r)
            on_result(r)
        return out


def test_select_keeps_and_skips() -> None:
    keep, skip = compile_patterns(["a/", "c$"]), compile_patterns(["x"])
    run, skipped = select(items("a/x", "a/y", "b/c", "b/d"), keep, skip)
    assert [i.id for i in run] == ["a/y", "b/c"] and [i.id for i in skipped] == ["a/x"]
    run, skipped = select(items("a", "b"), [], [])
    assert len(run) == 2 and not skipped


def test_stop_on_failure_starts_nothing_more() -> None:
    ex = Serial()
    outcome = run_suite(items("a", "b_bad", "c", "d"), ex, rerun_failures=False, stop_on_failure=True)
    assert ex.ran == ["a", "b_bad"] and outcome.not_run == 2 and not outcome.ok
    # a failure the baseline expects does not stop it
    ex = Serial()
    outcome = run_suite(items("a", "b_bad", "c"), ex, {"b_bad": "Fail"}, rerun_failures=False, stop_on_failure=True)
    assert ex.ran == ["a", "b_bad", "c"] and outcome.not_run == 0 and outcome.ok


def test_results_csv_and_junit_show_skips() -> None:
    outcome = run_suite(items("a", "c_bad"), Serial(), {"c_bad": "Fail"}, skipped=items("b"))
    assert results_csv(outcome) == "a,Pass,0.250\nb,Skip,0.000\nc_bad,ExpectedFail,0.250\n"
    xml = junit_xml(outcome)
    assert 'skipped="2"' in xml and 'type="Skip"' in xml
    assert results_csv(run_suite(items("q,r"), Serial())) == '"q,r",Pass,0.250\n'  # a comma in an id is quoted
