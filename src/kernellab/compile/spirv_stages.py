"""SPIR-V binaries (``.spv``) as a source language: ``spirv`` (the module as given, validated)
→ ``spirv-opt``. The optimizer stage is shared by every language that makes SPIR-V for Vulkan."""
from __future__ import annotations

from kernellab import tools
from kernellab.compile.stage import Artifact, CompileRequest, Language, Output, Stage
from kernellab.errors import CompileError


def _spirv_opt(src: Artifact, req: CompileRequest) -> bytes:
    opt = tools.require("spirv-opt", "optimizing SPIR-V")
    return opt.transform(["-O", f"--target-env={req.target_env}", tools.INPUT, "-o", tools.OUTPUT],
                         input=src.data, input_name="in.spv", output_name="out.spv",
                         what=f"optimizing {req.shown_source}", error=CompileError)


SPIRV_OPT = Stage("spirv-opt", _spirv_opt, "spv", "spvasm", Output.SPIRV, tools=("spirv-opt",),
                  description="SPIR-V optimized by spirv-opt -O")

LANGUAGE = Language("spirv", (
    Stage("spirv", None, "spv", "spvasm", Output.SPIRV, description="the SPIR-V module as given"),
    SPIRV_OPT,
), vulkan_module="spirv")
