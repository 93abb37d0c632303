"""Which declared array an Oclgrind ``Index (i) exceeds static array size (n)`` is about, and whether
the access leaves it (an index past the first dimension) or may stay inside (an inner one)."""
from __future__ import annotations

from pathlib import Path

from kernellab.verify import terms

SOURCE = """\
#define N 4
#define M (N * 2)
struct S { int a; char b[2]; union { short f; } g[5][7][2]; };
__kernel void k(__global int *out) {
  __local int L[N][M];
  struct S s;
  int i = get_global_id(0);
  out[i] = s.b[i] + s.g[i][0][0].f;
  L[0][i] = 1;
  return L[i][0];
}
"""


def test_declarations_with_defined_dimensions(tmp_path: Path) -> None:
    path = tmp_path / "k.cl"
    path.write_text(SOURCE)
    declared = terms.array_declarations(str(path))
    assert declared["b"] == ((2,),) and declared["g"] == ((5, 7, 2),) and declared["L"] == ((4, 8),)
    assert "out" not in declared  # `out[i] = ...` indexes, it does not declare


def test_first_dimension_leaves_inner_may_not(tmp_path: Path) -> None:
    path = str(tmp_path / "k.cl")
    Path(path).write_text(SOURCE)
    assert terms.static_index_leaves_array(path, 8, 2, 2) == ("b", True)
    assert terms.static_index_leaves_array(path, 8, 6, 5) == ("g", True)
    assert terms.static_index_leaves_array(path, 9, 9, 8) == ("L", False)
    assert terms.static_index_leaves_array(path, 10, 4, 4) == ("L", True)
    assert terms.static_index_leaves_array(path, 9, 3, 3) is None  # no array on the line has it


def test_dimensions_evaluated_as_c_without_running_hostile_text(tmp_path: Path) -> None:
    path = tmp_path / "k.cl"
    # a power would parse as Python and never finish; C has no such operator: not a constant
    path.write_text("#define HUGE 9**9**9**9\n#define Q (-7 / 2)\n#define R (7 % -3)\n"
                    "__kernel void k() { int a[HUGE]; int b[Q + 10]; int c[R + 4]; int d[1 << 80]; }\n")
    declared = terms.array_declarations(str(path))
    assert declared["a"] == ((None,),)
    assert declared["b"] == ((7,),)   # C truncates toward zero: -7 / 2 == -3
    assert declared["c"] == ((5,),)   # and 7 % -3 == 1
    assert declared["d"] == ((None,),)
