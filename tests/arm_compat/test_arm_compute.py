"""Compute dispatches: element types, GLSL and SPIR-V sources, entry points, build options,
include folders, descriptor sets, workgroup geometry, chained dispatches and the run flags.

Covers what Arm's own shader tests exercise (element-wise add over 10 elements with three
bindings spread over two descriptor sets, int8/uint/float elements, a custom SPIR-V entry point,
chained dispatches, build options, robustness features, --repeat), with our own shaders.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from arm_compat.arm_compat_helpers import Case, Expect, buffer, dispatch, shader

N = 10

# Element-wise sum over N elements; a and b in set 0, the result in set 1 at binding 2, so a
# runner must create two descriptor set layouts and honour binding numbers that skip ahead.
SUM_GLSL = """#version 450
#extension GL_EXT_shader_explicit_arithmetic_types : require
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer Lhs { ELEMENT lhs[]; };
layout(set = 0, binding = 1) readonly buffer Rhs { ELEMENT rhs[]; };
layout(set = 1, binding = 2) writeonly buffer Sum { ELEMENT total[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    total[i] = lhs[i] + rhs[i];
}
"""

ELEMENTS = {
    "float": np.float32,
    "int8_t": np.int8,
    "uint": np.uint32,
    "int16_t": np.int16,
    "int64_t": np.int64,
}


def _random(rng: np.random.Generator, dtype: type, n: int = N) -> np.ndarray:
    if np.issubdtype(dtype, np.floating):
        return rng.uniform(-100, 100, n).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def _sum_case(case: Case, rng: np.random.Generator, element: str, source: str) -> np.ndarray:
    dtype = ELEMENTS[element]
    lhs = case.save("lhs.npy", _random(rng, dtype))
    rhs = case.save("rhs.npy", _random(rng, dtype))
    nbytes = lhs.nbytes
    if source == "SPIR-V":
        case.glsl_to_spirv(SUM_GLSL, "sum.spv", defines=[f"ELEMENT={element}"])
        sh = shader("sum", "sum.spv")
    else:
        case.text("sum.comp", SUM_GLSL)
        sh = shader("sum", "sum.comp", "GLSL", build_options=f"-DELEMENT={element}")
    case.scenario(
        [sh,
         buffer("lhs", nbytes, "readonly", src="lhs.npy"),
         buffer("rhs", nbytes, "readonly", src="rhs.npy"),
         buffer("total", nbytes, "writeonly", dst="total.npy")],
        [dispatch("sum", [N], [(0, 0, "lhs"), (0, 1, "rhs"), (1, 2, "total")])])
    with np.errstate(over="ignore"):
        return lhs + rhs  # integer sums wrap, as they do on the device


@pytest.mark.parametrize("element", list(ELEMENTS))
def test_sum_of_two_buffers_from_spirv(case: Case, rng: np.random.Generator, element: str) -> None:
    # int8_t: 10-byte buffers, not a multiple of 4
    expected = _sum_case(case, rng, element, "SPIR-V")
    case.run_both({"total.npy": expected})


@pytest.mark.parametrize("element", ["float", "int8_t"])
def test_sum_of_two_buffers_from_glsl_with_build_options(case: Case, rng: np.random.Generator, element: str) -> None:
    expected = _sum_case(case, rng, element, "GLSL")
    case.run_both({"total.npy": expected})


def test_robustness_features_flag(case: Case, rng: np.random.Generator) -> None:
    expected = _sum_case(case, rng, "float", "SPIR-V")
    case.run_both({"total.npy": expected}, args=["--enable-robustness-features"])


def test_spirv_entry_point_other_than_main(case: Case, rng: np.random.Generator) -> None:
    lhs = case.save("lhs.npy", _random(rng, np.int32))
    rhs = case.save("rhs.npy", _random(rng, np.int32))
    case.glsl_to_spirv(SUM_GLSL, "sum_custom.spv", entry="elementwise_sum", defines=["ELEMENT=int"])
    case.scenario(
        [shader("sum", "sum_custom.spv", entry="elementwise_sum"),
         buffer("lhs", 40, "readonly", src="lhs.npy"),
         buffer("rhs", 40, "readonly", src="rhs.npy"),
         buffer("total", 40, "writeonly", dst="total.npy")],
        [dispatch("sum", [N], [(0, 0, "lhs"), (0, 1, "rhs"), (1, 2, "total")])])
    with np.errstate(over="ignore"):
        case.run_both({"total.npy": lhs + rhs})


def test_chained_dispatches_read_previous_result(case: Case, rng: np.random.Generator) -> None:
    # The second dispatch reads what the first wrote: the implicit barrier (default on) orders them.
    lhs = case.save("lhs.npy", _random(rng, np.float32))
    rhs = case.save("rhs.npy", _random(rng, np.float32))
    case.glsl_to_spirv(SUM_GLSL, "sum.spv", defines=["ELEMENT=float"])
    case.scenario(
        [shader("sum", "sum.spv"),
         buffer("lhs", 40, "readonly", src="lhs.npy"),
         buffer("rhs", 40, "readonly", src="rhs.npy"),
         buffer("once", 40, dst="once.npy"),
         buffer("twice", 40, dst="twice.npy")],
        [dispatch("sum", [N], [(0, 0, "lhs"), (0, 1, "rhs"), (1, 2, "once")]),
         dispatch("sum", [N], [(0, 0, "once"), (0, 1, "rhs"), (1, 2, "twice")])])
    case.run_both({"once.npy": lhs + rhs, "twice.npy": (lhs + rhs) + rhs})


SCALE_GLSL = """#version 450
#extension GL_GOOGLE_include_directive : require
#include "scale_params.h"
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    float v = src[i] + float(OFFSET);
#ifdef HALVE
    v *= HALF;
#endif
    dst[i] = v;
}
"""


@pytest.mark.parametrize("options, halve", [("-DOFFSET=10.0 -DHALVE", True), ("-DOFFSET=-3", False)])
def test_glsl_build_options_and_include_dirs(case: Case, rng: np.random.Generator, options: str, halve: bool) -> None:
    data = case.save("src.npy", rng.uniform(-100, 100, N).astype(np.float32))
    case.text("shaders/scale.comp", SCALE_GLSL)
    case.text("headers/scale_params.h", "#define HALF 0.5\n")
    case.scenario(
        [shader("scale", "shaders/scale.comp", "GLSL", build_options=options, include_dirs=["headers"]),
         buffer("src", 40, "readonly", src="src.npy"),
         buffer("dst", 40, "writeonly", dst="dst.npy")],
        [dispatch("scale", [N], [(0, 0, "src"), (0, 1, "dst")])])
    offset = np.float32(10.0 if halve else -3.0)
    expected = (data + offset) * np.float32(0.5) if halve else data + offset
    case.run_both({"dst.npy": expected})


# Each invocation writes its flattened global index at its flattened global position, so a
# runner that treats rangeND as a global size (instead of workgroup counts) leaves zeros.
GEOMETRY_GLSL = """#version 450
layout(local_size_x = 4, local_size_y = 2, local_size_z = 1) in;
layout(set = 0, binding = 0) writeonly buffer Ids { uint ids[]; };
void main() {
    uvec3 size = gl_NumWorkGroups * gl_WorkGroupSize;
    uvec3 g = gl_GlobalInvocationID;
    uint flat_index = (g.z * size.y + g.y) * size.x + g.x;
    ids[flat_index] = flat_index * 3u + gl_LocalInvocationIndex;
}
"""


@pytest.mark.parametrize("range_nd", [[3], [3, 2], [3, 2, 2]])
def test_range_nd_counts_workgroups(case: Case, range_nd: list[int]) -> None:
    groups = range_nd + [1] * (3 - len(range_nd))
    size = (groups[0] * 4, groups[1] * 2, groups[2])
    total = size[0] * size[1] * size[2]
    case.glsl_to_spirv(GEOMETRY_GLSL, "ids.spv")
    case.scenario([shader("write_ids", "ids.spv"), buffer("ids", total * 4, "writeonly", dst="ids.npy")],
                  [dispatch("write_ids", range_nd, [(0, 0, "ids")])])
    z, y, x = np.meshgrid(np.arange(size[2]), np.arange(size[1]), np.arange(size[0]), indexing="ij")
    flat = ((z * size[1] + y) * size[0] + x).astype(np.uint32)
    local = (y % 2) * 4 + (x % 4)
    case.run_both({"ids.npy": (flat * 3 + local).reshape(-1).astype(np.uint32)})


INCREMENT_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) buffer Counter { int counter[]; };
void main() { counter[gl_GlobalInvocationID.x] += 1; }
"""


def test_repeat_runs_scenario_again(case: Case) -> None:
    # An in-place increment shows whether each repeat starts again from the src file.
    start = case.save("counter.npy", np.arange(N, dtype=np.int32))
    case.glsl_to_spirv(INCREMENT_GLSL, "inc.spv")
    case.scenario([shader("inc", "inc.spv"), buffer("counter", 40, src="counter.npy", dst="counter_out.npy")],
                  [dispatch("inc", [N], [(0, 0, "counter")])])
    result = case.run_both(args=["--repeat", "3"])
    got = np.frombuffer(np.load(result.arm / "counter_out.npy").tobytes(), np.int32)
    # Arm 0.11 keeps buffer contents across repeats; record that so a change is noticed.
    np.testing.assert_array_equal(got, start + 3)


def test_dry_run_writes_no_outputs(case: Case, rng: np.random.Generator) -> None:
    _sum_case(case, rng, "float", "SPIR-V")
    case.run_both(args=["--dry-run"], no_outputs=True)


def test_unchanged_files_with_default_output_folder(case: Case, rng: np.random.Generator, tmp_path: Path) -> None:
    """Without --output, dst files land next to the scenario: run two copies of one folder."""
    expected = _sum_case(case, rng, "float", "SPIR-V")
    arm_copy, kl_copy = tmp_path / "arm_copy", tmp_path / "kl_copy"
    shutil.copytree(case.root, arm_copy)
    shutil.copytree(case.root, kl_copy)
    arm = case.run_arm(arm_copy / "scenario.json", None)
    assert arm.returncode == 0, arm.stdout + arm.stderr
    kl = case.run_kernellab(kl_copy / "scenario.json", None)
    assert kl.returncode == 0, kl.stdout + kl.stderr
    Expect(expected).check("Arm", arm_copy / "total.npy")
    Expect(expected).check("kernellab", kl_copy / "total.npy")
    assert (kl_copy / "total.npy").read_bytes() == (arm_copy / "total.npy").read_bytes()


@pytest.mark.parametrize("run", [1, 2])
def test_pipeline_caching_keeps_outputs(case: Case, rng: np.random.Generator, tmp_path: Path, run: int) -> None:
    # run 2 starts with the cache the first run of the same scenario left behind
    expected = _sum_case(case, rng, "float", "SPIR-V")
    arm_cache, kl_cache = tmp_path / "arm_cache", tmp_path / "kernellab_cache"
    arm_cache.mkdir()  # Arm refuses a cache folder that does not exist
    kl_cache.mkdir()
    for _ in range(run):
        case.run_both({"total.npy": expected}, args=["--pipeline-caching", "--log-level", "error"],
                               arm_args=["--cache-path", str(arm_cache)],
                               kernellab_args=["--cache-path", str(kl_cache)])
    assert any(arm_cache.iterdir()) and any(kl_cache.iterdir())


SPARSE_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 3) readonly buffer Src { float src[]; };
layout(set = 2, binding = 0) writeonly buffer Dst { float dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    dst[i] = src[i] * 2.0;
}
"""


def test_sparse_sets_and_bindings(case: Case, rng: np.random.Generator) -> None:
    # Set 1 is unused and binding numbers start at 3: the layout needs an empty set in between.
    data = case.save("src.npy", rng.uniform(-100, 100, N).astype(np.float32))
    case.glsl_to_spirv(SPARSE_GLSL, "sparse.spv")
    case.scenario([shader("double", "sparse.spv"), buffer("src", 40, "readonly", src="src.npy"),
                   buffer("dst", 40, "writeonly", dst="dst.npy")],
                  [dispatch("double", [N], [(0, 3, "src"), (2, 0, "dst")])])
    case.run_both({"dst.npy": data * np.float32(2)})


def test_binding_the_shader_does_not_use(case: Case, rng: np.random.Generator) -> None:
    # A scenario may bind more than the shader declares (set 1, binding 5 here).
    data = case.save("src.npy", rng.uniform(-100, 100, N).astype(np.float32))
    case.glsl_to_spirv(SPARSE_GLSL, "sparse.spv")
    case.scenario([shader("double", "sparse.spv"), buffer("src", 40, "readonly", src="src.npy"),
                   buffer("dst", 40, "writeonly", dst="dst.npy"), buffer("spare", 8)],
                  [dispatch("double", [N], [(0, 3, "src"), (2, 0, "dst"), (1, 5, "spare")])])
    case.run_both({"dst.npy": data * np.float32(2)})


COPY_GLSL = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) readonly buffer Src { float src[]; };
layout(set = 0, binding = 1) writeonly buffer Dst { float dst[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    dst[i] = src[i] + 0.5;
}
"""


def test_one_buffer_in_two_bindings(case: Case, rng: np.random.Generator) -> None:
    data = case.save("values.npy", rng.uniform(-100, 100, N).astype(np.float32))
    case.glsl_to_spirv(COPY_GLSL, "copy.spv")
    case.scenario([shader("shift", "copy.spv"), buffer("values", 40, src="values.npy", dst="values_out.npy")],
                  [dispatch("shift", [N], [(0, 0, "values"), (0, 1, "values")])])
    case.run_both({"values_out.npy": data + np.float32(0.5)})


def test_profiling_and_perf_counter_dumps(case: Case, rng: np.random.Generator, tmp_path: Path) -> None:
    # Both runners take the flags and write JSON; the contents are each runner's own.
    expected = _sum_case(case, rng, "float", "SPIR-V")
    dumps = {runner: (tmp_path / f"{runner}_profile.json", tmp_path / f"{runner}_perf.json")
             for runner in ("arm", "kernellab")}
    case.run_both({"total.npy": expected}, args=["--repeat", "2"],
                  arm_args=["--profiling-dump-path", str(dumps["arm"][0]),
                            "--perf-counters-dump-path", str(dumps["arm"][1])],
                  kernellab_args=["--profiling-dump-path", str(dumps["kernellab"][0]),
                                  "--perf-counters-dump-path", str(dumps["kernellab"][1])])
    for runner, paths in dumps.items():
        for path in paths:
            assert isinstance(json.loads(path.read_text()), dict), f"{runner}: {path.name}"
