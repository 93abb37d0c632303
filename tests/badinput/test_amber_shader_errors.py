"""A shader of an AmberScript file that does not compile: the error names the script (or the
FILE the shader was read from) and the line there, never kernellab's generated files; exit 2,
no traceback. `listing`, `verify` and `import` compile without a device."""
from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernellab import config
from kernellab.cli import main
from kernellab.errors import CompileError, ToolFailure
from kernellab.formats.amber.origins import ORIGINS_FILE, ShaderOrigin, translated

BUFFER_PIPELINE = """BUFFER buf DATA_TYPE uint32 SIZE 4 FILL 0
PIPELINE compute p
  ATTACH comp{entry}
  {bind}
END
RUN p 1 1 1
"""
STORAGE = "BIND BUFFER buf AS storage DESCRIPTOR_SET 0 BINDING 0"


def script(shader: str, entry: str = "", bind: str = STORAGE) -> str:
    return "#!amber\n" + shader + BUFFER_PIPELINE.format(entry=entry, bind=bind)


GLSL = script("""SHADER compute comp GLSL
#version 430
layout(local_size_x=1) in;
void main() { bogus(); }
END
""")
SPIRV_ASM = script("""SHADER compute comp SPIRV-ASM
OpCapability Shader
OpBogus
END
""")
HLSL = script("""SHADER compute comp HLSL
[numthreads(1,1,1)]
void main() { bogus(); }
END
""")
OPENCL = script("""SHADER compute comp OPENCL-C
kernel void foo(global uint* a) {
  a[0] = bogus();
}
END
""", " ENTRY_POINT foo", "BIND BUFFER buf KERNEL ARG_NAME a")
#: a sampler_t constant: the kernel is compiled by clspv when the script is read (its reflection
#: places the sampler), not when it runs
OPENCL_AT_IMPORT = script("""SHADER compute comp OPENCL-C
const sampler_t s = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;
kernel void foo(global uint* a) {
  a[0] = bogus();
}
END
""", " ENTRY_POINT foo", "BIND BUFFER buf KERNEL ARG_NAME a")
#: valid assembly, invalid module: %main (a function) used as an operand
INVALID_SPIRV = script("""SHADER compute comp SPIRV-ASM
               OpCapability Shader
               OpMemoryModel Logical GLSL450
               OpEntryPoint GLCompute %main "main"
               OpExecutionMode %main LocalSize 1 1 1
       %void = OpTypeVoid
          %3 = OpTypeFunction %void
       %uint = OpTypeInt 32 0
       %main = OpFunction %void None %3
          %5 = OpLabel
          %x = OpIAdd %uint %main %main
               OpReturn
               OpFunctionEnd
END
""", bind="")

needs_clspv = pytest.mark.skipif(importlib.util.find_spec("pyclspv") is None, reason="pyclspv is not installed")


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Scripts named relative to the working folder, as a user types them; a cache of their own."""
    monkeypatch.chdir(tmp_path)
    with config.override(cache_dir=tmp_path / "cache", compile_cache=False):
        yield


def failing(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    # a repro may name the kept copy it compiles (that file exists); nothing else names kernellab's files
    told = "\n".join(line for line in err.splitlines() if not line.startswith("repro: "))
    assert "shader0" not in told and "pipeline0" not in told and "/cache/" not in told, err
    return err


@pytest.mark.parametrize("command", ["listing", "verify", "validate"])
def test_glsl(tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str) -> None:
    Path("g.amber").write_text(GLSL)
    err = failing(capsys, command, "g.amber")
    # glslang's line 3 of the shader's text is line 5 of the script: the text starts after SHADER
    assert err.startswith("g.amber: line 5: SHADER comp (GLSL): 'bogus' : no matching overloaded function found\n"), err
    assert "glslangValidator" in err and "compilation terminated" not in err


def test_validate_names_the_bind_of_a_buffer_not_defined(capsys: pytest.CaptureFixture[str]) -> None:
    Path("b.amber").write_text(GLSL.replace("BIND BUFFER buf", "BIND BUFFER nope"))
    err = failing(capsys, "validate", "b.amber")
    assert err.startswith("b.amber: line 10, column 15: no buffer 'nope' is defined"), err


def test_spirv_asm(capsys: pytest.CaptureFixture[str]) -> None:
    Path("s.amber").write_text(SPIRV_ASM)
    err = failing(capsys, "import", "s.amber", "-o", "out")
    assert err.startswith("s.amber: line 4, column 1: SHADER comp (SPIRV-ASM): Invalid Opcode name 'OpBogus'\n"), err
    # spirv-as ran in a temporary folder that is gone: the tool and its options, no repro
    assert "spirv-as --target-env spv1.0 failed" in err and "repro" not in err, err


def test_hlsl(capsys: pytest.CaptureFixture[str]) -> None:
    Path("h.amber").write_text(HLSL)
    err = failing(capsys, "import", "h.amber", "-o", "out")
    assert err.startswith("h.amber: line 4: SHADER comp (HLSL): 'bogus' : no matching overloaded function found\n"), err
    assert "/tmp/" not in err and "shader.hlsl" not in err, err


@needs_clspv
def test_opencl_c(capsys: pytest.CaptureFixture[str]) -> None:
    Path("c.amber").write_text(OPENCL)
    err = failing(capsys, "listing", "c.amber")
    assert err.startswith("c.amber: line 4, column 10: SHADER comp (OPENCL-C): use of undeclared identifier 'bogus'\n")


@needs_clspv
def test_opencl_c_compiled_when_read(capsys: pytest.CaptureFixture[str]) -> None:
    Path("c.amber").write_text(OPENCL_AT_IMPORT)
    err = failing(capsys, "import", "c.amber", "-o", "out")
    assert err.startswith("c.amber: line 5, column 10: SHADER comp (OPENCL-C): use of undeclared identifier 'bogus'\n")


def test_shader_from_a_file_names_that_file(capsys: pytest.CaptureFixture[str]) -> None:
    Path("x.comp").write_text("#version 430\nlayout(local_size_x=1) in;\n\nvoid main() { bogus(); }\n")
    Path("f.amber").write_text(script("SHADER compute comp GLSL FILE x.comp\n"))
    err = failing(capsys, "listing", "f.amber")
    assert err.startswith("x.comp: line 4: SHADER comp (GLSL): 'bogus'"), err


def test_shader_from_a_virtual_file_names_its_script_line(capsys: pytest.CaptureFixture[str]) -> None:
    Path("v.amber").write_text(script("VIRTUAL_FILE a.comp\n#version 430\nlayout(local_size_x=1) in;\n"
                                      "void main() { bogus(); }\nEND\nSHADER compute comp GLSL VIRTUAL_FILE a.comp\n"))
    err = failing(capsys, "listing", "v.amber")
    assert err.startswith("v.amber: line 5: SHADER comp (GLSL): 'bogus'"), err


def test_invalid_spirv_names_the_instruction_line(capsys: pytest.CaptureFixture[str]) -> None:
    Path("val.amber").write_text(INVALID_SPIRV)
    err = failing(capsys, "verify", "val.amber")
    assert err.startswith("val.amber: line 12: SHADER comp (SPIRV-ASM): Invalid use of function result id"), err
    assert "spirv-val" in err


def test_import_leaves_no_origins(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An imported folder's files are the user's: a later error names them, not the script."""
    Path("g.amber").write_text(GLSL)
    assert main(["import", "g.amber", "-o", "out"]) == 0
    assert (tmp_path / "out" / "shader0.comp").exists() and not (tmp_path / "out" / ORIGINS_FILE).exists()


ORIGIN = ShaderOrigin("k.amber", "k", "GLSL", 2, "k.amber", 3)


def glslang_error(log: str, argv: list[str]) -> CompileError:
    return CompileError("compiling shader0.comp: glslangValidator failed (exit 2)",
                        ToolFailure("glslangValidator", argv, 2, log))


def test_repro_kept_only_while_its_files_exist(tmp_path: Path) -> None:
    log = "ERROR: shader0.comp:2: 'x' : undeclared identifier\n"
    there = tmp_path / "shader0.comp"
    there.write_text("")
    kept = translated(glslang_error(log, ["glslangValidator", "-V", str(there)]), ORIGIN, ["shader0.comp"])
    assert str(kept) == f"k.amber: line 4: SHADER k (GLSL): 'x' : undeclared identifier\nglslangValidator -V failed " \
                        f"(exit 2)\nrepro: glslangValidator -V {there}"
    gone = translated(glslang_error(log, ["glslangValidator", "-V", str(tmp_path / "gone" / "shader0.comp")]),
                      ORIGIN, ["shader0.comp"])
    assert "repro" not in str(gone) and [(p.file, p.where) for p in gone.problems] == [("k.amber", "line 4")]


def test_lines_of_other_files_are_not_moved() -> None:
    """An included file's line is not a line of the shader: the error goes to the SHADER line,
    with the tool's log as it is."""
    exc = translated(glslang_error("ERROR: common.h:7: 'y' : undeclared identifier\n", ["glslangValidator"]),
                     ORIGIN, ["shader0.comp"])
    [p] = exc.problems
    assert (p.file, p.where) == ("k.amber", "line 2") and "common.h:7: 'y'" in p.message


def test_a_drivers_build_log() -> None:
    """An OpenCL driver's build (PoCL, Oclgrind) fails with no tool of kernellab's: its log is
    in the message, its first line says what failed and with which options."""
    exc = CompileError("shader0.cl:foo: OpenCL C build failed on Dev (options: -cl-kernel-arg-info)\n"
                       "error: /cache/amber/0123/shader0.cl:2:10: use of undeclared identifier 'bogus'\n")
    out = translated(exc, ShaderOrigin("c.amber", "comp", "OPENCL-C", 2, "c.amber", 3), ["shader0.cl"])
    assert str(out) == "c.amber: line 4, column 10: SHADER comp (OPENCL-C): use of undeclared identifier 'bogus'\n" \
                       "OpenCL C build failed on Dev (options: -cl-kernel-arg-info)"


def test_an_origins_record_beside_a_workloads_shader_is_not_believed(capsys: pytest.CaptureFixture[str]) -> None:
    # only the materializer's records in kernellab's cache name a script: one a workload ships
    # beside its shader would choose the file and line an error names
    Path("shader0.comp").write_text("#version 430\nlayout(local_size_x=1) in;\nvoid main() { bogus(); }\n")
    Path(ORIGINS_FILE).write_text('{"shader0.comp": {"script": "/etc/passwd", "shader": "x", "format": "GLSL", '
                                  '"line": 1, "text_file": "/etc/passwd", "text_line": 40}}')
    Path("s.json").write_text('{"commands": [{"dispatch_compute": {"bindings": [], "shader_ref": "k", '
                              '"rangeND": [1, 1, 1]}}], "resources": [{"shader": {"uid": "k", '
                              '"src": "shader0.comp", "entry": "main", "type": "GLSL"}}]}')
    assert main(["listing", "s.json"]) == 2
    err = capsys.readouterr().err
    assert "/etc/passwd" not in err and "shader0.comp:3:" in err, err

