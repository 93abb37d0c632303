"""Candidate invariants of :mod:`kernellab.verify.prove.loop_facts` in ``verify --prove``: bytes
a loop writes at an offset of the launch keep their entry value, loop variables differ; each with
a twin whose loop breaks the fact (never proven)."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_engine import kinds, needs_clspv, prove_cl  # noqa: E402

from kernellab.verify.prove import opencl  # noqa: E402

ARGS = [opencl.ArgumentSpec("buffer", "A"), opencl.ArgumentSpec("scalar", "n")]
#: a loop of any trip count over A[gid], and what A[gid] holds after it
KEPT = """
__kernel void k(__global unsigned *A, int n) {
  A[get_global_id(0)] = 1;
  for (int i = 0; i < n; ++i) {
    %s
  }
  __assert(A[get_global_id(0)] == 1);
}
"""


@needs_clspv
@pytest.mark.parametrize("body", ["A[get_global_id(0)] = 1;",
                                  "A[get_global_id(0)] += 1; A[get_global_id(0)] -= 1;"])
def test_bytes_the_loop_writes_back_keep_their_value(tmp_path: Path, body: str) -> None:
    o = prove_cl(tmp_path, KEPT % body, args=ARGS)
    assert o.verdict == "proven", (body, o)


@needs_clspv
@pytest.mark.parametrize("body", ["A[get_global_id(0)] = 2;",
                                  "A[get_global_id(0)] += 1;",
                                  "if (i == 40) A[get_global_id(0)] = 0;"])
def test_bytes_the_loop_changes_are_not_kept(tmp_path: Path, body: str) -> None:
    o = prove_cl(tmp_path, KEPT % body, args=ARGS)
    assert o.verdict != "proven" and "assertion" in kinds(o), (body, o)


ROTATE = """
__kernel void k(__global int *A, int a, int b, int c, int n) {
  __requires(a != b);
  __requires(a != c);
  __requires(b != c);
  for (int i = 0; i < n; i++) {
    int t = a;
    a = b;
    b = c;
    c = %s;
  }
  __assert(a != b);
}
"""
RARGS = [opencl.ArgumentSpec("buffer", "A")] + [opencl.ArgumentSpec("scalar", x) for x in "abcn"]


@needs_clspv
def test_loop_variables_kept_apart(tmp_path: Path) -> None:
    # a != b is kept only with a != c and b != c, which hold on entry by the preconditions
    o = prove_cl(tmp_path, ROTATE % "t", args=RARGS)
    assert o.verdict == "proven", o
    # c = b makes b and c equal, and then a and b
    o = prove_cl(tmp_path, ROTATE % "b", args=RARGS)
    assert o.verdict != "proven" and "assertion" in kinds(o), o


#: two __local arrays written alike in a loop of any trip count (GPUVerify's
#: annotation_tests/shared_state_invariant_tests/shared_state_two_arrays)
TWO_ARRAYS = """
__kernel void k(__global unsigned *out, int n) {
  __local int A[64];
  __local int B[64];
  A[get_local_id(0)] = 0;
  B[get_local_id(0)] = 0;
  for (int i = 0; __invariant(A[get_local_id(0)] == B[get_local_id(0)]), i < n; i++) {
    %s
  }
  out[get_global_id(0)] = A[get_local_id(0)] - B[get_local_id(0)];
}
"""


@needs_clspv
def test_bytes_two_arrays_keep_equal(tmp_path: Path) -> None:
    args = [opencl.ArgumentSpec("buffer", "out"), opencl.ArgumentSpec("scalar", "n")]
    o = prove_cl(tmp_path, TWO_ARRAYS % "A[get_local_id(0)]++; B[get_local_id(0)]++;", args=args)
    assert o.verdict == "proven", o
    o = prove_cl(tmp_path, TWO_ARRAYS % "A[get_local_id(0)]++; B[get_local_id(0)] += 2;", args=args)
    assert "assertion" in kinds(o), o
    o = prove_cl(tmp_path, TWO_ARRAYS % "A[get_local_id(0)]++; if (i == 40) B[get_local_id(0)] = 0;", args=args)
    assert "assertion" in kinds(o), o
