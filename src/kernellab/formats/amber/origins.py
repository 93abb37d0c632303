"""Where each shader file made from an AmberScript file came from, and a compiler's error told
in the script's words.

The materializer writes a shader's text (or module) to a file of its own (``shader0.comp``,
``pipeline1.clspv.spv``) that the compilers read; their messages name that file and its lines,
which the user never wrote. :func:`translated` turns such a :class:`CompileError` into one that
names the script (or the ``FILE`` a shader was read from) and the line there, keeping the
tool's own words. The origins are recorded beside the files (:data:`ORIGINS_FILE`), so a compile
that happens later (a run, ``verify``, ``listing``) finds them from the file it compiled alone.
"""
from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import asdict
from pathlib import Path

from kernellab.errors import CompileError, Problem, ToolFailure
from kernellab.outputs import write_text
from kernellab.records import dataclass

#: written by the materializer beside the files it makes: file name -> :class:`ShaderOrigin`
ORIGINS_FILE = "amber-origins.json"


@dataclass(frozen=True)
class ShaderOrigin:
    #: the script, as the user named it
    script: str
    #: the shader's name and format (GLSL, SPIRV-ASM, ...) as the SHADER statement gives them
    shader: str
    format: str
    #: the line of the SHADER statement: where a message without a line of its own is placed
    line: int
    #: the file holding the text (the script, or a FILE beside it) and the line of its first
    #: line there (0: a binary, no lines)
    text_file: str
    text_line: int
    #: the SPIR-V assembly, where a validator's message quotes an instruction to find in it
    assembly: str = ""

    def where(self, line: int, column: int = 0) -> tuple[str, str]:
        """(file, place) of line ``line`` (1-based) of the shader's text."""
        if line < 1 or not self.text_line:
            return self.script, f"line {self.line}"
        at = f"line {self.text_line + line - 1}"
        return self.text_file, f"{at}, column {column}" if column else at


def write_origins(folder: Path, origins: Mapping[str, ShaderOrigin]) -> None:
    """Record ``origins`` (by file name) in ``folder``, through a temporary file of this process's
    own (runs of one script at once share its folder)."""
    write_text(folder / ORIGINS_FILE, json.dumps({name: asdict(o) for name, o in origins.items()}, indent=1) + "\n")


def origin_of(source: str | os.PathLike[str]) -> ShaderOrigin | None:
    """The origin recorded beside ``source``, or None (not made from a script, or a record that
    cannot be read: the error then names the file as it is)."""
    source = Path(source)
    try:
        record = json.loads((source.parent / ORIGINS_FILE).read_text())[source.name]
        return ShaderOrigin(**record)
    except (OSError, ValueError, KeyError, TypeError):
        return None


# the message formats of the tools that compile a script's shaders
_GLSLANG = re.compile(r"ERROR: (?P<name>.+?):(?P<line>\d+): (?P<message>.*)")
_HLSL_PARSE = re.compile(r"(?P<name>.+?)\((?P<line>\d+)\): error at column (?P<column>\d+), (?P<message>.*)")
_SPIRV_AS = re.compile(r"error: (?P<line>\d+): (?P<column>\d+): (?P<message>.*)")
_CLANG = re.compile(r"(?P<name>.+?):(?P<line>\d+):(?P<column>\d+): (?:fatal )?error: (?P<message>.*)")
#: an OpenCL driver's build log (PoCL)
_DRIVER = re.compile(r"error: (?P<name>.+?):(?P<line>\d+):(?P<column>\d+): (?P<message>.*)")
#: spirv-val's and spirv-opt's: "line" counts the module's instructions, from 1
_VALIDATOR = re.compile(r"error: line (?P<index>\d+): (?P<message>.*)")
#: glslang's count and closing lines, which say nothing of the shader
_NOISE = re.compile(r"'' : compilation terminated|\d+ compilation errors\.")
#: file names a compiler's messages may give the shader's text under: the files kernellab
#: writes (``shader0.comp``) and the tools' own temporary inputs
_INPUT_NAMES = ("shader.hlsl", "shader.spvasm", "0", "<stdin>")
#: arguments that name files (the repro is kept only while they exist)
_FILE_SUFFIXES = (".comp", ".cl", ".hlsl", ".spv", ".spvasm", ".glsl", ".bc", ".ll")


def translated(exc: CompileError, origin: ShaderOrigin, names: Iterable[str] = ()) -> CompileError:
    """``exc`` told in the script's words: each error of the tool's log that names a line of
    the shader's text at that line of the script (or of its ``FILE``), the others at the SHADER
    statement; then which tool failed, with its options, and its repro only while every file
    the repro names still exists. ``names``: the file names the log may give the text under.
    Unchanged when ``exc`` names a place already."""
    if any(p.file or p.where for p in exc.problems):
        return exc
    failure = exc.failure
    # a driver's build (no tool of kernellab's) says it all in the message
    log = failure.log if failure is not None else str(exc)
    problems = _located(log, origin, {*names, *_INPUT_NAMES})
    head = f"SHADER {origin.shader} ({origin.format})"
    if not problems:
        text = "\n".join(line for line in log.strip().splitlines() if line.strip())
        problems = [Problem(origin.script, f"line {origin.line}", f"{head}: {text or 'no message'}")]
    else:
        problems = [Problem(p.file, p.where, f"{head}: {p.message}") for p in problems]
    if failure is None and problems[0].where != f"line {origin.line}":
        # the driver's own first line says what failed and with which options
        tool, _, rest = str(exc).partition("\n")[0].partition(": ")
        if os.path.basename(tool.split(":")[0]) in {*names, *_INPUT_NAMES} and rest:
            last = problems[-1]
            problems[-1] = Problem(last.file, last.where, f"{last.message}\n{rest}")
    if failure is not None:
        tail = " ".join(filter(None, (failure.tool, _options(failure), f"failed (exit {failure.returncode})")))
        if not _names_missing_files(failure.argv):
            tail += f"\nrepro: {failure.repro}"
        last = problems[-1]
        problems[-1] = Problem(last.file, last.where, f"{last.message}\n{tail}")
    out = CompileError("\n".join(str(p) for p in problems))
    out.failure = failure
    out.problems = problems
    return out


def _located(log: str, origin: ShaderOrigin, known: set[str]) -> list[Problem]:
    """The log's errors that name a line of the shader's text, placed in the user's file."""
    out: list[Problem] = []
    lines = log.splitlines()
    for n, text in enumerate(lines):
        text = text.rstrip()
        line = column = 0
        m = next(filter(None, (p.fullmatch(text) for p in (_GLSLANG, _HLSL_PARSE, _CLANG, _DRIVER))), None)
        if m is not None and os.path.basename(m["name"]) not in known:
            continue  # a line of an included file, or the tool's own
        if m is None:
            m = _SPIRV_AS.fullmatch(text)
        if m is not None:
            line, column = int(m["line"]), int(m.groupdict().get("column") or 0)
        elif (m := _VALIDATOR.fullmatch(text)) is not None:
            line = _instruction_line(int(m["index"]), lines[n + 1:], origin.assembly)
        if m is None or _NOISE.fullmatch(m["message"].strip()):
            continue
        file, where = origin.where(line, column)
        problem = Problem(file, where, m["message"].strip())
        if problem not in out:
            out.append(problem)
    return out


def _instruction_line(index: int, after: list[str], assembly: str) -> int:
    """The line of ``assembly`` holding instruction ``index`` (spirv-as keeps their order, one
    to a line), when it is the instruction the validator quotes under its message; or 0."""
    quoted = next((q.split() for q in after[:3] if q.startswith(" ") and "Op" in q), [])
    opcode = next((w for w in quoted if w.startswith("Op")), None)
    instructions = [(k, line.split(";")[0].split()) for k, line in enumerate(assembly.splitlines(), 1)]
    instructions = [(k, words) for k, words in instructions if words]
    if opcode is None or not 1 <= index <= len(instructions):
        return 0
    k, words = instructions[index - 1]
    return k if opcode in words else 0


def _options(failure: ToolFailure) -> str:
    """The tool's arguments less the files it read and wrote (temporary, or kernellab's own)."""
    out: list[str] = []
    args = iter(failure.argv[1:])
    for a in args:
        if a in ("-o", "-m"):
            next(args, None)
        elif not _is_file(a):
            out.append(a)
    return shlex.join(out)


def _is_file(arg: str) -> bool:
    return not arg.startswith("-") and ("/" in arg or arg.endswith(_FILE_SUFFIXES))


def _names_missing_files(argv: list[str]) -> bool:
    """Whether an argument naming a file names one that is not there (a deleted temporary
    folder, or a name relative to the folder the tool ran in)."""
    return any(_is_file(a) and not (os.path.isabs(a) and os.path.exists(a)) for a in argv[1:])
