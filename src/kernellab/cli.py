"""The ``kernellab`` command line.

Each subcommand lives in its own module under ``kernellab.commands`` exposing
``register(subparsers)``; this module only wires them up and turns errors into exit statuses:
0 success, 1 failure, 2 bad input (never a traceback for either).
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Sequence

from kernellab import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up)
if TYPE_CHECKING:  # the CLI imports errors only when a command runs (start-up)
    import argparse
    from contextlib import AbstractContextManager
    from typing import Any, NoReturn



LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
#: the options every command takes, before or after its name, that take a value
GLOBAL_VALUED = ("--log-level", "--tool-timeout")

#: the subcommands in the order ``--help`` lists them, with its line for each: ``--help`` and
#: ``--version`` import no command module (issue 11: under 50 ms). tests/unit/test_cli_startup.py
#: keeps each line equal to the help its module registers.
COMMANDS = {
    "run": "run a scenario (or other workload file) and write its outputs",
    "validate": "check a workload file (no device needed)",
    "schema": "print a JSON Schema for scenario files",
    "devices": "list the devices kernellab can run on",
    "verify": "check launches for data races, barrier divergence and out-of-bounds accesses (Oclgrind, or the "
              "SPIR-V checker for Vulkan shaders)",
    "capture": "record every kernel launch of a pyopencl program as a kernel-instantiation file",
    "import": "convert a kernel-instantiation file (GPUVerify JSON), a PySchedCL kernel spec or an AmberScript "
              "file into scenarios",
    "export": "write a scenario's OpenCL C dispatches as a kernel-instantiation file",
    "snapshot": "list a kernel's compilation stages or capture one",
    "listing": "list a kernel's instructions with control flow, def/use links and live totals",
    "partition-sweep": "time a PySchedCL kernel spec at every CPU/GPU partition 0..10",
    "schedule": "run a task set or DAG of PySchedCL kernel specs (HEFT-like policy)",
    "test": "run the workloads with expectations under PATHs and compare their outputs",
    "bless": "run a workload and write its outputs as the references of its expectations",
}
COMMAND_MODULES = tuple(COMMANDS)


def _named_command(argv: Sequence[str] | None) -> str | None:
    """The subcommand the command line names, if its first word is one (cheap, before parsing)."""
    words = list(sys.argv[1:] if argv is None else argv)
    for before, word in zip([""] + words, words):
        if not word.startswith("-") and before not in GLOBAL_VALUED:  # skip a global option's value
            return word if word in COMMAND_MODULES else None
    return None


def build_parser(argv: Sequence[str] | None = None, *, only_named: bool = False) -> argparse.ArgumentParser:
    """The full parser; with ``only_named``, only the subcommand ``argv`` names is imported, so a
    quick command does not pay for every other command's imports (numpy, Vulkan, OpenCL); when
    it names none (``--help``, ``--version``), the commands are listed by their lines alone."""
    from kernellab.cliextra import parser_class as make_parser_class

    parser_class = make_parser_class()
    parser_class.building = True  # type: ignore[attr-defined]
    try:
        return _build_parser(parser_class, argv, only_named)
    finally:
        parser_class.building = False  # type: ignore[attr-defined]


def _build_parser(parser_class: type[argparse.ArgumentParser], argv: Sequence[str] | None,
                  only_named: bool) -> argparse.ArgumentParser:
    import argparse

    named = _named_command(argv) if only_named else None
    parser = parser_class(prog="kernellab", description="Run, inspect and check GPU compute kernels described in JSON.")
    _add_program_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    placeholders = only_named and named is None
    for name, summary in COMMANDS.items():
        if placeholders:
            sub.add_parser(name, help=summary)  # for --help's list and argparse's choices; runs nothing
        elif named is None or name == named:
            _command_module(name).register(sub)
    for name, command in sub.choices.items():
        _add_shared_options(name, command, placeholder=placeholders, suppress=argparse.SUPPRESS)
    return parser


def _command_module(name: str) -> Any:
    module = "import_" if name == "import" else name.replace('-', '_')  # `import` is a keyword
    return importlib.import_module(f"kernellab.commands.{module}")


def _add_program_options(parser: Any) -> None:
    """The options of the program itself (before the command), on an argparse parser or an option table."""
    parser.add_argument("--version", action="version", version=f"kernellab {__version__}")
    _add_log_level(parser, default=None)
    _add_tool_timeout(parser, default=None)


def _add_shared_options(name: str, command: Any, *, placeholder: bool, suppress: str) -> None:
    """The options every command takes after its name too (``--log-level``, ``--tool-timeout``)
    and, on a command that compiles (not on ``--help``'s placeholders), ``--allow-outside``; on an
    argparse parser (``suppress``: ``argparse.SUPPRESS``, which argparse compares by identity) or
    an option table (``options.SUPPRESS``)."""
    # no default keeps a value given before the command
    if "--log-level" not in command._option_string_actions:
        _add_log_level(command, default=suppress)
    if "--tool-timeout" not in command._option_string_actions:
        _add_tool_timeout(command, default=suppress)
    if placeholder:
        return  # the commands' placeholders run nothing: no command module is imported
    from kernellab.commands import add_allow_outside

    if name in COMPILING_COMMANDS and "--allow-outside" not in command._option_string_actions:
        add_allow_outside(command)


def _read_quickly(argv: Sequence[str] | None) -> Any:
    """The command line as argparse would read it, read from the named command's option table
    without argparse (:mod:`kernellab.commands.options`); None where argparse must read it (no
    command named, help, an error, options the table does not carry out)."""
    named = _named_command(argv)
    if named is None:
        return None
    from kernellab.commands import options

    commands = options.Commands()
    try:
        _command_module(named).register(commands)
    except options.Unsupported:
        return None
    assert commands.table is not None, f"{named}: register() added no command"
    top = options.OptionTable("kernellab")
    _add_program_options(top)
    _add_shared_options(named, commands.table, placeholder=False, suppress=options.SUPPRESS)
    return options.parse(top, commands.table, list(sys.argv[1:] if argv is None else argv))


#: the commands that compile a workload's kernels (and so read what they #include)
COMPILING_COMMANDS = frozenset({"run", "verify", "test", "snapshot", "listing", "import", "export",
                                "partition-sweep", "schedule"})


class _Unchanged:
    """A block that changes nothing (:class:`contextlib.nullcontext`; a run does without contextlib)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _allow_outside(args: argparse.Namespace) -> AbstractContextManager[object]:
    """``--allow-outside`` for this process (its settings) and the workers it starts (the environment)."""
    paths = [p.resolve() for p in getattr(args, "allow_outside", None) or []]
    if not paths:
        return _Unchanged()
    from kernellab import config

    os.environ["KERNELLAB_ALLOW_OUTSIDE"] = os.pathsep.join(map(str, paths))
    return config.override(allow_outside=tuple(paths))


def _add_log_level(parser: Any, *, default: object) -> None:
    parser.add_argument("--log-level", default=default, choices=LOG_LEVELS, type=str.lower,
                        help="logging verbosity (default: warning); before or after the command")


def _add_tool_timeout(parser: Any, *, default: object) -> None:
    parser.add_argument("--tool-timeout", metavar="SECONDS", default=default,
                        help="stop an external tool (compiler, validator, ...) that runs longer than this "
                             "(default 300, or KERNELLAB_TOOL_TIMEOUT; 0: no limit); before or after the command")


def _tool_timeout(args: argparse.Namespace) -> AbstractContextManager[object]:
    """``--tool-timeout`` for this process (its settings) and the workers it starts (the environment)."""
    value = getattr(args, "tool_timeout", None)
    if value is None:
        return _Unchanged()
    from kernellab import config

    seconds = config.parse_tool_timeout(value)  # a bad value: UsageError, exit 2
    os.environ["KERNELLAB_TOOL_TIMEOUT"] = value
    return config.override(tool_timeout=seconds)


def main(argv: Sequence[str] | None = None) -> int:
    os.environ.setdefault("XDG_RUNTIME_DIR", "/tmp")  # silences the Vulkan loader's warning
    # a name from a file (an OpName, a path) may hold bytes that are not UTF-8: print them escaped
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
    paused: AbstractContextManager[object] = _Unchanged()
    if _named_command(argv) is not None:  # start-up: the command's imports (--help and --version have none)
        from kernellab.classcode import collector_paused

        paused = collector_paused()
    with paused:
        args = _read_quickly(argv)
        parser = build_parser(argv, only_named=True) if args is None else None
        if args is not None:  # before the collector resumes: its next pass would walk them all
            from kernellab.commands import start_up_done

            start_up_done()  # the command's module and its options
    if parser is not None:
        args, extra = parser.parse_known_args(argv)
        if extra:
            from kernellab.cliextra import refuse_unknown

            refuse_unknown(parser, args, extra)
    if not getattr(args, "func", None):
        (parser or build_parser(argv, only_named=True)).print_help(sys.stderr)
        return 2
    from kernellab.textsafe import EscapingStream

    saved = sys.stdout, sys.stderr
    # the edge: whatever a command prints (uids, paths, logs, op names from files) is escaped here
    sys.stdout = EscapingStream(sys.stdout, "standard output")  # type: ignore[assignment]
    sys.stderr = EscapingStream(sys.stderr, "standard error")  # type: ignore[assignment]
    try:
        return _run(args)
    finally:
        sys.stdout, sys.stderr = saved


def _configure_logging(args: argparse.Namespace) -> None:
    """The command's logging: set up when :mod:`logging` is loaded, else when the first record at
    the command's level comes (``kernellab.logs``: a run that logs nothing never loads it)."""
    from kernellab import config, logs

    level = (getattr(args, "log_level", None) or config.get().log_level).upper()

    def set_up() -> None:
        import logging

        root = logging.getLogger()
        if not root.handlers:
            handler = logging.StreamHandler()  # sys.stderr when each record is written: the escaping one
            handler.setFormatter(logs.escaping_formatter("%(levelname)s %(name)s: %(message)s"))
            root.addHandler(handler)
        root.setLevel(level)

    logs.set_up(level, set_up)
    config.report_warnings()


def _run(args: argparse.Namespace) -> int:
    # imported once the command line is read: --help and --version do without them
    from kernellab.outputs import install_signal_cleanup

    _configure_logging(args)
    install_signal_cleanup()
    try:
        return _run_command(args)
    finally:
        # the private folders a command without a cache wrote (an AmberScript file's scenarios),
        # whatever the outcome; looked up, not imported: a command that made none never loads it
        scratch = sys.modules.get("kernellab.scratch")
        if scratch is not None:
            scratch.remove()


#: the arguments that name the command's input files (each command's positional, run's --scenario,
#: listing's --input): its messages name them as the user typed them
INPUT_ARGUMENTS = ("file", "source", "spec", "paths", "scenario", "input")


def _name_inputs_as_typed(args: argparse.Namespace) -> None:
    from kernellab.errors import name_as_typed

    for name in INPUT_ARGUMENTS:
        value = getattr(args, name, None)
        for path in value if isinstance(value, list) else [value]:
            if isinstance(path, (str, os.PathLike)):
                name_as_typed(path)


def _run_command(args: argparse.Namespace) -> int:
    from kernellab.errors import FileSystemError, KernellabError
    from kernellab.outputs import discard_all

    _name_inputs_as_typed(args)
    try:
        with _tool_timeout(args), _allow_outside(args):
            status = int(args.func(args) or 0)
        sys.stdout.flush()  # a full disk or /dev/full behind stdout: an error naming it, here
        return status
    except KernellabError as exc:
        from kernellab.cliextra import with_misspelling_hints

        exc = with_misspelling_hints(exc)
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
        print(f"kernellab: error: {FileSystemError.from_os(exc, exc.filename or 'a file')}", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback on the terminal
        discard_all()
        from kernellab import cliextra

        where = cliextra.write_traceback()
        print(f"kernellab: internal error: {type(exc).__name__}: {cliextra.one_line(exc)}", file=sys.stderr)
        print(f"kernellab: the full traceback is in {where}; please attach it to a bug report",
              file=sys.stderr)
        return 1


#: the commands that run kernellab's own code only: ``capture`` runs the user's Python program
#: (whose unclosed files are flushed by the interpreter's teardown, and whose dataclasses are
#: theirs), ``test``/``schedule``/``partition-sweep`` start workers; those exit the normal way
QUICK_EXIT_COMMANDS = frozenset({"run", "validate", "schema", "devices", "verify", "import", "export",
                                 "snapshot", "listing"})


def program() -> NoReturn:
    """The ``kernellab`` program (console script, ``python -m kernellab``): :func:`main` in a
    process of its own. For :data:`QUICK_EXIT_COMMANDS`, the dataclasses' method code and the
    code of kernellab's modules are kept between runs (classcode.py), and the exit skips the
    interpreter's teardown, which collects every object start-up made (about 7 % of a ``tiny``
    run) in a process that ends anyway: exit handlers run and the streams are flushed as in a
    normal exit. A process with threads still running exits the normal way."""
    command = _named_command(None)
    quick = command in QUICK_EXIT_COMMANDS
    if command is not None and quick:
        gc_was_enabled = gc.isenabled()
        gc.disable()  # importing dataclasses (inspect, ast) makes only objects that live to the end
        from kernellab import classcode

        # before the command's modules are imported and build their dataclasses
        classcode.install(command, modules=True)
        from kernellab.commands import PROCESS, start_up_done

        PROCESS.one_shot = True
        start_up_done()
        if gc_was_enabled:
            gc.enable()
    from kernellab import native

    # this process is the command's own: native builds may end it (native.build_limit's
    # ending_process_on_build_timeout, armed here without importing that module: issue 23)
    native.build_limit_armed.append(True)
    try:
        status = main()
    except BrokenPipeError:  # `kernellab run -v | head -0`: what argparse's actions print, before _run
        status = 1
    finally:
        native.build_limit_armed.pop()
    threading = sys.modules.get("threading")
    if not quick or (threading is not None and threading.active_count() > 1):
        sys.exit(status)
    import atexit

    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(status)  # a closed pipe or stream: the interpreter's own exit reports it
    os._exit(status)
