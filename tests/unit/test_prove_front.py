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


# --- functions declared without a body: GPUVerify's uninterpreted functions, plain prototypes ---

STUBBED = """
DECLARE_UF_BINARY(f, int, int, int);
int bar(void);
__kernel void k(__global int *A, int n) {
  %s
  if (%s) A[get_global_id(0) + 1] = 0;  /* the next work-item's element: a race when reached */
  A[get_global_id(0)] = 1;
}
"""
STUB_ARGS = [opencl.ArgumentSpec("buffer", "A"), opencl.ArgumentSpec("scalar", "n")]


@needs_clspv
@pytest.mark.parametrize("clean, racy", [
    (("", "f(n, 1) != f(n, 1)"), ("", "f(n, 1) != f(n, 2)")),    # same arguments, same result
    (("", "f(n, get_local_id(0)) != f(n, get_local_id(0))"), ("", "f(get_local_id(0), n) != f(n, get_local_id(0))")),
    (("int x = bar();", "x == 7 && x != 7"), ("", "bar() == 7 && bar() != 7")),  # each call any value
    (("", "0"), ("", "bar() == 7")),
])
def test_functions_without_a_body(tmp_path: Path, clean: tuple[str, str], racy: tuple[str, str]) -> None:
    proven = prove_cl(tmp_path, STUBBED % clean, args=STUB_ARGS)
    assert proven.verdict == "proven", proven
    found = prove_cl(tmp_path, STUBBED % racy, args=STUB_ARGS)
    assert kinds(found) == {"data-race"}, found


@needs_clspv
def test_a_pointer_passed_to_a_function_without_a_body_is_unknown(tmp_path: Path) -> None:
    src = "void baz(__global int *p);\n__kernel void k(__global int *A) { baz(A); A[get_global_id(0)] = 1; }"
    o = prove_cl(tmp_path, src, args=[opencl.ArgumentSpec("buffer", "A")])
    assert o.verdict == "unknown" and "pointer passed to or returned by a function without a body" in (o.reason or ""), o


def test_stubs_found_in_the_source() -> None:
    from kernellab.verify.prove import stubs

    text = ("DECLARE_UF_UNARY(g, unsigned char, unsigned char);\nint3 bar(void);\n__global int * ptr(int x);\n"
            "int defined(int a);\nint defined(int a) { return a; }\n__kernel void k() {\n  return bar();\n  baz(1);\n}\n"
            "/* havoc every variable in modifies(T);\n */ // int commented(void);\n")
    found = {s.name: s for s in stubs.find(text)}
    assert set(found) == {"g", "bar", "ptr"}
    assert found["g"].uninterpreted and found["g"].params == ["unsigned char"] and found["g"].ret == "unsigned char"
    assert not found["bar"].uninterpreted and found["bar"].params == [] and found["bar"].ret == "int3"
    assert found["ptr"].ret.replace(" ", "") == "__globalint*"
    assert stubs.c_width("unsigned char") == 8 and stubs.c_width("unsigned") == 32 and stubs.c_width("int3") is None


def test_boogie_axioms_read_as_z3() -> None:
    import z3
    from conformance import boogie_axioms

    a = z3.Function("A", z3.BitVecSort(32), z3.BitVecSort(32), z3.BitVecSort(32))
    text = ('type T = bv32;\nfunction {:bvbuiltin "bvule"} ULE(T, T) : bool;\n'
            "axiom (forall x, y : T :: { A(x, y) } ULE(x, A(x, y)) && ULE(y, A(x, y)));\n"
            "axiom (forall x : T :: { A(x, 0bv32) } A(x, 0bv32) == x);\n")
    axioms = boogie_axioms.read(text, {"A": a})
    s = z3.Solver()
    x = z3.BitVec("x", 32)
    s.add(*axioms, a(x, 0) != x)
    assert s.check() == z3.unsat
    with pytest.raises(boogie_axioms.BoogieError):
        boogie_axioms.read("procedure p();", {})
    with pytest.raises(boogie_axioms.BoogieError):
        boogie_axioms.read("axiom (forall x : bv32 :: B(x) == x);", {})  # a function it was not given


@needs_clspv
def test_a_pointer_hidden_by_a_typedef_is_caught_by_the_guard(tmp_path: Path) -> None:
    from kernellab import tools

    if tools.find("clang") is None:
        pytest.skip("needs clang (scripts/setup.sh test)")
    src = ("typedef __global int *gp;\nvoid baz(gp p);\n"
           "__kernel void k(__global int *A) { baz(A); A[get_global_id(0)] = 1; }")
    (tmp_path / "k.cl").write_text(src)
    args = [opencl.ArgumentSpec("buffer", "A")]
    compiled = opencl.compile_kernel(tmp_path / "k.cl", "k", "", (64, 1, 1), args)
    launch = opencl.launch(compiled, (256,), (64, 1, 1), args)
    ir = opencl.source_ir(tmp_path / "k.cl", "")
    o = opencl.guarded(engine.prove(compiled.module, launch, timeout=60), ir, compiled.module, "k")
    assert o.verdict == "unknown", o  # clspv inlined baz: the engine sees the marker called directly
    from kernellab.verify.prove import stubs

    assert ir.text is not None and stubs.pointer_stubs(ir.text) == ["baz"]  # the guard's own check
    assert "baz" in (opencl.lost_accesses(ir, compiled.module, "k") or "")


# --- vectors of 8 and 16 components (clspv's -long-vector) -----------------------------------------

@needs_clspv
@pytest.mark.parametrize("vector", ["float8"])
def test_long_vectors(tmp_path: Path, vector: str) -> None:
    src = f"__kernel void k(__global {vector} *p) {{ p[%s] = ({vector})(1); p[get_global_id(0)].s3 = 2; }}"
    args = [opencl.ArgumentSpec("buffer", "p")]
    assert prove_cl(tmp_path, src % "get_global_id(0)", args=args).verdict == "proven"
    assert kinds(prove_cl(tmp_path, src % "get_global_id(0) / 2", args=args)) == {"data-race"}


# --- the conformance script's reading of GPUVerify's switches --------------------------------------

def test_gpuverify_switches_that_change_the_question() -> None:
    from types import SimpleNamespace

    from conformance.gpuverify_prove import annotation_prelude, checked_kinds, kernel_args, row, work_dim

    assert "#define __assert(...) 0" in annotation_prelude({"--only-requires": ""})
    assert "__requires" not in annotation_prelude({"--only-requires": ""})
    assert "#define __requires(...) 0" in annotation_prelude({"--no-annotations": ""})
    assert annotation_prelude({"--invariants-as-candidates": ""}).count("#define") == 2
    assert annotation_prelude({}) == ""
    assert "data-race" not in checked_kinds({"--only-log": ""})
    assert kernel_args({"--kernel-args": "foo,*,0x03"}) == {"foo": [None, (3).to_bytes(4, "little")]}
    assert work_dim({"--local_size": "[4,4]", "--num_groups": "[10,10]"}) == 2
    racy = {"kernels": {"k": {"verdict": "defect", "kinds": ["data-race"]}}}
    benign = SimpleNamespace(id="benign_race_tests/pass/writezero", expectation="pass", options=[])
    assert row(benign, racy)["class"] == "pass: defect (spec-conflict)"
    other = SimpleNamespace(id="misc/pass/misc11", expectation="pass", options=[])
    assert row(other, racy)["class"] == "pass: defect (false alarm)"


# --- async copies: in flight from the call until the wait that names their event ----------------

ASYNC = """
__kernel void k(__global int *p, __global int *q) {
  __local int a[16];
  __local int b[16];
  %s
  event_t e = async_work_group_copy(a, p + 16 * get_group_id(0), 16, 0);
  event_t f = async_work_group_copy(b, q + 16 * get_group_id(0), %s, 0);
  %s
  p[get_global_id(0)] = a[(get_local_id(0) + 1) %% 16];
}
"""
WAIT_BOTH = "event_t both[2] = {e, f}; wait_group_events(2, both); barrier(CLK_LOCAL_MEM_FENCE);"


@needs_clspv
@pytest.mark.parametrize("clean, racy, kind", [
    (("", "16", WAIT_BOTH), ("", "16", ""), "data-race"),                         # never waited for
    (("", "16", WAIT_BOTH), ("", "16", "wait_group_events(1, &f); barrier(CLK_LOCAL_MEM_FENCE);"),
     "data-race"),                                                                 # waits for the other copy only
    (("a[get_local_id(0)] = 0; barrier(CLK_LOCAL_MEM_FENCE);", "16", WAIT_BOTH),
     ("a[get_local_id(0)] = 0;", "16", WAIT_BOTH), "data-race"),                   # a write before the copy, unordered
    (("", "16", WAIT_BOTH), ("", "get_local_id(0) < 8 ? 16 : 8", WAIT_BOTH), "barrier-divergence"),  # other arguments
])
def test_async_copies(tmp_path: Path, clean: tuple[str, str, str], racy: tuple[str, str, str], kind: str) -> None:
    args = [opencl.ArgumentSpec("buffer", "p"), opencl.ArgumentSpec("buffer", "q")]
    proven = prove_cl(tmp_path, ASYNC % clean, local=16, groups=2, args=args)
    assert proven.verdict == "proven", proven
    found = prove_cl(tmp_path, ASYNC % racy, local=16, groups=2, args=args)
    assert kind in kinds(found), found


@needs_clspv
def test_an_event_list_through_a_pointer_is_refused(tmp_path: Path) -> None:
    src = ASYNC % ("", "16", "event_t *l = &e; wait_group_events(1, l); barrier(CLK_LOCAL_MEM_FENCE);")
    from kernellab.spirvsim.module import Unsupported

    (tmp_path / "k.cl").write_text(src)
    with pytest.raises(Unsupported, match="wait_group_events given its events through 'l'"):
        opencl.compile_source(tmp_path / "k.cl", "")


@needs_clspv
@pytest.mark.parametrize("body, verdict", [
    ("int x; __assert(x == 0);", "defect"),         # any value: the assertion can fail
    ("int x = 0; __assert(x == 0);", "proven"),
    ("int x = 0; bar(); __assert(x == 0);", "proven"),  # a stub's own body reads nothing uninitialised
    ("char x; int y; if (x == 'a') y = 1; __assert(y == 1);", "defect"),  # sometimes uninitialised too
    # GPUVerify's predicated_undef: an undefined value written to this invocation's own element
    ("__local int L[64]; int t; if (get_local_id(0) > 0) L[get_local_id(0)] = t;", "proven"),
    ("int *x; __assert(x == 0);", "unknown"),       # a pointer is not given a value
    ("float x; __assert(x == 0.0f);", "unknown"),
])
def test_a_variable_read_before_it_is_written_has_any_value(tmp_path: Path, body: str, verdict: str) -> None:
    from kernellab import tools

    if tools.find("clang") is None:
        pytest.skip("needs clang (scripts/setup.sh test)")
    (tmp_path / "k.cl").write_text(f"int bar(void);\n__kernel void k() {{ {body} }}")
    spirv, ir = opencl.compile_kept(tmp_path / "k.cl", "-Wno-uninitialized", global_offset=True)
    compiled = opencl.load_kernel(spirv, tmp_path / "k.cl", "k", (64, 1, 1), [])
    launch = opencl.launch(compiled, (256,), (64, 1, 1), [])
    o = opencl.guarded(engine.prove(compiled.module, launch, timeout=60), ir, compiled.module, "k")
    assert o.verdict == verdict, o  # clspv folds `x == 0` of an undefined x to true
    if verdict == "defect":
        assert kinds(o) == {"assertion"}
    if verdict == "unknown":
        assert "'x' is read before it is written" in (o.reason or "")


def test_undefined_values_are_given_where_clang_says() -> None:
    from kernellab.verify.prove import undefined

    log = """k.cl:5:10: error: variable 'x' is uninitialized when used here [-Werror,-Wuninitialized]
k.cl:2:8: note: initialize the variable 'x' to silence this warning
fix-it:"k.cl":{40:8-40:8}:" = 0"
k.cl:4:7: error: variable 'z' is used uninitialized whenever 'if' condition is false [-Werror,-Wsometimes-uninitialized]
k.cl:4:3: note: remove the 'if' if its condition is always true
fix-it:"k.cl":{42:3-42:13}:""
k.cl:3:11: note: initialize the variable 'z' to silence this warning
fix-it:"k.cl":{41:11-41:11}:" = 0"
"""
    found = undefined.parse(log)
    assert [(u.line, u.column, u.name, u.fixit) for u in found] == [(2, 8, "x", " = 0"), (3, 11, "z", " = 0")]
    text = "k() {\n  int x;\n  int y, z;\n}"
    assert undefined.initialised(text, found, lambda f: f == "k.cl") == (
        "k() {\n  int x = (__typeof__(x))__kl_undefined();\n  int y, z = (__typeof__(z))__kl_undefined();\n}")
    assert undefined.initialised(text, found, lambda f: False) is None  # in an included file
    pointer = undefined.parse('k.cl:2:8: note: initialize the variable \'p\' to silence this warning\n'
                              'fix-it:"k.cl":{9:8-9:8}:" = NULL"')
    assert undefined.initialised(text, pointer, lambda f: True) is None


# --- a pointer chosen between variables -------------------------------------------------------------

CHOSEN = """
__kernel void k(__global int *p, __global int *q, int x) {
  __global int *r;
  if (x > 4) r = p; else r = q;
  r[%s] = 1;
  q[get_global_id(0)] = r[get_global_id(0)];
}
"""


@needs_clspv
def test_a_pointer_chosen_between_buffers(tmp_path: Path) -> None:
    args = [opencl.ArgumentSpec("buffer", "p"), opencl.ArgumentSpec("buffer", "q"), opencl.ArgumentSpec("scalar", "x")]
    assert prove_cl(tmp_path, CHOSEN % "get_global_id(0)", args=args).verdict == "proven"
    racy = prove_cl(tmp_path, CHOSEN % "get_global_id(0) + 1", args=args)
    assert kinds(racy) == {"data-race"}
    assert {f.resource for f in racy.findings} <= {"p", "q"}  # r[gid + 1] against r[gid], whichever r is
    private = """__kernel void k(__global int *A, int x) {
      int a[4] = {0, 1, 2, 3}, b[4] = {1, 2, 3, 0};
      int *r = x > 4 ? a : b;
      if (r[%s] == 0) A[get_global_id(0) + 1] = 0;
      A[get_global_id(0)] = 1;
    }"""
    args2 = [opencl.ArgumentSpec("buffer", "A"), opencl.ArgumentSpec("scalar", "x")]
    assert prove_cl(tmp_path, private % "1", args=args2).verdict == "proven"   # a[1] = 1, b[1] = 2
    assert kinds(prove_cl(tmp_path, private % "3", args=args2)) == {"data-race"}  # b[3] = 0


# --- an inner loop met again in each iteration of an outer one is summarised once found long -------

NESTED = """
__kernel void k(__global int *out) {
  __local int L[4096];
  for (int i = 0; i < 33; i++)
    for (int j = get_local_id(0); j < 4096; j += %s) L[j] = i;
  out[get_global_id(0)] = 0;
}
"""


@needs_clspv
def test_nested_long_loops(tmp_path: Path) -> None:
    args = [opencl.ArgumentSpec("buffer", "out")]
    clean = prove_cl(tmp_path, NESTED % "64", args=args)
    assert clean.verdict == "proven", clean
    racy = prove_cl(tmp_path, NESTED % "32", args=args)  # j = lid and j = lid + 32 collide
    assert kinds(racy) == {"data-race"}, racy


AFTER_LOOP = """
__kernel void k(__global int *A, int n) {
  int i, j = 0;
  for (i = 0; i < n; i++) { %s }
  %s
  A[get_global_id(0)] = 1;
}
"""
LOOP_ARGS = [opencl.ArgumentSpec("buffer", "A"), opencl.ArgumentSpec("scalar", "n")]


@needs_clspv
def test_what_follows_a_summarised_loop(tmp_path: Path) -> None:
    # a barrier after a loop summarised by invariants is reached by every invocation that enters it
    clean = prove_cl(tmp_path, AFTER_LOOP % ("A[get_global_id(0)] += 1;", "barrier(CLK_GLOBAL_MEM_FENCE);"),
                     args=LOOP_ARGS)
    assert clean.verdict == "proven", clean
    # an assumption after the loop holds where the loop ends: it cannot hide the race at i == 7
    racy = prove_cl(tmp_path, AFTER_LOOP % ("if (i == 7) A[get_global_id(0) + 1] = 0;", "__assume(i == 100);"),
                    args=LOOP_ARGS)
    assert kinds(racy) == {"data-race"}, racy


@needs_clspv
def test_a_defect_found_only_in_a_summarised_loop_is_unknown_in_the_table(tmp_path: Path) -> None:
    from conformance.gpuverify_prove import ABSTRACT_ONLY, prove_test

    # j is n or n + 2 (n, n + 2, n, ...), which no candidate invariant says: the summarised
    # iteration reaches j == n + 1, a race no launch makes
    (tmp_path / "t").mkdir()
    path = tmp_path / "t" / "kernel.cl"
    path.write_text("//pass\n//--local_size=64 --num_groups=2\n__kernel void k(__global int *p, int n) {\n"
                    "  int j = n;\n  for (int i = 0; i < 100; i++) {\n    j = 2 * n + 2 - j;\n"
                    "    if (j == n + 1) p[get_global_id(0) + 1] = 0;\n  }\n  p[get_global_id(0)] = 1;\n}\n")
    r = prove_test(path, 60)
    assert r["kernels"]["k"]["verdict"] == "unknown" and r["kernels"]["k"]["reason"] == ABSTRACT_ONLY, r


@needs_clspv
def test_a_loop_carrying_a_vector(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A, int n) {
      int4 v = (int4)(0);
      for (int i = 0; i < n; i++) { v.y += 1; }
      %s
      A[get_global_id(0)] = v.y;
    }"""
    assert prove_cl(tmp_path, src % "", args=LOOP_ARGS).verdict == "proven"
    racy = prove_cl(tmp_path, src % "if (v.y > 5) A[get_global_id(0) + 1] = 0;", args=LOOP_ARGS)  # n > 5
    assert kinds(racy) == {"data-race"}, racy


# --- clspv modules that break a rule of SPIR-V (verify/prove/repair.py) ----------------------------

ARRAY_PHI = """
__kernel void k(__global float4 *p) {
  __local float4 mine1[64];
  __local float4 mine2[64];
  __local float4 *mine;
  if (get_group_id(0) == 1) mine = mine1; else mine = mine2;
  mine[%s] = p[get_global_id(0)];
}
"""


@needs_clspv
@pytest.mark.parametrize("index, found", [
    ("get_local_id(0)", set()),
    ("get_local_id(0) / 2", {"data-race"}),        # two work-items, one element
    ("get_local_id(0) + 1", {"out-of-bounds"}),    # past the 64th float4 (the element's stride kept)
])
def test_a_phi_of_whole_arrays_is_read_as_their_first_elements(tmp_path: Path, index: str, found: set[str]) -> None:
    """clspv at -O0 merges `mine1` and `mine2` (pointers to whole arrays) in a phi typed as a
    pointer to float4, which spirv-val refuses; the repair makes each an access chain to element 0."""
    o = prove_cl(tmp_path, ARRAY_PHI % index)
    assert kinds(o) == found, o
    assert o.verdict == ("proven" if not found else "defect"), o


LONG_ATOMICS = """
#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable
__kernel void k(__global long *p) {
  atom_add(p, 10);
  %s
}
"""


@needs_clspv
@pytest.mark.parametrize("more, found", [
    ("atom_inc(p + 1);", set()),
    ("p[get_local_id(0) / 64] = 1;", {"data-race"}),  # a plain write beside the atomics
])
def test_64_bit_atomics(tmp_path: Path, more: str, found: set[str]) -> None:
    """clspv declares no Int64Atomics capability for them (spirv-val refuses the module); the
    repair declares it."""
    o = prove_cl(tmp_path, LONG_ATOMICS % more)
    assert kinds(o) == found, o


@needs_clspv
def test_a_module_spirv_val_refuses_is_unknown_with_its_rule(tmp_path: Path) -> None:
    """GPUVerify's null_pointers/null_pointer_assignment: a pointer chosen between a private
    variable and NULL, which clspv writes as a phi missing an incoming block."""
    from kernellab.spirvsim.module import Unsupported

    (tmp_path / "k.cl").write_text("""
__kernel void k(int i) {
  float x = 0;
  float *y;
  if (i) y = &x; else y = 0;
  y[0] = y[0] + 1;
}
""")
    with pytest.raises(Unsupported, match="OpPhi's number of incoming blocks"):
        opencl.compile_source(tmp_path / "k.cl", "")


ATOMIC_CAST = """
__kernel void k(__local %s *A, int B) {
  A[get_local_id(0) + %s] = 42;
  atomic_add((__local int *)(%s), B);
}
"""


@needs_clspv
@pytest.mark.parametrize("element, first, pointer, found", [
    ("short", "2", "A", set()),             # the int at A: A[0] and A[1], which no work-item writes
    ("short", "1", "A", {"data-race"}),     # A[1] written by work-item 0
    ("char", "4", "(__local char *)A + 1", {"data-race"}),  # GPUVerify's displaced: bytes 1..4
    ("char", "5", "(__local char *)A + 1", set()),
])
def test_an_atomic_through_a_cast_pointer(tmp_path: Path, element: str, first: str, pointer: str,
                                          found: set[str]) -> None:
    """GPUVerify's atomics/mismatched_types/int_add_with_short and atomics/displaced: clspv writes
    the 32-bit atomic through the narrower pointer, which spirv-val refuses; the repair makes it a
    marker call the engine reads as the atomic of 4 bytes at the pointer's byte offset."""
    o = prove_cl(tmp_path, ATOMIC_CAST % (element, first, pointer), local=16, groups=1)
    assert kinds(o) == found, o
    assert o.verdict == ("proven" if not found else "defect"), o


FLAGS = """
__kernel void k(__global int *A, int f) {
  __local int L[64];
  L[get_local_id(0)] = A[get_global_id(0)];
  barrier(%s);
  A[get_global_id(0)] = L[(get_local_id(0) + 1) %% 64];
}
"""


@needs_clspv
@pytest.mark.parametrize("flags, found", [
    ("f | CLK_LOCAL_MEM_FENCE", set()),  # whatever f is, the barrier orders __local memory
    ("f", {"data-race"}),                # f = 0 (or CLK_GLOBAL_MEM_FENCE) orders nothing read here
    # work-items of one work-group with different flags (OpenCL C requires the same)
    ("get_local_id(0) == 0 ? CLK_LOCAL_MEM_FENCE : CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE",
     {"barrier-divergence"}),
])
def test_barrier_flags_chosen_at_run_time(tmp_path: Path, flags: str, found: set[str]) -> None:
    """clspv computes the semantics from the flags, which spirv-val refuses (not a constant); the
    repair switches over the values they can take, a barrier with a constant in each case."""
    o = prove_cl(tmp_path, FLAGS % flags)
    assert kinds(o) == found, o
    assert o.verdict == ("proven" if not found else "defect"), o


def test_the_values_barrier_semantics_can_take() -> None:
    """clspv's spelling of barrier(x): a bit of x shifted to each memory's semantics bit, masked,
    or-ed, AcquireRelease (8) added where any is set."""
    from kernellab.verify.prove.barrier_flags import _values
    from kernellab.verify.prove.spirv_edit import (
        OP_BITWISE_AND,
        OP_BITWISE_OR,
        OP_CONSTANT,
        OP_LOAD,
        OP_SELECT,
        OP_SHIFT_LEFT_LOGICAL,
        make,
    )

    uint, x = 1, 2
    c = {v: 100 + v for v in (0, 5, 8, 64, 256)}
    defs = {1: make(21, 1, 32, 0), x: make(OP_LOAD, uint, x, 99)}
    defs.update({cid: make(OP_CONSTANT, uint, cid, v) for v, cid in c.items()})
    defs[10] = make(OP_SHIFT_LEFT_LOGICAL, uint, 10, x, c[5])
    defs[11] = make(OP_BITWISE_AND, uint, 11, 10, c[256])   # 0 or 256
    defs[12] = make(OP_BITWISE_AND, uint, 12, 10, c[64])    # 0 or 64
    defs[13] = make(OP_BITWISE_OR, uint, 13, 11, 12)
    defs[14] = make(OP_BITWISE_OR, uint, 14, 13, c[8])
    defs[15] = make(OP_SELECT, uint, 15, 98, c[0], 14)
    assert _values(defs, 15) == {0, 8, 72, 264, 328}
    assert _values(defs, x) is None  # a loaded value: any
    defs[16] = make(OP_BITWISE_AND, uint, 16, x, x)
    assert _values(defs, 16) is None


@needs_clspv
def test_a_load_of_an_array_declared_twice(tmp_path: Path) -> None:
    """GPUVerify's misc/pass/misc14: a private array with an initialiser passed as int *: clspv
    loads the initialiser through a pointer to one declaration of int[10] as the other (with an
    ArrayStride), which spirv-val refuses; the load is typed as its pointer's pointee."""
    source = """
int bar(int *x) { return x[get_local_id(0)]; }
__kernel void k(__global int *A) {
  int x[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, %s};
  A[bar(x)] = 1;
}
"""
    assert prove_cl(tmp_path, source % "9", local=10, groups=1).verdict == "proven"
    o = prove_cl(tmp_path, source % "8", local=10, groups=1)  # work-items 8 and 9 write A[8]
    assert kinds(o) == {"data-race"}, o


NONTERMINATING = """
__kernel void k(__global int *A) {
  %s
  while (true) {
  }
}
"""


@needs_clspv
def test_a_loop_without_an_exit(tmp_path: Path) -> None:
    """GPUVerify's nonterminating: clspv compiles `while (true) {}` to a block that branches to
    itself without a loop header (spirv-val refuses it), unreachable behind an entry block that
    returns; the repair makes the block a loop header. With a store before the loop clspv leaves
    the store unreachable too: the module does not make it, and that kernel stays unknown."""
    assert prove_cl(tmp_path, NONTERMINATING % "").verdict == "proven"
    from kernellab.spirvsim.module import Unsupported

    (tmp_path / "k.cl").write_text(NONTERMINATING % "A[get_global_id(0) / 2] = 1;")  # a write-write race
    with pytest.raises(Unsupported, match="Back-edges"):
        opencl.compile_source(tmp_path / "k.cl", "")


@needs_clspv
def test_vulkan_only_rules_do_not_stop_a_proof(tmp_path: Path) -> None:
    """GPUVerify's mem_fence: a fence with no memory named is valid SPIR-V, not valid for Vulkan."""
    o = prove_cl(tmp_path, """
__kernel void k(__global int *p) {
  mem_fence(CLK_LOCAL_MEM_FENCE & CLK_GLOBAL_MEM_FENCE);
  p[get_global_id(0)] = 1;
}
""")
    assert o.verdict == "proven", o


# --- OpBitcast between vectors and other shapes (verify/prove/bits.py) ------------------------------

@needs_clspv
@pytest.mark.parametrize("index, found", [
    ("as_uchar4(get_global_id(0) << 8).y", set()),                       # component 1: bits 8..15
    ("as_uchar4(get_global_id(0) << 8).x", {"data-race"}),               # component 0: always 0
    ("as_uint((uchar4)((uchar)get_global_id(0), 1, 2, 3)) & 0xff", set()),
    ("as_uint((uchar4)(1, (uchar)get_global_id(0), 2, 3)) & 0xff", {"data-race"}),
    ("as_ushort2(as_uint((uchar4)(0, 0, (uchar)get_global_id(0), 0))).y", set()),
])
def test_a_bitcast_reads_the_same_bits(tmp_path: Path, index: str, found: set[str]) -> None:
    """Component 0 of a vector holds the lowest bits: a cast read the other way round would
    give each work-item the same element, or a race where there is none."""
    o = prove_cl(tmp_path, f"__kernel void k(__global uint *p) {{ p[{index}] = 1; }}")
    assert kinds(o) == found, o
    assert o.verdict == ("proven" if not found else "defect"), o


def test_reinterpret_splits_and_joins_bits() -> None:
    import z3

    from kernellab.verify.prove import bits

    x = z3.BitVecVal(0x04030201, 32)
    assert [z3.simplify(c).as_long() for c in bits.reinterpret(x, "vector", 8, 4)] == [1, 2, 3, 4]
    parts = tuple(z3.BitVecVal(v, 16) for v in (0x0201, 0x0403))
    assert z3.simplify(bits.reinterpret(parts, "int", 32, 1)).as_long() == 0x04030201
    assert bits.reinterpret(parts, "vector", 8, 3) is None  # 32 bits are not 24
    assert bits.reinterpret(z3.Bool("b"), "int", 1, 1) is None


@needs_clspv
def test_a_struct_holding_a_pointer_is_unknown(tmp_path: Path) -> None:
    """clspv refuses (or crashes on) a pointer stored in memory, which valid OpenCL C may have; one
    the kernel uses as a pointer (not only stores and copies, which pointer_bits compiles as bits:
    tests/unit/test_prove_pointer_members.py): unknown with the reason, not a compile error (exit 2)."""
    from kernellab import tools
    from kernellab.spirvsim.module import Unsupported

    if tools.find("clang") is None:
        pytest.skip("needs clang (scripts/setup.sh test)")
    (tmp_path / "k.cl").write_text("""
struct a { __global int *p; int i; };
__kernel void k(__global struct a *q1, __global struct a *q2) {
  q2[get_global_id(0)].p = q1[get_global_id(0)].p;
  q1[get_global_id(0)].p[0] = 1;
}
""")
    with pytest.raises(Unsupported, match=r"a struct holding a pointer: a pointer member used as a pointer \(line 5\)"):
        opencl.compile_kept(tmp_path / "k.cl", "")
