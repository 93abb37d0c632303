"""verify --prove's per-launch watchdog (verify/prove/limit.py): whatever the work is doing when the
limit passes, the launch ends with TimeLimit (an ``unknown`` verdict), never an internal error."""
from __future__ import annotations

import ctypes
import time

import pytest

from kernellab.verify.prove import limit


class _Slow:
    """A ctypes argument type whose conversion runs until the watchdog fires, as a z3 call's
    argument conversion did on PolyBench's kernels."""

    @classmethod
    def from_param(cls, obj: object) -> int:
        while True:
            time.sleep(0.001)


def test_the_limit_landing_in_a_ctypes_call_is_the_time_limit() -> None:
    # ctypes wraps an exception raised while converting an argument: ArgumentError("argument 1:
    # TimeLimit: "), which no `except TimeLimit` took: kernellab ended with an internal error
    absolute = ctypes.CDLL(None).abs
    absolute.argtypes = [_Slow]
    with pytest.raises(limit.TimeLimit):
        with limit.time_limit(limit.Stopwatch(0.05)):
            absolute(1)


def test_an_error_before_the_limit_stays_itself() -> None:
    with pytest.raises(ValueError, match="the work's own"):
        with limit.time_limit(limit.Stopwatch(30)):
            raise ValueError("the work's own")


def test_an_interrupt_after_the_limit_does_not_stay_for_the_next_launch() -> None:
    # the watchdog interrupts z3 when the limit passes; an interrupt that met no running call
    # stayed on the context, and the next launch's first push failed ("push canceled")
    z3 = pytest.importorskip("z3")
    with pytest.raises(limit.TimeLimit):
        with limit.time_limit(limit.Stopwatch(0.05)):
            limit._interrupt_z3()  # the watchdog's thread, which races the alarm, made certain
            time.sleep(1)
    solver = z3.Solver()
    solver.push()
    solver.add(z3.Int("x") > 1)
    assert solver.check() == z3.sat
