"""Text from a workload reaches the person escaped (issue 18, point 5): ESC, BEL and U+202E in a
uid, a field name, a path, a compiler log, a source line and a listing's op names are shown as
``\\x1b``, ``\\x07``, ``\\u202e`` by every command and format; JUnit XML parses for any input; a
bad ``KERNELLAB_*`` value is one warning line."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pytest

from helpers.scenarios import vector_add, write
from kernellab import textsafe
from kernellab.suite.reports import junit_xml
from kernellab.suite.results import TestResult
from kernellab.suite.runner import SuiteOutcome

#: a terminal title change, a bell and a right-to-left override
HOSTILE = "\x1b]0;pwned\x07\u202eevil"
SHOWN = "\\x1b]0;pwned\\x07\\u202eevil"
RAW = ("\x1b", "\x07", "\u202e")


def cli(*args: object, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp", **(env or {})}, timeout=timeout)


def assert_escaped(proc: subprocess.CompletedProcess[str], *, shown: str = SHOWN) -> None:
    for stream in (proc.stdout, proc.stderr):
        assert not any(c in stream for c in RAW), stream
    assert "Traceback" not in proc.stderr
    assert shown in proc.stdout + proc.stderr, (proc.stdout, proc.stderr)


# --- the function --------------------------------------------------------------------------------

def test_controls_and_direction_characters_become_escapes() -> None:
    assert textsafe.escape(HOSTILE) == SHOWN
    assert textsafe.escape("a\x00b\x7fc\x85d\x9b") == "a\\x00b\\x7fc\\x85d\\x9b"
    assert textsafe.escape("\u200e\u200f\u061c\u2066\u2069\ufeff\U000e0041") == \
        "\\u200e\\u200f\\u061c\\u2066\\u2069\\ufeff\\U000e0041"
    assert textsafe.escape("caf\u00e9 \u00b5s \u2014 ok") == "caf\u00e9 \u00b5s \u2014 ok"  # printable: kept


def test_newlines_and_tabs_kept_in_messages_escaped_in_one_line_fields() -> None:
    assert textsafe.escape("a\n\tb\rc") == "a\n\tb\\x0dc"
    assert textsafe.escape_line("a\n\tb") == "a\\x0a\\x09b"


def test_bytes_that_were_not_utf8_are_shown_escaped() -> None:
    name = b"k\xff".decode("utf-8", "surrogateescape")
    assert textsafe.escape(name) == "k\\udcff"


def test_the_escaping_stream_names_itself_when_a_write_fails() -> None:
    with open("/dev/full", "w", encoding="utf-8") as full:
        stream = textsafe.EscapingStream(full, "standard output")
        with pytest.raises(OSError) as caught:
            stream.write("x" * 100_000)
            stream.flush()
    assert caught.value.filename == "standard output"


# --- JUnit XML -----------------------------------------------------------------------------------

def _result(id_: str, text: str, outcome: str = "fail") -> TestResult:
    return TestResult(id=id_, status="fail", duration_s=0.1, message=text, outcome=outcome, device=text, worker=text)


def test_junit_is_well_formed_for_every_character() -> None:
    everything = "".join(chr(c) for c in range(0x3000)) + "\ud800\udfff\ufffe\uffff\U0010ffff"
    results = [_result(f"a{HOSTILE}/b{everything[:64]}/w.json", everything, outcome)
               for outcome in ("fail", "flaky", "expected-fail", "unexpected-pass")]
    xml = junit_xml(SuiteOutcome(results, 1.0), suite_name=f"suite{HOSTILE}")
    root = ET.fromstring(xml.encode("utf-8"))
    case = root.find("testsuite/testcase")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None and failure.text is not None
    assert "\\x1b" in failure.text and "\\u202e" in failure.text and "\\udfff" in failure.text
    assert "\x1b" not in xml and "\u202e" not in xml


# --- the commands --------------------------------------------------------------------------------

def _hostile_scenario(tmp: Path) -> Path:
    path, doc = vector_add(tmp)
    doc["resources"][0]["shader"][f"field{HOSTILE}"] = 1  # an unknown field: a warning naming it
    return write(path, doc)


def test_validate_escapes_field_names(tmp_path: Path) -> None:
    proc = cli("validate", _hostile_scenario(tmp_path), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert_escaped(proc, shown=f"field{SHOWN}")


def test_validate_escapes_uids_and_paths(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    doc["resources"][0]["shader"]["src"] = f"add{HOSTILE}.comp"
    doc["commands"][0]["dispatch_compute"]["bindings"][2]["resource_ref"] = f"c{HOSTILE}"
    proc = cli("validate", write(path, doc), cwd=tmp_path)
    assert proc.returncode == 2
    assert_escaped(proc, shown=f"add{SHOWN}.comp")
    assert f"c{SHOWN}" in proc.stderr


@pytest.mark.parametrize("command", ["validate", "run"])
@pytest.mark.parametrize("exists", [False, True])
def test_a_data_path_with_a_newline_stays_on_its_line(tmp_path: Path, command: str, exists: bool) -> None:
    """A buffer's ``src`` holding a newline printed a line of the file's choosing after the error
    (``...: file not found: /w/b`` then ``scenario.json: valid scenario ...``)."""
    path, doc = vector_add(tmp_path)
    name = "b\nscenario.json: valid scenario (5 resources, 1 command).npy"
    if exists:
        (tmp_path / name).write_bytes(b"not a .npy file")
    doc["resources"][3]["buffer"]["src"] = name
    proc = cli(command, write(path, doc), "--output", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "/resources/3/buffer/src" in lines[0], proc.stderr
    assert "b\\x0ascenario.json: valid scenario" in lines[0]


@pytest.mark.parametrize("command", ["run", "verify"])
def test_compiler_logs_are_escaped(tmp_path: Path, command: str) -> None:
    path, _ = vector_add(tmp_path)
    # glslang quotes a #line file name in its log as it is (clang and the OpenCL drivers escape or drop
    # control characters themselves)
    (tmp_path / "add.comp").write_text("#version 450\n#extension GL_GOOGLE_cpp_style_line_directive : require\n"
                                       f'#line 1 "a{HOSTILE}"\n#error {HOSTILE}\nvoid main() {{}}\n')
    args = ("--output", tmp_path / "out") if command == "run" else ()
    proc = cli(command, path, *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert_escaped(proc, shown=f"a{SHOWN}:1: '#error'")


def test_run_escapes_a_uid_in_an_error(tmp_path: Path) -> None:
    path, doc = vector_add(tmp_path)
    doc["commands"][0]["dispatch_compute"]["bindings"][2]["resource_ref"] = f"c{HOSTILE}"
    proc = cli("run", write(path, doc), "--output", tmp_path / "out", cwd=tmp_path)
    assert proc.returncode == 2
    assert_escaped(proc, shown=f"c{SHOWN}")


RACE = """#version 450
layout(local_size_x = 16) in;
layout(set = 0, binding = 0) buffer Data { uint data[]; };
void main() {
    data[0] = gl_LocalInvocationID.x; // %s
}
"""


def test_verify_escapes_source_lines_and_uids(tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text(RACE % HOSTILE)
    path = write(tmp_path / "scenario.json", {
        "resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
                      {"buffer": {"uid": f"d{HOSTILE}", "size": 64, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": f"d{HOSTILE}"}]}}]})
    proc = cli("verify", path, cwd=tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "data-race" in proc.stdout
    assert_escaped(proc)
    as_json = cli("verify", path, "--json", cwd=tmp_path)
    assert not any(c in as_json.stdout for c in RAW)
    assert "\\u001b]0;pwned\\u0007" in as_json.stdout  # JSON's own escapes: the value read back is the file's
    json.loads(as_json.stdout)


@pytest.fixture(scope="module")
def hostile_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SPIR-V module whose OpName holds ESC, BEL and U+202E."""
    folder = tmp_path_factory.mktemp("listing")
    (folder / "k.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\n"
                                   "layout(set = 0, binding = 0) buffer B { uint x[]; } zzzzzzzz;\n"
                                   "void main() { zzzzzzzz.x[0] = 1u; }\n")
    spv = folder / "k.spv"
    made = cli("snapshot", folder / "k.comp", "--stage", "spirv", "--format", "binary", "-o", spv, cwd=folder)
    assert made.returncode == 0, made.stderr
    hostile = b"\x1b\x07\xe2\x80\xaezzz"  # the same 8 bytes: the OpName's words keep their length
    spv.write_bytes(spv.read_bytes().replace(b"zzzzzzzz", hostile))
    return spv


@pytest.mark.parametrize("fmt", ["text", "json", "dot", "html"])
def test_listing_escapes_op_names(hostile_module: Path, fmt: str) -> None:
    proc = cli("listing", hostile_module, "--format", fmt, cwd=hostile_module.parent)
    assert proc.returncode == 0, proc.stderr
    shown = {"json": "\\u001b\\u0007\\u202ezzz",  # JSON's own escapes
             "dot": "\\\\x1b\\\\x07\\\\u202ezzz"}  # dot's label escaping doubles the backslashes
    assert_escaped(proc, shown=shown.get(fmt, "\\x1b\\x07\\u202ezzz"))


def test_a_listing_written_to_a_file_is_escaped(hostile_module: Path, tmp_path: Path) -> None:
    out = tmp_path / "k.txt"
    proc = cli("listing", hostile_module, "--format", "text", "-o", out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = out.read_text(encoding="utf-8")
    assert "\\x1b\\x07\\u202ezzz" in text and not any(c in text for c in RAW)


def _hostile_suite(root: Path) -> Path:
    folder = root / f"w{HOSTILE}"
    folder.mkdir(parents=True)
    path, doc = vector_add(folder, 8)
    doc["resources"][4]["buffer"]["uid"] = f"c{HOSTILE}"
    doc["commands"][0]["dispatch_compute"]["bindings"][2]["resource_ref"] = f"c{HOSTILE}"
    write(path, doc)
    np.save(folder / "wrong.npy", np.zeros(8, np.float32))  # c = a + 2 is not 0: the workload fails
    write(folder / "scenario.expect.json", {"description": f"d{HOSTILE}",
                                            "outputs": {f"c{HOSTILE}": {"reference": "wrong.npy"}}})
    return root


def test_the_suite_reports_are_escaped_and_junit_parses(tmp_path: Path) -> None:
    root = _hostile_suite(tmp_path / "suite")
    junit = tmp_path / "junit.xml"
    proc = cli("test", root, "--junit", junit, "--json", "--no-rerun", cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stderr
    assert_escaped(proc)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert rows and HOSTILE in rows[0]["id"]  # JSON writes \u001b: the exact value, nothing raw
    tree = ET.parse(junit)
    text = ET.tostring(tree.getroot(), encoding="unicode")
    assert SHOWN in text and not any(c in text for c in RAW)


# --- settings --------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, value", [("KERNELLAB_LOG_LEVEL", "FOO"), ("KERNELLAB_TOOL_TIMEOUT", "soon"),
                                         ("KERNELLAB_NO_CACHE", "maybe"), ("KERNELLAB_VULKAN_VALIDATION", "2x"),
                                         ("KERNELLAB_LOG_LEVEL", HOSTILE)])
def test_a_bad_setting_is_one_warning_line_and_the_command_goes_on(tmp_path: Path, name: str, value: str) -> None:
    path, _ = vector_add(tmp_path)
    proc = cli("validate", path, cwd=tmp_path, env={name: value})
    assert proc.returncode == 0, proc.stderr
    assert "valid scenario" in proc.stdout
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and name in lines[0] and "using" in lines[0], lines
    assert not any(c in proc.stderr for c in RAW)


def test_a_bad_verify_work_limit_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "k.comp").write_text(RACE % "x")
    path = write(tmp_path / "scenario.json", {
        "resources": [{"shader": {"uid": "k", "src": "k.comp", "type": "GLSL"}},
                      {"buffer": {"uid": "d", "size": 64, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "d"}]}}]})
    proc = cli("verify", path, cwd=tmp_path, env={"KERNELLAB_VERIFY_MAX_WORK": "lots"})
    assert proc.returncode == 1 and "data-race" in proc.stdout, proc.stderr
    assert "KERNELLAB_VERIFY_MAX_WORK='lots' is not a positive number" in proc.stderr
