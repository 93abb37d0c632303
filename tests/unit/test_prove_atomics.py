"""Counters in ``verify --prove`` (:mod:`kernellab.verify.prove.counters`): two invocations that
step one counter get different values, so ``A[atomic_inc(&c)] = x`` does not race; each condition
the distinctness rests on has a twin that breaks it, and the race comes back."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_engine import kinds, needs_clspv, prove_cl  # noqa: E402

from kernellab.verify.prove import opencl  # noqa: E402

#: a __local counter set to 0 before a barrier, then stepped; the slot it gives is written
LOCAL_COUNTER = """
__kernel void k(__global int *A, int n) {
  __local int count;
  if (get_local_id(0) == 0) count = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  %s
  A[slot] = get_local_id(0);
}
"""
#: A without a size: unbounded (GPUVerify's arrays), so only the race is in question
ARGS = [opencl.ArgumentSpec("buffer", "A"), opencl.ArgumentSpec("scalar", "n")]
#: a __global counter stepped by every invocation of every group
GLOBAL_COUNTER = """
__kernel void k(__global int *A, __global unsigned *c, int n) {
  %s
  A[slot] = get_global_id(0);
}
"""
GARGS = [opencl.ArgumentSpec("buffer", "A"), opencl.ArgumentSpec("buffer", "c", size=64),
         opencl.ArgumentSpec("scalar", "n")]


@needs_clspv
def test_local_counter_gives_each_invocation_its_own_slot(tmp_path: Path) -> None:
    # one work-group: another group's counter is its own, its slots may be the same
    o = prove_cl(tmp_path, LOCAL_COUNTER % "int slot = atomic_inc(&count);", groups=1, args=ARGS)
    assert o.verdict == "proven", o
    o = prove_cl(tmp_path, LOCAL_COUNTER % "int slot = atomic_add(&count, 1);", groups=1, args=ARGS)
    assert o.verdict == "proven", o


@needs_clspv
@pytest.mark.parametrize("body", [
    # the counter reset in the same barrier interval as the steps
    "count = 0; int slot = atomic_inc(&count);",
    # a step of a value not known: it may add 0
    "int slot = atomic_add(&count, n);",
    # another kind of atomic on the counter
    "atomic_xchg(&count, 5); int slot = atomic_inc(&count);",
    # steps of both signs
    "atomic_dec(&count); int slot = atomic_inc(&count);",
])
def test_local_counter_broken_races(tmp_path: Path, body: str) -> None:
    o = prove_cl(tmp_path, LOCAL_COUNTER % body, groups=1, args=ARGS)
    assert "data-race" in kinds(o), (body, o)


@needs_clspv
def test_global_counter_and_wrap_around(tmp_path: Path) -> None:
    o = prove_cl(tmp_path, GLOBAL_COUNTER % "unsigned slot = atomic_inc(c);", args=GARGS)
    assert o.verdict == "proven", o
    o = prove_cl(tmp_path, GLOBAL_COUNTER % "unsigned slot = atomic_add(c, 0xFFFFFFu);", args=GARGS)
    assert o.verdict == "proven", o
    # 256 invocations adding 2**24 each wrap a 32-bit counter around: two may get one value
    o = prove_cl(tmp_path, GLOBAL_COUNTER % "unsigned slot = atomic_add(c, 0x1000000u);", args=GARGS)
    assert "data-race" in kinds(o), o
    # a plain write of the counter: another work-group's may come between two steps
    o = prove_cl(tmp_path, GLOBAL_COUNTER % "if (get_global_id(0) == 0) c[0] = 0;\n"
                 "  barrier(CLK_GLOBAL_MEM_FENCE);\n  unsigned slot = atomic_inc(c);", args=GARGS)
    assert "data-race" in kinds(o), o


@needs_clspv
def test_local_counter_is_per_work_group(tmp_path: Path) -> None:
    # each work-group has its own __local counter: two groups' invocations may get one value
    src = """
__kernel void k(__global int *A, int n) {
  __local unsigned count;
  unsigned slot = atomic_inc(&count);
  A[slot] = get_global_id(0);
}
"""
    o = prove_cl(tmp_path, src, args=[opencl.ArgumentSpec("buffer", "A"),
                                      opencl.ArgumentSpec("scalar", "n")])
    assert "data-race" in kinds(o), o


@needs_clspv
def test_counter_stepped_in_a_summarised_loop_gives_any_value(tmp_path: Path) -> None:
    # a loop of any trip count steps the counter any number of times: it may wrap around
    src = GLOBAL_COUNTER % "unsigned slot = 0;\n  for (int i = 0; i < n; i++) slot = atomic_inc(c);"
    o = prove_cl(tmp_path, src, args=GARGS)
    assert o.verdict != "proven" and ("data-race" in kinds(o) or o.verdict == "unknown"), o


#: a counter stepped in a loop that runs past the unrolling limit (summarised by invariants)
LOOP_COUNTER = """
__kernel void k(__global int *A, __global unsigned *c, int n) {
  for (int i = 0; i < n; i++) {
    %s
    A[slot] = get_global_id(0);
  }
}
"""


@needs_clspv
def test_counter_stepped_in_a_summarised_loop(tmp_path: Path) -> None:
    # GPUVerify's refined atomic abstraction in a loop: every step of the counter, in any
    # iteration of any invocation, returns a value of its own (fewer than 2**32 steps assumed)
    o = prove_cl(tmp_path, LOOP_COUNTER % "unsigned slot = atomic_inc(c);", args=GARGS)
    assert o.verdict == "proven", o
    # a step that is not a constant: the values may repeat, the race comes back
    o = prove_cl(tmp_path, LOOP_COUNTER % "unsigned slot = atomic_add(c, (unsigned)n);", args=GARGS)
    assert "data-race" in kinds(o), o
