"""A suite run: items through an executor, unexpected failures re-run once, the baseline applied.

Outcomes: ``pass``; ``flaky`` (failed, then passed on the re-run); ``expected-fail`` (failed and
listed in the baseline); ``unexpected-pass`` (listed in the baseline but passed); ``fail``.
Only ``fail`` and ``unexpected-pass`` fail the suite. Workloads the skip list names are
``skip`` (never run); with ``stop_on_failure`` the first unexpected failure stops the suite: no
further workload starts, and those never started are counted in ``not_run``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import field
from typing import Any, Protocol

from kernellab.records import dataclass
from kernellab.suite.discovery import SuiteItem
from kernellab.suite.results import FAILING_OUTCOMES, TestResult


class Executor(Protocol):
    name: str

    def run(self, items: list[SuiteItem], on_result: Callable[[TestResult], None],
            rerun: bool = False, stop: Callable[[], bool] = ...) -> list[TestResult]: ...


@dataclass
class SuiteOutcome:
    results: list[TestResult] = field(default_factory=list)
    wall_s: float = 0.0
    #: workloads never started because the suite stopped at its first failure (-x)
    not_run: int = 0

    @property
    def failed(self) -> list[TestResult]:
        return [r for r in self.results if r.outcome in FAILING_OUTCOMES]

    @property
    def ok(self) -> bool:
        return not self.failed

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.results:
            out[r.outcome] = out.get(r.outcome, 0) + 1
        return out


def classify(first: TestResult, rerun: TestResult | None, baseline: dict[str, str]) -> TestResult:
    listed = first.id in baseline
    if first.status == "skip":  # the device lacks what the workload requires (an AmberScript file's features)
        first.outcome = "skip"
        return first
    if first.status == "pass":
        first.outcome = "unexpected-pass" if listed else "pass"
        if listed:
            first.message = f"listed in the baseline as {baseline[first.id]}, but passed: update the baseline"
        return first
    if listed:
        first.outcome = "expected-fail"
        return first
    if rerun is not None:
        rerun.earlier = [*first.earlier, first]
    if rerun is not None and rerun.status == "pass":
        rerun.outcome = "flaky"
        rerun.attempts = 2
        rerun.message = f"failed once ({first.title}: {first.message.splitlines()[0] if first.message else ''}), " \
                        f"then passed"
        return rerun
    final = rerun or first
    final.outcome = "fail"
    final.attempts = 2 if rerun is not None else 1
    return final


def run_suite(items: list[SuiteItem], executor: Any, baseline: dict[str, str] | None = None,
              on_result: Callable[[TestResult], None] = lambda r: None, rerun_failures: bool = True,
              skipped: list[SuiteItem] | None = None, stop_on_failure: bool = False) -> SuiteOutcome:
    import time

    baseline = baseline or {}
    start = time.perf_counter()
    failed = [False]

    def seen(r: TestResult) -> None:
        failed[0] = failed[0] or (r.status not in ("pass", "skip") and r.id not in baseline)
        on_result(r)

    if stop_on_failure:
        first = {r.id: r for r in executor.run(items, seen, stop=lambda: failed[0])}
    else:
        first = {r.id: r for r in executor.run(items, on_result)}
    ran = [i for i in items if i.id in first]
    retry = [i for i in ran if first[i.id].status not in ("pass", "skip") and i.id not in baseline
             and not first[i.id].bad_input]
    again: dict[str, TestResult] = {}
    if retry and rerun_failures:
        again = {r.id: r for r in executor.run(retry, lambda r: None, rerun=True)}
    outcome = SuiteOutcome(wall_s=time.perf_counter() - start, not_run=len(items) - len(ran))
    results = {i.id: classify(first[i.id], again.get(i.id), baseline) for i in ran}
    for i in skipped or []:
        results[i.id] = TestResult(i.id, "skip", message="matches the skip list", outcome="skip")
    outcome.results = [results[k] for k in sorted(results)]
    return outcome
