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
import threading
from collections.abc import Callable, Iterator

#: the signals a faulting kernel or driver dies of; others (SIGINT, SIGTERM, SIGKILL) are passed on
FAULTS = (signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE, signal.SIGABRT)
_SIZE = 4096

#: the page shared with the supervising parent; None when this process is not supervised
_page: list[mmap.mmap] = []
#: what each thread is running now: thread id -> the stack of names it holds (innermost last) and
#: the name it recorded last. Two lanes of a schedule run parts at once, each in a thread of its
#: own: a thread's launch takes the name its own thread holds, never another lane's
_threads: dict[int, tuple[list[str], str]] = {}
_lock = threading.Lock()


@contextlib.contextmanager
def held(what: str) -> Iterator[None]:
    """``what`` names every launch this thread makes inside the block; inner :func:`naming` calls
    keep it."""
    me = threading.get_ident()
    with _lock:
        stack = _threads.setdefault(me, ([], ""))[0]
        stack.append(what)
    naming(what)
    try:
        yield
    finally:
        with _lock:
            stack.pop()
            if stack:
                _threads[me] = (stack, stack[-1])
            else:
                # done: the page names what the other threads run now, or keeps this name
                del _threads[me]
                _write(_threads_names())


def naming(what: str) -> None:
    """Record ``what`` (``launch 0 (k) of k.json``) as this thread's launch now running, for the
    parent; launches running in several threads at once are named together (``A or B``)."""
    if not _page:
        return
    me = threading.get_ident()
    with _lock:
        stack, _ = _threads.get(me, ([], ""))
        _threads[me] = (stack, stack[-1] if stack else what)
        if len(_threads) > 1:  # a thread gone is running nothing
            alive = {t.ident for t in threading.enumerate()}
            for gone in [t for t in _threads if t not in alive]:
                del _threads[gone]
        _write(_threads_names())


def _threads_names() -> str:
    return " or ".join(dict.fromkeys(name for _, name in _threads.values() if name))


def _write(what: str) -> None:
    if not _page or not what:
        return
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
