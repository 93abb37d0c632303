"""Every command names the workload as the user typed it (relative stays relative), and the files
beside it from the same place: a missing file, a bad JSON field, a shader that does not compile, an
unknown ``--kernel``. ``errors.shown`` is the one place a resolved path is turned back."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernellab import errors

GLSL = """#version 450
layout(local_size_x = 4) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
void main() { v[gl_GlobalInvocationID.x] += 1u; }
"""


def _workload(folder: Path, glsl: str = GLSL, size: object = 16) -> None:
    folder.mkdir(parents=True)
    (folder / "add.comp").write_text(glsl)
    (folder / "scenario.json").write_text(json.dumps({
        "resources": [{"shader": {"uid": "add", "src": "add.comp", "type": "GLSL"}},
                      {"buffer": {"uid": "v", "size": size, "shader_access": "readwrite", "dst": "v.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "add", "rangeND": [4],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "v"}]}}]}))


@pytest.fixture(scope="module")
def cwd(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("typed")
    _workload(root / "ok")
    _workload(root / "badfield", size="x")
    _workload(root / "badshader", glsl=GLSL.replace("+= 1u;", "+= 1u"))
    return root


def _cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", *args], capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")},
                          timeout=300)


#: each command's words before the workload
COMMANDS = {"run": ["run"], "validate": ["validate"], "verify": ["verify"], "listing": ["listing"],
            "snapshot": ["snapshot", "--stage", "spirv"], "bless": ["bless"]}
#: what each bad workload's message says first, as typed
CASES = {"missing": ("missing/scenario.json", "missing/scenario.json: "),
         "bad field": ("badfield/scenario.json", "badfield/scenario.json: /resources/1/buffer/size: "),
         "no compile": ("badshader/scenario.json", "badshader/scenario.json: /resources/0/shader/src: "
                                                   "compiling badshader/add.comp: ")}


@pytest.mark.skipif(shutil.which("glslangValidator") is None, reason="needs glslang")
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("command", COMMANDS)
def test_each_command_names_the_workload_as_typed(command: str, case: str, cwd: Path) -> None:
    typed, head = CASES[case]
    proc = _cli(cwd, *COMMANDS[command], typed)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(head), proc.stderr
    assert str(cwd) not in proc.stderr, f"{command} named a file by its absolute path"


@pytest.mark.skipif(shutil.which("glslangValidator") is None, reason="needs glslang")
@pytest.mark.parametrize("command", ["listing", "snapshot"])
def test_an_unknown_kernel_names_the_workload_as_typed(command: str, cwd: Path) -> None:
    proc = _cli(cwd, *COMMANDS[command], "ok/scenario.json", "--kernel", "nope")
    assert proc.returncode == 2, proc.stderr
    assert "--kernel nope: no shader with that uid in ok/scenario.json (have add)" in proc.stderr
    assert str(cwd) not in proc.stderr


@pytest.mark.skipif(shutil.which("glslangValidator") is None, reason="needs glslang")
def test_a_suite_worker_names_the_workload_as_typed(tmp_path: Path) -> None:
    _workload(tmp_path / "suite" / "badshader", glsl=GLSL.replace("+= 1u;", "+= 1u"))
    (tmp_path / "suite" / "badshader" / "scenario.expect.json").write_text('{"outputs": {"v": {"reference": "v.npy"}}}')
    np.save(tmp_path / "suite" / "badshader" / "v.npy", np.ones(4, np.uint32))
    proc = _cli(tmp_path, "test", "suite", "--jobs", "1", "--no-rerun")
    assert proc.returncode == 1, proc.stderr
    said = proc.stdout + proc.stderr
    assert "suite/badshader/scenario.json: /resources/0/shader/src: compiling suite/badshader/add.comp: " in said
    assert str(tmp_path) not in said, "a worker named a file by its absolute path"


def test_shown_turns_a_resolved_path_back_into_the_typed_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(errors, "_TYPED_FILES", {})
    monkeypatch.setattr(errors, "_TYPED_FOLDERS", {})
    monkeypatch.setattr(errors, "_TYPED_PENDING", [])
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    outside = str(tmp_path.parent / "elsewhere.comp")
    assert errors.shown(str(tmp_path / "w" / "s.json")) == str(tmp_path / "w" / "s.json")  # nothing typed yet
    errors.name_as_typed("w/s.json")
    errors.name_as_typed(Path("link/t.json"))
    assert errors.shown(str(tmp_path / "w" / "s.json")) == "w/s.json"
    assert errors.shown(tmp_path / "w" / "inc" / "a.h") == "w/inc/a.h"
    assert errors.shown(tmp_path / "w") == "w"  # the workload's folder itself
    assert errors.shown(str(tmp_path / "real" / "t.json")) == "link/t.json"  # through the symlink, as typed
    assert errors.shown(str(tmp_path / "real" / "k.cl")) == "link/k.cl"
    assert errors.shown(outside) == outside and errors.shown("rel/x") == "rel/x"
    problem = errors.Problem(str(tmp_path / "w" / "s.json"), "/resources/0", "bad")
    assert str(problem) == "w/s.json: /resources/0: bad" and problem.file == str(tmp_path / "w" / "s.json")
    errors.name_as_typed("bare.json")
    assert errors.shown(tmp_path) == "." and errors.shown(tmp_path / "x.cl") == "x.cl"


@pytest.mark.parametrize("include", ["../secret.h", "missing.h"])
def test_an_include_refused_names_the_kernel_and_its_folder_as_typed(include: str, tmp_path: Path) -> None:
    # refused while the includes are read, before any compiler starts
    (tmp_path / "k").mkdir()
    (tmp_path / "secret.h").write_text("#define SECRET 1\n")
    (tmp_path / "k" / "k.cl").write_text(f'#include "{include}"\n__kernel void k(__global int *a) {{ a[0] = 1; }}\n')
    proc = _cli(tmp_path, "listing", "k/k.cl")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(f'k/k.cl:1: #include "{include}": '), proc.stderr
    assert "workload's folder k (allow" in proc.stderr or "(looked in k)" in proc.stderr, proc.stderr
