"""``kernellab run`` keeps compiled SPIR-V by content (issue 11): a repeated run starts no compiler,
validator or ``--version``; ``--no-cache`` compiles afresh; ``--pipeline-caching`` does not
preprocess every time. Options a scenario gives are refused before any tool runs (issue 10)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.fake_tools import counting_wrappers, spawned

ROOT = Path(__file__).resolve().parents[2]
VECTOR_ADD = ROOT / "examples" / "vector_add"
TOOLS = ("glslangValidator", "spirv-val", "spirv-dis", "spirv-opt")


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    shutil.copytree(VECTOR_ADD, tmp_path / "w")
    wrappers = counting_wrappers(tmp_path / "bin", tmp_path / "spawned.log", TOOLS)
    env = {**os.environ, "KERNELLAB_CACHE_DIR": str(tmp_path / "cache"), "KERNELLAB_TOOL_PATH": str(wrappers),
           "XDG_RUNTIME_DIR": os.environ.get("XDG_RUNTIME_DIR", "/tmp")}
    env.pop("KERNELLAB_NO_CACHE", None)
    return tmp_path, env


def run(env: dict[str, str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kernellab", "run", *map(str, args)], env=env, text=True,
                          capture_output=True, timeout=300)


def test_a_repeated_run_spawns_no_compiler_validator_or_version_query(setup: tuple[Path, dict[str, str]]) -> None:
    tmp, env = setup
    first = run(env, tmp / "w" / "scenario.json", "--output", tmp / "out1")
    assert first.returncode == 0, first.stderr
    tools_run = spawned(tmp / "spawned.log")
    assert any(" -V " in line for line in tools_run) and any(line.startswith("spirv-val ") for line in tools_run)
    second = run(env, tmp / "w" / "scenario.json", "--output", tmp / "out2")
    assert second.returncode == 0, second.stderr
    assert spawned(tmp / "spawned.log") == []
    assert (tmp / "out1" / "c.npy").read_bytes() == (tmp / "out2" / "c.npy").read_bytes()

    # an edit of the shader is a new key: compiled again
    shader = tmp / "w" / "add.comp"
    shader.write_text(shader.read_text() + "\n// edited\n")
    assert run(env, tmp / "w" / "scenario.json", "--output", tmp / "out3").returncode == 0
    assert any(" -V " in line for line in spawned(tmp / "spawned.log"))


def test_no_cache_compiles_afresh(setup: tuple[Path, dict[str, str]]) -> None:
    tmp, env = setup
    assert run(env, tmp / "w" / "scenario.json", "--output", tmp / "out").returncode == 0
    spawned(tmp / "spawned.log")
    assert run(env, tmp / "w" / "scenario.json", "--output", tmp / "out", "--no-cache").returncode == 0
    assert any(" -V " in line for line in spawned(tmp / "spawned.log"))


def test_pipeline_caching_does_not_preprocess_every_time(setup: tuple[Path, dict[str, str]]) -> None:
    tmp, env = setup
    for _ in range(2):
        result = run(env, tmp / "w" / "scenario.json", "--output", tmp / "out", "--pipeline-caching")
        assert result.returncode == 0, result.stderr
    spawned(tmp / "spawned.log")
    result = run(env, tmp / "w" / "scenario.json", "--output", tmp / "out", "--pipeline-caching")
    assert result.returncode == 0 and spawned(tmp / "spawned.log") == []


@pytest.mark.parametrize("shader, options, option", [
    ("add.comp", "--depfile {folder}/dep.d", "--depfile"),
    ("add.comp", "/etc/passwd", "/etc/passwd"),
    ("k.cl", "-include {folder}/secret.txt", "-include"),
    ("k.cl", "-Xclang -load -Xclang ./evil.so", "-Xclang"),
], ids=["glsl-depfile", "glsl-second-shader", "opencl-include", "opencl-plugin"])
def test_run_dump_stages_refuses_file_options(setup: tuple[Path, dict[str, str]], shader: str, options: str,
                                              option: str) -> None:
    tmp, env = setup
    folder = tmp / "w"
    (folder / "secret.txt").write_text("SECRET-CONTENT\n")
    (folder / "k.cl").write_text("__kernel void add(__global float* a) { a[get_global_id(0)] += 1.0f; }\n")
    path = folder / "scenario.json"
    doc = json.loads(path.read_text())
    doc["resources"][0]["shader"].update(src=shader, type="OpenCL-C" if shader.endswith(".cl") else "GLSL",
                                         build_options=options.format(folder=folder))
    path.write_text(json.dumps(doc))
    result = run(env, path, "--output", tmp / "out", "--dump-stages", tmp / "stages")
    assert result.returncode == 2, result.stderr
    assert f"{path}: /resources/0/shader/build_options: compiler option {option!r} is not allowed" in result.stderr
    assert "SECRET-CONTENT" not in result.stderr and "Traceback" not in result.stderr
    assert spawned(tmp / "spawned.log") == []
    assert not (folder / "dep.d").exists()
    assert not (tmp / "stages").exists() or not any((tmp / "stages").iterdir())


def test_opencl_driver_gets_no_file_option_outside_the_allow_list(setup: tuple[Path, dict[str, str]]) -> None:
    tmp, env = setup
    folder = tmp / "w"
    (folder / "secret.txt").write_text("SECRET-CONTENT\n")
    (folder / "k.cl").write_text("__kernel void add(__global float* a) { a[get_global_id(0)] += 1.0f; }\n")
    path = folder / "cl.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "s", "src": "k.cl", "type": "OpenCL-C", "entry": "add",
                                  "build_options": f"-DN=1 -include {folder / 'secret.txt'}"}},
                      {"buffer": {"uid": "a", "size": 16, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "s", "rangeND": [4],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "a"}]}}]}))
    result = run(env, path, "--backend", "opencl", "--output", tmp / "out")
    assert result.returncode == 2, result.stderr
    assert f"{path}: /resources/0/shader/build_options: compiler option '-include' is not allowed" in result.stderr
    assert "Invalid build option" not in result.stderr  # refused before the driver saw it
