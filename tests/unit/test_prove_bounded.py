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


# --- what makes the encoding costly --------------------------------------------------------------

NESTED3 = """
__kernel void k(__local int *A) {
  for (unsigned i = 0; i < (1 << 16); i += 128) {
    __assert((i %% 128) == 0);
    for (unsigned j = 0; j < (1 << 16); j += 16) {
      __assert((j %% 16) == 0);
      for (unsigned k = 3; k < (1 << 16); k += 32) { __assert((k %% 32) == %s); }
    }
  }
}
"""


@needs_clspv
def test_loops_met_again_reuse_their_invariants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # each iteration and inference round of an outer loop summarises the inner ones again, each
    # time running Houdini from all candidates (708 dry iterations, past the suite's 10 s at
    # GPUVerify's sizes); the survivors of the last run, checked first, take one round (340)
    from tests.unit.test_prove_annotations import prove

    from kernellab.verify.prove import encode
    rounds = []
    iterate = encode.Encoder.iterate

    def counted(self: encode.Encoder, *args: object) -> object:
        rounds.append(1)
        return iterate(self, *args)  # type: ignore[arg-type]
    monkeypatch.setattr(encode.Encoder, "iterate", counted)
    clean = prove(tmp_path, NESTED3 % "3")
    assert clean.verdict == "proven", clean  # type: ignore[attr-defined]
    assert len(rounds) < 500, len(rounds)
    o = prove(tmp_path, NESTED3 % "4")
    assert kinds(o) == {"assertion"}, o  # type: ignore[arg-type]


#: a private table read at a run-time index: t[k] == k gives every invocation its own L[j]
TABLE = """
__kernel void k(__global int *A) {
  __local int L[64];
  int t[72];
  %s
  int j = t[get_local_id(0)];
  L[j] = 1;
  barrier(CLK_LOCAL_MEM_FENCE);
  A[get_global_id(0)] = L[63 - get_local_id(0)];
}
"""


@needs_clspv
def test_private_table_read_at_a_run_time_index(tmp_path: Path) -> None:
    clean = prove_cl(tmp_path, TABLE % " ".join(f"t[{k}] = {k};" for k in range(72)))
    assert clean.verdict == "proven", clean
    racy = prove_cl(tmp_path, TABLE % " ".join(f"t[{k}] = {k if k != 5 else 4};" for k in range(72)))
    assert "data-race" in kinds(racy), racy


@needs_clspv
def test_pown_of_vectors_within_the_time_limit(tmp_path: Path) -> None:
    # libclc's pown copies a table into a private array read at run-time offsets: a chain of
    # choices over its 500 byte writes for each byte read, built through z3's C API (30 s before)
    from kernellab.verify.prove import engine, opencl
    path = tmp_path / "k.cl"
    path.write_text("__kernel void k(__global float4 *p, __global int4 *n) {\n"
                    "  p[get_global_id(0)] = pown(p[get_global_id(0)], n[get_global_id(0)]);\n}\n")
    args = [opencl.ArgumentSpec("buffer", "p", size=4096), opencl.ArgumentSpec("buffer", "n", size=4096)]
    compiled = opencl.compile_kernel(path, "k", "", (64, 1, 1), args)
    o = engine.prove(compiled.module, opencl.launch(compiled, (256,), (64, 1, 1), args), timeout=20)
    assert o.verdict == "proven", o


@needs_clspv
def test_code_after_an_unrolled_loop_runs_where_the_loop_was_entered(tmp_path: Path) -> None:
    # the exits of every unrolled iteration are one edge under the loop's entry predicate, not
    # their disjunction (which an outer loop's predicates then carried, iteration after iteration)
    import time

    import z3

    from kernellab.verify.prove import engine, opencl
    path = tmp_path / "k.cl"
    path.write_text("__kernel void k(__global int *A) {\n"
                    "  for (int i = 0; i < (get_local_id(0) & 7); i++) { A[i] = 0; }\n"
                    "  A[get_global_id(0)] = 1;\n}\n")
    args = [opencl.ArgumentSpec("buffer", "A", size=4096)]
    compiled = opencl.compile_kernel(path, "k", "", (64, 1, 1), args)
    prover = engine._Prover(compiled.module, opencl.launch(compiled, (256,), (64, 1, 1), args),
                            time.monotonic() + 60)
    sizes, cons = prover.sizes()
    ids, id_cons = prover.ids("A", sizes)
    trace = prover.encode(ids, {}, "A", cons + id_cons)
    assert trace.unrolled == 8  # the back edge found untakeable after the 8th
    last = trace.accesses[-1]
    assert z3.is_true(z3.simplify(last.pred)), last.pred
