"""An assertion's or an invariant's reads are no accesses of the kernel's (GPUVerify's reading):
no race, no bounds check; a load the kernel's own code also uses stays an access."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_annotations import PROVEN, needs_clspv, verdict  # noqa: E402

NEXT = "L[(get_local_id(0) + 1) % 64]"
KERNEL = """__kernel void k(__global int *out) {
  __local int L[64];
  L[get_local_id(0)] = get_local_id(0);
  %s
}"""


@needs_clspv
def test_assertion_read_of_another_invocations_element_is_no_race(tmp_path: Path) -> None:
    assert verdict(tmp_path, KERNEL % f"__assert({NEXT} == {NEXT});") == PROVEN
    # read past the array by the assertion only: no out-of-bounds access of the kernel's
    assert verdict(tmp_path, KERNEL % "__assert(L[get_local_id(0) + 64] == L[get_local_id(0) + 64]);") == PROVEN


@needs_clspv
def test_a_read_the_kernel_also_uses_stays_an_access(tmp_path: Path) -> None:
    assert "data-race" in verdict(tmp_path, KERNEL % f"int v = {NEXT}; out[get_global_id(0)] = v; __assert(v == v);")[1]
    assert "data-race" in verdict(tmp_path, KERNEL % f"out[get_global_id(0)] = {NEXT} + 1; __assert({NEXT} == {NEXT});")[1]
    # the kernel's branch on the value is its own use
    assert "data-race" in verdict(tmp_path, KERNEL % f"if ({NEXT} > 3) out[get_global_id(0)] = 1; __assert({NEXT} == {NEXT});")[1]


@needs_clspv
def test_loop_invariant_read_is_no_race(tmp_path: Path) -> None:
    # GPUVerify's barrier_invariants/all_different_loop: the invariant reads the element the
    # other invocation increments in the loop
    src = KERNEL % f"for (int i = 0; __invariant({NEXT} == {NEXT}), i < out[0]; i++) {{ L[get_local_id(0)]++; }}"
    assert "data-race" not in verdict(tmp_path, src)[1]
