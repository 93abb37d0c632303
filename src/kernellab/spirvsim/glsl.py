"""GLSL compute shaders compiled for checking: with debug information, so that every finding
names the GLSL line of its accesses (glslang's NonSemantic.Shader.DebugInfo carries the source
text too)."""
from __future__ import annotations

from pathlib import Path

from kernellab import tools
from kernellab.errors import CompileError


def glsl_to_spirv(source: str | Path, *, target_env: str = "vulkan1.2", debug: str = "-gVS",
                  defines: dict[str, str] | None = None) -> bytes:
    """Compile one GLSL compute shader to SPIR-V for the checker: a file (findings then name it
    and its includes resolve) or the text of one."""
    glslang = tools.require("glslangValidator", "compiling GLSL for the SPIR-V checker")
    args: list[tools.Arg] = ["-V", debug, "-S", "comp", "--target-env", target_env]
    args += [f"-D{k}={v}" for k, v in (defines or {}).items()]
    if isinstance(source, Path):
        return glslang.transform([*args, "-o", tools.OUTPUT, str(source)], what=f"compiling {source} for checking",
                                 output_name="shader.spv", error=CompileError)
    return glslang.transform([*args, "-o", tools.OUTPUT, tools.INPUT], what="compiling GLSL for checking",
                             input=source.encode(), input_name="shader.comp", output_name="shader.spv",
                             error=CompileError)
