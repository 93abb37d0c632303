"""AmberScript's SHADER_OPTIMIZATION and COMPILE_OPTIONS through the options door
(compiler_options): a fixed table of spirv-opt passes and clspv options a file may name."""
from __future__ import annotations

from pathlib import Path

import pytest

from kernellab.compiler_options import SPIRV_OPT_PASSES, OptionsRefused, optimizer_passes
from kernellab.errors import InputError
from kernellab.formats.amber.parse import parse_amber

SHADER = """SHADER compute s GLSL
#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer B { uint v[]; };
void main() { v[0] = 1u; }
END
BUFFER b DATA_TYPE uint32 SIZE 4 FILL 0
"""


def pipeline(body: str) -> str:
    return SHADER + f"PIPELINE compute p\n  ATTACH s\n{body}  BIND BUFFER b AS storage DESCRIPTOR_SET 0 BINDING 0\nEND\n"


def test_optimizer_passes_render_from_the_table():
    passes = optimizer_passes(["--graphics-robust-access", "-O"])
    assert passes.argv() == ["--graphics-robust-access", "-O"] and passes.origin == "file"
    assert "--print-all" not in SPIRV_OPT_PASSES and "-Oconfig=x" not in SPIRV_OPT_PASSES


@pytest.mark.parametrize("word", ["-Oconfig=/etc/passwd", "--print-all", "-o", "out.spv", "--loop-fission=3",
                                  "--skip-validation", "--relax-block-layout"])
def test_other_spirv_opt_words_are_refused(word):
    with pytest.raises(OptionsRefused) as info:
        optimizer_passes([word])
    assert repr(word) in str(info.value)


def test_shader_optimization_is_read_into_the_pipeline():
    script = parse_amber(pipeline("  SHADER_OPTIMIZATION s\n    --graphics-robust-access\n    --merge-return\n  END\n"),
                         Path("t.amber"))
    assert script.pipelines["p"].optimizations.argv() == ["--graphics-robust-access", "--merge-return"]


@pytest.mark.parametrize("body, where, words", [
    ("  SHADER_OPTIMIZATION s\n    --merge-return -Oconfig=/tmp/x\n  END\n", "line 11, column 20",
     "'-Oconfig=/tmp/x' is not allowed in a file: not a spirv-opt pass"),
    ("  SHADER_OPTIMIZATION t\n  END\n", "line 10, column 23", "not the attached shader 's'"),
])
def test_bad_shader_optimization_names_the_line(body, where, words):
    with pytest.raises(InputError) as info:
        parse_amber(pipeline(body), Path("t.amber"))
    assert f"t.amber: {where}: " in str(info.value) and words in str(info.value)


KERNEL = """SHADER compute k OPENCL-C
kernel void f(global int* out, int a) { out[0] = a; }
END
BUFFER b DATA_TYPE int32 SIZE 1 FILL 0
"""


def kernel_pipeline(options: str) -> str:
    return KERNEL + (f"PIPELINE compute p\n  ATTACH k ENTRY_POINT f\n  COMPILE_OPTIONS k\n    {options}\n  END\n"
                     "  BIND BUFFER b KERNEL ARG_NAME out\nEND\n")


def test_compile_options_keep_clspv_layout_options_apart():
    p = parse_amber(kernel_pipeline("-pod-ubo -DN=3 -cl-fast-relaxed-math -work-dim"), Path("t.amber")).pipelines["p"]
    assert p.clspv_layout.argv() == ["-pod-ubo", "-work-dim"]
    assert p.compile_options == "-DN=3 -cl-fast-relaxed-math"


@pytest.mark.parametrize("options, where, words", [
    ("-pod-ubo -o /tmp/x", "line 8, column 14", "'-o' is not allowed in a file"),
    ("-cl-fast-relaxed-math -constant-args-ubo", "line 8, column 27", "'-constant-args-ubo' is not allowed"),
    ("-Xclang", "line 8, column 5", "'-Xclang' is not allowed in a file"),
])
def test_other_compile_options_are_refused_naming_the_line(options, where, words):
    with pytest.raises(InputError) as info:
        parse_amber(kernel_pipeline(options), Path("t.amber"))
    assert f"t.amber: {where}: " in str(info.value) and words in str(info.value)


def test_layout_options_render_through_the_door_into_the_compile_request(tmp_path):
    from kernellab.compile.stage import CompileRequest
    from kernellab.compiler_options import clspv_layout_options

    source = tmp_path / "k.cl"
    source.write_text("kernel void f(global int* out) {}\n")
    req = CompileRequest(source, "opencl-c", build_options="-DN=1", clspv_layout=("-pod-ubo",))
    assert req.options == ["-DN=1", "-pod-ubo"]
    with pytest.raises(OptionsRefused):
        clspv_layout_options(["-pod-ubo", "-o"])


def test_shader_optimization_of_opencl_c_runs_on_clspvs_module(tmp_path):
    """As Amber does: the kernel is compiled by clspv at import, then spirv-opt's passes run on
    that module, and the scenario's shader is the optimized SPIR-V."""
    import json

    from kernellab.formats.amber.materialize import write_scenarios
    from kernellab.formats.amber.script import KernelArgument

    text = KERNEL + ("PIPELINE compute p\n  ATTACH k ENTRY_POINT f\n  SHADER_OPTIMIZATION k\n"
                     "    --graphics-robust-access\n  END\n  BIND BUFFER b KERNEL ARG_NAME out\n"
                     "  SET KERNEL ARG_NAME a AS int32 3\nEND\nRUN p 1 1 1\n")
    script = parse_amber(text, tmp_path / "t.amber")
    calls: list[tuple[str, str, list[str]]] = []

    def compile_kernel(src, entry, options, layout):
        calls.append(("clspv", src.name, []))
        return b"clspv module", {0: KernelArgument("ArgumentStorageBuffer", 0, 0),
                                 1: KernelArgument("ArgumentPodPushConstant", 0, 0, 0, 4)}

    def optimize(src, kind, env, passes):
        calls.append(("spirv-opt", kind, passes.argv()))
        assert src.read_bytes() == b"clspv module"
        return b"optimized module"

    checkpoint = write_scenarios(script, tmp_path / "out", lambda asm, env: b"", optimize, compile_kernel)[-1]
    assert [c[0] for c in calls] == ["clspv", "spirv-opt"]
    assert calls[1][1:] == ("SPIR-V", ["--graphics-robust-access"])
    scenario = json.loads(checkpoint.scenario.read_text())
    shader = next(r["shader"] for r in scenario["resources"] if "shader" in r)
    assert shader["type"] == "SPIR-V"
    assert (checkpoint.scenario.parent / shader["src"]).read_bytes() == b"optimized module"
