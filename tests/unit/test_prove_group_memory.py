"""Workgroup memory no invocation writes in ``verify --prove``: one content per work-group,
which every read of the group sees (a precondition about it still holds after a barrier), never
one content for two groups."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_engine import kinds, needs_clspv, prove_cl  # noqa: E402

from kernellab.verify.prove import opencl  # noqa: E402

#: L is read and never written: every read of one work-group sees the same (unknown) bytes
UNWRITTEN_LOCAL = """
__kernel void k(__global int *G, int n) {
  __local int L[4];
  G[L[0] + get_global_id(0)] = 1;
}
"""


@needs_clspv
def test_unwritten_local_memory_is_one_content_per_work_group(tmp_path: Path) -> None:
    args = [opencl.ArgumentSpec("buffer", "G"), opencl.ArgumentSpec("scalar", "n")]
    # one group: both invocations read the same L[0], their slots differ
    o = prove_cl(tmp_path, UNWRITTEN_LOCAL, groups=1, args=args)
    assert o.verdict == "proven", o
    # two groups read two L's: L[0] + 0 of one may be L[0] + 64 of the other
    o = prove_cl(tmp_path, UNWRITTEN_LOCAL, groups=2, args=args)
    assert "data-race" in kinds(o), o


@needs_clspv
def test_precondition_on_unwritten_local_memory_holds_after_a_barrier(tmp_path: Path) -> None:
    src = """
__kernel void k(__local int *A) {
  __requires(A[get_local_id(0)] == 0);
  %s
  barrier(CLK_LOCAL_MEM_FENCE);
  __assert(A[get_local_id(0)] == 0);
}
"""
    args = [opencl.ArgumentSpec("local", "A", size=4 * 64)]
    o = prove_cl(tmp_path, src % "", args=args)
    assert o.verdict == "proven", o
    # a write by one invocation: another's A[1] is no longer what the precondition said
    o = prove_cl(tmp_path, src % "if (get_local_id(0) == 0) A[1] = 5;", args=args)
    assert "assertion" in kinds(o), o
