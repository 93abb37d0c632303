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
