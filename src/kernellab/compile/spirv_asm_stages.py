"""SPIR-V assembly (``.spvasm``) as a source language: ``spirv-asm`` → ``spirv`` (spirv-as) →
``spirv-opt``. Hand-written modules are listed, snapshotted and run like any other kernel."""
from __future__ import annotations

import tempfile
from pathlib import Path

from kernellab import tools
from kernellab.compile.pipeline import (SPIRV_STAGES, Artifact, CompileRequest, Stage, register_stages,
                                        spirv_to_text)
from kernellab.errors import CompileError


def _spirv_env(target_env: str) -> str:
    return target_env if target_env.startswith(("vulkan", "opencl", "spv")) else "vulkan1.2"


def _assemble(src: Artifact, req: CompileRequest) -> bytes:
    spirv_as = tools.require("spirv-as", "assembling SPIR-V")
    with tempfile.TemporaryDirectory(prefix="kernellab-as-") as tmp:
        out = Path(tmp) / "module.spv"
        spirv_as.run(["--target-env", _spirv_env(req.target_env), str(req.source), "-o", str(out)],
                     what=f"assembling {req.source}", error=CompileError)
        return out.read_bytes()


SPIRV_ASM_STAGES: tuple[Stage, ...] = (
    Stage("spirv-asm", None, "spvasm", "spvasm", description="the SPIR-V assembly source"),
    Stage("spirv", _assemble, "spv", "spvasm", spirv_to_text, tools=("spirv-as",),
          description="SPIR-V assembled by spirv-as, validated with spirv-val"),
    *(s for s in SPIRV_STAGES if s.name != "spirv"),
)

register_stages("spirv-asm", SPIRV_ASM_STAGES, vulkan_module_stage="spirv")
