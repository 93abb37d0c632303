"""Issue 10's option probes through the compile layer: options a file gives are checked where they
become a tool's command line (snapshot, listing), refused with exit 2 naming the option, and no
tool runs; the user's own ``--options`` stay unfiltered."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.fake_tools import counting_wrappers, spawned
from kernellab import config, tools
from kernellab.cli import main
from kernellab.compile.pipeline import Compiler, CompileRequest
from kernellab.errors import InputError

HAS_CLANG = all(tools.find(t) is not None for t in ("clang", "llvm-dis", "llvm-spirv"))
needs_clang = pytest.mark.skipif(not HAS_CLANG, reason="needs clang, llvm-dis, llvm-spirv (Debian clang-14 llvm-14 "
                                                       "llvm-spirv-14)")
KERNEL = "__kernel void add(__global float* a) { a[get_global_id(0)] += 1.0f; }\n"
SHADER = ("#version 450\nlayout(local_size_x = 1) in;\nlayout(set = 0, binding = 0) buffer B { float x[]; } b;\n"
          "void main() { b.x[0] = 1.0; }\n")


@pytest.fixture()
def workload(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder with a kernel and a shader; clang and glslang wrapped so that a spawn is seen."""
    (tmp_path / "k.cl").write_text(KERNEL)
    (tmp_path / "s.comp").write_text(SHADER)
    (tmp_path / "secret.txt").write_text("SECRET-CONTENT\n")
    names = ("glslangValidator",) + (("clang", "llvm-spirv") if HAS_CLANG else ())
    wrappers = counting_wrappers(tmp_path / "bin", tmp_path / "spawned.log", names)
    with config.override(cache_dir=tmp_path / "cache", tool_path=(str(wrappers),)):
        yield tmp_path


def instantiation(folder: Path, flags: str) -> Path:
    path = folder / "launch.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "entry_point": "add",
                                 "compiler_flags": flags, "global_size": [4], "local_size": [4]}]))
    return path


def scenario(folder: Path, build_options: str) -> Path:
    path = folder / "scenario.json"
    path.write_text(json.dumps({
        "resources": [{"shader": {"uid": "s", "src": "s.comp", "type": "GLSL", "build_options": build_options}},
                      {"buffer": {"uid": "b", "size": 16, "shader_access": "readwrite"}}],
        "commands": [{"dispatch_compute": {"shader_ref": "s", "rangeND": [1],
                                           "bindings": [{"set": 0, "id": 0, "resource_ref": "b"}]}}]}))
    return path


OPENCL_PROBES = [
    ("-Xclang -load -Xclang ./evil.so", "-Xclang"),
    ("-o {folder}/written-by-clang", "-o"),
    ("-include {folder}/secret.txt", "-include"),
]


@needs_clang
@pytest.mark.parametrize("flags, option", OPENCL_PROBES, ids=["plugin", "output", "include"])
@pytest.mark.parametrize("command", [["snapshot", "--stage", "llvm-ir"], ["snapshot", "--stage", "preprocessed"],
                                     ["listing", "--stage", "spirv-kernel"]],
                         ids=["snapshot-llvm-ir", "snapshot-preprocessed", "listing-spirv-kernel"])
def test_opencl_file_options_never_reach_clang(workload: Path, capsys: pytest.CaptureFixture[str], flags: str,
                                               option: str, command: list[str]) -> None:
    launch = instantiation(workload, flags.format(folder=workload))
    out = workload / "out.txt"
    assert main([command[0], str(launch), *command[1:], "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{launch}: /0/compiler_flags: compiler option {option!r} is not allowed in a file" in err
    assert "SECRET-CONTENT" not in err and "Traceback" not in err
    assert spawned(workload / "spawned.log") == []  # refused before any tool started
    assert not (workload / "written-by-clang").exists() and not out.exists()


@pytest.mark.parametrize("options, option", [("--depfile {folder}/dep.d", "--depfile"), ("/etc/passwd", "/etc/passwd"),
                                             ("-I/etc", "-I/etc")], ids=["depfile", "second-shader", "include-dir"])
def test_glsl_file_options_never_reach_glslang(workload: Path, capsys: pytest.CaptureFixture[str], options: str,
                                               option: str) -> None:
    path = scenario(workload, options.format(folder=workload))
    assert main(["snapshot", str(path), "--stage", "spirv", "-o", str(workload / "s.spv")]) == 2
    err = capsys.readouterr().err
    assert f"{path}: /resources/0/shader/build_options: compiler option {option!r} is not allowed in a file" in err
    assert spawned(workload / "spawned.log") == []
    assert not (workload / "dep.d").exists() and not (workload / "s.spv").exists()


def test_allowed_file_options_compile(workload: Path) -> None:
    path = scenario(workload, "-DN=4 -g")
    assert main(["snapshot", str(path), "--stage", "spirv", "-o", str(workload / "s.spv")]) == 0
    compiles = [line for line in spawned(workload / "spawned.log") if " -V " in line]
    assert len(compiles) == 1 and "-DN=4 -g" in compiles[0]


@needs_clang
def test_the_users_own_options_are_not_filtered(workload: Path, capsys: pytest.CaptureFixture[str]) -> None:
    launch = instantiation(workload, "-DOK=1")
    secret = workload / "secret.txt"
    assert main(["snapshot", str(launch), "--stage", "preprocessed", f"--options=-include {secret}"]) == 0
    assert "SECRET-CONTENT" in capsys.readouterr().out


def test_a_request_refuses_file_options_wherever_argv_is_built(tmp_path: Path) -> None:
    (tmp_path / "s.comp").write_text(SHADER)
    request = CompileRequest(tmp_path / "s.comp", "glsl", build_options="--depfile /tmp/x")
    with pytest.raises(InputError, match="compiler option '--depfile' is not allowed in a file"):
        request.check_file_options()
    with config.override(cache_dir=tmp_path / "cache"), pytest.raises(InputError, match="'--depfile'"):
        Compiler(request).artifact("preprocessed")
    user = CompileRequest(tmp_path / "s.comp", "glsl", build_options="-DX=1 --relaxed-errors --keep-uncalled",
                          options_from="user")
    assert user.options == ["-DX=1", "--relaxed-errors", "--keep-uncalled"]


def test_file_includes_outside_the_workload_are_refused(tmp_path: Path) -> None:
    (tmp_path / "w").mkdir()
    (tmp_path / "w" / "k.cl").write_text('#include "../outside.h"\n' + KERNEL)
    (tmp_path / "outside.h").write_text("#define X 1\n")
    request = CompileRequest(tmp_path / "w" / "k.cl", "opencl-c", roots=(tmp_path / "w",))
    # checked where the include is read (compile.preprocess, issue 18), before any compiler runs
    with config.override(cache_dir=tmp_path / "cache"), \
            pytest.raises(InputError, match=r'k.cl:1: #include "../outside.h": .* is outside the workload'):
        Compiler(request).artifact("opencl-c")
