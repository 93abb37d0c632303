"""Whether a native OpenCL build past the tool time limit may end this process.

A driver's ``clBuildProgram`` (an ``#include`` of a FIFO, a compiler loop) cannot be interrupted
from Python, so a build that overruns the limit can only be stopped by ending the process: only
the ``kernellab`` program itself arms that (:func:`ending_process_on_build_timeout`), whose
process is the command's own; through the Python API builds have no limit. Kept apart from
:mod:`kernellab.native.cl` so that the program's start-up imports nothing of OpenCL.
"""
from __future__ import annotations

from kernellab.native import build_limit_armed as armed  # non-empty while armed


# (classes used as functions, not ``contextlib.contextmanager``s: a run imports no contextlib)
class ending_process_on_build_timeout:  # noqa: N801 - used as a function
    """Inside, an OpenCL C build still running after the tool time limit ends the process with
    status 1 after one line on stderr naming the kernel and the limit (:func:`kernellab.native.cl.build`)."""

    def __enter__(self) -> None:
        armed.append(True)

    def __exit__(self, *exc: object) -> None:
        armed.pop()


class disarmed:  # noqa: N801 - used as a function
    """Inside, no build ends the process: for code under a watchdog of its own (``verify``'s
    launch limit covers the build and the run, and reports the launch by name)."""

    def __enter__(self) -> None:
        self.saved = armed[:]
        armed.clear()

    def __exit__(self, *exc: object) -> None:
        armed[:] = self.saved
