"""Compiler options as parsed (:class:`Options`), and the folders a file's paths may reach: what a
run that passes no option needs of :mod:`kernellab.compiler_options` (start-up, issue 23). The
door itself, the allow-lists and the parser, is that module, which re-exports every name here;
one option and a refusal are :mod:`kernellab.option_records`', loaded where an option is."""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from kernellab.records import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from kernellab.option_records import Option


def allowed_roots(workload_folder: Path, allow_outside: Iterable[Path] = ()) -> tuple[Path, ...]:
    """The workload's folder, ``allow_outside`` and the command line's ``--allow-outside``."""
    from kernellab import config  # the command line's choice holds for every reader of every command

    return (workload_folder.resolve(), *(Path(p).resolve() for p in (*allow_outside, *config.get().allow_outside)))


def inside(path: Path, roots: Sequence[Path]) -> bool:
    resolved = path.resolve()
    return any(resolved == root or root in resolved.parents for root in roots)


class Options(Frozen):
    """The options of one compile, parsed once (:func:`parse`) and never re-split.

    ``origin`` is ``"file"`` (checked against the language's allow-list), ``"user"`` (kernellab's
    own ``--options``: the user's choice, taken as given) or ``"kernellab"`` (added by kernellab
    itself). Every compiler's argv, the OpenCL driver's option string and the cache key are
    rendered from ``items``. (A frozen record, not a dataclass: a run imports no dataclasses,
    issue 23.)"""

    _fields = _compared = ("items", "origin")
    items: tuple[Option, ...]
    origin: str

    def __init__(self, items: tuple[Option, ...] = (), origin: str = "kernellab"):
        vars(self).update(items=items, origin=origin)

    def argv(self) -> list[str]:
        """Argument words for a tool's command line, one per option."""
        return [t for o in self.items for t in o.tokens()]

    def driver_text(self) -> str:
        """The one string ``clBuildProgram`` takes. Tokens of a file's options hold no whitespace,
        quote, backslash, ``#`` or control character (:func:`parse` refuses them), so the driver's
        own splitting gives back exactly :meth:`argv`; one that does not (a folder of kernellab's
        with a space in it) is refused rather than split by the driver. The user's own
        ``--options`` pass as given."""
        from kernellab.option_records import _UNSAFE, USER, OptionsRefused, Refusal, _printable

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
        from kernellab.option_records import DEFINE, UNDEF

        return [o for o in self.items if o.kind in (DEFINE, UNDEF)]

    def include_dirs(self) -> list[Path]:
        from kernellab.option_records import INCLUDE_DIR

        return [Path(str(o.value)) for o in self.items if o.kind == INCLUDE_DIR]

    def without_include_dirs(self) -> Options:
        """These options less their ``-I`` folders: a compiler or driver given source whose
        includes kernellab inlined (:mod:`kernellab.compile.preprocess`) has nothing to find."""
        from kernellab.option_records import INCLUDE_DIR

        return Options(tuple(o for o in self.items if o.kind != INCLUDE_DIR), self.origin)
