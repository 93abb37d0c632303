"""Structs holding pointers under ``verify --prove`` (issue 22; GPUVerify's ``test_part_load_store``):
a pointer member the kernel only stores and copies is compiled as bits
(:mod:`kernellab.verify.prove.pointer_bits`), each shape with a racy twin; a member used as a
pointer stays ``unknown``."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from tests.unit.test_prove_engine import kinds, needs_clspv  # noqa: E402

from kernellab import tools  # noqa: E402
from kernellab.verify.prove import engine, opencl, pointer_bits  # noqa: E402

needs_clang = pytest.mark.skipif(tools.find("clang") is None, reason="needs clang (scripts/setup.sh test)")

STRUCT = "struct a { __global int *p%s; int i; };\n"


def prove_kept(tmp: Path, source: str, nargs: int) -> engine.Outcome:
    """The proof of ``k`` as ``verify --prove`` makes it: clspv's module, then the access guard
    against the source's own IR."""
    path = tmp / "k.cl"
    path.write_text(source)
    args = [opencl.ArgumentSpec("buffer", f"arg{k}") for k in range(nargs)]
    spirv, ir = opencl.compile_kept(path, "")
    compiled = opencl.load_kernel(spirv, path, "k", (64, 1, 1), args)
    launch = opencl.launch(compiled, (256,), (64, 1, 1), args)
    return opencl.guarded(engine.prove(compiled.module, launch, timeout=60), ir, compiled.module, "k")


@needs_clspv
@needs_clang
@pytest.mark.parametrize("clean, racy", [
    # a copy between two buffers of such structs, beside the int member
    ("q2[get_global_id(0)].i = q1[get_global_id(0)].i; q2[get_global_id(0)].p = q1[get_global_id(0)].p;",
     "q2[get_global_id(0)].i = q1[get_global_id(0)].i; q2[get_global_id(0) / 2].p = q1[get_global_id(0)].p;"),
    # a store of a pointer
    ("q2[get_global_id(0)].p = p + get_global_id(0); q2[get_global_id(0)].i = 42;",
     "q2[get_global_id(0) / 2].p = p + get_global_id(0); q2[get_global_id(0)].i = 42;"),
])
def test_a_pointer_member_stored_and_copied(tmp_path: Path, clean: str, racy: str) -> None:
    head = STRUCT % "" + "__kernel void k(__global int *p, __global struct a *q1, __global struct a *q2) {\n"
    ok = prove_kept(tmp_path, head + clean + "\n}\n", 3)
    assert ok.verdict == "proven", ok
    bad = prove_kept(tmp_path, head + racy + "\n}\n", 3)
    assert bad.verdict == "defect" and kinds(bad) == {"data-race"}, bad


@needs_clspv
@needs_clang
def test_an_array_of_pointers_member(tmp_path: Path) -> None:
    head = STRUCT % "[5]" + "__kernel void k(__global int *p, __global struct a *q) {\n"
    ok = prove_kept(tmp_path, head + "q[get_global_id(0)].p[3] = p; q[get_global_id(0)].i = 1;\n}\n", 2)
    assert ok.verdict == "proven", ok
    bad = prove_kept(tmp_path, head + "q[get_global_id(0)].p[3] = p; q[get_global_id(0) / 2].p[1] = p;\n}\n", 2)
    assert bad.verdict == "defect" and kinds(bad) == {"data-race"}, bad


@needs_clspv
@needs_clang
@pytest.mark.parametrize("body, use", [
    ("*q[get_global_id(0)].p = 1;", "used as a pointer"),
    ("__global int *r = q[get_global_id(0)].p; r[0] = 1;", "used as a pointer"),
    ("struct a x = {p, 1}; q[get_global_id(0)] = x;", "initialiser list"),
    ("__global int *r; r = (q[get_global_id(0)].p = p); r[0] = 1;", "value is used"),
])
def test_a_pointer_member_used_as_a_pointer_is_unknown(tmp_path: Path, body: str, use: str) -> None:
    """Where the member's value matters as a pointer, the bits would not do: unknown with the use
    and its line, never a compile error (exit 2) nor a proof."""
    from kernellab.spirvsim.module import Unsupported

    (tmp_path / "k.cl").write_text(STRUCT % "" + "__kernel void k(__global int *p, __global struct a *q) {\n"
                                   + body + "\n}\n")
    with pytest.raises(Unsupported, match=rf"a struct holding a pointer: .*{use}.*\(line 3\)"):
        opencl.compile_kept(tmp_path / "k.cl", "")


def test_pointer_types_read_from_clang() -> None:
    assert pointer_bits.pointer_suffix("__global int *") == ""
    assert pointer_bits.pointer_suffix("__global int *[5]") == "[5]"
    assert pointer_bits.pointer_suffix("__local float *const") == ""
    assert pointer_bits.pointer_suffix("int (*)(int)") is None  # a function pointer: refused
    assert pointer_bits.pointer_suffix("int (*)[4]") is None


@needs_clspv
@needs_clang
def test_a_stored_pointer_is_any_value(tmp_path: Path) -> None:
    """The bits a store writes are not clspv's made-up address (a constant): a kernel that reads
    them back as an integer and branches on them is not proven race-free by a folded branch."""
    head = "struct a { __global int *p; };\n__kernel void k(__global int *p, __global struct a *q, " \
           "__global ulong *w) {\n"
    body = ("q[get_global_id(0)].p = p;\n"
            "if (((__global ulong *)q)[get_global_id(0)] == 12345) w[0] = get_global_id(0);\n}\n")
    bad = prove_kept(tmp_path, head + body, 3)
    assert bad.verdict == "defect" and kinds(bad) == {"data-race"}, bad


# --- a struct holding a pointer passed by value (pointer_arguments) --------------------------------

ARGUMENT = "struct s { __global int *p; int n; };\n__kernel void k(__global int *p, struct s q) {\n%s\n}\n"


@needs_clspv
@needs_clang
@pytest.mark.parametrize("clean, racy", [
    # GPUVerify's use_ptr_element: a precondition pins the pointer to a parameter
    ("__requires(q.p == p); p[get_global_id(0)] = q.p[get_global_id(0)];",
     "__requires(q.p == p); p[get_global_id(0)] = q.p[get_global_id(0) + 1];"),
    # store_ptr_element: the kernel sets it before reading it
    ("q.p = p; q.p[get_global_id(0)] = 5;", "q.p = p; q.p[get_global_id(0) / 2] = 5;"),
    # the other members are the host's (any value): n = 1 makes every item write p[0]
    ("q.p = p; q.p[get_global_id(0) * (q.n | 1)] = 5;", "q.p = p; q.p[get_global_id(0) % q.n] = 5;"),
])
def test_a_struct_argument_holding_a_pointer(tmp_path: Path, clean: str, racy: str) -> None:
    ok = prove_kept(tmp_path, ARGUMENT % clean, 2)
    assert ok.verdict == "proven", ok
    bad = prove_kept(tmp_path, ARGUMENT % racy, 2)
    assert bad.verdict == "defect" and kinds(bad) == {"data-race"}, bad


@needs_clspv
@needs_clang
@pytest.mark.parametrize("body, why", [
    ("p[get_global_id(0)] = q.p[get_global_id(0)];", "reads before it sets it"),  # the host's pointer
    ("p[0] = 1; __requires(q.p == p); q.p[get_global_id(0)] = 1;", "reads before it sets it"),
    ("__requires(q.p == p + 1); q.p[get_global_id(0)] = 1;", "reads before it sets it"),
    ("struct s r = q; r.p[get_global_id(0)] = 1;", "used whole"),
])
def test_a_struct_argument_pointer_the_host_gave_is_unknown(tmp_path: Path, body: str, why: str) -> None:
    from kernellab.spirvsim.module import Unsupported

    (tmp_path / "k.cl").write_text(ARGUMENT % body)
    with pytest.raises(Unsupported, match=rf"a struct holding a pointer: .*{why}"):
        opencl.compile_kept(tmp_path / "k.cl", "")


@needs_clspv
@needs_clang
def test_an_unused_read_beside_a_pointer_member_is_kept(tmp_path: Path) -> None:
    """clspv deletes the unused read; the build with every access volatile is rewritten as well,
    and keeps it: its race with the neighbour's write is found, not proven away."""
    src = (STRUCT % "" + "__kernel void k(__global struct a *q1, __global struct a *q2) {\n"
           "  int x = q1[get_global_id(0) + 1].i;\n"
           "  q2[get_global_id(0)].p = q1[get_global_id(0)].p;\n"
           "  q1[get_global_id(0)].i = 3;\n}\n")
    bad = prove_kept(tmp_path, src, 2)
    assert bad.verdict == "defect" and kinds(bad) == {"data-race"}, bad


@needs_clspv
@needs_clang
def test_a_pointer_member_stored_under_an_if_and_a_loop(tmp_path: Path) -> None:
    head = STRUCT % "" + "__kernel void k(__global int *p, __global struct a *q) {\n"
    body = ("if (get_global_id(0) %% 2) q[%s].p = p; else q[get_global_id(0)].p = 0;\n"
            "for (int j = 0; j < 2; j++) q[get_global_id(0)].p = p + j;\n}\n")
    ok = prove_kept(tmp_path, head + body % "get_global_id(0)", 2)
    assert ok.verdict == "proven", ok
    bad = prove_kept(tmp_path, head + body % "get_global_id(0) - 1", 2)
    assert bad.verdict == "defect" and kinds(bad) == {"data-race"}, bad
