"""Calling a compiler's C library where its crash cannot end kernellab: the call runs in a forked
child, which hands back the bytes or the error (:func:`contained`); used by ``glslang_lib`` and
``spirv_tools_lib`` (one small module, so validating SPIR-V does not import glslang's binding)."""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any


class CompileFailed(Exception):
    """glslang rejected the shader; the message is its log."""


def library_dir(tool_name: str = "glslangValidator") -> Path | None:
    """The ``lib`` folder of the prefix the tool is installed in (cmeel's, or /usr)."""
    from kernellab import tools

    tool = tools.find(tool_name)
    if tool is None:
        return None
    lib = Path(tool.path).resolve().parent.parent / "lib"  # <prefix>/bin/glslangValidator -> <prefix>/lib
    return lib if lib.is_dir() else None


#: this process's crash is contained already: a suite worker, whose pool reports a crash as the
#: failure of the one workload it ran and starts another worker (issue 23: a fork per compile is
#: 50 ms, the compile itself 1-2 ms)
_process_is_contained = False


def calls_run_in_this_process() -> None:
    """From now on :func:`contained` calls the library in this process (a suite worker's start)."""
    global _process_is_contained
    _process_is_contained = True


def contained(fn: Callable[..., bytes], *args: Any) -> bytes:
    """``fn(*args)`` in a forked child, so that a crash of the library it calls ends the child
    only: its bytes, or :class:`CompileFailed` (the exception it raised, or how the child ended).
    In a process that is itself contained (:func:`calls_run_in_this_process`), in this process."""
    if _process_is_contained:
        try:
            return fn(*args)
        except CompileFailed:
            raise
        except Exception as exc:  # noqa: BLE001 - as the child reports it
            raise CompileFailed(str(exc)) from None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: run, hand back a status byte and the payload, and leave at once
        try:
            os.close(read)
            try:
                payload = b"\0" + fn(*args)
            except Exception as exc:  # noqa: BLE001 - whatever failed is the parent's to report
                payload = b"\1" + str(exc).encode()
            view = memoryview(payload)
            while view:
                view = view[os.write(write, view):]
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    with os.fdopen(read, "rb") as pipe:
        while chunk := pipe.read(1 << 16):
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    code = os.waitstatus_to_exitcode(status)
    if not data or code != 0:
        raise CompileFailed(f"the library call ended with status {code} and gave no answer")
    if data[:1] == b"\1":
        raise CompileFailed(data[1:].decode(errors="replace"))
    return data[1:]
