"""The ``kernellab`` command line.

Each subcommand lives in its own module under ``kernellab.commands`` exposing
``register(subparsers)``; this module only wires them up and turns errors into exit statuses:
0 success, 1 failure, 2 bad input (never a traceback for either).
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from kernellab import __version__
from kernellab.errors import FileSystemError, KernellabError
from kernellab.outputs import discard_all, install_signal_cleanup

LOG_LEVELS = ("debug", "info", "warning", "error", "critical")

#: subcommand modules, in the order ``--help`` lists them
COMMAND_MODULES = (
    "run",
    "validate",
    "schema",
    "devices",
    "verify",
    "capture",
    "import",
    "export",
    "snapshot",
    "listing",
    "partition-sweep",
    "schedule",
    "test",
    "bless",
)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: object, **kwargs: object) -> None:
        # No abbreviated long options: Arm's --capture-frame must not be read as --capture-frames.
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> None:  # argparse exits 2 too; keep its message, drop the noise
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        sys.exit(2)


def _named_command(argv: Sequence[str] | None) -> str | None:
    """The subcommand the command line names, if its first word is one (cheap, before parsing)."""
    words = list(sys.argv[1:] if argv is None else argv)
    for before, word in zip([""] + words, words):
        if not word.startswith("-") and before != "--log-level":  # skip the global option's value
            return word if word in COMMAND_MODULES else None
    return None


def build_parser(argv: Sequence[str] | None = None, *, only_named: bool = False) -> argparse.ArgumentParser:
    """The full parser; with ``only_named``, only the subcommand ``argv`` names is imported, so a
    quick command does not pay for every other command's imports (numpy, Vulkan, OpenCL)."""
    named = _named_command(argv) if only_named else None
    parser = _Parser(prog="kernellab", description="Run, inspect and check GPU compute kernels described in JSON.")
    parser.add_argument("--version", action="version", version=f"kernellab {__version__}")
    _add_log_level(parser, default=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in COMMAND_MODULES:
        if named is None or name == named:
            module = "import_" if name == "import" else name.replace('-', '_')  # `import` is a keyword
            importlib.import_module(f"kernellab.commands.{module}").register(sub)
    for command in sub.choices.values():
        # after the command too; SUPPRESS keeps a value given before the command
        if "--log-level" not in command._option_string_actions:
            _add_log_level(command, default=argparse.SUPPRESS)
    return parser


def _add_log_level(parser: argparse.ArgumentParser, *, default: object) -> None:
    parser.add_argument("--log-level", default=default, choices=LOG_LEVELS, type=str.lower,
                        help="logging verbosity (default: warning); before or after the command")


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences the Vulkan loader's warning
    parser = build_parser(argv, only_named=True)
    args = parser.parse_args(argv)
    level = (getattr(args, "log_level", None) or os.environ.get("KERNELLAB_LOG_LEVEL") or "warning").upper()
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    install_signal_cleanup()
    try:
        return int(args.func(args) or 0)
    except KernellabError as exc:
        print(f"kernellab: error: {exc}" if exc.exit_status != 2 else str(exc), file=sys.stderr)
        return exc.exit_status
    except KeyboardInterrupt:
        discard_all()
        print("kernellab: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except OSError as exc:  # the machine's fault (read-only, full, vanished), not the workload's
        discard_all()
        print(f"kernellab: error: {FileSystemError.from_os(exc, exc.filename or '?')}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback on the terminal
        discard_all()
        where = _write_traceback()
        print(f"kernellab: internal error: {type(exc).__name__}: {_one_line(exc)}", file=sys.stderr)
        print(f"kernellab: the full traceback is in {where}; please attach it to a bug report",
              file=sys.stderr)
        return 1


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else ""
    return (line[:300] + "...") if len(line) > 300 else line


def _write_traceback() -> str:
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
