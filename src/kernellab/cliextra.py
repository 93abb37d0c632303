"""What the command line needs off a command's quick path, imported when it is needed: argparse's
parser (help, usage errors with the nearest option), the misspelling hints of an input error and
the crash report of an internal error (start-up: a run that succeeds loads none of it)."""
from __future__ import annotations

import functools
import os
import sys
from collections.abc import Sequence

from kernellab import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    import argparse
    from typing import NoReturn

    from kernellab.errors import KernellabError


@functools.cache
def parser_class() -> type[argparse.ArgumentParser]:
    """kernellab's argparse parser, defined when a command line needs argparse (help, an error, a
    command whose options :mod:`kernellab.commands.options` does not read): a plain run never
    imports argparse (with gettext and locale, and its parsers built, about 20 M instructions)."""
    import argparse

    class _Parser(argparse.ArgumentParser):
        #: set while the parsers are built: the formatter ``add_argument`` makes to check a metavar
        #: then gets a fixed width, sparing argparse's terminal query (``shutil``, whose import with
        #: bz2, lzma and a namedtuple compiled from text is about 15 M instructions); help and usage
        #: messages measure the terminal as before
        building = False

        def _get_formatter(self) -> argparse.HelpFormatter:
            if _Parser.building:
                return self.formatter_class(prog=self.prog, width=80)  # type: ignore[call-arg]
            return super()._get_formatter()

        def __init__(self, *args: object, **kwargs: object) -> None:
            # No abbreviated long options: Arm's --capture-frame must not be read as --capture-frames.
            kwargs.setdefault("allow_abbrev", False)
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]

        def _check_value(self, action: argparse.Action, value: object) -> None:
            try:
                super()._check_value(action, value)  # type: ignore[misc]
            except argparse.ArgumentError as exc:
                near = nearest(str(value), [str(c) for c in action.choices or ()])
                if near is None:
                    raise
                raise argparse.ArgumentError(action, f"{exc.message} (did you mean {near!r}?)") from None

        def error(self, message: str) -> NoReturn:  # argparse exits 2 too; keep its message, drop the noise
            self.print_usage(sys.stderr)
            print(f"{self.prog}: error: {message}", file=sys.stderr)
            sys.exit(2)

    return _Parser


def nearest(word: str, candidates: Sequence[str]) -> str | None:
    """The candidate closest to a mistyped ``word`` (``--scenari`` → ``--scenario``), if one is close."""
    import difflib

    close = difflib.get_close_matches(word, candidates, n=1, cutoff=0.6)
    return close[0] if close else None


def refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> NoReturn:
    """argparse's "unrecognized arguments", from the command's own parser (its usage, not the
    top-level one) and with the nearest option of that command for each mistyped flag."""
    import argparse

    command = getattr(args, "command", None)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    owner = sub.choices[command] if sub is not None and command in sub.choices else parser
    options = sorted(o for o in owner._option_string_actions if o.startswith("--"))
    hints = {}
    for word in extra:
        flag = word.split("=", 1)[0]
        if flag.startswith("-") and (near := nearest(flag, options)) is not None:
            hints[flag] = near
    if len(hints) == 1:
        hint = f" (did you mean {next(iter(hints.values()))}?)"
    else:
        hint = f" (did you mean {', '.join(f'{n} for {w}' for w, n in hints.items())}?)" if hints else ""
    owner.error(f"unrecognized arguments: {' '.join(extra)}{hint}")
    raise SystemExit(2)  # error() exits; its owner is typed loosely here


def with_misspelling_hints(exc: KernellabError) -> KernellabError:
    """An :class:`InputError` about a field that is absent because a key misspells it (``bindngs``):
    the same error naming that key and the field (the files named are re-read only then)."""
    from kernellab.errors import InputError

    if not isinstance(exc, InputError):
        return exc
    from kernellab.formats.jsonfile import load_json
    from kernellab.formats.near_keys import with_misspelling_hints

    problems = list(exc.problems)
    for file in {p.file for p in problems if p.file.endswith(".json") and p.where.startswith("/")}:
        try:
            data = load_json(file)
        except (InputError, OSError):
            continue
        problems = [q for p in problems
                    for q in (with_misspelling_hints([p], data) if p.file == file else [p])]
    return exc if problems == exc.problems else InputError(problems)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return (line[:300] + "...") if len(line) > 300 else line


def write_traceback() -> str:
    """Write the current exception's traceback to a private file; its path, or why it could not."""
    import tempfile
    import traceback

    try:
        fd, path = tempfile.mkstemp(prefix="kernellab-crash-", suffix=".txt")
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as fh:
            fh.write(f"kernellab {__version__}, argv: {sys.argv!r}\n")
            traceback.print_exc(file=fh)
    except OSError as exc:
        return f"(nowhere: {exc.strerror})"
    return path
