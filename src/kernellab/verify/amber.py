"""A verify result on a scenario made from an AmberScript file, told in the script's words: the
file the script, each finding's source place the line of the script (or of the shader's
``FILE``) that holds it, each scenario command the ``RUN`` (or ``COPY``) line it stands for."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from kernellab.formats.amber.origins import origin_of
from kernellab.formats.amber.places import in_script, script_line, shader_place
from kernellab.verify.model import Finding, Location, VerifyResult

#: how a finding's detail names the scenario commands it happened in
_COMMANDS = re.compile(r"scenario commands? (/commands/\d+)(?: and (/commands/\d+))?")


def result_in_script(result: VerifyResult) -> VerifyResult:
    """``result`` naming the user's files and lines; unchanged when its file was not made from
    a script (the materializer's records are not beside it)."""
    folder = Path(result.file).parent
    found = script_line(folder, "/")
    if found is None:
        return result
    findings = [_finding(f, folder) for f in result.findings]
    launches = [dataclasses.replace(l, filled=[_text(n, folder) for n in l.filled],
                                    error=_text(l.error, folder) if l.error else l.error)
                for l in result.launches]
    return dataclasses.replace(result, file=Path(found[0]), findings=findings, launches=launches)


def _finding(f: Finding, folder: Path) -> Finding:
    accesses = [dataclasses.replace(a, location=_location(a.location)) for a in f.accesses]
    return dataclasses.replace(f, accesses=accesses, detail=_COMMANDS.sub(lambda m: _commands(m, folder), f.detail),
                               message=_text(f.message, folder))


def _location(loc: Location | None) -> Location | None:
    origin = origin_of(loc["file"]) if loc else None
    if loc is None or origin is None:
        return loc
    file, line, column = shader_place(origin, loc["line"], loc["column"])
    return {"file": file, "line": line, "column": column}


def _commands(m: re.Match[str], folder: Path) -> str:
    lines = [script_line(folder, p) for p in m.groups() if p]
    if any(found is None or not found[1] for found in lines):
        return m[0]
    said = " and ".join(str(found[1]) for found in lines if found)
    return f"{'RUNs at lines' if len(lines) > 1 else 'RUN at line'} {said}"


def _text(text: str, folder: Path) -> str:
    """A message that names a file of ``folder`` (``/…/shader0.comp:12: …``) at the user's place."""
    prefix = f"{folder}/"
    if prefix not in text:
        return text

    def told(m: re.Match[str]) -> str:
        from kernellab.errors import Problem

        p = in_script(Problem(prefix + m["name"], f"line {m['line']}" if m["line"] else "", ""))
        return f"{p.file}:{p.where.removeprefix('line ').split(',')[0]}" if p.where else p.file
    return re.sub(re.escape(prefix) + r"(?P<name>[\w.-]+)(?::(?P<line>\d+))?", told, text)



