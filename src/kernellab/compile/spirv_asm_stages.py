"""SPIR-V assembly (``.spvasm``) as a source language: ``spirv-asm`` → ``spirv`` (spirv-as) →
``spirv-opt``. Hand-written modules are listed, snapshotted and run like any other kernel."""
from __future__ import annotations

from kernellab import tools
from kernellab.compile.spirv_stages import SPIRV_OPT
from kernellab.compile.stage import Artifact, CompileRequest, Language, Output, Stage
from kernellab.errors import CompileError


def _spirv_env(target_env: str) -> str:
    return target_env if target_env.startswith(("vulkan", "opencl", "spv")) else "vulkan1.2"


def _assemble(src: Artifact, req: CompileRequest) -> bytes:
    spirv_as = tools.require("spirv-as", "assembling SPIR-V")
    return spirv_as.transform(["--target-env", _spirv_env(req.target_env), str(req.source), "-o", tools.OUTPUT],
                              output_name="module.spv", what=f"assembling {req.shown_source}", error=CompileError)


LANGUAGE = Language("spirv-asm", (
    Stage("spirv-asm", None, "spvasm", "spvasm", description="the SPIR-V assembly source"),
    Stage("spirv", _assemble, "spv", "spvasm", Output.SPIRV, tools=("spirv-as",),
          description="SPIR-V assembled by spirv-as, validated with spirv-val"),
    SPIRV_OPT,
), vulkan_module="spirv")
