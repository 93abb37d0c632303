"""The guard against accesses clspv deletes (verify/prove/kept.py, opencl.guarded): a racy read
whose value is never used is gone from clspv's module even at -O0, so a proof over it would be
unsound; the verdict is unknown instead of proven (GPUVerify's race_from_call,
race_from_call_in_loop, races_from_indirect_calls, miscfail8 and load_from_null shapes)."""
from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.verify.prove import kept

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
needs_tools = pytest.mark.skipif(not HAS_CLSPV or tools.find("clang") is None or importlib.util.find_spec("z3") is None,
                                 reason="needs clspv (pip install pyclspv), clang and z3-solver")

IR = """\
define dso_local spir_func i32 @helper(i32 addrspace(3)* noundef %0) #0 !dbg !8 {
  %2 = alloca i32 addrspace(3)*, align 8
  store i32 addrspace(3)* %0, i32 addrspace(3)** %2, align 8
  %3 = load i32 addrspace(3)*, i32 addrspace(3)** %2, align 8, !dbg !17
  %6 = load i32, i32 addrspace(3)* %5, align 4, !dbg !17
  ret i32 %6
}
define dso_local spir_func void @never(i32 addrspace(1)* noundef %0) #0 !dbg !9 {
  store i32 1, i32 addrspace(1)* %0, align 4, !dbg !18
  ret void
}
define dso_local spir_kernel void @k(i32 addrspace(3)* noundef %0, i8 addrspace(1)* %d, i8* %s) #3 !dbg !20 {
  %4 = call spir_func i32 @helper(i32 addrspace(3)* noundef %3) #5, !dbg !30
  store i32 %6, i32 addrspace(3)* getelementptr inbounds ([4 x i32], [4 x i32] addrspace(3)* @k.t, i64 0, i64 1), align 4, !dbg !35
  %7 = atomicrmw volatile add i32 addrspace(1)* %x, i32 1 seq_cst, align 4, !dbg !35
  call void @llvm.memcpy.p1i8.p0i8.i64(i8 addrspace(1)* align 4 %d, i8* align 4 %s, i64 16, i1 false), !dbg !35
  ret void
}
!17 = !DILocation(line: 13, column: 12, scope: !8)
!18 = !DILocation(line: 40, column: 3, scope: !9)
!30 = !DILocation(line: 17, column: 5, scope: !20)
!35 = !DILocation(line: 18, column: 16, scope: !20)
"""


def test_llvm_accesses_through_global_and_local_pointers_of_called_functions() -> None:
    got = kept.llvm_accesses(IR, "k")
    # the load through the __local pointer (not the stores and loads of the pointer's own slot),
    # a store to a __local array by a constant address, an atomic, a memcpy into __global memory;
    # nothing of @never, which the kernel does not call
    assert got == Counter({(13, "read"): 1, (18, "write"): 3})


def test_lost_compares_line_by_line_and_kind_by_kind() -> None:
    source = Counter({(13, "read"): 1, (18, "write"): 1})
    assert not kept.lost(source, Counter({(13, "read"): 2, (18, "write"): 1}))  # inlined twice: more is fine
    assert kept.lost(source, Counter({(18, "write"): 1, (13, "write"): 1})) == Counter({(13, "read"): 1})
    # an access clspv left without a line makes up for one of its kind
    assert not kept.lost(source, Counter({(0, "read"): 1, (18, "write"): 1}))
    assert "clspv removed 1 memory access the source makes (unused loads; line 13)" in kept.describe(
        Counter({(13, "read"): 1}))


UNUSED_READS = {
    "race_from_call": """
int foo(__local int *p) { return p[get_local_id(0)]; }
__kernel void k(__local int *p) { foo(p); p[get_local_id(0) + 1] = 1; }
""",
    "race_from_call_inlined": """
inline __attribute__((always_inline)) int foo(__local int *p) { return p[get_local_id(0)]; }
__kernel void k(__local int *p) { foo(p); p[get_local_id(0) + 1] = 1; }
""",
    "race_from_call_in_loop": """
int foo(__local int *p) { return p[get_local_id(0)]; }
__kernel void k(__local int *p) { for (int i = 0; i < 4; i++) { foo(p); } p[get_local_id(0) + 1] = 1; }
""",
    "races_from_indirect_calls": """
int inner(__local int *x, __local int *y) { return x[get_local_id(0)] + y[get_local_id(0) + 1]; }
int middle(int v, __local int *b) { inner(b, b); return 0; }
int outer(__local int *a) { return a[get_local_id(0)] + middle(a[get_local_id(0) + 2], a); }
__kernel void k(__local int *p) { outer(p); p[get_local_id(0) + 1] = 1; }
""",
    "load_from_null": """
__kernel void k(__global int *b) { __global int *a = 0; int x = a[get_global_id(0)]; }
""",
}


def _prove(tmp: Path, source: str) -> object:
    from kernellab.verify.prove import engine, opencl
    path = tmp / "k.cl"
    path.write_text(source)
    ls = (16, 1, 1)
    args = [opencl.ArgumentSpec("local" if "__local" in source else "buffer", "p", size=256)]
    spirv, ir = opencl.compile_kept(path, "", global_offset=True)  # as the conformance script proves
    compiled = opencl.load_kernel(spirv, path, "k", ls, args)
    launch = opencl.launch(compiled, (32,), ls, args)
    return opencl.guarded(engine.prove(compiled.module, launch, timeout=60), ir, compiled.module, "k")


@needs_tools
@pytest.mark.parametrize("shape", sorted(UNUSED_READS))
def test_a_racy_read_clspv_deletes_is_found(tmp_path: Path, shape: str) -> None:
    """Compiled again with every __global/__local pointee volatile, clspv keeps the read and its
    race is found; where that build fails (clspv crashes on a load through a null pointer) the
    guard keeps the verdict unknown."""
    out = _prove(tmp_path, UNUSED_READS[shape])
    if shape == "load_from_null":
        assert out.verdict == "unknown", out  # type: ignore[attr-defined]
        assert "clspv removed" in out.reason and "unused loads" in out.reason  # type: ignore[attr-defined]
    else:
        assert out.verdict == "defect" and {f.kind for f in out.findings} == {"data-race"}, out  # type: ignore[attr-defined]


@needs_tools
def test_an_unused_read_that_does_not_race_is_proven(tmp_path: Path) -> None:
    """GPUVerify's localarrayaccess shape: clspv deletes `int x = A[i + 1];`; the volatile build
    keeps it, and the read after the barrier races with nothing."""
    out = _prove(tmp_path, """
__kernel void k(__global int *p) {
  __local int A[17];
  A[get_local_id(0)] = 2;
  barrier(CLK_LOCAL_MEM_FENCE);
  int x = A[get_local_id(0) + 1];
}
""")
    assert out.verdict == "proven", out  # type: ignore[attr-defined]


@needs_tools
@pytest.mark.parametrize("initial, verdict", [("{ }", "proven"), ("{0, 0, 0, 5, 0, 0, 7}", "defect")])
def test_code_a_constant_array_makes_dead(tmp_path: Path, initial: str, verdict: str) -> None:
    """GPUVerify's globalarray/pass: clspv folds the read of an all-zero __constant array and
    deletes the store it guards; built with __constant volatile too, the read stays and the
    engine reads the array's initializer (two non-zero elements: two work-items write p[0])."""
    out = _prove(tmp_path, f"""
__constant int A[64] = {initial};
__kernel void k(__global int *p) {{
  int a = A[get_global_id(0)];
  if (a != 0) p[0] = get_global_id(0);
}}
""")
    assert out.verdict == verdict, out  # type: ignore[attr-defined]


@needs_tools
def test_where_the_volatile_build_fails_the_guard_stands(tmp_path: Path) -> None:
    """vload4 takes no volatile pointer: the volatile build does not compile, the first module
    (without the unused racy read) is the one proven, and the guard makes it unknown."""
    out = _prove(tmp_path, """
__kernel void k(__global float *p) {
  __local int A[16];
  float4 v = vload4(0, p);
  int x = A[get_local_id(0)];
  A[(get_local_id(0) + 1) % 16] = (int)v.x;
}
""")
    assert out.verdict == "unknown", out  # type: ignore[attr-defined]
    assert "clspv removed 1 memory access" in out.reason  # type: ignore[attr-defined]


def test_the_volatile_definitions_reach_every_pointee() -> None:
    from kernellab.verify.prove import opencl

    text = opencl.annotated_text("__kernel void k(global int *p, __local int *q) {}", every_access=True)
    assert opencl.EVERY_ACCESS in text and opencl.EVERY_ACCESS not in opencl.annotated_text("__kernel void k() {}")


@needs_tools
def test_used_reads_keep_the_proof(tmp_path: Path) -> None:
    out = _prove(tmp_path, """
int foo(__local int *p) { return p[get_local_id(0)]; }
__kernel void k(__local int *p) { int v = foo(p); barrier(CLK_LOCAL_MEM_FENCE); p[get_local_id(0)] = v + 1; }
""")
    assert out.verdict == "proven", out  # type: ignore[attr-defined]


@needs_tools
def test_without_clang_opencl_is_not_proven(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kernellab.errors import MissingToolError
    real = tools.require

    def no_clang(name: str, purpose: str = "") -> tools.Tool:
        if name == "clang" and "kept every memory access" in purpose:
            raise MissingToolError("clang not found")
        return real(name, purpose)

    monkeypatch.setattr(tools, "require", no_clang)
    out = _prove(tmp_path, """
__kernel void k(__local int *p) { p[get_local_id(0)] = 1; }
""")
    assert out.verdict == "unknown" and "cannot check clspv kept every access (clang not found)" in out.reason  # type: ignore[attr-defined]


NAN_IR = """\
define dso_local spir_kernel void @k(float addrspace(1)* noundef %0) #3 !dbg !20 {
  %2 = load float, float addrspace(1)* %0, align 4, !dbg !30
  %3 = fcmp %s float %2, 0x7FF8000000000000, !dbg !30
  br i1 %3, label %4, label %5, !dbg !30

4:                                                ; preds = %1
  store float 1.0, float addrspace(1)* %0, align 4, !dbg !31
  br label %6

5:                                                ; preds = %1
  store float 2.0, float addrspace(1)* %0, align 4, !dbg !32
  br label %6

6:                                                ; preds = %5, %4
  ret void
}
!30 = !DILocation(line: 3, column: 1, scope: !20)
!31 = !DILocation(line: 4, column: 1, scope: !20)
!32 = !DILocation(line: 5, column: 1, scope: !20)
"""


@pytest.mark.parametrize("predicate, lines", [
    ("oeq", {3, 5}),        # x == NAN: false for every x, the store under it never made
    ("une", {3, 4}),        # x != NAN: true for every x
    ("nnan oeq", {3, 4, 5}),  # fast-math: a NaN operand makes it poison, not a constant
    ("olt", {3, 4, 5}),     # the NaN is replaced below: a comparison of two values
])
def test_a_branch_on_a_comparison_with_a_nan_is_constant(predicate: str, lines: set[int]) -> None:
    ir = NAN_IR.replace("%s", predicate)
    if predicate == "olt":
        ir = ir.replace("0x7FF8000000000000", "0x7FF0000000000000")  # infinity, not a NaN
    assert {line for line, _ in kept.llvm_accesses(ir, "k")} == lines


NAN_GUARD = """
__kernel void k(__global float *p) {
  if (p[get_global_id(0)] %s NAN)
    p[0] = -1;
  else
    p[get_global_id(0)] = 0;
}
"""


@needs_tools
def test_a_store_clspv_folds_under_a_comparison_with_a_nan(tmp_path: Path) -> None:
    """GPUVerify's misc/pass/misc7: clspv folds `x == NAN` (false for every x) and deletes the store
    it guards, which the guard took for an access lost; with `!=` (true for every x) the store is
    made by every work-item and races."""
    out = _prove(tmp_path, NAN_GUARD % "==")
    assert out.verdict == "proven", out  # type: ignore[attr-defined]
    out = _prove(tmp_path, NAN_GUARD % "!=")
    assert out.verdict == "defect" and "data-race" in {f.kind for f in out.findings}, out  # type: ignore[attr-defined]


def test_accesses_no_path_reaches_are_not_counted() -> None:
    """A block of clspv's module that no path from the entry reaches makes no access, so it does
    not stand for one the source makes: clspv compiles `p[i] = 1; while (true) {}` to an entry
    block that returns at once, the store and the loop unreachable."""
    from types import SimpleNamespace

    from kernellab.spirvsim.module import Block, Function, Inst

    def inst(op: str, *words: int, line: int = 0) -> Inst:
        return Inst(op, words, 0, 0, ("k.cl", line) if line else None)

    blocks = {1: Block(1, [inst("OpReturn", line=3)]),
              2: Block(2, [inst("OpStore", 30, 5, line=2), inst("OpBranch", 3)]),
              3: Block(3, [inst("OpBranch", 3)])}
    module = SimpleNamespace(types={7: SimpleNamespace(storage="StorageBuffer")}, type_of={30: 7},
                             entry_function=9, functions={9: Function(9, 0, [], blocks, 1)})
    assert kept.spirv_accesses(module) == Counter()
    blocks[1] = Block(1, [inst("OpBranch", 2)])  # the same store, reached
    assert kept.spirv_accesses(module) == Counter({(2, "write"): 1})
