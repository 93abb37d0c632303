"""``verify``: run a workload on Oclgrind in a child process and collect its findings."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab import tools
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

    @property
    def verdict(self) -> str:
        return "defects" if self.findings else "verified"

    @property
    def exit_status(self) -> int:
        return 1 if self.findings else 0

    def to_json(self) -> dict[str, Any]:
        return {"verdict": self.verdict, "file": str(self.file),
                "launches": [{"instantiation": l.get("index"), "kernel": l.get("kernel"),
                              "enqueued_at": l.get("enqueued_at"), "filled": l.get("filled", [])}
                             for l in self.launches],
                "findings": [f.to_json() for f in self.findings],
                "reports": self.raw_messages, "truncated": self.truncated}


def _python() -> tools.Tool:
    return tools.Tool("python", Path(sys.executable))


def harness_argv(path: Path, index: int | None, seed: int) -> list[str]:
    args = ["-m", "kernellab.verify.harness", str(path), "--seed", str(seed)]
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
    if fmt == "scenario":
        return _verify_scenario(path, index=index, seed=seed, timeout=timeout)
    proc = _python().run(harness_argv(path, index, seed), what=f"verifying {path} on Oclgrind",
                         timeout=timeout)
    # imported after the child ran: the parent's start-up adds to every verify's wall time
    from kernellab.verify import findings as fnd
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


def _verify_scenario(path: Path, *, index: int | None, seed: int, timeout: float | None) -> VerifyResult:
    """A scenario's OpenCL C dispatches are exported as kernel instantiations (each with its
    buffers' contents at that dispatch) and those are checked; findings point back at the
    scenario's kernel files and dispatch commands."""
    import tempfile
    from kernellab.formats import gpuverify_scenario as conv
    from kernellab.formats.scenario import load_scenario
    scenario, _ = load_scenario(path)
    sources = {f"{r.uid}.cl": str(r.src_path) for r in scenario.resources if getattr(r, "kind", "") == "shader"}
    pointers = conv.dispatch_pointers(path)
    with tempfile.TemporaryDirectory(prefix="kernellab-verify-") as tmp:
        exported = conv.export_scenario(path, tmp)
        result = verify(exported, index=index, seed=seed, timeout=timeout)
        for f in result.findings:
            for a in f.accesses:
                if a.location and a.location.get("file"):
                    a.location["file"] = sources.get(Path(a.location["file"]).name, a.location["file"])
            if f.instantiation is not None and f.instantiation < len(pointers):
                f.detail = (f.detail + "; " if f.detail else "") + f"scenario command {pointers[f.instantiation]}"
        for launch in result.launches:
            launch["kernel_file"] = sources.get(Path(str(launch.get("kernel_file", ""))).name,
                                                launch.get("kernel_file"))
            launch["filled"] = []
    result.file = path
    return result
