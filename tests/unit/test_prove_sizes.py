"""``verify --prove --prove-sizes``: the work-group size and count as z3 variables within the
device's limits and what the files fix; kernels that hold for every size proven, defects that
need a particular size found with the sizes in the counterexample; what cannot be encoded over a
symbolic size is unknown; the command's refusals."""
from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from kernellab import tools

z3 = pytest.importorskip("z3", reason="needs z3-solver (pip install kernellab[prove])")

from kernellab.verify.prove import engine, opencl  # noqa: E402
from kernellab.verify.prove import sizes as sz  # noqa: E402

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
needs_clspv = pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv")
needs_glslang = pytest.mark.skipif(tools.find("glslangValidator") is None, reason="needs glslangValidator")

#: a device like Oclgrind (and most GPUs)
LIMITS = sz.Limits((1024, 1024, 64), 1024, (65535, 65535, 65535), "test device")


def prove_cl(tmp: Path, source: str, space: sz.Space | None = None, local: int = 64, groups: int = 4
             ) -> engine.Outcome:
    """``source``'s kernel ``k`` at ``local`` x ``groups`` (1-D), its sizes symbolic in ``space``
    (None: the launch's)."""
    path = tmp / "k.cl"
    path.write_text(source)
    ls = (local, 1, 1)
    compiled = opencl.compile_kernel(path, "k", "", ls, [], work_dim=1)
    launch = opencl.launch(compiled, (local * groups,), ls, [], symbolic_sizes=space is not None)
    if space is not None:
        launch.size_space = space
    return engine.prove(compiled.module, launch, timeout=60)


def prove_glsl(source: str, symbolic: bool = True) -> engine.Outcome:
    from kernellab.spirvsim import glsl_to_spirv
    from kernellab.spirvsim.machine import eval_spec_op
    from kernellab.spirvsim.module import load

    module = load(glsl_to_spirv(source), "main", file="shader.comp", eval_spec_op=eval_spec_op)
    launch = engine.Launch(module.local_size, (4, 1, 1), symbolic_sizes=symbolic)
    launch.size_space = sz.Space(LIMITS)
    launch.buffer_sizes[(0, 0)] = None
    return engine.prove(module, launch, timeout=60)


def kinds(o: engine.Outcome) -> set[str]:
    return {f.kind for f in o.findings}


def one_d(dims: int = 1) -> sz.Space:
    return sz.Space(LIMITS, dims)


REDUCTION = """__kernel void k(__global int *A, __global int *B) {
  __local int L[%s];
  unsigned lid = get_local_id(0);
  L[lid] = A[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (unsigned s = get_local_size(0) / 2; s > 0; s >>= 1) {
    if (lid < s) L[lid] += L[lid + s];
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) B[get_group_id(0)] = L[0];
}
"""


@needs_clspv
def test_size_independent_reduction_is_proven_for_every_size(tmp_path: Path) -> None:
    # the halving loop runs log2 of a symbolic size: unrolled while z3 says it can go on
    assert prove_cl(tmp_path, REDUCTION % "1024", one_d()).verdict == "proven"
    # at the launch's size (64) the smaller array is enough; for some size the device allows, not
    assert prove_cl(tmp_path, REDUCTION % "64").verdict == "proven"
    o = prove_cl(tmp_path, REDUCTION % "64", one_d())
    assert kinds(o) == {"out-of-bounds"}
    for f in o.findings:
        assert f.sizes is not None and 64 < f.sizes[0][0] <= 1024 and f.sizes[0][1:] == (1, 1)


RACE_PAST_64 = """__kernel void k(__global int *A) {
  A[get_group_id(0) * 64 + get_local_id(0)] = get_local_id(0);
}
"""


@needs_clspv
def test_race_that_needs_a_larger_work_group_names_its_sizes(tmp_path: Path) -> None:
    assert prove_cl(tmp_path, RACE_PAST_64).verdict == "proven"  # at the launch's 64
    o = prove_cl(tmp_path, RACE_PAST_64, one_d())
    assert kinds(o) == {"data-race"}
    (race,) = o.findings
    assert race.sizes is not None
    (ls, _, _), (ng, _, _) = race.sizes
    assert ls > 64 and ng >= 2
    # made small for its replay: the least work-group size past 64 and two groups
    assert (ls, ng) == (65, 2)
    for item in race.work_items:  # the ids are those of a launch at these sizes
        assert item["global"][0] == item["group"][0] * ls + item["local"][0]
        assert item["local"][0] < ls and item["group"][0] < ng


@needs_clspv
def test_size_queries_read_the_symbolic_sizes_within_the_limits(tmp_path: Path) -> None:
    src = "__kernel void k(__global int *A) { __assert(%s); }"
    space = one_d()
    assert prove_cl(tmp_path, src % "get_global_size(0) == get_local_size(0) * get_num_groups(0)", space).verdict \
        == "proven"
    assert prove_cl(tmp_path, src % "get_local_size(0) <= 1024", space).verdict == "proven"
    assert kinds(prove_cl(tmp_path, src % "get_local_size(0) <= 1023", space)) == {"assertion"}
    # past the launch's dimensions the sizes stay 1
    assert prove_cl(tmp_path, src % "get_local_size(1) == 1 && get_num_groups(2) == 1", space).verdict == "proven"
    # the defaults allow larger work-groups than Oclgrind
    wide = sz.Space(sz.OPENCL_DEFAULTS, 1)
    o = prove_cl(tmp_path, src % "get_local_size(0) <= 1024", wide)
    assert kinds(o) == {"assertion"} and o.findings[0].sizes is not None
    assert o.findings[0].sizes[0][0] == 1025  # the least size that fails it


@needs_clspv
def test_clspv_size_push_constants_are_the_symbolic_sizes(tmp_path: Path) -> None:
    # OpenCL C 3.0: clspv reads the global size and the counts from built-in push constants
    src = """kernel void k(global int *A) {
      __assert(get_global_size(0) == get_local_size(0) * get_num_groups(0));
      __assert(get_enqueued_local_size(0) == get_local_size(0));
      __assert(get_global_size(0) != %s);
    }"""
    path = tmp_path / "k.cl"
    outcomes = []
    for n in ("24", "0"):
        path.write_text(src % n)
        compiled = opencl.compile_kernel(path, "k", "-cl-std=CL3.0", (8, 1, 1), [], work_dim=1)
        assert {what for what, _, _ in compiled.kernel.builtin_push} >= {"PushConstantGlobalSize",
                                                                       "PushConstantNumWorkgroups"}
        launch = opencl.launch(compiled, (32,), (8, 1, 1), [], symbolic_sizes=True)
        launch.size_space = one_d()
        outcomes.append(engine.prove(compiled.module, launch, timeout=60))
    assert kinds(outcomes[0]) == {"assertion"} and outcomes[0].findings[0].sizes is not None
    (ls, _, _), (ng, _, _) = outcomes[0].findings[0].sizes
    assert ls * ng == 24
    assert outcomes[1].verdict == "proven"


@needs_clspv
def test_what_the_files_fix_bounds_the_sizes(tmp_path: Path) -> None:
    # GPUVerify's --local_size=* --global_size=1024: the size divides 1024
    divides = "__kernel void k(__global int *A) { __assert(1024 %% get_local_size(0) == 0 && %s); }"
    fixed_global = sz.Space(LIMITS, 1, global_=(1024, 1, 1))
    assert prove_cl(tmp_path, divides % "get_global_size(0) == 1024", fixed_global).verdict == "proven"
    assert kinds(prove_cl(tmp_path, divides % "get_local_size(0) != 64", fixed_global)) == {"assertion"}
    # reqd_work_group_size: the kernel fixes its work-group size, only the count is free
    src = """__kernel __attribute__((reqd_work_group_size(16, 1, 1))) void k(__global int *A) {
      __assert(get_local_size(0) == 16);
      if (get_num_groups(0) == 3) A[0] = get_global_id(0);
    }"""
    o = prove_cl(tmp_path, src, one_d(), local=16)
    assert kinds(o) == {"data-race"}
    assert o.findings[0].sizes == ((16, 1, 1), (3, 1, 1))
    # a work-group size the device cannot run: nothing to prove, never "proven"
    big = src.replace("16, 1, 1", "2048, 1, 1").replace("== 16", "== 2048")
    o = prove_cl(tmp_path, big, one_d(), local=2048)
    assert o.verdict == "unknown" and "device's limits" in (o.reason or "")


@needs_glslang
def test_glsl_local_size_id_is_symbolic_and_a_literal_size_is_not() -> None:
    racy_at_48 = """#version 450
layout(local_size_x%s) in;
layout(std430, binding = 0) buffer B { uint a[]; };
void main() {
  if (gl_WorkGroupSize.x == 48u && gl_WorkGroupID == uvec3(0)) a[0] = gl_LocalInvocationID.x;
}"""
    o = prove_glsl(racy_at_48 % "_id = 0")
    assert kinds(o) == {"data-race"}
    assert o.findings[0].sizes == ((48, 1, 1), (1, 1, 1))
    assert prove_glsl(racy_at_48 % "_id = 0", symbolic=False).verdict == "proven"  # the launch's size
    # a size written in the shader is the shader's: no launch has another
    assert prove_glsl(racy_at_48 % " = 64").verdict == "proven"
    linear = """#version 450
layout(local_size_x_id = 0, local_size_y_id = 1) in;
layout(std430, binding = 0) buffer B { uint a[]; };
void main() {
  uvec3 n = gl_NumWorkGroups * gl_WorkGroupSize, g = gl_GlobalInvocationID;
  if (%s) a[(g.z * n.y + g.y) * n.x + g.x] = g.x;
}"""
    assert prove_glsl(linear % "g.y == 0u && g.z == 0u").verdict == "proven"


@needs_clspv
def test_loop_striding_by_the_size_past_the_unrolling_limit_is_unknown(tmp_path: Path) -> None:
    src = """__kernel void k(__global int *A, __global int *B) {
      __local int L[256];
      for (unsigned i = get_local_id(0); i < 256; i += get_local_size(0)) L[i] = B[i];
      barrier(CLK_LOCAL_MEM_FENCE);
      A[get_global_id(0)] = L[get_local_id(0) % 256];
    }"""
    assert prove_cl(tmp_path, src).verdict == "proven"  # at 64: four iterations, unrolled
    o = prove_cl(tmp_path, src, one_d())  # a size of 1 takes 256 iterations
    assert o.verdict == "unknown" and o.line is not None and o.line[1] == 3
    assert "depends on the work-group size" in (o.reason or "") and "i += get_local_size(0)" in (o.reason or "")


@needs_glslang
def test_array_sized_by_the_work_group_is_unknown() -> None:
    src = """#version 450
layout(local_size_x_id = 0) in;
layout(std430, binding = 0) buffer B { uint a[]; };
shared uint s[gl_WorkGroupSize.x];
void main() { s[gl_LocalInvocationID.x] = 1u; }"""
    o = prove_glsl(src)
    assert o.verdict == "unknown" and "array whose length is the work-group size" in (o.reason or "")
    assert prove_glsl(src, symbolic=False).verdict == "proven"


def test_shrink_finds_small_sizes() -> None:
    x, y = z3.BitVecs("x y", 32)
    cons = [z3.UGE(x, 1), z3.UGE(y, 1), z3.ULE(x, 1000), z3.ULE(y, 1000), z3.UGT(x * y, 50), z3.UGE(x, 7)]
    s = z3.Solver()
    s.add(*cons, x == 999, y == 999)
    assert s.check() == z3.sat
    model = sz.shrink(s.model(), cons, [x, y], time.monotonic() + 30)
    got = (model.eval(x).as_long(), model.eval(y).as_long())
    assert got[0] * got[1] > 50 and got[0] >= 7
    assert got == (7, 8)  # the first variable as small as it goes, then the second


# --- the command -------------------------------------------------------------------------------

@pytest.mark.parametrize(("options", "message"), [
    (["--prove-sizes"], "--prove-sizes needs --prove"),
    (["--prove", "--prove-sizes", "--seed", "3"], "--prove-sizes does not take --seed"),
    (["--prove", "--check", "uninitialized"], "--prove does not take --check"),
    (["--prove", "--prove-sizes", "--vulkan"], "--prove-sizes does not take --vulkan"),
    (["--prove", "--subgroup-size", "8"], "--prove does not take --subgroup-size"),
])
def test_bad_combinations_exit_2(options: list[str], message: str, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    from kernellab.cli import main

    (tmp_path / "k.cl").write_text("__kernel void k(__global int *A) { A[get_global_id(0)] = 1; }")
    path = tmp_path / "k.json"
    path.write_text(json.dumps([{"language": "OpenCL", "kernel_file": "k.cl", "entry_point": "k",
                                 "global_size": [64], "local_size": [16],
                                 "kernel_arguments": [{"type": "array", "size": 256}]}]))
    assert main(["verify", *options, str(path)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err



@needs_glslang
def test_size_constraints_are_the_limits_and_what_is_fixed() -> None:
    from kernellab.spirvsim import glsl_to_spirv
    from kernellab.spirvsim.machine import eval_spec_op
    from kernellab.spirvsim.module import load

    source = "#version 450\nlayout(local_size_x_id = 0, local_size_y_id = 1, local_size_z_id = 2) in;\nvoid main() {}"
    module = load(glsl_to_spirv(source), "main", file="s.comp", eval_spec_op=eval_spec_op)

    def ok(limits: sz.Limits, sizes: tuple[int, ...], counts: tuple[int, ...], **fixed: object) -> bool:
        sym = sz.symbolic(module, sz.Space(limits, **fixed))  # type: ignore[arg-type]
        s = z3.Solver()
        s.add(*sym.constraints, *[v == x for v, x in zip(sym.local + sym.groups, sizes + counts)])
        return s.check() == z3.sat

    assert ok(LIMITS, (1024, 1, 1), (65535, 1, 1)) and ok(LIMITS, (16, 8, 8), (3, 5, 7))
    assert not ok(LIMITS, (1025, 1, 1), (1, 1, 1))  # maxComputeWorkGroupSize
    assert not ok(LIMITS, (1, 1, 65), (1, 1, 1))
    assert not ok(LIMITS, (32, 32, 2), (1, 1, 1))  # maxComputeWorkGroupInvocations
    assert not ok(LIMITS, (1, 1, 1), (65536, 1, 1))  # maxComputeWorkGroupCount
    assert not ok(LIMITS, (0, 1, 1), (1, 1, 1)) and not ok(LIMITS, (1, 1, 1), (1, 0, 1))
    wide = sz.Limits((70000, 70000, 70000), 70000, None)  # products past 32 bits, no count limit
    assert ok(wide, (70000, 1, 1), (61356, 1, 1))
    assert not ok(wide, (70000, 1, 1), (61357, 1, 1))  # an id past 2**32
    assert not ok(wide, (300, 300, 1), (1, 1, 1))
    # what a launch or a file fixes
    assert not ok(LIMITS, (64, 2, 1), (1, 1, 1), dims=1) and not ok(LIMITS, (64, 1, 1), (1, 1, 2), dims=2)
    assert ok(LIMITS, (64, 1, 1), (16, 1, 1), global_=(1024, None, None))
    assert not ok(LIMITS, (64, 1, 1), (8, 1, 1), global_=(1024, None, None))
    assert not ok(LIMITS, (32, 1, 1), (2, 1, 1), local=(64, None, None))
    assert not ok(LIMITS, (64, 1, 1), (2, 1, 1), groups=(3, None, None))
