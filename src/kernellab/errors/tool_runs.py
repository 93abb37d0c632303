"""How an external tool failed, and the errors of work that ran past its time limit: a run meets
them only when a tool runs or work runs too long, so they are built on first use (``kernellab.errors``
gives their names)."""
from __future__ import annotations

from dataclasses import field

from kernellab.errors import KernellabError, ToolError
from kernellab.records import dataclass


@dataclass
class ToolFailure:
    """How an external tool failed: its command line, exit status and log."""
    tool: str
    argv: list[str]
    returncode: int
    log: str
    env: dict[str, str] = field(default_factory=dict)
    #: the folder the tool ran in ("" for the caller's): a compiler reads the staged copy there by
    #: its own name (``compile.preprocess.staged``), so the command works only from that folder
    cwd: str = ""

    @property
    def repro(self) -> str:
        import shlex  # a failed tool's command line, for its message only

        prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in self.env.items())
        command = prefix + shlex.join(self.argv)
        return f"cd {shlex.quote(self.cwd)} && {command}" if self.cwd else command


class ToolTimeoutError(ToolError):
    """An external tool ran past its time limit and was killed. Exit status 1, not 2: the input
    may be valid (clspv loops forever on some correct kernels) and a busy machine can be the
    cause, so it is not reported as bad input; nor is it a :class:`CompileError`, which callers
    answer by compiling again."""


class TimeLimitError(KernellabError):
    """Work of kernellab's own (the SPIR-V checker) ran past its time limit and was stopped; exit
    status 1 for the same reasons as :class:`ToolTimeoutError`."""
