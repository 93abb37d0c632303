"""One exception hierarchy for kernellab.

Every error the CLI reports is a :class:`KernellabError`; its ``exit_status`` is what the
process exits with (2 for bad input, 1 for anything else) and its ``str()`` is what the user
reads, so messages are complete sentences that name the file and the place in it.
"""
from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernellab.records import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from typing import Any

    from kernellab.errors.tool_runs import TimeLimitError as TimeLimitError
    from kernellab.errors.tool_runs import ToolFailure as ToolFailure
    from kernellab.errors.tool_runs import ToolTimeoutError as ToolTimeoutError


class KernellabError(Exception):
    """Base of every error kernellab raises on purpose."""

    exit_status = 1


#: the files the user named on the command line, as typed: resolved path -> typed path; and
#: their folders, so that a file beside one (a shader) is named from the same place
_TYPED_FILES: dict[str, str] = {}
_TYPED_FOLDERS: dict[str, str] = {}
#: paths named but not yet resolved into the two tables: a run that prints no path resolves none
_TYPED_PENDING: list[str] = []


def name_as_typed(path: str | os.PathLike[str]) -> None:
    """Remember how the user typed ``path`` (a workload file, relative or through a symlink):
    every message then names it, and the files of its folder, that way (:func:`shown`)."""
    typed = os.fspath(path)
    if typed:
        _TYPED_PENDING.append(typed)


def _resolve_typed(typed: str) -> None:
    head = os.path.dirname(typed)
    _TYPED_FILES[os.path.realpath(typed)] = _TYPED_FILES[os.path.abspath(typed)] = typed
    _TYPED_FOLDERS[os.path.realpath(head or ".")] = _TYPED_FOLDERS[os.path.abspath(head or ".")] = head
    if os.path.isdir(typed):  # a suite's folder (``kernellab test DIR``): its workloads from it
        _TYPED_FOLDERS[os.path.realpath(typed)] = _TYPED_FOLDERS[os.path.abspath(typed)] = typed


def shown(path: str | os.PathLike[str]) -> str:
    """``path`` in its printed form: as the user typed it (:func:`name_as_typed`), or beside
    such a file when it lies in that file's folder (``dir/add.comp`` for ``/abs/dir/add.comp``,
    the user having typed ``dir/scenario.json``); any other path as it is. The one place that
    turns a path kernellab resolved back into the user's words. On one line: a newline or a tab
    is written ``\\x0a``, ``\\x09`` (the output's escaping keeps both in messages, which span
    lines, and a shader ``src`` holding a newline printed a line of the file's choosing)."""
    text = _typed_form(os.fspath(path))
    if "\n" in text or "\t" in text:
        text = text.replace("\n", "\\x0a").replace("\t", "\\x09")
    return text


def _typed_form(text: str) -> str:
    if not os.path.isabs(text):
        return text
    while _TYPED_PENDING:
        _resolve_typed(_TYPED_PENDING.pop(0))
    if not (_TYPED_FILES or _TYPED_FOLDERS):
        return text
    typed = _TYPED_FILES.get(text)
    if typed is not None:
        return typed
    folder = _TYPED_FOLDERS.get(text)
    if folder is not None:  # the workload's folder itself
        return folder or "."
    head, tail = os.path.split(text)
    rest: list[str] = [tail]
    while head and head not in _TYPED_FOLDERS:  # the deepest named folder holding it
        parent, name = os.path.split(head)
        if parent == head:
            return text
        head = parent
        rest.append(name)
    return os.path.join(_TYPED_FOLDERS[head], *reversed(rest))


class Problem(Frozen):
    """One defect in an input file: the file, the place in it, and what is wrong.

    ``where`` is a JSON pointer (``/resources/3/buffer/size``) for JSON inputs, or
    ``line N`` / ``line N, column M`` for text inputs; empty when the whole file is at fault.
    (A frozen record, not a dataclass: every run makes the class; ``replace`` makes a changed copy.)
    """

    _fields = _compared = ("file", "where", "message", "warning")
    file: str
    where: str
    message: str
    warning: bool

    def __init__(self, file: str, where: str, message: str, warning: bool = False):
        vars(self).update(file=file, where=where, message=message, warning=warning)

    def __str__(self) -> str:
        place = "".join(f"{part}: " for part in (shown(self.file) if self.file else "", self.where) if part)
        return f"{place}{'warning: ' if self.warning else ''}{self.message}"


def json_pointer(parts: Iterable[str | int]) -> str:
    """The RFC 6901 pointer for a path of keys and indices (``/`` for the root)."""
    escaped = [str(p).replace("~", "~0").replace("/", "~1") for p in parts]
    return "/" + "/".join(escaped) if escaped else "/"


class InputError(KernellabError, ValueError):
    """Bad input: one or more problems in a file the user gave. Exit status 2."""

    exit_status = 2

    def __init__(self, problems: Sequence[Problem] | str, file: str | os.PathLike[str] | None = None):
        if isinstance(problems, str):
            problems = [Problem(os.fspath(file) if file is not None else "", "", problems)]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, file: str | os.PathLike[str], where: str | Sequence[str | int], message: str) -> InputError:
        if not isinstance(where, str):
            where = json_pointer(where)
        return cls([Problem(os.fspath(file), where, message)])


class Problems:
    """The problems found while reading one file, collected so that all are reported at once.

    Every reader checks a whole file before it gives up: it adds each defect with its place
    (a JSON pointer given as a path of keys and indices, or a ready ``where`` string such as
    ``line 3``; :meth:`add`), warns about what it tolerates (:meth:`warn`), and raises them all
    together (:meth:`raise_if_any`). Readers with helpers of their own (typed fields, sizes) subclass it.
    """

    def __init__(self, file: str | Path):
        self.file = str(file)
        self.problems: list[Problem] = []
        self.warnings: list[Problem] = []

    def add(self, where: str | Iterable[str | int], message: str) -> None:
        self.problems.append(Problem(self.file, where if isinstance(where, str) else json_pointer(where), message))

    def warn(self, where: str | Iterable[str | int], message: str) -> None:
        self.warnings.append(Problem(self.file, where if isinstance(where, str) else json_pointer(where), message,
                                     warning=True))

    def extend(self, problems: Iterable[Problem]) -> None:
        self.problems.extend(problems)

    def raise_if_any(self, *, with_warnings: bool = False) -> None:
        """An :class:`InputError` with every problem (and, if asked, the warnings after them)."""
        if self.problems:
            raise InputError(self.problems + (self.warnings if with_warnings else []))


class UsageError(KernellabError, ValueError):
    """A wrong command line (bad flag value, missing argument). Exit status 2."""

    exit_status = 2


class ToolError(KernellabError):
    """An external tool (glslang, spirv-val, clspv, ...) failed or is missing."""

    def __init__(self, message: str, failure: ToolFailure | None = None):
        self.failure = failure
        if failure is not None:
            log = failure.log.strip()
            message = f"{message}\n{log}\nrepro: {failure.repro}" if log else f"{message}\nrepro: {failure.repro}"
        super().__init__(message)


class CompileError(ToolError, InputError):
    """A kernel did not compile or did not validate: the user's source is at fault. Exit status 2."""

    exit_status = 2

    def __init__(self, message: str, failure: ToolFailure | None = None):
        ToolError.__init__(self, message, failure)
        self.problems = [Problem("", "", str(self))]


class MissingToolError(ToolError):
    """A tool needed for a stage or a backend is not installed; the message names the package."""


class DeviceError(KernellabError):
    """No usable device, or a device-level failure (lost device, out of memory)."""


class BackendError(KernellabError):
    """A native API call failed; the message names the call and the symbolic result code."""

    def __init__(self, call: str, code: str, detail: str = ""):
        self.call = call
        self.code = code
        super().__init__(f"{call} failed: {code}" + (f" ({detail})" if detail else ""))


class DeviceOutOfMemoryError(BackendError, MemoryError):
    """The device could not allocate memory."""


class FileSystemError(KernellabError):
    """A file or folder cannot be read or written (read-only, full, vanished): one line naming the
    path, exit status 1 — the workload is fine, the machine is not."""

    @classmethod
    def from_os(cls, exc: OSError, path: object) -> FileSystemError:
        reason = exc.strerror or type(exc).__name__
        # named as the user typed it, on one line, as every other message names a path
        return cls(f"{shown(path) if isinstance(path, (str, os.PathLike)) else path}: {reason}")


#: the errors declared in ``tool_runs.py``: how a tool failed and the time limits, which a run meets
#: only when a tool runs or work runs too long (built on first use: a run of SPIR-V builds none)
_TOOL_RUNS = ("ToolFailure", "ToolTimeoutError", "TimeLimitError")


def __getattr__(name: str) -> Any:
    # PEP 562: the names of tool_runs.py, imported when first asked for
    if name not in _TOOL_RUNS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from kernellab.errors import tool_runs

    value = getattr(tool_runs, name)
    globals()[name] = value
    return value
