"""Loops with a barrier and a trip count that is not a small constant, summarised by invariants
in ``verify --prove`` (:mod:`kernellab.verify.prove.barrier_loops`): each clean kernel proven and
a planted defect found, including the race between the end of one iteration and the start of the
next and the barrier a data-dependent trip count makes divergent."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_engine import kinds, needs_clspv, prove_cl  # noqa: E402

from kernellab.verify.prove import opencl  # noqa: E402

N = [opencl.ArgumentSpec("buffer", "A", size=4096), opencl.ArgumentSpec("scalar", "n")]

#: each iteration: write my slot, barrier, read my neighbour's, then %s (the second barrier or not)
NEIGHBOUR = """
__kernel void k(__global int *A, int n) {
  __local int L[64];
  for (int j = 0; j < n; j++) {
    L[get_local_id(0)] = j;
    barrier(CLK_LOCAL_MEM_FENCE);
    A[get_global_id(0)] += L[(get_local_id(0) + 1) %% 64];
    %s
  }
}
"""


@needs_clspv
def test_barrier_loop_with_symbolic_trip_count_is_proven(tmp_path: Path) -> None:
    o = prove_cl(tmp_path, NEIGHBOUR % "barrier(CLK_LOCAL_MEM_FENCE);", args=N)
    assert o.verdict == "proven", o


@needs_clspv
def test_race_between_one_iteration_and_the_next_is_found(tmp_path: Path) -> None:
    # without the second barrier, invocation i's read of L[i + 1] and invocation i + 1's write of
    # it in the next iteration are in one barrier interval (it runs across the back edge)
    o = prove_cl(tmp_path, NEIGHBOUR % "", args=N)
    assert o.verdict == "defect" and kinds(o) == {"data-race"}, o


@needs_clspv
def test_barrier_in_loop_with_a_trip_count_of_the_local_id_is_divergent(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A, int n) {
      __local int L[64];
      for (int j = 0; j < n + %s; j++) { L[get_local_id(0)] = j; barrier(CLK_LOCAL_MEM_FENCE); }
    }"""
    assert prove_cl(tmp_path, src % "0", args=N).verdict == "proven"
    o = prove_cl(tmp_path, src % "(int)get_local_id(0)", args=N)
    assert "barrier-divergence" in kinds(o), o


@needs_clspv
def test_storage_buffer_race_across_iterations_with_a_local_fence(tmp_path: Path) -> None:
    # one writer of A[0] per iteration; a barrier that orders workgroup memory only leaves the
    # writes of two iterations unordered (one work-group: no race across groups)
    src = """__kernel void k(__global int *A, int n) {
      for (int j = 0; j < n; j++) { if (get_local_id(0) == j %% 64) A[0] = j; barrier(%s); }
    }"""
    assert prove_cl(tmp_path, src % "CLK_GLOBAL_MEM_FENCE", args=N, groups=1).verdict == "proven"
    o = prove_cl(tmp_path, src % "CLK_LOCAL_MEM_FENCE", args=N, groups=1)
    assert kinds(o) == {"data-race"}, o


def test_a_remainder_by_a_constant_not_a_power_of_two_is_costly() -> None:
    import z3

    from kernellab.verify.prove.loop_facts import split_costly

    v, v0, s = z3.BitVec("v", 32), z3.BitVec("v0", 32), z3.BitVec("s", 32)
    by_240, by_256 = z3.URem(v - v0, 240) == 0, z3.URem(v - v0, 256) == 0
    by_step, bound = z3.Implies(s != 0, z3.URem(v - v0, s) == 0), z3.ULE(v, 100)
    cheap, costly = split_costly([by_240, by_256, by_step, bound])
    assert [c.eq(by_240) for c in costly] == [True]
    assert len(cheap) == 3

