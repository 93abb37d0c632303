"""GPUVerify's annotations in ``verify --prove`` (docs/verify-prove.md, "Annotations"): for each
family a kernel whose annotation is false (a planted defect: an ``assertion`` finding) and a clean
twin (proven); a false annotation never lets a defect be proven; one the engine does not model
gives ``unknown`` naming it and its line. The source pass (:func:`annotations.prepare`) is tested
without a compiler."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernellab import tools
from kernellab.verify.prove import annotations

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
needs_clspv = pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv")


def prove(tmp: Path, source: str, local: int = 64, groups: int = 4) -> object:
    pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")
    from kernellab.verify.prove import engine, opencl

    path = tmp / "k.cl"
    path.write_text(source)
    ls = (local, 1, 1)
    compiled = opencl.compile_kernel(path, "k", "", ls, [])
    args = [opencl.ArgumentSpec("scalar", f"arg{k}") for k in range(max(compiled.kernel.arguments, default=-1) + 1)]
    return engine.prove(compiled.module, opencl.launch(compiled, (local * groups,), ls, args), timeout=60)


def verdict(tmp: Path, source: str, **kw: int) -> tuple[str, set[str]]:
    o = prove(tmp, source, **kw)
    return o.verdict, {f.kind for f in o.findings}  # type: ignore[attr-defined]


ASSERTION = ("defect", {"assertion"})
PROVEN = ("proven", set())


# --- access logs -------------------------------------------------------------------------------

@needs_clspv
def test_read_and_write_logs(tmp_path: Path) -> None:
    body = "__kernel void k(__global int *p, __global int *q) { p[get_global_id(0)] = q[get_global_id(0)]; %s }"
    assert verdict(tmp_path, body % "__assert(!__read(p)); __assert(__write(p) | !__write(p));") == PROVEN
    assert verdict(tmp_path, body % "__assert(!__read(q));") == ASSERTION
    assert verdict(tmp_path, body % "__assert(__no_write(q));") == PROVEN
    assert verdict(tmp_path, body % "__assert(__no_write(p));") == ASSERTION


@needs_clspv
def test_offset_logs(tmp_path: Path) -> None:
    body = ("__kernel void k(__global int *p, __global int *q) { p[get_global_id(0)] = q[get_global_id(0) + 1];"
            " __assert(__write_implies(p, __write_offset_bytes(p) == %s)); "
            "__assert(__read_implies(q, __read_offset_bytes(q) == %s)); }")
    assert verdict(tmp_path, body % ("get_global_id(0) * 4", "get_global_id(0) * 4 + 4")) == PROVEN
    assert verdict(tmp_path, body % ("get_global_id(0) * 4", "get_global_id(0) * 4")) == ASSERTION
    # nothing logged: the offset may be anything
    assert verdict(tmp_path, "__kernel void k(__global int *p) { __assert(__read_offset_bytes(p) == 0); }") == ASSERTION
    # a pointer's own offset from its array
    assert verdict(tmp_path, "__kernel void k(__global int *p) { __global int *r = p + 2;"
                             " __assert(__ptr_offset_bytes(r) == 8); }") == PROVEN


@needs_clspv
def test_a_barrier_empties_the_logs_of_its_memory(tmp_path: Path) -> None:
    body = ("__kernel void k(__global int *A) { __local int L[64]; L[get_local_id(0)] = 1;"
            " barrier(%s); __assert(!__write(L)); }")
    assert verdict(tmp_path, body % "CLK_LOCAL_MEM_FENCE") == PROVEN
    assert verdict(tmp_path, body % "CLK_GLOBAL_MEM_FENCE") == ASSERTION


@needs_clspv
def test_log_in_a_loop_invariant(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A) {
      for (int i = 0; __invariant(__write_implies(A, __write_offset_bytes(A) / 4 %% get_global_size(0)
                                                    == get_global_id(0))), i < 8; i++)
        A[get_global_id(0) + %s] = i;
    }"""
    assert verdict(tmp_path, src % "i * get_global_size(0)") == PROVEN
    assert verdict(tmp_path, src % "i * get_global_size(0) + (i == 3)")[1] >= {"assertion"}


# --- two invocations ---------------------------------------------------------------------------

@needs_clspv
def test_other_uniform_distinct(tmp_path: Path) -> None:
    k = "__kernel void k(__global int *A) { %s }"
    assert verdict(tmp_path, k % "__assert(__uniform_int(get_local_size(0)));"
                                 "__assert(__implies(__same_group, __distinct_int(get_local_id(0))));"
                                 "__assert(__uniform_bool(__enabled()));") == PROVEN
    assert verdict(tmp_path, k % "__assert(__uniform_int(get_group_id(0)));") == ASSERTION
    assert verdict(tmp_path, k % "__assert(__distinct_int(get_local_id(0)));") == ASSERTION
    assert verdict(tmp_path, k % "if (get_local_id(0) < 3) __assert(__uniform_bool(__enabled()));") == ASSERTION
    assert verdict(tmp_path, k % "__assert(__exclusive(get_global_id(0) == 4));") == PROVEN
    assert verdict(tmp_path, k % "__assert(__all(get_global_id(0) < 256));") == PROVEN
    assert verdict(tmp_path, k % "__assert(__all(get_global_id(0) < 255));") == ASSERTION


@needs_clspv
def test_uniform_precondition_is_assumed_for_both(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A, int n) {
      __requires(%s);
      __local int L[64];
      if (n > 3) { L[get_local_id(0)] = 1; barrier(CLK_LOCAL_MEM_FENCE); }
    }"""
    assert verdict(tmp_path, src % "__uniform_int(n)") == PROVEN
    # without it the arguments are shared anyway: no divergence either, but a false
    # uniformity claim about an id is an assumption that must not hide the divergence
    assert verdict(tmp_path, src.replace("n > 3", "get_local_id(0) > 3") % "__uniform_int(n)")[1] == {
        "barrier-divergence"}


# --- contracts ---------------------------------------------------------------------------------

@needs_clspv
def test_ensures_checked_for_every_argument_the_precondition_allows(tmp_path: Path) -> None:
    src = """int halve(int a) {
      __requires(a > 0);
      __ensures(__return_val_int() %s);
      return a / 2;
    }
    __kernel void k(__global int *A) { A[get_global_id(0)] = halve(5); }"""
    assert verdict(tmp_path, src % ">= 0") == PROVEN
    # true for the call the kernel makes (5 / 2 > 0), false for a == 1: GPUVerify's contract fails
    assert verdict(tmp_path, src % "> 0") == ASSERTION


@needs_clspv
def test_ensures_over_the_other_invocation(tmp_path: Path) -> None:
    src = """int next(int x) {
      __requires(__implies(__same_group, __distinct_int(x)));
      __ensures(__implies(__same_group, __distinct_int(__return_val_int())));
      return x %s;
    }
    __kernel void k(__global int *A) { A[get_global_id(0)] = next(get_local_id(0)); }"""
    assert verdict(tmp_path, src % "+ 1") == PROVEN
    assert verdict(tmp_path, src % "/ 2") == ASSERTION


@needs_clspv
def test_specification_function_with_code_is_unknown(tmp_path: Path) -> None:
    # a body that is not only a contract (test_spec_function_is_its_contract): not modelled
    src = """void __spec_f(__global int *p) { __requires(__no_read(p)); p[0] = 1; }
    __kernel void k(__global int *A) { __spec_f(A); A[get_global_id(0)] = 1; }"""
    o = prove(tmp_path, src)
    assert o.verdict == "unknown" and "__spec_" in o.reason and o.line[1] == 1  # type: ignore[attr-defined]


@needs_clspv
def test_ensures_with_vector_return_and_old(tmp_path: Path) -> None:
    src = """int4 inc(int4 v, int p) {
      __ensures(__return_val_int4().x == v.x + %s);
      __ensures(p == __old_int(p));
      int4 r = v; r.x = v.x + 1; return r;
    }
    __kernel void k(__global int *A) { int4 b = inc((int4)(0, 1, 2, 3), 7); A[get_global_id(0)] = b.x; }"""
    assert verdict(tmp_path, src % "1") == PROVEN
    assert verdict(tmp_path, src % "2") == ASSERTION


@needs_clspv
def test_postcondition_of_an_inlined_function_is_unknown(tmp_path: Path) -> None:
    # clspv inlines a function taking a pointer: its return, where __ensures holds, is gone
    src = """void f(__local int *L) { __global_ensures(!__read(L)); L[get_local_id(0)] = 0; }
    __kernel void k(__global int *A) { __local int L[64]; f(L); }"""
    o = prove(tmp_path, src)
    assert o.verdict == "unknown" and "__global_ensures" in o.reason and o.line[1] == 1  # type: ignore[attr-defined]


@needs_clspv
def test_callee_precondition_is_checked_even_inlined(tmp_path: Path) -> None:
    src = """void put(__local int *L, int x) { __requires(x < 64); L[x] = 1; }
    __kernel void k(__global int *A) { __local int L[64]; put(L, %s); barrier(CLK_LOCAL_MEM_FENCE);
      A[get_global_id(0)] = L[0]; }"""
    assert verdict(tmp_path, src % "get_local_id(0)") == PROVEN
    # a false precondition of a called function: found, never assumed into a proof
    assert "assertion" in verdict(tmp_path, src % "get_local_id(0) + 1")[1]


@needs_clspv
def test_global_requires_holds_for_invocations_not_calling(tmp_path: Path) -> None:
    src = """void f(int x) { __global_requires(x == 100); }
    __kernel void k(__global int *A) { volatile int z = %s; if (get_local_id(0) %% 2 == 0) { z = 100; f(z); } }"""
    assert verdict(tmp_path, src % "100") == PROVEN
    assert verdict(tmp_path, src % "50") == ASSERTION


@needs_clspv
def test_no_overflow_addition(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A, unsigned x, unsigned y) {
      unsigned z = %s;
      __assert(z >= x && z >= y);
    }"""
    assert verdict(tmp_path, src % "__add_noovfl_unsigned_int(x, y)") == PROVEN
    assert verdict(tmp_path, src % "x + y") == ASSERTION
    pred = "__kernel void k(__global int *A, unsigned x, unsigned y) { __requires(%s); __assert(x + y >= x); }"
    assert verdict(tmp_path, pred % "__add_noovfl(x, y)") == PROVEN
    assert verdict(tmp_path, pred % "x > 0") == ASSERTION


@needs_clspv
def test_logs_of_a_pointer_chosen_at_run_time(tmp_path: Path) -> None:
    body = ("__kernel void k(__global int *p, __global int *q, int x) { __global int *r = x ? p : q;"
            " p[get_global_id(0)] = 1; __assert(%s); }")
    assert verdict(tmp_path, body % "__write_implies(r, __write_offset_bytes(r) == get_global_id(0) * 4)") == PROVEN
    assert verdict(tmp_path, body % "__implies(!x, !__write(r))") == PROVEN  # q is not written
    assert verdict(tmp_path, body % "__implies(x, !__write(r))") == ASSERTION  # p may be logged


@needs_clspv
def test_dominator_enabled(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A, int n) {
      if (n > 2) for (int i = 0; __invariant(%s), i < 4; i++) A[get_global_id(0)] = i;
    }"""
    assert verdict(tmp_path, src % "__dominator_enabled()") == PROVEN
    assert verdict(tmp_path, src % "__implies(__dominator_enabled(), n > 2)") == PROVEN
    assert verdict(tmp_path, src % "!__dominator_enabled()") == ASSERTION


@needs_clspv
def test_function_wide_invariant(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A) {
      for (int i = 0; i < 4; i++) A[get_global_id(0) + %s] = i;
      __function_wide_invariant(__write_implies(A, __write_offset_bytes(A) / 4 %% get_global_size(0)
                                                   == get_global_id(0)));
    }"""
    assert verdict(tmp_path, src % "i * get_global_size(0)") == PROVEN
    assert verdict(tmp_path, src % "i * get_global_size(0) + (i == 2)")[1] >= {"assertion"}


@needs_clspv
def test_unmodelled_annotation_names_itself_and_its_line(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A) {
      __local int L[64];
      L[get_local_id(0)] = 1;
      __equal_floats(1.0f, 1.0f);
      barrier(CLK_LOCAL_MEM_FENCE);
    }"""
    o = prove(tmp_path, src)
    assert o.verdict == "unknown"  # type: ignore[attr-defined]
    assert "__equal_floats" in o.reason and o.line[1] == 4  # type: ignore[attr-defined]
    # a barrier invariant not written just before its barrier (the binary ones are modelled there)
    o = prove(tmp_path, src.replace("__equal_floats(1.0f, 1.0f);", "__barrier_invariant_binary_1(L[get_local_id(0)] == 1,"
                                    " get_local_id(0), __other_int(get_local_id(0))); L[0] = 0;"))
    assert o.verdict == "unknown" and "__barrier_invariant_binary" in o.reason  # type: ignore[attr-defined]


# --- barrier invariants ------------------------------------------------------------------------

BARRIER_INVARIANTS = """__kernel void k(__global int *out) {
  __local int L[65];
  L[get_local_id(0)] = %s;
  __barrier_invariant_2(L[get_local_id(0)] == get_local_id(0), get_local_id(0), %s);
  barrier(CLK_LOCAL_MEM_FENCE);
  %s
}"""
NEXT = "(get_local_id(0) + 1) % 64"
READ_NEXT = "__assert(L[(get_local_id(0) + 1) % 64] == (get_local_id(0) + 1) % 64);"


@needs_clspv
def test_barrier_invariant_is_assumed_for_its_instantiations(tmp_path: Path) -> None:
    assert verdict(tmp_path, BARRIER_INVARIANTS % ("get_local_id(0)", NEXT, READ_NEXT)) == PROVEN
    # not instantiated for the next invocation: its value is not known
    assert verdict(tmp_path, BARRIER_INVARIANTS % ("get_local_id(0)", "0", READ_NEXT)) == ASSERTION
    # false for one invocation: its check fails
    assert verdict(tmp_path, BARRIER_INVARIANTS % ("get_local_id(0) + (get_local_id(0) == 3)", NEXT,
                                                   READ_NEXT))[1] >= {"assertion"}
    # an instantiation past the work-group (64 is no invocation's id) is not assumed
    assert verdict(tmp_path, BARRIER_INVARIANTS % ("get_local_id(0)", "get_local_id(0) + 1",
                                                   "__assert(L[get_local_id(0) + 1] == get_local_id(0) + 1);"))[0] \
        != "proven"


@needs_clspv
def test_barrier_invariant_assumption_hides_no_race_before_its_barrier(tmp_path: Path) -> None:
    # invocation 0 also writes L[5]: every check passes in each invocation's own view, and the
    # instantiation at 5 is false for invocation 0's view; the race must still be found
    src = BARRIER_INVARIANTS % ("get_local_id(0); if (get_local_id(0) == 0) L[5] = 0", "5", READ_NEXT)
    assert "data-race" in verdict(tmp_path, src)[1]


@needs_clspv
def test_barrier_invariant_not_assumed_where_unsound(tmp_path: Path) -> None:
    # the local id through a private variable: the instantiation would read this invocation's
    src = BARRIER_INVARIANTS.replace("__barrier_invariant_2(L[get_local_id(0)] == get_local_id(0)",
                                     "int t = get_local_id(0);\n  __barrier_invariant_2(L[t] == t")
    assert verdict(tmp_path, src % ("get_local_id(0)", NEXT, READ_NEXT)) == ASSERTION
    # of global memory (other work-groups may write it): checked, not assumed
    src = """__kernel void k(__global int *A) {
      A[get_global_id(0)] = get_global_id(0);
      __barrier_invariant_2(A[get_global_id(0)] == get_global_id(0), get_local_id(0), (get_local_id(0) + 1) %% 64);
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
      __assert(%s);
    }"""
    assert verdict(tmp_path, src % "A[get_global_id(0)] == get_global_id(0)") == PROVEN
    assert verdict(tmp_path, src % "A[get_group_id(0) * 64 + (get_local_id(0) + 1) % 64] != 12345")[0] != "proven"
    # a barrier that does not order local memory: no state at the barrier to assume it of
    src = BARRIER_INVARIANTS.replace("CLK_LOCAL_MEM_FENCE", "CLK_GLOBAL_MEM_FENCE")
    assert verdict(tmp_path, src % ("get_local_id(0)", NEXT, READ_NEXT))[0] != "proven"


BINARY = """__kernel void k(__global int *out) {
  __local int L[64];
  L[get_local_id(0)] = %s;
  %s
  barrier(CLK_LOCAL_MEM_FENCE);
  __assert(__implies(__same_group, L[get_local_id(0)] != L[(unsigned)__other_int(get_local_id(0)) %% 64u]));
}"""
ALL_DIFFERENT = ("__barrier_invariant_binary_1(L[get_local_id(0)] != L[__other_int(get_local_id(0))],"
                 " get_local_id(0), __other_int(get_local_id(0)));")


@needs_clspv
def test_binary_barrier_invariant(tmp_path: Path) -> None:
    # checked of the two invocations' writes at the barrier, assumed of the pair after it
    assert verdict(tmp_path, BINARY % ("get_local_id(0)", ALL_DIFFERENT)) == PROVEN
    # false for invocations 2k and 2k + 1: its check fails
    assert verdict(tmp_path, BINARY % ("get_local_id(0) / 2", ALL_DIFFERENT))[1] >= {"assertion"}
    # without it the other invocation's value is not known after the barrier
    assert verdict(tmp_path, BINARY % ("get_local_id(0)", "")) == ASSERTION
    # of bytes neither of the two wrote in the barrier interval nothing is known at its check
    # (GPUVerify's barrier_invariants/no_access_check: invocation 0 wrote L[0] = 1 there)
    stale = """__kernel void k(__global int *out) {
      __local int L[64];
      L[get_local_id(0)] = 0;
      __barrier_invariant_1(L[get_local_id(0)] == 0, 0);
      barrier(CLK_LOCAL_MEM_FENCE);
      L[get_local_id(0)] = 1;
      __barrier_invariant_binary_1(__implies(get_local_id(0) != 0 & __other_int(get_local_id(0)) != 0, L[0] == 0),
                                   get_local_id(0), __other_int(get_local_id(0)));
      barrier(CLK_LOCAL_MEM_FENCE);
    }"""
    assert verdict(tmp_path, stale) == ASSERTION


def test_prepare_instantiates_barrier_invariants_and_keeps_lines() -> None:
    src = ("__kernel void k() {\n  __local int A[8];\n  A[get_local_id(0)] = 0;\n"
           "  __barrier_invariant_2(A[get_local_id(0)] == 0, get_local_id(0), 0); // c\n"
           "  barrier(CLK_LOCAL_MEM_FENCE); A[0] = 1;\n  x;\n}\n")
    out = annotations.prepare(src)
    assert "__KL_BI_CHECK(A[get_local_id(0)] == 0, get_local_id(0), 0);" in out
    assert out.count("__kl_bi_inst(") == 2 and out.count("#define get_local_id") == 1
    assert f"#line {annotations.INSTANTIATION_LINES + 5}" in out
    # the rest of the barrier's line is still line 5, the next line 6
    tail = out[out.rindex("#line 5\n") + len("#line 5\n"):]
    assert tail.startswith("} A[0] = 1;\n  x;")
    assert annotations.prepare(src.replace("barrier(", "work_group_barrier(")).count("__kl_bi_inst(") == 2
    # an invariant not followed by its barrier is left to the header (unsupported)
    lone = "__kernel void k() {\n  __barrier_invariant_2(1, 0, 1);\n  x = 1;\n  barrier(0);\n}\n"
    assert annotations.prepare(lone) == lone
    # nor one that is an if's body
    under_if = "__kernel void k() {\n  if (c) __barrier_invariant_1(1, 0); barrier(0);\n}\n"
    assert annotations.prepare(under_if) == under_if


# --- specification functions -------------------------------------------------------------------

SPEC = """void __spec_bar(__global int *p) {
  __requires(__no_write(p));
  __ensures(__write_implies(p, __write_offset_bytes(p) / sizeof(int) == %s));
  __ensures(p[get_global_id(0)] == __old_int(p[get_global_id(0)]) + 1);
  __writes_to(p);
}
__kernel void k(__global int *A) {
  %s
  __spec_bar(A);
  %s
}"""
GID = "get_global_id(0)"


@needs_clspv
def test_spec_function_is_its_contract(tmp_path: Path) -> None:
    # writes its own element only, one more than before
    src = SPEC.replace("__requires(__no_write(p));", "__requires(p[get_global_id(0)] == get_global_id(0));")
    assert verdict(tmp_path, src % (GID, "A[get_global_id(0)] = get_global_id(0);",
                                    "__assert(A[get_global_id(0)] == get_global_id(0) + 1);")) == PROVEN
    assert verdict(tmp_path, src % (GID, "A[get_global_id(0)] = get_global_id(0);",
                                    "__assert(A[get_global_id(0)] == get_global_id(0));")) == ASSERTION
    # it may write the next invocation's element: a race with that one's call
    assert "data-race" in verdict(tmp_path, SPEC % (GID + " + 1", "", ""))[1]
    # its precondition is checked at the call
    assert verdict(tmp_path, SPEC % (GID, "A[get_global_id(0)] = 0;", ""))[1] >= {"assertion"}
    # its effect is a write: the value written before is forgotten
    assert verdict(tmp_path, SPEC.replace("__ensures(p[get_global_id(0)] == __old_int(p[get_global_id(0)]) + 1);", "")
                   % (GID, "", "__assert(A[get_global_id(0)] == 7);")) == ASSERTION


@needs_clspv
def test_spec_function_reads_from_any_element(tmp_path: Path) -> None:
    src = """void __spec_bar(__global int *p) { __reads_from(p); }
    __kernel void k(__global int *A) { __spec_bar(A); A[get_global_id(0)] = 1; }"""
    assert "data-race" in verdict(tmp_path, src)[1]
    assert verdict(tmp_path, src.replace("A[get_global_id(0)] = 1;", "")) == PROVEN


def test_prepare_orders_a_contract() -> None:
    src = ("void __spec_f(__global int *p) {\n  __requires(p[0] == 1);\n  __ensures(p[0] == __old_int(p[0]) + 1);\n"
           "  __writes_to(p);\n}\n")
    out = annotations.prepare(src)
    assert out.count("\n") == src.count("\n")
    assert out.index("__requires_in_function") < out.index("int __kl_old0 = (int)(p[0]);") < out.index("__writes_to")
    assert "__KL_SPEC_ENSURES(p[0] == __kl_old0 + 1); __kl_spec_end(0); }" in out
    # anything but a contract in the body: left unsupported
    other = annotations.prepare(src.replace("__writes_to(p);", "p[0] = 2;"))
    assert f"__kl_unsupported({len(annotations.UNSUPPORTED) - 1})" in other


# --- the source pass ---------------------------------------------------------------------------

def test_prepare_marks_callee_preconditions_and_keeps_lines() -> None:
    src = ("int f(int a) {\n  __requires(a > 0);\n  __ensures(__return_val_int() > 0);\n  return a;\n}\n"
           "// a comment with { braces\n#define X { \n"
           "__kernel void k() {\n  __requires(1);\n  __global_requires(2);\n}\n")
    out = annotations.prepare(src)
    assert out.count("\n") == src.count("\n")
    assert "__requires_in_function(a > 0)" in out and "__requires(1)" in out and "__global_requires(2)" in out
    assert out.startswith("__attribute__((noinline)) int f(int a)")


def test_prepare_spreads_function_wide_invariants_over_loops() -> None:
    src = ("kernel void k(int n) {\n  for (int i = 0; i < n; i++) {}\n  while (n > 0) n--;\n"
           "  for (;;) break;\n  __function_wide_invariant(n >= 0);\n}\n")
    out = annotations.prepare(src)
    assert out.count("\n") == src.count("\n")
    assert "for (int i = 0;__invariant(n >= 0),  i < n; i++)" in out
    assert "while (__invariant(n >= 0), n > 0)" in out
    assert "for (;__invariant(n >= 0), 1;)" in out
    assert "__function_wide_invariant" not in out


def test_prepare_leaves_function_wide_invariant_of_a_do_loop_unsupported() -> None:
    src = "kernel void k(int n) {\n  do { n--; } while (n > 0);\n  __function_wide_invariant(n >= 0);\n}\n"
    assert "__function_wide_invariant(n >= 0)" in annotations.prepare(src)


# --- GLSL --------------------------------------------------------------------------------------

HAS_GLSLANG = tools.find("glslangValidator") is not None
GLSL = """#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Data { int data[]; };
layout(push_constant) uniform Push { int n; } pc;
%s
void main() {
  uint lid = gl_LocalInvocationID.x;
  %s
  data[gl_GlobalInvocationID.x] = 1;
}
"""


@pytest.mark.skipif(not HAS_GLSLANG, reason="needs glslangValidator")
def test_glsl_other_invocation() -> None:
    pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")
    from kernellab.spirvsim import glsl_to_spirv
    from kernellab.spirvsim.machine import eval_spec_op
    from kernellab.spirvsim.module import load
    from kernellab.verify.prove import engine

    def run(body: str) -> tuple[str, set[str]]:
        module = load(glsl_to_spirv(GLSL % (annotations.GLSL_HEADER, body)), "main", file="s.comp",
                      eval_spec_op=eval_spec_op)
        launch = engine.Launch(module.local_size, (4, 1, 1))
        launch.buffer_sizes[(0, 0)] = 4096
        o = engine.prove(module, launch, timeout=60)
        return o.verdict, {f.kind for f in o.findings}

    assert run("kl_assert(kl_uniform(pc.n)); kl_assert(kl_implies(kl_uniform(gl_WorkGroupID.x), "
               "kl_distinct(lid))); kl_assert(kl_uniform(kl_enabled()));") == PROVEN
    assert run("kl_assert(kl_uniform(lid));") == ASSERTION
    assert run("if (lid < 3u) kl_assert(kl_uniform(kl_enabled()));") == ASSERTION
    assert run("if (pc.n > 2) kl_assert(kl_dominator_enabled());") == PROVEN
    assert run("if (pc.n > 2) kl_assert(!kl_dominator_enabled());") == ASSERTION


@needs_clspv
def test_log_in_a_summarised_loop_sees_earlier_iterations(tmp_path: Path) -> None:
    # 64 iterations: past the unrolling limit, the loop is summarised by invariants
    src = """__kernel void k(__global int *A) {
      for (int i = 0; __invariant(__write_implies(A, __write_offset_bytes(A) / 4 %% get_global_size(0)
                                                    == get_global_id(0))), i < 64; i++)
        A[get_global_id(0) + %s] = i;
    }"""
    assert verdict(tmp_path, src % "i * get_global_size(0)") == PROVEN
    # an earlier iteration wrote off the invocation's column: the invariant fails at a later head
    o = prove(tmp_path, src % "i * get_global_size(0) + (i == 40)")
    assert o.verdict != "proven"  # type: ignore[attr-defined]


def test_a_function_the_source_defines_is_not_the_headers() -> None:
    src = "bool __equal_floats(float* p, float* q) {\n  return *p == *q;\n}\n__kernel void k() { __assert(1); }\n"
    text = annotations.annotated(src)
    head, _, body = text.rpartition("#line 1\n")
    assert "#undef __equal_floats" in head and "#undef __assert" not in head
    assert body == src


def test_a_line_directive_holds_past_an_include(tmp_path: Path) -> None:
    # the annotation header goes before the source and a #line directive puts the source's lines
    # back at their number in the user's file; the marker the include expander writes after an
    # include must keep that numbering (it gave the header's length plus the line before)
    from kernellab.compile import preprocess

    (tmp_path / "h.h").write_text("int h(int x);\n")
    user = tmp_path / "user.cl"
    src = '#include "h.h"\n__kernel void k() { __assert(1); }\n'
    copy = tmp_path / "copy.cl"
    copy.write_text(annotations.annotated(src, name=str(user)))
    text = preprocess.expand(copy, "opencl-c").text.decode()
    after = text[text.index("int h(int x);"):]
    assert f'#line 2 "{user}"' in after and str(copy) not in after


def test_the_replayed_source_defines_annotations_away() -> None:
    src = ("__kernel void k(__global int *A, int n) {\n  __requires(n > 0 && __implies(n > 1, __uniform_int(n)));\n"
           "  for (int i = 0; __invariant(__read_implies(A, i >= 0)), i < n; i++) A[i] = __ite(i > 0, 1, 2);\n}\n")
    text = annotations.replayed(src, "/u/k.cl")
    head, _, body = text.rpartition('#line 1 "/u/k.cl"\n')
    assert body == src and "__kl_" not in head
    assert "#define __requires(...) ((void)0)" in head and "#define __invariant(...) ((void)0)" in head
    assert "#define __ite(c, a, b) ((c) ? (a) : (b))" in head


# --- __atomic_has_taken_value ------------------------------------------------------------------

@needs_clspv
def test_atomic_has_taken_value(tmp_path: Path) -> None:
    body = "__kernel void k(__global unsigned *c, __global unsigned *d) { unsigned i = atomic_inc(c + 1); %s }"
    # the value the atomic at element 1 of c returned to this invocation
    assert verdict(tmp_path, body % "__assert(__atomic_has_taken_value(c, 1, i));") == PROVEN
    # another value, another element, another array: not known to be taken
    assert verdict(tmp_path, body % "__assert(__atomic_has_taken_value(c, 1, i + 1));") == ASSERTION
    assert verdict(tmp_path, body % "__assert(__atomic_has_taken_value(c, 0, i));") == ASSERTION
    assert verdict(tmp_path, body % "__assert(__atomic_has_taken_value(d, 1, i));") == ASSERTION
    # assumed, it says nothing of the values: i + 1 may still be anything
    assert verdict(tmp_path, body % "__assume(__atomic_has_taken_value(c, 1, i + 1)); __assert(i == 0);") == ASSERTION


ATOMIC_LOOP = """__kernel void k(__global unsigned *counter, __global char *A) {
  while (__global_invariant(__write_implies(A, __atomic_has_taken_value(counter, 0, %s))), true) {
    unsigned slot = atomic_inc(counter);
    A[slot] = 1;
    if (slot > get_global_id(0)) break;
  }
}"""


@needs_clspv
def test_atomic_has_taken_value_in_a_loop_invariant(tmp_path: Path) -> None:
    # GPUVerify's atomics/refined_atomic_abstraction/access_in_loop: the slot written in an
    # earlier iteration is a value the counter gave (the loop runs past the unrolling limit)
    assert verdict(tmp_path, ATOMIC_LOOP % "__write_offset_bytes(A)") == PROVEN
    assert verdict(tmp_path, ATOMIC_LOOP % "__write_offset_bytes(A) + 1")[1] >= {"assertion"}


# --- __array_snapshot --------------------------------------------------------------------------

GHOST = """__kernel void k(__global int *out, int n) {
  __local int A[64];
  __local int A_ghost[64];
  A[get_local_id(0)] = get_local_id(0);
  __array_snapshot(A_ghost, A);
  A[get_local_id(0)] += 3;
  __assert(A[get_local_id(0)] == A_ghost[get_local_id(0)] + %s);
  barrier(CLK_LOCAL_MEM_FENCE);
  __assert(A_ghost[get_local_id(0)] == get_local_id(0));
}"""


@needs_clspv
def test_array_snapshot(tmp_path: Path) -> None:
    # a ghost copy of the array as this invocation sees it: its own bytes exact, kept past barriers
    assert verdict(tmp_path, GHOST % "3") == PROVEN
    assert verdict(tmp_path, GHOST % "4") == ASSERTION
    # another invocation's bytes of the copy are any value
    assert verdict(tmp_path, "__kernel void k(__global int *out) { __local int A[64]; __local int G[64];"
                             " A[get_local_id(0)] = 1; __array_snapshot(G, A);"
                             " __assert(G[(get_local_id(0) + 1) % 64] == 1); }") == ASSERTION
    # nor does a barrier invariant instantiated for another invocation carry its copy: not assumed
    assert verdict(tmp_path, "__kernel void k(__global int *out) { __local int A[64]; __local int G[64];"
                             " A[get_local_id(0)] = 1; __array_snapshot(G, A);"
                             " __barrier_invariant_2(G[get_local_id(0)] == 1, get_local_id(0), (get_local_id(0) + 1) % 64);"
                             " barrier(CLK_LOCAL_MEM_FENCE);"
                             " __assert(G[(get_local_id(0) + 1) % 64] == 1); }") == ASSERTION


@needs_clspv
def test_array_snapshot_into_an_array_the_kernel_writes_is_unknown(tmp_path: Path) -> None:
    o = prove(tmp_path, "__kernel void k(__global int *out) { __local int A[64]; __local int G[64];\n"
                        " A[get_local_id(0)] = 1; __array_snapshot(G, A);\n G[get_local_id(0)] = 2; }")
    assert o.verdict == "unknown" and "ghost array" in o.reason  # type: ignore[attr-defined]


GHOST_LOOP = """__kernel void k(__global int *out) {
  __local int A[64];
  __local int A_ghost[64];
  A[get_local_id(0)] = get_local_id(0);
  __array_snapshot(A_ghost, A);
  for (int i = 0; __invariant(A[get_local_id(0)] == A_ghost[get_local_id(0)] + i), i < 1000; i++) {
    A[get_local_id(0)] += %s;
  }
  __barrier_invariant_1(A[get_local_id(0)] == A_ghost[get_local_id(0)] + 1000, get_local_id(0));
  barrier(CLK_LOCAL_MEM_FENCE);
  __assert(A[get_local_id(0)] == A_ghost[get_local_id(0)] + 1000);
}"""


@needs_clspv
def test_array_snapshot_in_a_loop_invariant_and_a_barrier_invariant(tmp_path: Path) -> None:
    # GPUVerify's barrier_invariants/ghost_array: the word moves with the loop variable, and the
    # barrier invariant of the invocation's own id carries it past the barrier
    assert verdict(tmp_path, GHOST_LOOP % "1") == PROVEN
    assert verdict(tmp_path, GHOST_LOOP % "2")[1] >= {"assertion"}


# --- the other invocation in a summarised loop (GPUVerify's lock-step reading) -----------------

LOCKSTEP = """__kernel void k(__global int *A, int n) {
  for (int i = get_global_id(0); __invariant(%s), i < n; i += %s) {
  }
}"""


@needs_clspv
def test_other_invocation_in_a_summarised_loop(tmp_path: Path) -> None:
    # GPUVerify's annotation_tests/test_distinct: at one iteration of both, i of the two differ by
    # their global ids; one that has left the loop is disabled there
    distinct = "__implies(__uniform_bool(__enabled()), __distinct_int(i))"
    assert verdict(tmp_path, LOCKSTEP % (distinct, "1")) == PROVEN
    # a step that differs between the two: no longer apart
    assert verdict(tmp_path, LOCKSTEP % (distinct, "1 + get_global_id(0) % 2"))[1] >= {"assertion"}
    # the other has left the loop first: disabled at this iteration (it was taken as enabled)
    assert verdict(tmp_path, LOCKSTEP % ("__implies(__enabled(), __other_bool(__enabled()))", "1"))[1] >= {"assertion"}
    # two that run in lock-step (the same trip count) are both enabled at every iteration
    assert verdict(tmp_path, LOCKSTEP.replace("int i = get_global_id(0)", "int i = 0")
                   % ("__implies(__enabled(), __other_bool(__enabled()))", "1")) == PROVEN
