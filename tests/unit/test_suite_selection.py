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


class Refusing(Serial):
    """As Serial, and ids with "refused" end in an error of their own input (exit status 2)."""

    def run(self, todo: list[SuiteItem], on_result: Callable[[TestResult], None], rerun: bool = False,
            stop: Callable[[], bool] = lambda: False) -> list[TestResult]:
        out = []
        for item in todo:
            self.ran.append(item.id)
            refused = "refused" in item.id
            r = TestResult(item.id, "error" if refused else "fail", message="/x: bad", bad_input=refused)
            out.append(r)
        return out


def test_a_workload_refused_for_its_input_is_not_run_again() -> None:
    ex = Refusing()
    outcome = run_suite(items("a_refused", "b_bad"), ex)
    assert ex.ran == ["a_refused", "b_bad", "b_bad"]  # the failure of outputs is run again, the refusal not
    by_id = {r.id: r for r in outcome.results}
    assert by_id["a_refused"].outcome == "fail" and by_id["a_refused"].attempts == 1
    assert by_id["b_bad"].attempts == 2
    assert "bad_input" not in by_id["a_refused"].to_json()


def test_the_worker_marks_an_input_error_and_not_a_device_error(tmp_path: Path) -> None:
    from kernellab.errors import DeviceError, InputError
    from kernellab.suite import worker

    class Session:
        device = "fake"

        def __init__(self, exc: Exception) -> None:
            self.exc = exc

        def run_workload(self, *args: object, **kwargs: object) -> None:
            raise self.exc

    sidecar = tmp_path / "w.expect.json"
    sidecar.write_text('{"outputs": {"y": {"reference": "y.npy", "dtype": "float32"}}}')
    item = SuiteItem("w", tmp_path / "w.json", sidecar)
    assert worker.run_item(Session(InputError("bad", file="w.json")), item).bad_input
    assert not worker.run_item(Session(DeviceError("lost")), item).bad_input
