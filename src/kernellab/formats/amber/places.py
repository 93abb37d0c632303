"""The place in an AmberScript file that a message about kernellab's files made from it stands
for: a refusal or a finding names the script (or a shader's ``FILE``) and its line, never the
cache folder the user never wrote.

The materializer records two things beside the files it writes: each shader file's origin
(:mod:`kernellab.formats.amber.origins`) and, here, the script line each place of the scenario
JSON stands for (:data:`PLACES_FILE`: a command's ``RUN`` or ``COPY``, a binding's ``BIND``, a
resource's ``BUFFER`` or ``PIPELINE``). A problem naming one of those files is told again at
the user's line, found from the file it names alone.
"""
from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from kernellab.errors import CompileError, InputError, KernellabError, Problem
from kernellab.formats.amber.origins import ORIGINS_FILE, ShaderOrigin, origin_of
from kernellab.outputs import write_text

#: written by the materializer beside the scenarios: the script, and JSON pointer -> line
PLACES_FILE = "amber-places.json"

_LINE = re.compile(r"line (?P<line>\d+)(?:, column (?P<column>\d+))?")


def write_places(folder: Path, script: str, lines: Mapping[str, int]) -> None:
    """Record which line of ``script`` each JSON pointer of the folder's scenarios stands for,
    through a temporary file of this process's own, never a symlink (runs of one script at once
    share its folder: a fixed ``.tmp`` name was truncated under the other's rename)."""
    write_text(folder / PLACES_FILE, json.dumps({"script": script, "lines": dict(lines)}, indent=1) + "\n")


def _places(folder: Path) -> tuple[str, dict[str, int]] | None:
    try:
        record = json.loads((folder / PLACES_FILE).read_text())
        return str(record["script"]), {str(k): int(v) for k, v in record["lines"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def script_line(folder: Path, pointer: str) -> tuple[str, int] | None:
    """(script, line) the scenario place ``pointer`` stands for (its longest recorded prefix:
    ``/commands/2/dispatch_compute/rangeND`` is the ``RUN``'s), or None when the folder was not
    made from a script; line 0 when no prefix is recorded."""
    places = _places(folder)
    if places is None:
        return None
    script, lines = places
    parts = pointer.split("/")
    for n in range(len(parts), 1, -1):
        line = lines.get("/".join(parts[:n]))
        if line:
            return script, line
    return script, 0


def shader_place(origin: ShaderOrigin, line: int, column: int = 0) -> tuple[str, int, int]:
    """(file, line, column) of line ``line`` of the shader's text in the user's files; the
    ``SHADER`` statement (column 0) when the text has no lines (a binary) or none is given."""
    if line < 1 or not origin.text_line:
        return origin.script, origin.line, 0
    return origin.text_file, origin.text_line + line - 1, column


def in_script(problem: Problem) -> Problem:
    """``problem`` at the user's place when it names a file made from a script; else unchanged."""
    if not problem.file:
        return problem
    path = Path(problem.file)
    origin = origin_of(path)
    if origin is not None:
        head = f"SHADER {origin.shader} ({origin.format})"
        m = _LINE.fullmatch(problem.where)
        if m is not None:
            file, line, column = shader_place(origin, int(m["line"]), int(m["column"] or 0))
            where = f"line {line}, column {column}" if column else f"line {line}"
            return Problem(file, where, f"{head}: {problem.message}", problem.warning)
        # a place in the module (``word 695``) says nothing in the script: said after the shader
        said = f"{head}, {problem.where} of its SPIR-V module" if problem.where else head
        return Problem(origin.script, f"line {origin.line}", f"{said}: {problem.message}", problem.warning)
    if not (path.parent / ORIGINS_FILE).exists():
        return problem
    found = script_line(path.parent, problem.where or "/")
    if found is None:
        return problem
    script, line = found
    return Problem(script, f"line {line}" if line else "", problem.message, problem.warning)


def error_in_script(exc: KernellabError) -> KernellabError:
    """``exc`` with each of its problems at the user's place (a compile error is told so where
    it is raised: :func:`kernellab.formats.amber.origins.translated`)."""
    if not isinstance(exc, InputError) or isinstance(exc, CompileError):
        return exc
    problems = [in_script(p) for p in exc.problems]
    if problems == exc.problems:
        return exc
    out = copy.copy(exc)
    InputError.__init__(out, problems)
    out.__traceback__ = None
    return out


def file_in_script(path: str | os.PathLike[str]) -> str:
    """The script a scenario file made from one stands for, else ``path`` as given."""
    found = script_line(Path(path).parent, "/")
    return found[0] if found is not None else os.fspath(path)
