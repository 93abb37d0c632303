"""The commands the documentation shows exist as written: every ``kernellab`` command in README.md,
docs/*.md, the examples' READMEs, CONFORMANCE.md, BENCHMARKS.md and the commands' own help names a
subcommand and options the parser has (a renamed flag fails here, with the file and line), a
complete command in a code block parses, every ``--flag`` the user docs quote belongs to kernellab
or to a tool named below, every option has a help line, and the benchmark and conformance scripts
BENCHMARKS.md and CONFORMANCE.md run have the options they are shown with. Nothing runs on a
device."""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernellab import cli

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("examples/**/README.md"))]
#: the reports quote kernellab commands too (their other tools' flags are not listed below)
COMMAND_DOCS = [*DOCS, ROOT / "CONFORMANCE.md", ROOT / "BENCHMARKS.md"]

#: ``--flags`` the docs quote that belong to other programs, with whose they are
OTHER_TOOLS_FLAGS = {
    "--kernellab-device": "kernellab's pytest plugin",
    "--fuzz-long": "tests/conftest.py", "--fuzz-seed": "tests/conftest.py",
    "--table": "tests/helpers/sync_layer.py",
    "--units": "python -m kernellab.verify.harness", "--uninitialized": "python -m kernellab.verify.harness",
    "--print-all": "spirv-opt", "--skip-validation": "spirv-opt", "--relax-": "spirv-opt (--relax-*)",
    "--raw-id": "spirv-dis", "--spirv-max-version": "llvm-spirv", "--glsl-version": "glslangValidator",
    "--build-opts": "Arm's glslc", "--include": "Arm's glslc", "--depfile": "clang",
    "--relaxed-errors": "glslangValidator", "--suppress-warnings": "glslangValidator",
    "--enhanced-msgs": "glslangValidator", "--nan-clamp": "glslangValidator", "--invert-y": "glslangValidator",
    "--head": "ray start",
    "--local": "GPUVerify", "--num": "GPUVerify (--num_groups)", "--global": "GPUVerify (--global_size)",
    "--boogie-file": "GPUVerify", "--vcgen-opt": "GPUVerify", "--no-barrier-access-checks": "GPUVerify",
    "--warp-sync": "GPUVerify", "--only-intra-group": "GPUVerify",
}

_FENCE = re.compile(r"^\s*```")
#: a command line in a code block: ``kernellab``, ``.venv/bin/kernellab`` or ``$ kernellab`` first
_CODE_COMMAND = re.compile(r"^\s*(?:\$\s+)?(?:\.venv/bin/)?kernellab\s+(?P<rest>[a-z].*)$")
#: a command quoted in the text
_INLINE_COMMAND = re.compile(r"`(?:\.venv/bin/)?kernellab (?P<rest>[^`]+)`")
_FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _code_lines(text: str) -> Iterator[tuple[int, str, bool]]:
    """(line number, line, whether it is code: in a fence or indented four spaces outside lists)."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        indented = line.startswith("    ") and not line.lstrip().startswith(("-", "*", "|"))
        yield number, line, fenced or indented


def documented_commands() -> list[tuple[str, str, bool]]:
    """(where, the words after ``kernellab``, whether it is a whole command from a code block)."""
    found = []
    for doc in COMMAND_DOCS:
        name = doc.relative_to(ROOT)
        for number, line, code in _code_lines(doc.read_text()):
            if code:
                m = _CODE_COMMAND.match(line)
                if m:
                    found.append((f"{name}:{number}", re.split(r"\s+#\s|\s\|\s|\s>\s", m["rest"])[0], True))
            else:
                found.extend((f"{name}:{number}", m["rest"], False) for m in _INLINE_COMMAND.finditer(line))
    return found


def _help_commands(parser: argparse.ArgumentParser) -> list[tuple[str, str, bool]]:
    """The ``kernellab ...`` commands quoted in the commands' descriptions and options' help."""
    found = []
    for name, command in _subparsers(parser).items():
        texts = [command.description or ""] + [a.help or "" for a in command._actions]
        for text in texts:
            found.extend((f"kernellab {name} --help", m["rest"], False) for m in _INLINE_COMMAND.finditer(text))
    return found


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _words(rest: str) -> list[str]:
    """The words of a documented command: ``[optional]`` parts kept, ``a\\|b`` as ``a``, ``...`` dropped."""
    rest = re.sub(r"\\?\|[^\s\]]*", "", rest)
    rest = rest.replace("[", " ").replace("]", " ").replace("...", " ")
    return shlex.split(rest)


@pytest.fixture(scope="module")
def parser() -> argparse.ArgumentParser:
    return cli.build_parser()


def test_the_docs_show_commands(parser: argparse.ArgumentParser) -> None:
    """The extraction finds the commands (a test that would pass on nothing checks nothing)."""
    found = documented_commands()
    assert len([c for c in found if c[2]]) > 50 and len(found) > 150
    assert any(where.startswith("examples/") for where, _, _ in found)
    assert {where for where, _, _ in _help_commands(parser)} >= {"kernellab capture --help", "kernellab import --help"}


def test_every_documented_command_and_option_exists(parser: argparse.ArgumentParser) -> None:
    commands = _subparsers(parser)
    program_options = set(parser._option_string_actions)
    wrong = []
    for where, rest, _ in documented_commands() + _help_commands(parser):
        words = _words(rest)
        while words and words[0].split("=", 1)[0] in program_options:  # `kernellab --version`
            words = words[2:] if words[0] in cli.GLOBAL_VALUED else words[1:]
        if not words and rest.startswith("-"):
            continue  # program options only, all known
        if not words or words[0] not in commands:
            wrong.append(f"{where}: `kernellab {rest}`: no command {words[:1]}")
            continue
        known = program_options | set(commands[words[0]]._option_string_actions)
        for word in words[1:]:
            if word == "--":  # what follows is the captured program's
                break
            if word.startswith("-") and len(word) > 1 and not word[1:].replace(".", "").isdigit():
                if word.split("=", 1)[0] not in known:
                    wrong.append(f"{where}: `kernellab {rest}`: {words[0]} has no option {word.split('=', 1)[0]}")
    assert wrong == []


def test_every_command_in_a_code_block_parses(parser: argparse.ArgumentParser) -> None:
    wrong = []
    for where, rest, whole in documented_commands():
        if not whole:
            continue
        err = io.StringIO()
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                parser.parse_args(_words(rest))
        except SystemExit as exc:
            if exc.code:
                wrong.append(f"{where}: `kernellab {rest}`: {err.getvalue().strip().splitlines()[-1]}")
    assert wrong == []


def test_every_quoted_flag_is_kernellabs_or_a_named_tools(parser: argparse.ArgumentParser) -> None:
    options = set(parser._option_string_actions)
    for command in _subparsers(parser).values():
        options |= set(command._option_string_actions)
    unknown = [f"{doc.relative_to(ROOT)}:{number}: {flag}"
               for doc in DOCS for number, line in enumerate(doc.read_text().splitlines(), 1)
               for flag in _FLAG.findall(line) if flag not in options and flag not in OTHER_TOOLS_FLAGS]
    assert unknown == []


def test_every_option_says_what_it_does(parser: argparse.ArgumentParser) -> None:
    silent = [f"kernellab {name} {a.option_strings or a.dest}"
              for name, command in _subparsers(parser).items() for a in command._actions if not a.help]
    assert silent == []


def _scripts_shown() -> dict[tuple[str, str], set[str]]:
    """(script, its subcommand or "") -> the options BENCHMARKS.md, CONFORMANCE.md and docs/ give it."""
    shown: dict[tuple[str, str], set[str]] = {}
    texts = [ROOT / "BENCHMARKS.md", ROOT / "CONFORMANCE.md", *sorted((ROOT / "docs").glob("*.md"))]
    for doc in texts:
        text = doc.read_text()
        spans = re.findall(r"`([^`]*)`", text) + [line for _, line, code in _code_lines(text) if code]
        for span in spans:
            for m in re.finditer(r"((?:benchmarks|conformance)/\w+\.py)(?: (run|convert)\b)?([^;)`]*)", span):
                script, sub, rest = m.group(1), m.group(2) or "", m.group(3)
                shown.setdefault((script, sub), set()).update(_FLAG.findall(rest))
    return shown


def test_the_benchmark_and_conformance_scripts_take_the_options_shown() -> None:
    shown = _scripts_shown()
    assert ("conformance/amber_corpus.py", "") in shown and len(shown) > 10
    wrong = []
    for (script, sub), flags in sorted(shown.items()):
        if not (ROOT / script).is_file():
            wrong.append(f"{script}: no such file")
            continue
        if not flags:
            continue  # shown without options (junit_table.py reads its arguments itself)
        # each script runs as shown (``python conformance/X.py``): from the root, as a file
        proc = subprocess.run([sys.executable, script, *([sub] if sub else []), "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        if proc.returncode != 0:
            if "No module named 'z3'" in proc.stderr and importlib.util.find_spec("z3") is None:
                continue  # the proof scripts load the optional solver (kernellab[prove]) first
            wrong.append(f"{script} {sub} --help: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            continue
        missing = flags - set(_FLAG.findall(proc.stdout))
        if missing:
            wrong.append(f"{script} {sub}: no option {sorted(missing)}")
    assert wrong == []


def test_every_documented_environment_variable_is_read() -> None:
    documented = {name for doc in DOCS for name in re.findall(r"\bKERNELLAB_[A-Z][A-Z_]*[A-Z]", doc.read_text())}
    source = "\n".join(p.read_text() for p in (ROOT / "src" / "kernellab").rglob("*.py"))
    assert len(documented) > 5
    assert sorted(name for name in documented if name not in source) == []
