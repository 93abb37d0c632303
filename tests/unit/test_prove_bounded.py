"""Loops in ``verify --prove`` beyond what their summaries show: a counterexample found in a
loop summarised by invariants is searched for again among the iterations the loop was unrolled
before it was summarised (exact: bounded model checking), so that a defect in an early iteration
is a concrete counterexample, not an abstract one."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_engine import kinds, needs_clspv, prove_cl  # noqa: E402

#: a loop of 100 iterations (past the unrolling limit: summarised) whose iteration 1 writes
EARLY = """
__kernel void k(__global int *A) {
  __local int L[64];
  for (int i = 0; i < 100; i++) {
    if (i == 1) { L[%s] = get_local_id(0); }
  }
  A[get_global_id(0)] = L[get_local_id(0)];
}
"""


@needs_clspv
def test_race_in_an_early_iteration_of_a_summarised_loop_is_concrete(tmp_path: Path) -> None:
    racy = prove_cl(tmp_path, EARLY % "0")
    assert "data-race" in kinds(racy), racy
    # the summary alone gave only an abstract counterexample (its state perhaps unreachable)
    assert not any(f.abstract for f in racy.findings if f.kind == "data-race"), racy
    clean = prove_cl(tmp_path, EARLY % "get_local_id(0)")
    assert clean.verdict == "proven", clean


#: an assertion of a summarised loop that fails in iteration 3, and one on shared memory that
#: holds but that the encoding cannot show once the log of the invocation's writes is too long
ASSERTING = """
__kernel void k() {
  __local int A[64];
  A[get_local_id(0)] = 0;
  for (int i = 0; %s, i < 100; i++) {
    A[get_local_id(0)] = 0;
  }
}
"""


@needs_clspv
def test_assertion_failing_in_an_early_iteration_is_concrete(tmp_path: Path) -> None:
    from tests.unit.test_prove_annotations import prove
    o = prove(tmp_path, ASSERTING % "__invariant(i != 3)")
    assert kinds(o) == {"assertion"}, o  # type: ignore[arg-type]
    assert not any(f.abstract for f in o.findings), o  # type: ignore[attr-defined]
    # A[tid] == 0 holds, but past 32 logged byte writes a read of A is any value: not exact, so
    # the unrolled iterations give no concrete counterexample (the finding stays abstract)
    o = prove(tmp_path, ASSERTING % "__invariant(A[get_local_id(0)] == 0)")
    assert all(f.abstract for f in o.findings), o  # type: ignore[attr-defined]
