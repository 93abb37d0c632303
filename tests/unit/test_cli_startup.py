"""`kernellab --help` and `--version` start fast (issue 11: under 50 ms): they import no command
module, and the lines `--help` lists are the ones each command registers."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from kernellab import cli


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {a.dest: a.help for a in action._choices_actions}


def test_help_lines_are_the_commands_own() -> None:
    assert _subcommands(cli.build_parser()) == cli.COMMANDS
    assert _subcommands(cli.build_parser(["--help"], only_named=True)) == cli.COMMANDS


@pytest.mark.parametrize("flag", ["--version", "--help"])
def test_version_and_help_import_no_command(flag: str) -> None:
    code = (f"import sys, json\nfrom kernellab.cli import main\ntry:\n    main([{flag!r}])\nexcept SystemExit:\n"
            "    pass\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    modules = json.loads(proc.stderr.strip().splitlines()[-1])
    # the parser of help and usage errors lives in cliextra, no command module is imported
    assert [m for m in modules if m.startswith("kernellab.") and m not in ("kernellab.cli", "kernellab.cliextra")] == []
    assert not any(m.split(".")[0] in ("numpy", "logging", "vulkan") for m in modules)
    assert ("kernellab " if flag == "--version" else "COMMAND") in proc.stdout


def test_an_unknown_command_is_refused_with_the_choices(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cli.main(["rnu"])
    assert exc.value.code == 2 and "invalid choice: 'rnu'" in capsys.readouterr().err
