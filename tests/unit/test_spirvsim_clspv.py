"""OpenCL C compiled for Vulkan by clspv, checked by the SPIR-V checker: clspv's SPIR-V shape
(specialised workgroup size, push constants, private copies of built-ins) runs, and the
verdicts are the OpenCL kernel's."""
from __future__ import annotations

import importlib.util
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kernellab import tools
from kernellab.spirvsim import Binding, check_dispatch
from kernellab.testing.kernels import tiled_matmul_cl

HAS_CLSPV = tools.find("clspv") is not None or importlib.util.find_spec("pyclspv") is not None
pytestmark = pytest.mark.skipif(not HAS_CLSPV, reason="needs clspv: pip install pyclspv")


def clspv(source: str, tmp: Path, *options: str) -> bytes:
    src, out = tmp / "k.cl", tmp / "k.spv"
    src.write_text(source)
    binary = tools.find("clspv")
    argv = [str(binary.path), str(src), "-o", str(out), *options] if binary else \
        [sys.executable, "-m", "kernellab.compile.clspv_child", str(src), "-o", str(out), *options]
    subprocess.run(argv, check=True, capture_output=True)
    return out.read_bytes()


def run(spv: bytes, n: int):
    rng = np.random.default_rng(3)
    a, b = rng.random((n, n), np.float32), rng.random((n, n), np.float32)
    r = check_dispatch(spv, "matmul", (n // 16, n // 16, 1), spec_constants={0: 16, 1: 16, 2: 1},
                       push_constants=struct.pack("<i", n),
                       bindings={(0, 0): Binding("A", a.tobytes()), (0, 1): Binding("B", b.tobytes()),
                                 (0, 2): Binding("C", bytes(4 * n * n))})
    return r, np.frombuffer(r.buffers["C"], np.float32).reshape(n, n), a @ b


def test_clspv_tiled_matmul_verified(tmp_path):
    r, c, expect = run(clspv(tiled_matmul_cl(), tmp_path), 64)
    assert r.findings == [] and r.local_size == (16, 16, 1)
    np.testing.assert_allclose(c, expect, rtol=1e-5)


def test_clspv_tiled_matmul_without_second_barrier_races(tmp_path):
    r, _, _ = run(clspv(tiled_matmul_cl(second_barrier=""), tmp_path), 32)
    assert {(f.kind, f.storage, f.scope) for f in r.findings} == {("data-race", "workgroup", "intra-workgroup")}


def test_clspv_barrier_in_divergent_code(tmp_path):
    r, _, _ = run(clspv(tiled_matmul_cl(second_barrier="if (lx < 8) barrier(CLK_LOCAL_MEM_FENCE);"), tmp_path), 32)
    assert "barrier-divergence" in {f.kind for f in r.findings}


ARGS = """__kernel void k(__global int *a, __local int *l, int n, float f, __constant int *c) {
  l[get_local_id(0)] = a[get_global_id(0)] + n + (int)f + c[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  a[get_global_id(0)] = l[(get_local_id(0) + 1) % get_local_size(0)] + get_group_id(0) * 1000
                        + get_num_groups(0) * 100000;
}
"""


def test_clspv_reflection_binds_buffers_local_arrays_and_scalars(tmp_path):
    from kernellab.spirvsim.clspv import launch, reflection
    spv = clspv(ARGS, tmp_path)
    kernel = reflection(spv)["k"]
    assert sorted(kernel.arguments) == [0, 1, 2, 3, 4]
    a = np.arange(64, dtype=np.int32)
    bound = launch(kernel, [64], [16], [Binding("a", a.tobytes()), 16 * 4, struct.pack("<i", 5),
                                        struct.pack("<f", 2.5), Binding("c", struct.pack("<i", 30))])
    assert bound.workgroups == (4, 1, 1) and bound.buffers == {0: "a", 4: "c"}
    r = check_dispatch(spv, "k", bound.workgroups, bindings=bound.bindings, push_constants=bound.push_constants,
                       spec_constants=bound.spec_constants)
    assert r.findings == []
    lid, grp = np.arange(64) % 16, np.arange(64) // 16
    neighbour = grp * 16 + (lid + 1) % 16
    assert np.frombuffer(r.buffers["a"], np.int32).tolist() == (neighbour + 37 + grp * 1000 + 400000).tolist()
    # the local array is as long as the launch says: one element short is out of bounds
    short = launch(kernel, [64], [16], [Binding("a", a.tobytes()), 15 * 4, bytes(4), bytes(4),
                                        Binding("c", bytes(4))])
    r = check_dispatch(spv, "k", short.workgroups, bindings=short.bindings, push_constants=short.push_constants,
                       spec_constants=short.spec_constants)
    assert "out-of-bounds" in {f.kind for f in r.findings}


def test_clspv_barrier_flags_differing_within_a_workgroup_diverge(tmp_path):
    # OpenCL requires every work-item to pass barrier() the same flags; clspv turns run-time flags
    # into non-constant memory semantics
    source = """__kernel void foo(__global int *p, int uniform) {
  int flags = (uniform || get_local_id(0) == 0) ? CLK_GLOBAL_MEM_FENCE : 0;
  barrier(flags);
  p[get_global_id(0)] = flags;
}
"""
    from kernellab.spirvsim.clspv import launch, reflection
    spv = clspv(source, tmp_path)
    kernel = reflection(spv)["foo"]
    for uniform, expect in ((0, {"barrier-divergence"}), (1, set())):
        bound = launch(kernel, [32], [16], [Binding("p", bytes(128)), struct.pack("<i", uniform)])
        r = check_dispatch(spv, "foo", bound.workgroups, bindings=bound.bindings,
                           push_constants=bound.push_constants, spec_constants=bound.spec_constants)
        assert {f.kind for f in r.findings} == expect


def test_clspv_pointer_chosen_per_work_item_among_buffers(tmp_path):
    from kernellab.spirvsim.clspv import launch, reflection
    source = """__kernel void k(__global int *a, __global int *b, int racy) {
  __global int *p = (get_global_id(0) % 2) ? a : b;
  p[racy ? 0 : get_global_id(0)] = get_global_id(0) + 1;
  atomic_add(p + 40, 1);
}
"""
    spv = clspv(source, tmp_path)
    kernel = reflection(spv)["k"]
    for racy in (0, 1):
        bound = launch(kernel, [32], [16], [Binding("a", bytes(256)), Binding("b", bytes(256)),
                                            struct.pack("<i", racy)])
        r = check_dispatch(spv, "k", bound.workgroups, bindings=bound.bindings,
                           push_constants=bound.push_constants, spec_constants=bound.spec_constants)
        a, b = np.frombuffer(r.buffers["a"], np.int32), np.frombuffer(r.buffers["b"], np.int32)
        assert a[40] == 16 and b[40] == 16
        if racy:
            assert {(f.kind, f.resource) for f in r.findings} == {("data-race", "a"), ("data-race", "b")}
        else:
            assert r.findings == []
            assert a[:32].tolist() == [i + 1 if i % 2 else 0 for i in range(32)]
            assert b[:32].tolist() == [0 if i % 2 else i + 1 for i in range(32)]


def test_clspv_at_O0_keeps_the_dead_racy_store_and_names_its_line(tmp_path):
    # GPUVerify's shared_int: every work-item writes one __local int nobody reads. clspv's
    # optimiser deletes the store; at -O0 (what kernellab verify --vulkan compiles with) it stays
    source = "__kernel void foo() {\n  __local int a;\n  a = get_local_id(0);\n}\n"
    optimised = check_dispatch(clspv(source, tmp_path), "foo", (2, 1, 1), spec_constants={0: 16, 1: 1, 2: 1})
    assert optimised.findings == []
    r = check_dispatch(clspv(source, tmp_path, "-O0", "-g"), "foo", (2, 1, 1), spec_constants={0: 16, 1: 1, 2: 1})
    (f,) = r.findings
    assert (f.kind, f.scope) == ("data-race", "intra-workgroup")
    assert {a["location"]["line"] for a in f.accesses} == {3}  # -g: clspv's OpLine (its file is "source")


def test_clspv_arrays_are_bounded_by_their_object(tmp_path):
    # C bounds L[i][j] by the object L, as GPUVerify and Oclgrind do: L[0][gid] stays inside
    # L[10][10] for gid < 100 (GPUVerify: pass); L[-1][gid] leaves it for gid < 10 (xfail)
    for first, expect in (("0", set()), ("-1 + get_global_id(0)", {"out-of-bounds"})):
        source = f"__kernel void foo() {{\n  local int L[10][10];\n  L[{first}][get_global_id(1)] = 1;\n}}\n"
        r = check_dispatch(clspv(source, tmp_path, "-O0"), "foo", (1, 10, 1), spec_constants={0: 1, 1: 10, 2: 1})
        assert {f.kind for f in r.findings} == expect, source
