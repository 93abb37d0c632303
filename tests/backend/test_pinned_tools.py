"""Old or broken ``glslangValidator``, ``spirv-val``, ``spirv-dis``, ``spirv-opt``, ``spirv-as`` and
``llvm-dis`` first on PATH change nothing (issue 11): kernellab takes the tools installed with it,
and an ``llvm-dis`` that reads the bitcode at hand. Every compile, listing and snapshot command and
``run`` (with ``--dump-stages``) still works."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from helpers.fake_tools import impostors
from kernellab import tools

ROOT = Path(__file__).resolve().parents[2]
SHADERS = ROOT / "tests" / "unit" / "shaders"
HAS_LLVM = all(tools.find(t) is not None for t in ("clang", "llvm-dis", "llvm-spirv"))
needs_llvm = pytest.mark.skipif(not HAS_LLVM, reason="needs clang, llvm-dis, llvm-spirv (Debian clang-14 llvm-14 "
                                                     "llvm-spirv-14)")


@pytest.fixture()
def env(tmp_path: Path) -> dict[str, str]:
    fakes = impostors(tmp_path / "impostors")
    for name in ("glslangValidator", "spirv-val", "llvm-dis"):  # they really fail
        assert subprocess.run([fakes / name, "x"], capture_output=True).returncode != 0
    environ = {k: v for k, v in os.environ.items() if k not in ("KERNELLAB_TOOL_PATH", "KERNELLAB_NO_CACHE")}
    return {**environ, "PATH": f"{fakes}{os.pathsep}{os.environ.get('PATH', '')}",
            "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"),
            "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}


def kernellab(env: dict[str, str], *args: str | Path) -> str:
    result = subprocess.run([sys.executable, "-m", "kernellab", *map(str, args)], env=env, capture_output=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr.decode(errors="replace")
    assert b"impostor" not in result.stderr
    return result.stdout.decode(errors="replace")


def test_glsl_snapshots_and_listing(env: dict[str, str], tmp_path: Path) -> None:
    shader = SHADERS / "loop_branch.comp"
    assert "OpEntryPoint GLCompute" in kernellab(env, "snapshot", shader, "--stage", "spirv", "--format", "text")
    assert "OpEntryPoint GLCompute" in kernellab(env, "snapshot", shader, "--stage", "spirv-opt", "--format", "text")
    assert "void main" in kernellab(env, "snapshot", shader, "--stage", "preprocessed")
    listed = [line.split()[0] for line in kernellab(env, "snapshot", shader, "--list").splitlines() if line.strip()]
    assert listed == ["glsl", "preprocessed", "spirv", "spirv-opt"]
    assert "main" in kernellab(env, "listing", shader, "--format", "text")
    spvasm = tmp_path / "m.spvasm"
    spvasm.write_text(kernellab(env, "snapshot", shader, "--stage", "spirv", "--format", "text"))
    assert "OpEntryPoint" in kernellab(env, "snapshot", spvasm, "--stage", "spirv", "--format", "text")


@needs_llvm
def test_opencl_stages_and_listing(env: dict[str, str]) -> None:
    kernel = SHADERS / "reduce.cl"
    assert "define" in kernellab(env, "snapshot", kernel, "--stage", "llvm-ir", "--format", "text", "--options=-DWG=32")
    assert "OpCapability Kernel" in kernellab(env, "snapshot", kernel, "--stage", "spirv-kernel", "--format", "text",
                                              "--options=-DWG=32")
    assert "define" in kernellab(env, "snapshot", kernel, "--stage", "device-llvm-ir", "--format", "text")
    assert kernellab(env, "listing", kernel, "--stage", "spirv-kernel", "--format", "text", "--options=-DWG=32")


def test_run_and_dump_stages(env: dict[str, str], tmp_path: Path) -> None:
    shutil.copytree(ROOT / "examples" / "vector_add", tmp_path / "w")
    kernellab(env, "run", tmp_path / "w" / "scenario.json", "--output", tmp_path / "out",
              "--dump-stages", tmp_path / "stages")
    a, b = np.load(tmp_path / "w" / "a.npy"), np.load(tmp_path / "w" / "b.npy")
    assert np.array_equal(np.load(tmp_path / "out" / "c.npy").view(np.float32), a + b)  # Arm: raw bytes
    dumped = {p.name for p in (tmp_path / "stages").iterdir()}
    assert {"add.spirv.spv", "add.spirv.spvasm", "add.spirv-opt.spvasm"} <= dumped


def test_a_shader_without_version_runs_as_arms_runner_runs_it(env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "s.comp").write_text("layout(local_size_x = 4) in;\n"
                                     "layout(set = 0, binding = 0) buffer B { float x[]; } b;\n"
                                     "void main() { b.x[gl_GlobalInvocationID.x] = "
                                     "anyInvocation(true) ? 2.0 : 0.0; }\n")
    np.save(tmp_path / "zeros.npy", np.zeros(4, np.float32))
    (tmp_path / "s.json").write_text(json.dumps({
        "resources": [{"shader": {"uid": "s", "src": "s.comp", "type": "GLSL"}},
                      {"buffer": {"uid": "b", "size": 16, "shader_access": "readwrite", "src": "zeros.npy",
                                  "dst": "out.npy"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "s", "rangeND": [4],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "b"}]}}]}))
    kernellab(env, "run", tmp_path / "s.json", "--output", tmp_path / "out")
    assert np.load(tmp_path / "out" / "out.npy").view(np.float32).tolist() == [2.0, 2.0, 2.0, 2.0]
