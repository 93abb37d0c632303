"""A verify result on a scenario made from an AmberScript file, told in the script's words: the
file the script, each finding's source place the line of the script (or of the shader's
``FILE``) that holds it, each scenario command the ``RUN`` (or ``COPY``) line it stands for."""
from __future__ import annotations

import dataclasses
import json
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
    shaders = _shader_files(Path(result.file))
    launches = [dataclasses.replace(l, filled=[_text(n, folder) for n in l.filled],
                                    error=_text(l.error, folder) if l.error else l.error,
                                    reason=_reason(l.reason, folder / shaders.get(_uid(l.kernel), ""))
                                    if l.reason else l.reason)
                for l in result.launches]
    return dataclasses.replace(result, file=Path(found[0]), findings=findings, launches=launches)


def _shader_files(scenario: Path) -> dict[str, str]:
    """The scenario's shader files by uid (none when it cannot be read: nothing is mapped)."""
    try:
        resources = json.loads(scenario.read_text())["resources"]
        return {r["shader"]["uid"]: str(r["shader"]["src"]) for r in resources if "shader" in r}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def _uid(kernel: str | None) -> str:
    """The shader's uid of a launch's kernel (``pipeline.p (main)``)."""
    return (kernel or "").split(" (")[0]


#: a proof's reason names the line of the launch's shader it stopped at
_AT_LINE = re.compile(r" at line (\d+)$")


def _reason(reason: str, shader: Path) -> str:
    """A proof's reason at the user's line of the shader's text."""
    m = _AT_LINE.search(reason)
    origin = origin_of(shader) if m else None
    if m is None or origin is None:
        return _text(reason, shader.parent)
    file, line, _ = shader_place(origin, int(m[1]))
    return f"{reason[:m.start()]} at {file}:{line}"


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



