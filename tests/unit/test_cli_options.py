"""A command line read from a command's option table (kernellab/commands/options.py, issue 23:
a run imports no argparse) gives the namespace argparse gives, and every line the table cannot
read as argparse would (help, errors, options it does not carry out) goes to argparse."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kernellab import cli
from kernellab.commands import options


def _quick(words: list[str]) -> dict[str, object] | None:
    namespace = cli._read_quickly(words)
    return None if namespace is None else vars(namespace)


def _argparse(words: list[str]) -> dict[str, object] | None:
    """argparse's reading, or None where it refuses the line (an error, unknown arguments)."""
    try:
        namespace, extra = cli.build_parser(words, only_named=True).parse_known_args(words)
    except SystemExit:
        return None
    return None if extra else vars(namespace)


def _sample(option: options.Option) -> str:
    if option.choices is not None:
        return str(list(option.choices)[-1])
    return {int: "3", float: "1.5"}.get(option.type, "some/where")  # type: ignore[call-overload]


def _tables() -> dict[str, options.OptionTable]:
    tables = {}
    for name in cli.COMMANDS:
        commands = options.Commands()
        try:
            cli._command_module(name).register(commands)
        except options.Unsupported:
            continue
        assert commands.table is not None
        cli._add_shared_options(name, commands.table, placeholder=False, suppress=options.SUPPRESS)
        tables[name] = commands.table
    return tables


def test_run_and_most_commands_have_a_table() -> None:
    assert {"run", "validate", "schema", "devices", "listing"} <= set(_tables())


@pytest.mark.parametrize("name", sorted(_tables()))
def test_each_option_reads_as_argparse_reads_it(name: str) -> None:
    table = _tables()[name]
    positionals = [_sample(o) for o in table._actions if not o.option_strings]
    positionals += [w for o in table._actions if o.option_strings and o.required
                    for w in (o.option_strings[-1], _sample(o))]
    lines = [[name, *positionals], ["--log-level", "DEBUG", name, *positionals],
             ["--tool-timeout=5", name, *positionals, "--log-level", "info"]]
    for option in table._actions:
        if option.option_strings and option.simple:
            flag = option.option_strings[-1]
            value = [] if option.action in ("store_true", "store_false") else [_sample(option)]
            lines.append([name, flag, *value, *positionals])
            lines.append([name, *positionals, flag, *value, flag, *value])  # twice: the last, or both appended
            if value:
                lines.append([name, f"{flag}={value[0]}", *positionals])
    read = 0
    for words in lines:
        expected = _argparse(words)
        got = _quick(words)
        if expected is None:
            assert got is None, words
        else:
            assert got == expected, words
            read += 1
    assert read > len(lines) // 2


@pytest.mark.parametrize("words", [
    ["run", "--help"], ["run", "-h"], ["--help", "run"], ["--version", "run"], ["run", "-v"],
    ["run", "s.json", "--outptu", "o"], ["run", "--output"], ["run", "--output", "--check"],
    ["run", "--backend", "vulkn", "s.json"], ["run", "--repeat", "two"], ["run", "--dry-run=1"],
    ["run", "a.json", "b.json"], ["run", "--", "s.json"], ["run", "--disable-extension", "VK_KHR_maintenance5"],
    ["run", "--neural-statistics-dump-dir"], ["run", "--repeat", "-1"], ["--log-level", "loud", "run"],
    ["run", "--out", "o"],  # no abbreviations (allow_abbrev=False)
])
def test_what_the_table_does_not_read_goes_to_argparse(words: list[str]) -> None:
    assert _quick(words) is None


def test_a_run_line_is_read_without_argparse(tmp_path: Path) -> None:
    assert _quick(["run", "s.json", "--output", "o", "--repeat=2", "--set", "n=1", "--set", "m=2"]) == \
        _argparse(["run", "s.json", "--output", "o", "--repeat=2", "--set", "n=1", "--set", "m=2"])
    code = ("import sys\nfrom kernellab import cli\nns = cli._read_quickly(['run', 's.json', '--dry-run'])\n"
            "print(ns.file, ns.dry_run, 'argparse' in sys.modules, 'gettext' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["s.json", "True", "False", "False"]


def test_errors_and_help_still_come_from_argparse(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "s.json", "--outptu", "o"])
    assert exc.value.code == 2 and "did you mean --output?" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--help"])
    assert exc.value.code == 0 and "--pipeline-caching" in capsys.readouterr().out
