"""Issue 20: `validate` compiles each shader as far as its compiler's front end (no device) and
reports a compile error with the file, the line and the shader's JSON path; without the compiler
it says that compiling was skipped."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernellab import config, tools
from kernellab.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add"
needs_glslang = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslang")


def _vector_add(tmp_path: Path, broken: bool) -> Path:
    shutil.copytree(EXAMPLE, tmp_path / "va")
    if broken:
        shader = tmp_path / "va" / "add.comp"
        shader.write_text(shader.read_text().replace("uint i = ", "uint i = +;"))
    return tmp_path / "va" / "scenario.json"


@needs_glslang
def test_a_glsl_syntax_error_is_a_validate_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vector_add(tmp_path, broken=True)
    with config.override(cache_dir=tmp_path / "cache"):
        assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /resources/0/shader/src: compiling {tmp_path / 'va' / 'add.comp'}" in err, err
    assert "add.comp:10: '' :  syntax error" in err, err


@needs_glslang
def test_a_good_shader_is_valid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _vector_add(tmp_path, broken=False)
    with config.override(cache_dir=tmp_path / "cache"):
        assert main(["validate", str(path)]) == 0
    out = capsys.readouterr()
    assert "valid scenario" in out.out and "skipped" not in out.err


@needs_glslang
@pytest.mark.parametrize("named", ["relative", "through a symlinked folder"])
def test_a_good_shader_is_valid_however_its_scenario_is_named(tmp_path: Path, named: str,
                                                               capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The shader's folder is compared with the workload's once both are resolved: ``validate
    scenario.json`` and a scenario reached through a symlinked folder were refused as reading a
    kernel "outside the workload's folder ." (the folder as named, the kernel as resolved)."""
    path = _vector_add(tmp_path, broken=False)
    if named == "relative":
        monkeypatch.chdir(path.parent)
        arg = path.name
    else:
        (tmp_path / "link").symlink_to(path.parent)
        arg = str(tmp_path / "link" / path.name)
    with config.override(cache_dir=tmp_path / "cache"):
        assert main(["validate", arg]) == 0, capsys.readouterr().err
    assert "valid scenario" in capsys.readouterr().out


def test_without_the_compiler_compiling_is_skipped_and_said(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    path = _vector_add(tmp_path, broken=True)
    real = tools.find
    monkeypatch.setattr(tools, "find", lambda name, *a, **k: None if name == "glslangValidator" else real(name, *a, **k))
    assert main(["validate", str(path)]) == 0
    err = capsys.readouterr().err
    assert "shaders add not compiled: no glslangValidator found (compiling was skipped)" in err, err


# the check compiles to the llvm-ir stage, which needs llvm-dis too (a GPU host had clang alone: validate
# then notes the check was skipped, exit 0)
@pytest.mark.skipif(tools.find("clang") is None or tools.find("llvm-dis") is None,
                    reason="needs clang and llvm-dis (Debian clang-14 llvm-14)")
def test_an_opencl_c_error_names_the_kernel_file_and_json_path(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "k.cl").write_text("// k\nkernel void k(global int *a) {\n  a[0] = 1 +;\n}\n")
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "k", "src": "k.cl", "type": "OpenCL-C", "entry": "k"}},
                      {"buffer": {"uid": "a", "size": 4, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "a"}]}}]}))
    with config.override(cache_dir=tmp_path / "cache"):
        assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /resources/0/shader/src: " in err and f"{tmp_path / 'k.cl'}:3:13: error: expected expression" in err, err
