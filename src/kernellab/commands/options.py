"""A command's options read without :mod:`argparse` (issue 23: start-up).

``argparse`` with the ``gettext`` and ``locale`` it loads, and the building of its parsers, are
about 20 M instructions of a ``kernellab run`` that starts in about 340 M. A command module's
``register(sub)`` is written against argparse's ``add_parser``/``add_argument``; given a
:class:`Commands` instead, it fills an :class:`OptionTable` (the same calls, so one place defines
each option), and :func:`parse` reads a plain command line from that table. Whatever the table
cannot read as argparse would — help, an unknown or misspelled option, a bad choice or value, an
option with a custom action or a variable number of values, ``--`` — makes :func:`parse` answer
None, and the command line goes to argparse, built from the same ``register``, for its help or
its error message (tests/unit/test_cli_options.py compares both readings). The flags several
commands share (a PySchedCL kernel spec's: :func:`add_spec_arguments`) are defined here too."""
from __future__ import annotations

import types

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

#: argparse.SUPPRESS, spelled out (argparse is not imported here)
SUPPRESS = "==SUPPRESS=="
#: the actions :func:`parse` carries out itself; an option with another action makes it answer None
_SIMPLE_ACTIONS = (None, "store", "store_true", "store_false", "append")
#: each action's default when ``add_argument`` gives none
_NATURAL_DEFAULTS = {"store_true": False, "store_false": True, "help": SUPPRESS, "version": SUPPRESS}


#: what a table raises where ``register`` asks for something only argparse has (a group, a
#: positional taking several values): the command is then parsed by argparse. A builtin class, not
#: one of its own built on every start (~0.1 M instructions, issue 23); a NotImplementedError of a
#: command's own ``register`` is raised again when argparse runs it.
Unsupported = NotImplementedError


class Option:
    """One ``add_argument`` call, as its keywords give it (built for each of a command's options
    on every start-up: written for the interpreter's fast paths, issue 23)."""

    __slots__ = ("option_strings", "action", "nargs", "type", "choices", "required", "default", "dest")

    def __init__(self, flags: Sequence[str], kwargs: dict[str, Any]) -> None:
        get = kwargs.get
        self.action = action = get("action")
        self.nargs = nargs = get("nargs")
        self.type: Callable[[str], Any] | None = get("type")
        self.choices = get("choices")
        self.required = bool(get("required", False))
        self.default = get("default", _NATURAL_DEFAULTS.get(action) if type(action) is str else None)
        if flags and flags[0][:1] == "-" and (len(flags) == 1 or flags[-1][:1] == "-") and len(flags) <= 2:
            self.option_strings = strings = list(flags)  # argparse's usual one or two flags
        else:
            self.option_strings = strings = [f for f in flags if f.startswith("-")]
        if not strings:  # a positional: its name is its dest
            if len(flags) != 1 or nargs not in (None, "?") or "dest" in kwargs:
                raise Unsupported(f"positional {flags!r}")
            self.dest = flags[0]
            self.required = nargs is None
        else:
            dest = get("dest")
            if not dest:
                named = strings[0]
                for flag in strings:
                    if flag[:2] == "--":
                        named = flag
                        break
                dest = named.lstrip("-").replace("-", "_")
            self.dest = dest
        if action in ("help", "version"):
            self.dest = SUPPRESS

    @property
    def simple(self) -> bool:
        """Whether :func:`parse` can carry this option out where it is given."""
        return self.action in _SIMPLE_ACTIONS and self.nargs is None


class OptionTable:
    """A command's options in the order ``register`` adds them (what an argparse parser would hold)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._actions: list[Option] = []  # argparse's name: add_spec_arguments reads the flags added so far
        self._option_string_actions: dict[str, Option] = {}
        self.defaults: dict[str, Any] = {}

    def add_argument(self, *flags: str, **kwargs: Any) -> Option:
        option = Option(flags, kwargs)
        self._actions.append(option)
        strings = self._option_string_actions
        for flag in option.option_strings:
            strings[flag] = option
        return option

    def set_defaults(self, **kwargs: Any) -> None:
        self.defaults.update(kwargs)

    def __getattr__(self, name: str) -> Any:
        raise Unsupported(f"{self.name}: {name}")


class Commands:
    """What ``register`` is given instead of argparse's subparsers: it keeps the table of the one
    command registered."""

    def __init__(self) -> None:
        self.table: OptionTable | None = None

    def add_parser(self, name: str, *, aliases: Sequence[str] = (), **_: object) -> OptionTable:
        if aliases or self.table is not None:
            raise Unsupported(f"{name}: aliases or a second command")
        self.table = OptionTable(name)
        return self.table


def parse(top: OptionTable, command: OptionTable, words: Sequence[str]) -> types.SimpleNamespace | None:
    """``words`` (the program's arguments: ``top``'s options, the command's name, its arguments)
    as argparse's ``parse_known_args`` reads them with ``top`` as the program's parser and
    ``command`` as its subcommand's, or None where argparse must read them (help, an error,
    anything this reader does not carry out)."""
    before: dict[str, Any] = {}
    at = _read(top, words, before, stop_at=command.name)
    if at is None:
        return None
    after: dict[str, Any] = {}
    if _read(command, words[at + 1:], after, stop_at=None) is None:
        return None
    outer, inner = _finish(top, before), _finish(command, after)
    if outer is None or inner is None:
        return None
    return types.SimpleNamespace(**{**outer, "command": command.name, **inner})


def _read(table: OptionTable, words: Sequence[str], values: dict[str, Any], *, stop_at: str | None) -> int | None:
    """Read ``words`` into ``values`` (dest: the value, or the list of an append); the index of
    ``stop_at`` (the command's name), len(words) at the end, None where argparse must read."""
    positionals = [a for a in table._actions if not a.option_strings]
    i = 0
    while i < len(words):
        word = words[i]
        if not word.startswith("-") or word == "-":
            if stop_at is not None:
                return i if word == stop_at else None
            if not positionals:
                return None
            if not _store(positionals.pop(0), word, values):
                return None
            i += 1
            continue
        flag, eq, given = word.partition("=")
        option = table._option_string_actions.get(flag)
        if option is None or not option.simple:
            return None  # unknown, misspelled, "--", -h, a custom action, several values: argparse's
        if option.action in ("store_true", "store_false"):
            if eq:
                return None
            values[option.dest] = option.action == "store_true"
            i += 1
            continue
        if not eq:
            if i + 1 >= len(words) or words[i + 1].startswith("-"):
                return None
            given = words[i + 1]
            i += 1
        if not _store(option, given, values):
            return None
        i += 1
    return i if stop_at is None else None


def _store(option: Option, text: str, values: dict[str, Any]) -> bool:
    """``text`` converted and checked as argparse does; False where it would refuse it."""
    try:
        value = option.type(text) if option.type is not None else text
    except Exception:  # noqa: BLE001 - argparse reports it (or raises it again) from the same call
        return False
    if option.choices is not None and value not in option.choices:
        return False
    if option.action == "append":
        known = values.get(option.dest, option.default)
        values[option.dest] = [*(known or ()), value]
    else:
        values[option.dest] = value
    return True


def _finish(table: OptionTable, given: dict[str, Any]) -> dict[str, Any] | None:
    """The namespace argparse makes of ``given``: each other option's default (a text default
    through its type, as argparse converts it), ``set_defaults``' values; None where a required
    option is missing."""
    values: dict[str, Any] = {}
    for option in table._actions:
        if option.dest == SUPPRESS:
            continue
        if option.dest in given:
            values[option.dest] = given[option.dest]
            continue
        if option.required:
            return None
        if option.default == SUPPRESS:
            continue
        default = option.default
        if isinstance(default, str) and option.type is not None:
            try:
                default = option.type(default)
            except Exception:  # noqa: BLE001 - argparse's error, from argparse
                return None
        values.setdefault(option.dest, default)
    for dest, value in table.defaults.items():
        values.setdefault(dest, value)
    return values


def add_spec_arguments(parser: Any, *, runner: bool = True) -> None:
    """The flags a PySchedCL spec needs, for ``run`` (and ``import``/``partition-sweep``):
    ``--set NAME=VALUE`` (repeatable), ``--partition P``, ``--devices CPU,GPU``, ``--seed``,
    ``--input POS=FILE.npy`` (repeatable), ``--split subbuffer|offset``. Kept here, free of heavy
    imports: ``run`` registers them on every start-up."""
    from kernellab.runtime.split_modes import SPLIT_MODES

    have = {a for action in parser._actions for a in action.option_strings}

    def add(flag: str, **kw: Any) -> None:
        if flag not in have:
            parser.add_argument(flag, **kw)

    add("--set", action="append", default=None, metavar="NAME=VALUE",
        help="a variable of a kernel spec's expressions, e.g. --set dataset=4096 (repeatable)")
    add("--partition", type=int, default=None, metavar="P",
        help="kernel spec: P/10 of the NDRange on the GPU-class device, the rest on the CPU-class one (0..10)")
    add("--devices", default=None, metavar="CPU,GPU",
        help="kernel spec: the CPU-class and GPU-class OpenCL devices (kind cpu/gpu, index or name substring)")
    if runner:
        add("--seed", type=int, default=0, help="seed of the generated input data (default 0)")
        add("--input", action="append", default=None, metavar="POS=FILE.npy",
            help="kernel spec: data for the buffer argument POS (repeatable)")
        add("--split", choices=SPLIT_MODES, default="subbuffer",
            help="kernel spec: give each part sub-buffers with ids from 0 (default) or a global work offset")
