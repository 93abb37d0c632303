"""A driver killed by a signal gives one line naming the launch, not a silent death.

A kernel on a CPU device (PoCL) runs as native code in kernellab's process: one writing far out
of bounds ends it with SIGSEGV, which no Python code can catch and survive. So the ``kernellab``
program, before an OpenCL run opens any driver, forks (:func:`supervised`): the child runs the
command; the parent only waits. Before each launch the child writes what it is about to run
(:func:`naming`) into a page shared with the parent; if the child dies of a fault signal, the
parent prints that name in one line, removes the outputs the child had staged and exits 1.

A fork before any thread or driver exists is cheap (no second interpreter start-up) and safe.
Oclgrind runs kernels in a simulator (an out-of-bounds access is a finding, not a fault), so
its runs are not forked; neither are calls through the Python API, whose process is not ours.
"""
from __future__ import annotations

import contextlib
import mmap
import os
import signal
import sys
from collections.abc import Callable, Iterator

#: the signals a faulting kernel or driver dies of; others (SIGINT, SIGTERM, SIGKILL) are passed on
FAULTS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT)
_SIZE = 4096

#: the page shared with the supervising parent; None when this process is not supervised
_page: list[mmap.mmap] = []
#: names a caller holds for what runs inside it (a kernel-instantiation launch run as a scenario:
#: its dispatch is that launch, and the file's words name it better than the scenario's)
_held: list[str] = []


@contextlib.contextmanager
def held(what: str) -> Iterator[None]:
    """``what`` names every launch made inside the block; inner :func:`naming` calls keep it."""
    naming(what)
    _held.append(what)
    try:
        yield
    finally:
        _held.pop()


def naming(what: str) -> None:
    """Record ``what`` (``launch 0 (k) of k.json``) as the launch now running, for the parent."""
    if not _page:
        return
    if _held:
        what = _held[-1]
    data = what.encode("utf-8", "replace")[:_SIZE - 4]
    page = _page[0]
    page[4:4 + len(data)] = data
    page[0:4] = len(data).to_bytes(4, "little")


def _named(page: mmap.mmap) -> str:
    n = int.from_bytes(page[0:4], "little")
    return page[4:4 + min(n, _SIZE - 4)].decode("utf-8", "replace") if n else ""


def supervised(cleanup: Callable[[], object] = lambda: None) -> int | None:
    """Fork; the child gets None and runs the command, the parent gets the status to exit with.

    The parent ignores SIGINT (the terminal sends it to the child as well) and passes SIGTERM and
    SIGHUP on. A child ended by a fault signal gives one line naming its last launch, and
    ``cleanup`` (removing what it staged) runs; one ended by another signal ends the parent by the
    same signal. Without a way to fork (threads running), the command runs unsupervised."""
    import threading
    if threading.active_count() > 1 or not hasattr(os, "fork"):
        return None
    page = mmap.mmap(-1, _SIZE, flags=mmap.MAP_SHARED)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:
        _page.append(page)
        return None
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for forwarded in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(forwarded, lambda signum, _frame: os.kill(pid, signum))
    try:
        _, status = os.waitpid(pid, 0)  # retried by Python after a handled signal (PEP 475)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status)
    signum = os.WTERMSIG(status)
    if signum not in FAULTS:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    cleanup()
    what = _named(page) or "the OpenCL driver"
    name = signal.Signals(signum).name
    print(f"kernellab: error: {what} ended the process with {name}: the kernel or the driver crashed (a kernel "
          "writing out of bounds does this on a CPU device; `kernellab verify` or --device Oclgrind finds where)",
          file=sys.stderr)
    return 1
