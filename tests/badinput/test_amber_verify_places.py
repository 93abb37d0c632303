"""`verify` on an AmberScript file: its refusals and findings name the script (or the FILE a
shader was read from) and the line there — the SHADER, BIND or RUN the checker's place stands
for — never the scenario and shader files kernellab made from it in its cache."""
from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernellab import config
from kernellab.cli import main
from kernellab.errors import Problem
from kernellab.formats.amber.places import in_script

SHADER = """#!amber
SHADER compute sh GLSL{file}
{text}
BUFFER buf DATA_TYPE uint32 SIZE 16 FILL 0

PIPELINE compute pipe
  ATTACH sh
  BIND BUFFER buf AS storage DESCRIPTOR_SET 0 BINDING 0
{bind}
END

RUN pipe 1 1 1
"""
#: a write past the 16 elements of the buffer, on the shader's line 5
OUT_OF_BOUNDS = """#version 430
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer B { uint d[]; } b;
void main() {
  b.d[gl_LocalInvocationID.x + 14u] = 1u;
}
"""

TWO_BINDINGS = """#version 430
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer A { uint d[]; } a;
layout(set = 0, binding = 1) buffer B { uint d[]; } b;
void main() { b.d[0] = a.d[0]; }
"""

#: a texel fetch the prover does not model, on the shader's line 6 (the script's 8)
FETCH = """layout(set = 0, binding = 1) uniform usamplerBuffer t;
void main() {
  b.d[0] = texelFetch(t, 0).x;"""


def script(text: str = OUT_OF_BOUNDS, bind: str = "", file: str = "") -> str:
    return SHADER.format(text=text + "END\n" if text else "", bind=bind, file=f" FILE {file}" if file else "")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Scripts named relative to the working folder, as a user types them; a cache of their own."""
    monkeypatch.chdir(tmp_path)
    with config.override(cache_dir=tmp_path / "cache", compile_cache=False):
        yield


def verify(capsys: pytest.CaptureFixture[str], status: int, *argv: str) -> tuple[str, str]:
    assert main(["verify", *argv]) == status
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    assert "/cache/" not in out + err and "shader0" not in out + err and "pipe.json" not in out + err, out + err
    return out, err


def test_a_finding_names_the_scripts_line_and_run(capsys: pytest.CaptureFixture[str]) -> None:
    Path("o.amber").write_text(script())
    out, _ = verify(capsys, 1, "o.amber")
    # the shader's line 5 is the script's 7 (its text starts on line 3); the RUN is line 19
    assert "  at o.amber:7:3\n      b.d[gl_LocalInvocationID.x + 14u] = 1u;\n" in out, out
    assert "element 16 (RUN at line 19)" in out, out
    assert "\no.amber: 1 defect (1 out-of-bounds)" in out, out


def test_a_finding_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    Path("o.amber").write_text(script())
    out, _ = verify(capsys, 1, "--json", "o.amber")
    doc = json.loads(out)
    assert doc["file"] == "o.amber"
    (finding,) = doc["findings"]
    assert finding["location"] == {"file": "o.amber", "line": 7, "column": 3}
    assert finding["source"]["file"] == "o.amber" and finding["source"]["line"] == 7
    assert finding["detail"] == "RUN at line 19"


def test_a_shader_from_a_file_names_that_file(capsys: pytest.CaptureFixture[str]) -> None:
    Path("x.comp").write_text(OUT_OF_BOUNDS)
    Path("f.amber").write_text(script(text="", file="x.comp"))
    out, _ = verify(capsys, 1, "f.amber")
    assert "  at x.comp:5:3\n" in out and "(RUN at line 12)" in out and "\nf.amber: 1 defect" in out, out


@pytest.mark.parametrize("json_output", [[], ["--json"]])
def test_a_refused_binding_names_its_bind(capsys: pytest.CaptureFixture[str], json_output: list[str]) -> None:
    """The checker's refusal of one binding names that binding's BIND (line 15), not the RUN."""
    Path("t.amber").write_text(script(text=TWO_BINDINGS, bind="  BIND BUFFER buf AS storage DESCRIPTOR_SET 0 "
                                                              "BINDING 1 DESCRIPTOR_OFFSET 16"))
    _, err = verify(capsys, 2, *json_output, "t.amber")
    assert err == ("t.amber: line 15: buffer buf is bound twice with different ranges; overlapping bindings of one "
                   "buffer are not supported by the SPIR-V checker\n"), err


def test_a_refused_shader_names_its_shader_statement(capsys: pytest.CaptureFixture[str]) -> None:
    Path("a.amber").write_text(script(text="""#version 430
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint d[]; } b;
layout(set = 0, binding = 1) uniform usamplerBuffer t[2];
void main() { b.d[0] = texelFetch(t[1], 0).x; }
"""))
    _, err = verify(capsys, 2, "a.amber")
    assert err.startswith("a.amber: line 2: SHADER sh (GLSL), word "), err
    assert " of its SPIR-V module: a UniformConstant variable of type array is not supported by the SPIR-V " \
           "checker" in err, err


def test_files_not_made_from_a_script_are_left_as_they_are(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text("{}")
    problem = Problem(str(tmp_path / "s.json"), "/commands/0", "refused")
    assert in_script(problem) is problem


@pytest.mark.skipif(importlib.util.find_spec("z3") is None, reason="z3 is not installed")
def test_a_proof_names_the_scripts_lines(capsys: pytest.CaptureFixture[str]) -> None:
    Path("o.amber").write_text(script())
    out, _ = verify(capsys, 1, "--prove", "o.amber")
    assert "  at o.amber:7:" in out and "\no.amber: 1 defect (1 out-of-bounds)" in out, out
    # a construct the prover does not model: the reason's line is the script's, not the shader's 5
    Path("a.amber").write_text(script(text=OUT_OF_BOUNDS.replace("void main() {", FETCH)))
    out, _ = verify(capsys, 3, "--prove", "a.amber")
    assert out.startswith("launch 0 (pipeline.pipe (main)): unknown — unsupported construct: ") and \
        out.splitlines()[0].endswith(" at a.amber:8"), out
