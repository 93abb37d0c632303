"""``verify --prove``'s OpenCL C front end and the constructs it feeds the engine (issue 22): each
with a planted defect and its clean twin, so a construct the engine got wrong cannot pass as
proven."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_engine import kinds, needs_clspv, prove_cl  # noqa: E402

from kernellab.verify.prove import engine, opencl  # noqa: E402

# --- a vector component written in place (OpCompositeInsert) -----------------------------------

VECTOR_COMPONENT = """
__kernel void k(__global int *p) {
  __local int3 vs[64];
  vs[get_local_id(0)].x = p[get_global_id(0)];
  %s
  p[get_global_id(0)] = vs[%s].x;
}
"""


@needs_clspv
def test_a_vector_component_written_in_place(tmp_path: Path) -> None:
    clean = prove_cl(tmp_path, VECTOR_COMPONENT % ("", "get_local_id(0)"))
    assert clean.verdict == "proven", clean
    racy = prove_cl(tmp_path, VECTOR_COMPONENT % ("", "(get_local_id(0) + 1) % 64"))
    assert kinds(racy) == {"data-race"}
    fenced = prove_cl(tmp_path, VECTOR_COMPONENT % ("barrier(CLK_LOCAL_MEM_FENCE);", "(get_local_id(0) + 1) % 64"))
    assert fenced.verdict == "proven", fenced


def test_warning_switches_do_not_reach_clspv() -> None:
    from kernellab import compiler_options

    options = compiler_options.parse("opencl-c", "-Wno-uninitialized -DN=4 -Werror", Path("."), (), origin="user")
    assert opencl.clspv_argv(options) == ["-DN=4", "-Werror"]


# --- carries, borrows and high halves (OpIAddCarry, OpISubBorrow, OpUMulExtended) --------------

WIDE = """
__kernel void k(__global uint *A, uint n) {
  if (%s) A[get_global_id(0) + 1] = 0;  /* the next work-item's element: a race when reached */
  A[get_global_id(0)] = 1;
}
"""


@needs_clspv
@pytest.mark.parametrize("never, sometimes", [
    ("add_sat(n, 1u) == 0", "n + 1u == 0"),          # saturating: never wraps to 0
    ("sub_sat(n, 1u) == 0xffffffffu", "n - 1u == 0xffffffffu"),
    ("mul_hi(n, 2u) > 1", "mul_hi(n, 4u) > 1"),       # the high half of n * 2 is 0 or 1
])
def test_wide_integer_ops(tmp_path: Path, never: str, sometimes: str) -> None:
    args = [opencl.ArgumentSpec("buffer", "A"), opencl.ArgumentSpec("scalar", "n")]
    clean = prove_cl(tmp_path, WIDE % never, args=args)
    assert clean.verdict == "proven", clean
    racy = prove_cl(tmp_path, WIDE % sometimes, args=args)
    assert kinds(racy) >= {"data-race"}, racy


# --- get_global_offset() and get_work_dim() take the launch's values -----------------------------

LAUNCH_QUERY = """
__kernel void k(__global int *A) {
  if (%s) A[get_global_id(0) + 1] = 1;  /* the next work-item's element: a race when reached */
  A[get_global_id(0)] = 0;
}
"""


def _prove_with_offset(tmp: Path, source: str, offset: tuple[int, int, int]) -> engine.Outcome:
    path = tmp / "k.cl"
    path.write_text(source)
    args = [opencl.ArgumentSpec("buffer", "A")]
    compiled = opencl.compile_kernel(path, "k", "", (64, 1, 1), args, work_dim=1, global_offset=offset)
    launch = opencl.launch(compiled, (256,), (64, 1, 1), args, offset)
    return engine.prove(compiled.module, launch, timeout=60)


@needs_clspv
def test_the_global_offset_is_the_launchs(tmp_path: Path) -> None:
    racy = _prove_with_offset(tmp_path, LAUNCH_QUERY % "get_global_offset(0) == 64", (64, 0, 0))
    assert kinds(racy) == {"data-race"}, racy
    race = racy.findings[0]
    assert all(item["global"][0] >= 64 for item in race.work_items)  # the ids as the launch numbers them
    clean = _prove_with_offset(tmp_path, LAUNCH_QUERY % "get_global_offset(0) != 64 || get_global_id(0) < 64",
                               (64, 0, 0))
    assert clean.verdict == "proven", clean
    assert _prove_with_offset(tmp_path, LAUNCH_QUERY % "get_global_offset(0) == 64", (0, 0, 0)).verdict == "proven"


@needs_clspv
def test_the_work_dim_is_the_launchs(tmp_path: Path) -> None:
    assert _prove_with_offset(tmp_path, LAUNCH_QUERY % "get_work_dim() != 1", (0, 0, 0)).verdict == "proven"
    assert kinds(_prove_with_offset(tmp_path, LAUNCH_QUERY % "get_work_dim() == 1", (0, 0, 0))) == {"data-race"}
