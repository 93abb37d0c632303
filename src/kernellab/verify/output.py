"""A kernel's ``printf`` output, kept apart from kernellab's own standard output.

Oclgrind prints a kernel's ``printf`` through the C library's ``stdout`` (file descriptor 1), the
same stream ``kernellab verify --json`` writes its document to. While a launch runs, descriptor 1
points at a temporary file; the text is handed back so the report can show it (and the JSON carry
it) per launch.
"""
from __future__ import annotations

import ctypes
import functools
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

#: at most this much of a launch's printf output is kept (a kernel printing in a loop can write a lot)
MAX_OUTPUT = 64 * 1024


def _flush_c_stdio() -> None:
    # the C library buffers stdout when it is not a terminal: flush it into the file before switching back
    try:
        _libc().fflush(None)
    except (OSError, AttributeError):
        pass


@functools.lru_cache(maxsize=1)
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None)  # a dlopen each time would cost ~0.6 ms, twice a launch


@contextmanager
def captured_stdout() -> Iterator[list[str]]:
    """Point file descriptor 1 at a temporary file inside; the list holds the text written there
    (decoded, at most :data:`MAX_OUTPUT` characters) once the block has finished."""
    text: list[str] = []
    sys.stdout.flush()
    _flush_c_stdio()
    with tempfile.TemporaryFile() as sink:
        saved = os.dup(1)
        os.dup2(sink.fileno(), 1)
        try:
            yield text
        finally:
            _flush_c_stdio()
            os.dup2(saved, 1)
            os.close(saved)
            sink.seek(0)
            data = sink.read(MAX_OUTPUT + 1).decode(errors="replace")
            text.append(data[:MAX_OUTPUT] + ("\n[... more output cut]" if len(data) > MAX_OUTPUT else ""))
