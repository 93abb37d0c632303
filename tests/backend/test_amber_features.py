"""AmberScript features of issue 21's point 1 beyond the first rounds (descriptor ranges, dynamic
and texel buffers, BUFFER_ARRAY, SHADER_OPTIMIZATION, clspv layout options, HLSL, COPY after RUN,
STRUCT, DEBUG) through `kernellab import` + `kernellab test`, and their skips.

Each feature's own file in tests/amber runs (with its negative twin) in test_amber_run.py; the
feature -> test table is in docs/amber.md."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FILES = Path(__file__).resolve().parent.parent / "amber"
NEW = ["descriptor_range", "dynamic_offsets", "buffer_array", "texel_buffers", "shader_optimization",
       "opencl_layout_options", "hlsl", "copy_after_run", "struct"]


def cli(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "XDG_RUNTIME_DIR": "/tmp"}, timeout=300)


def test_imported_scenarios_give_run_s_verdict(tmp_path):
    for name in NEW:
        r = cli("import", FILES / f"{name}.amber", "-o", tmp_path / "ok" / name, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
    r = cli("test", tmp_path / "ok", "--jobs", "2", "--json", "--progress", "off", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    results = [json.loads(line) for line in r.stdout.splitlines()]
    assert {d["status"] for d in results} == {"pass"} and len(results) >= len(NEW)
    # the same file with its dynamic offset changed fails, as `kernellab run` does
    text = (FILES / "dynamic_offsets.amber").read_text().replace("OFFSET 512 DESCRIPTOR_RANGE", "OFFSET 256 "
                                                                 "DESCRIPTOR_RANGE")
    (tmp_path / "bad.amber").write_text(text)
    assert cli("run", tmp_path / "bad.amber", cwd=tmp_path).returncode == 1
    assert cli("import", tmp_path / "bad.amber", "-o", tmp_path / "bad", cwd=tmp_path).returncode == 0
    r = cli("test", tmp_path / "bad", "--progress", "off", "--no-rerun", cwd=tmp_path)
    assert r.returncode == 1 and "bad.amber:33: EXPECT out IDX 512 EQ 1128 1129 1130 1131" in r.stderr


DEBUG = """#!amber
SHADER compute s GLSL
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint v; };
void main() { v = 5u; }
END
BUFFER b DATA_TYPE uint32 SIZE 1 FILL 0
PIPELINE compute p
  ATTACH s
  BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0
END
DEBUG p 1 1 1
{threads}END
EXPECT b IDX 0 EQ {value}
"""


def debug_file(threads: str, value: int) -> str:
    return DEBUG.replace("{threads}", threads).replace("{value}", str(value))


def test_debug_runs_as_run_and_thread_expectations_are_a_skip(tmp_path):
    (tmp_path / "plain.amber").write_text(debug_file("", 5))
    assert cli("run", tmp_path / "plain.amber", cwd=tmp_path).returncode == 0
    (tmp_path / "bad.amber").write_text(debug_file("", 6))
    assert cli("run", tmp_path / "bad.amber", cwd=tmp_path).returncode == 1
    threads = "  THREAD GLOBAL_INVOCATION_ID 0 0 0\n    EXPECT LOCATION \"s.comp\" 6\n    STEP_IN\n  END\n"
    (tmp_path / "thread.amber").write_text(debug_file(threads, 5))
    r = cli("run", tmp_path / "thread.amber", cwd=tmp_path)
    assert r.returncode == 77, r.stderr
    assert "a shader debugger for DEBUG's THREAD expectations (line 14)" in r.stderr


def test_a_missing_hlsl_compiler_is_a_skip_naming_it(monkeypatch):
    from kernellab import tools
    from kernellab.suite.amber import run_amber

    real = tools.find
    monkeypatch.setattr(tools, "find", lambda name: None if name == "glslangValidator" else real(name))
    outcome = run_amber(None, FILES / "hlsl.amber")  # skipped before a device is asked
    assert outcome.status == "skip" and "glslangValidator not found" in outcome.report


@pytest.mark.parametrize("name", ["copy_after_run", "shader_optimization"])
def test_verify_reads_the_new_pipelines(name, tmp_path):
    r = cli("verify", FILES / f"{name}.amber", cwd=tmp_path)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr, r.stderr


@pytest.mark.parametrize("old, new, status, words", [
    ("VK_KHR_get_physical_device_properties2", "VK_KHR_no_such_instance_extension", 77,
     "INSTANCE_EXTENSION VK_KHR_no_such_instance_extension (line 4)"),
    ("shaderSignedZeroInfNanPreserveFloat32", "shaderDenormPreserveFloat64", 77,
     "DEVICE_PROPERTY FloatControlsProperties.shaderDenormPreserveFloat64 (line 5)"),
    ("DATA 8 2 6 4 END", "DATA 8 2 6 5 END", 1, "EQ_HISTOGRAM_EMD_BUFFER shuffled TOLERANCE 0.0: histogram EMD"),
])
def test_requirements_the_device_lacks_skip_and_a_changed_histogram_fails(old, new, status, words, tmp_path):
    text = (FILES / "requirements_timed_virtual.amber").read_text()
    (tmp_path / "t.amber").write_text(text.replace(old, new))
    r = cli("run", tmp_path / "t.amber", cwd=tmp_path)
    assert r.returncode == status and words in r.stderr, r.stderr
