"""One compiler option as parsed (:class:`Option`, its kinds), and the refusal of one: the records
of :mod:`kernellab.compiler_options`' door, which re-exports them. Apart from
:mod:`kernellab.parsed_options`' :class:`~kernellab.parsed_options.Options`, so that a run whose
modules take no options builds none of these classes (start-up, issue 23)."""
from __future__ import annotations

from collections.abc import Sequence

from kernellab.records import dataclass


@dataclass(frozen=True)
class Refusal:
    """One option a file may not give, and why."""

    option: str
    reason: str

    def __str__(self) -> str:
        return f"compiler option {self.option!r} is not allowed in a file: {self.reason}"


class OptionsRefused(ValueError):
    """A file's options hold ones not allowed; ``refusals`` names each."""

    def __init__(self, refusals: Sequence[Refusal]):
        self.refusals = list(refusals)
        super().__init__("; ".join(map(str, refusals)))


#: the kinds of :class:`Option`
DEFINE, UNDEF, INCLUDE_DIR, FLAG, TARGET_ENV, STD, USER = (
    "define", "undef", "include-dir", "flag", "target-env", "std", "user")

#: characters no token from a file may hold: a driver's ``clBuildProgram`` takes one string and
#: splits it itself (on whitespace, honouring quotes and backslashes), and clspv's path writes
#: ``-D`` values into the source, where a newline or ``#`` would start a directive (compiled on
#: first use, by re's cache: a run of a SPIR-V module checks no OpenCL option)
_UNSAFE = r"[\s\"'\\#\x00-\x1f\x7f]"


@dataclass(frozen=True)
class Option:
    """One allowed option, as parsed: ``kind`` is one of :data:`DEFINE` ... :data:`USER`.

    ``name`` is the macro (define, undef), the flag itself (flag, std, user: the word as given)
    or the folder as written (include-dir); ``value`` is the macro's value (None: no ``=``), the
    resolved folder, or the target environment."""

    kind: str
    name: str
    value: str | None = None

    def tokens(self) -> tuple[str, ...]:
        """The argument words of this option: one per option (two for ``--target-env ENV``)."""
        if self.kind == DEFINE:
            return (f"-D{self.name}" if self.value is None else f"-D{self.name}={self.value}",)
        if self.kind == UNDEF:
            return (f"-U{self.name}",)
        if self.kind == INCLUDE_DIR:
            return (f"-I{self.value}",)
        if self.kind == TARGET_ENV:
            return ("--target-env", str(self.value))
        return (self.name,)

    def key(self) -> tuple[str, ...]:
        """What this option adds to a cache key: its tokens, a folder as the file wrote it (the
        included files' contents are keyed by the compile, wherever the workload lies)."""
        return (f"-I{self.name}",) if self.kind == INCLUDE_DIR else self.tokens()


def _printable(word: str) -> str:
    return word.replace("\x00", "\\0").replace("\n", "\\n").replace("\r", "\\r")
