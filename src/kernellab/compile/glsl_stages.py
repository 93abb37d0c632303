"""GLSL shaders: ``glsl`` → ``preprocessed`` (glslangValidator -E) → ``spirv``
(glslangValidator -V, from the source) → ``spirv-opt``. A shader is compiled for the stage its
request names (``compute``; ``vertex`` and ``fragment`` for ``dispatch_fragment``), as Arm's
runner gives glslang the scenario's ``stage``."""
from __future__ import annotations

import re

from kernellab import tools
from kernellab.compile.spirv_stages import SPIRV_OPT
from kernellab.compile.stage import Artifact, CompileRequest, Language, Output, Stage
from kernellab.errors import CompileError


#: the GLSL version Arm's Scenario Runner compiles a shader without a ``#version`` line as (its
#: glslang is called with a default version of 460, desktop profile: a version-less shader that
#: calls GLSL 4.60's anyInvocation() runs there, and its glslc writes ``OpSource GLSL 460``)
ARM_DEFAULT_VERSION = "460"

_VERSION_LINE = re.compile(rb"^[ \t]*#[ \t]*version\b", re.MULTILINE)


def has_version_line(source: bytes) -> bool:
    return _VERSION_LINE.search(source) is not None


#: a request's shader stage -> glslang's -S name
GLSLANG_STAGES = {"compute": "comp", "vertex": "vert", "fragment": "frag"}


def _glslang_stage(req: CompileRequest) -> str:
    return GLSLANG_STAGES[req.shader_stage]


def _glslang_common(src: Artifact, req: CompileRequest) -> list[str]:
    # glslang's own default for a version-less shader is ES 100, which has no compute shaders;
    # --glsl-version only when the file has no #version, so a file's own version always wins
    args: list[str] = [] if has_version_line(src.data) else ["--glsl-version", ARM_DEFAULT_VERSION]
    for d in req.include_dirs:
        args.append(f"-I{d}")
    args += req.options
    return args


def _glsl_preprocess(src: Artifact, req: CompileRequest) -> bytes:
    glslang = tools.require("glslangValidator", "compiling GLSL")
    proc = glslang.run(["-E", "-S", _glslang_stage(req), *_glslang_common(src, req), str(req.source)],
                       what=f"preprocessing {req.source}", error=CompileError)
    return proc.stdout


def _glslang_target(env: str) -> str:
    return env if env.startswith("vulkan") else "vulkan1.2"


def _glsl_to_spirv(src: Artifact, req: CompileRequest) -> bytes:
    # glslang compiles the user's own file (so includes resolve and the repro command is one they
    # can run); the preprocessed text keys the artifact
    glslang = tools.require("glslangValidator", "compiling GLSL")
    args = ["-V", "-S", _glslang_stage(req), "--target-env", _glslang_target(req.target_env),
            *_glslang_common(src, req)]
    if req.entry != "main":
        # GLSL's entry function is always main(); `entry` names the SPIR-V entry point
        args += ["-e", req.entry, "--source-entrypoint", "main"]
    return glslang.transform([*args, "-o", tools.OUTPUT, str(req.source)], output_name="out.spv",
                             what=f"compiling {req.source}", error=CompileError)


LANGUAGE = Language("glsl", (
    Stage("glsl", None, "comp", "comp", description="the GLSL shader source"),
    Stage("preprocessed", _glsl_preprocess, "comp", "comp", tools=("glslangValidator",),
          description="GLSL after the preprocessor (glslangValidator -E)", content_keyed=True),
    Stage("spirv", _glsl_to_spirv, "spv", "spvasm", Output.SPIRV, tools=("glslangValidator",), after="glsl",
          keyed_by="preprocessed", description="SPIR-V from glslang, validated with spirv-val"),
    SPIRV_OPT,
), vulkan_module="spirv")
