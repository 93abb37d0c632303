"""The proof engine's encoding (``verify --prove``): for each defect kind a kernel that has it and
a clean twin, in OpenCL C (clspv -O0) and GLSL (glslang); wrap-around arithmetic; loops (unrolled,
and one that needs an invariant: unknown, never proven); annotations; unmodelled constructs."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernellab import tools

z3 = pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from kernellab.verify.prove import engine, opencl  # noqa: E402
from kernellab.verify.prove import sizes as size_space  # noqa: E402

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
HAS_GLSLANG = tools.find("glslangValidator") is not None
needs_clspv = pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv")
needs_glslang = pytest.mark.skipif(not HAS_GLSLANG, reason="needs glslangValidator")


def prove_cl(tmp: Path, source: str, local: int = 64, groups: int = 4,
             args: list[opencl.ArgumentSpec] | None = None, timeout: float = 60) -> engine.Outcome:
    path = tmp / "k.cl"
    path.write_text(source)
    ls = (local, 1, 1)
    compiled = opencl.compile_kernel(path, "k", "", ls, args or [])
    launch = opencl.launch(compiled, (local * groups,), ls, args or [])
    return engine.prove(compiled.module, launch, timeout=timeout)


def prove_glsl(source: str, groups: int = 4, buffer_bytes: int | None = 4096, push: bytes | None = None
               ) -> engine.Outcome:
    from kernellab.spirvsim import glsl_to_spirv
    from kernellab.spirvsim.machine import eval_spec_op
    from kernellab.spirvsim.module import load

    module = load(glsl_to_spirv(source), "main", file="shader.comp", eval_spec_op=eval_spec_op)
    launch = engine.Launch(module.local_size, (groups, 1, 1))
    launch.buffer_sizes[(0, 0)] = buffer_bytes
    if push is not None:
        launch.fixed["push"] = dict(enumerate(push))
    return engine.prove(module, launch, timeout=60)


def kinds(o: engine.Outcome) -> set[str]:
    return {f.kind for f in o.findings}


# --- OpenCL C ----------------------------------------------------------------------------------

LOCAL_RACE = """
__kernel void k(__global int *A) {
  __local int L[64];
  L[get_local_id(0)] = A[get_global_id(0)];
  %s
  A[get_global_id(0)] = L[(get_local_id(0) + 1) %% 64];
}
"""


@needs_clspv
def test_opencl_local_race_and_its_barrier(tmp_path: Path) -> None:
    racy = prove_cl(tmp_path, LOCAL_RACE % "")
    assert racy.verdict == "defect" and kinds(racy) == {"data-race"}
    race = racy.findings[0]
    a, b = race.work_items
    assert a["group"] == b["group"] and a["local"] != b["local"]  # a workgroup-memory race needs one group
    assert race.address_space == "workgroup"
    clean = prove_cl(tmp_path, LOCAL_RACE % "barrier(CLK_LOCAL_MEM_FENCE);")
    assert clean.verdict == "proven", clean


@needs_clspv
def test_opencl_global_race_across_groups_needs_a_global_fence(tmp_path: Path) -> None:
    # each group writes A[local id]: groups collide whatever the barrier
    src = "__kernel void k(__global int *A) { A[get_local_id(0)] = get_group_id(0); }"
    o = prove_cl(tmp_path, src)
    assert kinds(o) == {"data-race"}
    assert o.findings[0].work_items[0]["group"] != o.findings[0].work_items[1]["group"]
    assert prove_cl(tmp_path, "__kernel void k(__global int *A) { A[get_global_id(0)] = 1; }").verdict == "proven"


@needs_clspv
def test_opencl_barrier_divergence(tmp_path: Path) -> None:
    src = "__kernel void k(__global int *A) { if (get_local_id(0) < %s) barrier(CLK_LOCAL_MEM_FENCE); }"
    assert kinds(prove_cl(tmp_path, src % "32")) == {"barrier-divergence"}
    assert prove_cl(tmp_path, src % "1000").verdict == "proven"  # every invocation reaches it


@needs_clspv
def test_opencl_out_of_bounds_for_some_scalar(tmp_path: Path) -> None:
    # in bounds for n <= 0 only: a launch with n = 0 shows nothing, the proof finds n > 0
    src = """__kernel void k(__global int *A, int n) {
      __local int L[64];
      L[get_local_id(0)] = 0;
      barrier(CLK_LOCAL_MEM_FENCE);
      if (n > 0) A[get_global_id(0)] = L[get_local_id(0) + 1];
    }"""
    args = [opencl.ArgumentSpec("buffer", "A", size=4096), opencl.ArgumentSpec("scalar", "n")]
    o = prove_cl(tmp_path, src, args=args)
    assert kinds(o) == {"out-of-bounds"}
    assert int.from_bytes(bytes(o.findings[0].push_bytes[k] for k in range(4)), "little", signed=True) > 0
    args[1].value = (0).to_bytes(4, "little")
    assert prove_cl(tmp_path, src, args=args).verdict == "proven"


@needs_clspv
def test_opencl_sized_buffer_bound_and_wrap_around(tmp_path: Path) -> None:
    # i * 4 wraps mod 2^32 for i >= 2^30: the check `i * 4 < n` does not keep i in bounds
    src = """__kernel void k(__global int *A, unsigned i, unsigned n) {
      if (i * 4u < n && get_global_id(0) == 0) A[i] = 1;
    }"""
    args = [opencl.ArgumentSpec("buffer", "A", size=4096), opencl.ArgumentSpec("scalar", "i"),
            opencl.ArgumentSpec("scalar", "n", value=(4096).to_bytes(4, "little"))]
    o = prove_cl(tmp_path, src, args=args)
    assert kinds(o) == {"out-of-bounds"}
    i = int.from_bytes(bytes(o.findings[0].push_bytes.get(k, 0) for k in range(4)), "little")
    assert i >= 1 << 30  # only wrap-around lets it through
    clean = src.replace("i * 4u < n", "i < n / 4u")
    assert prove_cl(tmp_path, clean, args=args).verdict == "proven"


@needs_clspv
def test_opencl_constant_loop_unrolled_exactly(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A) {
      for (int j = 0; j < %s; j++) A[get_global_id(0) * 4 + j] = j;
    }"""
    assert prove_cl(tmp_path, src % "4").verdict == "proven"
    assert kinds(prove_cl(tmp_path, src % "5")) == {"data-race"}  # j = 4 reaches the next invocation's


@needs_clspv
def test_opencl_strided_loop_proven_with_inferred_invariants(tmp_path: Path) -> None:
    # j = gid + k * global size: only the invariant (j - gid) % global size == 0 separates invocations
    src = """__kernel void k(__global int *A, int n) {
      for (int j = get_global_id(0); j < n; j += %s) A[j] = j;
    }"""
    assert prove_cl(tmp_path, src % "get_global_size(0)").verdict == "proven"
    # ~15 s on an idle core; the concrete search gets a third of what is left of the limit, so a
    # loaded machine (the whole suite beside other jobs) needs room to find it
    racy = prove_cl(tmp_path, src % "1", timeout=240)
    assert kinds(racy) == {"data-race"}
    # found in the summarised loop, then again among the iterations unrolled before it (exact):
    # a concrete counterexample (invocation g's second iteration writes A[g + 1])
    assert not any(c.abstract for c in racy.findings)


@needs_clspv
def test_opencl_loop_with_barrier_and_symbolic_bound_is_summarised(tmp_path: Path) -> None:
    # summarised with its barrier phases (tests/unit/test_prove_barrier_loops.py has the defects)
    src = """__kernel void k(__global int *A, int n) {
      __local int L[64];
      for (int j = 0; j < n; j++) { L[get_local_id(0)] = j; barrier(CLK_LOCAL_MEM_FENCE); }
    }"""
    assert prove_cl(tmp_path, src).verdict == "proven"


@needs_clspv
def test_opencl_annotations(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A, int n) {
      __requires(n < 100);
      for (int j = 0; __invariant(j <= 4), j < 4; j++) A[get_global_id(0) * 4 + j] = n;
      __assert(n < %s);
    }"""
    failing = prove_cl(tmp_path, src % "50")
    assert kinds(failing) == {"assertion"}
    n = int.from_bytes(bytes(failing.findings[0].push_bytes[k] for k in range(4)), "little", signed=True)
    assert 50 <= n < 100  # the precondition holds in the counterexample
    assert prove_cl(tmp_path, src % "100").verdict == "proven"
    wrong_invariant = src.replace("j <= 4", "j < 4") % "100"  # false at the last head evaluation
    assert kinds(prove_cl(tmp_path, wrong_invariant)) == {"assertion"}


@needs_clspv
def test_opencl_unmodelled_annotation_is_unknown(tmp_path: Path) -> None:
    o = prove_cl(tmp_path, "__kernel void k(__global int *A) { __assert(__equal_floats(1.0f, 1.0f)); }")
    assert o.verdict == "unknown" and "__equal_floats" in (o.reason or "")


@needs_clspv
def test_opencl_symbolic_number_of_groups(tmp_path: Path) -> None:
    src = "__kernel void k(__global int *A) { if (get_num_groups(0) != 4) A[0] = get_global_id(0); }"
    path = tmp_path / "k.cl"
    path.write_text(src)
    compiled = opencl.compile_kernel(path, "k", "", (8, 1, 1), [])
    fixed = opencl.launch(compiled, (32,), (8, 1, 1), [])
    assert engine.prove(compiled.module, fixed).verdict == "proven"
    symbolic = opencl.launch(compiled, (32,), (8, 1, 1), [], symbolic_sizes=True)
    symbolic.size_space = size_space.Space(local=(8, 1, 1))  # the local size fixed (GPUVerify's --num_groups=*)
    o = engine.prove(compiled.module, symbolic)
    assert kinds(o) == {"data-race"}
    sizes = o.findings[0].sizes
    assert sizes is not None and sizes[0] == (8, 1, 1) and sizes[1][0] != 4


@needs_clspv
def test_opencl_async_copy_is_modelled_not_lowered(tmp_path: Path) -> None:
    # clspv lowers the copy to plain code done at once; the proof keeps it in flight until the wait
    src = """__kernel void k(__global int *A) {
      __local int L[64];
      event_t e = async_work_group_copy(L, A, 64, 0);
      A[get_local_id(0)] = 1;  /* writes the copy's source while it is in flight */
      wait_group_events(1, &e);
    }"""
    assert kinds(prove_cl(tmp_path, src)) == {"data-race"}


@needs_clspv
def test_opencl_vector_component_chosen_at_run_time(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A, int c) {
      int4 v = (int4)(0, 1, 2, %s);
      A[get_global_id(0) * 4 + v[(c + get_global_id(0)) & 3]] = 1;
    }"""
    assert prove_cl(tmp_path, src % "3").verdict == "proven"
    assert kinds(prove_cl(tmp_path, src % "4")) == {"data-race"}  # index 4 is the next invocation's 0


# --- GLSL ---------------------------------------------------------------------------------------

GLSL = """#version 450
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) buffer Data { int data[]; };
layout(push_constant) uniform Push { int n; } pc;
shared int sh[64];
%s
void main() {
  uint lid = gl_LocalInvocationID.x, gid = gl_GlobalInvocationID.x;
  %s
}
"""


@needs_glslang
def test_glsl_shared_race_and_barrier() -> None:
    body = "sh[lid] = data[gid]; %s data[gid] = sh[(lid + 1u) %% 64u];"
    assert kinds(prove_glsl(GLSL % ("", body % ""))) == {"data-race"}
    assert prove_glsl(GLSL % ("", body % "barrier();")).verdict == "proven"


@needs_glslang
def test_glsl_barrier_alone_does_not_order_buffer_accesses() -> None:
    # barrier() has WorkgroupMemory semantics only (docs/verify-vulkan.md): the buffer read of the
    # neighbour's element races within the work-group unless memoryBarrierBuffer() joins it
    body = "data[gid] = 1; %s int v = data[gid ^ 1u]; sh[lid] = v;"
    assert kinds(prove_glsl(GLSL % ("", body % "barrier();"), groups=1)) == {"data-race"}
    assert prove_glsl(GLSL % ("", body % "memoryBarrierBuffer(); barrier();"), groups=1).verdict == "proven"


@needs_glslang
def test_glsl_divergence_and_out_of_bounds() -> None:
    assert kinds(prove_glsl(GLSL % ("", "if (lid < uint(pc.n)) barrier();"))) == {"barrier-divergence"}
    assert prove_glsl(GLSL % ("", "if (pc.n > 0) barrier();")).verdict == "proven"  # uniform condition
    oob = prove_glsl(GLSL % ("", "data[gid] = sh[lid + uint(pc.n)];"))
    assert "out-of-bounds" in kinds(oob)
    assert prove_glsl(GLSL % ("", "sh[lid] = 1; barrier(); data[gid] = sh[lid];"), buffer_bytes=1024).verdict \
        == "proven"
    # the buffer is 4 work-groups of 64 ints: one byte less and the last invocation writes past it
    assert kinds(prove_glsl(GLSL % ("", "data[gid] = 1;"), buffer_bytes=1023)) == {"out-of-bounds"}


@needs_glslang
def test_glsl_private_array_and_annotation() -> None:
    decls = "bool __kl_assert(bool c) { return c; }\nbool __kl_requires(bool c) { return c; }"
    body = """__kl_requires(pc.n >= 0 && pc.n < 8);
      int a[8];
      for (int i = 0; i < 8; i++) a[i] = i * 2;
      __kl_assert(a[pc.n] %s);
      data[gid] = a[pc.n];"""
    assert prove_glsl(GLSL % (decls, body % "== 2 * pc.n")).verdict == "proven"
    assert kinds(prove_glsl(GLSL % (decls, body % "< 14"))) == {"assertion"}


@needs_glslang
def test_glsl_unsupported_instruction_is_unknown_with_its_line() -> None:
    src = GLSL.replace("#version 450", "#version 450\n#extension GL_KHR_shader_subgroup_basic : require")
    o = prove_glsl(src % ("", "subgroupBarrier(); data[gid] = 1;"))
    assert o.verdict == "unknown" and o.line is not None


@needs_clspv
def test_counterexample_names_the_index_bytes_that_make_the_race(tmp_path: Path) -> None:
    src = "__kernel void k(__global int *A, __global const int *idx) { A[idx[get_global_id(0)]] = 1; }"
    args = [opencl.ArgumentSpec("buffer", "A"), opencl.ArgumentSpec("buffer", "idx", size=1024)]
    o = prove_cl(tmp_path, src, local=4, groups=2, args=args)
    assert kinds(o) == {"data-race"}
    c = o.findings[0]
    (data,) = c.buffer_bytes.values()
    a, b = (w["global"][0] for w in c.work_items)

    def index(i: int) -> int:
        return int.from_bytes(bytes(data[4 * i + k] for k in range(4)), "little")

    assert a != b and index(a) == index(b)  # two invocations given the same index: the race
