"""``python -m kernellab.compile.clspv_child SRC [-o OUT] [BUILD OPTIONS...]``: OpenCL C to Vulkan
SPIR-V with pip's pyclspv (written to OUT, or to standard output).

pyclspv's ``compile()`` takes no build options, but its library exports clspv's C entry point
``clspvCompileFromSourcesString``; calling that takes the options clspv's own command line does
(``-O0`` and ``-g``, which ``kernellab verify --vulkan`` compiles with, ``-cl-std=``, ...).
``-D``/``-U`` are written into the text (:func:`clspv_source`), the rest go to clspv. The
compiler log goes to standard error; running clspv in a child process lets it be captured,
gives a failure a repro command that can be pasted into a shell, and lets kernellab kill a
compile that never ends (clspv loops on a few kernels; see ``Tool.run``'s time limit).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import sys

from kernellab.compile.build_log import presumed_locations
from kernellab.compile.opencl_stages import clspv_source


def _options(options: list[str]) -> list[str]:
    """The build options clspv takes as options: all but ``-D``/``-U`` (already in the text)."""
    out, k = [], 0
    while k < len(options):
        o = options[k]
        if o in ("-D", "-U"):
            k += 2
            continue
        if not o.startswith(("-D", "-U")):
            out.append(o)
        k += 1
    return out


def _compile(library: str, text: str, options: list[str]) -> tuple[bytes | None, str]:
    """(SPIR-V or None on failure, compiler log) from clspv's C API in ``library``."""
    lib = ctypes.CDLL(library)
    fn = lib.clspvCompileFromSourcesString
    fn.restype = ctypes.c_int
    fn.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_char_p),
                   ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t),
                   ctypes.POINTER(ctypes.c_void_p)]
    source = text.encode()
    programs = (ctypes.c_char_p * 1)(source)
    sizes = (ctypes.c_size_t * 1)(len(source))
    binary, size, log = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_void_p()
    status = fn(1, sizes, programs, " ".join(options).encode(), ctypes.byref(binary), ctypes.byref(size),
                ctypes.byref(log))
    spirv = ctypes.string_at(binary.value, size.value) if status == 0 and binary.value else None
    text_log = ctypes.string_at(log.value).decode(errors="replace") if log.value else ""
    free = ctypes.CDLL(None).free
    free.argtypes = [ctypes.c_void_p]
    for pointer in (binary.value, log.value):
        if pointer:
            free(pointer)
    return spirv, text_log


def main(argv: list[str]) -> int:
    # pip's pyclspv is optional: only this child process, run when it is installed, needs it
    import pyclspv  # type: ignore[import-not-found]

    if not argv:
        print("usage: python -m kernellab.compile.clspv_child SRC [-o OUT] [BUILD OPTIONS...]", file=sys.stderr)
        return 2
    src, rest = argv[0], argv[1:]
    out = None
    if len(rest) >= 2 and rest[0] == "-o":
        out, rest = rest[1], rest[2:]
    with open(src, encoding="utf-8", errors="replace") as fh:
        text = clspv_source(fh.read(), rest)
    try:
        spirv, log = _compile(pyclspv.__file__, text, _options(rest))
    except AttributeError:  # a pyclspv build without clspv's C entry point: no options then
        # -cl-kernel-arg-info only adds type names to the reflection: without them __local sizes
        # pass unchanged, as before kernellab asked for it; any other option would be lost
        lost = [o for o in _options(rest) if o != "-cl-kernel-arg-info"]
        if lost:
            print(f"clspv: this pyclspv cannot take the build options {' '.join(lost)}", file=sys.stderr)
            return 1
        try:
            spirv, log = pyclspv.compile(text, False), ""
        except RuntimeError as exc:
            spirv, log = None, str(exc)
    if log:
        log = presumed_locations(log, text)  # clspv names the text "source" and ignores #line
        print(log, file=sys.stderr, end="" if log.endswith("\n") else "\n")
    if spirv is None:
        print("clspv: compile failed", file=sys.stderr)
        return 1
    if out:
        # written beside OUT and renamed: a child killed at its time limit leaves no half a module
        part = f"{out}.part{os.getpid()}"
        try:
            with open(part, "wb") as fh:
                fh.write(spirv)
            os.replace(part, out)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(part)
    else:
        sys.stdout.buffer.write(spirv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
