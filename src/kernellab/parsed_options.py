"""Compiler options as parsed, and the folders a file's paths may reach: what a run that passes no
option needs of :mod:`kernellab.compiler_options` (start-up, issue 23). The door itself, the
allow-lists and the parser, is that module, which re-exports every name here."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

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


def allowed_roots(workload_folder: Path, allow_outside: Iterable[Path] = ()) -> tuple[Path, ...]:
    """The workload's folder, ``allow_outside`` and the command line's ``--allow-outside``."""
    from kernellab import config  # the command line's choice holds for every reader of every command

    return (workload_folder.resolve(), *(Path(p).resolve() for p in (*allow_outside, *config.get().allow_outside)))


def inside(path: Path, roots: Sequence[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved == root or root in resolved.parents for root in roots)


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


@dataclass(frozen=True)
class Options:
    """The options of one compile, parsed once (:func:`parse`) and never re-split.

    ``origin`` is ``"file"`` (checked against the language's allow-list), ``"user"`` (kernellab's
    own ``--options``: the user's choice, taken as given) or ``"kernellab"`` (added by kernellab
    itself). Every compiler's argv, the OpenCL driver's option string and the cache key are
    rendered from ``items``."""

    items: tuple[Option, ...] = ()
    origin: str = "kernellab"

    def argv(self) -> list[str]:
        """Argument words for a tool's command line, one per option."""
        return [t for o in self.items for t in o.tokens()]

    def driver_text(self) -> str:
        """The one string ``clBuildProgram`` takes. Tokens of a file's options hold no whitespace,
        quote, backslash, ``#`` or control character (:func:`parse` refuses them), so the driver's
        own splitting gives back exactly :meth:`argv`; one that does not (a folder of kernellab's
        with a space in it) is refused rather than split by the driver. The user's own
        ``--options`` pass as given."""
        bad = [t for o in self.items if o.kind != USER for t in o.tokens() if re.search(_UNSAFE, t)]
        if bad:
            raise OptionsRefused([Refusal(_printable(t), "cannot reach an OpenCL driver as one word") for t in bad])
        return " ".join(self.argv())

    def key(self) -> str:
        """The options' part of a cache key: the same options, the same key."""
        return "\x00".join(t for o in self.items for t in o.key()) + f"\x00{self.origin}"

    def __bool__(self) -> bool:
        return bool(self.items)

    def __add__(self, other: Options) -> Options:
        """Both lists, in order (kernellab's own options after a file's); a file's origin stays."""
        origin = self.origin if self.origin != "kernellab" else other.origin
        return Options(self.items + other.items, origin)

    def has(self, kind: str, name: str | None = None) -> bool:
        return any(o.kind == kind and (name is None or o.name == name) for o in self.items)

    def defines(self) -> list[Option]:
        return [o for o in self.items if o.kind in (DEFINE, UNDEF)]

    def include_dirs(self) -> list[Path]:
        return [Path(str(o.value)) for o in self.items if o.kind == INCLUDE_DIR]

    def without_include_dirs(self) -> Options:
        """These options less their ``-I`` folders: a compiler or driver given source whose
        includes kernellab inlined (:mod:`kernellab.compile.preprocess`) has nothing to find."""
        return Options(tuple(o for o in self.items if o.kind != INCLUDE_DIR), self.origin)


def _printable(word: str) -> str:
    return word.replace("\x00", "\\0").replace("\n", "\\n").replace("\r", "\\r")
