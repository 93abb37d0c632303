"""The OpenCL C stage pipeline pieces that need no device, and dumping every stage."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.compile.cache import ArtifactCache
from kernellab.compile.opencl_stages import _hexdump, clspv_source, embedded_bitcode
from kernellab.compile.pipeline import Compiler, CompileRequest, all_stages, dump_stages
from kernellab.errors import InputError

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
SHADERS = Path(__file__).parent / "shaders"
HAS_CLANG = all(tools.find(t) is not None for t in ("clang", "llvm-spirv", "llvm-dis"))


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory):
    """Commands cache artifacts; tests keep theirs out of the user's cache (and out of tmp_path,
    where the tests dump stages)."""
    from kernellab import config

    with config.override(cache_dir=tmp_path_factory.mktemp("cache")):
        yield


def test_opencl_stage_table_in_issue_order():
    assert list(all_stages("opencl-c")) == ["opencl-c", "preprocessed", "llvm-ir", "spirv-kernel", "spirv-vulkan",
                                            "device-binary", "device-llvm-ir"]


def test_clspv_source_turns_defines_into_directives_and_keeps_line_numbers():
    src = "kernel void k() {}\n"
    assert clspv_source(src, []) == src
    text = clspv_source(src, ["-DWG=32", "-D", "FAST", "-UOLD", "-cl-fast-relaxed-math"])
    assert text == "#define WG 32\n#define FAST 1\n#undef OLD\n#line 1\nkernel void k() {}\n"


def _poclbin(entries: list[tuple[bytes, bytes]]) -> bytes:
    out = bytearray(b"poclbin\0" + bytes(64))
    for name, data in entries:
        out += len(name).to_bytes(4, "little") + name + len(data).to_bytes(4, "little") + data
    return bytes(out)


def test_bitcode_is_found_in_pocl_and_oclgrind_binaries():
    bc = b"BC\xc0\xde" + bytes(range(40))
    assert embedded_bitcode(bc) == bc  # Oclgrind: the binary is the bitcode
    pocl = _poclbin([(b"/program.bc", bc), (b"/k/0-0-0/k.so", b"\x7fELF" + bytes(20))])
    assert embedded_bitcode(pocl) == bc
    with pytest.raises(InputError, match="embeds no LLVM bitcode"):
        embedded_bitcode(b"\x7fELF....", "k.cl")
    with pytest.raises(InputError, match="embeds no LLVM bitcode"):
        embedded_bitcode(_poclbin([(b"/program.bc", bc[:-1] + b"")])[:-5])  # truncated entry


def test_device_binary_text_form_is_a_hexdump():
    text = _hexdump(b"poclbin\0" + bytes(range(10)))
    assert text.splitlines()[0] == "00000000: 706f 636c 6269 6e00 0001 0203 0405 0607  poclbin........."
    assert text.splitlines()[1].startswith("00000010: 0809")


@pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv (wheels for CPython 3.11 on Linux x86-64)")
def test_build_options_change_the_clspv_artifact_and_its_key(tmp_path: Path):
    cache = ArtifactCache(tmp_path)
    a = Compiler(CompileRequest(SHADERS / "reduce.cl", "opencl-c", build_options="-DWG=32"), cache)
    b = Compiler(CompileRequest(SHADERS / "reduce.cl", "opencl-c", build_options="-DWG=16"), cache)
    art_a, art_b = a.artifact("spirv-vulkan"), b.artifact("spirv-vulkan")
    assert art_a.key != art_b.key and art_a.data != art_b.data
    again = Compiler(CompileRequest(SHADERS / "reduce.cl", "opencl-c", build_options="-DWG=32"), cache)
    assert again.artifact("spirv-vulkan") == art_a  # served from the cache


@pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv (wheels for CPython 3.11 on Linux x86-64)")
def test_opencl_kernel_runs_on_vulkan_from_the_clspv_stage():
    c = Compiler(CompileRequest(SHADERS / "reduce.cl", "opencl-c"))
    assert c.vulkan_module().stage == "spirv-vulkan"


def test_dump_stages_of_a_glsl_kernel(tmp_path: Path):
    c = Compiler(CompileRequest(SHADERS / "loop_branch.comp", "glsl"))
    dump_stages(c, tmp_path, "k")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["k.glsl.comp", "k.preprocessed.comp", "k.spirv-opt.spv", "k.spirv-opt.spvasm",
                     "k.spirv.spv", "k.spirv.spvasm"]
    assert "OpEntryPoint" in (tmp_path / "k.spirv.spvasm").read_text()


@pytest.mark.skipif(not HAS_CLANG, reason="needs clang-14, llvm-14 and llvm-spirv-14 (scripts/setup.sh installs them)")
def test_clang_stages_text_and_binary_forms():
    c = Compiler(CompileRequest(SHADERS / "reduce.cl", "opencl-c", build_options="-DWG=16"))
    stages = c.stages
    ir = c.artifact("llvm-ir")
    assert ir.data.startswith(b"BC\xc0\xde")
    text = stages["llvm-ir"].to_text(ir.data)
    assert "define" in text and "spir64" in text and "[16 x float]" in text
    kernel = c.artifact("spirv-kernel")
    assert kernel.data[:4] == b"\x03\x02\x23\x07"
    assert "OpCapability Kernel" in stages["spirv-kernel"].to_text(kernel.data)
    pre = c.artifact("preprocessed").data.decode()
    assert "scratch[16]" in pre


def test_sources_pick_the_language_and_refuse_what_they_cannot_tell(tmp_path: Path):
    from kernellab.compile.sources import request_for
    from kernellab.errors import UsageError

    assert request_for(SHADERS / "reduce.cl").language == "opencl-c"
    assert request_for(SHADERS / "loop_branch.comp").language == "glsl"
    blob = tmp_path / "module.bin"
    blob.write_bytes(b"\x03\x02\x23\x07" + bytes(16))
    assert request_for(blob).language == "spirv"  # by its magic number
    text = tmp_path / "kernel.txt"
    text.write_text("hello")
    with pytest.raises(UsageError, match="cannot tell the kernel language from the extension"):
        request_for(text)
    with pytest.raises(UsageError, match="--kernel selects a kernel of a scenario or kernel-instantiation"):
        request_for(SHADERS / "reduce.cl", "reduce")
    with pytest.raises(InputError, match="no such file"):
        request_for(tmp_path / "missing.comp")


@pytest.mark.skipif(not HAS_CLANG, reason="needs clang-14, llvm-14 and llvm-spirv-14 (scripts/setup.sh installs them)")
def test_a_changed_header_makes_a_new_llvm_ir_artifact(tmp_path: Path):
    (tmp_path / "k.cl").write_text('#include "scale.h"\nkernel void k(global float* a) { a[0] *= SCALE; }\n')
    header = tmp_path / "scale.h"
    cache = ArtifactCache(tmp_path / "cache")
    header.write_text("#define SCALE 2.0f\n")
    first = Compiler(CompileRequest(tmp_path / "k.cl", "opencl-c"), cache).artifact("llvm-ir")
    header.write_text("#define SCALE 3.0f\n")
    second = Compiler(CompileRequest(tmp_path / "k.cl", "opencl-c"), cache).artifact("llvm-ir")
    assert first.key != second.key
    text = Compiler(CompileRequest(tmp_path / "k.cl", "opencl-c")).stages["llvm-ir"].to_text(second.data)
    assert "3.000000e+00" in text


def test_a_changed_include_makes_a_new_glsl_spirv_artifact(tmp_path: Path):
    (tmp_path / "k.comp").write_text('#version 450\n#extension GL_GOOGLE_include_directive : require\n'
                                      '#include "scale.h"\nlayout(local_size_x = 1) in;\n'
                                      'layout(set = 0, binding = 0) buffer B { float x[]; } b;\n'
                                      'void main() { b.x[0] *= SCALE; }\n')
    header = tmp_path / "scale.h"
    cache = ArtifactCache(tmp_path / "cache")
    keys = []
    for value in ("2.0", "3.0", "2.0"):
        header.write_text(f"#define SCALE {value}\n")
        keys.append(Compiler(CompileRequest(tmp_path / "k.comp", "glsl"), cache).artifact("spirv").key)
    assert keys[0] != keys[1] and keys[0] == keys[2]


def test_spirv_assembly_is_a_source_language(tmp_path: Path, capsys):
    from kernellab.cli import main

    src = tmp_path / "k.spvasm"
    src.write_text("""
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
         %fn = OpTypeFunction %void
       %main = OpFunction %void None %fn
      %entry = OpLabel
               OpReturn
               OpFunctionEnd
""")
    assert list(Compiler(CompileRequest(src, "spirv-asm")).stages) == ["spirv-asm", "spirv", "spirv-opt"]
    assert main(["listing", str(src), "--format", "text"]) == 0
    assert "OpReturn" in capsys.readouterr().out
    src.write_text("OpCapability Shader\n%x = OpNoSuchThing\n")
    assert main(["snapshot", str(src), "--stage", "spirv"]) == 2
    err = capsys.readouterr().err
    assert "assembling" in err and "OpNoSuchThing" in err and "repro: " in err
