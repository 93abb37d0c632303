"""Issue 20: a kernel that does not compile is named by its file and line and by the JSON path
of the shader in the scenario, on the OpenCL backend, on clspv (Vulkan) and for GLSL."""
from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from kernellab import config, tools
from kernellab.cli import main

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
SAXPY = """// saxpy
__kernel void saxpy(__global float *y, __global const float *x) {
  int i = get_global_id(0);
  float a = 2.0f;
  y[i] = a * x[i] + y[i] +;
}
"""


def _opencl_scenario(folder: Path, kernel: str) -> Path:
    folder.mkdir()
    (folder / "saxpy.cl").write_text(kernel)
    np.save(folder / "x.npy", np.arange(16, dtype=np.float32))
    path = folder / "s.json"
    path.write_text(json.dumps({
        "resources": [{"buffer": {"uid": "y", "size": 64, "shader_access": "readwrite", "dst": "y.npy"}},
                      {"shader": {"uid": "saxpy", "src": "saxpy.cl", "type": "OpenCL-C", "entry": "saxpy"}},
                      {"buffer": {"uid": "x", "size": 64, "shader_access": "readonly", "src": "x.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "saxpy", "rangeND": [1], "bindings": [
            {"set": 0, "id": 0, "resource_ref": "y"}, {"set": 0, "id": 1, "resource_ref": "x"}]}}]}))
    return path


@pytest.mark.parametrize("backend", ["opencl", pytest.param("vulkan", marks=pytest.mark.skipif(
    not HAS_CLSPV, reason="needs clspv: pip install pyclspv"))])
def test_an_opencl_c_build_error_names_the_file_line_and_json_path(tmp_path: Path, backend: str,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = _opencl_scenario(tmp_path / "w", SAXPY)
    with config.override(cache_dir=tmp_path / "cache"):
        assert main(["run", str(path), "--backend", backend, "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /resources/1/shader/src: " in err, err
    # PoCL writes "error: FILE:5:27: ...", clang and clspv "FILE:5:27: error: ..."
    assert f"{tmp_path / 'w' / 'saxpy.cl'}:5:27: " in err and "expected expression" in err, err
    assert "saxpy:5:" not in err and "source:" not in err, err


def test_an_error_in_an_included_header_names_the_header(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _opencl_scenario(tmp_path / "w", '#include "bad.h"\n' + SAXPY.replace(" +;", ";"))
    (tmp_path / "w" / "bad.h").write_text("// a header\nint broken( {\n")
    assert main(["run", str(path), "--backend", "opencl", "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /resources/1/shader/src: " in err and f"{tmp_path / 'w' / 'bad.h'}:2:13: " in err, err


def test_a_glsl_compile_error_names_the_json_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shutil.copytree(Path(__file__).resolve().parents[2] / "examples" / "vector_add", tmp_path / "va")
    shader = tmp_path / "va" / "add.comp"
    shader.write_text(shader.read_text().replace("uint i = ", "uint i = +;"))
    with config.override(cache_dir=tmp_path / "cache"):
        assert main(["run", str(tmp_path / "va" / "scenario.json"), "--output", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'va' / 'scenario.json'}: /resources/0/shader/src: compiling {shader}" in err, err
    assert "add.comp:10:" in err, err


def test_verify_names_the_file_line_and_json_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _opencl_scenario(tmp_path / "w", SAXPY)
    assert main(["verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /resources/1/shader/src: " in err and f"{tmp_path / 'w' / 'saxpy.cl'}:5:27: " in err, err
