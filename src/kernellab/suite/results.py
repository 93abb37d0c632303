"""The result of one workload in a suite, and the outcome once the baseline is applied."""
from __future__ import annotations

from dataclasses import asdict, field
from typing import Any

from kernellab.records import dataclass

#: statuses of one attempt, as baselines and JUnit spell them
STATUS_TITLE = {"pass": "Pass", "fail": "Fail", "crash": "Crash", "timeout": "Timeout", "error": "Error",
                "skip": "Skip"}
#: outcomes that fail the suite
FAILING_OUTCOMES = ("fail", "unexpected-pass")


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class, despite its name

    id: str
    #: pass | fail (outputs differ) | error (the run raised) | crash (the worker died) | timeout |
    #: skip (matched the skip list; not run)
    status: str
    duration_s: float = 0.0
    message: str = ""
    device: str = ""
    worker: str = ""
    #: host phases (name, start, end) in seconds since the epoch, for --trace
    phases: list[tuple[str, float, float]] = field(default_factory=list)
    #: per submit, (label, start_ns, end_ns) on the device clock
    gpu: list[list[tuple[str, float, float]]] = field(default_factory=list)
    attempts: int = 1
    #: the attempts before this one, oldest first (a re-run keeps the first: reports show both)
    earlier: list[TestResult] = field(default_factory=list)
    #: after the baseline and the re-run: pass | fail | flaky | expected-fail | unexpected-pass | skip
    outcome: str = ""
    #: an error of the workload's own input (what ``kernellab run`` exits 2 for): a re-run would
    #: only say it again
    bad_input: bool = False

    @property
    def title(self) -> str:
        return STATUS_TITLE[self.status]

    def to_json(self) -> dict[str, Any]:
        earlier = self.earlier
        self.earlier = []  # asdict would copy every attempt's phases and GPU times
        try:
            data = asdict(self)
        finally:
            self.earlier = earlier
        data.pop("phases")
        data.pop("gpu")
        data.pop("earlier")
        data.pop("bad_input")
        if earlier:
            data["earlier_attempts"] = [{"status": e.status, "duration_s": round(e.duration_s, 6),
                                         "message": e.message, "worker": e.worker} for e in earlier]
        data["duration_s"] = round(self.duration_s, 6)
        phases: dict[str, float] = {}
        for name, start, end in self.phases:  # a phase met twice (setup: device, then resources) adds up
            phases[name] = phases.get(name, 0.0) + (end - start) * 1e3
        data["phases_ms"] = {name: round(ms, 3) for name, ms in phases.items()}
        return data

    def identity(self) -> tuple[str, str, str]:
        """What two executors must agree on (timings and worker names aside)."""
        return self.id, self.status, self.message
