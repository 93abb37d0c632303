"""Compiled artifacts are kept by content by default, keyed by the source and what it includes
(issue 11): a cached kernel starts no process, an edited header is a new key."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers.fake_tools import counting_wrappers, spawned
from kernellab import config, tools
from kernellab.cli import main
from kernellab.compile.cache import default_cache
from kernellab.compile.pipeline import Compiler, CompileRequest
from kernellab.errors import InputError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "vector_add"
needs_glslang = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslang")

SHADER = """#version 450
#extension GL_GOOGLE_include_directive : require
#include "common.h"
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { float x[]; } b;
void main() { b.x[0] = SCALE; }
"""


@pytest.fixture()
def counted(tmp_path: Path) -> Path:
    log = tmp_path / "spawned.log"
    wrappers = counting_wrappers(tmp_path / "bin", log, ("glslangValidator", "spirv-val"))
    with config.override(cache_dir=tmp_path / "cache", tool_path=(str(wrappers),), compile_cache=True):
        yield log


def write_shader(folder: Path, scale: str) -> Path:
    (folder / "inc").mkdir(exist_ok=True)
    (folder / "inc" / "common.h").write_text(f"#define SCALE {scale}\n")
    (folder / "s.comp").write_text(SHADER)
    return folder / "s.comp"


def test_a_cached_kernel_starts_no_process(tmp_path: Path, counted: Path) -> None:
    shader = write_shader(tmp_path, "2.0")
    request = CompileRequest(shader, "glsl", include_dirs=(tmp_path / "inc",))
    first = Compiler(request).vulkan_module()
    assert any(" -V " in line for line in spawned(counted))
    again = Compiler(request).vulkan_module()
    assert again == first and spawned(counted) == []  # no compiler, validator, preprocessor or --version


def test_an_edited_header_is_a_new_key(tmp_path: Path, counted: Path) -> None:
    shader = write_shader(tmp_path, "2.0")
    request = CompileRequest(shader, "glsl", include_dirs=(tmp_path / "inc",))
    first = Compiler(request).vulkan_module()
    (tmp_path / "inc" / "common.h").write_text("#define SCALE 3.0\n")
    second = Compiler(request).vulkan_module()
    assert second.key != first.key and second.data != first.data
    assert sum(" -V " in line for line in spawned(counted)) == 2


def test_an_include_named_by_a_macro_is_refused(tmp_path: Path) -> None:
    # only the preprocessor could tell which file a macro names: kernellab does not guess (issue 18)
    (tmp_path / "k.h").write_text("#define V 1\n")
    (tmp_path / "k.cl").write_text('#define HEADER "k.h"\n#include HEADER\n'
                                   "kernel void k(global int* a) { a[0] = V; }\n")
    with config.override(cache_dir=tmp_path / "cache"), pytest.raises(InputError, match="k.cl:2: #include HEADER"):
        Compiler(CompileRequest(tmp_path / "k.cl", "opencl-c")).artifact("opencl-c")


def test_the_key_follows_includes_wherever_they_stand(tmp_path: Path, counted: Path) -> None:
    # an #include after a comment and a line continuation is still an include: its header is keyed
    shader = write_shader(tmp_path, "2.0")
    shader.write_text(SHADER.replace('#include "common.h"', '/* c */ #\\\n  /* d */ include "common.h"'))
    request = CompileRequest(shader, "glsl", include_dirs=(tmp_path / "inc",))
    first = Compiler(request).vulkan_module()
    (tmp_path / "inc" / "common.h").write_text("#define SCALE 3.0\n")
    second = Compiler(request).vulkan_module()
    assert second.key != first.key and second.data != first.data


def _two_folders(tmp_path: Path) -> tuple[Path, Path]:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        write_shader(tmp_path / name, "2.0")
    return tmp_path / "one" / "s.comp", tmp_path / "two" / "s.comp"


def test_the_same_kernel_in_another_folder_is_a_hit(tmp_path: Path, counted: Path) -> None:
    one, two = _two_folders(tmp_path)
    first = Compiler(CompileRequest(one, "glsl", include_dirs=(one.parent / "inc",))).vulkan_module()
    assert spawned(counted)
    assert Compiler(CompileRequest(two, "glsl", include_dirs=(two.parent / "inc",))).vulkan_module() == first
    assert spawned(counted) == []  # no compiler, no preprocessor: the key needs no process


def test_a_debug_build_is_keyed_by_its_folder(tmp_path: Path, counted: Path) -> None:
    # -g writes the file's name into the module: another folder is another output
    one, two = _two_folders(tmp_path)
    first = Compiler(CompileRequest(one, "glsl", build_options="-g -Iinc", options_from="user")).vulkan_module()
    second = Compiler(CompileRequest(two, "glsl", build_options="-g -Iinc", options_from="user")).vulkan_module()
    assert first.key != second.key


@pytest.mark.skipif(tools.find("clang") is None or tools.find("llvm-dis") is None,
                    reason="needs clang and llvm-dis (Debian clang-14 llvm-14)")
def test_opencl_ir_is_keyed_by_its_headers_without_preprocessing(tmp_path: Path) -> None:
    (tmp_path / "k.h").write_text("#define V 1\n")
    (tmp_path / "k.cl").write_text('#include "k.h"\nkernel void k(global int* a) { a[0] = V; }\n')
    log = tmp_path / "spawned.log"
    wrappers = counting_wrappers(tmp_path / "bin", log, ("clang",))
    with config.override(cache_dir=tmp_path / "cache", tool_path=(str(wrappers),)):
        first = Compiler(CompileRequest(tmp_path / "k.cl", "opencl-c")).artifact("llvm-ir")
        assert [line.split()[1] for line in spawned(log) if "--version" not in line] == ["-c"]  # no clang -E
        assert Compiler(CompileRequest(tmp_path / "k.cl", "opencl-c")).artifact("llvm-ir") == first
        assert spawned(log) == []
        (tmp_path / "k.h").write_text("#define V 2\n")
        assert Compiler(CompileRequest(tmp_path / "k.cl", "opencl-c")).artifact("llvm-ir").key != first.key


def test_caching_can_be_turned_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with config.override(cache_dir=tmp_path):
        assert default_cache() is not None
    monkeypatch.setenv("KERNELLAB_NO_CACHE", "1")
    assert config.Config.from_environ().compile_cache is False
    with config.override(compile_cache=False):
        assert default_cache() is None and Compiler(CompileRequest(tmp_path / "s.comp", "glsl")).cache is None


@needs_glslang
@pytest.mark.parametrize("command", ["run", "snapshot", "snapshot --no-cache", "listing"])
def test_every_command_leaves_the_cache_alone_when_caching_is_off(tmp_path: Path, command: str) -> None:
    """``KERNELLAB_NO_CACHE=1`` (the settings' compile_cache) holds for every command, and
    ``--no-cache`` too: ``run`` and ``snapshot`` set the cache from their flag alone (the variable
    was overridden), ``snapshot --no-cache`` handed the compiler no cache (the default one), and
    ``listing`` always gave it the cache folder."""
    shutil.copytree(EXAMPLE, tmp_path / "va")
    name, *flags = command.split()
    argv = {"run": ["run", str(tmp_path / "va" / "scenario.json"), "--output", str(tmp_path / "out"), "--dry-run"],
            "snapshot": ["snapshot", str(tmp_path / "va" / "add.comp"), "--stage", "spirv", "-o",
                         str(tmp_path / "add.spv"), *flags],
            "listing": ["listing", str(tmp_path / "va" / "add.comp")]}[name]
    with config.override(cache_dir=tmp_path / "cache", compile_cache="--no-cache" in flags):
        assert main(argv) == 0
    assert not (tmp_path / "cache" / "artifacts").exists()


def test_a_spirv_source_is_validated_once_per_content(tmp_path: Path, counted: Path) -> None:
    shader = write_shader(tmp_path, "2.0")
    spv = tmp_path / "s.spv"
    spv.write_bytes(Compiler(CompileRequest(shader, "glsl", include_dirs=(tmp_path / "inc",))).vulkan_module().data)
    spawned(counted)
    assert Compiler(CompileRequest(spv, "spirv")).vulkan_module().data == spv.read_bytes()
    assert [line for line in spawned(counted) if "--version" not in line][0].startswith("spirv-val --target-env")
    Compiler(CompileRequest(spv, "spirv")).vulkan_module()
    assert spawned(counted) == []
