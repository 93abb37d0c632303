"""The per-launch time limit of ``verify --prove`` over the whole proof: compiling (clspv), the
encoding and the solver (whose own limit the engine sets), and clang's compile for the check that
clspv kept every access. The engine checks its deadline only between solver queries, and a large
kernel spends its time before the first (unrolling, encoding) or in the compilers; a watchdog
(``SIGALRM``) stops the launch's work wherever it is when the limit passes.
"""
from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterator


class TimeLimit(BaseException):
    """The launch's time limit passed. A BaseException: no ``except Exception`` on the way (a
    compiler's, the engine's) takes it for a failure of its own."""


class Stopwatch:
    """The launch's deadline and the step under way (named in the ``unknown`` reason)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.start = time.monotonic()
        self.step = "starting"

    def left(self) -> float:
        """Seconds left (at least a millisecond: the engine's limit must be positive)."""
        return max(0.001, self.seconds - (time.monotonic() - self.start))

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def reason(self) -> str:
        return f"time limit ({self.seconds:g} s) reached while {self.step}"


@contextlib.contextmanager
def time_limit(watch: Stopwatch) -> Iterator[Stopwatch]:
    """:class:`TimeLimit` raised where the work is when ``watch``'s seconds pass (catch it
    around the ``with``). Off the main thread (no signals there) only the engine's own deadline
    holds."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield watch
        return

    fired: list[bool] = []

    def expired(signum: int, frame: object) -> None:
        fired.append(True)
        raise TimeLimit()

    previous = signal.signal(signal.SIGALRM, expired)
    # the handler runs only between Python steps: a z3 call (a check, a simplification) that runs
    # on in C is interrupted from a thread, after which the handler stops the launch
    solver = threading.Timer(watch.left(), _interrupt_z3)
    solver.daemon = True
    signal.setitimer(signal.ITIMER_REAL, watch.left())
    solver.start()
    try:
        yield watch
    except Exception as exc:
        # the handler's TimeLimit raised inside a ctypes call's argument conversion (z3's API)
        # comes out as ctypes.ArgumentError ("argument 2: TimeLimit: "): an internal error on
        # PolyBench kernels; once the limit has passed, whatever ends the work is the limit
        if fired:
            raise TimeLimit() from exc
        raise
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        solver.cancel()
        solver.join(1.0)
        signal.signal(signal.SIGALRM, previous)
        if watch.left() <= 0.001:  # the limit passed: the watchdog's interrupt may be on z3
            _clear_z3_interrupt()


def _interrupt_z3() -> None:
    z3 = sys.modules.get("z3")
    if z3 is not None:
        z3.main_ctx().interrupt()


def _clear_z3_interrupt() -> None:
    """An interrupt that met no running z3 call stays on the context: the next launch's first
    ``push`` failed with "push canceled" (an unknown verdict for a later file of the same
    command). A check, here of nothing, clears it."""
    z3 = sys.modules.get("z3")
    if z3 is not None:
        z3.Solver(ctx=z3.main_ctx()).check()
