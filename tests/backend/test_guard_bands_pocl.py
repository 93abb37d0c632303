"""A kernel writing past its buffer on PoCL (plain pointers, no bounds checks): the run ends with
status 0 and a warning naming the buffer and ``verify``; in range, or on lavapipe (which drops
such writes), nothing is said."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from kernellab.cli import main

KERNEL = "__kernel void fill(__global float *c) { int i = get_global_id(0); c[i] = (float)i; }\n"
SHADER = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer C { float c[]; };
void main() { uint i = gl_GlobalInvocationID.x; c[i] = float(i); }
"""


def scenario(tmp_path: Path, items: int, opencl: bool = True) -> Path:
    """Buffer ``c`` of 1000 floats, written at indices 0 .. items-1."""
    if opencl:
        (tmp_path / "k.cl").write_text(KERNEL)
        shader = {"uid": "k", "src": "k.cl", "type": "OpenCL-C", "entry": "fill"}
        range_nd = [items]
    else:
        (tmp_path / "k.comp").write_text(SHADER)
        shader = {"uid": "k", "src": "k.comp", "type": "GLSL"}
        range_nd = [items // 64]
    path = tmp_path / "s.json"
    path.write_text(json.dumps({
        "resources": [{"shader": shader},
                      {"buffer": {"uid": "c", "size": 4000, "shader_access": "readwrite", "dst": "c.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "k", "rangeND": range_nd,
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "c"}]}}]}))
    return path


def test_3096_elements_past_the_end_on_pocl_warn_and_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = scenario(tmp_path, 4096)
    assert main(["run", "--backend", "opencl", str(path)]) == 0
    err = capsys.readouterr().err
    assert "kernellab: warning: a dispatch wrote past the end of buffer 'c' (" in err
    assert f"guard bytes changed after it): `kernellab verify {path}` names the access" in err
    assert err.count("kernellab: warning:") == 1
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy").view(np.float32), np.arange(1000, dtype=np.float32))


def test_in_range_on_pocl_warns_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--backend", "opencl", str(scenario(tmp_path, 1000))]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("flags", [[], ["--enable-robustness-features"]])
def test_lavapipe_drops_the_writes_and_nothing_is_said(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       flags: list[str]) -> None:
    # lavapipe bounds-checks every storage-buffer access: the band would never change, so none is made
    assert main(["run", *flags, str(scenario(tmp_path, 4096, opencl=False))]) == 0
    assert "warning" not in capsys.readouterr().err
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy").view(np.float32), np.arange(1000, dtype=np.float32))
