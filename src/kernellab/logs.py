"""Loggers that load :mod:`logging` only when a record is to be written (start-up, issue 23).

Importing :mod:`logging` costs a run about 30 M instructions (it brings ``traceback``,
``textwrap``, ``string`` and ``threading``), 7 % of a ``tiny`` run that writes no log line at the
default level. The modules on the run path take their loggers from here: a :class:`Logger` is a
name; a record goes to ``logging.getLogger(name)`` like any other, and once :mod:`logging` is
loaded (by a record, a test, a library) everything goes through it as before.

The command line sets logging up through :func:`set_up`: at once when :mod:`logging` is loaded
already, else when the first record at or above the command's level comes (a record below it
is dropped without loading anything, as the root logger's level would drop it).
"""
from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

DEBUG, INFO, WARNING, ERROR, CRITICAL = 10, 20, 30, 40, 50
_LEVELS = {"DEBUG": DEBUG, "INFO": INFO, "WARNING": WARNING, "ERROR": ERROR, "CRITICAL": CRITICAL}

#: (the command's level, the set-up that installs its handler), until the set-up has run
_pending: tuple[int, Callable[[], None]] | None = None


def set_up(level: str, setup: Callable[[], None]) -> None:
    """Run ``setup`` (which configures :mod:`logging` for ``level``, a level name) now if logging
    is loaded, else before the first record at or above ``level`` is written."""
    global _pending
    if "logging" in sys.modules:
        _pending = None
        setup()
    else:
        _pending = (_LEVELS.get(level.upper(), WARNING), setup)


def _ready(level: int) -> bool:
    """Whether a record at ``level`` goes on to :mod:`logging` (running a pending set-up first)."""
    global _pending
    if _pending is not None:
        threshold, setup = _pending
        if level < threshold and "logging" not in sys.modules:
            return False
        _pending = None
        setup()
    return True


def _at(level: int) -> Callable[..., None]:
    """The method writing a record at ``level`` (``Logger.info``...)."""

    def write(self: Logger, msg: object, *args: object, **kwargs: Any) -> None:
        kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
        self.log(level, msg, *args, **kwargs)

    return write


class Logger:
    """The logger ``name`` of :mod:`logging`, loaded when a record passes (see the module's doc)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if _ready(level):
            import logging

            # the caller's frame, not this module's, in a record's funcName/lineno
            kwargs["stacklevel"] = kwargs.get("stacklevel", 1) + 1
            logging.getLogger(self.name).log(level, msg, *args, **kwargs)

    debug = _at(DEBUG)
    info = _at(INFO)
    warning = _at(WARNING)
    error = _at(ERROR)

    def isEnabledFor(self, level: int) -> bool:  # noqa: N802 - logging's name
        if not _ready(level):
            return False
        import logging

        return logging.getLogger(self.name).isEnabledFor(level)


def getLogger(name: str) -> Logger:  # noqa: N802 - logging's name
    return Logger(name)


def escaping_formatter(fmt: str) -> Any:
    """A :class:`logging.Formatter` whose records are one escaped message each (a record may
    span lines: compiler logs; :func:`kernellab.textsafe.escape`)."""
    import logging

    from kernellab.textsafe import escape

    class EscapingFormatter(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return escape(super().format(record))

    return EscapingFormatter(fmt)
