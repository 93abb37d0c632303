"""``verify``: run a workload on Oclgrind in a child process and collect its findings."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab import tools
from kernellab.errors import InputError, KernellabError, Problem, ToolError
from kernellab.verify import findings as fnd


@dataclass
class VerifyResult:
    file: Path
    findings: list[fnd.Finding]
    #: harness events: one "begin" per launch, with the arguments it filled from the seed
    launches: list[dict[str, Any]] = field(default_factory=list)
    #: Oclgrind stopped reporting after OCLGRIND_MAX_ERRORS messages
    truncated: bool = False
    raw_messages: int = 0

    @property
    def verdict(self) -> str:
        return "defects" if self.findings else "verified"

    @property
    def exit_status(self) -> int:
        return 1 if self.findings else 0

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "file": str(self.file),
                "launches": [{"instantiation": l.get("index"), "kernel": l.get("kernel"),
                              "filled": l.get("filled", [])} for l in self.launches],
                "findings": [f.to_json() for f in self.findings],
                "reports": self.raw_messages, "truncated": self.truncated}


def _python() -> tools.Tool:
    return tools.Tool("python", Path(sys.executable))


def harness_argv(path: Path, fmt: str, index: int | None, seed: int) -> list[str]:
    args = ["-m", "kernellab.verify.harness", str(path), "--format", fmt, "--seed", str(seed)]
    if index is not None:
        args += ["--index", str(index)]
    return args


def verify(path: str | Path, *, fmt: str = "kernel-instantiation", index: int | None = None, seed: int = 0,
           timeout: float | None = 1800) -> VerifyResult:
    """Run ``path`` on Oclgrind with every check on and return its grouped findings.

    Bad input raises :class:`InputError`; a harness that crashes raises :class:`ToolError` with a
    repro command.
    """
    path = Path(path)
    proc = _python().run(harness_argv(path, fmt, index, seed), what=f"verifying {path} on Oclgrind",
                         timeout=timeout)
    text = proc.stderr.decode(errors="replace")
    messages, events = fnd.parse_stream(text)
    for e in events:
        if e["event"] == "input-error":
            raise InputError([Problem(p["file"], p["where"], p["message"]) for p in e["problems"]])
        if e["event"] == "failure":
            raise KernellabError(e["message"])
    launches = [e for e in events if e["event"] == "begin"]
    if not launches:
        raise ToolError(f"verifying {path}: the Oclgrind harness launched nothing\n{text[-2000:]}")
    found = [f for f in (fnd.classify(m) for m in messages) if f is not None]
    for e in events:
        if e["event"] == "launch-error":
            if not any(f.kind == "api-error" and f.instantiation == e["index"] for f in found):
                found.append(fnd.Finding("api-error", e["message"], next(
                    (l["kernel"] for l in launches if l["index"] == e["index"]), None), e["index"]))
    truncated = "suppressing further errors" in text
    return VerifyResult(path, fnd.group(found), launches, truncated, len(messages))
