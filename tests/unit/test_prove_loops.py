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


# --- what an invocation reads back of its own writes -----------------------------------------

OWN_WRITE = """
__kernel void k(__global int *A, __global int *B) {
  __local int L[64];
  L[get_local_id(0)] = get_local_id(0);
  %s
  B[get_group_id(0) * 64 + L[get_local_id(0)]] = 1;
}
"""


@needs_clspv
def test_a_read_sees_the_invocations_own_write(tmp_path: Path) -> None:
    # each invocation reads back its own local id: distinct indexes, no race on B
    clean = prove_cl(tmp_path, OWN_WRITE % "")
    assert clean.verdict == "proven", clean
    # the same value written by every invocation: every one writes the same B element
    racy = prove_cl(tmp_path, OWN_WRITE.replace("= get_local_id(0);", "= 0;") % "")
    assert kinds(racy) == {"data-race"}, racy


@needs_clspv
def test_a_barrier_forgets_the_own_writes(tmp_path: Path) -> None:
    # invocation 0 overwrites L[1] between two barriers: invocation 1 reads 0, as invocation 0 does
    planted = ("barrier(CLK_LOCAL_MEM_FENCE);\n  if (get_local_id(0) == 0) L[1] = 0;\n"
               "  barrier(CLK_LOCAL_MEM_FENCE);")
    racy = prove_cl(tmp_path, OWN_WRITE % planted)
    assert "data-race" in kinds(racy), racy


def test_private_memory_merged_after_a_summarised_loop_in_a_branch() -> None:
    from tests.unit.test_prove_engine import prove_glsl
    # x is 5 where the loop ran (the path that skips it wrote 0 before: that write must not be seen
    # on the loop's path): every invocation then writes d[0]
    src = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) buffer B { uint d[]; };
layout(push_constant) uniform P { uint n; uint c; } pc;
void main() {
  uint x = 0u;
  if (pc.c != 0u) {
    for (uint i = 0u; i < pc.n; i++) { x = 5u; }
  }
  if (x == 5u) d[%s] = gl_LocalInvocationID.x;
}
"""
    racy = prove_glsl(src % "0", buffer_bytes=None)
    assert "data-race" in kinds(racy), racy
    clean = prove_glsl(src % "gl_GlobalInvocationID.x", buffer_bytes=None)
    assert clean.verdict == "proven", clean


@needs_clspv
def test_a_read_sees_the_own_write_across_one_barrier(tmp_path: Path) -> None:
    # another invocation's write to L[local id] before the barrier races with this one's write,
    # after it with this one's read: where no race is, the value is this invocation's
    clean = prove_cl(tmp_path, OWN_WRITE % "barrier(CLK_LOCAL_MEM_FENCE);")
    assert clean.verdict == "proven", clean
    racy = prove_cl(tmp_path, OWN_WRITE % "barrier(CLK_LOCAL_MEM_FENCE);\n  if (get_local_id(0) == 0) L[1] = 0;")
    assert "data-race" in kinds(racy), racy


BARRIER_INVARIANT = """
__kernel void k(__global int *A) {
  __local int L[64];
  L[get_local_id(0)] = get_local_id(0);
  __barrier_invariant_1(L[get_local_id(0)] == %s, get_local_id(0));
  barrier(CLK_LOCAL_MEM_FENCE);
  __assert(L[get_local_id(0)] == get_local_id(0));
}
"""


@needs_clspv
def test_unary_barrier_invariant_is_checked(tmp_path: Path) -> None:
    from tests.unit.test_prove_annotations import prove
    clean = prove(tmp_path, BARRIER_INVARIANT % "get_local_id(0)")
    assert clean.verdict == "proven", clean  # type: ignore[attr-defined]
    wrong = prove(tmp_path, BARRIER_INVARIANT % "get_local_id(0) + 1")
    assert wrong.verdict == "defect" and kinds(wrong) == {"assertion"}, wrong  # type: ignore[attr-defined,arg-type]
    # instantiated for another invocation: checked for this one, assumed of invocation 0 after the
    # barrier (tests/unit/test_prove_annotations.py, "barrier invariants")
    other = prove(tmp_path, BARRIER_INVARIANT.replace(", get_local_id(0));\n  barrier", ", 0);\n  barrier")
                  % "get_local_id(0)")
    assert other.verdict == "proven", other  # type: ignore[attr-defined]


NESTED = """
__kernel void k(__global int *A) {
  for (unsigned i = 0; i < 100; i++) {
    for (unsigned j = 0; j < (1 << 16); j += 16) {
      %s
    }
  }
}
"""


@needs_clspv
def test_outer_loop_summarised_early_when_an_inner_one_is(tmp_path: Path) -> None:
    # 100 outer iterations each summarising the inner loop ran past the time limit: the outer loop
    # is summarised after a few; what it holds is still proven, and a race in it still found
    clean = prove_cl(tmp_path, NESTED % "__assert((j % 16) == 0);")
    assert clean.verdict == "proven", clean
    assert clean.seconds < 30, clean.seconds
    racy = prove_cl(tmp_path, NESTED % "A[i] = 1;")
    assert "data-race" in kinds(racy), racy


UNIFORM = """
__kernel void k(int n) {
  for (int k = %s; __assert(__uniform_int(k)), __assert(__uniform_bool(__enabled())), k < %s; k += %s) {
  }
}
"""


@needs_clspv
def test_uniform_loop_variable_of_a_summarised_loop(tmp_path: Path) -> None:
    from tests.unit.test_prove_annotations import prove
    clean = prove(tmp_path, UNIFORM % ("0", "n", "1"))
    assert clean.verdict == "proven", clean  # type: ignore[attr-defined]
    for planted in [("get_local_id(0) % 2", "n", "1"),     # not equal on entry
                    ("0", "n", "1 + (get_local_id(0) & 1)"),  # not kept equal by an iteration
                    ("0", "n + get_local_id(0)", "1")]:    # equal while both run, but not in lock-step
        o = prove(tmp_path, UNIFORM % planted)
        assert o.verdict == "defect" and kinds(o) == {"assertion"}, (planted, o)  # type: ignore[attr-defined,arg-type]


# --- Houdini's survivors shared between the encodings (A's first, A's, B's) -------------------

STRIDED = """
__kernel void k(__global int *A, int n) {
  for (int i = %s; i < n && i < 262144; i += get_global_size(0)) { A[i] = 1; }
}
"""
BIG = [opencl.ArgumentSpec("buffer", "A", size=1 << 20), opencl.ArgumentSpec("scalar", "n")]


@needs_clspv
def test_later_encodings_start_from_houdinis_survivors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernellab.verify.prove import encode as enc
    hinted: list[bool] = []
    real = enc.Encoder.houdini

    def spy(self: enc.Encoder, label: int, candidates: list, on_entry: object, step: object) -> object:
        hinted.append((label, len(candidates)) in self.houdini_hints)
        return real(self, label, candidates, on_entry, step)

    monkeypatch.setattr(enc.Encoder, "houdini", spy)
    clean = prove_cl(tmp_path, STRIDED % "get_global_id(0)", args=BIG)
    assert clean.verdict == "proven", clean
    assert hinted[0] is False and hinted[-1] is True  # B's encoding met A's survivors


@needs_clspv
def test_survivors_that_do_not_hold_are_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernellab.verify.prove import encode as enc
    real = enc.Encoder.houdini

    def every_candidate(self: enc.Encoder, label: int, candidates: list, on_entry: object, step: object) -> object:
        # a hint (from another encoding) claiming every candidate survived, the false ones too
        self.houdini_hints.setdefault((label, len(candidates)), list(range(len(candidates))))
        return real(self, label, candidates, on_entry, step)

    monkeypatch.setattr(enc.Encoder, "houdini", every_candidate)
    racy = prove_cl(tmp_path, STRIDED % "0", args=BIG)  # every invocation writes A[0], A[gsize], ...
    assert "data-race" in kinds(racy), racy
    clean = prove_cl(tmp_path, STRIDED % "get_global_id(0)", args=BIG)
    assert clean.verdict == "proven", clean
