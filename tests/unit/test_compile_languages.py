"""The compile stage table: one entry per language module, each stage saying what it makes."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.compile import languages
from kernellab.compile.languages import LANGUAGES, VULKAN_MODULE_STAGE, all_stages
from kernellab.compile.pipeline import Compiler, compile_tensor_glsl
from kernellab.compile.stage import CompileRequest, Output
from kernellab.compile.tensor_glsl import uses_tensors
from kernellab.errors import InputError, MissingToolError

COMPILE = Path(languages.__file__).parent
TENSOR_SHADER = Path(__file__).parents[1] / "backend" / "shaders" / "tensor_scale.comp"


def _has_arm_glslc() -> bool:
    try:
        tools.arm_glslc()
    except MissingToolError:
        return False
    return True


def test_every_language_starts_at_its_source_and_runs_on_vulkan_from_a_spirv_stage():
    assert list(LANGUAGES) == ["glsl", "spirv", "opencl-c", "spirv-asm", "glsl-tensors"]
    for name, lang in LANGUAGES.items():
        stages = all_stages(name)
        assert list(stages) == [s.name for s in lang.stages]
        first = next(iter(stages.values()))
        assert first.run is None and all(s.run is not None for s in list(stages.values())[1:])
        assert stages[VULKAN_MODULE_STAGE[name]].is_spirv


def test_the_written_out_vulkan_stages_are_each_languages_own():
    assert VULKAN_MODULE_STAGE == {name: lang.vulkan_module for name, lang in LANGUAGES.items()
                                   if lang.vulkan_module is not None}


def test_a_spirv_module_loads_no_other_languages_stages():
    """Issue 23: the GLSL, OpenCL C and tensor stage modules cost a SPIR-V run ~20 M instructions."""
    code = ("import sys\nfrom kernellab.compile.languages import all_stages, VULKAN_MODULE_STAGE\n"
            "assert list(all_stages('spirv')) == ['spirv', 'spirv-opt'] and VULKAN_MODULE_STAGE['glsl'] == 'spirv'\n"
            "print(sorted(m for m in sys.modules if m.startswith('kernellab.compile.')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = set(ast.literal_eval(proc.stdout))
    assert "kernellab.compile.spirv_stages" in loaded
    assert not loaded & {"kernellab.compile.glsl_stages", "kernellab.compile.opencl_stages",
                         "kernellab.compile.spirv_asm_stages", "kernellab.compile.tensor_glsl"}


def test_an_unknown_language_is_an_input_error_naming_the_known_ones():
    with pytest.raises(InputError, match="unknown kernel language 'fortran'.*glsl, spirv, opencl-c"):
        languages.language("fortran")


def test_the_stage_record_says_which_outputs_are_spirv():
    spirv = {name: [n for n, s in all_stages(name).items() if s.is_spirv] for name in LANGUAGES}
    assert spirv == {"glsl": ["spirv", "spirv-opt"], "spirv": ["spirv", "spirv-opt"],
                     "opencl-c": ["spirv-kernel", "spirv-vulkan"], "spirv-asm": ["spirv", "spirv-opt"],
                     "glsl-tensors": ["spirv"]}
    cl = all_stages("opencl-c")
    assert cl["spirv-kernel"].spirv_env == "opencl1.2" and cl["spirv-vulkan"].spirv_env == ""
    assert [n for n, s in cl.items() if s.output is Output.TEXT] == ["opencl-c", "preprocessed"]
    # text stages write one file, whose text is its bytes
    assert cl["preprocessed"].to_text(b"kernel void k() {}\n") == "kernel void k() {}\n"


def test_an_unknown_language_names_the_known_ones():
    with pytest.raises(InputError, match="unknown kernel language 'fortran' "
                                         r"\(have: glsl, spirv, opencl-c, spirv-asm, glsl-tensors\)"):
        all_stages("fortran")


def test_language_modules_do_not_import_the_pipeline_that_runs_them():
    """The table is assembled in pipeline.py; a language module registering itself by importing
    the pipeline back is how the old cycle came about."""
    for module in ("glsl_stages", "spirv_stages", "spirv_asm_stages", "opencl_stages", "tensor_glsl", "stage"):
        tree = ast.parse((COMPILE / f"{module}.py").read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
        assert not imported & {"kernellab.compile.pipeline", "kernellab.compile.languages"}, module


def test_tensor_glsl_is_recognised_by_its_extension_line():
    assert uses_tensors("#version 450\n  #extension GL_ARM_tensors : require\n")
    assert not uses_tensors("#version 450\n// GL_ARM_tensors mentioned in a comment\n")


@pytest.mark.skipif(not _has_arm_glslc(), reason=f"needs Arm's glslc: pip install {tools.ARM_GLSLC_PACKAGE}")
def test_tensor_glsl_compiles_through_the_table_as_through_compile_tensor_glsl():
    via_table = Compiler(CompileRequest(TENSOR_SHADER, "glsl-tensors", target_env="vulkan1.3")).vulkan_module()
    assert via_table.stage == "spirv"
    assert via_table.data == compile_tensor_glsl(TENSOR_SHADER)
    assert "OpCapability TensorsARM" in all_stages("glsl-tensors")["spirv"].to_text(via_table.data)
