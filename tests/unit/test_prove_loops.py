"""Loops summarised by invariants in ``verify --prove``: what comes after them (reached under the
loop's entry predicate, with a renamed exit state), each with a planted defect and a clean twin."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_engine import kinds, needs_clspv, prove_cl  # noqa: E402

from kernellab.verify.prove import opencl  # noqa: E402

#: a loop of a symbolic trip count (summarised), then a barrier and accesses that use its exit state
AFTER_LOOP = """
__kernel void k(__global int *A, int n) {
  __local int L[64];
  int i;
  for (i = 0; i < n; i++) { A[get_global_id(0)] = i; }
  %s
  A[get_global_id(0)] = L[(get_local_id(0) + 1) %% 64];
}
"""
N = [opencl.ArgumentSpec("buffer", "A", size=4096), opencl.ArgumentSpec("scalar", "n")]


@needs_clspv
def test_barrier_after_summarised_loop_is_not_divergent(tmp_path: Path) -> None:
    clean = prove_cl(tmp_path, AFTER_LOOP % "barrier(CLK_LOCAL_MEM_FENCE);\n  L[get_local_id(0)] = i;\n"
                     "  barrier(CLK_LOCAL_MEM_FENCE);", args=N)
    assert clean.verdict == "proven", clean
    # the exit state (i == n for every invocation) decides which invocations reach the barrier
    racy = prove_cl(tmp_path, AFTER_LOOP % "if (i == get_local_id(0)) barrier(CLK_LOCAL_MEM_FENCE);", args=N)
    assert "barrier-divergence" in kinds(racy), racy


@needs_clspv
def test_exit_state_of_summarised_loop_is_not_vacuous(tmp_path: Path) -> None:
    # every invocation leaves the loop with the same i: a write-write race on L[i]
    racy = prove_cl(tmp_path, AFTER_LOOP % "barrier(CLK_LOCAL_MEM_FENCE);\n  L[i % 64] = 1;\n"
                    "  barrier(CLK_LOCAL_MEM_FENCE);", args=N)
    assert "data-race" in kinds(racy), racy
