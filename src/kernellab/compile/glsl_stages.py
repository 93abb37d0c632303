"""GLSL shaders: ``glsl`` → ``preprocessed`` (glslangValidator -E) → ``spirv``
(glslangValidator -V, from the source) → ``spirv-opt``. A shader is compiled for the stage its
request names (``compute``; ``vertex`` and ``fragment`` for ``dispatch_fragment``), as Arm's
runner gives glslang the scenario's ``stage``. The ``spirv`` stage calls glslang's library in a
forked child where it can (``glslang_lib``: the same module without starting the tool)."""
from __future__ import annotations

import re

from kernellab import tools
from kernellab.compile.preprocess import staged, without_include_dirs
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
    # the source comes with its includes inlined (compile.preprocess): no folder to search
    return args + without_include_dirs(req.options)


def _glsl_preprocess(src: Artifact, req: CompileRequest) -> bytes:
    glslang = tools.require("glslangValidator", "compiling GLSL")
    with staged(src.data, req.source.name) as folder:
        proc = glslang.run(["-E", "-S", _glslang_stage(req), *_glslang_common(src, req), req.source.name],
                           cwd=folder, what=f"preprocessing {req.shown_source}", error=CompileError)
    return proc.stdout


def _glslang_target(env: str) -> str:
    return env if env.startswith("vulkan") else "vulkan1.2"


def _in_process(src: Artifact, req: CompileRequest) -> bytes | None:
    """The module from glslang's library in a forked child (the tool's output, byte for byte), or
    None where the request needs the tool: compiler options, a renamed entry point, no library,
    or a shader the library rejects (the tool then gives the error message)."""
    from kernellab.compile import glslang_lib

    target = _glslang_target(req.target_env)
    if req.entry != "main" or without_include_dirs(req.options) or not glslang_lib.supports(target, req.shader_stage):
        return None
    version = None if has_version_line(src.data) else int(ARM_DEFAULT_VERSION)
    try:
        return glslang_lib.compile_contained(src.data, req.shader_stage, target, version)
    except glslang_lib.CompileFailed:
        return None


def _glsl_to_spirv(src: Artifact, req: CompileRequest) -> bytes:
    module = _in_process(src, req)
    if module is not None:
        return module
    # glslang compiles the source with its includes inlined, in a private folder under the
    # file's own name (debug info and messages name it, not a temporary path)
    glslang = tools.require("glslangValidator", "compiling GLSL")
    args = ["-V", "-S", _glslang_stage(req), "--target-env", _glslang_target(req.target_env),
            *_glslang_common(src, req)]
    if req.entry != "main":
        # GLSL's entry function is always main(); `entry` names the SPIR-V entry point
        args += ["-e", req.entry, "--source-entrypoint", "main"]
    with staged(src.data, req.source.name) as folder:
        glslang.run([*args, "-o", "kernellab-out.spv", req.source.name], cwd=folder,
                    what=f"compiling {req.shown_source}", error=CompileError)
        try:
            return (folder / "kernellab-out.spv").read_bytes()
        except OSError:
            raise CompileError(f"compiling {req.shown_source}: glslangValidator wrote no module") from None


LANGUAGE = Language("glsl", (
    Stage("glsl", None, "comp", "comp", description="the GLSL shader source"),
    Stage("preprocessed", _glsl_preprocess, "comp", "comp", tools=("glslangValidator",),
          description="GLSL after the preprocessor (glslangValidator -E)", content_keyed=True),
    Stage("spirv", _glsl_to_spirv, "spv", "spvasm", Output.SPIRV, tools=("glslangValidator",), after="glsl",
          description="SPIR-V from glslang, validated with spirv-val"),
    SPIRV_OPT,
), vulkan_module="spirv")
